//! `.proto` sources compiled in process (protox: no `protoc`), from a registry's schema and
//! its references or from files under import paths; `google/protobuf/*.proto` are bundled.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor};
use protox::file::{
    ChainFileResolver, File, FileResolver, GoogleFileResolver, IncludeFileResolver,
};

use crate::core::framing::message_indexes;
use crate::core::protobuf::ProtoDecoder;

/// The name a registry's schema is compiled under; its references keep their own.
const ROOT: &str = "schema.proto";

/// A compiled `.proto` file: the decoder of its pool, and its messages in the order the
/// registry's message indexes count them (top-level, then each one's nested types).
#[derive(Clone, Debug)]
pub struct ProtoSchema {
    decoder: Arc<ProtoDecoder>,
    tree: Vec<MessageTree>,
    /// A local schema's message (`--value-proto-type`), read without indexes.
    fixed: Option<usize>,
    /// Its full name.
    message: Option<String>,
    pool: DescriptorPool,
    /// The file compiled; its messages are the ones message indexes count.
    file: String,
    /// A Glue schema's messages in the order Glue's one message index counts them.
    glue: Option<Vec<usize>>,
}

#[derive(Clone, Debug)]
struct MessageTree {
    node: usize,
    nested: Vec<MessageTree>,
}

impl ProtoSchema {
    /// The registry's schema text with its references' texts by import name.
    pub fn from_registry(
        source: &str,
        imports: &HashMap<String, String>,
    ) -> Result<ProtoSchema, String> {
        let mut resolver = ChainFileResolver::new();
        let mut sources = imports.clone();
        sources.insert(ROOT.into(), source.into());
        resolver.add(Sources(sources));
        resolver.add(GoogleFileResolver::new());
        let pool = compile(resolver, ROOT)?;
        Ok(Self::of(&pool, ROOT))
    }

    /// A Glue schema version's `.proto` (Glue's schemas import nothing but the bundled
    /// `google/protobuf/*`), its values framed with Glue's message index.
    pub fn from_glue(source: &str) -> Result<ProtoSchema, String> {
        let mut schema = Self::from_registry(source, &HashMap::new())?;
        let order = glue_order(&schema.pool, &schema.file)
            .iter()
            .map(|m| schema.decoder.message(m.full_name()).expect("same pool"))
            .collect();
        schema.glue = Some(order);
        Ok(schema)
    }

    /// Glue's message index of `message` (a full name) in the compiled file.
    pub fn glue_index(&self, message: &str) -> Option<u32> {
        let order = glue_order(&self.pool, &self.file);
        let at = order.iter().position(|m| m.full_name() == message)?;
        u32::try_from(at).ok()
    }

    /// A file under `--proto-import-path` directories (and its own), reading `message` (by
    /// default, an encoder's choice: the first).
    pub fn from_file(
        path: &std::path::Path,
        includes: &[PathBuf],
        message: Option<&str>,
    ) -> Result<ProtoSchema, String> {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        let mut resolver = ChainFileResolver::new();
        for include in includes.iter().map(PathBuf::as_path).chain([dir]) {
            resolver.add(IncludeFileResolver::new(include.to_path_buf()));
        }
        resolver.add(GoogleFileResolver::new());
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or("not a file name")?;
        let pool = compile(resolver, name)?;
        let mut schema = Self::of(&pool, name);
        let Some(message) = message else {
            return Ok(schema);
        };
        let fixed = schema.decoder.message(message).ok_or_else(|| {
            let file = pool.get_file_by_name(name);
            let known: Vec<String> = file
                .iter()
                .flat_map(|f| f.messages())
                .map(|m| m.full_name().to_string())
                .collect();
            format!("no message '{message}' (the file has {})", known.join(", "))
        })?;
        schema.fixed = Some(fixed);
        schema.message = Some(message.to_string());
        Ok(schema)
    }

