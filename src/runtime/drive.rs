//! The drive loop: every record of every source passes here on its way to a command's step,
//! under the shared rules (blank lines, line length, error policy, dead letters, stop,
//! idleness, look-ahead).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use super::checkpoint::{Checkpoints, PartitionState, StepCheckpoint};
use super::chunk::{Chunk, Line, Status};
use super::policy::ErrorPolicy;
use super::reader::{Item, Reader, Starts};
use super::summary::Counters;
use crate::core::record::{Position, RecordError};
use crate::error::{Error, Fault, Result};

/// What a command's per-record step asks of the driver.
pub enum Flow {
    Continue,
    /// Stop reading: the command has all it wants (`-n`).
    Stop,
    /// The record is not taken yet: show it again after this long (`replay`'s pace). Until
    /// then the run stands between records: the output so far flows and is made durable,
    /// checkpoints are taken when due, and a signal stops the run there.
    Wait(Duration),
}

/// A command's per-record work.
pub trait RecordStep {
    fn record(&mut self, line: &Line<'_>, counters: &mut Counters) -> Result<Flow, Fault>;
    /// Called whenever no input is ready, before waiting for more: flush output here so
    /// records flow promptly through a live pipeline.
    fn idle(&mut self) -> Result<()>;
    /// Called about every 100 ms, whether input comes or not (idle partitions, timers).
    fn tick(&mut self, _counters: &mut Counters) -> Result<()> {
        Ok(())
    }
    /// Makes everything written so far durable: files flushed, a producer's records
    /// delivered. A broker source commits the offsets of records only after this has
    /// covered them. By default what `idle` does, for steps whose `idle` flushes all.
    fn durable(&mut self) -> Result<()> {
        self.idle()
    }
    /// Makes the output durable (flushed and synced) and returns what a checkpoint needs:
    /// the command's state (unless `with_state` is false: a finished run's last checkpoint
    /// needs none) and its output files' lengths. Only commands that take checkpoints
    /// implement it.
    fn checkpoint(&mut self, _with_state: bool) -> Result<StepCheckpoint> {
        Err(Error::Usage("this command takes no checkpoints".into()))
    }
    /// Called before each batch of records: read clocks here, once per batch rather than once
    /// per record (the records of a batch were read together).
    fn batch(&mut self) {}
    /// The source reads these partitions from now on (its assignment, at the start or after
    /// a rebalance; a stream's shards as they split and merge), before any of their records
    /// comes. Each is named by the JSON text of its envelope field (`3` for a Kafka
    /// partition, `"shardId-000000000003"` for a Kinesis shard).
    fn assigned(&mut self, _partitions: &[String]) {}
    /// Shown a record `LOOKAHEAD` records before it comes to `record`, so that the state it
    /// will touch can be fetched into cache while earlier records are worked on. `next`
    /// makes the record's `Line` (or says it is not a record), only for steps that look.
    fn ahead<'l>(&mut self, _next: impl FnOnce() -> Option<Line<'l>>) {}
    /// A consumer-group member keeps state per input partition (a task each): the state of
    /// `partition`, encoded, for its next owner. Only commands that keep state that way
    /// implement this and the next two.
    fn save_partition(&mut self, _partition: i32) -> Result<Vec<u8>> {
        Err(Error::Usage(
            "this command keeps no state per partition".into(),
        ))
    }
    /// `partition` goes on from `state`, as its last owner saved it.
    fn restore_partition(&mut self, _partition: i32, _state: &[u8]) -> Result<()> {
        Err(Error::Usage(
            "this command keeps no state per partition".into(),
        ))
    }
    /// `partition` is no longer this member's: its state goes (saved before, if it was
    /// revoked; lost with it, if the group gave it away for a missed heartbeat).
    fn revoke_partition(&mut self, _partition: i32) {}
}

/// How often, while records keep coming, the output is made durable so that a broker source
/// can commit what it covers.
const RELEASE_EVERY: Duration = Duration::from_secs(1);

/// How often `RecordStep::tick` is called, with or without input.
const TICK_EVERY: Duration = Duration::from_millis(100);

/// The positions of broker records the command has handled, held until its output covers
/// them: only then may the source commit their offsets.
struct Handled {
    pending: Vec<(i32, i64)>,
    since: Instant,
}

impl Handled {
    /// Makes the output durable and tells the source which records it covers. With
    /// checkpoints, the output is durable once a checkpoint covers it: one is taken first,
    /// so that a group's offsets are never ahead of the checkpoint a restart goes on from.
    fn release(
        &mut self,
        reader: &Reader,
        step: &mut impl RecordStep,
        checkpoints: Option<&mut Checkpoints>,
        d: &mut Drive<'_>,
    ) -> Result<()> {
        if !self.pending.is_empty() {
            match checkpoints {
                Some(c) => take(c, reader, step, d)?,
                None => step.durable()?,
            }
            reader.handled(std::mem::take(&mut self.pending));
        }
        self.since = Instant::now();
        Ok(())
    }

