//! `weir window`: event-time window aggregates, wiring a source, the window operator and a
//! table sink.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use clap::{ArgMatches, ValueEnum};
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use super::plan::{self, KeepingArgs};
use crate::cli::WindowArgs;
use crate::core::aggregate::{
    is_plain_name, parse_percentile, prepare_read, AggInput, AggKind, AggSpec,
};
use crate::core::partitioned::{PartitionStates, Tasks};
use crate::core::profile_task::WindowRule;
use crate::core::record::{Extractor, FieldList, FieldPath, RecordError};
use crate::core::saved;
use crate::core::shuffle::Marker;
use crate::core::time::{Millis, TimeFormat};
use crate::core::watermark::{PartitionIds, Watermarks};
use crate::core::window::{
    check_column_names, EmitMode, Key, Outcome, Row, RowColumns, TooManyWindows, WindowConfig,
    WindowOperator, WindowState,
};
use crate::error::{Error, Fault, Result};
use crate::io::input::{InputPlan, Partitioning};
use crate::io::sink::{LineSink, RecordFields, SinkPlan, TableFormat, TableWriter};
use crate::io::spec::SinkSpec;
use crate::runtime::metrics::StepGauges;
use crate::runtime::{
    clock_from, key_read_ahead, number_read_ahead, run_command, saved_state, time_read_ahead,
    Command, Counters, Flow, Line, PartitionFields, Prepare, RecordStep, Restored, RunPlan,
    Selection, Sink, Stats, StepCheckpoint,
};

pub fn run(args: WindowArgs, matches: &ArgMatches, stop: &AtomicBool) -> Result<()> {
    let report = plan::report_plan(&args.report);
    let plan = || Windowing::plan(&args, matches);
    run_command(Stats::new("window"), &report, plan, stop)
}

/// A window run's own part, checked.
struct Windowing {
    sink: SinkPlan,
    format: TableFormat,
    late_output: Option<PathBuf>,
    config: WindowConfig,
    delay: Millis,
    idle_timeout: Option<Millis>,
    per_partition: bool,
    fields: Fields,
    time_format: TimeFormat,
    key_columns: Vec<String>,
}

/// Where the fields a window run reads sit in its one extractor: time, partition, keys,
/// values.
struct Fields {
    extractor: Arc<Extractor>,
    parts: PartitionFields,
    keys_at: usize,
    /// With -G: the envelope's `key`, then its `key_encoding`, which must spell the record's
    /// `--key` value.
    message_key_at: Option<usize>,
    /// For each aggregate, the field it reads, if any.
    agg_fields: Vec<Option<usize>>,
}

impl Fields {
    /// The fields to locate, and `--where`'s after them.
    fn new(
        (time, time_format): (FieldPath, &TimeFormat),
        parts: &Partitioning,
        keys: &[FieldPath],
        values: Vec<FieldPath>,
        aggs: &[AggSpec],
        select: impl FnOnce(&mut FieldList) -> Result<Option<Selection>>,
    ) -> Result<(Fields, Option<Selection>)> {
        let mut list = FieldList::default();
        list.add(time);
        let partition_fields = plan::partition_fields(parts, &mut list, true);
        let keys_at = list.add_all(keys.iter().cloned());
        let values_at = list.add_all(values);
        let message_key_at =
            (parts.per_partition && !parts.shuffled).then(|| list.add_message_key());
        let selection = select(&mut list)?;
        // The first number added up is read on the reader's thread, as the time is.
        let number_at = aggs.iter().find(|a| a.kind.numeric());
        let number_at = number_at.and_then(|a| a.field).map(|f| values_at + f);
        let extractor = time_read_ahead(list.extractor(), Some(0), time_format);
        let extractor = number_read_ahead(extractor, number_at);
        // One key field is coded on the reader's thread too.
        let extractor = key_read_ahead(extractor, (keys.len() == 1).then_some(keys_at));
        let fields = Fields {
            extractor: Arc::new(extractor),
            parts: partition_fields,
            keys_at,
            message_key_at,
            agg_fields: aggs
                .iter()
                .map(|a| a.field.map(|f| values_at + f))
                .collect(),
        };
        Ok((fields, selection))
    }
}

