//! `weir window`: event-time window aggregates, wiring a source, the window operator and a
//! table sink.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::ArgMatches;
use serde::{Deserialize, Serialize};

use crate::cli::WindowArgs;
use crate::core::aggregate::{
    is_plain_name, prepare, AggInput, AggKind, AggSpec, Cell, Columns, JsonColumns,
};
use crate::core::partitioned::PerPartition;
use crate::core::record::{time_of, Extractor, FieldPath, RecordError};
use crate::core::saved;
use crate::core::time::{human_duration, Millis, TimeFormat};
use crate::core::watermark::{PartitionIds, Watermarks, MAX_PARTITIONS};
use crate::core::window::{
    EmitMode, Outcome, Row, TooManyWindows, WindowConfig, WindowKind, WindowOperator, WindowState,
    KEY_SEPARATOR,
};
use crate::error::{Error, Fault, Result};
use crate::io::kafka::Render;
use crate::io::sink::{CsvRow, LineSink, RecordFields, Sink, SinkPlan, TableFormat, TableWriter};
use crate::io::spec::SinkSpec;
use crate::runtime::summary::finish;
use crate::runtime::{
    read_records_with, CheckpointPlan, Checkpoints, Counters, ErrorPolicy, Flow, Line, Prepare,
    RecordStep, Run, Stats, StepCheckpoint,
};

use super::InputPlan;

pub fn run(args: WindowArgs, matches: &ArgMatches, stop: &AtomicBool) -> Result<()> {
    let mut stats = Stats::new("window");
    let report = super::report_plan(&args.report);
    let result = Plan::new(&args, matches).and_then(|plan| {
        super::check_files_written_at_end(&report, None)?;
        window(plan, &mut stats, stop)
    });
    finish(&stats, &report, result)
}

/// A window run, checked.
struct Plan {
    input: InputPlan,
    sink: SinkPlan,
    format: TableFormat,
    late_output: Option<PathBuf>,
    config: WindowConfig,
    delay: Millis,
    idle_timeout: Option<Millis>,
    /// Every field the command reads, in one extractor: time, partition, keys, values.
    paths: Vec<FieldPath>,
    time_format: TimeFormat,
    partition_at: Option<usize>,
    /// Watermarks are per partition of the broker source, so its assignment declares them.
    by_source_partition: bool,
    keys_at: usize,
    key_columns: Vec<String>,
    agg_fields: Vec<Option<usize>>,
    checkpoint: Option<CheckpointPlan>,
    /// A consumer-group member keeps state per partition, saved this often.
    per_partition: Option<Duration>,
    /// What makes a checkpoint this job's: the inputs and every flag that shapes the result.
    job: String,
}

