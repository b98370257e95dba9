//! `weir consume`: records from a source to a sink, unchanged, optionally by event-time range.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::cli::ConsumeArgs;
use crate::core::record::{time_of, Extractor};
use crate::core::time::{now_millis, Millis, Position, TimeFormat};
use crate::error::{Error, Result};
use crate::io::dead_letter::ErrorPolicy;
use crate::io::ndjson::{Fault, Flow, Line, Prepare, RecordStep};
use crate::io::sink::LineSink;
use crate::io::spec::SinkSpec;
use crate::stats::{Counters, Stats};

pub fn run(args: ConsumeArgs, stop: &AtomicBool) -> Result<()> {
    let mut stats = Stats::new("consume");
    let result = consume(&args, &mut stats, stop);
    super::finish(&stats, &args.report, result)
}

/// Event-time bounds `[from, to)`; `None` is open.
#[derive(Debug, Default, PartialEq, Eq)]
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

/// On NDJSON input a position can only be a time (or an open end).
fn ndjson_bound(flag: &str, text: Option<&str>, now: Millis) -> Result<Option<Millis>> {
    let Some(text) = text else { return Ok(None) };
    match Position::parse(text, now).map_err(|e| Error::Usage(format!("{flag}: {e}")))? {
        Position::Time(t) => Ok(Some(t)),
        Position::Beginning if flag == "--from" => Ok(None),
        Position::End if flag == "--to" => Ok(None),
        other => Err(Error::Usage(format!(
            "{flag} {text}: {other:?} positions need a Kafka or Kinesis source; on NDJSON input use an RFC 3339 or relative time with --time"
        ))),
    }
}

fn consume(args: &ConsumeArgs, stats: &mut Stats, stop: &AtomicBool) -> Result<()> {
    let inputs = super::ndjson_inputs(&args.input)?;
    let sink_spec = SinkSpec::parse(&args.output).map_err(Error::Usage)?;
    let now = now_millis();
    let range = TimeRange {
        from: ndjson_bound("--from", args.from.as_deref(), now)?,
        to: ndjson_bound("--to", args.to.as_deref(), now)?,
    };
    if !range.is_open() && args.time.time.is_none() {
        return Err(Error::Usage(
            "--from/--to with a time need --time FIELD on NDJSON input".into(),
        ));
    }
    let mut policy = ErrorPolicy::new(args.input.on_error, args.input.dead_letter.as_deref())?;
    let sink = LineSink::open(&sink_spec)?;
    let time = args
        .time
        .time
        .clone()
        .map(|t| Arc::new(Extractor::new(vec![t])));
    let prepare = match &time {
        Some(x) => Prepare::Extract(x.clone()),
        None => Prepare::Validate,
    };
    let mut step = ConsumeStep {
        sink,
        time,
        time_format: args.time.time_format.clone(),
        range,
        limit: args.count,
    };
    let result = if args.count == Some(0) {
        Ok(())
    } else {
        let counters = &mut stats.counters;
        super::read_records(
            inputs,
            &args.input,
            prepare,
            counters,
            &mut policy,
            stop,
            &mut step,
        )
    };
    // Flush what was written even when the run stopped on an error or a signal.
    let flushed = step.sink.flush().and(policy.flush());
    result.and(flushed)
}

struct ConsumeStep {
    sink: LineSink,
    /// The --time field, located by the reader thread.
    time: Option<Arc<Extractor>>,
    time_format: TimeFormat,
    range: TimeRange,
    limit: Option<u64>,
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
        self.sink.write_line(line.bytes)?;
        counters.written += 1;
        Ok(match self.limit {
            Some(n) if counters.written >= n => Flow::Stop,
            _ => Flow::Continue,
        })
    }

    fn idle(&mut self) -> Result<()> {
        self.sink.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_on_ndjson() {
        let now = 10_000_000;
        assert_eq!(
            ndjson_bound("--from", Some("-1s"), now).unwrap(),
            Some(now - 1000)
        );
        assert_eq!(
            ndjson_bound("--from", Some("beginning"), now).unwrap(),
            None
        );
        assert_eq!(ndjson_bound("--to", Some("end"), now).unwrap(), None);
        assert!(ndjson_bound("--from", Some("42"), now).is_err());
        assert!(ndjson_bound("--from", Some("stored"), now).is_err());
        assert!(ndjson_bound("--to", Some("beginning"), now).is_err());
    }

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
