//! The Kafka source: a topic's partitions read from resolved positions to optional end
//! offsets, alone or as a member of a consumer group, each record rendered as the command
//! wants it (its envelope, its value, or a kcat format) and handed over in chunks.
//!
//! The synchronous rdkafka consumer runs on the reader thread: librdkafka already does its
//! network I/O on threads of its own, so an async runtime here would add nothing.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{BorrowedMessage, Headers, Message as _};
use rdkafka::{Offset, Timestamp, TopicPartitionList};

use super::changelog::Changelog;
use super::client::{reach, scrub, topic_error, unreachable, Reporter};
use super::config::ClientOptions;
use super::group::{self, GroupEnd, Member};
use super::plan::ReadPlan;
use crate::core::envelope::{Message, Render, TimestampType};
use crate::core::shuffle::{read_forwarded, Marker, MARKER_HEADER};
use crate::core::time::{now_millis, LogPosition, Millis};
use crate::error::{Error, Result};
use crate::io::schema::{Decoders, Decoding};
use crate::io::spec::KafkaSpec;
use crate::runtime::metrics;
use crate::runtime::{Feed, Framing, Source, Starts};

/// How long a poll waits once records stop coming.
const IDLE_WAIT: Duration = Duration::from_millis(100);
/// How long the consumer's close (its leave of the group) may take at the end of a read.
const CLOSE_LIMIT: Duration = Duration::from_secs(10);

/// A topic being read: its partitions, each with an optional end offset.
pub struct KafkaSource {
    consumer: BaseConsumer<Member>,
    /// Keys and values in a schema's binary are decoded into JSON before they are rendered.
    decoding: Option<Decoding>,
    pub topic: Arc<str>,
    /// Exclusive end offset per partition (bounded reads only).
    ends: HashMap<i32, i64>,
    /// A --to time still ahead of the log: a partition without an end offset ends at its
    /// first record from then on, or, once the time has passed, at the end it has reached.
    until: Option<Millis>,
    /// Partitions without an end offset that have reached the end of their log for now.
    caught_up: HashSet<i32>,
    /// The partitions we assigned ourselves; `None` for a group member, whose partitions the
    /// group gives (see `Member::assigned`).
    own: Option<Vec<i32>>,
    grouped: bool,
    /// A group member stores each handled record's offset for the next commit; one that keeps
    /// state per partition commits as it saves the states instead.
    stores_offsets: bool,
    /// With -e a partition is done at the end it reaches, even before its snapshot end.
    close_at_eof: bool,
    /// How many records a bounded read will see at most (for a progress bar).
    pub total: Option<u64>,
    /// The read stops once every partition has reached its end.
    bounded: bool,
    /// The partitions that reached their end.
    ended: std::collections::HashSet<i32>,
    timeout: Duration,
    /// When the last record (or the start) was seen, to tell a dead broker from a quiet one.
    last_progress: Instant,
    /// When the cluster last answered, and since when it has not (a restart, a rolling
    /// upgrade): the read waits for it up to `timeout`.
    answered: Instant,
    down_since: Option<Instant>,
    /// How long the next poll waits: nothing while records flow, a little once they stop.
    wait: Duration,
    progress: Option<ProgressBar>,
    /// How each record becomes the bytes a command sees.
    render: Render,
    /// A checkpoint's next offset per partition: a group member skips what comes before
    /// (the checkpoint's state holds it already, and the group's offsets may lag behind).
    resume: HashMap<i32, i64>,
    /// Where each partition of ours starts, resolved from `--from` (or the checkpoint): said
    /// to the feed before any record, so that a checkpoint keeps a partition none of whose
    /// records were handled yet where this run began it.
    starts: Vec<(i32, i64)>,
    /// A group member that keeps state per partition saves it here; taken into the client
    /// context when the read starts.
    changelog: Option<Changelog>,
    /// A bounded read as a group member: it ends once every partition is read, by anyone.
    group_end: Option<GroupEnd>,
    /// How many partitions the topic has.
    pub partition_count: usize,
    /// `-e`, and the group: a bounded member's end is taken from them (`end_at_log_ends`), at
    /// the start or, behind a shuffle, once the writers end.
    exit_at_end: bool,
    group: Option<String>,
    /// The topic's partitions read (all of them, for a group member).
    partitions: Vec<i32>,
    /// The client's configuration, for the `GroupEnd` of a bounded member.
    config: rdkafka::config::ClientConfig,
    /// The partitions reported read to their end.
    reported_ended: HashSet<i32>,
    /// The reader of a shuffle's topic: the writers' stage, whose end (`-e`) fixes this
    /// read's ends, and whose markers are handed over as such.
    upstream: Option<Arc<Upstream>>,
}