    /// The input waits: the output is made to flow (`idle`), and, without checkpoints, durable
    /// for the handled records it covers, which are released (`durable` does what `idle` does
    /// and more: once is enough). With checkpoints, positions wait for the next one.
    fn settle(
        &mut self,
        reader: &Reader,
        step: &mut impl RecordStep,
        checkpointed: bool,
        d: &mut Drive<'_>,
    ) -> Result<()> {
        if self.pending.is_empty() || checkpointed {
            step.idle()
        } else {
            self.release(reader, step, None, d)
        }
    }

    /// Takes a checkpoint when one is due, and releases the records it covers.
    fn checkpoint_when_due(
        &mut self,
        reader: &Reader,
        step: &mut impl RecordStep,
        checkpoints: &mut Checkpoints,
        d: &mut Drive<'_>,
    ) -> Result<()> {
        if !checkpoints.due() {
            Ok(())
        } else if self.pending.is_empty() {
            take(checkpoints, reader, step, d)
        } else {
            self.release(reader, step, Some(checkpoints), d)
        }
    }
}

/// Takes a checkpoint; a group member's saved partition states go to the source to save.
fn take(
    checkpoints: &mut Checkpoints,
    reader: &Reader,
    step: &mut impl RecordStep,
    d: &mut Drive<'_>,
) -> Result<()> {
    checkpoints.take(step, d.policy, d.counters)?;
    reader.saved(checkpoints.take_saved());
    Ok(())
}

/// How far ahead `RecordStep::ahead` sees: enough records to cover a memory access's
/// latency, few enough that what they fetch is still in cache when they come.
const LOOKAHEAD: usize = 8;

/// Everything the driver needs besides the command's own step.
pub struct Drive<'a> {
    pub counters: &'a mut Counters,
    pub policy: &'a mut ErrorPolicy,
    pub stop: &'a AtomicBool,
}

/// Runs `step` on every record of `reader`.
pub fn drive(reader: Reader, d: Drive<'_>, step: &mut impl RecordStep) -> Result<()> {
    drive_with(reader, d, step, None)
}

/// Runs `step` on every record of `reader`, taking checkpoints between chunks when they are
/// due.
pub fn drive_with(
    mut reader: Reader,
    mut d: Drive<'_>,
    step: &mut impl RecordStep,
    mut checkpoints: Option<&mut Checkpoints>,
) -> Result<()> {
    let mut handled = Handled {
        pending: Vec::new(),
        since: Instant::now(),
    };
    let result = drive_loop(
        &reader,
        &mut d,
        step,
        checkpoints.as_deref_mut(),
        &mut handled,
    );
    // A group member that stops saves its partitions' states, so that their next owners go
    // on from here (the source saves them before it leaves the group), and answers the
    // revocations that come until the source has stopped.
    if let (Err(Error::Interrupted), Some(c)) = (&result, checkpoints) {
        if c.is_group() {
            handled.release(&reader, step, Some(&mut *c), &mut d)?;
            let mut failed = None;
            reader.drain(|item| {
                if let Item::Revoked { partitions, reply } = item {
                    if let Err(e) = answer_revoke(&partitions, reply, Some(&mut *c), step, d.policy)
                    {
                        failed.get_or_insert(e);
                    }
                }
            });
            if let Some(e) = failed {
                return Err(e);
            }
        }
    }
    result
}

