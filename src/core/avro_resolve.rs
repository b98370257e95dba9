//! Avro schema resolution (`--reader-schema`): each writer schema read into one reader
//! schema, by the specification's rules, compiled into the same streaming nodes.
//!
//! Records match fields by name (or a reader field's alias); a writer field the reader lacks
//! is read and dropped, a reader field the writer lacks takes its default. Enums map symbols
//! by name (else the reader's default symbol); unions pick the first reader branch that fits;
//! int, long and float widen to long, float and double, and string and bytes read as each
//! other. A reader type carrying a logical type reads the writer's underlying values its way
//! (a bytes decimal keeps the reader's scale: no value tree, so no lost scale).

use std::collections::HashMap;
use std::rc::Rc;

use apache_avro::schema::{Name, RecordField, Schema};
use serde_json::Value;

use super::avro::{
    type_name, write_decimal, AvroDecoder, AvroJson, Compiler, Node, Prim, ResolvedRecord, Source,
};
use super::envelope::{json_string, write_base64_str, write_json_f64};
use super::time::{write_date, write_instant, Unit};

impl AvroDecoder {
    /// Compiles `writer` read as `reader`; `*_named` are the schemas each may refer to.
    pub fn resolving(
        writer: (&Schema, &[Schema]),
        reader: (&Schema, &[Schema]),
        style: AvroJson,
    ) -> Result<AvroDecoder, String> {
        let mut r = Resolver {
            c: Compiler {
                nodes: Vec::new(),
                names: HashMap::new(),
                style,
            },
            writer_types: Rc::default(),
            reader_types: Rc::default(),
            writer_nodes: HashMap::new(),
            done: HashMap::new(),
        };
        let mut types = Types::new();
        for s in writer.1.iter().chain([writer.0]) {
            named_types(s, None, &mut types);
        }
        r.writer_types = Rc::new(types);
        let mut types = Types::new();
        for s in reader.1.iter().chain([reader.0]) {
            named_types(s, None, &mut types);
        }
        r.reader_types = Rc::new(types);
        // The writer's named types, for the parts read without a reader's counterpart.
        for s in writer.1.iter().chain([writer.0]) {
            r.c.compile(s, None)?;
        }
        r.writer_nodes = std::mem::take(&mut r.c.names);
        let root = r.resolve((writer.0, None), (reader.0, None))?;
        Ok(AvroDecoder {
            nodes: r.c.nodes,
            root,
            style,
        })
    }
}

/// Named types by full name, with the namespace each sits in.
pub(super) type Types = HashMap<String, (Schema, Option<String>)>;

/// A schema and the namespace it sits in.
type At<'a> = (&'a Schema, Option<&'a str>);

struct Resolver {
    c: Compiler,
    /// Named types by full name: the definitions a `Ref` stands for.
    writer_types: Rc<Types>,
    reader_types: Rc<Types>,
    /// The writer's named types' nodes.
    writer_nodes: HashMap<String, usize>,
    /// Record pairs resolved (or being resolved: a recursive type refers to itself).
    done: HashMap<(String, String), usize>,
}

impl Resolver {
    fn resolve(&mut self, w: At<'_>, r: At<'_>) -> Result<usize, String> {
        let (wt, rt) = (Rc::clone(&self.writer_types), Rc::clone(&self.reader_types));
        let (w, wns) = deref(w, &wt);
        let (r, rns) = deref(r, &rt);
        match (w, r) {
            (Schema::Union(wu), Schema::Union(ru)) => {
                let mut branches = Vec::new();
                for wb in wu.variants() {
                    let found = ru
                        .variants()
                        .iter()
                        .find(|rb| self.fits((wb, wns), (rb, rns)));
                    branches.push(match found {
                        Some(rb) => (self.resolve((wb, wns), (rb, rns))?, self.tag(rb, rns)),
                        None => (
                            self.fail(wb, wns, "the reader's union"),
                            b"{".to_vec().into(),
                        ),
                    });
                }
                Ok(self.c.add(Node::Union(branches)))
            }
            (Schema::Union(wu), _) => {
                let mut nodes = Vec::new();
                for wb in wu.variants() {
                    nodes.push(match self.fits((wb, wns), (r, rns)) {
                        true => self.resolve((wb, wns), (r, rns))?,
                        false => self.fail(wb, wns, &format!("the reader's {}", type_name(r, rns))),
                    });
                }
                Ok(self.c.add(Node::Branches(nodes)))
            }
            (_, Schema::Union(ru)) => {
                let rb = ru
                    .variants()
                    .iter()
                    .find(|rb| self.fits((w, wns), (rb, rns)));
                let rb = rb.ok_or_else(|| {
                    format!(
                        "the writer's {} fits no branch of the reader's union",
                        type_name(w, wns)
                    )
                })?;
                let node = self.resolve((w, wns), (rb, rns))?;
                match rb {
                    Schema::Null => Ok(node),
                    _ => {
                        let tag = self.tag(rb, rns);
                        Ok(self.c.add(Node::Tagged(node, tag)))
                    }
                }
            }
            _ => self.resolve_plain((w, wns), (r, rns)),
        }
    }

