//! The changelog topic: where a consumer-group member keeps the state of each input partition
//! it owns, so that the partition's next owner (after a rebalance, a stop or a crash) goes on
//! from it, as Kafka Streams does.
//!
//! The topic is compacted and has a partition for each input partition: input partition `p`'s
//! state lives in changelog partition `p`. Its head record, keyed `p`, holds the next input
//! offset the state covers and either the state itself or the number of parts it was cut
//! into; the parts are keyed `p/STAMP/i`, written before the head that names their stamp, so
//! a crash mid-write leaves the head pointing to a whole earlier state. Parts no head names
//! any more are deleted (a tombstone) once a newer head is delivered. Every record carries
//! the job in a header, so one job's state is never read as another's.
//!
//! A read keeps the last record per key, and ignores a record at an offset already read (a
//! compacting broker may return one twice).

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{BorrowedMessage, Headers, Message as _};
use rdkafka::{Offset, TopicPartitionList};
use serde::{Deserialize, Serialize};

use super::client::{scrub, unreachable, Reporter};
use super::config::ClientOptions;
use super::sink::KafkaSink;
use super::topic::{self, Cleanup};
use crate::core::saved;
use crate::error::{Error, Result};
use crate::io::spec::KafkaSpec;
use crate::runtime::sink::Outgoing;
use crate::runtime::PartitionState;

/// The header naming the job a record's state belongs to.
const JOB_HEADER: &str = "weir-job";

/// A state larger than this is cut into parts of this size (Kafka's default largest
/// record is 1 MB).
const PART_BYTES: usize = 256 * 1024;

/// A changelog partition's records: the last value per key (`None`: deleted).
type Keyed = HashMap<String, Option<Vec<u8>>>;

/// The head record of a partition's state.
#[derive(Serialize, Deserialize)]
struct Head {
    /// The first input offset the state does not cover.
    next_offset: i64,
    /// Names this write's parts.
    stamp: u64,
    /// How many parts the state was cut into; 0 when it is `inline`.
    parts: u32,
    inline: Vec<u8>,
}

/// The changelog of one job: its topic, and the keys each partition's next write deletes.
pub struct Changelog {
    pub topic: String,
    job: String,
    spec: KafkaSpec,
    client: ClientOptions,
    /// `None` until the topic exists: it is created by the first write, so that a run
    /// refused before it saves anything (a topic not keyed by the state key) leaves none.
    sink: Mutex<Option<KafkaSink>>,
    /// The input's partition count, the least the topic may have.
    partitions: usize,
    /// Per partition, the part keys that the next head makes stale.
    stale: Mutex<HashMap<i32, Vec<String>>>,
}

impl Changelog {
    /// Opens the changelog `topic` of `job`; the first write creates it (compacted,
    /// `partitions` partitions) when the cluster lacks it. One with fewer partitions than the
    /// input is refused.
    pub fn open(
        spec: &KafkaSpec,
        client: &ClientOptions,
        topic: &str,
        job: &str,
        partitions: usize,
    ) -> Result<Changelog> {
        let mut at = spec.clone();
        at.topic = Some(topic.to_string());
        let sink = match topic::partitions(spec, client, topic)? {
            Some(n) if n < partitions => return Err(too_few(topic, n, partitions)),
            Some(_) => Some(KafkaSink::open(&at, client)?),
            None => None,
        };
        Ok(Changelog {
            topic: topic.to_string(),
            // The weir version too, as a checkpoint file has it: another version's state may
            // be laid out otherwise.
            job: format!("weir {}: {job}", env!("CARGO_PKG_VERSION")),
            spec: at.clone(),
            client: client.clone(),
            sink: Mutex::new(sink),
            partitions,
            stale: Mutex::new(HashMap::new()),
        })
    }

