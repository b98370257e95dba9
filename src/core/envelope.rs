//! The record envelope of a broker source, written and read back losslessly.
//!
//! ```text
//! {"topic":"t","partition":3,"partitions":4,"offset":1042,"timestamp":"2026-11-28T12:00:01.234Z",
//!  "timestamp_type":"create","key":"m-42","headers":{"h":"v"},"value":{...}}
//! ```
//!
//! `partitions` is how many partitions the read has (a group member: how many it owns), so
//! that a command downstream of a pipe holds its watermark for those it has not heard from
//! yet, as a direct read does (`--partition-by partition`). A Kinesis envelope's `shards` is
//! how many shards the read has started.
//!
//! Binary safety, so that `weir replay` can produce an envelope file back byte for byte:
//! - `value` is the payload embedded as JSON when it is one JSON text on one line without
//!   surrounding whitespace (the common case, so `value.field` paths work); other UTF-8 is a
//!   JSON string with `"value_encoding":"text"`; anything else is base64 with
//!   `"value_encoding":"base64"`. A null value is a tombstone (no payload).
//! - `key` is a JSON string (keys are text, as in kcat), or base64 with
//!   `"key_encoding":"base64"`, or null when there is none.
//! - `headers` is an object; a header value is a string, null, or `{"base64":"..."}`; a name
//!   that repeats holds an array of its values in order. Left out when there are none.
//! - `timestamp`/`timestamp_type` are left out when the broker gave none.

use std::fmt;

use std::borrow::Cow;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::record::validate_json;
use super::time::{parse_time_str, write_millis, Millis, TimeFormat, MAX_MILLIS, MIN_MILLIS};

/// How a Kafka or Kinesis record becomes the bytes a command sees.
#[derive(Clone, Debug, Default)]
pub enum Render {
    /// Its envelope (topic, partition, offset, timestamp, key, headers, value): what every
    /// command but `consume` reads, and `consume -J`.
    #[default]
    Envelope,
    /// The envelope as `consume -J` writes it for a pipe: with how many partitions (shards)
    /// the read has, which a command downstream waits to hear from. Left out of the
    /// envelopes commands read directly, so that their outputs do not vary with a group
    /// member's assignment.
    Piped,
    /// Its value: JSON as it is, other text as a JSON string, binary as `{"base64":...}`.
    Value,
    /// A kcat format (`consume -f`).
    Format(KcatFormat),
}

impl Render {
    /// Writes a Kafka record as this says.
    pub fn write(&self, out: &mut Vec<u8>, m: &Message<'_>) {
        match self {
            Render::Envelope | Render::Piped => write_envelope(out, m),
            Render::Value if m.decoded.value.is_some() => {
                out.extend_from_slice(m.value.unwrap_or(b"null"))
            }
            Render::Value => write_value_line(out, m.value),
            Render::Format(f) => f.write(out, m),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimestampType {
    Create,
    LogAppend,
}

impl TimestampType {
    pub fn name(self) -> &'static str {
        match self {
            TimestampType::Create => "create",
            TimestampType::LogAppend => "log_append",
        }
    }
}

/// One broker record, borrowed from the client library.
#[derive(Clone, Debug)]
pub struct Message<'a> {
    pub topic: &'a str,
    pub partition: i32,
    /// How many partitions the read has; 0 when not known (not written).
    pub partitions: u32,
    pub offset: i64,
    pub timestamp: Option<(Millis, TimestampType)>,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    pub headers: Vec<(&'a str, Option<&'a [u8]>)>,
    /// Which of `key` and `value` are JSON decoded from a schema's binary.
    pub decoded: Decoded,
}

/// Which of a record's key and value were decoded from a schema's binary into JSON, each
/// with the schema id it was framed with (`Some(None)`: a local schema's unframed datum).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Decoded {
    pub key: Option<Option<u32>>,
    pub value: Option<Option<u32>>,
}