    /// Two types that are no unions.
    fn resolve_plain(&mut self, (w, wns): At<'_>, (r, rns): At<'_>) -> Result<usize, String> {
        match (w, r) {
            (Schema::Record(wr), Schema::Record(rr))
                if same_name(&wr.name, &rr.name, &rr.aliases) =>
            {
                self.record((&wr.name, &wr.fields, wns), (&rr.name, &rr.fields, rns))
            }
            (Schema::Enum(we), Schema::Enum(re)) if same_name(&we.name, &re.name, &re.aliases) => {
                let symbol = |s: &String| match re.symbols.contains(s) {
                    true => json_string(s).into(),
                    false => (re.default.as_ref())
                        .map(|d| json_string(d).into())
                        .unwrap_or_default(),
                };
                Ok(self
                    .c
                    .add(Node::Enum(we.symbols.iter().map(symbol).collect())))
            }
            (Schema::Array(wa), Schema::Array(ra)) => {
                let item = self.resolve((&wa.items, wns), (&ra.items, rns))?;
                Ok(self.c.add(Node::Array(item)))
            }
            (Schema::Map(wm), Schema::Map(rm)) => {
                let value = self.resolve((&wm.types, wns), (&rm.types, rns))?;
                Ok(self.c.add(Node::Map(value)))
            }
            _ => match (prim(w), prim(r)) {
                (Some(from), Some(to)) if from != to && promotes(from, to) => {
                    Ok(self.c.add(Node::Promote(from, to)))
                }
                _ if underlying(w) == underlying(r) && underlying(w).is_some() => {
                    // The reader reads the writer's values its own way (its logical type).
                    self.c.compile(r, rns)
                }
                _ => Err(format!(
                    "the writer's {} cannot be read as the reader's {}",
                    type_name(w, wns),
                    type_name(r, rns)
                )),
            },
        }
    }

    fn record(
        &mut self,
        (wname, wfields, wns): (&Name, &[RecordField], Option<&str>),
        (rname, rfields, rns): (&Name, &[RecordField], Option<&str>),
    ) -> Result<usize, String> {
        let key = (wname.fullname(wns), rname.fullname(rns));
        if let Some(&at) = self.done.get(&key) {
            return Ok(at);
        }
        let at = self.c.add(Node::Null);
        self.done.insert(key, at);
        let wns = wname.namespace().or(wns);
        let rns = rname.namespace().or(rns);
        let mut writer = Vec::with_capacity(wfields.len());
        let mut filled = vec![false; rfields.len()];
        for wf in wfields {
            let slot = rfields
                .iter()
                .position(|rf| rf.name == wf.name || rf.aliases.contains(&wf.name));
            let node = match slot {
                Some(i) => {
                    filled[i] = true;
                    let node = self.resolve((&wf.schema, wns), (&rfields[i].schema, rns));
                    node.map_err(|e| format!("field {}: {e}", wf.name))?
                }
                None => self.writer_node(&wf.schema, wns)?,
            };
            writer.push((slot, node));
        }
        let mut reader = Vec::with_capacity(rfields.len());
        for (i, rf) in rfields.iter().enumerate() {
            let mut key = json_string(&rf.name);
            key.push(b':');
            let source = match (filled[i], &rf.default) {
                (true, _) => Source::Slot(i),
                (false, Some(d)) => Source::Default(
                    self.default(&rf.schema, rns, d)
                        .map_err(|e| format!("field {}: {e}", rf.name))?
                        .into(),
                ),
                (false, None) => {
                    return Err(format!(
                        "the reader's field {} is not in the writer's {} and has no default",
                        rf.name,
                        wname.fullname(wns)
                    ))
                }
            };
            reader.push((key.into(), source));
        }
        self.c.nodes[at] = Node::Resolved(Box::new(ResolvedRecord { writer, reader }));
        Ok(at)
    }

