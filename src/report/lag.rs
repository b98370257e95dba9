//! How `weir lag` shows a measurement of Kafka groups or of a Kinesis consumer: an aligned
//! table, JSON, NDJSON, CSV or Prometheus's text format, and the lines that name a breached
//! threshold.

use super::metrics::escape;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Map, Value};

pub use crate::core::lag::LagTimeMode;
use crate::core::lag::{
    breaches, shard_breaches, totals, unmeasured_breaches, Breach, PartitionLag, ShardLag,
    Thresholds, TimeLag,
};
use crate::core::time::{format_millis, human_duration, Millis};
use crate::io::kafka::lag::Measured;
use crate::io::kafka::{GroupDescription, Owner};
use crate::runtime::watch::Findings;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LagFormat {
    /// Aligned columns, with a total line per group and topic.
    #[default]
    Table,
    /// One document: groups, topics, partitions, totals and breaches.
    Json,
    /// One object per partition.
    Ndjson,
    /// One row per partition, with a header.
    Csv,
    /// Prometheus text exposition format (node_exporter's textfile collector).
    Prometheus,
}

/// One measurement of every partition of every group asked about.
pub struct LagReport {
    pub at: Millis,
    pub mode: LagTimeMode,
    pub rows: Vec<PartitionLag>,
    pub groups: BTreeMap<String, GroupDescription>,
    /// Groups named with --group that have no committed offset on the topics asked about.
    pub uncommitted: Vec<String>,
    /// --group-pattern, when it matched no group.
    pub unmatched_pattern: Option<String>,
}

impl LagReport {
    /// A report of what one measuring found, at `at`.
    pub fn of(measured: Measured, at: Millis, mode: LagTimeMode) -> LagReport {
        LagReport {
            at,
            mode,
            rows: measured.rows,
            groups: measured.groups,
            uncommitted: measured.uncommitted,
            unmatched_pattern: measured.unmatched_pattern,
        }
    }
}

fn describe_breach(b: &Breach) -> String {
    if b.group.is_empty() {
        return b.what.clone();
    }
    if b.topic.is_empty() {
        return format!("group '{}': {}", b.group, b.what);
    }
    match b.partition {
        Some(p) => format!(
            "group '{}' topic '{}' partition {p}: {}",
            b.group, b.topic, b.what
        ),
        None => format!("group '{}' topic '{}': {}", b.group, b.topic, b.what),
    }
}

fn time_lag_name(t: TimeLag) -> &'static str {
    match t {
        TimeLag::CaughtUp => "caught_up",
        TimeLag::Exact { .. } => "exact",
        TimeLag::Estimate { .. } => "estimate",
        TimeLag::Unknown => "unknown",
    }
}

/// The member `r`'s partition is assigned to, where the broker says.
fn owner<'a>(report: &'a LagReport, r: &PartitionLag) -> Option<&'a Owner> {
    let o = &r.offsets;
    report
        .groups
        .get(&o.group)?
        .owners
        .get(&(o.topic.clone(), o.partition))
}

fn row_json(report: &LagReport, r: &PartitionLag) -> Map<String, Value> {
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
    let owner = owner(report, r);
    m.insert("owner".into(), json!(owner.map(|o| &o.member_id)));
    m.insert("owner_client_id".into(), json!(owner.map(|o| &o.client_id)));
    m.insert("owner_host".into(), json!(owner.map(|o| &o.host)));
    m
}

/// A Kafka lag report in `format`, with what it found: the rows over `thresholds`, and the
/// groups (or the pattern) with nothing to measure on `topic`.
pub fn rendered(
    report: &LagReport,
    thresholds: &Thresholds,
    topic: Option<&str>,
    format: LagFormat,
) -> (String, Findings) {
    let breached = breaches(&report.rows, thresholds);
    let pattern = report.unmatched_pattern.as_deref();
    let unchecked = unmeasured_breaches(&report.uncommitted, pattern, topic);
    let mut text = String::new();
    render(
        report,
        &[&breached[..], &unchecked[..]].concat(),
        format,
        &mut text,
    );
    let found = Findings {
        breached: breached.iter().map(describe_breach).collect(),
        unchecked: unchecked.iter().map(describe_breach).collect(),
    };
    (text, found)
}

