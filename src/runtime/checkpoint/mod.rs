//! Taking and restoring checkpoints on the record path: the drive loop notes where the source
//! stands after each chunk and, when one is due, asks the step to make its output durable and
//! hand over its state; the checkpoint then goes to its file (`file`).
//!
//! A checkpoint is taken between chunks, so at a record boundary: everything before it has
//! been handled and written, nothing after it has.

pub mod file;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::chunk::{LinePosition, ShardPosition};
use super::policy::ErrorPolicy;
use super::step::{RecordStep, StepCheckpoint};
use super::summary::Counters;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::core::lag::ShardCheckpoint;
use crate::core::lease::hash_key;
use crate::core::partitioned::PartitionStates;
use crate::core::saved;
use crate::core::time::{now_millis, Millis};
use crate::error::{Error, Result};
use file::{
    Checkpoint, CheckpointFile, Loaded, PartitionCheckpoint, PartitionId, Resume, SinkLength,
};

/// Opens an output file: created or truncated for a fresh run, or, restoring a checkpoint,
/// cut back to the length the checkpoint committed, so that what was written after it is
/// written again exactly once.
pub fn open_output(path: &Path, committed: Option<u64>) -> io::Result<File> {
    let Some(len) = committed else {
        return File::create(path);
    };
    let mut file = OpenOptions::new().write(true).open(path)?;
    let now = file.metadata()?.len();
    if now < len {
        return Err(io::Error::other(format!(
            "it is {now} bytes, shorter than the {len} the checkpoint committed; start afresh with --reset"
        )));
    }
    file.set_len(len)?;
    file.seek(SeekFrom::End(0))?;
    Ok(file)
}

/// The length output file `path` is cut back to: what the `restored` run committed (nothing,
/// if the checkpoint has none of it), or `None` for a fresh run.
pub fn committed(restored: Option<&Restored>, path: &Path) -> Option<u64> {
    restored.map(|r| r.sink_len(path).unwrap_or(0))
}

/// Makes `file`'s written bytes durable and returns its length.
pub fn sync_len(mut file: &File) -> io::Result<u64> {
    file.sync_data()?;
    file.stream_position()
}

/// What a command's flags say about checkpoints, checked, with nothing opened.
#[derive(Clone, Debug)]
pub struct CheckpointPlan {
    pub path: PathBuf,
    pub interval: Duration,
    /// `--reset`: forget the checkpoint and start afresh.
    pub reset: bool,
}

/// A consumer-group member's state of one input partition, saved where the partition's next
/// owner finds it (the changelog topic): the command's state after every record before
/// `next_offset`, whose output was durable when it was saved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionState {
    pub partition: i32,
    pub next_offset: i64,
    pub state: Vec<u8>,
    /// Saved after the step handled the partition's end (`RecordStep::partition_ended`): its
    /// last output is in the state's durable output. Not kept in the changelog.
    pub ended: bool,
}

/// A Kinesis member's state of one shard, saved for whichever member reads the shard next:
/// the command's state after every record up to `resume` (`None`: none handled or restored
/// yet), its output durable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardState {
    pub shard: Arc<str>,
    pub resume: Option<ShardResume>,
    pub state: Vec<u8>,
}

/// Where a Kinesis member's shard starts: from the state its last owner saved, or, for a
/// child shard no member has read yet, from its parents' last states (each with whether
/// what no key names goes to this child), taking the keys whose hash falls in its range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShardStart {
    Restored(ShardState),
    Inherited {
        parents: Vec<(Vec<u8>, bool)>,
        hash_range: (u128, u128),
    },
}

/// What a Kinesis member does with the state of a shard it stops reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Giving {
    /// Another member took the shard: the state is dropped.
    Drop,
    /// The shard goes to another member, or ended: its state is saved for it, and dropped.
    Save,
    /// The member leaves at the end of the run: the state is saved for the next owner, and
    /// kept for the run's last output (a profile's report; windows and held records are not
    /// written on a stop).
    SaveAndKeep,
}

/// The partitions (or shards) a group member owns, each a task with state of its own.
#[derive(Debug, Default)]
struct Owned {
    /// The partitions (or a Kinesis member's shard tasks) owned: where each one's state
    /// stands is its next offset in `Checkpoints::offsets`, restored or handled.
    owned: BTreeSet<i32>,
    /// Partitions with records handled since their last save.
    moved: BTreeSet<i32>,
    /// Owned partitions whose end the step has handled.
    ended: BTreeSet<i32>,
    /// States saved and not yet handed to the source.
    outbox: Vec<PartitionState>,
    /// A Kinesis member's shards, by task.
    shards: BTreeMap<i32, Arc<str>>,
    /// Shard states saved and not yet handed to the source.
    shard_outbox: Vec<ShardState>,
}

/// The states a group member's step keeps per partition.
fn states_of(step: &mut impl RecordStep) -> Result<&mut dyn PartitionStates> {
    step.partition_states()
        .ok_or_else(|| Error::Usage("this command keeps no state per partition".into()))
}

/// Drops `partition`'s state from the step, if it keeps state per partition.
fn revoke(step: &mut impl RecordStep, partition: i32) {
    if let Some(states) = step.partition_states() {
        states.revoke(partition);
    }
}

