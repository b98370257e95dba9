//! A command's input, checked and then opened: SOURCE and the flags that go with it become a
//! `SourcePlan` (NDJSON files or stdin, a Kafka topic, a Kinesis stream) before anything is
//! opened, and the run opens it through `runtime::Input`, beside the error policy's
//! dead-letter file. The twin of `sink::SinkPlan`.

use std::path::PathBuf;
use std::time::Duration;

use super::kafka::repartition::{ShufflePlan, ShuffledSource};
use super::kafka::{ChangelogPlan, ClientOptions, KafkaSource, ReadPlan, ReadRequest};
use super::kinesis::{self, AwsOptions, KinesisClient, KinesisSource, StatesPlan};
use super::ndjson::NdjsonSource;
use super::schema::registry::RegistryOptions;
use super::schema::{Decoders, Format, LocalSchema, SchemaFileRequest, SchemaPlan};
use super::sink::LineSink;
use super::spec::{self, KafkaSpec, KinesisSpec, SourceSpec};
use crate::core::avro::AvroJson;
use crate::core::envelope::Render;
use crate::core::record::FieldPath;
use crate::core::time::{now_millis, TimeFormat};
use crate::error::{Error, Result};
use crate::runtime::{progress, CheckpointInputs, ErrorPolicy, PolicyPlan, Restored, Sink, Source};

/// How a source's or sink's clients connect, as the command line gives it: `-X`, `-F`,
/// `--timeout`, `--endpoint-url`.
#[derive(Clone, Debug, Default)]
pub struct ClientRequest {
    pub properties: Vec<String>,
    pub config_file: Option<PathBuf>,
    pub timeout: Duration,
    pub endpoint_url: Option<String>,
}

impl ClientRequest {
    /// A Kafka client's options, the config file read and parsed.
    pub fn kafka(&self) -> Result<ClientOptions> {
        ClientOptions::resolve(self.config_file.as_deref(), &self.properties, self.timeout)
    }

    /// An AWS client's options.
    pub fn aws(&self) -> AwsOptions {
        AwsOptions {
            endpoint_url: self.endpoint_url.clone(),
            timeout: self.timeout,
        }
    }
}

/// What the command line asks of a source, before it is checked.
#[derive(Clone, Debug, Default)]
pub struct SourceRequest {
    /// SOURCE: files, `-`, a `kafka://` or `kinesis://` URL.
    pub sources: Vec<String>,
    pub partitions: Vec<i32>,
    pub group: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub exit_at_end: bool,
    pub shards: Vec<String>,
    pub efo: Option<String>,
    /// Kinesis with -G: how long a member's heartbeat may stand still.
    pub lease_time: crate::core::time::Millis,
    pub clients: ClientRequest,
    /// The command reads `--from`/`--to` on NDJSON input as an event-time range of its own.
    pub time_range: bool,
    pub schemas: SchemaRequest,
}

/// How keys and values in a schema's binary are decoded, as the command line asks.
#[derive(Clone, Debug, Default)]
pub struct SchemaRequest {
    pub registry: Option<String>,
    pub value: Option<(Format, PathBuf)>,
    pub key: Option<(Format, PathBuf)>,
    pub style: AvroJson,
    /// `--value-proto-type` and `--proto-import-path`, for a `.proto` value schema.
    pub value_proto: SchemaFileRequest,
    /// `--key-proto-type` and `--proto-import-path`, for a `.proto` key schema.
    pub key_proto: SchemaFileRequest,
    /// `--reader-schema`.
    pub reader: Option<PathBuf>,
    /// The registry is (also) the sink's, to encode with.
    pub encodes: bool,
    /// `--validate`.
    pub validate: bool,
}

impl SchemaRequest {
    fn asked(&self) -> bool {
        (self.registry.is_some() && !self.encodes)
            || self.value.is_some()
            || self.key.is_some()
            || self.reader.is_some()
    }

