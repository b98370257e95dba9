//! What the commands' plans share: the plans of the input, the sink, the state kept between
//! runs and the report, made from the arguments every command takes alike, each checked
//! before anything is opened.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::files;
use crate::cli::{
    AvroJsonStyle, BrokerArgs, ChangelogArgs, CheckpointArgs, ClientArgs, GlueCompression,
    InputArgs, ReportArgs, SchemaArgs, SchemaFormat, TimeArgs,
};
use crate::core::avro::AvroJson;
use crate::core::filter::Filter;
use crate::core::profile_task::WindowRule;
use crate::core::record::{Extractor, FieldList, FieldPath};
use crate::core::time::{human_duration, now_millis, Millis, TimeFormat, TimeRange};
use crate::core::window::WindowKind;
use crate::error::{Error, Result};
use crate::io::input::{
    ClientRequest, InputPlan, Partitioning, SchemaRequest, SourcePlan, SourceRequest,
};
use crate::io::kafka::{ChangelogPlan, ClientOptions};
use crate::io::kinesis::{StatesPlan, StoreSpec};
use crate::io::metrics::Endpoint;
use crate::io::schema::encode::{EncodePlan, EncodeSchema};
use crate::io::schema::registry::RegistryOptions;
use crate::io::schema::{Format, SchemaFileRequest};
use crate::io::sink::{RecordFields, SinkPlan};
use crate::io::spec::{self, SinkSpec};
use crate::report::metrics::{render_run, Exposition, Kind, MetricsFormat, RunLabels};
use crate::runtime::metrics;
use crate::runtime::watch::{Findings, Watch};
use crate::runtime::{
    CheckpointPlan, Keeping, PartitionFields, PolicyPlan, Prepare, ReportPlan, Selection,
};

/// `--stats` and `--quiet`.
pub fn report_plan(report: &ReportArgs) -> ReportPlan {
    ReportPlan {
        stats: report.stats.clone(),
        quiet: report.quiet,
    }
}

/// The last thing a plan does, once the rest of it holds: checks the files only the run's
/// end writes (`--stats`, `--plot`), then binds `--metrics`.
pub fn prepare_reports(
    report: &ReportArgs,
    command: &'static str,
    input: &InputArgs,
    plot: Option<&Path>,
) -> Result<()> {
    check_files_written_at_end(&report_plan(report), plot)?;
    serve_metrics(report, command, input)
}

/// `--metrics ADDR`: the endpoint bound (a port in use is exit 4 before anything is opened),
/// and serving the run's metrics from then on.
fn serve_metrics(report: &ReportArgs, command: &'static str, input: &InputArgs) -> Result<()> {
    let Some(addr) = &report.metrics else {
        return Ok(());
    };
    let endpoint = Endpoint::bind(addr)?;
    metrics::enable();
    let labels = RunLabels {
        command,
        group: input.broker.group.clone(),
    };
    endpoint.serve_in_background(move |accept| {
        let format = MetricsFormat::from_accept(accept);
        let snapshot = metrics::snapshot();
        let body = render_run(&snapshot, &labels, now_millis(), format);
        (format.content_type(), body)
    });
    Ok(())
}

/// `lag --serve`: each scrape answered with the report `measure` renders (Prometheus's
/// format), measured again once `watch.every` has passed since the last (at each scrape
/// without it), with the exporter's own health: whether the last measuring worked, and how
/// many failed. A failure serves no stale report, only that. A signal ends it (exit 0).
pub fn serve_reports(
    endpoint: &Endpoint,
    watch: Watch,
    stop: &AtomicBool,
    mut measure: impl FnMut() -> Result<(String, Findings)>,
) -> Result<()> {
    if !watch.quiet {
        eprintln!(
            "weir {}: serving http://{}/metrics",
            watch.command, endpoint.addr
        );
    }
    let every = Duration::from_millis(watch.every.unwrap_or(0).max(0) as u64);
    let (mut last, mut failures) = (None::<(Instant, String)>, 0u64);
    endpoint.serve_until(stop, |accept| {
        if last.as_ref().is_none_or(|(at, _)| at.elapsed() >= every) {
            last = match measure() {
                Ok((report, _)) => Some((Instant::now(), report)),
                Err(e) => {
                    failures += 1;
                    if !watch.quiet && !stop.load(Ordering::Relaxed) {
                        eprintln!("weir {}: {e}", watch.command);
                    }
                    None
                }
            };
        }
        let format = MetricsFormat::from_accept(accept);
        let mut own = Exposition::new(format);
        let up = "1 when the last measuring of the lag worked, 0 when it failed.";
        own.one(
            "weir_lag_up",
            Kind::Gauge,
            up,
            &[],
            u8::from(last.is_some()),
        );
        let failed = "Measurings of the lag that failed (a cluster or stream out of reach).";
        own.one(
            "weir_lag_failures_total",
            Kind::Counter,
            failed,
            &[],
            failures,
        );
        let report = last.as_ref().map_or("", |(_, r)| r.as_str());
        (format.content_type(), format!("{report}{}", own.finish()))
    });
    Ok(())
}