/// What a restored run starts from.
#[derive(Debug)]
pub struct Restored {
    /// Where a line source goes on.
    pub at: LinePosition,
    /// Where a Kafka source goes on: the next offset of each partition the run had read.
    pub offsets: Vec<(i32, i64)>,
    /// Where a Kinesis source goes on: each shard the run had read, by id.
    pub shards: BTreeMap<String, ShardResume>,
    pub counters: Counters,
    pub state: Vec<u8>,
    pub sinks: Vec<SinkLength>,
}

/// What a run reads, as its checkpoints name it.
#[derive(Clone, Debug)]
pub enum CheckpointInputs {
    /// A line source's inputs, by name, in the order they are read.
    Files(Vec<String>),
    /// A Kafka topic: its partitions are found as their records come.
    Kafka { topic: String },
    /// A Kinesis stream: its shards are found as their records come.
    Kinesis { stream: String },
}

impl CheckpointInputs {
    /// Whether the input is stdin, which cannot be read again: a run restored from its
    /// checkpoint goes on with a new stdin.
    pub fn reads_stdin(&self) -> bool {
        matches!(self, CheckpointInputs::Files(inputs) if inputs.iter().any(|n| n == "<stdin>"))
    }
}

/// Where a Kinesis shard's reading goes on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShardResume {
    /// After the record with this sequence number, or after the user record with this
    /// subsequence number of the KPL aggregate with it.
    After {
        sequence: String,
        subsequence: Option<u64>,
    },
    /// Read to its end: its children may be read.
    Done,
    /// None of its records handled yet: it is read from the records that arrived from this
    /// time on, where the run that took the checkpoint began reading it. Without this a
    /// restart would take `--from end` or `-1h` afresh and skip what came in between.
    From { arrival: Millis },
}

impl ShardResume {
    /// The position as a lease (or `weir lag`) names it: after a record is at that record,
    /// as KCL writes a checkpoint.
    pub fn checkpoint(&self) -> ShardCheckpoint {
        match self {
            ShardResume::After {
                sequence,
                subsequence,
            } => ShardCheckpoint::At {
                sequence: sequence.clone(),
                subsequence: *subsequence,
            },
            ShardResume::Done => ShardCheckpoint::ShardEnd,
            ShardResume::From { arrival } => ShardCheckpoint::AtTimestamp(*arrival),
        }
    }

    /// Where a lease's checkpoint says a shard's records were handled up to; `None` for a
    /// checkpoint before any record (`TRIM_HORIZON`, `LATEST`).
    pub fn at_checkpoint(checkpoint: &ShardCheckpoint) -> Option<ShardResume> {
        match checkpoint {
            ShardCheckpoint::At {
                sequence,
                subsequence,
            } => Some(ShardResume::After {
                sequence: sequence.clone(),
                subsequence: *subsequence,
            }),
            ShardCheckpoint::ShardEnd => Some(ShardResume::Done),
            ShardCheckpoint::AtTimestamp(arrival) => Some(ShardResume::From { arrival: *arrival }),
            _ => None,
        }
    }

    /// A shard's resume position as the checkpoint file keeps it; `None` for one that is no
    /// shard's.
    pub fn of(resume: Resume) -> Option<ShardResume> {
        match resume {
            Resume::Kinesis {
                sequence,
                subsequence,
            } => Some(ShardResume::After {
                sequence,
                subsequence,
            }),
            Resume::Done => Some(ShardResume::Done),
            Resume::KinesisFrom { arrival_ms } => Some(ShardResume::From {
                arrival: arrival_ms,
            }),
            _ => None,
        }
    }

    /// The position as the checkpoint file keeps it.
    fn to_resume(&self) -> Resume {
        match self {
            ShardResume::After {
                sequence,
                subsequence,
            } => Resume::Kinesis {
                sequence: sequence.clone(),
                subsequence: *subsequence,
            },
            ShardResume::Done => Resume::Done,
            ShardResume::From { arrival } => Resume::KinesisFrom {
                arrival_ms: *arrival,
            },
        }
    }
}

/// The part of a checkpoint that is no partition's: the counters (JSON, as `--stats`
/// writes them) and, for a source whose partitions do not each keep their own, the
/// command's state.
#[derive(Serialize, Deserialize)]
struct Shared {
    counters: Vec<u8>,
    state: Vec<u8>,
}

/// The command's state a `restored` run kept, decoded; `None` for a fresh run, and for a
/// finished job's last checkpoint, which keeps none.
pub fn saved_state<T: DeserializeOwned>(restored: Option<&Restored>) -> Result<Option<T>> {
    match restored {
        Some(r) if !r.state.is_empty() => saved::decode(&r.state).map(Some).map_err(Error::Usage),
        _ => Ok(None),
    }
}

impl Restored {
    /// The committed length of output file `path`, if the checkpoint has it.
    pub fn sink_len(&self, path: &Path) -> Option<u64> {
        let name = path.display().to_string();
        self.sinks
            .iter()
            .find(|s| s.path == name)
            .map(|s| s.committed_len)
    }
}

