//! One module per subcommand; this file holds what every command's run shares.

pub mod consume;
pub mod dedupe;
pub mod generate;
pub mod lag;
pub mod profile;
pub mod replay;
pub mod window;

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::{BrokerArgs, Command, InputArgs, ReportArgs};
use crate::core::record::FieldPath;
use crate::core::time::{now_millis, Millis, Position};
use crate::error::{Error, Result};
use crate::io::dead_letter::ErrorPolicy;
use crate::io::kafka::{KafkaSource, SourceOptions};
use crate::io::ndjson::{drive, Drive, NdjsonReader, Prepare, ReadOptions, RecordStep};
use crate::io::spec::{Input, KafkaSpec, SourceSpec};
use crate::stats::{Counters, Stats};

/// Set by SIGINT/SIGTERM; commands check it between records and stop cleanly.
static STOP: AtomicBool = AtomicBool::new(false);

/// Runs one parsed command line; `matches` are the subcommand's own (for flag order).
pub fn run(command: Command, matches: &clap::ArgMatches) -> Result<()> {
    install_signal_handler();
    match command {
        Command::Consume(args) => consume::run(args, &STOP),
        Command::Window(args) => window::run(args, matches, &STOP),
        Command::Dedupe(args) => dedupe::run(args, &STOP),
        Command::WatermarkProfile(args) => profile::run(args, &STOP),
        Command::Replay(args) => replay::run(args, &STOP),
        Command::Lag(args) => lag::run(args, &STOP),
        Command::Generate(args) => generate::run(&args.out_dir),
    }
}

/// The first signal asks for a clean stop (flush, summary, exit 130); a second one exits now.
fn install_signal_handler() {
    let _ = ctrlc::set_handler(|| {
        if STOP.swap(true, Ordering::SeqCst) {
            std::process::exit(crate::error::exit::INTERRUPTED as i32);
        }
    });
}

/// Ends a run: the stderr summary (unless quiet, or stdout was closed under us) and the
/// `--stats` JSON, then the run's own result.
pub fn finish(stats: &Stats, report: &ReportArgs, result: Result<()>) -> Result<()> {
    let broken_pipe = matches!(result, Err(Error::BrokenPipe));
    // A usage error means nothing ran: there is nothing to summarise.
    let usage = matches!(result, Err(Error::Usage(_)));
    if !report.quiet && !broken_pipe && !usage {
        eprintln!("{}", stats.summary_line());
    }
    if let Some(path) = &report.stats {
        let (code, message) = match &result {
            Ok(()) => (0, None),
            Err(e) => (e.exit_code(), (!broken_pipe).then(|| e.to_string())),
        };
        stats.write_json(path, code, message)?;
    }
    result
}

/// The Kafka source options of a command line.
pub fn source_options(broker: &BrokerArgs) -> SourceOptions<'_> {
    SourceOptions {
        config_file: broker.client.config_file.as_deref(),
        properties: &broker.client.properties,
        partitions: &broker.partitions,
        group: broker.group.as_deref(),
        from: broker.from.as_deref(),
        to: broker.to.as_deref(),
        exit_at_end: broker.exit_at_end,
        timeout: broker.client.timeout(),
        now: now_millis(),
    }
}

/// `--from`/`--to` on NDJSON input: only a time (or an open end) makes sense there.
pub fn ndjson_time_bound(flag: &str, text: Option<&str>, now: Millis) -> Result<Option<Millis>> {
    let Some(text) = text else { return Ok(None) };
    match Position::parse(text, now).map_err(|e| Error::Usage(format!("{flag}: {e}")))? {
        Position::Time(t) => Ok(Some(t)),
        Position::Beginning if flag == "--from" => Ok(None),
        Position::End if flag == "--to" => Ok(None),
        other => Err(Error::Usage(format!(
            "{flag} {text}: {other:?} positions need a Kafka source; on NDJSON input use an RFC 3339 or relative time"
        ))),
    }
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
        Some(flag) => Err(Error::Usage(format!(
            "{flag} applies to a Kafka source (kafka://HOST:PORT/TOPIC), not to NDJSON input"
        ))),
        None => Ok(()),
    }
}

