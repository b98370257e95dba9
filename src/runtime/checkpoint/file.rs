//! The checkpoint file: everything a restarted run needs, in one versioned, checksummed file,
//! replaced atomically so that a crash at any moment leaves a good checkpoint behind.
//!
//! State is kept **per input partition** (a file of a file source, a Kafka partition, a
//! Kinesis shard), each with its own position and its own operator state, so that a
//! partition's state can move to another instance when a consumer group rebalances. What is
//! not a partition's (the run's counters, a file sink's committed length) sits beside them.
//!
//! ```text
//! "WEIRCKPT"  magic, 8 bytes
//! u32 LE      format version (FORMAT)
//! u64 LE      length of the header (JSON, below)
//! header      {"weir":"0.1.0","command":"window","job":"...","taken_at_ms":...,
//!              "partitions":[{"partition":...,"position":...,"state_len":N},...],
//!              "shared_len":N,"sinks":[{"path":"out.ndjson","committed_len":N}]}
//! bytes       each partition's state, in the header's order, then the shared state
//!             (a command's state is postcard-encoded, `core::saved`; the counters JSON)
//! u32 LE      CRC-32 of everything before it
//! ```
//!
//! Writing: the new checkpoint goes to `PATH.tmp` and is fsync'd; the current `PATH` becomes
//! `PATH.prev`; `PATH.tmp` is renamed to `PATH`; the directory is fsync'd. Reading takes `PATH`,
//! or `PATH.prev` when `PATH` is missing, truncated or corrupt (a crash between the renames, a
//! disk that lost the tail), and says which.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

const MAGIC: &[u8; 8] = b"WEIRCKPT";
/// The layout above; a file of another format version is refused, never misread.
pub const FORMAT: u32 = 2;

/// One input partition, named so that the same partition is found again after a restart or on
/// another instance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartitionId {
    /// The `index`-th input of a file source (files are read in order), by its path.
    File { index: u32, path: String },
    /// A partition of a Kafka topic.
    Kafka { topic: String, partition: i32 },
    /// A shard of a Kinesis stream.
    Kinesis { stream: String, shard: String },
}

/// Where a partition's reading resumes: just past the last record the checkpoint covers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resume {
    /// A file: the byte offset (of the decompressed stream for gzip) and line number of the
    /// next line.
    File { offset: u64, line: u64 },
    /// A Kafka partition: the next offset to read.
    Kafka { offset: i64 },
    /// A Kinesis shard: after the record with this sequence number, or, within a KPL
    /// aggregate, after its user record with this subsequence number. (A shard read to its
    /// end is `Done`.)
    Kinesis {
        sequence: String,
        subsequence: Option<u64>,
    },
    /// Not read yet: start where the run's `--from` says.
    Start,
    /// Read to its end.
    Done,
    /// A Kinesis shard none of whose records were handled yet, read from the arrival time
    /// its reading began at (a relative `--from`, or `end`, fixed when the run started).
    KinesisFrom { arrival_ms: i64 },
}

/// A file sink's length when the checkpoint was taken: on restore the file is cut back to it,
/// so that output is exactly once for files.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SinkLength {
    pub path: String,
    pub committed_len: u64,
}

/// One partition's part of a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionCheckpoint {
    pub partition: PartitionId,
    pub resume: Resume,
    /// The operator's state for this partition, in the command's own encoding.
    pub state: Vec<u8>,
}

/// Everything a restart needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The weir version that wrote it.
    pub weir: String,
    pub command: String,
    /// What makes two runs the same job (the command's spec: keys, windows, aggregates,
    /// source): a checkpoint of another job is refused.
    pub job: String,
    /// The command line that wrote it, after the command's name: a refusal says which flags
    /// differ, as a user typed them.
    pub args: Vec<String>,
    pub taken_at_ms: i64,
    pub partitions: Vec<PartitionCheckpoint>,
    /// State that is no partition's: the run's counters, a command's shared tables.
    pub shared: Vec<u8>,
    pub sinks: Vec<SinkLength>,
}

#[derive(Serialize, Deserialize)]
struct Header {
    weir: String,
    command: String,
    job: String,
    /// Absent from checkpoints written before it was kept.
    #[serde(default)]
    args: Vec<String>,
    taken_at_ms: i64,
    partitions: Vec<PartitionHeader>,
    shared_len: u64,
    sinks: Vec<SinkLength>,
}

