//! `weir dedupe`: records pass through unchanged unless their id repeats within the horizon.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use super::plan::{self, KeepingArgs};
use crate::cli::{DedupeArgs, HorizonBy};
use crate::core::dedupe::Verdict;
use crate::core::dedupe_task::{AheadHashes, Held, Task, TaskSpec, TaskState};
use crate::core::partitioned::{PartitionStates, PartitionTask, Tasks};
use crate::core::record::{Extractor, FieldList, RecordError};
use crate::core::saved;
use crate::core::shuffle::Marker;
use crate::core::time::{Millis, TimeFormat};
use crate::core::window::KEY_SEPARATOR;
use crate::error::{Error, Fault, Result};
use crate::io::input::InputPlan;
use crate::io::sink::{LineSink, RecordFields, SinkPlan};
use crate::runtime::metrics::StepGauges;
use crate::runtime::{
    clock_from, run_command, saved_state, time_read_ahead, Command, Counters, Flow, Line,
    PartitionFields, Prepare, RecordStep, Restored, RunPlan, Sink, Stats, StepCheckpoint,
};

pub fn run(args: DedupeArgs, stop: &AtomicBool) -> Result<()> {
    let report = plan::report_plan(&args.report);
    run_command(Stats::new("dedupe"), &report, || Dedupe::plan(&args), stop)
}

/// A dedupe run's own part, checked.
struct Dedupe {
    sink: SinkPlan,
    duplicates: Option<std::path::PathBuf>,
    spec: TaskSpec,
    per_partition: bool,
    reading: Reading,
}

/// Where a record's fields are and how the rules read them: the plan's, the step's.
struct Reading {
    extractor: Arc<Extractor>,
    id_fields: usize,
    time_at: Option<usize>,
    time_format: TimeFormat,
    parts: PartitionFields,
    /// With -G: the envelope's key, which must spell the record's id.
    message_key_at: Option<usize>,
    horizon_by: HorizonBy,
}

impl Dedupe {
    fn plan(args: &DedupeArgs) -> Result<RunPlan<Dedupe>> {
        let mut input = plan::input_plan(&args.input, false)?;
        let event_time = args.horizon.is_some() && args.horizon_by == HorizonBy::Event;
        check_watermark_flags(args, event_time)?;
        if args.shuffle.repartition {
            let time = args.time.time.clone().filter(|_| event_time);
            let at = time.map(|t| (t, args.time.time_format.clone()));
            let partitions = args.shuffle.repartition_partitions;
            input.repartition("dedupe", partitions, &args.ids, at)?;
        }
        // A group member's partitions are tasks of their own, each with its own watermark.
        let parts =
            input.partitioning(args.partition_by.as_ref(), "has its own ids and watermark")?;
        plan::check_idle_timeout(args.idle_timeout, &parts)?;
        // The id fields, then the time and partition an event-time horizon reads.
        let mut fields = FieldList::default();
        fields.add_all(args.ids.iter().cloned());
        let time_at = fields.add_some(args.time.time.clone().filter(|_| event_time));
        // Behind a shuffle, where each record stood in the input too (repeats are dropped).
        let partition_fields = plan::partition_fields(&parts, &mut fields, event_time);
        let select = plan::selection(&args.input.conditions, &args.time.time_format, &mut fields)?;
        let s = &args.sink;
        let record_fields = RecordFields::parse(s.key.as_ref(), &s.headers)?;
        let sink = plan::sink_plan(&s.output, record_fields, &args.input)?;
        let job = job(args, &input, &fields, time_at, partition_fields.at);
        let job = format!("{job}, --where {:?}", args.input.conditions);
        // With -G, each record must be keyed by its id: its envelope's key is read too.
        let message_key_at =
            (parts.per_partition && !parts.shuffled).then(|| fields.add_message_key());
        let keeping = KeepingArgs::partitioned("dedupe", &args.checkpoint, &args.changelog)
            .plan(&mut input, &sink.spec, &job)?;
        let extractor = time_read_ahead(fields.extractor(), time_at, &args.time.time_format);
        let extractor = Arc::new(extractor);
        let dedupe = Dedupe {
            sink,
            duplicates: args.duplicates.clone(),
            spec: task_spec(args),
            per_partition: parts.per_partition,
            reading: Reading {
                extractor: extractor.clone(),
                id_fields: args.ids.len(),
                time_at,
                time_format: args.time.time_format.clone(),
                parts: partition_fields,
                message_key_at,
                horizon_by: args.horizon_by,
            },
        };
        plan::prepare_reports(&args.report, "dedupe", &args.input, None)?;
        Ok(RunPlan {
            command: dedupe,
            input: Box::new(input),
            prepare: Prepare::Extract(extractor),
            keeping,
            // Where side records go is no part of a group's job (each member writes its own
            // file), but a checkpoint file holds that file's committed length.
            job: format!("{job}, --duplicates {:?}", args.duplicates),
            limit: None,
            select,
        })
    }
}

