//! `weir dedupe`: records pass through unchanged unless their id repeats within the horizon.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use crate::cli::{DedupeArgs, HorizonBy};
use crate::core::dedupe::{hash_id, DedupeCounts, Deduper, IdHash, Verdict};
use crate::core::record::{time_of, Extractor, RecordError};
use crate::core::time::{Millis, TimeFormat};
use crate::core::watermark::{PartitionIds, Watermarks, MAX_PARTITIONS};
use crate::core::window::KEY_SEPARATOR;
use crate::error::{Error, Result};
use crate::io::dead_letter::ErrorPolicy;
use crate::io::ndjson::{Fault, Flow, Line, Prepare, RecordStep};
use crate::io::sink::{LineSink, RecordFields};
use crate::io::spec::SinkSpec;
use crate::stats::{Counters, Stats};

pub fn run(args: DedupeArgs, stop: &AtomicBool) -> Result<()> {
    let mut stats = Stats::new("dedupe");
    let result = dedupe(&args, &mut stats, stop);
    super::finish(&stats, &args.report, result)
}

fn dedupe(args: &DedupeArgs, stats: &mut Stats, stop: &AtomicBool) -> Result<()> {
    let source = super::Source::parse(&args.input, false)?;
    let partition_by = source.partition_field(args.partition_by.as_ref());
    let event_time = args.horizon.is_some() && args.horizon_by == HorizonBy::Event;
    if event_time && args.time.time.is_none() {
        return Err(Error::Usage(
            "an event-time --horizon needs --time FIELD (or use --horizon-by arrival)".into(),
        ));
    }
    let mut paths = args.ids.clone();
    let time_at = args.time.time.clone().filter(|_| event_time).map(|t| {
        paths.push(t);
        paths.len() - 1
    });
    let partition_at = partition_by.clone().filter(|_| event_time).map(|p| {
        paths.push(p);
        paths.len() - 1
    });
    let extractor = Arc::new(Extractor::new(paths));
    let mut policy = ErrorPolicy::new(args.input.on_error, args.input.dead_letter.as_deref())?;
    let sink = LineSink::open_with(
        &SinkSpec::parse(&args.sink.output).map_err(Error::Usage)?,
        Some(&args.input.broker),
        RecordFields::parse(args.sink.key.as_ref(), &args.sink.headers)?,
    )?;
    let duplicates = match &args.duplicates {
        Some(path) => Some(LineSink::open(&SinkSpec::File(path.clone()))?),
        None => None,
    };
    let ids = if args.exact_ids {
        Ids::Exact(Deduper::new(args.horizon, args.max_keys))
    } else {
        Ids::Hashed(Deduper::new(args.horizon, args.max_keys))
    };
    let mut step = DedupeStep {
        ids,
        extractor: extractor.clone(),
        id_fields: args.ids.len(),
        time_at,
        time_format: args.time.time_format.clone(),
        partition_at,
        partitions: PartitionIds::default(),
        watermarks: Watermarks::new(args.delay, None),
        horizon_by: args.horizon_by,
        sink,
        duplicates,
        id: String::new(),
        seq: 0,
        started: Instant::now(),
        now: 0,
    };
    let prepare = Prepare::Extract(extractor);
    let result = super::read_records(
        source,
        &args.input,
        prepare,
        &mut stats.counters,
        &mut policy,
        stop,
        &mut step,
    );
    let counts = step.ids.counts();
    stats.counters.evicted = counts.evicted;
    stats.counters.possibly_duplicates = counts.possibly_duplicate;
    stats.counters.peak_keys = counts.peak_keys;
    let flushed = step.flush().and(policy.flush());
    result.and(flushed)
}

/// Remembered ids: hashed (the default) or as text (`--exact-ids`).
enum Ids {
    Hashed(Deduper<IdHash>),
    Exact(Deduper<Box<str>>),
}