/// The input a line source was reading, with the command's state; none when every input was
/// done.
fn input_being_read(partitions: Vec<PartitionCheckpoint>) -> Option<(LinePosition, Vec<u8>)> {
    partitions
        .into_iter()
        .enumerate()
        .find_map(|(index, p)| match (p.partition, p.resume) {
            (PartitionId::File { .. }, Resume::File { offset, line }) => Some((
                LinePosition {
                    input: index as u32,
                    offset,
                    next_line: line,
                },
                p.state,
            )),
            _ => None,
        })
}

/// This run's command line after the command's name, as a checkpoint keeps it.
fn command_line() -> Vec<String> {
    std::env::args().skip(2).collect()
}

/// The checkpoints of one run: kept in a file, or, for a consumer-group member whose state is
/// kept per partition, handed partition by partition to the source, which saves them (in the
/// changelog topic) and commits their offsets.
pub struct Checkpoints {
    /// `None` for a group member.
    file: Option<CheckpointFile>,
    /// `Some` for a group member.
    group: Option<Owned>,
    interval: Duration,
    last: Instant,
    command: &'static str,
    job: String,
    inputs: CheckpointInputs,
    /// Where a line source stands past the last chunk handled.
    at: Option<LinePosition>,
    /// Where a Kafka source stands: the next offset of each partition past the records
    /// handled.
    offsets: BTreeMap<i32, i64>,
    /// Where a Kinesis source stands: each shard past the records handled.
    shards: BTreeMap<String, ShardResume>,
    /// Whether the source has moved on since the last checkpoint.
    moved: bool,
    /// The source failed (a broker or registry out of reach): every record it handed over
    /// before was handled, so the run's end is a place to go on from, as a stop is.
    source_failed: bool,
}

impl Checkpoints {
    /// Opens the checkpoints of `command` running `job` over `inputs`; with `--reset` the old
    /// ones are removed first.
    pub fn open(
        plan: &CheckpointPlan,
        command: &'static str,
        job: String,
        inputs: CheckpointInputs,
    ) -> Result<Checkpoints> {
        let file = CheckpointFile::new(&plan.path);
        if plan.reset {
            file.reset()?;
        }
        Ok(Checkpoints {
            file: Some(file),
            group: None,
            interval: plan.interval,
            last: Instant::now(),
            command,
            job,
            inputs,
            at: None,
            offsets: BTreeMap::new(),
            shards: BTreeMap::new(),
            moved: false,
            source_failed: false,
        })
    }

    /// The checkpoints of a consumer-group member of `command` reading `inputs`, every
    /// `interval`: each partition it owns is a task with state of its own, which
    /// the source restores when the group gives it the partition and saves when it is due,
    /// when the group takes the partition away, and when the run stops.
    pub fn for_group(
        interval: Duration,
        command: &'static str,
        inputs: CheckpointInputs,
    ) -> Checkpoints {
        Checkpoints {
            file: None,
            group: Some(Owned::default()),
            interval,
            last: Instant::now(),
            command,
            job: String::new(),
            inputs,
            at: None,
            offsets: BTreeMap::new(),
            shards: BTreeMap::new(),
            moved: false,
            source_failed: false,
        }
    }

    /// Whether these are a group member's, saved per partition through the source.
    pub(crate) fn is_group(&self) -> bool {
        self.group.is_some()
    }

    /// The group member owns `owned` now, and restored `states` for those it was given.
    /// Returns the partitions it no longer owns (lost, not revoked: their state is not saved).
    pub(crate) fn own(
        &mut self,
        owned: &[i32],
        states: &[PartitionState],
        step: &mut impl RecordStep,
    ) -> Result<Vec<i32>> {
        let Some(group) = &mut self.group else {
            return Ok(Vec::new());
        };
        let lost: Vec<i32> = group
            .owned
            .iter()
            .copied()
            .filter(|p| !owned.contains(p))
            .collect();
        for p in &lost {
            group.owned.remove(p);
            group.moved.remove(p);
            group.ended.remove(p);
            self.offsets.remove(p);
            revoke(step, *p);
        }
        for &p in owned {
            if !group.owned.insert(p) {
                continue;
            }
            if let Some(s) = states.iter().find(|s| s.partition == p) {
                states_of(step)?
                    .restore(p, &s.state)
                    .map_err(Error::Usage)?;
                self.offsets.insert(p, s.next_offset);
            }
        }
        Ok(lost)
    }

    /// For a group member: which records at these positions it must skip, as they belong to
    /// a partition it does not own (revoked while they were in flight) or its state covers
    /// them already; `None` when it skips none (the usual case).
    ///
    /// A state covers every offset before its partition's next one, restored or handled, so
    /// a record there is a repeat, whatever delivered it again: one was counted twice in a
    /// profile (a member kept partition 1 while a cooperative rebalance gave it two more).
    pub(crate) fn skipped(&self, positions: &[(i32, i64)]) -> Option<Vec<bool>> {
        let group = self.group.as_ref()?;
        // Each partition's first offset not yet covered (`None`: not owned), as this chunk
        // goes on: a record repeated within the chunk is skipped too.
        let mut next: Vec<(i32, Option<i64>)> = Vec::new();
        let mut skipped: Option<Vec<bool>> = None;
        for (i, &(p, offset)) in positions.iter().enumerate() {
            let at = match next.iter().position(|&(q, _)| q == p) {
                Some(at) => at,
                None => {
                    let covered = self.offsets.get(&p).copied().unwrap_or(i64::MIN);
                    next.push((p, group.owned.contains(&p).then_some(covered)));
                    next.len() - 1
                }
            };
            match &mut next[at].1 {
                Some(uncovered) if offset >= *uncovered => *uncovered = offset + 1,
                _ => skipped.get_or_insert_with(|| vec![false; positions.len()])[i] = true,
            }
        }
        skipped
    }

