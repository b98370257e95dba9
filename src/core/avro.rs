//! Avro binary to one line of JSON, streamed from a compiled schema: no value tree in
//! between, so decoding costs about what writing the JSON costs.
//!
//! Two shapes of JSON (`AvroJson`):
//! - `Weir`, for shell users: unions bare (`"note":"x"`), decimals as exact decimal strings
//!   that keep their scale (`"12.50"`), timestamps as RFC 3339 UTC ending in `Z`, dates as
//!   `YYYY-MM-DD`, times of day as `HH:MM:SS.fff`, bytes and fixed as base64, enums as their
//!   symbols, maps as objects (in the order they were written), UUIDs as text, durations as
//!   `{"months":..,"days":..,"millis":..}`;
//! - `Spec`, the Avro specification's JSON encoding: a union's value tagged with its branch's
//!   type name unless null, bytes and fixed as strings of code points 0-255, logical types as
//!   their underlying type.
//!
//! Floats are written in their shortest form; NaN and infinities, which JSON lacks, as the
//! strings `"NaN"`, `"Infinity"` and `"-Infinity"`.

use std::collections::HashMap;

use smallvec::SmallVec;

use apache_avro::schema::{InnerDecimalSchema, Name, Schema, UuidSchema};

use super::envelope::{
    json_string, write_base64_str, write_json_f32, write_json_f64, write_json_int, write_json_str,
};
pub use super::framing::DecodeError;
use super::time::{write_date, write_instant, write_time_of_day, Unit};

/// The JSON a decoded record becomes: see the module's documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AvroJson {
    #[default]
    Weir,
    Spec,
}

/// Nesting deeper than this is refused: a recursive schema must not let a payload overflow
/// the stack.
const MAX_DEPTH: usize = 256;

/// A schema compiled for decoding.
#[derive(Clone, Debug)]
pub struct AvroDecoder {
    pub(super) nodes: Vec<Node>,
    pub(super) root: usize,
    pub(super) style: AvroJson,
}

#[derive(Clone, Debug)]
pub(super) enum Node {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
    /// Each field's `"name":` and node.
    Record(Vec<(Box<[u8]>, usize)>),
    /// Each symbol as a JSON string.
    Enum(Vec<Box<[u8]>>),
    Array(usize),
    Map(usize),
    /// Each branch's node and, for `Spec`, its `{"type":` opening.
    Union(Vec<(usize, Box<[u8]>)>),
    Fixed(usize),
    /// A decimal of this scale in bytes, or in a fixed of this size.
    Decimal(u32, Option<usize>),
    /// A UUID in a string, or in 16 fixed bytes.
    Uuid(bool),
    Date,
    /// A time of day in ms, or in µs.
    Time(Unit),
    /// An instant since the epoch in this unit; local (no `Z`) or UTC.
    Timestamp(Unit, bool),
    Duration,
    /// A writer's record read into a reader's (`--reader-schema`).
    Resolved(Box<ResolvedRecord>),
    /// A writer's number or text read as the reader's wider type.
    Promote(Prim, Prim),
    /// A writer's branch, field or symbol the reader schema has no place for: this error.
    Fail(Box<str>),
    /// A writer's value read into a reader's union: in `Spec`, tagged with the branch.
    Tagged(usize, Box<[u8]>),
    /// A writer's union read into a reader's type that is no union: untagged.
    Branches(Vec<usize>),
}

/// A record resolved against a reader's: the writer's fields in their order, each kept in a
/// reader slot or skipped, and the reader's fields in theirs, from a slot or a default.
#[derive(Clone, Debug)]
pub(super) struct ResolvedRecord {
    pub writer: Vec<(Option<usize>, usize)>,
    pub reader: Vec<(Box<[u8]>, Source)>,
}

#[derive(Clone, Debug)]
pub(super) enum Source {
    Slot(usize),
    /// The default's JSON.
    Default(Box<[u8]>),
}

/// The types a promotion reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Prim {
    Int,
    Long,
    Float,
    Double,
    String,
    Bytes,
}

impl AvroDecoder {
    /// Compiles `schema`; `named` are the schemas its named types may refer to (a registry's
    /// references), compiled first.
    pub fn new(schema: &Schema, named: &[Schema], style: AvroJson) -> Result<Self, String> {
        let mut c = Compiler {
            nodes: Vec::new(),
            names: HashMap::new(),
            style,
        };
        for s in named {
            c.compile(s, None)?;
        }
        let root = c.compile(schema, None)?;
        Ok(AvroDecoder {
            nodes: c.nodes,
            root,
            style,
        })
    }

    /// Appends the JSON of the Avro datum `bytes` to `out`. The datum must fill `bytes`.
    /// On an error `out` holds part of a record: the caller truncates it.
    pub fn decode(&self, bytes: &[u8], out: &mut Vec<u8>) -> Result<(), DecodeError> {
        let mut r = Reader { b: bytes, at: 0 };
        self.write(self.root, &mut r, out, 0)?;
        if r.at != bytes.len() {
            let left = bytes.len() - r.at;
            return Err(DecodeError::new(format!(
                "{left} bytes past the end of the record"
            )));
        }
        Ok(())
    }

