//! Records: one JSON object per line, dotted field paths, and record positions.
//!
//! The extractor validates a whole line as JSON in one pass (core::scan) and hands back where
//! the fields a command asked for lie in the line. Nothing else is materialised.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::de::{Deserializer, Visitor};

use super::scan::{scan, special_offset, PathTrie, Scanned, Shape, Span, NO_PATHS};
use super::time::{fast_rfc3339, parse_time_number, parse_time_str, Millis, TimeError, TimeFormat};

/// Where a record came from, for error messages and dead letters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Position {
    /// Line `line` (1-based) of a file, or of stdin when `source` is `<stdin>`.
    Line { source: Arc<str>, line: u64 },
    Kafka {
        topic: Arc<str>,
        partition: i32,
        offset: i64,
    },
    Kinesis {
        stream: Arc<str>,
        shard: Arc<str>,
        sequence: String,
        /// A user record's place in a KPL aggregate.
        subsequence: Option<u64>,
    },
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::Line { source, line } => write!(f, "{source}:{line}"),
            Position::Kafka {
                topic,
                partition,
                offset,
            } => {
                write!(f, "{topic} partition {partition} offset {offset}")
            }
            Position::Kinesis {
                stream,
                shard,
                sequence,
                subsequence,
            } => {
                write!(f, "{stream} shard {shard} sequence {sequence}")?;
                match subsequence {
                    Some(sub) => write!(f, " subsequence {sub}"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// A dotted path into a record: `value.occurred_at`, `user.id`. A segment may contain a
/// literal dot when escaped as `\.`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldPath {
    text: String,
    segments: Vec<String>,
}

impl FieldPath {
    pub fn parse(text: &str) -> Result<FieldPath, String> {
        let mut segments = vec![String::new()];
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some(next) => segments.last_mut().unwrap().push(next),
                    None => segments.last_mut().unwrap().push('\\'),
                },
                '.' => segments.push(String::new()),
                c => segments.last_mut().unwrap().push(c),
            }
        }
        if segments.iter().any(String::is_empty) {
            return Err(format!(
                "invalid field path '{text}': use dotted names such as value.occurred_at"
            ));
        }
        Ok(FieldPath {
            text: text.to_string(),
            segments,
        })
    }

    pub fn segments(&self) -> &[String] {
        &self.segments
    }

    /// The path as the user wrote it.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// A column-safe name: dots become underscores (`value.amount` → `value_amount`).
    pub fn column_name(&self) -> String {
        self.segments.join("_")
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for FieldPath {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        FieldPath::parse(s)
    }
}

/// Why a line is not a usable record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordError {
    NotUtf8 {
        valid_up_to: usize,
    },
    NotJson(String),
    NotObject,
    BadValue {
        path: String,
        reason: String,
    },
    MissingField {
        path: String,
        suggestion: Option<String>,
    },
    BadTime {
        path: String,
        error: TimeError,
    },
    NotATime {
        path: String,
        found: &'static str,
    },
    LineTooLong {
        len: u64,
        max: u64,
    },
    /// The sink refused this record (too large for a Kafka topic, an unknown partition).
    Refused(String),
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::NotUtf8 { valid_up_to } => {
                write!(f, "invalid UTF-8 at byte {}", valid_up_to + 1)
            }
            RecordError::NotJson(why) => write!(f, "not valid JSON: {why}"),
            RecordError::NotObject => write!(f, "not a JSON object"),
            RecordError::Refused(why) => f.write_str(why),
            RecordError::MissingField {
                path,
                suggestion: Some(s),
            } => {
                write!(f, "missing field '{path}' (did you mean '{s}'?)")
            }
            RecordError::MissingField {
                path,
                suggestion: None,
            } => {
                write!(f, "missing field '{path}'")
            }
            RecordError::BadTime { path, error } => write!(f, "field '{path}': {error}"),
            RecordError::NotATime { path, found } => {
                write!(f, "field '{path}' is {found}, not a time")
            }
            RecordError::BadValue { path, reason } => write!(f, "field '{path}': {reason}"),
            RecordError::LineTooLong { len, max } => write!(
                f,
                "line of {len} bytes is longer than --max-line-bytes {max}"
            ),
        }
    }
}

