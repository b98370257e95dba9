//! A pipe of envelopes gives the direct read's result: `consume -J | window --partition-by
//! partition` equals `window kafka://...`, rows and late records, whatever order consume wrote
//! the partitions in; the same for `dedupe`; and the README's opening pipeline, as printed.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Output;

use serde_json::{json, Value};

use super::kafka::{broker, envelopes_of, group_turn, Broker};
use crate::gen::GenConfig;
use crate::{generated_with, stdout_lines, weir, weir_std, Background};

pub(super) const WINDOW: &[&str] = &[
    "--time",
    "value.occurred_at",
    "--key",
    "value.merchant_id",
    "--tumbling",
    "1m",
    "--count",
];

const DEDUPE: &[&str] = &["--id", "value.event_id", "--time", "value.occurred_at"];

/// A 3-partition topic holding a backlog of the last half hour: 5,000 checkouts keyed by
/// merchant (each merchant in one partition, repeats with it, if `repeats`), out of order,
/// some hours late, each stamped with its arrival time.
fn backlog(b: &Broker, repeats: bool) -> String {
    backlog_of(b, repeats, 3, 5000)
}

/// `events` checkouts over the last half hour on `partitions` partitions, as `backlog`.
fn backlog_of(b: &Broker, repeats: bool, partitions: u32, events: u64) -> String {
    let topic = b.topic("pipes", partitions);
    let now = chrono::Utc::now().timestamp_millis();
    let (_, events) = generated_with(GenConfig {
        events,
        seed: 46,
        keys: 60,
        rate_per_s: events as f64 / 1800.0,
        start: now - 30 * 60_000,
        partitions,
        duplicate_share: if repeats { 0.02 } else { 0.0 },
        ..GenConfig::default()
    });
    let file = envelopes_of(&events, |e| json!(format!("m-{:05}", e.merchant)));
    b.produce(&topic, file.path(), &["-J", "--keep-partition"]);
    topic
}

/// Rows upserted on (key, window_start), and the late records, as a set.
#[derive(Debug, PartialEq)]
struct Outcome {
    rows: BTreeMap<(String, String), Value>,
    /// By (partition, offset): a piped envelope also says how many partitions there are.
    late: BTreeSet<(i64, i64)>,
}

fn window(args: &[&str], delay: &str, stdin: Option<Vec<u8>>) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let late = dir.path().join("late.ndjson");
    let mut cmd = weir();
    cmd.arg("window")
        .args(args)
        .args(WINDOW)
        .args(["--delay", delay, "-q"]);
    cmd.arg("--late-output").arg(&late);
    if let Some(input) = stdin {
        cmd.write_stdin(input);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    result(&out, &std::fs::read_to_string(&late).unwrap())
}

/// `window` on a topic (no stdin), in the background: a run that does not end fails with
/// what it said.
fn window_on_topic(args: &[&str], delay: &str) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str| dir.path().join(name);
    let mut run = Background(
        weir_std()
            .arg("window")
            .args(args)
            .args(WINDOW)
            .args(["--delay", delay, "-q", "--late-output"])
            .arg(file("late"))
            .arg("-o")
            .arg(file("rows"))
            .stderr(std::fs::File::create(file("err")).unwrap())
            .spawn()
            .unwrap(),
    );
    let status = run.wait_showing("window", Some(&file("err")));
    let read = |name: &str| std::fs::read_to_string(file(name)).unwrap();
    assert!(status.success(), "{status:?}: {}", read("err"));
    outcome(&read("rows"), &read("late"))
}

fn result(out: &Output, late: &str) -> Outcome {
    outcome(&String::from_utf8(out.stdout.clone()).unwrap(), late)
}

fn outcome(rows_written: &str, late: &str) -> Outcome {
    let mut rows = BTreeMap::new();
    for line in rows_written.lines() {
        let row: Value = serde_json::from_str(line).unwrap();
        let at = (
            row["value_merchant_id"].to_string(),
            row["window_start"].to_string(),
        );
        rows.insert(at, row);
    }
    let late = late.lines().map(position).collect();
    Outcome { rows, late }
}

/// Where an envelope's record stood in the topic.
fn position(line: &str) -> (i64, i64) {
    let e: Value = serde_json::from_str(line).unwrap();
    (
        e["partition"].as_i64().unwrap(),
        e["offset"].as_i64().unwrap(),
    )
}

