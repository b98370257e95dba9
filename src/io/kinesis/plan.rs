//! The rules of a Kinesis read, checked before any client is made, and the pure parts of
//! reading and writing a stream: where a shard starts, the order of shards across splits and
//! merges (lineage), when a bounded read of a shard ends, retry backoff, and which entries of
//! a PutRecords request go again.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use crate::core::time::{check_range_order, LogPosition, Millis};
use crate::error::{Error, Result};
use crate::io::spec::KinesisSpec;

/// A Kinesis read as the command line asks for it.
#[derive(Clone, Debug, Default)]
pub struct ReadRequest {
    pub from: Option<String>,
    pub to: Option<String>,
    pub exit_at_end: bool,
    pub shards: Vec<String>,
    pub efo: Option<String>,
    /// `-G APP`.
    pub group: Option<String>,
    pub lease_time: Duration,
}

/// `-G APP` on a Kinesis source, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupPlan {
    /// The application: its lease table's name.
    pub app: String,
    /// How long a member's heartbeat may stand still before its shards are taken.
    pub lease_time: Duration,
    /// For a command that keeps state per shard: where the states go.
    pub states: Option<StatesPlan>,
}

/// `--state-store`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreSpec {
    S3 { bucket: String, prefix: String },
    Dir(PathBuf),
}

impl StoreSpec {
    /// `s3://BUCKET[/PREFIX]` or a directory.
    pub fn parse(arg: &str) -> std::result::Result<StoreSpec, String> {
        match arg.strip_prefix("s3://") {
            Some(rest) => {
                let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                if bucket.is_empty() {
                    return Err(format!(
                        "--state-store {arg}: no bucket (s3://BUCKET/PREFIX)"
                    ));
                }
                Ok(StoreSpec::S3 {
                    bucket: bucket.to_string(),
                    prefix: prefix.trim_matches('/').to_string(),
                })
            }
            None if arg.is_empty() => {
                Err("--state-store: give s3://BUCKET/PREFIX or a directory".into())
            }
            // `gs://b/p` would otherwise be a directory `gs:` here: a scheme weir does not
            // know is a mistake, not a path.
            None if arg.split_once("://").is_some_and(|(s, _)| {
                !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            }) =>
            {
                Err(format!(
                    "--state-store {arg}: an unknown scheme; give s3://BUCKET/PREFIX or a directory"
                ))
            }
            None => Ok(StoreSpec::Dir(PathBuf::from(arg))),
        }
    }
}

/// Where a member that keeps state per shard (`window`, `dedupe`, `watermark-profile`)
/// saves it, and under which command's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatesPlan {
    pub store: StoreSpec,
    pub command: String,
}

/// Where a shard's reading starts, when no checkpoint says otherwise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartAt {
    /// The oldest record kept (TRIM_HORIZON).
    Beginning,
    /// Only records written from now on (LATEST).
    End,
    /// At this sequence number (AT_SEQUENCE_NUMBER), in the one shard given.
    Sequence(String),
    /// At the first record that arrived at or after this time (AT_TIMESTAMP).
    Time(Millis),
}

/// A Kinesis read whose every rule holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadPlan {
    pub stream: String,
    pub arn: Option<String>,
    pub from: StartAt,
    /// The exclusive end, in arrival time; `None` reads on.
    pub to: Option<Millis>,
    /// -e: stop when every shard that existed at the start is read to its end as of the
    /// start.
    pub exit_at_end: bool,
    /// Only these shards (all when empty); their children are not followed.
    pub shards: Vec<String>,
    /// Enhanced fan-out: read through this registered consumer with SubscribeToShard.
    pub efo: Option<String>,
    /// A member of an application: the shards its plan gives it, from their leases.
    pub group: Option<GroupPlan>,
}

