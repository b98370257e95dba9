//! A chunk: the records a source hands over at once, checked on the reader thread, and the
//! `Line` a command's step sees for each of them.
//!
//! A line source (files, stdin) hands over whole lines, found by their newlines; a broker
//! source frames its records itself (their bytes are rendered envelopes, values or kcat
//! lines, which need no newline) and gives each its partition and offset.

use std::sync::Arc;

use rust_decimal::Decimal;

use crate::core::aggregate::plain_decimal;
use crate::core::envelope::{check_keyed, read_envelope, KeyedBy, OwnedRecord};
use crate::core::key_code::{KeyCode, KeyCoder};
use crate::core::record::{
    as_utf8, time_of, validate_json_shaped, validate_line, Extractor, Fields, Position,
    RecordError, Scalar,
};
use crate::core::scan::{Shape, Span};
use crate::core::shuffle::input_position;
use crate::core::time::{Millis, TimeFormat};
use crate::core::window::KEY_SEPARATOR;
use crate::error::{Error, Fault};

/// Target size of a chunk handed from the reader thread to the command.
pub const CHUNK_BYTES: usize = 1 << 20;

/// Records of one input, with what the reader thread found in each.
pub struct Chunk {
    /// The file (or `<stdin>`) of a line source; the topic of a broker source.
    pub origin: Arc<str>,
    /// The number of the chunk's first record: its line number in a line source.
    pub first_line: u64,
    pub data: ChunkData,
    /// Bytes of input the chunk stands for, for the summary.
    pub input_bytes: u64,
    /// For a Kafka source: each record's (partition, offset).
    pub positions: Vec<(i32, i64)>,
    /// For a Kinesis source: each record's shard, sequence number and subsequence.
    pub shard_positions: Vec<ShardPosition>,
    /// Behind a shuffle: each record's input partition's largest event time before it, as
    /// its writer forwarded them (`Millis::MIN`: none).
    pub carried: Vec<Millis>,
    /// For a line source: where its input stands just past the chunk's last line.
    pub end: Option<LinePosition>,
    pub(crate) prepared: Prepared,
}

/// A chunk's bytes: a buffer of its own, or part of a file mapped into memory (read where
/// the kernel keeps it, without a copy).
pub enum ChunkData {
    Owned(Vec<u8>),
    Mapped(MappedRange),
}

impl std::ops::Deref for ChunkData {
    type Target = [u8];

    /// Inlined: it is read once per record, and whether the compiler inlines it on its own
    /// changes with unrelated code (out of line, 13 instructions a record).
    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            ChunkData::Owned(data) => data,
            ChunkData::Mapped(m) => &m.map[m.range.clone()],
        }
    }
}

/// A range of a mapped file. Its pages leave the process once the chunk is done with, so
/// that a run's resident memory does not grow with the file it reads (the kernel keeps them
/// cached; a page the next range shares is read in again if it is still needed).
pub struct MappedRange {
    map: Arc<memmap2::Mmap>,
    range: std::ops::Range<usize>,
}

impl MappedRange {
    pub fn new(map: Arc<memmap2::Mmap>, range: std::ops::Range<usize>) -> MappedRange {
        MappedRange { map, range }
    }
}

impl Drop for MappedRange {
    fn drop(&mut self) {
        #[cfg(unix)]
        // SAFETY: the map is a read-only view of a file, so pages dropped from it read the
        // file's bytes again when touched; no reference into this range outlives the chunk.
        let _ = unsafe {
            self.map.unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                self.range.start,
                self.range.len(),
            )
        };
    }
}

/// Where a line source stands in its inputs: the input (counted from 0, in the order they
/// are read), the bytes of it consumed (of the decompressed stream, for gzip), and the number
/// of the next line. A checkpoint resumes a line source from here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinePosition {
    pub input: u32,
    pub offset: u64,
    pub next_line: u64,
}

impl LinePosition {
    /// The error of a checkpoint whose position lies past the end of its input `origin`, which
    /// has `len` bytes: the input is not the one the checkpoint was taken on.
    pub fn past_the_end(&self, origin: &str, len: u64) -> Error {
        Error::Usage(format!(
            "{origin} is shorter ({len} bytes) than the checkpoint says it was read ({}): it is not the input the checkpoint was taken on; start afresh with --reset",
            self.offset
        ))
    }

