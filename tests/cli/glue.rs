//! `-r glue://REGISTRY`: values framed by AWS's own Glue serializer library
//! (`aws-glue-schema-registry`, through `scripts/peers/glue.py`), their schemas registered in
//! moto's Glue API in server mode, produced to the test broker and decoded by weir.

use std::process::Output;

use serde_json::Value;

use super::kafka::{broker, Broker};
use super::kinesis::{aws_env, kinesis_local, peer, server, Server};
use crate::weir_std;

/// The registry every test run uses (moto holds at most ten), each with schemas of its own.
const REGISTRY: &str = "weir-tests";

/// `scripts/peers/glue.py ARGS` with `stdin`, and `GLUE_SCHEMA` when given; its stdout.
fn glue_py(args: &[&str], stdin: &str, schema: Option<&str>) -> String {
    let env = [("GLUE_SCHEMA", schema.unwrap_or(""))];
    peer("glue.py", args, stdin, &env).trim().to_string()
}

/// `weir consume TOPIC -e -r glue://REGISTRY` with Glue at `glue`, and `extra`.
fn consume(b: &Broker, topic: &str, registry: &str, glue: &str, extra: &[&str]) -> Output {
    let mut c = weir_std();
    aws_env(&mut c)
        .env("AWS_ENDPOINT_URL_GLUE", glue)
        .args(["consume", &b.url(topic), "-e", "-q", "--timeout", "5s"])
        .args(["-r", &format!("glue://{registry}")])
        .args(extra);
    c.output().unwrap()
}

