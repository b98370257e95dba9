//! A client of a Confluent-compatible schema registry: the few calls a reader and a writer
//! make (a schema by id or subject version; a schema looked up or registered under a
//! subject), with retries, credentials and a CA of its own.
//!
//! A 404 is an answer (the schema is not there); a 5xx or a failed connection is retried
//! and then, like a 401 or 403 or a body that is not the registry's JSON, an outage: the
//! run stops with exit 4 rather than call a whole topic's records bad.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde::Deserialize;

use crate::error::{Error, Result};

/// Where the registry is and how to reach it, checked before anything is opened.
#[derive(Clone, Debug)]
pub struct RegistryOptions {
    /// The base URL, without a trailing slash or credentials.
    pub url: String,
    /// The `Authorization` header's value, if any.
    pub authorization: Option<String>,
    /// A PEM file of CA certificates to trust instead of the system's.
    pub ca: Option<PathBuf>,
    pub timeout: Duration,
    /// `glue://NAME`: an AWS Glue Schema Registry's name.
    pub glue: Option<String>,
}

/// `glue://NAME`: Glue's rules for a registry name.
fn glue_options(name: &str, timeout: Duration) -> std::result::Result<RegistryOptions, String> {
    let fits = (1..=255).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-$#".contains(&b));
    if !fits {
        return Err(format!(
            "glue://{name}: a Glue registry name is 1 to 255 letters, digits, '-', '_', '$' or '#'"
        ));
    }
    Ok(RegistryOptions {
        url: format!("glue://{name}"),
        authorization: None,
        ca: None,
        timeout,
        glue: Some(name.to_string()),
    })
}

impl RegistryOptions {
    /// The URL of `-r` and the `schema.registry.*` properties of `-X` (as kcat names them):
    /// `basic.auth.user.info=USER:PASSWORD`, `bearer.auth.token=TOKEN`, `ssl.ca.location`.
    /// Credentials in the URL (`https://user:pass@host`) work too.
    pub fn new(url: &str, properties: &[(String, String)], timeout: Duration) -> Result<Self> {
        let usage = |m: String| Error::Usage(format!("--schema-registry: {m}"));
        if let Some(name) = url.strip_prefix("glue://") {
            return glue_options(name, timeout).map_err(usage);
        }
        let (scheme, rest) = url
            .split_once("://")
            .filter(|(s, _)| *s == "http" || *s == "https")
            .ok_or_else(|| usage(format!("'{url}' is not an http:// or https:// URL")))?;
        let (user_info, host) = match rest.rsplit_once('@') {
            Some((user, host)) => (Some(user.to_string()), host),
            None => (None, rest),
        };
        let mut options = RegistryOptions {
            url: format!("{scheme}://{}", host.trim_end_matches('/')),
            authorization: user_info.map(|u| basic(&u)),
            ca: None,
            timeout,
            glue: None,
        };
        for (key, value) in properties {
            match key.strip_prefix("schema.registry.") {
                Some("basic.auth.user.info") => options.authorization = Some(basic(value)),
                Some("bearer.auth.token") => options.authorization = Some(format!("Bearer {value}")),
                Some("ssl.ca.location") => options.ca = Some(PathBuf::from(value)),
                Some(other) => return Err(usage(format!("-X schema.registry.{other}: not a property weir knows (basic.auth.user.info, bearer.auth.token, ssl.ca.location)"))),
                None => {}
            }
        }
        Ok(options)
    }
}

fn basic(user_info: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(user_info);
    format!("Basic {encoded}")
}

/// What the registry holds under an id or a subject's version.
#[derive(Clone, Debug, Deserialize)]
pub struct Fetched {
    pub schema: String,
    /// `AVRO` (also when left out, as older registries do), `PROTOBUF` or `JSON`.
    #[serde(rename = "schemaType", default = "avro")]
    pub kind: String,
    #[serde(default)]
    pub references: Vec<Reference>,
    /// The id, in a subject version's answer.
    #[serde(default)]
    pub id: Option<u32>,
    /// The version, in a subject version's answer.
    #[serde(default)]
    pub version: Option<i64>,
}

fn avro() -> String {
    "AVRO".into()
}