    /// The start of input `input`: its first byte, line 1.
    pub fn start(input: u32) -> LinePosition {
        LinePosition {
            input,
            offset: 0,
            next_line: 1,
        }
    }
}

/// Where a Kinesis record is: its shard, its sequence number, and for a user record of a KPL
/// aggregate, its place in the aggregate (the subsequence number).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardPosition {
    pub shard: Arc<str>,
    pub sequence: Arc<str>,
    pub subsequence: Option<u64>,
    /// The shard's task: the number a member's step keeps the shard's state under
    /// (`core::partitioned::shard_task`).
    pub task: i32,
}

impl Chunk {
    /// Where record `i` of this chunk came from.
    pub fn position(&self, i: usize) -> Position {
        if let Some(&(partition, offset)) = self.positions.get(i) {
            return Position::Kafka {
                topic: self.origin.clone(),
                partition,
                offset,
            };
        }
        if let Some(p) = self.shard_positions.get(i) {
            return Position::Kinesis {
                stream: self.origin.clone(),
                shard: p.shard.clone(),
                sequence: p.sequence.to_string(),
                subsequence: p.subsequence,
            };
        }
        Position::Line {
            source: self.origin.clone(),
            line: self.first_line + i as u64,
        }
    }

    /// For a line source: where its input stands just before line `i` of this chunk, every
    /// line before it handled. The chunk's lines are the `input_bytes` of the input that end
    /// at `end` (a last line's added newline is not among them, and comes after line `i`'s
    /// start).
    pub fn line_start(&self, i: usize) -> Option<LinePosition> {
        let end = self.end?;
        let first = end.offset - self.input_bytes;
        Some(LinePosition {
            input: end.input,
            offset: first + u64::from(self.prepared.lines[i].start),
            next_line: self.first_line + i as u64,
        })
    }
}

/// What the reader thread checks and finds in each record before handing it over, so that
/// the command's own thread spends its time on the command (parsing off the hot loop).
#[derive(Clone, Debug)]
pub enum Prepare {
    /// The record must be UTF-8 JSON (any value).
    Validate,
    /// The record must be a UTF-8 JSON object; locate these fields in it.
    Extract(Arc<Extractor>),
    /// The record must be UTF-8 JSON (any value); locate these fields in it when it is an
    /// object (`consume --where` on records that need not be objects: a string value has
    /// none of the fields).
    Select(Arc<Extractor>),
    /// Nothing to check: the source made the record itself (`consume` of a broker source
    /// writes its rendered records as they are).
    AsIs,
}

/// The lines of a chunk as the reader found them.
#[derive(Default)]
pub(crate) struct Prepared {
    pub(crate) lines: Vec<LineInfo>,
    /// Field spans, `width` per record.
    pub(crate) spans: Fields,
    /// Each line's event time, where the extractor reads one (`Extractor::event_time`).
    pub(crate) times: Vec<Millis>,
    /// What else the reader read of each line, where the extractor asks for its number
    /// (`Extractor::number_at`) or key code (`Extractor::key_at`).
    pub(crate) ahead: Vec<ReadAhead>,
    pub(crate) errors: Vec<RecordError>,
    pub(crate) width: usize,
}

pub(crate) struct LineInfo {
    pub(crate) start: u32,
    /// End of the line without its `\r\n` / `\n`.
    pub(crate) end: u32,
    pub(crate) status: Status,
}

pub(crate) enum Status {
    Blank,
    /// A usable record; its spans start here in `Prepared::spans`.
    Record(u32),
    /// A bad record; its error is at this index of `Prepared::errors`.
    Bad(u32),
}

/// What the reader thread read of a line for the command, besides its event time: the
/// line's number (`Extractor::number_at`) and its key's code (`Extractor::key_at`), each if
/// asked for and found.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct ReadAhead {
    pub(crate) decimal: Option<Decimal>,
    pub(crate) key_code: Option<KeyCode>,
}

/// The reader thread's working state for checking lines.
#[derive(Default)]
pub(crate) struct Scratch {
    /// The layout of the last line, which most lines repeat.
    pub(crate) shape: Shape,
    /// The codes of the run's key texts (`Extractor::reading_key_at`).
    pub(crate) coder: KeyCoder,
}

