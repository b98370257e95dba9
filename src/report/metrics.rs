//! Prometheus's exposition formats (text 0.0.4, and OpenMetrics 1.0 when a scraper asks for
//! it), and a run's metrics in them (`--metrics`): what the run published last
//! (`runtime::metrics`), named as Prometheus names things (`weir_` prefix, `_total` counters,
//! seconds).

use std::fmt::{Display, Write as _};

use crate::core::time::Millis;
use crate::runtime::metrics::{ClientLag, PartitionGauges, Snapshot};

/// Which exposition format a scrape gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricsFormat {
    Text,
    OpenMetrics,
}

impl MetricsFormat {
    /// OpenMetrics when the scraper's `Accept` names it (Prometheus does), else text.
    pub fn from_accept(accept: Option<&str>) -> MetricsFormat {
        match accept.is_some_and(|a| a.contains("application/openmetrics-text")) {
            true => MetricsFormat::OpenMetrics,
            false => MetricsFormat::Text,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            MetricsFormat::Text => "text/plain; version=0.0.4; charset=utf-8",
            MetricsFormat::OpenMetrics => {
                "application/openmetrics-text; version=1.0.0; charset=utf-8"
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
}

/// Metric families written one after another, each with its help and type.
pub struct Exposition {
    out: String,
    format: MetricsFormat,
}

impl Exposition {
    pub fn new(format: MetricsFormat) -> Exposition {
        Exposition {
            out: String::new(),
            format,
        }
    }

    /// Starts the family of samples named `name` (a counter's ends in `_total`, which
    /// OpenMetrics leaves out of the family's name).
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) {
        let family = match (kind, self.format) {
            (Kind::Counter, MetricsFormat::OpenMetrics) => name.trim_end_matches("_total"),
            _ => name,
        };
        let kind = match kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        };
        let _ = writeln!(self.out, "# HELP {family} {help}");
        let _ = writeln!(self.out, "# TYPE {family} {kind}");
    }

    /// One sample of the family begun last.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl Display) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (label, text)) in labels.iter().enumerate() {
                let comma = if i == 0 { "" } else { "," };
                let _ = write!(self.out, "{comma}{label}=\"{}\"", escape(text));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {value}");
    }

    /// A family of one sample.
    pub fn one(
        &mut self,
        name: &str,
        kind: Kind,
        help: &str,
        labels: &[(&str, &str)],
        value: impl Display,
    ) {
        self.family(name, kind, help);
        self.sample(name, labels, value);
    }

    pub fn finish(mut self) -> String {
        if self.format == MetricsFormat::OpenMetrics {
            self.out.push_str("# EOF\n");
        }
        self.out
    }
}

/// A label value: backslash, quote and newline escaped.
pub fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Milliseconds as seconds.
pub fn seconds(ms: Millis) -> String {
    format!("{:.3}", ms as f64 / 1000.0)
}

/// What labels every sample of a run: its command, and its group when it has one.
pub struct RunLabels {
    pub command: &'static str,
    pub group: Option<String>,
}

/// The run's counters, each a family: (name, help, value).
fn counters(s: &Snapshot) -> [(&'static str, &'static str, u64); 11] {
    let c = &s.counters;
    [
        (
            "weir_records_read_total",
            "Records read (blank lines are not records).",
            c.read,
        ),
        (
            "weir_records_written_total",
            "Records (or rows) written.",
            c.written,
        ),
        (
            "weir_records_filtered_total",
            "Records left out by --where or --from/--to.",
            c.filtered,
        ),
        (
            "weir_records_late_total",
            "Records dropped as late (window).",
            c.late,
        ),
        (
            "weir_records_duplicate_total",
            "Records dropped as duplicates (dedupe).",
            c.duplicates,
        ),
        (
            "weir_records_bad_total",
            "Bad records: skipped, or dead-lettered with --dead-letter.",
            c.bad,
        ),
        (
            "weir_records_dead_lettered_total",
            "Bad records written to the --dead-letter file.",
            if s.dead_letters { c.bad } else { 0 },
        ),
        (
            "weir_state_evicted_total",
            "State entries dropped to keep state bounded.",
            c.evicted,
        ),
        (
            "weir_dedupe_ids_expired_total",
            "Ids forgotten as their horizon passed (dedupe).",
            c.expired,
        ),
        (
            "weir_read_bytes_total",
            "Bytes of input read.",
            c.bytes_read,
        ),
        (
            "weir_checkpoints_total",
            "Checkpoints (or a group member's saved states) taken.",
            s.saves,
        ),
    ]
}