impl Fetched {
    /// A schema with no references, of `kind` (`AVRO`, `JSON`, `PROTOBUF`).
    pub fn of(schema: String, kind: String) -> Fetched {
        Fetched {
            schema,
            kind,
            references: Vec::new(),
            id: None,
            version: None,
        }
    }
}

/// A schema to look up or register under a subject, as the registry takes it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct NewSchema {
    pub schema: String,
    #[serde(rename = "schemaType")]
    pub kind: String,
}

/// The registry's answer to a registration: the schema's id.
#[derive(Deserialize)]
struct Registered {
    id: u32,
}

/// A schema another names: by its name in the referring schema, found under a subject's
/// version.
#[derive(Clone, Debug, Deserialize)]
pub struct Reference {
    pub name: String,
    pub subject: String,
    pub version: i64,
}

/// A registry connection.
pub struct Registry {
    options: RegistryOptions,
    agent: ureq::Agent,
    /// Subject versions asked for (references shared by several schemas are asked once).
    subjects: std::sync::Mutex<HashMap<(String, i64), Option<Fetched>>>,
}

/// Tries of a call that fails with a 5xx or no answer, the first included.
const TRIES: u32 = 4;

impl Registry {
    pub fn open(options: RegistryOptions) -> Result<Registry> {
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(options.timeout));
        if let Some(ca) = &options.ca {
            config = config.tls_config(tls_with_ca(ca)?);
        }
        Ok(Registry {
            agent: config.build().into(),
            options,
            subjects: Default::default(),
        })
    }

    pub fn url(&self) -> &str {
        &self.options.url
    }

    /// The schema of `id`; `None` when the registry has no such id.
    pub fn by_id(&self, id: u32) -> Result<Option<Fetched>> {
        self.get(&format!("/schemas/ids/{id}"))
    }

    /// A subject's version (a reference's target).
    pub fn by_subject(&self, subject: &str, version: i64) -> Result<Option<Fetched>> {
        let key = (subject.to_string(), version);
        if let Some(known) = self.subjects.lock().expect("not poisoned").get(&key) {
            return Ok(known.clone());
        }
        let shown = match version {
            v if v < 0 => "latest".to_string(),
            v => v.to_string(),
        };
        let path = format!("/subjects/{}/versions/{shown}", encode_path(subject));
        let fetched: Option<Fetched> = self.get(&path)?;
        let mut known = self.subjects.lock().expect("not poisoned");
        known.insert(key, fetched.clone());
        Ok(fetched)
    }

    /// The id and version `schema` has under `subject`; `None` when it is not registered there.
    pub fn lookup(&self, subject: &str, schema: &NewSchema) -> Result<Option<Fetched>> {
        let body = serde_json::to_string(schema).expect("serialises");
        self.request(&format!("/subjects/{}", encode_path(subject)), Some(&body))
    }

    /// Registers `schema` under `subject` (a schema the subject has already keeps its id):
    /// its id.
    pub fn register(&self, subject: &str, schema: &NewSchema) -> Result<u32> {
        let body = serde_json::to_string(schema).expect("serialises");
        let path = format!("/subjects/{}/versions", encode_path(subject));
        let registered: Option<Registered> = self.request(&path, Some(&body))?;
        registered.map(|r| r.id).ok_or_else(|| {
            Error::Unreachable(format!(
                "the schema registry at {} answered 404 to registering under '{subject}'",
                self.options.url
            ))
        })
    }

    fn get<T: for<'de> Deserialize<'de>>(&self, path: &str) -> Result<Option<T>> {
        self.request(path, None)
    }

    /// A GET, or a POST of `body`: its answer, `None` for a 404.
    fn request<T: for<'de> Deserialize<'de>>(
        &self,
        path: &str,
        body: Option<&str>,
    ) -> Result<Option<T>> {
        let url = format!("{}{path}", self.options.url);
        let started = Instant::now();
        let mut wait = Duration::from_millis(200);
        for attempt in 1..=TRIES {
            match self.call(&url, body)? {
                Answer::Body(body) => return parse(&url, &body).map(Some),
                Answer::NotFound => return Ok(None),
                Answer::Retry(why)
                    if attempt == TRIES || started.elapsed() + wait > self.options.timeout =>
                {
                    return Err(Error::Unreachable(format!(
                        "the schema registry at {url}: {why} (tried {attempt} times)"
                    )));
                }
                Answer::Retry(_) => {
                    std::thread::sleep(wait);
                    wait *= 2;
                }
            }
        }
        unreachable!("the last try returns")
    }

    fn call(&self, url: &str, body: Option<&str>) -> Result<Answer> {
        const ACCEPT: &str = "application/vnd.schemaregistry.v1+json, application/json";
        let auth = self.options.authorization.as_deref();
        let sent = match body {
            None => {
                let request = self.agent.get(url).header("Accept", ACCEPT);
                match auth {
                    Some(auth) => request.header("Authorization", auth).call(),
                    None => request.call(),
                }
            }
            Some(body) => {
                let request = (self.agent.post(url).header("Accept", ACCEPT))
                    .header("Content-Type", "application/vnd.schemaregistry.v1+json");
                match auth {
                    Some(auth) => request.header("Authorization", auth).send(body),
                    None => request.send(body),
                }
            }
        };
        let mut response = match sent {
            Ok(r) => r,
            Err(e) => return Ok(Answer::Retry(e.to_string())),
        };
        let status = response.status().as_u16();
        let body = response.body_mut().read_to_string().unwrap_or_default();
        match status {
            200..=299 => Ok(Answer::Body(body)),
            404 => Ok(Answer::NotFound),
            // A schema the subject refuses (incompatible, or invalid): the command line's to mend.
            409 | 422 => Err(Error::Usage(format!(
                "the schema registry at {url} refused the schema (HTTP {status}): {}",
                body.trim()
            ))),
            401 | 403 => Err(Error::Unreachable(format!(
                "the schema registry at {url} refused weir (HTTP {status}); give credentials with -X schema.registry.basic.auth.user.info=USER:PASSWORD or -X schema.registry.bearer.auth.token=TOKEN"
            ))),
            500..=599 | 408 | 429 => Ok(Answer::Retry(format!("HTTP {status} {}", body.trim()))),
            _ => Err(Error::Unreachable(format!("the schema registry at {url} answered HTTP {status}: {}", body.trim()))),
        }
    }
}