impl std::error::Error for RecordError {}

/// Checks that bytes are UTF-8 and valid JSON (any value); the cheapest full validation.
pub fn validate_json(line: &[u8]) -> Result<&str, RecordError> {
    validate_json_shaped(line, None)
}

/// `validate_json`, with the layout of the last line (see [`Shape`]) when the caller keeps it.
pub fn validate_json_shaped<'a>(
    line: &'a [u8],
    shape: Option<&mut Shape>,
) -> Result<&'a str, RecordError> {
    match scan(line, &NO_PATHS, &mut [], shape) {
        Ok(scanned) => checked_utf8(line, scanned),
        Err(e) => {
            // Bad UTF-8 is reported before bad JSON.
            as_utf8(line)?;
            Err(RecordError::NotJson(e.to_string()))
        }
    }
}

/// For the line at the start of `data` that repeats a layout of `shape` (see
/// [`Shape::scan_line`]): the offset of its newline, which scanning the line found. `None`
/// when no layout fits, the line does not end in a newline, or it is not UTF-8: the caller
/// then splits the line off and checks it in full, which reports any error.
pub fn validate_line(data: &[u8], shape: &mut Shape) -> Option<usize> {
    known_line(data, shape.scan_line(data, &NO_PATHS, &mut []))
}

/// The newline after a line that a layout matched, once the line is known to be UTF-8.
#[inline]
fn known_line(data: &[u8], matched: Option<(usize, Scanned)>) -> Option<usize> {
    let (end, scanned) = matched?;
    let newline = end + (data.get(end) == Some(&b'\r')) as usize;
    if data.get(newline) != Some(&b'\n') {
        return None;
    }
    // What the layout scanned is the line's text, give or take a `\r`: the same for UTF-8.
    checked_utf8(&data[..end], scanned).ok()?;
    Some(newline)
}

/// The text of a line the scanner accepted: only a line with bytes above ASCII needs the
/// full UTF-8 check.
fn checked_utf8(line: &[u8], scanned: Scanned) -> Result<&str, RecordError> {
    if scanned.ascii {
        debug_assert!(line.is_ascii());
        // SAFETY: the scanner saw no byte above ASCII, and ASCII is valid UTF-8.
        Ok(unsafe { std::str::from_utf8_unchecked(line) })
    } else {
        as_utf8(line)
    }
}

pub fn as_utf8(line: &[u8]) -> Result<&str, RecordError> {
    // Most lines are ASCII, which a word-at-a-time check settles in a third of the time of
    // full UTF-8 validation.
    if line.is_ascii() {
        // SAFETY: ASCII is valid UTF-8.
        return Ok(unsafe { std::str::from_utf8_unchecked(line) });
    }
    std::str::from_utf8(line).map_err(|e| RecordError::NotUtf8 {
        valid_up_to: e.valid_up_to(),
    })
}

/// The fields a command reads, gathered for one `Extractor` (one pass over each line): each
/// added one says where it will be.
#[derive(Debug, Default)]
pub struct FieldList {
    paths: Vec<FieldPath>,
    /// The fields weir reads for itself (an envelope's `key_encoding`, a pipe's partition
    /// count), which a record may well lack: no user named them.
    internal: Vec<usize>,
}

impl FieldList {
    /// Adds `path`; its index.
    pub fn add(&mut self, path: FieldPath) -> usize {
        self.paths.push(path);
        self.paths.len() - 1
    }

    /// Adds `path`, which weir reads for itself; its index.
    pub fn add_internal(&mut self, path: FieldPath) -> usize {
        let at = self.add(path);
        self.internal.push(at);
        at
    }

    /// Adds `path`, which weir reads for itself, if there is one; its index.
    pub fn add_some_internal(&mut self, path: Option<FieldPath>) -> Option<usize> {
        path.map(|p| self.add_internal(p))
    }

    /// Adds `path` if there is one; its index.
    pub fn add_some(&mut self, path: Option<FieldPath>) -> Option<usize> {
        path.map(|p| self.add(p))
    }

    /// Adds every one of `paths`; the index of the first.
    pub fn add_all(&mut self, paths: impl IntoIterator<Item = FieldPath>) -> usize {
        let first = self.paths.len();
        self.paths.extend(paths);
        first
    }

