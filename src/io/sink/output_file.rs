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
use std::io::{self, Seek, Write};
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
    /// A member failed to start or end: the file is unusable.
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
        sync_len(end_member(&mut self.state.borrow_mut())?)
    }

    /// Ends the member being written, so the file is whole: at the end of the run. A
    /// compressed file that got no record still gets one empty member: `gzip -d` refuses a
    /// file of no bytes.
    pub fn close(&self) -> io::Result<()> {
        let mut state = self.state.borrow_mut();
        if self.codec != Codec::Plain && end_member(&mut state)?.stream_position()? == 0 {
            start_member(self.codec, &mut state)?;
        }
        end_member(&mut state).map(drop)
    }
}

/// Starts a member on an idle compressed file.
fn start_member(codec: Codec, state: &mut State) -> io::Result<()> {
    let State::Idle(file) = std::mem::replace(state, State::Broken) else {
        unreachable!("a member starts on an idle file")
    };
    *state = match codec {
        Codec::Gzip => State::Gzip(Box::new(GzEncoder::new(
            file,
            flate2::Compression::default(),
        ))),
        Codec::Zstd => {
            let mut encoder = zstd::stream::write::Encoder::new(file, ZSTD_LEVEL)?;
            encoder.include_checksum(true)?;
            State::Zstd(Box::new(encoder))
        }
        Codec::Plain => unreachable!("a plain file has no members"),
    };
    Ok(())
}

/// Ends the member being written, if any; the file beneath, idle.
fn end_member(state: &mut State) -> io::Result<&mut File> {
    let file = match std::mem::replace(state, State::Broken) {
        State::Idle(file) => file,
        State::Gzip(encoder) => encoder.finish()?,
        State::Zstd(encoder) => encoder.finish()?,
        State::Broken => return Err(broken()),
    };
    *state = State::Idle(file);
    match state {
        State::Idle(file) => Ok(file),
        _ => unreachable!("just set"),
    }
}

fn broken() -> io::Error {
    io::Error::other("an earlier write to this file failed")
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let state = self.state.get_mut();
        if self.codec != Codec::Plain && matches!(state, State::Idle(_)) {
            start_member(self.codec, state)?;
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
    use proptest::prelude::*;
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

    #[derive(Clone, Debug)]
    enum Op {
        Write(Vec<u8>),
        Commit,
        /// The run is killed: what follows the last commit is lost, and a new run opens
        /// the file cut back to it.
        Kill,
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        let op = prop_oneof![
            4 => proptest::collection::vec(any::<u8>(), 0..300).prop_map(Op::Write),
            2 => Just(Op::Commit),
            1 => Just(Op::Kill),
        ];
        proptest::collection::vec(op, 0..40)
    }

    fn text_of(path: &Path, bytes: &[u8]) -> Vec<u8> {
        let mut text = Vec::new();
        match Codec::of_path(path) {
            Codec::Gzip => {
                flate2::read::MultiGzDecoder::new(bytes)
                    .read_to_end(&mut text)
                    .unwrap();
            }
            Codec::Zstd => text = zstd::stream::decode_all(bytes).unwrap(),
            Codec::Plain => text = bytes.to_vec(),
        }
        text
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Whatever the writes, commits and kills, the file's text is every write up to
        /// each run's last commit, then the last run's writes: what a checkpointed run keeps.
        #[test]
        fn a_file_killed_and_cut_back_holds_what_was_committed(ops in ops()) {
            let dir = tempfile::tempdir().unwrap();
            for name in ["out.ndjson", "out.gz", "out.zst"] {
                let path = dir.path().join(name);
                let mut out = OutputFile::open(&path, None).unwrap();
                let (mut committed, mut committed_len, mut pending) = (Vec::new(), 0, Vec::new());
                for op in &ops {
                    match op {
                        Op::Write(bytes) => {
                            out.write_all(bytes).unwrap();
                            pending.extend_from_slice(bytes);
                        }
                        Op::Commit => {
                            committed_len = out.commit().unwrap();
                            committed.append(&mut pending);
                        }
                        Op::Kill => {
                            // A killed run ends nothing: forget the encoder unfinished.
                            std::mem::forget(out);
                            pending.clear();
                            out = OutputFile::open(&path, Some(committed_len)).unwrap();
                        }
                    }
                }
                out.close().unwrap();
                drop(out);
                committed.append(&mut pending);
                let text = text_of(&path, &std::fs::read(&path).unwrap());
                prop_assert_eq!(text, committed, "{}", name);
            }
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