/// Appends the envelope of `m` (one line, no newline) to `out`.
pub fn write_envelope(out: &mut Vec<u8>, m: &Message<'_>) {
    out.extend_from_slice(b"{\"topic\":");
    write_json_str(out, m.topic);
    out.extend_from_slice(b",\"partition\":");
    out.extend_from_slice(itoa::Buffer::new().format(m.partition).as_bytes());
    if m.partitions > 0 {
        out.extend_from_slice(b",\"partitions\":");
        out.extend_from_slice(itoa::Buffer::new().format(m.partitions).as_bytes());
    }
    out.extend_from_slice(b",\"offset\":");
    out.extend_from_slice(itoa::Buffer::new().format(m.offset).as_bytes());
    if let Some((ts, kind)) = m.timestamp {
        out.extend_from_slice(b",\"timestamp\":\"");
        write_millis(ts, out);
        out.extend_from_slice(b"\",\"timestamp_type\":\"");
        out.extend_from_slice(kind.name().as_bytes());
        out.push(b'"');
    }
    out.extend_from_slice(b",\"key\":");
    match m.key {
        Some(k) if m.decoded.key.is_some() => {
            out.extend_from_slice(k);
            write_schema_id(out, "key", m.decoded.key);
        }
        None => out.extend_from_slice(b"null"),
        Some(k) => match std::str::from_utf8(k) {
            Ok(text) => write_json_str(out, text),
            Err(_) => {
                write_base64_str(out, k);
                out.extend_from_slice(b",\"key_encoding\":\"base64\"");
            }
        },
    }
    if !m.headers.is_empty() {
        write_headers(out, &m.headers);
    }
    out.extend_from_slice(b",\"value\":");
    if let (Some(v), Some(_)) = (m.value, m.decoded.value) {
        out.extend_from_slice(v);
        write_schema_id(out, "value", m.decoded.value);
        out.push(b'}');
        return;
    }
    let encoding = write_value(out, m.value);
    if let Some(encoding) = encoding {
        out.extend_from_slice(b",\"value_encoding\":\"");
        out.extend_from_slice(encoding.as_bytes());
        out.push(b'"');
    }
    out.push(b'}');
}

/// `,"key_schema_id":17` after a decoded part framed with schema id 17.
fn write_schema_id(out: &mut Vec<u8>, part: &str, decoded: Option<Option<u32>>) {
    if let Some(Some(id)) = decoded {
        out.extend_from_slice(b",\"");
        out.extend_from_slice(part.as_bytes());
        out.extend_from_slice(b"_schema_id\":");
        out.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
    }
}

/// One Kinesis record (or one user record of a KPL aggregate), borrowed.
#[derive(Clone, Debug)]
pub struct ShardRecord<'a> {
    pub stream: &'a str,
    pub shard: &'a str,
    /// How many shards the read has started; 0 when not known (not written).
    pub shards: u32,
    pub sequence: &'a str,
    /// A user record's place in its KPL aggregate.
    pub subsequence: Option<u64>,
    /// ApproximateArrivalTimestamp.
    pub arrival: Option<Millis>,
    /// The partition key (always text in Kinesis).
    pub key: &'a str,
    pub value: &'a [u8],
    /// The value is JSON decoded from a schema's binary, framed with this schema id (`None`:
    /// a local schema's unframed datum).
    pub decoded: Option<Option<u32>>,
}

/// Appends the envelope of a Kinesis record (one line, no newline) to `out`:
///
/// ```text
/// {"stream":"s","shard":"shardId-000000000001","shards":4,"sequence":"4959...",
///  "timestamp":"2026-11-28T12:00:01.234Z","key":"m-42","value":{...}}
/// ```
///
/// The value is written and marked as in a Kafka envelope; `subsequence` is there for the
/// user records of a KPL aggregate only.
pub fn write_shard_envelope(out: &mut Vec<u8>, r: &ShardRecord<'_>) {
    out.extend_from_slice(b"{\"stream\":");
    write_json_str(out, r.stream);
    out.extend_from_slice(b",\"shard\":");
    write_json_str(out, r.shard);
    if r.shards > 0 {
        out.extend_from_slice(b",\"shards\":");
        out.extend_from_slice(itoa::Buffer::new().format(r.shards).as_bytes());
    }
    out.extend_from_slice(b",\"sequence\":");
    write_json_str(out, r.sequence);
    if let Some(sub) = r.subsequence {
        out.extend_from_slice(b",\"subsequence\":");
        out.extend_from_slice(itoa::Buffer::new().format(sub).as_bytes());
    }
    if let Some(ts) = r.arrival {
        out.extend_from_slice(b",\"timestamp\":\"");
        write_millis(ts, out);
        out.push(b'"');
    }
    out.extend_from_slice(b",\"key\":");
    write_json_str(out, r.key);
    out.extend_from_slice(b",\"value\":");
    if r.decoded.is_some() {
        out.extend_from_slice(r.value);
        write_schema_id(out, "value", r.decoded);
        out.push(b'}');
        return;
    }
    if let Some(encoding) = write_value(out, Some(r.value)) {
        out.extend_from_slice(b",\"value_encoding\":\"");
        out.extend_from_slice(encoding.as_bytes());
        out.push(b'"');
    }
    out.push(b'}');
}

