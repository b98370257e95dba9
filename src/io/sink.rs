//! Output sinks: stdout or a file, as NDJSON lines or as a table (NDJSON or CSV).

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::os::fd::AsFd;

use serde_json::{Map, Value};

use super::kafka::{KafkaSink, Outgoing, SendError};
use super::ndjson::Fault;
use super::spec::SinkSpec;
use crate::cli::BrokerArgs;
use crate::core::record::{raw, Extractor, FieldPath, Fields, RecordError};
use crate::error::{Error, Result};

const OUT_BUFFER: usize = 256 * 1024;

/// Writes lines to stdout, a file or a Kafka topic. On a terminal every line is flushed at
/// once; into a pipe or file, output is flushed when the buffer fills or the input idles.
pub struct LineSink {
    out: Out,
    name: String,
    line_buffered: bool,
}

enum Out {
    File(BufWriter<File>),
    Kafka(Box<KafkaLines>),
}

/// Lines as Kafka record values, with the key and headers taken from fields of the line.
struct KafkaLines {
    sink: KafkaSink,
    /// Key first (when given), then the header fields.
    fields: Option<Extractor>,
    has_key: bool,
    header_names: Vec<String>,
    spans: Fields,
}

/// What a Kafka sink takes from each record.
#[derive(Default)]
pub struct RecordFields {
    pub key: Option<FieldPath>,
    /// (header name, field)
    pub headers: Vec<(String, FieldPath)>,
}

impl RecordFields {
    /// From `--key FIELD` and `--header NAME=FIELD`.
    pub fn parse(key: Option<&FieldPath>, headers: &[String]) -> Result<RecordFields> {
        let mut out = RecordFields {
            key: key.cloned(),
            headers: Vec::new(),
        };
        for h in headers {
            let (name, field) = h
                .split_once('=')
                .ok_or_else(|| Error::Usage(format!("--header {h}: expected NAME=FIELD")))?;
            let field: FieldPath = field
                .parse()
                .map_err(|e| Error::Usage(format!("--header {h}: {e}")))?;
            out.headers.push((name.to_string(), field));
        }
        Ok(out)
    }
}

impl LineSink {
    /// Opens stdout or a file; a Kafka sink needs `open_with`.
    pub fn open(spec: &SinkSpec) -> Result<LineSink> {
        Self::open_with(spec, None, RecordFields::default())
    }

    /// Opens any sink; `broker` carries a Kafka sink's client options.
    pub fn open_with(
        spec: &SinkSpec,
        broker: Option<&BrokerArgs>,
        fields: RecordFields,
    ) -> Result<LineSink> {
        if !matches!(spec, SinkSpec::Kafka(_))
            && (fields.key.is_some() || !fields.headers.is_empty())
        {
            return Err(Error::Usage(
                "--key/--header pick a Kafka record's key and headers: they need -o kafka://..."
                    .into(),
            ));
        }
        match spec {
            SinkSpec::Stdout => {
                // Our own unbuffered handle on fd 1: std's Stdout is line-buffered, which
                // would split every block write at newlines.
                let fd = io::stdout()
                    .as_fd()
                    .try_clone_to_owned()
                    .map_err(|e| Error::Unreachable(format!("cannot use stdout: {e}")))?;
                Ok(LineSink {
                    out: Out::File(BufWriter::with_capacity(OUT_BUFFER, File::from(fd))),
                    name: "stdout".into(),
                    line_buffered: io::stdout().is_terminal(),
                })
            }
            SinkSpec::File(path) => {
                let file = File::create(path).map_err(|e| {
                    Error::Unreachable(format!("cannot create output file {}: {e}", path.display()))
                })?;
                Ok(LineSink {
                    out: Out::File(BufWriter::with_capacity(OUT_BUFFER, file)),
                    name: path.display().to_string(),
                    line_buffered: false,
                })
            }
            SinkSpec::Kafka(k) => {
                let broker = broker.ok_or_else(|| {
                    Error::Usage("this output cannot go to Kafka; use a file".into())
                })?;
                let sink = KafkaSink::open(
                    k,
                    broker.client.config_file.as_deref(),
                    &broker.client.properties,
                    broker.client.timeout(),
                )?;
                let has_key = fields.key.is_some();
                let header_names = fields.headers.iter().map(|(n, _)| n.clone()).collect();
                let paths: Vec<FieldPath> = fields
                    .key
                    .into_iter()
                    .chain(fields.headers.into_iter().map(|(_, f)| f))
                    .collect();
                Ok(LineSink {
                    name: format!("kafka topic '{}'", sink.topic),
                    out: Out::Kafka(Box::new(KafkaLines {
                        sink,
                        fields: (!paths.is_empty()).then(|| Extractor::new(paths)),
                        has_key,
                        header_names,
                        spans: Vec::new(),
                    })),
                    line_buffered: false,
                })
            }
            SinkSpec::Kinesis(_) => Err(Error::Usage("Kinesis sinks are not built yet".into())),
        }
    }