/// An event-time horizon needs `--time`; the watermark's flags need an event-time horizon:
/// say so rather than let a user believe they took effect.
fn check_watermark_flags(args: &DedupeArgs, event_time: bool) -> Result<()> {
    if event_time && args.time.time.is_none() {
        return Err(Error::Usage(
            "an event-time --horizon needs --time FIELD (or use --horizon-by arrival)".into(),
        ));
    }
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
    let (Some(flag), false) = (watermark_flag, event_time) else {
        return Ok(());
    };
    let instead = match args.horizon {
        Some(_) => "; --horizon-by arrival uses none",
        None => "; without --horizon, ids are kept until --max-keys evicts them",
    };
    Err(Error::Usage(format!(
        "{flag}: it needs an event-time --horizon D{instead}"
    )))
}

/// What makes a checkpoint this job's: the inputs and every flag that decides the output.
fn job(
    args: &DedupeArgs,
    input: &InputPlan,
    fields: &FieldList,
    time_at: Option<usize>,
    partition_at: Option<usize>,
) -> String {
    let mut job = format!(
        "inputs {:?}, fields {:?}, {:?}, time at {time_at:?}, partition at {partition_at:?}, --horizon {:?} by {:?}, --delay {}, --max-keys {}, --keep {:?}, --exact-ids {}, --duplicates kept {}",
        input.job_source(),
        fields.names(),
        args.time.time_format,
        args.horizon,
        args.horizon_by,
        args.delay,
        args.max_keys,
        args.keep,
        args.exact_ids,
        args.duplicates.is_some(),
    );
    // Named only when given, so that checkpoints taken before the flag existed still fit.
    if let Some(idle) = args.idle_timeout {
        job.push_str(&format!(", --idle-timeout {idle}"));
    }
    job
}

fn task_spec(args: &DedupeArgs) -> TaskSpec {
    TaskSpec {
        keep: args.keep,
        exact_ids: args.exact_ids,
        horizon: args.horizon,
        max_keys: args.max_keys,
        delay: args.delay,
        idle_timeout: args.idle_timeout,
    }
}

impl Command for Dedupe {
    type Step = DedupeStep;

    fn open(self, restored: Option<&Restored>) -> Result<DedupeStep> {
        // A finished job's last checkpoint keeps no state.
        let saved: Option<StepState> = saved_state(restored)?;
        let spec = self.spec;
        let (task, now) = saved.map(|state| (state.task, state.now)).unzip();
        let tasks = Tasks::resumed(self.per_partition, move || spec.fresh(), task);
        let tasks = tasks.map_err(Error::Usage)?;
        // The arrival clock goes on from the checkpoint's.
        let started = now.map_or_else(Instant::now, clock_from);
        let sink = LineSink::open_resumed(&self.sink, restored)?;
        let duplicates = LineSink::open_side(self.duplicates.as_deref(), restored)?;
        Ok(DedupeStep {
            sink,
            duplicates,
            tasks,
            reading: self.reading,
            id: String::new(),
            started,
            now: 0,
            released: Vec::new(),
            hashes: AheadHashes::default(),
        })
    }
}

/// What a checkpoint keeps of a dedupe run.
#[derive(Serialize, Deserialize)]
struct StepState {
    task: TaskState,
    /// The arrival clock.
    now: Millis,
}

struct DedupeStep {
    /// The run's task, or a group member's per partition, the one being read active.
    tasks: Tasks<Task>,
    reading: Reading,
    sink: LineSink,
    duplicates: Option<LineSink>,
    id: String,
    started: Instant,
    /// Arrival time, read once per batch of records.
    now: Millis,
    /// Held records released by the last check (`--keep last`).
    released: Vec<(Millis, Held)>,
    /// The ids' hashes from their prefetch, for their check.
    hashes: AheadHashes,
}

