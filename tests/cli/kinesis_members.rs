//! `-G APP` on a Kinesis source: consume members sharing a stream through their lease table
//! in dynalite, judged by boto3's read of the stream (every record, by shard and sequence).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::kinesis::{aws_env, dynalite, kinesis_local, Server};
use super::{weir_std, Background};

/// `n` records `{"i":I}` from `start`, keyed by `i`: spread over every shard.
fn numbered(start: u64, n: u64) -> String {
    (start..start + n)
        .map(|i| format!("{{\"i\":{i}}}\n"))
        .collect()
}

/// A consume member of `app` on `stream`: its output and stderr files in `dir`.
struct Member {
    child: Background,
    out: PathBuf,
    err: PathBuf,
}

fn member(s: &Server, dynamo: &Server, stream: &str, app: &str, dir: &Path, name: &str) -> Member {
    let (out, err) = (
        dir.join(format!("{name}.ndjson")),
        dir.join(format!("{name}.err")),
    );
    let mut c = weir_std();
    aws_env(&mut c)
        .env("AWS_ENDPOINT_URL_DYNAMODB", &dynamo.endpoint)
        .args(["consume", "-J", "-q", &s.url(stream), "-G", app])
        .args(["--lease-time", "3s", "--endpoint-url", &s.endpoint])
        .args(["-o", out.to_str().unwrap()])
        .stderr(std::fs::File::create(&err).unwrap());
    Member {
        child: Background(c.spawn().unwrap()),
        out,
        err,
    }
}