    /// Saves these partition states and waits until the broker has them all; then deletes
    /// the parts they made stale (a part a crash leaves behind goes at a later save).
    pub fn write(&self, states: &[PartitionState]) -> Result<()> {
        if states.is_empty() {
            return Ok(());
        }
        let mut sink = self.sink.lock().expect("not poisoned");
        if sink.is_none() {
            ensure_topic(&self.spec, &self.client, &self.topic, self.partitions)?;
            *sink = Some(KafkaSink::open(&self.spec, &self.client)?);
        }
        let sink = sink.as_mut().expect("opened above");
        let job = [(JOB_HEADER, Some(self.job.as_bytes()))];
        let mut heads = Vec::with_capacity(states.len());
        let mut made_stale = Vec::new();
        for s in states {
            let stamp = stamp();
            let p = s.partition;
            let mut head = Head {
                next_offset: s.next_offset,
                stamp,
                parts: 0,
                inline: Vec::new(),
            };
            if s.state.len() <= PART_BYTES {
                head.inline = s.state.clone();
            } else {
                for (i, part) in s.state.chunks(PART_BYTES).enumerate() {
                    let key = format!("{p}/{stamp}/{i}");
                    send(sink, p, &key, Some(part), &job)?;
                    made_stale.push((p, key));
                    head.parts += 1;
                }
            }
            heads.push((p, saved::encode(&head)));
        }
        // The parts are delivered before a head names them.
        sink.flush()?;
        for (p, head) in &heads {
            send(sink, *p, &p.to_string(), Some(head), &job)?;
        }
        sink.flush()?;
        let mut stale = self.stale.lock().expect("not poisoned");
        for s in states {
            for key in stale.remove(&s.partition).unwrap_or_default() {
                send(sink, s.partition, &key, None, &job)?;
            }
        }
        for (p, key) in made_stale {
            stale.entry(p).or_default().push(key);
        }
        sink.flush()
    }

    /// The saved state of each of these partitions that has one.
    pub fn read(&self, partitions: &[i32]) -> Result<Vec<PartitionState>> {
        if partitions.is_empty() || !self.exists()? {
            return Ok(Vec::new());
        }
        let records = self.read_records(partitions)?;
        let mut states = Vec::new();
        let mut stale = self.stale.lock().expect("not poisoned");
        for &p in partitions {
            let Some(keys) = records.get(&p) else {
                continue;
            };
            let Some(Some(head)) = keys.get(&p.to_string()) else {
                continue;
            };
            let head: Head = saved::decode(head).map_err(|e| self.damaged(p, &e))?;
            let prefix = format!("{p}/{}/", head.stamp);
            let state = if head.parts == 0 {
                head.inline
            } else {
                let mut state = Vec::new();
                for i in 0..head.parts {
                    match keys.get(&format!("{prefix}{i}")) {
                        Some(Some(part)) => state.extend_from_slice(part),
                        _ => return Err(self.damaged(p, &format!("part {i} is missing"))),
                    }
                }
                state
            };
            // Parts of any other write are stale: the next write deletes them.
            let others = keys
                .iter()
                .filter(|(k, v)| v.is_some() && k.contains('/') && !k.starts_with(&prefix))
                .map(|(k, _)| k.clone());
            let ours = (0..head.parts).map(|i| format!("{prefix}{i}"));
            stale.insert(p, others.chain(ours).collect());
            states.push(PartitionState {
                partition: p,
                next_offset: head.next_offset,
                state,
                ended: false,
            });
        }
        Ok(states)
    }

    /// Whether the topic exists yet: this member has written it, or another member has (a
    /// topic that another created with too few partitions is refused).
    fn exists(&self) -> Result<bool> {
        if self.sink.lock().expect("not poisoned").is_some() {
            return Ok(true);
        }
        match topic::partitions(&self.spec, &self.client, &self.topic)? {
            Some(n) if n < self.partitions => Err(too_few(&self.topic, n, self.partitions)),
            found => Ok(found.is_some()),
        }
    }

    fn damaged(&self, partition: i32, why: &str) -> Error {
        Error::Usage(format!(
            "the changelog topic '{}' holds a damaged state of partition {partition}: {why}; start afresh with a new --changelog topic",
            self.topic
        ))
    }

    /// Every record of these changelog partitions, the last per key (`None`: deleted).
    fn read_records(&self, partitions: &[i32]) -> Result<BTreeMap<i32, Keyed>> {
        let mut config = self.client.config(&self.spec);
        config.set("group.id", "weir-changelog");
        config.set("enable.auto.commit", "false");
        config.set("enable.partition.eof", "true");
        let consumer: BaseConsumer<Reporter> = config
            .create_with_context(Reporter::for_client(&self.client, &self.spec)?)
            .map_err(|e| Error::Usage(format!("Kafka client configuration: {}", scrub(&e))))?;
        super::client::prime_token(consumer.client())?;
        let ends = self.assign_all(&consumer, partitions)?;
        let mut out: BTreeMap<i32, Keyed> = BTreeMap::new();
        let mut next: HashMap<i32, i64> = HashMap::new();
        let mut marked = false;
        let mut last_progress = Instant::now();
        let timeout = self.client.timeout;
        while (ends.iter()).any(|(p, end)| next.get(p).is_none_or(|n| n < end)) {
            match consumer.poll(Duration::from_millis(100)) {
                None | Some(Err(KafkaError::PartitionEOF(_))) => {
                    if last_progress.elapsed() > timeout {
                        return Err(Error::Unreachable(format!(
                            "the changelog topic '{}' stopped short of its end for {timeout:?}",
                            self.topic
                        )));
                    }
                }
                Some(Err(e)) => {
                    return Err(Error::Unreachable(format!(
                        "reading the changelog '{}': {e}",
                        self.topic
                    )))
                }
                Some(Ok(m)) => {
                    last_progress = Instant::now();
                    marked |= self.keep(&m, &mut next, &mut out)?;
                }
            }
        }
        if !out.is_empty() && !marked {
            return Err(self.foreign("no record names its job"));
        }
        Ok(out)
    }

