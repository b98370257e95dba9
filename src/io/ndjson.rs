//! The NDJSON source: files (gzip and zstd detected by content) and stdin, read in order on the
//! reader thread in big blocks and handed over as chunks of whole lines.

use std::fs::File;
use std::io::{self, BufReader, IsTerminal, Read};
use std::sync::Arc;

use flate2::read::MultiGzDecoder;
use indicatif::ProgressBar;
use memmap2::Mmap;

use super::mapped;
use super::spec::Input;
use crate::error::{Error, Result};
use crate::runtime::{progress, ChunkData, Feed, LinePosition, Source, CHUNK_BYTES};

/// NDJSON files and stdin, read one after the other.
pub struct NdjsonSource {
    inputs: Vec<Input>,
    /// A byte-progress bar over every input (files only), cleared at the end.
    progress: Option<ProgressBar>,
    /// Where a restored run goes on: inputs before it are done, this one resumes at its
    /// offset and line.
    resume: Option<LinePosition>,
}

impl NdjsonSource {
    pub fn new(inputs: Vec<Input>) -> NdjsonSource {
        NdjsonSource {
            inputs,
            progress: None,
            resume: None,
        }
    }

    /// Goes on from `at` (a checkpoint's position) instead of the start. On stdin, which
    /// cannot be rewound, the input goes on from where the new stdin starts.
    pub fn resume_at(mut self, at: LinePosition) -> NdjsonSource {
        self.resume = Some(at);
        self
    }

    /// Shows a byte-progress bar on a terminal when every input is a file (the work is
    /// bounded and its size known).
    pub fn with_progress(mut self) -> NdjsonSource {
        let mut total = 0;
        for input in &self.inputs {
            match input {
                Input::File(path) => match std::fs::metadata(path) {
                    Ok(m) => total += m.len(),
                    Err(_) => return self,
                },
                Input::Stdin => return self,
            }
        }
        self.progress = progress::bytes(total);
        self
    }
}

impl Source for NdjsonSource {
    fn read(self: Box<Self>, feed: &mut Feed) -> Result<()> {
        for (index, input) in self.inputs.iter().enumerate() {
            if feed.cancelled() {
                return Ok(());
            }
            let index = index as u32;
            let start = match self.resume {
                Some(at) if at.input > index => continue,
                Some(at) if at.input == index => at,
                _ => LinePosition::start(index),
            };
            self.read_input(input, start, feed)?;
        }
        if let Some(pb) = &self.progress {
            pb.finish_and_clear();
        }
        Ok(())
    }
}

impl NdjsonSource {
    fn read_input(&self, input: &Input, start: LinePosition, feed: &mut Feed) -> Result<()> {
        let origin: Arc<str> = Arc::from(input.display_name());
        let cannot = |e: io::Error| Error::Unreachable(format!("cannot read {origin}: {e}"));
        let raw: Box<dyn Read + Send> = match input {
            Input::Stdin => {
                // As `cat` and `jq` do, weir reads a terminal; unlike them, it says so first,
                // so that a forgotten SOURCE does not look like a hang.
                if io::stdin().is_terminal() {
                    eprintln!("weir: reading NDJSON from the terminal (stdin); end it with Ctrl-D, or give a SOURCE");
                }
                Box::new(io::stdin())
            }
            Input::File(path) => {
                let file = File::open(path).map_err(cannot)?;
                // A plain file is read in place; a compressed one, as a stream.
                let plain = |m: &Mmap| !m.starts_with(&GZIP_MAGIC) && !m.starts_with(&ZSTD_MAGIC);
                if let Some(map) = mapped::map(&file, &origin).filter(plain) {
                    let mut start = start;
                    if start.offset == 0 && map.starts_with(&BOM) {
                        start.offset = BOM.len() as u64;
                    }
                    return mapped::read(origin, map, start, feed, self.progress.as_ref());
                }
                match &self.progress {
                    Some(pb) => Box::new(pb.wrap_read(file)),
                    None => Box::new(file),
                }
            }
        };
        let start = match input {
            // Nothing to skip: the new stdin is new input.
            Input::Stdin => LinePosition { offset: 0, ..start },
            Input::File(_) => start,
        };
        read_stream(origin, raw, start, feed)
    }
}

/// One stream of NDJSON from any reader (a pipe, a socket; the fuzzer's arbitrary splits),
/// named `origin` in positions.
pub struct StreamSource {
    origin: Arc<str>,
    reader: Box<dyn Read + Send>,
}

