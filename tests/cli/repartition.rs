//! `--repartition` on the test broker: group members on a topic keyed by something other
//! than their state key give the rows of one reader, against an independent batch count,
//! with members killed, restarted and joining.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::kafka::{broker, group_turn, Broker};
use super::{weir, weir_std, Background};

/// 2026-01-01T00:00:00Z: on-time events fall in the five minutes after it.
const T0: i64 = 1_767_225_600_000;
const EVENTS: usize = 20_000;

/// Events with ids `e-0`.. (repeating after `distinct`), 41 merchants, times within five
/// minutes of `T0`; in the last fifth, one in twenty is an hour late. With `--delay 10m`
/// an on-time event is never late and an hour-late one is late once every input
/// partition has spoken, however the partitions interleave.
fn events(distinct: usize) -> (tempfile::NamedTempFile, Vec<Value>) {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut file = tempfile::NamedTempFile::new().unwrap();
    let mut all = Vec::with_capacity(EVENTS);
    for i in 0..EVENTS {
        let mut ts = T0 + next(5 * 60_000) as i64;
        if i > EVENTS * 4 / 5 && next(20) == 0 {
            ts = T0 - 3_600_000 + next(600_000) as i64;
        }
        let e = serde_json::json!({"id": format!("e-{}", i % distinct), "m": format!("m-{}", next(41)), "ts": ts});
        writeln!(file, "{e}").unwrap();
        all.push(e);
    }
    // Then, on every partition, records two hours ahead: the windows before them fire
    // without the end of the input (members that run on until stopped).
    for j in 0..AHEAD {
        let e = serde_json::json!({"id": format!("ahead-{j}"), "m": format!("m-{}", j % 41), "ts": T0 + 7_200_000});
        writeln!(file, "{e}").unwrap();
    }
    (file, all)
}

/// Records two hours ahead, after the others (not among those `events` returns).
const AHEAD: usize = 64;

/// Windows from this time on are the ahead records', which fire only at the input's end.
const AHEAD_WINDOWS: i64 = T0 + 3_600_000;

/// The count per (merchant, window start) of on-time events, and the ids of the late ones.
fn batch(all: &[Value]) -> (BTreeMap<(String, i64), u64>, usize) {
    let mut counts = BTreeMap::new();
    let mut late = 0;
    for e in all {
        let ts = e["ts"].as_i64().unwrap();
        if ts < T0 {
            late += 1;
            continue;
        }
        let key = (e["m"].as_str().unwrap().to_string(), ts / 60_000 * 60_000);
        *counts.entry(key).or_insert(0) += 1;
    }
    (counts, late)
}

fn window_args(b: &Broker, topic: &str, exit_at_end: bool) -> Vec<String> {
    let mut args: Vec<String> = ["window", &b.url(topic), "--from", "beginning"]
        .map(String::from)
        .to_vec();
    if exit_at_end {
        args.push("-e".into());
    }
    args.extend(
        [
            "--time",
            "value.ts",
            "--time-format",
            "ms",
            "--key",
            "value.m",
            "--tumbling",
            "1m",
            "--count",
            "--delay",
            "10m",
            "--timeout",
            "60s",
            "-q",
            "-o",
            "rows.ndjson",
            "--late-output",
            "late.ndjson",
        ]
        .map(String::from),
    );
    args
}

/// Every row the runs in `dirs` wrote, by (merchant, window start): the counts each gave.
fn rows_of(dirs: &[&Path]) -> BTreeMap<(String, i64), BTreeSet<u64>> {
    let mut rows: BTreeMap<(String, i64), BTreeSet<u64>> = BTreeMap::new();
    for dir in dirs {
        for line in std::fs::read_to_string(dir.join("rows.ndjson"))
            .unwrap()
            .lines()
        {
            let Ok(r) = serde_json::from_str::<Value>(line) else {
                continue; // cut by a kill
            };
            let start = chrono::DateTime::parse_from_rfc3339(r["window_start"].as_str().unwrap())
                .unwrap()
                .timestamp_millis();
            if start >= AHEAD_WINDOWS {
                continue;
            }
            let key = (r["value_m"].as_str().unwrap().to_string(), start);
            rows.entry(key)
                .or_default()
                .insert(r["count"].as_u64().unwrap());
        }
    }
    rows
}

