//! Protobuf binary to one line of JSON, from compiled descriptors: each message's fields are
//! located in one scan of its bytes, then written in the order the `.proto` declares them.
//!
//! The JSON is the proto3 JSON mapping (as `MessageToDict` with the `.proto`'s own field names
//! and fields without presence always printed writes it): default-valued fields written, so a
//! zero field is not missing; a field with presence (a message, `optional`, a `oneof` member)
//! left out when absent; 64-bit integers as strings; enums by name (an unknown number as its
//! number); bytes as base64; non-finite floats as `"NaN"`, `"Infinity"`, `"-Infinity"`; the
//! well-known types as the mapping says (`Timestamp` as RFC 3339, `Duration` as `"1.5s"`,
//! wrappers as their value, `Struct`/`Value`/`ListValue` as JSON, `FieldMask` as a string,
//! `Any` with `@type`). A message field that occurs more than once is read as its last
//! occurrence (the encoder merges them; weir does not).

use std::collections::HashMap;

use prost_reflect::{DescriptorPool, FieldDescriptor, Kind, MessageDescriptor};
use smallvec::SmallVec;

use super::envelope::{
    json_string, write_base64_str, write_json_f32, write_json_f64, write_json_int, write_json_str,
};
pub use super::framing::DecodeError;
use super::time::{nanos_digits, write_seconds_nanos};

/// Nesting deeper than this is refused (a recursive message must not overflow the stack).
const MAX_DEPTH: usize = 100;

/// Every message of a descriptor pool compiled for decoding.
#[derive(Clone, Debug)]
pub struct ProtoDecoder {
    messages: Vec<MessageNode>,
    /// Each enum's values: number and JSON string.
    enums: Vec<Vec<(i32, Box<[u8]>)>>,
    by_name: HashMap<String, usize>,
}

#[derive(Clone, Debug, Default)]
struct MessageNode {
    full_name: String,
    fields: Vec<FieldNode>,
    /// A field's index by its number.
    by_number: HashMap<u32, usize>,
    wkt: Option<Wkt>,
}

#[derive(Clone, Debug)]
struct FieldNode {
    /// `"name":`
    key: Box<[u8]>,
    kind: FieldKind,
    shape: Shape,
    /// Left out when absent.
    presence: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Single,
    Repeated,
    Map(FieldKind, FieldKind),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FieldKind {
    Double,
    Float,
    Int32,
    Int64,
    Uint32,
    Uint64,
    Sint32,
    Sint64,
    Fixed32,
    Fixed64,
    Sfixed32,
    Sfixed64,
    Bool,
    String,
    Bytes,
    Enum(usize),
    Message(usize),
}

/// The well-known types the JSON mapping writes its own way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wkt {
    Timestamp,
    Duration,
    Wrapper,
    Struct,
    Value,
    ListValue,
    Empty,
    FieldMask,
    Any,
}

type Result<T> = std::result::Result<T, DecodeError>;

impl ProtoDecoder {
    /// Compiles every message of `pool`.
    pub fn new(pool: &DescriptorPool) -> ProtoDecoder {
        let descriptors: Vec<MessageDescriptor> = pool.all_messages().collect();
        let by_name: HashMap<String, usize> = (descriptors.iter().enumerate())
            .map(|(i, m)| (m.full_name().to_string(), i))
            .collect();
        let mut c = Compiler {
            by_name: &by_name,
            enums: Vec::new(),
            enum_index: HashMap::new(),
        };
        let messages = descriptors.iter().map(|m| c.message(m)).collect();
        ProtoDecoder {
            messages,
            enums: c.enums,
            by_name,
        }
    }

    /// The message of this full name, to decode with `decode`.
    pub fn message(&self, full_name: &str) -> Option<usize> {
        self.by_name.get(full_name).copied()
    }

    /// Appends the JSON of message `m` encoded in `bytes` to `out`. On an error `out` holds
    /// part of a record: the caller truncates it.
    pub fn decode(&self, m: usize, bytes: &[u8], out: &mut Vec<u8>) -> Result<()> {
        self.write_message(m, bytes, out, 0)
    }
}