enum Answer {
    Body(String),
    NotFound,
    Retry(String),
}

fn parse<T: for<'de> Deserialize<'de>>(url: &str, body: &str) -> Result<T> {
    serde_json::from_str(body).map_err(|e| {
        Error::Unreachable(format!(
            "the schema registry at {url} answered what is not a schema: {e}"
        ))
    })
}

/// A subject as one path segment.
fn encode_path(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(b))
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn tls_with_ca(ca: &std::path::Path) -> Result<ureq::tls::TlsConfig> {
    let usage = |m: String| {
        Error::Usage(format!(
            "-X schema.registry.ssl.ca.location={}: {m}",
            ca.display()
        ))
    };
    let pem = std::fs::read(ca).map_err(|e| usage(e.to_string()))?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        if let ureq::tls::PemItem::Certificate(c) = item.map_err(|e| usage(e.to_string()))? {
            certs.push(c);
        }
    }
    if certs.is_empty() {
        return Err(usage("no certificate in the file".into()));
    }
    Ok(ureq::tls::TlsConfig::builder()
        .root_certs(ureq::tls::RootCerts::Specific(std::sync::Arc::new(certs)))
        .build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_take_credentials_from_the_url_or_properties() {
        let t = Duration::from_secs(1);
        let o = RegistryOptions::new("http://me:pw@localhost:8081/", &[], t).unwrap();
        assert_eq!(o.url, "http://localhost:8081");
        assert_eq!(o.authorization.as_deref(), Some("Basic bWU6cHc="));
        let props = [(
            "schema.registry.bearer.auth.token".to_string(),
            "tok".to_string(),
        )];
        let o = RegistryOptions::new("https://r.example", &props, t).unwrap();
        assert_eq!(o.authorization.as_deref(), Some("Bearer tok"));
        assert!(RegistryOptions::new("localhost:8081", &[], t).is_err());
        let bad = [("schema.registry.nope".to_string(), "x".to_string())];
        assert!(RegistryOptions::new("http://r", &bad, t).is_err());
        assert_eq!(encode_path("a b/c"), "a%20b%2Fc");
    }
}
