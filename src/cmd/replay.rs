//! `weir replay`: records from a source into a sink, at a controlled pace, with envelopes
//! restored to records (key, headers, timestamp, partition).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::cli::ReplayArgs;
use crate::core::envelope::read_envelope;
use crate::core::pace::{Pace, PaceProgress, Pacer};
use crate::core::record::{as_utf8, time_of, Extractor, RecordError};
use crate::core::saved;
use crate::core::time::{now_millis, Millis, TimeFormat};
use crate::error::{Error, Fault, Result};
use crate::io::kafka::{Outgoing, Render};
use crate::io::sink::{LineSink, RecordFields, Sink, SinkPlan};
use crate::io::spec::SinkSpec;
use crate::runtime::summary::finish;
use crate::runtime::{
    limit_reached, read_records_up_to, CheckpointPlan, Counters, ErrorPolicy, Flow, Line, Prepare,
    RecordStep, Run, Stats, StepCheckpoint,
};

use super::InputPlan;

pub fn run(args: ReplayArgs, stop: &AtomicBool) -> Result<()> {
    let mut stats = Stats::new("replay");
    stats.dry_run = args.dry_run;
    let report = super::report_plan(&args.report);
    let result = Plan::new(&args).and_then(|plan| {
        super::check_files_written_at_end(&report, None)?;
        replay(plan, &mut stats, stop)
    });
    finish(&stats, &report, result)
}

/// A replay run, checked.
struct Plan {
    input: InputPlan,
    /// `None` on --dry-run.
    sink: Option<SinkPlan>,
    envelope: bool,
    keep_partition: bool,
    time: Option<Arc<Extractor>>,
    time_format: TimeFormat,
    from: Option<Millis>,
    to: Option<Millis>,
    pace: Pace,
    /// `-n`: stop after this many records sent.
    limit: Option<u64>,
    checkpoint: Option<CheckpointPlan>,
    /// What makes a checkpoint this job's: the inputs and the flags that decide the output
    /// and its pace.
    job: String,
}

/// What a replay checkpoint keeps besides positions, counters and output lengths.
#[derive(Debug, Serialize, Deserialize)]
struct ReplayState {
    /// The time range as the first run resolved it (`-1h` stays the hour it first meant).
    from: Option<Millis>,
    to: Option<Millis>,
    pace: PaceProgress,
    /// Milliseconds since the run started: a resumed run's clock goes on from here, so it
    /// keeps the pace rather than catching up in a burst or waiting the whole run again.
    elapsed: Millis,
}

impl Plan {
    fn new(args: &ReplayArgs) -> Result<Plan> {
        let input = InputPlan::new(&args.input, true)?;
        // A broker source's records reach us as envelopes.
        let envelope = args.envelope || input.is_broker();
        if args.keep_partition && !envelope {
            return Err(Error::Usage(
                "--keep-partition needs envelopes (-J, or a Kafka source)".into(),
            ));
        }
        if envelope && (args.sink.key.is_some() || !args.sink.headers.is_empty()) {
            return Err(Error::Usage(
                "envelopes carry their own key and headers; --key/--header are for plain lines"
                    .into(),
            ));
        }
        if args.speed.is_some() && !envelope && args.time.time.is_none() {
            return Err(Error::Usage(
                "--speed keeps the gaps between timestamps: give --time FIELD, or use envelopes (-J)"
                    .into(),
            ));
        }
        // On NDJSON input --from/--to are a time range, of the envelope timestamp or --time.
        let now = now_millis();
        let (from, to) = if input.is_broker() {
            (None, None)
        } else {
            super::ndjson_time_range(&args.input.broker, now)?
        };
        if (from.is_some() || to.is_some()) && !envelope && args.time.time.is_none() {
            return Err(Error::Usage(
                "--from/--to on NDJSON input need --time FIELD (or envelopes, -J)".into(),
            ));
        }
        let mut fields = RecordFields::parse(args.sink.key.as_ref(), &args.sink.headers)?;
        fields.envelope_keys = envelope;
        let sink = SinkPlan::new(
            SinkSpec::parse(&args.sink.output).map_err(Error::Usage)?,
            fields,
            super::client_options(&args.input.broker.client)?,
            super::aws_options(&args.input.broker.client),
        )?;
        if args.keep_partition && !matches!(sink.spec, SinkSpec::Kafka(_)) {
            return Err(Error::Usage(
                "--keep-partition is for a Kafka sink (-o kafka://...): a file has no partitions, and a Kinesis stream places each record by its key"
                    .into(),
            ));
        }
        let time = (!envelope)
            .then(|| args.time.time.clone())
            .flatten()
            .map(|t| Arc::new(Extractor::new(vec![t])));
        let pace = match (args.rate, args.speed) {
            (Some(r), _) => Pace::Rate(r),
            (None, Some(s)) => Pace::Speed(s),
            (None, None) => Pace::Unlimited,
        };
        if args.dry_run && args.checkpoint.checkpoint.is_some() {
            return Err(Error::Usage(
                "--dry-run writes nothing, so there is nothing to resume: leave out --checkpoint"
                    .into(),
            ));
        }
        let checkpoint = super::checkpoint_plan(&args.checkpoint, &sink.spec, false)?;
        let broker = &args.input.broker;
        let job = format!(
            "inputs {:?}, -J {}, --keep-partition {}, --time {:?} {:?}, --from {:?}, --to {:?}, --key {:?}, --header {:?}, pace {:?}, -n {:?}",
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
        );
        Ok(Plan {
            input,
            sink: (!args.dry_run).then_some(sink),
            envelope,
            keep_partition: args.keep_partition,
            time,
            time_format: args.time.time_format.clone(),
            from,
            to,
            pace,
            limit: args.count,
            checkpoint,
            job,
        })
    }
}