impl Plan {
    fn new(args: &WindowArgs, matches: &ArgMatches) -> Result<Plan> {
        let time = args
            .time
            .time
            .clone()
            .ok_or_else(|| Error::Usage("weir window needs --time FIELD".into()))?;
        let mut input = InputPlan::new(&args.input, false)?;
        // A group member's partitions are tasks of their own, each with its own watermark.
        let per_partition = super::group_of(&input).is_some();
        if per_partition && args.partition_by.is_some() {
            return Err(Error::Usage(
                "with -G each partition has its own windows and watermark; --partition-by does not apply".into(),
            ));
        }
        let partition_by = match per_partition {
            true => None,
            false => input.partition_field(args.partition_by.as_ref()),
        };
        let by_source_partition = input.is_source_partition(partition_by.as_ref());
        let kind = window_kind(args)?;
        let (aggs, value_paths) = aggregate_specs(args, matches)?;
        let key_columns: Vec<String> = args.keys.iter().map(FieldPath::column_name).collect();
        check_column_names(&key_columns, &aggs)?;

        // One extractor pulls every field the command needs in one pass over the line.
        let mut paths = vec![time];
        let partition_at = partition_by.map(|p| {
            paths.push(p);
            paths.len() - 1
        });
        let keys_at = paths.len();
        paths.extend(args.keys.iter().cloned());
        let values_at = paths.len();
        paths.extend(value_paths);
        let agg_fields: Vec<Option<usize>> = aggs
            .iter()
            .map(|a| a.field.map(|f| values_at + f))
            .collect();

        let sink_spec = SinkSpec::parse(&args.output).map_err(Error::Usage)?;
        let to_broker = matches!(sink_spec, SinkSpec::Kafka(_) | SinkSpec::Kinesis(_));
        if to_broker && args.format == TableFormat::Csv {
            return Err(Error::Usage(
                "--format csv cannot go to Kafka or Kinesis; rows go there as NDJSON".into(),
            ));
        }
        // Rows of one key land in one partition (or shard), in order. A Kinesis record needs
        // a partition key: rows without key fields are keyed by their window.
        let first_key = args.keys.first().map(|k| k.column_name());
        let row_key = match (&sink_spec, first_key) {
            (SinkSpec::Kafka(_), Some(column)) | (SinkSpec::Kinesis(_), Some(column)) => {
                Some(column)
            }
            (SinkSpec::Kinesis(_), None) => Some("window_start".to_string()),
            _ => None,
        };
        let row_key = RecordFields {
            key: row_key
                .map(|column| column.parse())
                .transpose()
                .map_err(Error::Usage)?,
            ..RecordFields::default()
        };
        let sink = SinkPlan::new(
            sink_spec,
            row_key,
            super::client_options(&args.input.broker.client)?,
            super::aws_options(&args.input.broker.client),
        )?;
        let checkpoint = super::checkpoint_plan(&args.checkpoint, &sink.spec, false)?;
        let job = format!(
            "inputs {:?}, fields {:?}, {:?}, partition {:?}, keys at {keys_at}, {kind:?}, lateness {}, {:?}, aggregates {:?}, --delay {}, --idle-timeout {:?}, {:?}, late output {:?}",
            input.job_source(),
            paths.iter().map(|p| p.as_str()).collect::<Vec<_>>(),
            args.time.time_format,
            partition_at,
            args.allowed_lateness,
            args.emit,
            aggs.iter()
                .map(|a| format!("{:?} {:?} {}", a.kind, a.field, a.name))
                .collect::<Vec<_>>(),
            args.delay,
            args.idle_timeout,
            args.format,
            args.late_output,
        );
        let per_partition = super::changelog_plan(
            &mut input,
            "window",
            &args.changelog,
            &args.checkpoint,
            &job,
        )?;
        Ok(Plan {
            input,
            sink,
            format: args.format,
            late_output: args.late_output.clone(),
            config: WindowConfig {
                kind,
                allowed_lateness: args.allowed_lateness,
                emit: args.emit,
                aggs,
                max_open_windows: args.max_open_windows,
            },
            delay: args.delay,
            idle_timeout: args.idle_timeout,
            paths,
            time_format: args.time.time_format.clone(),
            partition_at,
            by_source_partition,
            keys_at,
            key_columns,
            agg_fields,
            checkpoint,
            per_partition,
            job,
        })
    }
}

