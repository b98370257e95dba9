//! The smallest faithful Confluent schema registry, for tests: the read calls a consumer
//! makes, in the REST shapes of Confluent's API, over HTTP/1.1 on 127.0.0.1.
//!
//! - `GET /schemas/ids/N`: `{"schema":..,"schemaType":..,"references":[..]}`, with
//!   `schemaType` left out for Avro and `references` when there are none, as Confluent's
//!   registry answers; `404 {"error_code":40403,..}` for an unknown id;
//! - `GET /subjects/S/versions/V` (a number or `latest`): `{"subject","version","id",
//!   "schema",..}`; `40401` for an unknown subject, `40402` for an unknown version;
//! - `POST /subjects/S/versions` registers `{"schema","schemaType"}`: `{"id":N}`, the id the
//!   same schema has anywhere, else a new one, and a new version unless the subject has it;
//! - `POST /subjects/S` looks a schema up: the subject version that has it, `40401` or
//!   `40403`. Schemas are the same when their JSON is (Avro, JSON Schema) or their text.
//!
//! It serves what confluent-kafka's own mock registry held (`tests/schema/golden.py`), and
//! that client reads it back (the golden test), so the shapes are checked by the reference
//! client itself. It can also misbehave on demand: answer 500, answer late, refuse with
//! 401 without credentials, or send malformed JSON.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

/// How the registry answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    Serve,
    /// HTTP 500 to every call.
    Fail,
    /// HTTP 500 to the next N calls, then serve.
    FailTimes(u32),
    /// Serve after this delay.
    Slow(Duration),
    /// 401 unless the call carries this `Authorization` header.
    RequireAuth(String),
    /// A 200 whose body is not JSON.
    Malformed,
    /// HTTP 500 to calls whose path ends so; the others are served.
    FailPath(String),
}

#[derive(Default)]
struct State {
    /// Each id's answer to `/schemas/ids/N`.
    ids: BTreeMap<u32, Value>,
    /// Each subject's versions in order, as `/subjects/S/versions/V` answers them.
    subjects: BTreeMap<String, Vec<Value>>,
    mode: Option<Mode>,
    /// The paths asked, in order.
    asked: Vec<String>,
}

pub struct Registry {
    pub url: String,
    state: Arc<Mutex<State>>,
}

impl Registry {
    /// Serves golden.py's `registry` document: `ids` by id, `subjects` as a list of
    /// `{subject, version, id, schema, schemaType, references}`.
    pub fn start(document: &Value) -> Registry {
        Registry::serve(document, None)
    }

    /// As `start`, over TLS, with a self-signed certificate for 127.0.0.1: the registry and
    /// the certificate's PEM, the CA a client must trust.
    pub fn start_tls(document: &Value) -> (Registry, String) {
        let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::try_from(certified.signing_key.serialize_der())
            .unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![certified.cert.der().clone()], key)
        .unwrap();
        let registry = Registry::serve(document, Some(Arc::new(config)));
        (registry, certified.cert.pem())
    }

    fn serve(document: &Value, tls: Option<Arc<rustls::ServerConfig>>) -> Registry {
        let mut state = State::default();
        for (id, entry) in document["ids"].as_object().unwrap() {
            state.ids.insert(id.parse().unwrap(), shape(entry, None));
        }
        let mut listed: Vec<&Value> = document["subjects"].as_array().unwrap().iter().collect();
        listed.sort_by_key(|s| s["version"].as_i64());
        for s in listed {
            let subject = s["subject"].as_str().unwrap().to_string();
            state
                .subjects
                .entry(subject)
                .or_default()
                .push(shape(s, Some(s)));
        }
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let scheme = if tls.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(state));
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = shared.clone();
                let tls = tls.clone();
                std::thread::spawn(move || match tls {
                    None => serve(stream, &state),
                    Some(config) => {
                        let Ok(connection) = rustls::ServerConnection::new(config) else {
                            return;
                        };
                        serve(rustls::StreamOwned::new(connection, stream), &state)
                    }
                });
            }
        });
        Registry { url, state }
    }

    pub fn set(&self, mode: Mode) {
        self.state.lock().unwrap().mode = Some(mode);
    }

    /// The paths asked so far.
    pub fn asked(&self) -> Vec<String> {
        self.state.lock().unwrap().asked.clone()
    }
}

