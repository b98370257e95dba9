//! Rows of named columns for a sink, as NDJSON objects or CSV: the output of `window`.

use std::io::{self, Write};

use serde_json::{Map, Value};

use super::{LineSink, Sink};
use crate::error::{Error, Result};

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
        out: Box<csv::Writer<CsvOut>>,
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
                let name = sink.name().to_string();
                let line_buffered = sink.line_buffered();
                let out = Box::new(
                    csv::WriterBuilder::new()
                        .terminator(csv::Terminator::Any(b'\n'))
                        .from_writer(CsvOut(sink)),
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

/// The csv crate's view of a sink: files and stdout only (a plan keeps CSV off topics).
pub struct CsvOut(LineSink);

impl Write for CsvOut {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.0.file_writer() {
            Some(out) => out.write(buf),
            None => Err(io::Error::other("CSV cannot be written to Kafka")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.0.file_writer() {
            Some(out) => out.flush(),
            None => Err(io::Error::other("CSV cannot be written to Kafka")),
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
        let sink = LineSink::open_file(&path).unwrap();
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