/// A stage that writes the topic a source reads (a shuffle's writers): the source fails when
/// it fails, and a bounded read takes the topic's ends once it has ended.
#[derive(Default)]
pub struct Upstream {
    ended: std::sync::atomic::AtomicBool,
    failure: std::sync::Mutex<Option<Error>>,
}

impl Upstream {
    /// The stage ended, as `result` says.
    pub fn end(&self, result: Result<()>) {
        if let Err(e) = result {
            *self.failure.lock().expect("not poisoned") = Some(e);
        }
        self.ended.store(true, std::sync::atomic::Ordering::Release);
    }

    fn ended(&self) -> bool {
        self.ended.load(std::sync::atomic::Ordering::Acquire)
    }

    fn failure(&self) -> Option<Error> {
        self.failure.lock().expect("not poisoned").take()
    }
}

/// One step of a read.
pub enum Polled<'a> {
    Record(BorrowedMessage<'a>),
    /// Nothing arrived within the poll interval.
    Idle,
    /// Every partition reached its end (bounded reads only).
    End,
}

impl KafkaSource {
    /// Connects, resolves the positions of `plan` and joins the group or assigns the
    /// partitions. Every rule of `plan` was checked before: what fails here is the cluster's
    /// answer (exit 4), a partition the topic lacks, or a client property librdkafka refuses.
    pub fn open(
        spec: &KafkaSpec,
        plan: &ReadPlan,
        client: &ClientOptions,
        render: Render,
        resume: &[(i32, i64)],
    ) -> Result<KafkaSource> {
        let mut config = client.config(spec);
        group::configure(&mut config, plan);
        let eof = if plan.bounded || plan.exit_at_end {
            "true"
        } else {
            "false"
        };
        config.set("enable.partition.eof", eof);
        // With --metrics the client reports each partition's lag once a second.
        if metrics::enabled() && config.get("statistics.interval.ms").is_none() {
            config.set("statistics.interval.ms", "1000");
        }
        let consumer: BaseConsumer<Member> = config
            .create_with_context(Member::new(Reporter::for_client(client, spec)?))
            .map_err(|e| Error::Usage(format!("Kafka client configuration: {}", scrub(&e))))?;
        let (partitions, count) = topic_partitions(&consumer, spec, plan, client.timeout)?;
        let mut source = KafkaSource {
            consumer,
            topic: Arc::from(plan.topic.as_str()),
            ends: HashMap::new(),
            until: None,
            caught_up: Default::default(),
            own: None,
            grouped: plan.group.is_some(),
            stores_offsets: plan.group.is_some() && plan.changelog.is_none(),
            close_at_eof: plan.exit_at_end && plan.bounded,
            total: None,
            bounded: plan.bounded,
            ended: Default::default(),
            timeout: client.timeout,
            wait: Duration::ZERO,
            progress: None,
            last_progress: Instant::now(),
            answered: Instant::now(),
            down_since: None,
            render,
            resume: resume.iter().copied().collect(),
            starts: Vec::new(),
            changelog: None,
            group_end: None,
            partition_count: count,
            exit_at_end: plan.exit_at_end,
            group: plan.group.clone(),
            partitions: partitions.clone(),
            config: config.clone(),
            reported_ended: HashSet::new(),
            upstream: None,
            decoding: None,
        };
        if let (Some(changelog), Some(_)) = (&plan.changelog, &plan.group) {
            let (topic, job) = (&changelog.topic, &changelog.job);
            source.changelog = Some(Changelog::open(spec, client, topic, job, count)?);
        }
        match plan.balanced {
            true => {
                source.say_a_new_group_starts_at_the_end(plan, &partitions);
                source.join(spec)?
            }
            false => source.assign(&partitions, plan, spec)?,
        }
        Ok(source)
    }

    /// A group without a commit on the topic, told nothing of where to start, starts at the
    /// end of each partition (Kafka's default): a first run that reads nothing says why.
    fn say_a_new_group_starts_at_the_end(&self, plan: &ReadPlan, partitions: &[i32]) {
        let from_end = matches!(
            self.config.get("auto.offset.reset"),
            None | Some("latest" | "end" | "largest")
        );
        if plan.from != LogPosition::Stored || !from_end {
            return;
        }
        let mut all = TopicPartitionList::new();
        for &p in partitions {
            all.add_partition(&self.topic, p);
        }
        let Ok(committed) = self.consumer.committed_offsets(all, self.timeout) else {
            return;
        };
        if committed
            .elements()
            .iter()
            .all(|e| e.offset() == Offset::Invalid)
        {
            eprintln!(
                "weir: group '{}' has no committed offsets on '{}': it starts at the end of each partition, as Kafka's consumers do (--from beginning reads what the topic holds)",
                plan.group.as_deref().unwrap_or_default(),
                self.topic
            );
        }
    }