#[derive(Serialize, Deserialize)]
struct PartitionHeader {
    partition: PartitionId,
    resume: Resume,
    state_len: u64,
}

/// Passes bytes on, keeping their CRC-32.
struct Crc32Writer<W> {
    out: W,
    crc: crc32fast::Hasher,
}

impl<W: Write> Crc32Writer<W> {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.crc.update(bytes);
        self.out.write_all(bytes)
    }
}

impl Checkpoint {
    /// Writes the file's bytes to `out`.
    pub fn write_to(&self, out: impl Write) -> io::Result<()> {
        let header = Header {
            weir: self.weir.clone(),
            command: self.command.clone(),
            job: self.job.clone(),
            args: self.args.clone(),
            taken_at_ms: self.taken_at_ms,
            partitions: self
                .partitions
                .iter()
                .map(|p| PartitionHeader {
                    partition: p.partition.clone(),
                    resume: p.resume.clone(),
                    state_len: p.state.len() as u64,
                })
                .collect(),
            shared_len: self.shared.len() as u64,
            sinks: self.sinks.clone(),
        };
        let header = serde_json::to_vec(&header).expect("a header of plain fields serialises");
        // Written piece by piece, the states never copied: they can be hundreds of MB.
        let mut out = Crc32Writer {
            out,
            crc: crc32fast::Hasher::new(),
        };
        out.write_all(MAGIC)?;
        out.write_all(&FORMAT.to_le_bytes())?;
        out.write_all(&(header.len() as u64).to_le_bytes())?;
        out.write_all(&header)?;
        for p in &self.partitions {
            out.write_all(&p.state)?;
        }
        out.write_all(&self.shared)?;
        let crc = out.crc.finalize();
        out.out.write_all(&crc.to_le_bytes())
    }

    /// The file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_to(&mut out).expect("writes to memory succeed");
        out
    }

    /// Reads the file's bytes back, or says why they are not a whole checkpoint.
    pub fn decode(bytes: &[u8]) -> std::result::Result<Checkpoint, String> {
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            return Err("not a weir checkpoint".into());
        }
        if bytes.len() < 24 {
            return Err("truncated".into());
        }
        let format = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
        if format != FORMAT {
            return Err(format!(
                "checkpoint format {format}, this weir reads format {FORMAT}"
            ));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        if crc32fast::hash(body) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
            return Err("checksum mismatch (truncated or corrupted)".into());
        }
        let header_len = u64::from_le_bytes(body[12..20].try_into().expect("8 bytes"));
        let rest = &body[20..];
        let header_len = usize::try_from(header_len)
            .ok()
            .filter(|n| *n <= rest.len())
            .ok_or("header length past the end")?;
        let (header, mut data) = rest.split_at(header_len);
        let header: Header =
            serde_json::from_slice(header).map_err(|e| format!("bad header: {e}"))?;
        let mut take = |len: u64| -> std::result::Result<Vec<u8>, String> {
            let len = usize::try_from(len)
                .ok()
                .filter(|n| *n <= data.len())
                .ok_or("state length past the end")?;
            let (taken, left) = data.split_at(len);
            data = left;
            Ok(taken.to_vec())
        };
        let mut partitions = Vec::with_capacity(header.partitions.len());
        for p in header.partitions {
            partitions.push(PartitionCheckpoint {
                state: take(p.state_len)?,
                partition: p.partition,
                resume: p.resume,
            });
        }
        let shared = take(header.shared_len)?;
        if !data.is_empty() {
            return Err("bytes after the last state".into());
        }
        Ok(Checkpoint {
            weir: header.weir,
            command: header.command,
            job: header.job,
            args: header.args,
            taken_at_ms: header.taken_at_ms,
            partitions,
            shared,
            sinks: header.sinks,
        })
    }

    /// Refuses a checkpoint that another weir version, another command or another job wrote
    /// (exit 2): restoring it would misread its state.
    pub fn check_matches(
        &self,
        weir: &str,
        command: &str,
        job: &str,
        args: &[String],
    ) -> Result<()> {
        let refuse = |what: String| {
            Err(Error::Usage(format!(
                "the checkpoint was written by {what}; start afresh with --reset"
            )))
        };
        if self.weir != weir {
            return refuse(format!("weir {} (this is weir {weir})", self.weir));
        }
        if self.command != command {
            return refuse(format!("weir {} (this is weir {command})", self.command));
        }
        if self.job != job {
            return refuse(format!(
                "another job ({})",
                flags_that_differ(&self.args, args)
            ));
        }
        Ok(())
    }
}

