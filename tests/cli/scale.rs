//! Several weir instances as one consumer group on a 4-partition topic, while records keep
//! arriving: members join, one is killed and started again, one stops and another joins.
//! Every partition's state follows it through the changelog topic, so the rows of all the
//! instances, upserted, equal one uninterrupted instance's.
//!
//! The members' moves are spaced a few seconds apart, and the group is never left empty: the
//! test broker's group coordinator has been seen to stall a group for good when members come
//! and go during a rebalance, and when a member joins a group that every member has left. So
//! the windows fire on the watermark, not at an end of input: the last records of every key
//! are far ahead in event time, and the rows compared are those of the windows before them.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::kafka::{broker, caught_up, group_turn, Broker};
use super::weir_std;

/// How often each member saves its partitions' states.
const INTERVAL: &str = "500ms";
/// How many intervals' output a killed member may have written since its last save landed.
const SAVES_IN_FLIGHT: usize = 3;

/// How long the test broker may take to answer: busy with every other test, it has been seen
/// to take longer than the default 10 s over a metadata request.
const BROKER_TIMEOUT: &str = "60s";

/// The partitions of every topic here.
const PARTITIONS: usize = 4;

/// One run of a member: its process, its output file and its stderr.
struct Member {
    name: String,
    child: Child,
    out: PathBuf,
    err: PathBuf,
    /// Killed or stopped.
    gone: bool,
}

/// A group of instances of one command over one topic.
struct Group<'a> {
    b: &'a Broker,
    topic: String,
    group: String,
    command: Vec<String>,
    dir: tempfile::TempDir,
    members: Vec<Member>,
    /// The members that may repeat rows another wrote: see `check_duplicates`.
    may_repeat: BTreeSet<String>,
}

