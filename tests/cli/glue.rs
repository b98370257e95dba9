//! `-r glue://REGISTRY`: values framed by AWS's own Glue serializer library
//! (`aws-glue-schema-registry`, through `scripts/peers/glue.py`), their schemas registered in
//! moto's Glue API in server mode, produced to the test broker and decoded by weir.

use std::process::Output;

use serde_json::Value;

use super::kafka::{broker, Broker};
use super::kinesis::{aws_env, kinesis_local, peer, server, Server};
use crate::weir_std;

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
    let registry = format!("weir-{}", std::process::id());
    let avro = r#"{"type":"record","name":"Checkout","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"}]}"#;
    let version = glue_py(
        &["schema", &glue, &registry, "checkouts", "AVRO"],
        avro,
        None,
    );
    let json_schema = r#"{"type":"object","properties":{"id":{"type":"string"}}}"#;
    let json_version = glue_py(
        &["schema", &glue, &registry, "events", "JSON"],
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
        &registry,
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
    let out = consume(&b, &topic, &registry, "http://127.0.0.1:9", &[]);
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
    let registry = format!("weir-k-{}", std::process::id());
    let avro = r#"{"type":"record","name":"Checkout","fields":[{"name":"id","type":"string"}]}"#;
    let version = glue_py(
        &["schema", &glue, &registry, "checkouts", "AVRO"],
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

/// Framing a sink's values for Glue is not built yet: said before anything opens (exit 2).
#[test]
fn a_glue_sink_is_refused_for_now() {
    let out = weir_std()
        .args([
            "consume",
            "fixtures/checkouts.ndjson",
            "-o",
            "kafka://127.0.0.1:1/x",
        ])
        .args(["-r", "glue://reg", "--value-format", "avro"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("framing a sink's values for Glue is not built yet"),
        "{err}"
    );
}
