//! Lines to stdout or a file, through one buffer: flushed at every line on a terminal, else
//! when the buffer fills, the input idles or the run ends.

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::os::fd::AsFd;
use std::path::Path;

use super::output_file::OutputFile;
use crate::error::{Error, Fault, Result};
use crate::runtime::sink::{Outgoing, Sink, SinkLength};

const OUT_BUFFER: usize = 256 * 1024;

pub struct FileSink {
    out: BufWriter<OutputFile>,
    pub(super) name: String,
    pub(super) line_buffered: bool,
}

impl FileSink {
    pub fn stdout() -> Result<FileSink> {
        // Our own unbuffered handle on fd 1: std's Stdout is line-buffered, which would split
        // every block write at newlines.
        let fd = io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| Error::Unreachable(format!("cannot use stdout: {e}")))?;
        Ok(FileSink {
            out: BufWriter::with_capacity(OUT_BUFFER, OutputFile::plain(File::from(fd))),
            name: "stdout".into(),
            line_buffered: io::stdout().is_terminal(),
        })
    }

    /// Creates the file at `path`, or restoring a checkpoint, opens it cut back to the
    /// length the checkpoint committed; compressed when its name ends in `.gz` or `.zst`.
    /// `what` names the file in an error ("output file").
    pub fn open(path: &Path, what: &str, committed: Option<u64>) -> Result<FileSink> {
        let file = OutputFile::open(path, committed).map_err(|e| {
            Error::Unreachable(format!("cannot create {what} {}: {e}", path.display()))
        })?;
        Ok(FileSink {
            out: BufWriter::with_capacity(OUT_BUFFER, file),
            name: path.display().to_string(),
            line_buffered: false,
        })
    }

    /// Syncs what was flushed (a compressed file's member ended first); the file's length.
    pub fn synced_len(&self) -> Result<u64> {
        self.out
            .get_ref()
            .commit()
            .map_err(|e| Error::write(&self.name, e))
    }

    /// Syncs what was flushed; the file's path and length (none for stdout).
    pub(super) fn synced(&self) -> Result<Option<SinkLength>> {
        if self.name == "stdout" {
            return Ok(None);
        }
        Ok(Some(SinkLength {
            committed_len: self.synced_len()?,
            path: self.name.clone(),
        }))
    }

    /// Makes a compressed file whole, its buffer flushed already: at the end of the run.
    pub(super) fn end(&self) -> Result<()> {
        self.out
            .get_ref()
            .close()
            .map_err(|e| Error::write(&self.name, e))
    }

    pub(super) fn writer(&mut self) -> &mut BufWriter<OutputFile> {
        &mut self.out
    }
}

impl Sink for FileSink {
    #[inline]
    fn write_record(&mut self, line: &[u8]) -> Result<(), Fault> {
        let out = &mut self.out;
        let result = out.write_all(line).and_then(|_| out.write_all(b"\n"));
        result.map_err(|e| Error::write(&self.name, e))?;
        if self.line_buffered {
            self.flush()?;
        }
        Ok(())
    }

    /// A file takes a record's value as its line.
    fn send(&mut self, record: &Outgoing<'_>) -> Result<(), Fault> {
        self.write_record(record.value.unwrap_or(b"null"))
    }

    fn write_raw(&mut self, bytes: &[u8]) -> Result<()> {
        self.out
            .write_all(bytes)
            .map_err(|e| Error::write(&self.name, e))
    }

    fn flush(&mut self) -> Result<()> {
        self.out.flush().map_err(|e| Error::write(&self.name, e))
    }

    fn idle(&mut self) -> Result<()> {
        self.flush()
    }

    fn durable(&mut self) -> Result<Option<SinkLength>> {
        self.flush()?;
        self.synced()
    }

    fn close(&mut self) -> Result<()> {
        self.flush()?;
        self.end()
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}
