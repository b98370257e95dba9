//! Schema-framed topics: records written by confluent-kafka's own serializers (Avro with two
//! versions and a reference across subjects, JSON Schema, Avro keys), read through the tests'
//! registry (`tests/support/registry.rs`), which that client also reads back; every command
//! on a framed topic against the same events as JSON; each bad record and registry failure.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};

use super::kafka::{broker, Broker};
use super::registry::{Mode, Registry};
use super::weir;

/// A record to produce: its key, value and partition.
type Raw = (Option<Vec<u8>>, Vec<u8>, i32);

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// golden.py's document, made now by confluent-kafka's serializers; `None` (skipped) where
/// the library is missing, which fails under CI=true.
fn golden() -> Option<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schema/golden.py");
    let out = Command::new("python3").arg(&script).output();
    match out {
        Ok(o) if o.status.success() => Some(serde_json::from_slice(&o.stdout).unwrap()),
        other => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true but golden.py failed (scripts/kafka-broker.sh installs confluent-kafka[avro,json]): {other:?}"
            );
            eprintln!("skipped: golden.py failed: {other:?}");
            None
        }
    }
}

/// A topic of these (key, value, partition) records, written as they are.
fn topic_of(b: &Broker, name: &str, records: &[Raw]) -> String {
    let topic = b.topic(name, 2);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("envelopes.ndjson");
    let mut f = std::fs::File::create(&file).unwrap();
    for (key, value, partition) in records {
        let key = match key {
            Some(k) => json!({"key": B64.encode(k), "key_encoding": "base64"}),
            None => json!({"key": null}),
        };
        let mut e =
            json!({"partition": partition, "value": B64.encode(value), "value_encoding": "base64"});
        e.as_object_mut()
            .unwrap()
            .extend(key.as_object().unwrap().clone());
        writeln!(f, "{e}").unwrap();
    }
    b.produce(&topic, &file, &["-J", "--keep-partition"]);
    topic
}

fn golden_records(g: &Value) -> Vec<Raw> {
    let records = g["records"].as_array().unwrap();
    (records.iter().enumerate())
        .map(|(i, r)| {
            let key = r["key"].as_str().map(|k| B64.decode(k).unwrap());
            (
                key,
                B64.decode(r["value"].as_str().unwrap()).unwrap(),
                (i % 2) as i32,
            )
        })
        .collect()
}

/// `args` on `topic` to its end, with a `--timeout` that rides out a busy broker unless
/// `args` give their own.
fn run(b: &Broker, topic: &str, args: &[&str]) -> Output {
    let timeout: &[&str] = match args.contains(&"--timeout") {
        true => &[],
        false => &["--timeout", "20s"],
    };
    weir()
        .args(args)
        .arg(b.url(topic))
        .arg("-e")
        .args(timeout)
        .timeout(Duration::from_secs(90))
        .output()
        .unwrap()
}

fn lines(out: &Output) -> Vec<Value> {
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Envelopes in the order of the records produced (partition, then offset).
fn by_offset(mut envelopes: Vec<Value>) -> Vec<Value> {
    envelopes.sort_by_key(|e| (e["offset"].as_i64(), e["partition"].as_i64()));
    envelopes
}

#[test]
fn golden_records_decode_as_confluent_deserializers_read_them() {
    let Some(b) = broker() else { return };
    let Some(g) = golden() else { return };
    let registry = Registry::start(&g["registry"]);
    // The reference client reads every schema and record back from the tests' registry.
    let mut check = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schema/golden.py"))
        .args(["check", &registry.url])
        .stdin(std::process::Stdio::piped())
        .output_with(&g.to_string());
    assert_eq!(
        String::from_utf8_lossy(&check.stdout).trim(),
        "ok",
        "{check:?}"
    );
    check.stdout.clear();
    let asked_before = registry.asked().len();
    let records = golden_records(&g);
    let topic = topic_of(&b, "golden", &records);
    let got = by_offset(lines(&run(
        &b,
        &topic,
        &["consume", "-J", "-q", "-r", &registry.url],
    )));
    let expected = g["records"].as_array().unwrap();
    assert_eq!(got.len(), expected.len());
    // Records went to partitions 0, 1, 0, 1, ...: offset order interleaves them back.
    for (i, e) in expected.iter().enumerate() {
        let envelope = got
            .iter()
            .find(|v| v["partition"] == (i % 2) as i64 && v["offset"] == (i / 2) as i64)
            .unwrap();
        assert_eq!(envelope["value"], e["expected_value"], "record {i}");
        let value = B64.decode(e["value"].as_str().unwrap()).unwrap();
        assert_eq!(
            envelope["value_schema_id"],
            u32::from_be_bytes(value[1..5].try_into().unwrap())
        );
        match e["key"].as_str().map(|k| B64.decode(k).unwrap()) {
            Some(k) if k[0] == 0 => {
                assert_eq!(envelope["key"], e["expected_key"], "record {i}");
                assert_eq!(
                    envelope["key_schema_id"],
                    u32::from_be_bytes(k[1..5].try_into().unwrap())
                );
            }
            _ => {
                assert_eq!(
                    envelope["key"], e["expected_key"],
                    "record {i}: a text key stays text"
                );
                assert!(envelope.get("key_schema_id").is_none());
            }
        }
    }
    // One request per schema id, and per subject version a reference names.
    let asked = &registry.asked()[asked_before..];
    let mut distinct = asked.to_vec();
    distinct.sort();
    distinct.dedup();
    assert_eq!(asked.len(), distinct.len(), "{asked:?}");
    // A registry answers Protobuf schemas as .proto text (the mock kept the serialized
    // descriptors the client sent): the same records decode from the text.
    let mut as_text = g["registry"].clone();
    let proto = |name: &str| {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/schema")
                .join(name),
        )
        .unwrap()
    };
    for (_, entry) in as_text["ids"].as_object_mut().unwrap() {
        if entry["schemaType"] == "PROTOBUF" {
            let refs = entry["references"].as_array().unwrap().len();
            entry["schema"] = json!(proto(if refs == 0 {
                "money.proto"
            } else {
                "checkout.proto"
            }));
        }
    }
    let text_registry = Registry::start(&as_text);
    let from_text = by_offset(lines(&run(
        &b,
        &topic,
        &["consume", "-J", "-q", "-r", &text_registry.url],
    )));
    let protobuf = |envelopes: &[Value]| -> Vec<Value> {
        let ids: Vec<u64> = as_text["ids"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(_, e)| e["schemaType"] == "PROTOBUF")
            .map(|(id, _)| id.parse().unwrap())
            .collect();
        envelopes
            .iter()
            .filter(|e| ids.contains(&e["value_schema_id"].as_u64().unwrap()))
            .map(|e| e["value"].clone())
            .collect()
    };
    assert_eq!(protobuf(&from_text).len(), 5);
    assert_eq!(protobuf(&from_text), protobuf(&got));
    // Without -J, consume writes the values alone.
    let values = lines(&run(
        &b,
        &topic,
        &["consume", "-q", "-r", &registry.url, "--partitions", "1"],
    ));
    let odd: Vec<&Value> = expected
        .iter()
        .skip(1)
        .step_by(2)
        .map(|e| &e["expected_value"])
        .collect();
    assert_eq!(values.iter().collect::<Vec<_>>(), odd);
}

