//! `weir replay`: records from a source into a sink, at a controlled pace, with envelopes
//! restored to records (key, headers, timestamp, partition).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use super::plan::{self, KeepingArgs, PassThrough};
use crate::cli::ReplayArgs;
use crate::core::pace::{Due, Pace, Schedule, ScheduleState};
use crate::core::record::Extractor;
use crate::core::saved;
use crate::core::time::{Millis, TimeFormat, TimeRange};
use crate::error::{Error, Fault, Result};
use crate::io::input::InputPlan;
use crate::io::sink::{LineSink, RecordFields, SinkPlan};
use crate::io::spec::SinkSpec;
use crate::runtime::{
    clock_from, limit_reached, run_command, saved_state, send_envelope, Command, Counters, Flow,
    Line, Prepare, RecordStep, Restored, RunPlan, Sink, Stats, StepCheckpoint,
};

pub fn run(args: ReplayArgs, stop: &AtomicBool) -> Result<()> {
    let mut stats = Stats::new("replay");
    stats.dry_run = args.dry_run;
    let report = plan::report_plan(&args.report);
    run_command(stats, &report, || Replay::plan(&args), stop)
}

/// A replay run's own part, checked.
struct Replay {
    /// `None` on --dry-run.
    sink: Option<SinkPlan>,
    pace: Pace,
    range: TimeRange,
    sending: Sending,
}

/// What is sent: the part of a replay its plan hands its step as it is.
struct Sending {
    envelope: bool,
    keep_partition: bool,
    time: Option<Arc<Extractor>>,
    time_format: TimeFormat,
    /// `-n`: stop after this many records sent.
    limit: Option<u64>,
}

impl Replay {
    fn plan(args: &ReplayArgs) -> Result<RunPlan<Replay>> {
        let mut input = plan::input_plan(&args.input, true)?;
        // A broker source's records reach us as envelopes.
        let envelope = args.envelope || input.is_broker();
        check_envelope_flags(args, envelope)?;
        let range = time_range(args, &input, envelope)?;
        let sink = replay_sink(args, envelope)?;
        // The time field (records that are not envelopes), then --where's fields.
        let time_path = (!envelope).then(|| args.time.time.clone()).flatten();
        let read = PassThrough::plan(time_path, &args.input, &args.time.time_format)?;
        let pace = Pace::of(args.rate, args.speed);
        let job = job(args, &input, envelope, &pace);
        let keeping = KeepingArgs {
            command: "replay",
            checkpoint: &args.checkpoint,
            changelog: None,
            report_at_end: false,
        }
        .plan(&mut input, &sink.spec, &job)?;
        plan::check_files_written_at_end(&plan::report_plan(&args.report), None)?;
        let prepare = read.prepare(Prepare::Validate);
        let replay = Replay {
            sink: (!args.dry_run).then_some(sink),
            pace,
            range,
            sending: Sending {
                envelope,
                keep_partition: args.keep_partition,
                time: read.time,
                time_format: args.time.time_format.clone(),
                limit: args.count,
            },
        };
        plan::serve_metrics(&args.report, "replay", &args.input)?;
        Ok(RunPlan {
            limit: args.count,
            command: replay,
            input: Box::new(input),
            prepare,
            keeping,
            job,
            select: read.select,
        })
    }
}

/// The flags that need plain lines, or envelopes, or a sink.
fn check_envelope_flags(args: &ReplayArgs, envelope: bool) -> Result<()> {
    if args.keep_partition && !envelope {
        return Err(Error::Usage(
            "--keep-partition needs envelopes (-J, or a Kafka source)".into(),
        ));
    }
    if envelope && (args.sink.key.is_some() || !args.sink.headers.is_empty()) {
        return Err(Error::Usage(
            "envelopes carry their own key and headers; --key/--header are for plain lines".into(),
        ));
    }
    if args.speed.is_some() && !envelope && args.time.time.is_none() {
        return Err(Error::Usage(
            "--speed keeps the gaps between timestamps: give --time FIELD, or use envelopes (-J)"
                .into(),
        ));
    }
    Ok(())
}

/// On NDJSON input --from/--to are a time range, of the envelope timestamp or --time.
fn time_range(args: &ReplayArgs, input: &InputPlan, envelope: bool) -> Result<TimeRange> {
    if input.is_broker() {
        return Ok(TimeRange::default());
    }
    let timed = envelope || args.time.time.is_some();
    plan::ndjson_time_range(&args.input.broker, timed, " (or envelopes, -J)")
}

/// Where records go: envelopes with their own keys, or lines keyed by `--key`.
fn replay_sink(args: &ReplayArgs, envelope: bool) -> Result<SinkPlan> {
    let mut fields = RecordFields::parse(args.sink.key.as_ref(), &args.sink.headers)?;
    fields.envelope_keys = envelope;
    let sink = plan::sink_plan(&args.sink.output, fields, &args.input)?;
    if args.keep_partition && !matches!(sink.spec, SinkSpec::Kafka(_)) {
        return Err(Error::Usage(
            "--keep-partition is for a Kafka sink (-o kafka://...): a file has no partitions, and a Kinesis stream places each record by its key"
                .into(),
        ));
    }
    Ok(sink)
}

