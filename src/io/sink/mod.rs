//! Sinks behind one interface (`Sink`): stdout and files (`file`), Kafka topics (`kafka`)
//! and Kinesis streams (`kinesis`); `LineSink` is the one a command holds, opened from a
//! checked `SinkPlan`.
//! `table` writes rows of named columns (NDJSON or CSV) into a sink.

mod file;
mod kafka;
mod kinesis;
mod output_file;
mod table;

use std::io::BufWriter;
use std::path::Path;

pub use file::FileSink;
pub use kafka::{KafkaLines, RecordFields};
pub use kinesis::KinesisLines;
pub use output_file::OutputFile;
pub use table::{CsvRow, TableFormat, TableWriter};

use super::kafka::{ClientOptions, Outgoing};
use super::kinesis::AwsOptions;
use super::spec::SinkSpec;
use crate::error::{Error, Fault, Result};
use crate::runtime::checkpoint::committed;
use crate::runtime::checkpoint::file::SinkLength;
use crate::runtime::Restored;

/// What every sink does. A record that the sink refuses (too large for a topic) is a
/// `Fault::Record`, handled by the error policy like a bad input record.
pub trait Sink {
    /// Writes one line: followed by a newline in a file, a record value in a topic.
    fn write_record(&mut self, line: &[u8]) -> Result<(), Fault>;
    /// Sends a record with its own key, headers, timestamp and partition (`replay`); a file
    /// takes its value as a line.
    fn send(&mut self, record: &Outgoing<'_>) -> Result<(), Fault>;
    /// Writes bytes as they are (no newline): text for people, such as `consume -f`.
    fn write_raw(&mut self, bytes: &[u8]) -> Result<()>;
    /// Makes everything written so far reach its destination (a topic: delivered).
    fn flush(&mut self) -> Result<()>;
    /// Keeps output moving while the input idles.
    fn idle(&mut self) -> Result<()>;
}

/// Where a command's output goes, checked, with nothing opened yet.
#[derive(Clone, Debug)]
pub struct SinkPlan {
    pub spec: SinkSpec,
    pub fields: RecordFields,
    pub client: ClientOptions,
    pub aws: AwsOptions,
}

impl SinkPlan {
    /// Checks that the record fields fit the sink: a Kinesis record needs a partition key
    /// (`--key FIELD`, unless the records are envelopes with their own) and has no headers.
    pub fn new(
        spec: SinkSpec,
        fields: RecordFields,
        client: ClientOptions,
        aws: AwsOptions,
    ) -> Result<SinkPlan> {
        match spec {
            SinkSpec::Kafka(_) => {}
            SinkSpec::Kinesis(_) if !fields.headers.is_empty() => {
                return Err(Error::Usage(
                    "Kinesis records have no headers: --header needs -o kafka://...".into(),
                ))
            }
            SinkSpec::Kinesis(_) if fields.key.is_none() && !fields.envelope_keys => {
                return Err(Error::Usage(
                    "-o kinesis:// needs --key FIELD: the field whose value is each record's partition key".into(),
                ))
            }
            SinkSpec::Kinesis(_) => {}
            SinkSpec::Stdout | SinkSpec::File(_) if !fields.is_empty() => {
                return Err(Error::Usage(
                    "--key/--header pick a record's key and headers: they need -o kafka://... or -o kinesis://..."
                        .into(),
                ))
            }
            SinkSpec::Stdout | SinkSpec::File(_) => {}
        }
        Ok(SinkPlan {
            spec,
            fields,
            client,
            aws,
        })
    }

    /// A sink for a report: stdout or a file only; `refusal` says so otherwise.
    pub fn text(spec: SinkSpec, refusal: &str) -> Result<SinkPlan> {
        if matches!(spec, SinkSpec::Kafka(_) | SinkSpec::Kinesis(_)) {
            return Err(Error::Usage(refusal.into()));
        }
        SinkPlan::new(
            spec,
            RecordFields::default(),
            ClientOptions::default(),
            AwsOptions::default(),
        )
    }

    pub fn is_broker(&self) -> bool {
        matches!(self.spec, SinkSpec::Kafka(_) | SinkSpec::Kinesis(_))
    }
}

/// The sink a command writes to.
pub struct LineSink {
    out: Out,
}

/// One variant per kind of sink, dispatched statically: every record passes here.
enum Out {
    File(FileSink),
    Kafka(Box<KafkaLines>),
    Kinesis(Box<KinesisLines>),
}

impl LineSink {
    /// Opens the sink of a checked plan: creates or truncates a file, or connects.
    pub fn open(plan: &SinkPlan) -> Result<LineSink> {
        LineSink::open_resumed(plan, None)
    }