/// Writes `input` to the child's stdin and waits for it.
trait OutputWith {
    fn output_with(&mut self, input: &str) -> Output;
}

impl OutputWith for Command {
    fn output_with(&mut self, input: &str) -> Output {
        let mut child = self.stdout(std::process::Stdio::piped()).spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }
}

/// An Avro schema of the generator's checkout events.
const EVENT_SCHEMA: &str = r#"{"type":"record","name":"Event","fields":[
 {"name":"event_id","type":"string"},
 {"name":"occurred_at","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"arrived_at","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"merchant_id","type":"string"},
 {"name":"amount","type":"double"},
 {"name":"status","type":{"type":"enum","name":"Status","symbols":["paid","failed"]}}]}"#;

/// Generated events as JSON lines and as framed Avro (schema id 7), with their partitions.
fn events_both_ways(n: u64) -> (Vec<Raw>, Vec<Raw>) {
    use apache_avro::types::Value as Avro;
    let schema = apache_avro::Schema::parse_str(EVENT_SCHEMA).unwrap();
    let (file, events) = super::generated(n, 23);
    let text = std::fs::read_to_string(file.path()).unwrap();
    let (mut as_json, mut as_avro) = (Vec::new(), Vec::new());
    for (line, e) in text.lines().zip(&events) {
        let v: Value = serde_json::from_str(line).unwrap();
        let json_value = json!({"event_id": v["event_id"], "occurred_at": v["occurred_at"], "arrived_at": v["arrived_at"],
            "merchant_id": v["merchant_id"], "amount": v["amount"], "status": v["status"]});
        let status = u32::from(e.failed);
        let record = Avro::Record(vec![
            (
                "event_id".into(),
                Avro::String(v["event_id"].as_str().unwrap().into()),
            ),
            ("occurred_at".into(), Avro::TimestampMillis(e.occurred_at)),
            ("arrived_at".into(), Avro::TimestampMillis(e.arrived_at)),
            (
                "merchant_id".into(),
                Avro::String(v["merchant_id"].as_str().unwrap().into()),
            ),
            ("amount".into(), Avro::Double(v["amount"].as_f64().unwrap())),
            (
                "status".into(),
                Avro::Enum(status, ["paid", "failed"][status as usize].into()),
            ),
        ]);
        #[allow(deprecated)]
        let datum = apache_avro::to_avro_datum(&schema, record).unwrap();
        let mut framed = vec![0, 0, 0, 0, 7];
        framed.extend(datum);
        // One partition: with several, which records are late depends on how their reads
        // interleave, in any one run.
        let partition = 0;
        as_json.push((None, json_value.to_string().into_bytes(), partition));
        as_avro.push((None, framed, partition));
    }
    (as_json, as_avro)
}

fn registry_with_events() -> Registry {
    Registry::start(
        &json!({"ids": {"7": {"schema": EVENT_SCHEMA, "schemaType": "AVRO", "references": []}}, "subjects": []}),
    )
}