/// Where a command's records come from, as SOURCE names them. Nothing is opened or connected
/// until `read_records`, so that every flag is checked first.
pub enum Source {
    Ndjson(Vec<Input>),
    Kafka(KafkaSpec),
}

impl Source {
    /// Parses SOURCE. Kafka-only flags are refused on NDJSON input, except --from/--to when
    /// `time_range` says the command reads them as an event-time range there.
    pub fn parse(input: &InputArgs, time_range: bool) -> Result<Source> {
        match SourceSpec::parse(&input.sources).map_err(Error::Usage)? {
            SourceSpec::Ndjson(inputs) => {
                reject_broker_flags(&input.broker, time_range)?;
                Ok(Source::Ndjson(inputs))
            }
            SourceSpec::Kafka(spec) => Ok(Source::Kafka(spec)),
            SourceSpec::Kinesis(_) => Err(Error::Usage("Kinesis sources are not built yet".into())),
        }
    }

    /// The envelope field holding the broker timestamp, for a broker source.
    pub fn broker_timestamp_field(&self) -> Option<FieldPath> {
        match self {
            Source::Kafka(_) => Some("timestamp".parse().expect("a valid path")),
            Source::Ndjson(_) => None,
        }
    }

    /// The field that tells partitions apart when the command was not given one: a broker
    /// source's records are envelopes with their `partition` (DESIGN §2).
    pub fn partition_field(&self, given: Option<&FieldPath>) -> Option<FieldPath> {
        match (given, self) {
            (Some(f), _) => Some(f.clone()),
            (None, Source::Kafka(_)) => Some("partition".parse().expect("a valid path")),
            (None, Source::Ndjson(_)) => None,
        }
    }
}

/// Reads `source` on the reader thread, which checks each line as `prepare` says, and runs
/// `step` on every record under the error policy.
pub fn read_records(
    source: Source,
    input: &InputArgs,
    prepare: Prepare,
    counters: &mut Counters,
    policy: &mut ErrorPolicy,
    stop: &AtomicBool,
    step: &mut impl RecordStep,
) -> Result<()> {
    let reader = match source {
        Source::Ndjson(inputs) => {
            let progress = progress_for(&inputs);
            let options = ReadOptions {
                max_line_bytes: input.max_line_bytes,
                progress,
                prepare,
            };
            NdjsonReader::spawn(inputs, options)
        }
        Source::Kafka(spec) => {
            // Connects and resolves the positions.
            let mut source = KafkaSource::open(&spec, &source_options(&input.broker))?;
            source.show_progress(source.total.and_then(record_progress));
            let options = ReadOptions {
                max_line_bytes: input.max_line_bytes,
                progress: None,
                prepare,
            };
            NdjsonReader::spawn_kafka(source, options)
        }
    };
    drive(
        reader,
        Drive {
            counters,
            policy,
            stop,
        },
        step,
    )
}

/// A record-progress bar on stderr for a bounded broker read, only when stderr is a terminal.
pub fn record_progress(total: u64) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template(
            "{bar:40} {human_pos}/{human_len} records {per_sec} eta {eta}",
        )
        .expect("valid template"),
    );
    Some(pb)
}

/// A byte-progress bar on stderr, only when stderr is a terminal and every input is a file
/// (the work is bounded and its size known).
pub fn progress_for(inputs: &[Input]) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let mut total = 0;
    for input in inputs {
        match input {
            Input::File(path) => total += std::fs::metadata(path).ok()?.len(),
            Input::Stdin => return None,
        }
    }
    let pb = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template(
            "{bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
        )
        .expect("valid template"),
    );
    Some(pb)
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
    }
}
