//! The command line: global shape, shared option groups, one Args struct per subcommand.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::core::dedupe_task::Keep;
use crate::core::record::FieldPath;
use crate::core::time::{duration_millis, parse_duration, Millis, TimeFormat};
use crate::core::window::EmitMode;
use crate::io::sink::TableFormat;
use crate::report::lag::{LagFormat, LagTimeMode};
use crate::report::profile::ReportFormat;
use crate::runtime::OnError;

const ABOUT: &str =
    "A command-line stream toolkit: consume, window, dedupe, profile lateness and check lag \
over NDJSON, Kafka and Kinesis";

const LONG_ABOUT: &str = "\
weir reads NDJSON (stdin, files, .gz, .zst) or a Kafka/Kinesis source, keeps bounded state, and writes \
to stdout or a sink: a file (.gz and .zst compressed), a Kafka topic or a Kinesis stream. Its subcommands compose into shell pipelines. Data goes to stdout, \
diagnostics and the run summary to stderr.";

const AFTER_HELP: &str = "\
Examples:
  weir consume fixtures/checkouts.ndjson --time occurred_at --from 2026-11-28T12:00:00Z -n 5
  weir consume kafka://localhost:9092/checkouts --from -1h -e -J \\
    | weir dedupe --id value.event_id --time value.occurred_at --horizon 1h \\
        --partition-by partition \\
    | weir window --time value.occurred_at --key value.merchant_id --partition-by partition \\
        --tumbling 1m --delay 10m --count

Exit codes:
  0 success (also when stdout is closed early, as by `| head`)
  1 a check tripped (lag --max-lag)
  2 usage or configuration error
  3 bad input data (with --on-error fail)
  4 a source or sink is unreachable or refused us
  5 nothing to check (lag: a --group without commits, a --group-pattern matching none)
  101 an internal error (a bug in weir: please report it)
  130 interrupted (SIGINT/SIGTERM); output so far is flushed";

#[derive(Debug, Parser)]
#[command(
    name = "weir",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP,
    propagate_version = true,
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per run: the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    Consume(ConsumeArgs),
    Window(WindowArgs),
    #[command(name = "watermark-profile")]
    WatermarkProfile(ProfileArgs),
    Dedupe(DedupeArgs),
    Replay(ReplayArgs),
    Lag(LagArgs),
    /// Writes man pages and shell completions (for the project's own build).
    #[command(hide = true)]
    Generate(GenerateArgs),
}

impl Command {
    pub fn name(&self) -> &'static str {
        match self {
            Command::Consume(_) => "consume",
            Command::Window(_) => "window",
            Command::WatermarkProfile(_) => "watermark-profile",
            Command::Dedupe(_) => "dedupe",
            Command::Replay(_) => "replay",
            Command::Lag(_) => "lag",
            Command::Generate(_) => "generate",
        }
    }
}

/// Where records come from, and what happens to records that cannot be used.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// NDJSON files (`-` for stdin, gzip and zstd detected), kafka://HOST:PORT[,HOST:PORT]/TOPIC
    /// (port 9092 if left out) or kinesis://STREAM (or the stream's ARN). Default: stdin.
    #[arg(value_name = "SOURCE")]
    pub sources: Vec<String>,

    /// What to do with a bad record (not JSON, missing field, unparsable time). Default:
    /// fail, or skip when --dead-letter is given.
    #[arg(long, value_enum, value_name = "POLICY", help_heading = "Bad input")]
    pub on_error: Option<OnError>,

    /// Write each bad record to PATH as JSON with its position and the reason (.gz or .zst:
    /// compressed).
    #[arg(long, value_name = "PATH", help_heading = "Bad input")]
    pub dead_letter: Option<PathBuf>,

    /// Longest line accepted; a longer one is a bad record (suffixes K, M, G: powers of 1024).
    #[arg(hide_short_help = true, long, value_name = "BYTES", default_value = "16M", value_parser = parse_bytes, help_heading = "Bad input")]
    pub max_line_bytes: usize,

    /// Keep only the records for which EXPR holds (repeatable: all must hold), as
    /// 'status == "failed" and amount >= 100'.
    ///
    /// Fields as --time takes them (value.status, a\.b); JSON literals; == != < <= > >=
    /// (numbers as exact decimals, strings by their text; values of different kinds are
    /// unequal and unordered); PATH in [LIT, ...]; PATH =~ "regex"; exists(PATH),
    /// missing(PATH), startswith(PATH, "s"), contains(PATH, "s"); num(PATH) > 10 (a number or
    /// a numeric string, as the aggregates read it; "12.50" > 10 is false, as kinds differ);
    /// time(PATH) >= "2026-11-28 12:00" (the field read as --time-format says, the literal as
    /// --from reads a time); and, or, not, parentheses. A test of a missing field is false. Dropped records are counted
    /// as filtered.
    #[arg(long = "where", value_name = "EXPR", help_heading = "Filter")]
    pub conditions: Vec<String>,

    #[command(flatten)]
    pub broker: BrokerArgs,
}

/// Options of a Kafka source (and of a Kafka sink's client: -X, -F, --timeout).
#[derive(Debug, Args)]
pub struct BrokerArgs {
    /// First position: beginning, end, an offset, -N, a time ('2026-11-28 12:00', -1h) or
    /// stored (the group's).
    ///
    /// The forms: beginning, end, stored (the group's), an offset (Kinesis: a sequence
    /// number), -N (N before the end, Kafka), an RFC 3339 time, a date or a time without an
    /// offset (UTC: 2026-01-01, '2026-01-01 12:30'), now, or a relative time (-1h) of the
    /// broker timestamps (Kinesis: arrival times). Default: beginning, or the group's offsets
    /// with --group (and, where the group has none, the end, as Kafka's consumers start: give
    /// --from beginning to read a new group's backlog). On NDJSON input (consume, replay) a
    /// time filters by --time.
    #[arg(
        long,
        value_name = "POS",
        allow_hyphen_values = true,
        help_heading = "Kafka and Kinesis"
    )]
    pub from: Option<String>,

    /// End position, exclusive, in the same forms as --from (not stored); a time still ahead
    /// is waited for.
    #[arg(
        long,
        value_name = "POS",
        allow_hyphen_values = true,
        help_heading = "Kafka and Kinesis"
    )]
    pub to: Option<String>,

    /// Exit at the end: stop at the end offsets taken at start (Kinesis: each shard's end as of
    /// the start), even while records keep coming.
    #[arg(short = 'e', long, help_heading = "Kafka and Kinesis")]
    pub exit_at_end: bool,

    /// Read only these partitions.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "LIST",
        value_delimiter = ',',
        help_heading = "Kafka"
    )]
    pub partitions: Vec<i32>,

    /// Kinesis: read only these shards (their children are not followed).
    #[arg(
        hide_short_help = true,
        long,
        value_name = "LIST",
        value_delimiter = ',',
        help_heading = "Kinesis"
    )]
    pub shards: Vec<String>,

    /// Kinesis: read with enhanced fan-out as this stream consumer (registered when it does
    /// not exist), through SubscribeToShard. The consumer stays registered for the next run;
    /// the service bills it by the shard-hour until `aws kinesis deregister-stream-consumer`.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "CONSUMER",
        help_heading = "Kinesis"
    )]
    pub efo: Option<String>,

    /// Consumer group: weir joins it as a member and shares the partitions with the other
    /// members (as kcat -G). Each partition starts at the group's offset, or where --from
    /// beginning|end says when it has none; offsets are committed as records are handed on.
    /// With --partitions: those partitions, from any --from, committed under the group.
    /// Kinesis: the application whose members share the stream's shards through the
    /// DynamoDB lease table of this name (created when missing); a shard starts at its
    /// lease's checkpoint, or where --from beginning|end says when it has none (window,
    /// dedupe and watermark-profile keep each shard's state in --state-store).
    #[arg(
        hide_short_help = true,
        short = 'G',
        long,
        value_name = "GROUP",
        help_heading = "Kafka"
    )]
    pub group: Option<String>,

    /// Kinesis with -G: how long a member's heartbeat may stand still before the others
    /// take its shards.
    #[arg(hide_short_help = true, long, value_name = "D", default_value = "10s", value_parser = positive_duration_ms, allow_hyphen_values = true, help_heading = "Kinesis")]
    pub lease_time: Millis,

    #[command(flatten)]
    pub schemas: SchemaArgs,

    #[command(flatten)]
    pub client: ClientArgs,
}

