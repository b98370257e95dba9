//! SOURCE and SINK specs: `-`, paths, `kafka://HOST:PORT[,HOST:PORT]/TOPIC`, `kinesis://STREAM`.

use std::fmt;
use std::path::PathBuf;

/// One NDJSON input: stdin or a file (`.gz` is decompressed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    Stdin,
    File(PathBuf),
}

impl Input {
    /// The name used in positions (`file.ndjson:12`, `<stdin>:3`).
    pub fn display_name(&self) -> String {
        match self {
            Input::Stdin => "<stdin>".to_string(),
            Input::File(p) => p.display().to_string(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Broker {
    pub host: String,
    pub port: u16,
}

impl fmt::Display for Broker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KafkaSpec {
    pub brokers: Vec<Broker>,
    /// `None` only where a command accepts a cluster without a topic (`lag`).
    pub topic: Option<String>,
}

impl KafkaSpec {
    /// `host:port,host:port`, as librdkafka's `bootstrap.servers` wants it.
    pub fn bootstrap_servers(&self) -> String {
        self.brokers
            .iter()
            .map(Broker::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KinesisSpec {
    pub stream: String,
    /// The stream's ARN, when it was given as one (`kinesis://arn:aws:kinesis:...`).
    pub arn: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceSpec {
    /// NDJSON inputs read in order; `-` among them is stdin.
    Ndjson(Vec<Input>),
    Kafka(KafkaSpec),
    Kinesis(KinesisSpec),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SinkSpec {
    Stdout,
    File(PathBuf),
    Kafka(KafkaSpec),
    Kinesis(KinesisSpec),
}

impl SourceSpec {
    /// Parses the SOURCE arguments of a command; none means stdin.
    pub fn parse(args: &[String]) -> Result<SourceSpec, String> {
        let brokered: Vec<&String> = args.iter().filter(|a| is_brokered(a)).collect();
        if brokered.is_empty() {
            if args.is_empty() {
                return Ok(SourceSpec::Ndjson(vec![Input::Stdin]));
            }
            return Ok(SourceSpec::Ndjson(
                args.iter().map(|a| parse_input(a)).collect(),
            ));
        }
        if args.len() > 1 {
            return Err(format!(
                "a {} source must be the only SOURCE (got {} arguments)",
                match brokered[0].split_once("://") {
                    Some((scheme, _)) => scheme,
                    None => "kinesis",
                },
                args.len()
            ));
        }
        match parse_url(&args[0], true)? {
            Brokered::Kafka(k) => Ok(SourceSpec::Kafka(k)),
            Brokered::Kinesis(k) => Ok(SourceSpec::Kinesis(k)),
        }
    }
}

impl SinkSpec {
    pub fn parse(arg: &str) -> Result<SinkSpec, String> {
        if arg == "-" {
            return Ok(SinkSpec::Stdout);
        }
        if is_brokered(arg) {
            return Ok(match parse_url(arg, true)? {
                Brokered::Kafka(k) => SinkSpec::Kafka(k),
                Brokered::Kinesis(k) => SinkSpec::Kinesis(k),
            });
        }
        if arg.is_empty() {
            return Err("empty output path".into());
        }
        Ok(SinkSpec::File(PathBuf::from(arg)))
    }
}

/// Parses `kafka://HOST:PORT[,HOST:PORT][/TOPIC]` where the topic may be left out (`lag`).
pub fn parse_kafka_cluster(arg: &str) -> Result<KafkaSpec, String> {
    match parse_url(arg, false)? {
        Brokered::Kafka(k) => Ok(k),
        Brokered::Kinesis(_) => Err(format!("'{arg}' is not a kafka:// cluster")),
    }
}

/// Parses a Kinesis stream, `kinesis://STREAM` or its ARN (`lag`).
pub fn parse_kinesis_stream(arg: &str) -> Result<KinesisSpec, String> {
    match parse_url(arg, false)? {
        Brokered::Kinesis(k) => Ok(k),
        Brokered::Kafka(_) => Err(format!("'{arg}' is not a kinesis:// stream")),
    }
}

fn parse_input(arg: &str) -> Input {
    if arg == "-" {
        Input::Stdin
    } else {
        Input::File(PathBuf::from(arg))
    }
}

enum Brokered {
    Kafka(KafkaSpec),
    Kinesis(KinesisSpec),
}

/// A broker URL, or a stream's ARN as the AWS console and CLI show it (a file's name never
/// starts `arn:` in practice; `./arn:...` still names one).
pub fn is_brokered(arg: &str) -> bool {
    arg.contains("://") || is_bare_arn(arg)
}

/// A Kinesis stream, by URL or by its ARN.
pub fn is_kinesis(arg: &str) -> bool {
    arg.starts_with("kinesis://") || is_bare_arn(arg)
}

fn is_bare_arn(arg: &str) -> bool {
    arg.starts_with("arn:")
}

fn parse_url(arg: &str, topic_required: bool) -> Result<Brokered, String> {
    if is_bare_arn(arg) {
        return parse_kinesis(arg, arg).map(Brokered::Kinesis);
    }
    let (scheme, rest) = arg.split_once("://").expect("caller checked for ://");
    match scheme {
        "kafka" => parse_kafka(arg, rest, topic_required).map(Brokered::Kafka),
        "kinesis" => parse_kinesis(arg, rest).map(Brokered::Kinesis),
        other => Err(format!(
            "unknown scheme '{other}://' in '{arg}': use kafka://HOST:PORT/TOPIC, kinesis://STREAM, a path or -"
        )),
    }
}

fn parse_kafka(arg: &str, rest: &str, topic_required: bool) -> Result<KafkaSpec, String> {
    let usage =
        || format!("invalid Kafka spec '{arg}': expected kafka://HOST:PORT[,HOST:PORT]/TOPIC");
    let (hosts, topic) = match rest.split_once('/') {
        Some((h, t)) => (h, Some(t)),
        None => (rest, None),
    };
    let topic = match topic {
        Some(t) if !t.is_empty() => {
            validate_topic(t).map_err(|why| format!("{}: {why}", usage()))?;
            Some(t.to_string())
        }
        _ if topic_required => return Err(format!("{}: the topic is missing", usage())),
        _ => None,
    };
    if hosts.is_empty() {
        return Err(format!("{}: no broker given", usage()));
    }
    let brokers = hosts
        .split(',')
        .map(|h| parse_broker(h).map_err(|why| format!("{}: {why}", usage())))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(KafkaSpec { brokers, topic })
}

/// Kafka's port where a broker names none, as librdkafka (and so kcat) assumes.
const DEFAULT_KAFKA_PORT: &str = "9092";

fn parse_broker(text: &str) -> Result<Broker, String> {
    let (host, port) = if let Some(inner) = text.strip_prefix('[') {
        let (host, after) = inner
            .split_once(']')
            .ok_or(format!("unclosed '[' in '{text}'"))?;
        match after {
            "" => (host, DEFAULT_KAFKA_PORT),
            _ => (
                host,
                after
                    .strip_prefix(':')
                    .ok_or(format!("invalid broker '{text}'"))?,
            ),
        }
    } else {
        text.rsplit_once(':').unwrap_or((text, DEFAULT_KAFKA_PORT))
    };
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'));
    if !host_ok {
        return Err(format!("invalid broker host '{host}'"));
    }
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p != 0)
        .ok_or(format!("invalid port '{port}'"))?;
    Ok(Broker {
        host: host.to_string(),
        port,
    })
}

/// Kafka's own rule: 1 to 249 of `[a-zA-Z0-9._-]`, and not `.` or `..`.
fn validate_topic(topic: &str) -> Result<(), String> {
    if topic.len() > 249 {
        return Err(format!(
            "topic name is {} characters, more than 249",
            topic.len()
        ));
    }
    if topic == "." || topic == ".." {
        return Err(format!("'{topic}' is not a legal topic name"));
    }
    match topic
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        Some(c) => Err(format!(
            "topic names may hold only a-z A-Z 0-9 . _ - (found {c:?})"
        )),
        None => Ok(()),
    }
}

fn parse_kinesis(arg: &str, stream: &str) -> Result<KinesisSpec, String> {
    let usage = format!("invalid Kinesis spec '{arg}': expected kinesis://STREAM");
    if let Some(fields) = stream.strip_prefix("arn:") {
        // arn:PARTITION:kinesis:REGION:ACCOUNT:stream/NAME
        let parts: Vec<&str> = fields.splitn(5, ':').collect();
        let name = match parts.as_slice() {
            [_, "kinesis", region, account, resource]
                if !region.is_empty() && !account.is_empty() =>
            {
                resource.strip_prefix("stream/")
            }
            _ => None,
        };
        let Some(name) = name else {
            return Err(format!(
                "invalid Kinesis spec '{arg}': an ARN reads arn:aws:kinesis:REGION:ACCOUNT:stream/NAME"
            ));
        };
        let mut spec = parse_kinesis(arg, name)?;
        spec.arn = Some(stream.to_string());
        return Ok(spec);
    }
    if stream.is_empty() {
        return Err(format!("{usage}: the stream name is missing"));
    }
    if stream.len() > 128 {
        return Err(format!("{usage}: stream names are at most 128 characters"));
    }
    if let Some(c) = stream
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(format!(
            "{usage}: stream names may hold only a-z A-Z 0-9 . _ - (found {c:?})"
        ));
    }
    Ok(KinesisSpec {
        stream: stream.to_string(),
        arn: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn src(args: &[&str]) -> Result<SourceSpec, String> {
        SourceSpec::parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn ndjson_sources() {
        assert_eq!(src(&[]), Ok(SourceSpec::Ndjson(vec![Input::Stdin])));
        assert_eq!(src(&["-"]), Ok(SourceSpec::Ndjson(vec![Input::Stdin])));
        assert_eq!(
            src(&["a.ndjson", "-", "b.ndjson.gz"]),
            Ok(SourceSpec::Ndjson(vec![
                Input::File("a.ndjson".into()),
                Input::Stdin,
                Input::File("b.ndjson.gz".into())
            ]))
        );
    }

    #[test]
    fn kafka_sources() {
        let k = match src(&["kafka://localhost:9092,10.0.0.2:9093/checkouts"]).unwrap() {
            SourceSpec::Kafka(k) => k,
            other => panic!("{other:?}"),
        };
        assert_eq!(k.topic.as_deref(), Some("checkouts"));
        assert_eq!(k.bootstrap_servers(), "localhost:9092,10.0.0.2:9093");
        let k = parse_kafka_cluster("kafka://[::1]:9092").unwrap();
        assert_eq!(k.topic, None);
        assert_eq!(k.bootstrap_servers(), "[::1]:9092");
        // Without a port, Kafka's, as kcat's -b takes it.
        let k = parse_kafka_cluster("kafka://localhost,[::1],b:9093/t").unwrap();
        assert_eq!(k.bootstrap_servers(), "localhost:9092,[::1]:9092,b:9093");
    }

    #[test]
    fn kafka_errors_say_what_is_wrong() {
        let e = src(&["kafka://localhost:9092"]).unwrap_err();
        assert!(e.contains("topic is missing"), "{e}");
        assert!(src(&["kafka://[::1]x/t"])
            .unwrap_err()
            .contains("invalid broker '[::1]x'"));
        assert!(src(&["kafka://localhost:0/t"])
            .unwrap_err()
            .contains("invalid port"));
        assert!(src(&["kafka://localhost:99999/t"])
            .unwrap_err()
            .contains("invalid port"));
        assert!(src(&["kafka:///t"]).unwrap_err().contains("no broker"));
        assert!(src(&["kafka://h:1/bad topic"])
            .unwrap_err()
            .contains("found ' '"));
        assert!(src(&["kafka://h:1/.."]).is_err());
        assert!(src(&[&format!("kafka://h:1/{}", "t".repeat(250))]).is_err());
        assert!(src(&["kafka://h:1/t", "file.ndjson"])
            .unwrap_err()
            .contains("only SOURCE"));
        assert!(src(&["http://x/y"]).unwrap_err().contains("unknown scheme"));
    }

    #[test]
    fn kinesis_specs() {
        assert_eq!(
            src(&["kinesis://orders-v2"]),
            Ok(SourceSpec::Kinesis(KinesisSpec {
                stream: "orders-v2".into(),
                arn: None,
            }))
        );
        assert!(src(&["kinesis://"]).is_err());
        assert!(src(&["kinesis://a/b"]).is_err());
        let arn = "arn:aws:kinesis:eu-west-1:123456789012:stream/orders";
        assert_eq!(
            src(&[&format!("kinesis://{arn}")]),
            Ok(SourceSpec::Kinesis(KinesisSpec {
                stream: "orders".into(),
                arn: Some(arn.into()),
            }))
        );
        for bad in [
            "arn:aws:kinesis:eu-west-1:123456789012:orders",
            "arn:aws:sqs:eu-west-1:123456789012:stream/orders",
            "arn:aws:kinesis::123456789012:stream/orders",
            "arn:aws:kinesis:eu-west-1:123456789012:stream/bad name",
        ] {
            assert!(src(&[&format!("kinesis://{bad}")]).is_err(), "{bad}");
            assert!(src(&[bad]).is_err(), "{bad}");
        }
        // An ARN as the console shows it, without the scheme: a source and a sink.
        let bare = Ok(KinesisSpec {
            stream: "orders".into(),
            arn: Some(arn.into()),
        });
        assert_eq!(src(&[arn]), bare.clone().map(SourceSpec::Kinesis));
        assert_eq!(SinkSpec::parse(arn), bare.map(SinkSpec::Kinesis));
        assert!(
            src(&[arn, "file.ndjson"]).is_err(),
            "a stream is the only SOURCE"
        );
    }

    #[test]
    fn sinks() {
        assert_eq!(SinkSpec::parse("-"), Ok(SinkSpec::Stdout));
        assert_eq!(
            SinkSpec::parse("out.ndjson"),
            Ok(SinkSpec::File("out.ndjson".into()))
        );
        assert!(matches!(
            SinkSpec::parse("kafka://b:9092/out"),
            Ok(SinkSpec::Kafka(_))
        ));
        assert!(matches!(
            SinkSpec::parse("kinesis://s"),
            Ok(SinkSpec::Kinesis(_))
        ));
        assert!(SinkSpec::parse("kafka://b:9092").is_err());
    }

    proptest! {
        #[test]
        fn valid_kafka_specs_round_trip(
            hosts in prop::collection::vec(("[a-z][a-z0-9.-]{0,10}", 1u16..), 1..4),
            topic in "[a-zA-Z0-9_-][a-zA-Z0-9._-]{0,40}",
        ) {
            let brokers: Vec<String> = hosts.iter().map(|(h, p)| format!("{h}:{p}")).collect();
            let spec = format!("kafka://{}/{topic}", brokers.join(","));
            let k = parse_kafka_cluster(&spec).unwrap();
            prop_assert_eq!(k.bootstrap_servers(), brokers.join(","));
            prop_assert_eq!(k.topic, Some(topic));
        }

        #[test]
        fn never_panics(args in prop::collection::vec("\\PC{0,30}", 0..3)) {
            let _ = SourceSpec::parse(&args);
            for a in &args {
                let _ = SinkSpec::parse(a);
            }
        }
    }
}
