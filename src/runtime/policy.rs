//! The error policy: `--on-error fail|skip` and `--dead-letter PATH`.

use std::path::{Path, PathBuf};

use base64::Engine;
use serde_json::{json, Map, Value};

use super::sink::{Sink, SinkLength};
use super::summary::Counters;
use crate::core::record::{Position, RecordError};
use crate::error::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OnError {
    /// Stop at the first bad record, exit 3.
    Fail,
    /// Count the bad record (and dead-letter it) and go on.
    Skip,
}

/// How much of an over-long line a dead letter keeps.
const DEAD_LETTER_PREFIX: usize = 4096;

pub struct ErrorPolicy {
    on_error: OnError,
    dead_letter: Option<Box<dyn Sink>>,
    /// A dead letter's JSON, reused.
    entry: Vec<u8>,
}

/// The error policy as the command line gives it, checked, with nothing opened yet.
#[derive(Clone, Debug)]
pub struct PolicyPlan {
    pub on_error: OnError,
    pub dead_letter: Option<PathBuf>,
}

impl PolicyPlan {
    /// `--dead-letter` without `--on-error` means skip: the record is kept there, not lost.
    pub fn new(on_error: Option<OnError>, dead_letter: Option<&Path>) -> PolicyPlan {
        let on_error = on_error.unwrap_or(if dead_letter.is_some() {
            OnError::Skip
        } else {
            OnError::Fail
        });
        PolicyPlan {
            on_error,
            dead_letter: dead_letter.map(Path::to_path_buf),
        }
    }
}

impl ErrorPolicy {
    /// The policy `on_error`, writing dead letters to `dead_letter` (opened by the caller:
    /// the file `PolicyPlan::dead_letter` names).
    pub fn new(on_error: OnError, dead_letter: Option<Box<dyn Sink>>) -> ErrorPolicy {
        ErrorPolicy {
            on_error,
            dead_letter,
            entry: Vec::new(),
        }
    }

    /// Handles one bad record: counts it, dead-letters it, and fails or lets the run go on.
    pub fn handle(
        &mut self,
        position: &Position,
        record: &[u8],
        error: &RecordError,
        counters: &mut Counters,
    ) -> Result<()> {
        counters.bad += 1;
        if let Some(out) = &mut self.dead_letter {
            self.entry.clear();
            let entry = dead_letter_entry(position, record, error);
            serde_json::to_writer(&mut self.entry, &entry).expect("a JSON value serialises");
            out.write_line(&self.entry)?;
        }
        match self.on_error {
            OnError::Fail => Err(Error::BadInput {
                position: position.to_string(),
                reason: error.to_string(),
            }),
            OnError::Skip => Ok(()),
        }
    }

    /// Flushes and syncs the dead letters; their file's length, for a checkpoint.
    /// Whether bad records go to a dead-letter sink (`--dead-letter`).
    pub fn dead_letters(&self) -> bool {
        self.dead_letter.is_some()
    }

    pub fn durable(&mut self) -> Result<Option<SinkLength>> {
        match &mut self.dead_letter {
            Some(out) => out.durable(),
            None => Ok(None),
        }
    }

    pub fn flush(&mut self) -> Result<()> {
        match &mut self.dead_letter {
            Some(out) => out.flush(),
            None => Ok(()),
        }
    }

    /// Flushes the dead letters, and makes a compressed file whole: at the end of the run.
    pub fn close(&mut self) -> Result<()> {
        match &mut self.dead_letter {
            Some(out) => out.close(),
            None => Ok(()),
        }
    }
}