/// Builds the nodes: messages by their place in the pool, enums as first met.
struct Compiler<'a> {
    by_name: &'a HashMap<String, usize>,
    enums: Vec<Vec<(i32, Box<[u8]>)>>,
    enum_index: HashMap<String, usize>,
}

impl Compiler<'_> {
    fn message(&mut self, m: &MessageDescriptor) -> MessageNode {
        let mut node = MessageNode {
            full_name: m.full_name().to_string(),
            wkt: well_known(m.full_name()),
            ..MessageNode::default()
        };
        for f in m.fields() {
            let shape = match f.kind() {
                Kind::Message(entry) if f.is_map() => Shape::Map(
                    self.kind(&entry.map_entry_key_field()),
                    self.kind(&entry.map_entry_value_field()),
                ),
                _ if f.is_list() => Shape::Repeated,
                _ => Shape::Single,
            };
            let mut key = Vec::with_capacity(f.name().len() + 3);
            write_json_str(&mut key, f.name());
            key.push(b':');
            node.by_number.insert(f.number(), node.fields.len());
            node.fields.push(FieldNode {
                key: key.into(),
                kind: self.kind(&f),
                shape,
                presence: shape == Shape::Single && f.supports_presence(),
            });
        }
        node
    }

    fn kind(&mut self, f: &FieldDescriptor) -> FieldKind {
        match f.kind() {
            Kind::Double => FieldKind::Double,
            Kind::Float => FieldKind::Float,
            Kind::Int32 => FieldKind::Int32,
            Kind::Int64 => FieldKind::Int64,
            Kind::Uint32 => FieldKind::Uint32,
            Kind::Uint64 => FieldKind::Uint64,
            Kind::Sint32 => FieldKind::Sint32,
            Kind::Sint64 => FieldKind::Sint64,
            Kind::Fixed32 => FieldKind::Fixed32,
            Kind::Fixed64 => FieldKind::Fixed64,
            Kind::Sfixed32 => FieldKind::Sfixed32,
            Kind::Sfixed64 => FieldKind::Sfixed64,
            Kind::Bool => FieldKind::Bool,
            Kind::String => FieldKind::String,
            Kind::Bytes => FieldKind::Bytes,
            Kind::Message(m) => FieldKind::Message(self.by_name[m.full_name()]),
            Kind::Enum(e) => {
                let next = self.enums.len();
                let at = *self
                    .enum_index
                    .entry(e.full_name().to_string())
                    .or_insert(next);
                if at == next {
                    let values = e
                        .values()
                        .map(|v| (v.number(), json_string(v.name()).into()));
                    self.enums.push(values.collect());
                }
                FieldKind::Enum(at)
            }
        }
    }
}

fn well_known(full_name: &str) -> Option<Wkt> {
    Some(match full_name.strip_prefix("google.protobuf.")? {
        "Timestamp" => Wkt::Timestamp,
        "Duration" => Wkt::Duration,
        "DoubleValue" | "FloatValue" | "Int64Value" | "UInt64Value" | "Int32Value"
        | "UInt32Value" | "BoolValue" | "StringValue" | "BytesValue" => Wkt::Wrapper,
        "Struct" => Wkt::Struct,
        "Value" => Wkt::Value,
        "ListValue" => Wkt::ListValue,
        "Empty" => Wkt::Empty,
        "FieldMask" => Wkt::FieldMask,
        "Any" => Wkt::Any,
        _ => return None,
    })
}

/// One field of a message's bytes: its number, wire type and data (a varint's bytes, a
/// fixed value's, or a length-delimited payload).
type Raw = (u32, u8, usize, usize);

