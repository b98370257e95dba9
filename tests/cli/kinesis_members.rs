//! `-G APP` on a Kinesis source: consume members sharing a stream through their lease table
//! in dynalite, judged by boto3's read of the stream (every record, by shard and sequence).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::kinesis::{aws_env, dynalite, kinesis_local, s3rver, Server};
use super::{weir_std, Background};

/// How long a drill waits for the members to do what it expects.
const LIMIT: Duration = Duration::from_secs(30);

/// `n` records `{"i":I}` from `start`, keyed by `i`: spread over every shard.
fn numbered(start: u64, n: u64) -> String {
    (start..start + n)
        .map(|i| format!("{{\"i\":{i}}}\n"))
        .collect()
}

/// A member: its process, output and stderr files.
pub struct Member {
    pub child: Background,
    pub out: PathBuf,
    pub err: PathBuf,
}

impl Member {
    /// Waits for it to end on its own, failing the test with `what` after `LIMIT`.
    fn ended(&mut self, what: &str) -> (Option<i32>, String) {
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.0.try_wait().unwrap() {
                break status;
            }
            assert!(started.elapsed() < LIMIT, "{what}");
            std::thread::sleep(Duration::from_millis(200));
        };
        (status.code(), std::fs::read_to_string(&self.err).unwrap())
    }

    /// The (shard, sequence) of each record it wrote, in order.
    fn read(&self) -> Vec<(String, String)> {
        positions(&self.out)
    }

    /// Sends it `sig` (`-STOP`, `-TERM`...).
    pub fn signal(&self, sig: &str) {
        let id = self.child.0.id().to_string();
        let kill = Command::new("kill").args([sig, &id]).status();
        assert!(kill.unwrap().success());
    }

    /// SIGTERM: it hands its shards over and exits 130; how long that took.
    pub fn stop(&mut self) -> Duration {
        let started = Instant::now();
        self.signal("-TERM");
        let status = self.child.wait_within("the stopped member");
        let err = std::fs::read_to_string(&self.err).unwrap();
        assert_eq!(status.code(), Some(130), "{err}");
        started.elapsed()
    }
}

/// An application on a new stream: the servers, the stream, the app's name, the members'
/// files and the next record to write.
pub struct App {
    pub s: Server,
    pub dynamo: Server,
    /// Where an S3 state store is.
    pub s3: Server,
    pub stream: String,
    pub name: String,
    pub dir: tempfile::TempDir,
    next: u64,
}

impl App {
    /// A new stream of `shards` shards and an application for it; `None` without servers.
    pub fn new(name: &str, shards: u32) -> Option<App> {
        let (s, dynamo, s3) = (kinesis_local()?, dynalite()?, s3rver()?);
        let stream = s.stream(name, shards);
        Some(App {
            name: format!("{stream}-app"),
            stream,
            s,
            dynamo,
            s3,
            dir: tempfile::tempdir().unwrap(),
            next: 0,
        })
    }

    /// A consume member of the application, with a 3 s lease time.
    fn member(&self, name: &str) -> Member {
        self.spawn(name, &["consume", "-J"])
    }

    /// A member running `command` (with its flags) on the stream, with a 3 s lease time,
    /// its output to `NAME.ndjson`.
    pub fn spawn(&self, name: &str, command: &[&str]) -> Member {
        let dir = self.dir.path();
        let (out, err) = (
            dir.join(format!("{name}.ndjson")),
            dir.join(format!("{name}.err")),
        );
        let mut c = weir_std();
        aws_env(&mut c)
            .env("AWS_ENDPOINT_URL_DYNAMODB", &self.dynamo.endpoint)
            .env("AWS_ENDPOINT_URL_S3", &self.s3.endpoint)
            // s3rver knows only its own key; the other servers take any.
            .env("AWS_ACCESS_KEY_ID", "S3RVER")
            .env("AWS_SECRET_ACCESS_KEY", "S3RVER")
            .args(command)
            .args(["-q", &self.s.url(&self.stream), "-G", &self.name])
            .args(["--lease-time", "3s", "--endpoint-url", &self.s.endpoint])
            .args(["-o", out.to_str().unwrap()])
            .stderr(std::fs::File::create(&err).unwrap());
        Member {
            child: Background(c.spawn().unwrap()),
            out,
            err,
        }
    }