/// How clients connect: `-X`, `-F`, `--timeout`, `--endpoint-url`.
pub fn clients(client: &ClientArgs) -> ClientRequest {
    ClientRequest {
        properties: client.properties.clone(),
        config_file: client.config_file.clone(),
        timeout: client.timeout(),
        endpoint_url: client.endpoint_url.clone(),
    }
}

/// Whether `--value-format`/`--value-schema` describe the sink's values rather than the
/// source's: when the input is no broker (NDJSON), or with `--register`.
fn sink_owns_value_schema(input: &InputArgs) -> bool {
    let broker_input = input.sources.first().is_some_and(|s| spec::is_brokered(s));
    input.broker.schemas.register || !broker_input
}

/// A value's schema file: `--value-schema`, or for Protobuf `--proto-file`.
fn value_file(s: &SchemaArgs) -> Option<PathBuf> {
    schema_file(s.value_format, &s.value_schema, s)
}

/// `file`, or `--proto-file` where the format is Protobuf.
fn schema_file(
    format: Option<SchemaFormat>,
    file: &Option<PathBuf>,
    s: &SchemaArgs,
) -> Option<PathBuf> {
    let proto = format == Some(SchemaFormat::Protobuf);
    file.clone()
        .or_else(|| s.proto_file.clone().filter(|_| proto))
}

/// Whether the sink encodes values: with a schema id, a subject, a file to register, or a
/// format of its own.
fn sink_encodes(s: &SchemaArgs, sink_owns: bool) -> bool {
    s.value_schema_id.is_some()
        || s.value_subject.is_some()
        || s.register
        || (sink_owns && s.value_format.is_some())
}

/// `-r`, `--value-format`/`--value-schema`, `--key-format`/`--key-schema`, `--avro-json`, as
/// the source decodes with them.
fn schema_request(input: &InputArgs) -> SchemaRequest {
    let s = &input.broker.schemas;
    let sink_owns = sink_owns_value_schema(input);
    let part = |f: Option<SchemaFormat>, path: &Option<PathBuf>| {
        f.zip(path.clone()).map(|(f, p)| (format_of(f), p))
    };
    let proto = |message: &Option<String>| SchemaFileRequest {
        message: message.clone(),
        includes: s.proto_import_path.clone(),
        validate: s.validate,
    };
    SchemaRequest {
        registry: s.schema_registry.clone(),
        value: match sink_owns {
            true => None,
            false => part(s.value_format, &value_file(s)),
        },
        key: part(s.key_format, &schema_file(s.key_format, &s.key_schema, s)),
        style: match s.avro_json {
            AvroJsonStyle::Weir => AvroJson::Weir,
            AvroJsonStyle::Spec => AvroJson::Spec,
        },
        value_proto: proto(&s.value_proto_type),
        key_proto: proto(&s.key_proto_type),
        reader: s.reader_schema.clone(),
        encodes: sink_encodes(s, sink_owns),
        validate: s.validate,
    }
}