impl Windowing {
    fn plan(args: &WindowArgs, matches: &ArgMatches) -> Result<RunPlan<Windowing>> {
        let time = plan::required_time(&args.time, "window")?;
        let mut input = plan::input_plan(&args.input, false)?;
        if args.shuffle.repartition {
            let at = Some((time.clone(), args.time.time_format.clone()));
            let partitions = args.shuffle.repartition_partitions;
            input.repartition("window", partitions, &args.keys, at)?;
        }
        // A group member's partitions are tasks of their own, each with its own watermark.
        let parts = input.partitioning(
            args.partition_by.as_ref(),
            "has its own windows and watermark",
        )?;
        plan::check_idle_timeout(args.idle_timeout, &parts)?;
        let rule = window_rule(args)?;
        let (aggs, value_paths) = aggregate_specs(args, matches)?;
        let key_columns: Vec<String> = args.keys.iter().map(FieldPath::column_name).collect();
        check_column_names(&key_columns, &aggs).map_err(Error::Usage)?;
        // One extractor pulls every field the command needs in one pass over the line.
        let format = &args.time.time_format;
        let select = |list: &mut FieldList| plan::selection(&args.input.conditions, format, list);
        let (fields, select) = Fields::new(
            (time, format),
            &parts,
            &args.keys,
            value_paths,
            &aggs,
            select,
        )?;
        let sink = row_sink(args)?;
        let config = WindowConfig {
            kind: rule.kind,
            allowed_lateness: rule.allowed_lateness,
            emit: args.emit,
            aggs,
            max_open_windows: rule.max_open_windows,
        };
        let job = job(args, &input, &fields, &config);
        let job = format!("{job}, --where {:?}", args.input.conditions);
        let keeping = KeepingArgs::partitioned("window", &args.checkpoint, &args.changelog)
            .plan(&mut input, &sink.spec, &job)?;
        if parts.per_partition && args.keys.is_empty() {
            return Err(Error::Usage(
                "with -G each partition keeps the windows of its own keys: give --key FIELD, the field the topic is keyed by (a window without a key spans every partition)".into(),
            ));
        }
        let windowing = Windowing {
            sink,
            format: args.format,
            late_output: args.late_output.clone(),
            config,
            delay: args.delay,
            idle_timeout: args.idle_timeout,
            per_partition: parts.per_partition,
            time_format: args.time.time_format.clone(),
            key_columns,
            fields,
        };
        plan::prepare_reports(&args.report, "window", &args.input, None)?;
        Ok(RunPlan {
            prepare: Prepare::Extract(windowing.fields.extractor.clone()),
            command: windowing,
            input: Box::new(input),
            keeping,
            // Where side records go is no part of a group's job (each member writes its own
            // file), but a checkpoint file holds that file's committed length.
            job: format!("{job}, late output {:?}", args.late_output),
            limit: None,
            select,
        })
    }
}

/// Where rows go. Rows of one key land in one partition (or shard), in order. A Kinesis
/// record needs a partition key: rows without key fields are keyed by their window.
fn row_sink(args: &WindowArgs) -> Result<SinkPlan> {
    let sink_spec = SinkSpec::parse(&args.output).map_err(Error::Usage)?;
    let to_broker = matches!(sink_spec, SinkSpec::Kafka(_) | SinkSpec::Kinesis(_));
    if to_broker && args.format != TableFormat::Ndjson {
        return Err(Error::Usage(format!(
            "--format {} cannot go to Kafka or Kinesis; rows go there as NDJSON",
            args.format.to_possible_value().expect("a value").get_name()
        )));
    }
    let first_key = args.keys.first().map(|k| k.column_name());
    let row_key = match (&sink_spec, first_key) {
        (SinkSpec::Kafka(_), Some(column)) | (SinkSpec::Kinesis(_), Some(column)) => Some(column),
        (SinkSpec::Kinesis(_), None) => Some("window_start".to_string()),
        _ => None,
    };
    let fields = RecordFields {
        key: row_key
            .map(|column| column.parse())
            .transpose()
            .map_err(Error::Usage)?,
        ..RecordFields::default()
    };
    plan::sink_plan(&args.output, fields, &args.input)
}

