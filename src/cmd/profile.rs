//! `weir watermark-profile`: lateness and out-of-orderness distributions, and the watermark
//! delay that would cover them.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cli::ProfileArgs;
use crate::core::lateness::{Profile, ProfileState};
use crate::core::partitioned::{PartitionTask, PerPartition};
use crate::core::record::{time_of, Extractor, FieldPath, Scalar};
use crate::core::saved;
use crate::core::time::{now_millis, Millis, TimeFormat};
use crate::core::watermark::{PartitionIds, MAX_PARTITIONS};
use crate::error::{Error, Fault, Result};
use crate::io::kafka::Render;
use crate::io::sink::{LineSink, SinkPlan};
use crate::io::spec::SinkSpec;
use crate::report::profile::{render_svg, render_text, ReportFormat};
use crate::runtime::summary::finish;
use crate::runtime::{
    read_records_with, CheckpointPlan, Checkpoints, Counters, ErrorPolicy, Flow, Line, Prepare,
    RecordStep, Run, Stats, StepCheckpoint,
};

use super::InputPlan;

pub fn run(args: ProfileArgs, stop: &AtomicBool) -> Result<()> {
    let mut stats = Stats::new("watermark-profile");
    let report = super::report_plan(&args.report);
    let result = Plan::new(&args).and_then(|plan| {
        super::check_files_written_at_end(&report, args.plot.as_deref())?;
        profile(plan, &args, &mut stats, stop)
    });
    finish(&stats, &report, result)
}

/// A profile run, checked.
struct Plan {
    input: InputPlan,
    output: SinkPlan,
    /// The event time, then the arrival, --by and partition fields.
    paths: Vec<FieldPath>,
    arrival_at: Option<usize>,
    by_at: Option<usize>,
    partition_at: Option<usize>,
    checkpoint: Option<CheckpointPlan>,
    /// A consumer-group member keeps a profile per partition, saved this often.
    per_partition: Option<Duration>,
    /// What makes a checkpoint this job's: the inputs and the flags that decide the report.
    job: String,
}

