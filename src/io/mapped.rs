//! Plain NDJSON files read through a memory map: the reader scans the file's bytes where the
//! kernel keeps them instead of copying them into a buffer first (that copy was a tenth of a
//! one-core run). Compressed files, pipes and empty files are read as streams.
//!
//! A mapped file that another process cuts short while weir reads it cannot be read past its
//! new end: the read faults (SIGBUS). weir then says so on stderr and exits 4, as for any
//! input that cannot be read, instead of dying of the signal.

use std::fs::File;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Once};

use indicatif::ProgressBar;
use memmap2::{Advice, Mmap};

use crate::error::{Error, Result};
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
/// caller skips), as a stream's are handed over: in
/// chunks of whole lines (each a range of the map), a line longer than the limit reported
/// and skipped, and a last line without its newline given one.
pub fn read(
    origin: Arc<str>,
    map: Mmap,
    start: LinePosition,
    feed: &mut Feed,
    progress: Option<&ProgressBar>,
) -> Result<()> {
    let map = Arc::new(map);
    let len = map.len();
    if start.offset > len as u64 {
        return Err(Error::Usage(format!(
            "{origin} is shorter ({len} bytes) than the checkpoint says it was read ({}): it is not the input the checkpoint was taken on; start afresh with --reset",
            start.offset
        )));
    }
    let mut pos = start.offset as usize;
    let at = |offset: usize| LinePosition {
        input: start.input,
        offset: offset as u64,
        next_line: 0,
    };
    let mut next_line = start.next_line;
    let max_line = feed.max_line_bytes();
    while pos < len {
        feed.let_go();
        let limit = (pos + CHUNK_BYTES).min(len);
        let end = match memchr::memrchr(b'\n', &map[pos..limit]) {
            Some(nl) => pos + nl + 1,
            None => {
                // A line longer than a chunk, or the last line, without its newline.
                let line_end = memchr::memchr(b'\n', &map[limit..]).map_or(len, |nl| limit + nl);
                let after = (line_end + 1).min(len);
                // One byte more than the limit may be the `\r` of a `\r\n`, as for a stream.
                if line_end - pos > max_line + 1 {
                    let prefix = map[pos..pos + 4096.min(line_end - pos)].to_vec();
                    let long = (line_end - pos) as u64;
                    let ended = line_end < len;
                    feed.too_long(&origin, (next_line, long, ended), prefix, at(after))?;
                    next_line += 1;
                } else if line_end == len {
                    let mut last = map[pos..len].to_vec();
                    last.push(b'\n');
                    let data = ChunkData::Owned(last);
                    next_line +=
                        feed.lines(&origin, next_line, data, (len - pos) as u64, at(len))?;
                } else {
                    let data = ChunkData::Mapped(MappedRange::new(map.clone(), pos..after));
                    next_line +=
                        feed.lines(&origin, next_line, data, (after - pos) as u64, at(after))?;
                }
                progress.inspect(|pb| pb.inc((after - pos) as u64));
                pos = after;
                continue;
            }
        };
        let data = ChunkData::Mapped(MappedRange::new(map.clone(), pos..end));
        next_line += feed.lines(&origin, next_line, data, (end - pos) as u64, at(end))?;
        progress.inspect(|pb| pb.inc((end - pos) as u64));
        pos = end;
    }
    Ok(())
}

/// What the SIGBUS handler writes: the message naming the file mapped last.
static MESSAGE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static MESSAGE_LEN: AtomicUsize = AtomicUsize::new(0);

/// Makes a fault on a mapped file that was cut short end the run with exit 4 and a message
/// naming `origin`, instead of killing the process with SIGBUS.
fn guard_truncation(origin: &str) {
    let text = format!(
        "weir: cannot read {origin}: it was cut short while it was being read (or an input before it was)\n"
    );
    // Leaked: the handler may read it at any moment. One short message per input file.
    let text: &'static mut [u8] = Box::leak(text.into_bytes().into_boxed_slice());
    MESSAGE_LEN.store(0, Ordering::SeqCst);
    MESSAGE.store(text.as_mut_ptr(), Ordering::SeqCst);
    MESSAGE_LEN.store(text.len(), Ordering::SeqCst);
    static INSTALL: Once = Once::new();
    INSTALL.call_once(install_handler);
}

#[cfg(unix)]
fn install_handler() {
    extern "C" fn on_sigbus(_: libc::c_int) {
        let (text, len) = (
            MESSAGE.load(Ordering::SeqCst),
            MESSAGE_LEN.load(Ordering::SeqCst),
        );
        // SAFETY: write(2) and _exit(2) are async-signal-safe; `text` is leaked and `len` long.
        unsafe {
            if !text.is_null() {
                libc::write(2, text.cast(), len);
            }
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
