//! `weir window` against an independent batch computation over generated data.
//!
//! The oracle works from the generator's own event structs (true millisecond times and
//! integer cents), not from weir's parsing, and groups in plain loops: no code is shared with
//! the window operator.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;

use crate::gen::{Event, GenConfig};
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;
use serde_json::Value;
use weir::core::time::{format_millis, Millis};

use crate::{generated_with, stdout_lines, weir, weir_std};

/// (merchant, window_start) → (count, cents)
type Batch = BTreeMap<(String, Millis), (u64, i64)>;

fn gen(seed: u64) -> (tempfile::NamedTempFile, Vec<Event>) {
    // 20 events/s over ~25 minutes, 30 skewed keys, 2% redeliveries, lateness up to hours.
    generated_with(GenConfig {
        events: 30_000,
        seed,
        keys: 30,
        rate_per_s: 20.0,
        ..GenConfig::default()
    })
}

fn merchant(e: &Event) -> String {
    format!("m-{:05}", e.merchant)
}

/// The largest amount any event's time lags the maximum before it (in arrival order).
fn max_disorder(events: &[Event]) -> Millis {
    let mut max = Millis::MIN;
    events
        .iter()
        .map(|e| {
            max = max.max(e.occurred_at);
            max - e.occurred_at
        })
        .max()
        .unwrap()
}

/// Runs weir window on the file; returns (rows as (merchant, start) → (count, cents), late
/// event ids).
fn run_window(
    file: &tempfile::NamedTempFile,
    window: &[&str],
    delay: Millis,
) -> (Batch, Vec<String>, Value) {
    let dir = tempfile::tempdir().unwrap();
    let late = dir.path().join("late.ndjson");
    let stats = dir.path().join("stats.json");
    let out = window_by_merchant(file)
        .args(["--sum", "amount"])
        .args(window)
        .args(["--delay", &format!("{delay}ms"), "--late-output"])
        .arg(&late)
        .arg("--stats")
        .arg(&stats)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut rows = Batch::new();
    for line in stdout_lines(&out) {
        let v: Value = serde_json::from_str(&line).unwrap();
        assert!(
            v.get("update").is_none(),
            "no updates without allowed lateness: {line}"
        );
        let previous = rows.insert(row_key(&v), row_totals(&line, &v));
        assert!(previous.is_none(), "one row per key and window: {line}");
    }
    let late_ids = event_ids(&std::fs::read_to_string(&late).unwrap());
    let stats: Value = serde_json::from_str(&std::fs::read_to_string(stats).unwrap()).unwrap();
    (rows, late_ids, stats)
}

/// `weir window` over generated events: counts by merchant_id in event time.
fn window_by_merchant(file: &tempfile::NamedTempFile) -> assert_cmd::Command {
    let mut cmd = weir();
    cmd.arg("window").arg(file.path()).args([
        "--time",
        "occurred_at",
        "--key",
        "merchant_id",
        "--count",
    ]);
    cmd
}

/// A result row's (merchant_id, window_start).
fn row_key(v: &Value) -> (String, Millis) {
    let start =
        weir::core::time::parse_time_str(v["window_start"].as_str().unwrap(), &Default::default())
            .unwrap();
    (v["merchant_id"].as_str().unwrap().to_string(), start)
}

/// A result row's count and sum in cents (which must be whole).
fn row_totals(line: &str, v: &Value) -> (u64, i64) {
    let cents = v["sum_amount"].to_string().parse::<Decimal>().unwrap() * Decimal::from(100);
    assert!(cents.fract().is_zero(), "{line}");
    (v["count"].as_u64().unwrap(), cents.to_i64().unwrap())
}

