//! Keys and values in a schema's binary, decoded into the JSON the commands read: framed
//! records by their schema ids through a registry (`registry`), unframed ones by a local
//! schema file: Avro, Protobuf and JSON Schema.
//!
//! Two kinds of failure: a record that does not decode (not framed, an unknown id, a
//! payload that does not fit its schema) is a bad record under the error policy; a
//! registry that cannot answer stops the run (exit 4).

pub mod encode;
pub mod glue;
pub mod proto;
pub mod registry;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use apache_avro::Schema;

use self::proto::ProtoSchema;
use self::registry::{Fetched, Registry, RegistryOptions};
use crate::core::avro::{AvroDecoder, AvroJson};
use crate::core::envelope::{Decoded, Message, Render};
use crate::core::framing::{looks_framed, looks_glue_framed, unframe, uuid_text, GlueUnframer};
use crate::core::record::RecordError;
use crate::error::{Error, Result};
use crate::runtime::Framing;

/// The schema formats weir decodes and encodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Avro,
    Protobuf,
    JsonSchema,
}

/// How a source's keys and values are decoded, checked (local schemas read and compiled)
/// before anything is opened.
#[derive(Clone, Debug, Default)]
pub struct SchemaPlan {
    pub registry: Option<RegistryOptions>,
    pub value: Option<LocalSchema>,
    pub key: Option<LocalSchema>,
    pub style: AvroJson,
    /// `--reader-schema`: every Avro value's writer schema is read into this one.
    pub reader: Option<Arc<Schema>>,
    /// `--validate`: JSON Schema values are checked against their schema.
    pub validate: bool,
}

impl SchemaPlan {
    /// Whether anything is decoded at all.
    pub fn decodes(&self) -> bool {
        self.registry.is_some() || self.value.is_some() || self.key.is_some()
    }
}

/// A schema file for unframed keys or values.
#[derive(Clone, Debug)]
pub struct LocalSchema {
    pub path: PathBuf,
    codec: Codec,
}

impl LocalSchema {
    /// Reads and compiles the schema file of `format` (`flag` names it in errors).
    /// A `.proto` file's `proto.message` is the one read, its imports found under
    /// `proto.includes`.
    pub fn read(
        format: Format,
        path: &Path,
        style: AvroJson,
        flag: &str,
        proto: &SchemaFileRequest,
        reader: Option<&Arc<Schema>>,
    ) -> Result<LocalSchema> {
        let usage = |m: String| Error::Usage(format!("{flag} {}: {m}", path.display()));
        let text = std::fs::read_to_string(path).map_err(|e| usage(e.to_string()))?;
        let codec = match format {
            Format::Avro => {
                let target = AvroTarget::new(style, reader, proto.validate);
                Codec::avro(&text, &[], &target).map_err(usage)?
            }
            Format::Protobuf => {
                let message = proto.message.as_deref().ok_or_else(|| {
                    usage("a .proto file needs the message to read: --value-proto-type or --key-proto-type NAME".into())
                })?;
                let schema = ProtoSchema::from_file(path, &proto.includes, Some(message));
                Codec::Protobuf(schema.map_err(usage)?)
            }
            Format::JsonSchema => Codec::json(&text, proto.validate).map_err(usage)?,
        };
        Ok(LocalSchema {
            path: path.to_path_buf(),
            codec,
        })
    }
}

/// What a local schema file needs besides itself: for a `.proto`, the message and the import
/// paths; for a JSON Schema, whether records are checked against it.
#[derive(Clone, Debug, Default)]
pub struct SchemaFileRequest {
    /// The full name of the message the records are.
    pub message: Option<String>,
    /// `--proto-import-path` directories.
    pub includes: Vec<PathBuf>,
    /// `--validate` (for a JSON Schema file).
    pub validate: bool,
}

#[derive(Clone, Debug)]
enum Codec {
    Avro(Box<AvroDecoder>),
    Protobuf(ProtoSchema),
    /// A JSON Schema's records are their JSON, checked against it with `--validate`.
    Json(Option<Arc<jsonschema::Validator>>),
}

/// What an Avro record becomes: the JSON style, and the reader schema it is read into.
#[derive(Clone, Debug)]
struct AvroTarget {
    style: AvroJson,
    reader: Option<Arc<Schema>>,
    /// JSON Schema values are checked (`--validate`).
    validate: bool,
}

