//! Values to a schema's binary on a broker sink: the inverse of the decoders, so that what a
//! decode writes encodes back. The schema is resolved once, at the start: by id, by a
//! subject's version (the topic's `TOPIC-value` by default), or from a local file, looked up
//! or registered under its subject. With a registry each value is framed with the schema's
//! id; a local file without one writes unframed datums.

use std::path::PathBuf;
use std::sync::Arc;

use super::glue::Glue;
use super::proto::{ProtoEncoder, ProtoSchema};
use super::registry::{Fetched, NewSchema, Registry, RegistryOptions};
use super::{
    check_json, json_validator, parse_avro, references, registry_proto, Format, SchemaFileRequest,
};
use crate::core::avro_encode::AvroEncoder;
use crate::core::framing::{frame_prefix, glue_header, uuid_text};
use crate::core::record::RecordError;
use crate::error::{Error, Result};

/// The schema a broker sink encodes values with, as the command line gives it.
#[derive(Clone, Debug)]
pub struct EncodePlan {
    /// Values are framed with their schema's id from here; without one, written unframed.
    pub registry: Option<RegistryOptions>,
    /// `--value-format`: a registry's schema must be of it; a local file is read as it.
    pub format: Option<Format>,
    pub schema: EncodeSchema,
    /// `--value-proto-type` (the schema's first message by default) and `-I`.
    pub proto: SchemaFileRequest,
    /// `--glue-compression zlib`: a Glue-framed value's datum is compressed.
    pub glue_zlib: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EncodeSchema {
    Id(u32),
    /// A subject (`None`: the sink's `TOPIC-value`) and version (`-1`: the latest).
    Subject(Option<String>, i64),
    /// A local file; with a registry it is looked up under the subject, or registered there.
    File {
        path: PathBuf,
        subject: Option<String>,
        register: bool,
    },
}

/// A sink's encoder: each value to the schema's binary, framed when there is a registry.
pub struct ValueEncoder {
    codec: Codec,
    prefix: Vec<u8>,
    /// What the datum starts with: Glue's Protobuf message index (compressed with it).
    datum_prefix: Vec<u8>,
    encoded: Vec<u8>,
    /// `--glue-compression zlib`: the datum, compressed after `prefix` (Glue's header).
    zlib: Option<Zlib>,
    /// The schema, as the summary names it: format, subject and version, id.
    pub described: String,
}

/// One deflater for every value, and the datum before it is compressed.
struct Zlib {
    deflate: flate2::Compress,
    datum: Vec<u8>,
}

impl Zlib {
    fn new() -> Zlib {
        Zlib {
            deflate: flate2::Compress::new(flate2::Compression::default(), true),
            datum: Vec::new(),
        }
    }