/// An entry in the shape the registry answers: `schemaType` only when not Avro,
/// `references` only when there are some; with `subject`, `version` and `id` for a
/// subject's version.
fn shape(entry: &Value, version_of: Option<&Value>) -> Value {
    let mut out = serde_json::Map::new();
    if let Some(v) = version_of {
        out.insert("subject".into(), v["subject"].clone());
        out.insert("version".into(), v["version"].clone());
        out.insert("id".into(), v["id"].clone());
    }
    out.insert("schema".into(), entry["schema"].clone());
    if entry["schemaType"] != "AVRO" {
        out.insert("schemaType".into(), entry["schemaType"].clone());
    }
    if entry["references"]
        .as_array()
        .is_some_and(|r| !r.is_empty())
    {
        out.insert("references".into(), entry["references"].clone());
    }
    Value::Object(out)
}

fn serve(mut stream: impl Read + Write, state: &Mutex<State>) {
    let mut reader = BufReader::new(&mut stream);
    // One request per connection is enough for a client; keep-alive is declined.
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut authorization = None;
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("authorization") {
                authorization = Some(value.trim().to_string());
            }
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut sent = vec![0; length];
    if reader.read_exact(&mut sent).is_err() {
        return;
    }
    drop(reader);
    let mut words = request_line.split_whitespace();
    let method = words.next().unwrap_or("GET").to_string();
    let path = words.next().unwrap_or("/").to_string();
    let call = Call {
        method: &method,
        path: &path,
        body: &sent,
    };
    let (status, body) = answer(state, &call, authorization.as_deref());
    let reason = match status {
        200 => "OK",
        401 => "Unauthorized",
        404 => "Not Found",
        422 => "Unprocessable Entity",
        _ => "Internal Server Error",
    };
    let _ = write!(
        &mut stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/vnd.schemaregistry.v1+json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.flush();
}

/// One request: its method, path and body.
struct Call<'a> {
    method: &'a str,
    path: &'a str,
    body: &'a [u8],
}

fn answer(state: &Mutex<State>, call: &Call, authorization: Option<&str>) -> (u16, String) {
    let path = call.path;
    let mode = {
        let mut s = state.lock().unwrap();
        s.asked.push(path.to_string());
        let mode = s.mode.clone().unwrap_or(Mode::Serve);
        if let Mode::FailTimes(n) = mode {
            s.mode = Some(if n > 1 {
                Mode::FailTimes(n - 1)
            } else {
                Mode::Serve
            });
        }
        mode
    };
    match mode {
        Mode::Fail | Mode::FailTimes(_) => {
            return (500, error(50001, "Error in the backend data store"))
        }
        Mode::Slow(delay) => std::thread::sleep(delay),
        Mode::RequireAuth(expected) if authorization != Some(expected.as_str()) => {
            return (401, error(401, "Unauthorized"))
        }
        Mode::Malformed => return (200, "{\"schema\": ".into()),
        Mode::FailPath(end) if path.ends_with(&end) => {
            return (500, error(50001, "Error in the backend data store"))
        }
        _ => {}
    }
    let mut s = state.lock().unwrap();
    // Query parameters (`?deleted=false`) change nothing here.
    let path = path.split('?').next().unwrap_or_default();
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    if call.method == "POST" {
        let Ok(sent) = serde_json::from_slice::<Value>(call.body) else {
            return (422, error(42201, "Invalid schema"));
        };
        return match parts.as_slice() {
            ["subjects", subject, "versions"] => s.register(&percent_decoded(subject), &sent),
            ["subjects", subject] => s.lookup(&percent_decoded(subject), &sent),
            _ => (404, error(404, "HTTP 404 Not Found")),
        };
    }
    match parts.as_slice() {
        ["schemas", "ids", id] => match id.parse().ok().and_then(|id: u32| s.ids.get(&id)) {
            Some(entry) => (200, entry.to_string()),
            None => (404, error(40403, &format!("Schema {id} not found"))),
        },
        ["subjects", subject, "versions", version] => {
            let subject = percent_decoded(subject);
            let Some(versions) = s.subjects.get(&subject) else {
                return (
                    404,
                    error(40401, &format!("Subject '{subject}' not found.")),
                );
            };
            let found = match *version {
                "latest" => versions.last(),
                v => versions
                    .iter()
                    .find(|e| e["version"].as_i64().map(|n| n.to_string()).as_deref() == Some(v)),
            };
            match found {
                Some(entry) => (200, entry.to_string()),
                None => (404, error(40402, &format!("Version {version} not found."))),
            }
        }
        _ => (404, error(404, "HTTP 404 Not Found")),
    }
}