    /// Joins the group, which gives the partitions; a bounded read takes the ends of all of
    /// them first, which every member's reading must reach before this one may end.
    fn join(&mut self, spec: &KafkaSpec) -> Result<()> {
        if self.bounded {
            self.end_at_log_ends()
                .map_err(|e| unreachable("cannot read offsets from", spec, e))?;
        }
        self.consumer
            .subscribe(&[&self.topic])
            .map_err(|e| unreachable("cannot join the group at", spec, e))
    }

    /// Assigns `partitions` to ourselves at their starts: a checkpoint's offsets, else
    /// `--from`'s. Partitions already at their end are not read at all.
    fn assign(&mut self, partitions: &[i32], plan: &ReadPlan, spec: &KafkaSpec) -> Result<()> {
        // A bounded read resolves its starts to offsets, to know which partitions are empty;
        // a checkpoint's offsets come before --from.
        let mut starts = self.resolve(partitions, &plan.from, spec, !self.bounded)?;
        for (p, start) in partitions.iter().zip(starts.iter_mut()) {
            if let Some(&next) = self.resume.get(p) {
                *start = Offset::Offset(next);
            }
        }
        if let Some(to) = &plan.to {
            self.end_at(partitions, &starts, to, plan.exit_at_end, spec)?;
        }
        let mut assignment = TopicPartitionList::new();
        let mut own = Vec::new();
        for (&p, start) in partitions.iter().zip(&starts) {
            if let Offset::Offset(first) = start {
                self.starts.push((p, *first));
            }
            if !self.ended.contains(&p) {
                assignment
                    .add_partition_offset(&self.topic, p, *start)
                    .map_err(|e| Error::Usage(format!("partition {p}: {e}")))?;
                own.push(p);
            }
        }
        self.own = Some(own);
        self.consumer
            .assign(&assignment)
            .map_err(|e| unreachable("cannot read from", spec, e))
    }

    /// Sets each partition's end at `to`, and how many records the read will see at most.
    fn end_at(
        &mut self,
        partitions: &[i32],
        starts: &[Offset],
        to: &LogPosition,
        exit_at_end: bool,
        spec: &KafkaSpec,
    ) -> Result<()> {
        // A --to time still ahead (without -e) is not looked up: the lookup would fix each
        // end at the log's end now, leaving out what arrives before the time. Instead each
        // partition reads on to its first record from then on (the offset the lookup gives
        // once there is one), or until the time has passed.
        let ahead = match to {
            LogPosition::Time(t) if !exit_at_end && *t > now_millis() => Some(*t),
            _ => None,
        };
        self.until = ahead;
        let ends = match ahead {
            Some(_) => Vec::new(),
            None => self.resolve(partitions, to, spec, false)?,
        };
        let mut total = ahead.is_none().then_some(0u64);
        for ((&p, end), start) in partitions.iter().zip(ends).zip(starts) {
            let Offset::Offset(end) = end else {
                unreachable!("the plan refuses --to stored, the one logical end");
            };
            self.ends.insert(p, end);
            if matches!(start, Offset::Offset(s) if *s >= end) {
                self.ended.insert(p);
            }
            // Known only when every start is an offset (not the group's stored one).
            total = match (total, start) {
                (Some(t), Offset::Offset(s)) => Some(t + (end - s).max(0) as u64),
                _ => None,
            };
        }
        self.total = total;
        Ok(())
    }

    /// Turns a position into a concrete offset per partition (or a logical one librdkafka
    /// resolves: beginning, end, stored). `-N` and times are looked up here.
    fn resolve(
        &self,
        partitions: &[i32],
        pos: &LogPosition,
        spec: &KafkaSpec,
        logical: bool,
    ) -> Result<Vec<Offset>> {
        let watermarks = |p: i32| {
            self.consumer
                .fetch_watermarks(&self.topic, p, self.timeout)
                .map_err(|e| unreachable("cannot read offsets from", spec, e))
        };
        let mut out = Vec::with_capacity(partitions.len());
        match pos {
            LogPosition::Beginning if logical => out.resize(partitions.len(), Offset::Beginning),
            LogPosition::Stored => out.resize(partitions.len(), Offset::Stored),
            LogPosition::Offset(n) => out.resize(partitions.len(), Offset::Offset(*n)),
            LogPosition::Beginning => {
                for &p in partitions {
                    out.push(Offset::Offset(watermarks(p)?.0));
                }
            }
            LogPosition::End => {
                for &p in partitions {
                    out.push(Offset::Offset(watermarks(p)?.1));
                }
            }
            LogPosition::FromEnd(n) => {
                for &p in partitions {
                    let (low, high) = watermarks(p)?;
                    out.push(Offset::Offset((high - *n as i64).max(low)));
                }
            }
            LogPosition::Time(t) => {
                let mut tpl = TopicPartitionList::new();
                for &p in partitions {
                    tpl.add_partition_offset(&self.topic, p, Offset::Offset(*t))
                        .map_err(|e| Error::Usage(format!("partition {p}: {e}")))?;
                }
                let found = self
                    .consumer
                    .offsets_for_times(tpl, self.timeout)
                    .map_err(|e| unreachable("cannot look up offsets by time at", spec, e))?;
                for &p in partitions {
                    let offset = found
                        .find_partition(&self.topic, p)
                        .map(|e| e.offset())
                        .unwrap_or(Offset::End);
                    // No record at or after the time: start at (or end before) the end.
                    out.push(match offset {
                        Offset::Offset(n) => Offset::Offset(n),
                        _ => Offset::Offset(watermarks(p)?.1),
                    });
                }
                drop(found);
            }
        }
        Ok(out)
    }