/// Appends the value alone, as `weir consume` writes it without `-J`: the JSON as it is, or
/// text as a JSON string, or binary as `{"base64":"..."}`, or `null` for a tombstone.
pub fn write_value_line(out: &mut Vec<u8>, value: Option<&[u8]>) {
    match value {
        Some(v) if !is_inline_json(v) && std::str::from_utf8(v).is_err() => {
            out.extend_from_slice(b"{\"base64\":");
            write_base64_str(out, v);
            out.push(b'}');
        }
        _ => {
            write_value(out, value);
        }
    }
}

/// Writes the value; returns the encoding marker it needs, if any.
fn write_value(out: &mut Vec<u8>, value: Option<&[u8]>) -> Option<&'static str> {
    let v = match value {
        None => {
            out.extend_from_slice(b"null");
            return None;
        }
        Some(v) => v,
    };
    if is_inline_json(v) {
        out.extend_from_slice(v);
        None
    } else if let Ok(text) = std::str::from_utf8(v) {
        write_json_str(out, text);
        Some("text")
    } else {
        write_base64_str(out, v);
        Some("base64")
    }
}

/// A payload that can stand in the envelope as it is and be read back byte for byte.
/// The literal `null` is excluded: in the envelope it means "no payload".
fn is_inline_json(v: &[u8]) -> bool {
    match (v.first(), v.last()) {
        (Some(first), Some(last)) => {
            !first.is_ascii_whitespace()
                && !last.is_ascii_whitespace()
                && v != b"null"
                && memchr::memchr2(b'\n', b'\r', v).is_none()
                && validate_json(v).is_ok()
        }
        _ => false,
    }
}

fn write_headers(out: &mut Vec<u8>, headers: &[(&str, Option<&[u8]>)]) {
    out.extend_from_slice(b",\"headers\":{");
    let mut first = true;
    for (i, (name, _)) in headers.iter().enumerate() {
        // Each name once, at its first appearance; repeats become an array.
        if headers[..i].iter().any(|(n, _)| n == name) {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        write_json_str(out, name);
        out.push(b':');
        let count = headers.iter().filter(|(n, _)| n == name).count();
        if count == 1 {
            write_header_value(out, headers[i].1);
        } else {
            out.push(b'[');
            for (j, (_, v)) in headers.iter().filter(|(n, _)| n == name).enumerate() {
                if j > 0 {
                    out.push(b',');
                }
                write_header_value(out, *v);
            }
            out.push(b']');
        }
    }
    out.push(b'}');
}

fn write_header_value(out: &mut Vec<u8>, value: Option<&[u8]>) {
    match value {
        None => out.extend_from_slice(b"null"),
        Some(v) => match std::str::from_utf8(v) {
            Ok(text) => write_json_str(out, text),
            Err(_) => {
                out.extend_from_slice(b"{\"base64\":");
                write_base64_str(out, v);
                out.push(b'}');
            }
        },
    }
}

pub fn write_json_str(out: &mut Vec<u8>, s: &str) {
    // Writing a str into a Vec cannot fail.
    serde_json::to_writer(&mut *out, s).expect("write to Vec");
}

/// `s` as a JSON string, on its own (a field's `"name"`, a symbol), for writing many times.
pub fn json_string(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 2);
    write_json_str(&mut out, s);
    out
}

pub fn write_json_int(out: &mut Vec<u8>, v: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// A float in its shortest form; NaN and the infinities, which JSON lacks, as the strings
/// `"NaN"`, `"Infinity"` and `"-Infinity"`.
pub fn write_json_f64(out: &mut Vec<u8>, v: f64) {
    match v.is_finite() {
        true => out.extend_from_slice(ryu::Buffer::new().format_finite(v).as_bytes()),
        false => write_non_finite(out, v.is_nan(), v > 0.0),
    }
}

/// `write_json_f64` for a single-precision float: its own shortest form.
pub fn write_json_f32(out: &mut Vec<u8>, v: f32) {
    match v.is_finite() {
        true => out.extend_from_slice(ryu::Buffer::new().format_finite(v).as_bytes()),
        false => write_non_finite(out, v.is_nan(), v > 0.0),
    }
}

fn write_non_finite(out: &mut Vec<u8>, nan: bool, positive: bool) {
    out.extend_from_slice(match (nan, positive) {
        (true, _) => b"\"NaN\"",
        (false, true) => b"\"Infinity\"",
        (false, false) => b"\"-Infinity\"",
    });
}

pub fn write_base64_str(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    let start = out.len();
    out.resize(
        start + base64::encoded_len(bytes.len(), true).unwrap_or(0),
        0,
    );
    let n = BASE64
        .encode_slice(bytes, &mut out[start..])
        .expect("sized buffer");
    out.truncate(start + n);
    out.push(b'"');
}

/// A kcat `-f` format: `%t %p %o %k %s %T %h %K %S` and `\\n \\r \\t \\\\`, `%%`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KcatFormat(Vec<Piece>);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Literal(Vec<u8>),
    Topic,
    Partition,
    Offset,
    Key,
    KeyLen,
    Value,
    ValueLen,
    Timestamp,
    Headers,
}

