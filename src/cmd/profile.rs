//! `weir watermark-profile`: lateness and out-of-orderness distributions, and the watermark
//! delay that would cover them.

use std::ops::Range;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::plan::{self, KeepingArgs};
use crate::cli::ProfileArgs;
use crate::core::lateness::Profile;
use crate::core::partitioned::{PartitionStates, PartitionTask, Tasks};
use crate::core::profile_task::{Task, TaskState};
use crate::core::record::{Extractor, FieldList};
use crate::core::saved;
use crate::core::time::{now_millis, Millis, TimeFormat};
use crate::core::watermark::{PartitionIds, MAX_PARTITIONS};
use crate::core::window::TooManyWindows;
use crate::error::{Error, Fault, Result};
use crate::io::input::InputPlan;
use crate::io::sink::{LineSink, SinkPlan};
use crate::report::profile::{ReportOut, Shown};
use crate::runtime::metrics::StepGauges;
use crate::runtime::{
    run_command, saved_state, Command, Counters, Flow, Line, PartitionFields, Prepare, RecordStep,
    Restored, RunPlan, Stats, StepCheckpoint,
};

pub fn run(args: ProfileArgs, stop: &AtomicBool) -> Result<()> {
    let report = plan::report_plan(&args.report);
    let stats = Stats::new("watermark-profile");
    run_command(stats, &report, || Profiling::plan(&args), stop)
}

/// A profile run's own part, checked.
struct Profiling {
    output: SinkPlan,
    /// A profile of nothing yet: the delays and targets it reports on, its bucket.
    fresh: Task,
    per_partition: bool,
    reading: Reading,
    shown: Shown,
}

/// What makes a checkpoint this job's.
fn job(args: &ProfileArgs, input: &InputPlan, fields: &FieldList, window: Option<&str>) -> String {
    format!(
        "inputs {:?}, fields {:?}, {:?}, --target {:?}, --delay {:?}, --bucket {}, --where {:?}, window {:?}",
        input.job_source(),
        fields.names(),
        args.time.time_format,
        args.target,
        args.delay,
        args.bucket,
        args.input.conditions,
        window,
    )
}

/// Where a record's fields are, and how its times read: the event time is the first.
struct Reading {
    extractor: Arc<Extractor>,
    time_format: TimeFormat,
    arrival_at: Option<usize>,
    by_at: Option<usize>,
    parts: PartitionFields,
    /// Where the --key fields (with --session) are.
    keys: Range<usize>,
}

impl Profiling {
    fn plan(args: &ProfileArgs) -> Result<RunPlan<Profiling>> {
        let time = plan::required_time(&args.time, "watermark-profile")?;
        let mut input = plan::input_plan(&args.input, false)?;
        // A group member's partitions are profiled apart, each with its own out-of-orderness.
        let parts = input.partitioning(args.partition_by.as_ref(), "is profiled apart")?;
        let output = plan::report_sink(&args.output, "watermark-profile")?;
        // A broker source's records carry their broker timestamp: the arrival time there.
        let arrival = (args.arrival.clone()).or_else(|| input.broker_timestamp_field());
        let mut fields = FieldList::default();
        fields.add(time);
        let arrival_at = fields.add_some(arrival);
        let by_at = fields.add_some(args.by.clone());
        let partition_fields = plan::partition_fields(&parts, &mut fields, true);
        let keys_at = fields.add_all(args.keys.iter().cloned());
        let select = plan::selection(&args.input.conditions, &args.time.time_format, &mut fields)?;
        if args.checkpoint.checkpoint.is_some() && arrival_at.is_none() {
            return Err(Error::Usage(
                "--checkpoint needs --arrival FIELD: without it the arrival time is when weir reads a record, which a restart cannot repeat".into(),
            ));
        }
        let sizes = (args.tumbling, args.hop, args.slide);
        // clap: --offset and --allowed-lateness need one of the window flags.
        let shift = (args.offset, args.allowed_lateness);
        let window = plan::window_rule(sizes, args.session, shift, args.max_open_windows)?;
        // The rule predicted, with its flags as a user types them.
        let flags = window.map(|rule| rule.flags(&args.keys));
        let job = job(args, &input, &fields, flags.as_deref());
        let keeping = KeepingArgs {
            // Its one output, the report, is written at the end.
            report_at_end: true,
            ..KeepingArgs::partitioned("watermark-profile", &args.checkpoint, &args.changelog)
        }
        .plan(&mut input, &output.spec, &job)?;
        let extractor = Arc::new(fields.extractor());
        let profile = Profile::new(args.delay.clone(), args.target.clone(), args.bucket);
        let profiling = Profiling {
            output,
            fresh: Task::new(profile).predicting(window),
            per_partition: parts.per_partition,
            reading: Reading {
                extractor: extractor.clone(),
                time_format: args.time.time_format.clone(),
                arrival_at,
                by_at,
                parts: partition_fields,
                keys: keys_at..keys_at + args.keys.len(),
            },
            shown: Shown {
                by: args.by.clone(),
                format: args.format,
                plot: args.plot.clone(),
                window: flags,
                read_time: arrival_at.is_none(),
            },
        };
        let plot = args.plot.as_deref();
        plan::prepare_reports(&args.report, "watermark-profile", &args.input, plot)?;
        Ok(RunPlan {
            command: profiling,
            input: Box::new(input),
            prepare: Prepare::Extract(extractor),
            keeping,
            job,
            limit: None,
            select,
        })
    }
}