/// The input positions of the late records the runs in `dirs` wrote, each once.
fn late_of(dirs: &[&Path]) -> BTreeSet<(i64, i64)> {
    let mut late = BTreeSet::new();
    for dir in dirs {
        for line in std::fs::read_to_string(dir.join("late.ndjson"))
            .unwrap()
            .lines()
        {
            let Ok(r) = serde_json::from_str::<Value>(line) else {
                continue; // cut by a kill
            };
            assert!(
                r["value"]["ts"].as_i64().unwrap() < T0,
                "an on-time record is late: {r}"
            );
            late.insert((
                r["partition"].as_i64().unwrap(),
                r["offset"].as_i64().unwrap(),
            ));
        }
    }
    late
}

/// What members wrote, against the batch count: every on-time window's rows give its count,
/// no window is given two counts, and every record is counted once, in a window or late.
/// What is wrong, if anything.
fn wrong(dirs: &[&Path], all: &[Value]) -> Option<String> {
    let (counts, _) = batch(all);
    let rows = rows_of(dirs);
    let late = late_of(dirs);
    for (key, n) in &counts {
        if rows.get(key) != Some(&BTreeSet::from([*n])) {
            return Some(format!("window {key:?}: {:?}, not {n}", rows.get(key)));
        }
    }
    if let Some((key, given)) = rows.iter().find(|(_, given)| given.len() > 1) {
        return Some(format!("window {key:?} was given the counts {given:?}"));
    }
    let counted: u64 = rows.values().map(|c| c.iter().next().unwrap()).sum();
    let seen = counted + late.len() as u64;
    (seen != all.len() as u64).then(|| format!("{seen} records counted of {}", all.len()))
}

fn check_members(dirs: &[&Path], all: &[Value]) {
    if let Some(what) = wrong(dirs, all) {
        panic!("{what}");
    }
}

fn member(b: &Broker, topic: &str, group: &str, dir: &Path, extra: &[&str]) -> Background {
    // A member runs until stopped unless told -e.
    let exit_at_end = extra.contains(&"-e");
    let extra: Vec<&str> = extra.iter().copied().filter(|a| *a != "-e").collect();
    let child = weir_std()
        .args(window_args(b, topic, exit_at_end))
        .args(["-G", group, "--repartition", "--checkpoint-interval", "1s"])
        .args(["-X", "session.timeout.ms=6000"])
        .args(extra)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Background(child)
}

/// Waits for a member to end (two minutes at most): its exit code and stderr.
fn ended(mut m: Background) -> (Option<i32>, String) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(end) = exited(&mut m) {
            return end;
        }
        assert!(Instant::now() < deadline, "a member did not end");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A member's exit code and stderr, once it has exited.
