//! `weir replay`: records from a source into a sink, at a controlled pace, with envelopes
//! restored to records (key, headers, timestamp, partition).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cli::ReplayArgs;
use crate::core::envelope::read_envelope;
use crate::core::pace::{Pace, Pacer};
use crate::core::record::{as_utf8, time_of, Extractor, RecordError};
use crate::core::time::{now_millis, Millis, TimeFormat};
use crate::error::{Error, Fault, Result};
use crate::io::kafka::{Outgoing, Render};
use crate::io::sink::{LineSink, RecordFields, Sink, SinkPlan};
use crate::io::spec::SinkSpec;
use crate::runtime::summary::finish;
use crate::runtime::{
    read_records, Counters, ErrorPolicy, Flow, Line, Prepare, RecordStep, Run, Stats,
};

use super::InputPlan;

pub fn run(args: ReplayArgs, stop: &AtomicBool) -> Result<()> {
    let mut stats = Stats::new("replay");
    let report = super::report_plan(&args.report);
    let result = Plan::new(&args).and_then(|plan| replay(plan, &mut stats, stop));
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
            (
                super::ndjson_time_bound("--from", args.input.broker.from.as_deref(), now)?,
                super::ndjson_time_bound("--to", args.input.broker.to.as_deref(), now)?,
            )
        };
        if (from.is_some() || to.is_some()) && !envelope && args.time.time.is_none() {
            return Err(Error::Usage(
                "--from/--to on NDJSON input need --time FIELD (or envelopes, -J)".into(),
            ));
        }
        let sink = SinkPlan::new(
            SinkSpec::parse(&args.sink.output).map_err(Error::Usage)?,
            RecordFields::parse(args.sink.key.as_ref(), &args.sink.headers)?,
            super::client_options(&args.input.broker.client)?,
        )?;
        let time = (!envelope)
            .then(|| args.time.time.clone())
            .flatten()
            .map(|t| Arc::new(Extractor::new(vec![t])));
        let pace = match (args.rate, args.speed) {
            (Some(r), _) => Pace::Rate(r),
            (None, Some(s)) => Pace::Speed(s),
            (None, None) => Pace::Unlimited,
        };
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
        })
    }
}

fn replay(plan: Plan, stats: &mut Stats, stop: &AtomicBool) -> Result<()> {
    let prepare = match &plan.time {
        Some(x) => Prepare::Extract(x.clone()),
        None => Prepare::Validate,
    };
    let source = plan.input.open_source(Render::Envelope)?;
    let mut policy = ErrorPolicy::open(&plan.input.policy)?;
    let sink = match &plan.sink {
        Some(sink) => Some(LineSink::open(sink)?),
        None => None,
    };
    let mut step = ReplayStep {
        sink,
        envelope: plan.envelope,
        keep_partition: plan.keep_partition,
        time: plan.time,
        time_format: plan.time_format,
        from: plan.from,
        to: plan.to,
        pacer: Pacer::new(plan.pace),
        started: Instant::now(),
        stop,
    };
    let run = Run {
        source,
        prepare,
        max_line_bytes: plan.input.max_line_bytes,
        counters: &mut stats.counters,
        policy: &mut policy,
        stop,
    };
    let result = read_records(run, &mut step);
    // Every record handed to the sink is delivered (or reported) before we exit.
    let flushed = match &mut step.sink {
        Some(sink) => sink.flush(),
        None => Ok(()),
    };
    result.and(flushed).and(policy.flush())
}

struct ReplayStep<'a> {
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
    /// Read between slices of a pace wait: a paced replay may sleep for hours.
    stop: &'a AtomicBool,
}

/// The longest a pace wait sleeps before it looks at the stop flag again.
const STOP_CHECK: Duration = Duration::from_millis(20);

impl ReplayStep<'_> {
    fn in_range(&self, t: Option<Millis>) -> bool {
        match t {
            None => self.from.is_none() && self.to.is_none(),
            Some(t) => self.from.is_none_or(|f| t >= f) && self.to.is_none_or(|to| t < to),
        }
    }

    /// Waits until the next record is due. Before a wait the sink is flushed, so a slow
    /// replay's records show as they are sent; a signal ends the wait at once.
    fn pace(&mut self, t: Option<Millis>) -> Result<(), Fault> {
        let wait = self.pacer.wait_before(self.started.elapsed(), t);
        // Short waits are left to add up: due times are absolute, so nothing drifts.
        if wait < Duration::from_millis(1) {
            return Ok(());
        }
        self.idle()?;
        let until = Instant::now() + wait.min(Duration::from_secs(86_400 * 365));
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Err(Fault::Fatal(Error::Interrupted));
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            std::thread::sleep(left.min(STOP_CHECK));
        }
    }
}

impl RecordStep for ReplayStep<'_> {
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
            self.pace(record.timestamp)?;
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
            self.pace(t)?;
            if let Some(sink) = &mut self.sink {
                sink.write_record(line.bytes)?;
            }
        }
        counters.written += 1;
        Ok(Flow::Continue)
    }

    fn idle(&mut self) -> Result<()> {
        match &mut self.sink {
            Some(sink) => sink.idle(),
            None => Ok(()),
        }
    }
}