/// The run's metrics as of `snapshot`, at wall-clock time `now` (ms).
pub fn render_run(s: &Snapshot, labels: &RunLabels, now: Millis, format: MetricsFormat) -> String {
    let mut e = Exposition::new(format);
    let mut run = vec![("command", labels.command)];
    if let Some(g) = &labels.group {
        run.push(("group", g.as_str()));
    }
    for (name, help, value) in counters(s) {
        e.one(name, Kind::Counter, help, &run, value);
    }
    let state = [
        (
            "weir_open_windows",
            "Windows open now (window).",
            s.state.open_windows,
        ),
        (
            "weir_keys",
            "Keys with an open window now (window).",
            s.state.keys,
        ),
        (
            "weir_dedupe_ids",
            "Ids a dedupe remembers now.",
            s.state.ids,
        ),
        (
            "weir_state_bytes",
            "The memory the state holds, near enough (a window's windows and keys, a dedupe's id tables).",
            s.state.bytes,
        ),
    ];
    for (name, help, value) in state {
        if let Some(v) = value {
            e.one(name, Kind::Gauge, help, &run, v);
        }
    }
    if let Some(at) = s.last_save {
        let age = at.elapsed().unwrap_or_default().as_secs_f64();
        let help = "Seconds since the last checkpoint (or a group member's save).";
        e.one(
            "weir_checkpoint_age_seconds",
            Kind::Gauge,
            help,
            &run,
            format!("{age:.3}"),
        );
    }
    partitions(&mut e, s, &run, now);
    e.finish()
}

/// A partition's gauges, each a family: (name, kind, help, value).
type PartitionMetric = (
    &'static str,
    Kind,
    &'static str,
    fn(&PartitionGauges, Millis) -> Option<String>,
);

const PARTITION_METRICS: [PartitionMetric; 6] = [
    ("weir_partition_records_read_total", Kind::Counter, "Records of the input partition handed to the command.", |p, _| p.records.map(|n| n.to_string())),
    ("weir_partition_records_late_total", Kind::Counter, "Records of the input partition dropped as late (window).", |p, _| p.late.map(|n| n.to_string())),
    ("weir_partition_max_event_time_seconds", Kind::Gauge, "The partition's highest event time seen (Unix seconds).", |p, _| p.max_event_time.map(seconds)),
    ("weir_partition_watermark_seconds", Kind::Gauge, "The watermark a record of the partition is judged by (Unix seconds).", |p, _| p.watermark.map(seconds)),
    ("weir_partition_event_time_lag_seconds", Kind::Gauge, "Wall-clock time less the partition's highest event time.", |p, now| p.max_event_time.map(|t| seconds(now - t))),
    ("weir_partition_owned", Kind::Gauge, "1 while the source reads the partition (a group member: while the group gives it this member).", |p, _| p.owned.map(|o| u8::from(o).to_string())),
];

fn partitions(e: &mut Exposition, s: &Snapshot, run: &[(&str, &str)], now: Millis) {
    client_lag(e, s, run);
    if s.partitions.is_empty() {
        return;
    }
    for (name, kind, help, value) in PARTITION_METRICS {
        e.family(name, kind, help);
        for (partition, gauges) in &s.partitions {
            let Some(v) = value(gauges, now) else {
                continue;
            };
            let mut labels = run.to_vec();
            labels.push(("partition", partition_label(partition)));
            e.sample(name, &labels, v);
        }
    }
}

/// A partition's name without the quotes of its JSON text (a shard id, a string value).
fn partition_label(json: &str) -> &str {
    json.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(json)
}