/// Appends the report in `format` to `out`.
fn render(report: &LagReport, breached: &[Breach], format: LagFormat, out: &mut String) {
    match format {
        LagFormat::Table => render_table(report, out),
        LagFormat::Ndjson => {
            for r in &report.rows {
                out.push_str(&Value::Object(row_json(report, r)).to_string());
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

fn report_json(report: &LagReport, breached: &[Breach]) -> Value {
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
                .map(|r| Value::Object(row_json(report, r)))
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

const COLUMNS: [&str; 13] = [
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
    "owner",
    "owner_client_id",
    "owner_host",
];

fn render_csv(report: &LagReport, out: &mut String) {
    let rows = report.rows.iter().map(|r| row_json(report, r));
    csv_rows(&COLUMNS, rows, out);
}

fn render_prometheus(report: &LagReport, out: &mut String) {
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
            escape(&r.offsets.group),
            escape(&r.offsets.topic),
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
                format!("topic=\"{}\",partition=\"{p}\"", escape(t)),
                e.to_string(),
            )
        }),
    );
}

/// `1h 2m`, `3m 4s`, `5.6s`, `120ms`.
fn time_cell(t: TimeLag) -> String {
    match t {
        TimeLag::CaughtUp => "0".into(),
        TimeLag::Exact {
            ms,
            understated: false,
        } => human_duration(ms),
        // The first unconsumed record is gone: the true lag is larger.
        TimeLag::Exact {
            ms,
            understated: true,
        } => format!(">={}", human_duration(ms)),
        TimeLag::Estimate { ms } => format!("~{}", human_duration(ms)),
        TimeLag::Unknown => "-".into(),
    }
}

fn render_table(report: &LagReport, out: &mut String) {
    let opt = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
    let mut table: Vec<[String; 8]> = vec![[
        "GROUP".into(),
        "TOPIC".into(),
        "PARTITION".into(),
        "COMMITTED".into(),
        "LOG-END".into(),
        "LAG".into(),
        "OWNER".into(),
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
                owner(report, r).map_or("-".into(), |o| o.member_id.clone()),
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
            String::new(),
            t.max_time_ms.map_or("-".into(), human_duration) + &note,
        ]);
    }
    align(&table, |i| (2..6).contains(&i), out);
}