fn window(plan: Plan, stats: &mut Stats, stop: &AtomicBool) -> Result<()> {
    let (mut checkpoints, restored) =
        super::open_checkpoints(plan.checkpoint.as_ref(), "window", &plan.job, &plan.input)?;
    if let Some(interval) = plan.per_partition {
        let inputs = plan.input.checkpoint_inputs();
        checkpoints = Some(Checkpoints::for_group(interval, "window", inputs));
    }
    let restored = restored.as_ref();
    // A finished job's last checkpoint keeps no state.
    let saved: Option<StepState> = restored
        .filter(|r| !r.state.is_empty())
        .map(|r| saved::decode(&r.state).map_err(Error::Usage))
        .transpose()?;
    if let Some(r) = restored {
        stats.counters = r.counters.clone();
    }
    let source = plan.input.open_source_at(Render::Envelope, restored)?;
    let mut policy = ErrorPolicy::open_resumed(&plan.input.policy, restored)?;
    let sink = LineSink::open_resumed(&plan.sink, restored)?;
    let late = match &plan.late_output {
        Some(path) => Some(LineSink::open_file(path, "output file", restored)?),
        None => None,
    };
    let aggs_plain = plan.config.aggs.iter().all(|a| is_plain_name(&a.name));
    let marks = plan.config.allowed_lateness > 0 || plan.config.emit == EmitMode::Updates;
    let extractor = Arc::new(Extractor::new(plan.paths));
    let watermarks = Watermarks::new(plan.delay, plan.idle_timeout);
    let tasks = plan.per_partition.map(|_| {
        let (config, watermarks) = (plan.config.clone(), watermarks.clone());
        PerPartition::new(move || WindowOperator::new(config.clone(), watermarks.clone()))
    });
    let mut table = TableWriter::new(sink, plan.format);
    let (op, partitions, started, written) = match saved {
        None => (
            WindowOperator::new(plan.config, watermarks),
            PartitionIds::default(),
            Instant::now(),
            0,
        ),
        Some(saved) => {
            table.set_columns(saved.csv_columns);
            (
                WindowOperator::restore(plan.config, saved.op).map_err(Error::Usage)?,
                PartitionIds::from_values(saved.partitions),
                // Processing time goes on from where the checkpoint left it (idle timeouts).
                super::clock_from(saved.now),
                saved.written,
            )
        }
    };
    let mut step = WindowStep {
        op,
        tasks,
        extractor: extractor.clone(),
        time_format: plan.time_format,
        partition_at: plan.partition_at,
        by_source_partition: plan.by_source_partition,
        keys_at: plan.keys_at,
        plain_names: plan.key_columns.iter().all(|k| is_plain_name(k)) && aggs_plain,
        key_columns: plan.key_columns,
        marks,
        agg_fields: plan.agg_fields,
        partitions,
        table,
        csv_row: CsvRow::default(),
        late,
        rows: Vec::new(),
        key: String::new(),
        inputs: Vec::new(),
        started,
        now: 0,
        written,
    };
    let run = Run {
        source,
        prepare: Prepare::Extract(extractor),
        max_line_bytes: plan.input.max_line_bytes,
        counters: &mut stats.counters,
        policy: &mut policy,
        stop,
    };
    let mut result = read_records_with(run, &mut step, checkpoints.as_mut());
    // Taken before the last windows fire: a run started from it (a new stdin, more of the
    // topic) cuts their rows off and fires them when its own input ends.
    if let Some(c) = &mut checkpoints {
        c.take_before_last_output(&mut step, &mut policy, &stats.counters, &result)?;
    }
    if result.is_ok() {
        // A bounded input ended: the watermark goes to +infinity and every window fires.
        step.each_op(|op, rows| op.finish(rows));
        result = step.write_rows();
        if let Some(c) = &mut checkpoints {
            c.take_after_last_output(&mut step, &mut policy, &stats.counters, &result)?;
        }
    }
    stats.counters.written = step.written;
    step.each_op(|op, _| {
        let peaks = op.peaks();
        let c = &mut stats.counters;
        c.peak_open_windows = c.peak_open_windows.max(peaks.open_windows as u64);
        c.peak_keys = c.peak_keys.max(peaks.keys as u64);
    });
    let flushed = step.close().and(policy.close());
    result.and(flushed)
}

/// What a checkpoint keeps of a window run.
#[derive(Serialize, Deserialize)]
struct StepState {
    op: WindowState,
    partitions: Vec<String>,
    /// The CSV header written, if any.
    csv_columns: Option<Vec<String>>,
    written: u64,
    /// Processing time.
    now: Millis,
}

fn window_kind(args: &WindowArgs) -> Result<WindowKind> {
    if let Some(size) = args.tumbling {
        return Ok(WindowKind::Tumbling {
            size,
            offset: args.offset,
        });
    }
    if let (Some(size), Some(slide)) = (args.hop, args.slide) {
        // Flink and Spark take any slide up to the size. A longer one would leave gaps that
        // no window covers, and the records there would belong nowhere.
        if slide > size {
            return Err(Error::Usage(format!(
                "--slide ({}) is longer than --hop ({}): records between the windows would belong to none",
                human_duration(slide),
                human_duration(size)
            )));
        }
        // Each record opens up to size/slide windows at once: more than the bound allows
        // would stop the run at its first record, after allocating them all.
        let per_record = (size as u64).div_ceil(slide as u64);
        if per_record > args.max_open_windows as u64 {
            return Err(Error::Usage(format!(
                "--hop {} --slide {} puts every record in {per_record} windows, more than --max-open-windows ({}): give a longer slide",
                human_duration(size),
                human_duration(slide),
                args.max_open_windows
            )));
        }
        return Ok(WindowKind::Hopping {
            size,
            slide,
            offset: args.offset,
        });
    }
    match args.session {
        Some(gap) if args.offset == 0 => Ok(WindowKind::Session { gap }),
        Some(_) => Err(Error::Usage(
            "--offset applies to --tumbling and --hop, not --session".into(),
        )),
        None => Err(Error::Usage(
            "give one of --tumbling SIZE, --hop SIZE --slide S, --session GAP".into(),
        )),
    }
}