    /// The group takes `partitions` away: each one's state (with the output durable) is
    /// returned for the source to save before the group moves it, and forgotten here; or,
    /// as the run stops (`giving` is `SaveAndKeep`), kept in the step for its last output (a
    /// profile's report; windows and held records are not written on a stop).
    pub(crate) fn revoke(
        &mut self,
        partitions: &[i32],
        giving: Giving,
        step: &mut impl RecordStep,
        policy: &mut ErrorPolicy,
    ) -> Result<Vec<PartitionState>> {
        let Some(group) = &mut self.group else {
            return Ok(Vec::new());
        };
        step.durable()?;
        policy.durable()?;
        let mut states = Vec::new();
        for &p in partitions {
            if !group.owned.remove(&p) {
                continue;
            }
            group.moved.remove(&p);
            let ended = group.ended.remove(&p);
            if let Some(next) = self.offsets.remove(&p) {
                states.push(PartitionState {
                    partition: p,
                    next_offset: next,
                    state: states_of(step)?.save(p),
                    ended,
                });
            }
            if giving != Giving::SaveAndKeep {
                revoke(step, p);
            }
        }
        Ok(states)
    }

    /// The states saved since the last call, for the source.
    pub(crate) fn take_saved(&mut self) -> Vec<PartitionState> {
        self.group
            .as_mut()
            .map(|g| std::mem::take(&mut g.outbox))
            .unwrap_or_default()
    }

    /// The shard states saved since the last call, for a Kinesis member's source.
    pub(crate) fn take_saved_shards(&mut self) -> Vec<ShardState> {
        self.group
            .as_mut()
            .map(|g| std::mem::take(&mut g.shard_outbox))
            .unwrap_or_default()
    }

    /// A Kinesis member reads `shard` (task `task`) from now on, going on from `start`
    /// (where its last owner stood, with its state then; or its parents' last states), before
    /// any of its records.
    pub(crate) fn own_shard(
        &mut self,
        shard: &Arc<str>,
        task: i32,
        start: Option<&ShardStart>,
        step: &mut impl RecordStep,
    ) -> Result<()> {
        let Some(group) = &mut self.group else {
            return Ok(());
        };
        group.owned.insert(task);
        group.shards.insert(task, shard.clone());
        self.shards.remove(shard.as_ref());
        let states = states_of(step)?;
        match start {
            None => Ok(()),
            Some(ShardStart::Restored(restored)) => {
                if let Some(resume) = &restored.resume {
                    self.shards.insert(shard.to_string(), resume.clone());
                }
                states.restore(task, &restored.state).map_err(Error::Usage)
            }
            Some(ShardStart::Inherited {
                parents,
                hash_range: (low, high),
            }) => {
                let parents: Vec<(&[u8], bool)> =
                    parents.iter().map(|(b, w)| (b.as_slice(), *w)).collect();
                let owns = |key: &str| (*low..=*high).contains(&hash_key(key));
                group.moved.insert(task);
                self.moved = true;
                states.inherit(task, &parents, &owns).map_err(Error::Usage)
            }
        }
    }

    /// A Kinesis member stops reading the shard of `task`, every record of it handled: its
    /// state is returned, the output durable, or dropped, as `giving` says.
    pub(crate) fn revoke_shard(
        &mut self,
        task: i32,
        giving: Giving,
        step: &mut impl RecordStep,
        policy: &mut ErrorPolicy,
    ) -> Result<Option<ShardState>> {
        let Some(group) = &mut self.group else {
            return Ok(None);
        };
        let Some(shard) = group.shards.remove(&task) else {
            return Ok(None);
        };
        group.owned.remove(&task);
        group.moved.remove(&task);
        let resume = self.shards.remove(shard.as_ref());
        let saved = match giving {
            Giving::Drop => None,
            Giving::Save | Giving::SaveAndKeep => {
                step.durable()?;
                policy.durable()?;
                let state = states_of(step)?.save(task);
                Some(ShardState {
                    shard,
                    resume,
                    state,
                })
            }
        };
        if giving != Giving::SaveAndKeep {
            revoke(step, task);
        }
        Ok(saved)
    }

