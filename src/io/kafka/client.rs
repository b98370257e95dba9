//! A Kafka client's context and first contact: what librdkafka reports (`Reporter`), the
//! cluster's metadata asked for in short waits, and the errors a client's calls become.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use rdkafka::client::Client;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::ConsumerContext;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::metadata::Metadata;
use rdkafka::ClientContext;

use super::config::{is_secret, refused_property};
use crate::error::{Error, Result};
use crate::io::spec::KafkaSpec;
use crate::runtime::signals;

/// What a client reported through its error callback, so that a stalled run can say why.
#[derive(Default)]
pub struct Reporter {
    last_error: Mutex<Option<(Instant, String)>>,
}

impl Reporter {
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
        *self.last_error.lock().expect("not poisoned") = Some((Instant::now(), text));
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
    fn log(&self, _level: RDKafkaLogLevel, _fac: &str, _message: &str) {}

    fn error(&self, error: KafkaError, reason: &str) {
        self.record(&error, reason);
    }
}

/// A plain consumer (the changelog's, `lag`'s) rebalances nothing of ours.
impl ConsumerContext for Reporter {}

/// The cluster's metadata at first contact, asked for in short waits up to `timeout`: a
/// signal during a wait for an unreachable cluster then stops the run at once (exit 130),
/// not once the whole timeout has passed.
pub(crate) fn reach<C: ClientContext>(
    client: &Client<C>,
    topic: Option<&str>,
    timeout: Duration,
    spec: &KafkaSpec,
) -> Result<Metadata> {
    const WAIT: Duration = Duration::from_millis(250);
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let asked = Instant::now();
        match client.fetch_metadata(topic, left.min(WAIT)) {
            Ok(metadata) => return Ok(metadata),
            Err(_) if signals::stopping() => return Err(Error::Interrupted),
            // An answer that came at once (a refused connection) is not asked again at once.
            Err(_) if left > WAIT => std::thread::sleep(WAIT.saturating_sub(asked.elapsed())),
            Err(e) => return Err(unreachable("cannot reach Kafka at", spec, e)),
        }
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