    fn of(pool: &DescriptorPool, file: &str) -> ProtoSchema {
        let decoder = ProtoDecoder::new(pool);
        let tree = match pool.get_file_by_name(file) {
            Some(f) => f.messages().map(|m| tree(&decoder, &m)).collect(),
            None => Vec::new(),
        };
        ProtoSchema {
            decoder: Arc::new(decoder),
            tree,
            fixed: None,
            message: None,
            pool: pool.clone(),
            file: file.to_string(),
            glue: None,
        }
    }

    /// The encoder of `message` (a full name; else a local schema's message, else the file's
    /// first) and the message indexes that name it in the file.
    pub fn encoder(&self, message: Option<&str>) -> Result<(ProtoEncoder, Vec<i32>), String> {
        let file = (self.pool.get_file_by_name(&self.file)).ok_or("no file compiled")?;
        let name = message.or(self.message.as_deref());
        let descriptor = match name {
            Some(name) => self.pool.get_message_by_name(name),
            None => file.messages().next(),
        };
        let descriptor = descriptor.ok_or_else(|| match name {
            Some(name) => format!("no message '{name}' in the schema"),
            None => "no message in the schema".into(),
        })?;
        if descriptor.parent_file().name() != self.file {
            return Err(format!(
                "'{}' is defined in {}, not in the schema itself",
                descriptor.full_name(),
                descriptor.parent_file().name()
            ));
        }
        // The path in the file descriptor: 4 (message_type), i, then 3 (nested_type), j, ...
        let indexes = descriptor
            .path()
            .iter()
            .skip(1)
            .step_by(2)
            .copied()
            .collect();
        Ok((ProtoEncoder { descriptor }, indexes))
    }

    /// Appends the JSON of `payload`: a local schema's message, or the message its indexes
    /// name.
    pub fn decode(&self, payload: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        if let Some(m) = self.fixed {
            return self
                .decoder
                .decode(m, payload, out)
                .map_err(|e| e.to_string());
        }
        if let Some(order) = &self.glue {
            return self.decode_glue(order, payload, out);
        }
        let (indexes, message) = message_indexes(payload)?;
        let mut level = &self.tree;
        let mut node = None;
        for &i in &indexes {
            let found = usize::try_from(i).ok().and_then(|i| level.get(i));
            let found = found.ok_or_else(|| {
                format!(
                    "message index {indexes:?} out of range (the schema has {} there)",
                    level.len()
                )
            })?;
            node = Some(found.node);
            level = &found.nested;
        }
        let m = node.expect("at least one index");
        self.decoder
            .decode(m, message, out)
            .map_err(|e| e.to_string())
    }
}

impl ProtoSchema {
    /// A Glue datum: an unsigned varint message index, then the message.
    fn decode_glue(
        &self,
        order: &[usize],
        payload: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        let mut rest = payload;
        let index = prost::encoding::decode_varint(&mut rest)
            .map_err(|_| "no Glue message index before the message".to_string())?;
        let node = usize::try_from(index).ok().and_then(|i| order.get(i));
        let node = node.ok_or_else(|| {
            format!(
                "Glue message index {index} out of range (the schema has {} messages)",
                order.len()
            )
        })?;
        (self.decoder.decode(*node, rest, out)).map_err(|e| e.to_string())
    }
}

/// Every message of `file`, nested ones (map entries too) included, sorted by full name:
/// the order in which AWS's Glue serializers number them (their `MessageIndexFinder`).
fn glue_order(pool: &DescriptorPool, file: &str) -> Vec<MessageDescriptor> {
    fn all(m: MessageDescriptor, into: &mut Vec<MessageDescriptor>) {
        for child in m.child_messages() {
            all(child, into);
        }
        into.push(m);
    }
    let mut messages = Vec::new();
    for m in pool
        .get_file_by_name(file)
        .iter()
        .flat_map(|f| f.messages())
    {
        all(m, &mut messages);
    }
    messages.sort_by(|a, b| a.full_name().cmp(b.full_name()));
    messages
}