/// Flags that change a job's result but not where it writes or how it reports.
const NOT_THE_JOB: [&str; 8] = [
    "-q",
    "--quiet",
    "--stats",
    "--checkpoint",
    "--checkpoint-interval",
    "--reset",
    "--progress",
    "--no-progress",
];

/// What differs between two command lines, as a user typed them: `--hop 10m --slide 1m then,
/// --tumbling 1m now`. Flags are compared with their values, in any order; an input (a
/// SOURCE) counts as a flag of its own.
pub fn flags_that_differ(then: &[String], now: &[String]) -> String {
    let (then, now) = (flag_groups(then), flag_groups(now));
    let only = |a: &[String], b: &[String]| {
        let gone: Vec<&str> = a
            .iter()
            .filter(|g| !b.contains(g))
            .map(String::as_str)
            .collect();
        gone.join(" ")
    };
    match (only(&then, &now), only(&now, &then)) {
        _ if then.is_empty() => "its command line was not kept".into(),
        (t, n) if t.is_empty() && n.is_empty() => {
            "the same flags: another input's identity, or another build".into()
        }
        (t, n) if t.is_empty() => format!("{n} now, not then"),
        (t, n) if n.is_empty() => format!("{t} then, not now"),
        (t, n) => format!("{t} then, {n} now"),
    }
}

/// A command line cut into flags with their value (`--key merchant_id`), inputs alone. A
/// flag takes the word after it unless that is a flag (weir's lists are comma-separated), so
/// an input after a switch (`--count in.ndjson`) goes with it: shown so, still told apart.
fn flag_groups(args: &[String]) -> Vec<String> {
    // `-8h` or `-1` is a value; `-e` or `--key` a flag.
    let is_flag = |a: &str| {
        a.len() > 1 && a.starts_with('-') && !a[1..].starts_with(|c: char| c.is_ascii_digit())
    };
    let mut groups: Vec<Vec<&str>> = Vec::new();
    let mut in_flag = false;
    for a in args {
        if is_flag(a) {
            groups.push(a.splitn(2, '=').collect());
            in_flag = !a.contains('=');
        } else if in_flag {
            groups.last_mut().expect("a flag before").push(a);
            in_flag = false;
        } else {
            groups.push(vec![a]);
        }
    }
    groups
        .into_iter()
        .filter(|g| !NOT_THE_JOB.contains(&g[0]))
        .map(|g| g.join(" "))
        .collect()
}

/// Where a checkpoint lives, with its temporary and previous files beside it.
#[derive(Clone, Debug)]
pub struct CheckpointFile {
    path: PathBuf,
    /// The current file was found unusable and the previous one read instead: the next write
    /// must not make the bad one the previous.
    current_bad: bool,
}

/// What reading a checkpoint found.
#[derive(Debug)]
pub enum Loaded {
    /// No checkpoint yet: a fresh start.
    Fresh,
    Current(Checkpoint),
    /// The current file was unusable for the given reason; the previous one was good.
    Previous(Checkpoint, String),
}

impl CheckpointFile {
    pub fn new(path: &Path) -> CheckpointFile {
        CheckpointFile {
            path: path.to_path_buf(),
            current_bad: false,
        }
    }

    fn beside(&self, suffix: &str) -> PathBuf {
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(suffix);
        self.path.with_file_name(name)
    }

    /// Replaces the checkpoint with `checkpoint`, atomically: a crash at any moment leaves
    /// either this one or the one before readable.
    pub fn write(&mut self, checkpoint: &Checkpoint) -> Result<()> {
        let cannot = |e: io::Error| {
            Error::Unreachable(format!(
                "cannot write checkpoint {}: {e}",
                self.path.display()
            ))
        };
        let tmp = self.beside(".tmp");
        let file = File::create(&tmp).map_err(cannot)?;
        let mut out = io::BufWriter::with_capacity(1 << 20, file);
        checkpoint.write_to(&mut out).map_err(cannot)?;
        let file = out.into_inner().map_err(|e| cannot(e.into_error()))?;
        file.sync_all().map_err(cannot)?;
        drop(file);
        // The current one becomes the previous; a bad one is dropped instead, so that the
        // good previous one stays until this one is in place.
        let moved = match self.current_bad {
            true => fs::remove_file(&self.path),
            false => fs::rename(&self.path, self.beside(".prev")),
        };
        match moved {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(cannot(e)),
        }
        fs::rename(&tmp, &self.path).map_err(cannot)?;
        self.current_bad = false;
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        File::open(dir).and_then(|d| d.sync_all()).map_err(cannot)
    }

