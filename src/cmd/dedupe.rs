//! `weir dedupe`: records pass through unchanged unless their id repeats within the horizon.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::cli::{DedupeArgs, HorizonBy, Keep};
use crate::core::dedupe::{hash_id, DedupeCounts, Deduper, DeduperState, IdHash, IdKey, Verdict};
use crate::core::partitioned::{PartitionTask, PerPartition};
use crate::core::record::{time_of, Extractor, FieldPath, RecordError};
use crate::core::saved;
use crate::core::time::{Millis, TimeFormat};
use crate::core::watermark::{PartitionIds, Watermarks, MAX_PARTITIONS};
use crate::core::window::KEY_SEPARATOR;
use crate::error::{Error, Fault, Result};
use crate::io::kafka::Render;
use crate::io::sink::{LineSink, RecordFields, Sink, SinkPlan};
use crate::io::spec::SinkSpec;
use crate::runtime::summary::finish;
use crate::runtime::{
    read_records_with, CheckpointPlan, Checkpoints, Counters, ErrorPolicy, Flow, Line, Prepare,
    RecordStep, Run, Stats, StepCheckpoint,
};

use super::InputPlan;

pub fn run(args: DedupeArgs, stop: &AtomicBool) -> Result<()> {
    let mut stats = Stats::new("dedupe");
    let report = super::report_plan(&args.report);
    let result = Plan::new(&args).and_then(|plan| {
        super::check_files_written_at_end(&report, None)?;
        dedupe(plan, &args, &mut stats, stop)
    });
    finish(&stats, &report, result)
}

/// A dedupe run, checked.
struct Plan {
    input: InputPlan,
    sink: SinkPlan,
    /// The id fields, then the time and partition fields an event-time horizon reads.
    paths: Vec<FieldPath>,
    time_at: Option<usize>,
    partition_at: Option<usize>,
    /// The partitions are the source's own (Kafka partitions, Kinesis shards), which it
    /// reports as it reads them.
    by_source_partition: bool,
    checkpoint: Option<CheckpointPlan>,
    /// A consumer-group member keeps state per partition, saved this often.
    per_partition: Option<Duration>,
    /// What makes a checkpoint this job's: the inputs and every flag that decides the output.
    job: String,
}

impl Plan {
    fn new(args: &DedupeArgs) -> Result<Plan> {
        let mut input = InputPlan::new(&args.input, false)?;
        // A group member's partitions are tasks of their own, each with its own watermark.
        let per_partition = super::group_of(&input).is_some();
        if per_partition && args.partition_by.is_some() {
            return Err(Error::Usage(
                "with -G each partition has its own ids and watermark; --partition-by does not apply".into(),
            ));
        }
        let partition_by = match per_partition {
            true => None,
            false => input.partition_field(args.partition_by.as_ref()),
        };
        let event_time = args.horizon.is_some() && args.horizon_by == HorizonBy::Event;
        if event_time && args.time.time.is_none() {
            return Err(Error::Usage(
                "an event-time --horizon needs --time FIELD (or use --horizon-by arrival)".into(),
            ));
        }
        // The watermark's flags do nothing without an event-time horizon: say so rather than
        // let a user believe they took effect.
        let watermark_flag = if args.idle_timeout.is_some() {
            Some("--idle-timeout lets a silent partition stop holding the watermark back")
        } else if args.delay != 0 {
            Some("--delay holds the watermark back")
        } else if args.partition_by.is_some() {
            Some("--partition-by tracks a watermark per partition")
        } else if args.time.time.is_some() {
            Some("--time is read for the watermark")
        } else {
            None
        };
        if let (Some(flag), false) = (watermark_flag, event_time) {
            let instead = match args.horizon {
                Some(_) => "; --horizon-by arrival uses none",
                None => "; without --horizon, ids are kept until --max-keys evicts them",
            };
            return Err(Error::Usage(format!(
                "{flag}: it needs an event-time --horizon D{instead}"
            )));
        }
        let by_source_partition = input.is_source_partition(partition_by.as_ref());
        let mut paths = args.ids.clone();
        let time_at = args.time.time.clone().filter(|_| event_time).map(|t| {
            paths.push(t);
            paths.len() - 1
        });
        let partition_at = partition_by.filter(|_| event_time).map(|p| {
            paths.push(p);
            paths.len() - 1
        });
        let sink = SinkPlan::new(
            SinkSpec::parse(&args.sink.output).map_err(Error::Usage)?,
            RecordFields::parse(args.sink.key.as_ref(), &args.sink.headers)?,
            super::client_options(&args.input.broker.client)?,
            super::aws_options(&args.input.broker.client),
        )?;
        let checkpoint = super::checkpoint_plan(&args.checkpoint, &sink.spec, false)?;
        let mut job = format!(
            "inputs {:?}, fields {:?}, {:?}, time at {time_at:?}, partition at {partition_at:?}, --horizon {:?} by {:?}, --delay {}, --max-keys {}, --keep {:?}, --exact-ids {}, --duplicates {:?}",
            input.job_source(),
            paths.iter().map(|p| p.as_str()).collect::<Vec<_>>(),
            args.time.time_format,
            args.horizon,
            args.horizon_by,
            args.delay,
            args.max_keys,
            args.keep,
            args.exact_ids,
            args.duplicates,
        );
        // Named only when given, so that checkpoints taken before the flag existed still fit.
        if let Some(idle) = args.idle_timeout {
            job.push_str(&format!(", --idle-timeout {idle}"));
        }
        let per_partition = super::changelog_plan(
            &mut input,
            "dedupe",
            &args.changelog,
            &args.checkpoint,
            &job,
        )?;
        Ok(Plan {
            input,
            sink,
            paths,
            time_at,
            partition_at,
            by_source_partition: by_source_partition && event_time,
            checkpoint,
            per_partition,
            job,
        })
    }
}