impl KcatFormat {
    pub fn parse(format: &str) -> Result<KcatFormat, String> {
        let mut pieces = Vec::new();
        let mut literal = Vec::new();
        let mut chars = format.chars();
        while let Some(c) = chars.next() {
            let token = match c {
                '%' => match chars.next() {
                    Some('t') => Piece::Topic,
                    Some('p') => Piece::Partition,
                    Some('o') => Piece::Offset,
                    Some('k') => Piece::Key,
                    Some('K') => Piece::KeyLen,
                    Some('s') => Piece::Value,
                    Some('S') => Piece::ValueLen,
                    Some('T') => Piece::Timestamp,
                    Some('h') => Piece::Headers,
                    Some('%') => {
                        literal.push(b'%');
                        continue;
                    }
                    other => {
                        return Err(format!(
                            "-f: unknown token %{} (use %t %p %o %k %K %s %S %T %h %%)",
                            other.map(String::from).unwrap_or_default()
                        ))
                    }
                },
                '\\' => {
                    let escaped = match chars.next() {
                        Some('n') => '\n',
                        Some('r') => '\r',
                        Some('t') => '\t',
                        Some('\\') | None => '\\',
                        Some(other) => {
                            literal.push(b'\\');
                            other
                        }
                    };
                    literal.extend_from_slice(escaped.to_string().as_bytes());
                    continue;
                }
                c => {
                    literal.extend_from_slice(c.to_string().as_bytes());
                    continue;
                }
            };
            if !literal.is_empty() {
                pieces.push(Piece::Literal(std::mem::take(&mut literal)));
            }
            pieces.push(token);
        }
        if !literal.is_empty() {
            pieces.push(Piece::Literal(literal));
        }
        Ok(KcatFormat(pieces))
    }

    /// Appends `r` as the format says (raw bytes, as kcat writes them).
    pub fn write(&self, out: &mut Vec<u8>, r: &impl FormatFields) {
        let mut num = itoa::Buffer::new();
        for piece in &self.0 {
            match piece {
                Piece::Literal(l) => out.extend_from_slice(l),
                Piece::Topic => out.extend_from_slice(r.topic().as_bytes()),
                Piece::Partition => r.write_partition(out),
                Piece::Offset => r.write_offset(out),
                Piece::Key => out.extend_from_slice(r.key().unwrap_or_default()),
                Piece::Value => out.extend_from_slice(r.value().unwrap_or_default()),
                Piece::KeyLen => out.extend_from_slice(
                    num.format(r.key().map_or(-1, |k| k.len() as i64))
                        .as_bytes(),
                ),
                Piece::ValueLen => out.extend_from_slice(
                    num.format(r.value().map_or(-1, |v| v.len() as i64))
                        .as_bytes(),
                ),
                Piece::Timestamp => {
                    out.extend_from_slice(num.format(r.timestamp().unwrap_or(-1)).as_bytes())
                }
                Piece::Headers => {
                    for (i, (name, value)) in r.headers().iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        out.extend_from_slice(name.as_bytes());
                        out.push(b'=');
                        out.extend_from_slice(value.unwrap_or_default());
                    }
                }
            }
        }
    }
}

/// What a kcat format reads of a record. A Kinesis record answers with its counterparts of
/// Kafka's fields: the stream for the topic, the shard for the partition, the sequence number
/// for the offset, the partition key, the arrival time, and no headers.
pub trait FormatFields {
    fn topic(&self) -> &str;
    fn write_partition(&self, out: &mut Vec<u8>);
    fn write_offset(&self, out: &mut Vec<u8>);
    fn key(&self) -> Option<&[u8]>;
    fn value(&self) -> Option<&[u8]>;
    /// Milliseconds since the epoch.
    fn timestamp(&self) -> Option<Millis>;
    fn headers(&self) -> &[(&str, Option<&[u8]>)];
}