    fn write(
        &self,
        n: usize,
        r: &mut Reader,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), DecodeError> {
        if depth > MAX_DEPTH {
            return Err(DecodeError::new(format!(
                "nested more than {MAX_DEPTH} deep"
            )));
        }
        match &self.nodes[n] {
            Node::Null => out.extend_from_slice(b"null"),
            Node::Boolean => out.extend_from_slice(if r.boolean()? { b"true" } else { b"false" }),
            Node::Int => write_json_int(out, r.int()?),
            Node::Long => write_json_int(out, r.long()?),
            Node::Float => write_json_f32(
                out,
                r.fixed(4)
                    .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))?,
            ),
            Node::Double => write_json_f64(
                out,
                r.fixed(8)
                    .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))?,
            ),
            Node::Bytes => {
                let b = r.bytes()?;
                self.write_bytes(out, b);
            }
            Node::Fixed(size) => {
                let b = r.fixed(*size)?;
                self.write_bytes(out, b);
            }
            Node::String => write_json_str(out, r.string()?),
            Node::Record(fields) => self.write_record(fields, r, out, depth)?,
            Node::Enum(symbols) => {
                let i = r.long()?;
                let symbol = usize::try_from(i).ok().and_then(|i| symbols.get(i));
                let symbol = symbol.ok_or_else(|| {
                    DecodeError::new(format!("enum symbol {i} of {}", symbols.len()))
                })?;
                if symbol.is_empty() {
                    let why = format!("enum symbol {i} has no match in the reader schema");
                    return Err(DecodeError::new(why));
                }
                out.extend_from_slice(symbol);
            }
            Node::Array(item) => self.write_blocks(*item, false, r, out, depth)?,
            Node::Map(value) => self.write_blocks(*value, true, r, out, depth)?,
            Node::Union(branches) => self.write_union(branches, r, out, depth)?,
            Node::Resolved(record) => self.write_resolved(record, r, out, depth)?,
            Node::Promote(from, to) => self.write_promoted(*from, *to, r, out)?,
            Node::Fail(why) => return Err(DecodeError::new(why.to_string())),
            Node::Tagged(node, tag) => {
                let tagged = self.style == AvroJson::Spec;
                if tagged {
                    out.extend_from_slice(tag);
                }
                self.write(*node, r, out, depth + 1)?;
                if tagged {
                    out.push(b'}');
                }
            }
            Node::Branches(nodes) => {
                let i = r.long()?;
                let node = usize::try_from(i)
                    .ok()
                    .and_then(|i| nodes.get(i))
                    .ok_or_else(|| {
                        DecodeError::new(format!("union branch {i} of {}", nodes.len()))
                    })?;
                self.write(*node, r, out, depth + 1)?;
            }
            logical => self.write_logical(logical, r, out)?,
        }
        Ok(())
    }

    /// The writer's fields into slots (or skipped), then the reader's in its order.
    fn write_resolved(
        &self,
        record: &ResolvedRecord,
        r: &mut Reader,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), DecodeError> {
        let mut held = Vec::new();
        let mut slots: SmallVec<[(usize, usize); 16]> = SmallVec::new();
        slots.resize(record.reader.len(), (0, 0));
        for (slot, node) in &record.writer {
            let start = held.len();
            self.write(*node, r, &mut held, depth + 1)?;
            match slot {
                Some(s) => slots[*s] = (start, held.len()),
                None => held.truncate(start),
            }
        }
        out.push(b'{');
        for (i, (key, source)) in record.reader.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(key);
            match source {
                Source::Slot(s) => out.extend_from_slice(&held[slots[*s].0..slots[*s].1]),
                Source::Default(json) => out.extend_from_slice(json),
            }
        }
        out.push(b'}');
        Ok(())
    }

    /// A writer's `from` value as the reader's `to`.
    fn write_promoted(
        &self,
        from: Prim,
        to: Prim,
        r: &mut Reader,
        out: &mut Vec<u8>,
    ) -> Result<(), DecodeError> {
        let number = match from {
            Prim::Int | Prim::Long => r.long()? as f64,
            Prim::Float => f64::from(f32::from_le_bytes(r.fixed(4)?.try_into().expect("4 bytes"))),
            Prim::Double => f64::from_le_bytes(r.fixed(8)?.try_into().expect("8 bytes")),
            Prim::String | Prim::Bytes => {
                let b = r.bytes()?;
                match to {
                    Prim::Bytes => self.write_bytes(out, b),
                    _ => write_json_str(
                        out,
                        std::str::from_utf8(b).map_err(|_| {
                            DecodeError::new("bytes that are not UTF-8, read as a string")
                        })?,
                    ),
                }
                return Ok(());
            }
        };
        match to {
            Prim::Long => write_json_int(out, number as i64),
            Prim::Float => write_json_f32(out, number as f32),
            _ => write_json_f64(out, number),
        }
        Ok(())
    }

    fn write_record(
        &self,
        fields: &[(Box<[u8]>, usize)],
        r: &mut Reader,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), DecodeError> {
        out.push(b'{');
        for (i, (name, node)) in fields.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(name);
            self.write(*node, r, out, depth + 1)
                .map_err(|e| e.in_field(name))?;
        }
        out.push(b'}');
        Ok(())
    }

    /// An array's items or a map's entries, in blocks: a count (negative: followed by the
    /// block's size in bytes), the items, and a zero count at the end.
    fn write_blocks(
        &self,
        item: usize,
        map: bool,
        r: &mut Reader,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), DecodeError> {
        out.push(if map { b'{' } else { b'[' });
        let mut first = true;
        loop {
            let mut count = r.long()?;
            if count == 0 {
                break;
            }
            if count < 0 {
                count = count
                    .checked_neg()
                    .ok_or_else(|| DecodeError::new("a block count out of range"))?;
                r.long()?;
            }
            // Items of no bytes (nulls) could make a small payload write without end.
            if count as u64 > (r.left() as u64).max(1 << 16) {
                return Err(DecodeError::new(format!(
                    "a block of {count} items in {} bytes",
                    r.left()
                )));
            }
            for _ in 0..count {
                if !std::mem::take(&mut first) {
                    out.push(b',');
                }
                if map {
                    write_json_str(out, r.string()?);
                    out.push(b':');
                }
                self.write(item, r, out, depth + 1)?;
            }
        }
        out.push(if map { b'}' } else { b']' });
        Ok(())
    }

    fn write_union(
        &self,
        branches: &[(usize, Box<[u8]>)],
        r: &mut Reader,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), DecodeError> {
        let i = r.long()?;
        let (node, tag) = usize::try_from(i)
            .ok()
            .and_then(|i| branches.get(i))
            .ok_or_else(|| DecodeError::new(format!("union branch {i} of {}", branches.len())))?;
        let tagged = self.style == AvroJson::Spec && !matches!(self.nodes[*node], Node::Null);
        if tagged {
            out.extend_from_slice(tag);
        }
        self.write(*node, r, out, depth + 1)?;
        if tagged {
            out.push(b'}');
        }
        Ok(())
    }

    fn write_bytes(&self, out: &mut Vec<u8>, b: &[u8]) {
        match self.style {
            AvroJson::Weir => write_base64_str(out, b),
            AvroJson::Spec => {
                let text: String = b.iter().map(|&c| char::from(c)).collect();
                write_json_str(out, &text);
            }
        }
    }

    /// Logical types; in `Spec`, their underlying type.
    fn write_logical(
        &self,
        node: &Node,
        r: &mut Reader,
        out: &mut Vec<u8>,
    ) -> Result<(), DecodeError> {
        let spec = self.style == AvroJson::Spec;
        match *node {
            Node::Decimal(scale, fixed) => {
                let b = match fixed {
                    Some(size) => r.fixed(size)?,
                    None => r.bytes()?,
                };
                match spec {
                    true => self.write_bytes(out, b),
                    false => write_decimal(out, b, scale),
                }
            }
            Node::Uuid(fixed) => match fixed {
                true => {
                    let b = r.fixed(16)?;
                    match spec {
                        true => self.write_bytes(out, b),
                        false => write_uuid(out, b),
                    }
                }
                false => write_json_str(out, r.string()?),
            },
            Node::Date => {
                let days = r.int()?;
                match spec {
                    true => write_json_int(out, days),
                    false => write_date(out, days),
                }
            }
            Node::Time(unit) => {
                let t = if matches!(unit, Unit::Millis) {
                    i64::from(r.int()?)
                } else {
                    r.long()?
                };
                match spec {
                    true => write_json_int(out, t),
                    false => write_time_of_day(out, t, unit).map_err(DecodeError::new)?,
                }
            }
            Node::Timestamp(unit, local) => {
                let t = r.long()?;
                match spec {
                    true => write_json_int(out, t),
                    false => write_instant(out, t, unit, !local).map_err(DecodeError::new)?,
                }
            }
            Node::Duration => {
                let b = r.fixed(12)?;
                match spec {
                    true => self.write_bytes(out, b),
                    false => write_duration(out, b),
                }
            }
            _ => unreachable!("write_logical is called for logical types only"),
        }
        Ok(())
    }
}