/// SOURCE with its flags, the error policy and the line limit, checked. `time_range` says
/// the command reads `--from`/`--to` on NDJSON input as an event-time range.
pub fn input_plan(input: &InputArgs, time_range: bool) -> Result<InputPlan> {
    let b = &input.broker;
    let s = &b.schemas;
    if s.value_format.is_some() && value_file(s).is_none() && !sink_owns_value_schema(input) {
        return Err(Error::Usage("--value-format on a Kafka or Kinesis source reads unframed values of --value-schema FILE: give it".into()));
    }
    if s.key_format.is_some() && schema_file(s.key_format, &s.key_schema, s).is_none() {
        return Err(Error::Usage(
            "--key-format reads unframed keys of --key-schema FILE: give it".into(),
        ));
    }
    let request = SourceRequest {
        sources: input.sources.clone(),
        partitions: b.partitions.clone(),
        group: b.group.clone(),
        from: b.from.clone(),
        to: b.to.clone(),
        exit_at_end: b.exit_at_end,
        shards: b.shards.clone(),
        efo: b.efo.clone(),
        lease_time: b.lease_time,
        clients: clients(&b.client),
        time_range,
        schemas: schema_request(input),
    };
    let policy = PolicyPlan::new(input.on_error, input.dead_letter.as_deref());
    Ok(InputPlan::new(
        SourcePlan::new(&request)?,
        policy,
        input.max_line_bytes,
    ))
}

/// `--where`: the conditions, parsed (exit 2 naming the flag's column), their fields added
/// to those the command locates.
pub fn selection(
    conditions: &[String],
    time_format: &TimeFormat,
    fields: &mut FieldList,
) -> Result<Option<Selection>> {
    if conditions.is_empty() {
        return Ok(None);
    }
    let filter = Filter::parse_all(conditions, time_format)
        .map_err(|(i, e)| Error::Usage(format!("--where '{}': {e}", conditions[i])))?;
    let at = fields.add_all(filter.paths().iter().cloned());
    Ok(Some(Selection::new(filter, at)))
}

/// What a pass-through command (`consume`, `replay`) reads of each record: its event time,
/// when it filters by one, then `--where`'s fields, located together.
pub struct PassThrough {
    /// The extractor whose field 0 is the time, when there is one.
    pub time: Option<Arc<Extractor>>,
    pub select: Option<Selection>,
    extractor: Option<Arc<Extractor>>,
}

impl PassThrough {
    pub fn plan(time: Option<FieldPath>, input: &InputArgs, format: &TimeFormat) -> Result<Self> {
        let has_time = time.is_some();
        let mut fields = FieldList::default();
        fields.add_some(time);
        let select = selection(&input.conditions, format, &mut fields)?;
        let extractor = (has_time || select.is_some()).then(|| Arc::new(fields.extractor()));
        Ok(PassThrough {
            time: extractor.clone().filter(|_| has_time),
            select,
            extractor,
        })
    }

    /// How the reader thread checks each record: `otherwise` when nothing is located.
    pub fn prepare(&self, otherwise: Prepare) -> Prepare {
        match (&self.extractor, &self.time) {
            (Some(x), Some(_)) => Prepare::Extract(x.clone()),
            // --where alone: a record that is no object has none of its fields.
            (Some(x), None) => Prepare::Select(x.clone()),
            (None, _) => otherwise,
        }
    }
}

/// SINK (`-o`), with the fields a broker sink takes from each record, and the schema it
/// encodes values with.
pub fn sink_plan(output: &str, mut fields: RecordFields, input: &InputArgs) -> Result<SinkPlan> {
    let clients = clients(&input.broker.client);
    let kafka = clients.kafka()?;
    fields.encode = encode_plan(input, &kafka)?;
    SinkPlan::new(
        SinkSpec::parse(output).map_err(Error::Usage)?,
        fields,
        kafka,
        clients.aws(),
    )
}

