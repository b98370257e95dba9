//! A consumer-group member, in one place: how its consumer is configured for the group, the
//! rebalance callbacks (`Member`, the consumer's context), the partitions it owns, and where
//! its offsets are committed.
//!
//! A plain member (`consume`, `replay`) stores the offset of each record the command has
//! handled and commits what is stored. A member that keeps state per partition (`window`,
//! `dedupe`, `watermark-profile`) commits nothing by itself: it saves a partition's state in
//! the changelog and only then commits the offset the state covers, when a save is due and
//! when the group revokes the partition (inside the callback, before the group moves it).
//! The committed offset is never ahead of the saved state.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::consumer::{
    BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance, RebalanceProtocol,
};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::{ClientContext, Offset, TopicPartitionList};

use super::changelog::Changelog;
use super::client::Reporter;
use super::plan::ReadPlan;
use crate::error::{Error, Result};
use crate::runtime::metrics::{self, ClientLag};
use crate::runtime::{Feed, PartitionState, Revoker};

/// Sets up a consumer's group: a member's (`-G`), or, for a read without one, a group that
/// commits nothing.
pub fn configure(config: &mut ClientConfig, plan: &ReadPlan) {
    let Some(group) = &plan.group else {
        config.set("group.id", "weir");
        config.set("enable.auto.commit", "false");
        return;
    };
    config.set("group.id", group);
    if let Some(reset) = plan.reset {
        config.set("auto.offset.reset", reset);
    }
    // Offsets are stored once the command has handled a record, then committed.
    config.set("enable.auto.offset.store", "false");
    if config.get("enable.auto.commit").is_none() {
        config.set("enable.auto.commit", "true");
    }
    // A member keeps the partitions it has when another joins or leaves: only those that
    // move stop, instead of every member's.
    if config.get("partition.assignment.strategy").is_none() {
        config.set("partition.assignment.strategy", "cooperative-sticky");
    }
    // With state per partition, offsets are committed only as states are saved.
    if plan.changelog.is_some() {
        config.set("enable.auto.commit", "false");
    }
}

/// A source's consumer context: what librdkafka reports, and the group's rebalances.
#[derive(Default)]
pub struct Member {
    reporter: Reporter,
    /// The partitions the group gave us; `None` before the first assignment and while a
    /// rebalance is under way.
    assigned: Mutex<Option<Vec<i32>>>,
    /// How many times `assigned` changed: cheap to read on every poll.
    rebalances: AtomicU64,
    /// A member with state per partition: what it does when partitions are revoked.
    group: Mutex<Option<GroupState>>,
}

impl Member {
    /// A member whose client reports to `reporter` (and takes its tokens from it).
    pub fn new(reporter: Reporter) -> Member {
        Member {
            reporter,
            ..Member::default()
        }
    }

    /// The latest error the client reported, if it is newer than `since`.
    pub fn error_since(&self, since: Instant) -> Option<String> {
        self.reporter.error_since(since)
    }

    /// Notes an error the consumer returned, as the error callback notes its own.
    pub fn record(&self, error: &rdkafka::error::KafkaError) {
        self.reporter.record(error, "")
    }

    /// Counts the group's rebalances: when it moves, `assigned` may have changed.
    pub fn rebalances(&self) -> u64 {
        self.rebalances.load(Ordering::Acquire)
    }

    pub fn assigned(&self) -> Option<Vec<i32>> {
        self.assigned.lock().expect("not poisoned").clone()
    }

    /// The member's state keeping, while it keeps state per partition (`None` once the read
    /// is over: a consumer that closes then gives its partitions up without them).
    fn group(&self) -> MutexGuard<'_, Option<GroupState>> {
        self.group.lock().expect("not poisoned")
    }

    /// Starts keeping state per partition of `topic`: the command gives a revoked
    /// partition's state up through `revoker`, and it is saved in `changelog`; `ends` are a
    /// bounded read's ends (`-e`), which a save commits only once they are handled.
    pub fn keep_states(
        &self,
        revoker: Revoker,
        changelog: Changelog,
        topic: String,
        ends: HashMap<i32, i64>,
    ) {
        *self.group() = Some(GroupState {
            revoker,
            changelog,
            topic,
            ends,
            revoked: Vec::new(),
            saved: HashMap::new(),
            failure: None,
            assigned_states: HashMap::new(),
        });
    }

    /// Whether the member keeps state per partition.
    pub fn keeps_states(&self) -> bool {
        self.group().is_some()
    }

    /// Stops keeping states (the read is over): what failed inside a rebalance callback.
    pub fn stop_keeping_states(&self) -> Result<()> {
        let group = self.group().take();
        group.and_then(|g| g.failure).map_or(Ok(()), Err)
    }
}

