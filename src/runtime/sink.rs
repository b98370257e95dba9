//! The port records leave by: what every sink does (`Sink`), whatever it writes to. `io`
//! implements it for stdout and files, Kafka topics and Kinesis streams; the runtime holds one
//! through the trait for dead letters, and a command holds its own.

use crate::core::envelope::OwnedRecord;
use crate::core::time::Millis;
use crate::error::{Error, Fault, Result};

pub use super::checkpoint::file::SinkLength;

/// A whole record for a sink that keeps its parts (`replay`): a topic takes each part, a file
/// its value as a line.
pub struct Outgoing<'a> {
    pub value: Option<&'a [u8]>,
    pub key: Option<&'a [u8]>,
    pub headers: &'a [(&'a str, Option<&'a [u8]>)],
    pub timestamp: Option<Millis>,
    pub partition: Option<i32>,
}

/// Sends the record an envelope described, to its own partition when `keep_partition`.
pub fn send_envelope(
    sink: &mut dyn Sink,
    record: &OwnedRecord,
    keep_partition: bool,
) -> Result<(), Fault> {
    let headers: Vec<(&str, Option<&[u8]>)> = (record.headers.iter())
        .map(|(n, v)| (n.as_str(), v.as_deref()))
        .collect();
    sink.send(&Outgoing {
        value: record.value.as_deref(),
        key: record.key.as_deref(),
        headers: &headers,
        timestamp: record.timestamp,
        partition: record.partition.filter(|_| keep_partition),
    })
}

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
    /// Makes everything written so far durable (a file flushed and synced, a topic's records
    /// delivered) and says how long an output file now is, for a checkpoint. A topic, a
    /// stream or stdout has no length: a checkpoint cannot cut them back.
    fn durable(&mut self) -> Result<Option<SinkLength>> {
        self.flush()?;
        Ok(None)
    }
    /// Flushes everything and makes a compressed file whole: at the end of the run.
    fn close(&mut self) -> Result<()> {
        self.flush()
    }
    /// What the sink writes to, for messages.
    fn name(&self) -> String;
    /// The schema values are encoded with, as the summary names it, if the sink encodes.
    fn encoding(&self) -> Option<String> {
        None
    }
    /// Writes a line the run itself made (a result row, a dead letter): a refusal ends the
    /// run.
    fn write_line(&mut self, line: &[u8]) -> Result<()> {
        self.write_record(line).map_err(|e| match e {
            Fault::Record(r) => Error::Unreachable(format!("{}: {r}", self.name())),
            Fault::Fatal(e) => e,
        })
    }
}
