//! Kafka client configuration: kcat's `-F` file and `-X` properties, checked before any
//! client is made, and the client context that keeps what librdkafka reports.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance, RebalanceProtocol};
use rdkafka::error::KafkaError;
use rdkafka::ClientContext;

use crate::error::{Error, Result};
use crate::io::spec::KafkaSpec;

/// Environment variable naming a default `-F` file, as `KAFKACAT_CONFIG` does for kcat.
pub const CONFIG_ENV: &str = "WEIR_KAFKA_CONFIG";

/// librdkafka properties whose values must never be shown.
pub(crate) fn is_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key.contains("password") || key.contains("secret") || key.ends_with(".key.pem")
}

/// How a Kafka client connects, checked: the config file read and every property parsed.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// librdkafka properties in order: the config file's (`-F`, else `$WEIR_KAFKA_CONFIG`),
    /// then `-X` pairs, which win.
    pub properties: Vec<(String, String)>,
    /// How long to wait for a broker before giving up.
    pub timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> ClientOptions {
        ClientOptions {
            properties: Vec::new(),
            timeout: Duration::from_secs(10),
        }
    }
}

impl ClientOptions {
    /// Reads the config file (`-F`, else `$WEIR_KAFKA_CONFIG`) and parses it and the `-X`
    /// pairs. A malformed line or property is a usage error.
    pub fn resolve(
        config_file: Option<&Path>,
        properties: &[String],
        timeout: Duration,
    ) -> Result<ClientOptions> {
        let mut out = Vec::new();
        let file: Option<PathBuf> = config_file
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os(CONFIG_ENV).map(PathBuf::from));
        if let Some(path) = file {
            let text = std::fs::read_to_string(&path).map_err(|e| {
                Error::Usage(format!("cannot read Kafka config {}: {e}", path.display()))
            })?;
            for (n, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let (k, v) = split_property(line)
                    .map_err(|e| Error::Usage(format!("{}:{}: {e}", path.display(), n + 1)))?;
                out.push((k.to_string(), v.to_string()));
            }
        }
        for p in properties {
            let (k, v) = split_property(p).map_err(|e| Error::Usage(format!("-X {e}")))?;
            out.push((k.to_string(), v.to_string()));
        }
        Ok(ClientOptions {
            properties: out,
            timeout,
        })
    }

    /// A client configuration for the cluster of `spec`, with these properties applied.
    pub(crate) fn config(&self, spec: &KafkaSpec) -> ClientConfig {
        let mut config = ClientConfig::new();
        config.set("bootstrap.servers", spec.bootstrap_servers());
        config.set_log_level(RDKafkaLogLevel::Emerg);
        for (k, v) in &self.properties {
            config.set(k, v);
        }
        config
    }
}

fn split_property(s: &str) -> std::result::Result<(&str, &str), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim(), v.trim())),
        _ => Err(format!(
            "expected key=value, got '{}'",
            s.split('=').next().unwrap_or("")
        )),
    }
}

/// What the client reported through its error callback, so that a stalled run can say why.
#[derive(Default)]
pub struct Reporter {
    last_error: Mutex<Option<(Instant, String)>>,
    /// The partitions the group gave us; `None` before the first assignment and while a
    /// rebalance is under way.
    assigned: Mutex<Option<Vec<i32>>>,
    /// How many times `assigned` changed: cheap to read on every poll.
    rebalances: AtomicU64,
}

impl Reporter {
    pub(crate) fn record(&self, error: &KafkaError, reason: &str) {
        let text = if reason.is_empty() {
            error.to_string()
        } else {
            reason.to_string()
        };
        *self.last_error.lock().expect("not poisoned") = Some((Instant::now(), text));
    }

    /// The latest error, if it is newer than `since`.
    pub(crate) fn error_since(&self, since: Instant) -> Option<String> {
        let guard = self.last_error.lock().expect("not poisoned");
        guard
            .as_ref()
            .filter(|(at, _)| *at >= since)
            .map(|(_, text)| text.clone())
    }
}

impl ClientContext for Reporter {
    fn log(&self, _level: RDKafkaLogLevel, _fac: &str, _message: &str) {}

    fn error(&self, error: KafkaError, reason: &str) {
        self.record(&error, reason);
    }
}

impl ConsumerContext for Reporter {
    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let cooperative = matches!(
            consumer.rebalance_protocol(),
            RebalanceProtocol::Cooperative
        );
        let now = match rebalance {
            // What the member owns now: under cooperative rebalancing an assignment or a
            // revocation is an increment, so the whole is asked of the consumer; under eager
            // rebalancing the assignment is the whole.
            Rebalance::Assign(tpl) if !cooperative => {
                Some(tpl.elements().iter().map(|e| e.partition()).collect())
            }
            Rebalance::Assign(_) | Rebalance::Revoke(_) if cooperative => consumer
                .assignment()
                .ok()
                .map(|tpl| tpl.elements().iter().map(|e| e.partition()).collect()),
            // Eager rebalancing revokes everything, then assigns: unknown until then.
            Rebalance::Assign(_) | Rebalance::Revoke(_) | Rebalance::Error(_) => None,
        };
        *self.assigned.lock().expect("not poisoned") = now;
        self.rebalances.fetch_add(1, Ordering::Release);
    }
}

impl Reporter {
    /// Counts the group's rebalances: when it moves, `assigned` may have changed.
    pub(crate) fn rebalances(&self) -> u64 {
        self.rebalances.load(Ordering::Acquire)
    }

    pub(crate) fn assigned(&self) -> Option<Vec<i32>> {
        self.assigned.lock().expect("not poisoned").clone()
    }
}

pub(crate) fn unreachable(what: &str, spec: &KafkaSpec, e: KafkaError) -> Error {
    Error::Unreachable(format!("{what} {}: {e}", spec.bootstrap_servers()))
}

/// An error text without secret values (librdkafka quotes property values in some errors).
pub(crate) fn scrub(e: &KafkaError) -> String {
    let text = e.to_string();
    if is_secret(&text) {
        "invalid security property (value not shown)".into()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_and_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("kafka.conf");
        std::fs::write(
            &file,
            "# comment\n\nsecurity.protocol=SASL_SSL\nclient.id = from-file\n",
        )
        .unwrap();
        let spec = KafkaSpec {
            brokers: vec![crate::io::spec::Broker {
                host: "127.0.0.1".into(),
                port: 9092,
            }],
            topic: Some("t".into()),
        };
        let timeout = Duration::from_secs(1);
        let options =
            ClientOptions::resolve(Some(&file), &["client.id=cli".into()], timeout).unwrap();
        let c = options.config(&spec);
        assert_eq!(c.get("bootstrap.servers"), Some("127.0.0.1:9092"));
        assert_eq!(c.get("security.protocol"), Some("SASL_SSL"));
        assert_eq!(c.get("client.id"), Some("cli"));
        assert!(ClientOptions::resolve(None, &["novalue".into()], timeout).is_err());
        std::fs::write(&file, "sasl.password\n").unwrap();
        let e = ClientOptions::resolve(Some(&file), &[], timeout)
            .unwrap_err()
            .to_string();
        assert!(e.contains("kafka.conf:1"), "{e}");
    }

    #[test]
    fn secrets_are_recognised() {
        assert!(is_secret("sasl.password"));
        assert!(is_secret("ssl.key.password"));
        assert!(!is_secret("bootstrap.servers"));
    }
}