impl AvroTarget {
    fn new(style: AvroJson, reader: Option<&Arc<Schema>>, validate: bool) -> AvroTarget {
        AvroTarget {
            style,
            reader: reader.cloned(),
            validate,
        }
    }
}

impl Codec {
    /// A JSON Schema's codec: its records pass as they are, or checked against it.
    fn json(schema: &str, validate: bool) -> std::result::Result<Codec, String> {
        if !validate {
            serde_json::from_str::<serde::de::IgnoredAny>(schema)
                .map_err(|e| format!("not JSON: {e}"))?;
            return Ok(Codec::Json(None));
        }
        Ok(Codec::Json(Some(Arc::new(json_validator(schema)?))))
    }

    fn avro(
        schema: &str,
        named: &[String],
        target: &AvroTarget,
    ) -> std::result::Result<Codec, String> {
        let (schema, named) = parse_avro(schema, named)?;
        let decoder = match &target.reader {
            None => AvroDecoder::new(&schema, &named, target.style)?,
            Some(reader) => AvroDecoder::resolving((&schema, &named), (reader, &[]), target.style)
                .map_err(|e| format!("cannot be read as --reader-schema: {e}"))?,
        };
        Ok(Codec::Avro(Box::new(decoder)))
    }

    fn decode(&self, payload: &[u8], out: &mut Vec<u8>) -> std::result::Result<(), String> {
        match self {
            Codec::Avro(d) => d.decode(payload, out).map_err(|e| e.to_string()),
            Codec::Protobuf(p) => p.decode(payload, out),
            Codec::Json(Some(validator)) => {
                check_json(validator, payload)?;
                Codec::Json(None).decode(payload, out)
            }
            Codec::Json(None) => {
                let text = std::str::from_utf8(payload)
                    .map_err(|_| "JSON that is not UTF-8".to_string())?;
                let value: &serde_json::value::RawValue =
                    serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
                // One line: the commands read records a line each.
                match memchr::memchr2(b'\n', b'\r', text.as_bytes()) {
                    None => out.extend_from_slice(value.get().trim().as_bytes()),
                    Some(_) => serde_json::to_writer(&mut *out, value).expect("write to Vec"),
                }
                Ok(())
            }
        }
    }
}

/// Why a key or value did not decode.
#[derive(Debug)]
pub enum Failure {
    /// The record is bad: this is why.
    Record(String),
    /// The run cannot go on (the registry is out of reach).
    Fatal(Error),
}

/// The decoders of one source: a registry's schemas, fetched once per id, and local ones.
pub struct Decoders {
    registry: Option<Registry>,
    /// `-r glue://NAME` instead of a Confluent registry.
    glue: Option<glue::Glue>,
    unframer: GlueUnframer,
    /// Each id asked for, for values (true) or keys; `None`: the registry has no such id.
    by_id: HashMap<(u32, bool), Option<Arc<Codec>>>,
    /// The same for a Glue registry's schema version ids.
    by_uuid: HashMap<([u8; 16], bool), Option<Arc<Codec>>>,
    value: Option<Codec>,
    key: Option<Codec>,
    /// Values are read into the reader schema; keys as they were written.
    values: AvroTarget,
    keys: AvroTarget,
}

impl Decoders {
    pub fn open(plan: &SchemaPlan) -> Result<Decoders> {
        let (glue, confluent) = match &plan.registry {
            Some(r) if r.glue.is_some() => {
                let name = r.glue.as_deref().expect("a Glue registry");
                (Some(glue::Glue::open(name, r.timeout)?), None)
            }
            other => (None, other.clone()),
        };
        Ok(Decoders {
            registry: confluent.map(Registry::open).transpose()?,
            glue,
            unframer: GlueUnframer::default(),
            by_id: HashMap::new(),
            by_uuid: HashMap::new(),
            value: plan.value.as_ref().map(|l| l.codec.clone()),
            key: plan.key.as_ref().map(|l| l.codec.clone()),
            values: AvroTarget::new(plan.style, plan.reader.as_ref(), plan.validate),
            keys: AvroTarget::new(plan.style, None, plan.validate),
        })
    }

