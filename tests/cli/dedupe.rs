//! `weir dedupe` against independent computations over generated data.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::gen::{Event, GenConfig};
use serde_json::Value;
use weir::core::time::Millis;

use crate::{generated_with, stdout_lines, weir, weir_std};

fn gen(seed: u64) -> (tempfile::NamedTempFile, Vec<Event>) {
    // 5% redeliveries, arriving on average 20 s after the original.
    generated_with(GenConfig {
        events: 20_000,
        seed,
        rate_per_s: 50.0,
        duplicate_share: 0.05,
        ..GenConfig::default()
    })
}

fn line(e: &Event) -> String {
    let mut b = Vec::new();
    e.write_json(&mut b);
    String::from_utf8(b).unwrap()
}

/// Runs dedupe; returns (output lines, duplicate lines, stats).
fn run(file: &tempfile::NamedTempFile, extra: &[&str]) -> (Vec<String>, Vec<String>, Value) {
    let dir = tempfile::tempdir().unwrap();
    let dups = dir.path().join("dups.ndjson");
    let stats = dir.path().join("stats.json");
    let out = weir()
        .arg("dedupe")
        .arg(file.path())
        .args(["--id", "event_id", "-q", "--duplicates"])
        .arg(&dups)
        .arg("--stats")
        .arg(&stats)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dups = std::fs::read_to_string(dups)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let stats = serde_json::from_str(&std::fs::read_to_string(stats).unwrap()).unwrap();
    (stdout_lines(&out), dups, stats)
}

#[test]
fn horizon_covering_all_repeats_equals_exact_dedupe() {
    let (file, events) = gen(201);
    let mut seen = HashSet::new();
    let expected: Vec<String> = events
        .iter()
        .filter(|e| seen.insert(e.id))
        .map(line)
        .collect();
    let repeats = events.len() - expected.len();
    assert!(repeats > 500, "{repeats}");
    for extra in [
        &["--time", "occurred_at", "--horizon", "1d"][..],
        &[][..],
        &["--exact-ids"][..],
    ] {
        let (out, dups, stats) = run(&file, extra);
        assert_eq!(out, expected, "{extra:?}");
        assert_eq!(dups.len(), repeats);
        assert_eq!(stats["read"], events.len());
        assert_eq!(stats["written"], expected.len());
        assert_eq!(stats["duplicates"], repeats);
    }
}

/// A short horizon: exactly the repeats the rule lets through pass. The rule, restated
/// over a plain map: a repeat is dropped while the watermark on its arrival is below the
/// kept record's event time + horizon.
#[test]
fn short_horizon_lets_exactly_the_late_repeats_through() {
    let (file, events) = gen(202);
    let (horizon, delay): (Millis, Millis) = (5_000, 1_000);
    let mut kept: HashMap<u64, Millis> = HashMap::new();
    let mut max = Millis::MIN;
    let mut expected_out = Vec::new();
    let mut expected_dups = Vec::new();
    for e in &events {
        let w = max.saturating_sub(delay);
        match kept.get(&e.id) {
            Some(t0) if w < t0 + horizon => expected_dups.push(line(e)),
            _ => {
                if w < e.occurred_at + horizon {
                    kept.insert(e.id, e.occurred_at);
                } else {
                    kept.remove(&e.id);
                }
                expected_out.push(line(e));
            }
        }
        max = max.max(e.occurred_at);
    }
    let (out, dups, stats) = run(
        &file,
        &["--time", "occurred_at", "--horizon", "5s", "--delay", "1s"],
    );
    let passed_repeats =
        expected_out.len() - events.iter().map(|e| e.id).collect::<HashSet<_>>().len();
    assert!(
        passed_repeats > 100,
        "the horizon is short enough to let repeats through: {passed_repeats}"
    );
    assert!(!expected_dups.is_empty());
    assert_eq!(out, expected_out);
    assert_eq!(dups, expected_dups);
    assert_eq!(
        stats["read"],
        stats["written"].as_u64().unwrap() + stats["duplicates"].as_u64().unwrap()
    );
    // Every repeat that passed found its id's group expired; no group expires twice.
    let expired = stats["expired"].as_u64().unwrap() as usize;
    assert!(
        (passed_repeats..=expected_out.len()).contains(&expired),
        "{expired} expired, {passed_repeats} repeats passed"
    );
}

#[test]
fn max_keys_bounds_memory_and_counts_evictions() {
    let (file, events) = gen(203);
    let (out, dups, stats) = run(&file, &["--max-keys", "500"]);
    assert!(stats["expired"].is_null(), "no horizon, nothing expires");
    assert!(stats["peak_keys"].as_u64().unwrap() <= 500);
    assert!(stats["evicted"].as_u64().unwrap() > 10_000);
    // Every record is in the output or the duplicates; every repeat is either dropped or
    // counted as possibly a duplicate (the Bloom filter has no false negatives).
    assert_eq!(out.len() + dups.len(), events.len());
    let unique = events.iter().map(|e| e.id).collect::<HashSet<_>>().len();
    let repeats = (events.len() - unique) as u64;
    let flagged = stats["possibly_duplicates"].as_u64().unwrap_or(0);
    assert!(dups.len() as u64 + flagged >= repeats);
}