/// How a Kafka source's keys and values in a schema's binary become JSON.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Decode each value framed in the schema registry's wire format (magic byte 0, schema
    /// id) by its id, and each framed key, from this Confluent-compatible registry: Avro,
    /// Protobuf and JSON Schema. A value not framed is a bad record. Credentials and CA: -X
    /// schema.registry.basic.auth.user.info=USER:PASSWORD, -X
    /// schema.registry.bearer.auth.token=TOKEN, -X schema.registry.ssl.ca.location=FILE.
    /// glue://NAME reads values (and keys) framed for the AWS Glue Schema Registry NAME
    /// (Avro, JSON Schema), and frames a sink's values for it (--value-subject names the
    /// Glue schema), with the AWS chain's credentials and region (AWS_ENDPOINT_URL_GLUE for
    /// the endpoint).
    #[arg(
        hide_short_help = true,
        short = 'r',
        long,
        value_name = "URL",
        help_heading = "Schemas"
    )]
    pub schema_registry: Option<String>,

    /// A Kafka or Kinesis source: values are unframed datums of --value-schema, in this
    /// format. A sink (when the input is not a broker, or with --register): values are encoded
    /// in it, with --value-schema, --value-schema-id, --value-subject or, with -r alone, the
    /// latest schema of the subject TOPIC-value.
    #[arg(
        hide_short_help = true,
        long,
        value_enum,
        value_name = "FORMAT",
        help_heading = "Schemas"
    )]
    pub value_format: Option<SchemaFormat>,

    /// The schema file of --value-format: .avsc for Avro, .proto for Protobuf (with
    /// --value-proto-type), .json for JSON Schema. On a sink with -r, the schema must be
    /// registered under the subject (TOPIC-value, or --value-subject), or given --register.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "FILE",
        requires = "value_format",
        help_heading = "Schemas"
    )]
    pub value_schema: Option<PathBuf>,

    /// Keys are unframed datums of --key-schema, in this format.
    #[arg(
        hide_short_help = true,
        long,
        value_enum,
        value_name = "FORMAT",
        help_heading = "Schemas"
    )]
    pub key_format: Option<SchemaFormat>,

    /// The schema file of --key-format.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "FILE",
        requires = "key_format",
        help_heading = "Schemas"
    )]
    pub key_schema: Option<PathBuf>,

    /// Kafka or Kinesis sink: encode each value (JSON, as a decode writes it) with the
    /// registry's schema of this id (Avro, Protobuf or JSON Schema), framed with it. Needs -r.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "N",
        help_heading = "Schemas",
        conflicts_with = "value_subject"
    )]
    pub value_schema_id: Option<u32>,

    /// Kafka or Kinesis sink: as --value-schema-id, with a subject's schema: SUBJECT (the
    /// latest version, resolved once at the start) or SUBJECT@VERSION. With --value-schema,
    /// the subject it is found or registered under.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "SUBJECT[@V]",
        help_heading = "Schemas"
    )]
    pub value_subject: Option<String>,

    /// Sink: register --value-schema under its subject (TOPIC-value, or --value-subject) in
    /// the registry of -r, and frame values with the id it gives (a schema the subject has
    /// keeps its id).
    #[arg(hide_short_help = true, long, help_heading = "Schemas")]
    pub register: bool,

    /// Sink with -r glue://NAME: compress each value's datum inside Glue's framing, as
    /// AWS's serializers do with compression ZLIB. Readers inflate it whatever this says.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "CODEC",
        help_heading = "Schemas"
    )]
    pub glue_compression: Option<GlueCompression>,

    /// Check each JSON Schema value against its schema (the registry's or --value-schema's);
    /// one that fails is a bad record naming where and why. Off by default.
    #[arg(hide_short_help = true, long, help_heading = "Schemas")]
    pub validate: bool,

    /// Read every Avro value into this reader schema (.avsc), whatever schema it was written
    /// with, by the Avro specification's resolution: fields matched by name, defaults for the
    /// missing, numbers widened. One shape across a subject's versions.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "FILE",
        help_heading = "Schemas"
    )]
    pub reader_schema: Option<PathBuf>,

    /// The message a --value-format protobuf value is (its full name, package.Message).
    #[arg(
        hide_short_help = true,
        long,
        value_name = "NAME",
        help_heading = "Schemas"
    )]
    pub value_proto_type: Option<String>,

    /// The message a --key-format protobuf key is.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "NAME",
        help_heading = "Schemas"
    )]
    pub key_proto_type: Option<String>,

    /// The .proto file of --value-format protobuf or --key-format protobuf, in place of
    /// --value-schema or --key-schema.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "FILE",
        help_heading = "Schemas"
    )]
    pub proto_file: Option<PathBuf>,

    /// A directory a local .proto file's imports are found in (repeatable; the file's own
    /// directory is searched too, and google/protobuf/*.proto are bundled).
    #[arg(
        hide_short_help = true,
        short = 'I',
        long,
        value_name = "DIR",
        help_heading = "Schemas"
    )]
    pub proto_import_path: Vec<PathBuf>,

    /// The JSON an Avro record becomes.
    #[arg(
        hide_short_help = true,
        long,
        value_enum,
        value_name = "STYLE",
        default_value = "weir",
        help_heading = "Schemas"
    )]
    pub avro_json: AvroJsonStyle,
}

/// A schema format weir decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemaFormat {
    Avro,
    Protobuf,
    JsonSchema,
}

/// `--glue-compression`: how a datum framed for Glue is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum GlueCompression {
    /// Not compressed (compression byte 0).
    None,
    /// zlib (compression byte 5).
    Zlib,
}

/// `--avro-json`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum AvroJsonStyle {
    /// Bare unions, exact decimal strings, RFC 3339 times, dates, base64 bytes.
    #[default]
    Weir,
    /// The Avro specification's JSON encoding (tagged unions, to diff against other tools).
    Spec,
}

