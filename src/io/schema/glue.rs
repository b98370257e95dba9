//! The AWS Glue Schema Registry (`-r glue://REGISTRY`): a framed record's schema version,
//! fetched by its UUID with GetSchemaVersion, one SigV4-signed JSON call over the HTTP agent
//! the Confluent client uses. Credentials and region come from the AWS chain; the endpoint
//! from `AWS_ENDPOINT_URL_GLUE` (or `AWS_ENDPOINT_URL`), else Glue's in the region.

use std::time::SystemTime;

use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings};
use serde::Deserialize;

use super::registry::Fetched;
use crate::core::framing::uuid_text;
use crate::error::{Error, Result};
use crate::io::aws::{sign_request, AwsChain};

/// A Glue registry's client.
pub struct Glue {
    pub registry: String,
    endpoint: String,
    chain: AwsChain,
    agent: ureq::Agent,
}

/// GetSchemaVersion's answer, the parts weir reads.
#[derive(Deserialize)]
struct SchemaVersion {
    #[serde(rename = "SchemaDefinition")]
    definition: String,
    #[serde(rename = "DataFormat")]
    format: String,
}

impl Glue {
    /// The registry `name`, reached with the AWS chain's credentials and region, each call
    /// within `timeout`.
    pub fn open(name: &str, timeout: std::time::Duration) -> Result<Glue> {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(timeout))
            .build()
            .into();
        let chain = AwsChain::load("-r glue://", None)?;
        let region = &chain.region;
        let endpoint = ["AWS_ENDPOINT_URL_GLUE", "AWS_ENDPOINT_URL"]
            .iter()
            .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
            .unwrap_or_else(|| format!("https://glue.{region}.amazonaws.com"));
        let glue = Glue {
            registry: name.to_string(),
            endpoint: endpoint.trim_end_matches('/').to_string(),
            chain,
            agent,
        };
        glue.check()?;
        Ok(glue)
    }

    /// The registry is there and answers (GetRegistry), before anything is read: out of
    /// reach, refusing the credentials or without such a registry is exit 4.
    fn check(&self) -> Result<()> {
        let body = serde_json::json!({ "RegistryId": { "RegistryName": self.registry } });
        let (status, text) = self.call("AWSGlue.GetRegistry", &body.to_string())?;
        match status {
            200 => Ok(()),
            400 if text.contains("EntityNotFoundException") => Err(Error::Unreachable(format!(
                "{}: no such registry",
                self.url()
            ))),
            _ => Err(self.refused("GetRegistry", status, &text)),
        }
    }

    /// An answer other than the ones asked for: exit 4, with the start of what Glue said.
    fn refused(&self, operation: &str, status: u16, text: &str) -> Error {
        let said: String = text.chars().take(300).collect();
        Error::Unreachable(format!(
            "{}: {operation}: HTTP {status}: {said}",
            self.url()
        ))
    }

    /// Where the registry is, for messages.
    pub fn url(&self) -> String {
        format!("glue://{} at {}", self.registry, self.endpoint)
    }

    /// The schema version `uuid`; `None` when the registry has no such version.
    pub fn version(&self, uuid: &[u8; 16]) -> Result<Option<Fetched>> {
        let body = serde_json::json!({ "SchemaVersionId": uuid_text(uuid) }).to_string();
        let (status, text) = self.call("AWSGlue.GetSchemaVersion", &body)?;
        match status {
            200 => {
                let v: SchemaVersion = serde_json::from_str(&text).map_err(|e| {
                    Error::Unreachable(format!("{}: GetSchemaVersion answered {e}", self.url()))
                })?;
                Ok(Some(Fetched::of(v.definition, v.format)))
            }
            400 if text.contains("EntityNotFoundException") => Ok(None),
            _ => Err(self.refused("GetSchemaVersion", status, &text)),
        }
    }

    /// One signed call of `target` with `body`: the status and the answer's text.
    fn call(&self, target: &str, body: &str) -> Result<(u16, String)> {
        let credentials = (self.chain.credentials())
            .map_err(|e| Error::Unreachable(format!("{}: {e}", self.url())))?;
        let url = format!("{}/", self.endpoint);
        let headers = [
            ("content-type", "application/x-amz-json-1.1"),
            ("x-amz-target", target),
        ];
        let request = SignableRequest::new(
            "POST",
            &url,
            headers.into_iter(),
            SignableBody::Bytes(body.as_bytes()),
        )
        .map_err(|e| Error::Usage(format!("Glue: {e}")))?;
        let service = ("glue", self.chain.region.as_str());
        let in_headers = SigningSettings::default();
        let signed = sign_request(
            request,
            &credentials,
            service,
            in_headers,
            SystemTime::now(),
        )
        .map_err(|e| Error::Usage(format!("Glue: {e}")))?;
        let mut call = self.agent.post(&url);
        for (name, value) in headers.iter().copied().chain(signed.headers()) {
            call = call.header(name, value);
        }
        let mut answer = call
            .send(body)
            .map_err(|e| Error::Unreachable(format!("{}: {e}", self.url())))?;
        let status = answer.status().as_u16();
        let text = answer.body_mut().read_to_string().unwrap_or_default();
        Ok((status, text))
    }
}