    /// Appends `datum`, zlib-compressed, to `out`.
    fn compress(&mut self, out: &mut Vec<u8>) {
        self.deflate.reset();
        let mut input = &self.datum[..];
        loop {
            out.reserve(input.len() / 2 + 64);
            let before = self.deflate.total_in();
            let status = (self.deflate)
                .compress_vec(input, out, flate2::FlushCompress::Finish)
                .expect("deflating to memory");
            input = &input[(self.deflate.total_in() - before) as usize..];
            if status == flate2::Status::StreamEnd {
                return;
            }
        }
    }
}

/// Where a sink's schema is registered, which frames each value.
#[derive(Clone, Copy)]
enum Framing {
    /// A local file without a registry: bare datums.
    Unframed,
    Confluent(u32),
    /// A Glue schema version's UUID.
    Glue([u8; 16]),
}

enum Codec {
    Avro(AvroEncoder),
    Protobuf(ProtoEncoder),
    /// A JSON Schema value is its JSON, checked against the schema, as Confluent's
    /// serializer checks it.
    Json(Arc<jsonschema::Validator>),
}

impl ValueEncoder {
    /// The bytes `value` (JSON, as a decode writes it) becomes; a value that does not fit the
    /// schema is a bad record, with the field and the reason.
    pub fn encode(&mut self, value: &[u8]) -> std::result::Result<&[u8], RecordError> {
        self.encoded.clear();
        self.encoded.extend_from_slice(&self.prefix);
        let datum = match &mut self.zlib {
            Some(z) => {
                z.datum.clear();
                &mut z.datum
            }
            None => &mut self.encoded,
        };
        datum.extend_from_slice(&self.datum_prefix);
        let encoded = match &self.codec {
            Codec::Avro(e) => e.encode(value, datum),
            Codec::Protobuf(e) => e.encode(value, datum),
            Codec::Json(v) => check_json(v, value).map(|()| datum.extend(value)),
        };
        encoded.map_err(|reason| RecordError::BadValue {
            path: "value".into(),
            reason: format!("{}: {reason}", self.described),
        })?;
        if let Some(z) = &mut self.zlib {
            z.compress(&mut self.encoded);
        }
        Ok(&self.encoded)
    }
}

/// A schema as the registry holds it, or as a file gives it, and where it came from.
struct Found {
    fetched: Fetched,
    framing: Framing,
    described: String,
}

/// The registry of `-r`: Confluent's, or Glue's.
enum Registered {
    Confluent(Registry),
    Glue(Glue),
}

impl EncodePlan {
    /// Resolves the schema for a sink writing to `stream` (a topic or stream: the default
    /// subject's name) and compiles its encoder. A schema that is not there, or that does not
    /// compile, is a usage error; a registry out of reach, exit 4.
    pub fn open(&self, stream: &str) -> Result<ValueEncoder> {
        let registry = match &self.registry {
            Some(r) => match &r.glue {
                Some(name) => Some(Registered::Glue(Glue::open(name, r.timeout)?)),
                None => Some(Registered::Confluent(Registry::open(r.clone())?)),
            },
            None => None,
        };
        let found = match &registry {
            Some(Registered::Glue(glue)) => self.find_glue(glue, stream)?,
            Some(Registered::Confluent(r)) => self.find(Some(r), stream)?,
            None => self.find(None, stream)?,
        };
        let registry = match registry {
            Some(Registered::Confluent(r)) => Some(r),
            _ => None,
        };
        let kind = found.fetched.kind.as_str();
        let usage = |m: String| Error::Usage(format!("{}: {m}", found.described));
        if let Some(format) = self.format.filter(|f| kind_of(*f) != kind) {
            return Err(usage(format!(
                "a {kind} schema, and --value-format {}",
                flag_of(format)
            )));
        }
        let (codec, indexes) = self.codec(registry.as_ref(), &found)?;
        let zlib = matches!(found.framing, Framing::Glue(_)) && self.glue_zlib;
        let mut datum_prefix = Vec::new();
        let prefix = match found.framing {
            Framing::Confluent(id) => match &indexes {
                MessageIndexes::Confluent(indexes) => frame_prefix(id, Some(indexes)),
                _ => frame_prefix(id, None),
            },
            Framing::Glue(uuid) => {
                if let MessageIndexes::Glue(index) = indexes {
                    prost::encoding::encode_varint(index.into(), &mut datum_prefix);
                }
                glue_header(&uuid, zlib).to_vec()
            }
            Framing::Unframed => Vec::new(),
        };
        Ok(ValueEncoder {
            codec,
            prefix,
            datum_prefix,
            encoded: Vec::new(),
            zlib: zlib.then(Zlib::new),
            described: found.described,
        })
    }

    /// The schema in Glue: a schema's version (`--value-subject NAME[@V]`, by default the
    /// latest of `TOPIC-value`, the name AWS's serializers give it), or the file's, found
    /// among the schema's versions or registered with `--register`.
    fn find_glue(&self, glue: &Glue, stream: &str) -> Result<Found> {
        let default_name = || format!("{stream}-value");
        let (version, how) = match &self.schema {
            EncodeSchema::Id(_) => {
                return Err(Error::Usage(
                    "--value-schema-id is a Confluent registry's; with glue:// give --value-subject or --value-schema".into(),
                ))
            }
            EncodeSchema::Subject(name, number) => {
                let name = name.clone().unwrap_or_else(default_name);
                let found = glue.named_version(&name, *number)?;
                let missing = || {
                    let v = if *number < 0 { "no version".to_string() } else { format!("no version {number}") };
                    Error::Usage(format!("schema '{name}' has {v} in {}", glue.url()))
                };
                (found.ok_or_else(missing)?, format!("schema '{name}'"))
            }
            EncodeSchema::File { path, subject, register } => {
                let name = subject.clone().unwrap_or_else(default_name);
                let usage = |m: String| Error::Usage(format!("--value-schema {}: {m}", path.display()));
                let format = (self.format).ok_or_else(|| usage("give its --value-format".into()))?;
                let definition = std::fs::read_to_string(path).map_err(|e| usage(e.to_string()))?;
                let found = match register {
                    true => Some(glue.register(&name, kind_of(format), &definition)?),
                    false => glue.by_definition(&name, &definition)?,
                };
                let not_there = || usage(format!("not a version of schema '{name}' in {}; --register registers it", glue.url()));
                (found.ok_or_else(not_there)?, format!("{}, schema '{name}'", path.display()))
            }
        };
        let number = version
            .number
            .map(|n| format!(" version {n}"))
            .unwrap_or_default();
        let described = format!(
            "{} {how}{number} (Glue schema version {})",
            version.fetched.kind,
            uuid_text(&version.uuid)
        );
        Ok(Found {
            fetched: version.fetched,
            framing: Framing::Glue(version.uuid),
            described,
        })
    }