    /// Appends the JSON of a value to `out`: `Some(id)` when it was framed, `None` when a
    /// local schema decoded it.
    pub fn value(
        &mut self,
        bytes: &[u8],
        out: &mut Vec<u8>,
    ) -> std::result::Result<Option<u32>, Failure> {
        if let Some(codec) = &self.value {
            return codec
                .decode(bytes, out)
                .map(|()| None)
                .map_err(Failure::Record);
        }
        self.framed(bytes, out, true)
    }

    /// Appends the JSON of a key to `out`, as `value` does; `Ok(false)` leaves a key that is
    /// not framed, where only a registry decodes keys, as it is (keys are often text).
    pub fn key(
        &mut self,
        bytes: &[u8],
        out: &mut Vec<u8>,
    ) -> std::result::Result<Option<Option<u32>>, Failure> {
        if let Some(codec) = &self.key {
            return codec
                .decode(bytes, out)
                .map(|()| Some(None))
                .map_err(Failure::Record);
        }
        let framed = match (&self.glue, &self.registry) {
            (Some(_), _) => looks_glue_framed(bytes),
            (None, Some(_)) => looks_framed(bytes),
            (None, None) => false,
        };
        if !framed {
            return Ok(None);
        }
        self.framed(bytes, out, false).map(Some)
    }

    /// Appends the JSON of a framed value (or key) by its schema id; the id (a Confluent
    /// registry's; a Glue schema version's is a UUID the envelope does not carry).
    fn framed(
        &mut self,
        bytes: &[u8],
        out: &mut Vec<u8>,
        value: bool,
    ) -> std::result::Result<Option<u32>, Failure> {
        if self.glue.is_some() {
            return self.glue_framed(bytes, out, value).map(|()| None);
        }
        let (id, payload) = unframe(bytes).map_err(Failure::Record)?;
        self.by_id(id, value)?
            .decode(payload, out)
            .map_err(|e| Failure::Record(format!("schema id {id}: {e}")))?;
        Ok(Some(id))
    }

    /// Whether values are decoded.
    pub fn decodes_values(&self) -> bool {
        self.value.is_some() || self.registry.is_some() || self.glue.is_some()
    }

    fn by_id(&mut self, id: u32, value: bool) -> std::result::Result<Arc<Codec>, Failure> {
        if let Some(known) = self.by_id.get(&(id, value)) {
            return known.clone().ok_or_else(|| not_found(id));
        }
        let registry = self.registry.as_ref().ok_or_else(|| {
            Failure::Record(format!(
                "framed with schema id {id}, and no --schema-registry to look it up"
            ))
        })?;
        let fetched = registry.by_id(id).map_err(Failure::Fatal)?;
        let target = if value { &self.values } else { &self.keys };
        let codec = match fetched {
            None => None,
            Some(f) => Some(Arc::new(
                compile(registry, id, &f, target).map_err(Failure::Fatal)?,
            )),
        };
        self.by_id.insert((id, value), codec.clone());
        codec.ok_or_else(|| not_found(id))
    }
}

impl Decoders {
    /// Appends the JSON of a value (or key) framed as Glue frames it, by its schema version.
    fn glue_framed(
        &mut self,
        bytes: &[u8],
        out: &mut Vec<u8>,
        value: bool,
    ) -> std::result::Result<(), Failure> {
        let (uuid, payload) = (self.unframer).unframe(bytes).map_err(Failure::Record)?;
        let codec = match self.by_uuid.get(&(uuid, value)) {
            Some(known) => known.clone(),
            None => {
                let glue = self.glue.as_ref().expect("a Glue registry");
                let fetched = glue.version(&uuid).map_err(Failure::Fatal)?;
                let target = if value { &self.values } else { &self.keys };
                let codec = match fetched {
                    None => None,
                    Some(f) => Some(Arc::new(
                        compile_glue(&glue.url(), &f, target).map_err(Failure::Fatal)?,
                    )),
                };
                self.by_uuid.insert((uuid, value), codec.clone());
                codec
            }
        };
        let version = uuid_text(&uuid);
        let codec = codec.ok_or_else(|| {
            Failure::Record(format!(
                "schema version {version} not found in the registry"
            ))
        })?;
        codec
            .decode(payload, out)
            .map_err(|e| Failure::Record(format!("schema version {version}: {e}")))
    }
}

