//! How `weir watermark-profile` shows its report: a text report with an ASCII histogram,
//! and an SVG of the histogram and the drift series. (JSON is the report serialised.)

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::core::lateness::{LogBucket, Report, Summary, MAX_BUCKETS, MAX_GROUPS};
use crate::core::partitioned::Tasks;
use crate::core::profile_task::{self, Task};
use crate::core::record::FieldPath;
use crate::core::time::{human_duration, Millis};
use crate::error::{Error, Result};
use crate::io::sink::LineSink;
use crate::runtime::Sink;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    #[default]
    Text,
    Json,
}

fn pct(share: f64) -> String {
    format!("{:.3}%", share * 100.0)
}

/// The delays tried, as `--delay` takes them: `0s,1s,2s,...`.
fn tried(delays: &[Millis]) -> String {
    let all: Vec<String> = delays.iter().map(|d| human_duration(*d)).collect();
    all.join(",")
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
            let more = if r.above_tried { "more than " } else { "" };
            format!(
                "{}% on time: --delay {more}{}",
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

/// How the report is shown: its groups' name, its format, the plot, and what it measured.
pub struct Shown {
    pub by: Option<FieldPath>,
    pub format: ReportFormat,
    pub plot: Option<PathBuf>,
    /// The window flags the late counts follow.
    pub window: Option<String>,
    /// The arrival time is when weir reads a record (no --arrival, no broker timestamp).
    pub read_time: bool,
}

/// Where a profile's report goes, and how it is shown.
pub struct ReportOut {
    pub sink: LineSink,
    pub shown: Shown,
}

impl ReportOut {
    /// Writes the report of `tasks` (a group member's partitions, each profiled apart, as
    /// one), and its plot with `--plot`.
    pub fn write(&mut self, tasks: &mut Tasks<Task>, interrupted: bool) -> Result<()> {
        let mut report = profile_task::report(tasks);
        report.interrupted = interrupted;
        report.window = self.shown.window.clone();
        report.arrival_is_read_time = self.shown.read_time;
        let by = self.shown.by.as_ref().map(|b| b.as_str());
        let text = match self.shown.format {
            ReportFormat::Json => serde_json::to_string_pretty(&report).expect("report serialises"),
            ReportFormat::Text => render_text(&report, by),
        };
        self.sink.write_line(text.trim_end().as_bytes())?;
        self.sink.close()?;
        match &self.shown.plot {
            Some(path) => write_plot(path, &report),
            None => Ok(()),
        }
    }
}

/// `--plot`: the SVG, alone or in an HTML page, as the file's name says.
fn write_plot(path: &Path, report: &Report) -> Result<()> {
    let html = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"));
    let body = render_plot(report, html);
    std::fs::write(path, body).map_err(|e| Error::write(&path.display().to_string(), e))
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
    if r.records == 0 {
        let _ = writeln!(out, "no records to profile: nothing to recommend");
        return out;
    }
    if r.arrival_is_read_time {
        let _ = writeln!(
            out,
            "arrival time: when weir read each record (no --arrival); on data written earlier, lateness is its age\n"
        );
    }
    let session = !r.delays_tried.is_empty();
    let _ = match &r.window {
        Some(window) if session => writeln!(
            out,
            "late counts as `window {window}` gives them, the window run with each delay: a record is late when the session it would join (or its own) has ended, plus the allowed lateness, at or behind its partition's watermark; recommended: the smallest of the delays asked for and {} that keeps the share on time\n",
            tried(&r.delays_tried)
        ),
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
    let by_window = r.window.is_some() && !session;
    render_summary(&mut out, &r.overall, by_window);
    render_histogram(&mut out, &r.overall.lateness_histogram);
    for (group, s) in &r.groups {
        let _ = writeln!(
            out,
            "\n{} = {group} ({} records)",
            by.unwrap_or("group"),
            s.count
        );
        render_summary(&mut out, s, by_window);
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
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{}" font-family="sans-serif" font-size="11">"#,
        2.0 * PANEL
    );
    svg.push_str(r#"<rect width="100%" height="100%" fill="white"/>"#);
    svg.push('\n');
    lateness_panel(&mut svg, r);
    drift_panel(&mut svg, r);
    svg.push_str("</svg>\n");
    svg
}

/// The plot's width, one panel's height, and the margins around a panel's axes.
const W: f64 = 860.0;
const PANEL: f64 = 300.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;

/// A panel's plotting area: x from `LEFT`, y from `top + TOP`, this wide and high.
struct Area {
    top: f64,
    width: f64,
    height: f64,
}

impl Area {
    fn at(top: f64) -> Area {
        Area {
            top,
            width: W - LEFT - RIGHT,
            height: PANEL - TOP - BOTTOM,
        }
    }

    fn bottom(&self) -> f64 {
        self.top + TOP + self.height
    }

    /// The axes, the y axis's ticks (`ticks`: (value as a share of the height, label)) and
    /// the panel's title and axis titles.
    fn axes(
        &self,
        svg: &mut String,
        title: &str,
        x_title: &str,
        y_title: &str,
        ticks: &[(f64, String)],
    ) {
        let (x0, y0) = (LEFT, self.bottom());
        let _ = writeln!(
            svg,
            r#"<text x="{LEFT}" y="{:.1}" font-size="13" font-weight="bold">{}</text>"#,
            self.top + 20.0,
            escape(title)
        );
        let _ = writeln!(
            svg,
            r#"<path d="M{x0} {:.1} V{y0:.1} H{:.1}" stroke="black" fill="none"/>"#,
            self.top + TOP,
            LEFT + self.width
        );
        for (at, label) in ticks {
            let y = y0 - at * self.height;
            let _ = writeln!(
                svg,
                r#"<line x1="{:.1}" y1="{y:.1}" x2="{x0}" y2="{y:.1}" stroke="black"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                x0 - 4.0,
                x0 - 6.0,
                y + 4.0,
                escape(label)
            );
        }
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            LEFT + self.width / 2.0,
            y0 + 38.0,
            escape(x_title)
        );
        let _ = writeln!(
            svg,
            r#"<text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            self.top + TOP + self.height / 2.0,
            escape(y_title)
        );
    }

    /// A tick and its label under the x axis at `x` (a label near the right end ends there).
    fn x_tick(&self, svg: &mut String, x: f64, label: &str) {
        let y0 = self.bottom();
        let anchor = anchor(x, self.width);
        let _ = writeln!(
            svg,
            r#"<line x1="{x:.1}" y1="{y0:.1}" x2="{x:.1}" y2="{:.1}" stroke="black"/><text x="{x:.1}" y="{:.1}" text-anchor="{anchor}">{}</text>"#,
            y0 + 4.0,
            y0 + 16.0,
            escape(label)
        );
    }
}

/// How a label at `x` is anchored so that it stays inside the plot.
fn anchor(x: f64, width: f64) -> &'static str {
    if x > LEFT + width * 0.9 {
        "end"
    } else {
        "middle"
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Counts of records at 0, a half and the whole of `peak`, as y ticks.
fn count_ticks(peak: u64) -> Vec<(f64, String)> {
    vec![
        (0.0, "0".into()),
        (0.5, format!("{}", peak / 2)),
        (1.0, peak.to_string()),
    ]
}

/// The lateness histogram on a log-scale duration axis, with the recommended delays marked.
fn lateness_panel(svg: &mut String, r: &Report) {
    let area = Area::at(0.0);
    let bars = &r.overall.lateness_histogram;
    let peak = bars.iter().map(|b| b.count).max().unwrap_or(0).max(1);
    let title = format!(
        "Lateness (arrival - event time) of {} records; dashed: the recommended --delay",
        r.records
    );
    area.axes(
        svg,
        &title,
        "lateness (log scale: each bar twice as wide as the one before)",
        "records",
        &count_ticks(peak),
    );
    let bw = area.width / bars.len().max(1) as f64;
    // Where a duration lies on the axis: bar k covers [2^(k-1), 2^k) ms (bar 0 is [0, 1)).
    let x_of = |ms: Millis| {
        let k = if ms < 1 {
            0.0
        } else {
            (ms as f64).log2() + 1.0
        };
        LEFT + k.min(bars.len() as f64) * bw
    };
    let every = bars.len().div_ceil(12).max(1);
    for (i, b) in bars.iter().enumerate() {
        let bh = b.count as f64 / peak as f64 * area.height;
        let x = LEFT + i as f64 * bw;
        let _ = writeln!(
            svg,
            r#"<rect class="bar" x="{x:.1}" y="{:.1}" width="{:.1}" height="{bh:.1}" fill="steelblue"><title>[{}, {}): {}</title></rect>"#,
            area.bottom() - bh,
            (bw - 1.0).max(0.5),
            human_duration(b.from_ms as Millis),
            human_duration(b.to_ms as Millis),
            b.count
        );
        if i % every == 0 {
            area.x_tick(svg, x, &human_duration(b.from_ms as Millis));
        }
    }
    for (i, rec) in r.overall.recommended.iter().enumerate() {
        let x = x_of(rec.delay_ms);
        let label = format!("{}%: --delay {}", rec.target, human_duration(rec.delay_ms));
        // Left of its line past the middle, so that it stays inside the plot.
        let (lx, side) = match x > LEFT + area.width / 2.0 {
            true => (x - 3.0, "end"),
            false => (x + 3.0, "start"),
        };
        let _ = writeln!(
            svg,
            r#"<line class="recommended" x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="crimson" stroke-dasharray="4 3"/><text x="{lx:.1}" y="{:.1}" fill="crimson" text-anchor="{side}">{}</text>"#,
            area.top + TOP,
            area.bottom(),
            area.top + TOP + 12.0 + 13.0 * i as f64,
            escape(&label)
        );
    }
}

/// The late share per event-time bucket on a linear time axis: a bucket without records is a
/// gap; a jump is red.
fn drift_panel(svg: &mut String, r: &Report) {
    let area = Area::at(PANEL);
    let drift = &r.drift;
    let peak = drift.iter().map(|d| d.late_share).fold(0.0, f64::max);
    let top_share = if peak > 0.0 { peak } else { 1.0 };
    let ticks = [
        (0.0, pct(0.0)),
        (0.5, pct(top_share / 2.0)),
        (1.0, pct(top_share)),
    ];
    let delay = r.drift_delay_ms.map(human_duration).unwrap_or_default();
    let title = format!(
        "Late share at --delay {delay} per {} of event time",
        human_duration(r.drift_bucket_ms)
    );
    area.axes(svg, &title, "event time (UTC)", "late share", &ticks);
    let (Some(first), Some(last)) = (drift.first(), drift.last()) else {
        return;
    };
    let span = (last.start_ms - first.start_ms + r.drift_bucket_ms).max(1) as f64;
    let x_of = |t: Millis| LEFT + (t - first.start_ms) as f64 / span * area.width;
    let width = (r.drift_bucket_ms as f64 / span * area.width - 1.0).max(0.5);
    for d in drift {
        let dh = d.late_share / top_share * area.height;
        let color = if d.flagged { "crimson" } else { "gray" };
        let _ = writeln!(
            svg,
            r#"<rect class="drift" x="{:.1}" y="{:.1}" width="{width:.1}" height="{dh:.1}" fill="{color}"><title>{}: {} late of {} ({})</title></rect>"#,
            x_of(d.start_ms),
            area.bottom() - dh,
            d.bucket_start,
            d.late,
            d.count,
            pct(d.late_share)
        );
    }
    for i in 0..=4 {
        let t = first.start_ms + (span as Millis) * i / 4;
        let label = crate::core::time::format_millis(t);
        area.x_tick(
            svg,
            x_of(t),
            &label[..16.min(label.len())].replace('T', " "),
        );
    }
    legend(svg, &area);
}

/// What the drift panel's colours mean.
fn legend(svg: &mut String, area: &Area) {
    let (x, y) = (LEFT + area.width - 330.0, area.top + 14.0);
    let _ = writeln!(
        svg,
        r#"<rect x="{x:.1}" y="{:.1}" width="10" height="10" fill="gray"/><text x="{:.1}" y="{y:.1}">late share of the bucket</text><rect x="{:.1}" y="{:.1}" width="10" height="10" fill="crimson"/><text x="{:.1}" y="{:.1}">a jump: over 3x the median bucket's, 1% and 5 records</text>"#,
        y - 9.0,
        x + 14.0,
        x,
        y + 5.0,
        x + 14.0,
        y + 14.0
    );
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