/// The aggregates in command-line order, with their output names, and the value fields they
/// read (deduplicated; `AggSpec::field` indexes into them).
fn aggregate_specs(
    args: &WindowArgs,
    matches: &ArgMatches,
) -> Result<(Vec<AggSpec>, Vec<FieldPath>)> {
    let position = |id: &str, n: usize| -> Vec<usize> {
        let got: Vec<usize> = matches
            .indices_of(id)
            .map(Iterator::collect)
            .unwrap_or_default();
        // Without parse positions (a library caller), keep the order of the struct.
        if got.len() == n {
            got
        } else {
            (0..n).collect()
        }
    };
    let mut items: Vec<(usize, AggKind, Option<FieldPath>, String)> = Vec::new();
    if args.count {
        items.push((
            position("count", 1)[0],
            AggKind::Count,
            None,
            "count".into(),
        ));
    }
    let plain = [
        ("sum", AggKind::Sum, &args.sum),
        ("min", AggKind::Min, &args.min),
        ("max", AggKind::Max, &args.max),
        ("avg", AggKind::Avg, &args.avg),
        ("distinct", AggKind::Distinct, &args.distinct),
        ("first", AggKind::First, &args.first),
        ("last", AggKind::Last, &args.last),
    ];
    for (id, kind, fields) in plain {
        for (at, field) in position(id, fields.len()).into_iter().zip(fields.iter()) {
            items.push((
                at,
                kind.clone(),
                Some(field.clone()),
                format!("{id}_{}", field.column_name()),
            ));
        }
    }
    for (at, text) in position("percentile", args.percentile.len())
        .into_iter()
        .zip(&args.percentile)
    {
        let (field, pcts) = parse_percentile(text)?;
        items.push((
            at,
            AggKind::Percentile(pcts),
            Some(field.clone()),
            format!("p_{}", field.column_name()),
        ));
    }
    if items.is_empty() {
        return Err(Error::Usage(
            "give at least one aggregate: --count, --sum F, --min F, --max F, --avg F, --distinct F, --percentile F:p50,p99, --first F, --last F".into(),
        ));
    }
    items.sort_by_key(|(at, ..)| *at);
    let mut renamed = vec![false; items.len()];
    for (at, name) in position("names", args.names.len())
        .into_iter()
        .zip(&args.names)
    {
        if name.trim().is_empty() {
            return Err(Error::Usage("--as needs a column name".into()));
        }
        let Some(target) = items.iter().rposition(|(i, ..)| *i < at) else {
            return Err(Error::Usage(format!(
                "--as {name} must follow the aggregate it names"
            )));
        };
        if std::mem::replace(&mut renamed[target], true) {
            return Err(Error::Usage(format!(
                "--as {name}: that aggregate is already named"
            )));
        }
        // A named percentile's columns are NAME_p50, NAME_p99.
        items[target].3 = name.clone();
    }
    let mut value_paths: Vec<FieldPath> = Vec::new();
    let specs = items
        .into_iter()
        .map(|(_, kind, field, name)| {
            let field = field.map(|f| match value_paths.iter().position(|p| *p == f) {
                Some(i) => i,
                None => {
                    value_paths.push(f);
                    value_paths.len() - 1
                }
            });
            AggSpec { kind, field, name }
        })
        .collect();
    Ok((specs, value_paths))
}

/// Where a row's column comes from, to say why two share a name.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ColumnSource {
    Key,
    Own,
    Aggregate,
}