#[test]
fn commands_on_a_framed_topic_give_what_they_give_on_the_same_events_as_json() {
    let Some(b) = broker() else { return };
    let registry = registry_with_events();
    let (as_json, as_avro) = events_both_ways(3_000);
    let json_topic = topic_of(&b, "events-json", &as_json);
    let avro_topic = topic_of(&b, "events-avro", &as_avro);
    let r = ["-r", registry.url.as_str()];
    let window = [
        "window",
        "-q",
        "--time",
        "value.occurred_at",
        "--key",
        "value.merchant_id",
        "--tumbling",
        "1m",
        "--delay",
        "2m",
        "--count",
        "--sum",
        "value.amount",
        "--where",
        "value.status == \"failed\"",
    ];
    let dedupe = [
        "dedupe",
        "-q",
        "--id",
        "value.event_id",
        "--time",
        "value.occurred_at",
        "--horizon",
        "10m",
    ];
    let profile = [
        "watermark-profile",
        "-q",
        "--time",
        "value.occurred_at",
        "--arrival",
        "value.arrived_at",
        "--format",
        "json",
    ];
    let rows = lines(&run(&b, &json_topic, &window));
    assert!(rows.len() > 20, "{rows:?}");
    assert_eq!(
        lines(&run(&b, &avro_topic, &[&window[..], &r[..]].concat())),
        rows
    );
    // What passed, by position (partitions interleave in any order).
    let ids = |out: Vec<Value>| -> Vec<String> {
        let mut ids: Vec<String> = out
            .iter()
            .map(|e| {
                format!(
                    "{} {} {}",
                    e["partition"], e["offset"], e["value"]["event_id"]
                )
            })
            .collect();
        ids.sort();
        ids
    };
    let passed = ids(lines(&run(&b, &json_topic, &dedupe)));
    assert!(
        passed.len() < as_json.len(),
        "the generator repeats some ids"
    );
    let passed_avro = ids(lines(&run(
        &b,
        &avro_topic,
        &[&dedupe[..], &r[..]].concat(),
    )));
    assert!(
        passed_avro == passed,
        "{} and {} passed",
        passed_avro.len(),
        passed.len()
    );
    let report = |out: Output| -> Value {
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let from_json = report(run(&b, &json_topic, &profile));
    assert_eq!(from_json["records"], 3_000);
    assert_eq!(
        report(run(&b, &avro_topic, &[&profile[..], &r[..]].concat())),
        from_json
    );
}

#[test]
fn bad_framed_records_are_bad_records_with_position_and_reason() {
    let Some(b) = broker() else { return };
    let registry = registry_with_events();
    let (_, as_avro) = events_both_ways(2);
    let good = as_avro[0].1.clone();
    let mut unknown = good.clone();
    unknown[4] = 99;
    let records = vec![
        (None, good.clone(), 0),
        (None, br#"{"event_id":"plain json"}"#.to_vec(), 0),
        (None, unknown, 0),
        (None, good[..good.len() - 3].to_vec(), 0),
        (None, vec![0, 0, 7], 0),
        (None, good, 0),
    ];
    let topic = topic_of(&b, "bad-frames", &records);
    let out = run(&b, &topic, &["consume", "-q", "-r", &registry.url]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("partition 0 offset 1") && stderr.contains("magic byte 0x7b"),
        "{stderr}"
    );
    let dir = tempfile::tempdir().unwrap();
    let dead = dir.path().join("dead.ndjson");
    let args = [
        "consume",
        "-q",
        "-r",
        &registry.url,
        "--on-error",
        "skip",
        "--dead-letter",
        dead.to_str().unwrap(),
    ];
    let written = lines(&run(&b, &topic, &args));
    assert_eq!(written.len(), 2, "the two good records");
    let dead: Vec<Value> = std::fs::read_to_string(&dead)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let reasons: Vec<String> = dead
        .iter()
        .map(|d| d["reason"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(reasons.len(), 4, "{reasons:?}");
    for (reason, expected) in reasons.iter().zip([
        "magic byte 0x7b",
        "schema id 99 not found",
        "truncated",
        "3 bytes: too short",
    ]) {
        assert!(
            reason.contains(expected) && reason.contains("value"),
            "{reason} lacks {expected}"
        );
    }
}

#[test]
fn a_registry_that_cannot_answer_stops_the_run_with_exit_4() {
    let Some(b) = broker() else { return };
    let registry = registry_with_events();
    let (_, as_avro) = events_both_ways(20);
    let topic = topic_of(&b, "outage", &as_avro);
    let consume = |extra: &[&str]| {
        let args = [&["consume", "-q", "-r", &registry.url][..], extra].concat();
        run(&b, &topic, &args)
    };
    for (mode, says) in [
        (Mode::Fail, "HTTP 500"),
        (Mode::Malformed, "not a schema"),
        (
            Mode::RequireAuth("Basic dTpw".into()),
            "refused weir (HTTP 401)",
        ),
        (Mode::Slow(Duration::from_secs(15)), "tried"),
    ] {
        registry.set(mode.clone());
        // Shorter than the slow registry's answer, and long enough for a broker under load
        // to answer its metadata (5 s was not, once).
        let out = consume(&["--timeout", "10s"]);
        assert_eq!(out.status.code(), Some(4), "{mode:?}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{mode:?}: {out:?}"
        );
        assert!(
            out.stdout.is_empty(),
            "{mode:?}: nothing decoded, nothing written"
        );
    }
    // Credentials open it; failures that pass are retried.
    registry.set(Mode::RequireAuth("Basic dTpw".into()));
    assert_eq!(
        lines(&consume(&[
            "-X",
            "schema.registry.basic.auth.user.info=u:p"
        ]))
        .len(),
        20
    );
    registry.set(Mode::FailTimes(2));
    assert_eq!(lines(&consume(&[])).len(), 20);
    let closed = run(&b, &topic, &["consume", "-q", "-r", "http://127.0.0.1:9"]);
    assert_eq!(closed.status.code(), Some(4), "{closed:?}");
}

#[test]
fn an_outage_mid_run_loses_nothing_and_the_checkpoint_goes_on() {
    let Some(b) = broker() else { return };
    let schema = json!({"schema": EVENT_SCHEMA, "schemaType": "AVRO", "references": []});
    let registry = Registry::start(&json!({"ids": {"7": schema, "8": schema}, "subjects": []}));
    // One partition; the second half framed with id 8 (the same schema), first asked for
    // mid-run, when the registry fails it.
    let (as_json, mut as_avro) = events_both_ways(400);
    for (i, (_, v, p)) in as_avro.iter_mut().enumerate() {
        *p = 0;
        if i >= 200 {
            v[4] = 8;
        }
    }
    let topic = topic_of(&b, "outage-mid-run", &as_avro);
    let dir = tempfile::tempdir().unwrap();
    let (checkpoint, out, stats) = (
        dir.path().join("ck"),
        dir.path().join("out.ndjson"),
        dir.path().join("stats.json"),
    );
    let consume = || {
        let (c, o, s) = (
            checkpoint.to_str().unwrap(),
            out.to_str().unwrap(),
            stats.to_str().unwrap(),
        );
        run(
            &b,
            &topic,
            &[
                "consume",
                "-q",
                "-r",
                &registry.url,
                "--checkpoint",
                c,
                "-o",
                o,
                "--stats",
                s,
            ],
        )
    };
    registry.set(Mode::FailPath("/ids/8".into()));
    let first = consume();
    assert_eq!(first.status.code(), Some(4), "{first:?}");
    assert!(
        String::from_utf8_lossy(&first.stderr).contains("/schemas/ids/8"),
        "{first:?}"
    );
    let before = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        before.lines().count(),
        200,
        "the records before the outage are out"
    );
    registry.set(Mode::Serve);
    let asked = registry.asked().len();
    let second = consume();
    assert!(second.status.success(), "{second:?}");
    // A restart from the beginning would ask for id 7 again.
    assert_eq!(
        registry.asked()[asked..],
        ["/schemas/ids/8"],
        "the restart goes on from the checkpoint"
    );
    let stats: Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(stats["read"], 400, "{stats}");
    // The output file, cut back to what the checkpoint committed, holds every record once.
    let text = std::fs::read_to_string(&out).unwrap();
    let written: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<&str> = written
        .iter()
        .map(|v| v["event_id"].as_str().unwrap())
        .collect();
    let expected: Vec<Value> = as_json
        .iter()
        .map(|(_, v, _)| serde_json::from_slice(v).unwrap())
        .collect();
    assert_eq!(
        ids,
        expected
            .iter()
            .map(|v| v["event_id"].as_str().unwrap())
            .collect::<Vec<_>>()
    );
}

#[test]
fn local_schema_files_decode_unframed_keys_and_values() {
    let Some(b) = broker() else { return };
    let Some(g) = golden() else { return };
    let dir = tempfile::tempdir().unwrap();
    let ids = &g["registry"]["ids"];
    let (value_avsc, key_avsc) = (
        dir.path().join("checkout.avsc"),
        dir.path().join("key.avsc"),
    );
    std::fs::write(&value_avsc, ids["2"]["schema"].as_str().unwrap()).unwrap();
    std::fs::write(&key_avsc, ids["1"]["schema"].as_str().unwrap()).unwrap();
    // The first four golden records are version 1 (id 2) with Avro keys (id 1): unframed.
    let golden = &g["records"].as_array().unwrap()[..4];
    let records: Vec<_> = golden
        .iter()
        .map(|r| {
            let unframed = |k: &str| B64.decode(r[k].as_str().unwrap()).unwrap()[5..].to_vec();
            (Some(unframed("key")), unframed("value"), 0)
        })
        .collect();
    let topic = topic_of(&b, "unframed", &records);
    let (v, k) = (value_avsc.to_str().unwrap(), key_avsc.to_str().unwrap());
    let got = lines(&run(
        &b,
        &topic,
        &[
            "consume",
            "-J",
            "-q",
            "--value-format",
            "avro",
            "--value-schema",
            v,
            "--key-format",
            "avro",
            "--key-schema",
            k,
        ],
    ));
    for (envelope, r) in got.iter().zip(golden) {
        assert_eq!(envelope["value"], r["expected_value"]);
        assert_eq!(envelope["key"], r["expected_key"]);
        assert!(
            envelope.get("value_schema_id").is_none(),
            "no id without a frame"
        );
    }
}

#[test]
fn schema_flags_are_checked_before_anything_is_opened() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.avsc");
    std::fs::write(
        &bad,
        r#"{"type":"record","name":"x","fields":[{"name":"a","type":"nope"}]}"#,
    )
    .unwrap();
    let kafka = "kafka://127.0.0.1:9/t";
    for (args, says) in [
        (
            vec!["consume", "-", "-r", "http://localhost:8081"],
            "not NDJSON input",
        ),
        (
            vec!["consume", kafka, "-r", "localhost:8081"],
            "not an http:// or https:// URL",
        ),
        (
            vec![
                "consume",
                kafka,
                "--value-format",
                "avro",
                "--value-schema",
                "/no/such.avsc",
            ],
            "/no/such.avsc",
        ),
        (
            vec![
                "consume",
                kafka,
                "--value-format",
                "avro",
                "--value-schema",
                bad.to_str().unwrap(),
            ],
            "not an Avro schema",
        ),
        (
            vec![
                "consume",
                kafka,
                "-r",
                "http://r",
                "--value-format",
                "avro",
                "--value-schema",
                bad.to_str().unwrap(),
            ],
            "give one of them",
        ),
        (
            vec![
                "consume",
                kafka,
                "-X",
                "schema.registry.basic.auth.user.info=u:p",
            ],
            "there is no --schema-registry",
        ),
        (
            vec![
                "consume",
                kafka,
                "-r",
                "http://r",
                "-X",
                "schema.registry.nope=1",
            ],
            "not a property weir knows",
        ),
        (
            vec!["consume", kafka, "--value-schema", "x.avsc"],
            "--value-format",
        ),
        (
            vec!["replay", "-", "--value-schema-id", "3", "-o", kafka],
            "give -r URL",
        ),
        (
            vec!["replay", "-", "-r", "http://r", "--value-schema-id", "3"],
            "need -o kafka://... or -o kinesis://",
        ),
        (
            vec![
                "replay",
                "-",
                "-r",
                "http://r",
                "--value-subject",
                "s@x",
                "-o",
                kafka,
            ],
            "a number after @",
        ),
        (vec!["consume", kafka, "--value-format", "avro"], "give it"),
        (
            vec!["replay", "-", "-r", "http://r", "--register", "-o", kafka],
            "--register registers --value-schema FILE",
        ),
        (
            vec!["consume", kafka, "--key-format", "avro"],
            "--key-schema FILE: give it",
        ),
        (
            vec![
                "replay",
                "-",
                "--value-format",
                "avro",
                "--value-schema",
                "x.avsc",
            ],
            "need -o kafka://... or -o kinesis://",
        ),
        (
            vec!["replay", "-", "--value-format", "avro", "-o", kafka],
            "give -r URL",
        ),
        (
            vec![
                "replay",
                "-",
                "-r",
                "http://r",
                "--value-schema-id",
                "3",
                "--value-format",
                "avro",
                "--value-schema",
                "x.avsc",
                "-o",
                kafka,
            ],
            "give one",
        ),
    ] {
        let out = weir().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn protobuf_from_local_files_and_a_message_index_out_of_range() {
    let Some(b) = broker() else { return };
    let Some(g) = golden() else { return };
    let ids = &g["registry"]["ids"];
    let records = g["records"].as_array().unwrap();
    let framed = |r: &Value| B64.decode(r["value"].as_str().unwrap()).unwrap();
    let id_of = |bytes: &[u8]| u32::from_be_bytes(bytes[1..5].try_into().unwrap()).to_string();
    // The Checkout records: framed, then message index [0] as the single byte 0.
    let checkouts: Vec<&Value> = records
        .iter()
        .filter(|r| {
            let v = framed(r);
            ids[id_of(&v)]["schemaType"] == "PROTOBUF" && v[5] == 0
        })
        .collect();
    assert_eq!(checkouts.len(), 3);
    let unframed: Vec<Raw> = checkouts
        .iter()
        .map(|r| (None, framed(r)[6..].to_vec(), 0))
        .collect();
    let topic = topic_of(&b, "proto-local", &unframed);
    let proto = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schema/checkout.proto");
    let args = [
        "consume",
        "-q",
        "--value-format",
        "protobuf",
        "--proto-file",
        proto.to_str().unwrap(),
        "--value-proto-type",
        "acme.Checkout",
    ];
    let got = lines(&run(&b, &topic, &args));
    let expected: Vec<&Value> = checkouts.iter().map(|r| &r["expected_value"]).collect();
    assert_eq!(got.iter().collect::<Vec<_>>(), expected);
    // Message index [5] where the file has two top-level messages.
    let registry = Registry::start(&g["registry"]);
    let mut bad = framed(checkouts[0]);
    bad.splice(5..6, [2, 10]);
    let topic = topic_of(
        &b,
        "proto-index",
        &[(None, bad, 0), (None, framed(checkouts[1]), 0)],
    );
    let dir = tempfile::tempdir().unwrap();
    let dead = dir.path().join("dead.ndjson");
    let args = [
        "consume",
        "-q",
        "-r",
        &registry.url,
        "--on-error",
        "skip",
        "--dead-letter",
        dead.to_str().unwrap(),
    ];
    assert_eq!(
        lines(&run(&b, &topic, &args)),
        vec![checkouts[1]["expected_value"].clone()]
    );
    let dead = std::fs::read_to_string(&dead).unwrap();
    assert!(dead.contains("message index [5] out of range"), "{dead}");
}

#[test]
fn a_reader_schema_gives_two_schema_versions_one_shape() {
    let Some(b) = broker() else { return };
    let Some(g) = golden() else { return };
    let registry = Registry::start(&g["registry"]);
    // The eight Checkout records: four of version 1 (no channel), four of version 2.
    let records: Vec<Raw> = golden_records(&g).into_iter().take(8).collect();
    let topic = topic_of(&b, "reader-schema", &records);
    let dir = tempfile::tempdir().unwrap();
    let mut reader: Value =
        serde_json::from_str(g["registry"]["ids"]["3"]["schema"].as_str().unwrap()).unwrap();
    // The reader drops the fx field, reads ratio as a double it already is and n as a long,
    // and adds a field with a default.
    let fields = reader["fields"].as_array_mut().unwrap();
    fields.retain(|f| f["name"] != "fx");
    for f in fields.iter_mut() {
        if f["name"] == "n" {
            f["type"] = json!("long");
        }
    }
    fields.push(json!({"name": "region", "type": "string", "default": "eu"}));
    let avsc = dir.path().join("reader.avsc");
    std::fs::write(&avsc, reader.to_string()).unwrap();
    let got = lines(&run(
        &b,
        &topic,
        &[
            "consume",
            "-q",
            "-r",
            &registry.url,
            "--reader-schema",
            avsc.to_str().unwrap(),
            "--partitions",
            "0",
        ],
    ));
    let expected: Vec<&Value> = g["records"]
        .as_array()
        .unwrap()
        .iter()
        .take(8)
        .step_by(2)
        .map(|r| &r["expected_value"])
        .collect();
    assert_eq!(got.len(), 4);
    for (value, written) in got.iter().zip(expected) {
        let mut want = written.as_object().unwrap().clone();
        want.remove("fx");
        want.entry("channel").or_insert(json!("web"));
        want.insert("region".into(), json!("eu"));
        assert_eq!(value, &Value::Object(want));
        let names: Vec<&String> = value.as_object().unwrap().keys().collect();
        let reader_names: Vec<&str> = fields_of(&reader);
        assert_eq!(names, reader_names, "the reader's field order");
    }
    // A writer schema the reader cannot read: exit 2 naming the schema id.
    std::fs::write(&avsc, r#"{"type":"record","name":"Checkout","namespace":"com.acme","fields":[{"name":"missing","type":"int"}]}"#).unwrap();
    let out = run(
        &b,
        &topic,
        &[
            "consume",
            "-q",
            "-r",
            &registry.url,
            "--reader-schema",
            avsc.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("schema id") && stderr.contains("missing") && stderr.contains("no default"),
        "{stderr}"
    );
}

fn fields_of(schema: &Value) -> Vec<&str> {
    schema["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect()
}

#[test]
fn a_kinesis_stream_of_framed_values_decodes_as_a_topic_does() {
    let Some(s) = super::kinesis::kinesis_local() else {
        return;
    };
    let Some(g) = golden() else { return };
    let registry = Registry::start(&g["registry"]);
    let stream = s.stream("framed", 1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("envelopes.ndjson");
    let records = g["records"].as_array().unwrap();
    let mut f = std::fs::File::create(&file).unwrap();
    for (i, r) in records.iter().enumerate() {
        writeln!(
            f,
            "{}",
            json!({"key": format!("k{i}"), "value": r["value"], "value_encoding": "base64"})
        )
        .unwrap();
    }
    drop(f);
    let put = s.weir(&[
        "replay",
        "-q",
        "-J",
        file.to_str().unwrap(),
        "-o",
        &s.url(&stream),
    ]);
    assert!(put.status.success(), "{put:?}");
    let out = s.weir(&[
        "consume",
        "-J",
        "-e",
        "-q",
        &s.url(&stream),
        "-r",
        &registry.url,
    ]);
    let got = lines(&out);
    assert_eq!(got.len(), records.len());
    for (envelope, r) in got.iter().zip(records) {
        assert_eq!(envelope["value"], r["expected_value"]);
        let value = B64.decode(r["value"].as_str().unwrap()).unwrap();
        assert_eq!(
            envelope["value_schema_id"],
            u32::from_be_bytes(value[1..5].try_into().unwrap())
        );
    }
    // Keys are partition keys, text: no key schema on Kinesis.
    let refused = s.weir(&[
        "consume",
        "-e",
        &s.url(&stream),
        "--key-format",
        "avro",
        "--key-schema",
        "k.avsc",
    ]);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    // A Kinesis sink encodes as a Kafka sink does: the Checkout version 1 values (id 2) go
    // back to their bytes.
    let checkouts: Vec<&Value> = (got.iter())
        .filter(|e| e["value_schema_id"] == 2)
        .map(|e| &e["value"])
        .collect();
    assert_eq!(checkouts.len(), 4);
    let values = values_file(dir.path(), "checkouts.ndjson", &checkouts);
    let encoded = s.stream("encoded", 1);
    let put = s.weir(&[
        "replay",
        "-q",
        values.to_str().unwrap(),
        "--key",
        "event_id",
        "-r",
        &registry.url,
        "--value-schema-id",
        "2",
        "-o",
        &s.url(&encoded),
    ]);
    assert!(put.status.success(), "{put:?}");
    let back = lines(&s.weir(&["consume", "-J", "-e", "-q", &s.url(&encoded)]));
    let originals: Vec<String> = (records.iter().take(4))
        .map(|r| r["value"].as_str().unwrap().to_string())
        .collect();
    let bytes: Vec<String> = (back.iter())
        .map(|e| match e["value_encoding"] == "base64" {
            true => e["value"].as_str().unwrap().to_string(),
            false => B64.encode(e["value"].as_str().unwrap()),
        })
        .collect();
    assert_eq!(bytes, originals, "byte for byte, in order");
}

/// Writes `values` as envelopes (`{"partition":P,"value":V}`) to a file in `dir`.
fn envelope_file(dir: &Path, name: &str, values: &[(i64, Value)]) -> std::path::PathBuf {
    let file = dir.join(name);
    let mut f = std::fs::File::create(&file).unwrap();
    for (partition, value) in values {
        writeln!(f, "{}", json!({"partition": partition, "value": value})).unwrap();
    }
    file
}

/// `replay -J --keep-partition FILE -o TOPIC` with `flags` (the schema's), dead letters to
/// `dead`.
fn replay_encoded(b: &Broker, file: &Path, topic: &str, flags: &[&str], dead: &Path) -> Output {
    weir()
        .args(["replay", "-J", "--keep-partition", file.to_str().unwrap()])
        .args(flags)
        .args(["-o", &b.url(topic), "--on-error", "skip"])
        .args(["--dead-letter", dead.to_str().unwrap()])
        .timeout(Duration::from_secs(90))
        .output()
        .unwrap()
}

/// The values of a topic as they are, sorted.
fn raw_values(b: &Broker, topic: &str) -> Vec<Vec<u8>> {
    let back = lines(&run(b, topic, &["consume", "-J", "-q"]));
    // Bytes that are UTF-8 (a framed JSON Schema value) come as text.
    let mut bytes: Vec<Vec<u8>> = (back.iter())
        .map(|e| match (&e["value"], &e["value_encoding"]) {
            (Value::String(v), e) if e == "base64" => B64.decode(v).unwrap(),
            (Value::String(v), _) => v.as_bytes().to_vec(),
            (other, _) => other.to_string().into_bytes(),
        })
        .collect();
    bytes.sort();
    bytes
}

/// Whether a decoded Protobuf value holds a map of more than one entry: its entries go on
/// the wire in no fixed order, so only their decoding is compared.
fn has_unordered_map(value: &Value) -> bool {
    value["counts"].as_object().is_some_and(|m| m.len() > 1)
        || value["attrs"].as_object().is_some_and(|m| !m.is_empty())
}

#[test]
fn decoded_values_encode_back_to_the_same_bytes() {
    let Some(b) = broker() else { return };
    let Some(g) = golden() else { return };
    let registry = Registry::start(&g["registry"]);
    let records = golden_records(&g);
    let topic = topic_of(&b, "round-trip", &records);
    let decoded = by_offset(lines(&run(
        &b,
        &topic,
        &["consume", "-J", "-q", "-r", &registry.url],
    )));
    let dir = tempfile::tempdir().unwrap();
    let ids = g["registry"]["ids"].as_object().unwrap();
    let mut formats = std::collections::BTreeSet::new();
    // Each schema's values (Avro, two versions and a reference; JSON Schema; Protobuf with a
    // message index other than [0]) back through --value-schema-id: the same bytes.
    for id in ids.keys().map(|id| id.parse::<u32>().unwrap()) {
        let originals: Vec<&Vec<u8>> = (records.iter().map(|r| &r.1))
            .filter(|v| v[1..5] == id.to_be_bytes())
            .collect();
        let mine: Vec<&Value> = (decoded.iter())
            .filter(|e| e["value_schema_id"] == id)
            .collect();
        if originals.is_empty() {
            continue; // a key's schema, or one only referred to
        }
        let kind = ids[&id.to_string()]["schemaType"].as_str().unwrap();
        formats.insert(kind.to_string());
        let values: Vec<(i64, Value)> = (mine.iter())
            .map(|e| (e["partition"].as_i64().unwrap(), e["value"].clone()))
            .collect();
        let file = envelope_file(dir.path(), &format!("{id}.ndjson"), &values);
        let target = b.topic(&format!("round-trip-{id}"), 2);
        let dead = dir.path().join(format!("dead-{id}.ndjson"));
        let id_text = id.to_string();
        let mut flags = vec!["-r", &registry.url, "--value-schema-id", &id_text];
        // The schema's messages are Checkout, then Refund: which one is the flag's to say.
        if values[0].1.get("refund_id").is_some() && kind == "PROTOBUF" {
            flags.extend(["--value-proto-type", "acme.Refund"]);
        }
        let out = replay_encoded(&b, &file, &target, &flags, &dead);
        assert!(out.status.success(), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("values encoded with {kind} schema id {id}")),
            "{stderr}"
        );
        let back = lines(&run(&b, &target, &["consume", "-q", "-r", &registry.url]));
        let mut want: Vec<&Value> = values.iter().map(|(_, v)| v).collect();
        let mut got: Vec<&Value> = back.iter().collect();
        want.sort_by_key(|v| v.to_string());
        got.sort_by_key(|v| v.to_string());
        assert_eq!(got, want, "schema id {id}: decodes as it was");
        let ordered = |v: &Vec<u8>| {
            let i = originals.iter().position(|o| o == &v).unwrap();
            kind != "PROTOBUF" || !has_unordered_map(&mine[i]["value"])
        };
        let mut want: Vec<Vec<u8>> = originals.iter().map(|v| v.to_vec()).collect();
        want.retain(ordered);
        want.sort();
        let got = raw_values(&b, &target);
        assert!(!want.is_empty());
        assert!(
            want.iter().all(|w| got.contains(w)),
            "schema id {id} ({kind}): byte for byte"
        );
    }
    assert_eq!(formats.len(), 3, "{formats:?}");
    check_newer_schema_and_misfits(&b, &registry, &decoded, dir.path());
}

/// Version 1's values with the subject's latest schema (version 2, a new field with a
/// default): they get the default. A value missing a field without one is a bad record.
fn check_newer_schema_and_misfits(b: &Broker, registry: &Registry, decoded: &[Value], dir: &Path) {
    let v1: Vec<(i64, Value)> = (decoded.iter())
        .filter(|e| e["value_schema_id"] == 2)
        .map(|e| (e["partition"].as_i64().unwrap(), e["value"].clone()))
        .chain([(0, json!({"event_id": "no other field"}))])
        .collect();
    assert_eq!(v1.len(), 5);
    let file = envelope_file(dir, "v1.ndjson", &v1);
    let target = b.topic("round-trip-newer", 2);
    let dead = dir.join("dead-newer.ndjson");
    let flags = ["-r", &registry.url, "--value-subject", "golden-value@2"];
    let out = replay_encoded(b, &file, &target, &flags, &dead);
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("values encoded with AVRO subject 'golden-value' version 2 (schema id 3)"),
        "{stderr}"
    );
    let dead = std::fs::read_to_string(&dead).unwrap();
    assert!(dead.contains("field occurred_at: missing"), "{dead}");
    let back = lines(&run(b, &target, &["consume", "-q", "-r", &registry.url]));
    assert_eq!(back.len(), 4);
    for value in &back {
        let mut original = value.clone();
        assert_eq!(
            original.as_object_mut().unwrap().remove("channel"),
            Some(json!("web"))
        );
        assert!(v1.iter().any(|(_, v)| v == &original), "{value}");
    }
}

#[test]
fn json_schema_values_are_checked_with_validate() {
    let Some(b) = broker() else { return };
    let Some(g) = golden() else { return };
    let registry = Registry::start(&g["registry"]);
    // The JSON Schema records (id 6) and one that breaks the schema: amount is no number.
    let json_id = (g["registry"]["ids"].as_object().unwrap().iter())
        .find(|(_, e)| e["schemaType"] == "JSON")
        .map(|(id, _)| id.parse::<u32>().unwrap())
        .unwrap();
    let mut breaking = vec![0];
    breaking.extend(json_id.to_be_bytes());
    breaking.extend(br#"{"refund_id":"r-9","amount":"lots"}"#);
    let mut records: Vec<Raw> = golden_records(&g)
        .into_iter()
        .filter(|r| r.1[1..5] == json_id.to_be_bytes())
        .map(|(k, v, _)| (k, v, 0))
        .collect();
    assert_eq!(records.len(), 2);
    records.push((None, breaking, 0));
    let topic = topic_of(&b, "json-schema", &records);
    assert_eq!(
        lines(&run(&b, &topic, &["consume", "-q", "-r", &registry.url])).len(),
        3
    );
    let out = run(
        &b,
        &topic,
        &["consume", "-q", "-r", &registry.url, "--validate"],
    );
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("offset 2") && stderr.contains("/amount"),
        "{stderr}"
    );
}

/// `replay FILE -o TOPIC` with `flags`: each line of FILE a value.
fn replay_lines(b: &Broker, file: &Path, topic: &str, flags: &[&str]) -> Output {
    weir()
        .args(["replay", file.to_str().unwrap(), "-o", &b.url(topic)])
        .args(flags)
        .timeout(Duration::from_secs(90))
        .output()
        .unwrap()
}

fn values_file(dir: &Path, name: &str, values: &[&Value]) -> std::path::PathBuf {
    let file = dir.join(name);
    let text: String = values.iter().map(|v| format!("{v}\n")).collect();
    std::fs::write(&file, text).unwrap();
    file
}

#[test]
fn a_local_avro_schema_is_written_unframed_or_found_or_registered() {
    let Some(b) = broker() else { return };
    let Some(g) = golden() else { return };
    let registry = Registry::start(&g["registry"]);
    let dir = tempfile::tempdir().unwrap();
    // Checkout version 1, as the registry holds it under id 2, and its first four records.
    let avsc = dir.path().join("checkout.avsc");
    std::fs::write(&avsc, g["registry"]["ids"]["2"]["schema"].as_str().unwrap()).unwrap();
    let avsc = avsc.to_str().unwrap();
    let expected: Vec<&Value> = (g["records"].as_array().unwrap()[..4].iter())
        .map(|r| &r["expected_value"])
        .collect();
    let file = values_file(dir.path(), "checkouts.ndjson", &expected);
    let local = ["--value-format", "avro", "--value-schema", avsc];
    // No registry: unframed datums, which the same file decodes.
    let topic = b.topic("local-unframed", 1);
    let out = replay_lines(&b, &file, &topic, &local);
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("values encoded with AVRO ") && stderr.contains("(unframed)"),
        "{stderr}"
    );
    let mut consume = vec!["consume", "-q"];
    consume.extend(local);
    assert_eq!(
        lines(&run(&b, &topic, &consume)).iter().collect::<Vec<_>>(),
        expected
    );
    // A registry without it under TOPIC-value: exit 2, naming the remedy; nothing written.
    let topic = b.topic("local-framed", 1);
    let mut flags = vec!["-r", &registry.url];
    flags.extend(local);
    let out = replay_lines(&b, &file, &topic, &flags);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let subject = format!("{topic}-value");
    assert!(
        stderr.contains(&format!("not registered under subject '{subject}'"))
            && stderr.contains("--register"),
        "{stderr}"
    );
    // --register: the registry has this schema as id 2, so the subject's version 1 gets it.
    flags.push("--register");
    let out = replay_lines(&b, &file, &topic, &flags);
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "registered under subject '{subject}' (schema id 2)"
        )),
        "{stderr}"
    );
    // Then --value-format alone takes the latest of TOPIC-value: the same bytes again.
    let out = replay_lines(
        &b,
        &file,
        &topic,
        &["-r", &registry.url, "--value-format", "avro"],
    );
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("AVRO subject '{subject}' version 1 (schema id 2)")),
        "{stderr}"
    );
    let back = lines(&run(&b, &topic, &["consume", "-q", "-r", &registry.url]));
    let twice: Vec<&Value> = expected.iter().chain(&expected).copied().collect();
    assert_eq!(back.iter().collect::<Vec<_>>(), twice);
    let originals: Vec<Vec<u8>> = (golden_records(&g)[..4].iter())
        .map(|r| r.1.clone())
        .collect();
    let mut want: Vec<Vec<u8>> = originals.iter().chain(&originals).cloned().collect();
    want.sort();
    assert_eq!(
        raw_values(&b, &topic),
        want,
        "byte for byte, as confluent-kafka wrote them"
    );
}