    /// Reads the checkpoint, if there is one, refusing one of another version, command or
    /// job (exit 2). A stand-in previous checkpoint is said on stderr.
    pub fn restore(&mut self) -> Result<Option<Restored>> {
        let Some(file) = &mut self.file else {
            return Ok(None);
        };
        let checkpoint = match file.read()? {
            Loaded::Fresh => return Ok(None),
            Loaded::Current(c) => c,
            Loaded::Previous(c, why) => {
                eprintln!(
                    "weir {}: the checkpoint could not be used ({why}); restoring the one before it",
                    self.command
                );
                c
            }
        };
        let (weir, args) = (env!("CARGO_PKG_VERSION"), command_line());
        checkpoint.check_matches(weir, self.command, &self.job, &args)?;
        let shared: Shared = saved::decode(&checkpoint.shared).map_err(Error::Usage)?;
        let counters = serde_json::from_slice(&shared.counters)
            .map_err(|e| Error::Usage(format!("the checkpoint's counters: {e}")))?;
        let mut restored = Restored {
            at: LinePosition::start(0),
            offsets: Vec::new(),
            shards: BTreeMap::new(),
            counters,
            state: shared.state,
            sinks: checkpoint.sinks,
        };
        match &self.inputs {
            CheckpointInputs::Files(inputs) => {
                let current = input_being_read(checkpoint.partitions);
                // Past the last input, the state stayed with the counters.
                let (at, state) = current.unwrap_or_else(|| {
                    let state = std::mem::take(&mut restored.state);
                    (LinePosition::start(inputs.len() as u32), state)
                });
                self.at = Some(at);
                restored.at = at;
                restored.state = state;
            }
            CheckpointInputs::Kafka { .. } => {
                for p in checkpoint.partitions {
                    if let (PartitionId::Kafka { partition, .. }, Resume::Kafka { offset }) =
                        (p.partition, p.resume)
                    {
                        restored.offsets.push((partition, offset));
                    }
                }
                self.offsets = restored.offsets.iter().copied().collect();
            }
            CheckpointInputs::Kinesis { .. } => {
                for p in checkpoint.partitions {
                    let PartitionId::Kinesis { shard, .. } = p.partition else {
                        continue;
                    };
                    if let Some(resume) = ShardResume::of(p.resume) {
                        restored.shards.insert(shard, resume);
                    }
                }
                self.shards = restored.shards.clone();
            }
        }
        Ok(Some(restored))
    }

    /// The source stands at `at`: everything before it has been handled.
    pub(crate) fn passed(&mut self, at: LinePosition) {
        self.moved |= self.at != Some(at);
        self.at = Some(at);
    }

    /// The step handled the end of `partition` (`RecordStep::partition_ended`), writing its
    /// last output: its next save includes it, and says so, and only then may the group count
    /// it finished.
    pub(crate) fn partition_ended(&mut self, partition: i32) {
        if let Some(group) = &mut self.group {
            if group.owned.contains(&partition) {
                group.ended.insert(partition);
            }
        }
        self.touched(partition);
    }

    /// A group member's step changed `partition`'s state without a record: its next save
    /// includes it.
    pub(crate) fn touched(&mut self, partition: i32) {
        if let Some(group) = &mut self.group {
            if group.owned.contains(&partition) {
                group.moved.insert(partition);
                self.moved = true;
            }
        }
    }

    /// The broker records at these (partition, offset) positions have been handled.
    pub(crate) fn passed_records(&mut self, positions: &[(i32, i64)]) {
        for &(partition, offset) in positions {
            if let Some(group) = &mut self.group {
                // A group member passes only the records of partitions it owns, and none
                // its state covers already.
                let covered = self.offsets.get(&partition).is_some_and(|&n| offset < n);
                if !group.owned.contains(&partition) || covered {
                    continue;
                }
                group.moved.insert(partition);
            }
            let next = self.offsets.entry(partition).or_insert(offset);
            if *next <= offset {
                *next = offset + 1;
                self.moved = true;
            }
        }
    }

    /// The source starts these Kafka partitions at these offsets (resolved from `--from`),
    /// before any of their records. A partition with no record handled by the next
    /// checkpoint is kept there at its start, so that a restart does not resolve `--from
    /// end` or `-1h` afresh and skip what came in between.
    pub(crate) fn partitions_start(&mut self, starts: &[(i32, i64)]) {
        for &(partition, offset) in starts {
            if self.group.is_none() && !self.offsets.contains_key(&partition) {
                self.offsets.insert(partition, offset);
                self.moved = true;
            }
        }
    }

    /// The source began reading Kinesis shard `shard` from the records arriving from
    /// `arrival` on, before any of its records: kept until one is handled, as for Kafka.
    pub(crate) fn shard_starts(&mut self, shard: &str, arrival: Millis) {
        if !self.shards.contains_key(shard) {
            self.shards
                .insert(shard.to_string(), ShardResume::From { arrival });
            self.moved = true;
        }
    }

    /// The Kinesis records at these positions have been handled (in order, per shard).
    pub(crate) fn passed_shards(&mut self, positions: &[ShardPosition]) {
        // Only each shard's last position counts: look from the end, at the few shards.
        let mut seen: Vec<&str> = Vec::new();
        for p in positions.iter().rev() {
            if seen.contains(&p.shard.as_ref()) {
                continue;
            }
            seen.push(&p.shard);
            if let Some(group) = &mut self.group {
                // A member passes only the records of shards it owns.
                if !group.owned.contains(&p.task) {
                    continue;
                }
                group.moved.insert(p.task);
            }
            self.shards.insert(
                p.shard.to_string(),
                ShardResume::After {
                    sequence: p.sequence.to_string(),
                    subsequence: p.subsequence,
                },
            );
            self.moved = true;
        }
    }

