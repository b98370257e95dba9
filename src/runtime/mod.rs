//! The record path every command shares. A `Source` runs on the reader thread and hands its
//! records over in chunks (`reader`), checked and located there (`chunk`); the drive loop
//! (`drive`) shows each record to the command's `RecordStep` under the error policy
//! (`policy`), watching for a stop (`signals`); `summary` counts and reports the run, and
//! `progress` draws bars on a terminal.

pub mod checkpoint;
mod chunk;
mod drive;
pub mod policy;
pub mod progress;
mod reader;
pub mod signals;
pub mod summary;

pub use checkpoint::{
    CheckpointInputs, CheckpointPlan, Checkpoints, PartitionState, Restored, ShardResume,
    StepCheckpoint,
};
pub use chunk::{Chunk, Line, LinePosition, Prepare, ShardPosition, CHUNK_BYTES};
pub use drive::{drive, drive_with, Drive, Flow, RecordStep};
pub use policy::{ErrorPolicy, OnError, PolicyPlan};
pub use reader::{Feed, Framing, Reader, Revoker, Source, Starts};
pub use summary::{Counters, Stats};

use std::sync::atomic::AtomicBool;

use crate::error::Result;

/// What every command's read needs besides its step: the source, how its records are
/// checked, and the error policy.
pub struct Run<'a> {
    pub source: Box<dyn Source>,
    pub prepare: Prepare,
    pub max_line_bytes: usize,
    pub counters: &'a mut Counters,
    pub policy: &'a mut ErrorPolicy,
    pub stop: &'a AtomicBool,
}

/// Reads `run.source` on the reader thread and runs `step` on every record.
pub fn read_records(run: Run<'_>, step: &mut impl RecordStep) -> Result<()> {
    read_records_with(run, step, None)
}

/// As `read_records`, taking checkpoints when they are due.
pub fn read_records_with(
    run: Run<'_>,
    step: &mut impl RecordStep,
    checkpoints: Option<&mut Checkpoints>,
) -> Result<()> {
    let reader = Reader::spawn(run.source, run.prepare, run.max_line_bytes);
    let d = Drive {
        counters: run.counters,
        policy: run.policy,
        stop: run.stop,
    };
    drive_with(reader, d, step, checkpoints)
}

/// As `read_records_with`, for a run that stops after `limit` records written (`-n`, which the
/// step enforces): a run restored from a checkpoint that had written them all is done.
pub fn read_records_up_to(
    limit: Option<u64>,
    run: Run<'_>,
    step: &mut impl RecordStep,
    checkpoints: Option<&mut Checkpoints>,
) -> Result<()> {
    if limit_reached(limit, run.counters) {
        return Ok(());
    }
    read_records_with(run, step, checkpoints)
}

/// Whether a run limited to `limit` records written (`-n`) has written them all: the step
/// stops there, and a restored run that had starts none.
pub fn limit_reached(limit: Option<u64>, counters: &Counters) -> bool {
    limit.is_some_and(|n| counters.written >= n)
}