impl ReadPlan {
    /// Checks `request` against the rules; relative times are resolved against `now`.
    pub fn new(spec: &KinesisSpec, request: &ReadRequest, now: Millis) -> Result<ReadPlan> {
        let from = match request.from.as_deref() {
            None => StartAt::Beginning,
            Some(text) => parse_start(text, now)?,
        };
        if let StartAt::Sequence(_) = from {
            if request.shards.len() != 1 {
                return Err(Error::Usage(
                    "--from SEQUENCE names a record of one shard: give that shard with --shards ID"
                        .into(),
                ));
            }
        }
        let to = match request.to.as_deref() {
            None => None,
            Some(text) => match LogPosition::parse(text, now) {
                Ok(LogPosition::Time(t)) => Some(t),
                Ok(LogPosition::End) => None,
                _ => {
                    return Err(Error::Usage(format!(
                        "--to {text}: on a Kinesis source --to is an arrival time (RFC 3339 or relative, such as -5m), or end with -e"
                    )))
                }
            },
        };
        if let (StartAt::Time(start), Some(end), Some(from_text), Some(to_text)) =
            (&from, to, &request.from, &request.to)
        {
            let (start, end) = (LogPosition::Time(*start), LogPosition::Time(end));
            check_range_order((&start, from_text), (&end, to_text)).map_err(Error::Usage)?;
        }
        let exit_at_end = request.exit_at_end || request.to.as_deref() == Some("end");
        if let Some(bad) = request
            .shards
            .iter()
            .find(|s| s.is_empty() || s.len() > 128)
        {
            return Err(Error::Usage(format!("--shards: '{bad}' is not a shard id")));
        }
        if request
            .efo
            .as_deref()
            .is_some_and(|c| c.is_empty() || c.len() > 128)
        {
            return Err(Error::Usage(
                "--efo names a stream consumer: 1 to 128 characters".into(),
            ));
        }
        let group = match &request.group {
            Some(app) => Some(group_plan(app, request, &from)?),
            None => None,
        };
        Ok(ReadPlan {
            group,
            stream: spec.stream.clone(),
            arn: spec.arn.clone(),
            from,
            to,
            exit_at_end,
            shards: request.shards.clone(),
            efo: request.efo.clone(),
        })
    }

    /// Whether the read ends: at -e, or at an end time.
    pub fn bounded(&self) -> bool {
        self.exit_at_end || self.to.is_some()
    }
}

/// `-G APP`: a member reads on, every shard it is given, from its lease.
fn group_plan(app: &str, request: &ReadRequest, from: &StartAt) -> Result<GroupPlan> {
    let refused = if request.to.is_some() {
        Some("-G reads on as a member of the application; --to ends a read of the whole stream without it (-e ends members once every shard is read to what had arrived by their start)")
    } else if !request.shards.is_empty() {
        Some("-G shares every shard among the members; --shards reads given ones without it")
    } else if !matches!(from, StartAt::Beginning | StartAt::End) {
        Some("with -G a shard no member has read starts at --from beginning or end")
    } else {
        None
    };
    if let Some(why) = refused {
        return Err(Error::Usage(why.into()));
    }
    // DynamoDB's rules for a table name.
    let fits = (3..=255).contains(&app.len())
        && app
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    if !fits {
        return Err(Error::Usage(format!(
            "-G '{app}': an application names its DynamoDB lease table: 3 to 255 letters, digits, '_', '-' or '.'"
        )));
    }
    Ok(GroupPlan {
        app: app.to_string(),
        lease_time: request.lease_time,
        states: None,
    })
}

/// `--from` on a Kinesis source: beginning, end, a sequence number, or a time.
fn parse_start(text: &str, now: Millis) -> Result<StartAt> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(StartAt::Sequence(text.to_string()));
    }
    match LogPosition::parse(text, now) {
        Ok(LogPosition::Beginning) => Ok(StartAt::Beginning),
        Ok(LogPosition::End) => Ok(StartAt::End),
        Ok(LogPosition::Time(t)) => Ok(StartAt::Time(t)),
        Ok(LogPosition::Stored) => Err(Error::Usage(
            "--from stored: a Kinesis read keeps its position with --checkpoint".into(),
        )),
        Ok(LogPosition::FromEnd(_)) => Err(Error::Usage(format!(
            "--from {text}: Kinesis has no record counts to go back by; use a relative time such as -1h"
        ))),
        Ok(LogPosition::Offset(_)) => unreachable!("digits are a sequence number"),
        Err(e) => Err(Error::Usage(format!(
            "--from: {}",
            e.replace("stored, an offset, -N", "a sequence number")
        ))),
    }
}

/// A shard as the stream lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardInfo {
    pub id: String,
    /// Its parent and, after a merge, the adjacent parent.
    pub parents: Vec<String>,
    /// It has an ending sequence number: a split or merge closed it.
    pub closed: bool,
    /// Its hash key range, as decimal text (empty when not known).
    pub hash_range: (String, String),
    /// The sequence number of its first record, as decimal text (empty when not known).
    pub first_sequence: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Waiting,
    Reading,
    /// Read to its end (or, in a bounded read, to the end of what it reads).
    Finished,
    /// Not read at all: closed before a read that starts at the end.
    Skipped,
}