impl super::client::Reports for Member {
    fn reporter(&self) -> &Reporter {
        &self.reporter
    }
}

impl ClientContext for Member {
    const ENABLE_REFRESH_OAUTH_TOKEN: bool = true;

    fn log(&self, _level: RDKafkaLogLevel, _fac: &str, _message: &str) {}

    fn generate_oauth_token(
        &self,
        _config: Option<&str>,
    ) -> std::result::Result<rdkafka::client::OAuthToken, Box<dyn std::error::Error>> {
        self.reporter.oauth_token()
    }

    fn error(&self, error: KafkaError, reason: &str) {
        self.reporter.record(&error, reason);
    }

    /// librdkafka's statistics (asked for with `--metrics`): each partition's consumer lag.
    fn stats(&self, statistics: rdkafka::Statistics) {
        for (name, topic) in &statistics.topics {
            for (p, partition) in &topic.partitions {
                // -1: not known (a partition not fetched); the internal UA partition is -1.
                if *p >= 0 && partition.consumer_lag >= 0 {
                    let lag = ClientLag {
                        records: Some(partition.consumer_lag),
                        ms: None,
                    };
                    metrics::client_lag(name, &p.to_string(), lag);
                }
            }
        }
    }
}

impl ConsumerContext for Member {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let mut group = self.group();
        let Some(group) = group.as_mut() else {
            return;
        };
        match rebalance {
            Rebalance::Revoke(tpl) => {
                let partitions = group.partitions_in(tpl);
                if !partitions.is_empty() {
                    group.revoke(consumer, partitions);
                }
            }
            Rebalance::Assign(tpl) => group.start_at_saved_states(tpl),
            Rebalance::Error(_) => {}
        }
    }

    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let cooperative = matches!(
            consumer.rebalance_protocol(),
            RebalanceProtocol::Cooperative
        );
        let now = match rebalance {
            // What the member owns now: under cooperative rebalancing an assignment or a
            // revocation is an increment, so the whole is asked of the consumer; under eager
            // rebalancing the assignment is the whole.
            Rebalance::Assign(tpl) if !cooperative => {
                Some(tpl.elements().iter().map(|e| e.partition()).collect())
            }
            Rebalance::Assign(_) | Rebalance::Revoke(_) if cooperative => consumer
                .assignment()
                .ok()
                .map(|tpl| tpl.elements().iter().map(|e| e.partition()).collect()),
            // Eager rebalancing revokes everything, then assigns: unknown until then.
            Rebalance::Assign(_) | Rebalance::Revoke(_) | Rebalance::Error(_) => None,
        };
        *self.assigned.lock().expect("not poisoned") = now;
        self.rebalances.fetch_add(1, Ordering::Release);
    }
}

/// Marks records of `partition` up to and including `offset` as done, for a plain member's
/// next commit.
pub fn store(consumer: &BaseConsumer<Member>, topic: &str, partition: i32, offset: i64) {
    // Fails only for a partition no longer assigned: nothing to commit then.
    let _ = consumer.store_offset(topic, partition, offset);
}

/// Commits what a plain member stored, before its consumer is dropped.
pub fn commit_stored(consumer: &BaseConsumer<Member>) -> Result<()> {
    use RDKafkaErrorCode::{
        AssignmentLost, IllegalGeneration, RebalanceInProgress, UnknownMemberId,
    };
    match consumer.commit_consumer_state(CommitMode::Sync) {
        Ok(()) | Err(KafkaError::ConsumerCommit(RDKafkaErrorCode::NoOffset)) => Ok(()),
        // The group moved the partitions on meanwhile: their next owner reads on from their
        // last commit, repeating what this member had not committed (at least once).
        Err(KafkaError::ConsumerCommit(
            AssignmentLost | IllegalGeneration | RebalanceInProgress | UnknownMemberId,
        )) => Ok(()),
        Err(e) => Err(Error::Unreachable(format!("cannot commit offsets: {e}"))),
    }
}

/// Saves partition states the command handed over in the changelog and commits their
/// offsets (a member with state per partition; others have none to save).
pub fn save(
    consumer: &BaseConsumer<Member>,
    states: Vec<PartitionState>,
    mode: CommitMode,
) -> Result<()> {
    if states.is_empty() {
        return Ok(());
    }
    let mut group = consumer.context().group();
    match group.as_mut() {
        Some(g) => g.save(consumer, states, mode),
        None => Ok(()),
    }
}