    /// Kinesis shard `shard` was read to its end, every record handled.
    pub(crate) fn shard_ended(&mut self, shard: &str) {
        if let Some(group) = &self.group {
            if !group.shards.values().any(|s| s.as_ref() == shard) {
                return;
            }
        }
        self.shards.insert(shard.to_string(), ShardResume::Done);
        self.moved = true;
    }

    /// A checkpoint is due when the interval has passed and the source has moved on since
    /// the last one (a source that waits for input keeps its last checkpoint).
    pub(crate) fn due(&self) -> bool {
        self.moved && self.last.elapsed() >= self.interval
    }

    /// Takes a checkpoint now: the step hands over its state with its output made durable,
    /// the dead letters are made durable, then the file is replaced.
    pub(crate) fn take(
        &mut self,
        step: &mut impl RecordStep,
        policy: &mut ErrorPolicy,
        counters: &Counters,
    ) -> Result<()> {
        self.write(step, policy, counters, true)
    }

    /// Whether a run started from this run's last checkpoint reads more: a new stdin, or
    /// what came to the topic since. (Files read to their end have nothing more.)
    fn goes_on(&self) -> bool {
        match &self.inputs {
            CheckpointInputs::Files(_) => self.inputs.reads_stdin(),
            CheckpointInputs::Kafka { .. } | CheckpointInputs::Kinesis { .. } => true,
        }
    }

    /// The checkpoint before a run's last output (the windows that fire at the end, the
    /// held records that go out), for a run that ended with `result`: on a signal, and at
    /// the end of an input that a next run reads more of, it keeps the state, so that the
    /// run started from it cuts that output off and writes it again, having read more.
    pub fn take_before_last_output(
        &mut self,
        step: &mut impl RecordStep,
        policy: &mut ErrorPolicy,
        counters: &Counters,
        result: &Result<()>,
    ) -> Result<()> {
        let stopped = matches!(result, Err(Error::Interrupted)) || self.source_failed;
        // A group member saved its partitions' states through the source as its read ended.
        if self.is_group() {
            return Ok(());
        }
        if stopped || result.is_ok() && self.goes_on() {
            self.write(step, policy, counters, true)?;
        }
        Ok(())
    }

    /// Says the source failed after handing over what was handled so far.
    pub fn source_failed(&mut self) {
        self.source_failed = true;
    }

    /// The checkpoint after the last output of a run that ended with `result`: for a job
    /// over files read to their end, it says the job is done, keeping the positions,
    /// counters and output lengths, and no state.
    pub fn take_after_last_output(
        &mut self,
        step: &mut impl RecordStep,
        policy: &mut ErrorPolicy,
        counters: &Counters,
        result: &Result<()>,
    ) -> Result<()> {
        if result.is_ok() && !self.goes_on() && !self.is_group() {
            self.write(step, policy, counters, false)?;
        }
        Ok(())
    }

    fn write(
        &mut self,
        step: &mut impl RecordStep,
        policy: &mut ErrorPolicy,
        counters: &Counters,
        with_state: bool,
    ) -> Result<()> {
        self.last = Instant::now();
        self.moved = false;
        if self.group.is_some() {
            return self.save_moved(step, policy);
        }
        if self.file.is_none()
            || self.at.is_none() && self.offsets.is_empty() && self.shards.is_empty()
        {
            // Nothing handled yet: nothing to keep.
            return Ok(());
        }
        let StepCheckpoint {
            mut state,
            mut sinks,
        } = step.checkpoint(with_state)?;
        sinks.extend(policy.durable()?);
        let partitions = self.partitions(&mut state);
        // A Kafka or Kinesis source's state is the whole run's, as is a line source's past
        // its last input.
        let shared = Shared {
            counters: serde_json::to_vec(counters).expect("counters serialise"),
            state,
        };
        let checkpoint = Checkpoint {
            weir: env!("CARGO_PKG_VERSION").into(),
            command: self.command.into(),
            job: self.job.clone(),
            args: command_line(),
            taken_at_ms: now_millis(),
            partitions,
            shared: saved::encode(&shared),
            sinks,
        };
        self.file
            .as_mut()
            .expect("checked above")
            .write(&checkpoint)
    }

    /// A group member's save: the output made durable, each partition's state after its
    /// records, for the source to save.
    fn save_moved(&mut self, step: &mut impl RecordStep, policy: &mut ErrorPolicy) -> Result<()> {
        let group = self.group.as_mut().expect("a group member's");
        step.durable()?;
        policy.durable()?;
        for p in std::mem::take(&mut group.moved) {
            if let Some(&next) = self.offsets.get(&p) {
                group.outbox.push(PartitionState {
                    partition: p,
                    next_offset: next,
                    state: states_of(step)?.save(p),
                    ended: group.ended.contains(&p),
                });
            } else if let Some(shard) = group.shards.get(&p) {
                group.shard_outbox.push(ShardState {
                    shard: shard.clone(),
                    resume: self.shards.get(shard.as_ref()).cloned(),
                    state: states_of(step)?.save(p),
                });
            }
        }
        Ok(())
    }