    /// Every partition reached its end (bounded reads only).
    pub fn at_end(&self) -> bool {
        if !self.bounded {
            return false;
        }
        let all_ended = |partitions: &[i32]| partitions.iter().all(|p| self.ended.contains(p));
        match &self.own {
            Some(own) => all_ended(own),
            // Every partition the group gave us (none at all counts too; unknown while the
            // group is still sharing them out), and every other member's too.
            None => self.own_ended() && self.group_end.as_ref().is_none_or(GroupEnd::done),
        }
    }

    /// A bounded group member that has read its own partitions waits for every member's
    /// (`GroupEnd`), reading what the group gives it meanwhile.
    fn wait_for_group(&mut self) -> Result<()> {
        if self.group_end.as_ref().is_none_or(GroupEnd::done) || !self.own_ended() {
            return Ok(());
        }
        let group_end = self.group_end.as_mut().expect("checked above");
        group_end.ask(&self.consumer, self.last_progress, &self.ended)?;
        if group_end.rejoin_due(self.last_progress) {
            // Joined again, the member may be given what no one has read.
            self.consumer.unsubscribe();
            let topic = self.topic.clone();
            (self.consumer.subscribe(&[&topic]))
                .map_err(|e| Error::Unreachable(format!("cannot join the group again: {e}")))?;
        }
        Ok(())
    }

    /// Whether every partition the group gave this member has reached its end.
    fn own_ended(&self) -> bool {
        let assigned = self.consumer.context().assigned();
        assigned.is_some_and(|a| a.iter().all(|p| self.ended.contains(p)))
    }

    /// Counts records on this bar (a bounded read on a terminal), cleared at the end.
    /// Decodes keys and values with these before rendering them.
    pub fn decode_with(&mut self, decoders: Decoders) {
        self.decoding = Some(Decoding::new(decoders));
    }

    pub fn show_progress(&mut self, bar: Option<ProgressBar>) {
        self.progress = bar;
    }