#[test]
fn local_protobuf_and_json_schema_files_encode_what_they_decode() {
    let Some(b) = broker() else { return };
    let Some(g) = golden() else { return };
    let dir = tempfile::tempdir().unwrap();
    let records = g["records"].as_array().unwrap();
    // The Refund messages (the file's second message) and the JSON Schema Refunds.
    let refunds: Vec<&Value> = (records.iter().map(|r| &r["expected_value"]))
        .filter(|v| v.get("refund_id").is_some() && v.get("amount").is_none())
        .collect();
    assert_eq!(refunds.len(), 2);
    let schemas = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schema");
    let proto = schemas.join("checkout.proto");
    let proto_flags = [
        "--value-format",
        "protobuf",
        "--value-schema",
        proto.to_str().unwrap(),
        "--value-proto-type",
        "acme.Refund",
    ];
    let topic = b.topic("local-proto", 1);
    let file = values_file(dir.path(), "refunds.ndjson", &refunds);
    let out = replay_lines(&b, &file, &topic, &proto_flags);
    assert!(out.status.success(), "{out:?}");
    let mut consume = vec!["consume", "-q"];
    consume.extend(proto_flags);
    assert_eq!(
        lines(&run(&b, &topic, &consume)).iter().collect::<Vec<_>>(),
        refunds
    );
    // A field the message does not have: a bad record, and the others go through.
    let misfit = json!({"refund_id": "r-9", "nope": 1});
    let file = values_file(dir.path(), "misfit.ndjson", &[refunds[0], &misfit]);
    let dead = dir.path().join("dead.ndjson");
    let mut flags = proto_flags.to_vec();
    flags.extend([
        "--on-error",
        "skip",
        "--dead-letter",
        dead.to_str().unwrap(),
    ]);
    let out = replay_lines(&b, &file, &b.topic("local-proto-bad", 1), &flags);
    assert!(out.status.success(), "{out:?}");
    let dead = std::fs::read_to_string(&dead).unwrap();
    assert!(
        dead.contains("field name 'nope'") && dead.contains("\"line\":2"),
        "{dead}"
    );
    // JSON Schema: each value checked against the file.
    let json_schema = dir.path().join("refund.json");
    let id = (g["registry"]["ids"].as_object().unwrap().iter())
        .find(|(_, e)| e["schemaType"] == "JSON")
        .map(|(id, _)| id.clone())
        .unwrap();
    std::fs::write(
        &json_schema,
        g["registry"]["ids"][&id]["schema"].as_str().unwrap(),
    )
    .unwrap();
    let good = json!({"refund_id": "r-1", "amount": 12.5, "lines": [1]});
    let bad = json!({"refund_id": "r-2", "amount": "lots"});
    let file = values_file(dir.path(), "json.ndjson", &[&good, &bad]);
    let topic = b.topic("local-json", 1);
    let out = replay_lines(
        &b,
        &file,
        &topic,
        &[
            "--value-format",
            "json-schema",
            "--value-schema",
            json_schema.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("json.ndjson:2") && stderr.contains("/amount"),
        "{stderr}"
    );
    assert_eq!(lines(&run(&b, &topic, &["consume", "-q"])), vec![good]);
}

#[test]
fn a_registry_over_tls_is_trusted_through_its_ca() {
    let Some(b) = broker() else { return };
    let Some(g) = golden() else { return };
    let (registry, ca) = Registry::start_tls(&g["registry"]);
    assert!(registry.url.starts_with("https://127.0.0.1:"));
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca).unwrap();
    let records: Vec<Raw> = golden_records(&g).into_iter().take(2).collect();
    let topic = topic_of(&b, "tls", &records);
    let trusted = format!("schema.registry.ssl.ca.location={}", ca_file.display());
    let got = lines(&run(
        &b,
        &topic,
        &["consume", "-q", "-r", &registry.url, "-X", &trusted],
    ));
    let expected: Vec<&Value> = (g["records"].as_array().unwrap()[..2].iter())
        .map(|r| &r["expected_value"])
        .collect();
    let mut got: Vec<&Value> = got.iter().collect();
    got.sort_by_key(|v| v["event_id"].to_string());
    assert_eq!(got, expected);
    // Without the CA the certificate is no one's the client trusts: exit 4, not bad records.
    let out = run(&b, &topic, &["consume", "-q", "-r", &registry.url]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("schema registry at https://127.0.0.1"),
        "{stderr}"
    );
}