    /// The schema, by id, by subject, or from the file (looked up or registered).
    fn find(&self, registry: Option<&Registry>, stream: &str) -> Result<Found> {
        let subject_of = |s: &Option<String>| s.clone().unwrap_or(format!("{stream}-value"));
        let needs = || {
            registry
                .ok_or_else(|| Error::Usage("the schema comes from a registry: give -r URL".into()))
        };
        match &self.schema {
            EncodeSchema::Id(id) => {
                let r = needs()?;
                let fetched = r.by_id(*id)?.ok_or_else(|| {
                    Error::Usage(format!(
                        "schema id {id} is not in the registry at {}",
                        r.url()
                    ))
                })?;
                let described = format!("{} schema id {id}", fetched.kind);
                Ok(Found {
                    fetched,
                    framing: Framing::Confluent(*id),
                    described,
                })
            }
            EncodeSchema::Subject(subject, version) => {
                let (r, subject) = (needs()?, subject_of(subject));
                let missing = || {
                    let v = if *version < 0 {
                        "a version".to_string()
                    } else {
                        format!("version {version}")
                    };
                    Error::Usage(format!(
                        "subject '{subject}' has no {v} in the registry at {}",
                        r.url()
                    ))
                };
                let fetched = r.by_subject(&subject, *version)?.ok_or_else(missing)?;
                let id = fetched.id.ok_or_else(missing)?;
                let v = fetched.version.unwrap_or(*version);
                let described = format!(
                    "{} subject '{subject}' version {v} (schema id {id})",
                    fetched.kind
                );
                Ok(Found {
                    fetched,
                    framing: Framing::Confluent(id),
                    described,
                })
            }
            EncodeSchema::File {
                path,
                subject,
                register,
            } => self.local_file(registry, path, &subject_of(subject), *register),
        }
    }
}

impl EncodePlan {
    /// A local schema file: unframed without a registry; else looked up under `subject`,
    /// or registered there with `--register`.
    fn local_file(
        &self,
        registry: Option<&Registry>,
        path: &std::path::Path,
        subject: &str,
        register: bool,
    ) -> Result<Found> {
        let usage = |m: String| Error::Usage(format!("--value-schema {}: {m}", path.display()));
        let format = (self.format).ok_or_else(|| usage("give its --value-format".into()))?;
        let schema = std::fs::read_to_string(path).map_err(|e| usage(e.to_string()))?;
        let kind = kind_of(format).to_string();
        let new = NewSchema { schema, kind };
        let fetched = |id| Fetched {
            schema: new.schema.clone(),
            kind: new.kind.clone(),
            references: Vec::new(),
            id,
            version: None,
        };
        let shown = path.display();
        let Some(r) = registry else {
            if register {
                return Err(usage(
                    "--register registers it in a registry: give -r URL".into(),
                ));
            }
            let described = format!("{} {shown} (unframed)", new.kind);
            return Ok(Found {
                fetched: fetched(None),
                framing: Framing::Unframed,
                described,
            });
        };
        if let Some(import) = register.then(|| local_import(&new)).flatten() {
            return Err(usage(format!("imports '{import}': --register registers the file alone, and the registry would hold a schema no reader can compile; register it with its references first, then give --value-subject")));
        }
        let (id, how) = match register {
            true => (r.register(subject, &new)?, "registered"),
            false => {
                let known = r.lookup(subject, &new)?.and_then(|f| f.id);
                let not_there = || {
                    usage(format!(
                        "not registered under subject '{subject}' at {}; --register registers it",
                        r.url()
                    ))
                };
                (known.ok_or_else(not_there)?, "found")
            }
        };
        let described = format!(
            "{} {shown}, {how} under subject '{subject}' (schema id {id})",
            new.kind
        );
        Ok(Found {
            fetched: fetched(Some(id)),
            framing: Framing::Confluent(id),
            described,
        })
    }

