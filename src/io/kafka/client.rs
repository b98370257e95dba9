//! A Kafka client's context and first contact: what librdkafka reports (`Reporter`), the
//! cluster's metadata asked for in short waits, and the errors a client's calls become.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::client::Client;
use rdkafka::client::OAuthToken;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::ConsumerContext;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::metadata::Metadata;
use rdkafka::ClientContext;

use super::config::{is_secret, refused_property, ClientOptions};
use super::msk_iam::TokenSource;
use crate::error::{Error, Result};
use crate::io::spec::KafkaSpec;
use crate::runtime::signals;

/// What a client reported through its error callback, so that a stalled run can say why;
/// and, with MSK IAM, where its OAUTHBEARER tokens come from.
#[derive(Default)]
pub struct Reporter {
    last_error: Mutex<Option<(Instant, String)>>,
    /// The last refusal of our credentials: later transport errors would hide it.
    refused: Mutex<Option<String>>,
    tokens: Option<Arc<TokenSource>>,
}

impl Reporter {
    /// A context for a client of `spec` with these options: with MSK IAM, it signs tokens
    /// with the AWS chain's credentials.
    pub(crate) fn for_client(options: &ClientOptions, spec: &KafkaSpec) -> Result<Reporter> {
        let tokens = match options.msk_iam {
            true => Some(TokenSource::from_chain(&spec.bootstrap_servers())?),
            false => None,
        };
        Ok(Reporter {
            tokens,
            ..Reporter::default()
        })
    }

    /// A token for librdkafka's refresh callback (only asked for with OAUTHBEARER, which
    /// weir takes only as MSK IAM).
    pub(crate) fn oauth_token(
        &self,
    ) -> std::result::Result<OAuthToken, Box<dyn std::error::Error>> {
        let source = (self.tokens.as_ref())
            .ok_or("OAUTHBEARER tokens come with -X sasl.mechanism=AWS_MSK_IAM")?;
        let t = source.token()?;
        Ok(OAuthToken {
            token: t.token,
            principal_name: t.principal,
            lifetime_ms: t.expires_ms,
        })
    }

    pub(crate) fn record(&self, error: &KafkaError, reason: &str) {
        // Reaching a partition's end is no failure: a read waiting at the end for records up
        // to its --to would otherwise give up after --timeout, blaming the broker.
        if error.rdkafka_error_code() == Some(RDKafkaErrorCode::PartitionEOF) {
            return;
        }
        let text = if reason.is_empty() {
            error.to_string()
        } else {
            reason.to_string()
        };
        use RDKafkaErrorCode::{Authentication, SaslAuthenticationFailed};
        if matches!(
            error.rdkafka_error_code(),
            Some(Authentication | SaslAuthenticationFailed)
        ) {
            *self.refused.lock().expect("not poisoned") = Some(text.clone());
        }
        *self.last_error.lock().expect("not poisoned") = Some((Instant::now(), text));
    }

    /// Why the cluster refused our credentials, if it did.
    pub(crate) fn refused(&self) -> Option<String> {
        self.refused.lock().expect("not poisoned").clone()
    }

    /// The latest error, if it is newer than `since`.
    pub(crate) fn error_since(&self, since: Instant) -> Option<String> {
        let guard = self.last_error.lock().expect("not poisoned");
        guard
            .as_ref()
            .filter(|(at, _)| *at >= since)
            .map(|(_, text)| text.clone())
    }
}

impl ClientContext for Reporter {
    const ENABLE_REFRESH_OAUTH_TOKEN: bool = true;

    fn log(&self, _level: RDKafkaLogLevel, _fac: &str, _message: &str) {}

    fn generate_oauth_token(
        &self,
        _config: Option<&str>,
    ) -> std::result::Result<OAuthToken, Box<dyn std::error::Error>> {
        self.oauth_token()
    }

    fn error(&self, error: KafkaError, reason: &str) {
        self.record(&error, reason);
    }
}

/// A plain consumer (the changelog's, `lag`'s) rebalances nothing of ours.
impl ConsumerContext for Reporter {}