    pub fn paths(&self) -> &[FieldPath] {
        &self.paths
    }

    /// Adds the envelope's `key`, then its `key_encoding`; the index of the first.
    pub fn add_message_key(&mut self) -> usize {
        let at = self.add_internal("key".parse().expect("a valid path"));
        self.add_internal("key_encoding".parse().expect("a valid path"));
        at
    }

    /// The paths as written, for a job's description.
    pub fn names(&self) -> Vec<&str> {
        self.paths.iter().map(FieldPath::as_str).collect()
    }

    pub fn extractor(self) -> Extractor {
        let mut x = Extractor::new(self.paths);
        x.internal = self.internal;
        x
    }
}

/// Pulls a fixed set of fields out of each line, validating the whole line as it goes.
#[derive(Debug)]
pub struct Extractor {
    paths: Vec<FieldPath>,
    trie: PathTrie,
    /// The indexes of the fields weir reads for itself (`FieldList::add_internal`).
    internal: Vec<usize>,
    /// The field that is the event time, and how it reads: read as the line is checked.
    event_time: Option<(usize, TimeFormat)>,
    /// The field read as a decimal number as the line is checked (a window's `--sum`).
    number: Option<usize>,
    /// The field the reader thread gives a key code (`reading_key_at`).
    key: Option<usize>,
}

/// Where each requested field's raw JSON lies in the line, in the order the paths were given.
pub type Fields = Vec<Option<Span>>;

/// The raw JSON text of a captured field.
#[inline]
pub fn raw(line: &str, span: Option<Span>) -> Option<&str> {
    span.map(|(start, end)| &line[start as usize..end as usize])
}

impl Extractor {
    pub fn new(paths: Vec<FieldPath>) -> Extractor {
        let mut trie = PathTrie::default();
        for (i, path) in paths.iter().enumerate() {
            trie.insert(path.segments(), i);
        }
        Extractor {
            paths,
            trie,
            internal: Vec::new(),
            event_time: None,
            number: None,
            key: None,
        }
    }

    /// Field `i` is the key the command keeps state by: the reader thread gives its text a
    /// dense code (`core::key_code`, `Line::key_code`).
    pub fn reading_key_at(mut self, i: usize) -> Extractor {
        self.key = Some(i);
        self
    }

    /// The index of the field coded by `reading_key_at`.
    #[inline]
    pub fn key_at(&self) -> Option<usize> {
        self.key
    }

    /// Field `i` is a number the command adds up: the reader thread reads it as a decimal as
    /// it checks the line (`Line::decimal`), as it does the event time.
    pub fn reading_number_at(mut self, i: usize) -> Extractor {
        self.number = Some(i);
        self
    }

    /// The index of the field read by `reading_number_at`.
    #[inline]
    pub fn number_at(&self) -> Option<usize> {
        self.number
    }

    /// Field `i` is the event time, in `format`: the reader thread reads it as it checks the
    /// line (`Line::time`), sparing the command's thread, which is the busier one.
    pub fn reading_time_at(mut self, i: usize, format: &TimeFormat) -> Extractor {
        self.event_time = Some((i, format.clone()));
        self
    }

    /// The event time of a line whose fields are `spans`, as `reading_time_at` asked for,
    /// when it is an RFC 3339 string of the common shape (`fast_rfc3339`); else `Millis::MIN`,
    /// and the command reads it itself (or finds why it is no time). `line` must have been
    /// checked to be UTF-8 JSON with these spans.
    #[inline]
    pub fn event_time(&self, line: &[u8], spans: &[Option<Span>]) -> Millis {
        let Some((i, TimeFormat::Auto)) = &self.event_time else {
            return Millis::MIN;
        };
        let raw = spans[*i].and_then(|(start, end)| line.get(start as usize..end as usize));
        match raw {
            Some([b'"', inner @ .., b'"']) => fast_rfc3339(inner).unwrap_or(Millis::MIN),
            _ => Millis::MIN,
        }
    }

    /// The index of the field read as the event time by `event_time`.
    #[inline]
    pub fn event_time_at(&self) -> Option<usize> {
        self.event_time.as_ref().map(|(i, _)| *i)
    }

    pub fn paths(&self) -> &[FieldPath] {
        &self.paths
    }