    /// The next record, if one comes soon: `Idle` says there is none right now, so that the
    /// caller can hand on what it has.
    fn poll(&mut self) -> Result<Polled<'_>> {
        self.end_caught_up_past_until();
        if self.at_end() {
            if let Some(bar) = self.progress.take() {
                bar.finish_and_clear();
            }
            return Ok(Polled::End);
        }
        let polled = self.consumer.poll(self.wait);
        // Records flowing: take the next at once; none: wait a little for it.
        self.wait = if matches!(polled, Some(Ok(_))) {
            Duration::ZERO
        } else {
            IDLE_WAIT
        };
        let watch = Watch {
            timeout: self.timeout,
            answered: &mut self.answered,
            down_since: &mut self.down_since,
        };
        match polled {
            None => quiet(&self.consumer, &self.topic, watch),
            // The brokers went away: librdkafka reconnects, and the read waits for them.
            Some(Err(e)) if is_outage(&e) => {
                self.consumer.context().record(&e);
                watch.down_since.get_or_insert_with(Instant::now);
                quiet(&self.consumer, &self.topic, watch)
            }
            Some(Err(KafkaError::PartitionEOF(p))) => {
                if self.close_at_eof && self.past_end(p) {
                    self.ended.insert(p);
                } else if self.until.is_some() && !self.ends.contains_key(&p) {
                    // Ended at the next poll once the time has passed.
                    self.caught_up.insert(p);
                }
                Ok(Polled::Idle)
            }
            Some(Err(e)) => Err(Error::Unreachable(format!("Kafka: {e}"))),
            Some(Ok(m)) => {
                self.last_progress = Instant::now();
                *watch.answered = self.last_progress;
                *watch.down_since = None;
                if let Some(bar) = &self.progress {
                    bar.inc(1);
                }
                let p = m.partition();
                if let Some(until) = self.until.filter(|_| !self.ends.contains_key(&p)) {
                    self.caught_up.remove(&p);
                    if m.timestamp().to_millis().is_some_and(|ts| ts >= until) {
                        // The partition's end, as the time would have resolved at the start.
                        self.ends.insert(p, m.offset());
                    }
                }
                if let Some(&end) = self.ends.get(&p) {
                    if m.offset() >= end {
                        self.ended.insert(p);
                        return Ok(Polled::Idle);
                    }
                    if m.offset() + 1 >= end {
                        self.ended.insert(p);
                    }
                }
                if self.resume.get(&p).is_some_and(|&next| m.offset() < next) {
                    // Covered by the checkpoint already.
                    return Ok(Polled::Idle);
                }
                Ok(Polled::Record(m))
            }
        }
    }

    /// Reads what `upstream` writes to this topic: fails when it fails, and, with `-e`, ends
    /// at the topic's ends as they are once it has ended.
    pub fn follow(&mut self, upstream: Arc<Upstream>) {
        self.upstream = Some(upstream);
    }

    /// Whether a partition at its end for now is past its end offset: always, but behind an
    /// upstream stage, whose last records may come after an end reached before it ended.
    fn past_end(&self, p: i32) -> bool {
        if self.upstream.is_none() {
            return true;
        }
        let Some(&end) = self.ends.get(&p) else {
            return false;
        };
        let position = self.consumer.position().ok().and_then(|list| {
            list.find_partition(&self.topic, p)
                .and_then(|e| e.offset().to_raw())
                .filter(|&at| at >= 0)
        });
        // Nothing read since the group gave it: it starts where the group committed.
        let at = position.or_else(|| self.committed(p));
        at.is_some_and(|at| at >= end)
    }

    /// The group's committed offset of partition `p`, if it has one.
    fn committed(&self, p: i32) -> Option<i64> {
        let mut list = TopicPartitionList::new();
        list.add_partition(&self.topic, p);
        let found = self.consumer.committed_offsets(list, self.timeout).ok()?;
        let offset = found.find_partition(&self.topic, p)?.offset();
        offset.to_raw().filter(|&at| at >= 0)
    }

    /// Behind an upstream stage: its failure is this read's; once it has ended, a read with
    /// `-e` takes the topic's ends, which every member must reach before any may end.
    fn watch_upstream(&mut self) -> Result<()> {
        let Some(upstream) = &self.upstream else {
            return Ok(());
        };
        if let Some(e) = upstream.failure() {
            return Err(e);
        }
        if self.bounded || !upstream.ended() || !self.exit_at_end {
            return Ok(());
        }
        self.end_at_log_ends().map_err(|e| {
            Error::Unreachable(format!("cannot read offsets of '{}': {e}", self.topic))
        })?;
        self.bounded = true;
        self.close_at_eof = true;
        let assigned = self.consumer.context().assigned().unwrap_or_default();
        for p in assigned {
            if self.past_end(p) {
                self.ended.insert(p);
            }
        }
        Ok(())
    }

    /// A group member's bounded read ends at every partition's log end as it is now, which
    /// every member's reading must reach before this one may end (`GroupEnd`).
    fn end_at_log_ends(&mut self) -> std::result::Result<(), KafkaError> {
        let mut ends = Vec::with_capacity(self.partitions.len());
        for &p in &self.partitions {
            let (low, high) = (self.consumer).fetch_watermarks(&self.topic, p, self.timeout)?;
            self.ends.insert(p, high);
            ends.push((p, low, high));
        }
        let group = self.group.as_deref().unwrap_or_default();
        let end = GroupEnd::new(&self.topic, group, ends, &self.config, self.timeout);
        self.group_end = Some(end);
        Ok(())
    }

    /// Once a --to time ahead has passed, nothing before it can come any more: the partitions
    /// at the end of their log are done. (The clock is read only while one waits there.)
    fn end_caught_up_past_until(&mut self) {
        if self.caught_up.is_empty() {
            return;
        }
        if self.until.is_some_and(|t| now_millis() >= t) {
            self.ended.extend(self.caught_up.drain());
        }
    }

    /// Marks records up to and including `offset` as done, for the group's next commit (a
    /// member with state per partition commits as it saves them instead).
    fn done(&self, partition: i32, offset: i64) {
        if self.stores_offsets {
            group::store(&self.consumer, &self.topic, partition, offset);
        }
    }

    /// Clears the progress bar and commits what was stored (with a group), before the
    /// consumer is dropped.
    fn finish(&self) -> Result<()> {
        if let Some(bar) = &self.progress {
            bar.finish_and_clear();
        }
        match self.grouped {
            true => group::commit_stored(&self.consumer),
            false => Ok(()),
        }
    }
}