/// `{"position":"in.ndjson:2","source":"in.ndjson","line":2,"reason":"...","record":"..."}`;
/// a record that is not UTF-8 is kept as `record_base64`.
pub fn dead_letter_entry(position: &Position, record: &[u8], error: &RecordError) -> Value {
    let mut entry = Map::new();
    entry.insert("position".into(), json!(position.to_string()));
    match position {
        Position::Line { source, line } => {
            entry.insert("source".into(), json!(source.as_ref()));
            entry.insert("line".into(), json!(line));
        }
        Position::Kafka {
            topic,
            partition,
            offset,
        } => {
            entry.insert("topic".into(), json!(topic.as_ref()));
            entry.insert("partition".into(), json!(partition));
            entry.insert("offset".into(), json!(offset));
        }
        Position::Kinesis {
            stream,
            shard,
            sequence,
            subsequence,
        } => {
            entry.insert("stream".into(), json!(stream.as_ref()));
            entry.insert("shard".into(), json!(shard.as_ref()));
            entry.insert("sequence".into(), json!(sequence));
            if let Some(sub) = subsequence {
                entry.insert("subsequence".into(), json!(sub));
            }
        }
    }
    entry.insert("reason".into(), json!(error.to_string()));
    let whole = record.len();
    let (record, truncated) =
        if matches!(error, RecordError::LineTooLong { .. }) && whole > DEAD_LETTER_PREFIX {
            (utf8_prefix(record, DEAD_LETTER_PREFIX), true)
        } else {
            (record, false)
        };
    match std::str::from_utf8(record) {
        Ok(text) => entry.insert("record".into(), json!(text)),
        Err(_) => entry.insert(
            "record_base64".into(),
            json!(base64::engine::general_purpose::STANDARD.encode(record)),
        ),
    };
    if truncated {
        entry.insert("truncated".into(), json!(true));
        entry.insert("record_bytes".into(), json!(whole));
    }
    Value::Object(entry)
}

/// At most `max` bytes of `record`, not cutting a UTF-8 character in two (a text record
/// stays text).
fn utf8_prefix(record: &[u8], max: usize) -> &[u8] {
    let cut = &record[..max];
    match std::str::from_utf8(cut) {
        Err(e) if e.error_len().is_none() => &cut[..e.valid_up_to()],
        _ => cut,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn pos() -> Position {
        Position::Line {
            source: Arc::from("<stdin>"),
            line: 2,
        }
    }

    #[test]
    fn entries_keep_position_reason_and_record() {
        let e = dead_letter_entry(&pos(), b"not json", &RecordError::NotObject);
        assert_eq!(
            e,
            json!({"position":"<stdin>:2","source":"<stdin>","line":2,"reason":"not a JSON object","record":"not json"})
        );
        let e = dead_letter_entry(&pos(), b"\xff", &RecordError::NotUtf8 { valid_up_to: 0 });
        assert_eq!(e["record_base64"], json!("/w=="));
    }

    #[test]
    fn an_oversize_record_is_cut_on_a_character_and_marked_with_its_length() {
        let mut long = "a".repeat(DEAD_LETTER_PREFIX - 1).into_bytes();
        long.extend_from_slice("é and more".as_bytes());
        let too_long = RecordError::LineTooLong {
            len: long.len() as u64,
            max: 10,
        };
        let e = dead_letter_entry(&pos(), &long, &too_long);
        assert_eq!(e["truncated"], json!(true));
        assert_eq!(e["record_bytes"], json!(long.len()));
        // The two-byte 'é' would straddle the cut: the text ends before it.
        assert_eq!(e["record"].as_str().unwrap().len(), DEAD_LETTER_PREFIX - 1);
    }

    #[test]
    fn fail_stops_skip_counts() {
        let mut c = Counters::default();
        let mut fail = ErrorPolicy::new(PolicyPlan::new(None, None).on_error, None);
        let err = fail
            .handle(&pos(), b"x", &RecordError::NotObject, &mut c)
            .unwrap_err();
        assert_eq!(err.to_string(), "bad input at <stdin>:2: not a JSON object");
        let mut skip = ErrorPolicy::new(PolicyPlan::new(Some(OnError::Skip), None).on_error, None);
        skip.handle(&pos(), b"x", &RecordError::NotObject, &mut c)
            .unwrap();
        assert_eq!(c.bad, 2);
    }
}