impl ColumnSource {
    fn one(self) -> &'static str {
        match self {
            ColumnSource::Key => "a --key field",
            ColumnSource::Own => "weir's own",
            ColumnSource::Aggregate => "an aggregate",
        }
    }
}

/// Two columns of one name would make rows that lose one of them: JSON readers keep the last
/// of two equal names, and a CSV column is read by its name.
fn check_column_names(key_columns: &[String], aggs: &[AggSpec]) -> Result<()> {
    use ColumnSource::*;
    let own = ["window_start", "window_end", "update", "retract"].map(|c| (c.to_string(), Own));
    let keys = key_columns.iter().map(|c| (c.clone(), Key));
    let aggregates = aggs
        .iter()
        .flat_map(AggSpec::columns)
        .map(|c| (c, Aggregate));
    let mut seen: HashMap<String, ColumnSource> = HashMap::new();
    for (name, second) in keys.chain(own).chain(aggregates) {
        let Some(first) = seen.insert(name.clone(), second) else {
            continue;
        };
        let from = match (first, second) {
            (Key, Key) => "two --key fields".to_string(),
            (Aggregate, Aggregate) => "two aggregates".to_string(),
            _ => format!("{} and {}", first.one(), second.one()),
        };
        let hint = match (first, second) {
            (Aggregate, _) => ": give each once, or name one with --as NAME",
            (_, Aggregate) => ": name the aggregate otherwise with --as NAME",
            _ => "",
        };
        return Err(Error::Usage(format!(
            "two columns of each row would be named '{name}' ({from}){hint}"
        )));
    }
    Ok(())
}

/// `amount:p50,p99,99.9` → (amount, [50, 99, 99.9]).
fn parse_percentile(text: &str) -> Result<(FieldPath, Vec<f64>)> {
    let usage = || {
        Error::Usage(format!(
            "--percentile {text}: expected FIELD:p50,p99 (percentiles in (0, 100])"
        ))
    };
    let (field, list) = text.rsplit_once(':').ok_or_else(usage)?;
    let field = FieldPath::parse(field).map_err(Error::Usage)?;
    let pcts = list
        .split(',')
        .map(|p| {
            p.trim()
                .trim_start_matches('p')
                .parse::<f64>()
                .ok()
                .filter(|p| *p > 0.0 && *p <= 100.0)
        })
        .collect::<Option<Vec<f64>>>()
        .ok_or_else(usage)?;
    Ok((field, pcts))
}

/// A result row's columns: key fields, window bounds, aggregates, and the update flag.
fn fill_row(row: &Row, key_columns: &[String], aggs: &[AggSpec], out: &mut impl Columns) {
    if let [column] = key_columns {
        // One key field (the common case): its text is the whole key, nothing to split.
        out.put(column, Cell::Json(&row.key));
    } else {
        for (column, text) in key_columns.iter().zip(row.key.split(KEY_SEPARATOR)) {
            out.put(column, Cell::Json(text));
        }
    }
    out.put("window_start", Cell::Time(row.start));
    out.put("window_end", Cell::Time(row.end));
    if row.retract {
        out.put("retract", Cell::Bool(true));
        return;
    }
    for (state, spec) in row.states.iter().zip(aggs) {
        state.output(spec, out);
    }
    if row.update {
        out.put("update", Cell::Bool(true));
    }
}

struct WindowStep {
    /// The operator (of the partition being read, for a group member).
    op: WindowOperator,
    /// A group member's operators of the partitions not being read: one per partition it
    /// owns, each with its own watermark.
    tasks: Option<PerPartition<WindowOperator>>,
    /// The fields this command reads, located by the reader thread.
    extractor: Arc<Extractor>,
    time_format: TimeFormat,
    partition_at: Option<usize>,
    by_source_partition: bool,
    keys_at: usize,
    key_columns: Vec<String>,
    /// No column name needs JSON escaping (percentile columns add only `_p99`-style suffixes).
    plain_names: bool,
    /// Rows can be updates or retractions (allowed lateness, or --emit updates).
    marks: bool,
    agg_fields: Vec<Option<usize>>,
    partitions: PartitionIds,
    table: TableWriter,
    /// A CSV row's cells, reused from row to row.
    csv_row: CsvRow,
    late: Option<LineSink>,
    rows: Vec<Row>,
    key: String,
    inputs: Vec<AggInput<'static>>,
    started: Instant,
    /// Processing time, read once per batch of records.
    now: Millis,
    written: u64,
}