#[test]
fn composite_ids_nulls_and_errors() {
    let input = "{\"a\":1,\"b\":\"x\"}\n{\"a\":1,\"b\":\"y\"}\n{\"a\":1,\"b\":\"x\"}\n{\"a\":\"1\",\"b\":\"x\"}\n";
    weir()
        .args(["dedupe", "--id", "a", "--id", "b", "-q"])
        .write_stdin(input)
        .assert()
        .success()
        .stdout("{\"a\":1,\"b\":\"x\"}\n{\"a\":1,\"b\":\"y\"}\n{\"a\":\"1\",\"b\":\"x\"}\n");
    weir()
        .args(["dedupe", "--id", "id"])
        .write_stdin("{\"id\":null}\n")
        .assert()
        .code(3)
        .stderr(predicates::str::contains(
            "<stdin>:1: field 'id': the id is null",
        ));
    weir()
        .args(["dedupe", "--id", "event_id"])
        .write_stdin("{\"value\":{\"event_id\":1}}\n")
        .assert()
        .code(3)
        .stderr(predicates::str::contains("did you mean 'value.event_id'?"));
    weir()
        .args(["dedupe", "--id", "x", "--horizon", "1h"])
        .assert()
        .code(2);
    weir().args(["dedupe"]).assert().code(2);
}

/// `--keep last` over a horizon covering every repeat: each id's last record, in the order
/// the ids first appeared (by event time with --time, else by input order), ties by the
/// input order of the written record; every other record is in --duplicates, dropped when
/// the next record of its id arrives.
#[test]
fn keep_last_with_covering_horizon_writes_each_ids_last_record() {
    let (file, events) = gen(204);
    let mut first: HashMap<u64, (Millis, usize)> = HashMap::new();
    let mut last: HashMap<u64, usize> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        first.entry(e.id).or_insert((e.occurred_at, i));
        last.insert(e.id, i);
    }
    // A repeat drops the record held before it, at that moment.
    let mut held: HashMap<u64, usize> = HashMap::new();
    let expected_dups: Vec<String> = events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| held.insert(e.id, i).map(|before| line(&events[before])))
        .collect();
    let ordered = |by_time: bool| -> Vec<String> {
        let mut ids: Vec<u64> = last.keys().copied().collect();
        ids.sort_by_key(|id| {
            let (t0, i0) = first[id];
            (if by_time { t0 } else { i0 as Millis }, last[id])
        });
        ids.iter().map(|id| line(&events[last[id]])).collect()
    };
    for (extra, by_time) in [
        (&["--time", "occurred_at", "--horizon", "1d"][..], true),
        (&[][..], false),
        (&["--exact-ids"][..], false),
    ] {
        let args: Vec<&str> = extra.iter().copied().chain(["--keep", "last"]).collect();
        let (out, dups, stats) = run(&file, &args);
        assert_eq!(out, ordered(by_time), "{extra:?}");
        assert_eq!(dups, expected_dups, "{extra:?}");
        assert_eq!(stats["written"], last.len());
        assert_eq!(stats["duplicates"], events.len() - last.len());
    }
}

/// `--keep last` with a short horizon: the groups are exactly keep-first's (restated over a
/// plain map as above), each writes its last record, and every record read is written or
/// dropped exactly once.
#[test]
fn keep_last_with_short_horizon_writes_each_groups_last_record() {
    let (file, events) = gen(205);
    let (horizon, delay): (Millis, Millis) = (5_000, 1_000);
    // id -> (group opened at, its latest line so far)
    let mut groups: HashMap<u64, (Millis, String)> = HashMap::new();
    let mut max = Millis::MIN;
    let mut expected_out = Vec::new();
    let mut expected_dups = Vec::new();
    for e in &events {
        let w = max.saturating_sub(delay);
        match groups.get_mut(&e.id) {
            Some((t0, latest)) if w < *t0 + horizon => {
                expected_dups.push(std::mem::replace(latest, line(e)));
            }
            _ => {
                if let Some((_, ended)) = groups.remove(&e.id) {
                    expected_out.push(ended);
                }
                if w < e.occurred_at + horizon {
                    groups.insert(e.id, (e.occurred_at, line(e)));
                } else {
                    expected_out.push(line(e));
                }
            }
        }
        max = max.max(e.occurred_at);
    }
    expected_out.extend(groups.into_values().map(|(_, l)| l));
    let (mut out, mut dups, stats) = run(
        &file,
        &[
            "--time",
            "occurred_at",
            "--horizon",
            "5s",
            "--delay",
            "1s",
            "--keep",
            "last",
        ],
    );
    assert_eq!(stats["read"], events.len());
    assert_eq!(out.len() + dups.len(), events.len());
    assert!(expected_out.len() > events.iter().map(|e| e.id).collect::<HashSet<_>>().len());
    // Released groups come out in sweeps, so compare the sets; the covering-horizon test
    // checks the order.
    for v in [&mut out, &mut dups, &mut expected_out, &mut expected_dups] {
        v.sort();
    }
    assert_eq!(out, expected_out);
    assert_eq!(dups, expected_dups);
}