/// The group changed this member's partitions (`now`): with state per partition, the
/// command drops the revoked ones' (saved in the callback) and restores the new ones' (read
/// from the changelog in the callback), before any of their records. `owned` are those it
/// keeps state for; `polled_early` the first offset of each partition whose records were
/// polled before it was restored, and held back. Returns the partitions new to the member,
/// each with the next offset of the state it was given (`None`: none, it starts afresh).
pub fn restore(
    consumer: &BaseConsumer<Member>,
    feed: &mut Feed,
    owned: &mut Vec<i32>,
    now: &[i32],
    polled_early: &mut HashMap<i32, i64>,
) -> Result<Vec<(i32, Option<i64>)>> {
    let mut group = consumer.context().group();
    let Some(g) = group.as_mut() else {
        return Ok(Vec::new());
    };
    if let Some(e) = g.failure.take() {
        return Err(e);
    }
    let revoked = std::mem::take(&mut g.revoked);
    owned.retain(|p| !revoked.contains(p));
    let new: Vec<i32> = now.iter().copied().filter(|p| !owned.contains(p)).collect();
    let mut states = Vec::new();
    let mut unread = Vec::new();
    for p in &new {
        match g.assigned_states.remove(p) {
            Some(state) => states.extend(state),
            None => unread.push(*p),
        }
    }
    g.assigned_states.clear();
    // Given without an assignment callback (not by the group): read and sought here.
    let late = g.changelog.read(&unread)?;
    let topic = g.topic.clone();
    drop(group);
    for s in &late {
        seek(
            consumer,
            &topic,
            s.partition,
            s.next_offset,
            "where its saved state stands",
        )?;
    }
    states.extend(late);
    // Records of a new partition polled before it was restored were held back: read again
    // (from its state's offset if that is lower: a seek never skips what no state covers).
    for (p, first) in polled_early.drain() {
        if new.contains(&p) {
            let state = states.iter().find(|s| s.partition == p);
            let offset = state.map_or(first, |s| s.next_offset.min(first));
            seek(
                consumer,
                &topic,
                p,
                offset,
                "its first record not yet handed over",
            )?;
        }
    }
    *owned = now.to_vec();
    let from = |p: i32| {
        states
            .iter()
            .find(|s| s.partition == p)
            .map(|s| s.next_offset)
    };
    let given = new.iter().map(|&p| (p, from(p))).collect();
    feed.restored(now.to_vec(), states)?;
    Ok(given)
}

/// The offset a saved state commits: its own, except that a partition of a bounded read saved
/// at its end before the step handled that end commits one short of it. A restore seeks to the
/// state's own offset, so a committed offset behind it repeats nothing; and `GroupEnd`, which
/// counts a partition finished once its committed offset reaches the end, then knows that its
/// last output (the windows its end closes) is durable: a member killed between the two saves
/// leaves the partition to be finished by its next owner, not counted done.
fn committed_offset(state: &PartitionState, end: Option<i64>) -> i64 {
    match end {
        Some(end) if state.next_offset >= end && !state.ended => (end - 1).max(0),
        _ => state.next_offset,
    }
}

/// Moves the read of `partition` to `offset`; `why` names the place for the error.
fn seek(
    consumer: &BaseConsumer<Member>,
    topic: &str,
    partition: i32,
    offset: i64,
    why: &str,
) -> Result<()> {
    consumer
        .seek(topic, partition, Offset::Offset(offset), Duration::from_secs(10))
        .map_err(|e| {
            Error::Unreachable(format!(
                "cannot go back to {why} in partition {partition} of '{topic}' (offset {offset}): {e}"
            ))
        })
}

/// How often a member that has finished its own partitions asks the group how far the others
/// have got.
const ASK_EVERY: Duration = Duration::from_millis(500);

