//! One run of a command, from its checked plan to its summary, in the same order for every
//! command that reads records:
//!
//! 1. the command's plan checks every rule (nothing opened yet: a usage error changes
//!    nothing);
//! 2. its checkpoints are opened (a file, or a group member's states per partition) and the
//!    last one read;
//! 3. the source is opened, then the error policy's dead-letter file, then the command's own
//!    outputs and step, so that an unreachable source leaves every file alone;
//! 4. the reader thread and the drive loop read, taking checkpoints when due;
//! 5. at the end, the checkpoint before the last output, the last output
//!    (`RecordStep::finish`), the checkpoint after it, and the outputs closed;
//! 6. the summary on stderr and `--stats`.
//!
//! A command gives its plan (`RunPlan`): its own part (`Command`, which opens its outputs and
//! makes its step), the input it reads (`Input`, which `io` opens) and how it keeps state.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::checkpoint::{CheckpointInputs, CheckpointPlan, Checkpoints, Restored};
use super::chunk::{FieldsSeen, Prepare};
use super::drive::{drive_with, Drive};
use super::policy::{ErrorPolicy, OnError};
use super::reader::{Reader, Source};
use super::select::Selection;
use super::step::{limit_reached, RecordStep};
use super::summary::{finish, Counters, ReportPlan, Stats};
use crate::core::record::suggest_path;
use crate::core::time::Millis;
use crate::error::{Error, Result};

/// Where a run's records come from, checked: `io` opens it for the run.
pub trait Input {
    /// What the source reads, as checkpoints name it.
    fn checkpoint_inputs(&self) -> CheckpointInputs;
    /// Opens the source to go on from where a `restored` run stood (connecting to a broker and
    /// resolving its positions; files are opened as the reader comes to them).
    fn open_source(&self, restored: Option<&Restored>) -> Result<Box<dyn Source>>;
    /// Opens the error policy: its dead-letter file created, or cut back to what a `restored`
    /// run committed.
    fn open_policy(&self, restored: Option<&Restored>) -> Result<ErrorPolicy>;
    /// The longest record accepted.
    fn max_line_bytes(&self) -> usize;
}

/// A command's own part of a run.
pub trait Command {
    type Step: RecordStep;
    /// Opens the command's outputs and makes its step: fresh, or going on from the state a
    /// `restored` run saved.
    fn open(self, restored: Option<&Restored>) -> Result<Self::Step>;
}

/// How a run keeps its state for the next run.
pub enum Keeping {
    /// It does not: every run starts afresh.
    Nothing,
    /// In a checkpoint file (`--checkpoint`).
    File(CheckpointPlan),
    /// Per input partition, saved this often through the source for the partition's next
    /// owner: a consumer-group member's (`-G`).
    PerPartition(Duration),
}

/// A command's run, checked.
pub struct RunPlan<C> {
    pub command: C,
    pub input: Box<dyn Input>,
    /// How the reader thread checks each record and which fields it locates.
    pub prepare: Prepare,
    pub keeping: Keeping,
    /// What makes a checkpoint this job's: the inputs and every flag that shapes the output.
    pub job: String,
    /// `-n`: the run stops after this many records written (the step says when).
    pub limit: Option<u64>,
    /// `--where`: the records the step sees (their fields located with the command's).
    pub select: Option<Selection>,
}

/// Runs a command: `plan` checks every rule, then the run goes as the module says, then the
/// summary and `--stats` are written for whatever the result.
pub fn run_command<C: Command>(
    mut stats: Stats,
    report: &ReportPlan,
    plan: impl FnOnce() -> Result<RunPlan<C>>,
    stop: &AtomicBool,
) -> Result<()> {
    let result = plan().and_then(|plan| plan.run(&mut stats, stop));
    finish(&stats, report, result)
}

impl<C: Command> RunPlan<C> {
    fn run(self, stats: &mut Stats, stop: &AtomicBool) -> Result<()> {
        let (mut checkpoints, restored) = self.open_checkpoints(stats.command)?;
        let restored = restored.as_ref();
        if let Some(r) = restored {
            stats.counters = r.counters.clone();
        }
        let source = self.input.open_source(restored)?;
        let mut policy = self.input.open_policy(restored)?;
        let mut step = self.command.open(restored)?;
        stats.encoding = step.encoding();
        let counters = &mut stats.counters;
        let prepare = self.prepare.clone();
        let read = match limit_reached(self.limit, counters) {
            // A restored run that had written all it was to write reads nothing.
            true => Ok(()),
            false => {
                let reader = Reader::spawn(source, self.prepare, self.input.max_line_bytes());
                let d = Drive {
                    counters: &mut *counters,
                    policy: &mut policy,
                    stop,
                    select: self.select.as_ref(),
                };
                drive_with(reader, d, &mut step, checkpoints.as_mut())
            }
        };
        let ending = Ending {
            step: &mut step,
            policy: &mut policy,
            checkpoints: checkpoints.as_mut(),
            counters: &mut *counters,
        };
        let result = ending.end(read);
        // Flushed whatever the result: what was written goes out.
        let closed = step.close(counters).and(policy.close());
        // A run stopped by a bad record has said what was wrong with it; the fields it did
        // not see by then say little more.
        let stopped_by_input = matches!(result, Err(Error::BadInput { .. }));
        let warnings = match stopped_by_input {
            true => Vec::new(),
            false => unseen_fields(&prepare, &counters.fields),
        };
        if let (Some(r), Keeping::File(plan), Ok(())) = (restored, &self.keeping, &result) {
            if r.counters.read == counters.read {
                stats.note = Some(format!(
                    "nothing was left to read: the checkpoint {} stands at the end of the input (--reset starts afresh)",
                    plan.path.display()
                ));
            }
        }
        stats.warnings = warnings;
        result.and(closed)
    }

