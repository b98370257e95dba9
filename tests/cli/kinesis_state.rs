//! `window` and `dedupe` members of a Kinesis application (`-G APP --state-store`): three
//! members share a 4-shard stream written while they run, one killed and restarted, one
//! stopped, one joining; what they upsert equals one uninterrupted run's over the stream.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

use super::kinesis::aws_env;
use super::kinesis_members::{App, Member};
use super::weir_std;

/// Event times start here (ms): 2023-11-14T22:13:20Z.
const BASE: i64 = 1_700_000_000_000;

/// How the windows of the records a day later start.
const DAY_LATER: &str = "\"2023-11-15";

/// How the drill writes: `rounds` of `per_round` records, with these keys.
struct Writes {
    next: u64,
    keys: u64,
}

impl Writes {
    /// Records `{"k":"m..","id":"e..","t":..,"i":..}`: 23 keys, event time half a second
    /// apart, a little out of order; every id comes again 7 records later (same key, so the
    /// same shard).
    fn lines(&mut self, n: u64) -> String {
        let mut out = String::new();
        for i in self.next..self.next + n {
            let jitter = (i * 7919 % 5) as i64 * 300;
            let t = BASE + i as i64 * 500 - jitter;
            let id = if i % 3 == 0 && i >= 7 { i - 7 } else { i };
            let k = id % self.keys;
            out.push_str(&format!(
                "{{\"k\":\"m{k}\",\"id\":\"e{id}\",\"t\":{t},\"i\":{i}}}\n"
            ));
        }
        self.next += n;
        out
    }
}

/// How a drill goes: where the states are kept, whether the stream is resharded (a split and
/// a merge) while the members run, and whether the second member is stalled (SIGSTOP, then
/// SIGCONT) rather than stopped.
#[derive(Clone, Copy, Default)]
struct Drill {
    in_s3: bool,
    reshard: bool,
    stall: bool,
}

impl Drill {
    /// The members whose output others may repeat: the killed one (`a`), and a stalled one
    /// (`b`), whose shards are read again from their last saved states, as a killed one's.
    fn may_be_repeated(&self) -> Vec<usize> {
        if self.stall {
            vec![0, 1]
        } else {
            vec![0]
        }
    }
}

