//! Rows of named columns for a sink, as NDJSON objects or CSV: the output of `window`.

use std::io::{self, Write};

use super::line::LineSink;
use crate::core::aggregate::{write_decimal, Cell, Columns, JsonColumns, ToColumns};
use crate::error::{Error, Result};
use crate::runtime::own_core;
use crate::runtime::sink::{Sink, SinkLength};

/// Rows in a batch from which `TableWriter::write_rows` formats on two threads: below it, the
/// helper thread's start costs more than it saves.
const PARALLEL_ROWS: usize = 20_000;

/// `rows` as NDJSON objects, one after another, and where each ends.
fn ndjson_lines<'r, T, C: ToColumns>(
    rows: &'r [T],
    columns: impl Fn(&'r T) -> C,
    plain_names: bool,
) -> (Vec<u8>, Vec<usize>) {
    let mut text = Vec::with_capacity(rows.len() * 128);
    let mut ends = Vec::with_capacity(rows.len());
    for row in rows {
        push_ndjson(&mut text, &columns(row), plain_names);
        ends.push(text.len());
    }
    (text, ends)
}

/// Appends `row` to `out` as one JSON object, straight to bytes: no map per row.
fn push_ndjson(out: &mut Vec<u8>, row: &impl ToColumns, plain_names: bool) {
    out.push(b'{');
    row.fill(&mut JsonColumns { out, plain_names });
    out.push(b'}');
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TableFormat {
    /// One JSON object per row.
    #[default]
    Ndjson,
    /// A header row, then one row per result (RFC 4180 quoting).
    Csv,
    /// Aligned columns for a person at a terminal, as `weir lag` prints them: rows are held
    /// until the input pauses or ends (or 1,000 are held) and then written as a block.
    Table,
}

/// Rows of named columns, as NDJSON objects or CSV. The first row fixes the CSV columns.
pub enum TableWriter {
    Ndjson {
        sink: LineSink,
        scratch: Vec<u8>,
        /// No column name needs JSON escaping.
        plain_names: bool,
    },
    Csv {
        out: Box<csv::Writer<CsvOut>>,
        columns: Option<Vec<String>>,
        /// A row's cells, reused from row to row.
        cells: CsvRow,
        name: String,
        line_buffered: bool,
    },
    Table(Box<Aligned>),
}

impl TableWriter {
    /// Rows into `sink`; `plain_names` says no column name needs JSON escaping.
    pub fn new(sink: LineSink, format: TableFormat, plain_names: bool) -> TableWriter {
        match format {
            TableFormat::Ndjson => TableWriter::Ndjson {
                sink,
                scratch: Vec::new(),
                plain_names,
            },
            TableFormat::Table => TableWriter::Table(Box::new(Aligned::new(sink))),
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
                    cells: CsvRow::default(),
                    name,
                    line_buffered,
                }
            }
        }
    }

    /// The schema rows are encoded with, if the sink encodes.
    pub fn encoding(&self) -> Option<String> {
        match self {
            TableWriter::Ndjson { sink, .. } => sink.encoding(),
            TableWriter::Csv { .. } | TableWriter::Table(_) => None,
        }
    }

    /// Writes one row, its columns put by `row`. `marks` says rows can be updates or
    /// retractions: CSV columns come from the first row, so every CSV row then carries both.
    pub fn write_row(&mut self, row: &impl ToColumns, marks: bool) -> Result<()> {
        match self {
            TableWriter::Ndjson {
                sink,
                scratch,
                plain_names,
            } => {
                scratch.clear();
                push_ndjson(scratch, row, *plain_names);
                sink.write_line(scratch)
            }
            TableWriter::Table(aligned) => aligned.hold(row, marks),
            TableWriter::Csv { cells, .. } => {
                let mut cells = std::mem::take(cells);
                cells.fill_from(row, marks);
                let written = self.write_csv_row(&cells);
                if let TableWriter::Csv { cells: kept, .. } = self {
                    *kept = cells;
                }
                written
            }
        }
    }

    /// Writes `rows` in order, each put by `columns`. A large batch of NDJSON rows (the end
    /// of a bounded input can fire every window at once) is formatted on two threads when
    /// two CPUs are ours: a helper formats the second half while this thread formats and
    /// writes the first, then writes what the helper made.
    pub fn write_rows<'r, T: Sync, C: ToColumns>(
        &mut self,
        rows: &'r [T],
        columns: impl Fn(&'r T) -> C + Sync,
        marks: bool,
    ) -> Result<()> {
        let two_threads = rows.len() >= PARALLEL_ROWS && own_core();
        let split = two_threads.then_some(rows.len() / 2);
        self.write_rows_split(rows, columns, marks, split)
    }

    /// `write_rows`, the rows from `split` on (NDJSON only) formatted on a helper thread.
    fn write_rows_split<'r, T: Sync, C: ToColumns>(
        &mut self,
        rows: &'r [T],
        columns: impl Fn(&'r T) -> C + Sync,
        marks: bool,
        split: Option<usize>,
    ) -> Result<()> {
        let ahead = match self {
            TableWriter::Ndjson { plain_names, .. } => split.map(|at| (at, *plain_names)),
            _ => None,
        };
        let Some((at, plain_names)) = ahead else {
            return rows
                .iter()
                .try_for_each(|row| self.write_row(&columns(row), marks));
        };
        let (first, second) = rows.split_at(at);
        std::thread::scope(|scope| {
            let columns = &columns;
            let helper = scope.spawn(move || ndjson_lines(second, columns, plain_names));
            first
                .iter()
                .try_for_each(|row| self.write_row(&columns(row), marks))?;
            let (text, ends) = helper.join().expect("formatting rows does not panic");
            let mut start = 0;
            ends.into_iter().try_for_each(|end| {
                let line = &text[start..end];
                start = end;
                self.write_line(line)
            })
        })
    }

    /// Writes one NDJSON line made already (`write_rows`).
    fn write_line(&mut self, line: &[u8]) -> Result<()> {
        match self {
            TableWriter::Ndjson { sink, .. } => sink.write_line(line),
            _ => unreachable!("only NDJSON rows are made ahead"),
        }
    }

    /// A CSV without a row yet gets its header, the columns `row` would have: a run that
    /// produced no row still writes a CSV a reader can take. NDJSON has no header.
    pub fn write_header(&mut self, row: &impl ToColumns, marks: bool) -> Result<()> {
        if let TableWriter::Table(aligned) = self {
            return aligned.header_only(row, marks);
        }
        let TableWriter::Csv { cells, columns, .. } = self else {
            return Ok(());
        };
        if columns.is_some() {
            return Ok(());
        }
        // The first row's header is the one `write_csv_row` writes; the row itself is not.
        let mut cells = std::mem::take(cells);
        cells.fill_from(row, marks);
        let header = self.write_csv_header(&cells);
        if let TableWriter::Csv { cells: kept, .. } = self {
            *kept = cells;
        }
        header
    }

    /// Writes the CSV header, the names of `row`'s cells, unless it is written already: the
    /// first row fixes the columns.
    fn write_csv_header(&mut self, row: &CsvRow) -> Result<()> {
        let TableWriter::Csv {
            out, columns, name, ..
        } = self
        else {
            unreachable!("NDJSON has no header")
        };
        if columns.is_none() {
            let header: Vec<String> = row.cells.iter().map(|(n, _)| n.clone()).collect();
            out.write_record(&header).map_err(|e| csv_error(name, e))?;
            *columns = Some(header);
        }
        Ok(())
    }

    /// Writes one CSV row, after the header if it is the first.
    fn write_csv_row(&mut self, row: &CsvRow) -> Result<()> {
        self.write_csv_header(row)?;
        let TableWriter::Csv {
            out,
            columns: Some(columns),
            name,
            line_buffered,
            ..
        } = self
        else {
            unreachable!("a CSV writer with its header written")
        };
        let cells = columns.iter().map(|c| row.get(c).unwrap_or(""));
        out.write_record(cells).map_err(|e| csv_error(name, e))?;
        if *line_buffered {
            out.flush().map_err(|e| Error::write(name, e))?;
        }
        Ok(())
    }

    /// Flushes and syncs a file's rows; its path and length, for a checkpoint.
    pub fn durable(&mut self) -> Result<Option<SinkLength>> {
        match self {
            TableWriter::Ndjson { sink, .. } => sink.durable(),
            TableWriter::Table(aligned) => {
                aligned.write_block()?;
                aligned.sink.durable()
            }
            TableWriter::Csv { out, name, .. } => {
                out.flush().map_err(|e| Error::write(name, e))?;
                out.get_ref().0.synced()
            }
        }
    }

    /// The CSV columns, once the header is written (a checkpoint keeps them, so that a
    /// resumed run writes no second header).
    pub fn columns(&self) -> Option<&[String]> {
        match self {
            TableWriter::Csv { columns, .. } => columns.as_deref(),
            TableWriter::Ndjson { .. } | TableWriter::Table(_) => None,
        }
    }

    /// A resumed run's CSV columns, whose header the file already holds.
    pub fn set_columns(&mut self, written: Option<Vec<String>>) {
        if let TableWriter::Csv { columns, .. } = self {
            *columns = written;
        }
    }

    /// Flushes every row, and makes a compressed file whole: at the end of the run.
    pub fn close(&mut self) -> Result<()> {
        match self {
            TableWriter::Ndjson { sink, .. } => sink.close(),
            TableWriter::Table(aligned) => {
                aligned.write_block()?;
                aligned.sink.close()
            }
            TableWriter::Csv { out, name, .. } => {
                out.flush().map_err(|e| Error::write(name, e))?;
                out.get_ref().0.closed()
            }
        }
    }

    pub fn flush(&mut self) -> Result<()> {
        match self {
            TableWriter::Ndjson { sink, .. } => sink.flush(),
            TableWriter::Table(aligned) => {
                aligned.write_block()?;
                aligned.sink.flush()
            }
            TableWriter::Csv { out, name, .. } => out.flush().map_err(|e| Error::write(name, e)),
        }
    }
}