impl State {
    /// `POST /subjects/S/versions`: the id of `sent` (reused where the registry has the same
    /// schema), a new version of the subject unless it has that schema already.
    fn register(&mut self, subject: &str, sent: &Value) -> (u16, String) {
        if let (200, found) = self.lookup(subject, sent) {
            let found: Value = serde_json::from_str(&found).unwrap();
            return (200, json!({"id": found["id"]}).to_string());
        }
        let kind = sent["schemaType"].as_str().unwrap_or("AVRO");
        let schema = sent["schema"].as_str().unwrap_or_default();
        let same = |e: &Value| same_schema(e, schema, kind);
        let id = match self.ids.iter().find(|(_, e)| same(e)) {
            Some((id, _)) => *id,
            None => self.ids.keys().max().map_or(1, |m| m + 1),
        };
        let entry = json!({"schema": schema, "schemaType": kind, "references": sent["references"]});
        self.ids.insert(id, shape(&entry, None));
        let versions = self.subjects.entry(subject.to_string()).or_default();
        let version = versions
            .last()
            .map_or(1, |v| v["version"].as_i64().unwrap() + 1);
        let listed = json!({"subject": subject, "version": version, "id": id});
        versions.push(shape(&entry, Some(&listed)));
        (200, json!({"id": id}).to_string())
    }

    /// `POST /subjects/S`: the version of the subject that has `sent`.
    fn lookup(&self, subject: &str, sent: &Value) -> (u16, String) {
        let Some(versions) = self.subjects.get(subject) else {
            return (
                404,
                error(40401, &format!("Subject '{subject}' not found.")),
            );
        };
        let kind = sent["schemaType"].as_str().unwrap_or("AVRO");
        let schema = sent["schema"].as_str().unwrap_or_default();
        match versions.iter().find(|e| same_schema(e, schema, kind)) {
            Some(e) => (200, e.to_string()),
            None => (404, error(40403, "Schema not found")),
        }
    }
}

/// Whether a served entry holds `schema` of `kind`: the same JSON, or for Protobuf the same
/// text.
fn same_schema(entry: &Value, schema: &str, kind: &str) -> bool {
    let entry_kind = entry["schemaType"].as_str().unwrap_or("AVRO");
    let held = entry["schema"].as_str().unwrap_or_default();
    let json = |t: &str| serde_json::from_str::<Value>(t).ok();
    entry_kind == kind
        && match kind {
            "PROTOBUF" => held.trim() == schema.trim(),
            _ => json(held).is_some() && json(held) == json(schema),
        }
}

fn error(code: u32, message: &str) -> String {
    json!({"error_code": code, "message": message}).to_string()
}

fn percent_decoded(s: &str) -> String {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