    /// Opens the run's checkpoints, when it keeps them, and reads the one to restore from.
    fn open_checkpoints(
        &self,
        command: &'static str,
    ) -> Result<(Option<Checkpoints>, Option<Restored>)> {
        let inputs = self.input.checkpoint_inputs();
        let plan = match &self.keeping {
            Keeping::Nothing => return Ok((None, None)),
            Keeping::PerPartition(every) => {
                return Ok((Some(Checkpoints::for_group(*every, command, inputs)), None))
            }
            Keeping::File(plan) => plan,
        };
        let stdin = inputs.reads_stdin();
        let mut checkpoints = Checkpoints::open(plan, command, self.job.clone(), inputs)?;
        let restored = checkpoints.restore()?;
        if restored.is_some() && stdin {
            eprintln!("weir {command}: restored from the checkpoint; the input goes on from where this stdin starts");
        }
        Ok((Some(checkpoints), restored))
    }
}

/// Runs `step` over `source`, opened already, keeping no state and writing no summary: a
/// stage inside another command's run (the writer of a shuffle, whose every record goes on,
/// so any bad one stops it). Returns what it counted.
pub fn run_stage(
    source: Box<dyn Source>,
    prepare: Prepare,
    max_line_bytes: usize,
    step: &mut impl RecordStep,
    stop: &AtomicBool,
) -> Result<Counters> {
    let mut counters = Counters::default();
    let mut policy = ErrorPolicy::new(OnError::Fail, None);
    let reader = Reader::spawn(source, prepare, max_line_bytes);
    let d = Drive {
        counters: &mut counters,
        policy: &mut policy,
        stop,
        select: None,
    };
    let read = drive_with(reader, d, step, None);
    let ending = Ending {
        step: &mut *step,
        policy: &mut policy,
        checkpoints: None,
        counters: &mut counters,
    };
    let result = ending.end(read);
    let closed = step.close(&mut counters);
    result.and(closed).map(|()| counters)
}

/// The end of a read, wherever it ended.
struct Ending<'a, S> {
    step: &'a mut S,
    policy: &'a mut ErrorPolicy,
    checkpoints: Option<&'a mut Checkpoints>,
    counters: &'a mut Counters,
}

impl<S: RecordStep> Ending<'_, S> {
    /// After a read that ended with `read`: the checkpoint before the last output (a next run
    /// goes on from it and writes that output again, having read more), the last output
    /// itself, unless the read failed, and the checkpoint after it (a job over files read to
    /// their end is done).
    fn end(mut self, read: Result<()>) -> Result<()> {
        if let Some(c) = &mut self.checkpoints {
            c.take_before_last_output(self.step, self.policy, self.counters, &read)?;
        }
        let result = match read {
            Ok(()) | Err(Error::Interrupted) => self.step.finish(read, self.counters),
            failed => failed,
        };
        if let Some(c) = &mut self.checkpoints {
            c.take_after_last_output(self.step, self.policy, self.counters, &result)?;
        }
        result
    }
}

/// The fields a user named (a command's flags, `--where`) that no record of the run had,
/// each with the path of the run's first record most like it: a typo that would otherwise
/// pass as a filter that drops everything, or an aggregate of nulls.
fn unseen_fields(prepare: &Prepare, fields: &FieldsSeen) -> Vec<String> {
    let (Prepare::Extract(x) | Prepare::Select(x)) = prepare else {
        return Vec::new();
    };
    let sample = fields.sample.as_deref().unwrap_or("{}");
    x.named()
        .filter(|(i, _)| fields.seen.get(*i) == Some(&false))
        .map(|(_, path)| match suggest_path(sample, path) {
            Some(near) => format!("no record had the field '{path}' (did you mean '{near}'?)"),
            None => format!("no record had the field '{path}'"),
        })
        .collect()
}

/// The start of a processing-time clock that reads `now` at once: a resumed run's clock goes
/// on from the checkpoint's.
pub fn clock_from(now: Millis) -> Instant {
    let since = Duration::from_millis(now.max(0) as u64);
    let start = Instant::now();
    start.checked_sub(since).unwrap_or(start)
}