/// JSON, as a decode writes it, to a message's binary, by prost-reflect's proto3 JSON reader:
/// it takes the `.proto`'s field names, int64 strings and enum names, and refuses a field the
/// message does not have.
#[derive(Clone, Debug)]
pub struct ProtoEncoder {
    descriptor: MessageDescriptor,
}

impl ProtoEncoder {
    /// The full name of the message it encodes.
    pub fn message(&self) -> &str {
        self.descriptor.full_name()
    }

    pub fn encode(&self, json: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        let mut reader = serde_json::Deserializer::from_slice(json);
        let message = DynamicMessage::deserialize(self.descriptor.clone(), &mut reader)
            .and_then(|m| reader.end().map(|()| m))
            .map_err(|e| e.to_string())?;
        message.encode(out).map_err(|e| e.to_string())
    }
}

fn tree(decoder: &ProtoDecoder, m: &MessageDescriptor) -> MessageTree {
    MessageTree {
        node: decoder
            .message(m.full_name())
            .expect("compiled from the same pool"),
        nested: m.child_messages().map(|c| tree(decoder, &c)).collect(),
    }
}

fn compile(resolver: impl FileResolver + 'static, name: &str) -> Result<DescriptorPool, String> {
    let mut compiler = protox::Compiler::with_file_resolver(resolver);
    compiler.include_imports(true);
    compiler
        .open_file(name)
        .map_err(|e| format!("not a .proto weir can compile: {e}"))?;
    Ok(compiler.descriptor_pool())
}

/// `.proto` sources held in memory, by import name.
struct Sources(HashMap<String, String>);

impl FileResolver for Sources {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        let Some(source) = self.0.get(name) else {
            return Err(protox::Error::file_not_found(name));
        };
        // Registries answer `.proto` text; a schema registered as a serialized descriptor
        // (base64, as some clients send it) may come back as it went.
        match serialized_descriptor(source) {
            Some(mut descriptor) => {
                descriptor.name = Some(name.to_string());
                Ok(File::from_file_descriptor_proto(descriptor))
            }
            None => File::from_source(name, source),
        }
    }
}

/// A base64 `FileDescriptorProto`, if `source` is one (`.proto` text never decodes as one:
/// its spaces and semicolons are not base64).
fn serialized_descriptor(source: &str) -> Option<prost_types::FileDescriptorProto> {
    use base64::Engine as _;
    use prost::Message as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(source.trim())
        .ok()?;
    prost_types::FileDescriptorProto::decode(bytes.as_slice()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of AWS's `MessageIndexFinder`: B = 0, B.A = 1, B.A.D = 2, B.C = 3, whatever
    /// the order of declaration; a map's entry type counts as a nested message.
    #[test]
    fn glue_numbers_every_message_by_full_name() {
        let source = "syntax = \"proto3\";\nmessage B {\n  message C { int32 x = 1; }\n  message A {\n    message D { string s = 1; }\n    map<string, int32> m = 1;\n  }\n  A a = 1;\n}\n";
        let schema = ProtoSchema::from_glue(source).unwrap();
        let names = ["B", "B.A", "B.A.D", "B.A.MEntry", "B.C"];
        for (i, name) in names.iter().enumerate() {
            assert_eq!(schema.glue_index(name), Some(i as u32), "{name}");
        }
        assert_eq!(schema.glue_index("Z"), None);
        // A datum is the index, then the message: B.C's x = 5 is field 1, varint 5.
        let mut out = Vec::new();
        schema.decode(&[4, 0x08, 5], &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), r#"{"x":5}"#);
        let err = schema.decode(&[5, 0x08, 5], &mut Vec::new()).unwrap_err();
        assert!(err.contains("index 5 out of range"), "{err}");
        assert!(schema.decode(&[], &mut Vec::new()).is_err());
    }
}