fn dedupe(plan: Plan, args: &DedupeArgs, stats: &mut Stats, stop: &AtomicBool) -> Result<()> {
    let (mut checkpoints, restored) =
        super::open_checkpoints(plan.checkpoint.as_ref(), "dedupe", &plan.job, &plan.input)?;
    if let Some(interval) = plan.per_partition {
        let inputs = plan.input.checkpoint_inputs();
        checkpoints = Some(Checkpoints::for_group(interval, "dedupe", inputs));
    }
    let restored = restored.as_ref();
    let source = plan.input.open_source_at(Render::Envelope, restored)?;
    let mut policy = ErrorPolicy::open_resumed(&plan.input.policy, restored)?;
    let sink = LineSink::open_resumed(&plan.sink, restored)?;
    let duplicates = match &args.duplicates {
        Some(path) => Some(LineSink::open_file(path, "output file", restored)?),
        None => None,
    };
    let spec = TaskSpec {
        keep: args.keep,
        exact_ids: args.exact_ids,
        horizon: args.horizon,
        max_keys: args.max_keys,
        delay: args.delay,
        idle_timeout: args.idle_timeout,
    };
    let extractor = Arc::new(Extractor::new(plan.paths));
    let mut step = DedupeStep {
        task: spec.fresh(),
        tasks: plan
            .per_partition
            .map(|_| PerPartition::new(move || spec.fresh())),
        extractor: extractor.clone(),
        id_fields: args.ids.len(),
        time_at: plan.time_at,
        time_format: args.time.time_format.clone(),
        partition_at: plan.partition_at,
        by_source_partition: plan.by_source_partition,
        horizon_by: args.horizon_by,
        sink,
        duplicates,
        id: String::new(),
        started: Instant::now(),
        now: 0,
        released: Vec::new(),
    };
    if let Some(r) = restored {
        stats.counters = r.counters.clone();
        // A finished job's last checkpoint keeps no state.
        if !r.state.is_empty() {
            step.restore(saved::decode(&r.state).map_err(Error::Usage)?, spec)?;
        }
    }
    let run = Run {
        source,
        prepare: Prepare::Extract(extractor),
        max_line_bytes: plan.input.max_line_bytes,
        counters: &mut stats.counters,
        policy: &mut policy,
        stop,
    };
    let result = read_records_with(run, &mut step, checkpoints.as_mut());
    // Taken before the held records go out: a run started from it (a new stdin, more of the
    // topic) cuts them off and writes them when their groups end.
    if let Some(c) = &mut checkpoints {
        c.take_before_last_output(&mut step, &mut policy, &stats.counters, &result)?;
    }
    // The end of the input, or a clean stop: every held record goes out (but a group
    // member's, whose held records go with their partitions' states to their next owners).
    let stopped = matches!(result, Err(Error::Interrupted));
    let result = match result {
        Ok(()) | Err(Error::Interrupted) if !(stopped && plan.per_partition.is_some()) => {
            let mut released = std::mem::take(&mut step.released);
            step.each_task(|task| task.ids.finish(&mut released));
            step.released = released;
            step.write_released(&mut stats.counters).and(result)
        }
        failed => failed,
    };
    if let Some(c) = &mut checkpoints {
        c.take_after_last_output(&mut step, &mut policy, &stats.counters, &result)?;
    }
    let counters = &mut stats.counters;
    step.each_task(|task| {
        let counts = task.ids.counts();
        counters.evicted += counts.evicted;
        counters.expired += counts.expired;
        counters.possibly_duplicates += counts.possibly_duplicate;
        counters.peak_keys = counters.peak_keys.max(counts.peak_keys);
    });
    let flushed = step.close().and(policy.close());
    result.and(flushed)
}

