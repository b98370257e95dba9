//! The drive loop: every record of every source passes here on its way to a command's step,
//! under the shared rules (blank lines, line length, error policy, dead letters, stop,
//! idleness, look-ahead).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use super::checkpoint::{Checkpoints, Giving, PartitionState, ShardState};
use super::chunk::{Chunk, Status};
use super::metrics::Publisher;
use super::policy::ErrorPolicy;
use super::reader::{HandledShards, Item, Reader, Starts};
use super::select::Selection;
use super::step::{Flow, RecordStep};
use super::summary::Counters;
use crate::core::record::{Position, RecordError};
use crate::core::shuffle::Marker;
use crate::error::{Error, Fault, Result};

/// How often, while records keep coming, the output is made durable so that a broker source
/// can commit what it covers.
const RELEASE_EVERY: Duration = Duration::from_secs(1);

/// How often `RecordStep::tick` is called, with or without input.
const TICK_EVERY: Duration = Duration::from_millis(100);

/// How far ahead `RecordStep::ahead` sees: enough records to cover a memory access's
/// latency, few enough that what they fetch is still in cache when they come.
const LOOKAHEAD: usize = 8;

/// The longest the driver sleeps in a step's wait before it looks at the stop flag and the
/// checkpoint clock again.
const WAIT_SLICE: Duration = Duration::from_millis(20);

/// Everything the driver needs besides the command's own step.
pub struct Drive<'a> {
    pub counters: &'a mut Counters,
    pub policy: &'a mut ErrorPolicy,
    pub stop: &'a AtomicBool,
    /// `--where`: the records the step sees; the others are counted as filtered.
    pub select: Option<&'a Selection>,
}

/// Runs `step` on every record of `reader`.
pub fn drive(reader: Reader, d: Drive<'_>, step: &mut impl RecordStep) -> Result<()> {
    drive_with(reader, d, step, None)
}

/// Runs `step` on every record of `reader`, taking checkpoints between chunks when they are
/// due.
pub fn drive_with(
    reader: Reader,
    d: Drive<'_>,
    step: &mut impl RecordStep,
    checkpoints: Option<&mut Checkpoints>,
) -> Result<()> {
    let mut driver = Driver {
        reader,
        d,
        step,
        checkpoints,
        pending: Pending::default(),
        released_at: Instant::now(),
        ticked: Instant::now(),
        metrics: Publisher::when_enabled(),
    };
    let result = driver.run();
    driver.stopped(result)
}

/// The positions of records handled and not yet released to the source.
#[derive(Default)]
struct Pending {
    offsets: Vec<(i32, i64)>,
    /// A Kinesis source's: how many records, and the last position of each shard.
    shards: HandledShards,
}

impl Pending {
    /// Holds the positions of records `from..to` of `chunk`.
    fn hold(&mut self, chunk: &Chunk, from: usize, to: usize) {
        let offsets = &chunk.positions;
        self.offsets
            .extend_from_slice(&offsets[from.min(offsets.len())..to.min(offsets.len())]);
        let shards = &chunk.shard_positions;
        self.shards
            .hold(&shards[from.min(shards.len())..to.min(shards.len())]);
    }

    fn is_empty(&self) -> bool {
        self.offsets.is_empty() && self.shards.records == 0
    }
}

/// What a chunk's records came to.
enum Read {
    /// Every record was handled.
    Whole,
    /// The step has all it wants (`Flow::Stop`).
    Stopped,
}

/// The drive loop's state: the reader, the step and where the run stands.
struct Driver<'r, S> {
    reader: Reader,
    d: Drive<'r>,
    step: &'r mut S,
    checkpoints: Option<&'r mut Checkpoints>,
    /// The positions of broker records the command has handled, held until its output
    /// covers them: only then may the source commit their offsets.
    pending: Pending,
    released_at: Instant,
    ticked: Instant,
    /// `--metrics`: what the run publishes.
    metrics: Option<Publisher>,
}