fn drive_loop(
    reader: &Reader,
    d: &mut Drive<'_>,
    step: &mut impl RecordStep,
    mut checkpoints: Option<&mut Checkpoints>,
    handled: &mut Handled,
) -> Result<()> {
    // Ticks come every TICK_EVERY whether the input waits or keeps coming: a partition that
    // falls silent while others stay busy goes idle all the same.
    let mut ticked = Instant::now();
    loop {
        if ticked.elapsed() >= TICK_EVERY {
            ticked = Instant::now();
            step.tick(d.counters)?;
        }
        let items = reader.items.as_ref().expect("receiver kept until drop");
        let item = match items.try_recv() {
            Ok(item) => item,
            Err(TryRecvError::Disconnected) => return Ok(()),
            Err(TryRecvError::Empty) => {
                handled.settle(reader, step, checkpoints.is_some(), d)?;
                loop {
                    if d.stop.load(Ordering::Relaxed) {
                        return Err(Error::Interrupted);
                    }
                    // A quiet source's last records are checkpointed (and committed) when the
                    // next checkpoint is due.
                    if let Some(c) = checkpoints.as_deref_mut() {
                        handled.checkpoint_when_due(reader, step, c, d)?;
                    }
                    match items.recv_timeout(TICK_EVERY) {
                        Ok(item) => break item,
                        Err(RecvTimeoutError::Timeout) => {
                            ticked = Instant::now();
                            step.tick(d.counters)?
                        }
                        Err(RecvTimeoutError::Disconnected) => return Ok(()),
                    }
                }
            }
        };
        // A revocation is answered even then: the group waits for the partitions' states.
        if d.stop.load(Ordering::Relaxed) && !matches!(item, Item::Revoked { .. }) {
            return Err(Error::Interrupted);
        }
        match item {
            Item::Failed(e) => return Err(e),
            Item::Assigned(partitions) => step.assigned(&partitions),
            Item::ShardEnded(shard) => {
                if let Some(c) = checkpoints.as_deref_mut() {
                    c.shard_ended(&shard);
                }
            }
            Item::Starts(starts) => match (checkpoints.as_deref_mut(), starts) {
                (Some(c), Starts::Partitions(starts)) => c.partitions_start(&starts),
                (Some(c), Starts::Shard(shard, arrival)) => c.shard_starts(&shard, arrival),
                (None, _) => {}
            },
            Item::Draining => handled.release(reader, step, checkpoints.as_deref_mut(), d)?,
            Item::Restored { owned, states } => {
                if let Some(c) = checkpoints.as_deref_mut() {
                    c.own(&owned, &states, step)?;
                }
            }
            Item::Revoked { partitions, reply } => answer_revoke(
                &partitions,
                reply,
                checkpoints.as_deref_mut(),
                step,
                d.policy,
            )?,
            Item::TooLong {
                origin,
                line,
                len,
                max,
                prefix,
                end,
            } => {
                d.counters.read += 1;
                d.counters.bytes_read += len + 1;
                let error = RecordError::LineTooLong { len, max };
                let position = Position::Line {
                    source: origin,
                    line,
                };
                d.policy.handle(&position, &prefix, &error, d.counters)?;
                if let Some(c) = checkpoints.as_deref_mut() {
                    c.passed(end);
                }
            }
            Item::Records(chunk) => {
                step.batch();
                d.counters.bytes_read += chunk.input_bytes;
                let p = &chunk.prepared;
                // How many of the chunk's broker positions are already pending release (a
                // wait inside the chunk hands over those before it).
                let mut released = 0;
                // A group member skips the records of partitions it no longer owns, and those
                // its restored state covers: neither read nor handled here.
                let skipped = checkpoints
                    .as_deref()
                    .and_then(|c| c.skipped(&chunk.positions));
                for i in 0..LOOKAHEAD {
                    step.ahead(|| chunk.record_line(i));
                }
                for (i, info) in p.lines.iter().enumerate() {
                    step.ahead(|| chunk.record_line(i + LOOKAHEAD));
                    chunk.prefetch_line(i + 2 * LOOKAHEAD);
                    if let Status::Blank = info.status {
                        d.counters.blank_lines += 1;
                        continue;
                    }
                    if skipped.as_ref().is_some_and(|s| s[i]) {
                        continue;
                    }
                    d.counters.read += 1;
                    let result = match info.status {
                        Status::Record(_) => {
                            let line = chunk.record_line(i).expect("a record");
                            loop {
                                match step.record(&line, d.counters) {
                                    Ok(Flow::Wait(wait)) => {
                                        let between = Between {
                                            chunk: &chunk,
                                            next: i,
                                            released: &mut released,
                                        };
                                        between.wait(
                                            wait,
                                            reader,
                                            step,
                                            checkpoints.as_deref_mut(),
                                            handled,
                                            d,
                                        )?;
                                    }
                                    result => break result,
                                }
                            }
                        }
                        Status::Bad(e) => Err(Fault::Record(p.errors[e as usize].clone())),
                        Status::Blank => unreachable!("skipped above"),
                    };
                    match result {
                        Ok(Flow::Continue) => {}
                        Ok(Flow::Wait(_)) => unreachable!("waited above"),
                        Ok(Flow::Stop) => {
                            let upto = chunk.positions.len().min(i + 1);
                            handled
                                .pending
                                .extend_from_slice(&chunk.positions[released.min(upto)..upto]);
                            if let Some(c) = checkpoints.as_deref_mut() {
                                c.passed_records(&chunk.positions[..upto]);
                                let upto = chunk.shard_positions.len().min(i + 1);
                                c.passed_shards(&chunk.shard_positions[..upto]);
                            }
                            handled.release(reader, step, checkpoints, d)?;
                            return Ok(());
                        }
                        Err(Fault::Fatal(e)) => return Err(e),
                        Err(Fault::Record(e)) => {
                            let bytes = &chunk.data[info.start as usize..info.end as usize];
                            d.policy.handle(&chunk.position(i), bytes, &e, d.counters)?;
                        }
                    }
                }
                let end = chunk.end;
                if let Some(c) = checkpoints.as_deref_mut() {
                    c.passed_records(&chunk.positions);
                    c.passed_shards(&chunk.shard_positions);
                    if let Some(end) = end {
                        c.passed(end);
                    }
                }
                handled
                    .pending
                    .extend_from_slice(&chunk.positions[released..]);
                reader.recycle(chunk);
                match checkpoints.as_deref_mut() {
                    Some(c) => handled.checkpoint_when_due(reader, step, c, d)?,
                    None if handled.since.elapsed() >= RELEASE_EVERY => {
                        handled.release(reader, step, None, d)?;
                    }
                    None => {}
                }
            }
        }
    }
}