/// What a checkpoint keeps of a dedupe run.
#[derive(Serialize, Deserialize)]
struct StepState {
    task: TaskState,
    /// The arrival clock.
    now: Millis,
}

/// What a checkpoint keeps of a task: a run's ids and watermarks, or one partition's.
#[derive(Serialize, Deserialize)]
struct TaskState {
    ids: IdsState,
    partitions: Vec<String>,
    watermarks: Watermarks,
    seq: Millis,
}

/// The flags a new task is made with.
#[derive(Clone, Copy)]
struct TaskSpec {
    keep: Keep,
    exact_ids: bool,
    horizon: Option<Millis>,
    max_keys: usize,
    delay: Millis,
    idle_timeout: Option<Millis>,
}

impl TaskSpec {
    fn fresh(&self) -> Task {
        let (horizon, max) = (self.horizon, self.max_keys);
        let ids = match (self.keep, self.exact_ids) {
            (Keep::First, true) => Ids::Exact(Deduper::new(horizon, max)),
            (Keep::First, false) => Ids::Hashed(Deduper::new(horizon, max)),
            (Keep::Last, true) => Ids::ExactLast(Deduper::keeping_last(horizon, max)),
            (Keep::Last, false) => Ids::HashedLast(Deduper::keeping_last(horizon, max)),
        };
        Task {
            ids,
            partitions: PartitionIds::default(),
            watermarks: Watermarks::new(self.delay, self.idle_timeout),
            seq: 0,
        }
    }
}

/// The ids remembered and the watermarks: of the whole run, or, for a consumer-group
/// member, of one partition.
struct Task {
    ids: Ids,
    partitions: PartitionIds,
    watermarks: Watermarks,
    /// Records seen, the stand-in for time without --time.
    seq: Millis,
}

impl PartitionTask for Task {
    type Saved = TaskState;

    fn saved(&self) -> TaskState {
        TaskState {
            ids: self.ids.state(),
            partitions: self.partitions.values(),
            watermarks: self.watermarks.clone(),
            seq: self.seq,
        }
    }

    fn restored(mut fresh: Task, state: TaskState) -> std::result::Result<Task, String> {
        fresh.ids.restore(state.ids)?;
        fresh.partitions = PartitionIds::from_values(state.partitions);
        fresh.watermarks = state.watermarks;
        fresh.seq = state.seq;
        Ok(fresh)
    }
}

#[derive(Serialize, Deserialize)]
enum IdsState {
    Hashed(DeduperState<[u8; 16], ()>),
    Exact(DeduperState<Box<str>, ()>),
    HashedLast(DeduperState<[u8; 16], Held>),
    ExactLast(DeduperState<Box<str>, Held>),
}

/// Remembered ids: hashed (the default) or as text (`--exact-ids`); with `--keep last`,
/// each with its latest record.
enum Ids {
    Hashed(Deduper<IdHash>),
    Exact(Deduper<Box<str>>),
    HashedLast(Deduper<IdHash, Held>),
    ExactLast(Deduper<Box<str>, Held>),
}

/// A record held for `--keep last`: its place in the input (to order what is released
/// together, and to name it in errors) and its bytes.
#[derive(Clone, Default, Serialize, Deserialize)]
struct Held {
    seq: u64,
    bytes: Box<[u8]>,
}