fn recycle_inputs<'b>(mut v: Vec<AggInput<'_>>) -> Vec<AggInput<'b>> {
    v.clear();
    v.into_iter().map(|_| AggInput::Missing).collect()
}

impl WindowStep {
    /// Runs `f` on every operator (one per partition for a group member), with the rows.
    fn each_op(&mut self, mut f: impl FnMut(&mut WindowOperator, &mut Vec<Row>)) {
        let rows = &mut self.rows;
        match &mut self.tasks {
            Some(tasks) => tasks.for_each(&mut self.op, |_, op| f(op, rows)),
            None => f(&mut self.op, rows),
        }
    }

    /// Processing time, for idle partitions.
    fn clock(&self) -> Millis {
        self.started.elapsed().as_millis() as Millis
    }

    fn write_rows(&mut self) -> Result<()> {
        let WindowStep {
            op,
            rows,
            table,
            key_columns,
            written,
            plain_names,
            marks,
            csv_row,
            ..
        } = self;
        for row in rows.drain(..) {
            match &mut *table {
                // NDJSON rows are written straight to bytes: no map per row.
                TableWriter::Ndjson { sink, scratch } => {
                    scratch.clear();
                    scratch.push(b'{');
                    let mut columns = JsonColumns {
                        out: scratch,
                        plain_names: *plain_names,
                    };
                    fill_row(&row, key_columns, op.aggs(), &mut columns);
                    scratch.push(b'}');
                    sink.write_line(scratch)?;
                }
                csv => {
                    csv_row.clear();
                    fill_row(&row, key_columns, op.aggs(), csv_row);
                    if *marks {
                        // CSV columns come from the first row: when rows can be updates or
                        // retractions, every row carries both marks.
                        csv_row.put_missing("update", Cell::Bool(false));
                        csv_row.put_missing("retract", Cell::Bool(false));
                    }
                    csv.write_csv_row(csv_row)?;
                }
            }
            *written += 1;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.table.flush()?;
        if let Some(late) = &mut self.late {
            late.flush()?;
        }
        Ok(())
    }

    /// Flushes, and makes compressed files whole: at the end of the run.
    fn close(&mut self) -> Result<()> {
        self.table.close()?;
        if let Some(late) = &mut self.late {
            late.close()?;
        }
        Ok(())
    }

    /// Reads the record's fields: its event time, its partition, and its key (the field
    /// itself when there is one key field, else `None` and the joined key is in `self.key`);
    /// its aggregate inputs go to `inputs`.
    fn parse<'a>(
        &mut self,
        line: &Line<'a>,
        inputs: &mut Vec<AggInput<'a>>,
    ) -> Result<(Millis, usize, Option<&'a str>), RecordError> {
        let WindowStep {
            op,
            extractor: x,
            partitions,
            key,
            keys_at,
            key_columns,
            agg_fields,
            ..
        } = self;
        let field = |i: usize| line.field(i).ok_or_else(|| x.missing(i, line.text()));
        let ts = time_of(field(0)?, &x.paths()[0], &self.time_format)?;
        let partition = match self.partition_at {
            None => 0,
            Some(i) => partitions
                .id(field(i)?)
                .ok_or_else(|| RecordError::BadValue {
                    path: x.paths()[i].to_string(),
                    reason: format!("more than {MAX_PARTITIONS} distinct partition values"),
                })?,
        };
        // One key field is used in place; several are joined in `key`.
        let single_key = match key_columns.len() {
            1 => Some(field(*keys_at)?),
            _ => {
                key.clear();
                for i in *keys_at..*keys_at + key_columns.len() {
                    if i > *keys_at {
                        key.push(KEY_SEPARATOR);
                    }
                    key.push_str(field(i)?);
                }
                None
            }
        };
        for (spec, field_at) in op.aggs().iter().zip(agg_fields.iter()) {
            let value = field_at.and_then(|i| line.field(i));
            let input = prepare(&spec.kind, value).map_err(|reason| RecordError::BadValue {
                path: field_at
                    .map(|i| x.paths()[i].to_string())
                    .unwrap_or_default(),
                reason,
            })?;
            inputs.push(input);
        }
        Ok((ts, partition, single_key))
    }
}

