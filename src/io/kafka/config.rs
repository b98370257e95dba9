//! Kafka client configuration: kcat's `-F` file and `-X` properties, checked before any
//! client is made, and the client context that keeps what librdkafka reports.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rdkafka::client::Client;
use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::consumer::{
    BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance, RebalanceProtocol,
};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::metadata::Metadata;
use rdkafka::{ClientContext, Offset, TopicPartitionList};

use super::changelog::Changelog;
use crate::error::{Error, Result};
use crate::io::spec::KafkaSpec;
use crate::runtime::{signals, PartitionState, Revoker};

/// Environment variable naming a default `-F` file, as `KAFKACAT_CONFIG` does for kcat.
pub const CONFIG_ENV: &str = "WEIR_KAFKA_CONFIG";

/// librdkafka properties whose values must never be shown.
pub(crate) fn is_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key.contains("password") || key.contains("secret") || key.ends_with(".key.pem")
}

/// How a Kafka client connects, checked: the config file read and every property parsed.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// librdkafka properties in order: the config file's (`-F`, else `$WEIR_KAFKA_CONFIG`),
    /// then `-X` pairs, which win.
    pub properties: Vec<(String, String)>,
    /// How long to wait for a broker before giving up.
    pub timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> ClientOptions {
        ClientOptions {
            properties: Vec::new(),
            timeout: Duration::from_secs(10),
        }
    }
}

impl ClientOptions {
    /// Reads the config file (`-F`, else `$WEIR_KAFKA_CONFIG`) and parses it and the `-X`
    /// pairs. A malformed line or property is a usage error.
    pub fn resolve(
        config_file: Option<&Path>,
        properties: &[String],
        timeout: Duration,
    ) -> Result<ClientOptions> {
        let mut out = Vec::new();
        let file: Option<PathBuf> = config_file
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os(CONFIG_ENV).map(PathBuf::from));
        if let Some(path) = file {
            let text = std::fs::read_to_string(&path).map_err(|e| {
                Error::Usage(format!("cannot read Kafka config {}: {e}", path.display()))
            })?;
            for (n, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let (k, v) = split_property(line)
                    .map_err(|e| Error::Usage(format!("{}:{}: {e}", path.display(), n + 1)))?;
                out.push((k.to_string(), v.to_string()));
            }
        }
        for p in properties {
            let (k, v) = split_property(p).map_err(|e| Error::Usage(format!("-X {e}")))?;
            out.push((k.to_string(), v.to_string()));
        }
        Ok(ClientOptions {
            properties: out,
            timeout,
        })
    }

    /// A client configuration for the cluster of `spec`, with these properties applied.
    pub(crate) fn config(&self, spec: &KafkaSpec) -> ClientConfig {
        let mut config = ClientConfig::new();
        config.set("bootstrap.servers", spec.bootstrap_servers());
        config.set_log_level(RDKafkaLogLevel::Emerg);
        for (k, v) in &self.properties {
            config.set(k, v);
        }
        config
    }
}

fn split_property(s: &str) -> std::result::Result<(&str, &str), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim(), v.trim())),
        _ => Err(format!(
            "expected key=value, got '{}'",
            s.split('=').next().unwrap_or("")
        )),
    }
}

/// What the client reported through its error callback, so that a stalled run can say why.
#[derive(Default)]
pub struct Reporter {
    last_error: Mutex<Option<(Instant, String)>>,
    /// The partitions the group gave us; `None` before the first assignment and while a
    /// rebalance is under way.
    assigned: Mutex<Option<Vec<i32>>>,
    /// How many times `assigned` changed: cheap to read on every poll.
    rebalances: AtomicU64,
    /// A group member with state per partition: what it does when partitions are revoked.
    group: Mutex<Option<GroupState>>,
}

/// How a consumer-group member keeps its partitions' states: the command gives them up
/// through `revoker`, and they are saved in the changelog, then their offsets committed.
pub struct GroupState {
    pub revoker: Revoker,
    pub changelog: Changelog,
    pub topic: String,
    /// Partitions revoked since the read loop last looked.
    pub revoked: Vec<i32>,
    /// The next offset of each partition's latest save: an older one that comes later (a
    /// periodic save overtaken by a revocation) is not written over it.
    saved: std::collections::HashMap<i32, i64>,
    /// The first failure of a save inside a rebalance callback, for the read loop to report.
    pub failure: Option<Error>,
}

impl GroupState {
    pub fn new(revoker: Revoker, changelog: Changelog, topic: String) -> GroupState {
        GroupState {
            revoker,
            changelog,
            topic,
            revoked: Vec::new(),
            saved: Default::default(),
            failure: None,
        }
    }

    /// Saves the `states` of partitions still assigned: one revoked since the command handed
    /// its state over had a newer one saved as it went (or, lost, is another member's).
    pub fn save(
        &mut self,
        consumer: &BaseConsumer<Reporter>,
        mut states: Vec<PartitionState>,
        mode: CommitMode,
    ) -> Result<()> {
        if let Ok(assigned) = consumer.assignment() {
            states.retain(|s| assigned.find_partition(&self.topic, s.partition).is_some());
        }
        self.write(consumer, states, mode)
    }

