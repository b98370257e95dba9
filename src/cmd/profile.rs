//! `weir watermark-profile`: lateness and out-of-orderness distributions, and the watermark
//! delay that would cover them.

use std::fmt::Write as _;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use crate::cli::{ProfileArgs, ReportFormat};
use crate::core::lateness::{Profile, Report, Summary};
use crate::core::record::{time_of, Extractor, Scalar};
use crate::core::time::{now_millis, Millis, TimeFormat};
use crate::core::watermark::{PartitionIds, MAX_PARTITIONS};
use crate::error::{Error, Result};
use crate::io::dead_letter::ErrorPolicy;
use crate::io::ndjson::{Fault, Flow, Line, Prepare, RecordStep};
use crate::io::sink::LineSink;
use crate::io::spec::SinkSpec;
use crate::stats::{Counters, Stats};

pub fn run(args: ProfileArgs, stop: &AtomicBool) -> Result<()> {
    let mut stats = Stats::new("watermark-profile");
    let result = profile(&args, &mut stats, stop);
    super::finish(&stats, &args.report, result)
}

fn profile(args: &ProfileArgs, stats: &mut Stats, stop: &AtomicBool) -> Result<()> {
    let time = args
        .time
        .time
        .clone()
        .ok_or_else(|| Error::Usage("weir watermark-profile needs --time FIELD".into()))?;
    let source = super::Source::parse(&args.input, false)?;
    let partition_by = source.partition_field(args.partition_by.as_ref());
    if let Some(t) = args.target.iter().find(|t| !(**t > 0.0 && **t <= 100.0)) {
        return Err(Error::Usage(format!(
            "--target {t}: targets are percentages in (0, 100]"
        )));
    }
    let mut paths = vec![time];
    let mut push = |p: &Option<crate::core::record::FieldPath>| {
        p.clone().map(|p| {
            paths.push(p);
            paths.len() - 1
        })
    };
    // A broker source's records carry their broker timestamp: the arrival time there.
    let arrival = args
        .arrival
        .clone()
        .or_else(|| source.broker_timestamp_field());
    let arrival_at = push(&arrival);
    let by_at = push(&args.by);
    let partition_at = push(&partition_by);
    let extractor = Arc::new(Extractor::new(paths));
    let mut policy = ErrorPolicy::new(args.input.on_error, args.input.dead_letter.as_deref())?;
    let mut sink = LineSink::open(&SinkSpec::parse(&args.output).map_err(Error::Usage)?)?;
    let mut step = ProfileStep {
        profile: Profile::new(args.delay.clone(), args.target.clone(), args.bucket),
        extractor: extractor.clone(),
        time_format: args.time.time_format.clone(),
        arrival_at,
        by_at,
        partition_at,
        partitions: PartitionIds::default(),
        max_seen: Vec::new(),
        no_time: 0,
        read_time: 0,
    };
    let prepare = Prepare::Extract(extractor);
    super::read_records(
        source,
        &args.input,
        prepare,
        &mut stats.counters,
        &mut policy,
        stop,
        &mut step,
    )?;
    policy.flush()?;
    let report = step.profile.report(step.no_time);
    let text = match args.format {
        ReportFormat::Json => serde_json::to_string_pretty(&report).expect("report serialises"),
        ReportFormat::Text => render_text(&report, args.by.as_ref().map(|b| b.as_str())),
    };
    sink.write_line(text.trim_end().as_bytes())?;
    sink.flush()?;
    stats.counters.written = 1;
    if let Some(path) = &args.plot {
        let svg = render_svg(&report);
        let html = path.extension().is_some_and(|e| e == "html" || e == "htm");
        let body = if html {
            format!("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>weir watermark-profile</title></head><body>\n{svg}\n</body></html>\n")
        } else {
            svg
        };
        std::fs::write(path, body).map_err(|e| Error::write(&path.display().to_string(), e))?;
    }
    Ok(())
}