impl State {
    fn done(self) -> bool {
        matches!(self, State::Finished | State::Skipped)
    }
}

/// The order shards are read in: a shard only once every parent it has among the known
/// shards is finished, so that a key's records come in order across splits (one parent)
/// and merges (two). A parent the stream no longer lists (trimmed) holds nothing back.
#[derive(Debug, Default)]
pub struct Lineage {
    shards: BTreeMap<String, (ShardInfo, State)>,
}

impl Lineage {
    /// Adds a shard the stream listed; one already known is left as it is. Returns whether
    /// it was new.
    pub fn add(&mut self, shard: ShardInfo) -> bool {
        if self.shards.contains_key(&shard.id) {
            return false;
        }
        self.shards
            .insert(shard.id.clone(), (shard, State::Waiting));
        true
    }

    /// A shard was read to its end (now, or by the run a checkpoint was taken of).
    pub fn finish(&mut self, id: &str) {
        if let Some((_, state)) = self.shards.get_mut(id) {
            *state = State::Finished;
        }
    }

    /// A shard needs no reading: it was closed before a read that starts at the end.
    pub fn skip(&mut self, id: &str) {
        if let Some((_, state)) = self.shards.get_mut(id) {
            *state = State::Skipped;
        }
    }

    pub fn is_known(&self, id: &str) -> bool {
        self.shards.contains_key(id)
    }

    /// The shards that may be read now and are not yet: each is marked as being read.
    pub fn start_ready(&mut self) -> Vec<String> {
        let ready: Vec<String> = self
            .shards
            .values()
            .filter(|(shard, state)| {
                *state == State::Waiting
                    && shard.parents.iter().all(|p| match self.shards.get(p) {
                        Some((_, state)) => state.done(),
                        None => true,
                    })
            })
            .map(|(shard, _)| shard.id.clone())
            .collect();
        for id in &ready {
            self.shards.get_mut(id).expect("listed above").1 = State::Reading;
        }
        ready
    }

    /// The shards being read.
    pub fn reading(&self) -> Vec<String> {
        self.with(State::Reading)
    }

    /// Whether every known shard is finished.
    pub fn all_finished(&self) -> bool {
        self.shards.values().all(|(_, s)| s.done())
    }

    /// Whether a parent of the shard was read through (the child then starts at its
    /// beginning, whatever `--from` says: that parent's records came before it).
    pub fn parents_read(&self, id: &str) -> bool {
        self.shards.get(id).is_some_and(|(shard, _)| {
            shard.parents.iter().any(|p| {
                self.shards
                    .get(p)
                    .is_some_and(|(_, s)| *s == State::Finished)
            })
        })
    }

    fn with(&self, state: State) -> Vec<String> {
        self.shards
            .values()
            .filter(|(_, s)| *s == state)
            .map(|(shard, _)| shard.id.clone())
            .collect()
    }
}

/// When a bounded read of one shard ends, by the records' arrival times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardEnd {
    /// Records that arrived at or after this are left out, and end the shard's read.
    pub before: Option<Millis>,
    /// From this (local) time on, a shard whose reader has caught up with the stream ends
    /// there: with -e at once, with --to once it has passed, as nothing can arrive before it
    /// any more.
    tip_from: Option<Millis>,
}

impl ShardEnd {
    /// `plan`'s end for a read that started at `start` (local time): with -e, what had
    /// arrived by the start; with --to, what arrived before it.
    pub fn new(plan: &ReadPlan, start: Millis) -> ShardEnd {
        let snapshot = plan.exit_at_end.then_some(start.saturating_add(1));
        let before = match (snapshot, plan.to) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        ShardEnd {
            before,
            tip_from: if plan.exit_at_end {
                Some(start)
            } else {
                plan.to
            },
        }
    }

    /// Whether a shard caught up with the stream at `now` is read to its end.
    pub fn at_tip(&self, now: Millis) -> bool {
        self.tip_from.is_some_and(|t| t <= now)
    }

    /// Whether a record that arrived at `arrival` is past the end.
    pub fn is_past(&self, arrival: Millis) -> bool {
        self.before.is_some_and(|b| arrival >= b)
    }
}