    /// Writes the next `n` records.
    fn put(&mut self, n: u64) {
        self.s
            .py(&["put", &self.stream, "i"], &numbered(self.next, n));
        self.next += n;
    }

    /// Waits until `done`, writing a few records now and then so that every shard has some
    /// to give; fails with `what` after `LIMIT`.
    fn keep_writing_until(&mut self, what: &str, done: impl Fn() -> bool) {
        let started = Instant::now();
        while !done() {
            assert!(started.elapsed() < LIMIT, "{what}");
            self.put(20);
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// Writes until the members share the shards two each: both may take shards before they
    /// see each other, so it is judged by the records of the last round of writes.
    fn share_two_each(&mut self, a: &Member, b: &Member) {
        let started = Instant::now();
        loop {
            assert!(
                started.elapsed() < LIMIT,
                "the members did not share the shards"
            );
            let (from_a, from_b) = (a.read().len(), b.read().len());
            self.put(40);
            std::thread::sleep(Duration::from_millis(1500));
            let recent_a = shards_of(&a.read()[from_a..]);
            let recent_b = shards_of(&b.read()[from_b..]);
            if recent_a.len() == 2 && recent_b.len() == 2 && recent_a.is_disjoint(&recent_b) {
                return;
            }
        }
    }

    /// Every record boto3 reads of the stream, by shard and sequence.
    fn written(&self) -> BTreeSet<(String, String)> {
        (self.s.read(&self.stream).iter())
            .map(|r| {
                let at = |f: &str| r[f].as_str().unwrap().to_string();
                (at("shard"), at("sequence"))
            })
            .collect()
    }

    /// Waits until the members wrote as many records as the stream has, and a little more
    /// for a repeat to show.
    fn wait_all_read(&self, members: &[&Member]) {
        let written = self.written().len();
        super::wait_until("not every record was read", || {
            members.iter().map(|m| m.read().len()).sum::<usize>() >= written
        });
        std::thread::sleep(Duration::from_millis(500));
    }

    /// Every record of the stream is in exactly one member's output; the outputs are kept
    /// for a look when it is not.
    fn assert_each_read_once(self, members: &[&Member]) {
        let mut count: BTreeMap<(String, String), u32> = BTreeMap::new();
        for p in members.iter().flat_map(|m| m.read()) {
            *count.entry(p).or_default() += 1;
        }
        let want = self.written();
        let repeated: Vec<_> = count.iter().filter(|(_, &n)| n > 1).take(5).collect();
        let got: BTreeSet<_> = count.keys().cloned().collect();
        if !repeated.is_empty() || got != want {
            let kept = self.dir.keep();
            panic!(
                "read twice: {repeated:?}; {} read, {} written; outputs kept in {}",
                got.len(),
                want.len(),
                kept.display()
            );
        }
    }

    /// `weir lag --kcl-app` reads the members' table as a KCL one: every shard owned by the
    /// one member left, `last`, its checkpoint at the last record that member wrote of it.
    fn assert_lag_shows_one_owner_at_its_last_records(&self, last: &Member) {
        // The member commits on its next tick.
        std::thread::sleep(Duration::from_millis(1000));
        let url = self.s.url(&self.stream);
        let lag = ["lag", &url, "--kcl-app", &self.name, "--format", "json"];
        let out = self.s.weir(
            &[
                &lag[..],
                &["--dynamodb-endpoint-url", &self.dynamo.endpoint],
            ]
            .concat(),
        );
        assert!(out.status.success(), "{out:?}");
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let rows = report["shards"].as_array().unwrap();
        assert_eq!(rows.len(), 4, "{report}");
        let read = last.read();
        for row in rows {
            let shard = row["shard"].as_str().unwrap();
            let at = read
                .iter()
                .rfind(|(s, _)| s == shard)
                .map(|(_, q)| q.as_str());
            assert_eq!(row["checkpoint"].as_str(), at, "{row}");
            assert_eq!(row["owner"], rows[0]["owner"], "{report}");
            assert!(row["owner"].is_string(), "{row}");
        }
    }

    /// Splits shard 0 in two.
    pub fn split_0(&self) {
        (self.s).py(&["split", &self.stream, "shardId-000000000000"], "");
    }

    /// Merges shards 1 and 2, which cover adjacent hash ranges.
    pub fn merge_1_and_2(&self) {
        let merge = [
            "merge",
            &self.stream,
            "shardId-000000000001",
            "shardId-000000000002",
        ];
        self.s.py(&merge, "");
    }

    /// The owner of each shard, as `weir lag --kcl-app` reads the table.
    pub fn owners(&self) -> Vec<String> {
        let url = self.s.url(&self.stream);
        let lag = ["lag", &url, "--kcl-app", &self.name, "--format", "json"];
        let dynamo = ["--dynamodb-endpoint-url", &self.dynamo.endpoint];
        let out = self.s.weir(&[&lag[..], &dynamo[..]].concat());
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let rows = report["shards"].as_array().cloned().unwrap_or_default();
        rows.iter()
            .map(|r| r["owner"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// `weir ARGS`, with DynamoDB at `dynamo_at` and a 2 s timeout.
    fn run(&self, args: &[&str], dynamo_at: &str) -> Output {
        let mut c = weir_std();
        aws_env(&mut c)
            .env("AWS_ENDPOINT_URL_DYNAMODB", dynamo_at)
            .args(args)
            .args(["--endpoint-url", &self.s.endpoint, "--timeout", "2s"])
            .output()
            .unwrap()
    }
}

/// The (shard, sequence) of each record in an output file, in order.
fn positions(out: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(out).unwrap_or_default();
    // A line still being written is not counted yet.
    let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    whole
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|e| {
            let at = |f: &str| e[f].as_str().unwrap().to_string();
            (at("shard"), at("sequence"))
        })
        .collect()
}

fn shards_of(positions: &[(String, String)]) -> BTreeSet<String> {
    positions.iter().map(|(s, _)| s.clone()).collect()
}

/// Two members share a 4-shard stream: the first alone reads all four, the second joins and
/// is handed two, the first gets SIGTERM and hands its two over. Every record boto3 reads is
/// in exactly one member's output: a planned move repeats nothing.
#[test]
fn consume_members_share_a_stream_and_hand_shards_over_without_repeats() {
    let Some(mut app) = App::new("members", 4) else {
        return;
    };
    app.put(200);
    let mut a = app.member("a");
    super::wait_until("the first member did not read every shard", || {
        a.read().len() >= 200
    });
    assert_eq!(shards_of(&a.read()).len(), 4);
    let b = app.member("b");
    app.keep_writing_until("the second member was given no shard", || {
        shards_of(&b.read()).len() == 2
    });
    let took = a.stop();
    eprintln!("SIGTERM: the member left in {took:?}");
    assert!(
        took < Duration::from_secs(5),
        "the first member took {took:?} to hand over"
    );
    app.keep_writing_until("the shards were not handed over", || {
        shards_of(&b.read()).len() == 4
    });
    app.wait_all_read(&[&a, &b]);
    app.assert_lag_shows_one_owner_at_its_last_records(&b);
    app.assert_each_read_once(&[&a, &b]);
}

/// SIGKILL: the dead member's shards are taken once its heartbeat has stood still for the
/// lease time, from their last checkpoints; every record is read, and only records the dead
/// member had written come twice.
#[test]
fn a_killed_members_shards_are_taken_after_the_lease_time() {
    let Some(mut app) = App::new("members-kill", 4) else {
        return;
    };
    let a = app.member("a");
    let mut b = app.member("b");
    app.share_two_each(&a, &b);
    b.child.0.kill().unwrap();
    b.child.0.wait().unwrap();
    let killed = Instant::now();
    let from_a = a.read().len();
    app.keep_writing_until("the dead member's shards were not taken", || {
        shards_of(&a.read()[from_a..]).len() == 4
    });
    let took = killed.elapsed();
    eprintln!("SIGKILL: the dead member's shards were read again after {took:?}");
    // The lease time (3 s), the ticks that see it pass and take the shards, a put's wait.
    assert!(took < Duration::from_secs(6), "taken after {took:?}");
    let written = app.written();
    super::wait_until("not every record was read", || {
        let read: BTreeSet<_> = a.read().into_iter().chain(b.read()).collect();
        read.len() >= written.len()
    });
    let by_b: BTreeSet<_> = b.read().into_iter().collect();
    let mut seen = BTreeSet::new();
    for p in a.read() {
        assert!(
            seen.insert(p.clone()) || by_b.contains(&p),
            "read twice: {p:?}"
        );
    }
}

/// What a member refuses: state per shard without a state store, an end, a KCL
/// application's table, or the table of an application of another stream (exit 2); and a
/// DynamoDB out of reach (exit 4), never a run without its application.
#[test]
fn members_refuse_what_they_cannot_share_and_need_their_table() {
    let Some(app) = App::new("members-refuse", 1) else {
        return;
    };
    let (url, name, dynamo) = (app.s.url(&app.stream), &app.name, &app.dynamo.endpoint);
    let window = [
        "window",
        &url,
        "-G",
        name,
        "--time",
        "t",
        "--tumbling",
        "1m",
        "--count",
    ];
    for (args, says) in [
        (&window[..], "--state-store"),
        (&["consume", &url, "-G", name, "--to", "-1m"][..], "--to"),
        (
            &["consume", &url, "-G", name, "--from", "-1h"][..],
            "beginning or end",
        ),
        (
            &["consume", &url, "-G", name, "--checkpoint", "c", "-o", "o"][..],
            "lease",
        ),
    ] {
        let out = app.run(args, dynamo);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // A KCL application's table: weir never takes its leases.
    let kcl = format!("{}-kcl", app.stream);
    let leases = r#"[{"leaseKey": "shardId-000000000000", "checkpoint": "TRIM_HORIZON"}]"#;
    app.s.py(&["lease-table", dynamo, &kcl], leases);
    let out = app.run(&["consume", &url, "-G", &kcl], dynamo);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&kcl), "{err}");
    // The application's table is marked with its stream: a member on another stream is
    // refused before it takes a lease there.
    let mut first = app.member("first");
    let started = Instant::now();
    while !app.owners().iter().any(|o| !o.is_empty()) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no lease taken"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    first.stop();
    let other = app.s.stream("members-refuse-other", 1);
    let out = app.run(&["consume", &app.s.url(&other), "-G", name], dynamo);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("reads stream '{}'", app.stream)),
        "{err}"
    );
    // Nothing answers at DynamoDB's endpoint.
    let out = app.run(&["consume", &url, "-G", name], "http://127.0.0.1:9");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("DynamoDB"), "{err}");
}