/// The Avro binary encoding's primitives over a payload.
struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn left(&self) -> usize {
        self.b.len() - self.at
    }

    fn truncated() -> DecodeError {
        DecodeError::new("the payload ends early (truncated)")
    }

    /// A zig-zag varint of at most 10 bytes.
    fn long(&mut self) -> Result<i64, DecodeError> {
        let mut value: u64 = 0;
        for shift in (0..70).step_by(7) {
            let byte = *self.b.get(self.at).ok_or_else(Self::truncated)?;
            self.at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok((value >> 1) as i64 ^ -((value & 1) as i64));
            }
        }
        Err(DecodeError::new("a varint longer than 10 bytes"))
    }

    fn int(&mut self) -> Result<i32, DecodeError> {
        let v = self.long()?;
        i32::try_from(v).map_err(|_| DecodeError::new(format!("int {v} out of range")))
    }

    fn boolean(&mut self) -> Result<bool, DecodeError> {
        match self.fixed(1)?[0] {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(DecodeError::new(format!("boolean byte {b}"))),
        }
    }

    fn fixed(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.b.len());
        let end = end.ok_or_else(Self::truncated)?;
        let out = &self.b[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let len = self.long()?;
        let len = usize::try_from(len).map_err(|_| DecodeError::new(format!("length {len}")))?;
        self.fixed(len)
    }

    fn string(&mut self) -> Result<&'a str, DecodeError> {
        let b = self.bytes()?;
        std::str::from_utf8(b).map_err(|_| DecodeError::new("a string that is not UTF-8"))
    }
}