/// What makes a checkpoint this job's: the inputs and every flag that shapes the result.
fn job(args: &WindowArgs, input: &InputPlan, fields: &Fields, config: &WindowConfig) -> String {
    format!(
        "inputs {:?}, fields {:?}, {:?}, partition {:?}, keys at {}, {:?}, lateness {}, {:?}, aggregates {:?}, --delay {}, --idle-timeout {:?}, {:?}, late output kept {}",
        input.job_source(),
        // The envelope's key, read with -G, is no part of the job.
        fields.extractor.paths()[..fields.message_key_at.unwrap_or(usize::MAX).min(fields.extractor.paths().len())]
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>(),
        args.time.time_format,
        fields.parts.at,
        fields.keys_at,
        config.kind,
        args.allowed_lateness,
        args.emit,
        config.aggs.iter()
            .map(|a| format!("{:?} {:?} {}", a.kind, a.field, a.name))
            .collect::<Vec<_>>(),
        args.delay,
        args.idle_timeout,
        args.format,
        args.late_output.is_some(),
    )
}

impl Windowing {
    /// Fresh operators: one, or one per partition for a group member, each with its own
    /// watermark.
    fn operators(&self) -> Tasks<WindowOperator> {
        let watermarks = Watermarks::new(self.delay, self.idle_timeout);
        let first = WindowOperator::new(self.config.clone(), watermarks.clone());
        let config = self.config.clone();
        let fresh = move || WindowOperator::new(config.clone(), watermarks.clone());
        Tasks::new(self.per_partition, first, fresh)
    }
}

impl Command for Windowing {
    type Step = WindowStep;