impl<'a> Group<'a> {
    fn new(b: &'a Broker, topic: &str, command: &[&str]) -> Group<'a> {
        Group {
            b,
            topic: topic.to_string(),
            group: format!("scale-{topic}"),
            command: command.iter().map(|s| s.to_string()).collect(),
            dir: tempfile::tempdir().unwrap(),
            members: Vec::new(),
            may_repeat: BTreeSet::new(),
        }
    }

    fn member_command(
        &self,
        name: &str,
        group: &str,
        extra: &[&str],
    ) -> (Command, PathBuf, PathBuf) {
        let out = self.dir.path().join(format!("{name}.ndjson"));
        let err = self.dir.path().join(format!("{name}.stderr"));
        let mut c = weir_std();
        c.args(&self.command)
            .arg(self.b.url(&self.topic))
            .args(["-G", group, "--from", "beginning"])
            .args(["--checkpoint-interval", INTERVAL])
            .args(["-X", "session.timeout.ms=6000"])
            .args(["--timeout", BROKER_TIMEOUT])
            .args(extra)
            .args(["-o", out.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&err).unwrap());
        (c, out, err)
    }

    /// Starts a member that reads on until it is stopped. Those running may give partitions
    /// to it before they have let them go (see `check_duplicates`).
    fn join(&mut self, name: &str) {
        let running = self.members.iter().filter(|m| !m.gone);
        self.may_repeat.extend(running.map(|m| m.name.clone()));
        let (mut c, out, err) = self.member_command(name, &self.group.clone(), &[]);
        self.members.push(Member {
            name: name.to_string(),
            child: c.spawn().unwrap(),
            out,
            err,
            gone: false,
        });
    }

    fn member(&mut self, name: &str) -> &mut Member {
        self.members.iter_mut().find(|m| m.name == name).unwrap()
    }

    /// SIGKILL: the member saves nothing more.
    fn kill(&mut self, name: &str) {
        let m = self.member(name);
        m.child.kill().unwrap();
        m.child.wait().unwrap();
        m.gone = true;
        self.may_repeat.insert(name.to_string());
    }

    /// SIGTERM: the member saves its partitions' states and leaves (exit 130).
    fn stop(&mut self, name: &str) {
        let m = self.member(name);
        let status = Command::new("kill")
            .args(["-TERM", &m.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let status = m.child.wait().unwrap();
        m.gone = true;
        let err = std::fs::read_to_string(&m.err).unwrap();
        assert_eq!(status.code(), Some(130), "member {}: {err}", m.name);
    }

    /// A member that reads to the end (-e); it must succeed, and its group must have
    /// committed every partition's end.
    fn finish(&mut self, name: &str, group: &str) -> Vec<String> {
        for attempt in 1.. {
            // Each attempt in a group of its own, from the beginning.
            let group = format!("{group}-{attempt}");
            let (mut c, out, err) = self.member_command(name, &group, &["-e"]);
            let mut child = c.spawn().unwrap();
            let started = Instant::now();
            let status = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break status;
                }
                if started.elapsed() > Duration::from_secs(180) {
                    let _ = child.kill();
                    panic!("{name} did not finish in 180 s");
                }
                std::thread::sleep(Duration::from_millis(50));
            };
            let err = std::fs::read_to_string(&err).unwrap();
            // The test broker, busy with the other tests, has been seen to time out a
            // metadata request (exit 4, nothing written), and to end a member's read short
            // of some partitions: such a run is tried again.
            if status.code() == Some(4) && lines(&out).is_empty() && attempt < 5 {
                std::thread::sleep(Duration::from_secs(3));
                continue;
            }
            assert!(status.success(), "{name}: {status:?}: {err}");
            if !caught_up(self.b, &self.topic, &group, PARTITIONS) && attempt < 5 {
                eprintln!("{name} ended short of the topic's end; tried again");
                continue;
            }
            return lines(&out);
        }
        unreachable!("the loop returns or panics")
    }

    /// Each member's output lines, by member name.
    fn outputs(&self) -> Vec<(String, Vec<String>)> {
        self.members
            .iter()
            .map(|m| (m.name.clone(), lines(&m.out)))
            .collect()
    }

    /// What each member said on stderr, for a failure's message.
    fn stderr(&self) -> String {
        self.members
            .iter()
            .map(|m| {
                let err = std::fs::read_to_string(&m.err).unwrap_or_default();
                format!("--- {}:\n{err}", m.name)
            })
            .collect()
    }

    /// The members that said the group took partitions from them for missed heartbeats (the
    /// test broker, busy with every other test, can be that slow): like the killed member,
    /// their partitions' next owners repeat their output since the last save.
    fn lost_partitions(&self) -> Vec<String> {
        self.members
            .iter()
            .filter(|m| {
                std::fs::read_to_string(&m.err)
                    .unwrap_or_default()
                    .contains("which it had not heard from in time")
            })
            .map(|m| m.name.clone())
            .collect()
    }

    /// Only the output of the members that may repeat comes twice: every duplicate is a row
    /// one of them wrote and a partition's next owner wrote again, at most `SAVES_IN_FLIGHT`
    /// times `one_interval` of them each (`one_interval` is the output of one checkpoint
    /// interval of records at the producing rate; on a loaded host a save is due every
    /// interval but may land a little later, and a member catching up reads faster than the
    /// producer).
    ///
    /// Those are the killed member (its output since its last save), the members the group
    /// gave up on for missed heartbeats, and the members running when another joined. Kafka's
    /// coordinator answers no member's JoinGroup until every member has joined again, so the
    /// leader assigns from what each owns now, and a partition moves only once its owner has
    /// saved it and let it go. The test broker (Tansu) answers at once, and its leader assigns
    /// from what each member owned at its own last join: a partition a member was given since
    /// then can go to the newcomer while it still reads it, and both write its rows until its
    /// next heartbeat tells it of the rebalance. A member that stops, or one that joins
    /// last, repeats nothing.
    fn check_duplicates(
        &self,
        outputs: &[(String, Vec<String>)],
        key: impl Fn(&Value) -> String,
        one_interval: usize,
    ) {
        let mut repeaters = self.may_repeat.clone();
        repeaters.extend(self.lost_partitions());
        let dups = duplicated(outputs, key);
        assert!(
            dups.len() <= SAVES_IN_FLIGHT * one_interval * repeaters.len(),
            "{} rows written twice, more than {SAVES_IN_FLIGHT} intervals' {one_interval} for each of {repeaters:?}",
            dups.len()
        );
        for (k, writers) in &dups {
            assert!(
                writers.len() == 2 && writers.iter().any(|w| repeaters.contains(w)),
                "{k} written by {writers:?}: only the last rows of {repeaters:?} may come twice\n{}",
                self.stderr()
            );
        }
        let b_rows = outputs
            .iter()
            .find(|(n, _)| n == "b")
            .map_or(0, |(_, r)| r.len());
        eprintln!(
            "{} rows written twice, of the {b_rows} the killed member wrote; {repeaters:?} may repeat",
            dups.len()
        );
    }

    /// The sequence every test goes through, while `producing` writes the records: three
    /// members join; b is killed and, once the group has moved its partitions, started again
    /// as b2; c stops and d joins; when the records are all there and the members' output is
    /// `complete` (given the reference's, `reference` below), they stop. Returns every run's
    /// output, and the reference's.
    #[allow(clippy::type_complexity)]
    fn run(
        &mut self,
        mut producing: Child,
        complete: impl Fn(&[String], &[(String, Vec<String>)]) -> bool,
    ) -> (Vec<(String, Vec<String>)>, Vec<String>) {
        for name in ["a", "b", "c"] {
            self.join(name);
            std::thread::sleep(Duration::from_secs(1));
        }
        std::thread::sleep(Duration::from_secs(3));
        self.kill("b");
        // The session timeout (6 s), then the rebalance that gives b's partitions away.
        std::thread::sleep(Duration::from_secs(9));
        self.join("b2");
        std::thread::sleep(Duration::from_secs(4));
        self.stop("c");
        std::thread::sleep(Duration::from_secs(4));
        self.join("d");
        assert!(producing.wait().unwrap().success(), "the producer failed");
        let reference = self.reference();
        let started = Instant::now();
        while !complete(&reference, &self.outputs()) {
            // A loaded host has needed more than a minute for the group to settle.
            if started.elapsed() > Duration::from_secs(150) {
                for name in ["a", "b2", "d"] {
                    let _ = self.member(name).child.kill();
                }
                let written: Vec<(String, usize)> = self
                    .outputs()
                    .into_iter()
                    .map(|(n, rows)| (n, rows.len()))
                    .collect();
                panic!(
                    "the members' output is incomplete 150 s after the last record (rows written: {written:?}; the reference's: {})\n{}",
                    reference.len(),
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        for name in ["a", "b2", "d"] {
            self.stop(name);
        }
        (self.outputs(), reference)
    }

    /// One uninterrupted member of a group of its own, over the same records.
    fn reference(&mut self) -> Vec<String> {
        let group = format!("{}-reference", self.group);
        self.finish("reference", &group)
    }
}

fn lines(path: &PathBuf) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// `weir replay FILE --rate` into `topic`, keyed by `key`: records that keep arriving.
fn produce_while(
    b: &Broker,
    topic: &str,
    records: &str,
    key: &str,
    rate: &str,
) -> (Child, tempfile::NamedTempFile) {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(records.as_bytes()).unwrap();
    let child = weir_std()
        .args(["replay", "-q", "--key", key, "--rate", rate])
        .arg(file.path())
        .args(["-o", &b.url(topic)])
        .spawn()
        .unwrap();
    (child, file)
}

/// The duplicated rows of `outputs` (by `key`), each with the members that wrote it.
fn duplicated(
    outputs: &[(String, Vec<String>)],
    key: impl Fn(&Value) -> String,
) -> BTreeMap<String, Vec<String>> {
    let mut writers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, rows) in outputs {
        for row in rows {
            let v: Value = serde_json::from_str(row).unwrap();
            writers.entry(key(&v)).or_default().push(name.clone());
        }
    }
    writers.retain(|_, w| w.len() > 1);
    writers
}

#[test]
fn window_members_that_join_leave_and_die_give_the_rows_of_one() {
    let Some(b) = broker() else { return };
    let _turn = group_turn();
    let topic = b.topic("scale-window", 4);
    // 37 keys, times 50 ms apart with up to 400 ms of disorder: nothing is late at --delay 1s.
    // Then a record of each key an hour ahead, so that every window before it fires.
    let t0 = 1_767_225_600_000u64;
    let mut records = String::new();
    let n = 60_000u64;
    for i in 0..n {
        let jitter = (i * 7919) % 800;
        let t = t0 + i * 50 + jitter;
        records.push_str(&format!(
            "{{\"k\":\"k{}\",\"t\":{t},\"v\":{}}}\n",
            i % 37,
            i % 1000
        ));
    }
    let ahead = t0 + n * 50 + 3_600_000;
    for k in 0..37 {
        records.push_str(&format!("{{\"k\":\"k{k}\",\"t\":{ahead},\"v\":0}}\n"));
    }
    let (producing, _file) = produce_while(&b, &topic, &records, "k", "2500/s");
    let mut group = Group::new(
        &b,
        &topic,
        &[
            "window",
            "-q",
            "--time",
            "value.t",
            "--time-format",
            "ms",
            "--key",
            "value.k",
            "--tumbling",
            "10s",
            "--delay",
            "1s",
            "--count",
            "--sum",
            "value.v",
        ],
    );
    let upsert_key = |r: &Value| format!("{} {}", r["value_k"], r["window_start"]);
    // The reference's rows but those of the windows an hour ahead, which fire only at its end.
    let rows_before = |reference: &[String]| -> BTreeMap<String, String> {
        reference
            .iter()
            .map(|l| (serde_json::from_str::<Value>(l).unwrap(), l))
            .filter(|(r, _)| r["sum_value_v"] != 0)
            .map(|(r, l)| (upsert_key(&r), l.clone()))
            .collect()
    };
    let (outputs, reference) = group.run(producing, |reference, outputs| {
        let want = rows_before(reference);
        let got: BTreeSet<String> = outputs
            .iter()
            .flat_map(|(_, rows)| rows)
            .map(|l| upsert_key(&serde_json::from_str(l).unwrap()))
            .collect();
        want.keys().all(|k| got.contains(k))
    });
    let want = rows_before(&reference);
    // 3,000 s of event time: 300 windows of each key.
    assert!(want.len() >= 300 * 37, "{} rows", want.len());
    // The reference member's partitions have a watermark each; a run without -G holds one
    // over all four. No record is late by either, so their rows are the same.
    let plain = super::weir()
        .args(&group.command)
        .arg(b.url(&topic))
        .args(["--from", "beginning", "-e", "--timeout", BROKER_TIMEOUT])
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap();
    assert!(plain.status.success(), "{plain:?}");
    assert_eq!(rows_before(&super::stdout_lines(&plain)), want);
    let mut table: BTreeMap<String, String> = BTreeMap::new();
    for (name, rows) in &outputs {
        for row in rows {
            let k = upsert_key(&serde_json::from_str(row).unwrap());
            assert_eq!(
                want.get(&k),
                Some(row),
                "{name} wrote a row unlike the reference's"
            );
            table.insert(k, row.clone());
        }
    }
    assert_eq!(table.len(), want.len(), "rows missing");
    // One interval: 1,250 records at 2,500/s, 62.5 s of event time, so at most 8 windows of
    // each of the 37 keys.
    group.check_duplicates(&outputs, upsert_key, 8 * 37);
}

#[test]
fn dedupe_members_that_join_leave_and_die_pass_each_id_once() {
    let Some(b) = broker() else { return };
    let _turn = group_turn();
    let topic = b.topic("scale-dedupe", 4);
    // 30,000 ids, each sent one to three times within two seconds of event time.
    let t0 = 1_767_225_600_000u64;
    let mut records = String::new();
    for i in 0..50_000u64 {
        let id = if i % 5 < 3 {
            i
        } else {
            i.saturating_sub(1 + (i * 31) % 40)
        };
        let t = t0 + i * 40;
        records.push_str(&format!("{{\"id\":\"e{id}\",\"t\":{t},\"n\":{i}}}\n"));
    }
    let (producing, _file) = produce_while(&b, &topic, &records, "id", "2000/s");
    let mut group = Group::new(
        &b,
        &topic,
        &[
            "dedupe",
            "-q",
            "--id",
            "value.id",
            "--time",
            "value.t",
            "--time-format",
            "ms",
            "--horizon",
            "1m",
        ],
    );
    let passed = |outputs: &[(String, Vec<String>)]| -> BTreeSet<String> {
        outputs
            .iter()
            .flat_map(|(_, rows)| rows.iter().cloned())
            .collect()
    };
    let (outputs, reference) = group.run(producing, |reference, outputs| {
        passed(outputs).len() >= reference.len()
    });
    let reference: BTreeSet<String> = reference.into_iter().collect();
    let position = |r: &Value| format!("{} {}", r["partition"], r["offset"]);
    let mut passed: BTreeSet<String> = BTreeSet::new();
    for (name, rows) in &outputs {
        for row in rows {
            assert!(
                reference.contains(row),
                "{name} passed a record the reference dropped: {row}"
            );
            passed.insert(row.clone());
        }
    }
    assert_eq!(
        passed.len(),
        reference.len(),
        "records the reference passed are missing"
    );
    // Each id once, across every member.
    let ids: BTreeSet<String> = passed
        .iter()
        .map(|r| serde_json::from_str::<Value>(r).unwrap()["value"]["id"].to_string())
        .collect();
    assert_eq!(ids.len(), passed.len(), "an id passed twice");
    // One interval: 1,000 records at 2,000/s.
    group.check_duplicates(&outputs, position, 1_000);
}

/// A partition's state larger than a Kafka record is saved in parts, restored whole by the
/// next member, and the parts of an earlier save are deleted once a newer one is whole.
#[test]
fn a_large_state_is_saved_in_parts_and_restored_whole() {
    let Some(b) = broker() else { return };
    let _turn = group_turn();
    let topic = b.topic("scale-parts", 2);
    let group = format!("parts-{topic}");
    let mut records = String::new();
    for i in 0..120_000u64 {
        records.push_str(&format!(
            "{{\"id\":\"e{i}\",\"t\":{}}}\n",
            1_767_225_600_000 + i
        ));
    }
    let dedupe = |expected_passed: usize| {
        let (mut producing, _file) = produce_while(&b, &topic, &records, "id", "10000000/s");
        assert!(producing.wait().unwrap().success());
        // The test broker, busy with the other tests, has been seen to time out a metadata
        // request (exit 4, nothing read or written): such a run is tried again.
        let run = || {
            super::weir()
                .args(["dedupe", "--id", "value.id", "--time", "value.t"])
                .args(["--time-format", "ms", "--horizon", "1h", "-e", "-q"])
                .args(["-G", &group, "--from", "beginning"])
                .args(["--timeout", BROKER_TIMEOUT])
                .arg(b.url(&topic))
                .timeout(Duration::from_secs(180))
                .output()
                .unwrap()
        };
        let mut out = run();
        for _ in 0..4 {
            if out.status.code() != Some(4) || !out.stdout.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_secs(3));
            out = run();
        }
        assert!(out.status.success(), "{out:?}");
        assert_eq!(super::stdout_lines(&out).len(), expected_passed);
    };
    // 60,000 ids a partition: over a megabyte of state each.
    dedupe(120_000);
    // The same ids again: the restored states know every one.
    dedupe(0);
    let changelog = format!("{group}-dedupe-changelog");
    let out = Command::new(&b.kcat)
        .args(["-b", &b.addr, "-C", "-e", "-q", "-t", &changelog])
        .args(["-f", "%k %S\n"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // The last record of each key; a deleted one has size -1.
    let mut last: BTreeMap<String, i64> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let (key, size) = line.rsplit_once(' ').unwrap();
        last.insert(key.to_string(), size.parse().unwrap());
    }
    let live: Vec<&String> = last
        .iter()
        .filter(|(_, s)| **s >= 0)
        .map(|(k, _)| k)
        .collect();
    let heads = live.iter().filter(|k| !k.contains('/')).count();
    let stamps: BTreeSet<&str> = live
        .iter()
        .filter_map(|k| k.rsplit_once('/').map(|(s, _)| s))
        .collect();
    assert_eq!(heads, 2, "{live:?}");
    assert_eq!(stamps.len(), 2, "one save's parts per partition: {live:?}");
    assert!(live.len() > 2 + 2 * 4, "each state in parts: {live:?}");
}

/// `watermark-profile -G`: each partition is profiled apart and its profile follows it. One
/// member reads, a second joins (half the partitions move to it), the first stops (the rest
/// move), and the second, owning every partition with its whole profile, reports exactly
/// what one uninterrupted profile of the topic reports.
#[test]
fn a_profile_follows_its_partitions_to_the_last_member() {
    let Some(b) = broker() else { return };
    let _turn = group_turn();
    let topic = b.topic("scale-profile", 4);
    let t0 = 1_767_225_600_000u64;
    let mut records = String::new();
    for i in 0..40_000u64 {
        // Out of order by up to 3 s, late by up to 20 s.
        let t = t0 + i * 10 - (i * 7919) % 3000;
        let arrival = t0 + i * 10 + (i * 104_729) % 20_000;
        records.push_str(&format!(
            "{{\"k\":\"k{}\",\"t\":{t},\"arrived\":{arrival}}}\n",
            i % 53
        ));
    }
    let (mut producing, _file) = produce_while(&b, &topic, &records, "k", "10000000/s");
    assert!(producing.wait().unwrap().success());
    let dir = tempfile::tempdir().unwrap();
    let profile = |group: &str, name: &str, extra: &[&str]| {
        let out = dir.path().join(format!("{name}.json"));
        let mut c = weir_std();
        c.args(["watermark-profile", "-q", "--format", "json"])
            .args(["--time", "value.t", "--arrival", "value.arrived"])
            .args(["--time-format", "ms", "--delay", "100ms,1s,5s"])
            .arg(b.url(&topic))
            .args(["-G", group, "--from", "beginning"])
            .args(["-X", "session.timeout.ms=6000"])
            .args(["--timeout", BROKER_TIMEOUT])
            .args(extra)
            .args(["-o", out.to_str().unwrap()])
            .stdout(Stdio::null());
        (c, out)
    };
    let report = |path: &PathBuf| -> Value {
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        v.as_object_mut().unwrap().remove("interrupted");
        v
    };
    let group = format!("profile-{topic}");
    // Small fetches: the first member is still reading when the second joins.
    let slow = [
        "-X",
        "fetch.max.bytes=8192",
        "-X",
        "max.partition.fetch.bytes=4096",
        "-X",
        "message.max.bytes=8192",
    ];
    let (mut first, _) = profile(&group, "first", &slow);
    let mut first = first.spawn().unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let (mut second, last) = profile(&group, "second", &["--checkpoint-interval", INTERVAL]);
    let mut second = second.spawn().unwrap();
    std::thread::sleep(Duration::from_secs(6));
    let term = |child: &Child| {
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    };
    term(&first);
    assert_eq!(first.wait().unwrap().code(), Some(130));
    // The second member owns every partition, and has read them to their end once the group
    // has committed every end (after a save).
    let started = Instant::now();
    while !caught_up(&b, &topic, &group, PARTITIONS) {
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "the second member has not read every partition to its end in 90 s"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    term(&second);
    assert_eq!(second.wait().unwrap().code(), Some(130));
    let (mut whole, reference) = profile(&format!("{group}-reference"), "reference", &["-e"]);
    assert!(whole.status().unwrap().success());
    let want = report(&reference);
    assert_eq!(want["records"], 40_000, "{want}");
    assert_eq!(report(&last), want);
}