/// The end of a bounded read as a group member (`-G -e`). A member may end only once every
/// partition of the topic has been read and committed to the end it took at start, by itself
/// or by another: a member that was killed, or one the coordinator still counts, can hold
/// partitions that no one reads until the group moves them, and a member that ended at its own
/// partitions' ends would leave them unread. Until then it stays in the group and reads what
/// the group gives it.
pub struct GroupEnd {
    topic: String,
    group: String,
    /// Each partition's offsets at the start: (partition, log start, log end).
    ends: Vec<(i32, i64, i64)>,
    /// A partition the group has no offset for is read from its end (`auto.offset.reset`):
    /// nothing of it is left to read.
    fresh_at_end: bool,
    /// The committed offset of each partition, as last asked.
    committed: HashMap<i32, i64>,
    asked: Option<Instant>,
    /// When a committed offset last moved (or the member last read a record).
    moved: Instant,
    /// How long the coordinator waits for a silent member before it moves its partitions.
    session: Duration,
    /// How long nothing may move before the member gives up (exit 4).
    patience: Duration,
    /// When the member last joined the group again to be given what no one reads.
    rejoined: Instant,
    done: bool,
}

impl GroupEnd {
    /// The end of a read of `ends` in `group`, giving up after `timeout` plus the group's
    /// session time with nothing moving.
    pub fn new(
        topic: &str,
        group: &str,
        ends: Vec<(i32, i64, i64)>,
        config: &ClientConfig,
        timeout: Duration,
    ) -> Self {
        let reset = config.get("auto.offset.reset").unwrap_or("latest");
        let session = session_timeout(config);
        GroupEnd {
            topic: topic.to_string(),
            group: group.to_string(),
            ends,
            fresh_at_end: matches!(reset, "latest" | "largest" | "end"),
            committed: HashMap::new(),
            asked: None,
            moved: Instant::now(),
            session,
            // A member that died holds its partitions until its session times out.
            patience: timeout + session,
            rejoined: Instant::now(),
            done: false,
        }
    }

    /// Whether to join the group again: nothing has moved for a session time, which is long
    /// enough for the coordinator to have moved a dead member's partitions. A coordinator
    /// that moves them only when a member joins (Tansu does) moves them then.
    pub fn rejoin_due(&mut self, read_at: Instant) -> bool {
        let still = self.moved.max(read_at).elapsed();
        if self.done || still < self.session || self.rejoined.elapsed() < self.session {
            return false;
        }
        self.rejoined = Instant::now();
        true
    }

    pub fn done(&self) -> bool {
        self.done
    }

    /// The partitions no member has read to their end: not empty at the start, not read to
    /// the end by this member (`ended`), not committed to it by another, and not one the group
    /// has no offset for and would read from its end.
    fn unfinished(&self, ended: &HashSet<i32>) -> Vec<i32> {
        let finished = |p: &i32, low: &i64, high: &i64| {
            high <= low
                || ended.contains(p)
                || match self.committed.get(p) {
                    Some(c) => c >= high,
                    None => self.fresh_at_end,
                }
        };
        (self.ends.iter())
            .filter(|(p, low, high)| !finished(p, low, high))
            .map(|(p, ..)| *p)
            .collect()
    }

    /// Asks the group (at most every `ASK_EVERY`) how far every partition is committed, once
    /// the member has read its own to their ends (`ended`: every partition it has read to its
    /// end); `read_at` is when it last read a record.
    pub fn ask(
        &mut self,
        consumer: &BaseConsumer<Member>,
        read_at: Instant,
        ended: &HashSet<i32>,
    ) -> Result<()> {
        if self.done || self.asked.is_some_and(|at| at.elapsed() < ASK_EVERY) {
            return Ok(());
        }
        self.asked = Some(Instant::now());
        // What this member stored goes out now rather than at the next automatic commit.
        let _ = consumer.commit_consumer_state(CommitMode::Async);
        let mut tpl = TopicPartitionList::new();
        for (p, ..) in &self.ends {
            tpl.add_partition(&self.topic, *p);
        }
        let mut committed = Vec::new();
        if let Ok(found) = consumer.committed_offsets(tpl, ASK_EVERY) {
            for e in found.elements() {
                if let Offset::Offset(at) = e.offset() {
                    committed.push((e.partition(), at));
                }
            }
        }
        self.heard(&committed, read_at, ended)
    }

    /// Takes in the group's committed offsets: done once no partition is left unread; an
    /// error once nothing has moved for the patience, naming what no member finished.
    fn heard(
        &mut self,
        committed: &[(i32, i64)],
        read_at: Instant,
        ended: &HashSet<i32>,
    ) -> Result<()> {
        for &(p, at) in committed {
            if self.committed.insert(p, at).is_none_or(|was| was < at) {
                self.moved = Instant::now();
            }
        }
        let unfinished = self.unfinished(ended);
        self.done = unfinished.is_empty();
        let still = self.moved.max(read_at).elapsed();
        if self.done || still < self.patience {
            return Ok(());
        }
        let names: Vec<String> = unfinished.iter().map(i32::to_string).collect();
        Err(Error::Unreachable(format!(
            "partitions {} of '{}' were not read to their end by any member of group '{}' in {still:?}: the member that holds them may have died before the group moved them",
            names.join(", "),
            self.topic,
            self.group
        )))
    }
}

