//! The drive loop: every record of every source passes here on its way to a command's step,
//! under the shared rules (blank lines, line length, error policy, dead letters, stop,
//! idleness, look-ahead).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use super::checkpoint::{Checkpoints, StepCheckpoint};
use super::chunk::{Line, Status};
use super::policy::ErrorPolicy;
use super::reader::{Item, Reader};
use super::summary::Counters;
use crate::core::record::{Position, RecordError};
use crate::error::{Error, Fault, Result};

/// What a command's per-record step asks of the driver.
pub enum Flow {
    Continue,
    /// Stop reading: the command has all it wants (`-n`).
    Stop,
}

/// A command's per-record work.
pub trait RecordStep {
    fn record(&mut self, line: &Line<'_>, counters: &mut Counters) -> Result<Flow, Fault>;
    /// Called whenever no input is ready, before waiting for more: flush output here so
    /// records flow promptly through a live pipeline.
    fn idle(&mut self) -> Result<()>;
    /// Called about every 100 ms while waiting for input (idle partitions, timers).
    fn tick(&mut self) -> Result<()> {
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
    /// a rebalance), before any of their records comes.
    fn assigned(&mut self, _partitions: &[i32]) {}
    /// Shown a record `LOOKAHEAD` records before it comes to `record`, so that the state it
    /// will touch can be fetched into cache while earlier records are worked on. `next`
    /// makes the record's `Line` (or says it is not a record), only for steps that look.
    fn ahead<'l>(&mut self, _next: impl FnOnce() -> Option<Line<'l>>) {}
}

/// How often, while records keep coming, the output is made durable so that a broker source
/// can commit what it covers.
const RELEASE_EVERY: Duration = Duration::from_secs(1);

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
                Some(c) => c.take(step, d.policy, d.counters)?,
                None => step.durable()?,
            }
            reader.handled(std::mem::take(&mut self.pending));
        }
        self.since = Instant::now();
        Ok(())
    }
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
    reader: Reader,
    mut d: Drive<'_>,
    step: &mut impl RecordStep,
    mut checkpoints: Option<&mut Checkpoints>,
) -> Result<()> {
    let mut handled = Handled {
        pending: Vec::new(),
        since: Instant::now(),
    };
    loop {
        let items = reader.items.as_ref().expect("receiver kept until drop");
        let item = match items.try_recv() {
            Ok(item) => item,
            Err(TryRecvError::Disconnected) => return Ok(()),
            Err(TryRecvError::Empty) => {
                // `durable` does what `idle` does and more: once is enough. With checkpoints,
                // positions wait for the next one.
                if handled.pending.is_empty() || checkpoints.is_some() {
                    step.idle()?;
                } else {
                    handled.release(&reader, step, None, &mut d)?;
                }
                loop {
                    if d.stop.load(Ordering::Relaxed) {
                        return Err(Error::Interrupted);
                    }
                    // A quiet source's last records are committed at the next checkpoint.
                    if let Some(c) = checkpoints.as_deref_mut() {
                        if c.due() && !handled.pending.is_empty() {
                            handled.release(&reader, step, Some(c), &mut d)?;
                        }
                    }
                    match items.recv_timeout(Duration::from_millis(100)) {
                        Ok(item) => break item,
                        Err(RecvTimeoutError::Timeout) => step.tick()?,
                        Err(RecvTimeoutError::Disconnected) => return Ok(()),
                    }
                }
            }
        };
        if d.stop.load(Ordering::Relaxed) {
            return Err(Error::Interrupted);
        }
        match item {
            Item::Failed(e) => return Err(e),
            Item::Assigned(partitions) => step.assigned(&partitions),
            Item::Draining => handled.release(&reader, step, checkpoints.as_deref_mut(), &mut d)?,
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
            Item::Records(mut chunk) => {
                step.batch();
                d.counters.bytes_read += chunk.input_bytes;
                let p = &chunk.prepared;
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
                    d.counters.read += 1;
                    let result = match info.status {
                        Status::Record(_) => {
                            let line = chunk.record_line(i).expect("a record");
                            step.record(&line, d.counters)
                        }
                        Status::Bad(e) => Err(Fault::Record(p.errors[e as usize].clone())),
                        Status::Blank => unreachable!("skipped above"),
                    };
                    match result {
                        Ok(Flow::Continue) => {}
                        Ok(Flow::Stop) => {
                            let upto = chunk.positions.len().min(i + 1);
                            handled.pending.extend_from_slice(&chunk.positions[..upto]);
                            if let Some(c) = checkpoints.as_deref_mut() {
                                c.passed_records(&chunk.positions[..upto]);
                            }
                            handled.release(&reader, step, checkpoints, &mut d)?;
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
                    if let Some(end) = end {
                        c.passed(end);
                    }
                }
                handled.pending.append(&mut chunk.positions);
                reader.recycle(chunk);
                match checkpoints.as_deref_mut() {
                    Some(c) if c.due() => {
                        if handled.pending.is_empty() {
                            c.take(step, d.policy, d.counters)?;
                        } else {
                            handled.release(&reader, step, Some(c), &mut d)?;
                        }
                    }
                    Some(_) => {}
                    None if handled.since.elapsed() >= RELEASE_EVERY => {
                        handled.release(&reader, step, None, &mut d)?;
                    }
                    None => {}
                }
            }
        }
    }
}