/// Rows held to be written in aligned columns. The first block fixes the columns and writes
/// the header; a column only ever widens, so a later block lines up with the earlier ones
/// unless its cells are wider. Numbers are aligned right, an empty cell shows as `-`.
pub struct Aligned {
    sink: LineSink,
    /// Column names, and whether each holds numbers, from the first row.
    columns: Option<Vec<(String, bool)>>,
    widths: Vec<usize>,
    held: Vec<Vec<String>>,
    cells: CsvRow,
    numbers: Vec<String>,
    header_written: bool,
}

/// Rows held before a block is written even while the input flows.
const HELD_ROWS: usize = 1000;

impl Aligned {
    fn new(sink: LineSink) -> Aligned {
        Aligned {
            sink,
            columns: None,
            widths: Vec::new(),
            held: Vec::new(),
            cells: CsvRow::default(),
            numbers: Vec::new(),
            header_written: false,
        }
    }

    /// The columns of `row`, fixed by the first row, as CSV's are.
    fn fill(&mut self, row: &impl ToColumns, marks: bool) {
        let mut numbers = NumberColumns {
            cells: std::mem::take(&mut self.cells),
            numbers: std::mem::take(&mut self.numbers),
        };
        numbers.cells.clear();
        numbers.numbers.clear();
        row.fill(&mut numbers);
        self.cells = numbers.cells;
        self.numbers = numbers.numbers;
        if marks {
            self.cells.put_missing("update", Cell::Bool(false));
            self.cells.put_missing("retract", Cell::Bool(false));
        }
        if self.columns.is_none() {
            let columns: Vec<(String, bool)> = (self.cells.cells.iter())
                .map(|(n, _)| (n.clone(), self.numbers.contains(n)))
                .collect();
            self.widths = columns.iter().map(|(n, _)| n.chars().count()).collect();
            self.columns = Some(columns);
        }
    }