impl Ids {
    /// Judges a record (keep-first). Only a verdict comes back: the hot path keeps it in a
    /// register, where a wider result would be stored and reloaded across the watermark call,
    /// and that reload waits behind the table's cache-missing stores.
    fn check(&mut self, id: &str, t: Millis, clock: Millis) -> Verdict {
        match self {
            Ids::Hashed(d) => d.check(&hash_id(id.as_bytes()), t, clock),
            Ids::Exact(d) => d.check(&id.into(), t, clock),
            Ids::HashedLast(_) | Ids::ExactLast(_) => unreachable!("keep-last uses check_held"),
        }
    }

    /// Brings the place of `id` in the map into cache, for a check soon after.
    fn prefetch(&self, id: &str) {
        // Hashed and exact ids are both placed by the hash of their text.
        let hash = hash_id(id.as_bytes()).hash128();
        match self {
            Ids::Hashed(d) => d.prefetch(hash),
            Ids::Exact(d) => d.prefetch(hash),
            Ids::HashedLast(d) => d.prefetch(hash),
            Ids::ExactLast(d) => d.prefetch(hash),
        }
    }

    /// Judges a record for `--keep last`: holds it, and returns the record it replaces.
    fn check_held(&mut self, id: &str, t: Millis, clock: Millis, record: Held) -> Option<Held> {
        match self {
            Ids::HashedLast(d) => d.check_held(&hash_id(id.as_bytes()), t, clock, record).1,
            Ids::ExactLast(d) => d.check_held(&id.into(), t, clock, record).1,
            Ids::Hashed(_) | Ids::Exact(_) => unreachable!("keep-first uses check"),
        }
    }

    fn advance(&mut self, clock: Millis) {
        match self {
            Ids::Hashed(d) => d.advance(clock),
            Ids::Exact(d) => d.advance(clock),
            Ids::HashedLast(d) => d.advance(clock),
            Ids::ExactLast(d) => d.advance(clock),
        }
    }

    fn take_released(&mut self, out: &mut Vec<(Millis, Held)>) {
        match self {
            Ids::HashedLast(d) => d.take_released(out),
            Ids::ExactLast(d) => d.take_released(out),
            _ => {}
        }
    }

    fn finish(&mut self, out: &mut Vec<(Millis, Held)>) {
        match self {
            Ids::HashedLast(d) => d.finish(out),
            Ids::ExactLast(d) => d.finish(out),
            _ => {}
        }
    }

    fn state(&self) -> IdsState {
        match self {
            Ids::Hashed(d) => IdsState::Hashed(d.state()),
            Ids::Exact(d) => IdsState::Exact(d.state()),
            Ids::HashedLast(d) => IdsState::HashedLast(d.state()),
            Ids::ExactLast(d) => IdsState::ExactLast(d.state()),
        }
    }

    fn restore(&mut self, state: IdsState) -> std::result::Result<(), String> {
        match (self, state) {
            (Ids::Hashed(d), IdsState::Hashed(s)) => d.restore(s),
            (Ids::Exact(d), IdsState::Exact(s)) => d.restore(s),
            (Ids::HashedLast(d), IdsState::HashedLast(s)) => d.restore(s),
            (Ids::ExactLast(d), IdsState::ExactLast(s)) => d.restore(s),
            _ => Err("the checkpoint keeps ids of another --keep or --exact-ids".into()),
        }
    }

    fn holding(&self) -> bool {
        matches!(self, Ids::HashedLast(_) | Ids::ExactLast(_))
    }

    fn counts(&self) -> DedupeCounts {
        match self {
            Ids::Hashed(d) => d.counts(),
            Ids::Exact(d) => d.counts(),
            Ids::HashedLast(d) => d.counts(),
            Ids::ExactLast(d) => d.counts(),
        }
    }
}

struct DedupeStep {
    /// The task of the run (of the partition being read, for a group member).
    task: Task,
    /// A group member's tasks of the partitions not being read.
    tasks: Option<PerPartition<Task>>,
    extractor: Arc<Extractor>,
    id_fields: usize,
    time_at: Option<usize>,
    time_format: TimeFormat,
    partition_at: Option<usize>,
    by_source_partition: bool,
    horizon_by: HorizonBy,
    sink: LineSink,
    duplicates: Option<LineSink>,
    id: String,
    started: Instant,
    /// Arrival time, read once per batch of records.
    now: Millis,
    /// Held records released by the last check (`--keep last`).
    released: Vec<(Millis, Held)>,
}

impl DedupeStep {
    fn restore(&mut self, state: StepState, spec: TaskSpec) -> Result<()> {
        self.task = Task::restored(spec.fresh(), state.task).map_err(Error::Usage)?;
        self.started = super::clock_from(state.now);
        Ok(())
    }