/// Every field of `bytes` in the order written.
fn scan_raw(bytes: &[u8]) -> Result<SmallVec<[Raw; 16]>> {
    let mut r = Wire { b: bytes, at: 0 };
    let mut out = SmallVec::new();
    while r.at < bytes.len() {
        let tag = r.varint()?;
        let (number, wire) = ((tag >> 3) as u32, (tag & 7) as u8);
        if number == 0 {
            return Err(DecodeError::new("field number 0"));
        }
        let (start, end) = match wire {
            0 => {
                let start = r.at;
                r.varint()?;
                (start, r.at)
            }
            1 => r.take(8)?,
            2 => {
                let len = r.varint()?;
                let len = usize::try_from(len)
                    .map_err(|_| DecodeError::new(format!("a length of {len}")))?;
                r.take(len)?
            }
            5 => r.take(4)?,
            3 | 4 => {
                return Err(DecodeError::new(
                    "a group (wire type 3), which weir does not read",
                ))
            }
            w => return Err(DecodeError::new(format!("wire type {w}"))),
        };
        out.push((number, wire, start, end));
    }
    Ok(out)
}

/// Protobuf's wire primitives over a payload.
struct Wire<'a> {
    b: &'a [u8],
    at: usize,
}

impl Wire<'_> {
    fn varint(&mut self) -> Result<u64> {
        let mut value: u64 = 0;
        for shift in (0..70).step_by(7) {
            let byte = *self.b.get(self.at).ok_or_else(truncated)?;
            self.at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(DecodeError::new("a varint longer than 10 bytes"))
    }

    /// The span of the next `n` bytes.
    fn take(&mut self, n: usize) -> Result<(usize, usize)> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(truncated)?;
        let start = std::mem::replace(&mut self.at, end);
        Ok((start, end))
    }
}

fn truncated() -> DecodeError {
    DecodeError::new("the payload ends early (truncated)")
}

fn varint_of(data: &[u8]) -> Result<u64> {
    Wire { b: data, at: 0 }.varint()
}

fn zigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// The wire type a field of `kind` is written with (not packed).
fn wire_of(kind: FieldKind) -> u8 {
    use FieldKind::*;
    match kind {
        Double | Fixed64 | Sfixed64 => 1,
        Float | Fixed32 | Sfixed32 => 5,
        String | Bytes | Message(_) => 2,
        _ => 0,
    }
}