/// A big-endian two's complement unscaled value as a decimal string with `scale` places.
pub(super) fn write_decimal(out: &mut Vec<u8>, b: &[u8], scale: u32) {
    let digits = match b.len() {
        0 => "0".to_string(),
        1..=16 => {
            let fill = if b[0] & 0x80 != 0 { 0xff } else { 0 };
            let mut full = [fill; 16];
            full[16 - b.len()..].copy_from_slice(b);
            i128::from_be_bytes(full).to_string()
        }
        _ => num_bigint::BigInt::from_signed_bytes_be(b).to_string(),
    };
    let (negative, digits) = match digits.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, digits.as_str()),
    };
    out.push(b'"');
    if negative {
        out.push(b'-');
    }
    let scale = scale as usize;
    if scale == 0 {
        out.extend_from_slice(digits.as_bytes());
    } else {
        let padded = format!("{digits:0>width$}", width = scale + 1);
        let (whole, fraction) = padded.split_at(padded.len() - scale);
        out.extend_from_slice(whole.as_bytes());
        out.push(b'.');
        out.extend_from_slice(fraction.as_bytes());
    }
    out.push(b'"');
}

fn write_uuid(out: &mut Vec<u8>, b: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push(b'-');
        }
        out.push(HEX[usize::from(byte >> 4)]);
        out.push(HEX[usize::from(byte & 0xf)]);
    }
    out.push(b'"');
}

/// Three little-endian unsigned ints: months, days, milliseconds.
fn write_duration(out: &mut Vec<u8>, b: &[u8]) {
    let part = |i: usize| u32::from_le_bytes(b[i * 4..i * 4 + 4].try_into().expect("4 bytes"));
    out.extend_from_slice(b"{\"months\":");
    write_json_int(out, part(0));
    out.extend_from_slice(b",\"days\":");
    write_json_int(out, part(1));
    out.extend_from_slice(b",\"millis\":");
    write_json_int(out, part(2));
    out.push(b'}');
}

/// Builds the nodes of a schema, named types once each.
pub(super) struct Compiler {
    pub nodes: Vec<Node>,
    pub names: HashMap<String, usize>,
    pub style: AvroJson,
}