impl DedupeStep {
    /// Processing time since the run started (or, resumed, since its checkpoint's start).
    fn clock(&self) -> Millis {
        self.started.elapsed().as_millis() as Millis
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
    /// time and partition (`shuffled`: its input partition, behind a shuffle).
    fn parse(
        &mut self,
        line: &Line<'_>,
        shuffled: Option<usize>,
    ) -> Result<(Millis, usize), RecordError> {
        let x = &self.reading.extractor;
        self.id.clear();
        for i in 0..self.reading.id_fields {
            let text = line.require(i, x)?;
            if text == "null" {
                return Err(RecordError::BadValue {
                    path: x.paths()[i].to_string(),
                    reason: "the id is null".into(),
                });
            }
            if self.reading.id_fields > 1 {
                if i > 0 {
                    self.id.push(KEY_SEPARATOR);
                }
                self.id.push_str(text);
            }
        }
        // Without a time field, arrival order stands in for time, so that --max-keys
        // evicts the ids seen longest ago.
        let task = &mut self.tasks.active;
        task.seq += 1;
        let t = match self.reading.time_at {
            Some(i) => line.time(i, x, &self.reading.time_format)?,
            None => task.seq,
        };
        let partition = match (self.reading.parts.at, shuffled) {
            (None, _) => 0,
            // Behind a shuffle, the input partition's number is its id in every task.
            (Some(_), Some(input)) => input,
            (Some(_), None) => self.reading.parts.id(line, x, &mut task.partitions)?,
        };
        Ok((t, partition))
    }
}

impl RecordStep for DedupeStep {
    fn record(&mut self, line: &Line<'_>, counters: &mut Counters) -> Result<Flow, Fault> {
        self.tasks.activate(line.task());
        let shuffled = match self.reading.parts.shuffled(line, &self.reading.extractor)? {
            Some((input, offset)) => {
                // A record a restarted writer sent again was taken in already.
                let watermarks = &mut self.tasks.active.watermarks;
                if !watermarks.first_pass(input, offset, self.now) {
                    return Ok(Flow::Continue);
                }
                // Judged as one reader of the input would judge it (its writer says where
                // its input partition stood).
                if let Some(before) = line.carried {
                    watermarks.heard(input, Some(before), false, self.now);
                }
                Some(input)
            }
            None => None,
        };
        let (t, partition) = self.parse(line, shuffled)?;
        if let Some(n) = self.reading.parts.count(line) {
            self.tasks.active.watermarks.expect(n, self.now);
        }
        if let Some(at) = self.reading.message_key_at {
            let parts: SmallVec<[&str; 4]> = (0..self.reading.id_fields)
                .filter_map(|i| line.field(i))
                .collect();
            line.check_keyed(at, &parts, "--id")?;
        }
        // One id field is read in place; several are joined in `self.id`.
        let id = match self.reading.id_fields {
            1 => line.field(0).expect("parse found it"),
            _ => self.id.as_str(),
        };
        // The clock is the watermark on arrival (event-time horizon: the record's partition's
        // judges it, the run's forgets) or the read time.
        let (t, clock) = match self.reading.horizon_by {
            HorizonBy::Event => (t, self.tasks.active.event_clocks(partition)),
            HorizonBy::Arrival => (self.now, self.now.into()),
        };
        // `time_at` is set only for an event-time horizon.
        let observe = self.reading.time_at.map(|_| (partition, self.now));
        let task = &mut self.tasks.active;
        if !task.ids.holding() {
            let hash = self.hashes.take(id);
            if task.check((id, hash), t, clock, observe) == Verdict::Duplicate {
                self.drop_duplicate(line.bytes, counters)?;
            } else {
                self.sink.write_record(line.bytes)?;
                counters.written += 1;
            }
            return Ok(Flow::Continue);
        }
        // --keep last: a repeat takes the place of the record held so far, which is dropped.
        let released = &mut self.released;
        let id = (id, self.hashes.take(id));
        if let Some(earlier) = task.hold(id, (t, clock), line.bytes, observe, released) {
            self.drop_duplicate(&earlier.bytes, counters)?;
        }
        self.write_released(counters)?;
        Ok(Flow::Continue)
    }

    fn batch(&mut self) {
        self.now = self.clock();
        self.hashes.clear();
    }

