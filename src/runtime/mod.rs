//! The record path every command shares, and the run around it. It owns both ports: records
//! come in by a `Source` (`reader`), which runs on the reader thread and hands them over in
//! chunks, checked and located there (`chunk`), and leave by a `Sink` (`sink`); `io`
//! implements both. The drive loop (`drive`) shows each record to the command's `RecordStep`
//! (`step`) under the error policy (`policy`), watching for a stop (`signals`) and taking
//! checkpoints (`checkpoint`). `run` is one run's lifecycle from plan to summary
//! (`summary`); `progress` draws bars on a terminal; `metrics` is what a run publishes to
//! monitoring while it lasts; `partitions` reads which input partition a record came from.
//!
//! Nothing here imports `io`, `report`, `cli` or `cmd`.

pub mod checkpoint;
mod chunk;
mod drive;
pub mod metrics;
mod partitions;
pub mod policy;
pub mod progress;
mod reader;
pub mod run;
pub mod select;
pub mod signals;
pub mod sink;
pub mod step;
pub mod summary;
pub mod watch;

pub use checkpoint::{
    saved_state, CheckpointInputs, CheckpointPlan, Checkpoints, Giving, PartitionState, Restored,
    ShardResume, ShardStart, ShardState,
};
pub use chunk::{
    Chunk, ChunkData, Line, LinePosition, MappedRange, Prepare, ShardPosition, CHUNK_BYTES,
};
pub use drive::{drive, drive_with, Drive};
pub use partitions::PartitionFields;
pub use policy::{ErrorPolicy, OnError, PolicyPlan};
pub use reader::{
    key_read_ahead, number_read_ahead, own_core, time_read_ahead, Feed, Framing, Reader, Revoker,
    Source, Starts,
};
pub use run::{clock_from, run_command, run_stage, Command, Input, Keeping, RunPlan};
pub use select::Selection;
pub use sink::{send_envelope, Outgoing, Sink, SinkLength};
pub use step::{Flow, RecordStep, StepCheckpoint};
pub use summary::{Counters, ReportPlan, Stats};
