//! Where a command's output goes, checked before anything is opened.

use super::kafka::RecordFields;
use crate::error::{Error, Result};
use crate::io::kafka::ClientOptions;
use crate::io::kinesis::AwsOptions;
use crate::io::spec::SinkSpec;

/// Where a command's output goes, checked, with nothing opened yet.
#[derive(Clone, Debug)]
pub struct SinkPlan {
    pub spec: SinkSpec,
    pub fields: RecordFields,
    pub client: ClientOptions,
    pub aws: AwsOptions,
}

impl SinkPlan {
    /// Checks that the record fields fit the sink: a Kinesis record needs a partition key
    /// (`--key FIELD`, unless the records are envelopes with their own) and has no headers.
    pub fn new(
        spec: SinkSpec,
        fields: RecordFields,
        client: ClientOptions,
        aws: AwsOptions,
    ) -> Result<SinkPlan> {
        if fields.encode.is_some() && !matches!(spec, SinkSpec::Kafka(_) | SinkSpec::Kinesis(_)) {
            return Err(Error::Usage(
                "--value-schema-id, --value-subject, --register and a sink's --value-format encode values for a broker: they need -o kafka://... or -o kinesis://...".into(),
            ));
        }
        match spec {
            SinkSpec::Kafka(_) => {}
            SinkSpec::Kinesis(_) if !fields.headers.is_empty() => {
                return Err(Error::Usage(
                    "Kinesis records have no headers: --header needs -o kafka://...".into(),
                ))
            }
            SinkSpec::Kinesis(_) if fields.key.is_none() && !fields.envelope_keys => {
                return Err(Error::Usage(
                    "-o kinesis:// needs --key FIELD: the field whose value is each record's partition key".into(),
                ))
            }
            SinkSpec::Kinesis(_) => {}
            SinkSpec::Stdout | SinkSpec::File(_) if !fields.is_empty() => {
                return Err(Error::Usage(
                    "--key/--header pick a record's key and headers: they need -o kafka://... or -o kinesis://..."
                        .into(),
                ))
            }
            SinkSpec::Stdout | SinkSpec::File(_) => {}
        }
        Ok(SinkPlan {
            spec,
            fields,
            client,
            aws,
        })
    }

    /// A sink for a report: stdout or a file only; `refusal` says so otherwise.
    pub fn text(spec: SinkSpec, refusal: &str) -> Result<SinkPlan> {
        if matches!(spec, SinkSpec::Kafka(_) | SinkSpec::Kinesis(_)) {
            return Err(Error::Usage(refusal.into()));
        }
        SinkPlan::new(
            spec,
            RecordFields::default(),
            ClientOptions::default(),
            AwsOptions::default(),
        )
    }

    pub fn is_broker(&self) -> bool {
        matches!(self.spec, SinkSpec::Kafka(_) | SinkSpec::Kinesis(_))
    }
}