/// The codec of a Glue schema version (Glue's schemas name no references).
fn compile_glue(url: &str, f: &Fetched, target: &AvroTarget) -> Result<Codec> {
    let refused = |m: String| Error::Usage(format!("a schema of {url}: {m}"));
    match f.kind.as_str() {
        "AVRO" => Codec::avro(&f.schema, &[], target).map_err(refused),
        "JSON" => Codec::json(&f.schema, target.validate).map_err(refused),
        "PROTOBUF" => ProtoSchema::from_glue(&f.schema)
            .map(Codec::Protobuf)
            .map_err(refused),
        other => Err(refused(format!("data format {other}"))),
    }
}

fn not_found(id: u32) -> Failure {
    Failure::Record(format!("schema id {id} not found in the registry"))
}

/// The codec of a registry's schema, its references fetched (depth first, each once).
fn compile(registry: &Registry, id: u32, f: &Fetched, target: &AvroTarget) -> Result<Codec> {
    let refused = |m: String| Error::Usage(format!("schema id {id} at {}: {m}", registry.url()));
    match f.kind.as_str() {
        "AVRO" => {
            let mut named = Vec::new();
            references(registry, f, &mut named, 0)?;
            Codec::avro(&f.schema, &named, target).map_err(refused)
        }
        "JSON" => Codec::json(&f.schema, target.validate).map_err(refused),
        "PROTOBUF" => Ok(Codec::Protobuf(
            registry_proto(registry, f)?.map_err(refused)?,
        )),
        other => Err(refused(format!("a schema of type '{other}'"))),
    }
}

/// A JSON Schema's validator (the text is checked to be JSON and a schema either way).
pub(crate) fn json_validator(schema: &str) -> std::result::Result<jsonschema::Validator, String> {
    let schema: serde_json::Value =
        serde_json::from_str(schema).map_err(|e| format!("not JSON: {e}"))?;
    jsonschema::validator_for(&schema)
        .map_err(|e| format!("not a JSON Schema weir can check with: {e}"))
}

/// Checks a JSON value against its schema: why it does not fit, and where.
pub(crate) fn check_json(
    validator: &jsonschema::Validator,
    value: &[u8],
) -> std::result::Result<(), String> {
    let value: serde_json::Value =
        serde_json::from_slice(value).map_err(|e| format!("not JSON: {e}"))?;
    (validator.validate(&value)).map_err(|e| format!("at '{}': {e}", e.instance_path()))
}

/// An Avro schema and the named types it may refer to, parsed.
pub(crate) fn parse_avro(
    schema: &str,
    named: &[String],
) -> std::result::Result<(Schema, Vec<Schema>), String> {
    Schema::parse_str_with_list(schema, named).map_err(|e| format!("not an Avro schema: {e}"))
}

/// A registry's `.proto` compiled with its imports (fetched from the registry); why it
/// does not compile, if it does not.
pub(crate) fn registry_proto(
    registry: &Registry,
    f: &Fetched,
) -> Result<std::result::Result<ProtoSchema, String>> {
    let mut imports = HashMap::new();
    proto_imports(registry, f, &mut imports, 0)?;
    Ok(ProtoSchema::from_registry(&f.schema, &imports))
}

/// The `.proto` texts `f` imports, by import name, with theirs.
fn proto_imports(
    registry: &Registry,
    f: &Fetched,
    out: &mut HashMap<String, String>,
    depth: usize,
) -> Result<()> {
    if depth > 32 {
        return Err(Error::Usage(
            "schema references nested more than 32 deep".into(),
        ));
    }
    for r in &f.references {
        if out.contains_key(&r.name) {
            continue;
        }
        let target = fetch_reference(registry, r)?;
        proto_imports(registry, &target, out, depth + 1)?;
        out.insert(r.name.clone(), target.schema);
    }
    Ok(())
}

fn fetch_reference(registry: &Registry, r: &registry::Reference) -> Result<Fetched> {
    registry.by_subject(&r.subject, r.version)?.ok_or_else(|| {
        Error::Usage(format!("the schema reference '{}' names subject '{}' version {}, which the registry at {} does not have", r.name, r.subject, r.version, registry.url()))
    })
}