impl Prepared {
    /// Splits `data` into lines at its newlines and checks each.
    pub(crate) fn fill(
        &mut self,
        data: &[u8],
        prepare: &Prepare,
        max_line: usize,
        scratch: &mut Scratch,
    ) {
        self.lines.clear();
        self.spans.clear();
        self.errors.clear();
        self.width = prepare.width();
        let mut start = 0;
        while start < data.len() {
            let rest = &data[start..];
            let at = self.spans.len();
            // Most lines repeat a learned layout, and scanning one finds where it ends: no
            // separate search for its newline.
            self.spans.resize(at + self.width, None);
            let known = match prepare {
                Prepare::Validate => validate_line(rest, &mut scratch.shape),
                Prepare::Extract(x) | Prepare::Select(x) => {
                    x.extract_line(rest, &mut self.spans[at..], &mut scratch.shape)
                }
                Prepare::AsIs => None,
            };
            let Some(newline) = known.or_else(|| memchr::memchr(b'\n', rest)) else {
                self.spans.truncate(at);
                break;
            };
            let newline = start + newline;
            let mut end = newline;
            if end > start && data[end - 1] == b'\r' {
                end -= 1;
            }
            if known.is_some() && end - start <= max_line {
                self.lines.push(LineInfo {
                    start: start as u32,
                    end: end as u32,
                    status: Status::Record(at as u32),
                });
                start = newline + 1;
                continue;
            }
            // Checked in full below: what the layout scan wrote is dropped.
            self.spans.truncate(at);
            let bytes = &data[start..end];
            let status = self.check(bytes, prepare, max_line, scratch);
            self.lines.push(LineInfo {
                start: start as u32,
                end: end as u32,
                status,
            });
            start = newline + 1;
        }
        self.read_ahead(data, prepare, &mut scratch.coder);
    }

    /// Reads each record's event time, number and key code, when the command's extractor
    /// asks for them, in one pass over the lines.
    fn read_ahead(&mut self, data: &[u8], prepare: &Prepare, coder: &mut KeyCoder) {
        self.times.clear();
        self.ahead.clear();
        let Prepare::Extract(x) = prepare else {
            return;
        };
        let (time, number, key) = (x.event_time_at().is_some(), x.number_at(), x.key_at());
        let ahead = number.is_some() || key.is_some();
        if !time && !ahead {
            return;
        }
        for info in &self.lines {
            let Status::Record(at) = info.status else {
                if time {
                    self.times.push(Millis::MIN);
                }
                if ahead {
                    self.ahead.push(ReadAhead::default());
                }
                continue;
            };
            let line = &data[info.start as usize..info.end as usize];
            let spans = &self.spans[at as usize..at as usize + self.width];
            if time {
                self.times.push(x.event_time(line, spans));
            }
            if !ahead {
                continue;
            }
            let raw = |i: usize| spans[i].and_then(|(s, e)| line.get(s as usize..e as usize));
            self.ahead.push(ReadAhead {
                decimal: number.and_then(raw).and_then(plain_decimal),
                key_code: key.and_then(raw).and_then(|text| coder.code(text)),
            });
        }
    }

    /// Checks the records of a broker source, which frames them itself: record `i` is
    /// `data[ends[i - 1]..ends[i]]`.
    pub(crate) fn fill_framed(
        &mut self,
        data: &[u8],
        ends: &[u32],
        prepare: &Prepare,
        max_line: usize,
        scratch: &mut Scratch,
    ) {
        self.lines.clear();
        self.spans.clear();
        self.errors.clear();
        self.width = prepare.width();
        let mut start = 0;
        for &end in ends {
            let bytes = &data[start as usize..end as usize];
            let status = self.check(bytes, prepare, max_line, scratch);
            self.lines.push(LineInfo { start, end, status });
            start = end;
        }
        self.read_ahead(data, prepare, &mut scratch.coder);
    }

    /// Marks record `i` bad for `error`, whatever its check found.
    pub(crate) fn mark_bad(&mut self, i: usize, error: RecordError) {
        self.errors.push(error);
        self.lines[i].status = Status::Bad(self.errors.len() as u32 - 1);
    }