impl FormatFields for Message<'_> {
    fn topic(&self) -> &str {
        self.topic
    }
    fn write_partition(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(itoa::Buffer::new().format(self.partition).as_bytes());
    }
    fn write_offset(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(itoa::Buffer::new().format(self.offset).as_bytes());
    }
    fn key(&self) -> Option<&[u8]> {
        self.key
    }
    fn value(&self) -> Option<&[u8]> {
        self.value
    }
    fn timestamp(&self) -> Option<Millis> {
        self.timestamp.map(|(t, _)| t)
    }
    fn headers(&self) -> &[(&str, Option<&[u8]>)] {
        &self.headers
    }
}

impl FormatFields for ShardRecord<'_> {
    fn topic(&self) -> &str {
        self.stream
    }
    fn write_partition(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.shard.as_bytes());
    }
    /// The user records of one KPL aggregate share its sequence number (`-J` tells them
    /// apart by `subsequence`).
    fn write_offset(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.sequence.as_bytes());
    }
    fn key(&self) -> Option<&[u8]> {
        Some(self.key.as_bytes())
    }
    fn value(&self) -> Option<&[u8]> {
        Some(self.value)
    }
    fn timestamp(&self) -> Option<Millis> {
        self.arrival
    }
    fn headers(&self) -> &[(&str, Option<&[u8]>)] {
        &[]
    }
}

/// A record to produce, decoded from an envelope.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnedRecord {
    pub partition: Option<i32>,
    pub timestamp: Option<Millis>,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
}

#[derive(Debug, PartialEq, Eq)]
pub struct EnvelopeError(pub String);

impl fmt::Display for EnvelopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Deserialize)]
struct EnvelopeIn<'a> {
    partition: Option<i32>,
    timestamp: Option<Value>,
    #[serde(borrow)]
    key: Option<&'a RawValue>,
    key_encoding: Option<String>,
    #[serde(default)]
    headers: Option<serde_json::Map<String, Value>>,
    #[serde(borrow)]
    value: Option<&'a RawValue>,
    value_encoding: Option<String>,
}

/// Reads an envelope line (as `write_envelope` or `weir consume -J` wrote it) back into the
/// record it describes.
pub fn read_envelope(line: &str) -> Result<OwnedRecord, EnvelopeError> {
    let e: EnvelopeIn<'_> = serde_json::from_str(line)
        .map_err(|err| EnvelopeError(format!("not a weir envelope: {err}")))?;
    let bad = |what: &str| EnvelopeError(format!("envelope {what}"));
    let timestamp = match &e.timestamp {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(
            parse_time_str(s, &TimeFormat::Rfc3339)
                .map_err(|err| bad(&format!("timestamp '{s}': {err}")))?,
        ),
        // Milliseconds, within the years an envelope can write back (found by the fuzzer).
        Some(Value::Number(n)) => Some(
            n.as_i64()
                .filter(|ms| (MIN_MILLIS..=MAX_MILLIS).contains(ms))
                .ok_or_else(|| {
                    bad(&format!(
                        "timestamp {n} ms is out of range (years 0000 to 9999)"
                    ))
                })?,
        ),
        Some(_) => return Err(bad("timestamp must be an RFC 3339 string")),
    };
    let key = match e.key {
        None => None,
        Some(raw) => decode_text_or(raw, e.key_encoding.as_deref(), "key")?,
    };
    let value = match e.value {
        None => None,
        Some(raw) => match e.value_encoding.as_deref() {
            None if raw.get() == "null" => None,
            None => Some(raw.get().as_bytes().to_vec()),
            Some(enc) => decode_text_or(raw, Some(enc), "value")?,
        },
    };
    let mut headers = Vec::new();
    for (name, v) in e.headers.into_iter().flatten() {
        match v {
            Value::Array(values) => {
                for v in values {
                    headers.push((name.clone(), header_value(&v, &name)?));
                }
            }
            v => {
                let value = header_value(&v, &name)?;
                headers.push((name, value));
            }
        }
    }
    Ok(OwnedRecord {
        partition: e.partition,
        timestamp,
        key,
        value,
        headers,
    })
}

fn decode_text_or(
    raw: &RawValue,
    encoding: Option<&str>,
    what: &str,
) -> Result<Option<Vec<u8>>, EnvelopeError> {
    if raw.get() == "null" {
        return Ok(None);
    }
    let text: String = serde_json::from_str(raw.get())
        .map_err(|_| EnvelopeError(format!("envelope {what} must be a string")))?;
    match encoding {
        None | Some("text") => Ok(Some(text.into_bytes())),
        Some("base64") => BASE64
            .decode(text.as_bytes())
            .map(Some)
            .map_err(|err| EnvelopeError(format!("envelope {what} is not valid base64: {err}"))),
        Some(other) => Err(EnvelopeError(format!(
            "envelope {what}_encoding '{other}' is not text or base64"
        ))),
    }
}