impl StreamSource {
    pub fn new(origin: &str, reader: Box<dyn Read + Send>) -> StreamSource {
        StreamSource {
            origin: Arc::from(origin),
            reader,
        }
    }
}

impl Source for StreamSource {
    fn read(self: Box<Self>, feed: &mut Feed) -> Result<()> {
        let StreamSource { origin, reader } = *self;
        read_stream(origin, reader, LinePosition::start(0), feed)
    }
}

/// The first `len` bytes of `reader` (fewer when it ends first), however many reads they
/// take: a pipe may deliver them a byte at a time.
fn read_head(reader: &mut impl Read, len: usize) -> io::Result<Vec<u8>> {
    let mut head = vec![0; len];
    let mut got = 0;
    while got < len {
        match reader.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    head.truncate(got);
    Ok(head)
}

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// A zstd frame's magic number, little-endian.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

enum Compression {
    None,
    Gzip,
    Zstd,
}

/// A zstd decoder whose own errors (a damaged frame, a wrong checksum: `ErrorKind::Other`
/// there) are bad data, as gzip's are, not a failed read; errors of the file beneath keep
/// their kind.
struct ZstdInput<R: io::BufRead>(zstd::stream::read::Decoder<'static, R>);

impl<R: io::BufRead> Read for ZstdInput<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf).map_err(|e| match e.kind() {
            io::ErrorKind::Other => io::Error::new(io::ErrorKind::InvalidData, e),
            _ => e,
        })
    }
}

/// The UTF-8 byte order mark.
const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// Reads `raw` (gzip or zstd when it starts like them) from `start` (its first
/// `start.offset` bytes, decompressed, are skipped) and hands its lines over in chunks, each
/// with where the input stands after it.
fn read_stream(
    origin: Arc<str>,
    raw: Box<dyn Read + Send>,
    start: LinePosition,
    feed: &mut Feed,
) -> Result<()> {
    let mut source = decompressed(&origin, raw)?;
    // A restored run skips what the checkpoint covers (read again, not sought: the same
    // code serves gzip, whose offsets are of the decompressed stream).
    let skipped = io::copy(&mut (&mut source).take(start.offset), &mut io::sink())
        .map_err(|e| read_error(&origin, e, start.next_line))?;
    if skipped < start.offset {
        return Err(start.past_the_end(&origin, skipped));
    }
    let mut consumed = start.offset;
    if start.offset == 0 {
        // A UTF-8 byte order mark (Windows tools write one) is not the first record's:
        // skipped, as jq and Miller do; anything else goes back in front of the input.
        let head = read_head(&mut source, BOM.len())
            .map_err(|e| read_error(&origin, e, start.next_line))?;
        let kept = if head == BOM {
            consumed += BOM.len() as u64;
            Vec::new()
        } else {
            head
        };
        source = Box::new(io::Cursor::new(kept).chain(source));
    }
    let lines = Lines {
        buf: feed.read_space(),
        filled: 0,
        consumed,
        next_line: start.next_line,
        input: start.input,
        skipping: None,
        origin,
    };
    lines.read(source, feed)
}

/// `raw`, decompressed when its first bytes say it is gzip or zstd.
fn decompressed(origin: &str, raw: Box<dyn Read + Send>) -> Result<Box<dyn Read>> {
    let cannot = |e: io::Error| Error::Unreachable(format!("cannot read {origin}: {e}"));
    // Gzip and zstd are told by their first bytes, which a pipe may deliver reads apart
    // (found by the chunk fuzz target): read until they are there, or the input ends.
    let mut raw = raw;
    let head = read_head(&mut raw, ZSTD_MAGIC.len()).map_err(cannot)?;
    let compression = if head.starts_with(&GZIP_MAGIC) {
        Compression::Gzip
    } else if head == ZSTD_MAGIC {
        Compression::Zstd
    } else {
        Compression::None
    };
    let stream = io::Cursor::new(head).chain(raw);
    let buffered = BufReader::with_capacity(64 * 1024, stream);
    Ok(match compression {
        // Both decoders go on across concatenated members or frames, as gunzip and zstd -d do.
        Compression::Gzip => Box::new(MultiGzDecoder::new(buffered)),
        Compression::Zstd => Box::new(ZstdInput(
            zstd::stream::read::Decoder::with_buffer(buffered)
                .map_err(|e| Error::Unreachable(format!("cannot read {origin}: zstd: {e}")))?,
        )),
        Compression::None => Box::new(buffered),
    })
}