/// How a Kafka client connects: librdkafka properties and a time limit.
#[derive(Debug, Args)]
pub struct ClientArgs {
    /// A librdkafka property, as in kcat (repeatable): -X security.protocol=SASL_SSL.
    #[arg(
        hide_short_help = true,
        short = 'X',
        value_name = "KEY=VALUE",
        help_heading = "Kafka"
    )]
    pub properties: Vec<String>,

    /// A file of librdkafka properties (key=value lines, # comments), as kcat's -F. Default:
    /// $WEIR_KAFKA_CONFIG.
    #[arg(
        hide_short_help = true,
        short = 'F',
        long = "kafka-config",
        value_name = "FILE",
        help_heading = "Kafka"
    )]
    pub config_file: Option<PathBuf>,

    /// How long to wait for a broker, or to keep retrying a Kinesis call, before giving up
    /// with exit code 4.
    #[arg(hide_short_help = true, long, value_name = "D", default_value = "10s", value_parser = positive_duration_ms, allow_hyphen_values = true, help_heading = "Kafka and Kinesis")]
    pub timeout: Millis,

    /// Kinesis (and DynamoDB, for lag): the endpoint to call instead of AWS's
    /// (AWS_ENDPOINT_URL works too); region and credentials come from the AWS chain.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "URL",
        help_heading = "Kinesis"
    )]
    pub endpoint_url: Option<String>,
}

impl ClientArgs {
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.timeout as u64)
    }
}

/// Where records go, for the commands that pass records through.
#[derive(Debug, Args)]
pub struct RecordSinkArgs {
    /// Sink: - (stdout), a file path (gzip or zstd when it ends in .gz or .zst),
    /// kafka://HOST:PORT/TOPIC or kinesis://STREAM (or the stream's ARN).
    #[arg(short, long, value_name = "SINK", default_value = "-")]
    pub output: String,

    /// Kafka or Kinesis sink: the record key (Kinesis: the partition key) is this field's
    /// value (strings as they are, other JSON as its text); a record without the field is bad.
    #[arg(
        hide_short_help = true,
        long = "key",
        value_name = "FIELD",
        help_heading = "Kafka and Kinesis sinks"
    )]
    pub key: Option<FieldPath>,

    /// Kafka sink: a header NAME from FIELD (repeatable; Kinesis records have no headers).
    #[arg(
        hide_short_help = true,
        long = "header",
        value_name = "NAME=FIELD",
        help_heading = "Kafka and Kinesis sinks"
    )]
    pub headers: Vec<String>,
}

/// How event time is read.
#[derive(Debug, Args)]
pub struct TimeArgs {
    /// Event-time field, as a dotted path (`occurred_at`, `value.ts`).
    #[arg(long, value_name = "FIELD")]
    pub time: Option<FieldPath>,

    /// How --time values are written: auto (RFC 3339, or epoch numbers told apart by size),
    /// rfc3339, s, ms, us, ns, or a strftime pattern such as '%Y-%m-%d %H:%M:%S'.
    #[arg(long, value_name = "FORMAT", default_value = "auto")]
    pub time_format: TimeFormat,
}

/// Checkpoints: resume after a crash or a stop.
#[derive(Debug, Args)]
pub struct CheckpointArgs {
    /// Keep a checkpoint at PATH, and resume from it when it exists.
    ///
    /// It holds the input position, the command's state, the counters and the output
    /// lengths: a killed run, started again, loses nothing and writes nothing twice to its
    /// -o, side and --dead-letter files.
    #[arg(long, value_name = "PATH", help_heading = "Checkpoints")]
    pub checkpoint: Option<PathBuf>,

    /// How often a checkpoint is taken (also at the end and on Ctrl-C); with -G, how often
    /// each partition's state goes to the changelog topic.
    #[arg(hide_short_help = true, long, value_name = "D", default_value = "10s", value_parser = positive_duration_ms, allow_hyphen_values = true, help_heading = "Checkpoints")]
    pub checkpoint_interval: Millis,

    /// Forget the checkpoint and start afresh.
    #[arg(
        hide_short_help = true,
        long,
        requires = "checkpoint",
        help_heading = "Checkpoints"
    )]
    pub reset: bool,
}

/// Where a consumer-group member keeps the state of each partition it owns.
#[derive(Debug, Args)]
pub struct ChangelogArgs {
    /// With -G on a Kafka source: the compacted topic that keeps each partition's state,
    /// for the member the group gives it to next [default: GROUP-COMMAND-changelog, created
    /// when missing].
    #[arg(
        hide_short_help = true,
        long,
        value_name = "TOPIC",
        requires = "group",
        help_heading = "Checkpoints"
    )]
    pub changelog: Option<String>,

    /// With -G on a Kinesis source: where each shard's state goes, for whichever member
    /// reads the shard next: s3://BUCKET/PREFIX (endpoint from AWS_ENDPOINT_URL_S3), or a
    /// directory all members share.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "S3_OR_DIR",
        requires = "group",
        help_heading = "Checkpoints"
    )]
    pub state_store: Option<String>,
}

/// A shuffle through an internal topic, for a topic not keyed by the state key.
#[derive(Debug, Args)]
pub struct RepartitionArgs {
    /// With -G on a topic keyed otherwise: shuffle every record by its state key first.
    ///
    /// Each record goes through the topic GROUP-COMMAND-repartition (created when missing),
    /// keyed by its state key, so that each member's state is exact on a topic keyed by
    /// anything. Costs one more write and read of every record.
    #[arg(long, requires = "group", help_heading = "Checkpoints")]
    pub repartition: bool,

    /// The partitions of the repartition topic, when it is created [default: the input's].
    #[arg(hide_short_help = true, long, value_name = "N", requires = "repartition", value_parser = clap::value_parser!(u16).range(1..), help_heading = "Checkpoints")]
    pub repartition_partitions: Option<u16>,
}

/// The run summary.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Also write the run summary as JSON to PATH.
    #[arg(long, value_name = "PATH", help_heading = "Reporting")]
    pub stats: Option<PathBuf>,

    /// No summary on stderr (errors are still reported).
    #[arg(short, long, help_heading = "Reporting")]
    pub quiet: bool,

    /// Serve the run's metrics to Prometheus at http://ADDR/metrics while it lasts
    /// (HOST:PORT, or :PORT for every interface): records read, written, late, bad; each
    /// partition's watermark and lag; state held; checkpoints.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "ADDR",
        help_heading = "Reporting"
    )]
    pub metrics: Option<String>,
}

/// The examples `weir consume -h` shows, which open its `--help` too.
macro_rules! consume_first_examples {
    () => {
        "Examples:
  # Records with event time in a range, to a file:
  weir consume fixtures/checkouts.ndjson --time occurred_at \\
    --from 2026-11-28T12:00:00Z --to 2026-11-28T12:05:00Z -o recent.ndjson
"
    };
}

const CONSUME_SHORT_HELP: &str = concat!(
    consume_first_examples!(),
    "
  # The last hour of a topic as envelopes, up to the end offsets at start:
  weir consume kafka://localhost:9092/checkouts --from -1h -e -J -o capture.ndjson.zst

More examples, the Kafka, Kinesis, schema and checkpoint options: weir consume --help"
);

