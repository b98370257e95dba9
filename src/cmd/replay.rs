//! `weir replay`: records from a source into a sink, at a controlled pace, with envelopes
//! restored to records (key, headers, timestamp, partition).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cli::ReplayArgs;
use crate::core::envelope::read_envelope;
use crate::core::pace::{Pace, Pacer};
use crate::core::record::{as_utf8, time_of, Extractor, RecordError};
use crate::core::time::{now_millis, Millis, TimeFormat};
use crate::error::{Error, Result};
use crate::io::dead_letter::ErrorPolicy;
use crate::io::kafka::Outgoing;
use crate::io::ndjson::{Fault, Flow, Line, Prepare, RecordStep};
use crate::io::sink::{LineSink, RecordFields};
use crate::io::spec::SinkSpec;
use crate::stats::{Counters, Stats};

use super::Source;

pub fn run(args: ReplayArgs, stop: &AtomicBool) -> Result<()> {
    let mut stats = Stats::new("replay");
    let result = replay(&args, &mut stats, stop);
    super::finish(&stats, &args.report, result)
}

fn replay(args: &ReplayArgs, stats: &mut Stats, stop: &AtomicBool) -> Result<()> {
    let source = Source::parse(&args.input, true)?;
    // A broker source's records reach us as envelopes.
    let envelope = args.envelope || matches!(source, Source::Kafka(_));
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
    // On NDJSON input --from/--to are a time range, of the envelope timestamp or --time.
    let now = now_millis();
    let (from, to) = match &source {
        Source::Ndjson(_) => (
            super::ndjson_time_bound("--from", args.input.broker.from.as_deref(), now)?,
            super::ndjson_time_bound("--to", args.input.broker.to.as_deref(), now)?,
        ),
        Source::Kafka(_) => (None, None),
    };
    if (from.is_some() || to.is_some()) && !envelope && args.time.time.is_none() {
        return Err(Error::Usage(
            "--from/--to on NDJSON input need --time FIELD (or envelopes, -J)".into(),
        ));
    }
    let mut policy = ErrorPolicy::new(args.input.on_error, args.input.dead_letter.as_deref())?;
    let sink_spec = SinkSpec::parse(&args.sink.output).map_err(Error::Usage)?;
    let sink = if args.dry_run {
        None
    } else {
        Some(LineSink::open_with(
            &sink_spec,
            Some(&args.input.broker),
            RecordFields::parse(args.sink.key.as_ref(), &args.sink.headers)?,
        )?)
    };
    let time = (!envelope)
        .then(|| args.time.time.clone())
        .flatten()
        .map(|t| Arc::new(Extractor::new(vec![t])));
    let prepare = match &time {
        Some(x) => Prepare::Extract(x.clone()),
        None => Prepare::Validate,
    };
    let pace = match (args.rate, args.speed) {
        (Some(r), _) => Pace::Rate(r),
        (None, Some(s)) => Pace::Speed(s),
        (None, None) => Pace::Unlimited,
    };
    let mut step = ReplayStep {
        sink,
        envelope,
        keep_partition: args.keep_partition,
        time,
        time_format: args.time.time_format.clone(),
        from,
        to,
        pacer: Pacer::new(pace),
        started: Instant::now(),
    };
    let result = super::read_records(
        source,
        &args.input,
        prepare,
        &mut stats.counters,
        &mut policy,
        stop,
        &mut step,
    );
    // Every record handed to the sink is delivered (or reported) before we exit.
    let flushed = match &mut step.sink {
        Some(sink) => sink.flush(),
        None => Ok(()),
    };
    result.and(flushed).and(policy.flush())
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
}

impl ReplayStep {
    fn in_range(&self, t: Option<Millis>) -> bool {
        match t {
            None => self.from.is_none() && self.to.is_none(),
            Some(t) => self.from.is_none_or(|f| t >= f) && self.to.is_none_or(|to| t < to),
        }
    }

    fn pace(&mut self, t: Option<Millis>) {
        let wait = self.pacer.wait_before(self.started.elapsed(), t);
        // Short waits are left to add up: due times are absolute, so nothing drifts.
        if wait >= Duration::from_millis(1) {
            std::thread::sleep(wait);
        }
    }
}

impl RecordStep for ReplayStep {
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
            self.pace(record.timestamp);
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
            self.pace(t);
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