    /// Processing time since the run started (or, resumed, since its checkpoint's start).
    fn clock(&self) -> Millis {
        self.started.elapsed().as_millis() as Millis
    }

    /// Runs `f` on every task (one per partition for a group member).
    fn each_task(&mut self, f: impl FnMut(&mut Task)) {
        let mut f = f;
        match &mut self.tasks {
            Some(tasks) => tasks.for_each(&mut self.task, |_, t| f(t)),
            None => f(&mut self.task),
        }
    }

    /// Flushes, and makes compressed files whole: at the end of the run.
    fn close(&mut self) -> Result<()> {
        self.sink.close()?;
        if let Some(d) = &mut self.duplicates {
            d.close()?;
        }
        Ok(())
    }

    /// Counts a dropped repeat and writes it to --duplicates.
    fn drop_duplicate(&mut self, bytes: &[u8], counters: &mut Counters) -> Result<()> {
        counters.duplicates += 1;
        match &mut self.duplicates {
            Some(d) => d.write_line(bytes),
            None => Ok(()),
        }
    }

    /// Writes the held records whose groups ended, in the order their groups opened (then
    /// input order).
    fn write_released(&mut self, counters: &mut Counters) -> Result<()> {
        if self.released.is_empty() {
            return Ok(());
        }
        self.released
            .sort_unstable_by_key(|(opened, held)| (*opened, held.seq));
        for (_, held) in self.released.drain(..) {
            match self.sink.write_record(&held.bytes) {
                Ok(()) => counters.written += 1,
                // The record is not the one being read: name it by its place in the input.
                Err(Fault::Record(e)) => {
                    return Err(Error::BadInput {
                        position: format!("record {} (held for --keep last)", held.seq),
                        reason: e.to_string(),
                    })
                }
                Err(Fault::Fatal(e)) => return Err(e),
            }
        }
        Ok(())
    }

    /// Checks the record's id fields (a composite id is joined in `self.id`), and reads its
    /// time and partition.
    fn parse(&mut self, line: &Line<'_>) -> Result<(Millis, usize), RecordError> {
        let x = &self.extractor;
        let field = |i: usize| line.field(i).ok_or_else(|| x.missing(i, line.text()));
        self.id.clear();
        for i in 0..self.id_fields {
            let text = field(i)?;
            if text == "null" {
                return Err(RecordError::BadValue {
                    path: x.paths()[i].to_string(),
                    reason: "the id is null".into(),
                });
            }
            if self.id_fields > 1 {
                if i > 0 {
                    self.id.push(KEY_SEPARATOR);
                }
                self.id.push_str(text);
            }
        }
        // Without a time field, arrival order stands in for time, so that --max-keys
        // evicts the ids seen longest ago.
        self.task.seq += 1;
        let t = match self.time_at {
            Some(i) => time_of(field(i)?, &x.paths()[i], &self.time_format)?,
            None => self.task.seq,
        };
        let partition = match self.partition_at {
            None => 0,
            Some(i) => self
                .task
                .partitions
                .id(field(i)?)
                .ok_or_else(|| RecordError::BadValue {
                    path: x.paths()[i].to_string(),
                    reason: format!("more than {MAX_PARTITIONS} distinct partition values"),
                })?,
        };
        Ok((t, partition))
    }
}

impl RecordStep for DedupeStep {
    fn record(&mut self, line: &Line<'_>, counters: &mut Counters) -> Result<Flow, Fault> {
        if let (Some(tasks), Some((partition, _))) = (&mut self.tasks, line.offset) {
            tasks.activate(&mut self.task, partition);
        }
        let (t, partition) = self.parse(line)?;
        // One id field is read in place; several are joined in `self.id`.
        let id = match self.id_fields {
            1 => line.field(0).expect("parse found it"),
            _ => self.id.as_str(),
        };
        // The clock is the watermark on arrival (event-time horizon) or the read time.
        let (t, clock) = match self.horizon_by {
            HorizonBy::Event => (t, self.task.watermarks.current()),
            HorizonBy::Arrival => (self.now, self.now),
        };
        // `time_at` is set only for an event-time horizon.
        let observe = self.time_at.is_some();
        let task = &mut self.task;
        if !task.ids.holding() {
            let verdict = task.ids.check(id, t, clock);
            if observe {
                task.watermarks.observe(partition, t, self.now);
            }
            if verdict == Verdict::Duplicate {
                self.drop_duplicate(line.bytes, counters)?;
            } else {
                self.sink.write_record(line.bytes)?;
                counters.written += 1;
            }
            return Ok(Flow::Continue);
        }
        // --keep last: a repeat takes the place of the record held so far, which is dropped.
        let held = Held {
            seq: task.seq as u64,
            bytes: line.bytes.into(),
        };
        let replaced = task.ids.check_held(id, t, clock, held);
        if observe {
            task.watermarks.observe(partition, t, self.now);
        }
        if let Some(earlier) = replaced {
            self.drop_duplicate(&earlier.bytes, counters)?;
        }
        self.task.ids.take_released(&mut self.released);
        self.write_released(counters)?;
        Ok(Flow::Continue)
    }

