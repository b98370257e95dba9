//! One module per subcommand. Each first turns its arguments into a plan, checking every
//! rule (no file is created, truncated or appended to, no client connected, before the plan
//! holds), then opens the source and sinks and runs its step on the shared record path.
//! This file holds what the commands' plans share.

pub mod consume;
pub mod dedupe;
mod files;
pub mod generate;
pub mod lag;
pub mod profile;
pub mod replay;
pub mod window;

use crate::cli::{
    BrokerArgs, ChangelogArgs, CheckpointArgs, ClientArgs, Command, InputArgs, ReportArgs,
};
use crate::core::record::FieldPath;
use crate::core::time::{check_range_order, now_millis, LogPosition, Millis};
use crate::error::{Error, Result};
use crate::io::kafka::{ChangelogPlan, ClientOptions, KafkaSource, ReadPlan, ReadRequest, Render};
use crate::io::kinesis::{self, AwsOptions, KinesisClient, KinesisSource};
use crate::io::ndjson::NdjsonSource;
use crate::io::spec::{Input, KafkaSpec, KinesisSpec, SinkSpec, SourceSpec};
use crate::runtime::summary::ReportPlan;
use crate::runtime::{
    progress, signals, CheckpointInputs, CheckpointPlan, Checkpoints, PolicyPlan, Restored, Source,
};

/// Runs one parsed command line; `matches` are the subcommand's own (for flag order).
pub fn run(command: Command, matches: &clap::ArgMatches) -> Result<()> {
    files::check_distinct(command.name(), matches)?;
    signals::install();
    let stop = &signals::STOP;
    match command {
        Command::Consume(args) => consume::run(args, stop),
        Command::Window(args) => window::run(args, matches, stop),
        Command::Dedupe(args) => dedupe::run(args, stop),
        Command::WatermarkProfile(args) => profile::run(args, stop),
        Command::Replay(args) => replay::run(args, stop),
        Command::Lag(args) => lag::run(args, stop),
        Command::Generate(args) => generate::run(&args.out_dir),
    }
}

/// Checks, once the plan holds and before the run, the files only its end writes.
pub fn check_files_written_at_end(
    report: &ReportPlan,
    plot: Option<&std::path::Path>,
) -> Result<()> {
    if let Some(path) = &report.stats {
        files::check_written_at_end("--stats", path)?;
    }
    match plot {
        Some(path) => files::check_written_at_end("--plot", path),
        None => Ok(()),
    }
}

/// `--stats` and `--quiet`.
pub fn report_plan(report: &ReportArgs) -> ReportPlan {
    ReportPlan {
        stats: report.stats.clone(),
        quiet: report.quiet,
    }
}

/// A Kafka client's options (`-X`, `-F`, `--timeout`), the config file read and parsed.
pub fn client_options(client: &ClientArgs) -> Result<ClientOptions> {
    ClientOptions::resolve(
        client.config_file.as_deref(),
        &client.properties,
        client.timeout(),
    )
}

/// An AWS client's options (`--endpoint-url`, `--timeout`).
pub fn aws_options(client: &ClientArgs) -> AwsOptions {
    AwsOptions {
        endpoint_url: client.endpoint_url.clone(),
        timeout: client.timeout(),
    }
}

/// Where a command's records come from, checked, with nothing opened yet.
pub enum SourcePlan {
    Ndjson(Vec<Input>),
    Kafka {
        spec: KafkaSpec,
        read: ReadPlan,
        client: ClientOptions,
    },
    Kinesis {
        spec: KinesisSpec,
        read: kinesis::ReadPlan,
        options: AwsOptions,
    },
}

/// A command's input: the source, the error policy, the line limit.
pub struct InputPlan {
    pub source: SourcePlan,
    pub policy: PolicyPlan,
    pub max_line_bytes: usize,
}