fn exited(m: &mut Background) -> Option<(Option<i32>, String)> {
    let status = m.0.try_wait().unwrap()?;
    let mut err = String::new();
    std::io::Read::read_to_string(m.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    Some((status.code(), err))
}

/// Three members (`spawn` starts one in a directory), one SIGKILLed and started again, one
/// joining, running until `done` holds for the directories they write in (two minutes at
/// most), then stopped. A member that ends by itself fails the test. (Members run without -e: on the test broker,
/// whose coordinator can lose an assignment, the -e end is a drill of its own.)
fn three_members(
    spawn: impl Fn(&Path) -> Background,
    done: impl Fn(&[&Path]) -> bool,
) -> Vec<tempfile::TempDir> {
    let dirs: Vec<tempfile::TempDir> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
    let paths: Vec<&Path> = dirs.iter().map(|d| d.path()).collect();
    let mut members = vec![spawn(paths[0])];
    let killed = spawn(paths[1]);
    std::thread::sleep(Duration::from_secs(3));
    drop(killed);
    members.push(spawn(paths[2]));
    std::thread::sleep(Duration::from_secs(1));
    members.push(spawn(paths[3]));
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done(&paths) {
        for m in &mut members {
            if let Some((code, err)) = exited(m) {
                panic!("a member ended: exit {code:?}: {err}");
            }
        }
        assert!(Instant::now() < deadline, "not done in two minutes");
        std::thread::sleep(Duration::from_millis(500));
    }
    // A little longer: what a member would write twice shows.
    std::thread::sleep(Duration::from_secs(2));
    drop(members);
    dirs
}

/// Whether every file a member writes in `dirs` exists (it is created at the start).
fn written(dirs: &[&Path], name: &str) -> bool {
    dirs.iter().all(|d| d.join(name).exists())
}

/// The case of a topic keyed by event id (-G alone is refused there: see
/// `kafka::group_members_refuse_a_topic_not_keyed_by_their_state_key`). With --repartition,
/// one member, then three (one SIGKILLed and started again, one joining), give every
/// on-time window its batch count and count every record once, in a window or late; the
/// repartition topic's lag shows beside the input's.
#[test]
fn window_members_repartition_a_topic_keyed_by_another_field() {
    let Some(b) = broker() else { return };
    let _turn = group_turn();
    let (file, all) = events(EVENTS);
    let topic = b.topic("keyed-by-event-id", 4);
    b.produce(&topic, file.path(), &["--key", "id"]);
    let alone = tempfile::tempdir().unwrap();
    let group = format!("rp-one-{topic}");
    let (code, err) = ended(member(&b, &topic, &group, alone.path(), &["-e"]));
    assert_eq!(code, Some(0), "{err}");
    check_members(&[alone.path()], &all);
    let lag = weir()
        .args([
            "lag",
            &format!("kafka://{}", b.addr),
            "--group",
            &group,
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let lag = String::from_utf8_lossy(&lag.stdout);
    assert!(
        lag.contains(&format!("{group}-window-repartition")),
        "{lag}"
    );
    assert!(lag.contains(&format!("\"{topic}\"")), "{lag}");
    // A finished job committed past everything, the writers' trailing markers included.
    let report: Value = serde_json::from_str(&lag).unwrap();
    for t in report["groups"][0]["topics"].as_array().unwrap() {
        for p in t["partitions"].as_array().unwrap() {
            assert_eq!(p["lag_messages"], 0, "{}: {p}", t["topic"]);
        }
    }

    let group = format!("rp-three-{topic}");
    let spawn = |dir: &Path| member(&b, &topic, &group, dir, &[]);
    let dirs = three_members(spawn, |d| windows_done(d, &all));
    let paths: Vec<&Path> = dirs.iter().map(|d| d.path()).collect();
    check_members(&paths, &all);
}

/// One reader of `topic`, without -G, to its end: the directory it wrote its rows and late
/// records in.
fn one_reader(b: &Broker, topic: &str) -> tempfile::TempDir {
    let one = tempfile::tempdir().unwrap();
    let out = weir()
        .args(window_args(b, topic, true))
        .current_dir(one.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    one
}

/// Whether the members writing in `dirs` have given what the batch count says.
fn windows_done(dirs: &[&Path], all: &[Value]) -> bool {
    written(dirs, "rows.ndjson") && written(dirs, "late.ndjson") && wrong(dirs, all).is_none()
}

/// Rows and late records equal one reader's, exactly, where one reader's do not depend on
/// how partitions interleave: an input of one partition, shuffled to four. Members killed,
/// started again and joining give them all the same.
#[test]
fn repartitioned_members_give_the_rows_and_late_records_of_one_reader() {
    let Some(b) = broker() else { return };
    let _turn = group_turn();
    let (file, all) = events(EVENTS);
    let topic = b.topic("one-partition", 1);
    b.produce(&topic, file.path(), &["--key", "id"]);
    let one = one_reader(&b, &topic);
    let group = format!("rp-exact-{topic}");
    let four = ["--repartition-partitions", "4"];
    let spawn = |dir: &Path| member(&b, &topic, &group, dir, &four);
    let dirs = three_members(spawn, |d| windows_done(d, &all));
    let paths: Vec<&Path> = dirs.iter().map(|d| d.path()).collect();
    check_members(&paths, &all);
    assert_eq!(
        rows_of(&paths),
        rows_of(&[one.path()]),
        "the rows of one reader"
    );
    assert_eq!(late_of(&paths), late_of(&[one.path()]), "its late records");
}

/// `dedupe -G --repartition` on a topic keyed by merchant: each id passes once across
/// members, one of them SIGKILLed and started again.
#[test]
fn dedupe_members_repartition_and_pass_each_id_once() {
    let Some(b) = broker() else { return };
    let _turn = group_turn();
    let distinct = 15_000;
    let (file, _) = events(distinct);
    let topic = b.topic("keyed-by-merchant", 4);
    b.produce(&topic, file.path(), &["--key", "m"]);
    let group = format!("rp-dedupe-{topic}");
    let dedupe = |dir: &Path| {
        let child = weir_std()
            .args(["dedupe", &b.url(&topic), "-G", &group, "--repartition"])
            .args([
                "--from",
                "beginning",
                "--id",
                "value.id",
                "-o",
                "out.ndjson",
            ])
            .args([
                "--checkpoint-interval",
                "1s",
                "-X",
                "session.timeout.ms=6000",
                "-q",
            ])
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Background(child)
    };
    let want = distinct + AHEAD;
    let dirs = three_members(dedupe, |d| {
        written(d, "out.ndjson") && passed(d).0.len() == want
    });
    let paths: Vec<&Path> = dirs.iter().map(|d| d.path()).collect();
    let (ids, records) = passed(&paths);
    assert_eq!(ids.len(), want, "every id passes");
    assert_eq!(records, want, "an id passed twice");
}

/// The ids the members writing in `dirs` passed, and how many different records (by input
/// position) passed. A record passed again by the member that took a killed one's partition
/// is the same record: a repeat of output since the last save, not an id twice.
fn passed(dirs: &[&Path]) -> (BTreeSet<String>, usize) {
    let mut passed: BTreeMap<(i64, i64), String> = BTreeMap::new();
    for d in dirs {
        for line in std::fs::read_to_string(d.join("out.ndjson"))
            .unwrap()
            .lines()
        {
            let Ok(r) = serde_json::from_str::<Value>(line) else {
                continue; // being written
            };
            let at = (
                r["partition"].as_i64().unwrap(),
                r["offset"].as_i64().unwrap(),
            );
            passed.insert(at, r["value"]["id"].as_str().unwrap().to_string());
        }
    }
    let records = passed.len();
    (passed.into_values().collect(), records)
}

/// Where late records go is no part of a group's job: two members writing them to files of
/// different names run together, and between them write every late record of one reader,
/// each once.
#[test]
fn members_write_late_records_to_files_of_their_own() {
    let Some(b) = broker() else { return };
    let _turn = group_turn();
    let (file, _) = events(EVENTS);
    let topic = b.topic("own-late-files", 1);
    b.produce(&topic, file.path(), &["--key", "id"]);
    let one = one_reader(&b, &topic);
    let want = late_of(&[one.path()]);
    assert!(!want.is_empty());
    let group = format!("own-late-{topic}");
    let dirs: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut members: Vec<Background> = (dirs.iter().enumerate())
        .map(|(i, dir)| {
            let args = window_args(&b, &topic, false)
                .into_iter()
                .map(|a| match a.as_str() {
                    "late.ndjson" => format!("late-of-member-{i}.ndjson"),
                    _ => a,
                });
            let child = weir_std()
                .args(args)
                .args([
                    "-G",
                    &group,
                    "--repartition",
                    "--repartition-partitions",
                    "4",
                ])
                .current_dir(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            Background(child)
        })
        .collect();
    let late_files = |dirs: &[tempfile::TempDir]| -> Vec<String> {
        (dirs.iter().enumerate())
            .flat_map(|(i, d)| {
                let text =
                    std::fs::read_to_string(d.path().join(format!("late-of-member-{i}.ndjson")));
                text.unwrap_or_default()
                    .lines()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while late_files(&dirs).len() < want.len() {
        for m in &mut members {
            if let Some((code, err)) = exited(m) {
                panic!("a member ended: exit {code:?}: {err}");
            }
        }
        assert!(Instant::now() < deadline, "not done in two minutes");
        std::thread::sleep(Duration::from_millis(500));
    }
    std::thread::sleep(Duration::from_secs(2));
    drop(members);
    let lines = late_files(&dirs);
    let positions: BTreeSet<(i64, i64)> = (lines.iter())
        .map(|l| {
            let r: Value = serde_json::from_str(l).unwrap();
            (
                r["partition"].as_i64().unwrap(),
                r["offset"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(lines.len(), positions.len(), "a late record written twice");
    assert_eq!(positions, want);
}