impl Source for KafkaSource {
    fn read(mut self: Box<Self>, feed: &mut Feed) -> Result<()> {
        if let Some(changelog) = self.changelog.take() {
            let topic = self.topic.to_string();
            let ends = self.ends.clone();
            (self.consumer.context()).keep_states(feed.revoker(), changelog, topic, ends);
        }
        let starts = std::mem::take(&mut self.starts);
        let said = match starts.is_empty() {
            true => Ok(()),
            false => feed.starts(Starts::Partitions(starts)),
        };
        let read = said.and_then(|()| self.read_records(feed));
        // Records still in flight are committed once the command has handled them.
        feed.wait_handled(|partition, offset| self.done(partition, offset));
        if self.down_since.is_some() {
            // The cluster is out of reach: a save or commit would wait for it, and so would
            // closing the consumer (its leave of the group), which is therefore left to the
            // process's exit. The next owner reads on from the last commit (at least once);
            // the output so far is intact.
            std::mem::forget(self);
            return read;
        }
        // The states saved as the read ended (at its end, or on a stop) go to the changelog;
        // then the consumer gives its partitions up without them.
        let saved = group::save(&self.consumer, feed.take_saved(), CommitMode::Sync);
        let failed = self.consumer.context().stop_keeping_states();
        let ended = read.and(saved).and(failed).and(self.finish());
        close_within(self, CLOSE_LIMIT);
        ended
    }

    fn join_at_end(&self) -> bool {
        true
    }
}

impl KafkaSource {
    /// Polls records and hands them over in chunks: when a chunk is full, when no record is
    /// ready (so that records flow promptly through a live pipeline), and at the end. The
    /// partitions read are reported before their records: ours at the start, a group's
    /// after each rebalance.
    fn read_records(&mut self, feed: &mut Feed) -> Result<()> {
        let topic = self.topic.clone();
        let render = std::mem::take(&mut self.render);
        let mut decoding = self.decoding.take();
        let mut pending = Framing::new(feed);
        let mut reported: Option<Vec<i32>> = None;
        // The partitions the command keeps state for (a member with state per partition).
        let mut owned: Vec<i32> = Vec::new();
        let keeps_states = self.consumer.context().keeps_states();
        let mut polled_early = HashMap::new();
        let mut rebalances = None;
        // How many partitions are read, for the envelope's `partitions`.
        let mut reading = 0;
        let counted = matches!(render, Render::Piped);
        loop {
            if feed.cancelled() {
                return Ok(());
            }
            self.acknowledge(feed)?;
            self.watch_upstream()?;
            self.wait_for_group()?;
            let seen = self.consumer.context().rebalances();
            if rebalances != Some(seen) {
                rebalances = Some(seen);
                let changed = (&mut pending, &mut owned, &mut polled_early);
                let count = self.follow_assignment(feed, changed, &mut reported)?;
                if let Some(n) = count.filter(|_| counted) {
                    reading = n as u32;
                }
            }
            self.report_ended(&mut pending, feed, &mut reported)?;
            let shuffled = self.upstream.is_some();
            let hand_over = match self.poll()? {
                Polled::End | Polled::Idle => true,
                // Polled in the poll whose callback assigned its partition, before the
                // partition's state is restored: held back, and read again once it is.
                Polled::Record(m) if keeps_states && !owned.contains(&m.partition()) => {
                    polled_early.entry(m.partition()).or_insert(m.offset());
                    false
                }
                Polled::Record(m) if shuffled && is_marker(&m) => {
                    pending.hand_over(feed, &topic)?;
                    hand_over_marker(&m, feed)?;
                    false
                }
                Polled::Record(m) => {
                    let message = Message {
                        partitions: reading,
                        ..message(&m, &topic)
                    };
                    let framing = (&mut pending, &mut *feed, &topic);
                    frame(message, shuffled, &render, decoding.as_mut(), framing)?;
                    pending.input_bytes += (m.payload_len() + m.key_len()) as u64;
                    pending.is_full()
                }
            };
            // The last records before the end go out too.
            let at_end = self.at_end();
            if hand_over || at_end {
                pending.hand_over(feed, &topic)?;
            }
            if at_end {
                return Ok(());
            }
        }
    }

    /// At the start and after each rebalance: restores the state of the partitions now
    /// owned (records polled before the change go out first) and reports the partitions
    /// read, if they changed; returns how many there are.
    fn follow_assignment(
        &mut self,
        feed: &mut Feed,
        (pending, owned, polled_early): Changed<'_>,
        reported: &mut Option<Vec<i32>>,
    ) -> Result<Option<usize>> {
        let assigned = match &self.own {
            Some(own) => Some(own.clone()),
            None => self.consumer.context().assigned(),
        };
        if let Some(now) = &assigned {
            pending.hand_over(feed, &self.topic.clone())?;
            self.restore(feed, owned, now, polled_early)?;
        }
        let count = assigned.as_ref().map(Vec::len);
        if assigned.is_some() && assigned != *reported {
            let names = assigned.iter().flatten().map(i32::to_string).collect();
            feed.assigned(names)?;
            *reported = assigned;
        }
        Ok(count)
    }