    /// Checks one record in full; its spans go to the end of `spans`.
    fn check(
        &mut self,
        bytes: &[u8],
        prepare: &Prepare,
        max_line: usize,
        scratch: &mut Scratch,
    ) -> Status {
        let at = self.spans.len();
        if matches!(prepare, Prepare::AsIs) {
            return Status::Record(at as u32);
        }
        // Length first, as the reader must judge a line it cannot hold before it has seen it
        // all: a line past the limit is too long even when it is only whitespace.
        let too_long = bytes.len() > max_line;
        if !too_long && bytes.iter().all(u8::is_ascii_whitespace) {
            return Status::Blank;
        }
        let checked = if too_long {
            Err(RecordError::LineTooLong {
                len: bytes.len() as u64,
                max: max_line as u64,
            })
        } else {
            match prepare {
                Prepare::Validate => {
                    validate_json_shaped(bytes, Some(&mut scratch.shape)).map(|_| ())
                }
                Prepare::Extract(x) => {
                    self.spans.resize(at + self.width, None);
                    x.extract_into(bytes, &mut self.spans[at..], Some(&mut scratch.shape))
                        .map(|_| ())
                }
                Prepare::Select(x) => self.select(x, bytes, at, scratch),
                Prepare::AsIs => Ok(()),
            }
        };
        match checked {
            Ok(()) => Status::Record(at as u32),
            Err(e) => {
                self.spans.truncate(at);
                self.errors.push(e);
                Status::Bad(self.errors.len() as u32 - 1)
            }
        }
    }
}

impl Prepared {
    /// Locates `x`'s fields in a record that is an object; any other JSON value has none.
    fn select(
        &mut self,
        x: &Extractor,
        bytes: &[u8],
        at: usize,
        scratch: &mut Scratch,
    ) -> Result<(), RecordError> {
        self.spans.resize(at + self.width, None);
        match x.extract_into(bytes, &mut self.spans[at..], Some(&mut scratch.shape)) {
            Err(RecordError::NotObject) => {
                self.spans[at..].fill(None);
                validate_json_shaped(bytes, Some(&mut scratch.shape)).map(|_| ())
            }
            other => other.map(|_| ()),
        }
    }
}

impl Prepare {
    /// Field spans per record.
    fn width(&self) -> usize {
        match self {
            Prepare::Validate | Prepare::AsIs => 0,
            Prepare::Extract(x) | Prepare::Select(x) => x.paths().len(),
        }
    }
}

/// A record as a command sees it: its bytes without the line ending, where it came from,
/// and where the requested fields lie (the reader already checked it is valid).
pub struct Line<'a> {
    pub bytes: &'a [u8],
    pub origin: &'a Arc<str>,
    /// The record's number in its input (a line source's line number).
    pub number: u64,
    /// Where the requested fields lie: spans the scanner found, each from the first byte of
    /// a JSON value to just past its last, so both ends fall on ASCII bytes (or the end).
    fields: &'a [Option<Span>],
    /// (partition, offset) of a Kafka record.
    pub offset: Option<(i32, i64)>,
    /// Shard and sequence of a Kinesis record.
    pub shard: Option<&'a ShardPosition>,
    /// Behind a shuffle: the largest event time of the record's input partition before it.
    pub carried: Option<Millis>,
    /// The event time the reader thread read (`Millis::MIN`: none, or not asked for).
    event_time: Millis,
    /// What the reader thread read of the line besides its time (`ReadAhead`), if anything.
    /// By reference: a pointer is one register, where the decimal's 16 bytes and its tag were
    /// copied through a stack slot on every line (a wide load that waited on narrow stores).
    ahead: Option<&'a ReadAhead>,
}

impl<'a> Line<'a> {
    /// A fault at this record that ends the run (state over its cap), naming its position.
    pub fn fatal(&self, reason: String) -> Fault {
        let position = self.position().to_string();
        Fault::Fatal(Error::BadInput { position, reason })
    }

    pub fn position(&self) -> Position {
        match (self.offset, self.shard) {
            (Some((partition, offset)), _) => Position::Kafka {
                topic: self.origin.clone(),
                partition,
                offset,
            },
            (None, Some(p)) => Position::Kinesis {
                stream: self.origin.clone(),
                shard: p.shard.clone(),
                sequence: p.sequence.to_string(),
                subsequence: p.subsequence,
            },
            (None, None) => Position::Line {
                source: self.origin.clone(),
                line: self.number,
            },
        }
    }

