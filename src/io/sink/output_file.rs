//! An output file, compressed when its name ends in `.gz` or `.zst`.
//!
//! A compressed file is written as a series of gzip members or zstd frames: each checkpoint
//! (`commit`) and the end of the run (`close`) end the one being written, so the length a
//! checkpoint records always falls between two of them. A restored run cuts the file back
//! there and appends new ones, and the file decompresses to exactly what one uninterrupted
//! run writes. Readers treat concatenated members and frames as one stream (`gzip -d`,
//! `zstd -d`, weir's own input).

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use flate2::write::GzEncoder;

use crate::runtime::checkpoint::{open_output, sync_len};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    Plain,
    Gzip,
    Zstd,
}

impl Codec {
    /// The codec a file's name asks for: `.gz` gzip, `.zst` zstd, else none.
    pub fn of_path(path: &Path) -> Codec {
        let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if extension.eq_ignore_ascii_case("gz") {
            Codec::Gzip
        } else if extension.eq_ignore_ascii_case("zst") {
            Codec::Zstd
        } else {
            Codec::Plain
        }
    }
}

/// The level `zstd` itself uses by default.
const ZSTD_LEVEL: i32 = 3;

pub struct OutputFile {
    codec: Codec,
    // A RefCell so that a sink seen only through the csv crate's writer (which lends no
    // `&mut`) can still end its member for a checkpoint; writes go through `get_mut`, free.
    state: RefCell<State>,
}

enum State {
    /// Between members (and always, for a plain file).
    Idle(File),
    // Boxed: a deflate state is hundreds of bytes, and a sink is moved about whole.
    Gzip(Box<GzEncoder<File>>),
    Zstd(Box<zstd::stream::write::Encoder<'static, File>>),
    /// A member failed to end: the file is unusable.
    Broken,
}

impl OutputFile {
    /// Creates the file at `path`, or restoring a checkpoint, opens it cut back to the
    /// `committed` length; compressed as its name says.
    pub fn open(path: &Path, committed: Option<u64>) -> io::Result<OutputFile> {
        let file = open_output(path, committed)?;
        Ok(OutputFile {
            codec: Codec::of_path(path),
            state: RefCell::new(State::Idle(file)),
        })
    }

    /// Stdout or another handle, written as it is.
    pub fn plain(file: File) -> OutputFile {
        OutputFile {
            codec: Codec::Plain,
            state: RefCell::new(State::Idle(file)),
        }
    }

    /// Ends the member being written and syncs the file; its length, for a checkpoint.
    /// The caller has flushed its buffer into this file first.
    pub fn commit(&self) -> io::Result<u64> {
        let mut state = self.state.borrow_mut();
        end_member(&mut state)?;
        match &*state {
            State::Idle(file) => sync_len(file),
            _ => unreachable!("end_member leaves the file idle or fails"),
        }
    }

    /// Ends the member being written, so the file is whole: at the end of the run.
    pub fn close(&self) -> io::Result<()> {
        end_member(&mut self.state.borrow_mut())
    }
}

fn end_member(state: &mut State) -> io::Result<()> {
    let file = match std::mem::replace(state, State::Broken) {
        State::Idle(file) => file,
        State::Gzip(encoder) => encoder.finish()?,
        State::Zstd(encoder) => encoder.finish()?,
        State::Broken => return Err(broken()),
    };
    *state = State::Idle(file);
    Ok(())
}

fn broken() -> io::Error {
    io::Error::other("an earlier write to this file failed")
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let state = self.state.get_mut();
        if let State::Idle(_) = state {
            if self.codec != Codec::Plain {
                let State::Idle(file) = std::mem::replace(state, State::Broken) else {
                    unreachable!()
                };
                *state = match self.codec {
                    Codec::Gzip => State::Gzip(Box::new(GzEncoder::new(
                        file,
                        flate2::Compression::default(),
                    ))),
                    Codec::Zstd => {
                        let mut encoder = zstd::stream::write::Encoder::new(file, ZSTD_LEVEL)?;
                        encoder.include_checksum(true)?;
                        State::Zstd(Box::new(encoder))
                    }
                    Codec::Plain => unreachable!(),
                };
            }
        }
        match state {
            State::Idle(file) => file.write(buf),
            State::Gzip(encoder) => encoder.write(buf),
            State::Zstd(encoder) => encoder.write(buf),
            State::Broken => Err(broken()),
        }
    }

    /// A plain file has no buffer of its own. A compressor's is left alone: forcing out a
    /// block at every flush (the input idling, a replay's wait) would cost compression, and
    /// a member is whole only once ended anyway.
    fn flush(&mut self) -> io::Result<()> {
        match self.state.get_mut() {
            State::Broken => Err(broken()),
            _ => Ok(()),
        }
    }
}

impl Drop for OutputFile {
    /// Ends the member on the way out of a run that failed before `close` (its error is
    /// the one reported), so what was written still decompresses.
    fn drop(&mut self) {
        let _ = end_member(self.state.get_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn the_name_says_the_codec() {
        assert_eq!(Codec::of_path(Path::new("a.ndjson.gz")), Codec::Gzip);
        assert_eq!(Codec::of_path(Path::new("a.ZST")), Codec::Zstd);
        assert_eq!(Codec::of_path(Path::new("a.ndjson")), Codec::Plain);
        assert_eq!(Codec::of_path(Path::new("gz")), Codec::Plain);
        assert_eq!(Codec::of_path(Path::new("a.tgz")), Codec::Plain);
    }

    /// Commits end members where they fall, add nothing when nothing was written since the
    /// last, and a restored file cut back to a commit reads as one stream.
    #[test]
    fn commits_fall_between_members_and_a_cut_file_reads_as_one_stream() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["out.gz", "out.zst"] {
            let path = dir.path().join(name);
            let mut out = OutputFile::open(&path, None).unwrap();
            out.write_all(b"one\n").unwrap();
            let first = out.commit().unwrap();
            assert!(first > 0, "{name}");
            assert_eq!(
                out.commit().unwrap(),
                first,
                "{name}: an empty member was written"
            );
            out.write_all(b"two\n").unwrap();
            out.commit().unwrap();
            out.write_all(b"lost\n").unwrap();
            drop(out);
            // A restored run that committed after "one": "two" and "lost" are cut off.
            let mut out = OutputFile::open(&path, Some(first)).unwrap();
            out.write_all(b"three\n").unwrap();
            out.close().unwrap();
            drop(out);
            let bytes = std::fs::read(&path).unwrap();
            let mut text = String::new();
            if name.ends_with(".gz") {
                flate2::read::MultiGzDecoder::new(&bytes[..])
                    .read_to_string(&mut text)
                    .unwrap();
            } else {
                text = String::from_utf8(zstd::stream::decode_all(&bytes[..]).unwrap()).unwrap();
            }
            assert_eq!(text, "one\nthree\n", "{name}");
        }
    }

    #[test]
    fn a_plain_file_is_written_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.ndjson");
        let mut out = OutputFile::open(&path, None).unwrap();
        out.write_all(b"{}\n").unwrap();
        assert_eq!(out.commit().unwrap(), 3);
        drop(out);
        assert_eq!(std::fs::read(&path).unwrap(), b"{}\n");
    }
}