    /// The group changed what this member owns (`now`): see `group::restore`. A partition
    /// new to the member whose state stops short of its end (or that has none: given back
    /// after a loss, its state went without a save) is read again from there, so an end the
    /// member saw before is not its end now: it is reached, and reported, again. Counted
    /// ended, the member would finish without the records its state lost.
    fn restore(
        &mut self,
        feed: &mut Feed,
        owned: &mut Vec<i32>,
        now: &[i32],
        polled_early: &mut HashMap<i32, i64>,
    ) -> Result<()> {
        let held_back: Vec<i32> = polled_early.keys().copied().collect();
        let given = group::restore(&self.consumer, feed, owned, now, polled_early)?;
        for (p, from) in given {
            let at_end = (from.zip(self.ends.get(&p))).is_some_and(|(f, &end)| f >= end);
            if !at_end {
                self.reported_ended.remove(&p);
            }
            // Records held back are read again from before them: an end seen since is not
            // the partition's end yet.
            if !at_end || held_back.contains(&p) {
                self.ended.remove(&p);
            }
        }
        Ok(())
    }

    /// Reports each partition read to its end, after its last records. One of ours (not a
    /// group's) is no longer read: the partitions still read are reported again (`reported`),
    /// so that it stops holding a watermark back, as a Kinesis parent read to its end does.
    fn report_ended(
        &mut self,
        pending: &mut Framing<(i32, i64)>,
        feed: &mut Feed,
        reported: &mut Option<Vec<i32>>,
    ) -> Result<()> {
        if self.reported_ended.len() == self.ended.len() {
            return Ok(());
        }
        pending.hand_over(feed, &self.topic.clone())?;
        if let Some(own) = &self.own {
            let reading: Vec<i32> = (own.iter().copied())
                .filter(|p| !self.ended.contains(p))
                .collect();
            if !reading.is_empty() && reported.as_ref() != Some(&reading) {
                feed.assigned(reading.iter().map(i32::to_string).collect())?;
                *reported = Some(reading);
            }
        }
        let mut new: Vec<i32> = (self.ended)
            .difference(&self.reported_ended)
            .copied()
            .collect();
        new.sort_unstable();
        for p in new {
            feed.partition_ended(p)?;
            self.reported_ended.insert(p);
        }
        Ok(())
    }

    /// Stores the offsets of the records the command has handled, for the group's next
    /// commit; a member with state per partition saves the states the command handed over.
    fn acknowledge(&self, feed: &mut Feed) -> Result<()> {
        feed.handled(|partition, offset| self.done(partition, offset));
        group::save(&self.consumer, feed.take_saved(), CommitMode::Async)
    }
}

/// What a change of assignment touches in the read loop: the chunk in the making, the
/// partitions whose states the command holds, and the records polled before their restore.
type Changed<'a> = (
    &'a mut Framing<(i32, i64)>,
    &'a mut Vec<i32>,
    &'a mut HashMap<i32, i64>,
);

/// The partitions of the topic to read, sorted (those `plan` names, which it must have),
/// and how many the topic has.
fn topic_partitions(
    consumer: &BaseConsumer<Member>,
    spec: &KafkaSpec,
    plan: &ReadPlan,
    timeout: Duration,
) -> Result<(Vec<i32>, usize)> {
    let topic = &plan.topic;
    let serve = || drop(consumer.poll(Duration::from_millis(100)));
    let metadata = reach(consumer.client(), &serve, Some(topic), timeout, spec)?;
    let meta = metadata
        .topics()
        .iter()
        .find(|t| t.name() == topic)
        .ok_or_else(|| topic_error(spec, topic, None, false))?;
    if let Some(err) = meta.error() {
        return Err(topic_error(spec, topic, Some(err.into()), false));
    }
    let mut partitions: Vec<i32> = meta.partitions().iter().map(|p| p.id()).collect();
    partitions.sort_unstable();
    let count = partitions.len();
    if !plan.partitions.is_empty() {
        if let Some(p) = plan.partitions.iter().find(|p| !partitions.contains(p)) {
            return Err(Error::Usage(format!(
                "topic '{topic}' has no partition {p} (it has {count})"
            )));
        }
        partitions.retain(|p| plan.partitions.contains(p));
    }
    Ok((partitions, count))
}

/// Whether a record of a shuffle's topic is a writer's watermark marker.
fn is_marker(m: &BorrowedMessage<'_>) -> bool {
    m.headers()
        .is_some_and(|h| h.iter().any(|h| h.key == MARKER_HEADER))
}