impl InputPlan {
    /// Checks SOURCE and the flags that go with it. Kafka-only flags are refused on NDJSON
    /// input, except --from/--to when `time_range` says the command reads them as an
    /// event-time range there. Every input file must exist.
    pub fn new(input: &InputArgs, time_range: bool) -> Result<InputPlan> {
        let source = match SourceSpec::parse(&input.sources).map_err(Error::Usage)? {
            SourceSpec::Ndjson(inputs) => {
                reject_broker_flags(&input.broker, time_range)?;
                reject_kinesis_flags(&input.broker, "NDJSON input")?;
                for i in &inputs {
                    if let Input::File(path) = i {
                        std::fs::metadata(path).map_err(|e| {
                            Error::Unreachable(format!("cannot read {}: {e}", path.display()))
                        })?;
                    }
                }
                SourcePlan::Ndjson(inputs)
            }
            SourceSpec::Kafka(spec) => {
                let b = &input.broker;
                reject_kinesis_flags(b, "a Kafka source")?;
                let request = ReadRequest {
                    partitions: b.partitions.clone(),
                    group: b.group.clone(),
                    from: b.from.clone(),
                    to: b.to.clone(),
                    exit_at_end: b.exit_at_end,
                };
                let read = ReadPlan::new(&spec, &request, now_millis())?;
                let client = client_options(&b.client)?;
                SourcePlan::Kafka { spec, read, client }
            }
            SourceSpec::Kinesis(spec) => {
                let b = &input.broker;
                if b.group.is_some() {
                    return Err(Error::Usage(
                        "a Kinesis read has no consumer group: --checkpoint PATH keeps its position (and weir lag reads it)".into(),
                    ));
                }
                if !b.partitions.is_empty() {
                    return Err(Error::Usage(
                        "Kinesis has shards, not partitions: --shards ID[,ID]".into(),
                    ));
                }
                let request = kinesis::ReadRequest {
                    from: b.from.clone(),
                    to: b.to.clone(),
                    exit_at_end: b.exit_at_end,
                    shards: b.shards.clone(),
                    efo: b.efo.clone(),
                };
                let read = kinesis::ReadPlan::new(&spec, &request, now_millis())?;
                SourcePlan::Kinesis {
                    spec,
                    read,
                    options: aws_options(&b.client),
                }
            }
        };
        Ok(InputPlan {
            source,
            policy: PolicyPlan::new(input.on_error, input.dead_letter.as_deref()),
            max_line_bytes: input.max_line_bytes,
        })
    }

    /// Whether records come from a Kafka or Kinesis source, as envelopes.
    pub fn is_broker(&self) -> bool {
        matches!(
            self.source,
            SourcePlan::Kafka { .. } | SourcePlan::Kinesis { .. }
        )
    }

    pub fn is_kinesis(&self) -> bool {
        matches!(self.source, SourcePlan::Kinesis { .. })
    }

    /// The envelope field holding the broker timestamp, for a broker source.
    pub fn broker_timestamp_field(&self) -> Option<FieldPath> {
        self.is_broker()
            .then(|| "timestamp".parse().expect("a valid path"))
    }

    /// The field that tells partitions apart when the command was not given one: a broker
    /// source's records are envelopes with their `partition` (Kafka) or `shard` (Kinesis).
    pub fn partition_field(&self, given: Option<&FieldPath>) -> Option<FieldPath> {
        match given {
            Some(f) => Some(f.clone()),
            None => self.source_partition_field(),
        }
    }

    /// Whether `partition_by` is the field naming the source's own partitions, which the
    /// source reports as it reads them (`RecordStep::assigned`).
    pub fn is_source_partition(&self, partition_by: Option<&FieldPath>) -> bool {
        partition_by.is_some() && partition_by.cloned() == self.source_partition_field()
    }

    /// The envelope field naming a broker source's partitions.
    pub fn source_partition_field(&self) -> Option<FieldPath> {
        let name = match &self.source {
            SourcePlan::Ndjson(_) => return None,
            SourcePlan::Kafka { .. } => "partition",
            SourcePlan::Kinesis { .. } => "shard",
        };
        Some(name.parse().expect("a valid path"))
    }

    /// Whether the input is stdin, which cannot be read again: a run restored from its
    /// checkpoint goes on with a new stdin.
    pub fn reads_stdin(&self) -> bool {
        self.input_names().iter().any(|n| n == "<stdin>")
    }