/// How long the group waits for a silent member before it moves its partitions.
fn session_timeout(config: &ClientConfig) -> Duration {
    let ms = config
        .get("session.timeout.ms")
        .and_then(|v| v.parse().ok());
    // librdkafka's default.
    Duration::from_millis(ms.unwrap_or(45_000))
}

/// How a consumer-group member keeps its partitions' states: the command gives them up
/// through `revoker`, and they are saved in the changelog, then their offsets committed.
struct GroupState {
    revoker: Revoker,
    changelog: Changelog,
    topic: String,
    /// A bounded read's end of each partition.
    ends: HashMap<i32, i64>,
    /// Partitions revoked since the read loop last looked.
    revoked: Vec<i32>,
    /// The next offset of each partition's latest save: an older one that comes later (a
    /// periodic save overtaken by a revocation) is not written over it.
    saved: HashMap<i32, i64>,
    /// The first failure of a save inside a rebalance callback, for the read loop to report.
    failure: Option<Error>,
    /// The saved state of each partition assigned since the read loop last looked (`None`:
    /// it has none), read in the assignment callback.
    assigned_states: HashMap<i32, Option<PartitionState>>,
}

impl GroupState {
    /// The partitions of our topic in `tpl`.
    fn partitions_in(&self, tpl: &TopicPartitionList) -> Vec<i32> {
        (tpl.elements_for_topic(&self.topic).iter())
            .map(|e| e.partition())
            .collect()
    }

    /// The group gives this member the partitions in `tpl`: their saved states are read, and
    /// each starts where its state stands, set in the assignment itself. Not from the
    /// group's committed offset, which may be ahead (a member the coordinator had given up
    /// on can save an older state after the next owner saved and committed a newer one);
    /// and not by a seek after the assignment, which can lose a race with the lookup of the
    /// committed offset (librdkafka issue 2256) and skip the records between.
    fn start_at_saved_states(&mut self, tpl: &TopicPartitionList) {
        let partitions = self.partitions_in(tpl);
        let states = match self.changelog.read(&partitions) {
            Ok(states) => states,
            Err(e) => {
                self.failure.get_or_insert(e);
                return;
            }
        };
        for mut e in tpl.elements_for_topic(&self.topic) {
            let p = e.partition();
            let state = states.iter().find(|s| s.partition == p).cloned();
            if let Some(s) = &state {
                // Setting an element's offset writes through to the list being assigned.
                let _ = e.set_offset(Offset::Offset(s.next_offset));
                self.saved.insert(p, s.next_offset);
            }
            self.assigned_states.insert(p, state);
        }
    }

    /// Saves the `states` of partitions still assigned: one revoked since the command handed
    /// its state over had a newer one saved as it went (or, lost, is another member's).
    fn save(
        &mut self,
        consumer: &BaseConsumer<Member>,
        mut states: Vec<PartitionState>,
        mode: CommitMode,
    ) -> Result<()> {
        if let Ok(assigned) = consumer.assignment() {
            states.retain(|s| assigned.find_partition(&self.topic, s.partition).is_some());
        }
        self.write(consumer, states, mode)
    }

    /// Saves `states` in the changelog and, once the broker has them, commits their offsets:
    /// the group's offsets never run ahead of the saved states.
    fn write(
        &mut self,
        consumer: &BaseConsumer<Member>,
        states: Vec<PartitionState>,
        mode: CommitMode,
    ) -> Result<()> {
        let newer: Vec<PartitionState> = states
            .into_iter()
            .filter(|s| {
                self.saved
                    .get(&s.partition)
                    .is_none_or(|&n| s.next_offset >= n)
            })
            .collect();
        if newer.is_empty() {
            return Ok(());
        }
        self.changelog.write(&newer)?;
        let mut offsets = TopicPartitionList::new();
        for s in &newer {
            self.saved.insert(s.partition, s.next_offset);
            let at = committed_offset(s, self.ends.get(&s.partition).copied());
            offsets
                .add_partition_offset(&self.topic, s.partition, Offset::Offset(at))
                .map_err(|e| Error::Usage(format!("partition {}: {e}", s.partition)))?;
        }
        match consumer.commit(&offsets, mode) {
            // A partition moved on meanwhile: its next owner commits; the state is saved.
            Ok(()) | Err(KafkaError::ConsumerCommit(_)) => Ok(()),
            Err(e) => Err(Error::Unreachable(format!("cannot commit offsets: {e}"))),
        }
    }

