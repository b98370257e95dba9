//! What a long run shows to monitoring while it lasts (`--metrics`): about once a second the
//! drive loop publishes its counters, the step's gauges and what it handled of each input
//! partition; a source publishes what its client sees (a consumer's lag). An endpoint (`io`)
//! renders the latest (`report`). The record path counts only as it always does: nothing here
//! is touched per record, and the one lock is taken once a second and at each scrape.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use super::chunk::Chunk;
use super::summary::Counters;
use crate::core::time::Millis;

/// How often the drive loop publishes.
const PUBLISH_EVERY: Duration = Duration::from_secs(1);

/// One input partition: a Kafka partition, a Kinesis shard, a `--partition-by` value, by
/// the JSON text of its envelope field.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PartitionGauges {
    /// Records of it handed to the command.
    pub records: Option<u64>,
    /// Records of it dropped as late (`window`).
    pub late: Option<u64>,
    /// Its highest event time seen (ms), where the command keeps one.
    pub max_event_time: Option<Millis>,
    /// Its watermark: that, less the delay.
    pub watermark: Option<Millis>,
    /// The source reads it now (a group's assignment); unknown for a source without one.
    pub owned: Option<bool>,
}

/// How far a client is behind a partition's end, as it last saw.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClientLag {
    /// Records between the consumer's position and the partition's end (Kafka).
    pub records: Option<i64>,
    /// Behind the shard's tip (Kinesis's MillisBehindLatest).
    pub ms: Option<i64>,
}

/// The size of the state a command holds now.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StateGauges {
    pub open_windows: Option<u64>,
    pub keys: Option<u64>,
    /// Ids a dedupe remembers.
    pub ids: Option<u64>,
    /// The memory the state holds, near enough.
    pub bytes: Option<u64>,
}

/// What a step shows of itself: its state and its partitions' event time.
#[derive(Debug, Default)]
pub struct StepGauges {
    pub state: StateGauges,
    /// What it has written, where it counts that itself until the run's end.
    pub written: Option<u64>,
    /// (partition, highest event time, watermark).
    pub partitions: Vec<(String, Millis, Millis)>,
    /// Records dropped as late, per partition (by name).
    pub late: Vec<(String, u64)>,
}

impl StepGauges {
    /// Takes in a watermark's partitions (`Watermarks::partitions`), named by `names` (their
    /// ids' values); an id without a name is its own (an input partition behind a shuffle).
    pub fn marks(
        &mut self,
        names: &[String],
        marks: impl Iterator<Item = (usize, Millis, Millis)>,
    ) {
        for (id, max, watermark) in marks {
            let name = names.get(id).cloned().unwrap_or_else(|| id.to_string());
            self.partitions.push((name, max, watermark));
        }
    }
}

/// The run as last published.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub counters: Counters,
    pub state: StateGauges,
    pub partitions: BTreeMap<String, PartitionGauges>,
    /// How far behind each partition's end a source's client is, by topic (or stream) and
    /// partition (or shard).
    pub client_lag: BTreeMap<(String, String), ClientLag>,
    /// Bad records go to a dead-letter sink: each counted bad was dead-lettered.
    pub dead_letters: bool,
    /// Checkpoints (or a group member's saved states) taken, and when the last was.
    pub saves: u64,
    pub last_save: Option<SystemTime>,
}

static BOARD: OnceLock<Mutex<Snapshot>> = OnceLock::new();

/// The run publishes from now on (`--metrics`).
pub fn enable() {
    BOARD.get_or_init(Mutex::default);
}

pub fn enabled() -> bool {
    BOARD.get().is_some()
}

/// Changes the published snapshot, when the run publishes.
pub fn update(change: impl FnOnce(&mut Snapshot)) {
    if let Some(board) = BOARD.get() {
        change(&mut board.lock().unwrap_or_else(|e| e.into_inner()));
    }
}

/// The latest snapshot (empty when the run does not publish).
pub fn snapshot() -> Snapshot {
    BOARD
        .get()
        .map(|b| b.lock().unwrap_or_else(|e| e.into_inner()).clone())
        .unwrap_or_default()
}

/// A source's client says how far behind the end of `partition` of `topic` it is.
pub fn client_lag(topic: &str, partition: &str, lag: ClientLag) {
    update(|s| {
        s.client_lag
            .insert((topic.to_string(), partition.to_string()), lag);
    });
}

/// The drive loop's side: what it counts between publications.
#[derive(Debug)]
pub struct Publisher {
    published: Instant,
    /// Records handled per Kafka partition, and per Kinesis shard.
    partitions: BTreeMap<i32, u64>,
    shards: BTreeMap<String, u64>,
    owned: Option<Vec<String>>,
    saves: u64,
    last_save: Option<SystemTime>,
}

impl Publisher {
    /// A publisher when the run publishes.
    pub fn when_enabled() -> Option<Publisher> {
        enabled().then(|| Publisher {
            published: Instant::now(),
            partitions: BTreeMap::new(),
            shards: BTreeMap::new(),
            owned: None,
            saves: 0,
            last_save: None,
        })
    }

    /// Every record of `chunk` was handed over.
    pub fn handled(&mut self, chunk: &Chunk) {
        for (p, _) in &chunk.positions {
            *self.partitions.entry(*p).or_default() += 1;
        }
        for s in &chunk.shard_positions {
            match self.shards.get_mut(&*s.shard) {
                Some(n) => *n += 1,
                None => {
                    self.shards.insert(s.shard.to_string(), 1);
                }
            }
        }
    }

    /// The source reads these partitions from now on (a group's assignment).
    pub fn assigned(&mut self, partitions: &[String]) {
        self.owned = Some(partitions.to_vec());
    }

    /// A checkpoint was taken.
    pub fn saved(&mut self) {
        self.saves += 1;
        self.last_save = Some(SystemTime::now());
    }

    /// Publishes, when a second has passed since the last time, what the run counted (bad
    /// records dead-lettered when `dead_letters`) and what `gauges` says of the step.
    pub fn tick(
        &mut self,
        counters: &Counters,
        dead_letters: bool,
        gauges: impl FnOnce(&mut StepGauges),
    ) {
        if self.published.elapsed() < PUBLISH_EVERY {
            return;
        }
        self.published = Instant::now();
        let mut step = StepGauges::default();
        gauges(&mut step);
        update(|s| {
            s.dead_letters = dead_letters;
            self.publish(s, counters, step)
        });
    }

    fn publish(&self, s: &mut Snapshot, counters: &Counters, step: StepGauges) {
        s.counters = Counters {
            fields: Default::default(),
            written: step.written.unwrap_or(counters.written),
            ..counters.clone()
        };
        s.state = step.state;
        (s.saves, s.last_save) = (self.saves, self.last_save);
        let shards = self.shards.iter().map(|(s, n)| (format!("\"{s}\""), *n));
        let partitions = self.partitions.iter().map(|(p, n)| (p.to_string(), *n));
        for (name, n) in partitions.chain(shards) {
            s.partitions.entry(name).or_default().records = Some(n);
        }
        for (name, late) in step.late {
            s.partitions.entry(name).or_default().late = Some(late);
        }
        for (name, max, watermark) in step.partitions {
            let p = s.partitions.entry(name).or_default();
            (p.max_event_time, p.watermark) = (Some(max), Some(watermark));
        }
        if let Some(owned) = &self.owned {
            for (name, p) in s.partitions.iter_mut() {
                p.owned = Some(owned.contains(name));
            }
            for name in owned {
                s.partitions.entry(name.clone()).or_default().owned = Some(true);
            }
        }
    }
}