    /// Reads the checkpoint: the current file, or the previous one when the current is
    /// missing or unusable. Neither usable (but one there) is an error naming both reasons.
    pub fn read(&mut self) -> Result<Loaded> {
        let current = read_one(&self.path);
        let reason = match current {
            Some(Ok(c)) => return Ok(Loaded::Current(c)),
            Some(Err(reason)) => Some(reason),
            None => None,
        };
        self.current_bad = reason.is_some();
        let previous = self.beside(".prev");
        match (read_one(&previous), reason) {
            (None, None) => Ok(Loaded::Fresh),
            (Some(Ok(c)), reason) => Ok(Loaded::Previous(
                c,
                reason.unwrap_or_else(|| "it is missing".into()),
            )),
            (None, Some(reason)) => Err(Error::Usage(format!(
                "checkpoint {}: {reason}; start afresh with --reset",
                self.path.display()
            ))),
            (Some(Err(prev)), reason) => Err(Error::Usage(format!(
                "checkpoint {}: {}; and {}: {prev}; start afresh with --reset",
                self.path.display(),
                reason.unwrap_or_else(|| "missing".into()),
                previous.display()
            ))),
        }
    }

    /// Removes the checkpoint and the previous one (`--reset`).
    pub fn reset(&self) -> Result<()> {
        for path in [self.path.clone(), self.beside(".prev"), self.beside(".tmp")] {
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(Error::Unreachable(format!(
                        "cannot remove {}: {e}",
                        path.display()
                    )))
                }
            }
        }
        Ok(())
    }
}

