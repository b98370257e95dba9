//! `weir consume`: records from a source to a sink, unchanged, optionally by event-time range.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::cli::ConsumeArgs;
use crate::core::envelope::KcatFormat;
use crate::core::record::{time_of, Extractor};
use crate::core::saved;
use crate::core::time::{now_millis, Millis, TimeFormat};
use crate::error::{Error, Fault, Result};
use crate::io::kafka::Render;
use crate::io::sink::{LineSink, RecordFields, Sink, SinkPlan};
use crate::io::spec::SinkSpec;
use crate::runtime::summary::finish;
use crate::runtime::{
    limit_reached, read_records_up_to, CheckpointPlan, Counters, ErrorPolicy, Flow, Line, Prepare,
    RecordStep, Run, Stats, StepCheckpoint,
};

use super::InputPlan;

pub fn run(args: ConsumeArgs, stop: &AtomicBool) -> Result<()> {
    let mut stats = Stats::new("consume");
    let report = super::report_plan(&args.report);
    let result = Plan::new(&args).and_then(|plan| {
        super::check_files_written_at_end(&report, None)?;
        consume(plan, &mut stats, stop)
    });
    finish(&stats, &report, result)
}

/// Event-time bounds `[from, to)`; `None` is open.
#[derive(Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct TimeRange {
    from: Option<Millis>,
    to: Option<Millis>,
}

impl TimeRange {
    fn contains(&self, t: Millis) -> bool {
        self.from.is_none_or(|f| t >= f) && self.to.is_none_or(|to| t < to)
    }

    fn is_open(&self) -> bool {
        self.from.is_none() && self.to.is_none()
    }
}

/// A consume run, checked.
struct Plan {
    input: InputPlan,
    sink: SinkPlan,
    /// How a broker record is written (NDJSON lines are written as they are).
    render: Render,
    /// NDJSON input: the --time field and the event-time range it is kept to.
    time: Option<Arc<Extractor>>,
    time_format: TimeFormat,
    range: TimeRange,
    limit: Option<u64>,
    unbuffered: bool,
    checkpoint: Option<CheckpointPlan>,
    /// What makes a checkpoint this job's: the inputs and the flags that decide the output.
    job: String,
}

impl Plan {
    fn new(args: &ConsumeArgs) -> Result<Plan> {
        let input = InputPlan::new(&args.input, true)?;
        let sink = SinkPlan::new(
            SinkSpec::parse(&args.sink.output).map_err(Error::Usage)?,
            RecordFields::parse(args.sink.key.as_ref(), &args.sink.headers)?,
            super::client_options(&args.input.broker.client)?,
            super::aws_options(&args.input.broker.client),
        )?;
        let mut range = TimeRange::default();
        let render = if input.is_broker() {
            if args.time.time.is_some() {
                return Err(Error::Usage(
                    "on a Kafka or Kinesis source --from/--to are log positions (broker time); consume does not use --time there".into(),
                ));
            }
            match (&args.format, args.envelope) {
                (Some(_), _) if sink.is_broker() => {
                    return Err(Error::Usage(
                        "-f writes text for people; it cannot go to Kafka or Kinesis".into(),
                    ))
                }
                (Some(f), _) => Render::Format(KcatFormat::parse(f).map_err(Error::Usage)?),
                (None, true) => Render::Envelope,
                (None, false) => Render::Value,
            }
        } else {
            if args.envelope || args.format.is_some() {
                return Err(Error::Usage(
                    "-J and -f describe Kafka and Kinesis records; NDJSON input is written as it is".into(),
                ));
            }
            let now = now_millis();
            let broker = &args.input.broker;
            let (from, to) = super::ndjson_time_range(broker, now)?;
            range = TimeRange { from, to };
            if !range.is_open() && args.time.time.is_none() {
                return Err(Error::Usage(
                    "--from/--to with a time need --time FIELD on NDJSON input".into(),
                ));
            }
            Render::Value
        };
        let time = (!input.is_broker())
            .then(|| args.time.time.clone())
            .flatten()
            .map(|t| Arc::new(Extractor::new(vec![t])));
        let checkpoint = super::checkpoint_plan(&args.checkpoint, &sink.spec, false)?;
        let broker = &args.input.broker;
        // The range as the flags say it (`-1h` stays `-1h`): a resumed run keeps the bounds
        // its first run resolved, which the checkpoint holds.
        let job = format!(
            "inputs {:?}, --time {:?} {:?}, --from {:?}, --to {:?}, -n {:?}",
            input.job_source(),
            args.time.time.as_ref().map(|t| t.as_str()),
            args.time.time_format,
            broker.from,
            broker.to,
            args.count,
        );
        Ok(Plan {
            input,
            sink,
            render,
            time,
            time_format: args.time.time_format.clone(),
            range,
            limit: args.count,
            unbuffered: args.unbuffered,
            checkpoint,
            job,
        })
    }
}

fn consume(plan: Plan, stats: &mut Stats, stop: &AtomicBool) -> Result<()> {
    let prepare = match (&plan.time, plan.input.is_broker()) {
        // A broker record was rendered by the source: written as it is.
        (_, true) => Prepare::AsIs,
        (Some(x), false) => Prepare::Extract(x.clone()),
        (None, false) => Prepare::Validate,
    };
    let raw = matches!(plan.render, Render::Format(_));
    let (mut checkpoints, restored) =
        super::open_checkpoints(plan.checkpoint.as_ref(), "consume", &plan.job, &plan.input)?;
    let mut range = plan.range;
    if let Some(r) = &restored {
        stats.counters = r.counters.clone();
        range = saved::decode(&r.state).map_err(Error::Usage)?;
    }
    let source = plan.input.open_source_at(plan.render, restored.as_ref())?;
    let mut policy = ErrorPolicy::open_resumed(&plan.input.policy, restored.as_ref())?;
    let mut step = ConsumeStep {
        sink: LineSink::open_resumed(&plan.sink, restored.as_ref())?,
        time: plan.time,
        time_format: plan.time_format,
        range,
        limit: plan.limit,
        unbuffered: plan.unbuffered,
        raw,
    };
    let run = Run {
        source,
        prepare,
        max_line_bytes: plan.input.max_line_bytes,
        counters: &mut stats.counters,
        policy: &mut policy,
        stop,
    };
    let result = read_records_up_to(plan.limit, run, &mut step, checkpoints.as_mut());
    // At the end of the input, and on a signal, the checkpoint covers everything handled.
    if let Some(c) = &mut checkpoints {
        c.take_at_end(&mut step, &mut policy, &stats.counters, &result)?;
    }
    // Flush what was written even when the run stopped on an error or a signal.
    let flushed = step.sink.close().and(policy.close());
    result.and(flushed)
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
            let time = match line.field(0) {
                Some(value) => time_of(value, &x.paths()[0], &self.time_format)?,
                None => return Err(x.missing(0, line.text()).into()),
            };
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
        Ok(if limit_reached(self.limit, counters) {
            Flow::Stop
        } else {
            Flow::Continue
        })
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_is_half_open() {
        let r = TimeRange {
            from: Some(10),
            to: Some(20),
        };
        assert!(!r.contains(9));
        assert!(r.contains(10));
        assert!(r.contains(19));
        assert!(!r.contains(20));
        assert!(TimeRange::default().contains(i64::MIN));
    }
}