impl ProtoDecoder {
    fn write_message(&self, m: usize, bytes: &[u8], out: &mut Vec<u8>, depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(DecodeError::new(format!(
                "nested more than {MAX_DEPTH} deep"
            )));
        }
        let node = &self.messages[m];
        if let Some(wkt) = node.wkt {
            return self.write_well_known(wkt, node, bytes, out, depth);
        }
        // Each known field's occurrences, grouped by field in the order written.
        let mut found: SmallVec<[(usize, Raw); 16]> = SmallVec::new();
        for raw in scan_raw(bytes)? {
            if let Some(&i) = node.by_number.get(&raw.0) {
                found.push((i, raw));
            }
        }
        found.sort_by_key(|(i, _)| *i);
        out.push(b'{');
        let (mut first, mut at) = (true, 0);
        for (i, f) in node.fields.iter().enumerate() {
            let begin = at;
            while at < found.len() && found[at].0 == i {
                at += 1;
            }
            if begin == at && f.presence {
                continue;
            }
            if !std::mem::take(&mut first) {
                out.push(b',');
            }
            out.extend_from_slice(&f.key);
            let mine = found[begin..at].iter().map(|(_, raw)| *raw);
            self.write_field(f, mine, bytes, out, depth)
                .map_err(|e| e.in_field(&f.key))?;
        }
        out.push(b'}');
        Ok(())
    }

    fn write_field(
        &self,
        f: &FieldNode,
        mut mine: impl DoubleEndedIterator<Item = Raw>,
        bytes: &[u8],
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<()> {
        match f.shape {
            Shape::Single => match mine.next_back() {
                Some(raw) => self.write_one(f.kind, raw, bytes, out, depth),
                None => self.write_default(f.kind, out),
            },
            Shape::Repeated => {
                out.push(b'[');
                let mut first = true;
                for raw in mine {
                    self.write_items(f.kind, raw, bytes, out, depth, &mut first)?;
                }
                out.push(b']');
                Ok(())
            }
            Shape::Map(key, value) => {
                out.push(b'{');
                for (n, (_, _, start, end)) in mine.enumerate() {
                    if n > 0 {
                        out.push(b',');
                    }
                    self.write_entry(key, value, &bytes[start..end], out, depth)?;
                }
                out.push(b'}');
                Ok(())
            }
        }
    }

    /// The items of one occurrence of a repeated field: one, or a packed run of scalars.
    fn write_items(
        &self,
        kind: FieldKind,
        raw: Raw,
        bytes: &[u8],
        out: &mut Vec<u8>,
        depth: usize,
        first: &mut bool,
    ) -> Result<()> {
        let (_, wire, start, end) = raw;
        let packed = wire == 2 && wire_of(kind) != 2;
        if !packed {
            if !std::mem::take(first) {
                out.push(b',');
            }
            return self.write_one(kind, raw, bytes, out, depth);
        }
        let mut r = Wire {
            b: &bytes[..end],
            at: start,
        };
        while r.at < end {
            if !std::mem::take(first) {
                out.push(b',');
            }
            let item = match wire_of(kind) {
                0 => {
                    let s = r.at;
                    r.varint()?;
                    (0, 0, s, r.at)
                }
                1 => (0, 1, r.take(8)?.0, r.at),
                _ => (0, 5, r.take(4)?.0, r.at),
            };
            self.write_one(kind, item, bytes, out, depth)?;
        }
        Ok(())
    }

    /// One value of `kind` from its raw field.
    fn write_one(
        &self,
        kind: FieldKind,
        raw: Raw,
        bytes: &[u8],
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<()> {
        let (_, wire, start, end) = raw;
        if wire != wire_of(kind) {
            return Err(DecodeError::new(format!(
                "wire type {wire}, where the schema's type has {}",
                wire_of(kind)
            )));
        }
        let data = &bytes[start..end];
        match kind {
            FieldKind::String => {
                let text = std::str::from_utf8(data)
                    .map_err(|_| DecodeError::new("a string that is not UTF-8"))?;
                write_json_str(out, text);
            }
            FieldKind::Bytes => write_base64_str(out, data),
            FieldKind::Message(m) => self.write_message(m, data, out, depth + 1)?,
            FieldKind::Enum(e) => {
                let n = varint_of(data)? as i32;
                match self.enums[e].iter().find(|(v, _)| *v == n) {
                    Some((_, name)) => out.extend_from_slice(name),
                    None => write_json_int(out, n),
                }
            }
            scalar => write_scalar(scalar, data, out)?,
        }
        Ok(())
    }

    /// An absent field without presence: its type's zero.
    fn write_default(&self, kind: FieldKind, out: &mut Vec<u8>) -> Result<()> {
        use FieldKind::*;
        out.extend_from_slice(match kind {
            Int64 | Uint64 | Sint64 | Fixed64 | Sfixed64 => b"\"0\"",
            Bool => b"false",
            String | Bytes => b"\"\"",
            Message(_) => b"null",
            Double | Float => b"0.0",
            Enum(e) => {
                let values = &self.enums[e];
                let zero = values.iter().find(|(n, _)| *n == 0).or(values.first());
                match zero {
                    Some((_, name)) => name,
                    None => b"0",
                }
            }
            _ => b"0",
        });
        Ok(())
    }

    /// A map entry (key 1, value 2) as `"key":value`.
    fn write_entry(
        &self,
        key: FieldKind,
        value: FieldKind,
        entry: &[u8],
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<()> {
        let fields = scan_raw(entry)?;
        let last = |n: u32| fields.iter().rev().find(|f| f.0 == n).copied();
        // Keys are strings in JSON: a number or bool key is quoted.
        let mark = out.len();
        match last(1) {
            Some(raw) => self.write_one(key, raw, entry, out, depth)?,
            None => self.write_default(key, out)?,
        }
        if out.get(mark) != Some(&b'"') {
            out.insert(mark, b'"');
            out.push(b'"');
        }
        out.push(b':');
        match last(2) {
            Some(raw) => self.write_one(value, raw, entry, out, depth),
            None => self.write_default(value, out),
        }
    }
}

fn write_quoted(out: &mut Vec<u8>, v: impl itoa::Integer) {
    out.push(b'"');
    write_json_int(out, v);
    out.push(b'"');
}

/// A number or bool from a varint's or a fixed value's bytes.
fn write_scalar(kind: FieldKind, data: &[u8], out: &mut Vec<u8>) -> Result<()> {
    use FieldKind::*;
    let fixed4 = || u32::from_le_bytes(data.try_into().expect("4 bytes"));
    let fixed8 = || u64::from_le_bytes(data.try_into().expect("8 bytes"));
    match kind {
        Int32 => write_json_int(out, varint_of(data)? as i32),
        Int64 => write_quoted(out, varint_of(data)? as i64),
        Uint32 => write_json_int(out, varint_of(data)? as u32),
        Uint64 => write_quoted(out, varint_of(data)?),
        Sint32 => write_json_int(out, zigzag(varint_of(data)?) as i32),
        Sint64 => write_quoted(out, zigzag(varint_of(data)?)),
        Bool => out.extend_from_slice(if varint_of(data)? != 0 {
            b"true"
        } else {
            b"false"
        }),
        Fixed32 => write_json_int(out, fixed4()),
        Sfixed32 => write_json_int(out, fixed4() as i32),
        Fixed64 => write_quoted(out, fixed8()),
        Sfixed64 => write_quoted(out, fixed8() as i64),
        Float => write_json_f32(out, f32::from_bits(fixed4())),
        Double => write_json_f64(out, f64::from_bits(fixed8())),
        _ => unreachable!("write_scalar takes numbers and bools"),
    }
    Ok(())
}

impl ProtoDecoder {
    /// The well-known types, as the JSON mapping writes them.
    fn write_well_known(
        &self,
        wkt: Wkt,
        node: &MessageNode,
        bytes: &[u8],
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<()> {
        let fields = scan_raw(bytes)?;
        let last = |n: u32| fields.iter().rev().find(|f| f.0 == n).copied();
        let of = |n: u32| fields.iter().filter(move |f| f.0 == n).copied();
        let varint = |n: u32| -> Result<u64> {
            match last(n) {
                Some((_, 0, s, e)) => varint_of(&bytes[s..e]),
                Some((_, w, ..)) => Err(DecodeError::new(format!(
                    "wire type {w} in a {}",
                    node.full_name
                ))),
                None => Ok(0),
            }
        };
        match wkt {
            Wkt::Timestamp => {
                let (seconds, nanos) = (varint(1)? as i64, varint(2)? as i32);
                let nanos = u32::try_from(nanos)
                    .map_err(|_| DecodeError::new("negative nanos in a Timestamp"))?;
                if !write_seconds_nanos(out, seconds, nanos, nanos_digits(nanos), true) {
                    let reason = format!("a Timestamp of {seconds} s outside years 0 to 9999");
                    return Err(DecodeError::new(reason));
                }
            }
            Wkt::Duration => write_duration(out, varint(1)? as i64, varint(2)? as i32),
            Wkt::Wrapper | Wkt::Struct | Wkt::ListValue => {
                let f = &node.fields[0];
                self.write_field(f, of(1), bytes, out, depth)?;
            }
            Wkt::Value => match fields.last() {
                None | Some((1, ..)) => out.extend_from_slice(b"null"),
                Some(&(n, ..)) => {
                    let f = node.by_number.get(&n).map(|&i| &node.fields[i]);
                    let f = f.ok_or_else(|| {
                        DecodeError::new(format!("field {n} in a google.protobuf.Value"))
                    })?;
                    self.write_field(f, of(n), bytes, out, depth)?;
                }
            },
            Wkt::Empty => out.extend_from_slice(b"{}"),
            Wkt::FieldMask => {
                let mut paths = Vec::new();
                for (_, _, s, e) in of(1) {
                    let path = std::str::from_utf8(&bytes[s..e])
                        .map_err(|_| DecodeError::new("a path that is not UTF-8"))?;
                    paths.push(lower_camel(path));
                }
                write_json_str(out, &paths.join(","));
            }
            Wkt::Any => self.write_any(
                last(1).map(|(_, _, s, e)| &bytes[s..e]),
                last(2).map(|(_, _, s, e)| &bytes[s..e]),
                out,
                depth,
            )?,
        }
        Ok(())
    }

    /// An `Any`: its message with `@type` first; a well-known type's JSON under `value`.
    fn write_any(
        &self,
        url: Option<&[u8]>,
        value: Option<&[u8]>,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<()> {
        let url = std::str::from_utf8(url.unwrap_or_default())
            .map_err(|_| DecodeError::new("a type URL that is not UTF-8"))?;
        let name = url.rsplit('/').next().unwrap_or_default();
        let m = self.message(name).ok_or_else(|| {
            DecodeError::new(format!(
                "an Any of type '{url}', which the schema does not hold"
            ))
        })?;
        out.extend_from_slice(b"{\"@type\":");
        write_json_str(out, url);
        if self.messages[m].wkt.is_some() {
            out.extend_from_slice(b",\"value\":");
            self.write_message(m, value.unwrap_or_default(), out, depth + 1)?;
            out.push(b'}');
            return Ok(());
        }
        let mark = out.len();
        self.write_message(m, value.unwrap_or_default(), out, depth + 1)?;
        // The message's own braces give way to the Any's.
        if out.len() - mark == 2 {
            out.truncate(mark);
            out.push(b'}');
        } else {
            out[mark] = b',';
        }
        Ok(())
    }
}

/// A `Duration` as the JSON mapping writes it: `"-1.500s"`.
fn write_duration(out: &mut Vec<u8>, seconds: i64, nanos: i32) {
    out.push(b'"');
    if seconds < 0 || nanos < 0 {
        out.push(b'-');
    }
    write_json_int(out, seconds.unsigned_abs());
    let nanos = nanos.unsigned_abs();
    let digits = nanos_digits(nanos);
    if digits > 0 {
        let text = format!("{nanos:09}");
        out.push(b'.');
        out.extend_from_slice(&text.as_bytes()[..digits]);
    }
    out.extend_from_slice(b"s\"");
}

/// `foo_bar.baz_qux` as `fooBar.bazQux`, as a `FieldMask` path is written in JSON.
fn lower_camel(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut upper = false;
    for c in path.chars() {
        match c {
            '_' => upper = true,
            c if upper => {
                out.extend(c.to_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use prost::Message as _;
    use prost_reflect::{DynamicMessage, SerializeOptions};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use serde_json::{json, Value};

    use super::*;

    fn pool() -> DescriptorPool {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/schema");
        let files = protox::compile(["checkout.proto"], [dir]).unwrap();
        DescriptorPool::from_file_descriptor_set(files).unwrap()
    }

    fn text(rng: &mut ChaCha8Rng) -> String {
        let pieces = ["a", "é", "\"", "\\", "\n", "😀", "\u{0}", " "];
        (0..rng.random_range(0..4))
            .map(|_| pieces[rng.random_range(0..pieces.len())])
            .collect()
    }

    fn line(rng: &mut ChaCha8Rng) -> Value {
        json!({"sku": format!("s{}", rng.random_range(0..9)), "qty": rng.random_range(-3..300)})
    }

    /// A random Checkout as proto3 JSON, each field present or not.
    fn checkout(rng: &mut ChaCha8Rng) -> Value {
        let nanos = [0, 500_000_000, 123_000, 7][rng.random_range(0..4)];
        let seconds: i64 = rng.random_range(-2_000_000_000..4_000_000_000);
        let ts = chrono::DateTime::from_timestamp(seconds, nanos).unwrap();
        let n = |rng: &mut ChaCha8Rng| rng.random_range(0..3);
        let mut all = vec![
            ("event_id", json!(text(rng))),
            (
                "occurred_at",
                json!(ts.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)),
            ),
            ("amount_cents", json!(rng.random::<i64>().to_string())),
            ("status", json!(["PAID", "FAILED"][rng.random_range(0..2)])),
        ];
        let tags: Vec<String> = (0..n(rng)).map(|_| text(rng)).collect();
        all.push(("tags", json!(tags)));
        let counts: serde_json::Map<String, Value> = (0..n(rng))
            .map(|i| (format!("k{i}"), json!(rng.random::<i32>())))
            .collect();
        all.push(("counts", Value::Object(counts)));
        all.push(("raw", json!(["", "AP8=", "aGVsbG8="][n(rng)])));
        all.push(("ratio", json!(rng.random_range(-1e6..1e6))));
        all.push(("weight", json!(rng.random_range(-1000..1000) as f32 / 8.0)));
        all.push(("ok", json!(rng.random_bool(0.5))));
        all.push(("big", json!(rng.random::<u64>().to_string())));
        all.push(("delta", json!(rng.random::<i32>())));
        all.push(("note", json!(text(rng))));
        let payment = ["card", "iban"][rng.random_range(0..2)];
        all.push((payment, json!(text(rng))));
        all.push((
            "took",
            json!(["1.500s", "-0.000001s", "0s", "3600s"][rng.random_range(0..4)]),
        ));
        all.push(("retries", json!(rng.random_range(-5..5))));
        all.push((
            "attrs",
            json!({"a": 1.5, "b": [true, null, "x"], "c": {"d": -2.0}}),
        ));
        all.push(("line", line(rng)));
        let lines: Vec<Value> = (0..n(rng)).map(|_| line(rng)).collect();
        all.push(("lines", json!(lines)));
        all.push((
            "total",
            json!({"units": rng.random::<i64>().to_string(), "currency": "EUR"}),
        ));
        all.push(("f64", json!(rng.random::<u64>().to_string())));
        all.push(("sf32", json!(rng.random::<i32>())));
        let packed: Vec<i32> = (0..n(rng) * 2).map(|_| rng.random()).collect();
        all.push(("packed", json!(packed)));
        let by_id: serde_json::Map<String, Value> = (0..n(rng))
            .map(|_| (rng.random::<i64>().to_string(), line(rng)))
            .collect();
        all.push(("by_id", Value::Object(by_id)));
        let kept = all.into_iter().filter(|_| rng.random_bool(0.6));
        Value::Object(kept.map(|(k, v)| (k.to_string(), v)).collect())
    }

    #[test]
    fn random_messages_decode_as_prost_reflect_writes_their_json() {
        let pool = pool();
        let decoder = ProtoDecoder::new(&pool);
        let desc = pool.get_message_by_name("acme.Checkout").unwrap();
        let m = decoder.message("acme.Checkout").unwrap();
        let options = SerializeOptions::new()
            .use_proto_field_name(true)
            .skip_default_fields(false)
            .stringify_64_bit_integers(true);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for _ in 0..2_000 {
            let json = checkout(&mut rng);
            let message = DynamicMessage::deserialize(desc.clone(), json.clone())
                .unwrap_or_else(|e| panic!("{json}: {e}"));
            let bytes = message.encode_to_vec();
            let mut out = Vec::new();
            decoder
                .decode(m, &bytes, &mut out)
                .unwrap_or_else(|e| panic!("{json}: {e}"));
            let ours: Value = serde_json::from_slice(&out)
                .unwrap_or_else(|e| panic!("{}: {e}", String::from_utf8_lossy(&out)));
            let theirs = message
                .serialize_with_options(serde_json::value::Serializer, &options)
                .unwrap();
            // Through the same text and parser as ours (serde_json's parse may miss by an ulp).
            let theirs: Value = serde_json::from_str(&theirs.to_string()).unwrap();
            assert_eq!(ours, theirs, "from {json}");
            for cut in 0..bytes.len() {
                // A cut payload is an error or, cut at a field's end, fewer fields: never a panic.
                let _ = decoder.decode(m, &bytes[..cut], &mut Vec::new());
            }
        }
    }
}
