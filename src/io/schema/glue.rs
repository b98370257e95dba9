//! The AWS Glue Schema Registry (`-r glue://REGISTRY`): a framed record's schema version,
//! fetched by its UUID with GetSchemaVersion, one SigV4-signed JSON call over the HTTP agent
//! the Confluent client uses. Credentials and region come from the AWS chain; the endpoint
//! from `AWS_ENDPOINT_URL_GLUE` (or `AWS_ENDPOINT_URL`), else Glue's in the region.

use std::time::SystemTime;

use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings};
use serde::Deserialize;

use super::registry::Fetched;
use crate::core::framing::{parse_uuid, uuid_text};
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
    #[serde(rename = "SchemaVersionId", default)]
    id: String,
    #[serde(rename = "VersionNumber", default)]
    number: Option<i64>,
    #[serde(rename = "Status", default)]
    status: Option<String>,
}

/// The answers that name a schema version (GetSchemaByDefinition, RegisterSchemaVersion,
/// CreateSchema): its id.
#[derive(Deserialize)]
struct VersionId {
    #[serde(rename = "SchemaVersionId")]
    id: Option<String>,
}

/// A schema version: what a read decodes by, and a sink frames values with.
pub struct Version {
    pub uuid: [u8; 16],
    pub fetched: Fetched,
    /// Its number within its schema.
    pub number: Option<i64>,
}

/// How long a new version may stay PENDING (Glue checks its compatibility) before the run
/// gives up on it, and how often it asks meanwhile.
const PENDING_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);
const PENDING_POLL: std::time::Duration = std::time::Duration::from_millis(500);

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
        let body = serde_json::json!({ "SchemaVersionId": uuid_text(uuid) });
        Ok(self.get_version(&body)?.map(|(version, _)| version.fetched))
    }

    /// Version `version` of schema `name` (`-1`: its latest); `None` when there is no such
    /// schema or version.
    pub fn named_version(&self, name: &str, version: i64) -> Result<Option<Version>> {
        let number = match version {
            v if v < 0 => serde_json::json!({ "LatestVersion": true }),
            v => serde_json::json!({ "VersionNumber": v }),
        };
        let body = serde_json::json!({
            "SchemaId": { "RegistryName": self.registry, "SchemaName": name },
            "SchemaVersionNumber": number,
        });
        let found = self.get_version(&body)?;
        Ok(found.map(|(version, _)| version))
    }

    /// The version of schema `name` whose definition is `definition`, if it has one.
    pub fn by_definition(&self, name: &str, definition: &str) -> Result<Option<Version>> {
        let body = serde_json::json!({
            "SchemaId": { "RegistryName": self.registry, "SchemaName": name },
            "SchemaDefinition": definition,
        });
        let (status, text) = self.call("AWSGlue.GetSchemaByDefinition", &body.to_string())?;
        match status {
            200 => self.available(&self.version_id("GetSchemaByDefinition", &text)?),
            400 if text.contains("EntityNotFoundException") => Ok(None),
            _ => Err(self.refused("GetSchemaByDefinition", status, &text)),
        }
    }

    /// Registers `definition` (of `format`: AVRO, JSON) as a version of schema `name`, which
    /// is created when missing (with Glue's default compatibility, BACKWARD), as AWS's
    /// serializers register on write; a definition already there keeps its version.
    pub fn register(&self, name: &str, format: &str, definition: &str) -> Result<Version> {
        if let Some(known) = self.by_definition(name, definition)? {
            return Ok(known);
        }
        let schema = serde_json::json!({ "RegistryName": self.registry, "SchemaName": name });
        let body = serde_json::json!({ "SchemaId": schema, "SchemaDefinition": definition });
        let (status, text) = self.call("AWSGlue.RegisterSchemaVersion", &body.to_string())?;
        let text = match status {
            200 => text,
            400 if text.contains("EntityNotFoundException") => {
                let body = serde_json::json!({
                    "RegistryId": { "RegistryName": self.registry },
                    "SchemaName": name,
                    "DataFormat": format,
                    "Compatibility": "BACKWARD",
                    "SchemaDefinition": definition,
                });
                let (status, text) = self.call("AWSGlue.CreateSchema", &body.to_string())?;
                if status != 200 {
                    return Err(self.refused("CreateSchema", status, &text));
                }
                text
            }
            _ => return Err(self.refused("RegisterSchemaVersion", status, &text)),
        };
        let uuid = self.version_id("RegisterSchemaVersion", &text)?;
        self.available(&uuid)?.ok_or_else(|| {
            Error::Unreachable(format!(
                "{}: schema '{name}' registered a version it does not give back",
                self.url()
            ))
        })
    }

    /// The schema version id an answer names.
    fn version_id(&self, operation: &str, text: &str) -> Result<[u8; 16]> {
        let named: Option<VersionId> = serde_json::from_str(text).ok();
        let id = named.and_then(|v| v.id.as_deref().and_then(parse_uuid));
        id.ok_or_else(|| self.refused(operation, 200, text))
    }

    /// Version `uuid` once Glue has checked it: a version still PENDING is asked for again,
    /// one that FAILURE or DELETING is refused (its compatibility check failed).
    fn available(&self, uuid: &[u8; 16]) -> Result<Option<Version>> {
        let started = std::time::Instant::now();
        loop {
            let body = serde_json::json!({ "SchemaVersionId": uuid_text(uuid) });
            let Some(v) = self.get_version(&body)? else {
                return Ok(None);
            };
            match v.1.as_deref() {
                None | Some("AVAILABLE") => return Ok(Some(v.0)),
                Some("PENDING") if started.elapsed() < PENDING_LIMIT => {
                    std::thread::sleep(PENDING_POLL)
                }
                Some(status) => {
                    return Err(Error::Usage(format!(
                        "{}: schema version {} is {status}: Glue did not accept it (its compatibility with the schema's versions)",
                        self.url(),
                        uuid_text(uuid)
                    )))
                }
            }
        }
    }

    /// GetSchemaVersion by `body` (a version id, or a schema's name and number): the
    /// version and its status; `None` when Glue has no such schema or version.
    fn get_version(&self, body: &serde_json::Value) -> Result<Option<(Version, Option<String>)>> {
        let operation = "GetSchemaVersion";
        let (status, text) = self.call("AWSGlue.GetSchemaVersion", &body.to_string())?;
        match status {
            200 => {
                let v: SchemaVersion = serde_json::from_str(&text)
                    .map_err(|_| self.refused(operation, status, &text))?;
                let uuid =
                    parse_uuid(&v.id).ok_or_else(|| self.refused(operation, status, &text))?;
                let version = Version {
                    uuid,
                    fetched: Fetched::of(v.definition, v.format),
                    number: v.number,
                };
                Ok(Some((version, v.status)))
            }
            400 if text.contains("EntityNotFoundException") => Ok(None),
            _ => Err(self.refused(operation, status, &text)),
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