#[test]
fn a_proto_file_is_registered_alone_or_refused_for_its_imports() {
    let Some(b) = broker() else { return };
    let Some(g) = golden() else { return };
    let registry = Registry::start(&g["registry"]);
    let dir = tempfile::tempdir().unwrap();
    let schemas = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schema");
    let flags = |file: &str, message: &str| -> Vec<String> {
        [
            "-r",
            &registry.url,
            "--register",
            "--value-format",
            "protobuf",
            "--proto-file",
            schemas.join(file).to_str().unwrap(),
            "--value-proto-type",
            message,
        ]
        .map(String::from)
        .to_vec()
    };
    let money = [
        json!({"units": "1250", "currency": "EUR"}),
        json!({"units": "0", "currency": ""}),
    ];
    let file = values_file(
        dir.path(),
        "money.ndjson",
        &money.iter().collect::<Vec<_>>(),
    );
    // checkout.proto imports money.proto: registered alone, no reader could compile it.
    let topic = b.topic("proto-register", 1);
    let refused = flags("checkout.proto", "acme.Refund");
    let refused: Vec<&str> = refused.iter().map(String::as_str).collect();
    let out = replay_lines(&b, &file, &topic, &refused);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("imports 'money.proto'"),
        "{out:?}"
    );
    // money.proto stands alone: registered (the registry had it as a serialized descriptor,
    // so it is a new schema) and read back through the registry.
    let alone = flags("money.proto", "acme.money.Money");
    let alone: Vec<&str> = alone.iter().map(String::as_str).collect();
    let out = replay_lines(&b, &file, &topic, &alone);
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("registered under subject '{topic}-value'")),
        "{stderr}"
    );
    let back = lines(&run(&b, &topic, &["consume", "-q", "-r", &registry.url]));
    assert_eq!(back, money);
}