/// One file's checkpoint: `None` when there is no file.
fn read_one(path: &Path) -> Option<std::result::Result<Checkpoint, String>> {
    match fs::read(path) {
        Ok(bytes) => Some(Checkpoint::decode(&bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => Some(Err(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample(n: u8) -> Checkpoint {
        Checkpoint {
            weir: "0.1.0".into(),
            command: "window".into(),
            job: "tumbling 1m by k".into(),
            args: Vec::new(),
            taken_at_ms: 1_767_225_600_000 + n as i64,
            partitions: vec![
                PartitionCheckpoint {
                    partition: PartitionId::Kafka {
                        topic: "t".into(),
                        partition: 3,
                    },
                    resume: Resume::Kafka { offset: 1042 },
                    state: vec![n; 5],
                },
                PartitionCheckpoint {
                    partition: PartitionId::File {
                        index: 0,
                        path: "in.ndjson.gz".into(),
                    },
                    resume: Resume::File {
                        offset: 4096,
                        line: 17,
                    },
                    state: Vec::new(),
                },
                PartitionCheckpoint {
                    partition: PartitionId::Kinesis {
                        stream: "s".into(),
                        shard: "shardId-000000000001".into(),
                    },
                    resume: Resume::Kinesis {
                        sequence: "49590338271490256608559692538361571095921575989136588898".into(),
                        subsequence: Some(2),
                    },
                    state: vec![1, 2, 3],
                },
                PartitionCheckpoint {
                    partition: PartitionId::Kinesis {
                        stream: "s".into(),
                        shard: "shardId-000000000002".into(),
                    },
                    resume: Resume::KinesisFrom {
                        arrival_ms: 1_767_225_600_000,
                    },
                    state: Vec::new(),
                },
            ],
            shared: b"counters".to_vec(),
            sinks: vec![SinkLength {
                path: "out.ndjson".into(),
                committed_len: 123,
            }],
        }
    }

    #[test]
    fn round_trips() {
        let c = sample(7);
        assert_eq!(Checkpoint::decode(&c.encode()), Ok(c));
    }

    #[test]
    fn every_truncation_and_every_flipped_bit_is_refused() {
        let bytes = sample(1).encode();
        for len in 0..bytes.len() {
            assert!(Checkpoint::decode(&bytes[..len]).is_err(), "cut at {len}");
        }
        for at in 0..bytes.len() {
            for bit in 0..8 {
                let mut bad = bytes.clone();
                bad[at] ^= 1 << bit;
                assert!(Checkpoint::decode(&bad).is_err(), "bit {bit} of byte {at}");
            }
        }
    }

    #[test]
    fn another_version_command_or_job_is_refused_with_exit_2() {
        let c = sample(1);
        assert!(c
            .check_matches("0.1.0", "window", "tumbling 1m by k", &[])
            .is_ok());
        for (weir, command, job) in [
            ("0.2.0", "window", "tumbling 1m by k"),
            ("0.1.0", "dedupe", "tumbling 1m by k"),
            ("0.1.0", "window", "tumbling 5m by k"),
        ] {
            let e = c.check_matches(weir, command, job, &[]).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{e}");
            assert!(e.to_string().contains("--reset"), "{e}");
        }
        let mut other_format = c.encode();
        other_format[8] = FORMAT as u8 + 1;
        let e = Checkpoint::decode(&other_format).unwrap_err();
        assert!(e.contains(&format!("format {}", FORMAT + 1)), "{e}");
    }

    #[test]
    fn a_refusal_names_the_flags_that_differ_as_typed() {
        let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let then = words("in.ndjson --time t --hop 10m --slide 1m --count --offset -8h -q");
        let now = words("--time=t in.ndjson --tumbling 1m --count --offset -8h --stats s.json");
        assert_eq!(
            flags_that_differ(&then, &now),
            "--hop 10m --slide 1m then, --tumbling 1m now"
        );
        assert_eq!(
            flags_that_differ(&words("a.ndjson --key k"), &words("b.ndjson --key k")),
            "a.ndjson then, b.ndjson now"
        );
        assert_eq!(
            flags_that_differ(&words("--count"), &words("--count --sum v")),
            "--sum v now, not then"
        );
        assert_eq!(
            flags_that_differ(&[], &words("--count")),
            "its command line was not kept"
        );
    }

    #[test]
    fn the_previous_checkpoint_stands_in_for_a_bad_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.ckpt");
        let mut file = CheckpointFile::new(&path);
        assert!(matches!(file.read().unwrap(), Loaded::Fresh));
        file.write(&sample(1)).unwrap();
        file.write(&sample(2)).unwrap();
        match file.read().unwrap() {
            Loaded::Current(c) => assert_eq!(c, sample(2)),
            other => panic!("{other:?}"),
        }
        // A torn write: the current file lost its tail.
        let bytes = fs::read(&path).unwrap();
        fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        match file.read().unwrap() {
            Loaded::Previous(c, why) => {
                assert_eq!(c, sample(1));
                assert!(why.contains("checksum"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        // The next checkpoint drops the bad one rather than make it the previous: a crash
        // while writing it still finds a good one.
        file.write(&sample(3)).unwrap();
        fs::write(&path, b"torn").unwrap();
        match file.read().unwrap() {
            Loaded::Previous(c, _) => assert_eq!(c, sample(1)),
            other => panic!("{other:?}"),
        }
        // A crash between the two renames: only the previous one is there.
        fs::remove_file(&path).unwrap();
        assert!(matches!(file.read().unwrap(), Loaded::Previous(..)));
        // Both bad: a clear error, exit 2.
        fs::write(&path, b"WEIRCKPT junk").unwrap();
        fs::write(dir.path().join("run.ckpt.prev"), b"junk").unwrap();
        let e = file.read().unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("not a weir checkpoint"), "{e}");
        file.reset().unwrap();
        assert!(matches!(file.read().unwrap(), Loaded::Fresh));
    }

    proptest! {
        #[test]
        fn any_states_round_trip(
            states in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..6),
            shared in prop::collection::vec(any::<u8>(), 0..64),
            offsets in prop::collection::vec(any::<i64>(), 6),
        ) {
            let mut c = sample(0);
            c.partitions = states
                .into_iter()
                .enumerate()
                .map(|(i, state)| PartitionCheckpoint {
                    partition: PartitionId::Kafka { topic: "t".into(), partition: i as i32 },
                    resume: Resume::Kafka { offset: offsets[i] },
                    state,
                })
                .collect();
            c.shared = shared;
            prop_assert_eq!(Checkpoint::decode(&c.encode()), Ok(c));
        }
    }
}