/// Answers a group's revocation of `partitions` with their states (none without
/// checkpoints). The source waits for the answer, unless the run is ending.
fn answer_revoke(
    partitions: &[i32],
    reply: mpsc::Sender<Vec<PartitionState>>,
    checkpoints: Option<&mut Checkpoints>,
    step: &mut impl RecordStep,
    policy: &mut ErrorPolicy,
) -> Result<()> {
    let states = match checkpoints {
        Some(c) => c.revoke(partitions, step, policy)?,
        None => Vec::new(),
    };
    let _ = reply.send(states);
    Ok(())
}

/// The longest the driver sleeps in a step's wait before it looks at the stop flag and the
/// checkpoint clock again.
const WAIT_SLICE: Duration = Duration::from_millis(20);

/// A run standing between two records of a chunk: `next` is not handled yet, every record
/// before it is.
struct Between<'c> {
    chunk: &'c Chunk,
    next: usize,
    /// How many of the chunk's broker positions are pending release already.
    released: &'c mut usize,
}

impl Between<'_> {
    /// Waits `wait` before record `next` is shown again. What came before it is released as
    /// handled and its output made to flow; checkpoints are taken when due, at this record
    /// boundary; a signal stops the run here.
    fn wait(
        self,
        wait: Duration,
        reader: &Reader,
        step: &mut impl RecordStep,
        mut checkpoints: Option<&mut Checkpoints>,
        handled: &mut Handled,
        d: &mut Drive<'_>,
    ) -> Result<()> {
        // Not taken yet: counted when it is shown again.
        d.counters.read -= 1;
        let positions = &self.chunk.positions;
        let before = positions.len().min(self.next);
        if *self.released < before {
            handled
                .pending
                .extend_from_slice(&positions[*self.released..before]);
            *self.released = before;
        }
        if let Some(c) = checkpoints.as_deref_mut() {
            c.passed_records(&positions[..before]);
            let shards = &self.chunk.shard_positions;
            c.passed_shards(&shards[..shards.len().min(self.next)]);
            if let Some(at) = self.chunk.line_start(self.next) {
                c.passed(at);
            }
        }
        handled.settle(reader, step, checkpoints.is_some(), d)?;
        // A wait too long to hold is as good as a year: a signal ends it anyway.
        let until = Instant::now() + wait.min(Duration::from_secs(86_400 * 365));
        loop {
            if d.stop.load(Ordering::Relaxed) {
                return Err(Error::Interrupted);
            }
            if let Some(c) = checkpoints.as_deref_mut() {
                handled.checkpoint_when_due(reader, step, c, d)?;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(WAIT_SLICE));
        }
        d.counters.read += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::sync::Arc;

    use super::*;
    use crate::runtime::checkpoint::{CheckpointInputs, PartitionState};
    use crate::runtime::chunk::Prepare;
    use crate::runtime::policy::PolicyPlan;
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
        fn save_partition(&mut self, _: i32) -> Result<Vec<u8>> {
            Ok(vec![self.taken])
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
            };
            let mut counters = Counters::default();
            let mut policy = ErrorPolicy::open(&PolicyPlan::new(None, None)).unwrap();
            let inputs = CheckpointInputs::Kafka { topic: "t".into() };
            let mut checkpoints =
                Checkpoints::for_group(Duration::from_secs(3600), "dedupe", inputs);
            let d = Drive {
                counters: &mut counters,
                policy: &mut policy,
                stop: &stop,
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
                }]),
                "revoked after the stop: {revoke_after_stop}"
            );
        }
    }
}