    /// The node that reads a writer's part the reader drops.
    fn writer_node(&mut self, s: &Schema, ns: Option<&str>) -> Result<usize, String> {
        let reader_names =
            std::mem::replace(&mut self.c.names, std::mem::take(&mut self.writer_nodes));
        let node = self.c.compile(s, ns);
        self.writer_nodes = std::mem::replace(&mut self.c.names, reader_names);
        node
    }

    /// A node that reads the writer's branch and fails: the reader has no place for it.
    fn fail(&mut self, w: &Schema, ns: Option<&str>, target: &str) -> usize {
        let why = format!("the writer's {} has no place in {target}", type_name(w, ns));
        self.c.add(Node::Fail(why.into()))
    }

    fn tag(&self, r: &Schema, ns: Option<&str>) -> Box<[u8]> {
        let mut tag = b"{".to_vec();
        tag.extend_from_slice(&json_string(&type_name(r, ns)));
        tag.push(b':');
        tag.into()
    }

    /// Whether the writer's type can be read as the reader's (for picking a union branch).
    fn fits(&self, w: At<'_>, r: At<'_>) -> bool {
        let (w, _) = deref(w, &self.writer_types);
        let (r, _) = deref(r, &self.reader_types);
        match (w, r) {
            (Schema::Record(a), Schema::Record(b)) => same_name(&a.name, &b.name, &b.aliases),
            (Schema::Enum(a), Schema::Enum(b)) => same_name(&a.name, &b.name, &b.aliases),
            (Schema::Array(_), Schema::Array(_)) | (Schema::Map(_), Schema::Map(_)) => true,
            _ => match (prim(w), prim(r)) {
                (Some(from), Some(to)) if promotes(from, to) => true,
                _ => underlying(w).is_some() && underlying(w) == underlying(r),
            },
        }
    }
}

/// A `Ref` as the type it names.
fn deref<'a>(
    (s, ns): (&'a Schema, Option<&'a str>),
    types: &'a Types,
) -> (&'a Schema, Option<&'a str>) {
    match s {
        Schema::Ref { name } => match types.get(&name.fullname(ns)) {
            Some((def, def_ns)) => (def, def_ns.as_deref()),
            None => (s, ns),
        },
        _ => (s, ns),
    }
}

/// Every named type of `s` by full name, with the namespace it sits in.
pub(super) fn named_types(s: &Schema, ns: Option<&str>, out: &mut Types) {
    let mut keep = |name: &Name| {
        out.insert(name.fullname(ns), (s.clone(), ns.map(str::to_string)));
    };
    match s {
        Schema::Record(r) => {
            keep(&r.name);
            let inner = r.name.namespace().or(ns);
            for f in &r.fields {
                named_types(&f.schema, inner, out);
            }
        }
        Schema::Enum(e) => keep(&e.name),
        Schema::Fixed(f) => keep(&f.name),
        Schema::Array(a) => named_types(&a.items, ns, out),
        Schema::Map(m) => named_types(&m.types, ns, out),
        Schema::Union(u) => u.variants().iter().for_each(|v| named_types(v, ns, out)),
        _ => {}
    }
}

/// Names match when their unqualified names do, or one of the reader's aliases is the
/// writer's.
fn same_name(w: &Name, r: &Name, aliases: &Option<Vec<apache_avro::schema::Alias>>) -> bool {
    w.name() == r.name() || aliases.iter().flatten().any(|a| a.name() == w.name())
}