    /// What the source reads, as checkpoints name it.
    pub fn checkpoint_inputs(&self) -> CheckpointInputs {
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
    pub fn input_names(&self) -> Vec<String> {
        match &self.source {
            SourcePlan::Ndjson(inputs) => inputs.iter().map(Input::display_name).collect(),
            SourcePlan::Kafka { .. } | SourcePlan::Kinesis { .. } => Vec::new(),
        }
    }

    /// Opens the source: connects to a broker and resolves its positions; a broker's records
    /// are rendered as `render` says. Files are opened by the reader as it comes to them.
    pub fn open_source(&self, render: Render) -> Result<Box<dyn Source>> {
        self.open_source_at(render, None)
    }

    /// Opens the source to go on from where a `restored` run stood.
    pub fn open_source_at(
        &self,
        render: Render,
        restored: Option<&Restored>,
    ) -> Result<Box<dyn Source>> {
        Ok(match &self.source {
            SourcePlan::Ndjson(inputs) => {
                let source = NdjsonSource::new(inputs.clone()).with_progress();
                Box::new(match restored {
                    Some(r) => source.resume_at(r.at),
                    None => source,
                })
            }
            SourcePlan::Kafka { spec, read, client } => {
                let resume = restored.map(|r| r.offsets.as_slice()).unwrap_or_default();
                let mut source = KafkaSource::open(spec, read, client, render, resume)?;
                source.show_progress(source.total.and_then(progress::records));
                Box::new(source)
            }
            SourcePlan::Kinesis {
                spec,
                read,
                options,
            } => {
                let runtime = kinesis::client::runtime()?;
                let client = KinesisClient::connect(&runtime, spec, options)?;
                let empty = Default::default();
                let resume = restored.map(|r| &r.shards).unwrap_or(&empty);
                Box::new(KinesisSource::open(runtime, client, read, render, resume)?)
            }
        })
    }
}

/// `--checkpoint`, checked against the sink: a resumed run cuts its output files back to the
/// checkpoint (exactly once) or writes to a topic or stream again what came after it (at
/// least once), so stdout cannot take it, but for a command that writes its output only at
/// the end (`report_at_end`).
pub fn checkpoint_plan(
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
        interval: std::time::Duration::from_millis(args.checkpoint_interval as u64),
        reset: args.reset,
    }))
}

/// The Kafka consumer group a command's source reads as a member of, if any.
pub fn group_of(input: &InputPlan) -> Option<&str> {
    match &input.source {
        SourcePlan::Kafka { read, .. } => read.group.as_deref(),
        _ => None,
    }
}

/// For a command that keeps state per partition as a consumer-group member (`window`,
/// `dedupe` with -G): names its changelog topic on the read and returns how often states are
/// saved there; `None` for a source that is no group's. A checkpoint file cannot go with it:
/// a partition's state must follow the partition to whichever member the group gives it.
pub fn changelog_plan(
    input: &mut InputPlan,
    command: &str,
    changelog: &ChangelogArgs,
    checkpoint: &CheckpointArgs,
    job: &str,
) -> Result<Option<std::time::Duration>> {
    let SourcePlan::Kafka { read, .. } = &mut input.source else {
        return Ok(None);
    };
    let Some(group) = &read.group else {
        return Ok(None);
    };
    if checkpoint.checkpoint.is_some() {
        return Err(Error::Usage(
            "with -G each partition's state is kept in the changelog topic (--changelog), for whichever member the group gives the partition to; --checkpoint is for a run without -G".into(),
        ));
    }
    let topic = changelog
        .changelog
        .clone()
        .unwrap_or_else(|| format!("{group}-{command}-changelog"));
    read.changelog = Some(ChangelogPlan {
        topic,
        job: job.to_string(),
    });
    Ok(Some(std::time::Duration::from_millis(
        checkpoint.checkpoint_interval as u64,
    )))
}

/// Opens a run's checkpoints, when it keeps them, and reads the one to restore from.
pub fn open_checkpoints(
    plan: Option<&CheckpointPlan>,
    command: &'static str,
    job: &str,
    input: &InputPlan,
) -> Result<(Option<Checkpoints>, Option<Restored>)> {
    let Some(plan) = plan else {
        return Ok((None, None));
    };
    let mut checkpoints =
        Checkpoints::open(plan, command, job.to_string(), input.checkpoint_inputs())?;
    let restored = checkpoints.restore()?;
    if restored.is_some() && input.reads_stdin() {
        eprintln!("weir {command}: restored from the checkpoint; the input goes on from where this stdin starts");
    }
    Ok((Some(checkpoints), restored))
}

/// The start of a processing-time clock that reads `now` at once: a resumed run's clock goes
/// on from the checkpoint's.
pub fn clock_from(now: Millis) -> std::time::Instant {
    let since = std::time::Duration::from_millis(now.max(0) as u64);
    let start = std::time::Instant::now();
    start.checked_sub(since).unwrap_or(start)
}