fn lines(out: &Output) -> Vec<Value> {
    (String::from_utf8_lossy(&out.stdout).lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Avro and JSON values framed by the reference library (plain and zlib-compressed) read as
/// their JSON; a version the registry does not know, and a value not in Glue's framing, are
/// bad records with the reason; Glue out of reach is exit 4.
#[test]
fn glue_framed_values_decode_as_the_reference_library_framed_them() {
    let (Some(b), Some(Server { endpoint: glue })) = (broker(), server("WEIR_TEST_GLUE")) else {
        return;
    };
    let (registry, pid) = (REGISTRY, std::process::id());
    let avro = r#"{"type":"record","name":"Checkout","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"}]}"#;
    let version = glue_py(
        &[
            "schema",
            &glue,
            registry,
            &format!("checkouts-{pid}"),
            "AVRO",
        ],
        avro,
        None,
    );
    let json_schema = r#"{"type":"object","properties":{"id":{"type":"string"}}}"#;
    let json_version = glue_py(
        &["schema", &glue, registry, &format!("events-{pid}"), "JSON"],
        json_schema,
        None,
    );
    let topic = b.topic("glue", 1);
    let produce = |version: &str, format: &str, records: &str, zlib: bool| {
        let mut args = vec!["produce", &b.addr, &topic, version, format];
        if zlib {
            args.push("zlib");
        }
        glue_py(&args, records, Some(avro));
    };
    produce(&version, "AVRO", "{\"id\":\"a\",\"amount\":1.5}\n", false);
    produce(&version, "AVRO", "{\"id\":\"b\",\"amount\":2.25}\n", true);
    produce(&json_version, "JSON", "{\"id\":\"c\"}\n", false);
    let unknown = "00000000-0000-4000-8000-000000000000";
    produce(unknown, "JSON", "{\"id\":\"d\"}\n", false);
    b.kcat_produce(&topic, 0, "k\tnot framed\n", &[]);
    let dir = tempfile::tempdir().unwrap();
    let dead = dir.path().join("dead.ndjson");
    let out = consume(
        &b,
        &topic,
        registry,
        &glue,
        &["--dead-letter", dead.to_str().unwrap()],
    );
    assert!(out.status.success(), "{out:?}");
    let want: Vec<Value> = [
        r#"{"id":"a","amount":1.5}"#,
        r#"{"id":"b","amount":2.25}"#,
        r#"{"id":"c"}"#,
    ]
    .iter()
    .map(|t| serde_json::from_str(t).unwrap())
    .collect();
    assert_eq!(lines(&out), want);
    let dead = std::fs::read_to_string(&dead).unwrap();
    assert_eq!(dead.lines().count(), 2, "{dead}");
    assert!(
        dead.contains(&format!("schema version {unknown} not found")),
        "{dead}"
    );
    assert!(dead.contains("too short for Glue's framing"), "{dead}");
    // Checked before anything is read: Glue out of reach, or no such registry, is exit 4.
    let out = consume(&b, &topic, registry, "http://127.0.0.1:9", &[]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(out.stdout.is_empty());
    let out = consume(&b, &topic, "no-such-registry", &glue, &[]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such registry"));
}

/// The same on a Kinesis stream: values put framed by the reference library read as their
/// JSON, in each shard's order.
#[test]
fn glue_framed_kinesis_values_decode() {
    let (Some(s), Some(Server { endpoint: glue })) = (kinesis_local(), server("WEIR_TEST_GLUE"))
    else {
        return;
    };
    let registry = REGISTRY;
    let avro = r#"{"type":"record","name":"Checkout","fields":[{"name":"id","type":"string"}]}"#;
    let version = glue_py(
        &[
            "schema",
            &glue,
            registry,
            &format!("kinesis-{}", std::process::id()),
            "AVRO",
        ],
        avro,
        None,
    );
    let stream = s.stream("glue", 1);
    let records = "{\"id\":\"a\"}\n{\"id\":\"b\"}\n";
    glue_py(
        &["put", &s.endpoint, &stream, &version, "AVRO"],
        records,
        Some(avro),
    );
    let mut c = weir_std();
    let out = aws_env(&mut c)
        .env("AWS_ENDPOINT_URL_GLUE", &glue)
        .args([
            "consume",
            &s.url(&stream),
            "-e",
            "-q",
            "--endpoint-url",
            &s.endpoint,
        ])
        .args(["-r", &format!("glue://{registry}")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let want: Vec<Value> = vec![serde_json::json!({"id":"a"}), serde_json::json!({"id":"b"})];
    assert_eq!(lines(&out), want);
}

/// `weir consume FILE -o kafka://TOPIC -r glue://REGISTRY ARGS` with Glue at `glue` (no `-r`
/// without a registry).
fn write(
    b: &Broker,
    input: &str,
    topic: &str,
    registry: Option<&str>,
    glue: &str,
    args: &[&str],
) -> Output {
    let mut c = weir_std();
    aws_env(&mut c)
        .env("AWS_ENDPOINT_URL_GLUE", glue)
        .args([
            "consume",
            input,
            "-q",
            "-o",
            &b.url(topic),
            "--timeout",
            "5s",
        ])
        .args(
            registry
                .map(|r| ["-r".to_string(), format!("glue://{r}")])
                .iter()
                .flatten(),
        )
        .args(args);
    c.output().unwrap()
}

/// A Kafka sink with `-r glue://`: `--value-schema --register` creates the schema (then finds
/// the same version again), `--value-subject NAME` frames with its latest version, and
/// `--glue-compression zlib` compresses; AWS's own deserializer reads each value back as the
/// JSON weir was given, by the version weir framed it with, and so does weir. What cannot
/// frame is a usage error before anything is written.
#[test]
fn a_glue_sink_frames_values_aws_deserializer_reads_back() {
    let (Some(b), Some(Server { endpoint: glue })) = (broker(), server("WEIR_TEST_GLUE")) else {
        return;
    };
    let registry = REGISTRY;
    glue_py(&["registry", &glue, registry], "", None);
    let dir = tempfile::tempdir().unwrap();
    let avsc = dir.path().join("checkout.avsc");
    let avro = r#"{"type":"record","name":"Checkout","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"}]}"#;
    std::fs::write(&avsc, avro).unwrap();
    let input = dir.path().join("in.ndjson");
    let records = "{\"id\":\"a\",\"amount\":1.5}\n{\"id\":\"b\",\"amount\":-2.25}\n";
    std::fs::write(&input, records).unwrap();
    let input = input.to_str().unwrap();
    let topic = b.topic("glue-sink", 1);
    let schema = [
        "--value-format",
        "avro",
        "--value-schema",
        avsc.to_str().unwrap(),
    ];
    let name = format!("sink-{}", std::process::id());
    let named = ["--value-subject", &name];
    for extra in [
        &["--register"][..],
        &["--register", "--glue-compression", "zlib"],
        &[],
    ] {
        let out = write(
            &b,
            input,
            &topic,
            Some(registry),
            &glue,
            &[&schema[..], &named, extra].concat(),
        );
        assert!(out.status.success(), "{extra:?}: {out:?}");
    }
    let latest = ["--value-format", "avro", "--value-subject", &name];
    let out = write(&b, input, &topic, Some(registry), &glue, &latest);
    assert!(out.status.success(), "{out:?}");
    let read = glue_py(&["read", &glue, registry, &b.addr, &topic, "8"], "", None);
    let (values, versions) = read.rsplit_once('\n').unwrap();
    let want: Vec<Value> = records
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let got: Vec<Value> = values
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(got, [&want[..], &want, &want, &want].concat());
    let framed: Vec<(&str, &str)> = (versions.split(' '))
        .map(|v| v.split_once(':').unwrap())
        .collect();
    let compression: Vec<&str> = framed.iter().map(|(_, c)| *c).collect();
    assert_eq!(compression, ["0", "0", "5", "5", "0", "0", "0", "0"]);
    let versions: std::collections::BTreeSet<&str> = framed.iter().map(|(v, _)| *v).collect();
    assert_eq!(
        versions.len(),
        1,
        "one version, registered once: {versions:?}"
    );
    let out = consume(&b, &topic, registry, &glue, &[]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(lines(&out), [&want[..], &want, &want, &want].concat());
    // Refused before anything is written (exit 2): a Confluent id, a file Glue does not
    // hold, compression without Glue.
    let other = dir.path().join("other.avsc");
    std::fs::write(&other, avro.replace("Checkout", "Other")).unwrap();
    let other = [
        "--value-format",
        "avro",
        "--value-schema",
        other.to_str().unwrap(),
    ];
    let refused: [(Option<&str>, &[&str], &str); 3] = [
        (
            Some(registry),
            &["--value-schema-id", "1"],
            "--value-schema-id is a Confluent registry's",
        ),
        (
            Some(registry),
            &[&other[..], &named].concat(),
            "--register registers it",
        ),
        (
            None,
            &["--glue-compression", "zlib", "--value-format", "avro"],
            "give -r glue://NAME",
        ),
    ];
    for (registry, args, said) in refused {
        let out = write(&b, input, &topic, registry, &glue, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(said),
            "{args:?}: {out:?}"
        );
    }
    let read = consume(&b, &topic, registry, &glue, &[]);
    assert_eq!(lines(&read).len(), 8, "nothing more was written");
}

/// A Glue Protobuf schema whose messages' declaration order is not Glue's numbering: Glue
/// counts every message of the file, nested ones and map entries too, by full name
/// (Checkout 0, Checkout.CountsEntry 1, Checkout.Line 2, Refund 3).
const GLUE_PROTO: &str = r#"syntax = "proto3";
package acme.glue;

message Refund {
  string refund_id = 1;
  Checkout.Line line = 2;
}

message Checkout {
  message Line {
    string sku = 1;
    int32 qty = 2;
  }
  string event_id = 1;
  int64 amount_cents = 2;
  map<string, int32> counts = 3;
  Line line = 4;
  repeated Line lines = 5;
  bool ok = 6;
}
"#;

/// Protobuf values framed as AWS's serializer frames them (the schema version's UUID, Glue's
/// message index, the message; plain and zlib) read as the proto3 JSON the peer reads them
/// as; and a Kafka sink with `-r glue://` and `--value-format protobuf` frames values the peer
/// reads back as the records weir was given.
#[test]
fn glue_protobuf_values_decode_and_encode_as_aws_frames_them() {
    let (Some(b), Some(Server { endpoint: glue })) = (broker(), server("WEIR_TEST_GLUE")) else {
        return;
    };
    let name = format!("proto-{}", std::process::id());
    let version = glue_py(
        &["schema", &glue, REGISTRY, &name, "PROTOBUF"],
        GLUE_PROTO,
        None,
    );
    let topic = b.topic("glue-proto", 1);
    let produce = |message: &str, records: &str, zlib: bool| {
        let mut args = vec!["produce", &b.addr, &topic, &version, "PROTOBUF"];
        if zlib {
            args.push("zlib");
        }
        let env = [("GLUE_SCHEMA", GLUE_PROTO), ("GLUE_MESSAGE", message)];
        peer("glue.py", &args, records, &env);
    };
    let checkouts = concat!(
        r#"{"event_id":"e-1","amount_cents":"-1250","counts":{"a":1,"b":2},"#,
        r#""line":{"sku":"s","qty":2},"lines":[{"sku":"x","qty":1}],"ok":true}"#,
        "\n",
        r#"{"event_id":"e-2"}"#,
        "\n"
    );
    produce("acme.glue.Checkout", checkouts, false);
    produce(
        "acme.glue.Refund",
        "{\"refund_id\":\"r-1\",\"line\":{\"sku\":\"y\"}}\n",
        true,
    );
    produce(
        "acme.glue.Checkout.Line",
        "{\"sku\":\"z\",\"qty\":-3}\n",
        true,
    );
    let out = consume(&b, &topic, REGISTRY, &glue, &[]);
    assert!(out.status.success(), "{out:?}");
    let peer_read = |topic: &str, n: usize| -> Vec<Value> {
        let read = glue_py(
            &["read-proto", &glue, &b.addr, topic, &n.to_string()],
            "",
            None,
        );
        read.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let decoded = lines(&out);
    assert_eq!(decoded.len(), 4);
    assert_eq!(decoded, peer_read(&topic, 4));
    assert_eq!(decoded[2]["refund_id"], "r-1", "{decoded:?}");
    assert_eq!(decoded[3]["qty"], -3, "{decoded:?}");
    // The sink: weir's Checkout lines framed with the schema's latest version, zlib.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("checkouts.ndjson");
    let written: Vec<String> = decoded[..2].iter().map(Value::to_string).collect();
    std::fs::write(&input, written.join("\n") + "\n").unwrap();
    let sunk = b.topic("glue-proto-sink", 1);
    let args = [
        "--value-format",
        "protobuf",
        "--value-subject",
        &name,
        "--value-proto-type",
        "acme.glue.Checkout",
        "--glue-compression",
        "zlib",
    ];
    let out = write(
        &b,
        input.to_str().unwrap(),
        &sunk,
        Some(REGISTRY),
        &glue,
        &args,
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(peer_read(&sunk, 2), decoded[..2]);
}

/// A window over a topic of Avro values framed by AWS's own serializer library writes the rows
/// and late records of the same window over those records as NDJSON, read in the same order.
#[test]
fn a_window_over_glue_framed_values_equals_one_over_the_ndjson() {
    let (Some(b), Some(Server { endpoint: glue })) = (broker(), server("WEIR_TEST_GLUE")) else {
        return;
    };
    let avro = r#"{"type":"record","name":"Checkout","fields":[{"name":"occurred_at","type":"string"},{"name":"merchant_id","type":"string"},{"name":"amount","type":"double"}]}"#;
    let name = format!("window-{}", std::process::id());
    let version = glue_py(&["schema", &glue, REGISTRY, &name, "AVRO"], avro, None);
    // 300 checkouts over ten minutes, every seventh one some minutes late.
    let records: String = (0..300u32)
        .map(|i| {
            let late = if i % 7 == 0 { 240 } else { 0 };
            let second = (i * 2).saturating_sub(late);
            let at = format!("2026-12-05T10:{:02}:{:02}.000Z", second / 60, second % 60);
            let amount = f64::from(i % 50) + 0.25;
            format!(
                "{{\"occurred_at\":\"{at}\",\"merchant_id\":\"m-{}\",\"amount\":{amount}}}\n",
                i % 6
            )
        })
        .collect();
    let topic = b.topic("glue-window", 1);
    glue_py(
        &["produce", &b.addr, &topic, &version, "AVRO", "zlib"],
        &records,
        Some(avro),
    );
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.ndjson");
    std::fs::write(&input, &records).unwrap();
    let window = |source: &str, prefix: &str, extra: &[&str]| {
        let late = dir.path().join(format!("late-{}", prefix.len()));
        let field = |f: &str| format!("{prefix}{f}");
        let mut c = weir_std();
        let out = aws_env(&mut c)
            .env("AWS_ENDPOINT_URL_GLUE", &glue)
            .args([
                "window",
                source,
                "-q",
                "--tumbling",
                "1m",
                "--delay",
                "1m",
                "--count",
            ])
            .args([
                "--time",
                &field("occurred_at"),
                "--key",
                &field("merchant_id"),
            ])
            .args(["--sum", &field("amount"), "--late-output"])
            .arg(&late)
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let rows: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            // The topic's columns are named by their paths: value.merchant_id, value_merchant_id.
            .map(|l| l.replace("value_", ""))
            .collect();
        let late: Vec<Value> = std::fs::read_to_string(&late)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|v| v.get("value").cloned().unwrap_or(v))
            .collect();
        (rows, late)
    };
    let plain = window(input.to_str().unwrap(), "", &[]);
    let registry = format!("glue://{REGISTRY}");
    let framed = window(&b.url(&topic), "value.", &["-e", "-r", &registry]);
    assert!(plain.0.len() > 20 && !plain.1.is_empty(), "{plain:?}");
    assert_eq!(framed, plain);
}