/// The sink's schema: `--value-schema-id N`, `--value-subject S[@V]`, `--value-schema FILE`
/// (with `--register`), or `--value-format` alone (the latest of TOPIC-value).
fn encode_plan(input: &InputArgs, client: &ClientOptions) -> Result<Option<EncodePlan>> {
    let s = &input.broker.schemas;
    let sink_owns = sink_owns_value_schema(input);
    if !sink_encodes(s, sink_owns) {
        return Ok(None);
    }
    let usage = |m: &str| Err(Error::Usage(m.to_string()));
    let glue = (s.schema_registry.as_deref()).is_some_and(|r| r.starts_with("glue://"));
    if s.glue_compression.is_some() && !glue {
        return usage(
            "--glue-compression compresses values framed for a Glue registry: give -r glue://NAME",
        );
    }
    let file = value_file(s).filter(|_| sink_owns);
    if s.register && file.is_none() {
        return usage("--register registers --value-schema FILE (or --proto-file FILE): give it");
    }
    let schema = match (s.value_schema_id, &s.value_subject, file) {
        (Some(_), _, Some(_)) => return usage("--value-schema-id and --value-schema: give one"),
        (Some(id), _, None) => EncodeSchema::Id(id),
        (None, subject, Some(path)) => EncodeSchema::File {
            path,
            subject: subject.clone(),
            register: s.register,
        },
        (None, Some(subject), None) => {
            let (name, version) = subject_version(subject)?;
            EncodeSchema::Subject(Some(name), version)
        }
        (None, None, None) => EncodeSchema::Subject(None, -1),
    };
    let registry = (s.schema_registry.as_deref())
        .map(|url| RegistryOptions::new(url, &client.registry, client.timeout))
        .transpose()?;
    if registry.is_none() && !matches!(schema, EncodeSchema::File { .. }) {
        return usage("--value-schema-id, --value-subject and --value-format without --value-schema take the sink's schema from a registry: give -r URL");
    }
    Ok(Some(EncodePlan {
        registry,
        format: s.value_format.map(format_of),
        schema,
        proto: SchemaFileRequest {
            message: s.value_proto_type.clone(),
            includes: s.proto_import_path.clone(),
            validate: true,
        },
        glue_zlib: s.glue_compression == Some(GlueCompression::Zlib),
    }))
}

/// `SUBJECT` (the latest version, -1) or `SUBJECT@VERSION`.
fn subject_version(subject: &str) -> Result<(String, i64)> {
    match subject.rsplit_once('@') {
        Some((name, v)) => {
            let v = v.parse().map_err(|_| {
                Error::Usage(format!("--value-subject {subject}: a number after @"))
            })?;
            Ok((name.to_string(), v))
        }
        None => Ok((subject.to_string(), -1)),
    }
}

fn format_of(f: SchemaFormat) -> Format {
    match f {
        SchemaFormat::Avro => Format::Avro,
        SchemaFormat::Protobuf => Format::Protobuf,
        SchemaFormat::JsonSchema => Format::JsonSchema,
    }
}

/// Where `command` writes its report: stdout or a file.
pub fn report_sink(output: &str, command: &str) -> Result<SinkPlan> {
    let refusal = format!("weir {command} writes its report to stdout or a file");
    SinkPlan::text(SinkSpec::parse(output).map_err(Error::Usage)?, &refusal)
}

/// `--time`, which `command` cannot do without.
pub fn required_time(time: &TimeArgs, command: &str) -> Result<FieldPath> {
    (time.time.clone()).ok_or_else(|| Error::Usage(format!("weir {command} needs --time FIELD")))
}

/// Checks, once the plan holds and before the run, the files only its end writes.
fn check_files_written_at_end(report: &ReportPlan, plot: Option<&Path>) -> Result<()> {
    if let Some(path) = &report.stats {
        files::check_written_at_end("--stats", path)?;
    }
    match plot {
        Some(path) => files::check_written_at_end("--plot", path),
        None => Ok(()),
    }
}

/// How a run keeps its state for the next one: a checkpoint file, or, for a consumer-group
/// member of a command with state per partition, its partitions' states in the changelog
/// topic.
pub struct KeepingArgs<'a> {
    pub command: &'a str,
    pub checkpoint: &'a CheckpointArgs,
    /// For a command that keeps state per partition in a group (`window`, `dedupe`,
    /// `watermark-profile`).
    pub changelog: Option<&'a ChangelogArgs>,
    /// The command writes its output only at its end, so stdout can take a checkpointed
    /// run's output.
    pub report_at_end: bool,
}