    pub fn is_kafka(&self) -> bool {
        matches!(self.out, Out::Kafka(_))
    }

    /// Writes `line` and a newline (a Kafka record with `line` as its value). A record the
    /// sink refuses is an error of that record.
    #[inline]
    pub fn write_record(&mut self, line: &[u8]) -> Result<(), SinkFault> {
        match &mut self.out {
            Out::File(out) => {
                let result = out.write_all(line).and_then(|_| out.write_all(b"\n"));
                result.map_err(|e| Error::write(&self.name, e))?;
                if self.line_buffered {
                    self.flush()?;
                }
                Ok(())
            }
            Out::Kafka(k) => k.send(line),
        }
    }

    /// Writes a line the run itself made (a result row): a refusal ends the run.
    #[inline]
    pub fn write_line(&mut self, line: &[u8]) -> Result<()> {
        self.write_record(line).map_err(|e| match e {
            SinkFault::Record(r) => Error::Unreachable(format!("{}: {r}", self.name)),
            SinkFault::Fatal(e) => e,
        })
    }

    /// Writes bytes as they are (no newline is added): `consume -f`.
    pub fn write_raw(&mut self, bytes: &[u8]) -> Result<()> {
        match &mut self.out {
            Out::File(out) => out
                .write_all(bytes)
                .map_err(|e| Error::write(&self.name, e)),
            Out::Kafka(_) => Err(Error::Usage(
                "a format (-f) cannot be written to Kafka".into(),
            )),
        }
    }

    /// Sends a record with its own key, headers, timestamp and partition (`replay`).
    pub fn send(&mut self, record: &Outgoing<'_>) -> Result<(), SinkFault> {
        match &mut self.out {
            Out::Kafka(k) => k.sink.send(record).map_err(SinkFault::from),
            Out::File(_) => {
                let value = record.value.unwrap_or(b"null");
                self.write_record(value)
            }
        }
    }

    /// Flushes buffered lines; for Kafka, waits for every delivery.
    pub fn flush(&mut self) -> Result<()> {
        match &mut self.out {
            Out::File(out) => out.flush().map_err(|e| Error::write(&self.name, e)),
            Out::Kafka(k) => k.sink.flush(),
        }
    }

    /// Keeps output moving while the input is idle (Kafka: serves delivery reports).
    pub fn idle(&mut self) -> Result<()> {
        match &mut self.out {
            Out::File(out) => out.flush().map_err(|e| Error::write(&self.name, e)),
            Out::Kafka(k) => k.sink.poll(),
        }
    }
}

/// Why a record was not written.
pub enum SinkFault {
    Record(RecordError),
    Fatal(Error),
}

impl From<Error> for SinkFault {
    fn from(e: Error) -> SinkFault {
        SinkFault::Fatal(e)
    }
}

impl From<SendError> for SinkFault {
    fn from(e: SendError) -> SinkFault {
        match e {
            SendError::Record(why) => SinkFault::Record(RecordError::Refused(why)),
            SendError::Fatal(e) => SinkFault::Fatal(e),
        }
    }
}

impl From<SinkFault> for Fault {
    fn from(e: SinkFault) -> Fault {
        match e {
            SinkFault::Record(r) => Fault::Record(r),
            SinkFault::Fatal(e) => Fault::Fatal(e),
        }
    }
}

impl KafkaLines {
    fn send(&mut self, line: &[u8]) -> Result<(), SinkFault> {
        let mut values: Vec<Option<Cow<'_, [u8]>>> = Vec::new();
        if let Some(x) = &self.fields {
            let text = x
                .extract_bytes(line, &mut self.spans, None)
                .map_err(SinkFault::Record)?;
            values.extend(
                self.spans
                    .iter()
                    .map(|span| raw(text, *span).map(field_bytes)),
            );
        }
        let mut values = values.iter().map(|v| v.as_deref());
        let key = if self.has_key {
            values.next().flatten()
        } else {
            None
        };
        let headers: Vec<(&str, Option<&[u8]>)> = self
            .header_names
            .iter()
            .map(String::as_str)
            .zip(values)
            .collect();
        self.sink
            .send(&Outgoing {
                value: Some(line),
                key,
                headers: &headers,
                timestamp: None,
                partition: None,
            })
            .map_err(SinkFault::from)
    }
}