/// A failed read at `line`: bad data (exit 3) or an input that cannot be read (exit 4).
fn read_error(origin: &str, e: io::Error, line: u64) -> Error {
    match e.kind() {
        io::ErrorKind::InvalidData | io::ErrorKind::InvalidInput | io::ErrorKind::UnexpectedEof => {
            Error::BadInput {
                position: format!("{origin}:{line}"),
                reason: format!("unreadable input: {e}"),
            }
        }
        _ => Error::Unreachable(format!("cannot read {origin} at line {line}: {e}")),
    }
}

/// A line too long to keep, being skipped: its number, its length so far and its prefix.
struct TooLong {
    line: u64,
    len: u64,
    prefix: Vec<u8>,
}

/// An input being cut into lines and handed over in chunks.
struct Lines {
    origin: Arc<str>,
    input: u32,
    /// `buf[..filled]` holds data; the rest of `buf` is initialised scratch, kept from
    /// earlier chunks so that a read never has to zero memory first.
    buf: Vec<u8>,
    filled: usize,
    /// Where `buf[0]` is in the stream.
    consumed: u64,
    next_line: u64,
    skipping: Option<TooLong>,
}

impl Lines {
    fn read(mut self, mut source: Box<dyn Read>, feed: &mut Feed) -> Result<()> {
        let max_line = feed.max_line_bytes();
        loop {
            let n = self.fill(&mut source)?;
            if n == 0 {
                return self.end(feed);
            }
            if self.skipping.is_some() && !self.skip_rest(feed)? {
                continue;
            }
            let Some(last_nl) = memchr::memrchr(b'\n', &self.buf[..self.filled]) else {
                // One byte more than the limit may be the `\r` of a `\r\n`, which is not
                // the line's: only past that is the line sure to be too long.
                if self.filled > max_line + 1 {
                    self.start_skipping();
                }
                continue;
            };
            // Hand over what we have when the chunk is full, or when the source had no more
            // right now (a pipe): records must flow promptly through a live pipeline.
            if self.filled >= CHUNK_BYTES || n < CHUNK_BYTES {
                self.hand_over(last_nl, feed)?;
            }
        }
    }

    /// Reads up to a chunk's worth more; how much came (0 at the end).
    fn fill(&mut self, source: &mut impl Read) -> Result<usize> {
        let filled = self.filled;
        if self.buf.len() < filled + CHUNK_BYTES {
            self.buf.resize(filled + CHUNK_BYTES, 0);
        }
        let n = loop {
            match source.read(&mut self.buf[filled..filled + CHUNK_BYTES]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(read_error(&self.origin, e, self.next_line)),
            }
        };
        self.filled += n;
        Ok(n)
    }

    fn at(&self, offset: u64) -> LinePosition {
        LinePosition {
            input: self.input,
            offset,
            next_line: 0,
        }
    }

    /// The input ended: its last line goes out, without its newline if it had none.
    fn end(mut self, feed: &mut Feed) -> Result<()> {
        if let Some(long) = self.skipping.take() {
            let at = self.at(self.consumed);
            let line = (long.line, long.len, false);
            return feed.too_long(&self.origin, line, long.prefix, at);
        }
        if self.filled > 0 {
            let filled = self.filled;
            self.buf.truncate(filled);
            self.buf.push(b'\n'); // a last line without its newline is still a line
            let end = self.at(self.consumed + filled as u64);
            feed.lines(
                &self.origin,
                self.next_line,
                ChunkData::Owned(self.buf),
                filled as u64,
                end,
            )?;
        }
        Ok(())
    }

    /// The line in `buf` is too long: it is dropped from here on, its prefix kept.
    fn start_skipping(&mut self) {
        let filled = self.filled;
        let prefix = self.buf[..filled.min(4096)].to_vec();
        self.skipping = Some(TooLong {
            line: self.next_line,
            len: filled as u64,
            prefix,
        });
        self.consumed += filled as u64;
        self.filled = 0;
    }