/// Two members read on while a shard splits and two merge: the children get leases, are read
/// only once their parents are read to their end, and every record comes exactly once.
#[test]
fn members_follow_a_split_and_a_merge_made_while_they_run() {
    let Some(mut app) = App::new("members-reshard", 4) else {
        return;
    };
    let (a, b) = (app.member("a"), app.member("b"));
    app.put(300);
    let read = || a.read().len() + b.read().len();
    super::wait_until("the first records were not read", || read() >= 300);
    app.split_0();
    app.put(300);
    app.merge_1_and_2();
    app.put(300);
    assert_eq!(app.s.shards(&app.stream).len(), 7);
    app.wait_all_read(&[&a, &b]);
    let read_from = shards_of(&[a.read(), b.read()].concat());
    assert_eq!(read_from.len(), 7, "{read_from:?}");
    app.assert_each_read_once(&[&a, &b]);
}

/// A member stalled past the lease time (SIGSTOP) is fenced: the other takes its shards, and
/// once it runs again (SIGCONT) its commits fail and it writes no record of the shards it
/// lost (the other member read them); it may be handed shards again by the plan.
#[test]
fn a_stalled_member_is_fenced_and_writes_nothing_of_what_it_lost() {
    let Some(mut app) = App::new("members-stall", 4) else {
        return;
    };
    let (a, b) = (app.member("a"), app.member("b"));
    app.share_two_each(&a, &b);
    b.signal("-STOP");
    std::thread::sleep(Duration::from_millis(300));
    let at_stop = b.read().len();
    let from_a = a.read().len();
    app.keep_writing_until("the stalled member's shards were not taken", || {
        shards_of(&a.read()[from_a..]).len() == 4
    });
    b.signal("-CONT");
    let resumed = Instant::now();
    while resumed.elapsed() < Duration::from_secs(3) {
        app.put(20);
        std::thread::sleep(Duration::from_millis(300));
    }
    let by_a: BTreeSet<_> = a.read().into_iter().collect();
    let after: Vec<_> = b.read()[at_stop..].to_vec();
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
    let Some(mut app) = App::new("members-back", 4) else {
        return;
    };
    let a = app.member("a");
    app.keep_writing_until("the first member read nothing", || {
        shards_of(&a.read()).len() == 4
    });
    let mut b = app.member("b");
    app.share_two_each(&a, &b);
    b.stop();
    let from_a = a.read().len();
    app.keep_writing_until("the shards did not come back", || {
        shards_of(&a.read()[from_a..]).len() == 4
    });
    app.wait_all_read(&[&a, &b]);
    app.assert_each_read_once(&[&a, &b]);
}

