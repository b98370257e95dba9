//! Plain NDJSON files read through a memory map: the reader scans the file's bytes where the
//! kernel keeps them instead of copying them into a buffer first (that copy was a tenth of a
//! one-core run). Compressed files, pipes and empty files are read as streams.
//!
//! A mapped file that another process cuts short while weir reads it cannot be read past its
//! new end: the read faults (SIGBUS). weir then says so on stderr and exits 4, as for any
//! input that cannot be read, instead of dying of the signal.

use std::fs::File;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Once};

use indicatif::ProgressBar;
use memmap2::{Advice, Mmap};

use crate::error::Result;
use crate::runtime::{ChunkData, Feed, LinePosition, MappedRange, CHUNK_BYTES};

/// `file` mapped into memory, when it is a regular, non-empty file.
pub fn map(file: &File, origin: &str) -> Option<Mmap> {
    let meta = file.metadata().ok()?;
    if !cfg!(unix) || !meta.is_file() || meta.len() == 0 {
        return None;
    }
    guard_truncation(origin);
    // SAFETY: the map is read-only and private to this process; what another process may do
    // to the file meanwhile is cutting it short, whose fault `guard_truncation` handles.
    let map = unsafe { Mmap::map(file) }.ok()?;
    let _ = map.advise(Advice::Sequential);
    Some(map)
}

/// Hands over the lines of a mapped file from `start` (past a byte order mark, which the
/// caller skips) as a stream's are handed over: in chunks of whole lines, each a range of the
/// map; a line longer than the limit reported and skipped; a last line without its newline
/// given one.
pub fn read(
    origin: Arc<str>,
    map: Mmap,
    start: LinePosition,
    feed: &mut Feed,
    progress: Option<&ProgressBar>,
) -> Result<()> {
    let len = map.len();
    if start.offset > len as u64 {
        return Err(start.past_the_end(&origin, len as u64));
    }
    let mut lines = MappedLines {
        origin,
        map: Arc::new(map),
        input: start.input,
        next_line: start.next_line,
    };
    let mut pos = start.offset as usize;
    while pos < len {
        feed.let_go();
        let limit = (pos + CHUNK_BYTES).min(len);
        let end = match memchr::memrchr(b'\n', &lines.map[pos..limit]) {
            Some(nl) => lines.hand_over(pos, pos + nl + 1, feed)?,
            None => lines.beyond_chunk(pos, limit, feed)?,
        };
        progress.inspect(|pb| pb.inc((end - pos) as u64));
        pos = end;
    }
    Ok(())
}

/// A mapped file being handed over, and the number of its next line.
struct MappedLines {
    origin: Arc<str>,
    map: Arc<Mmap>,
    input: u32,
    next_line: u64,
}

impl MappedLines {
    /// Hands over the whole lines in `pos..end` as one chunk; returns `end`.
    fn hand_over(&mut self, pos: usize, end: usize, feed: &mut Feed) -> Result<usize> {
        let data = ChunkData::Mapped(MappedRange::new(self.map.clone(), pos..end));
        let at = self.at(end);
        self.next_line += feed.lines(&self.origin, self.next_line, data, (end - pos) as u64, at)?;
        Ok(end)
    }

    /// The line at `pos` has no newline before `limit`: it is longer than a chunk, or the
    /// file's last line without its newline. Hands it over (or reports it too long) and
    /// returns where the next line starts.
    fn beyond_chunk(&mut self, pos: usize, limit: usize, feed: &mut Feed) -> Result<usize> {
        let len = self.map.len();
        let line_end = memchr::memchr(b'\n', &self.map[limit..]).map_or(len, |nl| limit + nl);
        let after = (line_end + 1).min(len);
        // One byte more than the limit may be the `\r` of a `\r\n`, as for a stream.
        if line_end - pos > feed.max_line_bytes() + 1 {
            let prefix = self.map[pos..pos + 4096.min(line_end - pos)].to_vec();
            let line = (self.next_line, (line_end - pos) as u64, line_end < len);
            feed.too_long(&self.origin, line, prefix, self.at(after))?;
            self.next_line += 1;
            return Ok(after);
        }
        if line_end < len {
            return self.hand_over(pos, after, feed);
        }
        let mut last = self.map[pos..len].to_vec();
        last.push(b'\n');
        let (data, at) = (ChunkData::Owned(last), self.at(len));
        self.next_line += feed.lines(&self.origin, self.next_line, data, (len - pos) as u64, at)?;
        Ok(len)
    }

    /// Where the input stands at byte `offset` (the line number is the feed's to fill in).
    fn at(&self, offset: usize) -> LinePosition {
        LinePosition {
            input: self.input,
            offset: offset as u64,
            next_line: 0,
        }
    }
}

/// What the SIGBUS handler writes: the message naming the file mapped last, in a fixed
/// buffer (a handler may not allocate), cut at its length.
static MESSAGE: [AtomicU8; 1024] = [const { AtomicU8::new(0) }; 1024];
static MESSAGE_LEN: AtomicUsize = AtomicUsize::new(0);

/// Makes a fault on a mapped file that was cut short end the run with exit 4 and a message
/// naming `origin`, instead of killing the process with SIGBUS.
fn guard_truncation(origin: &str) {
    let text = format!(
        "weir: cannot read {origin}: it was cut short while it was being read (or an input before it was)\n"
    );
    let text = &text.as_bytes()[..text.len().min(MESSAGE.len())];
    MESSAGE_LEN.store(0, Ordering::SeqCst);
    for (slot, &byte) in MESSAGE.iter().zip(text) {
        slot.store(byte, Ordering::Relaxed);
    }
    MESSAGE_LEN.store(text.len(), Ordering::SeqCst);
    static INSTALL: Once = Once::new();
    INSTALL.call_once(install_handler);
}

#[cfg(unix)]
fn install_handler() {
    extern "C" fn on_sigbus(_: libc::c_int) {
        let mut text = [0u8; 1024];
        let len = MESSAGE_LEN.load(Ordering::SeqCst);
        for (byte, slot) in text.iter_mut().zip(&MESSAGE[..len]) {
            *byte = slot.load(Ordering::Relaxed);
        }
        // SAFETY: write(2) and _exit(2) are async-signal-safe; `text` holds `len` bytes.
        unsafe {
            libc::write(2, text.as_ptr().cast(), len);
            libc::_exit(4);
        }
    }
    // SAFETY: a zeroed sigaction with an empty mask and a plain handler is a valid one.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigbus as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
    }
}

#[cfg(not(unix))]
fn install_handler() {}