    /// Checks the request: the registry's URL and properties, the local schemas read.
    fn plan(&self, client: &ClientOptions) -> Result<SchemaPlan> {
        let registry = match &self.registry {
            // With --value-schema-id or --value-subject, -r is the sink's registry.
            Some(_) if self.encodes => None,
            Some(url) => Some(RegistryOptions::new(url, &client.registry, client.timeout)?),
            None if !client.registry.is_empty() && !self.encodes => {
                return Err(Error::Usage(
                    "-X schema.registry.*: there is no --schema-registry".into(),
                ))
            }
            None => None,
        };
        if registry.is_some() && self.value.is_some() {
            return Err(Error::Usage("--value-schema decodes unframed values; with --schema-registry each framed value's own schema decodes it: give one of them".into()));
        }
        let reader = self.reader.as_deref().map(read_reader_schema).transpose()?;
        let local =
            |part: &Option<(Format, PathBuf)>, flag: &str, proto: &SchemaFileRequest, reader| {
                (part.as_ref())
                    .map(|(format, path)| {
                        LocalSchema::read(*format, path, self.style, flag, proto, reader)
                    })
                    .transpose()
            };
        Ok(SchemaPlan {
            registry,
            value: local(
                &self.value,
                "--value-schema",
                &self.value_proto,
                reader.as_ref(),
            )?,
            key: local(&self.key, "--key-schema", &self.key_proto, None)?,
            reader,
            validate: self.validate,
            style: self.style,
        })
    }
}