/// A member that leaves hands its shards only to members it saw beat: a heartbeat item left
/// by a member killed long ago (a ghost, first seen less than a lease time before) gets
/// nothing. A member that watches the ghost for a lease time removes its item.
#[test]
fn a_leaving_member_hands_nothing_to_a_dead_member_and_dead_members_are_removed() {
    let Some(app) = App::new("ghost", 2) else {
        return;
    };
    let dynamo = app.dynamo.endpoint.clone();
    let mut first = app.member("first");
    let started = std::time::Instant::now();
    while app.owners().iter().any(|o| o.is_empty()) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "shards not taken"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    app.s
        .py(&["ghost-member", &dynamo, &app.name, "ghost", "5"], "");
    // A few of its ticks see the ghost, well within a lease time (3 s).
    std::thread::sleep(Duration::from_millis(1000));
    first.stop();
    let owners = app.owners();
    assert!(
        !owners.iter().any(|o| o == "ghost"),
        "handed to the ghost: {owners:?}"
    );
    let members = || app.s.py(&["members", &dynamo, &app.name], "");
    assert!(members().contains("ghost"));
    let mut second = app.member("second");
    let started = std::time::Instant::now();
    while members().contains("ghost") {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the ghost's heartbeat stays: {}",
            members()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    second.stop();
}

/// `-e` on members: two members of a 4-shard stream each read their shards to what had
/// arrived by their start, and end (exit 0) once every shard is read to it: between them every
/// record once, none written after their start; `window` members write their last windows.
#[test]
fn members_with_e_end_once_every_shard_is_read_to_their_start() {
    let Some(mut app) = App::new("members-end", 4) else {
        return;
    };
    app.put(400);
    let mut a = app.spawn("a", &["consume", "-J", "-e"]);
    let mut b = app.spawn("b", &["consume", "-J", "-e"]);
    for m in [&mut a, &mut b] {
        let (code, err) = m.ended("a member did not end");
        assert_eq!(code, Some(0), "{err}");
    }
    app.assert_each_read_once(&[&a, &b]);
}

/// `window -G -e`: members end with their shards' last windows written: the rows, upserted on
/// (key, window_start), count every record once.
#[test]
fn window_members_with_e_write_their_last_windows() {
    let Some(mut app) = App::new("window-end", 2) else {
        return;
    };
    app.put(300);
    let dir = app.dir.path().join("states");
    let window = [
        "window",
        "--time",
        "timestamp",
        "--key",
        "value.i",
        "--tumbling",
        "1h",
        "--count",
        "-e",
        "--state-store",
    ];
    let store = dir.to_str().unwrap();
    let mut a = app.spawn("wa", &[&window[..], &[store]].concat());
    let mut b = app.spawn("wb", &[&window[..], &[store]].concat());
    // Upserted on (key, window_start): a shard handed on at the end is finished again by
    // its next owner, with the same rows.
    let mut rows: BTreeMap<(String, String), u64> = BTreeMap::new();
    for m in [&mut a, &mut b] {
        let (code, err) = m.ended("a window member did not end");
        assert_eq!(code, Some(0), "{err}");
        for line in std::fs::read_to_string(&m.out).unwrap().lines() {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            let at = (row["value_i"].to_string(), row["window_start"].to_string());
            rows.insert(at, row["count"].as_u64().unwrap());
        }
    }
    assert_eq!(rows.len(), 300, "one row per key");
    assert_eq!(rows.values().sum::<u64>(), 300);
}
