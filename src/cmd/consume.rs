//! `weir consume`: records from a source to a sink, unchanged, optionally by event-time range.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::cli::ConsumeArgs;
use crate::core::envelope::{write_envelope, write_value_line, KcatFormat};
use crate::core::record::{time_of, Extractor, Position as RecordPosition};
use crate::core::time::{now_millis, Millis, TimeFormat};
use crate::error::{Error, Result};
use crate::io::dead_letter::ErrorPolicy;
use crate::io::kafka::{self, KafkaSource, Polled};
use crate::io::ndjson::{Fault, Flow, Line, Prepare, RecordStep};
use crate::io::sink::{LineSink, RecordFields, SinkFault};
use crate::io::spec::{Input, KafkaSpec, SinkSpec};
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

fn consume(args: &ConsumeArgs, stats: &mut Stats, stop: &AtomicBool) -> Result<()> {
    match super::Source::parse(&args.input, true)? {
        super::Source::Ndjson(inputs) => consume_ndjson(args, inputs, stats, stop),
        super::Source::Kafka(spec) => consume_kafka(args, &spec, stats, stop),
    }
}

fn open_sink(args: &ConsumeArgs) -> Result<LineSink> {
    let spec = SinkSpec::parse(&args.sink.output).map_err(Error::Usage)?;
    let fields = RecordFields::parse(args.sink.key.as_ref(), &args.sink.headers)?;
    LineSink::open_with(&spec, Some(&args.input.broker), fields)
}

fn consume_ndjson(
    args: &ConsumeArgs,
    inputs: Vec<Input>,
    stats: &mut Stats,
    stop: &AtomicBool,
) -> Result<()> {
    if args.envelope || args.format.is_some() {
        return Err(Error::Usage(
            "-J and -f describe Kafka records; NDJSON input is written as it is".into(),
        ));
    }
    let now = now_millis();
    let broker = &args.input.broker;
    let range = TimeRange {
        from: super::ndjson_time_bound("--from", broker.from.as_deref(), now)?,
        to: super::ndjson_time_bound("--to", broker.to.as_deref(), now)?,
    };
    if !range.is_open() && args.time.time.is_none() {
        return Err(Error::Usage(
            "--from/--to with a time need --time FIELD on NDJSON input".into(),
        ));
    }
    let mut policy = ErrorPolicy::new(args.input.on_error, args.input.dead_letter.as_deref())?;
    let sink = open_sink(args)?;
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
        unbuffered: args.unbuffered,
    };
    let result = if args.count == Some(0) {
        Ok(())
    } else {
        let counters = &mut stats.counters;
        super::read_records(
            super::Source::Ndjson(inputs),
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

/// How a Kafka record is written.
enum Render {
    Value,
    Envelope,
    Format(KcatFormat),
}

fn consume_kafka(
    args: &ConsumeArgs,
    spec: &KafkaSpec,
    stats: &mut Stats,
    stop: &AtomicBool,
) -> Result<()> {
    if args.time.time.is_some() {
        return Err(Error::Usage(
            "on a Kafka source --from/--to are log positions (broker time); consume does not use --time there".into(),
        ));
    }
    let render = match (&args.format, args.envelope) {
        (Some(f), _) => Render::Format(KcatFormat::parse(f).map_err(Error::Usage)?),
        (None, true) => Render::Envelope,
        (None, false) => Render::Value,
    };
    let mut policy = ErrorPolicy::new(args.input.on_error, args.input.dead_letter.as_deref())?;
    let mut sink = open_sink(args)?;
    if matches!(render, Render::Format(_)) && sink.is_kafka() {
        return Err(Error::Usage(
            "-f writes text for people; it cannot go to Kafka".into(),
        ));
    }
    let mut source = KafkaSource::open(spec, &super::source_options(&args.input.broker))?;
    source.show_progress(source.total.and_then(super::record_progress));
    let result = consume_records(
        args,
        &render,
        &mut source,
        &mut sink,
        &mut policy,
        stats,
        stop,
    );
    let committed = source.finish();
    let flushed = sink.flush().and(policy.flush());
    result.and(flushed).and(committed)
}

fn consume_records(
    args: &ConsumeArgs,
    render: &Render,
    source: &mut KafkaSource,
    sink: &mut LineSink,
    policy: &mut ErrorPolicy,
    stats: &mut Stats,
    stop: &AtomicBool,
) -> Result<()> {
    let counters = &mut stats.counters;
    let mut line = Vec::with_capacity(64 * 1024);
    let topic = source.topic.clone();
    while args.count.is_none_or(|n| counters.written < n) {
        if stop.load(Ordering::Relaxed) {
            return Err(Error::Interrupted);
        }
        let (partition, offset) = match source.poll()? {
            Polled::End => break,
            Polled::Idle => {
                // Nothing ready: hand on what was written, then wait a little.
                sink.idle()?;
                continue;
            }
            Polled::Record(m) => {
                let message = kafka::message(&m, &topic);
                counters.read += 1;
                counters.bytes_read += (m.payload_len() + m.key_len()) as u64;
                line.clear();
                match render {
                    Render::Value => write_value_line(&mut line, message.value),
                    Render::Envelope => write_envelope(&mut line, &message),
                    Render::Format(f) => f.write(&mut line, &message),
                }
                (message.partition, message.offset)
            }
        };
        let written = match render {
            Render::Format(_) => sink.write_raw(&line).map_err(SinkFault::Fatal),
            _ => sink.write_record(&line),
        };
        match written {
            Ok(()) => counters.written += 1,
            Err(SinkFault::Fatal(e)) => return Err(e),
            Err(SinkFault::Record(e)) => {
                let position = RecordPosition::Kafka {
                    topic: topic.clone(),
                    partition,
                    offset,
                };
                policy.handle(&position, &line, &e, counters)?;
            }
        }
        if args.unbuffered {
            sink.flush()?;
        }
        source.done(partition, offset);
    }
    Ok(())
}

struct ConsumeStep {
    sink: LineSink,
    /// The --time field, located by the reader thread.
    time: Option<Arc<Extractor>>,
    time_format: TimeFormat,
    range: TimeRange,
    limit: Option<u64>,
    unbuffered: bool,
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
        self.sink.write_record(line.bytes)?;
        counters.written += 1;
        if self.unbuffered {
            self.sink.flush()?;
        }
        Ok(match self.limit {
            Some(n) if counters.written >= n => Flow::Stop,
            _ => Flow::Continue,
        })
    }

    fn idle(&mut self) -> Result<()> {
        self.sink.idle()
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
