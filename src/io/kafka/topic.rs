//! Topics weir makes for itself: a group member's changelog, a shuffle's internal topic.

use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::error::RDKafkaErrorCode;

use super::client::{scrub, unreachable, Reporter};
use super::config::ClientOptions;
use crate::error::{Error, Result};
use crate::io::spec::KafkaSpec;

/// How the broker cleans a topic weir makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cleanup {
    /// Keeps the last record per key (a changelog).
    Compact,
    /// Deletes by the broker's retention (records that pass through).
    Delete,
}

/// The number of partitions `topic` has, creating it with `partitions` when the cluster
/// lacks it.
pub fn ensure(
    spec: &KafkaSpec,
    client: &ClientOptions,
    topic: &str,
    partitions: usize,
    cleanup: Cleanup,
) -> Result<usize> {
    let timeout = client.timeout;
    let admin: AdminClient<Reporter> = client
        .config(spec)
        .create_with_context(Reporter::for_client(client, spec)?)
        .map_err(|e| Error::Usage(format!("Kafka client configuration: {}", scrub(&e))))?;
    super::client::prime_token(admin.inner())?;
    if let Some(n) = partitions_of(&admin, spec, topic, timeout)? {
        return Ok(n);
    }
    let policy = match cleanup {
        Cleanup::Compact => "compact",
        Cleanup::Delete => "delete",
    };
    let new = NewTopic::new(topic, partitions as i32, TopicReplication::Fixed(-1))
        .set("cleanup.policy", policy);
    let options = AdminOptions::new().operation_timeout(Some(timeout));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| Error::Unreachable(format!("cannot start a runtime: {e}")))?;
    let results = runtime
        .block_on(admin.create_topics([&new], &options))
        .map_err(|e| unreachable(&format!("cannot create topic '{topic}' at"), spec, e))?;
    for result in results {
        match result {
            Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((_, code)) => {
                return Err(Error::Unreachable(format!(
                    "cannot create topic '{topic}': {code}"
                )))
            }
        }
    }
    // The new topic shows in metadata once its partitions have leaders.
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(n) = partitions_of(&admin, spec, topic, timeout)? {
            return Ok(n);
        }
        if Instant::now() > deadline {
            return Err(Error::Unreachable(format!(
                "topic '{topic}' was created but has no partitions after {timeout:?}"
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// How many partitions `topic` has, if the cluster has it; creates nothing.
pub fn partitions(spec: &KafkaSpec, client: &ClientOptions, topic: &str) -> Result<Option<usize>> {
    let admin: AdminClient<Reporter> = client
        .config(spec)
        .create_with_context(Reporter::for_client(client, spec)?)
        .map_err(|e| Error::Usage(format!("Kafka client configuration: {}", scrub(&e))))?;
    super::client::prime_token(admin.inner())?;
    partitions_of(&admin, spec, topic, client.timeout)
}

/// How many partitions `topic` has, if the cluster has it.
fn partitions_of(
    admin: &AdminClient<Reporter>,
    spec: &KafkaSpec,
    topic: &str,
    timeout: Duration,
) -> Result<Option<usize>> {
    let metadata = admin
        .inner()
        .fetch_metadata(Some(topic), timeout)
        .map_err(|e| unreachable("cannot reach Kafka at", spec, e))?;
    Ok(metadata
        .topics()
        .iter()
        .find(|t| t.name() == topic && t.error().is_none() && !t.partitions().is_empty())
        .map(|t| t.partitions().len()))
}