/// How long to wait before retry `attempt` (0-based) of a throttled or failed call:
/// exponential from 100 ms, capped at 5 s, with "equal jitter" (`jitter` in [0, 1) spreads
/// the second half of the wait) so that many shards do not retry in step.
pub fn backoff(attempt: u32, jitter: f64) -> Duration {
    const BASE_MS: f64 = 100.0;
    const CAP_MS: f64 = 5_000.0;
    let full = (BASE_MS * 2f64.powi(attempt.min(16) as i32)).min(CAP_MS);
    Duration::from_micros(((full / 2.0) * (1.0 + jitter.clamp(0.0, 1.0)) * 1000.0) as u64)
}

/// The fewest milliseconds between two GetRecords calls on one shard: the service takes 5 a
/// second.
pub const GET_RECORDS_EVERY_MS: u64 = 200;
/// The most records one GetRecords call returns.
pub const GET_RECORDS_LIMIT: i32 = 10_000;

/// Bytes of GetRecords responses the shard readers of one read may hold at once, asked for or
/// waiting for the reader thread: memory stays bounded however many shards there are.
pub const RESPONSE_BUDGET: usize = 64 << 20;
/// The service's largest GetRecords response.
const MAX_RESPONSE: usize = 10 << 20;
/// The least a reader reserves for a call, so that a quiet shard's next one can grow.
const MIN_RESERVATION: usize = 64 << 10;

/// What a shard reader reserves of `RESPONSE_BUDGET` for its next GetRecords call, and the
/// Limit that keeps the response within it at the records' size so far.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reservation {
    pub bytes: usize,
    pub limit: i32,
    /// The size of the shard's records, as the last response that had any showed.
    record_bytes: usize,
}

impl Reservation {
    /// The first call's: a megabyte, at records of a kilobyte until a response shows theirs.
    pub fn first() -> Reservation {
        Reservation::of(1 << 20, 1 << 10)
    }

    fn of(bytes: usize, record_bytes: usize) -> Reservation {
        let bytes = bytes.clamp(MIN_RESERVATION, MAX_RESPONSE);
        let record_bytes = record_bytes.max(1);
        let limit = (bytes / record_bytes).clamp(1, GET_RECORDS_LIMIT as usize) as i32;
        Reservation {
            bytes,
            limit,
            record_bytes,
        }
    }

    /// The next call's, after this one returned `records` records of `bytes` in all: twice as
    /// much when it came back full (more are waiting), else twice what came.
    pub fn next(&self, records: usize, bytes: usize) -> Reservation {
        let record_bytes = match records {
            0 => self.record_bytes,
            n => bytes.div_ceil(n),
        };
        let full = records >= self.limit as usize;
        let want = if full {
            self.bytes.saturating_mul(2)
        } else {
            bytes.saturating_mul(2)
        };
        Reservation::of(want, record_bytes)
    }
}