/// A field's bytes for a key or header: a string's text, other JSON as it is written.
fn field_bytes(raw: &str) -> Cow<'_, [u8]> {
    match raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        Some(inner) if !inner.contains('\\') => Cow::Borrowed(inner.as_bytes()),
        // The scanner has validated the string, so it decodes.
        Some(_) => Cow::Owned(
            serde_json::from_str::<String>(raw)
                .map(String::into_bytes)
                .unwrap_or_else(|_| raw.as_bytes().to_vec()),
        ),
        None => Cow::Borrowed(raw.as_bytes()),
    }
}

/// Lets the csv crate write into the sink (files and stdout only: checked when the table
/// writer is made).
impl Write for LineSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.out {
            Out::File(out) => out.write(buf),
            Out::Kafka(_) => Err(io::Error::other("CSV cannot be written to Kafka")),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.out {
            Out::File(out) => out.flush(),
            Out::Kafka(k) => k.sink.flush().map_err(|e| io::Error::other(e.to_string())),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TableFormat {
    /// One JSON object per row.
    #[default]
    Ndjson,
    /// A header row, then one row per result (RFC 4180 quoting).
    Csv,
}

/// Rows of named columns, as NDJSON objects or CSV. The first row fixes the CSV columns.
pub enum TableWriter {
    Ndjson {
        sink: LineSink,
        scratch: Vec<u8>,
    },
    Csv {
        out: Box<csv::Writer<LineSink>>,
        columns: Option<Vec<String>>,
        name: String,
        line_buffered: bool,
    },
}

impl TableWriter {
    pub fn new(sink: LineSink, format: TableFormat) -> TableWriter {
        match format {
            TableFormat::Ndjson => TableWriter::Ndjson {
                sink,
                scratch: Vec::new(),
            },
            TableFormat::Csv => {
                let name = sink.name.clone();
                let line_buffered = sink.line_buffered;
                let out = Box::new(
                    csv::WriterBuilder::new()
                        .terminator(csv::Terminator::Any(b'\n'))
                        .from_writer(sink),
                );
                TableWriter::Csv {
                    out,
                    columns: None,
                    name,
                    line_buffered,
                }
            }
        }
    }

    pub fn write_row(&mut self, row: &Map<String, Value>) -> Result<()> {
        match self {
            TableWriter::Ndjson { sink, scratch } => {
                scratch.clear();
                serde_json::to_writer(&mut *scratch, row).expect("a JSON map serialises");
                sink.write_line(scratch)
            }
            TableWriter::Csv {
                out,
                columns,
                name,
                line_buffered,
            } => {
                let csv_err = |e: csv::Error| match e.into_kind() {
                    csv::ErrorKind::Io(e) => Error::write(name, e),
                    other => Error::Unreachable(format!("cannot write CSV to {name}: {other:?}")),
                };
                let columns = match columns {
                    Some(c) => c,
                    None => {
                        let header: Vec<String> = row.keys().cloned().collect();
                        out.write_record(&header).map_err(csv_err)?;
                        columns.insert(header)
                    }
                };
                let cells = columns.iter().map(|c| csv_cell(row.get(c)));
                out.write_record(cells).map_err(csv_err)?;
                if *line_buffered {
                    out.flush().map_err(|e| Error::write(name, e))?;
                }
                Ok(())
            }
        }
    }

    pub fn flush(&mut self) -> Result<()> {
        match self {
            TableWriter::Ndjson { sink, .. } => sink.flush(),
            TableWriter::Csv { out, name, .. } => out.flush().map_err(|e| Error::write(name, e)),
        }
    }
}

/// Strings as they are, null as an empty cell, anything else as its JSON text.
fn csv_cell(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn table(format: TableFormat, rows: &[Value]) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let sink = LineSink::open(&SinkSpec::File(path.clone())).unwrap();
        let mut t = TableWriter::new(sink, format);
        for r in rows {
            t.write_row(r.as_object().unwrap()).unwrap();
        }
        t.flush().unwrap();
        drop(t);
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn csv_has_a_header_and_quotes() {
        let rows = [
            json!({"key":"m-1","window_start":"2026-01-01T00:00:00.000Z","count":3,"note":"a, \"b\""}),
            json!({"key":"m-2","window_start":"2026-01-01T00:01:00.000Z","count":1,"note":null}),
        ];
        assert_eq!(
            table(TableFormat::Csv, &rows),
            "key,window_start,count,note\nm-1,2026-01-01T00:00:00.000Z,3,\"a, \"\"b\"\"\"\nm-2,2026-01-01T00:01:00.000Z,1,\n"
        );
    }

    #[test]
    fn ndjson_rows_keep_column_order() {
        let rows = [json!({"z":1,"a":"x"})];
        assert_eq!(table(TableFormat::Ndjson, &rows), "{\"z\":1,\"a\":\"x\"}\n");
    }
}