impl Compiler {
    pub(super) fn add(&mut self, node: Node) -> usize {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// The node of `s`, whose enclosing namespace is `ns`.
    pub(super) fn compile(&mut self, s: &Schema, ns: Option<&str>) -> Result<usize, String> {
        let node = match s {
            Schema::Null => Node::Null,
            Schema::Boolean => Node::Boolean,
            Schema::Int => Node::Int,
            Schema::Long => Node::Long,
            Schema::Float => Node::Float,
            Schema::Double => Node::Double,
            Schema::Bytes | Schema::BigDecimal => Node::Bytes,
            Schema::String => Node::String,
            Schema::Array(a) => {
                let item = self.compile(&a.items, ns)?;
                Node::Array(item)
            }
            Schema::Map(m) => {
                let value = self.compile(&m.types, ns)?;
                Node::Map(value)
            }
            Schema::Union(u) => self.union(u.variants(), ns)?,
            Schema::Record(r) => return self.record(&r.name, &r.fields, ns),
            Schema::Enum(e) => {
                let symbols = e.symbols.iter().map(|s| json_string(s).into()).collect();
                return Ok(self.named(&e.name, ns, Node::Enum(symbols)));
            }
            Schema::Fixed(f) => return Ok(self.named(&f.name, ns, Node::Fixed(f.size))),
            Schema::Ref { name } => return self.reference(name, ns),
            logical => {
                let (node, name) = self.logical(logical)?;
                let at = self.add(node);
                if let Some(name) = name {
                    // A reference to the fixed that carries it is the logical type too.
                    self.names.insert(name.fullname(ns), at);
                }
                return Ok(at);
            }
        };
        Ok(self.add(node))
    }

    /// A logical type's node, and the name of the fixed it is carried in, if any.
    fn logical(&mut self, s: &Schema) -> Result<(Node, Option<Name>), String> {
        let fixed_name = |f: &apache_avro::schema::FixedSchema| Some(f.name.clone());
        Ok(match s {
            Schema::Decimal(d) => {
                let scale = u32::try_from(d.scale).map_err(|_| "a decimal scale out of range")?;
                match &d.inner {
                    InnerDecimalSchema::Bytes => (Node::Decimal(scale, None), None),
                    InnerDecimalSchema::Fixed(f) => {
                        (Node::Decimal(scale, Some(f.size)), fixed_name(f))
                    }
                }
            }
            Schema::Uuid(UuidSchema::String) => (Node::Uuid(false), None),
            Schema::Uuid(UuidSchema::Bytes) => (Node::Bytes, None),
            Schema::Uuid(UuidSchema::Fixed(f)) => (Node::Uuid(true), fixed_name(f)),
            Schema::Duration(f) => (Node::Duration, fixed_name(f)),
            Schema::Date => (Node::Date, None),
            Schema::TimeMillis => (Node::Time(Unit::Millis), None),
            Schema::TimeMicros => (Node::Time(Unit::Micros), None),
            Schema::TimestampMillis => (Node::Timestamp(Unit::Millis, false), None),
            Schema::TimestampMicros => (Node::Timestamp(Unit::Micros, false), None),
            Schema::TimestampNanos => (Node::Timestamp(Unit::Nanos, false), None),
            Schema::LocalTimestampMillis => (Node::Timestamp(Unit::Millis, true), None),
            Schema::LocalTimestampMicros => (Node::Timestamp(Unit::Micros, true), None),
            Schema::LocalTimestampNanos => (Node::Timestamp(Unit::Nanos, true), None),
            other => return Err(format!("an Avro type weir does not know: {other:?}")),
        })
    }

    /// Registers a named type (an enum or a fixed) and returns its node.
    fn named(&mut self, name: &Name, ns: Option<&str>, node: Node) -> usize {
        let at = self.add(node);
        self.names.insert(name.fullname(ns), at);
        at
    }

    /// A record: its name is known before its fields, which may refer to it.
    fn record(
        &mut self,
        name: &Name,
        fields: &[apache_avro::schema::RecordField],
        ns: Option<&str>,
    ) -> Result<usize, String> {
        let at = self.add(Node::Null);
        self.names.insert(name.fullname(ns), at);
        let inner = name.namespace().or(ns).map(str::to_string);
        let mut compiled = Vec::with_capacity(fields.len());
        for f in fields {
            let mut key = json_string(&f.name);
            key.push(b':');
            compiled.push((key.into(), self.compile(&f.schema, inner.as_deref())?));
        }
        self.nodes[at] = Node::Record(compiled);
        Ok(at)
    }

    fn reference(&mut self, name: &Name, ns: Option<&str>) -> Result<usize, String> {
        let full = name.fullname(ns);
        (self.names.get(&full).copied())
            .ok_or_else(|| format!("the schema names '{full}', which it does not define"))
    }

    fn union(&mut self, variants: &[Schema], ns: Option<&str>) -> Result<Node, String> {
        let mut branches = Vec::with_capacity(variants.len());
        for v in variants {
            let node = self.compile(v, ns)?;
            let mut tag = b"{".to_vec();
            if self.style == AvroJson::Spec {
                tag.extend_from_slice(&json_string(&type_name(v, ns)));
                tag.push(b':');
            }
            branches.push((node, tag.into()));
        }
        Ok(Node::Union(branches))
    }
}

/// The name the spec's JSON encoding tags a union branch with.
pub(super) fn type_name(s: &Schema, ns: Option<&str>) -> String {
    let named = |n: &Name| n.fullname(ns);
    match s {
        Schema::Record(r) => named(&r.name),
        Schema::Enum(e) => named(&e.name),
        Schema::Fixed(f) | Schema::Duration(f) | Schema::Uuid(UuidSchema::Fixed(f)) => {
            named(&f.name)
        }
        Schema::Decimal(d) => match &d.inner {
            InnerDecimalSchema::Fixed(f) => named(&f.name),
            InnerDecimalSchema::Bytes => "bytes".into(),
        },
        Schema::Ref { name } => named(name),
        Schema::Array(_) => "array".into(),
        Schema::Map(_) => "map".into(),
        Schema::Null => "null".into(),
        Schema::Boolean => "boolean".into(),
        Schema::Int | Schema::Date | Schema::TimeMillis => "int".into(),
        Schema::Float => "float".into(),
        Schema::Double => "double".into(),
        Schema::Bytes | Schema::BigDecimal | Schema::Uuid(UuidSchema::Bytes) => "bytes".into(),
        Schema::String | Schema::Uuid(UuidSchema::String) => "string".into(),
        _ => "long".into(),
    }
}

#[cfg(test)]
mod tests {
    use apache_avro::types::Value as Avro;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use serde_json::{json, Value};