impl<'a> KeepingArgs<'a> {
    /// A command whose state, if kept, is kept in a checkpoint file (`consume`, `replay`).
    pub fn file_only(command: &'a str, checkpoint: &'a CheckpointArgs) -> KeepingArgs<'a> {
        KeepingArgs {
            command,
            checkpoint,
            changelog: None,
            report_at_end: false,
        }
    }

    /// A command whose state a group keeps per partition, in its changelog.
    pub fn partitioned(
        command: &'a str,
        checkpoint: &'a CheckpointArgs,
        changelog: &'a ChangelogArgs,
    ) -> KeepingArgs<'a> {
        let changelog = Some(changelog);
        KeepingArgs {
            changelog,
            ..KeepingArgs::file_only(command, checkpoint)
        }
    }

    /// The state kept by a run of `job` over `input` writing to `sink`, checked; a group
    /// member's input is told where its changelog is.
    pub fn plan(&self, input: &mut InputPlan, sink: &SinkSpec, job: &str) -> Result<Keeping> {
        let file = checkpoint_plan(self.checkpoint, sink, self.report_at_end)?;
        if file.is_some() && input.is_kinesis_member() {
            return Err(Error::Usage(
                "with -G each shard's checkpoint is kept in its lease, for whichever member reads it; --checkpoint is for a run without -G".into(),
            ));
        }
        if input.is_kinesis_member() {
            return self.shard_states(input);
        }
        if self.changelog.is_some_and(|c| c.state_store.is_some()) {
            return Err(Error::Usage(
                "--state-store keeps the states of a Kinesis stream's shards; a Kafka group's go to its changelog topic".into(),
            ));
        }
        let (Some(group), Some(changelog)) = (input.group(), self.changelog) else {
            return Ok(file.map_or(Keeping::Nothing, Keeping::File));
        };
        // A partition's state must follow the partition to whichever member the group gives
        // it: kept per partition, in the changelog, not in one member's file.
        if file.is_some() {
            return Err(Error::Usage(
                "with -G each partition's state is kept in the changelog topic (--changelog), for whichever member the group gives the partition to; --checkpoint is for a run without -G".into(),
            ));
        }
        let topic = changelog
            .changelog
            .clone()
            .unwrap_or_else(|| format!("{group}-{}-changelog", self.command));
        input.keep_states_in(ChangelogPlan {
            topic,
            job: job.to_string(),
        });
        Ok(self.per_partition())
    }

    /// State kept per partition or shard, saved every `--checkpoint-interval`.
    fn per_partition(&self) -> Keeping {
        let every = Duration::from_millis(self.checkpoint.checkpoint_interval as u64);
        Keeping::PerPartition(every)
    }

    /// A Kinesis member: a command that keeps state per shard saves it in `--state-store`.
    fn shard_states(&self, input: &mut InputPlan) -> Result<Keeping> {
        let given = self.changelog.and_then(|c| c.state_store.as_deref());
        let Some(changelog) = self.changelog else {
            if given.is_some() {
                return Err(Error::Usage(format!(
                    "{} keeps no state per shard: --state-store does not apply",
                    self.command
                )));
            }
            return Ok(Keeping::Nothing);
        };
        if changelog.changelog.is_some() {
            return Err(Error::Usage(
                "--changelog is a Kafka group's topic; a Kinesis member keeps each shard's state in --state-store".into(),
            ));
        }
        let Some(given) = given else {
            return Err(Error::Usage(format!(
                "with -G on a Kinesis source, {} keeps each shard's state for whichever member reads it next: give --state-store s3://BUCKET/PREFIX (or a directory every member shares)",
                self.command
            )));
        };
        let store = StoreSpec::parse(given).map_err(Error::Usage)?;
        input.keep_shard_states_in(StatesPlan {
            store,
            command: self.command.to_string(),
        });
        Ok(self.per_partition())
    }
}

/// `--checkpoint`, checked against the sink: a resumed run cuts its output files back to the
/// checkpoint (exactly once) or writes to a topic or stream again what came after it (at
/// least once), so stdout cannot take it, but for a command that writes its output only at
/// the end (`report_at_end`).
fn checkpoint_plan(
    args: &CheckpointArgs,
    sink: &SinkSpec,
    report_at_end: bool,
) -> Result<Option<CheckpointPlan>> {
    let Some(path) = &args.checkpoint else {
        return Ok(None);
    };
    if !report_at_end && matches!(sink, SinkSpec::Stdout) {
        return Err(Error::Usage(
            "--checkpoint needs -o FILE, kafka://... or kinesis://...: a resumed run cuts a file back to the checkpoint, or writes again to a topic or stream what came after it, which stdout cannot be".into(),
        ));
    }
    Ok(Some(CheckpointPlan {
        path: path.clone(),
        interval: Duration::from_millis(args.checkpoint_interval as u64),
        reset: args.reset,
    }))
}