impl Plan {
    fn new(args: &ProfileArgs) -> Result<Plan> {
        let time = args
            .time
            .time
            .clone()
            .ok_or_else(|| Error::Usage("weir watermark-profile needs --time FIELD".into()))?;
        let mut input = InputPlan::new(&args.input, false)?;
        // A group member's partitions are profiled apart, each with its own out-of-orderness.
        let per_partition = super::group_of(&input).is_some();
        if per_partition && args.partition_by.is_some() {
            return Err(Error::Usage(
                "with -G each partition is profiled apart; --partition-by does not apply".into(),
            ));
        }
        let partition_by = match per_partition {
            true => None,
            false => input.partition_field(args.partition_by.as_ref()),
        };
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
        let partition_at = push(partition_by);
        let checkpoint = super::checkpoint_plan(&args.checkpoint, &output.spec, true)?;
        if checkpoint.is_some() && arrival_at.is_none() {
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
        let per_partition = super::changelog_plan(
            &mut input,
            "watermark-profile",
            &args.changelog,
            &args.checkpoint,
            &job,
        )?;
        Ok(Plan {
            input,
            output,
            paths,
            arrival_at,
            by_at,
            partition_at,
            checkpoint,
            per_partition,
            job,
        })
    }
}

fn profile(plan: Plan, args: &ProfileArgs, stats: &mut Stats, stop: &AtomicBool) -> Result<()> {
    let (mut checkpoints, restored) = super::open_checkpoints(
        plan.checkpoint.as_ref(),
        "watermark-profile",
        &plan.job,
        &plan.input,
    )?;
    if let Some(interval) = plan.per_partition {
        let inputs = plan.input.checkpoint_inputs();
        checkpoints = Some(Checkpoints::for_group(
            interval,
            "watermark-profile",
            inputs,
        ));
    }
    let source = plan
        .input
        .open_source_at(Render::Envelope, restored.as_ref())?;
    let mut policy = ErrorPolicy::open_resumed(&plan.input.policy, restored.as_ref())?;
    let mut sink = LineSink::open(&plan.output)?;
    let extractor = Arc::new(Extractor::new(plan.paths));
    let (delays, targets, bucket) = (args.delay.clone(), args.target.clone(), args.bucket);
    let new_profile = move || Profile::new(delays.clone(), targets.clone(), bucket);
    let for_tasks = new_profile.clone();
    let mut step = ProfileStep {
        task: Task::new(new_profile()),
        tasks: plan
            .per_partition
            .map(|_| PerPartition::new(move || Task::new(for_tasks()))),
        extractor: extractor.clone(),
        time_format: args.time.time_format.clone(),
        arrival_at: plan.arrival_at,
        by_at: plan.by_at,
        partition_at: plan.partition_at,
        partitions: PartitionIds::default(),
        read_time: 0,
    };
    if let Some(r) = &restored {
        stats.counters = r.counters.clone();
        let saved: StepState = saved::decode(&r.state).map_err(Error::Usage)?;
        step.partitions = PartitionIds::from_values(saved.partitions);
        step.task = Task::restored(Task::new(new_profile()), saved.task).map_err(Error::Usage)?;
    }
    let run = Run {
        source,
        prepare: Prepare::Extract(extractor),
        max_line_bytes: plan.input.max_line_bytes,
        counters: &mut stats.counters,
        policy: &mut policy,
        stop,
    };
    // A profile of a live source ends with a signal: the report of what was read is the
    // result, marked as interrupted, and the run still exits 130.
    let interrupted = match read_records_with(run, &mut step, checkpoints.as_mut()) {
        Ok(()) => false,
        Err(Error::Interrupted) => true,
        Err(e) => return Err(e),
    };
    if let Some(c) = &mut checkpoints {
        c.take(&mut step, &mut policy, &stats.counters)?;
    }
    policy.close()?;
    // A group member reports on the partitions it owns, each profiled apart, as one.
    let mut report = match &mut step.tasks {
        None => step.task.profile.report(step.task.no_time),
        Some(tasks) => {
            let mut all = tasks.fresh();
            tasks.for_each(&mut step.task, |_, t| {
                all.profile.merge(&t.profile);
                all.no_time += t.no_time;
            });
            all.profile.report(all.no_time)
        }
    };
    report.interrupted = interrupted;
    let text = match args.format {
        ReportFormat::Json => serde_json::to_string_pretty(&report).expect("report serialises"),
        ReportFormat::Text => render_text(&report, args.by.as_ref().map(|b| b.as_str())),
    };
    sink.write_line(text.trim_end().as_bytes())?;
    sink.close()?;
    stats.counters.written = 1;
    if let Some(path) = &args.plot {
        let svg = render_svg(&report);
        let html = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"));
        let body = if html {
            format!("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>weir watermark-profile</title></head><body>\n{svg}\n</body></html>\n")
        } else {
            svg
        };
        std::fs::write(path, body).map_err(|e| Error::write(&path.display().to_string(), e))?;
    }
    if interrupted {
        return Err(Error::Interrupted);
    }
    Ok(())
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

struct ProfileStep {
    /// The task of the run (of the partition being read, for a group member).
    task: Task,
    /// A group member's tasks of the partitions not being read.
    tasks: Option<PerPartition<Task>>,
    extractor: Arc<Extractor>,
    time_format: TimeFormat,
    arrival_at: Option<usize>,
    by_at: Option<usize>,
    partition_at: Option<usize>,
    partitions: PartitionIds,
    /// Read time (the arrival time without --arrival), once per batch of records.
    read_time: Millis,
}

impl RecordStep for ProfileStep {
    fn batch(&mut self) {
        self.read_time = now_millis();
    }

    fn record(&mut self, line: &Line<'_>, _: &mut Counters) -> Result<Flow, Fault> {
        if let (Some(tasks), Some((partition, _))) = (&mut self.tasks, line.offset) {
            tasks.activate(&mut self.task, partition);
        }
        let x = &self.extractor;
        let time_at = |i: usize| {
            line.field(i)
                .and_then(|raw| time_of(raw, &x.paths()[i], &self.time_format).ok())
        };
        let event = time_at(0);
        let arrival = match self.arrival_at {
            Some(i) => time_at(i),
            None => Some(self.read_time),
        };
        let (Some(event), Some(arrival)) = (event, arrival) else {
            // Counted in the report: a profile measures what it can.
            self.task.no_time += 1;
            return Ok(Flow::Continue);
        };
        // Past MAX_PARTITIONS values, the rest share the last one: a profile measures on.
        let partition = match self.partition_at.and_then(|i| line.field(i)) {
            None => 0,
            Some(value) => self.partitions.id(value).unwrap_or(MAX_PARTITIONS - 1),
        };
        let max_seen = &mut self.task.max_seen;
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
        let group = self
            .by_at
            .map(|i| match line.field(i).map(Scalar::from_raw) {
                Some(Scalar::Str(s)) => s.into_owned(),
                Some(_) => line.field(i).unwrap_or("null").to_string(),
                None => "(missing)".to_string(),
            });
        self.task
            .profile
            .record(group.as_deref(), event, arrival, out_of_order);
        Ok(Flow::Continue)
    }

    fn idle(&mut self) -> Result<()> {
        Ok(())
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
            tasks.take(&mut self.task, partition);
        }
    }

    fn checkpoint(&mut self, _with_state: bool) -> Result<StepCheckpoint> {
        let state = StepState {
            task: self.task.saved(),
            partitions: self.partitions.values(),
        };
        Ok(StepCheckpoint {
            state: saved::encode(&state),
            // The report is written at the end: no output to cut back.
            sinks: Vec::new(),
        })
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