    use super::*;

    /// Random schemas, as JSON, with every type; each named type defined once.
    struct Gen {
        rng: ChaCha8Rng,
        names: usize,
    }

    impl Gen {
        fn name(&mut self) -> String {
            self.names += 1;
            format!("n{}", self.names)
        }

        fn schema(&mut self, depth: usize) -> Value {
            let leaf = depth >= 3;
            match self.rng.random_range(0..if leaf { 16 } else { 21 }) {
                0 => json!("null"),
                1 => json!("boolean"),
                2 => json!("int"),
                3 => json!("long"),
                4 => json!("float"),
                5 => json!("double"),
                6 => json!("bytes"),
                7 => json!("string"),
                8 => {
                    json!({"type": "fixed", "name": self.name(), "size": self.rng.random_range(0..6)})
                }
                9 => json!({"type": "enum", "name": self.name(), "symbols": ["A", "B", "C"]}),
                10 => {
                    let precision = self.rng.random_range(1..19);
                    let scale = self.rng.random_range(0..=precision.min(10));
                    match self.rng.random_bool(0.5) {
                        true => {
                            json!({"type": "bytes", "logicalType": "decimal", "precision": precision, "scale": scale})
                        }
                        false => {
                            json!({"type": "fixed", "name": self.name(), "size": 8, "logicalType": "decimal", "precision": precision, "scale": scale})
                        }
                    }
                }
                11 => json!({"type": "int", "logicalType": "date"}),
                12 => json!({"type": "int", "logicalType": "time-millis"}),
                13 => json!({"type": "long", "logicalType": "time-micros"}),
                14 => {
                    let kinds = [
                        "timestamp-millis",
                        "timestamp-micros",
                        "local-timestamp-millis",
                    ];
                    json!({"type": "long", "logicalType": kinds[self.rng.random_range(0..3)]})
                }
                15 => json!({"type": "string", "logicalType": "uuid"}),
                16 => json!({"type": "array", "items": self.schema(depth + 1)}),
                17 => json!({"type": "map", "values": self.schema(depth + 1)}),
                18 => {
                    let other = loop {
                        let s = self.schema(depth + 1);
                        if s != json!("null") && !s.is_array() {
                            break s;
                        }
                    };
                    match self.rng.random_bool(0.5) {
                        true => json!(["null", other]),
                        false => json!([other, "null"]),
                    }
                }
                _ => {
                    let fields: Vec<Value> = (0..self.rng.random_range(0..5))
                        .map(|i| json!({"name": format!("f{i}"), "type": self.schema(depth + 1)}))
                        .collect();
                    json!({"type": "record", "name": self.name(), "namespace": "weir.test", "fields": fields})
                }
            }
        }

        fn text(&mut self) -> String {
            let pieces = ["a", "é", "\"", "\\", "\n", "😀", "\u{0}", "\u{7f}", "x y"];
            (0..self.rng.random_range(0..5))
                .map(|_| pieces[self.rng.random_range(0..pieces.len())])
                .collect()
        }

        fn bytes(&mut self, n: usize) -> Vec<u8> {
            (0..n).map(|_| self.rng.random()).collect()
        }

