//! `--where` in every command: the output is the command's on the input filtered beforehand
//! (by an independent predicate in the test), and `filtered` counts the rest.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde_json::Value;

use crate::{generated, weir};

/// The condition, and the same by hand on a parsed record.
const CONDITION: &str =
    r#"client in ["web", "ios"] and amount >= 100 and not merchant_id == "m-00001""#;

fn kept(v: &Value) -> bool {
    let client = v["client"].as_str().unwrap();
    let amount: f64 = v["amount"].as_f64().unwrap();
    (client == "web" || client == "ios") && amount >= 100.0 && v["merchant_id"] != "m-00001"
}

/// Runs `args` on `input` (with `--stats`), the output file's text and the stats.
fn run(args: &[&str], input: &Path, dir: &Path, name: &str) -> (String, Value) {
    let out = dir.join(format!("{name}.out"));
    let stats = dir.join(format!("{name}.stats"));
    let run = weir()
        .args(args)
        .arg(input)
        .args([
            "-q",
            "-o",
            out.to_str().unwrap(),
            "--stats",
            stats.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(run.status.success(), "{args:?}: {run:?}");
    let stats = serde_json::from_str(&std::fs::read_to_string(stats).unwrap()).unwrap();
    (std::fs::read_to_string(out).unwrap(), stats)
}

#[test]
fn every_command_filters_as_the_input_filtered_beforehand() {
    let (file, _) = generated(20_000, 17);
    let text = std::fs::read_to_string(file.path()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let pre = dir.path().join("prefiltered.ndjson");
    let mut f = std::fs::File::create(&pre).unwrap();
    let mut dropped = 0;
    for line in text.lines() {
        if kept(&serde_json::from_str(line).unwrap()) {
            writeln!(f, "{line}").unwrap();
        } else {
            dropped += 1;
        }
    }
    assert!(
        dropped > 1_000 && dropped < 19_000,
        "the condition drops some: {dropped}"
    );
    let commands: [&[&str]; 5] = [
        &["consume"],
        &[
            "window",
            "--time",
            "occurred_at",
            "--key",
            "merchant_id",
            "--tumbling",
            "1m",
            "--delay",
            "5s",
            "--count",
            "--sum",
            "amount",
        ],
        &[
            "dedupe",
            "--id",
            "event_id",
            "--time",
            "occurred_at",
            "--horizon",
            "1h",
        ],
        &[
            "watermark-profile",
            "--time",
            "occurred_at",
            "--arrival",
            "arrived_at",
            "--format",
            "json",
        ],
        &["replay"],
    ];
    for (n, args) in commands.iter().enumerate() {
        let mut with: Vec<&str> = args.to_vec();
        with.extend(["--where", CONDITION]);
        let (filtered_out, stats) = run(&with, file.path(), dir.path(), &format!("w{n}"));
        let (want, plain) = run(args, &pre, dir.path(), &format!("p{n}"));
        assert_eq!(filtered_out, want, "{args:?}");
        assert_eq!(stats["filtered"], dropped, "{args:?}");
        assert_eq!(stats["read"], 20_000, "{args:?}");
        assert_eq!(plain["filtered"], 0, "{args:?}");
    }
}

/// Several `--where` all hold; a field missing in a record makes a test false, `not` true.
#[test]
fn conditions_add_up_and_missing_fields_are_false() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.ndjson");
    std::fs::write(
        &input,
        "{\"a\":1,\"s\":\"x\"}\n{\"a\":2}\n{\"s\":\"x\"}\n{\"a\":null,\"s\":\"y\"}\n",
    )
    .unwrap();
    let lines = |conditions: &[&str]| -> Vec<String> {
        let mut cmd = weir();
        cmd.arg("consume").arg(&input).arg("-q");
        for c in conditions {
            cmd.args(["--where", c]);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    };
    assert_eq!(
        lines(&["a != 2"]),
        vec![r#"{"a":1,"s":"x"}"#, r#"{"a":null,"s":"y"}"#]
    );
    assert_eq!(lines(&["not a == 2"]).len(), 3);
    assert_eq!(lines(&["a == null"]), vec![r#"{"a":null,"s":"y"}"#]);
    assert_eq!(
        lines(&[r#"s == "x""#, "exists(a)"]),
        vec![r#"{"a":1,"s":"x"}"#]
    );
    assert_eq!(lines(&["missing(a) or a < 2"]).len(), 2);
    // A record that is no object has none of the fields: tested false, never a bad record.
    std::fs::write(&input, "\"text\"\n[1]\n{\"a\":1}\n").unwrap();
    assert_eq!(lines(&["a == 1"]), vec![r#"{"a":1}"#]);
    assert_eq!(lines(&["missing(a)"]), vec![r#""text""#, "[1]"]);
}

/// On a Kafka source the paths are those of what the command sees: the value for
/// `consume`, the envelope for the others.
#[test]
fn a_topic_is_filtered_by_its_values_and_envelopes() {
    let Some(b) = crate::kafka::broker() else {
        return;
    };
    let (file, _) = generated(3_000, 5);
    let text = std::fs::read_to_string(file.path()).unwrap();
    let want: Vec<&str> = text
        .lines()
        .filter(|l| kept(&serde_json::from_str(l).unwrap()))
        .collect();
    let topic = b.topic("where", 1);
    b.produce(&topic, file.path(), &["--key", "event_id"]);
    let values = weir()
        .args(["consume", &b.url(&topic), "--from", "beginning", "-e", "-q"])
        .args(["--where", CONDITION])
        .output()
        .unwrap();
    assert!(values.status.success(), "{values:?}");
    let got: Vec<String> = String::from_utf8(values.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(got, want);
    let on_value = CONDITION
        .replace("client", "value.client")
        .replace("amount", "value.amount")
        .replace("merchant_id", "value.merchant_id");
    let deduped = weir()
        .args(["dedupe", &b.url(&topic), "--from", "beginning", "-e", "-q"])
        .args(["--id", "value.event_id", "--where", &on_value])
        .output()
        .unwrap();
    assert!(deduped.status.success(), "{deduped:?}");
    let ids: Vec<String> = String::from_utf8(deduped.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["value"]["event_id"].to_string())
        .collect();
    let mut want_ids: Vec<String> = want
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["event_id"].to_string())
        .collect();
    want_ids.dedup();
    let distinct: std::collections::BTreeSet<&String> = want_ids.iter().collect();
    assert_eq!(ids.len(), distinct.len(), "each kept id once");
}

/// The README's main job: failed checkouts per merchant per minute of the fixture, against a
/// batch count of the failed records over which the job's watermark (their highest event
/// time so far, less 10 minutes) had not passed their window's end when they arrived.
#[test]
fn the_main_job_counts_the_failed_checkouts_a_batch_count_finds() {
    let millis = |v: &Value| {
        chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap())
            .unwrap()
            .timestamp_millis()
    };
    let text = std::fs::read_to_string(crate::fixture("checkouts.ndjson")).unwrap();
    let (mut expected, mut late, mut filtered) = (BTreeMap::new(), Vec::new(), 0);
    let mut max_seen = i64::MIN;
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["status"] != "failed" {
            filtered += 1;
            continue;
        }
        let t = millis(&v["occurred_at"]);
        let start = t - t.rem_euclid(60_000);
        if start + 60_000 <= max_seen.saturating_sub(600_000) {
            late.push(line.to_string());
            continue;
        }
        max_seen = max_seen.max(t);
        let key = (start, v["merchant_id"].as_str().unwrap().to_string());
        let (count, cents) = expected.entry(key).or_insert((0u64, 0i64));
        *count += 1;
        *cents += (v["amount"].as_f64().unwrap() * 100.0).round() as i64;
    }
    assert!(
        expected.len() >= 20 && late.len() == 1,
        "the fixture shows windows and a late one"
    );
    let dir = tempfile::tempdir().unwrap();
    let late_file = dir.path().join("late.ndjson");
    let args = [
        "window",
        "--where",
        r#"status == "failed""#,
        "--time",
        "occurred_at",
        "--key",
        "merchant_id",
        "--tumbling",
        "1m",
        "--delay",
        "10m",
        "--count",
        "--sum",
        "amount",
        "--late-output",
        late_file.to_str().unwrap(),
    ];
    let (out, stats) = run(
        &args,
        &crate::fixture("checkouts.ndjson"),
        dir.path(),
        "main",
    );
    let mut got = BTreeMap::new();
    for line in out.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let cents = (v["sum_amount"].as_f64().unwrap() * 100.0).round() as i64;
        let key = (
            millis(&v["window_start"]),
            v["merchant_id"].as_str().unwrap().to_string(),
        );
        got.insert(key, (v["count"].as_u64().unwrap(), cents));
    }
    assert_eq!(got, expected);
    let late_text = std::fs::read_to_string(&late_file).unwrap();
    assert_eq!(late_text.lines().collect::<Vec<_>>(), late);
    assert_eq!(stats["filtered"], filtered, "{stats}");
    assert_eq!(stats["late"], 1, "{stats}");
}

/// `--where`'s `time(...)` reads an instant as `--from` does: RFC 3339, or a date and time
/// read as UTC. Both spellings of one instant select the same records, as `--from` does.
#[test]
fn where_reads_times_as_from_does() {
    let fixture = super::fixture("checkouts.ndjson");
    let count = |args: &[&str]| {
        let out = weir()
            .arg("consume")
            .arg(&fixture)
            .arg("-q")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        super::stdout_lines(&out).len()
    };
    let rfc = count(&["--where", r#"time(occurred_at) >= "2026-11-28T12:05:00Z""#]);
    assert!(rfc > 100 && rfc < 400, "{rfc}");
    assert_eq!(
        count(&["--where", r#"time(occurred_at) >= "2026-11-28 12:05""#]),
        rfc
    );
    let from = ["--time", "occurred_at", "--from", "2026-11-28 12:05"];
    assert_eq!(count(&from), rfc);
}

/// A field a command names that no record had is most likely a typo: the run goes on (exit
/// 0, the result as asked), and stderr and --stats say so, with the closest path of a record
/// (`--where 'stauts == ...'` used to say only "filtered 500"; `--sum amont` wrote nulls).
#[test]
fn a_named_field_no_record_had_is_a_warning_with_the_likely_path() {
    let fixture = super::fixture("checkouts.ndjson");
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("stats.json");
    let run = |args: &[&str]| {
        let out = weir()
            .args(args)
            .arg(&fixture)
            .arg("--stats")
            .arg(&stats)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let report: Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        (String::from_utf8_lossy(&out.stderr).into_owned(), report)
    };
    let cases: [(&[&str], &str); 4] = [
        (
            &["consume", "--where", r#"stauts == "failed""#],
            "'stauts' (did you mean 'status'?)",
        ),
        (
            &[
                "window",
                "--time",
                "occurred_at",
                "--tumbling",
                "1m",
                "--sum",
                "amont",
            ],
            "'amont' (did you mean 'amount'?)",
        ),
        (
            &[
                "watermark-profile",
                "--time",
                "occurred_at",
                "--by",
                "clinet",
            ],
            "'clinet' (did you mean 'client'?)",
        ),
        (
            &[
                "dedupe",
                "--id",
                "event_id",
                "--where",
                "amount > 0 and exists(coupon)",
            ],
            "no record had the field 'coupon'",
        ),
    ];
    for (args, said) in cases {
        let (err, report) = run(args);
        assert!(
            err.contains(&format!("warning: no record had the field {said}")) || err.contains(said),
            "{args:?}: {err}"
        );
        assert_eq!(
            report["warnings"].as_array().map(Vec::len),
            Some(1),
            "{report}"
        );
    }
    // Fields every record has: nothing said, nothing kept.
    let (err, report) = run(&[
        "window",
        "--time",
        "occurred_at",
        "--tumbling",
        "1m",
        "--sum",
        "amount",
    ]);
    assert!(!err.contains("warning"), "{err}");
    assert!(report.get("warnings").is_none(), "{report}");
    // A run stopped at a record without its --time says so once, in its error.
    let out = weir()
        .args([
            "window",
            "--time",
            "occured_at",
            "--tumbling",
            "1m",
            "--count",
        ])
        .arg(&fixture)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert_eq!(
        err.matches("did you mean 'occurred_at'").count(),
        1,
        "{err}"
    );
}