    /// Saves `states` in the changelog and, once the broker has them, commits their offsets:
    /// the group's offsets never run ahead of the saved states.
    fn write(
        &mut self,
        consumer: &BaseConsumer<Reporter>,
        states: Vec<PartitionState>,
        mode: CommitMode,
    ) -> Result<()> {
        let newer: Vec<PartitionState> = states
            .into_iter()
            .filter(|s| {
                self.saved
                    .get(&s.partition)
                    .is_none_or(|&n| s.next_offset >= n)
            })
            .collect();
        if newer.is_empty() {
            return Ok(());
        }
        self.changelog.write(&newer)?;
        let mut offsets = TopicPartitionList::new();
        for s in &newer {
            self.saved.insert(s.partition, s.next_offset);
            offsets
                .add_partition_offset(&self.topic, s.partition, Offset::Offset(s.next_offset))
                .map_err(|e| Error::Usage(format!("partition {}: {e}", s.partition)))?;
        }
        match consumer.commit(&offsets, mode) {
            // A partition moved on meanwhile: its next owner commits; the state is saved.
            Ok(()) | Err(KafkaError::ConsumerCommit(_)) => Ok(()),
            Err(e) => Err(Error::Unreachable(format!("cannot commit offsets: {e}"))),
        }
    }

    /// The group takes `partitions` away: the command hands over their states, which are
    /// saved and committed before the callback returns and the group moves them.
    fn revoke(&mut self, consumer: &BaseConsumer<Reporter>, partitions: Vec<i32>) {
        self.revoked.extend(&partitions);
        // Lost for a missed heartbeat: another member may own them already, so their state
        // is not written over its own; the command drops them.
        let lost = consumer.assignment_lost();
        if lost {
            let names: Vec<String> = partitions.iter().map(i32::to_string).collect();
            eprintln!(
                "weir: the group took partitions {} of '{}' from this member, which it had not heard from in time: their next owners repeat the output since their last saved states",
                names.join(", "),
                self.topic
            );
        }
        let Some(states) = self.revoker.revoke(partitions) else {
            return;
        };
        if lost {
            return;
        }
        if let Err(e) = self.write(consumer, states, CommitMode::Sync) {
            self.failure.get_or_insert(e);
        }
    }
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

impl ConsumerContext for Reporter {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let Rebalance::Revoke(tpl) = rebalance else {
            return;
        };
        let mut group = self.group.lock().expect("not poisoned");
        if let Some(group) = group.as_mut() {
            let partitions = tpl
                .elements()
                .iter()
                .filter(|e| e.topic() == group.topic)
                .map(|e| e.partition())
                .collect::<Vec<i32>>();
            if !partitions.is_empty() {
                group.revoke(consumer, partitions);
            }
        }
    }

    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let cooperative = matches!(
            consumer.rebalance_protocol(),
            RebalanceProtocol::Cooperative
        );
        let now = match rebalance {
            // What the member owns now: under cooperative rebalancing an assignment or a
            // revocation is an increment, so the whole is asked of the consumer; under eager
            // rebalancing the assignment is the whole.
            Rebalance::Assign(tpl) if !cooperative => {
                Some(tpl.elements().iter().map(|e| e.partition()).collect())
            }
            Rebalance::Assign(_) | Rebalance::Revoke(_) if cooperative => consumer
                .assignment()
                .ok()
                .map(|tpl| tpl.elements().iter().map(|e| e.partition()).collect()),
            // Eager rebalancing revokes everything, then assigns: unknown until then.
            Rebalance::Assign(_) | Rebalance::Revoke(_) | Rebalance::Error(_) => None,
        };
        *self.assigned.lock().expect("not poisoned") = now;
        self.rebalances.fetch_add(1, Ordering::Release);
    }
}

impl Reporter {
    /// Counts the group's rebalances: when it moves, `assigned` may have changed.
    pub(crate) fn rebalances(&self) -> u64 {
        self.rebalances.load(Ordering::Acquire)
    }

    pub(crate) fn assigned(&self) -> Option<Vec<i32>> {
        self.assigned.lock().expect("not poisoned").clone()
    }

    /// The group member's state keeping, while it keeps state per partition (`None` once the
    /// read is over: a consumer that closes then gives its partitions up without them).
    pub(crate) fn group(&self) -> std::sync::MutexGuard<'_, Option<GroupState>> {
        self.group.lock().expect("not poisoned")
    }
}

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
    let text = e.to_string();
    if is_secret(&text) {
        "invalid security property (value not shown)".into()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_and_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("kafka.conf");
        std::fs::write(
            &file,
            "# comment\n\nsecurity.protocol=SASL_SSL\nclient.id = from-file\n",
        )
        .unwrap();
        let spec = KafkaSpec {
            brokers: vec![crate::io::spec::Broker {
                host: "127.0.0.1".into(),
                port: 9092,
            }],
            topic: Some("t".into()),
        };
        let timeout = Duration::from_secs(1);
        let options =
            ClientOptions::resolve(Some(&file), &["client.id=cli".into()], timeout).unwrap();
        let c = options.config(&spec);
        assert_eq!(c.get("bootstrap.servers"), Some("127.0.0.1:9092"));
        assert_eq!(c.get("security.protocol"), Some("SASL_SSL"));
        assert_eq!(c.get("client.id"), Some("cli"));
        assert!(ClientOptions::resolve(None, &["novalue".into()], timeout).is_err());
        std::fs::write(&file, "sasl.password\n").unwrap();
        let e = ClientOptions::resolve(Some(&file), &[], timeout)
            .unwrap_err()
            .to_string();
        assert!(e.contains("kafka.conf:1"), "{e}");
    }

    #[test]
    fn secrets_are_recognised() {
        assert!(is_secret("sasl.password"));
        assert!(is_secret("ssl.key.password"));
        assert!(!is_secret("bootstrap.servers"));
    }
}