fn prim(s: &Schema) -> Option<Prim> {
    Some(match s {
        Schema::Int => Prim::Int,
        Schema::Long => Prim::Long,
        Schema::Float => Prim::Float,
        Schema::Double => Prim::Double,
        Schema::String => Prim::String,
        Schema::Bytes => Prim::Bytes,
        _ => return None,
    })
}

fn promotes(from: Prim, to: Prim) -> bool {
    use Prim::*;
    matches!(
        (from, to),
        (Int, Long | Float | Double)
            | (Long, Float | Double)
            | (Float, Double)
            | (String, Bytes)
            | (Bytes, String)
    )
}

/// The binary encoding a type shares with others: a primitive, or a logical type's
/// underlying one (a fixed by its size).
fn underlying(s: &Schema) -> Option<String> {
    use apache_avro::schema::{InnerDecimalSchema, UuidSchema};
    Some(match s {
        Schema::Null => "null".into(),
        Schema::Boolean => "boolean".into(),
        Schema::Int | Schema::Date | Schema::TimeMillis => "int".into(),
        Schema::Long
        | Schema::TimeMicros
        | Schema::TimestampMillis
        | Schema::TimestampMicros
        | Schema::TimestampNanos
        | Schema::LocalTimestampMillis
        | Schema::LocalTimestampMicros
        | Schema::LocalTimestampNanos => "long".into(),
        Schema::Float => "float".into(),
        Schema::Double => "double".into(),
        Schema::Bytes | Schema::BigDecimal | Schema::Uuid(UuidSchema::Bytes) => "bytes".into(),
        Schema::Decimal(d) => match &d.inner {
            InnerDecimalSchema::Bytes => "bytes".into(),
            InnerDecimalSchema::Fixed(f) => format!("fixed {}", f.size),
        },
        Schema::String | Schema::Uuid(UuidSchema::String) => "string".into(),
        Schema::Fixed(f) | Schema::Uuid(UuidSchema::Fixed(f)) | Schema::Duration(f) => {
            format!("fixed {}", f.size)
        }
        _ => return None,
    })
}

impl Resolver {
    /// A reader field's default (JSON, as the specification writes it for the field's type)
    /// as the JSON a decoded value of that type is.
    fn default(&self, s: &Schema, ns: Option<&str>, d: &Value) -> Result<Vec<u8>, String> {
        let (s, ns) = deref((s, ns), &self.reader_types);
        let mut out = Vec::new();
        match s {
            Schema::Union(u) => {
                let first = u.variants().first().ok_or("an empty union")?;
                let inner = self.default(first, ns, d)?;
                if self.c.style == AvroJson::Spec && *first != Schema::Null {
                    out.extend_from_slice(&self.tag(first, ns));
                    out.extend_from_slice(&inner);
                    out.push(b'}');
                } else {
                    out = inner;
                }
            }
            Schema::Record(r) => {
                let inner_ns = r.name.namespace().or(ns);
                let mut parts = Vec::new();
                for f in &r.fields {
                    let value = d.get(&f.name).or(f.default.as_ref());
                    let value = value.ok_or_else(|| format!("no default for {}", f.name))?;
                    let mut part = json_string(&f.name);
                    part.push(b':');
                    part.extend_from_slice(&self.default(&f.schema, inner_ns, value)?);
                    parts.push(part);
                }
                out = [b"{".to_vec(), parts.join(&b","[..]), b"}".to_vec()].concat();
            }
            Schema::Array(a) => {
                let items = d.as_array().ok_or("an array default that is no array")?;
                let items: Result<Vec<Vec<u8>>, String> = items
                    .iter()
                    .map(|v| self.default(&a.items, ns, v))
                    .collect();
                out = [b"[".to_vec(), items?.join(&b","[..]), b"]".to_vec()].concat();
            }
            Schema::Map(m) => {
                let entries = d.as_object().ok_or("a map default that is no object")?;
                let mut parts = Vec::new();
                for (k, v) in entries {
                    let mut part = json_string(k);
                    part.push(b':');
                    part.extend_from_slice(&self.default(&m.types, ns, v)?);
                    parts.push(part);
                }
                out = [b"{".to_vec(), parts.join(&b","[..]), b"}".to_vec()].concat();
            }
            scalar => self.default_scalar(scalar, d, &mut out)?,
        }
        Ok(out)
    }