    fn ahead<'l>(&mut self, next: impl FnOnce() -> Option<Line<'l>>) {
        // The id map is far larger than the cache: each record's lookup would otherwise wait
        // for memory on its own.
        if self.reading.id_fields != 1 {
            return;
        }
        if let Some(id) = next().and_then(|line| line.field(0)) {
            let hash = self.hashes.push(id);
            self.tasks.active.ids.prefetch(hash);
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
            task: self.tasks.active.saved(),
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

    fn partition_ended(&mut self, partition: i32, counters: &mut Counters) -> Result<()> {
        // A group member's task of it has all its input: its held records go out.
        let released = &mut self.released;
        self.tasks
            .end_partition(partition, |task| task.ids.finish(released));
        self.write_released(counters)
    }

    fn marker(&mut self, partition: i32, marker: &Marker) -> Result<()> {
        self.tasks.activate(Some(partition));
        self.now = self.clock();
        (self.tasks.active.watermarks).marker(marker, self.now);
        Ok(())
    }

    fn partition_states(&mut self) -> Option<&mut dyn PartitionStates> {
        // Records held for --keep last go with their partition's saved state.
        Some(&mut self.tasks)
    }

    fn gauges(&self, g: &mut StepGauges) {
        let (mut ids, mut bytes) = (0, 0);
        self.tasks.each(|task| {
            ids += task.ids.remembered() as u64;
            bytes += task.ids.table_bytes() as u64;
            g.marks(&task.partitions.values(), task.watermarks.partitions());
        });
        (g.state.ids, g.state.bytes) = (Some(ids), Some(bytes));
    }

    fn assigned(&mut self, partitions: &[String]) {
        let task = &mut self.tasks.active;
        let Some(ids) = self
            .reading
            .parts
            .assigned(partitions, &mut task.partitions)
        else {
            return;
        };
        // Named by their envelope field's JSON text, which is what ids are keyed by. A
        // partition read to its end (a Kinesis parent) stops holding the watermark back; one
        // newly read holds it until it speaks or goes idle.
        self.now = self.clock();
        self.tasks.active.watermarks.assign(&ids, self.now);
    }

    fn tick(&mut self, counters: &mut Counters) -> Result<()> {
        // Time moves without records: processing time for an arrival horizon, the watermark
        // when a silent partition goes idle. What expired is forgotten, and held records
        // (--keep last) whose groups ended go out now rather than with the next record.
        self.now = self.clock();
        let (now, event_time) = (self.now, self.reading.time_at.is_some());
        if self.reading.horizon_by == HorizonBy::Event && !event_time {
            // No horizon: nothing expires.
            return Ok(());
        }
        let released = &mut self.released;
        self.tasks
            .for_each(|task| task.advance(now, event_time, released));
        if self.released.is_empty() {
            return Ok(());
        }
        self.write_released(counters)?;
        self.idle()
    }

    fn encoding(&self) -> Option<String> {
        self.sink.encoding()
    }

    fn idle(&mut self) -> Result<()> {
        // A Kafka sink is only polled here; waiting for its deliveries is for durable().
        self.sink.idle()?;
        if let Some(d) = &mut self.duplicates {
            d.flush()?;
        }
        Ok(())
    }

    fn finish(&mut self, ended: Result<()>, counters: &mut Counters) -> Result<()> {
        // The end of the input, or a clean stop: every held record goes out (but a group
        // member's on a stop, whose held records go with their partitions' states to their
        // next owners).
        if matches!(ended, Err(Error::Interrupted)) && self.tasks.is_per_partition() {
            return ended;
        }
        let mut released = std::mem::take(&mut self.released);
        self.tasks.for_each(|task| task.ids.finish(&mut released));
        self.released = released;
        self.write_released(counters).and(ended)
    }

    fn close(&mut self, counters: &mut Counters) -> Result<()> {
        self.tasks.for_each(|task| {
            let counts = task.ids.counts();
            counters.evicted += counts.evicted;
            counters.expired += counts.expired;
            counters.possibly_duplicates += counts.possibly_duplicate;
            counters.peak_keys = counters.peak_keys.max(counts.peak_keys);
        });
        // Flushed, and compressed files made whole.
        self.sink.close()?;
        if let Some(d) = &mut self.duplicates {
            d.close()?;
        }
        Ok(())
    }
}