        /// A value of `schema` for apache-avro's encoder.
        fn value(&mut self, schema: &Value) -> Avro {
            if let Some(branches) = schema.as_array() {
                let i = self.rng.random_range(0..branches.len());
                return Avro::Union(i as u32, Box::new(self.value(&branches[i])));
            }
            let kind = schema.get("type").unwrap_or(schema).as_str().unwrap();
            match (kind, schema["logicalType"].as_str()) {
                (_, Some("decimal")) => {
                    let precision = schema["precision"].as_u64().unwrap() as u32;
                    let bound = 10i64.pow(precision) - 1;
                    let v = self.rng.random_range(-bound..=bound);
                    Avro::Decimal(apache_avro::Decimal::from(v.to_be_bytes()))
                }
                (_, Some("date")) => Avro::Date(self.rng.random_range(-25_000..50_000)),
                (_, Some("time-millis")) => Avro::TimeMillis(self.rng.random_range(0..86_400_000)),
                (_, Some("time-micros")) => {
                    Avro::TimeMicros(self.rng.random_range(0..86_400_000_000))
                }
                (_, Some("timestamp-millis")) => Avro::TimestampMillis(self.instant(1_000)),
                (_, Some("timestamp-micros")) => Avro::TimestampMicros(self.instant(1_000_000)),
                (_, Some("local-timestamp-millis")) => {
                    Avro::LocalTimestampMillis(self.instant(1_000))
                }
                (_, Some("uuid")) => Avro::String("0d4c1b4e-8a2c-4f0e-9a55-1c8f2a6b7e10".into()),
                ("null", _) => Avro::Null,
                ("boolean", _) => Avro::Boolean(self.rng.random()),
                ("int", _) => Avro::Int(self.rng.random()),
                ("long", _) => Avro::Long(self.rng.random()),
                ("float", _) => Avro::Float(self.rng.random_range(-1000..1000) as f32 / 4.0),
                ("double", _) => {
                    Avro::Double(self.rng.random_range(-1_000_000..1_000_000) as f64 / 1024.0)
                }
                ("bytes", _) => {
                    let n = self.rng.random_range(0..6);
                    Avro::Bytes(self.bytes(n))
                }
                ("string", _) => Avro::String(self.text()),
                ("fixed", _) => {
                    let size = schema["size"].as_u64().unwrap() as usize;
                    Avro::Fixed(size, self.bytes(size))
                }
                ("enum", _) => {
                    let i = self.rng.random_range(0..3);
                    Avro::Enum(i, ["A", "B", "C"][i as usize].into())
                }
                ("array", _) => Avro::Array(
                    (0..self.rng.random_range(0..4))
                        .map(|_| self.value(&schema["items"]))
                        .collect(),
                ),
                ("map", _) => Avro::Map(
                    (0..self.rng.random_range(0..4))
                        .map(|_| (self.text(), self.value(&schema["values"])))
                        .collect(),
                ),
                ("record", _) => Avro::Record(
                    schema["fields"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|f| {
                            (
                                f["name"].as_str().unwrap().to_string(),
                                self.value(&f["type"]),
                            )
                        })
                        .collect(),
                ),
                other => panic!("no values for {other:?}"),
            }
        }

        fn instant(&mut self, per_second: i64) -> i64 {
            self.rng.random_range(-2_208_988_800..4_102_444_800) * per_second
                + self.rng.random_range(0..per_second)
        }
    }

    /// The JSON weir's rules make of a value apache-avro decoded: the independent side.
    fn expected(v: &Avro, schema: &Value) -> Value {
        use base64::Engine;
        let b64 = |b: &[u8]| json!(base64::engine::general_purpose::STANDARD.encode(b));
        let instant = |t: i64, per: i64, format: chrono::SecondsFormat, z: bool| {
            let dt = chrono::DateTime::from_timestamp(
                t.div_euclid(per),
                (t.rem_euclid(per) * (1_000_000_000 / per)) as u32,
            )
            .unwrap();
            let text = dt.to_rfc3339_opts(format, true);
            json!(if z {
                text
            } else {
                text.trim_end_matches('Z').to_string()
            })
        };
        match v {
            Avro::Union(i, inner) => expected(inner, &schema[*i as usize]),
            Avro::Null => Value::Null,
            Avro::Boolean(b) => json!(b),
            Avro::Int(i) => json!(i),
            Avro::Long(i) => json!(i),
            Avro::Float(f) => json!(f64::from(*f)),
            Avro::Double(f) => json!(f),
            Avro::Bytes(b) | Avro::Fixed(_, b) => b64(b),
            Avro::String(s) => json!(s),
            Avro::Enum(_, s) => json!(s),
            Avro::Array(items) => items
                .iter()
                .map(|i| expected(i, &schema["items"]))
                .collect(),
            Avro::Map(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| (k.clone(), expected(v, &schema["values"])))
                    .collect(),
            ),
            Avro::Record(fields) => Value::Object(
                fields
                    .iter()
                    .zip(schema["fields"].as_array().unwrap())
                    .map(|((k, v), f)| (k.clone(), expected(v, &f["type"])))
                    .collect(),
            ),
            Avro::Decimal(d) => {
                let unscaled: i128 = i128::try_from(num_bigint::BigInt::from(d.clone())).unwrap();
                let scale = schema["scale"].as_u64().unwrap() as u32;
                json!(rust_decimal::Decimal::from_i128_with_scale(unscaled, scale).to_string())
            }
            Avro::Date(d) => json!((chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap()
                + chrono::Duration::days(i64::from(*d)))
            .format("%Y-%m-%d")
            .to_string()),
            Avro::TimeMillis(t) => json!(chrono::NaiveTime::from_num_seconds_from_midnight_opt(
                (t / 1000) as u32,
                (t % 1000 * 1_000_000) as u32
            )
            .unwrap()
            .format("%H:%M:%S%.3f")
            .to_string()),
            Avro::TimeMicros(t) => json!(chrono::NaiveTime::from_num_seconds_from_midnight_opt(
                (t / 1_000_000) as u32,
                (t % 1_000_000 * 1000) as u32
            )
            .unwrap()
            .format("%H:%M:%S%.6f")
            .to_string()),
            Avro::TimestampMillis(t) => instant(*t, 1_000, chrono::SecondsFormat::Millis, true),
            Avro::TimestampMicros(t) => instant(*t, 1_000_000, chrono::SecondsFormat::Micros, true),
            Avro::LocalTimestampMillis(t) => {
                instant(*t, 1_000, chrono::SecondsFormat::Millis, false)
            }
            Avro::Uuid(u) => json!(u.to_string()),
            other => panic!("not generated: {other:?}"),
        }
    }