/// The envelopes consume wrote, reordered: partition after partition (as a backlog read
/// may write them), last partition first, and one record of each partition in turn.
fn orders(captured: &[u8], field: &str) -> Vec<Vec<u8>> {
    let lines: Vec<&str> = std::str::from_utf8(captured).unwrap().lines().collect();
    let partition = |l: &&str| serde_json::from_str::<Value>(l).unwrap()[field].to_string();
    let mut by_partition: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for l in &lines {
        by_partition.entry(partition(l)).or_default().push(l);
    }
    let join = |ls: Vec<&str>| ls.iter().map(|l| format!("{l}\n")).collect::<String>();
    let ascending: Vec<&str> = by_partition.values().flatten().copied().collect();
    let descending: Vec<&str> = by_partition.values().rev().flatten().copied().collect();
    let longest = by_partition.values().map(Vec::len).max().unwrap_or(0);
    let turns: Vec<&str> = (0..longest)
        .flat_map(|i| by_partition.values().filter_map(move |p| p.get(i).copied()))
        .collect();
    [lines, ascending, descending, turns]
        .into_iter()
        .map(|ls| join(ls).into_bytes())
        .collect()
}

#[test]
fn piped_envelopes_give_the_direct_reads_rows_and_late_records() {
    let Some(b) = broker() else { return };
    let topic = backlog(&b, true);
    let url = b.url(&topic);
    let direct = window(&[&url, "-e"], "1m", None);
    assert!(direct.late.len() > 50, "late data: {}", direct.late.len());
    assert!(direct.rows.len() > 100);
    // Fetches of a few records at a time, and of one partition at a time, interleave the
    // partitions otherwise: the same rows and late records.
    for fetch in [
        [
            "-X",
            "max.partition.fetch.bytes=2048",
            "-X",
            "fetch.max.bytes=1000000",
            "-X",
            "message.max.bytes=1000000",
        ],
        [
            "-X",
            "max.partition.fetch.bytes=1048576",
            "-X",
            "fetch.wait.max.ms=500",
            "-X",
            "fetch.min.bytes=100000",
        ],
    ] {
        let got = window(&[&[&url, "-e"][..], &fetch].concat(), "1m", None);
        assert!(got == direct, "{fetch:?}: the rows or late records differ");
    }
    let captured = weir()
        .args(["consume", &url, "-e", "-J", "-q"])
        .output()
        .unwrap();
    assert!(captured.status.success());
    for (i, piped) in orders(&captured.stdout, "partition")
        .into_iter()
        .enumerate()
    {
        let got = window(&["--partition-by", "partition"], "1m", Some(piped));
        assert!(
            got == direct,
            "order {i}: the piped rows or late records differ"
        );
    }
}