const CONSUME_AFTER_HELP: &str = concat!(
    consume_first_examples!(),
    "
  # The first 3 valid records; bad lines counted and kept aside:
  weir consume fixtures/bad.ndjson -n 3 --dead-letter bad-lines.ndjson

  # Web checkouts of a topic's last hour, filtered at scan speed:
  weir consume kafka://localhost:9092/checkouts --from -1h -e --where 'client == \"web\"'

  # Validate a compressed file, keep the summary as JSON:
  weir consume events.ndjson.gz --stats stats.json > /dev/null

  # Resumable: killed and started again, it goes on where its checkpoint was taken:
  weir consume big.ndjson.gz --time occurred_at --from 2026-11-28T00:00:00Z \\
    -o day.ndjson --checkpoint day.ckpt

  # The last hour of a topic as envelopes into a zstd file, up to the end offsets at start:
  weir consume kafka://localhost:9092/checkouts --from -1h -e -J -o capture.ndjson.zst

  # kcat-style lines: the last 5 records of partitions 0 and 2:
  weir consume kafka://localhost:9092/checkouts --partitions 0,2 --from -5 -e -f '%p %o %k %s\\n'

  # A stream's partition keys and values, one per line:
  weir consume kinesis://orders --from -10m -e -f '%k %s\\n'

  # As a member of a consumer group, committing as it goes:
  weir consume kafka://localhost:9092/checkouts -G audit -X session.timeout.ms=10000

  # As one of several instances sharing a stream's shards (leases in DynamoDB table 'audit'):
  weir consume kinesis://orders -G audit -o orders-$HOSTNAME.ndjson"
);

/// Read records from a source and write them to a sink, unchanged.
///
/// NDJSON input: every line is checked to be JSON; the original bytes are written, so key order
/// and number formatting survive. With --time, --from/--to keep records whose event time lies in
/// [from, to); event time may be out of order, so the range filters rather than stops.
///
/// Kafka or Kinesis input: each record's value is written (JSON as it is, other text as a JSON
/// string, binary as {"base64":...}), or with -J its envelope, or with -f a kcat format;
/// --from/--to are log positions.
#[derive(Debug, Args)]
#[command(after_help = CONSUME_SHORT_HELP, after_long_help = CONSUME_AFTER_HELP)]
pub struct ConsumeArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub time: TimeArgs,

    /// Stop after writing N records.
    #[arg(short = 'n', long = "count", value_name = "N")]
    pub count: Option<u64>,

    /// Kafka or Kinesis source: write each record's envelope instead of its value (Kafka:
    /// topic, partition, offset, timestamp, key, headers, value; Kinesis: stream, shard,
    /// sequence, subsequence, arrival timestamp, partition key, value).
    #[arg(short = 'J', long)]
    pub envelope: bool,

    /// Kafka or Kinesis source: write each record by a kcat format: %t topic, %p partition, %o
    /// offset, %k key, %s value, %T timestamp (ms), %h headers, %K/%S key/value length, \n \t
    /// \\. On Kinesis: %t stream, %p shard, %o sequence number, %k partition key, %T arrival.
    #[arg(short = 'f', long, value_name = "FORMAT", conflicts_with = "envelope")]
    pub format: Option<String>,

    /// Flush after every record (also the default on a terminal).
    #[arg(short = 'u', long)]
    pub unbuffered: bool,

    #[command(flatten)]
    pub sink: RecordSinkArgs,

    #[command(flatten)]
    pub checkpoint: CheckpointArgs,

    #[command(flatten)]
    pub report: ReportArgs,
}

/// The examples `weir window -h` shows, which open its `--help` too.
macro_rules! window_first_examples {
    () => {
        "Examples:
  # Failed checkouts per merchant per minute of event time, waiting up to 10 minutes for
  # stragglers; a checkout later than that is counted late and kept aside:
  weir window fixtures/checkouts.ndjson --where 'status == \"failed\"' --time occurred_at \\
    --key merchant_id --tumbling 1m --delay 10m --count --sum amount --late-output late.ndjson
"
    };
}

const WINDOW_SHORT_HELP: &str = concat!(
    window_first_examples!(),
    "
More examples, the output's columns, the Kafka, Kinesis, schema and group options:
weir window --help"
);

const WINDOW_AFTER_HELP: &str = concat!(
    window_first_examples!(),
    "
  # --where takes exact decimals, and, or, not, in, =~ and time(); all checkouts of 100 or
  # more from the web or iOS:
  weir window fixtures/checkouts.ndjson --time occurred_at --key merchant_id \\
    --where 'amount >= 100 and client in [\"web\", \"ios\"]' --tumbling 1m --delay 10m --count

  # Revenue in 10-minute windows every 5 minutes, per Kafka partition watermark, late
  # records kept aside:
  weir consume -J kafka://localhost:9092/checkouts | weir window --time value.occurred_at \\
    --partition-by partition --hop 10m --slide 5m --delay 1m --sum value.amount \\
    --late-output late.ndjson

  # User sessions (30 minutes of inactivity ends one), as CSV:
  weir window events.ndjson --time ts --key user --session 30m --count \\
    --first page --last page --format csv

Output rows carry the key fields, window_start and window_end (RFC 3339 UTC), then the
aggregates: count, sum_F, min_F, max_F, avg_F, distinct_F, pN_F, first_F, last_F (F with
dots as _, or the name given by --as right after the aggregate). A row that replaces an
earlier row for the same key and window has \"update\": true. When a late record moves a
fired session's start (it extends the session to the left, or merges sessions), the row for
the old start is withdrawn with \"retract\": true and no aggregates, so a sink upserting on
(key, window_start) stays right. Sums, minima, maxima and averages are exact decimals; null or
missing values are ignored, as in SQL.

With -G each member keeps the windows of its partitions' keys, which is exact only when every
record of a key is in one partition: each record's message key must spell its --key value (a
string's text, other JSON as written, several fields as a JSON array: [\"m-42\",7]). The
first record that does not stops the run (exit 3) before a wrong row is written. On a topic
keyed by something else, add --repartition: each member first sends every record through
GROUP-window-repartition, keyed by its --key value, and carries the input's watermarks
across, so the rows are those of one reader of the input:
  weir window kafka://localhost:9092/checkouts -G billing --repartition --time value.ts \\
    --key value.merchant_id --tumbling 1m --delay 10m --count -o kafka://localhost:9092/rows

On a Kinesis stream, -G APP shares the shards through APP's DynamoDB lease table and keeps
each shard's windows in --state-store; the stream must be keyed by --key (else exit 2), and
a split or merge hands each child its parents' windows of its keys:
  weir window kinesis://checkouts -G billing --state-store s3://my-bucket/weir \\
    --time value.ts --key value.merchant_id --tumbling 1m --delay 10m --count"
);

/// Aggregate events per key per event-time window, with watermarks and a late-data policy.
///
/// Windows are half-open [start, end). The watermark is (max event time seen) - --delay, per
/// partition, and the minimum over active partitions. A window's row comes out once the
/// watermark reaches its end; at the end of the input every open window is emitted. A record
/// whose every window is past watermark + --allowed-lateness is late: counted, and written
/// unchanged to --late-output. A record within the allowed lateness updates its window, which
/// is emitted again as an update.
#[derive(Debug, Args)]
#[command(after_help = WINDOW_SHORT_HELP, after_long_help = WINDOW_AFTER_HELP)]
#[command(group(clap::ArgGroup::new("kind").required(true).args(["tumbling", "hop", "session"])))]
pub struct WindowArgs {
    #[command(flatten)]
    pub time: TimeArgs,

    /// Group by this field (repeatable for a composite key; without --key, one global key).
    ///
    /// Keys compare by their JSON text ("1" and 1 differ, as do 1.5 and 1.50); null is a key,
    /// a missing field makes the record bad.
    #[arg(long = "key", value_name = "FIELD")]
    pub keys: Vec<FieldPath>,