/// The (shard, sequence) of each record a member wrote, in order.
fn positions(out: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(out).unwrap_or_default();
    // A line still being written is not counted yet.
    let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    whole
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|e| {
            (
                e["shard"].as_str().unwrap().to_string(),
                e["sequence"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn shards_of(positions: &[(String, String)]) -> BTreeSet<String> {
    positions.iter().map(|(s, _)| s.clone()).collect()
}

/// Waits until `done`, putting a few records now and then so that every shard has some to
/// give; fails after `limit` with `what`.
fn keep_writing_until(
    s: &Server,
    stream: &str,
    next: &mut u64,
    limit: Duration,
    what: &str,
    done: impl Fn() -> bool,
) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "{what}");
        s.py(&["put", stream, "i"], &numbered(*next, 20));
        *next += 20;
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Every record boto3 reads of `stream` is in exactly one of these outputs; the outputs are
/// kept for a look when it is not.
fn assert_each_read_once(s: &Server, stream: &str, outs: &[&Path], dir: tempfile::TempDir) {
    let mut count: BTreeMap<(String, String), u32> = BTreeMap::new();
    for p in outs.iter().flat_map(|out| positions(out)) {
        *count.entry(p).or_default() += 1;
    }
    let want: BTreeSet<(String, String)> = (s.read(stream).iter())
        .map(|r| {
            let at = |f: &str| r[f].as_str().unwrap().to_string();
            (at("shard"), at("sequence"))
        })
        .collect();
    let repeated: Vec<_> = count.iter().filter(|(_, &n)| n > 1).take(5).collect();
    let got: BTreeSet<_> = count.keys().cloned().collect();
    if !repeated.is_empty() || got != want {
        let kept = dir.keep();
        panic!(
            "read twice: {repeated:?}; {} read, {} written; outputs kept in {}",
            got.len(),
            want.len(),
            kept.display()
        );
    }
}

/// Writes until the members share the shards two each: both may take shards before they see
/// each other, so it is judged by the records of the last round of writes.
fn share_two_each(s: &Server, stream: &str, next: &mut u64, a: &Member, b: &Member) {
    let limit = Duration::from_secs(30);
    let started = Instant::now();
    loop {
        assert!(
            started.elapsed() < limit,
            "the members did not share the shards"
        );
        let (from_a, from_b) = (positions(&a.out).len(), positions(&b.out).len());
        s.py(&["put", stream, "i"], &numbered(*next, 40));
        *next += 40;
        std::thread::sleep(Duration::from_millis(1500));
        let recent_a = shards_of(&positions(&a.out)[from_a..]);
        let recent_b = shards_of(&positions(&b.out)[from_b..]);
        if recent_a.len() == 2 && recent_b.len() == 2 && recent_a.is_disjoint(&recent_b) {
            return;
        }
    }
}

/// `weir lag --kcl-app` reads the members' table as a KCL one: every shard owned by the one
/// member left, its checkpoint at the last record it wrote of the shard, no time lag.
fn assert_lag_shows_one_owner_at_its_last_records(
    s: &Server,
    dynamo: &Server,
    stream: &str,
    app: &str,
    out: &Path,
) {
    // The member commits on its next tick.
    std::thread::sleep(Duration::from_millis(1000));
    let url = s.url(stream);
    let at = [
        "--dynamodb-endpoint-url",
        &dynamo.endpoint,
        "--format",
        "json",
    ];
    let out_lag = s.weir(&[&["lag", &url, "--kcl-app", app][..], &at[..]].concat());
    assert!(out_lag.status.success(), "{out_lag:?}");
    let report: Value = serde_json::from_slice(&out_lag.stdout).unwrap();
    let rows = report["shards"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{report}");
    let read = positions(out);
    for row in rows {
        let shard = row["shard"].as_str().unwrap();
        let last = read
            .iter()
            .rfind(|(s, _)| s == shard)
            .map(|(_, q)| q.as_str());
        assert_eq!(row["checkpoint"].as_str(), last, "{row}");
        assert_eq!(row["owner"], rows[0]["owner"], "{report}");
        assert!(row["owner"].is_string(), "{row}");
    }
}

/// SIGTERM: the member hands its shards over and exits 130.
fn stop(m: &mut Member) -> Duration {
    let started = Instant::now();
    let id = m.child.0.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &id])
        .status()
        .unwrap()
        .success());
    let status = m.child.0.wait().unwrap();
    let err = std::fs::read_to_string(&m.err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    started.elapsed()
}

/// Two members share a 4-shard stream: the first alone reads all four, the second joins and
/// is handed two, the first gets SIGTERM and hands its two over. Every record boto3 reads is
/// in exactly one member's output: a planned move repeats nothing.
#[test]
fn consume_members_share_a_stream_and_hand_shards_over_without_repeats() {
    let (Some(s), Some(dynamo)) = (kinesis_local(), dynalite()) else {
        return;
    };
    let stream = s.stream("members", 4);
    let app = format!("{stream}-app");
    let mut next = 0;
    s.py(&["put", &stream, "i"], &numbered(0, 200));
    next += 200;
    let dir = tempfile::tempdir().unwrap();
    let mut a = member(&s, &dynamo, &stream, &app, dir.path(), "a");
    super::wait_until("the first member did not read every shard", || {
        positions(&a.out).len() >= 200
    });
    assert_eq!(shards_of(&positions(&a.out)).len(), 4);
    let b = member(&s, &dynamo, &stream, &app, dir.path(), "b");
    let limit = Duration::from_secs(30);
    keep_writing_until(
        &s,
        &stream,
        &mut next,
        limit,
        "the second member was given no shard",
        || shards_of(&positions(&b.out)).len() == 2,
    );
    let took = stop(&mut a);
    eprintln!("SIGTERM: the member left in {took:?}");
    assert!(
        took < Duration::from_secs(5),
        "the first member took {took:?} to hand over"
    );
    keep_writing_until(
        &s,
        &stream,
        &mut next,
        limit,
        "the shards were not handed over",
        || shards_of(&positions(&b.out)).len() == 4,
    );
    let written = s.read(&stream).len();
    super::wait_until("not every record was read", || {
        positions(&a.out).len() + positions(&b.out).len() >= written
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_lag_shows_one_owner_at_its_last_records(&s, &dynamo, &stream, &app, &b.out);
    assert_each_read_once(&s, &stream, &[&a.out, &b.out], dir);
}

/// SIGKILL: the dead member's shards are taken once its heartbeat has stood still for the
/// lease time, from their last checkpoints; every record is read, and only records the dead
/// member had written come twice.
#[test]
fn a_killed_members_shards_are_taken_after_the_lease_time() {
    let (Some(s), Some(dynamo)) = (kinesis_local(), dynalite()) else {
        return;
    };
    let stream = s.stream("members-kill", 4);
    let app = format!("{stream}-app");
    let mut next = 0;
    let dir = tempfile::tempdir().unwrap();
    let a = member(&s, &dynamo, &stream, &app, dir.path(), "a");
    let mut b = member(&s, &dynamo, &stream, &app, dir.path(), "b");
    let limit = Duration::from_secs(30);
    share_two_each(&s, &stream, &mut next, &a, &b);
    b.child.0.kill().unwrap();
    b.child.0.wait().unwrap();
    let killed = Instant::now();
    let from_a = positions(&a.out).len();
    keep_writing_until(
        &s,
        &stream,
        &mut next,
        limit,
        "the dead member's shards were not taken",
        || shards_of(&positions(&a.out)[from_a..]).len() == 4,
    );
    let took = killed.elapsed();
    eprintln!("SIGKILL: the dead member's shards were read again after {took:?}");
    // The lease time (3 s), the ticks that see it pass and take the shards, a put's wait.
    assert!(took < Duration::from_secs(6), "taken after {took:?}");
    let written = s.read(&stream);
    super::wait_until("not every record was read", || {
        let read: BTreeSet<_> = positions(&a.out)
            .into_iter()
            .chain(positions(&b.out))
            .collect();
        read.len() >= written.len()
    });
    let by_b: BTreeSet<_> = positions(&b.out).into_iter().collect();
    let mut seen = BTreeSet::new();
    for p in positions(&a.out) {
        assert!(
            seen.insert(p.clone()) || by_b.contains(&p),
            "read twice: {p:?}"
        );
    }
}

/// What a member refuses: state per shard (not built), an end, a KCL application's table
/// (exit 2); and a DynamoDB out of reach (exit 4), never a run without its application.
#[test]
fn members_refuse_what_they_cannot_share_and_need_their_table() {
    let (Some(s), Some(dynamo)) = (kinesis_local(), dynalite()) else {
        return;
    };
    let stream = s.stream("members-refuse", 1);
    let url = s.url(&stream);
    let run = |args: &[&str], dynamo_at: &str| {
        let mut c = weir_std();
        aws_env(&mut c)
            .env("AWS_ENDPOINT_URL_DYNAMODB", dynamo_at)
            .args(args)
            .args(["--endpoint-url", &s.endpoint, "--timeout", "2s"])
            .output()
            .unwrap()
    };
    let app = format!("{stream}-app");
    for (args, says) in [
        (
            vec![
                "window",
                &url,
                "-G",
                &app,
                "--time",
                "t",
                "--tumbling",
                "1m",
                "--count",
            ],
            "not built",
        ),
        (vec!["consume", &url, "-G", &app, "-e"], "-e"),
        (
            vec!["consume", &url, "-G", &app, "--from", "-1h"],
            "beginning or end",
        ),
        (
            vec!["consume", &url, "-G", &app, "--checkpoint", "c", "-o", "o"],
            "lease",
        ),
    ] {
        let out = run(&args, &dynamo.endpoint);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // A KCL application's table: weir never takes its leases.
    let kcl = format!("{stream}-kcl");
    let leases = r#"[{"leaseKey": "shardId-000000000000", "checkpoint": "TRIM_HORIZON"}]"#;
    s.py(&["lease-table", &dynamo.endpoint, &kcl], leases);
    let out = run(&["consume", &url, "-G", &kcl], &dynamo.endpoint);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&kcl), "{err}");
    // Nothing answers at DynamoDB's endpoint.
    let out = run(&["consume", &url, "-G", &app], "http://127.0.0.1:9");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("DynamoDB"), "{err}");
}

/// Two members read on while a shard splits and two merge: the children get leases, are read
/// only once their parents are read to their end, and every record comes exactly once.
#[test]
fn members_follow_a_split_and_a_merge_made_while_they_run() {
    let (Some(s), Some(dynamo)) = (kinesis_local(), dynalite()) else {
        return;
    };
    let stream = s.stream("members-reshard", 4);
    let app = format!("{stream}-app");
    let dir = tempfile::tempdir().unwrap();
    let a = member(&s, &dynamo, &stream, &app, dir.path(), "a");
    let b = member(&s, &dynamo, &stream, &app, dir.path(), "b");
    let read = || positions(&a.out).len() + positions(&b.out).len();
    s.py(&["put", &stream, "i"], &numbered(0, 300));
    super::wait_until("the first records were not read", || read() >= 300);
    s.py(&["split", &stream, "shardId-000000000000"], "");
    s.py(&["put", &stream, "i"], &numbered(300, 300));
    // Shards 1 and 2 cover adjacent hash ranges.
    let merge = [
        "merge",
        &stream,
        "shardId-000000000001",
        "shardId-000000000002",
    ];
    s.py(&merge, "");
    s.py(&["put", &stream, "i"], &numbered(600, 300));
    assert_eq!(s.shards(&stream).len(), 7);
    super::wait_until("not every record was read", || read() >= 900);
    std::thread::sleep(Duration::from_millis(500));
    let read_from = shards_of(&[positions(&a.out), positions(&b.out)].concat());
    assert_eq!(read_from.len(), 7, "{read_from:?}");
    assert_each_read_once(&s, &stream, &[&a.out, &b.out], dir);
}

/// A member stalled past the lease time (SIGSTOP) is fenced: the other takes its shards, and
/// once it runs again (SIGCONT) its commits fail and it writes no record of the shards it
/// lost (the other member read them); it may be handed shards again by the plan.
#[test]
fn a_stalled_member_is_fenced_and_writes_nothing_of_what_it_lost() {
    let (Some(s), Some(dynamo)) = (kinesis_local(), dynalite()) else {
        return;
    };
    let stream = s.stream("members-stall", 4);
    let app = format!("{stream}-app");
    let mut next = 0;
    let dir = tempfile::tempdir().unwrap();
    let a = member(&s, &dynamo, &stream, &app, dir.path(), "a");
    let b = member(&s, &dynamo, &stream, &app, dir.path(), "b");
    share_two_each(&s, &stream, &mut next, &a, &b);
    let signal = |sig: &str| {
        let id = b.child.0.id().to_string();
        assert!(Command::new("kill")
            .args([sig, &id])
            .status()
            .unwrap()
            .success());
    };
    signal("-STOP");
    std::thread::sleep(Duration::from_millis(300));
    let at_stop = positions(&b.out).len();
    let from_a = positions(&a.out).len();
    let limit = Duration::from_secs(30);
    keep_writing_until(
        &s,
        &stream,
        &mut next,
        limit,
        "the stalled member's shards were not taken",
        || shards_of(&positions(&a.out)[from_a..]).len() == 4,
    );
    signal("-CONT");
    let resumed = Instant::now();
    while resumed.elapsed() < Duration::from_secs(3) {
        s.py(&["put", &stream, "i"], &numbered(next, 20));
        next += 20;
        std::thread::sleep(Duration::from_millis(300));
    }
    let by_a: BTreeSet<_> = positions(&a.out).into_iter().collect();
    let after: Vec<_> = positions(&b.out)[at_stop..].to_vec();
    let twice: Vec<_> = after.iter().filter(|p| by_a.contains(*p)).collect();
    assert!(
        twice.is_empty(),
        "written after SIGCONT and read by the other member too: {} of {}: {:?}",
        twice.len(),
        after.len(),
        &twice[..twice.len().min(3)]
    );
    let err = std::fs::read_to_string(&b.err).unwrap_or_default();
    assert!(!err.contains("panicked"), "{err}");
}

/// Shards go to a joining member and come back when it stops: the first member goes on from
/// where the second stood, not from where it had itself stopped, and nothing is read twice.
#[test]
fn shards_handed_back_go_on_from_where_the_other_member_stood() {
    let (Some(s), Some(dynamo)) = (kinesis_local(), dynalite()) else {
        return;
    };
    let stream = s.stream("members-back", 4);
    let app = format!("{stream}-app");
    let mut next = 0;
    let dir = tempfile::tempdir().unwrap();
    let a = member(&s, &dynamo, &stream, &app, dir.path(), "a");
    let limit = Duration::from_secs(30);
    keep_writing_until(
        &s,
        &stream,
        &mut next,
        limit,
        "the first member read nothing",
        || shards_of(&positions(&a.out)).len() == 4,
    );
    let mut b = member(&s, &dynamo, &stream, &app, dir.path(), "b");
    share_two_each(&s, &stream, &mut next, &a, &b);
    stop(&mut b);
    let from_a = positions(&a.out).len();
    keep_writing_until(
        &s,
        &stream,
        &mut next,
        limit,
        "the shards did not come back",
        || shards_of(&positions(&a.out)[from_a..]).len() == 4,
    );
    let written = s.read(&stream).len();
    super::wait_until("not every record was read", || {
        positions(&a.out).len() + positions(&b.out).len() >= written
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_each_read_once(&s, &stream, &[&a.out, &b.out], dir);
}
