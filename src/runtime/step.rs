//! A command's per-record work (`RecordStep`), as the drive loop and the run see it: each
//! record, idleness and time, checkpoints, partitions that come and go, and the run's end.

use std::time::Duration;

use super::checkpoint::file::SinkLength;
use super::chunk::Line;
use super::metrics::StepGauges;
use super::summary::Counters;
use crate::core::partitioned::PartitionStates;
use crate::core::shuffle::Marker;
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

/// Whether a run limited to `limit` records written (`-n`) has written them all: the step
/// stops there, and a restored run that had starts none.
pub fn limit_reached(limit: Option<u64>, counters: &Counters) -> bool {
    limit.is_some_and(|n| counters.written >= n)
}

impl Flow {
    /// After a record written: stop once a run limited to `limit` records (`-n`) has them all.
    pub fn until_limit(limit: Option<u64>, counters: &Counters) -> Flow {
        match limit_reached(limit, counters) {
            true => Flow::Stop,
            false => Flow::Continue,
        }
    }
}

/// What a step hands over for a checkpoint, its output made durable first.
#[derive(Debug, Default)]
pub struct StepCheckpoint {
    /// The command's own state (its encoding).
    pub state: Vec<u8>,
    /// Its output files, flushed and synced, and their lengths.
    pub sinks: Vec<SinkLength>,
}

/// A command's per-record work.
pub trait RecordStep {
    fn record(&mut self, line: &Line<'_>, counters: &mut Counters) -> Result<Flow, Fault>;
    /// Called whenever no input is ready, before waiting for more: flush output here so
    /// records flow promptly through a live pipeline. Nothing, for a step that writes only
    /// at its end.
    fn idle(&mut self) -> Result<()> {
        Ok(())
    }
    /// The schema the output's values are encoded with, for the summary.
    fn encoding(&self) -> Option<String> {
        None
    }
    /// Called about every 100 ms, whether input comes or not (idle partitions, timers).
    fn tick(&mut self, _counters: &mut Counters) -> Result<()> {
        Ok(())
    }
    /// What the step holds now, for `--metrics`: its state's size, and each input
    /// partition's highest event time and watermark. Called about once a second.
    fn gauges(&self, _gauges: &mut StepGauges) {}
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
    /// A Kafka partition read to its end (`-e`), after its last record. A group member's
    /// task of it has all its input: its last output goes out now, while the member owns
    /// it, rather than at the run's end, after the group may have moved it (and a member
    /// that saw it committed to its end may have ended).
    fn partition_ended(&mut self, _partition: i32, _counters: &mut Counters) -> Result<()> {
        Ok(())
    }
    /// A writer's watermark marker, read from `partition` of a shuffle's topic in order
    /// with its records (`--repartition`).
    fn marker(&mut self, _partition: i32, _marker: &Marker) -> Result<()> {
        Ok(())
    }
    /// Shown a record `LOOKAHEAD` records before it comes to `record`, so that the state it
    /// will touch can be fetched into cache while earlier records are worked on. `next`
    /// makes the record's `Line` (or says it is not a record), only for steps that look.
    fn ahead<'l>(&mut self, _next: impl FnOnce() -> Option<Line<'l>>) {}
    /// A consumer-group member keeps state per input partition (a task each), which moves
    /// with the partition: saved for its next owner, restored from its last one, dropped
    /// when the group takes it away. Only commands that keep state that way have them.
    fn partition_states(&mut self) -> Option<&mut dyn PartitionStates> {
        None
    }
    /// The input ended (`ended` is `Ok`) or a signal stopped the run (`Interrupted`):
    /// writes what the run writes only at its end (the windows still open, the records held
    /// for `--keep last`, a report) and returns the run's result. Not called after an
    /// error.
    fn finish(&mut self, ended: Result<()>, _counters: &mut Counters) -> Result<()> {
        ended
    }
    /// Flushes and closes the outputs and adds what the step counted itself to `counters`:
    /// the last thing every run does, failed or not.
    fn close(&mut self, _counters: &mut Counters) -> Result<()> {
        Ok(())
    }
}