/// Frames one record for the command: rendered as `render` says (through the schema
/// `decoding`, if any), with what its writer carried when `shuffled`. A record that cannot be
/// decoded stops the run once the records before it are handed over.
fn frame(
    mut message: Message<'_>,
    shuffled: bool,
    render: &Render,
    decoding: Option<&mut Decoding>,
    (pending, feed, topic): (&mut Framing<(i32, i64)>, &mut Feed, &Arc<str>),
) -> Result<()> {
    let carried = match (shuffled, message.value) {
        (true, Some(value)) => {
            let (before, record) = read_forwarded(value);
            message.value = Some(record);
            before
        }
        _ => None,
    };
    match decoding {
        Some(d) => {
            if let Err(e) = d.render(render, message, pending) {
                pending.hand_over(feed, topic)?;
                return Err(e);
            }
        }
        None => {
            render.write(&mut pending.data, &message);
            pending.push((message.partition, message.offset));
        }
    }
    if let Some(before) = carried {
        pending.carry(before);
    }
    Ok(())
}

/// Hands a writer's marker over in its place among the partition's records.
fn hand_over_marker(m: &BorrowedMessage<'_>, feed: &mut Feed) -> Result<()> {
    let marker =
        Marker::decode(m.payload().unwrap_or_default()).map_err(|reason| Error::BadInput {
            position: format!(
                "topic '{}' partition {} offset {}",
                m.topic(),
                m.partition(),
                m.offset()
            ),
            reason,
        })?;
    feed.marker((m.partition(), m.offset()), marker)
}

/// A borrowed record in the form the envelope writer takes.
pub fn message<'a>(m: &'a BorrowedMessage<'a>, topic: &'a str) -> Message<'a> {
    let timestamp = match m.timestamp() {
        Timestamp::CreateTime(t) if t >= 0 => Some((t, TimestampType::Create)),
        Timestamp::LogAppendTime(t) if t >= 0 => Some((t, TimestampType::LogAppend)),
        _ => None,
    };
    let headers = match m.headers() {
        None => Vec::new(),
        Some(h) => h.iter().map(|h| (h.key, h.value)).collect(),
    };
    Message {
        topic,
        partition: m.partition(),
        partitions: 0,
        offset: m.offset(),
        timestamp,
        key: m.key(),
        value: m.payload(),
        headers,
        decoded: Default::default(),
    }
}

/// What tells a quiet read from a cluster out of reach.
struct Watch<'a> {
    timeout: Duration,
    /// When the cluster last answered: a record, or a check after an error.
    answered: &'a mut Instant,
    /// Since when the client has reported errors without the cluster answering.
    down_since: &'a mut Option<Instant>,
}

/// Nothing came: fine while the cluster answers. An error the client reports starts a wait
/// for it (a broker restarting, a rolling upgrade: librdkafka reconnects on its own); once
/// `timeout` has passed and it still does not answer, exit 4.
fn quiet(consumer: &BaseConsumer<Member>, topic: &str, w: Watch<'_>) -> Result<Polled<'static>> {
    let context = consumer.context();
    if w.down_since.is_none() && context.error_since(*w.answered).is_some() {
        *w.down_since = Some(Instant::now());
    }
    if let Some(since) = w.down_since.filter(|s| s.elapsed() >= w.timeout) {
        if consumer.fetch_metadata(Some(topic), QUICK).is_ok() {
            // It answers, with nothing new to read: the outage is over.
            *w.down_since = None;
            *w.answered = Instant::now();
        } else {
            let e = context.error_since(since).unwrap_or_default();
            return Err(Error::Unreachable(format!(
                "Kafka: out of reach for {:?}: {e}",
                w.timeout
            )));
        }
    }
    Ok(Polled::Idle)
}

/// How long a check that the cluster answers again may take.
const QUICK: Duration = Duration::from_secs(1);

/// A consumer error that says the brokers are (for now) out of reach, which librdkafka
/// recovers from on its own once they are back.
fn is_outage(e: &KafkaError) -> bool {
    use rdkafka::error::RDKafkaErrorCode as C;
    matches!(
        e.rdkafka_error_code(),
        Some(
            C::AllBrokersDown
                | C::BrokerTransportFailure
                | C::OperationTimedOut
                | C::RequestTimedOut
                | C::NetworkException
                | C::CoordinatorNotAvailable
                | C::NotCoordinator
                | C::LeaderNotAvailable
                | C::NotLeaderForPartition
        )
    )
}

/// Closes the consumer, which leaves its group, on a thread of its own, for at most `limit`:
/// librdkafka's close can wait without end for a cooperative rebalance another member never
/// completes. Everything is committed by then, so a close left unfinished costs only time:
/// the group moves what the member held once its session times out, as for a killed member.
fn close_within(source: Box<KafkaSource>, limit: Duration) {
    let group = source.group.clone();
    let (closed, waiting) = std::sync::mpsc::channel();
    let closing = std::thread::Builder::new()
        .name("weir-close".into())
        .spawn(move || {
            drop(source);
            let _ = closed.send(());
        });
    if closing.is_err() || waiting.recv_timeout(limit).is_ok() {
        return;
    }
    if let Some(group) = group {
        eprintln!(
            "weir: warning: the consumer did not leave group '{group}' within {limit:?}; the group moves its partitions once its session times out"
        );
    }
}