    /// The fields a user named (the command's flags, `--where`), with their indexes.
    pub fn named(&self) -> impl Iterator<Item = (usize, &FieldPath)> {
        (self.paths.iter().enumerate()).filter(|(i, _)| !self.internal.contains(i))
    }

    /// Validates `line` as one JSON object and fills `out` with where the fields are.
    /// Duplicate keys: the last one wins, as in jq and serde_json.
    pub fn extract(&self, line: &str, out: &mut Fields) -> Result<(), RecordError> {
        self.extract_bytes(line.as_bytes(), out, None).map(|_| ())
    }

    /// `extract` on bytes, also checked as UTF-8 (after the JSON), with the layout of the last
    /// line (see [`Shape`]) when the caller keeps one for this extractor. Returns the text.
    pub fn extract_bytes<'a>(
        &self,
        line: &'a [u8],
        out: &mut Fields,
        shape: Option<&mut Shape>,
    ) -> Result<&'a str, RecordError> {
        out.clear();
        out.resize(self.paths.len(), None);
        self.extract_into(line, out, shape)
    }

    /// `validate_line` that also finds the fields, into `out` as `extract_into` does.
    #[inline]
    pub fn extract_line(
        &self,
        data: &[u8],
        out: &mut [Option<Span>],
        shape: &mut Shape,
    ) -> Option<usize> {
        known_line(data, shape.scan_line(data, &self.trie, out))
    }

    /// `extract_bytes` into `out`, one slot per path, which must hold `None`s.
    #[inline]
    pub fn extract_into<'a>(
        &self,
        line: &'a [u8],
        out: &mut [Option<Span>],
        shape: Option<&mut Shape>,
    ) -> Result<&'a str, RecordError> {
        debug_assert!(out.len() == self.paths.len() && out.iter().all(Option::is_none));
        let scanned =
            scan(line, &self.trie, out, shape).map_err(|e| RecordError::NotJson(e.to_string()))?;
        if !scanned.object {
            return Err(RecordError::NotObject);
        }
        checked_utf8(line, scanned)
    }

    /// The error for a path that `extract` did not find, with a suggestion from the line.
    pub fn missing(&self, index: usize, line: &str) -> RecordError {
        let path = &self.paths[index];
        RecordError::MissingField {
            path: path.to_string(),
            suggestion: suggest_path(line, path),
        }
    }
}

/// A field's JSON value, interpreted just enough for the core.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar<'a> {
    Str(Cow<'a, str>),
    /// A number's literal text, so integers stay exact.
    Number(&'a str),
    Bool(bool),
    Null,
    Array,
    Object,
}

impl<'a> Scalar<'a> {
    /// Interprets a value's raw JSON text (valid JSON, as the scanner checked).
    pub fn from_raw(text: &'a str) -> Scalar<'a> {
        match text.as_bytes().first() {
            // The scanner validated the string: up to its closing quote, the only special
            // byte it can hold is a backslash.
            Some(b'"')
                if text.len() >= 2 && special_offset(&text.as_bytes()[1..]) == text.len() - 2 =>
            {
                Scalar::Str(Cow::Borrowed(&text[1..text.len() - 1]))
            }
            Some(b'"') => Scalar::Str(
                serde_json::from_str::<StrOrCow>(text)
                    .map(|s| s.0)
                    .unwrap_or(Cow::Borrowed("")),
            ),
            Some(b't') => Scalar::Bool(true),
            Some(b'f') => Scalar::Bool(false),
            Some(b'n') => Scalar::Null,
            Some(b'[') => Scalar::Array,
            Some(b'{') => Scalar::Object,
            _ => Scalar::Number(text),
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Scalar::Str(_) => "a string",
            Scalar::Number(_) => "a number",
            Scalar::Bool(_) => "a boolean",
            Scalar::Null => "null",
            Scalar::Array => "an array",
            Scalar::Object => "an object",
        }
    }
}

/// Borrows a JSON string when it has no escapes; allocates only when it must unescape.
struct StrOrCow<'a>(Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for StrOrCow<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StrOrCow<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(StrOrCow(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(StrOrCow(Cow::Owned(s.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

/// Reads an event time from a field's raw JSON.
#[inline]
pub fn time_of(raw: &str, path: &FieldPath, format: &TimeFormat) -> Result<Millis, RecordError> {
    if let (TimeFormat::Auto, [b'"', inner @ .., b'"']) = (format, raw.as_bytes()) {
        // The common case: an RFC 3339 string, which holds no escapes, read in place.
        if let Some(ms) = fast_rfc3339(inner) {
            return Ok(ms);
        }
    }
    any_time_of(raw, path, format)
}

fn any_time_of(raw: &str, path: &FieldPath, format: &TimeFormat) -> Result<Millis, RecordError> {
    let bad = |error| RecordError::BadTime {
        path: path.to_string(),
        error,
    };
    match Scalar::from_raw(raw) {
        Scalar::Str(s) => parse_time_str(&s, format).map_err(bad),
        Scalar::Number(n) => parse_time_number(n, format).map_err(bad),
        other => Err(RecordError::NotATime {
            path: path.to_string(),
            found: other.kind(),
        }),
    }
}

/// Suggests the path the user probably meant when `missing` is not in the record: a path
/// ending in the same name (shortest first), else the closest spelling.
pub fn suggest_path(line: &str, missing: &FieldPath) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    let mut all = Vec::new();
    collect_paths(&value, String::new(), 0, &mut all);
    let want_last = missing.segments().last()?;
    if let Some(best) = all
        .iter()
        .filter(|(_, last)| last == want_last)
        .min_by_key(|(p, _)| p.len())
    {
        return Some(best.0.clone());
    }
    all.iter()
        .map(|(p, _)| (strsim::jaro_winkler(p, missing.as_str()), p))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, p)| p.clone())
}

