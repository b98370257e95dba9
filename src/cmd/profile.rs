//! `weir watermark-profile`: lateness and out-of-orderness distributions, and the watermark
//! delay that would cover them.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::plan::{self, KeepingArgs};
use crate::cli::ProfileArgs;
use crate::core::lateness::{Profile, ProfileState, Report};
use crate::core::partitioned::{PartitionStates, PartitionTask, Tasks};
use crate::core::record::{Extractor, FieldPath, Scalar};
use crate::core::saved;
use crate::core::time::{now_millis, Millis, TimeFormat};
use crate::core::watermark::{PartitionIds, MAX_PARTITIONS};
use crate::error::{Error, Fault, Result};
use crate::io::sink::{LineSink, SinkPlan};
use crate::io::spec::SinkSpec;
use crate::report::profile::{render_svg, render_text, ReportFormat};
use crate::runtime::{
    run_command, saved_state, Command, Counters, Flow, Line, Prepare, RecordStep, Restored,
    RunPlan, Sink, Stats, StepCheckpoint,
};

pub fn run(args: ProfileArgs, stop: &AtomicBool) -> Result<()> {
    let report = plan::report_plan(&args.report);
    let stats = Stats::new("watermark-profile");
    run_command(stats, &report, || Profiling::plan(&args), stop)
}

/// A profile run's own part, checked.
struct Profiling {
    output: SinkPlan,
    /// How a new profile is made: the delays and targets it reports on, its bucket.
    delays: Vec<Millis>,
    targets: Vec<f64>,
    bucket: Millis,
    per_partition: bool,
    extractor: Arc<Extractor>,
    time_format: TimeFormat,
    arrival_at: Option<usize>,
    by: Option<FieldPath>,
    by_at: Option<usize>,
    partition_at: Option<usize>,
    format: ReportFormat,
    plot: Option<PathBuf>,
}

impl Profiling {
    fn plan(args: &ProfileArgs) -> Result<RunPlan<Profiling>> {
        let time = args
            .time
            .time
            .clone()
            .ok_or_else(|| Error::Usage("weir watermark-profile needs --time FIELD".into()))?;
        let mut input = plan::input_plan(&args.input, false)?;
        // A group member's partitions are profiled apart, each with its own out-of-orderness.
        let parts = input.partitioning(args.partition_by.as_ref(), "is profiled apart")?;
        if let Some(t) = args.target.iter().find(|t| !(**t > 0.0 && **t <= 100.0)) {
            return Err(Error::Usage(format!(
                "--target {t}: targets are percentages in (0, 100]"
            )));
        }
        let output = SinkPlan::text(
            SinkSpec::parse(&args.output).map_err(Error::Usage)?,
            "weir watermark-profile writes its report to stdout or a file",
        )?;
        let mut paths = vec![time];
        let mut push = |p: Option<FieldPath>| {
            p.map(|p| {
                paths.push(p);
                paths.len() - 1
            })
        };
        // A broker source's records carry their broker timestamp: the arrival time there.
        let arrival = args
            .arrival
            .clone()
            .or_else(|| input.broker_timestamp_field());
        let arrival_at = push(arrival);
        let by_at = push(args.by.clone());
        let partition_at = push(parts.field);
        if args.checkpoint.checkpoint.is_some() && arrival_at.is_none() {
            return Err(Error::Usage(
                "--checkpoint needs --arrival FIELD: without it the arrival time is when weir reads a record, which a restart cannot repeat".into(),
            ));
        }
        let job = format!(
            "inputs {:?}, fields {:?}, {:?}, --target {:?}, --delay {:?}, --bucket {}",
            input.job_source(),
            paths.iter().map(|p| p.as_str()).collect::<Vec<_>>(),
            args.time.time_format,
            args.target,
            args.delay,
            args.bucket,
        );
        let keeping = KeepingArgs {
            command: "watermark-profile",
            checkpoint: &args.checkpoint,
            changelog: Some(&args.changelog),
            report_at_end: true,
        }
        .plan(&mut input, &output.spec, &job)?;
        let report = plan::report_plan(&args.report);
        plan::check_files_written_at_end(&report, args.plot.as_deref())?;
        let extractor = Arc::new(Extractor::new(paths));
        let profiling = Profiling {
            output,
            delays: args.delay.clone(),
            targets: args.target.clone(),
            bucket: args.bucket,
            per_partition: parts.per_partition,
            extractor: extractor.clone(),
            time_format: args.time.time_format.clone(),
            arrival_at,
            by: args.by.clone(),
            by_at,
            partition_at,
            format: args.format,
            plot: args.plot.clone(),
        };
        Ok(RunPlan {
            command: profiling,
            input: Box::new(input),
            prepare: Prepare::Extract(extractor),
            keeping,
            job,
            limit: None,
        })
    }
}

