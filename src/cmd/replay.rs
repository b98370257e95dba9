//! `weir replay`: records from a source into a sink, at a controlled pace, with envelopes
//! restored to records (key, headers, timestamp, partition).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use super::plan::{self, KeepingArgs, PassThrough};
use crate::cli::ReplayArgs;
use crate::core::envelope::OwnedRecord;
use crate::core::pace::{Due, Pace, Schedule, ScheduleState};
use crate::core::record::Extractor;
use crate::core::saved;
use crate::core::time::{Millis, TimeFormat, TimeRange};
use crate::error::{Error, Fault, Result};
use crate::io::input::InputPlan;
use crate::io::sink::{LineSink, RecordFields, SinkPlan};
use crate::io::spec::SinkSpec;
use crate::runtime::{
    clock_from, run_command, saved_state, send_envelope, Command, Counters, Flow, Line, Prepare,
    RecordStep, Restored, RunPlan, Sink, Stats, StepCheckpoint,
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
    schedule: Schedule,
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
        // On NDJSON input --from/--to are a time range, of the envelope timestamp or --time.
        let timed = envelope || args.time.time.is_some();
        let range = match input.is_broker() {
            true => TimeRange::default(),
            false => plan::ndjson_time_range(&args.input.broker, timed, " (or envelopes, -J)")?,
        };
        let sink = replay_sink(args, envelope)?;
        // The time field (records that are not envelopes), then --where's fields.
        let time_path = (!envelope).then(|| args.time.time.clone()).flatten();
        let read = PassThrough::plan(time_path, &args.input, &args.time.time_format)?;
        let pace = Pace::of(args.rate, args.speed);
        let job = job(args, &input, envelope, &pace);
        let keeping = KeepingArgs::file_only("replay", &args.checkpoint)
            .plan(&mut input, &sink.spec, &job)?;
        let replay = Replay {
            sink: (!args.dry_run).then_some(sink),
            schedule: Schedule::new(range, pace),
            sending: Sending {
                envelope,
                keep_partition: args.keep_partition,
                time: read.time.clone(),
                time_format: args.time.time_format.clone(),
                limit: args.count,
            },
        };
        plan::prepare_reports(&args.report, "replay", &args.input, None)?;
        Ok(RunPlan {
            limit: args.count,
            command: replay,
            input: Box::new(input),
            prepare: read.prepare(Prepare::Validate),
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
        let saved = saved_state::<ScheduleState>(restored)?;
        let sink = match &self.sink {
            Some(sink) => LineSink::open_resumed(sink, restored)?,
            None => LineSink::discard(),
        };
        Ok(ReplayStep {
            sink,
            schedule: match &saved {
                Some(state) => self.schedule.resumed(state),
                None => self.schedule,
            },
            // A resumed run's clock goes on from its checkpoint's.
            started: clock_from(saved.map_or(0, |state| state.elapsed)),
            sending: self.sending,
        })
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
    /// The record's time (its envelope's timestamp, or `--time`), and with envelopes the
    /// record the envelope describes.
    fn read(&self, line: &Line<'_>) -> Result<(Option<Millis>, Option<OwnedRecord>), Fault> {
        let s = &self.sending;
        if s.envelope {
            let record = line.envelope()?;
            return Ok((record.timestamp, Some(record)));
        }
        let t = s.time.as_ref().map(|x| line.time(0, x, &s.time_format));
        Ok((t.transpose()?, None))
    }
}

impl RecordStep for ReplayStep {
    fn durable(&mut self) -> Result<()> {
        self.sink.flush()
    }

    fn record(&mut self, line: &Line<'_>, counters: &mut Counters) -> Result<Flow, Fault> {
        let (t, envelope) = self.read(line)?;
        match self.schedule.due(|| self.started.elapsed(), t) {
            Due::Now => {}
            Due::Wait(wait) => return Ok(Flow::Wait(wait)),
            Due::Out => {
                counters.filtered += 1;
                return Ok(Flow::Continue);
            }
        }
        match envelope {
            Some(record) => send_envelope(&mut self.sink, &record, self.sending.keep_partition)?,
            None => self.sink.write_record(line.bytes)?,
        }
        self.schedule.sent();
        counters.written += 1;
        Ok(Flow::until_limit(self.sending.limit, counters))
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