    /// The default of a type that holds no others.
    fn default_scalar(&self, s: &Schema, d: &Value, out: &mut Vec<u8>) -> Result<(), String> {
        let spec = self.c.style == AvroJson::Spec;
        let text = || (d.as_str()).ok_or_else(|| format!("a default {d} where a string is due"));
        // Bytes and fixed defaults are strings of code points 0-255.
        let bytes = || -> Result<Vec<u8>, String> {
            let byte = |c: char| {
                u8::try_from(u32::from(c)).map_err(|_| format!("a bytes default with '{c}'"))
            };
            text()?.chars().map(byte).collect()
        };
        let long = || {
            d.as_i64()
                .ok_or_else(|| format!("a default {d} where an integer is due"))
        };
        match s {
            Schema::Bytes | Schema::Fixed(_) if spec => {
                out.extend_from_slice(&json_string(text()?))
            }
            Schema::Bytes | Schema::Fixed(_) => write_base64_str(out, &bytes()?),
            Schema::Decimal(dec) if !spec => write_decimal(out, &bytes()?, dec.scale as u32),
            Schema::Float | Schema::Double => {
                write_json_f64(out, d.as_f64().ok_or("a number default that is no number")?)
            }
            Schema::Date if !spec => write_date(out, long()? as i32),
            Schema::TimestampMillis if !spec => write_instant(out, long()?, Unit::Millis, true)?,
            Schema::TimestampMicros if !spec => write_instant(out, long()?, Unit::Micros, true)?,
            _ => out.extend_from_slice(&serde_json::to_vec(d).map_err(|e| e.to_string())?),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use apache_avro::types::Value as Avro;
    use rand::seq::SliceRandom;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use serde_json::json;

    use super::*;

    struct Gen {
        rng: ChaCha8Rng,
        names: usize,
    }

    impl Gen {
        fn field_type(&mut self, depth: usize) -> Value {
            let n = if depth > 1 { 11 } else { 14 };
            match self.rng.random_range(0..n) {
                0 => json!("int"),
                1 => json!("long"),
                2 => json!("float"),
                3 => json!("double"),
                4 => json!("string"),
                5 => json!("bytes"),
                6 => json!("boolean"),
                7 => json!(["null", "string"]),
                8 => json!({"type": "long", "logicalType": "timestamp-millis"}),
                9 => json!({"type": "int", "logicalType": "date"}),
                10 => {
                    self.names += 1;
                    json!({"type": "enum", "name": format!("E{}", self.names), "symbols": ["A", "B"]})
                }
                11 => json!({"type": "array", "items": self.field_type(depth + 1)}),
                12 => json!({"type": "map", "values": self.field_type(depth + 1)}),
                _ => self.record(depth + 1),
            }
        }

        fn record(&mut self, depth: usize) -> Value {
            self.names += 1;
            let name = format!("R{}", self.names);
            let fields: Vec<Value> = (0..self.rng.random_range(1..5))
                .map(|i| json!({"name": format!("f{i}"), "type": self.field_type(depth)}))
                .collect();
            json!({"type": "record", "name": name, "fields": fields})
        }

        /// A reader schema for `w`: fields dropped, added with defaults and reordered,
        /// numbers widened, strings read as bytes, enums grown, types made nullable.
        fn reader(&mut self, w: &Value) -> Value {
            let widened = match w.as_str() {
                Some("int") => ["int", "long", "float", "double"][self.rng.random_range(0..4)],
                Some("long") => ["long", "float", "double"][self.rng.random_range(0..3)],
                Some("float") => ["float", "double"][self.rng.random_range(0..2)],
                Some("string") => ["string", "bytes"][self.rng.random_range(0..2)],
                _ => "",
            };
            let r = match (widened, w.get("type").and_then(Value::as_str)) {
                ("", Some("record")) => {
                    let mut fields: Vec<Value> = Vec::new();
                    for f in w["fields"].as_array().unwrap() {
                        if self.rng.random_bool(0.8) {
                            fields
                                .push(json!({"name": f["name"], "type": self.reader(&f["type"])}));
                        }
                    }
                    let added = [
                        json!({"name": "n1", "type": "int", "default": 7}),
                        json!({"name": "n2", "type": ["null", "string"], "default": null}),
                        // ASCII: apache-avro reads a bytes default's text as UTF-8, where the
                        // specification maps code points to bytes (checked by hand below).
                        json!({"name": "n3", "type": "bytes", "default": "AB"}),
                        json!({"name": "n4", "type": "double", "default": 1.5}),
                        json!({"name": "n5", "type": {"type": "array", "items": "long"}, "default": [1, 2]}),
                    ];
                    for a in added {
                        if self.rng.random_bool(0.3) {
                            fields.push(a);
                        }
                    }
                    fields.shuffle(&mut self.rng);
                    json!({"type": "record", "name": w["name"], "fields": fields})
                }
                ("", Some("enum")) => {
                    json!({"type": "enum", "name": w["name"], "symbols": ["Z", "B", "A"]})
                }
                ("", Some("array")) => json!({"type": "array", "items": self.reader(&w["items"])}),
                ("", Some("map")) => json!({"type": "map", "values": self.reader(&w["values"])}),
                ("", _) => w.clone(),
                (t, _) => json!(t),
            };
            match (w.is_array(), self.rng.random_bool(0.15)) {
                (false, true) => json!(["null", r]),
                _ => r,
            }
        }

        fn value(&mut self, s: &Value) -> Avro {
            if let Some(branches) = s.as_array() {
                let i = self.rng.random_range(0..branches.len());
                return Avro::Union(i as u32, Box::new(self.value(&branches[i])));
            }
            match (
                s.get("type").unwrap_or(s).as_str().unwrap(),
                s["logicalType"].as_str(),
            ) {
                (_, Some("timestamp-millis")) => {
                    Avro::TimestampMillis(self.rng.random_range(0..4_000_000_000_000))
                }
                (_, Some("date")) => Avro::Date(self.rng.random_range(-10_000..30_000)),
                ("null", _) => Avro::Null,
                ("int", _) => Avro::Int(self.rng.random()),
                ("long", _) => Avro::Long(self.rng.random()),
                ("float", _) => Avro::Float(self.rng.random_range(-1000..1000) as f32 / 4.0),
                ("double", _) => Avro::Double(self.rng.random_range(-1e6..1e6)),
                ("string", _) => {
                    Avro::String(["", "a", "é😀", "x\"y"][self.rng.random_range(0..4)].into())
                }
                ("bytes", _) => Avro::Bytes(vec![0, 255, self.rng.random()]),
                ("boolean", _) => Avro::Boolean(self.rng.random()),
                ("enum", _) => {
                    let i = self.rng.random_range(0..2);
                    Avro::Enum(i, ["A", "B"][i as usize].into())
                }
                ("array", _) => Avro::Array(
                    (0..self.rng.random_range(0..3))
                        .map(|_| self.value(&s["items"]))
                        .collect(),
                ),
                ("map", _) => Avro::Map(
                    (0..self.rng.random_range(0..3))
                        .map(|i| (format!("k{i}"), self.value(&s["values"])))
                        .collect(),
                ),
                ("record", _) => Avro::Record(
                    (s["fields"].as_array().unwrap().iter())
                        .map(|f| {
                            (
                                f["name"].as_str().unwrap().to_string(),
                                self.value(&f["type"]),
                            )
                        })
                        .collect(),
                ),
                other => panic!("{other:?}"),
            }
        }
    }

    /// weir's JSON of a value apache-avro read (with the reader schema): the other side.
    fn expected(v: &Avro, s: &Value) -> Value {
        use base64::Engine;
        match v {
            Avro::Union(i, inner) => expected(inner, &s[*i as usize]),
            Avro::Null => Value::Null,
            Avro::Boolean(b) => json!(b),
            Avro::Int(i) => json!(i),
            Avro::Long(i) => json!(i),
            Avro::Float(f) => serde_json::from_str(ryu::Buffer::new().format(*f)).unwrap(),
            Avro::Double(f) => json!(f),
            Avro::Bytes(b) => json!(base64::engine::general_purpose::STANDARD.encode(b)),
            Avro::String(t) | Avro::Enum(_, t) => json!(t),
            Avro::Array(items) => items.iter().map(|i| expected(i, &s["items"])).collect(),
            Avro::Map(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| (k.clone(), expected(v, &s["values"])))
                    .collect(),
            ),
            Avro::Record(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, v)| {
                        let f = s["fields"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .find(|f| f["name"] == k.as_str())
                            .unwrap();
                        (k.clone(), expected(v, &f["type"]))
                    })
                    .collect(),
            ),
            Avro::TimestampMillis(t) => json!(chrono::DateTime::from_timestamp_millis(*t)
                .unwrap()
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
            Avro::Date(d) => json!((chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap()
                + chrono::Duration::days(i64::from(*d)))
            .format("%Y-%m-%d")
            .to_string()),
            other => panic!("not generated: {other:?}"),
        }
    }

    #[test]
    #[allow(deprecated)] // the datum functions are the plainest reference
    fn writers_read_into_derived_readers_as_apache_avro_resolves_them() {
        let mut compared = 0;
        for seed in 0..1_500 {
            let mut g = Gen {
                rng: ChaCha8Rng::seed_from_u64(seed),
                names: 0,
            };
            let writer_json = g.record(0);
            let reader_json = g.reader(&writer_json);
            let writer = Schema::parse(&writer_json).unwrap();
            let reader =
                Schema::parse(&reader_json).unwrap_or_else(|e| panic!("{reader_json}: {e}"));
            let decoder = AvroDecoder::resolving((&writer, &[]), (&reader, &[]), AvroJson::Weir)
                .unwrap_or_else(|e| panic!("{writer_json} as {reader_json}: {e}"));
            for _ in 0..4 {
                let bytes = apache_avro::to_avro_datum(&writer, g.value(&writer_json)).unwrap();
                // apache-avro refuses some pairs ("Two named schema defined for same
                // fullname" where a union's record meets the reader's): no oracle there.
                let Ok(read) =
                    apache_avro::from_avro_datum(&writer, &mut &bytes[..], Some(&reader))
                else {
                    continue;
                };
                compared += 1;
                let mut out = Vec::new();
                decoder
                    .decode(&bytes, &mut out)
                    .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
                let got: Value = serde_json::from_slice(&out).unwrap();
                let want: Value =
                    serde_json::from_str(&expected(&read, &reader_json).to_string()).unwrap();
                assert_eq!(got, want, "seed {seed}: {writer_json} as {reader_json}");
            }
        }
        assert!(compared > 4_000, "only {compared} of 6,000 values compared");
    }

    #[test]
    #[allow(deprecated)]
    fn a_bytes_decimal_keeps_the_readers_scale_and_a_missing_default_is_refused() {
        let writer = Schema::parse(&json!({"type": "record", "name": "P", "fields": [
            {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
            {"name": "old", "type": "string"}]})).unwrap();
        let reader = Schema::parse(&json!({"type": "record", "name": "P", "fields": [
            {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
            {"name": "cur", "type": "string", "default": "EUR"},
            {"name": "raw", "type": "bytes", "default": "\u{ff}A"}]})).unwrap();
        let value = Avro::Record(vec![
            (
                "amount".into(),
                Avro::Decimal(apache_avro::Decimal::from(vec![0x04, 0xe2])),
            ),
            ("old".into(), Avro::String("x".into())),
        ]);
        let bytes = apache_avro::to_avro_datum(&writer, value).unwrap();
        let d = AvroDecoder::resolving((&writer, &[]), (&reader, &[]), AvroJson::Weir).unwrap();
        let mut out = Vec::new();
        d.decode(&bytes, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"amount":"12.50","cur":"EUR","raw":"/0E="}"#
        );
        let no_default = Schema::parse(&json!({"type": "record", "name": "P", "fields": [
            {"name": "cur", "type": "string"}]}))
        .unwrap();
        let e =
            AvroDecoder::resolving((&writer, &[]), (&no_default, &[]), AvroJson::Weir).unwrap_err();
        assert!(e.contains("cur") && e.contains("no default"), "{e}");
    }
}