fn header_value(v: &Value, name: &str) -> Result<Option<Vec<u8>>, EnvelopeError> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.as_bytes().to_vec())),
        Value::Object(o) => match o.get("base64") {
            Some(Value::String(b)) => BASE64.decode(b.as_bytes()).map(Some).map_err(|err| {
                EnvelopeError(format!("header '{name}' is not valid base64: {err}"))
            }),
            _ => Err(EnvelopeError(format!(
                "header '{name}' must be a string, null or {{\"base64\":...}}"
            ))),
        },
        // Other JSON (numbers, booleans) as written.
        other => Ok(Some(other.to_string().into_bytes())),
    }
}

/// A JSON value as a message key's text: a string's characters, any other value's JSON text
/// as the record writes it. (A string whose escapes name no Unicode text keeps its JSON text.)
pub fn key_text(raw: &str) -> Cow<'_, str> {
    match raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        Some(inner) if !inner.contains('\\') => Cow::Borrowed(inner),
        Some(_) => serde_json::from_str::<String>(raw)
            .map(Cow::Owned)
            .unwrap_or(Cow::Borrowed(raw)),
        None => Cow::Borrowed(raw),
    }
}

/// Whether `text`, a message key, spells the state key made of the fields `parts` (their
/// raw JSON texts): one field is its `key_text`; several are the JSON array of their values as
/// the record writes them, with no spaces (`["m-42",7]`).
pub fn spells_state_key(text: &str, parts: &[&str]) -> bool {
    if let [one] = parts {
        return text == key_text(one);
    }
    let Some(mut rest) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) else {
        return false;
    };
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            let Some(after) = rest.strip_prefix(',') else {
                return false;
            };
            rest = after;
        }
        let Some(after) = rest.strip_prefix(part) else {
            return false;
        };
        rest = after;
    }
    rest.is_empty()
}

/// The state key of `parts` spelled as a message key (see `spells_state_key`).
pub fn state_key_text(parts: &[&str]) -> String {
    let mut text = String::new();
    write_state_key(&mut text, parts);
    text
}

/// Appends the state key of `parts` to `out`, spelled as `state_key_text` spells it.
pub fn write_state_key(out: &mut String, parts: &[&str]) {
    if let [one] = parts {
        out.push_str(&key_text(one));
        return;
    }
    out.push('[');
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(part);
    }
    out.push(']');
}

/// Where a record keyed by its state key comes from: a topic partition or a stream's shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyedBy {
    /// A Kafka record's message key.
    MessageKey,
    /// A Kinesis record's partition key.
    PartitionKey,
}