    /// Tumbling windows of SIZE (1m, 1h).
    #[arg(long, value_name = "SIZE", value_parser = positive_duration_ms, allow_hyphen_values = true, help_heading = "Windows")]
    pub tumbling: Option<Millis>,

    /// Hopping (sliding) windows of SIZE, one starting every --slide.
    #[arg(long, value_name = "SIZE", requires = "slide", value_parser = positive_duration_ms, allow_hyphen_values = true, help_heading = "Windows")]
    pub hop: Option<Millis>,

    /// The step between hopping windows, at most SIZE (a record is in every window that
    /// covers it: SIZE / SLIDE of them, rounded up or down).
    #[arg(long, value_name = "SLIDE", requires = "hop", conflicts_with_all = ["tumbling", "session"], value_parser = positive_duration_ms, allow_hyphen_values = true, help_heading = "Windows")]
    pub slide: Option<Millis>,

    /// Session windows: a key's session ends after GAP without events.
    #[arg(long, value_name = "GAP", value_parser = positive_duration_ms, allow_hyphen_values = true, help_heading = "Windows")]
    pub session: Option<Millis>,

    /// Shift tumbling/hopping window starts by D from the epoch, as Flink's offset does; D
    /// may be negative: --tumbling 1d --offset -8h gives days from midnight at UTC+8.
    #[arg(long, value_name = "D", default_value = "0", value_parser = signed_duration_ms, allow_hyphen_values = true, help_heading = "Windows")]
    pub offset: Millis,

    /// Watermark delay: how much out-of-orderness to wait for.
    #[arg(long, value_name = "D", default_value = "0", value_parser = duration_ms, allow_hyphen_values = true, help_heading = "Watermarks")]
    pub delay: Millis,

    /// Track the watermark per value of FIELD (e.g. `partition` of a `consume -J` envelope).
    #[arg(long, value_name = "FIELD", help_heading = "Watermarks")]
    pub partition_by: Option<FieldPath>,

    /// A partition without records for D (processing time) stops holding the watermark back.
    #[arg(long, value_name = "D", value_parser = positive_duration_ms, allow_hyphen_values = true, help_heading = "Watermarks")]
    pub idle_timeout: Option<Millis>,

    /// Keep fired windows for L more of event time; records in that span update them.
    #[arg(long, value_name = "L", default_value = "0", value_parser = duration_ms, allow_hyphen_values = true, help_heading = "Watermarks")]
    pub allowed_lateness: Millis,

    /// Write late records, unchanged, to PATH (.gz or .zst: compressed).
    #[arg(long, value_name = "PATH", help_heading = "Watermarks")]
    pub late_output: Option<PathBuf>,

    /// final: one row per window when complete; updates: a row on every change.
    #[arg(long, value_enum, default_value = "final", help_heading = "Watermarks")]
    pub emit: EmitMode,

    /// Number of records.
    #[arg(long, help_heading = "Aggregates")]
    pub count: bool,

    /// Exact decimal sum of FIELD.
    #[arg(long, value_name = "FIELD", help_heading = "Aggregates")]
    pub sum: Vec<FieldPath>,

    /// Smallest value of FIELD.
    #[arg(long, value_name = "FIELD", help_heading = "Aggregates")]
    pub min: Vec<FieldPath>,

    /// Largest value of FIELD.
    #[arg(long, value_name = "FIELD", help_heading = "Aggregates")]
    pub max: Vec<FieldPath>,

    /// Mean of FIELD.
    #[arg(long, value_name = "FIELD", help_heading = "Aggregates")]
    pub avg: Vec<FieldPath>,

    /// Distinct values of FIELD: exact up to 10,000 per window, then a HyperLogLog++ estimate
    /// flagged by distinct_F_estimated.
    #[arg(long, value_name = "FIELD", help_heading = "Aggregates")]
    pub distinct: Vec<FieldPath>,

    /// Percentiles of FIELD (non-negative numbers), as FIELD:p50,p99,p99.9; exact up to 256
    /// values per window, then 3 significant digits.
    #[arg(long, value_name = "FIELD:PCTS", help_heading = "Aggregates")]
    pub percentile: Vec<String>,

    /// Value of FIELD at the earliest event time.
    #[arg(long, value_name = "FIELD", help_heading = "Aggregates")]
    pub first: Vec<FieldPath>,

    /// Value of FIELD at the latest event time.
    #[arg(long, value_name = "FIELD", help_heading = "Aggregates")]
    pub last: Vec<FieldPath>,

    /// Names the output column of the aggregate just before it.
    #[arg(long = "as", value_name = "NAME", help_heading = "Aggregates")]
    pub names: Vec<String>,

    /// Bound on (key, window) pairs held at once; exceeding it stops with exit 3.
    #[arg(long, value_name = "N", default_value = "5000000", value_parser = state_bound)]
    pub max_open_windows: usize,

    /// Output rows as ndjson, csv, or table (aligned, for reading).
    #[arg(long, value_enum, default_value = "ndjson")]
    pub format: TableFormat,

    /// Sink: - (stdout), a file path (gzip or zstd when it ends in .gz or .zst),
    /// kafka://HOST:PORT/TOPIC or kinesis://STREAM (NDJSON rows, keyed by the first --key
    /// field; on Kinesis without --key, by window_start).
    #[arg(short, long, value_name = "SINK", default_value = "-")]
    pub output: String,

    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub checkpoint: CheckpointArgs,

    #[command(flatten)]
    pub changelog: ChangelogArgs,

    #[command(flatten)]
    pub shuffle: RepartitionArgs,

    #[command(flatten)]
    pub report: ReportArgs,
}

/// The examples `weir dedupe -h` shows, which open its `--help` too.
macro_rules! dedupe_first_examples {
    () => {
        "Examples:
  # Drop redeliveries: the first of each event_id within an hour of event time passes:
  weir dedupe fixtures/checkouts.ndjson --id event_id --time occurred_at --horizon 1h
"
    };
}

const DEDUPE_SHORT_HELP: &str = concat!(
    dedupe_first_examples!(),
    "
More examples, the Kafka, Kinesis, schema and group options: weir dedupe --help"
);