/// The cluster's metadata at first contact (`serve` polls the client's events), asked for in
/// short waits up to `timeout`: a
/// signal during a wait for an unreachable cluster then stops the run at once (exit 130),
/// not once the whole timeout has passed.
pub(crate) fn reach<C: ClientContext + Reports>(
    client: &Client<C>,
    serve: &dyn Fn(),
    topic: Option<&str>,
    timeout: Duration,
    spec: &KafkaSpec,
) -> Result<Metadata> {
    const WAIT: Duration = Duration::from_millis(250);
    prime_token(client)?;
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let asked = Instant::now();
        match client.fetch_metadata(topic, left.min(WAIT)) {
            Ok(metadata) => return Ok(metadata),
            Err(_) if signals::stopping() => return Err(Error::Interrupted),
            // An answer that came at once (a refused connection) is not asked again at once.
            Err(_) if left > WAIT => std::thread::sleep(WAIT.saturating_sub(asked.elapsed())),
            Err(e) => {
                // Refused credentials show only in what the client reported, which its
                // events carry (served by `serve`, a short poll): say so.
                serve();
                if let Some(why) = client.context().reporter().refused() {
                    return Err(Error::Unreachable(format!(
                        "Kafka at {}: authentication failed: {why}",
                        spec.bootstrap_servers()
                    )));
                }
                return Err(unreachable("cannot reach Kafka at", spec, e));
            }
        }
    }
}

/// Gives a new client its first MSK IAM token at once. librdkafka asks for tokens through an
/// event the client's polls serve, and a first contact (metadata) waits before any poll:
/// later refreshes, asked for before the token expires, are served by the read's or the
/// sink's own polls.
pub(crate) fn prime_token<C: ClientContext + Reports>(client: &Client<C>) -> Result<()> {
    use std::ffi::CString;
    let Some(source) = &client.context().reporter().tokens else {
        return Ok(());
    };
    let t = source
        .token()
        .map_err(|e| Error::Unreachable(format!("Kafka: authentication: {e}")))?;
    let (token, principal) = (CString::new(t.token), CString::new(t.principal));
    let (Ok(token), Ok(principal)) = (token, principal) else {
        return Err(Error::Unreachable(
            "Kafka: authentication: a token with a NUL byte".into(),
        ));
    };
    let mut err = vec![0 as std::ffi::c_char; 512];
    // SAFETY: the client's handle is live for the call; the strings and the error buffer
    // outlive it, and librdkafka copies what it keeps.
    let code = unsafe {
        rdkafka::bindings::rd_kafka_oauthbearer_set_token(
            client.native_ptr(),
            token.as_ptr(),
            t.expires_ms,
            principal.as_ptr(),
            std::ptr::null_mut(),
            0,
            err.as_mut_ptr(),
            err.len(),
        )
    };
    if code == rdkafka::types::RDKafkaRespErr::RD_KAFKA_RESP_ERR_NO_ERROR {
        return Ok(());
    }
    // SAFETY: librdkafka wrote a NUL-terminated message into the buffer it was given.
    let why = unsafe { std::ffi::CStr::from_ptr(err.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    Err(Error::Usage(format!(
        "Kafka: the MSK IAM token was refused: {why}"
    )))
}

/// A client context that keeps a `Reporter`.
pub(crate) trait Reports {
    fn reporter(&self) -> &Reporter;
}

impl Reports for Reporter {
    fn reporter(&self) -> &Reporter {
        self
    }
}

pub(crate) fn unreachable(what: &str, spec: &KafkaSpec, e: KafkaError) -> Error {
    Error::Unreachable(format!("{what} {}: {e}", spec.bootstrap_servers()))
}

/// Why a topic's metadata names no usable topic: it does not exist (said with the cluster
/// asked, since a wrong address is a usual cause, and for a sink how to make it), or the
/// broker's own error.
pub(crate) fn topic_error(
    spec: &KafkaSpec,
    topic: &str,
    error: Option<RDKafkaErrorCode>,
    writing: bool,
) -> Error {
    match error {
        None | Some(RDKafkaErrorCode::UnknownTopicOrPartition) => {
            let servers = spec.bootstrap_servers();
            let hint = if writing {
                format!(": create it first, e.g. kafka-topics.sh --create --topic {topic}")
            } else {
                String::new()
            };
            Error::Unreachable(format!("topic '{topic}' does not exist on {servers}{hint}"))
        }
        Some(code) => Error::Unreachable(format!("topic '{topic}': {code}")),
    }
}

/// An error text without secret values (librdkafka quotes property values in some errors).
pub(crate) fn scrub(e: &KafkaError) -> String {
    if let KafkaError::ClientConfig(_, desc, key, value) = e {
        return refused_property(desc, key, value);
    }
    let text = e.to_string();
    if is_secret(&text) {
        "invalid security property (value not shown)".into()
    } else {
        text
    }
}