    /// The task whose state the record goes to, for a member keeping state per partition:
    /// a Kafka record's partition, a Kinesis record's shard task.
    #[inline]
    pub fn task(&self) -> Option<i32> {
        match self.offset {
            Some((partition, _)) => Some(partition),
            None => self.shard.map(|p| p.task),
        }
    }

    /// The raw JSON text of requested field `i`, if the record has it (none when `i` was
    /// not requested).
    #[inline]
    pub fn field(&self, i: usize) -> Option<&'a str> {
        let (start, end) = (*self.fields.get(i)?)?;
        let (start, end) = (start as usize, end as usize);
        // Every record reads a few fields: `str::get`'s two char-boundary checks are
        // replaced by the scanner's guarantee that a value starts and ends on an ASCII byte.
        let bytes = self.bytes.get(start..end)?;
        debug_assert!(std::str::from_utf8(bytes).is_ok());
        // SAFETY: a record has spans only when the reader thread checked it to be UTF-8 JSON,
        // and a span's ends are char boundaries (see `fields`), so `bytes` is UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(bytes) })
    }

    /// Field `i` of those `x` locates, or the error that names it missing (with the path
    /// the user probably meant).
    #[inline(always)]
    pub fn require(&self, i: usize, x: &Extractor) -> Result<&'a str, RecordError> {
        self.field(i).ok_or_else(|| x.missing(i, self.text()))
    }

    /// A state key (`--key`): its one field `at` read in place (`Some`), or its `n` fields
    /// from `at` on joined by `KEY_SEPARATOR` into `joined` (`None`; empty for none), as every
    /// command spells a key. A missing field is a bad record.
    #[inline]
    pub fn key(
        &self,
        at: usize,
        n: usize,
        x: &Extractor,
        joined: &mut String,
    ) -> Result<Option<&'a str>, RecordError> {
        if n == 1 {
            return self.require(at, x).map(Some);
        }
        joined.clear();
        for i in at..at + n {
            if i > at {
                joined.push(KEY_SEPARATOR);
            }
            joined.push_str(self.require(i, x)?);
        }
        Ok(None)
    }

    /// Field `i` as a label to group by (`--by`): a string's text, any other value's JSON,
    /// `(missing)` when it is not there.
    pub fn label(&self, i: usize) -> String {
        match self.field(i) {
            Some(raw) => match Scalar::from_raw(raw) {
                Scalar::Str(s) => s.into_owned(),
                _ => raw.to_string(),
            },
            None => "(missing)".to_string(),
        }
    }

    /// The event time in field `i` of those `x` locates, read as `format` says: a missing
    /// field or one that is no time is a bad record.
    #[inline(always)]
    pub fn time(
        &self,
        i: usize,
        x: &Extractor,
        format: &TimeFormat,
    ) -> Result<Millis, RecordError> {
        if self.event_time != Millis::MIN && x.event_time_at() == Some(i) {
            return Ok(self.event_time);
        }
        time_of(self.require(i, x)?, &x.paths()[i], format)
    }

    /// The code of the key's text, when the reader thread gave one
    /// (`Extractor::reading_key_at`).
    #[inline(always)]
    pub fn key_code(&self) -> Option<KeyCode> {
        self.ahead.and_then(|a| a.key_code)
    }

    /// Field `i`'s value as a plain decimal, when the reader thread read it
    /// (`Extractor::reading_number_at`); `None` leaves the field to the command.
    #[inline(always)]
    pub fn decimal(&self, i: usize, x: &Extractor) -> Option<Decimal> {
        let decimal = self.ahead.and_then(|a| a.decimal.as_ref());
        decimal.filter(|_| x.number_at() == Some(i)).copied()
    }

    /// Behind a shuffle (`--repartition`): where the record stood in the input, as its
    /// envelope's `partition` and `offset` (at these fields) say.
    pub fn input_position(
        &self,
        (partition_at, offset_at): (usize, usize),
        x: &Extractor,
    ) -> Result<(usize, i64), RecordError> {
        let (partition, offset) = (self.require(partition_at, x)?, self.require(offset_at, x)?);
        input_position(partition, offset).ok_or_else(|| RecordError::BadValue {
            path: x.paths()[partition_at].to_string(),
            reason: "not the envelope of a Kafka record".into(),
        })
    }

    /// The time in field `i`, if the record has one there.
    #[inline(always)]
    pub fn time_if_any(&self, i: usize, x: &Extractor, format: &TimeFormat) -> Option<Millis> {
        time_of(self.field(i)?, &x.paths()[i], format).ok()
    }

    /// Stops the run (exit 3) unless the record's message key (the envelope's `key` at field
    /// `at`, its `key_encoding` after it) spells its state key, made of the fields `parts` that
    /// `flag` names: see `core::envelope::check_keyed`.
    /// A Kinesis record's partition key is checked alike. Either is found in the data, after
    /// the member joined: exit 3, as for any input the command cannot take (exit 2 is kept for
    /// what is refused before anything is opened).
    pub fn check_keyed(&self, at: usize, parts: &[&str], flag: &str) -> Result<(), Fault> {
        let base64 = self.field(at + 1).is_some_and(|e| e == "\"base64\"");
        let by = match self.shard {
            Some(_) => KeyedBy::PartitionKey,
            None => KeyedBy::MessageKey,
        };
        check_keyed(self.field(at), base64, parts, (flag, by)).map_err(|reason| {
            let position = self.position().to_string();
            Fault::Fatal(Error::BadInput { position, reason })
        })
    }

    /// The whole record as text, for messages (empty if it is not UTF-8).
    pub fn text(&self) -> &'a str {
        std::str::from_utf8(self.bytes).unwrap_or_default()
    }

    /// The record an envelope line (`weir consume -J`'s) describes.
    pub fn envelope(&self) -> Result<OwnedRecord, RecordError> {
        read_envelope(as_utf8(self.bytes)?).map_err(|e| RecordError::BadValue {
            path: "(envelope)".into(),
            reason: e.to_string(),
        })
    }
}