const DEDUPE_AFTER_HELP: &str = concat!(
    dedupe_first_examples!(),
    "
  # Composite ids, a processing-time horizon, the dropped repeats kept aside:
  weir consume kafka://localhost:9092/orders -e | weir dedupe --id order_id --id line \\
    --horizon 10m --horizon-by arrival --duplicates dups.ndjson

  # At most 1M ids in memory, whatever the input size:
  weir dedupe big.ndjson.gz --id user.id --max-keys 1000000 --stats stats.json > unique.ndjson

  # The latest version of each order within 10 minutes, written when the 10 minutes are up:
  weir dedupe orders.ndjson --id order_id --time updated_at --horizon 10m --keep last

  # Straight from a topic: the watermark is per partition, and one silent for 30 s lets go:
  weir dedupe kafka://localhost:9092/orders --id value.order_id --time value.updated_at \\
    --horizon 1h --idle-timeout 30s

Ids compare by their JSON text (the string \"1\" and the number 1 differ); a record whose id
field is missing or null is a bad record. A remembered id costs its 128-bit hash and its time
(24 bytes in the map; 43.7 bytes of RSS per id measured at 10M ids; at most 72 bytes per
--max-keys key plus a 1 MiB Bloom filter); --exact-ids keeps the text instead. --keep last
also holds one record per remembered id.

With -G each member remembers the ids of its partitions, which is exact only when every
record of an id is in one partition: each record's message key must spell its --id value (as
window's --key). The first record that does not stops the run (exit 3); --repartition
shuffles the records by --id through GROUP-dedupe-repartition first, as window's does."
);

/// Drop repeated records: keep the first (or last) of each id within a horizon, with bounded memory.
///
/// Records pass through unchanged and in order. An id is remembered from its first record
/// for --horizon of event time (the watermark: max event time seen - --delay, the least over
/// --partition-by values, or a broker source's partitions or shards; a silent one holds it
/// back until --idle-timeout) or of processing time (--horizon-by arrival); a repeat inside that
/// span is dropped and counted. --max-keys bounds memory: the oldest ids are evicted and
/// counted, and a later repeat of an evicted id passes, counted as possibly a duplicate.
#[derive(Debug, Args)]
#[command(after_help = DEDUPE_SHORT_HELP, after_long_help = DEDUPE_AFTER_HELP)]
pub struct DedupeArgs {
    /// The id field (repeatable for a composite id).
    #[arg(long = "id", value_name = "FIELD", required = true)]
    pub ids: Vec<FieldPath>,

    #[command(flatten)]
    pub time: TimeArgs,

    /// How long an id is remembered. Without it, ids are remembered until --max-keys evicts them.
    #[arg(long, value_name = "D", value_parser = positive_duration_ms, allow_hyphen_values = true)]
    pub horizon: Option<Millis>,

    /// Measure the horizon in event time (--time, watermark) or processing time.
    #[arg(long, value_enum, default_value = "event", requires = "horizon")]
    pub horizon_by: HorizonBy,

    /// Watermark delay for an event-time horizon.
    #[arg(long, value_name = "D", default_value = "0", value_parser = duration_ms, allow_hyphen_values = true)]
    pub delay: Millis,

    /// Track the watermark per value of FIELD (e.g. `partition` of a `consume -J` envelope).
    #[arg(long, value_name = "FIELD")]
    pub partition_by: Option<FieldPath>,

    /// A partition without records for D (processing time) stops holding the watermark back,
    /// so that ids still expire while it is silent.
    #[arg(long, value_name = "D", value_parser = positive_duration_ms, allow_hyphen_values = true)]
    pub idle_timeout: Option<Millis>,

    /// Hard bound on remembered ids; the oldest are evicted (and counted) when it is reached.
    #[arg(long, value_name = "N", default_value = "10000000", value_parser = state_bound)]
    pub max_keys: usize,

    /// Remember ids as text instead of 128-bit hashes (more memory, no hash collisions).
    #[arg(long)]
    pub exact_ids: bool,

    /// Write the dropped repeats, unchanged, to PATH (.gz or .zst: compressed).
    #[arg(long, value_name = "PATH")]
    pub duplicates: Option<PathBuf>,

    /// Which record of an id's group to write: the first, at once, or the last, held until
    /// the id is forgotten (expired, evicted, or the input ends).
    #[arg(long, value_enum, default_value = "first")]
    pub keep: Keep,

    #[command(flatten)]
    pub sink: RecordSinkArgs,

    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub checkpoint: CheckpointArgs,

    #[command(flatten)]
    pub changelog: ChangelogArgs,

    #[command(flatten)]
    pub shuffle: RepartitionArgs,

    #[command(flatten)]
    pub report: ReportArgs,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum HorizonBy {
    /// Event time, from --time and the watermark.
    #[default]
    Event,
    /// Processing time: when weir reads the record.
    Arrival,
}

/// The examples `weir watermark-profile -h` shows, which open its `--help` too.
macro_rules! profile_first_examples {
    () => {
        "Examples:
  # How late do checkouts arrive, per client type, and what delay covers 99.9% of them?
  weir watermark-profile fixtures/checkouts.ndjson --time occurred_at \\
    --arrival arrived_at --by client

  # Exactly what `window --tumbling 1m` would count late with each delay:
  weir watermark-profile fixtures/checkouts.ndjson --time occurred_at --tumbling 1m \\
    --delay 10s,1m,10m
"
    };
}

const PROFILE_SHORT_HELP: &str = concat!(
    profile_first_examples!(),
    "
More examples and the Kafka, Kinesis, schema and group options: weir watermark-profile --help"
);

const PROFILE_AFTER_HELP: &str = concat!(
    profile_first_examples!(),
    "
  # What `window --session 2m --key merchant_id` would count late with each delay:
  weir watermark-profile fixtures/checkouts.ndjson --time occurred_at --session 2m \\
    --key merchant_id --delay 0s,1m,10m

  # The late share of a 10-second delay per minute of event time, as JSON, and a picture:
  weir watermark-profile events.ndjson --time ts --arrival received_at --delay 10s \\
    --bucket 1m --format json --plot lateness.svg > profile.json

Lateness is arrival time - event time (arrival from --arrival, else a Kafka record's
timestamp or a Kinesis record's arrival, else the time weir reads the record).
Out-of-orderness is the largest event time seen before in the same partition minus the
record's event time: a bounded-out-of-orderness watermark with delay D makes a record late
exactly when its out-of-orderness exceeds D, so the recommended delay for a target is that
quantile of out-of-orderness. Quantiles have 3 significant digits (hdrhistogram), a
recommended delay rounded up, never below the exact quantile; the late counts for --delay
values are exact. A record without a usable time is counted, not fatal.

A window counts a record late when its window has closed, not when it is out of order: give
window's flags (--tumbling, or --hop and --slide, with --offset and --allowed-lateness) and the
late counts and recommended delays are those of `window` with those flags, exactly. With
--session GAP (and its --key) the window runs once per delay, and a recommended delay is the
smallest of the delays asked for and a ladder from 0s to 1d that meets its target.

The drift series (--bucket, at the first --delay) flags a bucket as a jump when its late share
is over 3 times the median bucket's and over 1%, with at least 5 late records. --plot draws
the lateness histogram on a log-scale axis with the recommended delays dashed, and the late
share per bucket on a linear event-time axis (a bucket without records is a gap; jumps red).

With -G each member profiles the partitions it owns, each apart, and the profiles merge
exactly: unlike window and dedupe, watermark-profile needs no topic keyed by any field."
);

/// Measure how late events arrive and recommend a watermark delay.
///
/// Reads event time (--time) and arrival time (--arrival, else read time) and reports the
/// distributions of lateness and out-of-orderness (overall and per --by group): count, min,
/// p50..p99.99, max, the share of negative lateness (clock skew), the smallest delay that keeps
/// each --target share on time, the late share for each --delay, and the late share per
/// event-time --bucket with sudden jumps flagged. Memory is bounded: histograms, not samples.
#[derive(Debug, Args)]
#[command(after_help = PROFILE_SHORT_HELP, after_long_help = PROFILE_AFTER_HELP)]
#[command(group(clap::ArgGroup::new("predicted").args(["tumbling", "hop", "session"])))]
pub struct ProfileArgs {
    #[command(flatten)]
    pub time: TimeArgs,

    /// Arrival-time field (same formats as --time). Default: a Kafka record's timestamp or a
    /// Kinesis record's arrival time, else the time weir reads the record.
    #[arg(long, value_name = "FIELD")]
    pub arrival: Option<FieldPath>,

    /// Also profile per value of FIELD (e.g. client type).
    #[arg(long, value_name = "FIELD")]
    pub by: Option<FieldPath>,

    /// Track out-of-orderness per value of FIELD (e.g. `partition`).
    #[arg(long, value_name = "FIELD")]
    pub partition_by: Option<FieldPath>,

    /// Shares (percent) to recommend a delay for.
    #[arg(
        long,
        value_name = "PCTS",
        value_delimiter = ',',
        default_value = "99,99.9,99.99",
        value_parser = percent
    )]
    pub target: Vec<f64>,

    /// Delays to count late records for (the first also drives the drift series).
    #[arg(long, value_name = "DS", value_delimiter = ',', default_value = "10s,1m,10m", value_parser = duration_ms, allow_hyphen_values = true)]
    pub delay: Vec<Millis>,

    /// Event-time bucket of the drift series.
    #[arg(long, value_name = "D", default_value = "1m", value_parser = positive_duration_ms, allow_hyphen_values = true)]
    pub bucket: Millis,

    /// text: a readable report with an ASCII histogram; json: for scripts.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ReportFormat,

    /// Also draw the lateness histogram and the drift series to PATH (.svg, or .html wrapping it).
    #[arg(long, value_name = "PATH", value_parser = plot_path)]
    pub plot: Option<PathBuf>,

    /// Count late records as `window --tumbling SIZE` would, with the same --delay.
    #[arg(long, value_name = "SIZE", value_parser = positive_duration_ms, allow_hyphen_values = true, help_heading = "Predicting a window")]
    pub tumbling: Option<Millis>,

    /// Count late records as `window --hop SIZE --slide SLIDE` would.
    #[arg(long, value_name = "SIZE", requires = "slide", conflicts_with = "tumbling", value_parser = positive_duration_ms, allow_hyphen_values = true, help_heading = "Predicting a window")]
    pub hop: Option<Millis>,

    /// The step between hopping windows, as window's --slide.
    #[arg(long, value_name = "SLIDE", requires = "hop", conflicts_with = "tumbling", value_parser = positive_duration_ms, allow_hyphen_values = true, help_heading = "Predicting a window")]
    pub slide: Option<Millis>,

    /// Count late records as `window --session GAP` would (with its --key): the window runs
    /// once per delay, so the recommendations are the smallest of the delays tried.
    #[arg(long, value_name = "GAP", conflicts_with_all = ["tumbling", "hop"], value_parser = positive_duration_ms, allow_hyphen_values = true, help_heading = "Predicting a window")]
    pub session: Option<Millis>,

    /// As window's --key, with --session (repeatable; without it, one global key).
    #[arg(
        long = "key",
        value_name = "FIELD",
        requires = "session",
        help_heading = "Predicting a window"
    )]
    pub keys: Vec<FieldPath>,

    /// Shift window starts by D, as window's --offset.
    #[arg(long, value_name = "D", default_value = "0", requires = "predicted", value_parser = signed_duration_ms, allow_hyphen_values = true, help_heading = "Predicting a window")]
    pub offset: Millis,

    /// As window's --allowed-lateness.
    #[arg(long, value_name = "L", default_value = "0", requires = "predicted", value_parser = duration_ms, allow_hyphen_values = true, help_heading = "Predicting a window")]
    pub allowed_lateness: Millis,

    /// As window's --max-open-windows, with --session (per delay tried).
    #[arg(long, value_name = "N", default_value = "5000000", value_parser = state_bound, requires = "session", help_heading = "Predicting a window")]
    pub max_open_windows: usize,

    /// Sink: - (stdout) or a file path.
    #[arg(short, long, value_name = "SINK", default_value = "-")]
    pub output: String,

    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub checkpoint: CheckpointArgs,

    #[command(flatten)]
    pub changelog: ChangelogArgs,

    #[command(flatten)]
    pub report: ReportArgs,
}