    /// Skips on through a too-long line; whether it ended in what was read (it is then
    /// reported, and what follows it kept).
    fn skip_rest(&mut self, feed: &mut Feed) -> Result<bool> {
        let long = self.skipping.as_mut().expect("skipping");
        let Some(nl) = memchr::memchr(b'\n', &self.buf[..self.filled]) else {
            long.len += self.filled as u64;
            self.consumed += self.filled as u64;
            self.filled = 0;
            return Ok(false);
        };
        long.len += nl as u64;
        self.consumed += nl as u64 + 1;
        let long = self.skipping.take().expect("skipping");
        let at = self.at(self.consumed);
        let line = (long.line, long.len, true);
        feed.too_long(&self.origin, line, long.prefix, at)?;
        self.next_line += 1;
        self.buf.copy_within(nl + 1..self.filled, 0);
        self.filled -= nl + 1;
        Ok(true)
    }

    /// Hands over the whole lines, up to the newline at `last_nl`; what follows it stays.
    fn hand_over(&mut self, last_nl: usize, feed: &mut Feed) -> Result<()> {
        let mut rest = feed.read_space();
        let tail = self.filled - (last_nl + 1);
        if rest.len() < tail {
            rest.resize(tail, 0);
        }
        rest[..tail].copy_from_slice(&self.buf[last_nl + 1..self.filled]);
        let mut buf = std::mem::replace(&mut self.buf, rest);
        buf.truncate(last_nl + 1);
        let bytes = buf.len() as u64;
        self.consumed += bytes;
        let at = self.at(self.consumed);
        self.next_line += feed.lines(
            &self.origin,
            self.next_line,
            ChunkData::Owned(buf),
            bytes,
            at,
        )?;
        self.filled = tail;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Fault, Result};
    use crate::runtime::{
        drive, Counters, Drive, ErrorPolicy, Flow, Line, OnError, Prepare, Reader, RecordStep,
        CHUNK_BYTES,
    };
    use std::io::Write;
    use std::sync::atomic::AtomicBool;

    struct Collect(Vec<(u64, String)>);

    impl RecordStep for Collect {
        fn record(&mut self, line: &Line<'_>, _: &mut Counters) -> Result<Flow, Fault> {
            self.0.push((
                line.number,
                String::from_utf8_lossy(line.bytes).into_owned(),
            ));
            Ok(Flow::Continue)
        }
        fn idle(&mut self) -> Result<()> {
            Ok(())
        }
    }

    /// Runs the reader and driver over `content` in a temp file, returning (line, text) pairs.
    fn lines_of(content: &[u8], max_line: usize) -> (Vec<(u64, String)>, Counters) {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(content).unwrap();
        let source = NdjsonSource::new(vec![Input::File(file.path().to_path_buf())]);
        collect(Box::new(source), max_line)
    }

    /// The same, with `content` read as a stream (as from a pipe).
    fn streamed_lines_of(content: &[u8], max_line: usize) -> (Vec<(u64, String)>, Counters) {
        let reader = Box::new(io::Cursor::new(content.to_vec()));
        collect(Box::new(StreamSource::new("x", reader)), max_line)
    }

    fn collect(source: Box<dyn Source>, max_line: usize) -> (Vec<(u64, String)>, Counters) {
        let reader = Reader::spawn(source, Prepare::Validate, max_line);
        let mut counters = Counters::default();
        let mut policy = ErrorPolicy::new(OnError::Skip, None);
        let stop = AtomicBool::new(false);
        let mut seen = Collect(Vec::new());
        drive(
            reader,
            Drive {
                counters: &mut counters,
                policy: &mut policy,
                stop: &stop,
                select: None,
            },
            &mut seen,
        )
        .unwrap();
        (seen.0, counters)
    }

    proptest::proptest! {
        /// A file read in place (mapped) and the same bytes read as a stream give the same
        /// records, line numbers and counts: byte order marks, CRLF, blank, bad and
        /// too-long lines, and a last line without its newline.
        #[test]
        fn a_mapped_file_reads_as_a_stream_does(
            bom: bool,
            lines in proptest::collection::vec(proptest::sample::select(vec![
                "{\"a\":1}", "[1,2]", "nope", "", " ", "\r", "\"\u{e9}\"", "{\"long\":\"xxxxxxxxxxxxxxxxxxxx\"}",
            ]), 0..12),
            last_newline: bool,
            max_line in 4usize..40,
        ) {
            let mut content = if bom { BOM.to_vec() } else { Vec::new() };
            content.extend(lines.join("\n").into_bytes());
            if last_newline && !lines.is_empty() {
                content.push(b'\n');
            }
            let (mapped, m) = lines_of(&content, max_line);
            let (streamed, s) = streamed_lines_of(&content, max_line);
            proptest::prop_assert_eq!(mapped, streamed);
            proptest::prop_assert_eq!((m.read, m.blank_lines, m.bad, m.bytes_read), (s.read, s.blank_lines, s.bad, s.bytes_read));
        }
    }