    fn batch(&mut self) {
        self.now = self.clock();
    }

    fn ahead<'l>(&mut self, next: impl FnOnce() -> Option<Line<'l>>) {
        // The id map is far larger than the cache: each record's lookup would otherwise wait
        // for memory on its own.
        if self.id_fields != 1 {
            return;
        }
        if let Some(id) = next().and_then(|line| line.field(0)) {
            self.task.ids.prefetch(id);
        }
    }

    fn durable(&mut self) -> Result<()> {
        self.sink.flush()?;
        if let Some(d) = &mut self.duplicates {
            d.flush()?;
        }
        Ok(())
    }

    fn checkpoint(&mut self, with_state: bool) -> Result<StepCheckpoint> {
        let state = with_state.then(|| StepState {
            task: self.task.saved(),
            now: self.clock(),
        });
        let mut sinks: Vec<_> = self.sink.durable()?.into_iter().collect();
        if let Some(d) = &mut self.duplicates {
            sinks.extend(d.durable()?);
        }
        Ok(StepCheckpoint {
            state: state.map(|s| saved::encode(&s)).unwrap_or_default(),
            sinks,
        })
    }

    fn save_partition(&mut self, partition: i32) -> Result<Vec<u8>> {
        let tasks = self.tasks.as_ref().expect("a group member's");
        Ok(tasks.save(&self.task, partition))
    }

    fn restore_partition(&mut self, partition: i32, state: &[u8]) -> Result<()> {
        let tasks = self.tasks.as_mut().expect("a group member's");
        tasks
            .restore(&mut self.task, partition, state)
            .map_err(Error::Usage)
    }

    fn revoke_partition(&mut self, partition: i32) {
        if let Some(tasks) = &mut self.tasks {
            // Records held for --keep last went with the partition's saved state.
            tasks.take(&mut self.task, partition);
        }
    }

    fn assigned(&mut self, partitions: &[String]) {
        if !self.by_source_partition {
            return;
        }
        // Named by their envelope field's JSON text, which is what ids are keyed by. A
        // partition read to its end (a Kinesis parent) stops holding the watermark back; one
        // newly read holds it until it speaks or goes idle.
        let ids = self.task.partitions.ids_of(partitions);
        self.now = self.clock();
        self.task.watermarks.assign(&ids, self.now);
    }

    fn tick(&mut self, counters: &mut Counters) -> Result<()> {
        // Time moves without records: processing time for an arrival horizon, the watermark
        // when a silent partition goes idle. What expired is forgotten, and held records
        // (--keep last) whose groups ended go out now rather than with the next record.
        self.now = self.clock();
        let (now, event_time) = (self.now, self.time_at.is_some());
        if self.horizon_by == HorizonBy::Event && !event_time {
            // No horizon: nothing expires.
            return Ok(());
        }
        let mut released = std::mem::take(&mut self.released);
        self.each_task(|task| {
            let clock = match event_time {
                true => {
                    task.watermarks.tick(now);
                    task.watermarks.current()
                }
                false => now,
            };
            task.ids.advance(clock);
            task.ids.take_released(&mut released);
        });
        self.released = released;
        if self.released.is_empty() {
            return Ok(());
        }
        self.write_released(counters)?;
        self.idle()
    }

    fn idle(&mut self) -> Result<()> {
        // A Kafka sink is only polled here; waiting for its deliveries is for durable().
        self.sink.idle()?;
        if let Some(d) = &mut self.duplicates {
            d.flush()?;
        }
        Ok(())
    }
}