impl<S: RecordStep> Driver<'_, S> {
    fn run(&mut self) -> Result<()> {
        loop {
            // Ticks come every TICK_EVERY whether the input waits or keeps coming: a
            // partition that falls silent while others stay busy goes idle all the same.
            if self.ticked.elapsed() >= TICK_EVERY {
                self.tick()?;
            }
            let Some(item) = self.next_item()? else {
                return Ok(());
            };
            // A revocation is answered even then: the group waits for the partitions' states.
            let revoking = matches!(item, Item::Revoked { .. } | Item::ShardRevoked { .. });
            if self.d.stop.load(Ordering::Relaxed) && !revoking {
                return Err(Error::Interrupted);
            }
            match item {
                Item::Records(chunk) => {
                    if let Read::Stopped = self.records(chunk)? {
                        return Ok(());
                    }
                }
                other => self.event(other)?,
            }
        }
    }

    /// The next item from the reader; `None` once the source has ended. While none is ready
    /// the output is made to flow, ticks go on, checkpoints are taken when due, and a signal
    /// stops the run.
    fn next_item(&mut self) -> Result<Option<Item>> {
        let items = self
            .reader
            .items
            .as_ref()
            .expect("receiver kept until drop");
        match items.try_recv() {
            Ok(item) => return Ok(Some(item)),
            Err(TryRecvError::Disconnected) => return Ok(None),
            Err(TryRecvError::Empty) => {}
        }
        self.settle()?;
        loop {
            if self.d.stop.load(Ordering::Relaxed) {
                return Err(Error::Interrupted);
            }
            // A quiet source's last records are checkpointed (and committed) when the next
            // checkpoint is due.
            self.checkpoint_when_due()?;
            let items = self
                .reader
                .items
                .as_ref()
                .expect("receiver kept until drop");
            match items.recv_timeout(TICK_EVERY) {
                Ok(item) => return Ok(Some(item)),
                Err(RecvTimeoutError::Timeout) => self.tick()?,
                Err(RecvTimeoutError::Disconnected) => return Ok(None),
            }
        }
    }

    /// The step's tick, and what the run publishes (`--metrics`).
    fn tick(&mut self) -> Result<()> {
        self.ticked = Instant::now();
        self.step.tick(self.d.counters)?;
        if let Some(m) = &mut self.metrics {
            let dead_letters = self.d.policy.dead_letters();
            m.tick(self.d.counters, dead_letters, |g| self.step.gauges(g));
        }
        Ok(())
    }

    /// Everything the reader sends but records.
    fn event(&mut self, item: Item) -> Result<()> {
        let checkpoints = self.checkpoints.as_deref_mut();
        match item {
            Item::Records(_) => unreachable!("records are read apart"),
            Item::Failed(e) => {
                if let Some(c) = checkpoints {
                    c.source_failed();
                }
                return Err(e);
            }
            Item::Assigned(partitions) => {
                if let Some(m) = &mut self.metrics {
                    m.assigned(&partitions);
                }
                self.step.assigned(&partitions)
            }
            Item::Draining => self.release()?,
            Item::Revoked { partitions, reply } => self.answer_revoke(&partitions, reply)?,
            Item::TooLong {
                origin,
                line,
                len,
                bytes,
                max,
                prefix,
                end,
            } => {
                let d = &mut self.d;
                d.counters.read += 1;
                d.counters.bytes_read += bytes;
                let error = RecordError::LineTooLong { len, max };
                let position = Position::Line {
                    source: origin,
                    line,
                };
                d.policy.handle(&position, &prefix, &error, d.counters)?;
                if let Some(c) = checkpoints {
                    c.passed(end);
                }
            }
            Item::ShardEnded(shard) => checkpoints.map_or((), |c| c.shard_ended(&shard)),
            Item::PartitionEnded(partition) => {
                self.step.partition_ended(partition, self.d.counters)?;
                if let Some(c) = checkpoints {
                    c.partition_ended(partition);
                }
            }
            Item::Marker { at, marker } => self.marker(at, &marker)?,
            Item::Starts(starts) => match (checkpoints, starts) {
                (Some(c), Starts::Partitions(starts)) => c.partitions_start(&starts),
                (Some(c), Starts::Shard(shard, arrival)) => c.shard_starts(&shard, arrival),
                (None, _) => {}
            },
            Item::Restored { owned, states } => {
                if let Some(c) = checkpoints {
                    c.own(&owned, &states, self.step)?;
                }
            }
            Item::ShardOwned { shard, task, start } => {
                if let Some(c) = checkpoints {
                    c.own_shard(&shard, task, start.as_ref(), self.step)?;
                }
            }
            Item::ShardRevoked {
                task,
                giving,
                reply,
            } => answer_shard_revoke((task, giving), reply, checkpoints, self.step, self.d.policy)?,
        }
        Ok(())
    }

    /// A marker is handled as a record of its partition is: skipped where a record there
    /// would be, and passed, so that a saved state covers it.
    fn marker(&mut self, at: (i32, i64), marker: &Marker) -> Result<()> {
        let checkpoints = self.checkpoints.as_deref_mut();
        if let Some(c) = checkpoints {
            if c.skipped(&[at]).is_some() {
                return Ok(());
            }
            self.step.marker(at.0, marker)?;
            c.passed_records(&[at]);
            return Ok(());
        }
        self.step.marker(at.0, marker)
    }

    /// Shows each record of `chunk` to the step, a bad one to the error policy, then notes
    /// where the source stands and takes a checkpoint (or releases the positions) when due.
    fn records(&mut self, chunk: Chunk) -> Result<Read> {
        self.step.batch();
        self.d.counters.bytes_read += chunk.input_bytes;
        self.d.counters.fields.tally(&chunk);
        // How many of the chunk's broker positions are already pending release (a wait
        // inside the chunk hands over those before it).
        let mut released = 0;
        // A group member skips the records of partitions it no longer owns, and those its
        // restored state covers: neither read nor handled here.
        let skipped = (self.checkpoints.as_deref()).and_then(|c| c.skipped(&chunk.positions));
        for i in 0..LOOKAHEAD {
            self.step.ahead(|| chunk.record_line(i));
        }
        for (i, info) in chunk.prepared.lines.iter().enumerate() {
            self.step.ahead(|| chunk.record_line(i + LOOKAHEAD));
            chunk.prefetch_line(i + 2 * LOOKAHEAD);
            if let Status::Blank = info.status {
                self.d.counters.blank_lines += 1;
                continue;
            }
            if skipped.as_ref().is_some_and(|s| s[i]) {
                continue;
            }
            self.d.counters.read += 1;
            let result = match info.status {
                Status::Record(_) => self.record(&chunk, i, &mut released),
                Status::Bad(e) => Err(Fault::Record(chunk.prepared.errors[e as usize].clone())),
                Status::Blank => unreachable!("skipped above"),
            };
            match result {
                Ok(Flow::Continue) => {}
                Ok(Flow::Wait(_)) => unreachable!("waited in record"),
                Ok(Flow::Stop) => {
                    self.stop_after(&chunk, i, released)?;
                    return Ok(Read::Stopped);
                }
                Err(Fault::Fatal(e)) => return Err(e),
                Err(Fault::Record(e)) => {
                    let bytes = &chunk.data[info.start as usize..info.end as usize];
                    let d = &mut self.d;
                    d.policy.handle(&chunk.position(i), bytes, &e, d.counters)?;
                }
            }
        }
        self.after(chunk, released)?;
        Ok(Read::Whole)
    }

    /// Shows record `i` to the step, again after each wait it asks for.
    #[inline(always)]
    fn record(&mut self, chunk: &Chunk, i: usize, released: &mut usize) -> Result<Flow, Fault> {
        let line = chunk.record_line(i).expect("a record");
        if self.d.select.is_some_and(|s| !s.keeps(&line)) {
            self.d.counters.filtered += 1;
            return Ok(Flow::Continue);
        }
        loop {
            match self.step.record(&line, self.d.counters) {
                Ok(Flow::Wait(wait)) => self.wait_before(chunk, i, released, wait)?,
                result => return result,
            }
        }
    }

    /// The step stopped at record `i` (`-n`): what came before it, and it, are handled.
    fn stop_after(&mut self, chunk: &Chunk, i: usize, released: usize) -> Result<()> {
        self.pending.hold(chunk, released, i + 1);
        let upto = chunk.positions.len().min(i + 1);
        if let Some(c) = self.checkpoints.as_deref_mut() {
            c.passed_records(&chunk.positions[..upto]);
            let upto = chunk.shard_positions.len().min(i + 1);
            c.passed_shards(&chunk.shard_positions[..upto]);
        }
        self.release()
    }

    /// Every record of `chunk` was handled: notes where the source stands, gives the
    /// chunk's buffers back, and checkpoints or releases what is due.
    fn after(&mut self, chunk: Chunk, released: usize) -> Result<()> {
        if let Some(c) = self.checkpoints.as_deref_mut() {
            c.passed_records(&chunk.positions);
            c.passed_shards(&chunk.shard_positions);
            if let Some(end) = chunk.end {
                c.passed(end);
            }
        }
        self.pending.hold(&chunk, released, usize::MAX);
        if let Some(m) = &mut self.metrics {
            m.handled(&chunk);
        }
        self.reader.recycle(chunk);
        if self.checkpoints.is_some() {
            self.checkpoint_when_due()
        } else if self.released_at.elapsed() >= RELEASE_EVERY {
            self.release()
        } else {
            Ok(())
        }
    }

    /// Makes the output durable and tells the source which records it covers. With
    /// checkpoints, the output is durable once a checkpoint covers it: one is taken first,
    /// so that a group's offsets are never ahead of the checkpoint a restart goes on from.
    fn release(&mut self) -> Result<()> {
        if !self.pending.is_empty() {
            match self.checkpoints.is_some() {
                true => self.take()?,
                false => self.step.durable()?,
            }
            let Pending { offsets, shards } = std::mem::take(&mut self.pending);
            self.reader.handled(offsets);
            self.reader.handled_shards(shards);
        }
        self.released_at = Instant::now();
        Ok(())
    }

    /// The input waits: the output is made to flow (`idle`), and, without checkpoints, durable
    /// for the handled records it covers, which are released (`durable` does what `idle` does
    /// and more: once is enough). With checkpoints, positions wait for the next one.
    fn settle(&mut self) -> Result<()> {
        if self.pending.is_empty() || self.checkpoints.is_some() {
            self.step.idle()
        } else {
            self.release()
        }
    }

    /// Takes a checkpoint when one is due, and releases the records it covers.
    fn checkpoint_when_due(&mut self) -> Result<()> {
        match self.checkpoints.as_deref() {
            Some(c) if c.due() && self.pending.is_empty() => self.take(),
            Some(c) if c.due() => self.release(),
            _ => Ok(()),
        }
    }

    /// Takes a checkpoint; a group member's saved partition states go to the source to save.
    fn take(&mut self) -> Result<()> {
        let c = self
            .checkpoints
            .as_deref_mut()
            .expect("taken with checkpoints");
        c.take(self.step, self.d.policy, self.d.counters)?;
        if let Some(m) = &mut self.metrics {
            m.saved();
        }
        self.reader.saved(c.take_saved());
        self.reader.saved_shards(c.take_saved_shards());
        Ok(())
    }

    /// Answers a group's revocation of `partitions`.
    fn answer_revoke(
        &mut self,
        partitions: &[i32],
        reply: mpsc::Sender<Vec<PartitionState>>,
    ) -> Result<()> {
        let checkpoints = self.checkpoints.as_deref_mut();
        // Once the run stops, the states stay for the last output too.
        let giving = match self.d.stop.load(Ordering::Relaxed) {
            true => Giving::SaveAndKeep,
            false => Giving::Save,
        };
        answer_revoke(
            (partitions, giving),
            reply,
            checkpoints,
            self.step,
            self.d.policy,
        )
    }

    /// Waits `wait` before record `next` of `chunk` is shown again, the run standing between
    /// it and the one before: what came before is released as handled and its output made
    /// to flow; checkpoints are taken when due, at this record boundary; a signal stops the
    /// run here. `released` counts the chunk's positions pending release already.
    fn wait_before(
        &mut self,
        chunk: &Chunk,
        next: usize,
        released: &mut usize,
        wait: Duration,
    ) -> Result<()> {
        // Not taken yet: counted when it is shown again.
        self.d.counters.read -= 1;
        let before = chunk.positions.len().min(next);
        if *released < next {
            self.pending.hold(chunk, *released, next);
            *released = next;
        }
        if let Some(c) = self.checkpoints.as_deref_mut() {
            c.passed_records(&chunk.positions[..before]);
            let shards = &chunk.shard_positions;
            c.passed_shards(&shards[..shards.len().min(next)]);
            if let Some(at) = chunk.line_start(next) {
                c.passed(at);
            }
        }
        self.settle()?;
        // A wait too long to hold is as good as a year: a signal ends it anyway.
        let until = Instant::now() + wait.min(Duration::from_secs(86_400 * 365));
        loop {
            if self.d.stop.load(Ordering::Relaxed) {
                return Err(Error::Interrupted);
            }
            self.checkpoint_when_due()?;
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(WAIT_SLICE));
        }
        self.d.counters.read += 1;
        Ok(())
    }

    /// The read ended with `result`. A group member that stops saves its partitions' states,
    /// so that their next owners go on from here (the source saves them before it leaves
    /// the group), and answers the revocations that come until the source has stopped.
    fn stopped(mut self, result: Result<()>) -> Result<()> {
        let grouped = self
            .checkpoints
            .as_deref()
            .is_some_and(Checkpoints::is_group);
        if !matches!(result, Err(Error::Interrupted)) || !grouped {
            return result;
        }
        self.release()?;
        let Driver {
            reader,
            d,
            step,
            checkpoints,
            ..
        } = &mut self;
        let mut failed = None;
        reader.drain(|item| {
            let c = checkpoints.as_deref_mut();
            let answered = match item {
                // The run stops: the states go to the partitions' next owners, and stay for
                // the last output.
                Item::Revoked { partitions, reply } => {
                    let revoked = (&partitions[..], Giving::SaveAndKeep);
                    answer_revoke(revoked, reply, c, *step, d.policy)
                }
                Item::ShardRevoked {
                    task,
                    giving,
                    reply,
                } => answer_shard_revoke((task, giving), reply, c, *step, d.policy),
                _ => Ok(()),
            };
            if let Err(e) = answered {
                failed.get_or_insert(e);
            }
        });
        failed.map_or(result, Err)
    }
}