impl Command for Profiling {
    type Step = ProfileStep;

    fn open(self, restored: Option<&Restored>) -> Result<ProfileStep> {
        let sink = LineSink::open(&self.output)?;
        let (delays, targets, bucket) = (self.delays, self.targets, self.bucket);
        let new_task = move || Task::new(Profile::new(delays.clone(), targets.clone(), bucket));
        let mut tasks = match self.per_partition {
            true => Tasks::per_partition(new_task.clone()),
            false => Tasks::one(new_task()),
        };
        let mut partitions = PartitionIds::default();
        if let Some(saved) = saved_state::<StepState>(restored)? {
            partitions = PartitionIds::from_values(saved.partitions);
            tasks.active = Task::restored(new_task(), saved.task).map_err(Error::Usage)?;
        }
        Ok(ProfileStep {
            tasks,
            extractor: self.extractor,
            time_format: self.time_format,
            arrival_at: self.arrival_at,
            by_at: self.by_at,
            partition_at: self.partition_at,
            partitions,
            read_time: 0,
            out: ReportOut {
                sink,
                by: self.by,
                format: self.format,
                plot: self.plot,
            },
        })
    }
}

/// What is profiled: a run's records, or, for a consumer-group member, one partition's.
struct Task {
    profile: Profile,
    /// Largest event time seen per partition.
    max_seen: Vec<Millis>,
    no_time: u64,
}

impl Task {
    fn new(profile: Profile) -> Task {
        Task {
            profile,
            max_seen: Vec::new(),
            no_time: 0,
        }
    }

    /// Profiles a record with an event time and an arrival time, in partition `partition`.
    fn record(&mut self, group: Option<&str>, event: Millis, arrival: Millis, partition: usize) {
        let max_seen = &mut self.max_seen;
        if partition >= max_seen.len() {
            max_seen.resize(partition + 1, Millis::MIN);
        }
        let max = &mut max_seen[partition];
        let out_of_order = if *max == Millis::MIN {
            0
        } else {
            max.saturating_sub(event).max(0)
        };
        *max = (*max).max(event);
        self.profile.record(group, event, arrival, out_of_order);
    }
}

impl PartitionTask for Task {
    type Saved = TaskState;

    fn saved(&self) -> TaskState {
        TaskState {
            profile: self.profile.state(),
            max_seen: self.max_seen.clone(),
            no_time: self.no_time,
        }
    }

    fn restored(mut fresh: Task, state: TaskState) -> std::result::Result<Task, String> {
        fresh.profile.restore(state.profile)?;
        fresh.max_seen = state.max_seen;
        fresh.no_time = state.no_time;
        Ok(fresh)
    }
}

/// Where the report goes, and how it is shown.
struct ReportOut {
    sink: LineSink,
    by: Option<FieldPath>,
    format: ReportFormat,
    plot: Option<PathBuf>,
}