    /// Each input partition's position, for the file; a line source's `state` goes to the
    /// input being read (moved there, not copied).
    fn partitions(&self, state: &mut Vec<u8>) -> Vec<PartitionCheckpoint> {
        match (&self.inputs, self.at) {
            (CheckpointInputs::Files(inputs), Some(at)) => {
                let mut files = file_partitions(inputs, at);
                if let Some(current) = files.get_mut(at.input as usize) {
                    current.state = std::mem::take(state);
                }
                files
            }
            (CheckpointInputs::Files(_), None) => unreachable!("a line source has a position"),
            (CheckpointInputs::Kafka { topic }, _) => (self.offsets.iter())
                .map(|(&partition, &offset)| PartitionCheckpoint {
                    partition: PartitionId::Kafka {
                        topic: topic.clone(),
                        partition,
                    },
                    resume: Resume::Kafka { offset },
                    state: Vec::new(),
                })
                .collect(),
            (CheckpointInputs::Kinesis { stream }, _) => (self.shards.iter())
                .map(|(shard, resume)| PartitionCheckpoint {
                    partition: PartitionId::Kinesis {
                        stream: stream.clone(),
                        shard: shard.clone(),
                    },
                    resume: resume.to_resume(),
                    state: Vec::new(),
                })
                .collect(),
        }
    }
}