/// One drill: `members` run `command` with a state store (a directory, or `in_s3`); the stream (keyed by `key`) is
/// written while one member is killed and restarted, one stopped and one joins; then every
/// key gets a record a day later, so that every shard's watermark passes what came before.
/// Returns the members' outputs and one run's over the whole stream (`-e`, no `-G`).
fn drill(name: &str, key: &str, command: &[&str], how: Drill) -> Option<(Vec<String>, String)> {
    let app = App::new(name, 4)?;
    let store = match how.in_s3 {
        true => format!("s3://weir-test/{}", app.stream),
        false => app.dir.path().join("states").to_str().unwrap().to_string(),
    };
    let member_args = [
        command,
        &["--state-store", &store, "--checkpoint-interval", "1s"],
    ]
    .concat();
    let mut writes = Writes { next: 0, keys: 23 };
    // Rounds of 150 records, 0.7 s apart.
    let mut write = |app: &App, rounds| {
        for _ in 0..rounds {
            app.s.py(&["put", &app.stream, key], &writes.lines(150));
            std::thread::sleep(Duration::from_millis(700));
        }
    };
    let a = app.spawn("a", &member_args);
    let mut b = app.spawn("b", &member_args);
    write(&app, 4);
    // Killed and restarted: its shards are read again from their last saved states.
    let mut killed = a;
    let pid = format!(":{}:", killed.child.0.id());
    killed.child.0.kill().unwrap();
    killed.child.0.wait().unwrap();
    let at_kill = std::time::Instant::now();
    // Its shards are taken once its heartbeat has stood still for the lease time (3 s).
    super::wait_until("the killed member's shards were not taken", || {
        let owners = app.owners();
        !owners.is_empty() && owners.iter().all(|o| !o.contains(&pid))
    });
    let took = at_kill.elapsed();
    eprintln!("{name}: the killed member's shards were taken after {took:?}");
    assert!(took < Duration::from_secs(8), "taken after {took:?}");
    let a2 = app.spawn("a2", &member_args);
    write(&app, 4);
    if how.reshard {
        // A split while they run: the children start from their parent's last state.
        app.split_0();
        write(&app, 3);
    }
    if how.stall {
        // Stalled past the lease time: the others take its shards; once it runs again its
        // commits fail and it drops the states of what it lost, writing nothing of them.
        b.signal("-STOP");
        write(&app, 7);
        b.signal("-CONT");
    } else {
        // Stopped: it hands its shards over with their states and exits 130 within seconds.
        let took = b.stop();
        eprintln!("{name}: the stopped member handed its shards over in {took:?}");
        assert!(
            took < Duration::from_secs(5),
            "the member took {took:?} to stop"
        );
    }
    let c = app.spawn("c", &member_args);
    write(&app, 3);
    if how.reshard {
        // A merge of two adjacent shards: the child starts from both parents' states.
        app.merge_1_and_2();
    }
    write(&app, 3);
    // A day later for every key: every shard's windows and ids before it are done.
    let late: String = (0..23)
        .map(|k| {
            format!(
                "{{\"k\":\"m{k}\",\"id\":\"e{k}\",\"t\":{},\"i\":-1}}\n",
                BASE + 86_400_000
            )
        })
        .collect();
    app.s.py(&["put", &app.stream, key], &late);
    let one = one_run(&app, command);
    let members = [&killed, &b, &a2, &c];
    // What comes before the day-later records: all of it, once the members caught up.
    let before_day = |l: &&str| !l.contains(DAY_LATER);
    let want = one.lines().filter(before_day).count();
    let settled = std::time::Instant::now();
    while settled.elapsed() < Duration::from_secs(40) {
        let got: BTreeSet<String> = members.iter().flat_map(|m| lines(m)).collect();
        if got.iter().map(String::as_str).filter(before_day).count() >= want {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    std::thread::sleep(Duration::from_secs(2));
    let outputs = members.iter().map(|m| read(m)).collect();
    for err in members.iter().map(|m| read_err(m)) {
        assert!(!err.contains("panicked"), "{err}");
        eprintln!("a member said: {err}");
    }
    Some((outputs, one))
}

/// One uninterrupted run of `command` over the whole stream, read to its end.
fn one_run(app: &App, command: &[&str]) -> String {
    let mut c = weir_std();
    let out = aws_env(&mut c)
        .args(command)
        .args(["-e", "-q", &app.s.url(&app.stream)])
        .args(["--endpoint-url", &app.s.endpoint])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn read(m: &Member) -> String {
    std::fs::read_to_string(&m.out).unwrap_or_default()
}

fn read_err(m: &Member) -> String {
    std::fs::read_to_string(&m.err).unwrap_or_default()
}

fn lines(m: &Member) -> Vec<String> {
    read(m).lines().map(String::from).collect()
}

/// Asserts that what was written twice (by `key`) was written first by a member `how` says
/// may be repeated (killed or stalled) and again by one that read its shards on: a planned
/// move (a stop, a join) repeats nothing. Returns how many repeats there were.
fn repeats_only_from(how: Drill, outputs: &[String], key: impl Fn(&str) -> String) -> usize {
    let may = how.may_be_repeated();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut repeats = 0;
    for (member, output) in outputs.iter().enumerate() {
        for line in output.lines() {
            if let Some(first) = seen.insert(key(line), member) {
                assert!(
                    may.contains(&first) && member != first,
                    "written by members {first} and {member}: {line}"
                );
                repeats += 1;
            }
        }
    }
    repeats
}

/// The lines of `texts` (outputs), each split by `of` into an upsert key and what is kept
/// under it; every line written for a key keeps the same (a repeat is the same line again).
fn upserted<K: Ord + Clone + std::fmt::Debug, V: PartialEq + std::fmt::Debug>(
    texts: &[&str],
    of: impl Fn(Value) -> (K, V),
) -> BTreeMap<K, V> {
    let mut by_key = BTreeMap::new();
    for line in texts.iter().flat_map(|t| t.lines()) {
        let (key, value) = of(serde_json::from_str(line).unwrap());
        if let Some(before) = by_key.insert(key.clone(), value) {
            assert_eq!(
                Some(&before),
                by_key.get(&key),
                "{key:?} written twice, differently"
            );
        }
    }
    by_key
}

/// Window rows by their upsert key (key, window start).
fn rows(texts: &[&str]) -> BTreeMap<(String, String), Value> {
    upserted(texts, |row| {
        let key = (row["value_k"].to_string(), row["window_start"].to_string());
        (key, row)
    })
}

const WINDOW: [&str; 12] = [
    "window",
    "--time",
    "value.t",
    "--key",
    "value.k",
    "--tumbling",
    "10s",
    "--delay",
    "5s",
    "--count",
    "--sum",
    "value.i",
];

const S3: Drill = Drill {
    in_s3: true,
    reshard: false,
    stall: false,
};

const RESHARD: Drill = Drill {
    in_s3: false,
    reshard: true,
    stall: false,
};

const STALL: Drill = Drill {
    in_s3: false,
    reshard: false,
    stall: true,
};

#[test]
fn three_window_members_upsert_what_one_run_writes() {
    let how = Drill::default();
    if let Some((outputs, one)) = drill("state-window", "k", &WINDOW, how) {
        assert_window_rows_equal(how, &outputs, &one);
    }
}

/// A member stalled past the lease time (SIGSTOP, then SIGCONT) loses its shards to the
/// others, which go on from their last saved states: the rows are still one run's, and every
/// row written twice is the same row. (That a fenced member writes nothing of what it lost
/// is shown record by record with `consume`, in `kinesis_members`.)
#[test]
fn window_members_stay_exact_when_one_stalls_past_its_lease() {
    if let Some((outputs, one)) = drill("state-window-stall", "k", &WINDOW, STALL) {
        assert_window_rows_equal(STALL, &outputs, &one);
    }
}

/// The same with a split and a merge while the members run: exact still.
#[test]
fn window_members_carry_windows_across_a_split_and_a_merge() {
    if let Some((outputs, one)) = drill("state-window-reshard", "k", &WINDOW, RESHARD) {
        assert_window_rows_equal(RESHARD, &outputs, &one);
    }
}

/// The members' rows equal the one run's, but for the windows of the records a day later,
/// which the members never close.
fn assert_window_rows_equal(how: Drill, outputs: &[String], one: &str) {
    let repeats = repeats_only_from(how, outputs, |line| {
        let row: Value = serde_json::from_str(line).unwrap();
        format!("{} {}", row["value_k"], row["window_start"])
    });
    eprintln!("rows written again after the kill: {repeats}");
    let before_day = |rows: BTreeMap<(String, String), Value>| -> BTreeMap<_, _> {
        (rows.into_iter())
            .filter(|((_, start), _)| !start.starts_with(DAY_LATER))
            .collect()
    };
    let outputs: Vec<&str> = outputs.iter().map(String::as_str).collect();
    let got = before_day(rows(&outputs));
    let want = before_day(rows(&[one]));
    assert!(want.len() > 100, "{}", want.len());
    assert_same(&got, &want, "rows");
}

/// The members' `got` equals one run's `want`; else what differs, a few of each.
fn assert_same<K: Ord + std::fmt::Debug, V: PartialEq + std::fmt::Debug>(
    got: &BTreeMap<K, V>,
    want: &BTreeMap<K, V>,
    what: &str,
) {
    let missing: Vec<_> = want
        .keys()
        .filter(|k| !got.contains_key(*k))
        .take(5)
        .collect();
    let extra: Vec<_> = got
        .keys()
        .filter(|k| !want.contains_key(*k))
        .take(5)
        .collect();
    let other: Vec<_> = (want.iter())
        .filter(|(k, v)| got.get(*k).is_some_and(|g| g != *v))
        .take(5)
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty() && other.is_empty(),
        "{} {what}, one run {}: missing {missing:?}; extra {extra:?}; different {other:?}",
        got.len(),
        want.len()
    );
}

const DEDUPE: [&str; 3] = ["dedupe", "--id", "value.id"];

#[test]
fn three_dedupe_members_keep_what_one_run_keeps() {
    if let Some((outputs, one)) = drill("state-dedupe", "id", &DEDUPE, S3) {
        assert_same_records_kept(S3, &outputs, &one);
    }
}

#[test]
fn dedupe_members_carry_ids_across_a_split_and_a_merge() {
    if let Some((outputs, one)) = drill("state-dedupe-reshard", "id", &DEDUPE, RESHARD) {
        assert_same_records_kept(RESHARD, &outputs, &one);
    }
}

/// The members kept the same record of each id as the one run, and only that one.
fn assert_same_records_kept(how: Drill, outputs: &[String], one: &str) {
    // Each id's kept record, by its sequence number.
    let ids = |texts: &[&str]| -> BTreeMap<String, String> {
        upserted(texts, |record| {
            let id = record["value"]["id"].as_str().unwrap().to_string();
            (id, record["sequence"].as_str().unwrap().to_string())
        })
    };
    let repeats = repeats_only_from(how, outputs, |line| {
        let record: Value = serde_json::from_str(line).unwrap();
        record["sequence"].to_string()
    });
    eprintln!("records written again after the kill: {repeats}");
    let got = ids(&outputs.iter().map(String::as_str).collect::<Vec<_>>());
    let want = ids(&[one]);
    assert!(want.len() > 1000, "{}", want.len());
    assert_same(&got, &want, "ids kept");
}

/// What a member that keeps state refuses: a record whose partition key is not its state
/// key (exit 2, naming the remedy), and a state store out of reach (exit 4, before any
/// output).
#[test]
fn members_keeping_state_need_a_stream_keyed_by_it_and_their_store() {
    let Some(app) = App::new("state-refuse", 2) else {
        return;
    };
    app.s.py(
        &["put", &app.stream, "i"],
        "{\"k\":\"m1\",\"t\":1700000000000,\"i\":0}\n",
    );
    let store = app.dir.path().join("states");
    let store = store.to_str().unwrap();
    let window = [
        "window",
        "--time",
        "value.t",
        "--key",
        "value.k",
        "--tumbling",
        "10s",
        "--count",
    ];
    let mut m = app.spawn("keyed", &[&window[..], &["--state-store", store]].concat());
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = m.child.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "it did not stop"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let err = read_err(&m);
    // Found in the data after the member joined: exit 3, as a Kafka topic not keyed by it.
    assert_eq!(status.code(), Some(3), "{err}");
    assert!(err.contains("partition key is '0'"), "{err}");
    assert!(err.contains("-o kinesis://"), "{err}");
    // A store out of reach is found before the application's table is made.
    let unreachable = [&window[..], &["--state-store", "s3://weir-test/x"]].concat();
    let fresh = format!("{}-fresh", app.name);
    let mut c = weir_std();
    let out = aws_env(&mut c)
        .env("AWS_ENDPOINT_URL_DYNAMODB", &app.dynamo.endpoint)
        .env("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9")
        .args(&unreachable)
        .args([&app.s.url(&app.stream), "-G", &fresh, "--timeout", "2s"])
        .args(["--endpoint-url", &app.s.endpoint])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("state store"), "{err}");
    assert!(out.stdout.is_empty());
    let lag = ["lag", &app.s.url(&app.stream), "--kcl-app", &fresh];
    let out = app
        .s
        .weir(&[&lag[..], &["--dynamodb-endpoint-url", &app.dynamo.endpoint]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ResourceNotFoundException"),
        "a lease table was made: {err}"
    );
}

/// `watermark-profile` members: a member stopped hands its shards' profiles on; the member
/// that reads on reports, at its stop, every record of the stream once, as one run does.
#[test]
fn a_profile_member_reports_what_one_run_reports_after_a_handover() {
    let Some(app) = App::new("state-profile", 2) else {
        return;
    };
    let store = app.dir.path().join("states");
    let profile = [
        "watermark-profile",
        "--time",
        "value.t",
        "--format",
        "json",
        "--state-store",
        store.to_str().unwrap(),
    ];
    let mut writes = Writes { next: 0, keys: 23 };
    app.s.py(&["put", &app.stream, "k"], &writes.lines(300));
    let mut first = app.spawn("first", &profile);
    // Time to join, take both shards and read them.
    std::thread::sleep(Duration::from_secs(4));
    first.stop();
    app.s.py(&["put", &app.stream, "k"], &writes.lines(300));
    let mut second = app.spawn("second", &profile);
    std::thread::sleep(Duration::from_secs(5));
    second.stop();
    let report = |text: &str| -> Value {
        let mut r: Value = serde_json::from_str(text).unwrap();
        r.as_object_mut().unwrap().remove("interrupted");
        r
    };
    let one = report(&one_run(&app, &profile[..5]));
    assert_eq!(one["records"], 600);
    assert_eq!(report(&read(&first))["records"], 300);
    assert_eq!(report(&read(&second)), one);
}