    fn hold(&mut self, row: &impl ToColumns, marks: bool) -> Result<()> {
        self.fill(row, marks);
        let columns = self.columns.as_deref().unwrap_or_default();
        let cells: Vec<String> = (columns.iter())
            .map(|(c, _)| match self.cells.get(c) {
                None | Some("") => "-".to_string(),
                Some(text) => text.to_string(),
            })
            .collect();
        self.held.push(cells);
        if self.held.len() >= HELD_ROWS {
            self.write_block()?;
        }
        Ok(())
    }

    /// A run with no row still shows the columns it would have had.
    fn header_only(&mut self, row: &impl ToColumns, marks: bool) -> Result<()> {
        if self.columns.is_none() {
            self.fill(row, marks);
        }
        self.write_block()
    }

    /// Writes the held rows (after the header, the first time) in aligned columns.
    fn write_block(&mut self) -> Result<()> {
        let Some(columns) = &self.columns else {
            return Ok(());
        };
        if self.header_written && self.held.is_empty() {
            return Ok(());
        }
        for row in &self.held {
            for (w, cell) in self.widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut line = String::new();
        if !self.header_written {
            let names: Vec<String> = columns.iter().map(|(n, _)| n.clone()).collect();
            aligned_line(&names, columns, &self.widths, &mut line);
            self.sink.write_line(line.as_bytes())?;
            self.header_written = true;
        }
        for row in std::mem::take(&mut self.held) {
            aligned_line(&row, columns, &self.widths, &mut line);
            self.sink.write_line(line.as_bytes())?;
        }
        Ok(())
    }
}

/// One line of `cells` padded to `widths`, numbers to the right, without trailing blanks.
fn aligned_line(cells: &[String], columns: &[(String, bool)], widths: &[usize], line: &mut String) {
    use std::fmt::Write as _;
    line.clear();
    for ((cell, (_, number)), w) in cells.iter().zip(columns).zip(widths) {
        let _ = match number {
            true => write!(line, "{cell:>w$}  "),
            false => write!(line, "{cell:<w$}  "),
        };
    }
    line.truncate(line.trim_end().len());
}

/// A row's cells as CSV has them, and which of them are numbers.
struct NumberColumns {
    cells: CsvRow,
    numbers: Vec<String>,
}

impl Columns for NumberColumns {
    fn put(&mut self, name: &str, value: Cell<'_>) {
        let number = match &value {
            Cell::U64(_) | Cell::Decimal(_) | Cell::F64(_) => true,
            Cell::Json(text) => text.starts_with(|c: char| c == '-' || c.is_ascii_digit()),
            _ => false,
        };
        if number {
            self.numbers.push(name.to_string());
        }
        self.cells.put(name, value);
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

/// One CSV row: named cells in column order, each the text of its value. A name given twice
/// keeps its first place and its last value.
///
/// The cells copy the accepted JSON text and re-parse nothing: a number is its text as the
/// input spelled it (`1e400` stays `1e400`), a string its decoded text, null an empty cell.
/// A string whose escapes name no Unicode text (a lone surrogate, `"\ud800"`) cannot be
/// decoded into a cell, so the cell holds its JSON text, quotes and escapes included.
#[derive(Debug, Default)]
pub struct CsvRow {
    cells: Vec<(String, String)>,
}

/// A CSV write's failure: a closed pipe or full disk as any write's, else the csv crate's.
fn csv_error(name: &str, e: csv::Error) -> Error {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => Error::write(name, e),
        other => Error::Unreachable(format!("cannot write CSV to {name}: {other:?}")),
    }
}

impl CsvRow {
    pub fn clear(&mut self) {
        self.cells.clear();
    }

