//! Which input partition a record came from, as window, dedupe and watermark-profile read it:
//! a field of the record (`--partition-by`, an envelope's `partition` or `shard`), or the
//! input position a shuffle carried.

use crate::core::record::{Extractor, RecordError};
use crate::core::watermark::{PartitionIds, MAX_PARTITIONS};

use super::chunk::Line;

/// Where a record's fields say its input partition, and how many the input has.
#[derive(Debug, Clone, Copy, Default)]
pub struct PartitionFields {
    /// The field naming the partition; without it, the input is one partition.
    pub at: Option<usize>,
    /// A piped envelope's count of its source's partitions (`Partitioning::count`).
    pub count_at: Option<usize>,
    /// Behind a shuffle (`--repartition`): the envelope's input partition and offset.
    pub shuffle_at: Option<(usize, usize)>,
    /// The partitions are the source's own (Kafka partitions, Kinesis shards), which it names
    /// as it assigns them (`RecordStep::assigned`).
    pub by_source: bool,
}

impl PartitionFields {
    /// The id in `ids` of the partition a record read straight from the input names (0 when
    /// there is one partition).
    pub fn id(
        &self,
        line: &Line<'_>,
        x: &Extractor,
        ids: &mut PartitionIds,
    ) -> Result<usize, RecordError> {
        let Some(i) = self.at else { return Ok(0) };
        ids.id(line.require(i, x)?)
            .ok_or_else(|| RecordError::BadValue {
                path: x.paths()[i].to_string(),
                reason: format!("more than {MAX_PARTITIONS} distinct partition values"),
            })
    }

    /// Behind a shuffle, the record's input partition (its id in every task) and offset.
    pub fn shuffled(
        &self,
        line: &Line<'_>,
        x: &Extractor,
    ) -> Result<Option<(usize, i64)>, RecordError> {
        self.shuffle_at
            .map(|at| line.input_position(at, x))
            .transpose()
    }

    /// How many partitions a piped envelope says its read has, if it says so.
    pub fn count(&self, line: &Line<'_>) -> Option<usize> {
        let n: usize = line.field(self.count_at?)?.parse().ok()?;
        Some(n.min(MAX_PARTITIONS))
    }

    /// The ids of the partitions a source says it now reads (named by their envelope field's
    /// JSON text, which ids are keyed by); `None` when its partitions are not the source's.
    pub fn assigned(&self, names: &[String], ids: &mut PartitionIds) -> Option<Vec<usize>> {
        self.by_source.then(|| ids.ids_of(names))
    }
}