    #[test]
    fn numbers_lines_and_handles_endings() {
        let (seen, c) = lines_of(b"1\r\n\n  \n2\n3", 100);
        assert_eq!(
            seen,
            vec![(1, "1".into()), (4, "2".into()), (5, "3".into())]
        );
        assert_eq!((c.read, c.blank_lines, c.bytes_read), (3, 2, 10));
    }

    #[test]
    fn long_lines_are_bad_records_and_memory_stays_bounded() {
        let mut content = b"1\n\"".to_vec();
        content.extend(std::iter::repeat_n(b'x', 3 * CHUNK_BYTES + 15));
        content.extend_from_slice(b"\"\n3\n");
        // A limit below the chunk size: the long line is dropped by the reader.
        let (seen, c) = lines_of(&content, 1000);
        assert_eq!(seen, vec![(1, "1".into()), (3, "3".into())]);
        assert_eq!((c.read, c.bad), (3, 1));
        // A limit the line fits in: it arrives whole.
        let (seen, c) = lines_of(&content, 4 * CHUNK_BYTES);
        assert_eq!(seen.len(), 3);
        assert_eq!(seen[1].1.len(), 3 * CHUNK_BYTES + 17);
        assert_eq!(c.bad, 0);
        // A short limit still catches lines inside one chunk.
        let (seen, c) = lines_of(b"12345\n123\n", 4);
        assert_eq!(seen, vec![(2, "123".into())]);
        // Lines that are not JSON are bad records, found on the reader thread.
        let (seen, c2) = lines_of(b"1\nnope\n[2]\n", 100);
        assert_eq!(seen, vec![(1, "1".into()), (3, "[2]".into())]);
        assert_eq!((c2.read, c2.bad), (3, 1));
        assert_eq!(c.bad, 1);
    }

    #[test]
    fn line_numbers_stay_right_across_many_chunks() {
        let mut content = Vec::new();
        for i in 1..=200_000u64 {
            writeln!(content, "{{\"n\":{i}}}").unwrap();
        }
        let (seen, c) = lines_of(&content, 1 << 20);
        assert_eq!(c.read, 200_000);
        assert!(seen
            .iter()
            .all(|(n, text)| *text == format!("{{\"n\":{n}}}")));
    }