    /// The cells of `row`, and, where rows can be updates or retractions (`marks`), both
    /// marks: CSV columns come from the first row, so every row carries them.
    fn fill_from(&mut self, row: &impl ToColumns, marks: bool) {
        self.clear();
        row.fill(self);
        if marks {
            self.put_missing("update", Cell::Bool(false));
            self.put_missing("retract", Cell::Bool(false));
        }
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.cells
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Adds `name` with `value` unless the row has it already.
    pub fn put_missing(&mut self, name: &str, value: Cell<'_>) {
        if self.get(name).is_none() {
            self.put(name, value);
        }
    }
}

impl Columns for CsvRow {
    fn put(&mut self, name: &str, value: Cell<'_>) {
        let text = match value {
            Cell::U64(n) => itoa::Buffer::new().format(n).to_string(),
            Cell::Decimal(d) => {
                let mut bytes = Vec::new();
                write_decimal(&d, &mut bytes);
                String::from_utf8(bytes).unwrap_or_default()
            }
            Cell::F64(f) if f.is_finite() => serde_json::to_string(&f).unwrap_or_default(),
            Cell::F64(_) | Cell::Null => String::new(),
            Cell::Bool(b) => b.to_string(),
            Cell::Json(text) => json_cell(text),
            Cell::Time(ms) => crate::core::time::format_millis(ms),
        };
        match self.cells.iter_mut().find(|(n, _)| n == name) {
            Some((_, v)) => *v = text,
            None => self.cells.push((name.to_string(), text)),
        }
    }
}

/// A JSON value's cell: a string's text, null empty, anything else its JSON text as it is.
fn json_cell(text: &str) -> String {
    match text.as_bytes().first() {
        Some(b'"') => match text[1..text.len() - 1].contains('\\') {
            false => text[1..text.len() - 1].to_string(),
            true => serde_json::from_str::<String>(text).unwrap_or_else(|_| text.to_string()),
        },
        Some(b'n') if text == "null" => String::new(),
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Aligned rows: a header, strings left and numbers right (by the first row; a null there
    /// leaves its column left), a null as `-`, columns
    /// that widen for a later block's wider cell.
    #[test]
    fn a_table_aligns_its_columns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let sink = LineSink::open_file(&path, "output file", None).unwrap();
        let mut t = TableWriter::new(sink, TableFormat::Table, true);
        let rows: [&[(&str, Cell)]; 3] = [
            &[
                ("key", Cell::Json("\"m-1\"")),
                ("count", Cell::U64(3)),
                ("avg", Cell::Null),
            ],
            &[
                ("key", Cell::Json("\"m-22\"")),
                ("count", Cell::U64(12)),
                ("avg", Cell::F64(1.5)),
            ],
            &[
                ("key", Cell::Json("\"m-333333\"")),
                ("count", Cell::U64(7)),
                ("avg", Cell::F64(2.0)),
            ],
        ];
        for (i, r) in rows.iter().enumerate() {
            let row: Vec<(String, Cell)> =
                r.iter().map(|(n, c)| (n.to_string(), c.clone())).collect();
            t.write_row(&Listed(row), false).unwrap();
            if i == 1 {
                t.flush().unwrap();
            }
        }
        t.close().unwrap();
        drop(t);
        assert_eq!(
            std::fs::read_to_string(path).unwrap(),
            "key   count  avg\nm-1       3  -\nm-22     12  1.5\nm-333333      7  2.0\n"
        );
    }

    /// Rows formatted half on a helper thread come out as rows written one by one.
    #[test]
    fn rows_formatted_on_two_threads_are_the_rows_written_one_by_one() {
        let dir = tempfile::tempdir().unwrap();
        let texts: Vec<String> = (0..101).map(|i| format!("\"m-{i}\"")).collect();
        let keys: Vec<&str> = texts.iter().map(String::as_str).collect();
        fn row<'a>(key: &&'a str) -> Listed<'a> {
            let n = key.len() as u64;
            Listed(vec![
                ("key".into(), Cell::Json(key)),
                ("count".into(), Cell::U64(n)),
                ("avg".into(), Cell::F64(n as f64 / 4.0)),
            ])
        }
        let written = |split: Option<usize>| {
            let path = dir.path().join(format!("{split:?}"));
            let sink = LineSink::open_file(&path, "output file", None).unwrap();
            let mut t = TableWriter::new(sink, TableFormat::Ndjson, true);
            t.write_rows_split(&keys, row, false, split).unwrap();
            t.close().unwrap();
            drop(t);
            std::fs::read_to_string(path).unwrap()
        };
        let one_by_one = written(None);
        assert_eq!(one_by_one.lines().count(), 101);
        assert!(one_by_one.starts_with("{\"key\":\"m-0\",\"count\":5,\"avg\":1.25}\n"));
        for split in [0, 1, 50, 101] {
            assert_eq!(written(Some(split)), one_by_one, "split at {split}");
        }
    }