struct ProfileStep {
    profile: Profile,
    extractor: Arc<Extractor>,
    time_format: TimeFormat,
    arrival_at: Option<usize>,
    by_at: Option<usize>,
    partition_at: Option<usize>,
    partitions: PartitionIds,
    /// Largest event time seen per partition.
    max_seen: Vec<Millis>,
    no_time: u64,
    /// Read time (the arrival time without --arrival), once per batch of records.
    read_time: Millis,
}

impl RecordStep for ProfileStep {
    fn batch(&mut self) {
        self.read_time = now_millis();
    }

    fn record(&mut self, line: &Line<'_>, _: &mut Counters) -> Result<Flow, Fault> {
        let x = &self.extractor;
        let time_at = |i: usize| {
            line.field(i)
                .and_then(|raw| time_of(raw, &x.paths()[i], &self.time_format).ok())
        };
        let event = time_at(0);
        let arrival = match self.arrival_at {
            Some(i) => time_at(i),
            None => Some(self.read_time),
        };
        let (Some(event), Some(arrival)) = (event, arrival) else {
            // Counted in the report: a profile measures what it can.
            self.no_time += 1;
            return Ok(Flow::Continue);
        };
        // Past MAX_PARTITIONS values, the rest share the last one: a profile measures on.
        let partition = match self.partition_at.and_then(|i| line.field(i)) {
            None => 0,
            Some(value) => self.partitions.id(value).unwrap_or(MAX_PARTITIONS - 1),
        };
        if partition >= self.max_seen.len() {
            self.max_seen.resize(partition + 1, Millis::MIN);
        }
        let max = &mut self.max_seen[partition];
        let out_of_order = if *max == Millis::MIN {
            0
        } else {
            max.saturating_sub(event).max(0)
        };
        *max = (*max).max(event);
        let group = self
            .by_at
            .map(|i| match line.field(i).map(Scalar::from_raw) {
                Some(Scalar::Str(s)) => s.into_owned(),
                Some(_) => line.field(i).unwrap_or("null").to_string(),
                None => "(missing)".to_string(),
            });
        self.profile
            .record(group.as_deref(), event, arrival, out_of_order);
        Ok(Flow::Continue)
    }

    fn idle(&mut self) -> Result<()> {
        Ok(())
    }
}

/// `1.2s`, `45s`, `2h 3m`: durations as people read them (rounded to what matters).
fn human(ms: Millis) -> String {
    if ms < 0 {
        return format!("-{}", human(-ms));
    }
    let rounded = if ms >= 60_000 { ms / 1000 * 1000 } else { ms };
    humantime::format_duration(Duration::from_millis(rounded as u64)).to_string()
}

fn pct(share: f64) -> String {
    format!("{:.3}%", share * 100.0)
}

fn render_summary(out: &mut String, s: &Summary) {
    let _ = writeln!(
        out,
        "  {:<8} {:>14} {:>18}",
        "", "lateness", "out-of-orderness"
    );
    let min = s.lateness_min_ms.map(human).unwrap_or_default();
    let _ = writeln!(out, "  {:<8} {:>14} {:>18}", "min", min, human(0));
    for (l, o) in s.lateness.iter().zip(&s.out_of_order) {
        let label = if l.q == 100.0 {
            "max".to_string()
        } else {
            format!("p{}", l.q)
        };
        let lateness = if l.q == 100.0 {
            s.lateness_max_ms.map(human).unwrap_or_default()
        } else {
            human(l.ms)
        };
        let _ = writeln!(out, "  {:<8} {:>14} {:>18}", label, lateness, human(o.ms));
    }
    let _ = writeln!(
        out,
        "  negative lateness (event time after arrival, clock skew): {}",
        pct(s.negative_lateness_share)
    );
    let recs: Vec<String> = s
        .recommended
        .iter()
        .map(|r| format!("{}% on time: --delay {}", r.target, human(r.delay_ms)))
        .collect();
    let _ = writeln!(out, "  recommended: {}", recs.join(", "));
    let lates: Vec<String> = s
        .late_for_delay
        .iter()
        .map(|l| {
            format!(
                "--delay {}: {} late ({})",
                human(l.delay_ms),
                l.late,
                pct(l.share)
            )
        })
        .collect();
    let _ = writeln!(out, "  late with {}", lates.join(", "));
}