impl ReportOut {
    /// Writes the report of `tasks` (a group member's partitions, each profiled apart, as
    /// one) and returns it.
    fn write(&mut self, tasks: &mut Tasks<Task>, interrupted: bool) -> Result<Report> {
        let mut report = match tasks.fresh() {
            None => tasks.active.profile.report(tasks.active.no_time),
            Some(mut all) => {
                tasks.for_each(|t| {
                    all.profile.merge(&t.profile);
                    all.no_time += t.no_time;
                });
                all.profile.report(all.no_time)
            }
        };
        report.interrupted = interrupted;
        let text = match self.format {
            ReportFormat::Json => serde_json::to_string_pretty(&report).expect("report serialises"),
            ReportFormat::Text => render_text(&report, self.by.as_ref().map(|b| b.as_str())),
        };
        self.sink.write_line(text.trim_end().as_bytes())?;
        self.sink.close()?;
        Ok(report)
    }
}

/// `--plot`: the SVG, alone or in an HTML page, as the file's name says.
fn write_plot(path: &std::path::Path, svg: &str) -> Result<()> {
    let html = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"));
    let body = if html {
        format!("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>weir watermark-profile</title></head><body>\n{svg}\n</body></html>\n")
    } else {
        svg.to_string()
    };
    std::fs::write(path, body).map_err(|e| Error::write(&path.display().to_string(), e))
}

struct ProfileStep {
    /// The run's profile, or a group member's per partition, the one being read active.
    tasks: Tasks<Task>,
    extractor: Arc<Extractor>,
    time_format: TimeFormat,
    arrival_at: Option<usize>,
    by_at: Option<usize>,
    partition_at: Option<usize>,
    partitions: PartitionIds,
    /// Read time (the arrival time without --arrival), once per batch of records.
    read_time: Millis,
    out: ReportOut,
}

impl RecordStep for ProfileStep {
    fn batch(&mut self) {
        self.read_time = now_millis();
    }

    fn record(&mut self, line: &Line<'_>, _: &mut Counters) -> Result<Flow, Fault> {
        self.tasks
            .activate(line.offset.map(|(partition, _)| partition));
        let (x, format) = (&*self.extractor, &self.time_format);
        let event = line.time_if_any(0, x, format);
        let arrival = match self.arrival_at {
            Some(i) => line.time_if_any(i, x, format),
            None => Some(self.read_time),
        };
        let (Some(event), Some(arrival)) = (event, arrival) else {
            // Counted in the report: a profile measures what it can.
            self.tasks.active.no_time += 1;
            return Ok(Flow::Continue);
        };
        // Past MAX_PARTITIONS values, the rest share the last one: a profile measures on.
        let partition = match self.partition_at.and_then(|i| line.field(i)) {
            None => 0,
            Some(value) => self.partitions.id(value).unwrap_or(MAX_PARTITIONS - 1),
        };
        let group = self
            .by_at
            .map(|i| match line.field(i).map(Scalar::from_raw) {
                Some(Scalar::Str(s)) => s.into_owned(),
                Some(_) => line.field(i).unwrap_or("null").to_string(),
                None => "(missing)".to_string(),
            });
        let task = &mut self.tasks.active;
        task.record(group.as_deref(), event, arrival, partition);
        Ok(Flow::Continue)
    }

    fn idle(&mut self) -> Result<()> {
        Ok(())
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
        let report = self.out.write(&mut self.tasks, interrupted)?;
        counters.written = 1;
        if let Some(path) = &self.out.plot {
            write_plot(path, &render_svg(&report))?;
        }
        ended
    }
}

/// What a checkpoint keeps of a profile run.
#[derive(Serialize, Deserialize)]
struct StepState {
    task: TaskState,
    partitions: Vec<String>,
}

/// What a checkpoint keeps of a task: a run's, or one partition's.
#[derive(Serialize, Deserialize)]
struct TaskState {
    profile: ProfileState,
    max_seen: Vec<Millis>,
    no_time: u64,
}