    #[test]
    fn gzip_is_detected_by_content() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"{\"a\":1}\n{\"a\":2}\n").unwrap();
        let (seen, _) = lines_of(&gz.finish().unwrap(), 100);
        assert_eq!(seen, vec![(1, "{\"a\":1}".into()), (2, "{\"a\":2}".into())]);
    }

    /// A reader that hands out one byte at a time, like the slowest pipe.
    struct ByteAtATime(Vec<u8>, usize);

    impl Read for ByteAtATime {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.1 == self.0.len() || buf.is_empty() {
                return Ok(0);
            }
            buf[0] = self.0[self.1];
            self.1 += 1;
            Ok(1)
        }
    }

    fn counts_of(source: Box<dyn Source>, max_line: usize) -> (Vec<(u64, String)>, [u64; 3]) {
        let reader = Reader::spawn(source, Prepare::Validate, max_line);
        let mut counters = Counters::default();
        let mut policy = ErrorPolicy::new(OnError::Skip, None);
        let stop = AtomicBool::new(false);
        let mut seen = Collect(Vec::new());
        let d = Drive {
            counters: &mut counters,
            policy: &mut policy,
            stop: &stop,
            select: None,
        };
        drive(reader, d, &mut seen).unwrap();
        let c = counters;
        (seen.0, [c.read, c.bad, c.blank_lines])
    }

    /// Found by the fuzzer: a line the reader drops as too long while it is still coming
    /// (a slow pipe) and the same line read whole must be judged alike. Whitespace past the
    /// limit is too long, not blank; a `\r` of `\r\n` past the limit is not the line's.
    #[test]
    fn a_line_is_judged_alike_however_it_arrives() {
        let content = b"1\n          \n12345678\r\n123456789\r\n  \n2\n".to_vec();
        let whole = counts_of(
            Box::new(StreamSource::new(
                "t",
                Box::new(io::Cursor::new(content.clone())),
            )),
            8,
        );
        let slow = counts_of(
            Box::new(StreamSource::new("t", Box::new(ByteAtATime(content, 0)))),
            8,
        );
        assert_eq!(whole, slow);
        assert_eq!(
            whole.0,
            vec![(1, "1".into()), (3, "12345678".into()), (6, "2".into())]
        );
        // Read: 1, the spaces (too long), 12345678, 123456789 (too long), 2; one blank.
        assert_eq!(whole.1, [5, 2, 1]);
    }

    /// A byte order mark at the start of an input is skipped, however it arrives; one
    /// anywhere else is the line's.
    #[test]
    fn a_byte_order_mark_at_the_start_is_skipped() {
        let content = b"\xEF\xBB\xBF{\"a\":1}\r\n\xEF\xBB\xBF{\"a\":2}\n".to_vec();
        let whole = counts_of(
            Box::new(StreamSource::new(
                "t",
                Box::new(io::Cursor::new(content.clone())),
            )),
            100,
        );
        let slow = counts_of(
            Box::new(StreamSource::new("t", Box::new(ByteAtATime(content, 0)))),
            100,
        );
        assert_eq!(whole, slow);
        assert_eq!(whole.0, vec![(1, "{\"a\":1}".into())]);
        // The second line's mark is not JSON: a bad record.
        assert_eq!(whole.1, [2, 1, 0]);
        let (seen, _) = lines_of(b"\xEF\xBB\xBF", 100);
        assert!(seen.is_empty(), "{seen:?}");
        // Found by the fuzzer: an input no longer than a mark, read ahead whole.
        let (seen, c) = lines_of(b"1\n", 100);
        assert_eq!((seen.len(), c.read, c.blank_lines), (1, 1, 0));
        let (_, c) = lines_of(b"\xEF\xBB", 100);
        assert_eq!(
            (c.read, c.bad),
            (1, 1),
            "a lone part of a mark is a (bad) line"
        );
    }

    /// Found by the fuzzer: gzip is recognised even when its two magic bytes come in two
    /// reads.
    #[test]
    fn gzip_is_recognised_a_byte_at_a_time() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"{\"a\":1}\n{\"a\":2}\n").unwrap();
        let source = StreamSource::new("t", Box::new(ByteAtATime(gz.finish().unwrap(), 0)));
        let (seen, counts) = counts_of(Box::new(source), 100);
        assert_eq!(seen, vec![(1, "{\"a\":1}".into()), (2, "{\"a\":2}".into())]);
        assert_eq!(counts, [2, 0, 0]);
    }

    /// zstd is told by its magic number, however the bytes arrive, and frames written one
    /// after another read as one stream, as `zstd -d` reads them.
    #[test]
    fn zstd_is_recognised_across_frames_and_a_byte_at_a_time() {
        let mut frames = zstd::stream::encode_all(&b"{\"a\":1}\n{\"a\":2}\n"[..], 3).unwrap();
        frames.extend(zstd::stream::encode_all(&b"{\"a\":3}\n"[..], 3).unwrap());
        let want: Vec<(u64, String)> = (1..=3).map(|n| (n, format!("{{\"a\":{n}}}"))).collect();
        let (seen, _) = lines_of(&frames, 100);
        assert_eq!(seen, want);
        let source = StreamSource::new("t", Box::new(ByteAtATime(frames, 0)));
        let (seen, counts) = counts_of(Box::new(source), 100);
        assert_eq!(seen, want);
        assert_eq!(counts, [3, 0, 0]);
    }

    /// A damaged zstd frame is bad input (exit 3) naming the line it stopped at, as a damaged
    /// gzip member is, not a failed read (exit 4).
    #[test]
    fn a_damaged_zstd_frame_is_bad_input() {
        let mut frame = zstd::stream::encode_all(&b"{\"a\":1}\n"[..], 3).unwrap();
        frame[4] = 0xff;
        let source = StreamSource::new("t", Box::new(io::Cursor::new(frame)));
        let reader = Reader::spawn(Box::new(source), Prepare::Validate, 100);
        let mut counters = Counters::default();
        let mut policy = ErrorPolicy::new(OnError::Skip, None);
        let stop = AtomicBool::new(false);
        let d = Drive {
            counters: &mut counters,
            policy: &mut policy,
            stop: &stop,
            select: None,
        };
        match drive(reader, d, &mut Collect(Vec::new())) {
            Err(Error::BadInput { position, .. }) => assert_eq!(position, "t:1"),
            other => panic!("{other:?}"),
        }
    }
}
