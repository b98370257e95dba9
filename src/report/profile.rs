//! How `weir watermark-profile` shows its report: a text report with an ASCII histogram,
//! and an SVG of the histogram and the drift series. (JSON is the report serialised.)

use std::fmt::Write as _;

use crate::core::lateness::{LogBucket, Report, Summary, MAX_BUCKETS, MAX_GROUPS};
use crate::core::time::{human_duration, Millis};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    #[default]
    Text,
    Json,
}

fn pct(share: f64) -> String {
    format!("{:.3}%", share * 100.0)
}

fn render_summary(out: &mut String, s: &Summary, by_window: bool) {
    let measure = if by_window {
        "window lateness"
    } else {
        "out-of-orderness"
    };
    let _ = writeln!(out, "  {:<8} {:>14} {:>18}", "", "lateness", measure);
    let min = s.lateness_min_ms.map(human_duration).unwrap_or_default();
    let _ = writeln!(out, "  {:<8} {:>14} {:>18}", "min", min, human_duration(0));
    for (l, o) in s.lateness.iter().zip(&s.out_of_order) {
        let label = if l.q == 100.0 {
            "max".to_string()
        } else {
            format!("p{}", l.q)
        };
        let lateness = if l.q == 100.0 {
            s.lateness_max_ms.map(human_duration).unwrap_or_default()
        } else {
            human_duration(l.ms)
        };
        let _ = writeln!(
            out,
            "  {:<8} {:>14} {:>18}",
            label,
            lateness,
            human_duration(o.ms)
        );
    }
    let _ = writeln!(
        out,
        "  negative lateness (event time after arrival, clock skew): {}",
        pct(s.negative_lateness_share)
    );
    let recs: Vec<String> = s
        .recommended
        .iter()
        .map(|r| {
            format!(
                "{}% on time: --delay {}",
                r.target,
                human_duration(r.delay_ms)
            )
        })
        .collect();
    let _ = writeln!(out, "  recommended: {}", recs.join(", "));
    let lates: Vec<String> = s
        .late_for_delay
        .iter()
        .map(|l| {
            format!(
                "--delay {}: {} late ({})",
                human_duration(l.delay_ms),
                l.late,
                pct(l.share)
            )
        })
        .collect();
    let _ = writeln!(out, "  late with {}", lates.join(", "));
}

/// The plot of `--plot`: the SVG alone, or in an HTML page.
pub fn render_plot(r: &Report, html: bool) -> String {
    let svg = render_svg(r);
    match html {
        true => format!("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>weir watermark-profile</title></head><body>\n{svg}\n</body></html>\n"),
        false => svg,
    }
}

/// The terminal report, with an ASCII histogram of lateness in log-scale buckets.
pub fn render_text(r: &Report, by: Option<&str>) -> String {
    let mut out = String::new();
    if r.interrupted {
        let _ = writeln!(
            out,
            "interrupted: this report covers the records read before the signal\n"
        );
    }
    let _ = writeln!(
        out,
        "{} records profiled, {} left out without a usable time\n",
        r.records, r.no_time
    );
    let _ = match &r.window {
        Some(window) => writeln!(
            out,
            "late counts as `window {window}` gives them: a record is late when its last window's end plus the allowed lateness is at or behind its partition's watermark\n"
        ),
        None => writeln!(
            out,
            "late counts by out-of-orderness (the largest earlier event time in the partition - the event time); give window's flags (--tumbling ...) to count as a window does\n"
        ),
    };
    let _ = writeln!(out, "overall");
    render_summary(&mut out, &r.overall, r.window.is_some());
    render_histogram(&mut out, &r.overall.lateness_histogram);
    for (group, s) in &r.groups {
        let _ = writeln!(
            out,
            "\n{} = {group} ({} records)",
            by.unwrap_or("group"),
            s.count
        );
        render_summary(&mut out, s, r.window.is_some());
    }
    if r.dropped_groups > 0 {
        let _ = writeln!(
            out,
            "\n{} records of {} values past the first {MAX_GROUPS} are in the overall profile only",
            r.dropped_groups,
            by.unwrap_or("group"),
        );
    }
    if let Some(delay) = r.drift_delay_ms {
        render_drift(&mut out, r, delay);
    }
    out
}