fn collect_paths(
    value: &serde_json::Value,
    prefix: String,
    depth: usize,
    out: &mut Vec<(String, String)>,
) {
    const MAX_DEPTH: usize = 6;
    const MAX_PATHS: usize = 2000;
    let serde_json::Value::Object(map) = value else {
        return;
    };
    for (key, child) in map {
        if out.len() >= MAX_PATHS {
            return;
        }
        let escaped = key.replace('.', "\\.");
        let path = if prefix.is_empty() {
            escaped
        } else {
            format!("{prefix}.{escaped}")
        };
        out.push((path.clone(), key.clone()));
        if depth < MAX_DEPTH {
            collect_paths(child, path, depth + 1, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn paths(ps: &[&str]) -> Extractor {
        Extractor::new(ps.iter().map(|p| FieldPath::parse(p).unwrap()).collect())
    }

    fn get<'a>(x: &Extractor, line: &'a str) -> Result<Vec<Option<&'a str>>, RecordError> {
        let mut out = Vec::new();
        x.extract(line, &mut out)?;
        Ok(out.iter().map(|span| raw(line, *span)).collect())
    }

    #[test]
    fn field_path_parsing() {
        let p = FieldPath::parse("value.occurred_at").unwrap();
        assert_eq!(p.segments(), ["value", "occurred_at"]);
        assert_eq!(p.column_name(), "value_occurred_at");
        let p = FieldPath::parse(r"a\.b.c").unwrap();
        assert_eq!(p.segments(), ["a.b", "c"]);
        assert!(FieldPath::parse("").is_err());
        assert!(FieldPath::parse("a..b").is_err());
        assert!(FieldPath::parse(".a").is_err());
        assert!(FieldPath::parse("a.").is_err());
    }

    #[test]
    fn extracts_top_level_and_nested_fields() {
        let x = paths(&["t", "value.user.id", "value.n", "absent"]);
        let line = r#"{"t":"2026-01-01T00:00:00Z","value":{"n":5,"user":{"id":"u-1","x":[1,{"y":2}]}},"z":null}"#;
        assert_eq!(
            get(&x, line).unwrap(),
            vec![
                Some("\"2026-01-01T00:00:00Z\""),
                Some("\"u-1\""),
                Some("5"),
                None
            ]
        );
    }

    #[test]
    fn a_path_and_its_prefix_together() {
        let x = paths(&["value", "value.id"]);
        let line = r#"{"value":{"id":7}}"#;
        assert_eq!(get(&x, line).unwrap(), vec![Some(r#"{"id":7}"#), Some("7")]);
    }

    #[test]
    fn nested_path_through_a_non_object_is_missing() {
        let x = paths(&["value.id"]);
        assert_eq!(get(&x, r#"{"value":"plain"}"#).unwrap(), vec![None]);
        assert_eq!(get(&x, r#"{"value":[{"id":1}]}"#).unwrap(), vec![None]);
    }

    #[test]
    fn escaped_keys_match_and_last_duplicate_wins() {
        let x = paths(&["a b"]);
        assert_eq!(
            get(&x, r#"{"a\u0020b":1,"a b":2}"#).unwrap(),
            vec![Some("2")]
        );
    }

    #[test]
    fn rejects_invalid_lines_anywhere() {
        let x = paths(&["t"]);
        assert!(matches!(get(&x, "not json"), Err(RecordError::NotJson(_))));
        assert!(matches!(
            get(&x, r#"{"t":1} x"#),
            Err(RecordError::NotJson(_))
        ));
        // The error is found in a field we never asked for.
        assert!(matches!(
            get(&x, r#"{"t":1,"other":[1,2,}"#),
            Err(RecordError::NotJson(_))
        ));
        assert!(matches!(
            get(&x, r#"{"t":1,"u":"\x"}"#),
            Err(RecordError::NotJson(_))
        ));
        assert_eq!(get(&x, "[1,2]"), Err(RecordError::NotObject));
        assert_eq!(get(&x, "42"), Err(RecordError::NotObject));
        let e = get(&x, r#"{"t":1,"#).unwrap_err().to_string();
        assert!(e.contains("column"), "{e}");
    }

    #[test]
    fn validate_rejects_invalid_utf8() {
        assert_eq!(
            validate_json(b"{\"a\":\"\xff\"}"),
            Err(RecordError::NotUtf8 { valid_up_to: 6 })
        );
        assert!(validate_json(b"{\"a\":1}").is_ok());
        assert!(validate_json(b"{\"a\":1}}").is_err());
    }

    #[test]
    fn scalars() {
        assert_eq!(
            Scalar::from_raw("\"a\\nb\""),
            Scalar::Str(Cow::Owned("a\nb".into()))
        );
        assert_eq!(Scalar::from_raw("\"ab\""), Scalar::Str(Cow::Borrowed("ab")));
        assert_eq!(Scalar::from_raw("-1.5e3"), Scalar::Number("-1.5e3"));
        assert_eq!(Scalar::from_raw("null"), Scalar::Null);
        let t = FieldPath::parse("t").unwrap();
        assert_eq!(
            time_of("1767225600", &t, &TimeFormat::Auto),
            Ok(1_767_225_600_000)
        );
        assert!(matches!(
            time_of("true", &t, &TimeFormat::Auto),
            Err(RecordError::NotATime { .. })
        ));
    }

    #[test]
    fn suggestions() {
        let line = r#"{"topic":"t","value":{"occurred_at":"x","merchant":{"id":1}}}"#;
        let p = |s| FieldPath::parse(s).unwrap();
        assert_eq!(
            suggest_path(line, &p("occurred_at")).as_deref(),
            Some("value.occurred_at")
        );
        assert_eq!(
            suggest_path(line, &p("value.ocurred_at")).as_deref(),
            Some("value.occurred_at")
        );
        assert_eq!(
            suggest_path(line, &p("merchant.id")).as_deref(),
            Some("value.merchant.id")
        );
        assert_eq!(suggest_path(line, &p("zzzzzz")), None);
        let x = paths(&["occurred_at"]);
        assert_eq!(
            x.missing(0, line).to_string(),
            "missing field 'occurred_at' (did you mean 'value.occurred_at'?)"
        );
    }

    fn json_value() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            "[a-z\\\\\"\\n é]{0,6}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                prop::collection::btree_map("[a-c.]{1,2}", inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn grammar_ok(line: &str) -> bool {
        serde_json::from_str::<serde::de::IgnoredAny>(line).is_ok()
    }

    /// Numbers and strings at the edges of what JSON readers take.
    fn edge_value() -> impl Strategy<Value = String> {
        let digits = |n: usize| prop::collection::vec(prop::char::range('0', '9'), 1..n);
        let number = (
            any::<bool>(),
            digits(400),
            prop::option::of(digits(60)),
            prop::option::of((
                prop::sample::select(vec!["e", "E", "e+", "e-", "E-"]),
                digits(8),
            )),
        )
            .prop_map(|(minus, int, frac, exp)| {
                let int: String = int.into_iter().collect();
                let int = int.trim_start_matches('0');
                let mut s = String::from(if minus { "-" } else { "" });
                s.push_str(if int.is_empty() { "0" } else { int });
                if let Some(f) = frac {
                    s.push('.');
                    s.extend(f);
                }
                if let Some((e, d)) = exp {
                    s.push_str(e);
                    s.extend(d);
                }
                s
            });
        let escape = prop_oneof![
            "\\\\u[dD][89abAB][0-9a-fA-F]{2}",
            "\\\\u[dD][c-fC-F][0-9a-fA-F]{2}",
            "\\\\u[0-9a-fA-F]{4}",
            Just("\\n".to_string()),
            "[a-z é]",
        ];
        let string =
            prop::collection::vec(escape, 0..6).prop_map(|parts| format!("\"{}\"", parts.concat()));
        prop_oneof![number, string]
    }

    fn lookup<'v>(v: &'v serde_json::Value, segs: &[String]) -> Option<&'v serde_json::Value> {
        segs.iter().try_fold(v, |v, s| v.as_object()?.get(s))
    }

    proptest! {
        /// The streaming extractor agrees with a full parse into serde_json::Value.
        #[test]
        fn extractor_matches_full_parse(
            obj in prop::collection::btree_map("[a-c.]{1,2}", json_value(), 0..5),
            wanted in prop::collection::vec("[a-c]{1,2}(\\.[a-c]{1,2}){0,2}", 1..4),
        ) {
            let value = serde_json::Value::Object(obj.into_iter().collect());
            let line = value.to_string();
            let fps: Vec<FieldPath> = wanted.iter().map(|w| FieldPath::parse(w).unwrap()).collect();
            let x = Extractor::new(fps.clone());
            let mut out = Vec::new();
            x.extract(&line, &mut out).unwrap();
            for (fp, got) in fps.iter().zip(&out) {
                let expected = lookup(&value, fp.segments());
                let got: Option<serde_json::Value> = raw(&line, *got).map(|r| serde_json::from_str(r).unwrap());
                prop_assert_eq!(got.as_ref(), expected);
            }
        }

        /// Corrupting a valid line is caught exactly when serde_json's grammar rejects it.
        ///
        /// The rule is RFC 8259's grammar, as serde_json checks it for `IgnoredAny`, with
        /// nesting bounded at 127: numbers of any size and escapes that name no Unicode text
        /// (lone or reversed surrogates) are accepted, since every writer copies the text it
        /// accepted instead of parsing it again. `serde_json::Value` is stricter on both.
        #[test]
        fn validation_matches_serde_json(line in "\\{\"[a-c]\":[0-9\"a-z\\[\\]{},:]{0,12}\\}") {
            let x = paths(&["a"]);
            let mut out = Vec::new();
            let ours = x.extract(&line, &mut out).is_ok();
            prop_assert_eq!(ours, grammar_ok(&line));
        }

        /// The same over numbers and strings at their edges: exponents of any size, long
        /// digit strings, lone and reversed surrogate escapes, each possibly cut or corrupted.
        #[test]
        fn validation_matches_serde_json_at_the_edges(
            value in edge_value(),
            cut in prop::option::of(0usize..64),
            junk in prop::option::of("[-+.eE0-9\"\\\\u]{1,3}"),
        ) {
            let mut value = value;
            if let Some(cut) = cut {
                let mut at = cut.min(value.len());
                while !value.is_char_boundary(at) {
                    at -= 1;
                }
                value.truncate(at);
            }
            if let Some(junk) = junk {
                value.push_str(&junk);
            }
            let line = format!("{{\"a\":{value}}}");
            let x = paths(&["a"]);
            let mut out = Vec::new();
            let ours = x.extract(&line, &mut out).is_ok();
            prop_assert_eq!(ours, grammar_ok(&line), "{}", line);
            if ours {
                // What is accepted is located exactly: the field's text is the value's.
                prop_assert_eq!(raw(&line, out[0]), Some(value.as_str()));
            }
        }
    }
}