    fn open(self, restored: Option<&Restored>) -> Result<WindowStep> {
        // A finished job's last checkpoint keeps no state.
        let saved: Option<StepState> = saved_state(restored)?;
        let sink = LineSink::open_resumed(&self.sink, restored)?;
        let late = LineSink::open_side(self.late_output.as_deref(), restored)?;
        let aggs_plain = self.config.aggs.iter().all(|a| is_plain_name(&a.name));
        // Percentile columns add only `_p99`-style suffixes to a plain name.
        let plain_names = self.key_columns.iter().all(|k| is_plain_name(k)) && aggs_plain;
        let ops = self.operators();
        let mut step = WindowStep {
            ops,
            fields: self.fields,
            time_format: self.time_format,
            key_columns: self.key_columns,
            marks: self.config.allowed_lateness > 0 || self.config.emit == EmitMode::Updates,
            partitions: PartitionIds::default(),
            table: TableWriter::new(sink, self.format, plain_names),
            late,
            rows: Vec::new(),
            key: String::new(),
            inputs: Vec::new(),
            started: Instant::now(),
            now: 0,
            written: 0,
            // Restored without a state: the job had ended, and its output is whole.
            late_by_partition: Vec::new(),
            header_due: restored.is_none() || saved.is_some(),
        };
        if let Some(saved) = saved {
            step.table.set_columns(saved.csv_columns);
            step.ops.active =
                WindowOperator::restore(self.config, saved.op).map_err(Error::Usage)?;
            step.partitions = PartitionIds::from_values(saved.partitions);
            // Processing time goes on from where the checkpoint left it (idle timeouts).
            step.started = clock_from(saved.now);
            step.written = saved.written;
        }
        Ok(step)
    }
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

/// The window rule of `--tumbling`, `--hop`/`--slide` or `--session`, one of which clap made sure is given.
fn window_rule(args: &WindowArgs) -> Result<WindowRule> {
    let sizes = (args.tumbling, args.hop, args.slide);
    let shift = (args.offset, args.allowed_lateness);
    let rule = plan::window_rule(sizes, args.session, shift, args.max_open_windows)?;
    Ok(rule.expect("clap requires a window"))
}

/// An aggregate as the command line gives it: where its flag is, what it computes, the
/// field it reads and its column name.
type AggItem = (usize, AggKind, Option<FieldPath>, String);

/// The aggregates in command-line order, with their output names, and the value fields they
/// read (deduplicated; `AggSpec::field` indexes into them).
fn aggregate_specs(
    args: &WindowArgs,
    matches: &ArgMatches,
) -> Result<(Vec<AggSpec>, Vec<FieldPath>)> {
    let mut items = aggregate_items(args, matches)?;
    if items.is_empty() {
        return Err(Error::Usage(
            "give at least one aggregate: --count, --sum F, --min F, --max F, --avg F, --distinct F, --percentile F:p50,p99, --first F, --last F".into(),
        ));
    }
    items.sort_by_key(|(at, ..)| *at);
    name_aggregates(&mut items, args, matches)?;
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

/// Where each of `n` values of flag `id` stood on the command line.
fn positions(matches: &ArgMatches, id: &str, n: usize) -> Vec<usize> {
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
}

/// Every aggregate flag, with where it stood and its default column name.
fn aggregate_items(args: &WindowArgs, matches: &ArgMatches) -> Result<Vec<AggItem>> {
    let mut items: Vec<AggItem> = Vec::new();
    if args.count {
        let at = positions(matches, "count", 1)[0];
        items.push((at, AggKind::Count, None, "count".into()));
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
        for (at, field) in positions(matches, id, fields.len()).into_iter().zip(fields) {
            let name = format!("{id}_{}", field.column_name());
            items.push((at, kind.clone(), Some(field.clone()), name));
        }
    }
    let percentiles = &args.percentile;
    for (at, text) in positions(matches, "percentile", percentiles.len())
        .into_iter()
        .zip(percentiles)
    {
        let (field, pcts) = parse_percentile(text).map_err(Error::Usage)?;
        let name = format!("p_{}", field.column_name());
        items.push((at, AggKind::Percentile(pcts), Some(field), name));
    }
    Ok(items)
}

/// `--as NAME` names the aggregate before it on the command line.
fn name_aggregates(items: &mut [AggItem], args: &WindowArgs, matches: &ArgMatches) -> Result<()> {
    let mut renamed = vec![false; items.len()];
    for (at, name) in positions(matches, "names", args.names.len())
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
    Ok(())
}

struct WindowStep {
    /// The run's operator, or a group member's per partition (each with its own
    /// watermark), the one being read active.
    ops: Tasks<WindowOperator>,
    /// The fields this command reads, located by the reader thread.
    fields: Fields,
    time_format: TimeFormat,
    key_columns: Vec<String>,
    /// Rows can be updates or retractions (allowed lateness, or --emit updates).
    marks: bool,
    partitions: PartitionIds,
    table: TableWriter,
    late: Option<LineSink>,
    rows: Vec<Row>,
    key: String,
    inputs: Vec<AggInput<'static>>,
    started: Instant,
    /// Processing time, read once per batch of records.
    now: Millis,
    written: u64,
    /// Records dropped as late, by partition id (for `--metrics`; not kept across runs).
    late_by_partition: Vec<u64>,
    /// A CSV of no rows gets its header at the end, unless the job had ended before.
    header_due: bool,
}

/// One more late record of partition `id` (ids are dense, at most `MAX_PARTITIONS`).
fn count_late(late: &mut Vec<u64>, id: usize) {
    if id >= late.len() {
        late.resize(id + 1, 0);
    }
    late[id] += 1;
}

fn recycle_inputs<'b>(mut v: Vec<AggInput<'_>>) -> Vec<AggInput<'b>> {
    v.clear();
    v.into_iter().map(|_| AggInput::Missing).collect()
}

impl WindowStep {
    /// Runs `f` on every operator (one per partition for a group member), with the rows.
    fn each_op(&mut self, mut f: impl FnMut(&mut WindowOperator, &mut Vec<Row>)) {
        let rows = &mut self.rows;
        self.ops.for_each(|op| f(op, rows));
    }

    /// Processing time, for idle partitions.
    fn clock(&self) -> Millis {
        self.started.elapsed().as_millis() as Millis
    }