/// A duration as milliseconds (zero allowed).
/// `--plot` writes SVG, or HTML around it: a name ending otherwise (`.png`) would hold SVG.
fn plot_path(s: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(s);
    let extension = path.extension().and_then(|e| e.to_str());
    match extension.map(str::to_ascii_lowercase).as_deref() {
        Some("svg" | "html" | "htm") => Ok(path),
        _ => Err("--plot writes SVG or HTML: name the file .svg or .html".into()),
    }
}

pub fn duration_ms(s: &str) -> Result<Millis, String> {
    parse_duration(s).map(duration_millis)
}

/// A duration that may be negative (`-8h`).
pub fn signed_duration_ms(s: &str) -> Result<Millis, String> {
    match s.strip_prefix('-') {
        Some(rest) => duration_ms(rest).map(|ms| -ms),
        None => duration_ms(s),
    }
}

/// A duration of at least one millisecond.
/// A share in percent, in (0, 100].
fn percent(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p),
        _ => Err("targets are percentages in (0, 100]".into()),
    }
}

pub fn positive_duration_ms(s: &str) -> Result<Millis, String> {
    match duration_ms(s)? {
        0 => Err(format!("'{s}' must be at least 1ms")),
        ms => Ok(ms),
    }
}

/// The examples `weir replay -h` shows, which open its `--help` too.
macro_rules! replay_first_examples {
    () => {
        "Examples:
  # Put an envelope file (from consume -J) back on a topic: keys, headers, timestamps restored:
  weir replay -J capture.ndjson.zst -o kafka://localhost:9092/checkouts --rate 5000/s
"
    };
}

const REPLAY_SHORT_HELP: &str = concat!(
    replay_first_examples!(),
    "
More examples and the Kafka, Kinesis and schema options: weir replay --help"
);

const REPLAY_AFTER_HELP: &str = concat!(
    replay_first_examples!(),
    "
  # Copy the last hour of a topic to another at ten times the original pace:
  weir replay kafka://localhost:9092/checkouts --from -1h -e \\
    -o kafka://localhost:9092/copy --speed 10x

  # Produce an NDJSON file, keyed by a field, and count what would be sent first:
  weir replay events.ndjson -o kafka://localhost:9092/events --key merchant_id --dry-run

  # A day-long paced replay that can be stopped and started again, keeping its pace:
  weir replay -J day.ndjson -o kafka://localhost:9092/load --speed 1x --checkpoint day.ckpt"
);

/// Re-read a range of records into a sink, at a controlled rate.
///
/// Lines of an NDJSON file become record values; with -J (or from a Kafka or Kinesis source)
/// each line is an envelope and its key, headers and timestamp (and with --keep-partition its
/// partition) are restored, so `consume -J` output round-trips. --rate holds a fixed rate;
/// --speed keeps the gaps between record timestamps, divided by the factor.
#[derive(Debug, Args)]
#[command(after_help = REPLAY_SHORT_HELP, after_long_help = REPLAY_AFTER_HELP)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub input: InputArgs,

    /// Timestamps for --speed and --from/--to on plain NDJSON lines (envelopes carry their own).
    #[command(flatten)]
    pub time: TimeArgs,

    /// The input lines are envelopes, as `weir consume -J` writes them.
    #[arg(short = 'J', long)]
    pub envelope: bool,

    /// Produce each envelope to the partition it came from (a Kafka sink).
    #[arg(long)]
    pub keep_partition: bool,

    /// At most this many records per second (5000/s, 300/m, 10k/h).
    #[arg(long, value_name = "N/s", value_parser = crate::core::pace::parse_rate, conflicts_with = "speed")]
    pub rate: Option<f64>,

    /// Keep the original gaps between record timestamps, sped up by this factor (10x).
    #[arg(long, value_name = "FACTOR", value_parser = crate::core::pace::parse_speed)]
    pub speed: Option<f64>,

    /// Stop after sending N records (a smoke test of a load, or its first N).
    #[arg(short = 'n', long = "count", value_name = "N")]
    pub count: Option<u64>,

    /// Count what would be written, write nothing (so there is nothing to resume).
    #[arg(long, conflicts_with = "checkpoint")]
    pub dry_run: bool,

    #[command(flatten)]
    pub sink: RecordSinkArgs,

    #[command(flatten)]
    pub checkpoint: CheckpointArgs,

    #[command(flatten)]
    pub report: ReportArgs,
}