    /// Opens the sink; restoring a checkpoint, a file is cut back to the length the
    /// `restored` run committed.
    pub fn open_resumed(plan: &SinkPlan, restored: Option<&Restored>) -> Result<LineSink> {
        let out = match &plan.spec {
            SinkSpec::Stdout => Out::File(FileSink::stdout()?),
            SinkSpec::File(path) => Out::File(FileSink::open(
                path,
                "output file",
                committed(restored, path),
            )?),
            SinkSpec::Kafka(k) => {
                Out::Kafka(Box::new(KafkaLines::open(k, &plan.client, &plan.fields)?))
            }
            SinkSpec::Kinesis(k) => {
                Out::Kinesis(Box::new(KinesisLines::open(k, &plan.aws, &plan.fields)?))
            }
        };
        Ok(LineSink { out })
    }

    /// Creates (or truncates) a side file: `--late-output`, `--duplicates`, `--dead-letter`
    /// (`what` names it in an error); restoring a checkpoint, cuts it back to the length the
    /// `restored` run committed.
    pub fn open_file(path: &Path, what: &str, restored: Option<&Restored>) -> Result<LineSink> {
        Ok(LineSink {
            out: Out::File(FileSink::open(path, what, committed(restored, path))?),
        })
    }

    /// Flushes and syncs a file sink; its path and length, for a checkpoint. A Kafka sink or
    /// stdout has none (the plan keeps them from checkpointed runs).
    pub fn durable(&mut self) -> Result<Option<SinkLength>> {
        self.flush()?;
        self.synced()
    }

    /// Flushes everything, and makes a compressed file whole: at the end of the run.
    pub fn close(&mut self) -> Result<()> {
        self.flush()?;
        self.closed()
    }

    /// `close` for a sink whose buffer was flushed already (through `file_writer`).
    fn closed(&self) -> Result<()> {
        match &self.out {
            Out::File(f) => f.end(),
            Out::Kafka(_) | Out::Kinesis(_) => Ok(()),
        }
    }

    /// `durable` for a sink whose buffer was flushed already (through `file_writer`).
    fn synced(&self) -> Result<Option<SinkLength>> {
        match &self.out {
            Out::File(f) if f.name != "stdout" => Ok(Some(SinkLength {
                committed_len: f.synced_len()?,
                path: f.name.clone(),
            })),
            _ => Ok(None),
        }
    }

    pub fn name(&self) -> String {
        match &self.out {
            Out::File(f) => f.name.clone(),
            Out::Kafka(k) => format!("kafka topic '{}'", k.topic()),
            Out::Kinesis(k) => format!("kinesis stream '{}'", k.stream()),
        }
    }

    /// The buffered file under a file sink, for the csv crate's writer.
    fn file_writer(&mut self) -> Option<&mut BufWriter<OutputFile>> {
        match &mut self.out {
            Out::File(f) => Some(f.writer()),
            Out::Kafka(_) | Out::Kinesis(_) => None,
        }
    }

    fn line_buffered(&self) -> bool {
        matches!(&self.out, Out::File(f) if f.line_buffered)
    }

    /// Writes a line the run itself made (a result row): a refusal ends the run.
    #[inline]
    pub fn write_line(&mut self, line: &[u8]) -> Result<()> {
        self.write_record(line).map_err(|e| match e {
            Fault::Record(r) => Error::Unreachable(format!("{}: {r}", self.name())),
            Fault::Fatal(e) => e,
        })
    }
}

impl Sink for LineSink {
    #[inline]
    fn write_record(&mut self, line: &[u8]) -> Result<(), Fault> {
        match &mut self.out {
            Out::File(f) => f.write_record(line),
            Out::Kafka(k) => k.write_record(line),
            Out::Kinesis(k) => k.write_record(line),
        }
    }

    fn send(&mut self, record: &Outgoing<'_>) -> Result<(), Fault> {
        match &mut self.out {
            Out::File(f) => f.send(record),
            Out::Kafka(k) => k.send(record),
            Out::Kinesis(k) => k.send(record),
        }
    }

    fn write_raw(&mut self, bytes: &[u8]) -> Result<()> {
        match &mut self.out {
            Out::File(f) => f.write_raw(bytes),
            Out::Kafka(k) => k.write_raw(bytes),
            Out::Kinesis(k) => k.write_raw(bytes),
        }
    }

    fn flush(&mut self) -> Result<()> {
        match &mut self.out {
            Out::File(f) => f.flush(),
            Out::Kafka(k) => k.flush(),
            Out::Kinesis(k) => k.flush(),
        }
    }

    fn idle(&mut self) -> Result<()> {
        match &mut self.out {
            Out::File(f) => f.idle(),
            Out::Kafka(k) => k.idle(),
            Out::Kinesis(k) => k.idle(),
        }
    }
}