/// `--from`/`--to` on NDJSON input: an event-time range `[from, to)`, `None` where open.
pub fn ndjson_time_range(
    broker: &BrokerArgs,
    now: Millis,
) -> Result<(Option<Millis>, Option<Millis>)> {
    time_range(broker.from.as_deref(), broker.to.as_deref(), now)
}

fn time_range(
    from_text: Option<&str>,
    to_text: Option<&str>,
    now: Millis,
) -> Result<(Option<Millis>, Option<Millis>)> {
    let from = ndjson_time_bound("--from", from_text, now)?;
    let to = ndjson_time_bound("--to", to_text, now)?;
    if let (Some(from), Some(to), Some(from_text), Some(to_text)) = (from, to, from_text, to_text) {
        let (start, end) = (LogPosition::Time(from), LogPosition::Time(to));
        check_range_order((&start, from_text), (&end, to_text)).map_err(Error::Usage)?;
    }
    Ok((from, to))
}

/// One bound on NDJSON input: only a time (or an open end) makes sense there.
fn ndjson_time_bound(flag: &str, text: Option<&str>, now: Millis) -> Result<Option<Millis>> {
    let Some(text) = text else { return Ok(None) };
    match LogPosition::parse(text, now).map_err(|e| Error::Usage(format!("{flag}: {e}")))? {
        LogPosition::Time(t) => Ok(Some(t)),
        LogPosition::Beginning if flag == "--from" => Ok(None),
        LogPosition::End if flag == "--to" => Ok(None),
        other => {
            let why = match other {
                LogPosition::Offset(_) => "offsets are a Kafka or Kinesis source's",
                LogPosition::FromEnd(_) => {
                    "a count back from the end is a Kafka or Kinesis source's"
                }
                LogPosition::Stored => "a group's stored offsets are a Kafka source's",
                _ => "this bound reads nothing of NDJSON input",
            };
            Err(Error::Usage(format!(
                "{flag} {text}: {why}; on NDJSON input give an RFC 3339 or relative time"
            )))
        }
    }
}

/// Kinesis source options make no sense on other sources; say so rather than ignore them.
fn reject_kinesis_flags(broker: &BrokerArgs, what: &str) -> Result<()> {
    let flag = if !broker.shards.is_empty() {
        "--shards"
    } else if broker.efo.is_some() {
        "--efo"
    } else {
        return Ok(());
    };
    Err(Error::Usage(format!(
        "{flag} applies to a Kinesis source (kinesis://STREAM), not to {what}"
    )))
}

/// Kafka source options make no sense on NDJSON input; say so rather than ignore them.
/// `consume` takes --from/--to there as an event-time range.
fn reject_broker_flags(broker: &BrokerArgs, time_range_ok: bool) -> Result<()> {
    let flag = if !broker.partitions.is_empty() {
        Some("--partitions")
    } else if broker.group.is_some() {
        Some("--group")
    } else if broker.exit_at_end {
        Some("-e")
    } else if !time_range_ok && broker.from.is_some() {
        Some("--from")
    } else if !time_range_ok && broker.to.is_some() {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_on_ndjson() {
        let now = 10_000_000;
        assert_eq!(
            ndjson_time_bound("--from", Some("-1s"), now).unwrap(),
            Some(now - 1000)
        );
        assert_eq!(
            ndjson_time_bound("--from", Some("beginning"), now).unwrap(),
            None
        );
        assert_eq!(ndjson_time_bound("--to", Some("end"), now).unwrap(), None);
        assert!(ndjson_time_bound("--from", Some("42"), now).is_err());
        assert!(ndjson_time_bound("--from", Some("stored"), now).is_err());
        assert!(ndjson_time_bound("--to", Some("beginning"), now).is_err());
        let range = |from: &str, to: &str| time_range(Some(from), Some(to), now);
        assert_eq!(
            range("-2s", "-1s").unwrap(),
            (Some(now - 2000), Some(now - 1000))
        );
        assert_eq!(
            range("-1s", "-1s").unwrap(),
            (Some(now - 1000), Some(now - 1000))
        );
        let backwards = range("2026-11-28T13:00:00Z", "2026-11-28T12:00:00Z").unwrap_err();
        assert!(matches!(backwards, Error::Usage(ref m) if m.contains("comes after --to")));
    }
}