const LAG_AFTER_HELP: &str = "\
Examples:
  # Alert when the billing group is more than 5 minutes behind (exit code 1):
  weir lag kafka://localhost:9092 --group billing --max-lag 5m

  # Every group on one topic, for node_exporter's textfile collector:
  weir lag kafka://localhost:9092/checkouts --all-groups --format prometheus > lag.prom

  # Watch the groups whose names start with etl-, every 10 seconds:
  weir lag kafka://localhost:9092 --group-pattern '^etl-' --watch 10s

  # How far a checkpointed weir run, or a KCL application, is behind on a Kinesis stream:
  weir lag kinesis://orders --checkpoint orders.ckpt --max-lag 5m
  weir lag kinesis://orders --kcl-app billing --format prometheus

  # An exporter Prometheus scrapes, measuring at most every 15 seconds:
  weir lag kafka://localhost:9092 --all-groups --serve :9308 --watch 15s

Time lag is now minus the timestamp of the first record the group has not consumed (read from
the log), 0 when it is caught up. A partition without a committed offset is reported as such,
not as zero lag, and counts all it holds against --max-messages. On Kinesis, per shard: now minus the arrival time of the first record after
the checkpoint (0 when caught up), MillisBehindLatest and the lease owner.

Exit codes: 0 within the thresholds (or none given), 1 a threshold exceeded, 5 nothing to check
(a --group without committed offsets, a --group-pattern that matches no group; with or without
a threshold, and a breach elsewhere is 1), 4 the cluster or stream cannot be reached within
--timeout. With --watch the report goes on until a signal (exit 130); breaches and what cannot
be checked are said on stderr each time.";

/// Consumer lag in messages and in time, with thresholds for scripts.
#[derive(Debug, Args)]
#[command(after_help = LAG_AFTER_HELP)]
#[command(group(clap::ArgGroup::new("threshold").multiple(true).args(["max_lag", "max_messages"])))]
pub struct LagArgs {
    /// kafka://HOST:PORT[,HOST:PORT][/TOPIC]: the cluster (port 9092 if left out), and
    /// optionally one topic; or kinesis://STREAM (or the stream's ARN).
    #[arg(value_name = "CLUSTER|STREAM")]
    pub cluster: String,

    /// Kinesis: the lag of the weir run that keeps this checkpoint.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "PATH",
        conflicts_with = "kcl_app",
        help_heading = "Kinesis"
    )]
    pub checkpoint: Option<PathBuf>,

    /// Kinesis: the lag of this KCL application, read from its lease table in DynamoDB
    /// (the table is named after the application).
    #[arg(
        hide_short_help = true,
        long,
        value_name = "NAME",
        help_heading = "Kinesis"
    )]
    pub kcl_app: Option<String>,

    /// Kinesis: the DynamoDB endpoint of --kcl-app's lease table, instead of AWS's.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "URL",
        requires = "kcl_app",
        help_heading = "Kinesis"
    )]
    pub dynamodb_endpoint_url: Option<String>,

    /// A consumer group (repeatable).
    #[arg(short = 'G', long = "group", value_name = "GROUP")]
    pub groups: Vec<String>,

    /// Every consumer group the cluster lists.
    #[arg(long, conflicts_with_all = ["groups", "group_pattern"])]
    pub all_groups: bool,

    /// The listed groups whose names match this regular expression.
    #[arg(long, value_name = "REGEX", value_parser = regex::Regex::new)]
    pub group_pattern: Option<regex::Regex>,

    /// How the time lag is found: exact, estimate, or none (messages only).
    #[arg(long, value_enum, default_value = "exact")]
    pub time_mode: LagTimeMode,

    /// Exit 1 when a time lag is above this (5m, 30s).
    #[arg(long, value_name = "D", value_parser = duration_ms, allow_hyphen_values = true)]
    pub max_lag: Option<Millis>,

    /// Exit 1 when the lag in messages is above N.
    #[arg(long, value_name = "N")]
    pub max_messages: Option<i64>,

    /// What --max-messages applies to: a group's sum over a topic, or each partition.
    #[arg(long, value_enum, default_value = "group", requires = "threshold")]
    pub per: crate::core::lag::Scope,

    /// Repeat every D: redraw on a terminal, append into a pipe or file. Stop with Ctrl-C.
    #[arg(long, value_name = "D", value_parser = positive_duration_ms, allow_hyphen_values = true)]
    pub watch: Option<Millis>,

    #[arg(long, value_enum, default_value = "table")]
    pub format: LagFormat,

    /// Where the report goes: - (stdout) or a file path.
    #[arg(short, long, value_name = "PATH", default_value = "-")]
    pub output: String,

    /// Say nothing on stderr of breaches or of what cannot be checked: the exit code says it.
    #[arg(short, long)]
    pub quiet: bool,

    /// Serve the lag to Prometheus at http://ADDR/metrics (HOST:PORT, or :PORT for every
    /// interface), as --format prometheus writes it: measured at each scrape, or at most
    /// every --watch D. Runs until SIGTERM or Ctrl-C (exit 0).
    #[arg(long, value_name = "ADDR", conflicts_with = "output")]
    pub serve: Option<String>,

    #[command(flatten)]
    pub client: ClientArgs,
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Folder that receives man/ and completions/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub out_dir: PathBuf,
}

/// The full clap command.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// `16M` → 16 MiB; plain numbers are bytes.
pub fn parse_bytes(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let (digits, shift) = match s.as_bytes().last() {
        Some(b'K' | b'k') => (&s[..s.len() - 1], 10),
        Some(b'M' | b'm') => (&s[..s.len() - 1], 20),
        Some(b'G' | b'g') => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    let n: usize = digits
        .parse()
        .map_err(|_| format!("invalid size '{s}': use a number of bytes, or K, M, G"))?;
    n.checked_shl(shift)
        .filter(|v| *v >> shift == n && *v > 0)
        .ok_or_else(|| format!("invalid size '{s}': must be above 0 and fit in memory"))
}

/// A bound on held state: a count of at least one (nothing held could not run at all).
pub fn state_bound(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_bound_is_at_least_one() {
        assert_eq!(state_bound("1"), Ok(1));
        assert_eq!(state_bound("5000000"), Ok(5_000_000));
        assert!(state_bound("0").unwrap_err().contains("at least 1"));
        assert!(state_bound("-1").is_err());
        assert!(state_bound("ten").is_err());
    }

    #[test]
    fn cli_definition_is_consistent() {
        command().debug_assert();
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(parse_bytes("100"), Ok(100));
        assert_eq!(parse_bytes("16M"), Ok(16 << 20));
        assert_eq!(parse_bytes("2k"), Ok(2048));
        assert!(parse_bytes("0").is_err());
        assert!(parse_bytes("x").is_err());
    }
}