    fn write_rows(&mut self) -> Result<()> {
        let (key_columns, aggs) = (&self.key_columns[..], self.ops.active.aggs());
        let columns = |row| RowColumns {
            row,
            key_columns,
            aggs,
        };
        self.table.write_rows(&self.rows, columns, self.marks)?;
        self.written += self.rows.len() as u64;
        self.rows.clear();
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.table.flush()?;
        if let Some(late) = &mut self.late {
            late.flush()?;
        }
        Ok(())
    }

    /// With -G, each partition keeps the windows of its own keys: the record must be keyed
    /// by its `--key` value, or the run stops before a wrong row is written.
    fn keyed(&self, line: &Line<'_>) -> Result<(), Fault> {
        let Some(at) = self.fields.message_key_at else {
            return Ok(());
        };
        let keys_at = self.fields.keys_at;
        let parts: SmallVec<[&str; 4]> = (keys_at..keys_at + self.key_columns.len())
            .filter_map(|i| line.field(i))
            .collect();
        line.check_keyed(at, &parts, "--key")
    }

    /// Reads the record's fields: its event time, its partition (`shuffled`: its input
    /// partition, behind a shuffle), and its key (the field itself when there is one key
    /// field, else `None` and the joined key is in `self.key`); its aggregate inputs go to
    /// `inputs`.
    fn parse<'a>(
        &mut self,
        line: &Line<'a>,
        shuffled: Option<usize>,
        inputs: &mut Vec<AggInput<'a>>,
    ) -> Result<(Millis, usize, Option<&'a str>), RecordError> {
        let WindowStep {
            ops,
            fields,
            partitions,
            key,
            key_columns,
            ..
        } = self;
        let x = &*fields.extractor;
        let keys_at = fields.keys_at;
        let ts = line.time(0, x, &self.time_format)?;
        let partition = match shuffled {
            // Behind a shuffle, the input partition's number is its id in every task.
            Some(input) => input,
            None => fields.parts.id(line, x, partitions)?,
        };
        // One key field is used in place; several are joined in `key`.
        let single_key = line.key(keys_at, key_columns.len(), x, key)?;
        for (spec, field_at) in ops.active.aggs().iter().zip(fields.agg_fields.iter()) {
            // A count reads no field. (Through `prepare`, its input went by a stack slot whose
            // narrow store the wider load after it waited on: 3% of a one-core run.)
            if spec.kind == AggKind::Count {
                inputs.push(AggInput::Missing);
                continue;
            }
            let value = field_at.and_then(|i| line.field(i));
            let read = field_at.and_then(|i| line.decimal(i, x));
            let input =
                prepare_read(&spec.kind, value, read).map_err(|reason| RecordError::BadValue {
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

/// Rows fired at the end of the input that are written together: enough for the table
/// writer to format them on two threads (`PARALLEL_ROWS`), few enough to stay in the cache.
const END_BATCH: usize = 32_768;

impl RecordStep for WindowStep {
    fn record(&mut self, line: &Line<'_>, counters: &mut Counters) -> Result<Flow, Fault> {
        self.ops.activate(line.task());
        let shuffled = match self.fields.parts.shuffled(line, &self.fields.extractor)? {
            Some((input, offset)) => {
                // A record a restarted writer sent again was taken in already.
                if !self.ops.active.first_pass(input, offset, self.now) {
                    return Ok(Flow::Continue);
                }
                if let Some(before) = line.carried {
                    (self.ops.active).carried(input, before, self.now, &mut self.rows);
                }
                Some(input)
            }
            None => None,
        };
        let mut inputs = recycle_inputs(std::mem::take(&mut self.inputs));
        let parsed = self.parse(line, shuffled, &mut inputs);
        if parsed.is_ok() {
            self.keyed(line)?;
        }
        if let Some(n) = self.fields.parts.count(line) {
            self.ops.active.expect(n, self.now);
        }
        let outcome = parsed.map(|(ts, partition, single_key)| {
            let key = match single_key {
                Some(text) => Key {
                    text,
                    code: line.key_code(),
                },
                None => Key::from(&self.key),
            };
            let ops = &mut self.ops.active;
            let outcome = ops.process(key, ts, partition, &inputs, self.now, &mut self.rows);
            (partition, outcome)
        });
        self.inputs = recycle_inputs(inputs);
        let (partition, outcome) = outcome?;
        match outcome {
            Ok(Outcome::Accepted) => {}
            Ok(Outcome::Late) => {
                counters.late += 1;
                count_late(&mut self.late_by_partition, partition);
                if let Some(late) = &mut self.late {
                    late.write_line(line.bytes)?;
                }
            }
            Err(TooManyWindows) => {
                return Err(line.fatal(format!(
                    "more than {} open windows (--max-open-windows); raise it, or lower --delay or --allowed-lateness",
                    self.ops.active.max_open_windows()
                )))
            }
        }
        if !self.rows.is_empty() {
            self.write_rows()?;
        }
        Ok(Flow::Continue)
    }

    fn encoding(&self) -> Option<String> {
        self.table.encoding()
    }

    fn idle(&mut self) -> Result<()> {
        self.flush()
    }

    fn checkpoint(&mut self, with_state: bool) -> Result<StepCheckpoint> {
        let state = with_state.then(|| StepState {
            op: self.ops.active.state(),
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
        let Some(ids) = self.fields.parts.assigned(partitions, &mut self.partitions) else {
            return;
        };
        self.now = self.clock();
        // Rows a revoked partition held back go out with the next record or tick.
        self.ops.active.assign(&ids, self.now, &mut self.rows);
    }

    fn partition_states(&mut self) -> Option<&mut dyn PartitionStates> {
        Some(&mut self.ops)
    }

    fn gauges(&self, g: &mut StepGauges) {
        let names = self.partitions.values();
        let (mut windows, mut keys, mut bytes) = (0, 0, 0);
        self.ops.each(|op| {
            windows += op.open_windows() as u64;
            keys += op.live_keys() as u64;
            bytes += op.state_bytes() as u64;
            g.marks(&names, op.partition_marks());
        });
        (g.state.open_windows, g.state.keys) = (Some(windows), Some(keys));
        g.state.bytes = Some(bytes);
        for (id, late) in self.late_by_partition.iter().enumerate() {
            let name = names.get(id).cloned().unwrap_or_else(|| id.to_string());
            g.late.push((name, *late));
        }
        g.written = Some(self.written);
    }

    fn partition_ended(&mut self, partition: i32, _: &mut Counters) -> Result<()> {
        // A group member's task of it has all its input: every window it holds is complete.
        let rows = &mut self.rows;
        self.ops.end_partition(partition, |op| op.finish(rows));
        self.write_rows()
    }

    fn marker(&mut self, partition: i32, marker: &Marker) -> Result<()> {
        self.ops.activate(Some(partition));
        self.now = self.clock();
        self.ops.active.marker(marker, self.now, &mut self.rows);
        self.write_rows()
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

    fn finish(&mut self, ended: Result<()>, _: &mut Counters) -> Result<()> {
        // A stop leaves the open windows unfired: they are incomplete.
        ended?;
        // A bounded input ended: the watermark goes to +infinity and every window fires, a
        // batch of rows at a time, one operator after the other (the order of the rows).
        let mut current = 0;
        loop {
            let (mut at, mut more) = (0, false);
            self.each_op(|op, rows| {
                if at == current {
                    more = !op.finish_some(rows, END_BATCH);
                }
                at += 1;
            });
            self.write_rows()?;
            if !more {
                current += 1;
            }
            if current >= at {
                break;
            }
        }
        // A CSV of no rows still has its header.
        if !self.header_due {
            return Ok(());
        }
        let empty = self.ops.active.empty_row(self.key_columns.len());
        let columns = RowColumns {
            row: &empty,
            key_columns: &self.key_columns,
            aggs: self.ops.active.aggs(),
        };
        self.table.write_header(&columns, self.marks)
    }

    fn close(&mut self, counters: &mut Counters) -> Result<()> {
        counters.written = self.written;
        self.each_op(|op, _| {
            let peaks = op.peaks();
            counters.peak_open_windows = counters.peak_open_windows.max(peaks.open_windows as u64);
            counters.peak_keys = counters.peak_keys.max(peaks.keys as u64);
        });
        // Flushed, and compressed files made whole.
        self.table.close()?;
        if let Some(late) = &mut self.late {
            late.close()?;
        }
        Ok(())
    }
}