/// Writes `table` in aligned columns, those `right` names aligned right; the last column is
/// free text.
fn align<const N: usize>(table: &[[String; N]], right: impl Fn(usize) -> bool, out: &mut String) {
    let mut widths = [0usize; N];
    for row in table {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in table {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(widths).enumerate() {
            if i == N - 1 {
                line.push_str(cell);
            } else if right(i) {
                let _ = write!(line, "{cell:>w$}  ");
            } else {
                let _ = write!(line, "{cell:<w$}  ");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

/// Writes one CSV row a report row, the cells of `columns` from its JSON form, with a header.
fn csv_rows(columns: &[&str], rows: impl Iterator<Item = Map<String, Value>>, out: &mut String) {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    w.write_record(columns).expect("write to Vec");
    for row in rows {
        let cells = columns.iter().map(|c| match &row[*c] {
            Value::Null => String::new(),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        w.write_record(cells).expect("write to Vec");
    }
    let bytes = w.into_inner().expect("flush to Vec");
    out.push_str(&String::from_utf8(bytes).expect("UTF-8 cells"));
}

/// One measurement of a Kinesis consumer's shards.
pub struct ShardLagReport {
    pub at: Millis,
    pub rows: Vec<ShardLag>,
}

const SHARD_COLUMNS: [&str; 10] = [
    "stream",
    "consumer",
    "shard",
    "checkpoint",
    "checkpoint_subsequence",
    "lag_ms",
    "time_lag",
    "millis_behind_latest",
    "owner",
    "closed",
];

fn shard_row_json(r: &ShardLag) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("stream".into(), json!(r.stream));
    m.insert("consumer".into(), json!(r.consumer));
    m.insert("shard".into(), json!(r.shard));
    m.insert("checkpoint".into(), json!(r.checkpoint.text()));
    m.insert(
        "checkpoint_subsequence".into(),
        json!(r.checkpoint.subsequence()),
    );
    m.insert("lag_ms".into(), json!(r.time.millis()));
    m.insert("time_lag".into(), json!(time_lag_name(r.time)));
    m.insert("millis_behind_latest".into(), json!(r.millis_behind_latest));
    m.insert("owner".into(), json!(r.owner));
    m.insert("closed".into(), json!(r.closed));
    m
}

/// The line on stderr for a shard over `--max-lag`.
fn describe_shard_breach(r: &ShardLag, ms: Millis, max: Millis) -> String {
    format!(
        "consumer '{}' stream '{}' shard {}: time lag {} > {}",
        r.consumer,
        r.stream,
        r.shard,
        human_duration(ms),
        human_duration(max)
    )
}

/// A Kinesis lag report in `format`, with the shards over `max_lag`.
pub fn rendered_shards(
    report: &ShardLagReport,
    max_lag: Option<Millis>,
    format: LagFormat,
) -> (String, Findings) {
    let breached: Vec<String> = shard_breaches(&report.rows, max_lag)
        .into_iter()
        .map(|(i, ms)| describe_shard_breach(&report.rows[i], ms, max_lag.unwrap_or(0)))
        .collect();
    let mut text = String::new();
    render_shards(report, &breached, format, &mut text);
    let unchecked = Vec::new();
    (
        text,
        Findings {
            breached,
            unchecked,
        },
    )
}

/// Appends a Kinesis lag report in `format` to `out`.
fn render_shards(
    report: &ShardLagReport,
    breached: &[String],
    format: LagFormat,
    out: &mut String,
) {
    match format {
        LagFormat::Table => render_shard_table(report, out),
        LagFormat::Ndjson => {
            for r in &report.rows {
                out.push_str(&Value::Object(shard_row_json(r)).to_string());
                out.push('\n');
            }
        }
        LagFormat::Json => {
            let doc = json!({
                "at": format_millis(report.at),
                "shards": report.rows.iter().map(|r| Value::Object(shard_row_json(r))).collect::<Vec<_>>(),
                "max_lag_ms": report.rows.iter().filter_map(|r| r.time.millis()).max(),
                "breaches": breached,
            });
            out.push_str(&doc.to_string());
            out.push('\n');
        }
        LagFormat::Csv => csv_rows(&SHARD_COLUMNS, report.rows.iter().map(shard_row_json), out),
        LagFormat::Prometheus => {
            let labels = |r: &ShardLag| {
                format!(
                    "consumer=\"{}\",stream=\"{}\",shard=\"{}\"",
                    escape(&r.consumer),
                    escape(&r.stream),
                    escape(&r.shard)
                )
            };
            let _ = writeln!(out, "# HELP weir_kinesis_lag_seconds Seconds since the first record after the consumer's checkpoint arrived; 0 when caught up.");
            let _ = writeln!(out, "# TYPE weir_kinesis_lag_seconds gauge");
            for r in &report.rows {
                if let Some(ms) = r.time.millis() {
                    let _ = writeln!(
                        out,
                        "weir_kinesis_lag_seconds{{{}}} {:.3}",
                        labels(r),
                        ms as f64 / 1000.0
                    );
                }
            }
            let _ = writeln!(out, "# HELP weir_kinesis_millis_behind_latest What GetRecords says from the consumer's checkpoint on.");
            let _ = writeln!(out, "# TYPE weir_kinesis_millis_behind_latest gauge");
            for r in &report.rows {
                if let Some(ms) = r.millis_behind_latest {
                    let _ = writeln!(
                        out,
                        "weir_kinesis_millis_behind_latest{{{}}} {ms}",
                        labels(r)
                    );
                }
            }
        }
    }
}

fn render_shard_table(report: &ShardLagReport, out: &mut String) {
    let mut table: Vec<[String; 7]> = vec![[
        "CONSUMER".into(),
        "STREAM".into(),
        "SHARD".into(),
        "CHECKPOINT".into(),
        "BEHIND-LATEST".into(),
        "OWNER".into(),
        "TIME-LAG".into(),
    ]];
    for r in &report.rows {
        let mut shard = r.shard.clone();
        if r.closed {
            shard.push_str(" (closed)");
        }
        table.push([
            r.consumer.clone(),
            r.stream.clone(),
            shard,
            abbreviate(&r.checkpoint.text()),
            r.millis_behind_latest.map_or("-".into(), human_duration),
            r.owner.clone().unwrap_or_else(|| "-".into()),
            time_cell(r.time),
        ]);
    }
    let max = report.rows.iter().filter_map(|r| r.time.millis()).max();
    table.push([
        String::new(),
        String::new(),
        "max".into(),
        String::new(),
        String::new(),
        String::new(),
        max.map_or("-".into(), human_duration),
    ]);
    align(&table, |i| i == 4, out);
}

/// A sequence number's first and last digits: enough to tell two apart in a table (JSON,
/// NDJSON and CSV have it whole).
fn abbreviate(text: &str) -> String {
    if text.len() <= 20 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return text.to_string();
    }
    format!("{}…{}", &text[..6], &text[text.len() - 10..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_escaping() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    /// Where the broker names the members, each partition's owner is shown; elsewhere "-"
    /// in the table and null in JSON, never a made-up owner.
    #[test]
    fn each_partition_shows_its_owner_where_the_broker_says() {
        use crate::core::lag::PartitionOffsets;
        let row = |partition| PartitionLag {
            offsets: PartitionOffsets {
                group: "g".into(),
                topic: "t".into(),
                partition,
                committed: Some(5),
                log_start: 0,
                log_end: 7,
            },
            messages: Some(2),
            time: TimeLag::Unknown,
        };
        let owner = Owner {
            member_id: "rdkafka-1f0a".into(),
            client_id: "weir".into(),
            host: "/10.0.0.5".into(),
        };
        let description = GroupDescription {
            state: Some("Stable".into()),
            members: Some(1),
            owners: [(("t".to_string(), 1), owner)].into_iter().collect(),
        };
        let report = LagReport {
            at: 0,
            mode: LagTimeMode::None,
            rows: vec![row(0), row(1)],
            groups: [("g".to_string(), description)].into_iter().collect(),
            uncommitted: Vec::new(),
            unmatched_pattern: None,
        };
        let mut table = String::new();
        render(&report, &[], LagFormat::Table, &mut table);
        let cells = |p: &str| -> Vec<String> {
            let line = table
                .lines()
                .find(|l| l.split_whitespace().nth(2) == Some(p));
            line.unwrap()
                .split_whitespace()
                .map(str::to_string)
                .collect()
        };
        assert!(table.lines().next().unwrap().contains("OWNER"), "{table}");
        assert_eq!(cells("0")[6], "-", "{table}");
        assert_eq!(cells("1")[6], "rdkafka-1f0a", "{table}");
        let mut ndjson = String::new();
        render(&report, &[], LagFormat::Ndjson, &mut ndjson);
        let rows: Vec<Value> = ndjson
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows[0]["owner"], Value::Null);
        assert_eq!(rows[1]["owner"], "rdkafka-1f0a");
        assert_eq!(rows[1]["owner_host"], "/10.0.0.5");
        let mut csv = String::new();
        render(&report, &[], LagFormat::Csv, &mut csv);
        assert!(
            csv.lines()
                .nth(2)
                .unwrap()
                .ends_with(",rdkafka-1f0a,weir,/10.0.0.5"),
            "{csv}"
        );
    }
}