/// Checks that a record is keyed by its state key, as a member that keeps state per
/// partition or shard needs (`-G`): the envelope's `key` (`key`, raw JSON: a string, or
/// null; `base64` when `key_encoding` says the key is not UTF-8) must spell the state key of
/// `parts`, the fields `flag` names. Why not, otherwise, with the remedy for `by`'s source.
pub fn check_keyed(
    key: Option<&str>,
    base64: bool,
    parts: &[&str],
    (flag, by): (&str, KeyedBy),
) -> Result<(), String> {
    let text = key.filter(|k| k.starts_with('"') && !base64).map(key_text);
    if text.as_deref().is_some_and(|t| spells_state_key(t, parts)) {
        return Ok(());
    }
    let found = match (key, base64) {
        (Some(raw), false) if raw.starts_with('"') => format!("'{}'", key_text(raw)),
        (Some(_), true) => "binary".to_string(),
        _ => "none".to_string(),
    };
    let value = state_key_text(parts);
    Err(match by {
        KeyedBy::MessageKey => format!(
            "with -G each partition keeps the state of its own keys, which holds only when every record is keyed by its {flag} value, but this record's message key is {found} and its {flag} value '{value}': the topic is not keyed by {flag}; add --repartition, which shuffles the records by {flag} through a topic of the group's, or read it without -G"
        ),
        KeyedBy::PartitionKey => format!(
            "with -G each shard keeps the state of its own keys, which holds only when every record's partition key is its {flag} value, but this record's partition key is {found} and its {flag} value '{value}': the stream is not keyed by {flag}; write it to a stream keyed by it first (weir consume kinesis://STREAM -o kinesis://STREAM2 --key FIELD) and read that one with -G, or read it without -G"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message key spells a state key: one field's text, or the JSON array of several.
    #[test]
    fn message_keys_spell_state_keys() {
        assert!(spells_state_key("m-42", &["\"m-42\""]));
        assert!(spells_state_key("42", &["42"]));
        assert!(!spells_state_key("42", &["\"42 \""]));
        assert!(spells_state_key("a\"b", &[r#""a\"b""#]));
        assert!(spells_state_key(r#"["m-42",7]"#, &["\"m-42\"", "7"]));
        assert!(!spells_state_key(r#"["m-42",7]"#, &["\"m-42\"", "8"]));
        assert!(!spells_state_key(r#"["m-42", 7]"#, &["\"m-42\"", "7"]));
        assert!(!spells_state_key(r#"["m-42",7,1]"#, &["\"m-42\"", "7"]));
        assert_eq!(state_key_text(&["\"m\"", "7"]), r#"["m",7]"#);
        const KEY: (&str, KeyedBy) = ("--key", KeyedBy::MessageKey);
        const ID: (&str, KeyedBy) = ("--id", KeyedBy::MessageKey);
        assert!(check_keyed(Some("\"m-42\""), false, &["\"m-42\""], KEY).is_ok());
        let e = check_keyed(Some("\"e-1\""), false, &["\"m-42\""], KEY).unwrap_err();
        assert!(
            e.contains("message key is 'e-1' and its --key value 'm-42'"),
            "{e}"
        );
        // A base64 key's text is not the key: a binary key never spells a JSON value.
        let e = check_keyed(Some("\"bS00Mg==\""), true, &["\"bS00Mg==\""], KEY);
        assert!(e.unwrap_err().contains("message key is binary"));
        assert!(check_keyed(Some("null"), false, &["null"], ID).is_err());
        assert!(check_keyed(None, false, &["\"x\""], ID).is_err());
        let shard = ("--key", KeyedBy::PartitionKey);
        let e = check_keyed(Some("\"e-1\""), false, &["\"m-42\""], shard).unwrap_err();
        assert!(e.contains("partition key is 'e-1'"), "{e}");
        assert!(e.contains("--key FIELD"), "{e}");
    }
    use proptest::prelude::*;

    fn message<'a>(
        key: Option<&'a [u8]>,
        value: Option<&'a [u8]>,
        headers: Vec<(&'a str, Option<&'a [u8]>)>,
    ) -> Message<'a> {
        Message {
            topic: "t",
            partition: 3,
            partitions: 0,
            offset: 1042,
            timestamp: Some((1_795_867_201_234, TimestampType::Create)),
            key,
            value,
            headers,
            decoded: Decoded::default(),
        }
    }

    fn envelope(m: &Message<'_>) -> String {
        let mut out = Vec::new();
        write_envelope(&mut out, m);
        String::from_utf8(out).unwrap()
    }

    /// Found by the fuzzer: a numeric timestamp past the year 9999 was read, then written as
    /// text no reader takes back.
    #[test]
    fn a_numeric_timestamp_out_of_range_is_a_bad_envelope() {
        let line = |ts: &str| format!(r#"{{"offset":1,"timestamp":{ts},"value":1}}"#);
        let e = read_envelope(&line("3333333333333333342")).unwrap_err();
        assert!(e.0.contains("out of range"), "{}", e.0);
        assert!(read_envelope(&line(&(MAX_MILLIS + 1).to_string())).is_err());
        let r = read_envelope(&line(&MAX_MILLIS.to_string())).unwrap();
        assert_eq!(r.timestamp, Some(MAX_MILLIS));
        assert_eq!(
            read_envelope(&line(&MIN_MILLIS.to_string()))
                .unwrap()
                .timestamp,
            Some(MIN_MILLIS)
        );
    }

    #[test]
    fn design_example() {
        let m = message(
            Some(b"m-42"),
            Some(br#"{"amount":12.5}"#),
            vec![("h", Some(b"v"))],
        );
        assert_eq!(
            envelope(&m),
            r#"{"topic":"t","partition":3,"offset":1042,"timestamp":"2026-11-28T12:00:01.234Z","timestamp_type":"create","key":"m-42","headers":{"h":"v"},"value":{"amount":12.5}}"#
        );
    }

    #[test]
    fn markers_for_text_binary_and_tombstones() {
        let text = envelope(&message(None, Some(b"plain text"), vec![]));
        assert!(text.ends_with(r#""key":null,"value":"plain text","value_encoding":"text"}"#));
        let literal_null = envelope(&message(None, Some(b"null"), vec![]));
        assert!(literal_null.ends_with(r#""value":"null","value_encoding":"text"}"#));
        let tombstone = envelope(&message(None, None, vec![]));
        assert!(tombstone.ends_with(r#""value":null}"#));
        let binary = envelope(&message(Some(&[0xff, 0]), Some(&[0xc3, 0x28]), vec![]));
        assert!(binary.contains(r#""key":"/wA=","key_encoding":"base64""#));
        assert!(binary.ends_with(r#""value":"wyg=","value_encoding":"base64"}"#));
        let pretty = envelope(&message(None, Some(b"{\n \"a\": 1\n}"), vec![]));
        assert!(pretty.ends_with(r#""value":"{\n \"a\": 1\n}","value_encoding":"text"}"#));
    }

    #[test]
    fn repeated_and_binary_headers() {
        let m = message(
            None,
            Some(b"1"),
            vec![("a", Some(b"1")), ("b", None), ("a", Some(&[0xff]))],
        );
        assert!(envelope(&m).contains(r#""headers":{"a":["1",{"base64":"/w=="}],"b":null}"#));
    }

    #[test]
    fn value_lines() {
        let line = |v: Option<&[u8]>| {
            let mut out = Vec::new();
            write_value_line(&mut out, v);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(line(Some(br#"{"a":1}"#)), r#"{"a":1}"#);
        assert_eq!(line(Some(b"hello")), r#""hello""#);
        assert_eq!(line(Some(&[0xff])), r#"{"base64":"/w=="}"#);
        assert_eq!(line(None), "null");
    }

    #[test]
    fn kcat_formats() {
        let m = message(
            Some(b"k"),
            Some(b"v1"),
            vec![("a", Some(b"1")), ("b", None)],
        );
        let render = |f: &str| {
            let mut out = Vec::new();
            KcatFormat::parse(f).unwrap().write(&mut out, &m);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(render("%t/%p@%o %k=%s\\n"), "t/3@1042 k=v1\n");
        assert_eq!(
            render("%T %K %S %h 100%%\\t|"),
            "1795867201234 1 2 a=1,b= 100%\t|"
        );
        assert!(KcatFormat::parse("%z").is_err());
    }

    #[test]
    fn kcat_formats_of_a_kinesis_user_record() {
        let r = ShardRecord {
            stream: "orders",
            shard: "shardId-000000000001",
            shards: 0,
            sequence: "4959",
            subsequence: Some(2),
            arrival: Some(1_795_867_201_234),
            key: "m-42",
            value: b"v1",
            decoded: None,
        };
        let mut out = Vec::new();
        KcatFormat::parse("%t %p %o %k %K %s %S %T [%h]")
            .unwrap()
            .write(&mut out, &r);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "orders shardId-000000000001 4959 m-42 4 v1 2 1795867201234 []"
        );
    }

    fn bytes() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..12),
            "[ -~\n]{0,12}".prop_map(String::into_bytes),
            Just(b"null".to_vec()),
            Just(br#"{"a":[1,2.5,"x"]}"#.to_vec()),
            Just(b" 1".to_vec()),
        ]
    }

    proptest! {
        /// Whatever the bytes, the envelope is one line of JSON and reads back to them.
        #[test]
        fn round_trip(
            key in proptest::option::of(bytes()),
            value in proptest::option::of(bytes()),
            headers in proptest::collection::vec(("[ab]", proptest::option::of(bytes())), 0..4),
            partition in 0i32..100,
            ts in proptest::option::of(0i64..4_000_000_000_000),
        ) {
            let mut m = message(key.as_deref(), value.as_deref(),
                headers.iter().map(|(n, v)| (n.as_str(), v.as_deref())).collect());
            m.partition = partition;
            m.timestamp = ts.map(|t| (t, TimestampType::Create));
            let line = envelope(&m);
            prop_assert!(!line.contains('\n'));
            prop_assert!(serde_json::from_str::<Value>(&line).is_ok());
            let back = read_envelope(&line).unwrap();
            prop_assert_eq!(back.partition, Some(partition));
            prop_assert_eq!(back.timestamp, ts);
            prop_assert_eq!(back.key, key);
            prop_assert_eq!(back.value, value);
            // Per name, values keep their order.
            for name in ["a", "b"] {
                let sent: Vec<_> = headers.iter().filter(|(n, _)| n == name).map(|(_, v)| v.clone()).collect();
                let got: Vec<_> = back.headers.iter().filter(|(n, _)| n == name).map(|(_, v)| v.clone()).collect();
                prop_assert_eq!(sent, got);
            }
        }
    }
}
