//! Lines to a Kafka topic: each line a record value, its key and headers taken from fields
//! of the line; and whole records (`replay`) with their own key, headers and timestamp.

use std::borrow::Cow;

use crate::core::envelope::key_text;
use crate::core::record::{raw, Extractor, FieldPath, Fields};
use crate::error::{Fault, Result};
use crate::io::kafka::{ClientOptions, KafkaSink};
use crate::io::schema::encode::EncodePlan;
use crate::io::spec::KafkaSpec;
use crate::runtime::sink::{Outgoing, Sink};

/// Lines as Kafka record values, with the key and headers taken from fields of the line.
pub struct KafkaLines {
    sink: KafkaSink,
    /// Key first (when given), then the header fields.
    fields: Option<Extractor>,
    has_key: bool,
    header_names: Vec<String>,
    spans: Fields,
}

impl KafkaLines {
    pub fn open(
        spec: &KafkaSpec,
        client: &ClientOptions,
        fields: &RecordFields,
    ) -> Result<KafkaLines> {
        let mut sink = KafkaSink::open(spec, client)?;
        if let Some(encode) = &fields.encode {
            sink.encode_with(encode.open(&sink.topic)?);
        }
        let paths: Vec<FieldPath> = fields
            .key
            .iter()
            .cloned()
            .chain(fields.headers.iter().map(|(_, f)| f.clone()))
            .collect();
        Ok(KafkaLines {
            sink,
            fields: (!paths.is_empty()).then(|| Extractor::new(paths)),
            has_key: fields.key.is_some(),
            header_names: fields.headers.iter().map(|(n, _)| n.clone()).collect(),
            spans: Vec::new(),
        })
    }

    pub fn topic(&self) -> &str {
        &self.sink.topic
    }
}

/// What a broker sink takes from each line: `--key FIELD` and `--header NAME=FIELD`.
#[derive(Clone, Debug, Default)]
pub struct RecordFields {
    pub key: Option<FieldPath>,
    /// (header name, field)
    pub headers: Vec<(String, FieldPath)>,
    /// The records are envelopes with keys of their own (`replay -J`).
    pub envelope_keys: bool,
    /// A broker sink encodes values with a schema.
    pub encode: Option<EncodePlan>,
}

impl RecordFields {
    /// From `--key FIELD` and `--header NAME=FIELD`.
    pub fn parse(key: Option<&FieldPath>, headers: &[String]) -> Result<RecordFields> {
        let mut out = RecordFields {
            key: key.cloned(),
            headers: Vec::new(),
            envelope_keys: false,
            encode: None,
        };
        for h in headers {
            let (name, field) = h.split_once('=').ok_or_else(|| {
                crate::error::Error::Usage(format!("--header {h}: expected NAME=FIELD"))
            })?;
            let field: FieldPath = field
                .parse()
                .map_err(|e| crate::error::Error::Usage(format!("--header {h}: {e}")))?;
            out.headers.push((name.to_string(), field));
        }
        Ok(out)
    }

    pub fn is_empty(&self) -> bool {
        self.key.is_none() && self.headers.is_empty()
    }
}

impl Sink for KafkaLines {
    fn write_record(&mut self, line: &[u8]) -> Result<(), Fault> {
        self.send_line(line)
    }

    fn send(&mut self, record: &Outgoing<'_>) -> Result<(), Fault> {
        self.sink.send(record)
    }

    fn write_raw(&mut self, _bytes: &[u8]) -> Result<()> {
        Err(crate::error::Error::Usage(
            "text for people (-f, reports, CSV) cannot be written to Kafka".into(),
        ))
    }

    fn flush(&mut self) -> Result<()> {
        self.sink.flush()
    }

    fn idle(&mut self) -> Result<()> {
        // Serves delivery reports; waiting for every delivery is for the end.
        self.sink.poll()
    }

    fn name(&self) -> String {
        format!("kafka topic '{}'", self.topic())
    }

    fn encoding(&self) -> Option<String> {
        self.sink.encoding().map(str::to_string)
    }
}

impl KafkaLines {
    fn send_line(&mut self, line: &[u8]) -> Result<(), Fault> {
        let mut values: Vec<Option<Cow<'_, [u8]>>> = Vec::new();
        if let Some(x) = &self.fields {
            let text = x
                .extract_bytes(line, &mut self.spans, None)
                .map_err(Fault::Record)?;
            // The key places the record, so a missing key field is a bad record, as it is on
            // a Kinesis sink and to window's --key: a mistyped name must not spread a key's
            // records over the partitions unnoticed. (A JSON null is the key `null`, which
            // keeps a compacted topic's null-keyed rows in one place.) A missing header field
            // is a null header.
            if self.has_key && self.spans[0].is_none() {
                return Err(Fault::Record(x.missing(0, text)));
            }
            values.extend(
                self.spans
                    .iter()
                    .map(|span| raw(text, *span).map(field_bytes)),
            );
        }
        let mut values = values.iter().map(|v| v.as_deref());
        let key = if self.has_key {
            values.next().flatten()
        } else {
            None
        };
        let headers: Vec<(&str, Option<&[u8]>)> = self
            .header_names
            .iter()
            .map(String::as_str)
            .zip(values)
            .collect();
        self.sink.send(&Outgoing {
            value: Some(line),
            key,
            headers: &headers,
            timestamp: None,
            partition: None,
        })
    }
}

/// A field's bytes for a key or header: a string's text, other JSON as it is written.
pub(super) fn field_bytes(raw: &str) -> Cow<'_, [u8]> {
    match key_text(raw) {
        Cow::Borrowed(text) => Cow::Borrowed(text.as_bytes()),
        Cow::Owned(text) => Cow::Owned(text.into_bytes()),
    }
}