fn replay(plan: Plan, stats: &mut Stats, stop: &AtomicBool) -> Result<()> {
    let prepare = match &plan.time {
        Some(x) => Prepare::Extract(x.clone()),
        None => Prepare::Validate,
    };
    let (mut checkpoints, restored) =
        super::open_checkpoints(plan.checkpoint.as_ref(), "replay", &plan.job, &plan.input)?;
    let (mut from, mut to, mut pacer, mut started) =
        (plan.from, plan.to, Pacer::new(plan.pace), Instant::now());
    if let Some(r) = &restored {
        stats.counters = r.counters.clone();
        let state: ReplayState = saved::decode(&r.state).map_err(Error::Usage)?;
        (from, to) = (state.from, state.to);
        pacer = Pacer::resume(plan.pace, state.pace);
        started = super::clock_from(state.elapsed);
    }
    let source = plan
        .input
        .open_source_at(Render::Envelope, restored.as_ref())?;
    let mut policy = ErrorPolicy::open_resumed(&plan.input.policy, restored.as_ref())?;
    let sink = match &plan.sink {
        Some(sink) => Some(LineSink::open_resumed(sink, restored.as_ref())?),
        None => None,
    };
    let mut step = ReplayStep {
        sink,
        envelope: plan.envelope,
        keep_partition: plan.keep_partition,
        time: plan.time,
        time_format: plan.time_format,
        from,
        to,
        pacer,
        started,
        limit: plan.limit,
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
    // At the end of the input, and on a signal (the run stops between records, in a pace
    // wait or between chunks), the checkpoint covers everything sent.
    if let Some(c) = &mut checkpoints {
        c.take_at_end(&mut step, &mut policy, &stats.counters, &result)?;
    }
    // Every record handed to the sink is delivered (or reported) before we exit.
    let flushed = match &mut step.sink {
        Some(sink) => sink.close(),
        None => Ok(()),
    };
    result.and(flushed).and(policy.close())
}

struct ReplayStep {
    /// None on --dry-run.
    sink: Option<LineSink>,
    envelope: bool,
    keep_partition: bool,
    time: Option<Arc<Extractor>>,
    time_format: TimeFormat,
    from: Option<Millis>,
    to: Option<Millis>,
    pacer: Pacer,
    started: Instant,
    limit: Option<u64>,
}

impl ReplayStep {
    fn in_range(&self, t: Option<Millis>) -> bool {
        match t {
            None => self.from.is_none() && self.to.is_none(),
            Some(t) => self.from.is_none_or(|f| t >= f) && self.to.is_none_or(|to| t < to),
        }
    }

    /// How long before the next record (at time `t`) is due, if it is not due now. Short
    /// waits are left to add up: due times are absolute, so nothing drifts.
    fn wait_for(&mut self, t: Option<Millis>) -> Option<Duration> {
        let wait = self.pacer.wait_before(self.started.elapsed(), t);
        (wait >= Duration::from_millis(1)).then_some(wait)
    }
}

impl RecordStep for ReplayStep {
    fn durable(&mut self) -> Result<()> {
        match &mut self.sink {
            Some(sink) => sink.flush(),
            None => Ok(()),
        }
    }

    fn record(&mut self, line: &Line<'_>, counters: &mut Counters) -> Result<Flow, Fault> {
        if self.envelope {
            let text = as_utf8(line.bytes)?;
            let record = read_envelope(text).map_err(|e| RecordError::BadValue {
                path: "(envelope)".into(),
                reason: e.to_string(),
            })?;
            if !self.in_range(record.timestamp) {
                counters.filtered += 1;
                return Ok(Flow::Continue);
            }
            if let Some(wait) = self.wait_for(record.timestamp) {
                return Ok(Flow::Wait(wait));
            }
            if let Some(sink) = &mut self.sink {
                let headers: Vec<(&str, Option<&[u8]>)> = record
                    .headers
                    .iter()
                    .map(|(n, v)| (n.as_str(), v.as_deref()))
                    .collect();
                sink.send(&Outgoing {
                    value: record.value.as_deref(),
                    key: record.key.as_deref(),
                    headers: &headers,
                    timestamp: record.timestamp,
                    partition: record.partition.filter(|_| self.keep_partition),
                })?;
            }
        } else {
            let t = match &self.time {
                Some(x) => Some(match line.field(0) {
                    Some(value) => time_of(value, &x.paths()[0], &self.time_format)?,
                    None => return Err(x.missing(0, line.text()).into()),
                }),
                None => None,
            };
            if !self.in_range(t) {
                counters.filtered += 1;
                return Ok(Flow::Continue);
            }
            if let Some(wait) = self.wait_for(t) {
                return Ok(Flow::Wait(wait));
            }
            if let Some(sink) = &mut self.sink {
                sink.write_record(line.bytes)?;
            }
        }
        self.pacer.sent();
        counters.written += 1;
        Ok(if limit_reached(self.limit, counters) {
            Flow::Stop
        } else {
            Flow::Continue
        })
    }

    fn checkpoint(&mut self, _with_state: bool) -> Result<StepCheckpoint> {
        let state = ReplayState {
            from: self.from,
            to: self.to,
            pace: self.pacer.progress(),
            elapsed: self.started.elapsed().as_millis() as Millis,
        };
        let sinks = match &mut self.sink {
            Some(sink) => sink.durable()?.into_iter().collect(),
            None => Vec::new(),
        };
        Ok(StepCheckpoint {
            state: saved::encode(&state),
            sinks,
        })
    }

    fn idle(&mut self) -> Result<()> {
        match &mut self.sink {
            Some(sink) => sink.idle(),
            None => Ok(()),
        }
    }
}