/// Each partition's lag as the source's client sees it, by topic (or stream) and partition.
fn client_lag(e: &mut Exposition, s: &Snapshot, run: &[(&str, &str)]) {
    type Family = (&'static str, &'static str, fn(&ClientLag) -> Option<String>);
    let families: [Family; 2] = [
        ("weir_consumer_lag_records", "Records between the consumer's position and the partition's end, as the Kafka client reports.", |l| l.records.map(|n| n.to_string())),
        ("weir_consumer_lag_seconds", "How far the read is behind the shard's tip, as Kinesis answers (MillisBehindLatest).", |l| l.ms.map(seconds)),
    ];
    for (name, help, value) in families {
        let mut samples = (s.client_lag.iter()).filter_map(|(at, lag)| Some((at, value(lag)?)));
        let Some(first) = samples.next() else {
            continue;
        };
        e.family(name, Kind::Gauge, help);
        for ((topic, partition), v) in std::iter::once(first).chain(samples) {
            let mut labels = run.to_vec();
            labels.extend([("topic", topic.as_str()), ("partition", partition.as_str())]);
            e.sample(name, &labels, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::metrics::PartitionGauges;

    fn snapshot() -> Snapshot {
        let mut s = Snapshot::default();
        s.counters.read = 7;
        s.counters.late = 2;
        s.state.open_windows = Some(3);
        s.partitions.insert(
            "\"shardId-1\"".into(),
            PartitionGauges {
                records: Some(4),
                late: None,
                max_event_time: Some(10_500),
                watermark: Some(500),
                owned: Some(true),
            },
        );
        let lag = ClientLag {
            records: Some(12),
            ms: None,
        };
        s.client_lag.insert(("t".into(), "0".into()), lag);
        s
    }

    /// Checked by hand against the text format's and OpenMetrics's specifications: a
    /// counter's family is named without `_total` in OpenMetrics only, labels are quoted and
    /// escaped, OpenMetrics ends with `# EOF`; a gauge with no value is left out.
    #[test]
    fn a_run_renders_in_both_formats() {
        let labels = RunLabels {
            command: "window",
            group: Some("g\"1".into()),
        };
        let text = render_run(&snapshot(), &labels, 12_000, MetricsFormat::Text);
        for line in [
            "# TYPE weir_records_read_total counter",
            "weir_records_read_total{command=\"window\",group=\"g\\\"1\"} 7",
            "weir_records_late_total{command=\"window\",group=\"g\\\"1\"} 2",
            "# TYPE weir_open_windows gauge",
            "weir_open_windows{command=\"window\",group=\"g\\\"1\"} 3",
            "weir_partition_watermark_seconds{command=\"window\",group=\"g\\\"1\",partition=\"shardId-1\"} 0.500",
            "weir_partition_event_time_lag_seconds{command=\"window\",group=\"g\\\"1\",partition=\"shardId-1\"} 1.500",
            "weir_partition_owned{command=\"window\",group=\"g\\\"1\",partition=\"shardId-1\"} 1",
            "weir_consumer_lag_records{command=\"window\",group=\"g\\\"1\",topic=\"t\",partition=\"0\"} 12",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        assert!(!text.contains("weir_keys"), "no value, no family");
        assert!(!text.contains("weir_consumer_lag_seconds"));
        assert!(!text.contains("# EOF"));
        let open = render_run(&snapshot(), &labels, 12_000, MetricsFormat::OpenMetrics);
        assert!(
            open.contains("# TYPE weir_records_read counter\n"),
            "{open}"
        );
        assert!(open.contains("\nweir_records_read_total{"));
        assert!(open.ends_with("# EOF\n"));
    }

    #[test]
    fn openmetrics_only_when_the_scraper_asks() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(
            MetricsFormat::from_accept(Some(prometheus)),
            MetricsFormat::OpenMetrics
        );
        assert_eq!(MetricsFormat::from_accept(Some("*/*")), MetricsFormat::Text);
        assert_eq!(MetricsFormat::from_accept(None), MetricsFormat::Text);
    }
}