/// `--from`/`--to` on NDJSON input: an event-time range, of a time the records have (`timed`:
/// `--time`, or what `or_else` names instead).
pub fn ndjson_time_range(broker: &BrokerArgs, timed: bool, or_else: &str) -> Result<TimeRange> {
    let (from, to) = (broker.from.as_deref(), broker.to.as_deref());
    let range = TimeRange::parse(from, to, now_millis()).map_err(Error::Usage)?;
    if !range.is_open() && !timed {
        return Err(Error::Usage(format!(
            "--from/--to on NDJSON input need --time FIELD{or_else}"
        )));
    }
    Ok(range)
}

/// The window that `--tumbling`, `--hop`/`--slide` or `--session` give (`window`'s, or the one
/// `watermark-profile` predicts), shifted by `--offset`, with its allowed lateness and bound;
/// `None` when none is given.
pub fn window_rule(
    (tumbling, hop, slide): (Option<Millis>, Option<Millis>, Option<Millis>),
    session: Option<Millis>,
    (offset, allowed_lateness): (Millis, Millis),
    max_open_windows: usize,
) -> Result<Option<WindowRule>> {
    let kind = match (tumbling, hop.zip(slide), session) {
        (Some(size), ..) => WindowKind::Tumbling { size, offset },
        (None, Some((size, slide)), _) => {
            check_slide(size, slide, max_open_windows)?;
            WindowKind::Hopping { size, slide, offset }
        }
        (None, None, Some(_)) if offset != 0 => {
            return Err(Error::Usage(
                "--offset applies to --tumbling and --hop, not --session: sessions start at their first event".into(),
            ))
        }
        (None, None, Some(gap)) => WindowKind::Session { gap },
        (None, None, None) => return Ok(None),
    };
    Ok(Some(WindowRule {
        kind,
        allowed_lateness,
        max_open_windows,
    }))
}

/// `--hop SIZE --slide SLIDE` (window's, or the profile's predicting one). Flink and Spark take
/// any slide up to the size; a longer one would leave gaps that no window covers, and the
/// records there would belong nowhere. Each record opens up to size/slide windows at once:
/// more than the bound allows would stop the run at its first record, after allocating them.
fn check_slide(size: Millis, slide: Millis, max_open_windows: usize) -> Result<()> {
    let (size_text, slide_text) = (human_duration(size), human_duration(slide));
    if slide > size {
        return Err(Error::Usage(format!(
            "--slide ({slide_text}) is longer than --hop ({size_text}): records between the windows would belong to none"
        )));
    }
    let per_record = (size as u64).div_ceil(slide as u64);
    if per_record > max_open_windows as u64 {
        return Err(Error::Usage(format!(
            "--hop {size_text} --slide {slide_text} puts every record in {per_record} windows, more than --max-open-windows ({max_open_windows}): give a longer slide"
        )));
    }
    Ok(())
}

/// The fields that say a record's input partition (added to `list` when `judged`: the command
/// judges records by their partition's watermark), and behind a shuffle its input position.
pub fn partition_fields(
    parts: &Partitioning,
    list: &mut FieldList,
    judged: bool,
) -> PartitionFields {
    let at = list.add_some(parts.field.clone().filter(|_| judged));
    let count_at = list.add_some_internal(parts.count.clone().filter(|_| judged));
    let shuffle_at = parts.shuffled.then(|| {
        let field = parts.field.clone().expect("a Kafka source");
        let partition = at.unwrap_or_else(|| list.add_internal(field));
        (
            partition,
            list.add_internal("offset".parse().expect("a path")),
        )
    });
    PartitionFields {
        at,
        count_at,
        shuffle_at,
        by_source: parts.by_source && judged,
    }
}

/// `--idle-timeout` lets a silent partition stop holding the watermark back: where a
/// watermark has one partition (one NDJSON stream, or a group member's task of one
/// partition), it would change nothing, so it is refused rather than ignored.
pub fn check_idle_timeout(
    idle: Option<crate::core::time::Millis>,
    parts: &Partitioning,
) -> Result<()> {
    if idle.is_none() || parts.field.is_some() {
        return Ok(());
    }
    let one = if parts.per_partition {
        "with -G each partition has a watermark of its own"
    } else {
        "one stream is one partition; give --partition-by FIELD for several"
    };
    Err(Error::Usage(format!(
        "--idle-timeout has no effect here: it lets a silent partition stop holding back a watermark of several, and {one}"
    )))
}