/// The event ids of NDJSON records (a --late-output file).
fn event_ids(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["event_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// Sessions whose late records still update fired ones: a short delay, a long lateness.
const LATE_SESSIONS: [&str; 7] = [
    "--session",
    "20s",
    "--delay",
    "2s",
    "--allowed-lateness",
    "10m",
    "-q",
];

fn id(e: &Event) -> String {
    format!("evt-{:012}", e.id)
}

/// Batch windows of tumbling/hopping kind: every window [start, start+size) containing ts,
/// with starts on multiples of `slide`. `included(event, end)` says whether the event counts
/// in the window ending at `end`.
fn batch_fixed(
    events: &[Event],
    size: Millis,
    slide: Millis,
    included: impl Fn(usize, Millis) -> bool,
) -> Batch {
    let mut batch = Batch::new();
    for (i, e) in events.iter().enumerate() {
        let t = e.occurred_at;
        let mut start = t.div_euclid(slide) * slide;
        while start + size > t {
            if included(i, start + size) {
                let entry = batch.entry((merchant(e), start)).or_default();
                entry.0 += 1;
                entry.1 += e.amount_cents as i64;
            }
            start -= slide;
        }
    }
    batch
}

/// The watermark each event meets on arrival: max event time before it, minus the delay.
fn watermarks_on_arrival(events: &[Event], delay: Millis) -> Vec<Millis> {
    let mut max = Millis::MIN;
    events
        .iter()
        .map(|e| {
            let w = max.saturating_sub(delay);
            max = max.max(e.occurred_at);
            w
        })
        .collect()
}

#[test]
fn tumbling_equals_batch_when_delay_covers_disorder() {
    let (file, events) = gen(101);
    let delay = max_disorder(&events);
    assert!(
        delay > 3_600_000,
        "the data has an hours-long tail: {delay}"
    );
    let (rows, late, stats) = run_window(&file, &["--tumbling", "1m"], delay);
    assert_eq!(rows, batch_fixed(&events, 60_000, 60_000, |_, _| true));
    assert!(late.is_empty());
    assert_eq!(stats["late"], 0);
}

#[test]
fn hopping_equals_batch_when_delay_covers_disorder() {
    let (file, events) = gen(102);
    let (rows, late, _) = run_window(
        &file,
        &["--hop", "3m", "--slide", "1m"],
        max_disorder(&events),
    );
    assert_eq!(rows, batch_fixed(&events, 180_000, 60_000, |_, _| true));
    assert!(late.is_empty());
}

/// A negative offset shifts window starts back, as Flink's does: days from midnight at
/// UTC+8 start at 16:00 UTC the day before (worked out by hand), the same as an offset of
/// +16h.
#[test]
fn a_negative_offset_gives_days_in_a_zone_east_of_utc() {
    let input = "{\"t\":\"2026-01-01T15:59:59Z\"}\n{\"t\":\"2026-01-01T16:00:00Z\"}\n";
    let run = |offset: &str| {
        let out = weir()
            .args(["window", "--time", "t", "--tumbling", "1d", "--count", "-q"])
            .arg(offset)
            .write_stdin(input)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let rows = run("--offset=-8h");
    assert_eq!(
        rows,
        "{\"window_start\":\"2025-12-31T16:00:00.000Z\",\"window_end\":\"2026-01-01T16:00:00.000Z\",\"count\":1}\n\
         {\"window_start\":\"2026-01-01T16:00:00.000Z\",\"window_end\":\"2026-01-02T16:00:00.000Z\",\"count\":1}\n"
    );
    assert_eq!(run("--offset=16h"), rows);
}

/// A size that is no multiple of the slide (as Flink and Spark allow): a record is in two or
/// three of these windows, depending on where it falls.
#[test]
fn hopping_by_a_slide_that_does_not_divide_the_size_equals_batch() {
    let (file, events) = gen(108);
    let (rows, late, _) = run_window(
        &file,
        &["--hop", "2m", "--slide", "50s"],
        max_disorder(&events),
    );
    assert_eq!(rows, batch_fixed(&events, 120_000, 50_000, |_, _| true));
    assert!(late.is_empty());
}

#[test]
fn session_equals_batch_when_delay_covers_disorder() {
    let (file, events) = gen(103);
    let gap = 20_000;
    let (rows, late, _) = run_window(&file, &["--session", "20s"], max_disorder(&events));
    assert_eq!(rows, batch_sessions(events.iter(), gap));
    assert!(late.is_empty());
}

/// Batch sessions: per key, sort by time; a record within the running session's end
/// (touching included) joins it.
fn batch_sessions<'a>(events: impl Iterator<Item = &'a Event>, gap: Millis) -> Batch {
    let mut by_key: BTreeMap<String, Vec<&Event>> = BTreeMap::new();
    for e in events {
        by_key.entry(merchant(e)).or_default().push(e);
    }
    let mut batch = Batch::new();
    for (key, mut evs) in by_key {
        evs.sort_by_key(|e| e.occurred_at);
        let mut current: Option<(Millis, Millis, u64, i64)> = None;
        for e in evs {
            current = match current {
                Some((s, end, n, c)) if e.occurred_at <= end => Some((
                    s,
                    end.max(e.occurred_at + gap),
                    n + 1,
                    c + e.amount_cents as i64,
                )),
                other => {
                    if let Some((s, _, n, c)) = other {
                        batch.insert((key.clone(), s), (n, c));
                    }
                    Some((e.occurred_at, e.occurred_at + gap, 1, e.amount_cents as i64))
                }
            };
        }
        let (s, _, n, c) = current.unwrap();
        batch.insert((key, s), (n, c));
    }
    batch
}

/// Sessions with allowed lateness: late records extend and merge fired sessions. Applied to
/// a table upserting on (key, window_start), where a `retract` row deletes, the rows leave
/// exactly the batch sessions of the records that were not late.
#[test]
fn session_updates_and_retractions_upsert_to_the_batch_result() {
    let (file, events) = gen(106);
    let out = window_by_merchant(&file)
        .args(["--sum", "amount"])
        .args(LATE_SESSIONS)
        .args(["--late-output", "/dev/stderr"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let late: BTreeSet<String> = event_ids(&String::from_utf8_lossy(&out.stderr))
        .into_iter()
        .collect();
    let mut table = Batch::new();
    let (mut updates, mut retractions) = (0, 0);
    for line in stdout_lines(&out) {
        let v: Value = serde_json::from_str(&line).unwrap();
        let key = row_key(&v);
        if v["retract"] == true {
            retractions += 1;
            assert!(
                table.remove(&key).is_some(),
                "a retraction withdraws a row: {line}"
            );
            continue;
        }
        updates += (v["update"] == true) as u32;
        table.insert(key, row_totals(&line, &v));
    }
    assert!(
        updates > 0 && retractions > 0,
        "{updates} updates, {retractions} retractions"
    );
    assert!(!late.is_empty());
    let on_time = events.iter().filter(|e| !late.contains(&id(e)));
    assert_eq!(table, batch_sessions(on_time, 20_000));
}

/// With a delay shorter than the disorder, the late records are exactly those the lateness
/// rule makes late (W on arrival >= end of every window of the record), and the output is the
/// batch result over the rest, per window.
#[test]
fn short_delay_late_records_follow_the_rule_and_all_are_accounted() {
    for (window, size, slide) in [
        (&["--tumbling", "1m"][..], 60_000, 60_000),
        (&["--hop", "2m", "--slide", "30s"][..], 120_000, 30_000),
        (&["--hop", "2m", "--slide", "45s"][..], 120_000, 45_000),
    ] {
        let (file, events) = gen(104);
        let delay = 5_000;
        let (rows, late, stats) = run_window(&file, window, delay);
        let w = watermarks_on_arrival(&events, delay);
        let expected = batch_fixed(&events, size, slide, |i, end| w[i] < end);
        assert_eq!(rows, expected, "{window:?}");
        // Late: every window of the record was complete on arrival.
        let expected_late: Vec<String> = events
            .iter()
            .enumerate()
            .filter(|(i, e)| {
                let last_start = e.occurred_at.div_euclid(slide) * slide;
                w[*i] >= last_start + size
            })
            .map(|(_, e)| id(e))
            .collect();
        assert!(
            expected_late.len() > 100,
            "the delay is short enough to make records late"
        );
        assert_eq!(late, expected_late, "{window:?}");
        assert_eq!(stats["late"], expected_late.len());
        // Every record is in the output or the late file (tumbling: exactly one of them).
        if size == slide {
            let counted: u64 = rows.values().map(|(n, _)| n).sum();
            assert_eq!(counted + late.len() as u64, events.len() as u64);
        }
    }
}

#[test]
fn session_short_delay_accounts_for_every_record() {
    let (file, events) = gen(105);
    let (rows, late, _) = run_window(&file, &["--session", "20s"], 2_000);
    let counted: u64 = rows.values().map(|(n, _)| n).sum();
    assert!(!late.is_empty());
    assert_eq!(counted + late.len() as u64, events.len() as u64);
    let late: BTreeSet<String> = late.into_iter().collect();
    assert!(events.iter().any(|e| late.contains(&id(e))));
}

#[test]
fn rows_are_ordered_by_window_end_then_key() {
    let (file, events) = gen(106);
    let out = window_by_merchant(&file)
        .args(["--tumbling", "1m", "-q"])
        .args(["--delay", &format!("{}ms", max_disorder(&events))])
        .output()
        .unwrap();
    let keys: Vec<(String, String)> = stdout_lines(&out)
        .iter()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["window_end"].as_str().unwrap().to_string(),
                v["merchant_id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
}

#[test]
fn csv_output_and_renamed_aggregates() {
    let out = weir()
        .args([
            "window",
            "fixtures/times.ndjson",
            "--time",
            "t",
            "--tumbling",
            "1m",
            "--delay",
            "1h",
        ])
        .args(["--count", "--as", "n"])
        .args(["--first", "id", "--last", "id", "--format", "csv", "-q"])
        .output()
        .unwrap();
    assert!(out.status.success());
    // Hand-checked from fixtures/README.md: b at 11:30, a and g in 12:00, c and d in 12:01,
    // e in 12:02, f in 12:03.
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "window_start,window_end,n,first_id,last_id\n\
         2026-11-28T11:30:00.000Z,2026-11-28T11:31:00.000Z,1,b,b\n\
         2026-11-28T12:00:00.000Z,2026-11-28T12:01:00.000Z,2,a,g\n\
         2026-11-28T12:01:00.000Z,2026-11-28T12:02:00.000Z,2,c,d\n\
         2026-11-28T12:02:00.000Z,2026-11-28T12:03:00.000Z,1,e,e\n\
         2026-11-28T12:03:00.000Z,2026-11-28T12:04:00.000Z,1,f,f\n"
    );
}

#[test]
fn a_column_name_that_needs_escaping_stays_valid_json() {
    let out = weir()
        .args(["window", "fixtures/times.ndjson", "--time", "t"])
        .args([
            "--tumbling",
            "1h",
            "--delay",
            "1h",
            "--count",
            "--as",
            "n \"x\"",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let rows: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Hand-checked from fixtures/README.md: b in the 11:00 hour, the other six in 12:00.
    let counts: Vec<u64> = rows
        .iter()
        .map(|r| r["n \"x\""].as_u64().unwrap())
        .collect();
    assert_eq!(counts, [1, 6]);
}

#[test]
fn bad_input_follows_the_error_policy() {
    let out = weir()
        .args([
            "window",
            "fixtures/bad.ndjson",
            "--time",
            "t",
            "--tumbling",
            "1m",
            "--count",
            "--on-error",
            "skip",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_str(&stdout_lines(&out)[0]).unwrap();
    assert_eq!(v["count"], 4, "ids 1, 6, 8, 11 fall in 12:00-12:01");
    let out = weir()
        .args([
            "window",
            "--time",
            "occurred_at",
            "--tumbling",
            "1m",
            "--count",
        ])
        .write_stdin("{\"value\":{\"occurred_at\":\"2026-01-01T00:00:00Z\"}}\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean 'value.occurred_at'?"));
    weir()
        .args(["window", "--time", "t", "--tumbling", "1m", "--sum", "n"])
        .write_stdin("{\"t\":\"2026-01-01T00:00:00Z\",\"n\":\"lots\"}\n")
        .assert()
        .code(3)
        .stderr(predicates::str::contains(
            "field 'n': value lots is not a number",
        ));
}

#[test]
fn usage_errors() {
    weir()
        .args(["window", "--time", "t", "--count"])
        .assert()
        .code(2);
    weir()
        .args(["window", "--time", "t", "--tumbling", "1m"])
        .assert()
        .code(2);
    weir()
        .args([
            "window", "--time", "t", "--hop", "3m", "--slide", "10m", "--count",
        ])
        .assert()
        .code(2);
    weir()
        .args(["window", "--time", "t", "--tumbling", "0s", "--count"])
        .assert()
        .code(2);
    weir()
        .args([
            "window",
            "--time",
            "t",
            "--tumbling",
            "1m",
            "--as",
            "x",
            "--count",
        ])
        .assert()
        .code(2);
}

#[test]
fn too_many_open_windows_is_a_clear_error() {
    let input: String = (0..10)
        .map(|i| format!("{{\"t\":\"2026-01-01T00:0{i}:00Z\"}}\n"))
        .collect();
    weir()
        .args([
            "window",
            "--time",
            "t",
            "--tumbling",
            "1m",
            "--count",
            "--delay",
            "1h",
            "--max-open-windows",
            "5",
        ])
        .write_stdin(input)
        .assert()
        .code(3)
        .stderr(predicates::str::contains(
            "<stdin>:6: more than 5 open windows",
        ));
}

/// The first line `stdout` gives, read on a thread of its own, so that a test can wait for
/// it with a timeout.
fn first_line(stdout: std::process::ChildStdout) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let _ = tx.send(line);
    });
    rx
}

/// Two partitions, one silent: without an idle timeout the silent one holds the watermark
/// back; with one, the window fires while the input is still open.
#[test]
fn idle_partition_stops_holding_the_watermark() {
    let lines = [
        (0, "2026-01-01T00:00:10Z"),
        (1, "2026-01-01T00:00:20Z"),
        // Only partition 0 goes on; partition 1 falls silent.
        (0, "2026-01-01T00:05:00Z"),
    ];
    let input: String = lines
        .iter()
        .map(|(p, t)| format!("{{\"p\":{p},\"t\":\"{t}\"}}\n"))
        .collect();
    let first_row_within = |extra: &[&str], wait: Duration| -> Option<String> {
        let mut child = weir_std()
            .args([
                "window",
                "--time",
                "t",
                "--partition-by",
                "p",
                "--tumbling",
                "1m",
                "--count",
                "-q",
            ])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.as_bytes()).unwrap();
        stdin.flush().unwrap();
        let row = first_line(child.stdout.take().unwrap())
            .recv_timeout(wait)
            .ok();
        drop(stdin);
        child.wait().unwrap();
        row
    };
    assert_eq!(
        first_row_within(&[], Duration::from_millis(1500)),
        None,
        "held back by the silent partition"
    );
    let row = first_row_within(&["--idle-timeout", "300ms"], Duration::from_secs(10))
        .expect("fired after idle timeout");
    let v: Value = serde_json::from_str(&row).unwrap();
    assert_eq!(v["window_start"], format_millis(1_767_225_600_000));
    assert_eq!(v["count"], 2);
}

/// A partition falls silent while another keeps sending a record every 20 ms, never pausing
/// long enough for the input to look idle: the silent one still goes idle after
/// `--idle-timeout`, and windows fire while the input flows.
#[test]
fn a_partition_goes_idle_while_another_stays_busy() {
    let mut child = weir_std()
        .args(["window", "--time", "t", "--time-format", "epoch-ms"])
        .args(["--partition-by", "p", "--tumbling", "1s", "--count", "-q"])
        .args(["--idle-timeout", "300ms"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let feeding = done.clone();
    let feeder = std::thread::spawn(move || {
        // Partition 1 speaks once at time 0; partition 0 goes on, 100 ms of event time a record.
        writeln!(stdin, "{{\"p\":1,\"t\":0}}").unwrap();
        for i in 0..1_000 {
            if feeding.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            writeln!(stdin, "{{\"p\":0,\"t\":{}}}", i * 100).unwrap();
            stdin.flush().unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    // The feeder runs for 20 s; the row must come long before it stops.
    let row = first_line(child.stdout.take().unwrap()).recv_timeout(Duration::from_secs(8));
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    feeder.join().unwrap();
    child.wait().unwrap();
    let row = row.expect("a window fired while partition 0 kept the input busy");
    let v: Value = serde_json::from_str(&row).unwrap();
    assert_eq!(v["window_start"], format_millis(0));
    // Both partitions' records of [0, 1s): partition 1's at 0, partition 0's at 0..900.
    assert_eq!(v["count"], 11);
}

/// Every aggregate against a batch computation: min, max, avg and sum as exact decimals,
/// distinct exactly, first/last by event time (ties: first arrival for first, last arrival
/// for last), percentiles within hdrhistogram's 3 significant digits of the exact
/// nearest-rank value.
#[test]
fn all_aggregates_equal_batch() {
    let (file, events) = gen(107);
    let out = weir()
        .arg("window")
        .arg(file.path())
        .args([
            "--time",
            "occurred_at",
            "--key",
            "client",
            "--tumbling",
            "5m",
            "-q",
        ])
        .args(["--delay", &format!("{}ms", max_disorder(&events))])
        .args([
            "--count", "--sum", "amount", "--min", "amount", "--max", "amount", "--avg", "amount",
        ])
        .args([
            "--distinct",
            "merchant_id",
            "--first",
            "event_id",
            "--last",
            "event_id",
        ])
        .args(["--percentile", "amount:p50,p99"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Value> = stdout_lines(&out)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let size = 300_000;
    let mut groups: BTreeMap<(String, Millis), Vec<(usize, &Event)>> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        groups
            .entry((
                e.client.name().to_string(),
                e.occurred_at.div_euclid(size) * size,
            ))
            .or_default()
            .push((i, e));
    }
    assert_eq!(rows.len(), groups.len());
    let dec = |v: &Value| v.to_string().parse::<Decimal>().unwrap();
    for row in &rows {
        let start = weir::core::time::parse_time_str(
            row["window_start"].as_str().unwrap(),
            &Default::default(),
        )
        .unwrap();
        let group = &groups[&(row["client"].as_str().unwrap().to_string(), start)];
        let mut cents: Vec<i64> = group.iter().map(|(_, e)| e.amount_cents as i64).collect();
        cents.sort_unstable();
        let n = cents.len() as i64;
        let sum: i64 = cents.iter().sum();
        assert_eq!(row["count"], n);
        assert_eq!(dec(&row["sum_amount"]), Decimal::new(sum, 2));
        assert_eq!(dec(&row["min_amount"]), Decimal::new(cents[0], 2));
        assert_eq!(
            dec(&row["max_amount"]),
            Decimal::new(cents[cents.len() - 1], 2)
        );
        let avg = Decimal::new(sum, 2) / Decimal::from(n);
        assert!(
            (dec(&row["avg_amount"]) - avg).abs() < Decimal::new(1, 9),
            "{row}"
        );
        let distinct: BTreeSet<u64> = group.iter().map(|(_, e)| e.merchant).collect();
        assert_eq!(row["distinct_merchant_id"], distinct.len());
        let first = group
            .iter()
            .min_by_key(|(i, e)| (e.occurred_at, *i))
            .unwrap()
            .1;
        let last = group
            .iter()
            .max_by_key(|(i, e)| (e.occurred_at, *i))
            .unwrap()
            .1;
        assert_eq!(row["first_event_id"], id(first));
        assert_eq!(row["last_event_id"], id(last));
        for (column, p) in [("p50_amount", 50.0), ("p99_amount", 99.0)] {
            let rank = ((p / 100.0 * n as f64).ceil() as usize).clamp(1, cents.len());
            let exact = cents[rank - 1] as f64 / 100.0;
            let got = row[column].as_f64().unwrap();
            assert!(
                (got - exact).abs() <= exact * 0.001 + 0.001,
                "{column}: {got} vs {exact}"
            );
        }
    }
}

/// In CSV, the update and retract marks are columns from the first row on whenever rows can
/// carry them (the header comes from the first row).
#[test]
fn csv_rows_carry_update_and_retract_columns() {
    let (file, _) = gen(106);
    let out = window_by_merchant(&file)
        .args(LATE_SESSIONS)
        .args(["--format", "csv"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("merchant_id,window_start,window_end,count,update,retract")
    );
    let rows: Vec<&str> = lines.collect();
    assert!(rows.iter().any(|r| r.ends_with(",true,false")), "an update");
    assert!(
        rows.iter().any(|r| r.ends_with(",,false,true")),
        "a retraction, no count"
    );
}

/// Keys are compared by their JSON text, null is a key of its own, and a record without the
/// key field is a bad record, named by its line (rows worked out by hand).
#[test]
fn keys_compare_by_their_json_text() {
    let input = [
        r#"{"t":"2026-01-01T00:00:00Z","k":"1"}"#,
        r#"{"t":"2026-01-01T00:00:01Z","k":1}"#,
        r#"{"t":"2026-01-01T00:00:02Z","k":1.5}"#,
        r#"{"t":"2026-01-01T00:00:03Z","k":1.50}"#,
        r#"{"t":"2026-01-01T00:00:04Z","k":null}"#,
        r#"{"t":"2026-01-01T00:00:05Z"}"#,
        r#"{"t":"2026-01-01T00:00:06Z","k":1}"#,
    ]
    .join("\n");
    let run = |on_error: &str| {
        weir()
            .args(["window", "--time", "t", "--key", "k", "--tumbling", "1m"])
            .args(["--count", "--on-error", on_error, "-q"])
            .write_stdin(input.clone())
            .output()
            .unwrap()
    };
    let out = run("skip");
    assert!(out.status.success(), "{out:?}");
    let counts: BTreeMap<String, u64> = stdout_lines(&out)
        .iter()
        .map(|l| {
            // The key's text as written (a parsed number would lose `1.50`).
            let key = l
                .strip_prefix(r#"{"k":"#)
                .and_then(|rest| rest.split_once(r#","window_start""#))
                .map(|(key, _)| key.to_string());
            let r: Value = serde_json::from_str(l).unwrap();
            (key.expect(l), r["count"].as_u64().unwrap())
        })
        .collect();
    let want: BTreeMap<String, u64> =
        [("\"1\"", 1), ("1", 2), ("1.5", 1), ("1.50", 1), ("null", 1)]
            .into_iter()
            .map(|(k, n)| (k.to_string(), n))
            .collect();
    assert_eq!(counts, want);
    let out = run("fail");
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("<stdin>:6") && err.contains("'k'"), "{err}");
}

/// A CSV of no rows still has its header, the columns a row would have (key fields, window
/// bounds, every aggregate's columns, and the update marks where rows can be updates), so a
/// reader of the file takes it as an empty table.
#[test]
fn a_csv_of_no_rows_has_its_header() {
    let header = |args: &[&str]| {
        let out = weir()
            .args(["window", "--time", "t", "--format", "csv", "-q"])
            .args(args)
            .write_stdin("")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(
        header(&["--key", "a", "--key", "b", "--tumbling", "1m", "--count"])
            + &header(&[
                "--hop",
                "2m",
                "--slide",
                "1m",
                "--sum",
                "v",
                "--percentile",
                "v:p50,p99"
            ])
            + &header(&[
                "--key",
                "k",
                "--tumbling",
                "1m",
                "--allowed-lateness",
                "1m",
                "--avg",
                "v"
            ]),
        "a,b,window_start,window_end,count\n\
         window_start,window_end,sum_v,p50_v,p99_v\n\
         k,window_start,window_end,avg_v,update,retract\n"
    );
    // The same columns a row brings.
    let fixture = super::fixture("checkouts.ndjson");
    let out = weir()
        .arg("window")
        .arg(&fixture)
        .args([
            "--time",
            "occurred_at",
            "--key",
            "merchant_id",
            "--tumbling",
            "1m",
        ])
        .args([
            "--allowed-lateness",
            "1m",
            "--avg",
            "amount",
            "--format",
            "csv",
            "-q",
        ])
        .output()
        .unwrap();
    let first = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap()
        .to_string();
    let empty = header(&[
        "--key",
        "merchant_id",
        "--tumbling",
        "1m",
        "--allowed-lateness",
        "1m",
        "--avg",
        "amount",
    ]);
    assert_eq!(format!("{first}\n"), empty);
}

/// `--format table` writes the rows `--format ndjson` writes, as aligned columns under one
/// header: every line splits into the same cells in the same places, numbers to the right.
#[test]
fn a_table_holds_the_ndjson_rows_aligned() {
    let run = |format: &str| {
        let out = weir()
            .args([
                "window",
                "fixtures/checkouts.ndjson",
                "--time",
                "occurred_at",
            ])
            .args(["--key", "merchant_id", "--tumbling", "5m", "--count"])
            .args(["--sum", "amount", "--format", format, "-q"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let rows: Vec<Value> = (run("ndjson").lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let table = run("table");
    let lines: Vec<&str> = table.lines().collect();
    let columns = [
        "merchant_id",
        "window_start",
        "window_end",
        "count",
        "sum_amount",
    ];
    assert_eq!(lines[0].split_whitespace().collect::<Vec<_>>(), columns);
    assert_eq!(lines.len(), rows.len() + 1);
    let width = lines.iter().map(|l| l.len()).max().unwrap();
    for (line, row) in lines[1..].iter().zip(&rows) {
        let cells: Vec<&str> = line.split_whitespace().collect();
        let want: Vec<String> = (columns.iter())
            .map(|c| match &row[c] {
                Value::String(s) => s.clone(),
                v => v.to_string(),
            })
            .collect();
        assert_eq!(cells, want);
        // The last column is numbers, aligned right: every line ends at the same place.
        assert_eq!(line.len(), width, "{line}");
    }
    // An empty input still shows the columns; rows in a table cannot go to a topic.
    let table = [
        "window",
        "--time",
        "t",
        "--tumbling",
        "1m",
        "--count",
        "--format",
        "table",
    ];
    let out = weir()
        .args(table)
        .arg("-q")
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "window_start  window_end  count\n"
    );
    weir()
        .args(table)
        .args(["-o", "kafka://127.0.0.1:1/t"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--format table cannot go to Kafka",
        ));
}