    #[test]
    #[allow(deprecated)] // the datum functions are the plainest reference
    fn random_schemas_and_values_decode_as_apache_avro_reads_them() {
        for seed in 0..3_000 {
            let mut g = Gen {
                rng: ChaCha8Rng::seed_from_u64(seed),
                names: 0,
            };
            let schema_json = g.schema(0);
            let schema =
                Schema::parse(&schema_json).unwrap_or_else(|e| panic!("{schema_json}: {e}"));
            let decoder = AvroDecoder::new(&schema, &[], AvroJson::Weir).unwrap();
            for _ in 0..5 {
                let value = g.value(&schema_json);
                let bytes = apache_avro::to_avro_datum(&schema, value)
                    .unwrap_or_else(|e| panic!("{schema_json}: {e}"));
                let read = apache_avro::from_avro_datum(&schema, &mut &bytes[..], None).unwrap();
                let mut out = Vec::new();
                decoder
                    .decode(&bytes, &mut out)
                    .unwrap_or_else(|e| panic!("{schema_json}: {e}"));
                let got: Value = serde_json::from_slice(&out)
                    .unwrap_or_else(|e| panic!("{}: {e}", String::from_utf8_lossy(&out)));
                // What a decode writes encodes back to a datum that decodes the same.
                let encoder =
                    crate::core::avro_encode::AvroEncoder::new(schema.clone(), Vec::new());
                let mut again = Vec::new();
                encoder
                    .encode(&out, &mut again)
                    .unwrap_or_else(|e| panic!("{schema_json}: {e}"));
                let mut twice = Vec::new();
                decoder.decode(&again, &mut twice).unwrap();
                assert_eq!(twice, out, "seed {seed}, schema {schema_json}");
                assert_eq!(
                    got,
                    expected(&read, &schema_json),
                    "seed {seed}, schema {schema_json}"
                );
                // Every shorter payload is an error, never a panic.
                for cut in 0..bytes.len() {
                    let mut out = Vec::new();
                    assert!(decoder.decode(&bytes[..cut], &mut out).is_err() || cut == bytes.len());
                }
            }
        }
    }

    #[test]
    #[allow(deprecated)]
    fn a_recursive_schema_in_both_json_shapes() {
        let schema = Schema::parse(&json!({"type": "record", "name": "R", "fields": [
            {"name": "a", "type": ["null", "string", {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "int"}]}]},
            {"name": "b", "type": "bytes"},
            {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2}},
            {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "next", "type": ["null", "R"]}]}))
        .unwrap();
        let r = |a: Avro, b: Vec<u8>, d: Vec<u8>, t: i64, next: Avro| {
            Avro::Record(vec![
                ("a".into(), a),
                ("b".into(), Avro::Bytes(b)),
                ("d".into(), Avro::Decimal(apache_avro::Decimal::from(d))),
                ("t".into(), Avro::TimestampMillis(t)),
                ("next".into(), next),
            ])
        };
        let inner = r(
            Avro::Union(0, Box::new(Avro::Null)),
            vec![],
            vec![0xfb],
            1000,
            Avro::Union(0, Box::new(Avro::Null)),
        );
        let outer = r(
            Avro::Union(1, Box::new(Avro::String("hi".into()))),
            vec![0xff, 0x41],
            vec![0x04, 0xe2],
            0,
            Avro::Union(1, Box::new(inner)),
        );
        let bytes = apache_avro::to_avro_datum(&schema, outer).unwrap();
        let decode = |style| {
            let mut out = Vec::new();
            AvroDecoder::new(&schema, &[], style)
                .unwrap()
                .decode(&bytes, &mut out)
                .unwrap();
            serde_json::from_slice::<Value>(&out).unwrap()
        };
        // By hand: 0x04e2 is 1250, so 12.50; 0xfb is -5, so -0.05; 0xff 0x41 is "/0E=".
        assert_eq!(
            decode(AvroJson::Weir),
            json!({"a": "hi", "b": "/0E=", "d": "12.50", "t": "1970-01-01T00:00:00.000Z",
            "next": {"a": null, "b": "", "d": "-0.05", "t": "1970-01-01T00:00:01.000Z", "next": null}})
        );
        // The spec's encoding: tagged unions, bytes as code points, logical types underneath.
        assert_eq!(
            decode(AvroJson::Spec),
            json!({"a": {"string": "hi"}, "b": "\u{ff}A", "d": "\u{4}\u{e2}", "t": 0,
            "next": {"R": {"a": null, "b": "", "d": "\u{fb}", "t": 1000, "next": null}}})
        );
    }
}