    /// Assigns the consumer every non-empty one of `partitions` from its start; the end of
    /// each now, which a read must reach.
    fn assign_all(
        &self,
        consumer: &BaseConsumer<Reporter>,
        partitions: &[i32],
    ) -> Result<HashMap<i32, i64>> {
        let mut assignment = TopicPartitionList::new();
        let mut ends = HashMap::new();
        for &p in partitions {
            let (low, high) = consumer
                .fetch_watermarks(&self.topic, p, self.client.timeout)
                .map_err(|e| unreachable("cannot read the changelog at", &self.spec, e))?;
            if high > low {
                ends.insert(p, high);
                assignment
                    .add_partition_offset(&self.topic, p, Offset::Offset(low))
                    .map_err(|e| Error::Usage(format!("changelog partition {p}: {e}")))?;
            }
        }
        if !ends.is_empty() {
            consumer
                .assign(&assignment)
                .map_err(|e| unreachable("cannot read the changelog at", &self.spec, e))?;
        }
        Ok(ends)
    }

    /// Keeps a changelog record as its key's latest, unless it was read before (`next`: the
    /// next offset of each partition), refusing one of another job; whether it names ours.
    /// A record without the job header is kept: every record of a job names it, but a
    /// broker that stores headers apart from records may lose one (Tansu has); a changelog
    /// none of whose records names this job is refused by the caller.
    fn keep(
        &self,
        m: &BorrowedMessage<'_>,
        next: &mut HashMap<i32, i64>,
        out: &mut BTreeMap<i32, Keyed>,
    ) -> Result<bool> {
        let p = m.partition();
        let seen = next.entry(p).or_insert(i64::MIN);
        // A record read before (a compacting broker may return one twice).
        if m.offset() < *seen {
            return Ok(false);
        }
        *seen = m.offset() + 1;
        let job = m.headers().and_then(|h| {
            h.iter()
                .find(|h| h.key == JOB_HEADER)
                .and_then(|h| h.value.map(<[u8]>::to_vec))
        });
        if let Some(job) = &job {
            if job != self.job.as_bytes() {
                let at = format!(
                    "partition {p} offset {} was written by '{}'",
                    m.offset(),
                    String::from_utf8_lossy(job)
                );
                return Err(self.foreign(&at));
            }
        }
        if let Some(key) = m.key().map(|k| String::from_utf8_lossy(k).into_owned()) {
            out.entry(p)
                .or_default()
                .insert(key, m.payload().map(<[u8]>::to_vec));
        }
        Ok(job.is_some())
    }

    /// The refusal of a changelog that holds another job's state.
    fn foreign(&self, detail: &str) -> Error {
        Error::Usage(format!(
            "the changelog topic '{}' holds the state of another job ({detail}; this job is '{}'): give this one its own with --changelog TOPIC or a new -G group",
            self.topic, self.job
        ))
    }
}

/// A write's stamp: unique across members and time, so two members' parts never share a key.
fn stamp() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    nanos ^ (u64::from(std::process::id()) << 44)
}

fn send(
    sink: &mut KafkaSink,
    partition: i32,
    key: &str,
    value: Option<&[u8]>,
    headers: &[(&str, Option<&[u8]>)],
) -> Result<()> {
    let record = Outgoing {
        value,
        key: Some(key.as_bytes()),
        headers,
        timestamp: None,
        partition: Some(partition),
    };
    sink.send_own(&record, "changelog topic", "a state record")
}

/// Creates the changelog topic when the cluster lacks it; refuses one with fewer partitions
/// than the input.
fn ensure_topic(
    spec: &KafkaSpec,
    client: &ClientOptions,
    topic: &str,
    partitions: usize,
) -> Result<()> {
    let count = topic::ensure(spec, client, topic, partitions, Cleanup::Compact)?;
    if count < partitions {
        return Err(too_few(topic, count, partitions));
    }
    Ok(())
}

fn too_few(topic: &str, count: usize, partitions: usize) -> Error {
    Error::Usage(format!(
        "the changelog topic '{topic}' has {count} partitions, fewer than the input's {partitions}"
    ))
}