/// `--reader-schema FILE.avsc`, parsed.
fn read_reader_schema(path: &std::path::Path) -> Result<std::sync::Arc<apache_avro::Schema>> {
    let usage = |m: String| Error::Usage(format!("--reader-schema {}: {m}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| usage(e.to_string()))?;
    let schema = apache_avro::Schema::parse_str(&text)
        .map_err(|e| usage(format!("not an Avro schema: {e}")))?;
    Ok(std::sync::Arc::new(schema))
}

/// Where a command's records come from, checked, with nothing opened yet.
pub enum SourcePlan {
    Ndjson(Vec<spec::Input>),
    Kafka {
        spec: KafkaSpec,
        read: ReadPlan,
        client: ClientOptions,
        schemas: Box<SchemaPlan>,
    },
    Kinesis {
        spec: KinesisSpec,
        read: kinesis::ReadPlan,
        options: AwsOptions,
        schemas: Box<SchemaPlan>,
    },
}

impl SourcePlan {
    /// Checks SOURCE and the flags that go with it. Broker flags are refused on NDJSON
    /// input (but `--from`/`--to` when `time_range`), and Kinesis flags on Kafka; every
    /// input file must exist.
    pub fn new(request: &SourceRequest) -> Result<SourcePlan> {
        match SourceSpec::parse(&request.sources).map_err(Error::Usage)? {
            SourceSpec::Ndjson(inputs) => {
                reject_broker_flags(request)?;
                reject_kinesis_flags(request, "NDJSON input")?;
                for i in &inputs {
                    if let spec::Input::File(path) = i {
                        std::fs::metadata(path).map_err(|e| {
                            Error::Unreachable(format!("cannot read {}: {e}", path.display()))
                        })?;
                    }
                }
                Ok(SourcePlan::Ndjson(inputs))
            }
            SourceSpec::Kafka(spec) => {
                reject_kinesis_flags(request, "a Kafka source")?;
                let asked = ReadRequest {
                    partitions: request.partitions.clone(),
                    group: request.group.clone(),
                    from: request.from.clone(),
                    to: request.to.clone(),
                    exit_at_end: request.exit_at_end,
                };
                let read = ReadPlan::new(&spec, &asked, now_millis())?;
                let client = request.clients.kafka()?;
                let schemas = Box::new(request.schemas.plan(&client)?);
                Ok(SourcePlan::Kafka {
                    spec,
                    read,
                    client,
                    schemas,
                })
            }
            SourceSpec::Kinesis(spec) => kinesis_plan(spec, request),
        }
    }
}

fn kinesis_plan(spec: KinesisSpec, request: &SourceRequest) -> Result<SourcePlan> {
    if request.schemas.key.is_some() {
        return Err(Error::Usage(
            "--key-schema: a Kinesis record's partition key is text; only values are decoded"
                .into(),
        ));
    }
    // -X schema.registry.* and -F go with -r whatever the source.
    let schemas = Box::new(request.schemas.plan(&request.clients.kafka()?)?);
    if !request.partitions.is_empty() {
        return Err(Error::Usage(
            "Kinesis has shards, not partitions: --shards ID[,ID]".into(),
        ));
    }
    let asked = kinesis::ReadRequest {
        from: request.from.clone(),
        to: request.to.clone(),
        exit_at_end: request.exit_at_end,
        shards: request.shards.clone(),
        efo: request.efo.clone(),
        group: request.group.clone(),
        lease_time: Duration::from_millis(request.lease_time.max(1) as u64),
    };
    let read = kinesis::ReadPlan::new(&spec, &asked, now_millis())?;
    Ok(SourcePlan::Kinesis {
        spec,
        read,
        options: request.clients.aws(),
        schemas,
    })
}

/// Kinesis source options make no sense on other sources; say so rather than ignore them.
fn reject_kinesis_flags(request: &SourceRequest, what: &str) -> Result<()> {
    let flag = if !request.shards.is_empty() {
        "--shards"
    } else if request.efo.is_some() {
        "--efo"
    } else {
        return Ok(());
    };
    Err(Error::Usage(format!(
        "{flag} applies to a Kinesis source (kinesis://STREAM), not to {what}"
    )))
}

/// Kafka source options make no sense on NDJSON input; say so rather than ignore them.
/// A command that reads --from/--to as an event-time range takes them there.
fn reject_broker_flags(request: &SourceRequest) -> Result<()> {
    let r = request;
    if r.schemas.asked() {
        return Err(Error::Usage(
            "--schema-registry, --value-schema and --key-schema decode a Kafka source's records, not NDJSON input".into(),
        ));
    }
    let flag = if !r.partitions.is_empty() {
        Some("--partitions")
    } else if r.group.is_some() {
        Some("--group")
    } else if r.exit_at_end {
        Some("-e")
    } else if !r.time_range && r.from.is_some() {
        Some("--from")
    } else if !r.time_range && r.to.is_some() {
        Some("--to")
    } else {
        None
    };
    match flag {
        Some(flag @ ("--partitions" | "--group")) => Err(Error::Usage(format!(
            "{flag} applies to a Kafka source (kafka://HOST:PORT/TOPIC), not to NDJSON input"
        ))),
        Some(flag) => Err(Error::Usage(format!(
            "{flag} applies to a Kafka or Kinesis source (kafka://HOST:PORT/TOPIC, kinesis://STREAM), not to NDJSON input"
        ))),
        None => Ok(()),
    }
}

/// How a command tells its input's partitions apart (`InputPlan::partitioning`).
#[derive(Debug)]
pub struct Partitioning {
    /// A consumer-group member: each partition is a task of its own, with its own watermark.
    pub per_partition: bool,
    /// The field whose values are the watermark's partitions: `--partition-by`, or the
    /// envelope field of a broker source's partitions.
    pub field: Option<FieldPath>,
    /// Those are the source's own partitions, which it reports as it reads them
    /// (`RecordStep::assigned`).
    pub by_source: bool,
    /// `--repartition`: `field` names the input partition of a record that came through a
    /// shuffle, whose envelope also gives its input offset.
    pub shuffled: bool,
    /// The field that says how many partitions the input has, when `field` is a piped
    /// envelope's `partition` (its `partitions`) or `shard` (its `shards`): each holds the
    /// watermark back until its first record, as the partitions of a direct read do.
    pub count: Option<FieldPath>,
}

/// A command's input: the source, how a broker's records are rendered, the error policy and
/// the line limit.
pub struct InputPlan {
    pub source: SourcePlan,
    /// How a Kafka or Kinesis record becomes the bytes the command sees.
    pub render: Render,
    pub policy: PolicyPlan,
    pub max_line_bytes: usize,
    /// `--repartition`: the records come through a shuffle by their state key.
    pub shuffle: Option<ShufflePlan>,
}

impl InputPlan {
    /// The input of `source`, its records rendered as envelopes.
    pub fn new(source: SourcePlan, policy: PolicyPlan, max_line_bytes: usize) -> InputPlan {
        InputPlan {
            source,
            render: Render::Envelope,
            policy,
            max_line_bytes,
            shuffle: None,
        }
    }

    /// How `window`, `dedupe` and `watermark-profile` tell partitions apart for their
    /// watermarks: by `given` (`--partition-by`), else by a broker source's own partitions;
    /// a consumer-group member keeps each of its partitions apart instead, which `apart`
    /// says (and refuses `--partition-by`).
    pub fn partitioning(&self, given: Option<&FieldPath>, apart: &str) -> Result<Partitioning> {
        let per_partition = self.group().is_some() || self.is_kinesis_member();
        if self.shuffle.is_some() {
            // Behind a shuffle the partitions that hold a watermark back are the input's,
            // named in each record's envelope, and spoken for by the writers' markers.
            return Ok(Partitioning {
                per_partition,
                field: self.source_partition_field(),
                by_source: false,
                shuffled: true,
                count: None,
            });
        }
        if per_partition && given.is_some() {
            return Err(Error::Usage(format!(
                "with -G each partition {apart}; --partition-by does not apply"
            )));
        }
        let source_field = self.source_partition_field();
        let field = match (per_partition, given) {
            (true, _) => None,
            (false, Some(f)) => Some(f.clone()),
            (false, None) => source_field.clone(),
        };
        let by_source = field.is_some() && field == source_field;
        let count = match field.as_ref().map(FieldPath::as_str) {
            _ if by_source => None,
            Some("partition") => Some("partitions"),
            Some("shard") => Some("shards"),
            _ => None,
        };
        Ok(Partitioning {
            per_partition,
            by_source,
            field,
            shuffled: false,
            count: count.map(|c| c.parse().expect("a valid path")),
        })
    }

    /// Whether records come from a Kafka or Kinesis source, as envelopes.
    pub fn is_broker(&self) -> bool {
        matches!(
            self.source,
            SourcePlan::Kafka { .. } | SourcePlan::Kinesis { .. }
        )
    }

    /// The envelope field holding the broker timestamp, for a broker source.
    pub fn broker_timestamp_field(&self) -> Option<FieldPath> {
        self.is_broker()
            .then(|| "timestamp".parse().expect("a valid path"))
    }

    /// The envelope field naming a broker source's partitions: `partition` (Kafka) or
    /// `shard` (Kinesis).
    pub fn source_partition_field(&self) -> Option<FieldPath> {
        let name = match &self.source {
            SourcePlan::Ndjson(_) => return None,
            SourcePlan::Kafka { .. } => "partition",
            SourcePlan::Kinesis { .. } => "shard",
        };
        Some(name.parse().expect("a valid path"))
    }

    /// Whether the source is a member of a Kinesis application (`-G APP`).
    pub fn is_kinesis_member(&self) -> bool {
        matches!(&self.source, SourcePlan::Kinesis { read, .. } if read.group.is_some())
    }

    /// The Kafka consumer group the source reads as a member of, if any.
    pub fn group(&self) -> Option<&str> {
        match &self.source {
            SourcePlan::Kafka { read, .. } => read.group.as_deref(),
            _ => None,
        }
    }

    /// `--repartition` for `command` (with -G on a Kafka source): the records come through
    /// the topic `GROUP-COMMAND-repartition`, keyed by `key`, the state key's fields; `time`
    /// is the event time the writers' markers carry.
    pub fn repartition(
        &mut self,
        command: &str,
        partitions: Option<u16>,
        key: &[FieldPath],
        time: Option<(FieldPath, TimeFormat)>,
    ) -> Result<()> {
        let Some(group) = self.group() else {
            return Err(Error::Usage(
                "--repartition shuffles a consumer group's input: give -G GROUP and a Kafka source"
                    .into(),
            ));
        };
        if let SourcePlan::Kafka { read, .. } = &self.source {
            if !read.partitions.is_empty() {
                return Err(Error::Usage(
                    "--repartition shuffles what the group shares out: it takes no --partitions"
                        .into(),
                ));
            }
        }
        let (time, time_format) = time.unzip();
        self.shuffle = Some(ShufflePlan {
            topic: format!("{group}-{command}-repartition"),
            partitions: partitions.map(usize::from),
            key: key.to_vec(),
            time,
            time_format: time_format.unwrap_or_default(),
        });
        Ok(())
    }

    /// Names the changelog topic where a group member keeps its partitions' states.
    pub fn keep_states_in(&mut self, changelog: ChangelogPlan) {
        if let SourcePlan::Kafka { read, .. } = &mut self.source {
            read.changelog = Some(changelog);
        }
    }

    /// A Kinesis member keeps each shard's state in `states`, for whichever member reads the
    /// shard next.
    pub fn keep_shard_states_in(&mut self, states: StatesPlan) {
        if let SourcePlan::Kinesis { read, .. } = &mut self.source {
            if let Some(group) = &mut read.group {
                group.states = Some(states);
            }
        }
    }

    /// What a checkpoint's job names of the source: a line source's inputs, or a Kafka
    /// source's brokers, topic and partitions.
    pub fn job_source(&self) -> String {
        match &self.source {
            SourcePlan::Ndjson(_) => format!("{:?}", self.input_names()),
            SourcePlan::Kafka { read, .. } => format!(
                "kafka topic {} partitions {:?} group {:?}",
                read.topic, read.partitions, read.group
            ),
            SourcePlan::Kinesis { read, .. } => {
                format!("kinesis stream {} shards {:?}", read.stream, read.shards)
            }
        }
    }

    /// The names of a line source's inputs, in the order they are read.
    fn input_names(&self) -> Vec<String> {
        match &self.source {
            SourcePlan::Ndjson(inputs) => inputs.iter().map(spec::Input::display_name).collect(),
            SourcePlan::Kafka { .. } | SourcePlan::Kinesis { .. } => Vec::new(),
        }
    }
}

impl crate::runtime::Input for InputPlan {
    fn checkpoint_inputs(&self) -> CheckpointInputs {
        match &self.source {
            SourcePlan::Ndjson(_) => CheckpointInputs::Files(self.input_names()),
            SourcePlan::Kafka { read, .. } => CheckpointInputs::Kafka {
                topic: read.topic.clone(),
            },
            SourcePlan::Kinesis { read, .. } => CheckpointInputs::Kinesis {
                stream: read.stream.clone(),
            },
        }
    }

    fn open_source(&self, restored: Option<&Restored>) -> Result<Box<dyn Source>> {
        let render = self.render.clone();
        Ok(match &self.source {
            SourcePlan::Ndjson(inputs) => {
                let source = NdjsonSource::new(inputs.clone()).with_progress();
                Box::new(match restored {
                    Some(r) => source.resume_at(r.at),
                    None => source,
                })
            }
            SourcePlan::Kafka {
                spec, read, client, ..
            } if self.shuffle.is_some() => {
                let shuffle = self.shuffle.as_ref().expect("checked");
                let max = self.max_line_bytes;
                Box::new(ShuffledSource::open(spec, read, client, shuffle, max)?)
            }
            SourcePlan::Kafka {
                spec,
                read,
                client,
                schemas,
            } => {
                let resume = restored.map(|r| r.offsets.as_slice()).unwrap_or_default();
                let mut source = KafkaSource::open(spec, read, client, render, resume)?;
                if schemas.decodes() {
                    source.decode_with(Decoders::open(schemas)?);
                }
                source.show_progress(source.total.and_then(progress::records));
                Box::new(source)
            }
            SourcePlan::Kinesis {
                spec,
                read,
                options,
                schemas,
            } => {
                let runtime = kinesis::client::runtime()?;
                let client = KinesisClient::connect(&runtime, spec, options)?;
                let empty = Default::default();
                let resume = restored.map(|r| &r.shards).unwrap_or(&empty);
                let mut source = KinesisSource::open(runtime, client, read, render, resume)?;
                if schemas.decodes() {
                    source.decode_with(Decoders::open(schemas)?);
                }
                Box::new(source)
            }
        })
    }

    fn open_policy(&self, restored: Option<&Restored>) -> Result<ErrorPolicy> {
        let dead_letter = match &self.policy.dead_letter {
            Some(path) => {
                let file = LineSink::open_file(path, "dead-letter file", restored)?;
                Some(Box::new(file) as Box<dyn Sink>)
            }
            None => None,
        };
        Ok(ErrorPolicy::new(self.policy.on_error, dead_letter))
    }

    fn max_line_bytes(&self) -> usize {
        self.max_line_bytes
    }
}