/// Which entries of a PutRecords request to send again, in order, after the entries marked
/// in `failed` failed: every failed entry, and every entry after a failure of its own key.
/// Kinesis handles a request's entries one by one, so a later entry of a key can succeed
/// after an earlier one of that key failed; sending it again after the failed one keeps the
/// key's order in the last copy of each record (at least once, as a sink promises).
pub fn entries_to_resend<K: AsRef<str>>(keys: &[K], failed: &[bool]) -> Vec<usize> {
    let mut failed_keys: HashSet<&str> = HashSet::new();
    let mut again = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let key = key.as_ref();
        if failed[i] {
            failed_keys.insert(key);
            again.push(i);
        } else if failed_keys.contains(key) {
            again.push(i);
        }
    }
    again
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn spec() -> KinesisSpec {
        KinesisSpec {
            stream: "s".into(),
            arn: None,
        }
    }

    fn plan(from: Option<&str>, to: Option<&str>, e: bool, shards: &[&str]) -> Result<ReadPlan> {
        let request = ReadRequest {
            from: from.map(String::from),
            to: to.map(String::from),
            exit_at_end: e,
            shards: shards.iter().map(|s| s.to_string()).collect(),
            efo: None,
            group: None,
            lease_time: Duration::from_secs(10),
        };
        ReadPlan::new(&spec(), &request, 1_000_000)
    }

    #[test]
    fn positions() {
        assert_eq!(
            plan(None, None, false, &[]).unwrap().from,
            StartAt::Beginning
        );
        assert_eq!(
            plan(Some("end"), None, false, &[]).unwrap().from,
            StartAt::End
        );
        assert_eq!(
            plan(Some("-10s"), None, false, &[]).unwrap().from,
            StartAt::Time(990_000)
        );
        let seq = "49590338271490256608559692538361571095921575989136588898";
        assert_eq!(
            plan(Some(seq), None, false, &["shardId-000000000001"])
                .unwrap()
                .from,
            StartAt::Sequence(seq.into())
        );
        assert!(plan(Some(seq), None, false, &[])
            .unwrap_err()
            .to_string()
            .contains("--shards"));
        assert!(plan(Some("stored"), None, false, &[])
            .unwrap_err()
            .to_string()
            .contains("--checkpoint"));
        assert!(plan(Some("-5"), None, false, &[])
            .unwrap_err()
            .to_string()
            .contains("relative time"));
        assert_eq!(
            plan(None, Some("-1s"), false, &[]).unwrap().to,
            Some(999_000)
        );
        assert!(plan(None, Some("12345"), false, &[]).is_err());
        let e = plan(None, Some("end"), false, &[]).unwrap();
        assert!(e.exit_at_end && e.to.is_none());
        // A range that runs backwards reads nothing: refused; an empty one is allowed.
        assert!(plan(Some("-1m"), Some("-2m"), false, &[])
            .unwrap_err()
            .to_string()
            .contains("--from -1m comes after --to -2m"));
        assert!(plan(Some("-1m"), Some("-1m"), false, &[]).is_ok());
    }

    #[test]
    fn shard_ends() {
        let p = plan(None, None, true, &[]).unwrap();
        let end = ShardEnd::new(&p, 5_000);
        assert!(!end.is_past(5_000) && end.is_past(5_001) && end.at_tip(5_000));
        let p = plan(None, Some("-1s"), false, &[]).unwrap();
        let end = ShardEnd::new(&p, 1_000_000);
        assert!(!end.is_past(998_999) && end.is_past(999_000) && end.at_tip(1_000_000));
        // An end in the future: a caught-up shard waits for it, and ends once it has passed
        // (a quiet stream brings no record past it to end the read).
        let p = plan(None, Some("2100-01-01T00:00:00Z"), false, &[]).unwrap();
        let to = p.to.unwrap();
        let end = ShardEnd::new(&p, 1_000_000);
        assert!(!end.at_tip(to - 1) && end.at_tip(to) && end.is_past(to));
        let p = plan(None, None, false, &[]).unwrap();
        let end = ShardEnd::new(&p, 1_000_000);
        assert!(!end.is_past(Millis::MAX) && !end.at_tip(Millis::MAX));
    }

    fn shard(id: &str, parents: &[&str]) -> ShardInfo {
        ShardInfo {
            id: id.into(),
            parents: parents.iter().map(|p| p.to_string()).collect(),
            closed: false,
            hash_range: Default::default(),
            first_sequence: String::new(),
        }
    }

    #[test]
    fn a_split_and_a_merge_are_read_after_their_parents() {
        let mut l = Lineage::default();
        // 0 splits into 2 and 3; 1 and 2 merge into 4. 9's parent was trimmed away.
        for s in [
            shard("0", &[]),
            shard("1", &[]),
            shard("2", &["0"]),
            shard("3", &["0"]),
            shard("4", &["1", "2"]),
            shard("9", &["8"]),
        ] {
            assert!(l.add(s));
        }
        assert_eq!(l.start_ready(), ["0", "1", "9"]);
        assert!(l.start_ready().is_empty());
        l.finish("1");
        assert!(l.start_ready().is_empty(), "4 waits for 2 as well");
        l.finish("0");
        assert_eq!(l.start_ready(), ["2", "3"]);
        assert!(l.parents_read("2"));
        l.finish("2");
        assert_eq!(l.start_ready(), ["4"]);
        // A shard closed before a read from the end is skipped: its children start as
        // --from says.
        let mut m = Lineage::default();
        m.add(shard("0", &[]));
        m.add(shard("1", &["0"]));
        m.skip("0");
        assert_eq!(m.start_ready(), ["1"]);
        assert!(!m.parents_read("1"));
        assert_eq!(l.reading(), ["3", "4", "9"]);
        for id in ["3", "4", "9"] {
            l.finish(id);
        }
        assert!(l.all_finished());
    }

    proptest! {
        /// In any history of splits and merges, no shard starts before every parent has
        /// finished, and every shard is read in the end.
        #[test]
        fn lineage_orders_any_reshard_history(ops in prop::collection::vec((any::<bool>(), any::<prop::sample::Index>(), any::<prop::sample::Index>()), 0..30)) {
            let mut open: Vec<String> = (0..3).map(|i| i.to_string()).collect();
            let mut all: Vec<ShardInfo> = open.iter().map(|id| shard(id, &[])).collect();
            let mut next = 3;
            for (split, a, b) in ops {
                let i = a.index(open.len());
                if split || open.len() < 2 {
                    let parent = open.remove(i);
                    for _ in 0..2 {
                        let id = next.to_string();
                        next += 1;
                        all.push(shard(&id, &[&parent]));
                        open.push(id);
                    }
                } else {
                    let p1 = open.remove(i);
                    let p2 = open.remove(b.index(open.len()));
                    let id = next.to_string();
                    next += 1;
                    all.push(shard(&id, &[&p1, &p2]));
                    open.push(id);
                }
            }
            let mut l = Lineage::default();
            for s in &all { l.add(s.clone()); }
            let mut finished: HashSet<String> = HashSet::new();
            loop {
                let ready = l.start_ready();
                for id in &ready {
                    let s = all.iter().find(|s| &s.id == id).unwrap();
                    prop_assert!(s.parents.iter().all(|p| finished.contains(p)), "{} before its parents", id);
                }
                let reading = l.reading();
                let Some(first) = reading.first() else { break };
                l.finish(first);
                finished.insert(first.clone());
            }
            prop_assert!(l.all_finished());
            prop_assert_eq!(finished.len(), all.len());
        }

        #[test]
        fn a_reservation_stays_within_bounds_and_its_limit_within_it(
            calls in proptest::collection::vec((0usize..20_000, 1usize..2_000_000), 1..40),
        ) {
            let mut r = Reservation::first();
            for (records, record_bytes) in calls {
                // A response of at most the limit's records, of one size.
                let records = records.min(r.limit as usize);
                let next = r.next(records, records * record_bytes);
                prop_assert!((MIN_RESERVATION..=MAX_RESPONSE).contains(&next.bytes));
                prop_assert!((1..=GET_RECORDS_LIMIT).contains(&next.limit));
                // Records of the size just seen fill at most the reservation (but one always
                // goes).
                if records > 0 && next.limit > 1 {
                    prop_assert!(next.limit as usize * record_bytes <= next.bytes);
                }
                // A full response asks for more next time, up to the service's largest.
                if records == r.limit as usize && records > 0 {
                    prop_assert_eq!(next.bytes, (2 * r.bytes).min(MAX_RESPONSE));
                }
                r = next;
            }
        }

        #[test]
        fn backoff_grows_and_stays_bounded(attempt in 0u32..100, jitter in 0.0f64..1.0) {
            let wait = backoff(attempt, jitter);
            prop_assert!(wait >= Duration::from_millis(50));
            prop_assert!(wait <= Duration::from_secs(5));
            prop_assert!(backoff(attempt + 1, jitter) >= wait);
        }

        /// What goes again keeps each key's order in its last copies: per key, the last
        /// copy of each entry after the resend is in request order, and every failed entry
        /// is among them.
        #[test]
        fn resent_entries_keep_each_keys_order(entries in prop::collection::vec((0u8..4, any::<bool>()), 0..40)) {
            let keys: Vec<String> = entries.iter().map(|(k, _)| format!("k{k}")).collect();
            let failed: Vec<bool> = entries.iter().map(|(_, f)| *f).collect();
            let again = entries_to_resend(&keys, &failed);
            // Delivered: the successes in request order, then the resent ones (all of which
            // succeed this time).
            let mut delivered: Vec<usize> = (0..keys.len()).filter(|&i| !failed[i]).collect();
            delivered.extend(&again);
            for i in (0..keys.len()).filter(|&i| failed[i]) {
                prop_assert!(again.contains(&i));
            }
            let mut last: BTreeMap<usize, usize> = BTreeMap::new();
            for (at, &i) in delivered.iter().enumerate() {
                last.insert(i, at);
            }
            for key in 0u8..4 {
                let name = format!("k{key}");
                let order: Vec<usize> = (0..keys.len()).filter(|&i| keys[i] == name).map(|i| last[&i]).collect();
                prop_assert!(order.windows(2).all(|w| w[0] < w[1]), "{:?}", order);
            }
        }
    }
}