#[test]
fn piped_envelopes_give_the_direct_reads_dedupe() {
    let Some(b) = broker() else { return };
    let topic = backlog(&b, true);
    let url = b.url(&topic);
    // A horizon shorter than the time most repeats come after.
    let dedupe = |args: &[&str], stdin: Option<Vec<u8>>| {
        let mut cmd = weir();
        cmd.arg("dedupe")
            .args(args)
            .args(DEDUPE)
            .args(["--horizon", "20s", "-q"]);
        if let Some(input) = stdin {
            cmd.write_stdin(input);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        stdout_lines(&out)
            .iter()
            .map(|l| position(l))
            .collect::<BTreeSet<_>>()
    };
    let direct = dedupe(&[&url, "-e"], None);
    assert!(
        direct.len() < 5000 && direct.len() > 4000,
        "{}",
        direct.len()
    );
    let captured = weir()
        .args(["consume", &url, "-e", "-J", "-q"])
        .output()
        .unwrap();
    for (i, piped) in orders(&captured.stdout, "partition")
        .into_iter()
        .enumerate()
    {
        let got = dedupe(&["--partition-by", "partition"], Some(piped));
        let differ: Vec<_> = got.symmetric_difference(&direct).collect();
        assert!(
            differ.is_empty(),
            "order {i}: {} differ: {:?}",
            differ.len(),
            &differ[..1]
        );
    }
}

/// The pipeline the README opens with, as printed but for the broker and topic.
fn readme_pipeline() -> String {
    let readme = include_str!("../../README.md");
    let start = readme
        .find("    weir consume kafka://localhost:9092/checkouts")
        .expect("the README opens with a pipeline");
    let block: Vec<&str> = readme[start..]
        .lines()
        .take_while(|l| l.starts_with("    "))
        .collect();
    block.join("\n")
}

/// On a backlog without repeats (so that dedupe passes every record) the README's pipeline
/// gives the rows and late records of `window` reading the topic.
#[test]
fn the_readme_pipeline_gives_the_direct_reads_rows() {
    let Some(b) = broker() else { return };
    let topic = backlog(&b, false);
    let url = b.url(&topic);
    let pipeline = readme_pipeline().replace("kafka://localhost:9092/checkouts", &url);
    assert!(pipeline.contains("weir window"), "{pipeline}");
    let dir = tempfile::tempdir().unwrap();
    let late = dir.path().join("late.ndjson");
    let weir_dir = std::path::Path::new(env!("CARGO_BIN_EXE_weir"))
        .parent()
        .unwrap();
    let out = std::process::Command::new("bash")
        .args(["-o", "pipefail", "-c"])
        .arg(format!("{pipeline} --late-output {}", late.display()))
        .env(
            "PATH",
            format!("{}:{}", weir_dir.display(), std::env::var("PATH").unwrap()),
        )
        .output()
        .unwrap();
    assert!(out.status.success(), "{pipeline}\n{out:?}");
    let got = result(&out, &std::fs::read_to_string(&late).unwrap());
    let want = window(&[&url, "--from", "-1h", "-e"], "10m", None);
    assert_eq!(got.rows, want.rows);
    assert_eq!(got.late, want.late);
    assert!(!want.late.is_empty() && want.rows.len() > 100);
}

/// `n` records `{"i":I,"k":"kK","t":T}` on 20 keys, a second apart in event time, every
/// seventh five minutes behind.
fn late_records(n: u64) -> String {
    (0..n)
        .map(|i| {
            let late = if i % 7 == 3 { 300_000 } else { 0 };
            let t = 1_767_225_600_000 + i * 1000 - late;
            format!("{{\"i\":{i},\"k\":\"k{}\",\"t\":{t}}}\n", i % 20)
        })
        .collect()
}

/// On a 4-shard stream with late data, `consume -J | window --partition-by shard` gives the
/// rows and late records of `window kinesis://...`, whatever order the shards' records come
/// in; so do `dedupe` (the records kept) and `watermark-profile` (its late counts).
#[test]
fn piped_shard_envelopes_give_the_direct_reads_results() {
    let Some(s) = super::kinesis::kinesis_local() else {
        return;
    };
    let stream = s.stream("pipes", 4);
    s.py(&["put", &stream, "k"], &late_records(2000));
    let url = s.url(&stream);
    let at = |l: &str| {
        let e: Value = serde_json::from_str(l).unwrap();
        (e["shard"].to_string(), e["sequence"].to_string())
    };
    let flags = ["--time", "value.t", "--time-format", "ms", "-q"];
    let window = [
        "window",
        "--key",
        "value.k",
        "--tumbling",
        "1m",
        "--delay",
        "1m",
        "--count",
    ];
    let dir = tempfile::tempdir().unwrap();
    let late = dir.path().join("late.ndjson");
    let late_arg = ["--late-output", late.to_str().unwrap()];
    let run = |args: &[&str], stdin: Option<Vec<u8>>| -> Output {
        let out = match stdin {
            None => s.weir(args),
            Some(input) => weir().args(args).write_stdin(input).output().unwrap(),
        };
        assert!(out.status.success(), "{out:?}");
        out
    };
    let windowed = |out: &Output| {
        let mut rows: Vec<String> = stdout_lines(out);
        rows.sort();
        let late = std::fs::read_to_string(&late).unwrap();
        (rows, late.lines().map(at).collect::<BTreeSet<_>>())
    };
    let direct_args = [&window[..], &flags, &late_arg, &[&url, "-e"]].concat();
    let direct = windowed(&run(&direct_args, None));
    assert!(direct.1.len() > 50, "late: {}", direct.1.len());
    let dedupe = ["dedupe", "--id", "value.k", "--horizon", "2m"];
    let kept = |out: &Output| {
        stdout_lines(out)
            .iter()
            .map(|l| at(l))
            .collect::<BTreeSet<_>>()
    };
    let direct_kept = kept(&run(&[&dedupe[..], &flags, &[&url, "-e"]].concat(), None));
    let profile = [
        "watermark-profile",
        "--format",
        "json",
        "--tumbling",
        "1m",
        "--delay",
        "0s,1m",
    ];
    let report = |out: &Output| {
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        r["overall"]["late_for_delay"].clone()
    };
    let direct_report = report(&run(&[&profile[..], &flags, &[&url, "-e"]].concat(), None));
    let captured = run(&["consume", "-J", "-e", "-q", &url], None);
    let by_shard = ["--partition-by", "shard"];
    for (i, piped) in orders(&captured.stdout, "shard").into_iter().enumerate() {
        let args = [&window[..], &flags, &late_arg, &by_shard].concat();
        let got = windowed(&run(&args, Some(piped.clone())));
        assert!(got == direct, "window, order {i}");
        let args = [&dedupe[..], &flags, &by_shard].concat();
        let got = kept(&run(&args, Some(piped.clone())));
        assert!(got == direct_kept, "dedupe, order {i}");
        let args = [&profile[..], &flags, &by_shard, &["--arrival", "timestamp"]].concat();
        assert_eq!(
            report(&run(&args, Some(piped))),
            direct_report,
            "profile, order {i}"
        );
    }
}

/// Two `window -G -e` members over a 4-partition topic with late data, one killed (SIGKILL)
/// mid-read and started again: between them they write the rows of one process reading the
/// topic (each row upserted on its key and window, the last update kept) and its late
/// records, each at least once and none other. Which records are late and what each window
/// holds depend on each partition's records alone, not on who read them when.
#[test]
fn members_killed_mid_read_give_one_processs_rows_and_late_records() {
    killed_member_drill(&[]);
}

#[test]
fn members_killed_mid_read_through_a_shuffle_give_one_processs_rows_and_late_records() {
    killed_member_drill(&["--repartition"]);
}

fn killed_member_drill(extra: &[&str]) {
    let Some(b) = broker() else { return };
    let _turn = group_turn();
    let topic = backlog_of(&b, false, 4, 60_000);
    let url = b.url(&topic);
    let lateness = ["--allowed-lateness", "30s"];
    let mut direct = window(&[&url, "-e", lateness[0], lateness[1]], "1m", None);
    assert!(direct.late.len() > 100, "late data: {}", direct.late.len());
    let updated = direct
        .rows
        .values_mut()
        .filter_map(|r| r.as_object_mut()?.remove("update"));
    assert!(
        updated.count() > 10,
        "windows updated within the allowed lateness"
    );
    let dir = tempfile::tempdir().unwrap();
    let group = format!("kill-{topic}");
    let member = |name: &str| {
        let file = |ext: &str| dir.path().join(format!("{name}.{ext}"));
        let child = weir_std()
            .args(["window", &url, "-e", "-q", "--delay", "1m"])
            .args(WINDOW)
            .args(lateness)
            .args(extra)
            .args([
                "-G",
                &group,
                "--from",
                "beginning",
                "--checkpoint-interval",
                "200ms",
            ])
            .args(["-X", "session.timeout.ms=10000", "--timeout", "60s"])
            .arg("-o")
            .arg(file("rows"))
            .arg("--late-output")
            .arg(file("late"))
            .stderr(std::fs::File::create(file("err")).unwrap())
            .spawn()
            .unwrap();
        Background(child)
    };
    // The member to be killed starts alone, so that it holds partitions and writes rows
    // before the other joins: started together, the other could read everything first.
    let mut killed = member("killed");
    let rows = dir.path().join("killed.rows");
    let started = std::time::Instant::now();
    while !std::fs::metadata(&rows).is_ok_and(|m| m.len() > 0) {
        if started.elapsed().as_secs() > 30 {
            let kept = dir.keep();
            panic!(
                "no rows from the member to be killed: kept in {}",
                kept.display()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut survivor = member("survivor");
    eprintln!("killed after {:?}", started.elapsed());
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(killed.0.try_wait().unwrap().is_none(), "it ended unkilled");
    killed.0.kill().unwrap();
    killed.0.wait().unwrap();
    let mut again = member("again");
    for (name, m) in [("survivor", &mut survivor), ("again", &mut again)] {
        let status = m.wait_within(name);
        let err = std::fs::read_to_string(dir.path().join(format!("{name}.err")));
        assert!(status.success(), "{name}: {status:?}: {err:?}");
    }
    let mut got = Outcome {
        rows: BTreeMap::new(),
        late: BTreeSet::new(),
    };
    for name in ["survivor", "killed", "again"] {
        let read = |ext: &str| std::fs::read_to_string(dir.path().join(format!("{name}.{ext}")));
        got.late.extend(read("late").unwrap().lines().map(position));
        for line in read("rows").unwrap().lines() {
            let mut row: Value = serde_json::from_str(line).unwrap();
            // Whether a row is a window's first or an update is the emission's, not the
            // window's: a restarted member may emit a window the killed one did.
            row.as_object_mut().unwrap().remove("update");
            let at = (
                row["value_merchant_id"].to_string(),
                row["window_start"].to_string(),
            );
            // Updates only add records: the last of a window is its fullest.
            let fuller = |kept: &Value| kept["count"].as_u64() < row["count"].as_u64();
            if got.rows.get(&at).is_none_or(fuller) {
                got.rows.insert(at, row);
            }
        }
    }
    if got.late != direct.late {
        let extra: Vec<_> = got.late.difference(&direct.late).take(5).collect();
        let missing: Vec<_> = direct.late.difference(&got.late).take(5).collect();
        let kept = dir.keep();
        panic!(
            "the late records differ: {} extra (first {extra:?}), {} missing (first \
             {missing:?}); kept in {}",
            got.late.difference(&direct.late).count(),
            direct.late.difference(&got.late).count(),
            kept.display()
        );
    }
    let differ: Vec<_> = (direct.rows.iter())
        .filter(|(at, row)| got.rows.get(at) != Some(row))
        .map(|(at, row)| (row, got.rows.get(at)))
        .take(5)
        .collect();
    if !differ.is_empty() || got.rows.len() != direct.rows.len() {
        let kept = dir.keep();
        panic!(
            "rows differ: {differ:?}; {} rows, the direct read {}; kept in {}",
            got.rows.len(),
            direct.rows.len(),
            kept.display()
        );
    }
}

/// Behind `--repartition` a record is judged by its input partition's watermark as it stood
/// at the record, which its writer carries across the shuffle: a member reading a
/// 3-partition backlog through the shuffle writes the rows and late records of one direct
/// read of the topic.
#[test]
fn a_shuffled_read_gives_the_direct_reads_rows_and_late_records() {
    let Some(b) = broker() else { return };
    let _turn = super::kafka::group_turn();
    let topic = backlog(&b, true);
    let url = b.url(&topic);
    let direct = window(&[&url, "-e"], "1m", None);
    assert!(direct.late.len() > 50, "late data: {}", direct.late.len());
    let group = format!("shuffled-{topic}");
    let member = [
        &url,
        "-e",
        "-G",
        &group,
        "--repartition",
        "--from",
        "beginning",
        "--timeout",
        "60s",
    ];
    let shuffled = window_on_topic(&member, "1m");
    assert!(shuffled.rows == direct.rows, "the rows differ");
    assert_eq!(shuffled.late, direct.late);
}

/// On a 3-partition topic with late data, the profile's late count for each --delay is what
/// `window kafka://...` with the same window flags marks late: tumbling, hopping and
/// sessions, with an allowed lateness, each partition judged by its own watermark.
#[test]
fn the_profile_of_a_topic_predicts_the_windows_late_records() {
    let Some(b) = broker() else { return };
    let topic = backlog(&b, false);
    let url = b.url(&topic);
    let time = ["--time", "value.occurred_at", "-q", "-e"];
    let windows: [&[&str]; 4] = [
        &["--tumbling", "1m"],
        &["--hop", "5m", "--slide", "1m", "--allowed-lateness", "30s"],
        &["--session", "1m", "--key", "value.merchant_id"],
        &[
            "--session",
            "20s",
            "--key",
            "value.merchant_id",
            "--allowed-lateness",
            "10s",
        ],
    ];
    let delays = ["0s", "30s", "2m", "10m"];
    let dir = tempfile::tempdir().unwrap();
    let late = dir.path().join("late.ndjson");
    for flags in windows {
        let out = weir()
            .args(["watermark-profile", &url, "--format", "json"])
            .args(time)
            .args(flags)
            .args(["--delay", &delays.join(",")])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let predicted: Vec<u64> = (report["overall"]["late_for_delay"].as_array().unwrap())
            .iter()
            .map(|l| l["late"].as_u64().unwrap())
            .collect();
        let mut marked = Vec::new();
        for delay in delays {
            let out = weir()
                .args([
                    "window",
                    &url,
                    "--count",
                    "-o",
                    "/dev/null",
                    "--delay",
                    delay,
                ])
                .args(time)
                .args(flags)
                .arg("--late-output")
                .arg(&late)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            marked.push(std::fs::read_to_string(&late).unwrap().lines().count() as u64);
        }
        assert_eq!(predicted, marked, "{flags:?}");
        assert!(marked[0] > 10, "{flags:?}: little late data: {marked:?}");
    }
}