impl Ids {
    fn check(&mut self, id: &str, t: Millis, clock: Millis) -> Verdict {
        match self {
            Ids::Hashed(d) => d.check(&hash_id(id.as_bytes()), t, clock),
            Ids::Exact(d) => d.check(&id.into(), t, clock),
        }
    }

    fn counts(&self) -> DedupeCounts {
        match self {
            Ids::Hashed(d) => d.counts(),
            Ids::Exact(d) => d.counts(),
        }
    }
}

struct DedupeStep {
    ids: Ids,
    extractor: Arc<Extractor>,
    id_fields: usize,
    time_at: Option<usize>,
    time_format: TimeFormat,
    partition_at: Option<usize>,
    partitions: PartitionIds,
    watermarks: Watermarks,
    horizon_by: HorizonBy,
    sink: LineSink,
    duplicates: Option<LineSink>,
    id: String,
    /// Records seen, the stand-in for time without --time.
    seq: Millis,
    started: Instant,
    /// Arrival time, read once per batch of records.
    now: Millis,
}

impl DedupeStep {
    fn flush(&mut self) -> Result<()> {
        self.sink.flush()?;
        if let Some(d) = &mut self.duplicates {
            d.flush()?;
        }
        Ok(())
    }

    /// The record's id text (in `self.id`), its time and partition.
    fn parse(&mut self, line: &Line<'_>) -> Result<(Millis, usize), RecordError> {
        let x = &self.extractor;
        let field = |i: usize| line.field(i).ok_or_else(|| x.missing(i, line.text()));
        self.id.clear();
        for i in 0..self.id_fields {
            let text = field(i)?;
            if text == "null" {
                return Err(RecordError::BadValue {
                    path: x.paths()[i].to_string(),
                    reason: "the id is null".into(),
                });
            }
            if self.id_fields > 1 {
                if i > 0 {
                    self.id.push(KEY_SEPARATOR);
                }
                self.id.push_str(text);
            }
        }
        // Without a time field, arrival order stands in for time, so that --max-keys
        // evicts the ids seen longest ago.
        self.seq += 1;
        let t = match self.time_at {
            Some(i) => time_of(field(i)?, &x.paths()[i], &self.time_format)?,
            None => self.seq,
        };
        let partition = match self.partition_at {
            None => 0,
            Some(i) => self
                .partitions
                .id(field(i)?)
                .ok_or_else(|| RecordError::BadValue {
                    path: x.paths()[i].to_string(),
                    reason: format!("more than {MAX_PARTITIONS} distinct partition values"),
                })?,
        };
        Ok((t, partition))
    }
}

impl RecordStep for DedupeStep {
    fn record(&mut self, line: &Line<'_>, counters: &mut Counters) -> Result<Flow, Fault> {
        let (t, partition) = self.parse(line)?;
        // One id field is read in place; several are joined in `self.id`.
        let id = match self.id_fields {
            1 => line.field(0).expect("parse found it"),
            _ => self.id.as_str(),
        };
        let verdict = match self.horizon_by {
            HorizonBy::Event => {
                let verdict = self.ids.check(id, t, self.watermarks.current());
                if self.time_at.is_some() {
                    // No idle timeout here, so the watermark never reads processing time.
                    self.watermarks.observe(partition, t, 0);
                }
                verdict
            }
            HorizonBy::Arrival => self.ids.check(id, self.now, self.now),
        };
        if verdict == Verdict::Duplicate {
            counters.duplicates += 1;
            if let Some(d) = &mut self.duplicates {
                d.write_line(line.bytes)?;
            }
        } else {
            self.sink.write_record(line.bytes)?;
            counters.written += 1;
        }
        Ok(Flow::Continue)
    }

    fn batch(&mut self) {
        self.now = self.started.elapsed().as_millis() as Millis;
    }

    fn idle(&mut self) -> Result<()> {
        // A Kafka sink is only polled here; waiting for its deliveries is for the end.
        self.sink.idle()?;
        if let Some(d) = &mut self.duplicates {
            d.flush()?;
        }
        Ok(())
    }
}