impl Command for Profiling {
    type Step = ProfileStep;

    fn open(self, restored: Option<&Restored>) -> Result<ProfileStep> {
        let sink = LineSink::open(&self.output)?;
        let saved = saved_state::<StepState>(restored)?;
        let (task, partitions) = saved.map(|s| (s.task, s.partitions)).unzip();
        let fresh = self.fresh;
        let tasks = Tasks::resumed(self.per_partition, move || fresh.clone(), task);
        Ok(ProfileStep {
            tasks: tasks.map_err(Error::Usage)?,
            reading: self.reading,
            partitions: PartitionIds::from_values(partitions.unwrap_or_default()),
            read_time: 0,
            key: String::new(),
            out: ReportOut {
                sink,
                shown: self.shown,
            },
        })
    }
}

struct ProfileStep {
    /// The run's profile, or a group member's per partition, the one being read active.
    tasks: Tasks<Task>,
    reading: Reading,
    partitions: PartitionIds,
    /// Read time (the arrival time without --arrival), once per batch of records.
    read_time: Millis,
    out: ReportOut,
    /// Several --key fields' texts joined, reused from record to record.
    key: String,
}

impl RecordStep for ProfileStep {
    fn batch(&mut self) {
        self.read_time = now_millis();
    }

    fn gauges(&self, g: &mut StepGauges) {
        let names = self.partitions.values();
        let marks = |task: &Task| g.marks(&names, task.partition_marks());
        self.tasks.each(marks);
    }

    fn record(&mut self, line: &Line<'_>, _: &mut Counters) -> Result<Flow, Fault> {
        self.tasks.activate(line.task());
        let r = &self.reading;
        let (x, format) = (&*r.extractor, &r.time_format);
        let event = line.time_if_any(0, x, format);
        let arrival = match r.arrival_at {
            Some(i) => line.time_if_any(i, x, format),
            None => Some(self.read_time),
        };
        let (Some(event), Some(arrival)) = (event, arrival) else {
            // Counted in the report: a profile measures what it can.
            self.tasks.active.no_time += 1;
            return Ok(Flow::Continue);
        };
        // Past MAX_PARTITIONS values, the rest share the last one: a profile measures on.
        let partition = (r.parts.id(line, x, &mut self.partitions)).unwrap_or(MAX_PARTITIONS - 1);
        let group = r.by_at.map(|i| line.label(i));
        if let Some(n) = r.parts.count(line) {
            self.tasks.active.expect(n);
        }
        // A key only for sessions (`--session --key`): none to read otherwise.
        let key = match r.keys.len() {
            0 => "",
            n => (line.key(r.keys.start, n, x, &mut self.key)?).unwrap_or(&self.key),
        };
        let record = (self.tasks.active).record((group.as_deref(), key), event, arrival, partition);
        record.map_err(|TooManyWindows| {
            let max = (self.tasks.active.window).map_or(0, |rule| rule.max_open_windows);
            line.fatal(format!(
                "more than {max} open sessions for one of the delays tried (--max-open-windows); raise it"
            ))
        })?;
        Ok(Flow::Continue)
    }

    fn assigned(&mut self, partitions: &[String]) {
        let parts = &self.reading.parts;
        if let Some(ids) = parts.assigned(partitions, &mut self.partitions) {
            self.tasks.active.assign(&ids);
        }
    }

    fn partition_states(&mut self) -> Option<&mut dyn PartitionStates> {
        Some(&mut self.tasks)
    }

    fn checkpoint(&mut self, _with_state: bool) -> Result<StepCheckpoint> {
        let state = StepState {
            task: self.tasks.active.saved(),
            partitions: self.partitions.values(),
        };
        Ok(StepCheckpoint {
            state: saved::encode(&state),
            // The report is written at the end: no output to cut back.
            sinks: Vec::new(),
        })
    }

    /// A profile of a live source ends with a signal: the report of what was read is the
    /// result, marked as interrupted, and the run still exits 130.
    fn finish(&mut self, ended: Result<()>, counters: &mut Counters) -> Result<()> {
        let interrupted = matches!(ended, Err(Error::Interrupted));
        self.out.write(&mut self.tasks, interrupted)?;
        counters.written = 1;
        ended
    }
}

/// What a checkpoint keeps of a profile run.
#[derive(Serialize, Deserialize)]
struct StepState {
    task: TaskState,
    partitions: Vec<String>,
}