/// What makes a checkpoint this job's: the inputs and the flags that decide the output and
/// its pace.
fn job(args: &ReplayArgs, input: &InputPlan, envelope: bool, pace: &Pace) -> String {
    let broker = &args.input.broker;
    format!(
        "inputs {:?}, -J {}, --keep-partition {}, --time {:?} {:?}, --from {:?}, --to {:?}, --key {:?}, --header {:?}, pace {:?}, -n {:?}, --where {:?}",
        input.job_source(),
        envelope,
        args.keep_partition,
        args.time.time.as_ref().map(|t| t.as_str()),
        args.time.time_format,
        broker.from,
        broker.to,
        args.sink.key.as_ref().map(|k| k.as_str()),
        args.sink.headers,
        pace,
        args.count,
        args.input.conditions,
    )
}

impl Command for Replay {
    type Step = ReplayStep;

    fn open(self, restored: Option<&Restored>) -> Result<ReplayStep> {
        let mut step = ReplayStep {
            sink: LineSink::discard(),
            schedule: Schedule::new(self.range, self.pace),
            started: Instant::now(),
            sending: self.sending,
        };
        if let Some(state) = saved_state::<ScheduleState>(restored)? {
            step.schedule = Schedule::resume(self.pace, &state);
            step.started = clock_from(state.elapsed);
        }
        if let Some(sink) = &self.sink {
            step.sink = LineSink::open_resumed(sink, restored)?;
        }
        Ok(step)
    }
}

struct ReplayStep {
    /// One that keeps nothing on --dry-run.
    sink: LineSink,
    schedule: Schedule,
    started: Instant,
    sending: Sending,
}

impl ReplayStep {
    /// Why a record at time `t` is not sent now: out of the range (filtered), or not due yet
    /// (the wait).
    fn not_yet(&mut self, t: Option<Millis>, counters: &mut Counters) -> Option<Flow> {
        match self.schedule.due(self.started.elapsed(), t) {
            Due::Now => None,
            Due::Wait(wait) => Some(Flow::Wait(wait)),
            Due::Out => {
                counters.filtered += 1;
                Some(Flow::Continue)
            }
        }
    }

    /// Sends an envelope as the record it describes: its key, headers, timestamp, and with
    /// --keep-partition its partition. `Ok(None)` when it is sent; else why not yet.
    fn send_envelope(
        &mut self,
        line: &Line<'_>,
        counters: &mut Counters,
    ) -> Result<Option<Flow>, Fault> {
        let record = line.envelope()?;
        if let Some(not_yet) = self.not_yet(record.timestamp, counters) {
            return Ok(Some(not_yet));
        }
        send_envelope(&mut self.sink, &record, self.sending.keep_partition)?;
        Ok(None)
    }

    /// Writes a line as it is, at its time's pace. `Ok(None)` when it is written; else why
    /// not yet.
    fn send_line(
        &mut self,
        line: &Line<'_>,
        counters: &mut Counters,
    ) -> Result<Option<Flow>, Fault> {
        let s = &self.sending;
        let t = match &s.time {
            Some(x) => Some(line.time(0, x, &s.time_format)?),
            None => None,
        };
        if let Some(not_yet) = self.not_yet(t, counters) {
            return Ok(Some(not_yet));
        }
        self.sink.write_record(line.bytes)?;
        Ok(None)
    }
}

impl RecordStep for ReplayStep {
    fn durable(&mut self) -> Result<()> {
        self.sink.flush()
    }

    fn record(&mut self, line: &Line<'_>, counters: &mut Counters) -> Result<Flow, Fault> {
        let not_yet = match self.sending.envelope {
            true => self.send_envelope(line, counters)?,
            false => self.send_line(line, counters)?,
        };
        if let Some(flow) = not_yet {
            return Ok(flow);
        }
        self.schedule.sent();
        counters.written += 1;
        Ok(if limit_reached(self.sending.limit, counters) {
            Flow::Stop
        } else {
            Flow::Continue
        })
    }

    fn checkpoint(&mut self, _with_state: bool) -> Result<StepCheckpoint> {
        let state = self.schedule.state(self.started.elapsed());
        Ok(StepCheckpoint {
            state: saved::encode(&state),
            sinks: self.sink.durable()?.into_iter().collect(),
        })
    }

    fn encoding(&self) -> Option<String> {
        self.sink.encoding()
    }

    fn idle(&mut self) -> Result<()> {
        self.sink.idle()
    }

    fn close(&mut self, _: &mut Counters) -> Result<()> {
        // Every record handed to the sink is delivered (or reported) before we exit.
        self.sink.close()
    }
}
