//! `weir consume`: records from a source to a sink, unchanged, optionally by event-time range.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::plan::{self, KeepingArgs, PassThrough};
use crate::cli::ConsumeArgs;
use crate::core::envelope::{KcatFormat, Render};
use crate::core::record::Extractor;
use crate::core::saved;
use crate::core::time::{TimeFormat, TimeRange};
use crate::error::{Error, Fault, Result};
use crate::io::sink::{LineSink, RecordFields, SinkPlan};
use crate::runtime::{
    run_command, saved_state, Command, Counters, Flow, Line, Prepare, RecordStep, Restored,
    RunPlan, Sink, Stats, StepCheckpoint,
};

pub fn run(args: ConsumeArgs, stop: &AtomicBool) -> Result<()> {
    let report = plan::report_plan(&args.report);
    let plan = || Consume::plan(&args);
    run_command(Stats::new("consume"), &report, plan, stop)
}

/// A consume run's own part, checked.
struct Consume {
    sink: SinkPlan,
    /// NDJSON input: the --time field and the event-time range it is kept to.
    time: Option<Arc<Extractor>>,
    time_format: TimeFormat,
    range: TimeRange,
    limit: Option<u64>,
    unbuffered: bool,
    /// Records are kcat-format text, written with no newline added.
    raw: bool,
}

impl Consume {
    fn plan(args: &ConsumeArgs) -> Result<RunPlan<Consume>> {
        let mut input = plan::input_plan(&args.input, true)?;
        let s = &args.sink;
        let fields = RecordFields::parse(s.key.as_ref(), &s.headers)?;
        let sink = plan::sink_plan(&s.output, fields, &args.input)?;
        let mut range = TimeRange::default();
        if input.is_broker() {
            input.render = broker_render(args, &sink)?;
        } else {
            range = ndjson_range(args)?;
        }
        // The time field (NDJSON input), then --where's fields.
        let time_path = (!input.is_broker())
            .then(|| args.time.time.clone())
            .flatten();
        let read = PassThrough::plan(time_path, &args.input, &args.time.time_format)?;
        if read.select.is_some() && matches!(input.render, Render::Format(_)) {
            return Err(Error::Usage(
                "--where tests JSON records: give -J or no -f to filter a topic's records".into(),
            ));
        }
        let broker = &args.input.broker;
        // The range as the flags say it (`-1h` stays `-1h`): a resumed run keeps the bounds
        // its first run resolved, which the checkpoint holds.
        let job = format!(
            "inputs {:?}, --time {:?} {:?}, --from {:?}, --to {:?}, -n {:?}, --where {:?}",
            input.job_source(),
            args.time.time.as_ref().map(|t| t.as_str()),
            args.time.time_format,
            broker.from,
            broker.to,
            args.count,
            args.input.conditions,
        );
        let keeping = KeepingArgs::file_only("consume", &args.checkpoint)
            .plan(&mut input, &sink.spec, &job)?;
        // A broker record was rendered by the source: written as it is.
        let prepare = read.prepare(match input.is_broker() {
            true => Prepare::AsIs,
            false => Prepare::Validate,
        });
        let consume = Consume {
            raw: matches!(input.render, Render::Format(_)),
            sink,
            time: read.time,
            time_format: args.time.time_format.clone(),
            range,
            limit: args.count,
            unbuffered: args.unbuffered,
        };
        plan::prepare_reports(&args.report, "consume", &args.input, None)?;
        Ok(RunPlan {
            limit: consume.limit,
            command: consume,
            input: Box::new(input),
            prepare,
            keeping,
            job,
            select: read.select,
        })
    }
}

/// How a broker record is written: its value, its envelope (`-J`) or a kcat format (`-f`).
fn broker_render(args: &ConsumeArgs, sink: &SinkPlan) -> Result<Render> {
    if args.time.time.is_some() {
        return Err(Error::Usage(
            "on a Kafka or Kinesis source --from/--to are log positions (broker time); consume does not use --time there".into(),
        ));
    }
    match (&args.format, args.envelope) {
        (Some(_), _) if sink.is_broker() => Err(Error::Usage(
            "-f writes text for people; it cannot go to Kafka or Kinesis".into(),
        )),
        (Some(f), _) => Ok(Render::Format(KcatFormat::parse(f).map_err(Error::Usage)?)),
        (None, true) => Ok(Render::Piped),
        (None, false) => Ok(Render::Value),
    }
}

/// `--from`/`--to` on NDJSON input: an event-time range of `--time`.
fn ndjson_range(args: &ConsumeArgs) -> Result<TimeRange> {
    if args.envelope || args.format.is_some() {
        return Err(Error::Usage(
            "-J and -f describe Kafka and Kinesis records; NDJSON input is written as it is".into(),
        ));
    }
    plan::ndjson_time_range(&args.input.broker, args.time.time.is_some(), "")
}

impl Command for Consume {
    type Step = ConsumeStep;

    fn open(self, restored: Option<&Restored>) -> Result<ConsumeStep> {
        // A resumed run keeps the range its first run resolved.
        let range = saved_state(restored)?.unwrap_or(self.range);
        Ok(ConsumeStep {
            sink: LineSink::open_resumed(&self.sink, restored)?,
            time: self.time,
            time_format: self.time_format,
            range,
            limit: self.limit,
            unbuffered: self.unbuffered,
            raw: self.raw,
        })
    }
}

struct ConsumeStep {
    sink: LineSink,
    /// The --time field, located by the reader thread.
    time: Option<Arc<Extractor>>,
    time_format: TimeFormat,
    range: TimeRange,
    limit: Option<u64>,
    unbuffered: bool,
    /// Records are kcat-format text, written with no newline added.
    raw: bool,
}

impl RecordStep for ConsumeStep {
    fn record(&mut self, line: &Line<'_>, counters: &mut Counters) -> Result<Flow, Fault> {
        // The reader thread has checked the line is JSON (and an object, with --time).
        if let Some(x) = &self.time {
            let time = line.time(0, x, &self.time_format)?;
            if !self.range.contains(time) {
                counters.filtered += 1;
                return Ok(Flow::Continue);
            }
        }
        if self.raw {
            self.sink.write_raw(line.bytes)?;
        } else {
            self.sink.write_record(line.bytes)?;
        }
        counters.written += 1;
        if self.unbuffered {
            self.sink.flush()?;
        }
        Ok(Flow::until_limit(self.limit, counters))
    }

    fn encoding(&self) -> Option<String> {
        self.sink.encoding()
    }

    fn idle(&mut self) -> Result<()> {
        self.sink.idle()
    }

    fn durable(&mut self) -> Result<()> {
        self.sink.flush()
    }

    fn checkpoint(&mut self, _with_state: bool) -> Result<StepCheckpoint> {
        Ok(StepCheckpoint {
            state: saved::encode(&self.range),
            sinks: self.sink.durable()?.into_iter().collect(),
        })
    }

    fn close(&mut self, _: &mut Counters) -> Result<()> {
        self.sink.close()
    }
}
