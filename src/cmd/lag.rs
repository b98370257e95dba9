//! `weir lag`: per group, topic and partition, the committed offset, the log end, the lag in
//! messages and in time; totals; thresholds that set the exit code; several output formats.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use regex::Regex;
use serde_json::{json, Map, Value};

use crate::cli::{LagArgs, LagFormat, LagTimeMode};
use crate::core::lag::{
    breaches, estimated_time_lag, exact_time_lag, messages_behind, totals, Breach, History,
    PartitionLag, PartitionOffsets, Sample, Thresholds, TimeLag,
};
use crate::core::time::{format_millis, now_millis, Millis};
use crate::error::{Error, Result};
use crate::io::kafka::{Cluster, GroupDescription};
use crate::io::sink::LineSink;
use crate::io::spec::{parse_kafka_cluster, KafkaSpec, SinkSpec};

/// Sampled points kept per partition for `--time-mode estimate --watch`.
const HISTORY_POINTS: usize = 360;

pub fn run(args: LagArgs, stop: &AtomicBool) -> Result<()> {
    let spec = parse_kafka_cluster(&args.cluster).map_err(Error::Usage)?;
    let pattern = match &args.group_pattern {
        Some(p) => Some(Regex::new(p).map_err(|e| Error::Usage(format!("--group-pattern: {e}")))?),
        None => None,
    };
    let output = SinkSpec::parse(&args.output).map_err(Error::Usage)?;
    if matches!(output, SinkSpec::Kafka(_) | SinkSpec::Kinesis(_)) {
        return Err(Error::Usage(
            "weir lag writes its report to stdout or a file".into(),
        ));
    }
    let redraw = args.watch.is_some()
        && output == SinkSpec::Stdout
        && std::io::stdout().is_terminal()
        && args.format == LagFormat::Table;
    let mut out = LineSink::open(&output)?;
    let cluster = Cluster::connect(
        &spec,
        args.client.config_file.as_deref(),
        &args.client.properties,
        args.client.timeout(),
    )?;
    let thresholds = Thresholds {
        max_time_ms: args.max_lag,
        max_messages: args.max_messages,
        scope: args.per,
    };
    let mut history = History::new(HISTORY_POINTS);
    let mut describe = true;
    loop {
        let report = measure(
            &cluster,
            &spec,
            &args,
            pattern.as_ref(),
            &mut history,
            &mut describe,
        )?;
        let breached = breaches(&report.rows, &thresholds);
        let mut text = String::new();
        if redraw {
            text.push_str("\x1b[H\x1b[2J");
        }
        render(&report, &breached, &args, &mut text);
        out.write_raw(text.as_bytes())?;
        out.flush()?;
        for b in &breached {
            eprintln!("weir lag: {}", describe_breach(b));
        }
        let Some(every) = args.watch else {
            return if breached.is_empty() {
                Ok(())
            } else {
                Err(Error::CheckFailed(format!(
                    "{} lag threshold{} exceeded",
                    breached.len(),
                    if breached.len() == 1 { "" } else { "s" }
                )))
            };
        };
        let until = Instant::now() + Duration::from_millis(every as u64);
        while Instant::now() < until {
            if stop.load(Ordering::Relaxed) {
                return Err(Error::Interrupted);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn describe_breach(b: &Breach) -> String {
    match b.partition {
        Some(p) => format!(
            "group '{}' topic '{}' partition {p}: {}",
            b.group, b.topic, b.what
        ),
        None => format!("group '{}' topic '{}': {}", b.group, b.topic, b.what),
    }
}

struct Report {
    at: Millis,
    mode: LagTimeMode,
    rows: Vec<PartitionLag>,
    groups: BTreeMap<String, GroupDescription>,
}

fn measure(
    cluster: &Cluster,
    spec: &KafkaSpec,
    args: &LagArgs,
    pattern: Option<&Regex>,
    history: &mut History,
    describe: &mut bool,
) -> Result<Report> {
    let topics = cluster.topics(spec.topic.as_deref())?;
    let mut groups: BTreeSet<String> = args.groups.iter().cloned().collect();
    let mut states: HashMap<String, String> = HashMap::new();
    if args.all_groups || pattern.is_some() {
        for (g, state) in cluster.groups()? {
            if pattern.is_none_or(|p| p.is_match(&g)) {
                if let Some(state) = state {
                    states.insert(g.clone(), state);
                }
                groups.insert(g);
            }
        }
    }
    let groups: Vec<String> = groups.into_iter().collect();
    let log = cluster.log_offsets(&topics)?;
    let committed = cluster.committed(&groups, &topics)?;

    let mut rows = Vec::new();
    for (group, offsets) in groups.iter().zip(&committed) {
        let before = rows.len();
        for (topic, partitions) in &topics {
            let has_commit = partitions.iter().any(|p| {
                offsets
                    .get(&(topic.clone(), *p))
                    .copied()
                    .flatten()
                    .is_some()
            });
            // Without a topic in the URL, a group's topics are those it has committed on.
            if spec.topic.is_none() && !has_commit {
                continue;
            }
            for &p in partitions {
                let (log_start, log_end) = log.get(&(topic.clone(), p)).copied().unwrap_or((0, 0));
                let o = PartitionOffsets {
                    group: group.clone(),
                    topic: topic.clone(),
                    partition: p,
                    committed: offsets.get(&(topic.clone(), p)).copied().flatten(),
                    log_start,
                    log_end,
                };
                rows.push(PartitionLag {
                    messages: messages_behind(&o),
                    offsets: o,
                    time: TimeLag::Unknown,
                });
            }
        }
        if rows.len() == before {
            eprintln!("weir lag: group '{group}' has no committed offsets on these topics");
        }
    }

    match args.time_mode {
        LagTimeMode::Exact => {
            let wanted: BTreeSet<(String, i32, i64)> = rows
                .iter()
                .filter_map(|r| {
                    let o = &r.offsets;
                    let c = o.committed?;
                    (c < o.log_end).then(|| (o.topic.clone(), o.partition, c.max(o.log_start)))
                })
                .collect();
            let wanted: Vec<_> = wanted.into_iter().collect();
            let found = cluster.first_records(&wanted)?;
            let now = now_millis();
            for r in &mut rows {
                let o = &r.offsets;
                let sample = o.committed.and_then(|c| {
                    found
                        .get(&(o.topic.clone(), o.partition, c.max(o.log_start)))
                        .map(|&(offset, timestamp)| Sample { offset, timestamp })
                });
                r.time = exact_time_lag(o, sample, now);
            }
        }
        LagTimeMode::None => {}
        LagTimeMode::Estimate => {
            let mut wanted = BTreeSet::new();
            for ((topic, p), &(start, end)) in &log {
                if end > start {
                    wanted.insert((topic.clone(), *p, start));
                    wanted.insert((topic.clone(), *p, end - 1));
                }
            }
            let wanted: Vec<_> = wanted.into_iter().collect();
            let found = cluster.first_records(&wanted)?;
            let now = now_millis();
            for ((topic, p), &(_, end)) in &log {
                history.add(
                    topic,
                    *p,
                    Sample {
                        offset: end,
                        timestamp: now,
                    },
                );
            }
            // A partition's points are the same for every group: gathered once.
            let mut points: HashMap<(String, i32), Vec<Sample>> = log
                .keys()
                .map(|(t, p)| ((t.clone(), *p), history.points(t, *p).to_vec()))
                .collect();
            for ((t, p, _), &(offset, timestamp)) in &found {
                if let Some(list) = points.get_mut(&(t.clone(), *p)) {
                    list.push(Sample { offset, timestamp });
                }
            }
            for r in &mut rows {
                let o = &r.offsets;
                let partition_points = points
                    .get(&(o.topic.clone(), o.partition))
                    .map_or(&[][..], Vec::as_slice);
                r.time = estimated_time_lag(o, partition_points, now);
            }
        }
    }

    let mut descriptions = BTreeMap::new();
    for g in &groups {
        let mut d = if *describe {
            cluster.describe(g)
        } else {
            GroupDescription::default()
        };
        // A broker that will not describe one group will not describe the next either.
        if d.state.is_none() && d.members.is_none() {
            *describe = false;
        }
        if d.state.is_none() {
            d.state = states.get(g).cloned();
        }
        descriptions.insert(g.clone(), d);
    }
    Ok(Report {
        at: now_millis(),
        mode: args.time_mode,
        rows,
        groups: descriptions,
    })
}

fn time_lag_name(t: TimeLag) -> &'static str {
    match t {
        TimeLag::CaughtUp => "caught_up",
        TimeLag::Exact { .. } => "exact",
        TimeLag::Estimate { .. } => "estimate",
        TimeLag::Unknown => "unknown",
    }
}

fn row_json(r: &PartitionLag) -> Map<String, Value> {
    let o = &r.offsets;
    let mut m = Map::new();
    m.insert("group".into(), json!(o.group));
    m.insert("topic".into(), json!(o.topic));
    m.insert("partition".into(), json!(o.partition));
    m.insert("committed_offset".into(), json!(o.committed));
    m.insert("log_start_offset".into(), json!(o.log_start));
    m.insert("log_end_offset".into(), json!(o.log_end));
    m.insert("lag_messages".into(), json!(r.messages));
    m.insert("lag_ms".into(), json!(r.time.millis()));
    m.insert("time_lag".into(), json!(time_lag_name(r.time)));
    m.insert(
        "understated".into(),
        json!(matches!(
            r.time,
            TimeLag::Exact {
                understated: true,
                ..
            }
        )),
    );
    m
}

fn render(report: &Report, breached: &[Breach], args: &LagArgs, out: &mut String) {
    match args.format {
        LagFormat::Table => render_table(report, out),
        LagFormat::Ndjson => {
            for r in &report.rows {
                out.push_str(&Value::Object(row_json(r)).to_string());
                out.push('\n');
            }
        }
        LagFormat::Json => {
            out.push_str(&report_json(report, breached).to_string());
            out.push('\n');
        }
        LagFormat::Csv => render_csv(report, out),
        LagFormat::Prometheus => render_prometheus(report, out),
    }
}

fn report_json(report: &Report, breached: &[Breach]) -> Value {
    let sums = totals(&report.rows);
    let mut groups = Vec::new();
    for (name, d) in &report.groups {
        let mut topics = Vec::new();
        for ((g, topic), t) in &sums {
            if g != name {
                continue;
            }
            let partitions: Vec<Value> = report
                .rows
                .iter()
                .filter(|r| r.offsets.group == *g && r.offsets.topic == *topic)
                .map(|r| Value::Object(row_json(r)))
                .collect();
            topics.push(json!({
                "topic": topic,
                "lag_messages": t.messages,
                "max_lag_ms": t.max_time_ms,
                "partitions_without_commit": t.without_commit,
                "partitions": partitions,
            }));
        }
        groups.push(json!({
            "group": name, "state": d.state, "members": d.members, "topics": topics,
        }));
    }
    let breaches: Vec<Value> = breached
        .iter()
        .map(|b| json!({"group": b.group, "topic": b.topic, "partition": b.partition, "what": b.what}))
        .collect();
    json!({
        "at": format_millis(report.at),
        "time_mode": match report.mode {
            LagTimeMode::Exact => "exact",
            LagTimeMode::Estimate => "estimate",
            LagTimeMode::None => "none",
        },
        "groups": groups,
        "breaches": breaches,
    })
}

const COLUMNS: [&str; 10] = [
    "group",
    "topic",
    "partition",
    "committed_offset",
    "log_start_offset",
    "log_end_offset",
    "lag_messages",
    "lag_ms",
    "time_lag",
    "understated",
];

fn render_csv(report: &Report, out: &mut String) {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    w.write_record(COLUMNS).expect("write to Vec");
    for r in &report.rows {
        let row = row_json(r);
        let cells = COLUMNS.iter().map(|c| match &row[*c] {
            Value::Null => String::new(),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        w.write_record(cells).expect("write to Vec");
    }
    let bytes = w.into_inner().expect("flush to Vec");
    out.push_str(&String::from_utf8(bytes).expect("UTF-8 cells"));
}

/// A label value in the exposition format: backslash, quote and newline escaped.
fn label(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn render_prometheus(report: &Report, out: &mut String) {
    let metric = |out: &mut String,
                  name: &str,
                  help: &str,
                  values: &mut dyn Iterator<Item = (String, String)>| {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} gauge");
        for (labels, value) in values {
            let _ = writeln!(out, "{name}{{{labels}}} {value}");
        }
    };
    let labels = |r: &PartitionLag| {
        format!(
            "group=\"{}\",topic=\"{}\",partition=\"{}\"",
            label(&r.offsets.group),
            label(&r.offsets.topic),
            r.offsets.partition
        )
    };
    metric(
        out,
        "weir_consumergroup_lag_messages",
        "Messages between the group's committed offset and the log end.",
        &mut report
            .rows
            .iter()
            .filter_map(|r| r.messages.map(|m| (labels(r), m.to_string()))),
    );
    metric(
        out,
        "weir_consumergroup_lag_seconds",
        "Seconds since the first record the group has not consumed was written; 0 when caught up.",
        &mut report.rows.iter().filter_map(|r| {
            r.time
                .millis()
                .map(|ms| (labels(r), format!("{:.3}", ms as f64 / 1000.0)))
        }),
    );
    metric(
        out,
        "weir_consumergroup_committed_offset",
        "The group's committed offset (partitions without one are left out).",
        &mut report
            .rows
            .iter()
            .filter_map(|r| r.offsets.committed.map(|c| (labels(r), c.to_string()))),
    );
    let mut ends: BTreeMap<(String, i32), i64> = BTreeMap::new();
    for r in &report.rows {
        ends.insert(
            (r.offsets.topic.clone(), r.offsets.partition),
            r.offsets.log_end,
        );
    }
    metric(
        out,
        "weir_partition_log_end_offset",
        "The partition's log-end offset (high watermark).",
        &mut ends.iter().map(|((t, p), e)| {
            (
                format!("topic=\"{}\",partition=\"{p}\"", label(t)),
                e.to_string(),
            )
        }),
    );
}

/// `1h 2m`, `3m 4s`, `5.6s`, `120ms`.
fn human(ms: Millis) -> String {
    let s = ms / 1000;
    if ms < 1000 {
        format!("{ms}ms")
    } else if s < 60 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else if s < 3600 {
        format!("{}m {}s", s / 60, s % 60)
    } else if s < 86_400 {
        format!("{}h {}m", s / 3600, (s % 3600) / 60)
    } else {
        format!("{}d {}h", s / 86_400, (s % 86_400) / 3600)
    }
}

fn time_cell(t: TimeLag) -> String {
    match t {
        TimeLag::CaughtUp => "0".into(),
        TimeLag::Exact {
            ms,
            understated: false,
        } => human(ms),
        // The first unconsumed record is gone: the true lag is larger.
        TimeLag::Exact {
            ms,
            understated: true,
        } => format!(">={}", human(ms)),
        TimeLag::Estimate { ms } => format!("~{}", human(ms)),
        TimeLag::Unknown => "-".into(),
    }
}

fn render_table(report: &Report, out: &mut String) {
    let opt = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
    let mut table: Vec<[String; 7]> = vec![[
        "GROUP".into(),
        "TOPIC".into(),
        "PARTITION".into(),
        "COMMITTED".into(),
        "LOG-END".into(),
        "LAG".into(),
        "TIME-LAG".into(),
    ]];
    let sums = totals(&report.rows);
    for ((group, topic), t) in &sums {
        for r in report
            .rows
            .iter()
            .filter(|r| r.offsets.group == *group && r.offsets.topic == *topic)
        {
            table.push([
                group.clone(),
                topic.clone(),
                r.offsets.partition.to_string(),
                opt(r.offsets.committed),
                r.offsets.log_end.to_string(),
                opt(r.messages),
                time_cell(r.time),
            ]);
        }
        let d = report.groups.get(group).cloned().unwrap_or_default();
        let state = match (&d.state, d.members) {
            (Some(s), Some(m)) => format!("{s}, {m} members"),
            _ => "state unknown".into(),
        };
        let note = if t.without_commit > 0 {
            format!(" ({} without commit; {state})", t.without_commit)
        } else {
            format!(" ({state})")
        };
        table.push([
            group.clone(),
            topic.clone(),
            "total".into(),
            String::new(),
            String::new(),
            t.messages.to_string(),
            t.max_time_ms.map_or("-".into(), human) + &note,
        ]);
    }
    let mut widths = [0usize; 7];
    for row in &table {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in &table {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(widths).enumerate() {
            if i == 6 {
                line.push_str(cell);
            } else if (2..6).contains(&i) {
                let _ = write!(line, "{cell:>w$}  ");
            } else {
                let _ = write!(line, "{cell:<w$}  ");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations() {
        assert_eq!(human(120), "120ms");
        assert_eq!(human(5_600), "5.6s");
        assert_eq!(human(184_000), "3m 4s");
        assert_eq!(human(3_720_000), "1h 2m");
        assert_eq!(human(90_000_000), "1d 1h");
    }

    #[test]
    fn label_escaping() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