impl Chunk {
    /// Fetches line `i` into cache, up to its first four cache lines. The reader checked the
    /// chunk a few chunks ago, and its bytes have left the cache since: the driver fetches the
    /// line that `ahead` will be shown next, so that looking ahead does not wait for memory,
    /// nor the command for a field past the line's first cache line (a key, an id near the
    /// line's end).
    #[inline]
    pub(crate) fn prefetch_line(&self, i: usize) {
        #[cfg(target_arch = "x86_64")]
        if let Some(info) = self.prepared.lines.get(i) {
            use std::arch::x86_64::*;
            let line = self.data.as_ptr().wrapping_add(info.start as usize);
            // From the cache line the line starts in to the one it ends in.
            let first = line.wrapping_sub(line as usize % 64);
            let spanned = (info.end - info.start) as usize + line as usize % 64;
            for k in 0..(spanned / 64 + 1).min(4) {
                // `wrapping_add`: these cache lines hold bytes of `data`.
                let at = first.wrapping_add(64 * k);
                // SAFETY: a prefetch reads nothing and cannot fault.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(at.cast()) };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = i;
    }

    /// Line `i` of the chunk, if it is a record. Inlined: built in its caller's frame, the
    /// line is not copied from one stack slot to another, a copy whose wide loads waited on
    /// the narrower stores that had just written it (3% of a one-core profile run).
    #[inline(always)]
    pub(crate) fn record_line(&self, i: usize) -> Option<Line<'_>> {
        let p = &self.prepared;
        let info = p.lines.get(i)?;
        let Status::Record(at) = info.status else {
            return None;
        };
        Some(Line {
            bytes: &self.data[info.start as usize..info.end as usize],
            origin: &self.origin,
            number: self.first_line + i as u64,
            fields: &p.spans[at as usize..at as usize + p.width],
            offset: self.positions.get(i).copied(),
            shard: self.shard_positions.get(i),
            carried: self.carried.get(i).copied().filter(|t| *t != Millis::MIN),
            event_time: p.times.get(i).copied().unwrap_or(Millis::MIN),
            ahead: p.ahead.get(i),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::aggregate::{AggInput, AggKind};
    use proptest::prelude::*;

    /// A line of a stream that mostly repeats a few layouts, with the endings, values and
    /// faults that a layout scan running past the line's end must not misjudge.
    fn stream_line() -> impl Strategy<Value = Vec<u8>> {
        let value = prop::sample::select(vec![
            "1",
            "-0.5",
            "12e3",
            "\"x\"",
            "\"\\u00e9\"",
            "\"a\\nb\"",
            "\"é\"",
            "{\"c\":2}",
            "[1, 2]",
            "null",
            "{\"c\":",
        ]);
        let ending = prop::sample::select(vec!["", "", "", "\r", "\r\r", " ", "x", "}"]);
        let layout = prop::sample::select(vec![0, 1, 2]);
        (layout, value.clone(), value, ending, 0..14usize).prop_map(|(layout, a, b, end, fault)| {
            let mut line = match layout {
                0 => format!("{{\"a\":{a},\"b\":{b}}}"),
                1 => format!("{{\"b\":{b}, \"a\":{a}}}"),
                _ => format!("{{\"a\":{a}}}"),
            }
            .into_bytes();
            line.extend_from_slice(end.as_bytes());
            match fault {
                // Not UTF-8, inside a string.
                0 => line.splice(1..1, *b"\"\xff\":0,").for_each(drop),
                1 => line = b"   ".to_vec(),
                // A value cut at the line's end, and a line that would complete it.
                2 => line = b"{\"a\":{\"c\":".to_vec(),
                3 => line = b"1}}".to_vec(),
                _ => {}
            }
            line.push(b'\n');
            line
        })
    }

    /// The reader reads the event time of the records whose time is an RFC 3339 string of the
    /// common shape; the others are left to the command (`Millis::MIN`), which reads numbers
    /// and other shapes itself and names what is no time.
    #[test]
    fn the_reader_reads_event_times_the_command_would() {
        let data = concat!(
            "{\"t\":\"2026-11-28T12:00:00.250Z\",\"k\":1}\n",
            "{\"t\":\"2026-11-28T13:00:00+01:00\"}\n",
            "{\"t\":1764331200250}\n",
            "{\"t\":\"soon\"}\n",
            "{\"k\":2}\n",
            "not json\n",
        );
        let paths = vec!["t".parse().unwrap()];
        let x = Extractor::new(paths).reading_time_at(0, &TimeFormat::Auto);
        let mut prepared = Prepared::default();
        let prepare = Prepare::Extract(Arc::new(x));
        prepared.fill(data.as_bytes(), &prepare, 1000, &mut Scratch::default());
        // `date -u -d 2026-11-28T12:00:00Z +%s`, and 13:00+01:00 is the same instant.
        let noon = 1_795_867_200_250;
        let read = [
            noon,
            noon - 250,
            Millis::MIN,
            Millis::MIN,
            Millis::MIN,
            Millis::MIN,
        ];
        assert_eq!(prepared.times, read);
        // Without the request, no time is read.
        let plain = Prepare::Extract(Arc::new(Extractor::new(vec!["t".parse().unwrap()])));
        prepared.fill(data.as_bytes(), &plain, 1000, &mut Scratch::default());
        assert!(prepared.times.is_empty());
    }

    /// The reader reads a plain decimal as the command would (`prepare` of a sum), and leaves
    /// anything else to it: exponents, more than 18 digits, strings, null, a missing field, a
    /// bad line.
    #[test]
    fn the_reader_reads_numbers_the_command_would() {
        let values = [
            "12.50",
            "-3",
            "0.001",
            "1e3",
            "\"7\"",
            "null",
            "0",
            "-0.50",
            "1234567890123456789012",
        ];
        let mut data = String::new();
        for v in values {
            data.push_str(&format!("{{\"v\":{v}}}\n"));
        }
        data.push_str("{\"k\":1}\nnot json\n");
        let x = Extractor::new(vec!["v".parse().unwrap()]).reading_number_at(0);
        let mut prepared = Prepared::default();
        let prepare = Prepare::Extract(Arc::new(x));
        prepared.fill(data.as_bytes(), &prepare, 1000, &mut Scratch::default());
        let d = Decimal::new;
        let read = [
            Some(d(1250, 2)),
            Some(d(-3, 0)),
            Some(d(1, 3)),
            None,
            None,
            None,
            Some(d(0, 0)),
            Some(d(-50, 2)),
            None,
            None,
            None,
        ];
        let numbers: Vec<_> = prepared.ahead.iter().map(|a| a.decimal).collect();
        assert_eq!(numbers, read);
        for (v, number) in values.iter().zip(&numbers) {
            let Some(number) = number else { continue };
            let Ok(AggInput::Number(theirs)) =
                crate::core::aggregate::prepare(&AggKind::Sum, Some(v))
            else {
                panic!("{v}: the command reads no number");
            };
            // The same value and scale: sums print as the command's would.
            assert_eq!((number, number.scale()), (&theirs, theirs.scale()), "{v}");
        }
        // Without the request, no number is read.
        let plain = Prepare::Extract(Arc::new(Extractor::new(vec!["v".parse().unwrap()])));
        prepared.fill(data.as_bytes(), &plain, 1000, &mut Scratch::default());
        assert!(prepared.ahead.is_empty());
    }

    proptest! {
        /// The reader finds each line's end by scanning it when it repeats a layout; the
        /// lines, their statuses and their fields must be what splitting at every newline and
        /// checking each line alone in full (no layouts) gives.
        #[test]
        fn prepared_lines_agree_with_lines_checked_alone(
            lines in prop::collection::vec(stream_line(), 1..60),
            extract in any::<bool>(),
            max_line in 8usize..40,
        ) {
            let data = lines.concat();
            let paths = ["a", "b", "a.c"].iter().map(|p| p.parse().unwrap()).collect();
            let extractor = Arc::new(Extractor::new(paths));
            let prepare = if extract { Prepare::Extract(extractor.clone()) } else { Prepare::Validate };
            let mut prepared = Prepared::default();
            prepared.fill(&data, &prepare, max_line, &mut Scratch::default());

            let mut expected = Vec::new();
            let mut start = 0;
            for newline in memchr::memchr_iter(b'\n', &data) {
                let end = newline - (newline > start && data[newline - 1] == b'\r') as usize;
                let bytes = &data[start..end];
                let status = if bytes.len() > max_line {
                    "too long".to_string()
                } else if bytes.iter().all(u8::is_ascii_whitespace) {
                    "blank".to_string()
                } else if extract {
                    let mut fields = Fields::new();
                    match extractor.extract_bytes(bytes, &mut fields, None) {
                        Ok(_) => format!("{fields:?}"),
                        Err(e) => e.to_string(),
                    }
                } else {
                    match validate_json_shaped(bytes, None) {
                        Ok(_) => "[]".to_string(),
                        Err(e) => e.to_string(),
                    }
                };
                expected.push((start, end, status));
                start = newline + 1;
            }
            let found: Vec<_> = prepared
                .lines
                .iter()
                .map(|line| {
                    let status = match line.status {
                        Status::Blank => "blank".to_string(),
                        Status::Record(at) => {
                            let at = at as usize;
                            format!("{:?}", &prepared.spans[at..at + prepared.width])
                        }
                        Status::Bad(e) => match &prepared.errors[e as usize] {
                            RecordError::LineTooLong { .. } => "too long".to_string(),
                            e => e.to_string(),
                        },
                    };
                    (line.start as usize, line.end as usize, status)
                })
                .collect();
            prop_assert_eq!(found, expected);
        }
    }
}

/// Which of the located fields some record of the run had, and the run's first record (a
/// field no record had is most likely mistyped: the end of the run says so, with the path
/// of that record closest to it).
#[derive(Clone, Debug, Default)]
pub struct FieldsSeen {
    pub seen: Vec<bool>,
    pub sample: Option<String>,
}

/// The longest first record kept to suggest paths from.
const SAMPLE_BYTES: usize = 64 * 1024;

impl FieldsSeen {
    /// Notes the fields the records of `chunk` have. Only the fields not seen yet are looked
    /// at, and the look stops once every field is seen: in a run where they all turn up, this
    /// costs the first records, not each one.
    pub fn tally(&mut self, chunk: &Chunk) {
        let p = &chunk.prepared;
        if p.width == 0 {
            return;
        }
        self.seen.resize(p.width, false);
        let mut unseen: Vec<usize> = (0..p.width).filter(|&i| !self.seen[i]).collect();
        for info in &p.lines {
            if unseen.is_empty() && self.sample.is_some() {
                break;
            }
            let Status::Record(at) = info.status else {
                continue;
            };
            let spans = &p.spans[at as usize..at as usize + p.width];
            unseen.retain(|&i| spans[i].is_none());
            if self.sample.is_none() && ((info.end - info.start) as usize) < SAMPLE_BYTES {
                let line = &chunk.data[info.start as usize..info.end as usize];
                self.sample = Some(String::from_utf8_lossy(line).into_owned());
            }
        }
        for (i, seen) in self.seen.iter_mut().enumerate() {
            *seen = !unseen.contains(&i);
        }
    }
}