/// Appends the texts of the schemas `f` refers to, those they refer to first.
pub(crate) fn references(
    registry: &Registry,
    f: &Fetched,
    out: &mut Vec<String>,
    depth: usize,
) -> Result<()> {
    if depth > 32 {
        return Err(Error::Usage(
            "schema references nested more than 32 deep".into(),
        ));
    }
    for r in &f.references {
        let target = fetch_reference(registry, r)?;
        references(registry, &target, out, depth + 1)?;
        if !out.contains(&target.schema) {
            out.push(target.schema);
        }
    }
    Ok(())
}

/// A value's JSON and the schema id it was framed with, or why it did not decode.
pub type DecodedValue<'a> = std::result::Result<(&'a [u8], Option<u32>), String>;

/// A source's decoders, with the buffers a record's decoded key and value are written into.
pub struct Decoding {
    decoders: Decoders,
    key: Vec<u8>,
    value: Vec<u8>,
}

impl Decoding {
    pub fn new(decoders: Decoders) -> Decoding {
        Decoding {
            decoders,
            key: Vec::new(),
            value: Vec::new(),
        }
    }

    /// Renders `m` with its key and value decoded. One that does not decode is rendered as
    /// it came and handed over as a bad record, with the part and the reason.
    pub fn render(
        &mut self,
        render: &Render,
        m: Message<'_>,
        pending: &mut Framing<(i32, i64)>,
    ) -> Result<()> {
        let at = (m.partition, m.offset);
        self.key.clear();
        self.value.clear();
        let decoded = match self.decode(&m)? {
            Ok(decoded) => decoded,
            Err((part, reason)) => {
                render.write(&mut pending.data, &m);
                let path = part.to_string();
                pending.push_bad(at, RecordError::BadValue { path, reason });
                return Ok(());
            }
        };
        let mut m = m;
        if decoded.key.is_some() {
            m.key = Some(&self.key);
        }
        if decoded.value.is_some() {
            m.value = Some(&self.value);
        }
        m.decoded = decoded;
        render.write(&mut pending.data, &m);
        pending.push(at);
        Ok(())
    }

    /// Decodes a value alone (a Kinesis record's): its JSON and schema id, or why it did not
    /// decode.
    pub fn value(&mut self, bytes: &[u8]) -> Result<DecodedValue<'_>> {
        self.value.clear();
        match self.decoders.value(bytes, &mut self.value) {
            Ok(id) => Ok(Ok((&self.value, id))),
            Err(Failure::Record(why)) => Ok(Err(why)),
            Err(Failure::Fatal(e)) => Err(e),
        }
    }

    /// Decodes the key and value of `m` into the buffers: which were, or the part that did
    /// not decode and why.
    fn decode(
        &mut self,
        m: &Message<'_>,
    ) -> Result<std::result::Result<Decoded, (&'static str, String)>> {
        let mut decoded = Decoded::default();
        if let Some(key) = m.key {
            match self.decoders.key(key, &mut self.key) {
                Ok(d) => decoded.key = d,
                Err(Failure::Record(why)) => return Ok(Err(("key", why))),
                Err(Failure::Fatal(e)) => return Err(e),
            }
        }
        if let (Some(value), true) = (m.value, self.decoders.decodes_values()) {
            match self.decoders.value(value, &mut self.value) {
                Ok(id) => decoded.value = Some(id),
                Err(Failure::Record(why)) => return Ok(Err(("value", why))),
                Err(Failure::Fatal(e)) => return Err(e),
            }
        }
        Ok(Ok(decoded))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_schema_values_are_checked_only_with_validate() {
        let schema =
            r#"{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}"#;
        let good = br#"{"amount":12.5}"#;
        let bad = br#"{"amount":"lots"}"#;
        let mut out = Vec::new();
        let plain = Codec::json(schema, false).unwrap();
        assert!(
            plain.decode(bad, &mut out).is_ok(),
            "no check without --validate"
        );
        let checked = Codec::json(schema, true).unwrap();
        out.clear();
        checked.decode(good, &mut out).unwrap();
        assert_eq!(out, good);
        let why = checked.decode(bad, &mut Vec::new()).unwrap_err();
        assert!(why.contains("/amount") && why.contains("number"), "{why}");
        assert!(checked
            .decode(b"{}", &mut Vec::new())
            .unwrap_err()
            .contains("amount"));
        assert!(Codec::json("not json", true).is_err());
    }
}