impl RecordStep for WindowStep {
    fn record(&mut self, line: &Line<'_>, counters: &mut Counters) -> Result<Flow, Fault> {
        if let (Some(tasks), Some((partition, _))) = (&mut self.tasks, line.offset) {
            tasks.activate(&mut self.op, partition);
        }
        let mut inputs = recycle_inputs(std::mem::take(&mut self.inputs));
        let parsed = self.parse(line, &mut inputs);
        let outcome = parsed.map(|(ts, partition, single_key)| {
            let key = single_key.unwrap_or(&self.key);
            self.op
                .process(key, ts, partition, &inputs, self.now, &mut self.rows)
        });
        self.inputs = recycle_inputs(inputs);
        match outcome? {
            Ok(Outcome::Accepted) => {}
            Ok(Outcome::Late) => {
                counters.late += 1;
                if let Some(late) = &mut self.late {
                    late.write_line(line.bytes)?;
                }
            }
            Err(TooManyWindows) => {
                return Err(Fault::Fatal(Error::BadInput {
                    position: line.position().to_string(),
                    reason: format!(
                        "more than {} open windows (--max-open-windows); raise it, or lower --delay or --allowed-lateness",
                        self.op.max_open_windows()
                    ),
                }))
            }
        }
        if !self.rows.is_empty() {
            self.write_rows()?;
        }
        Ok(Flow::Continue)
    }

    fn idle(&mut self) -> Result<()> {
        self.flush()
    }

    fn checkpoint(&mut self, with_state: bool) -> Result<StepCheckpoint> {
        let state = with_state.then(|| StepState {
            op: self.op.state(),
            partitions: self.partitions.values(),
            csv_columns: self.table.columns().map(<[String]>::to_vec),
            written: self.written,
            now: self.clock(),
        });
        let mut sinks: Vec<_> = self.table.durable()?.into_iter().collect();
        if let Some(late) = &mut self.late {
            sinks.extend(late.durable()?);
        }
        Ok(StepCheckpoint {
            state: state.map(|s| saved::encode(&s)).unwrap_or_default(),
            sinks,
        })
    }

    fn batch(&mut self) {
        self.now = self.clock();
    }

    fn assigned(&mut self, partitions: &[String]) {
        if !self.by_source_partition {
            return;
        }
        // Named by their envelope field's JSON text, which is what ids are keyed by.
        let ids = self.partitions.ids_of(partitions);
        self.now = self.clock();
        // Rows a revoked partition held back go out with the next record or tick.
        self.op.assign(&ids, self.now, &mut self.rows);
    }

    fn save_partition(&mut self, partition: i32) -> Result<Vec<u8>> {
        let tasks = self.tasks.as_ref().expect("a group member's");
        Ok(tasks.save(&self.op, partition))
    }

    fn restore_partition(&mut self, partition: i32, state: &[u8]) -> Result<()> {
        let tasks = self.tasks.as_mut().expect("a group member's");
        tasks
            .restore(&mut self.op, partition, state)
            .map_err(Error::Usage)
    }

    fn revoke_partition(&mut self, partition: i32) {
        if let Some(tasks) = &mut self.tasks {
            tasks.take(&mut self.op, partition);
        }
    }

    fn tick(&mut self, _counters: &mut Counters) -> Result<()> {
        self.now = self.clock();
        let now = self.now;
        self.each_op(|op, rows| op.tick(now, rows));
        if !self.rows.is_empty() {
            self.write_rows()?;
            self.flush()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_specs() {
        let (f, p) = parse_percentile("value.latency:p50,p99.9,99").unwrap();
        assert_eq!(f.as_str(), "value.latency");
        assert_eq!(p, vec![50.0, 99.9, 99.0]);
        assert!(parse_percentile("latency").is_err());
        assert!(parse_percentile("latency:p0").is_err());
        assert!(parse_percentile("latency:p101").is_err());
    }
}