/// The terminal report, with an ASCII histogram of lateness in log-scale buckets.
fn render_text(r: &Report, by: Option<&str>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} records, {} without a usable time\n",
        r.records, r.no_time
    );
    let _ = writeln!(out, "overall");
    render_summary(&mut out, &r.overall);
    let _ = writeln!(out, "\nlateness histogram (log scale)");
    let peak = r
        .overall
        .lateness_histogram
        .iter()
        .map(|b| b.count)
        .max()
        .unwrap_or(1)
        .max(1);
    for b in &r.overall.lateness_histogram {
        let bar = "#".repeat(((b.count as f64 / peak as f64) * 40.0).ceil() as usize);
        let range = format!(
            "[{}, {})",
            human(b.from_ms as Millis),
            human(b.to_ms as Millis)
        );
        let _ = writeln!(out, "  {range:>22} {bar:<40} {}", b.count);
    }
    for (group, s) in &r.groups {
        let _ = writeln!(
            out,
            "\n{} = {group} ({} records)",
            by.unwrap_or("group"),
            s.count
        );
        render_summary(&mut out, s);
    }
    if let Some(delay) = r.drift_delay_ms {
        let flagged: Vec<_> = r.drift.iter().filter(|d| d.flagged).collect();
        let _ = writeln!(
            out,
            "\ndrift: late share at --delay {} per event-time bucket; {} bucket(s) jump",
            human(delay),
            flagged.len()
        );
        for d in flagged {
            let _ = writeln!(
                out,
                "  {}  {} of {} late ({})  <- jump",
                d.bucket_start,
                d.late,
                d.count,
                pct(d.late_share)
            );
        }
    }
    out
}

/// An SVG of the lateness histogram (bars) and the drift series (bars, jumps in red).
pub fn render_svg(r: &Report) -> String {
    let (w, h, pad) = (800.0, 260.0, 40.0);
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{}" font-family="sans-serif" font-size="11">"#,
        2.0 * h
    );
    let bars = &r.overall.lateness_histogram;
    let peak = bars.iter().map(|b| b.count).max().unwrap_or(1).max(1) as f64;
    let _ = writeln!(
        svg,
        r#"<text x="{pad}" y="20">lateness (log-scale buckets), {} records</text>"#,
        r.records
    );
    let bw = (w - 2.0 * pad) / bars.len().max(1) as f64;
    for (i, b) in bars.iter().enumerate() {
        let bh = (b.count as f64 / peak) * (h - 2.0 * pad);
        let x = pad + i as f64 * bw;
        let _ = writeln!(
            svg,
            r#"<rect class="bar" x="{x:.1}" y="{:.1}" width="{:.1}" height="{bh:.1}" fill="steelblue"><title>[{}, {}): {}</title></rect>"#,
            h - pad - bh,
            (bw - 2.0).max(1.0),
            human(b.from_ms as Millis),
            human(b.to_ms as Millis),
            b.count
        );
    }
    let drift = &r.drift;
    let _ = writeln!(
        svg,
        r#"<text x="{pad}" y="{}">late share per event-time bucket (jumps in red)</text>"#,
        h + 20.0
    );
    let dpeak = drift
        .iter()
        .map(|d| d.late_share)
        .fold(0.0, f64::max)
        .max(1e-9);
    let dw = (w - 2.0 * pad) / drift.len().max(1) as f64;
    for (i, d) in drift.iter().enumerate() {
        let dh = d.late_share / dpeak * (h - 2.0 * pad);
        let color = if d.flagged { "crimson" } else { "gray" };
        let _ = writeln!(
            svg,
            r#"<rect class="drift" x="{:.1}" y="{:.1}" width="{:.1}" height="{dh:.1}" fill="{color}"><title>{}: {}</title></rect>"#,
            pad + i as f64 * dw,
            2.0 * h - pad - dh,
            dw.max(0.5),
            d.bucket_start,
            pct(d.late_share)
        );
    }
    svg.push_str("</svg>\n");
    svg
}