    struct Listed<'a>(Vec<(String, Cell<'a>)>);

    impl ToColumns for Listed<'_> {
        fn fill(&self, out: &mut impl Columns) {
            for (n, c) in &self.0 {
                out.put(n, c.clone());
            }
        }
    }

    fn csv(rows: &[&[(&str, Cell<'_>)]]) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let sink = LineSink::open_file(&path, "output file", None).unwrap();
        let mut t = TableWriter::new(sink, TableFormat::Csv, true);
        for r in rows {
            let mut row = CsvRow::default();
            for (name, cell) in r.iter() {
                row.put(name, cell.clone());
            }
            t.write_csv_row(&row).unwrap();
        }
        t.flush().unwrap();
        drop(t);
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn csv_has_a_header_and_quotes() {
        let t0 = 1_767_225_600_000;
        let rows: [&[(&str, Cell)]; 2] = [
            &[
                ("key", Cell::Json("\"m-1\"")),
                ("window_start", Cell::Time(t0)),
                ("count", Cell::U64(3)),
                ("note", Cell::Json("\"a, \\\"b\\\"\"")),
            ],
            &[
                ("key", Cell::Json("\"m-2\"")),
                ("window_start", Cell::Time(t0 + 60_000)),
                ("count", Cell::U64(1)),
                ("note", Cell::Null),
            ],
        ];
        assert_eq!(
            csv(&rows),
            "key,window_start,count,note\nm-1,2026-01-01T00:00:00.000Z,3,\"a, \"\"b\"\"\"\nm-2,2026-01-01T00:01:00.000Z,1,\n"
        );
    }

    /// What the scanner accepts is copied, not re-parsed: numbers past f64, decimals with
    /// their scale, and strings that hold no Unicode text all reach the cell.
    #[test]
    fn csv_cells_copy_the_accepted_text() {
        let d = rust_decimal::Decimal::new(1250, 2);
        let row: [&[(&str, Cell)]; 1] = [&[
            ("big", Cell::Json("1e400")),
            ("sum", Cell::Decimal(d)),
            ("lone", Cell::Json("\"\\ud800\"")),
            ("reversed", Cell::Json("\"\\udc00\\ud800\"")),
            ("pair", Cell::Json("\"\\ud83d\\ude00\"")),
            ("nan", Cell::F64(f64::NAN)),
            ("flag", Cell::Bool(true)),
        ]];
        assert_eq!(
            csv(&row),
            "big,sum,lone,reversed,pair,nan,flag\n1e400,12.50,\"\"\"\\ud800\"\"\",\"\"\"\\udc00\\ud800\"\"\",\u{1f600},,true\n"
        );
    }
}