/// Answers a group's revocation of `partitions` with their states (none without
/// checkpoints), kept in the step or not as `giving` says. The source waits for the answer,
/// unless the run is ending.
fn answer_revoke(
    (partitions, giving): (&[i32], Giving),
    reply: mpsc::Sender<Vec<PartitionState>>,
    checkpoints: Option<&mut Checkpoints>,
    step: &mut impl RecordStep,
    policy: &mut ErrorPolicy,
) -> Result<()> {
    let states = match checkpoints {
        Some(c) => c.revoke(partitions, giving, step, policy)?,
        None => Vec::new(),
    };
    let _ = reply.send(states);
    Ok(())
}

/// Answers a Kinesis member's revocation of the shard of `task`: its state, or none, as
/// `giving` says.
fn answer_shard_revoke(
    (task, giving): (i32, Giving),
    reply: mpsc::Sender<Option<ShardState>>,
    checkpoints: Option<&mut Checkpoints>,
    step: &mut impl RecordStep,
    policy: &mut ErrorPolicy,
) -> Result<()> {
    let state = match checkpoints {
        Some(c) => c.revoke_shard(task, giving, step, policy)?,
        None => None,
    };
    let _ = reply.send(state);
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::sync::Arc;

    use super::*;
    use crate::core::partitioned::PartitionStates;
    use crate::runtime::checkpoint::{CheckpointInputs, PartitionState};
    use crate::runtime::chunk::Line;
    use crate::runtime::chunk::Prepare;
    use crate::runtime::policy::OnError;
    use crate::runtime::reader::{Feed, Framing, Source};

    /// A group member's source: it is given partition 0, hands over three of its records,
    /// then has a rebalance revoke the partition, at once or only once the read is told to
    /// stop, and reports what the command answered.
    struct Rebalancing {
        revoke_after_stop: bool,
        answer: mpsc::Sender<Option<Vec<PartitionState>>>,
    }

    impl Source for Rebalancing {
        fn read(self: Box<Self>, feed: &mut Feed) -> Result<()> {
            feed.restored(vec![0], Vec::new())?;
            let mut framing = Framing::new(feed);
            for offset in 0..3 {
                framing.data.extend_from_slice(b"{}");
                framing.push((0, offset));
            }
            framing.hand_over(feed, &Arc::from("t"))?;
            while self.revoke_after_stop && !feed.cancelled() {
                std::thread::sleep(Duration::from_millis(1));
            }
            let _ = self.answer.send(feed.revoker().revoke(vec![0]));
            Ok(())
        }

        fn join_at_end(&self) -> bool {
            true
        }
    }

    /// A step whose state per partition is the records it took; a signal comes with the
    /// third.
    struct Signalled<'a> {
        taken: u8,
        stop: &'a AtomicBool,
        /// Partitions whose state the step dropped.
        dropped: u8,
    }

    impl RecordStep for Signalled<'_> {
        fn record(&mut self, _: &Line<'_>, _: &mut Counters) -> Result<Flow, Fault> {
            self.taken += 1;
            if self.taken == 3 {
                self.stop.store(true, Ordering::Relaxed);
            }
            Ok(Flow::Continue)
        }
        fn idle(&mut self) -> Result<()> {
            Ok(())
        }
        fn partition_states(&mut self) -> Option<&mut dyn PartitionStates> {
            Some(self)
        }
    }

    impl PartitionStates for Signalled<'_> {
        fn save(&self, _: i32) -> Vec<u8> {
            vec![self.taken]
        }
        fn restore(&mut self, _: i32, _: &[u8]) -> std::result::Result<(), String> {
            Err("not in this test".into())
        }
        fn revoke(&mut self, _: i32) {
            self.dropped += 1;
        }
        fn inherit(
            &mut self,
            _: i32,
            _: &[(&[u8], bool)],
            _: &dyn Fn(&str) -> bool,
        ) -> std::result::Result<(), String> {
            Err("not in this test".into())
        }
    }

    #[test]
    fn a_group_member_that_stops_still_answers_a_revocation_with_the_latest_state() {
        for revoke_after_stop in [false, true] {
            let (answer, answered) = mpsc::channel();
            let source = Rebalancing {
                revoke_after_stop,
                answer,
            };
            let reader = Reader::spawn(Box::new(source), Prepare::AsIs, 1024);
            let stop = AtomicBool::new(false);
            let mut step = Signalled {
                taken: 0,
                stop: &stop,
                dropped: 0,
            };
            let mut counters = Counters::default();
            let mut policy = ErrorPolicy::new(OnError::Fail, None);
            let inputs = CheckpointInputs::Kafka { topic: "t".into() };
            let mut checkpoints =
                Checkpoints::for_group(Duration::from_secs(3600), "dedupe", inputs);
            let d = Drive {
                counters: &mut counters,
                policy: &mut policy,
                stop: &stop,
                select: None,
            };
            let result = drive_with(reader, d, &mut step, Some(&mut checkpoints));
            assert!(
                matches!(result, Err(Error::Interrupted) | Ok(())),
                "{result:?}"
            );
            let states = answered.recv().unwrap();
            assert_eq!(
                states,
                Some(vec![PartitionState {
                    partition: 0,
                    next_offset: 3,
                    state: vec![3],
                    ended: false,
                }]),
                "revoked after the stop: {revoke_after_stop}"
            );
            // The run stopped: the state stays for its last output (a profile's report).
            assert_eq!(step.dropped, 0);
        }
    }
}