    /// The encoder of a schema, with its references (or a file's imports), and what names a
    /// Protobuf message in the framing.
    fn codec(&self, registry: Option<&Registry>, found: &Found) -> Result<(Codec, MessageIndexes)> {
        let f = &found.fetched;
        let usage = |m: String| Error::Usage(format!("{}: {m}", found.described));
        match f.kind.as_str() {
            "AVRO" => {
                let mut named = Vec::new();
                if let Some(r) = registry {
                    references(r, f, &mut named, 0)?;
                }
                let (schema, named) = parse_avro(&f.schema, &named).map_err(usage)?;
                Ok((
                    Codec::Avro(AvroEncoder::new(schema, named)),
                    MessageIndexes::None,
                ))
            }
            "JSON" => {
                let validator = json_validator(&f.schema).map_err(usage)?;
                Ok((Codec::Json(Arc::new(validator)), MessageIndexes::None))
            }
            "PROTOBUF" => {
                let message = self.proto.message.as_deref();
                let schema = match (&self.schema, registry) {
                    (EncodeSchema::File { path, .. }, _) => {
                        ProtoSchema::from_file(path, &self.proto.includes, message)
                    }
                    (_, Some(r)) => registry_proto(r, f)?,
                    (_, None) => ProtoSchema::from_glue(&f.schema),
                };
                let glue = matches!(found.framing, Framing::Glue(_));
                proto_codec(&schema.map_err(usage)?, message, glue).map_err(usage)
            }
            other => Err(usage(format!("a schema of type '{other}'"))),
        }
    }
}

/// A Protobuf schema's encoder of `message` (`--value-proto-type`; by default the file's
/// first), and its message indexes: Confluent's path of indexes, or Glue's one index.
fn proto_codec(
    schema: &ProtoSchema,
    message: Option<&str>,
    glue: bool,
) -> std::result::Result<(Codec, MessageIndexes), String> {
    let (encoder, indexes) = schema.encoder(message)?;
    let indexes = match glue {
        true => MessageIndexes::Glue(
            (schema.glue_index(encoder.message())).expect("a message of the file"),
        ),
        false => MessageIndexes::Confluent(indexes),
    };
    Ok((Codec::Protobuf(encoder), indexes))
}

/// What names a Protobuf value's message in its framing.
enum MessageIndexes {
    /// Not Protobuf.
    None,
    /// Confluent's: the message's path among the file's messages and their nested ones.
    Confluent(Vec<i32>),
    /// Glue's: the message's place among all of the file's messages by full name.
    Glue(u32),
}

/// A `.proto`'s first import other than the bundled `google/protobuf/*`.
fn local_import(schema: &NewSchema) -> Option<String> {
    if schema.kind != "PROTOBUF" {
        return None;
    }
    (schema.schema.lines())
        .filter_map(|l| l.trim().strip_prefix("import "))
        .filter_map(|rest| rest.split('"').nth(1))
        .find(|path| !path.starts_with("google/protobuf/"))
        .map(str::to_string)
}

/// The registry's name of a format (its `schemaType`).
pub fn kind_of(format: Format) -> &'static str {
    match format {
        Format::Avro => "AVRO",
        Format::Protobuf => "PROTOBUF",
        Format::JsonSchema => "JSON",
    }
}

fn flag_of(format: Format) -> &'static str {
    match format {
        Format::Avro => "avro",
        Format::Protobuf => "protobuf",
        Format::JsonSchema => "json-schema",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proto_importing_local_files_is_found() {
        let proto = |text: &str| NewSchema {
            schema: text.into(),
            kind: "PROTOBUF".into(),
        };
        let text = "syntax = \"proto3\";\nimport \"google/protobuf/timestamp.proto\";\nimport public \"money.proto\";\n";
        assert_eq!(local_import(&proto(text)), Some("money.proto".into()));
        let alone = "import \"google/protobuf/any.proto\";\nmessage A {}";
        assert_eq!(local_import(&proto(alone)), None);
        let avro = NewSchema {
            schema: "import \"x\"".into(),
            kind: "AVRO".into(),
        };
        assert_eq!(local_import(&avro), None);
    }
}
