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
    let mut count: BTreeMap<(String, String), u32> = BTreeMap::new();
    for p in positions(&a.out).into_iter().chain(positions(&b.out)) {
        *count.entry(p).or_default() += 1;
    }
    let want: BTreeSet<(String, String)> = (s.read(&stream).iter())
        .map(|r| {
            (
                r["shard"].as_str().unwrap().to_string(),
                r["sequence"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let repeated: Vec<_> = count.iter().filter(|(_, &n)| n > 1).take(5).collect();
    if !repeated.is_empty() {
        panic!(
            "read twice: {repeated:?}; outputs kept in {}",
            dir.keep().display()
        );
    }
    assert_eq!(count.keys().cloned().collect::<BTreeSet<_>>(), want);
    drop(b);
}