/// A line source's inputs as partitions: those before `at` done, the one at `at` resumed
/// there, those after it to start.
fn file_partitions(inputs: &[String], at: LinePosition) -> Vec<PartitionCheckpoint> {
    (inputs.iter().enumerate())
        .map(|(index, name)| {
            let index = index as u32;
            let resume = match index.cmp(&at.input) {
                std::cmp::Ordering::Less => Resume::Done,
                std::cmp::Ordering::Equal => Resume::File {
                    offset: at.offset,
                    line: at.next_line,
                },
                std::cmp::Ordering::Greater => Resume::Start,
            };
            PartitionCheckpoint {
                partition: PartitionId::File {
                    index,
                    path: name.clone(),
                },
                state: Vec::new(),
                resume,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Fault;
    use crate::runtime::chunk::Line;
    use crate::runtime::policy::OnError;
    use crate::runtime::step::Flow;

    /// A step whose state per partition is a number.
    #[derive(Default)]
    struct Numbers {
        states: BTreeMap<i32, Vec<u8>>,
        durable: u32,
    }

    impl RecordStep for Numbers {
        fn record(&mut self, _: &Line<'_>, _: &mut Counters) -> Result<Flow, Fault> {
            Ok(Flow::Continue)
        }
        fn idle(&mut self) -> Result<()> {
            Ok(())
        }
        fn durable(&mut self) -> Result<()> {
            self.durable += 1;
            Ok(())
        }
        fn partition_states(&mut self) -> Option<&mut dyn PartitionStates> {
            Some(&mut self.states)
        }
        fn checkpoint(&mut self, _with_state: bool) -> Result<StepCheckpoint> {
            Ok(StepCheckpoint::default())
        }
    }

    impl PartitionStates for BTreeMap<i32, Vec<u8>> {
        fn save(&self, partition: i32) -> Vec<u8> {
            self.get(&partition).cloned().unwrap_or_default()
        }
        fn restore(&mut self, partition: i32, state: &[u8]) -> std::result::Result<(), String> {
            self.insert(partition, state.to_vec());
            Ok(())
        }
        fn revoke(&mut self, partition: i32) {
            self.remove(&partition);
        }
        fn inherit(
            &mut self,
            partition: i32,
            parents: &[(&[u8], bool)],
            _: &dyn Fn(&str) -> bool,
        ) -> std::result::Result<(), String> {
            let whole = parents
                .iter()
                .filter(|(_, w)| *w)
                .flat_map(|(b, _)| b.iter());
            self.insert(partition, whole.copied().collect());
            Ok(())
        }
    }

    fn group() -> Checkpoints {
        let inputs = CheckpointInputs::Kafka { topic: "t".into() };
        Checkpoints::for_group(Duration::ZERO, "window", inputs)
    }

    /// Where partitions and shards began is kept until a record of theirs is handled, and a
    /// restored run starts them there.
    #[test]
    fn starts_without_a_record_yet_are_kept_and_restored() {
        let dir = tempfile::tempdir().unwrap();
        let plan = CheckpointPlan {
            path: dir.path().join("ckpt"),
            interval: Duration::ZERO,
            reset: false,
        };
        let mut step = Numbers::default();
        let mut policy = ErrorPolicy::new(OnError::Fail, None);
        let counters = Counters::default();
        let kafka = || CheckpointInputs::Kafka { topic: "t".into() };
        let mut c = Checkpoints::open(&plan, "consume", "job".into(), kafka()).unwrap();
        assert!(!c.due());
        c.partitions_start(&[(0, 40), (1, 7)]);
        assert!(c.due(), "starts alone make a checkpoint due");
        c.passed_records(&[(0, 40), (0, 41)]);
        // A second report of a start does not move a partition back.
        c.partitions_start(&[(0, 40)]);
        c.take(&mut step, &mut policy, &counters).unwrap();
        let mut again = Checkpoints::open(&plan, "consume", "job".into(), kafka()).unwrap();
        let restored = again.restore().unwrap().unwrap();
        assert_eq!(restored.offsets, [(0, 42), (1, 7)]);

        let plan = CheckpointPlan {
            path: dir.path().join("kinesis"),
            ..plan
        };
        let kinesis = || CheckpointInputs::Kinesis { stream: "s".into() };
        let mut c = Checkpoints::open(&plan, "consume", "job".into(), kinesis()).unwrap();
        c.shard_starts("shard-0", 1_000);
        c.shard_starts("shard-1", 2_000);
        c.passed_shards(&[ShardPosition {
            shard: "shard-1".into(),
            sequence: "5".into(),
            subsequence: None,
            task: 1,
        }]);
        c.shard_starts("shard-1", 3_000);
        c.take(&mut step, &mut policy, &counters).unwrap();
        let mut again = Checkpoints::open(&plan, "consume", "job".into(), kinesis()).unwrap();
        let restored = again.restore().unwrap().unwrap();
        assert_eq!(
            restored.shards.into_iter().collect::<Vec<_>>(),
            [
                ("shard-0".into(), ShardResume::From { arrival: 1_000 }),
                (
                    "shard-1".into(),
                    ShardResume::After {
                        sequence: "5".into(),
                        subsequence: None
                    }
                ),
            ]
        );
    }

    #[test]
    fn a_group_member_skips_what_it_does_not_own_and_what_its_state_covers() {
        let mut c = group();
        let mut step = Numbers::default();
        let restored = PartitionState {
            partition: 1,
            next_offset: 10,
            state: vec![7],
            ended: false,
        };
        c.own(&[0, 1], &[restored], &mut step).unwrap();
        assert_eq!(step.states.get(&1), Some(&vec![7]));
        // Partition 2 is not ours; partition 1's records before 10 are in its state.
        assert_eq!(c.skipped(&[(0, 3), (1, 10), (1, 11)]), None);
        assert_eq!(
            c.skipped(&[(0, 3), (1, 9), (2, 0), (1, 10)]),
            Some(vec![false, true, true, false])
        );
        c.passed_records(&[(0, 3), (1, 9), (2, 0), (1, 10)]);
        assert_eq!(c.offsets.get(&2), None, "an unowned partition was passed");
        assert_eq!(c.offsets.get(&1), Some(&11));
        assert_eq!(c.offsets.get(&0), Some(&4));
    }

    #[test]
    fn a_group_member_skips_a_record_its_state_has_handled_already() {
        let mut c = group();
        let mut step = Numbers::default();
        c.own(&[0, 1], &[], &mut step).unwrap();
        c.passed_records(&[(0, 4), (0, 5), (1, 7)]);
        // Delivered again (the client went back in partition 0), and twice within a chunk.
        assert_eq!(
            c.skipped(&[(0, 5), (1, 8), (0, 6), (0, 6), (1, 8), (0, 7)]),
            Some(vec![true, false, false, true, true, false])
        );
        assert_eq!(c.skipped(&[(0, 6), (1, 8)]), None, "nothing handled since");
        // A partition with no record handled yet, restored or not, skips none of its own.
        c.own(&[0, 1, 2], &[], &mut step).unwrap();
        assert_eq!(c.skipped(&[(2, 0), (2, 1)]), None);
    }

    #[test]
    fn a_due_save_hands_over_the_partitions_that_moved_and_a_revoke_the_revoked() {
        let mut c = group();
        let mut step = Numbers::default();
        let mut policy = ErrorPolicy::new(OnError::Fail, None);
        let counters = Counters::default();
        c.own(&[0, 1], &[], &mut step).unwrap();
        step.states.insert(0, vec![1]);
        step.states.insert(1, vec![2]);
        c.passed_records(&[(0, 5)]);
        c.take(&mut step, &mut policy, &counters).unwrap();
        let saved = c.take_saved();
        assert_eq!(
            saved,
            vec![PartitionState {
                partition: 0,
                next_offset: 6,
                state: vec![1],
                ended: false,
            }],
            "only partition 0 moved"
        );
        assert_eq!(step.durable, 1, "the output is durable before a save");
        // Its end handled, the next save says so (and only the partition's own).
        c.partition_ended(0);
        c.partition_ended(2);
        c.take(&mut step, &mut policy, &counters).unwrap();
        let saved = c.take_saved();
        assert_eq!(saved.len(), 1, "{saved:?}");
        assert!(saved[0].ended && saved[0].partition == 0, "{saved:?}");
        c.passed_records(&[(1, 8)]);
        let revoked = (c.revoke(&[1, 3], Giving::Save, &mut step, &mut policy)).unwrap();
        assert_eq!(
            revoked,
            vec![PartitionState {
                partition: 1,
                next_offset: 9,
                state: vec![2],
                ended: false,
            }]
        );
        assert!(
            !step.states.contains_key(&1),
            "a revoked partition's state stays"
        );
        assert_eq!(c.skipped(&[(1, 9)]), Some(vec![true]));
        // Lost (not revoked): dropped without a save.
        let lost = c.own(&[1], &[], &mut step).unwrap();
        assert_eq!(lost, vec![0]);
        assert!(!step.states.contains_key(&0));
    }
}