/// Lateness in log-scale buckets, as bars.
fn render_histogram(out: &mut String, histogram: &[LogBucket]) {
    let _ = writeln!(out, "\nlateness histogram (log scale)");
    let peak = histogram.iter().map(|b| b.count).max().unwrap_or(1).max(1);
    // Empty buckets below the first record say nothing (a day-late feed would open with
    // thirty of them); the ones between records show the gaps and stay.
    let first = histogram.iter().position(|b| b.count > 0).unwrap_or(0);
    for b in &histogram[first..] {
        let bar = "#".repeat(((b.count as f64 / peak as f64) * 40.0).ceil() as usize);
        let range = format!(
            "[{}, {})",
            human_duration(b.from_ms as Millis),
            human_duration(b.to_ms as Millis)
        );
        let _ = writeln!(out, "  {range:>22} {bar:<40} {}", b.count);
    }
}

/// The event-time buckets whose late share at `delay` jumps.
fn render_drift(out: &mut String, r: &Report, delay: Millis) {
    let flagged: Vec<_> = r.drift.iter().filter(|d| d.flagged).collect();
    let _ = writeln!(
        out,
        "\ndrift: late share at --delay {} per event-time bucket; {} bucket(s) jump",
        human_duration(delay),
        flagged.len()
    );
    if r.dropped_buckets > 0 {
        let _ = writeln!(
            out,
            "  {} records in buckets past the first {MAX_BUCKETS} are left out of it",
            r.dropped_buckets
        );
    }
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
            human_duration(b.from_ms as Millis),
            human_duration(b.to_ms as Millis),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::lateness::Profile;

    #[test]
    fn the_text_report_counts_what_its_bounds_left_out() {
        let mut p = Profile::new(vec![10_000], vec![], 1);
        let quiet = render_text(&p.report(0), Some("client"));
        assert!(!quiet.contains("past the first"), "{quiet}");
        // One record per group and per 1 ms bucket, past both bounds.
        let n = MAX_BUCKETS + 5;
        for i in 0..n {
            p.record(Some(&format!("c{i}")), i as Millis, i as Millis, 0);
        }
        let text = render_text(&p.report(0), Some("client"));
        let groups = format!(
            "{} records of client values past the first {MAX_GROUPS} are in the overall profile only",
            n - MAX_GROUPS
        );
        assert!(text.contains(&groups), "{groups}");
        let buckets =
            format!("  5 records in buckets past the first {MAX_BUCKETS} are left out of it");
        assert!(text.contains(&buckets), "{buckets}");
    }

    #[test]
    fn the_text_histogram_opens_at_the_first_bucket_with_records() {
        let mut p = Profile::new(vec![], vec![], 60_000);
        // A day late, and a gap of empty buckets between the two records.
        for lateness in [86_400_000, 4 * 86_400_000] {
            p.record(None, 0, lateness, 0);
        }
        let text = render_text(&p.report(0), None);
        let bars: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("lateness histogram"))
            .skip(1)
            .take_while(|l| l.trim_start().starts_with('['))
            .collect();
        // 2^26 ms (18h38m29s, printed rounded up) <= 1 day < 2^27 ms; 2^28 ms <= 4 days < 2^29 ms.
        assert!(bars[0].trim_start().starts_with("[18h39m,"), "{bars:?}");
        assert!(bars[0].ends_with(" 1"), "{bars:?}");
        assert_eq!(bars.len(), 3, "{bars:?}");
        assert!(
            bars[1].ends_with(" 0") && bars[2].ends_with(" 1"),
            "{bars:?}"
        );
    }
}