/// Runs `weir dedupe ARGS` on a live stdin that `feed` writes (and closes by returning);
/// returns each output line with when it came, and when stdin closed.
fn live(
    args: &[&str],
    feed: impl FnOnce(&mut std::process::ChildStdin) + Send + 'static,
) -> (Vec<(Duration, String)>, Duration) {
    let started = Instant::now();
    let mut child = weir_std()
        .arg("dedupe")
        .args(args)
        .arg("-q")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        feed(&mut stdin);
        drop(stdin);
        started.elapsed()
    });
    let lines = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| (started.elapsed(), l.unwrap()))
        .collect();
    let closed = feeder.join().unwrap();
    assert!(child.wait().unwrap().success());
    (lines, closed)
}

/// A record is judged by its own partition's watermark: a repeat of x 10 s and 15 s after it
/// in event time passes (past the 2 s horizon), though partition 1, silent, holds the
/// combined watermark at 0; partition 1's own repeat at 1 s is dropped (its watermark is 0).
/// With `--idle-timeout` partition 1 lets go while partition 0 keeps the input busy (a record
/// every 20 ms), and its repeat meets the combined watermark, 19.8 s, and passes: the wall
/// clock decides, as the README says.
#[test]
fn an_idle_partition_lets_ids_expire_with_idle_timeout() {
    let feed = |stdin: &mut std::process::ChildStdin| {
        // Partition 1 speaks at time 0; partition 0 goes on, 100 ms of event time a record,
        // and repeats x at 10 s and 15 s of event time (2 s and 3 s of wall time); then
        // partition 1 repeats x at 1 s.
        writeln!(stdin, r#"{{"p":1,"t":0,"id":"x"}}"#).unwrap();
        for i in 1..200 {
            let id = match i {
                100 | 150 => "x".to_string(),
                _ => format!("u{i}"),
            };
            writeln!(stdin, r#"{{"p":0,"t":{},"id":"{id}"}}"#, i * 100).unwrap();
            stdin.flush().unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
        writeln!(stdin, r#"{{"p":1,"t":1000,"id":"x"}}"#).unwrap();
    };
    let args = [
        "--id",
        "id",
        "--time",
        "t",
        "--time-format",
        "epoch-ms",
        "--horizon",
        "2s",
        "--partition-by",
        "p",
    ];
    let times_of_x = |lines: Vec<(Duration, String)>| -> Vec<i64> {
        let values: Vec<Value> = lines
            .iter()
            .map(|(_, l)| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            values.iter().filter(|v| v["id"] != "x").count(),
            197,
            "the unique ids all pass"
        );
        values
            .iter()
            .filter(|v| v["id"] == "x")
            .map(|v| v["t"].as_i64().unwrap())
            .collect()
    };
    let (held, _) = live(&args, feed);
    // At 10 s partition 0's watermark is 9.9 s, past 0 + 2 s; at 15 s 14.9 s, past 10 s + 2 s.
    assert_eq!(
        times_of_x(held),
        [0, 10_000, 15_000],
        "judged by own partition"
    );
    let mut idle = args.to_vec();
    idle.extend(["--idle-timeout", "300ms"]);
    let (let_go, _) = live(&idle, feed);
    assert_eq!(times_of_x(let_go), [0, 10_000, 15_000, 1_000]);
}

/// `--keep last` on a processing-time horizon writes each id's last record once the horizon
/// has passed, while the input is still open and silent, not when the next record comes.
#[test]
fn keep_last_releases_held_records_while_the_input_waits() {
    let (lines, closed) = live(
        &[
            "--id",
            "id",
            "--horizon",
            "1s",
            "--horizon-by",
            "arrival",
            "--keep",
            "last",
        ],
        |stdin| {
            for (id, v) in [(1, "a"), (1, "b"), (2, "c")] {
                writeln!(stdin, r#"{{"id":{id},"v":"{v}"}}"#).unwrap();
            }
            stdin.flush().unwrap();
            std::thread::sleep(Duration::from_secs(6));
        },
    );
    let got: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(got, [r#"{"id":1,"v":"b"}"#, r#"{"id":2,"v":"c"}"#]);
    for (at, line) in &lines {
        // Released 1 s (and at most a quarter horizon and a tick more) after arriving.
        assert!(
            *at >= Duration::from_secs(1) && *at < closed - Duration::from_secs(3),
            "{line} came at {at:?}, stdin closed at {closed:?}"
        );
    }
}