    /// The group takes `partitions` away: the command hands over their states, which are
    /// saved and committed before the callback returns and the group moves them.
    fn revoke(&mut self, consumer: &BaseConsumer<Member>, partitions: Vec<i32>) {
        self.revoked.extend(&partitions);
        // Lost for a missed heartbeat: another member may own them already, so their state
        // is not written over its own; the command drops them.
        let lost = consumer.assignment_lost();
        if lost {
            let names: Vec<String> = partitions.iter().map(i32::to_string).collect();
            eprintln!(
                "weir: the group took partitions {} of '{}' from this member, which it had not heard from in time: their next owners repeat the output since their last saved states",
                names.join(", "),
                self.topic
            );
        }
        let Some(states) = self.revoker.revoke(partitions) else {
            return;
        };
        if lost {
            return;
        }
        if let Err(e) = self.write(consumer, states, CommitMode::Sync) {
            self.failure.get_or_insert(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_is_committed_at_its_end_only_once_its_end_is_handled() {
        let state = |next_offset, ended| PartitionState {
            partition: 0,
            next_offset,
            state: Vec::new(),
            ended,
        };
        assert_eq!(committed_offset(&state(7, false), Some(10)), 7);
        assert_eq!(
            committed_offset(&state(10, false), Some(10)),
            9,
            "end not yet handled"
        );
        assert_eq!(committed_offset(&state(10, true), Some(10)), 10);
        assert_eq!(
            committed_offset(&state(10, false), None),
            10,
            "an unbounded read"
        );
        assert_eq!(
            committed_offset(&state(0, false), Some(0)),
            0,
            "an empty partition"
        );
    }

    fn group_end(fresh_at_end: bool, patience: Duration) -> GroupEnd {
        let mut config = ClientConfig::new();
        let reset = if fresh_at_end { "latest" } else { "earliest" };
        config.set("auto.offset.reset", reset);
        config.set("session.timeout.ms", "0");
        // Partition 2 was empty at the start.
        let ends = vec![(0, 0, 10), (1, 5, 20), (2, 7, 7)];
        GroupEnd::new("t", "g", ends, &config, patience)
    }

    /// A partition is finished when this member read it to its end, when the group committed
    /// it to its end, or when it was empty; one the group has no offset for is finished only
    /// if the group would read it from its end.
    #[test]
    fn every_partition_must_be_read_by_someone() {
        let hour = Duration::from_secs(3600);
        let mut end = group_end(false, hour);
        let ended = HashSet::from([0]);
        end.heard(&[(1, 19)], Instant::now(), &ended).unwrap();
        assert!(!end.done(), "partition 1 is one short");
        end.heard(&[(1, 20)], Instant::now(), &ended).unwrap();
        assert!(end.done());
        let mut end = group_end(false, hour);
        end.heard(&[], Instant::now(), &ended).unwrap();
        assert!(!end.done(), "no offset, read from the beginning: unread");
        let mut end = group_end(true, hour);
        end.heard(&[], Instant::now(), &ended).unwrap();
        assert!(end.done(), "no offset, read from the end: nothing left");
    }

    /// Nothing moving for the patience is exit 4, naming the partitions no one finished;
    /// a committed offset that moves, or a record read, starts the patience again.
    #[test]
    fn a_member_gives_up_naming_what_no_one_read() {
        let mut end = group_end(false, Duration::from_millis(50));
        let ended = HashSet::new();
        end.heard(&[(0, 3)], Instant::now(), &ended).unwrap();
        std::thread::sleep(Duration::from_millis(60));
        end.heard(&[(0, 4)], Instant::now() - Duration::from_secs(1), &ended)
            .unwrap();
        std::thread::sleep(Duration::from_millis(60));
        let e = end.heard(&[(0, 4)], Instant::now() - Duration::from_secs(1), &ended);
        let e = e.unwrap_err().to_string();
        assert!(
            e.starts_with(
                "partitions 0, 1 of 't' were not read to their end by any member of group 'g'"
            ),
            "{e}"
        );
        assert!(
            end.heard(&[], Instant::now(), &ended).is_ok(),
            "a record was just read"
        );
    }
}
