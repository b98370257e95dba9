//! What the commands' plans share: the plans of the input, the sink, the state kept between
//! runs and the report, made from the arguments every command takes alike, each checked
//! before anything is opened.

use std::path::Path;
use std::time::Duration;

use super::files;
use crate::cli::{BrokerArgs, ChangelogArgs, CheckpointArgs, ClientArgs, InputArgs, ReportArgs};
use crate::core::time::{check_range_order, LogPosition, Millis};
use crate::error::{Error, Result};
use crate::io::input::{ClientRequest, InputPlan, SourcePlan, SourceRequest};
use crate::io::kafka::ChangelogPlan;
use crate::io::sink::{RecordFields, SinkPlan};
use crate::io::spec::SinkSpec;
use crate::runtime::{CheckpointPlan, Keeping, PolicyPlan, ReportPlan};

/// `--stats` and `--quiet`.
pub fn report_plan(report: &ReportArgs) -> ReportPlan {
    ReportPlan {
        stats: report.stats.clone(),
        quiet: report.quiet,
    }
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

/// SOURCE with its flags, the error policy and the line limit, checked. `time_range` says
/// the command reads `--from`/`--to` on NDJSON input as an event-time range.
pub fn input_plan(input: &InputArgs, time_range: bool) -> Result<InputPlan> {
    let b = &input.broker;
    let request = SourceRequest {
        sources: input.sources.clone(),
        partitions: b.partitions.clone(),
        group: b.group.clone(),
        from: b.from.clone(),
        to: b.to.clone(),
        exit_at_end: b.exit_at_end,
        shards: b.shards.clone(),
        efo: b.efo.clone(),
        clients: clients(&b.client),
        time_range,
    };
    let policy = PolicyPlan::new(input.on_error, input.dead_letter.as_deref());
    Ok(InputPlan::new(
        SourcePlan::new(&request)?,
        policy,
        input.max_line_bytes,
    ))
}

/// SINK (`-o`), with the fields a broker sink takes from each record.
pub fn sink_plan(output: &str, fields: RecordFields, client: &ClientArgs) -> Result<SinkPlan> {
    let clients = clients(client);
    SinkPlan::new(
        SinkSpec::parse(output).map_err(Error::Usage)?,
        fields,
        clients.kafka()?,
        clients.aws(),
    )
}

/// Checks, once the plan holds and before the run, the files only its end writes.
pub fn check_files_written_at_end(report: &ReportPlan, plot: Option<&Path>) -> Result<()> {
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

impl KeepingArgs<'_> {
    /// The state kept by a run of `job` over `input` writing to `sink`, checked; a group
    /// member's input is told where its changelog is.
    pub fn plan(&self, input: &mut InputPlan, sink: &SinkSpec, job: &str) -> Result<Keeping> {
        let file = checkpoint_plan(self.checkpoint, sink, self.report_at_end)?;
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
        let every = Duration::from_millis(self.checkpoint.checkpoint_interval as u64);
        Ok(Keeping::PerPartition(every))
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
