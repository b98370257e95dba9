//! The sink a command holds: one of the kinds of `Sink`, opened from a checked `SinkPlan`,
//! dispatched statically since every record passes here.

use std::io::BufWriter;
use std::path::Path;

use super::file::FileSink;
use super::kafka::KafkaLines;
use super::kinesis::KinesisLines;
use super::output_file::OutputFile;
use super::plan::SinkPlan;
use crate::error::{Fault, Result};
use crate::io::spec::SinkSpec;
use crate::runtime::checkpoint::{committed, Restored};
use crate::runtime::sink::{Outgoing, Sink, SinkLength};

/// The sink a command writes to.
pub struct LineSink {
    out: Out,
}

/// One variant per kind of sink, dispatched statically: every record passes here.
enum Out {
    File(FileSink),
    Kafka(Box<KafkaLines>),
    Kinesis(Box<KinesisLines>),
    /// Takes everything and keeps nothing (`replay --dry-run`).
    Discard(Discard),
}

/// Runs `$call` on whichever kind of sink `$out` is, named `$s`: the one place a new kind
/// joins the dispatch.
macro_rules! each_kind {
    ($out:expr, $s:ident => $call:expr) => {
        match $out {
            Out::File($s) => $call,
            Out::Kafka($s) => $call,
            Out::Kinesis($s) => $call,
            Out::Discard($s) => $call,
        }
    };
}

/// A sink that takes everything and keeps nothing.
pub struct Discard;

impl Sink for Discard {
    fn write_record(&mut self, _: &[u8]) -> Result<(), Fault> {
        Ok(())
    }
    fn send(&mut self, _: &Outgoing<'_>) -> Result<(), Fault> {
        Ok(())
    }
    fn write_raw(&mut self, _: &[u8]) -> Result<()> {
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn idle(&mut self) -> Result<()> {
        Ok(())
    }
    fn name(&self) -> String {
        "nothing".into()
    }
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

    /// A sink that keeps nothing (`replay --dry-run`).
    pub fn discard() -> LineSink {
        LineSink {
            out: Out::Discard(Discard),
        }
    }

    /// Creates (or truncates) a side file: `--late-output`, `--duplicates`, `--dead-letter`
    /// (`what` names it in an error); restoring a checkpoint, cuts it back to the length the
    /// `restored` run committed.
    pub fn open_file(path: &Path, what: &str, restored: Option<&Restored>) -> Result<LineSink> {
        Ok(LineSink {
            out: Out::File(FileSink::open(path, what, committed(restored, path))?),
        })
    }

    /// An output file of records set aside (`--late-output`, `--duplicates`), if one is asked
    /// for: `open_file`'s.
    pub fn open_side(path: Option<&Path>, restored: Option<&Restored>) -> Result<Option<LineSink>> {
        let open = |path| LineSink::open_file(path, "output file", restored);
        path.map(open).transpose()
    }

    /// `close` for a sink whose buffer was flushed already (through `file_writer`).
    pub(super) fn closed(&self) -> Result<()> {
        match &self.out {
            Out::File(f) => f.end(),
            _ => Ok(()),
        }
    }

    /// `durable` for a sink whose buffer was flushed already (through `file_writer`).
    pub(super) fn synced(&self) -> Result<Option<SinkLength>> {
        match &self.out {
            Out::File(f) => f.synced(),
            _ => Ok(None),
        }
    }

    /// The buffered file under a file sink, for the csv crate's writer.
    pub(super) fn file_writer(&mut self) -> Option<&mut BufWriter<OutputFile>> {
        match &mut self.out {
            Out::File(f) => Some(f.writer()),
            _ => None,
        }
    }

    pub(super) fn line_buffered(&self) -> bool {
        matches!(&self.out, Out::File(f) if f.line_buffered)
    }
}

impl Sink for LineSink {
    #[inline]
    fn write_record(&mut self, line: &[u8]) -> Result<(), Fault> {
        each_kind!(&mut self.out, s => s.write_record(line))
    }

    fn send(&mut self, record: &Outgoing<'_>) -> Result<(), Fault> {
        each_kind!(&mut self.out, s => s.send(record))
    }

    fn write_raw(&mut self, bytes: &[u8]) -> Result<()> {
        each_kind!(&mut self.out, s => s.write_raw(bytes))
    }

    fn flush(&mut self) -> Result<()> {
        each_kind!(&mut self.out, s => s.flush())
    }

    fn idle(&mut self) -> Result<()> {
        each_kind!(&mut self.out, s => s.idle())
    }

    fn durable(&mut self) -> Result<Option<SinkLength>> {
        each_kind!(&mut self.out, s => s.durable())
    }

    fn close(&mut self) -> Result<()> {
        each_kind!(&mut self.out, s => s.close())
    }

    fn name(&self) -> String {
        each_kind!(&self.out, s => s.name())
    }

    fn encoding(&self) -> Option<String> {
        each_kind!(&self.out, s => s.encoding())
    }
}
