//! Values to a schema's binary on a broker sink: the inverse of the decoders, so that what a
//! decode writes encodes back. The schema is resolved once, at the start: by id, by a
//! subject's version (the topic's `TOPIC-value` by default), or from a local file, looked up
//! or registered under its subject. With a registry each value is framed with the schema's
//! id; a local file without one writes unframed datums.

use std::path::PathBuf;
use std::sync::Arc;

use super::proto::{ProtoEncoder, ProtoSchema};
use super::registry::{Fetched, NewSchema, Registry, RegistryOptions};
use super::{
    check_json, json_validator, parse_avro, references, registry_proto, Format, SchemaFileRequest,
};
use crate::core::avro_encode::AvroEncoder;
use crate::core::framing::frame_prefix;
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
    encoded: Vec<u8>,
    /// The schema, as the summary names it: format, subject and version, id.
    pub described: String,
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
        let encoded = match &self.codec {
            Codec::Avro(e) => e.encode(value, &mut self.encoded),
            Codec::Protobuf(e) => e.encode(value, &mut self.encoded),
            Codec::Json(v) => check_json(v, value).map(|()| self.encoded.extend(value)),
        };
        encoded.map_err(|reason| RecordError::BadValue {
            path: "value".into(),
            reason: format!("{}: {reason}", self.described),
        })?;
        Ok(&self.encoded)
    }
}

/// A schema as the registry holds it, or as a file gives it, and where it came from.
struct Found {
    fetched: Fetched,
    id: Option<u32>,
    described: String,
}

impl EncodePlan {
    /// Resolves the schema for a sink writing to `stream` (a topic or stream: the default
    /// subject's name) and compiles its encoder. A schema that is not there, or that does not
    /// compile, is a usage error; a registry out of reach, exit 4.
    pub fn open(&self, stream: &str) -> Result<ValueEncoder> {
        let registry = self.registry.clone().map(Registry::open).transpose()?;
        let found = self.find(registry.as_ref(), stream)?;
        let kind = found.fetched.kind.as_str();
        let usage = |m: String| Error::Usage(format!("{}: {m}", found.described));
        if let Some(format) = self.format.filter(|f| kind_of(*f) != kind) {
            return Err(usage(format!(
                "a {kind} schema, and --value-format {}",
                flag_of(format)
            )));
        }
        let (codec, indexes) = self.codec(registry.as_ref(), &found)?;
        let prefix = match found.id {
            Some(id) => frame_prefix(id, indexes.as_deref()),
            None => Vec::new(),
        };
        Ok(ValueEncoder {
            codec,
            prefix,
            encoded: Vec::new(),
            described: found.described,
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
                    id: Some(*id),
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
                    id: Some(id),
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
                id: None,
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
            id: Some(id),
            described,
        })
    }

    /// The encoder of a schema, with its references (or a file's imports), and a Protobuf
    /// message's indexes.
    fn codec(
        &self,
        registry: Option<&Registry>,
        found: &Found,
    ) -> Result<(Codec, Option<Vec<i32>>)> {
        let f = &found.fetched;
        let usage = |m: String| Error::Usage(format!("{}: {m}", found.described));
        match f.kind.as_str() {
            "AVRO" => {
                let mut named = Vec::new();
                if let Some(r) = registry {
                    references(r, f, &mut named, 0)?;
                }
                let (schema, named) = parse_avro(&f.schema, &named).map_err(usage)?;
                Ok((Codec::Avro(AvroEncoder::new(schema, named)), None))
            }
            "JSON" => {
                let validator = json_validator(&f.schema).map_err(usage)?;
                Ok((Codec::Json(Arc::new(validator)), None))
            }
            "PROTOBUF" => {
                let message = self.proto.message.as_deref();
                let schema = match (&self.schema, registry) {
                    (EncodeSchema::File { path, .. }, _) => {
                        ProtoSchema::from_file(path, &self.proto.includes, message)
                    }
                    (_, Some(r)) => registry_proto(r, f)?,
                    (_, None) => unreachable!("a schema not from a file is a registry's"),
                };
                let (encoder, indexes) = schema.and_then(|s| s.encoder(message)).map_err(usage)?;
                Ok((Codec::Protobuf(encoder), Some(indexes)))
            }
            other => Err(usage(format!("a schema of type '{other}'"))),
        }
    }
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
