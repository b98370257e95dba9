//! The Kafka adapter: client configuration (kcat's `-X`/`-F`), a source that reads a topic's
//! partitions from resolved positions to optional end offsets, and a producing sink.
//!
//! The synchronous rdkafka clients are used on our own threads: librdkafka already does its
//! network I/O on threads of its own, so an async runtime here would add nothing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::ProgressBar;

use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{BorrowedMessage, Header, Headers, Message as _, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::{ClientContext, Offset, Timestamp, TopicPartitionList};

use super::spec::KafkaSpec;
use crate::core::envelope::{Message, TimestampType};
use crate::core::time::{Millis, Position as Pos};
use crate::error::{Error, Result};

/// Environment variable naming a default `-F` file, as `KAFKACAT_CONFIG` does for kcat.
pub const CONFIG_ENV: &str = "WEIR_KAFKA_CONFIG";

/// librdkafka properties whose values must never be shown.
fn is_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key.contains("password") || key.contains("secret") || key.ends_with(".key.pem")
}

/// Client properties in order: a config file (`-F`, else `$WEIR_KAFKA_CONFIG`), then `-X`
/// pairs, which win.
pub fn client_config(
    spec: &KafkaSpec,
    config_file: Option<&Path>,
    properties: &[String],
) -> Result<ClientConfig> {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", spec.bootstrap_servers());
    config.set_log_level(RDKafkaLogLevel::Emerg);
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
            config.set(k, v);
        }
    }
    for p in properties {
        let (k, v) = split_property(p).map_err(|e| Error::Usage(format!("-X {e}")))?;
        config.set(k, v);
    }
    Ok(config)
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
}

impl Reporter {
    fn record(&self, error: &KafkaError, reason: &str) {
        let text = if reason.is_empty() {
            error.to_string()
        } else {
            reason.to_string()
        };
        *self.last_error.lock().expect("not poisoned") = Some((Instant::now(), text));
    }

    /// The latest error, if it is newer than `since`.
    fn error_since(&self, since: Instant) -> Option<String> {
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
    fn post_rebalance(&self, _consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let now = match rebalance {
            Rebalance::Assign(tpl) => Some(tpl.elements().iter().map(|e| e.partition()).collect()),
            // Eager rebalancing revokes everything, then assigns: unknown until then.
            Rebalance::Revoke(_) | Rebalance::Error(_) => None,
        };
        *self.assigned.lock().expect("not poisoned") = now;
    }
}

impl Reporter {
    fn assigned(&self) -> Option<Vec<i32>> {
        self.assigned.lock().expect("not poisoned").clone()
    }
}

fn unreachable(what: &str, spec: &KafkaSpec, e: KafkaError) -> Error {
    Error::Unreachable(format!("{what} {}: {e}", spec.bootstrap_servers()))
}

/// How long a poll waits once records stop coming.
const IDLE_WAIT: Duration = Duration::from_millis(100);

/// What a Kafka source needs besides the spec: positions, partitions, group, bounds.
pub struct SourceOptions<'a> {
    pub config_file: Option<&'a Path>,
    pub properties: &'a [String],
    pub partitions: &'a [i32],
    pub group: Option<&'a str>,
    pub from: Option<&'a str>,
    pub to: Option<&'a str>,
    pub exit_at_end: bool,
    pub timeout: Duration,
    pub now: Millis,
}

/// A topic being read: its partitions, each with an optional end offset.
pub struct KafkaSource {
    consumer: BaseConsumer<Reporter>,
    pub topic: Arc<str>,
    /// Exclusive end offset per partition (bounded reads only).
    ends: HashMap<i32, i64>,
    /// The partitions we assigned ourselves; `None` for a group member, whose partitions the
    /// group gives (see `Reporter::assigned`).
    own: Option<Vec<i32>>,
    grouped: bool,
    /// With -e a partition is done at the end it reaches, even before its snapshot end.
    close_at_eof: bool,
    /// How many records a bounded read will see at most (for a progress bar).
    pub total: Option<u64>,
    /// The read stops once every partition has reached its end.
    bounded: bool,
    /// The partitions that reached their end.
    ended: std::collections::HashSet<i32>,
    timeout: Duration,
    /// When the last record (or the start) was seen, to tell a dead broker from a quiet one.
    last_progress: Instant,
    /// How long the next poll waits: nothing while records flow, a little once they stop.
    wait: Duration,
    progress: Option<ProgressBar>,
}

/// One step of a read.
pub enum Polled<'a> {
    Record(BorrowedMessage<'a>),
    /// Nothing arrived within the poll interval.
    Idle,
    /// Every partition reached its end (bounded reads only).
    End,
}

impl KafkaSource {
    pub fn open(spec: &KafkaSpec, o: &SourceOptions<'_>) -> Result<KafkaSource> {
        let topic = spec.topic.clone().ok_or_else(|| {
            Error::Usage("a Kafka source needs a topic: kafka://HOST:PORT/TOPIC".into())
        })?;
        let from = match o.from {
            Some(text) => {
                Pos::parse(text, o.now).map_err(|e| Error::Usage(format!("--from: {e}")))?
            }
            None if o.group.is_some() => Pos::Stored,
            None => Pos::Beginning,
        };
        if from == Pos::Stored && o.group.is_none() {
            return Err(Error::Usage("--from stored needs --group".into()));
        }
        let to = match o.to {
            Some(text) => {
                Some(Pos::parse(text, o.now).map_err(|e| Error::Usage(format!("--to: {e}")))?)
            }
            None if o.exit_at_end => Some(Pos::End),
            None => None,
        };

        // With a group and no explicit partitions, weir joins the group as a member and the
        // group shares the partitions out, as kcat -G does.
        let balanced = o.group.is_some() && o.partitions.is_empty();
        let reset = match (&from, balanced) {
            (_, false) | (Pos::Stored, true) => None,
            (Pos::Beginning, true) => Some("earliest"),
            (Pos::End, true) => Some("latest"),
            (_, true) => {
                return Err(Error::Usage(
                    "with --group each partition starts where the group left off (--from beginning or end only say where it has no offset yet); read from explicit positions with --partitions".into(),
                ))
            }
        };
        if balanced && !matches!(to, None | Some(Pos::End)) {
            return Err(Error::Usage(
                "with --group, end with -e; --to positions need --partitions".into(),
            ));
        }
        let mut config = client_config(spec, o.config_file, o.properties)?;
        let bounded = o.exit_at_end || o.to.is_some();
        if let Some(group) = o.group {
            config.set("group.id", group);
            if let Some(reset) = reset {
                config.set("auto.offset.reset", reset);
            }
            // Offsets are stored once a record has been handed on, then committed.
            config.set("enable.auto.offset.store", "false");
            if config.get("enable.auto.commit").is_none() {
                config.set("enable.auto.commit", "true");
            }
        } else {
            config.set("group.id", "weir");
            config.set("enable.auto.commit", "false");
        }
        config.set(
            "enable.partition.eof",
            if bounded { "true" } else { "false" },
        );
        let consumer: BaseConsumer<Reporter> = config
            .create_with_context(Reporter::default())
            .map_err(|e| Error::Usage(format!("Kafka client configuration: {}", scrub(&e))))?;

        let metadata = consumer
            .fetch_metadata(Some(&topic), o.timeout)
            .map_err(|e| unreachable("cannot reach Kafka at", spec, e))?;
        let meta = metadata
            .topics()
            .iter()
            .find(|t| t.name() == topic)
            .ok_or_else(|| Error::Unreachable(format!("topic '{topic}' not found")))?;
        if let Some(err) = meta.error() {
            return Err(Error::Unreachable(format!(
                "topic '{topic}': {}",
                RDKafkaErrorCode::from(err)
            )));
        }
        let mut partitions: Vec<i32> = meta.partitions().iter().map(|p| p.id()).collect();
        partitions.sort_unstable();
        if !o.partitions.is_empty() {
            for p in o.partitions {
                if !partitions.contains(p) {
                    return Err(Error::Usage(format!(
                        "topic '{topic}' has no partition {p} (it has {})",
                        partitions.len()
                    )));
                }
            }
            partitions.retain(|p| o.partitions.contains(p));
        }

        let mut source = KafkaSource {
            consumer,
            topic: Arc::from(topic.as_str()),
            ends: HashMap::new(),
            own: None,
            grouped: o.group.is_some(),
            close_at_eof: false,
            total: None,
            bounded,
            ended: Default::default(),
            timeout: o.timeout,
            wait: Duration::ZERO,
            progress: None,
            last_progress: Instant::now(),
        };
        if balanced {
            if bounded {
                let ends = source.resolve(&partitions, &Pos::End, spec, false)?;
                for (&p, end) in partitions.iter().zip(ends) {
                    if let Offset::Offset(end) = end {
                        source.ends.insert(p, end);
                    }
                }
            }
            source.close_at_eof = o.exit_at_end;
            source
                .consumer
                .subscribe(&[&topic])
                .map_err(|e| unreachable("cannot join the group at", spec, e))?;
            return Ok(source);
        }
        // A bounded read resolves its starts to offsets, to know which partitions are empty.
        let starts = source.resolve(&partitions, &from, spec, !bounded)?;
        if let Some(to) = &to {
            let ends = source.resolve(&partitions, to, spec, false)?;
            let mut total = Some(0u64);
            for ((&p, end), start) in partitions.iter().zip(ends).zip(&starts) {
                let Offset::Offset(end) = end else {
                    return Err(Error::Usage(format!("--to {to:?} is not an end position")));
                };
                source.ends.insert(p, end);
                if matches!(start, Offset::Offset(s) if *s >= end) {
                    source.ended.insert(p);
                }
                // Known only when every start is an offset (not the group's stored one).
                total = match (total, start) {
                    (Some(t), Offset::Offset(s)) => Some(t + (end - s).max(0) as u64),
                    _ => None,
                };
            }
            source.total = total;
        }
        source.close_at_eof = o.exit_at_end;
        let mut assignment = TopicPartitionList::new();
        let mut own = Vec::new();
        for (&p, start) in partitions.iter().zip(&starts) {
            if !source.ended.contains(&p) {
                assignment
                    .add_partition_offset(&topic, p, *start)
                    .map_err(|e| Error::Usage(format!("partition {p}: {e}")))?;
                own.push(p);
            }
        }
        source.own = Some(own);
        source
            .consumer
            .assign(&assignment)
            .map_err(|e| unreachable("cannot read from", spec, e))?;
        drop(assignment);
        Ok(source)
    }

    /// Turns a position into a concrete offset per partition (or a logical one librdkafka
    /// resolves: beginning, end, stored). `-N` and times are looked up here.
    fn resolve(
        &self,
        partitions: &[i32],
        pos: &Pos,
        spec: &KafkaSpec,
        logical: bool,
    ) -> Result<Vec<Offset>> {
        let watermarks = |p: i32| {
            self.consumer
                .fetch_watermarks(&self.topic, p, self.timeout)
                .map_err(|e| unreachable("cannot read offsets from", spec, e))
        };
        let mut out = Vec::with_capacity(partitions.len());
        match pos {
            Pos::Beginning if logical => out.resize(partitions.len(), Offset::Beginning),
            Pos::End if logical => out.resize(partitions.len(), Offset::End),
            Pos::Stored => out.resize(partitions.len(), Offset::Stored),
            Pos::Offset(n) => out.resize(partitions.len(), Offset::Offset(*n)),
            Pos::Beginning => {
                for &p in partitions {
                    out.push(Offset::Offset(watermarks(p)?.0));
                }
            }
            Pos::End => {
                for &p in partitions {
                    out.push(Offset::Offset(watermarks(p)?.1));
                }
            }
            Pos::FromEnd(n) => {
                for &p in partitions {
                    let (low, high) = watermarks(p)?;
                    out.push(Offset::Offset((high - *n as i64).max(low)));
                }
            }
            Pos::Time(t) => {
                let mut tpl = TopicPartitionList::new();
                for &p in partitions {
                    tpl.add_partition_offset(&self.topic, p, Offset::Offset(*t))
                        .map_err(|e| Error::Usage(format!("partition {p}: {e}")))?;
                }
                let found = self
                    .consumer
                    .offsets_for_times(tpl, self.timeout)
                    .map_err(|e| unreachable("cannot look up offsets by time at", spec, e))?;
                for &p in partitions {
                    let offset = found
                        .find_partition(&self.topic, p)
                        .map(|e| e.offset())
                        .unwrap_or(Offset::End);
                    // No record at or after the time: start at (or end before) the end.
                    out.push(match offset {
                        Offset::Offset(n) => Offset::Offset(n),
                        _ => Offset::Offset(watermarks(p)?.1),
                    });
                }
                drop(found);
            }
        }
        Ok(out)
    }

    /// Every partition reached its end (bounded reads only).
    pub fn at_end(&self) -> bool {
        if !self.bounded {
            return false;
        }
        let all_ended = |partitions: &[i32]| partitions.iter().all(|p| self.ended.contains(p));
        match &self.own {
            Some(own) => all_ended(own),
            // Every partition the group gave us (none at all counts too); unknown while the
            // group is still sharing them out.
            None => self
                .consumer
                .context()
                .assigned()
                .is_some_and(|a| all_ended(&a)),
        }
    }

    /// Counts records on this bar (a bounded read on a terminal), cleared at the end.
    pub fn show_progress(&mut self, bar: Option<ProgressBar>) {
        self.progress = bar;
    }

    /// The next record, if one comes soon: `Idle` says there is none right now, so that the
    /// caller can hand on what it has.
    pub fn poll(&mut self) -> Result<Polled<'_>> {
        if self.at_end() {
            if let Some(bar) = self.progress.take() {
                bar.finish_and_clear();
            }
            return Ok(Polled::End);
        }
        let polled = self.consumer.poll(self.wait);
        // Records flowing: take the next at once; none: wait a little for it.
        self.wait = if matches!(polled, Some(Ok(_))) {
            Duration::ZERO
        } else {
            IDLE_WAIT
        };
        match polled {
            None => {
                if self.last_progress.elapsed() >= self.timeout {
                    if let Some(e) = self.consumer.context().error_since(self.last_progress) {
                        return Err(Error::Unreachable(format!(
                            "Kafka: no progress for {:?}: {e}",
                            self.timeout
                        )));
                    }
                }
                Ok(Polled::Idle)
            }
            Some(Err(KafkaError::PartitionEOF(p))) => {
                if self.close_at_eof {
                    self.ended.insert(p);
                }
                Ok(Polled::Idle)
            }
            Some(Err(e)) => Err(Error::Unreachable(format!("Kafka: {e}"))),
            Some(Ok(m)) => {
                self.last_progress = Instant::now();
                if let Some(bar) = &self.progress {
                    bar.inc(1);
                }
                let p = m.partition();
                if let Some(&end) = self.ends.get(&p) {
                    if m.offset() >= end {
                        self.ended.insert(p);
                        return Ok(Polled::Idle);
                    }
                    if m.offset() + 1 >= end {
                        self.ended.insert(p);
                    }
                }
                Ok(Polled::Record(m))
            }
        }
    }

    /// Marks records up to and including `offset` as done, for the group's next commit.
    pub fn done(&self, partition: i32, offset: i64) {
        if self.grouped {
            // Fails only for a partition no longer assigned: nothing to commit then.
            let _ = self.consumer.store_offset(&self.topic, partition, offset);
        }
    }

    /// Clears the progress bar and commits what was stored (with a group), before the
    /// consumer is dropped.
    pub fn finish(&self) -> Result<()> {
        if let Some(bar) = &self.progress {
            bar.finish_and_clear();
        }
        if self.grouped {
            match self.consumer.commit_consumer_state(CommitMode::Sync) {
                Ok(()) | Err(KafkaError::ConsumerCommit(RDKafkaErrorCode::NoOffset)) => {}
                Err(e) => return Err(Error::Unreachable(format!("cannot commit offsets: {e}"))),
            }
        }
        Ok(())
    }
}

/// An error text without secret values (librdkafka quotes property values in some errors).
fn scrub(e: &KafkaError) -> String {
    let text = e.to_string();
    if is_secret(&text) {
        "invalid security property (value not shown)".into()
    } else {
        text
    }
}

/// A borrowed record in the form the envelope writer takes.
pub fn message<'a>(m: &'a BorrowedMessage<'a>, topic: &'a str) -> Message<'a> {
    let timestamp = match m.timestamp() {
        Timestamp::CreateTime(t) if t >= 0 => Some((t, TimestampType::Create)),
        Timestamp::LogAppendTime(t) if t >= 0 => Some((t, TimestampType::LogAppend)),
        _ => None,
    };
    let headers = match m.headers() {
        None => Vec::new(),
        Some(h) => h.iter().map(|h| (h.key, h.value)).collect(),
    };
    Message {
        topic,
        partition: m.partition(),
        offset: m.offset(),
        timestamp,
        key: m.key(),
        value: m.payload(),
        headers,
    }
}

/// Delivery outcomes, shared with librdkafka's callback.
#[derive(Default)]
pub struct Deliveries {
    delivered: AtomicU64,
    failed: AtomicU64,
    first_failure: Mutex<Option<String>>,
    failing: AtomicBool,
    reporter: Reporter,
}

impl ClientContext for Deliveries {
    fn log(&self, _level: RDKafkaLogLevel, _fac: &str, _message: &str) {}

    fn error(&self, error: KafkaError, reason: &str) {
        self.reporter.record(&error, reason);
    }
}

impl ProducerContext for Deliveries {
    /// The output record number (1-based), for the message naming a failed one.
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, number: usize) {
        match result {
            Ok(_) => {
                self.delivered.fetch_add(1, Ordering::Relaxed);
            }
            Err((e, m)) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                self.failing.store(true, Ordering::Release);
                let mut first = self.first_failure.lock().expect("not poisoned");
                if first.is_none() {
                    *first = Some(format!(
                        "record {number} of this run's output to '{}' was not delivered: {e}",
                        m.topic()
                    ));
                }
            }
        }
    }
}

/// A record for the producer.
pub struct Outgoing<'a> {
    pub value: Option<&'a [u8]>,
    pub key: Option<&'a [u8]>,
    pub headers: &'a [(&'a str, Option<&'a [u8]>)],
    pub timestamp: Option<Millis>,
    pub partition: Option<i32>,
}

/// Why one record could not be queued.
pub enum SendError {
    /// The record itself is refused (too large): an error of that record.
    Record(String),
    Fatal(Error),
}

/// A producing sink: idempotent by default, bounded in-flight queue (librdkafka's), every
/// delivery accounted for before exit.
pub struct KafkaSink {
    producer: BaseProducer<Deliveries>,
    pub topic: String,
    timeout: Duration,
    sent: usize,
}

impl KafkaSink {
    pub fn open(
        spec: &KafkaSpec,
        config_file: Option<&Path>,
        properties: &[String],
        timeout: Duration,
    ) -> Result<KafkaSink> {
        let topic = spec.topic.clone().ok_or_else(|| {
            Error::Usage("a Kafka sink needs a topic: kafka://HOST:PORT/TOPIC".into())
        })?;
        let mut config = ClientConfig::new();
        // Ours first, so that -F/-X can override them.
        config.set("enable.idempotence", "true");
        config.set("message.timeout.ms", "30000");
        config.set("linger.ms", "20");
        for (k, v) in client_config(spec, config_file, properties)?.config_map() {
            config.set(k, v);
        }
        let producer: BaseProducer<Deliveries> = config
            .create_with_context(Deliveries::default())
            .map_err(|e| Error::Usage(format!("Kafka producer configuration: {}", scrub(&e))))?;
        // Fail fast and clearly when the cluster or topic is not there.
        let metadata = producer
            .client()
            .fetch_metadata(Some(&topic), timeout)
            .map_err(|e| unreachable("cannot reach Kafka at", spec, e))?;
        match metadata.topics().iter().find(|t| t.name() == topic) {
            Some(t) if t.error().is_none() && !t.partitions().is_empty() => {}
            _ => return Err(Error::Unreachable(format!("topic '{topic}' not found"))),
        }
        Ok(KafkaSink {
            producer,
            topic,
            timeout,
            sent: 0,
        })
    }

    pub fn send(&mut self, r: &Outgoing<'_>) -> std::result::Result<(), SendError> {
        if self.producer.context().failing.load(Ordering::Acquire) {
            return Err(SendError::Fatal(self.failure()));
        }
        self.sent += 1;
        let mut record: BaseRecord<'_, [u8], [u8], usize> =
            BaseRecord::with_opaque_to(&self.topic, self.sent);
        if let Some(v) = r.value {
            record = record.payload(v);
        }
        if let Some(k) = r.key {
            record = record.key(k);
        }
        if let Some(t) = r.timestamp {
            record = record.timestamp(t);
        }
        if let Some(p) = r.partition {
            record = record.partition(p);
        }
        if !r.headers.is_empty() {
            let mut headers = OwnedHeaders::new_with_capacity(r.headers.len());
            for (name, value) in r.headers {
                headers = headers.insert(Header {
                    key: name,
                    value: *value,
                });
            }
            record = record.headers(headers);
        }
        let started = Instant::now();
        loop {
            match self.producer.send(record) {
                Ok(()) => {
                    self.producer.poll(Duration::ZERO);
                    return Ok(());
                }
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    // Backpressure: wait for deliveries to make room.
                    record = back;
                    self.producer.poll(Duration::from_millis(50));
                    if started.elapsed() > self.timeout.max(Duration::from_secs(30)) {
                        return Err(SendError::Fatal(Error::Unreachable(format!(
                            "Kafka producer queue stayed full for {:?}: {}",
                            started.elapsed(),
                            self.producer
                                .context()
                                .reporter
                                .error_since(started)
                                .unwrap_or_else(|| "the broker is not accepting records".into())
                        ))));
                    }
                }
                Err((KafkaError::MessageProduction(code), _))
                    if matches!(
                        code,
                        RDKafkaErrorCode::MessageSizeTooLarge
                            | RDKafkaErrorCode::InvalidMessageSize
                    ) =>
                {
                    self.sent -= 1;
                    return Err(SendError::Record(format!(
                        "record too large for Kafka topic '{}' ({code}; see -X message.max.bytes)",
                        self.topic
                    )));
                }
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::UnknownPartition), _)) => {
                    self.sent -= 1;
                    return Err(SendError::Record(format!(
                        "topic '{}' has no partition {}",
                        self.topic,
                        r.partition.unwrap_or(-1)
                    )));
                }
                Err((e, _)) => {
                    return Err(SendError::Fatal(Error::Unreachable(format!(
                        "cannot produce to '{}': {e}",
                        self.topic
                    ))))
                }
            }
        }
    }

    /// Serves delivery reports; fails as soon as one record was not delivered.
    pub fn poll(&self) -> Result<()> {
        self.producer.poll(Duration::ZERO);
        if self.producer.context().failing.load(Ordering::Acquire) {
            return Err(self.failure());
        }
        Ok(())
    }

    /// Waits until every record is delivered or has failed.
    pub fn flush(&self) -> Result<()> {
        let deadline = Instant::now() + self.timeout.max(Duration::from_secs(30));
        while self.producer.in_flight_count() > 0 {
            if self.producer.context().failing.load(Ordering::Acquire) {
                break;
            }
            if Instant::now() >= deadline {
                return Err(Error::Unreachable(format!(
                    "{} records to '{}' still undelivered after {:?}",
                    self.producer.in_flight_count(),
                    self.topic,
                    self.timeout
                )));
            }
            self.producer.poll(Duration::from_millis(50));
        }
        self.poll()
    }

    fn failure(&self) -> Error {
        let ctx = self.producer.context();
        let first = ctx.first_failure.lock().expect("not poisoned").clone();
        Error::Unreachable(format!(
            "{} (failed: {}, delivered: {})",
            first.unwrap_or_else(|| "a record was not delivered".into()),
            ctx.failed.load(Ordering::Relaxed),
            ctx.delivered.load(Ordering::Relaxed)
        ))
    }

    pub fn delivered(&self) -> u64 {
        self.producer.context().delivered.load(Ordering::Relaxed)
    }
}

/// Offsets of one partition at most this far apart are read in one pass rather than by a
/// fetch each.
const SCAN_GAP: i64 = 5_000;

/// One pass over a partition: start at the first offset, read until past the last.
#[derive(Debug, PartialEq, Eq)]
struct Run {
    topic: String,
    partition: i32,
    offsets: Vec<i64>,
}

/// Groups the wanted offsets into passes (runs of offsets at most `gap` apart) and the passes
/// into rounds: one topic per round (an end-of-partition event names only the partition),
/// each partition at most once.
fn plan_reads(wanted: &[(String, i32, i64)], gap: i64) -> Vec<Vec<Run>> {
    let mut by_partition: std::collections::BTreeMap<(&str, i32), Vec<i64>> = Default::default();
    for (t, p, o) in wanted {
        by_partition.entry((t.as_str(), *p)).or_default().push(*o);
    }
    let mut rounds: Vec<Vec<Run>> = Vec::new();
    for ((topic, partition), mut offsets) in by_partition {
        offsets.sort_unstable();
        offsets.dedup();
        let mut runs: Vec<Vec<i64>> = Vec::new();
        for o in offsets {
            match runs.last_mut() {
                Some(run) if o - run.last().expect("runs are not empty") <= gap => run.push(o),
                _ => runs.push(vec![o]),
            }
        }
        for offsets in runs {
            let run = Run {
                topic: topic.to_string(),
                partition,
                offsets,
            };
            match rounds
                .iter_mut()
                .find(|r| r[0].topic == run.topic && !r.iter().any(|x| x.partition == partition))
            {
                Some(round) => round.push(run),
                None => rounds.push(vec![run]),
            }
        }
    }
    rounds
}

/// A group's committed offset per (topic, partition); `None` where it has none.
pub type Committed = HashMap<(String, i32), Option<i64>>;

/// ListConsumerGroupOffsets requests sent at once.
const GROUPS_IN_FLIGHT: usize = 64;

/// (topic, partition, asked offset) → (offset found, its timestamp).
pub type FirstRecords = HashMap<(String, i32, i64), (i64, Millis)>;

/// Read-only questions to a cluster, for `weir lag`: topics, groups, offsets, and the
/// timestamps of records at given offsets.
pub struct Cluster {
    spec: KafkaSpec,
    config: ClientConfig,
    timeout: Duration,
    /// For metadata and log offsets.
    probe: BaseConsumer<Reporter>,
}

/// A group as the broker describes it; `None` fields where it would not say.
#[derive(Clone, Debug, Default)]
pub struct GroupDescription {
    pub state: Option<String>,
    pub members: Option<usize>,
}

impl Cluster {
    pub fn connect(
        spec: &KafkaSpec,
        config_file: Option<&Path>,
        properties: &[String],
        timeout: Duration,
    ) -> Result<Cluster> {
        let mut config = client_config(spec, config_file, properties)?;
        config.set("enable.auto.commit", "false");
        config.set("enable.partition.eof", "true");
        config.set("auto.offset.reset", "earliest");
        let mut probe_config = config.clone();
        probe_config.set("group.id", "weir-lag");
        let probe: BaseConsumer<Reporter> =
            probe_config
                .create_with_context(Reporter::default())
                .map_err(|e| Error::Usage(format!("Kafka client configuration: {}", scrub(&e))))?;
        // One metadata round trip proves the cluster is there.
        probe
            .fetch_metadata(None, timeout)
            .map_err(|e| unreachable("cannot reach Kafka at", spec, e))?;
        Ok(Cluster {
            spec: spec.clone(),
            config,
            timeout,
            probe,
        })
    }

    /// Topics and their partitions; internal topics (`__...`) left out unless named.
    pub fn topics(&self, only: Option<&str>) -> Result<Vec<(String, Vec<i32>)>> {
        let metadata = self
            .probe
            .fetch_metadata(only, self.timeout)
            .map_err(|e| unreachable("cannot read metadata from", &self.spec, e))?;
        let mut out = Vec::new();
        for t in metadata.topics() {
            if only.is_none() && t.name().starts_with("__") {
                continue;
            }
            if let Some(err) = t.error() {
                return Err(Error::Unreachable(format!(
                    "topic '{}': {}",
                    t.name(),
                    RDKafkaErrorCode::from(err)
                )));
            }
            let mut partitions: Vec<i32> = t.partitions().iter().map(|p| p.id()).collect();
            partitions.sort_unstable();
            out.push((t.name().to_string(), partitions));
        }
        out.sort();
        Ok(out)
    }

    /// The consumer groups the cluster lists, with their states where it gives them.
    ///
    /// This sends ListGroups alone, through librdkafka's admin API, which rdkafka does not
    /// wrap: rdkafka's `fetch_group_list` also sends DescribeGroups, which some brokers
    /// (Tansu) answer by closing the connection.
    pub fn groups(&self) -> Result<Vec<(String, Option<String>)>> {
        list_groups(&self.probe, self.timeout).map_err(|e| {
            Error::Unreachable(format!(
                "cannot list groups at {}: {e}",
                self.spec.bootstrap_servers()
            ))
        })
    }

    /// State and member count of a group, where the broker answers DescribeGroups.
    pub fn describe(&self, group: &str) -> GroupDescription {
        match self
            .probe
            .fetch_group_list(Some(group), self.timeout.min(Duration::from_secs(3)))
        {
            Ok(list) => match list.groups().iter().find(|g| g.name() == group) {
                Some(g) => GroupDescription {
                    state: Some(g.state().to_string()).filter(|s| !s.is_empty()),
                    members: Some(g.members().len()),
                },
                None => GroupDescription::default(),
            },
            Err(_) => GroupDescription::default(),
        }
    }

    /// (log start, log end) of every partition, in one ListOffsets round per end.
    pub fn log_offsets(
        &self,
        topics: &[(String, Vec<i32>)],
    ) -> Result<HashMap<(String, i32), (i64, i64)>> {
        let ask = |which: Offset| -> Result<HashMap<(String, i32), i64>> {
            let mut tpl = TopicPartitionList::new();
            for (topic, partitions) in topics {
                for &p in partitions {
                    tpl.add_partition_offset(topic, p, which)
                        .map_err(|e| Error::Usage(format!("{topic}/{p}: {e}")))?;
                }
            }
            let found = self
                .probe
                .offsets_for_times(tpl, self.timeout)
                .map_err(|e| unreachable("cannot read log offsets from", &self.spec, e))?;
            let mut out = HashMap::new();
            for e in found.elements() {
                if let Offset::Offset(n) = e.offset() {
                    out.insert((e.topic().to_string(), e.partition()), n);
                }
            }
            drop(found);
            Ok(out)
        };
        let starts = ask(Offset::Beginning)?;
        let ends = ask(Offset::End)?;
        let mut out = HashMap::new();
        for (topic, partitions) in topics {
            for &p in partitions {
                let key = (topic.clone(), p);
                // Fall back to a per-partition query where the batched one gave nothing.
                let (start, end) = match (starts.get(&key), ends.get(&key)) {
                    (Some(&s), Some(&e)) => (s, e),
                    _ => self
                        .probe
                        .fetch_watermarks(topic, p, self.timeout)
                        .map_err(|e| unreachable("cannot read log offsets from", &self.spec, e))?,
                };
                out.insert(key, (start, end));
            }
        }
        Ok(out)
    }

    /// Each group's committed offsets for these partitions (`None` where it has none),
    /// asked with ListConsumerGroupOffsets: every group's request on one client at once.
    pub fn committed(
        &self,
        groups: &[String],
        topics: &[(String, Vec<i32>)],
    ) -> Result<Vec<Committed>> {
        let mut tpl = TopicPartitionList::new();
        for (topic, partitions) in topics {
            for &p in partitions {
                tpl.add_partition(topic, p);
            }
        }
        let mut out = Vec::with_capacity(groups.len());
        for batch in groups.chunks(GROUPS_IN_FLIGHT) {
            let mut answers =
                list_group_offsets(&self.probe, batch, &tpl, self.timeout).map_err(|e| {
                    Error::Unreachable(format!(
                        "cannot read committed offsets from {}: {e}",
                        self.spec.bootstrap_servers()
                    ))
                })?;
            for g in batch {
                out.push(answers.remove(g).unwrap_or_default());
            }
        }
        drop(tpl);
        Ok(out)
    }

    /// The first record at or after each (topic, partition, offset): its offset and timestamp.
    /// Where the offset is gone (retention), the earliest record stands in; where there is no
    /// record by the deadline, none.
    ///
    /// Offsets of one partition that lie close together are read in one pass (a scan from the
    /// first to the last); the passes of a topic's partitions run together, one fetch session
    /// for all of them.
    pub fn first_records(&self, wanted: &[(String, i32, i64)]) -> Result<FirstRecords> {
        let mut out = HashMap::new();
        let rounds = plan_reads(wanted, SCAN_GAP);
        if rounds.is_empty() {
            return Ok(out);
        }
        let mut config = self.config.clone();
        config.set("group.id", "weir-lag");
        config.set("fetch.max.bytes", "8388608");
        config.set("max.partition.fetch.bytes", "262144");
        config.set("queued.max.messages.kbytes", "8192");
        let consumer: BaseConsumer<Reporter> = config
            .create_with_context(Reporter::default())
            .map_err(|e| Error::Usage(format!("Kafka client configuration: {}", scrub(&e))))?;
        let deadline = Instant::now() + self.timeout;
        for round in rounds {
            let mut tpl = TopicPartitionList::new();
            for run in &round {
                tpl.add_partition_offset(&run.topic, run.partition, Offset::Offset(run.offsets[0]))
                    .map_err(|e| Error::Usage(format!("{}/{}: {e}", run.topic, run.partition)))?;
            }
            consumer
                .assign(&tpl)
                .map_err(|e| unreachable("cannot read from", &self.spec, e))?;
            drop(tpl);
            // Per partition: the offsets still waiting for a record, in order.
            let mut pending: HashMap<i32, (String, std::collections::VecDeque<i64>)> = round
                .into_iter()
                .map(|r| (r.partition, (r.topic, r.offsets.into_iter().collect())))
                .collect();
            while !pending.is_empty() && Instant::now() < deadline {
                match consumer.poll(Duration::from_millis(100)) {
                    None => {}
                    Some(Err(KafkaError::PartitionEOF(p))) => {
                        pending.remove(&p);
                    }
                    Some(Err(_)) => {}
                    Some(Ok(m)) => {
                        let p = m.partition();
                        let Some((topic, offsets)) = pending.get_mut(&p) else {
                            continue;
                        };
                        while offsets.front().is_some_and(|&o| o <= m.offset()) {
                            let asked = offsets.pop_front().expect("checked");
                            if let Some(ts) = m.timestamp().to_millis() {
                                out.insert((topic.clone(), p, asked), (m.offset(), ts));
                            }
                        }
                        if offsets.is_empty() {
                            let mut stop = TopicPartitionList::new();
                            stop.add_partition(topic, p);
                            let _ = consumer.pause(&stop);
                            drop(stop);
                            pending.remove(&p);
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}

/// A librdkafka admin request's queue and options, destroyed together.
struct AdminCall {
    queue: *mut rdkafka::bindings::rd_kafka_queue_t,
    options: *mut rdkafka::bindings::rd_kafka_AdminOptions_t,
}

impl AdminCall {
    /// # Safety
    /// `rk` must stay valid for the life of the call.
    unsafe fn new(
        rk: *mut rdkafka::bindings::rd_kafka_t,
        op: rdkafka::bindings::rd_kafka_admin_op_t,
        timeout: Duration,
    ) -> AdminCall {
        use rdkafka::bindings as rd;
        let queue = rd::rd_kafka_queue_new(rk);
        let options = rd::rd_kafka_AdminOptions_new(rk, op);
        let mut errstr = [0 as std::os::raw::c_char; 256];
        // Fails only for an out-of-range value, which the cap rules out.
        rd::rd_kafka_AdminOptions_set_request_timeout(
            options,
            timeout.as_millis().min(i32::MAX as u128) as i32,
            errstr.as_mut_ptr(),
            errstr.len(),
        );
        AdminCall { queue, options }
    }

    /// The next result event, if it succeeded. An error when none comes within `wait`
    /// (reported as `timeout`, the request's own), or when the broker refused the request.
    /// The caller destroys a returned event.
    unsafe fn next_result(
        &self,
        wait: Duration,
        timeout: Duration,
    ) -> Result<*mut rdkafka::bindings::rd_kafka_event_t, String> {
        let event = rdkafka::bindings::rd_kafka_queue_poll(
            self.queue,
            wait.as_millis().min(i32::MAX as u128) as i32,
        );
        if event.is_null() {
            return Err(format!("no answer within {timeout:?}"));
        }
        if let Some(e) = event_error(event) {
            rdkafka::bindings::rd_kafka_event_destroy(event);
            return Err(e);
        }
        Ok(event)
    }
}

impl Drop for AdminCall {
    fn drop(&mut self) {
        // SAFETY: both were created in `new` and are destroyed once, here.
        unsafe {
            rdkafka::bindings::rd_kafka_AdminOptions_destroy(self.options);
            rdkafka::bindings::rd_kafka_queue_destroy(self.queue);
        }
    }
}

/// The error text of a failed admin result event, if it failed.
unsafe fn event_error(event: *mut rdkafka::bindings::rd_kafka_event_t) -> Option<String> {
    use rdkafka::bindings as rd;
    if rd::rd_kafka_event_error(event) == rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
        return None;
    }
    let text = rd::rd_kafka_event_error_string(event);
    Some(if text.is_null() {
        "the broker refused the request".into()
    } else {
        std::ffi::CStr::from_ptr(text)
            .to_string_lossy()
            .into_owned()
    })
}

/// ListGroups through `rd_kafka_ListConsumerGroups`: (name, state) pairs.
fn list_groups(
    consumer: &BaseConsumer<Reporter>,
    timeout: Duration,
) -> std::result::Result<Vec<(String, Option<String>)>, String> {
    use rdkafka::bindings as rd;
    use std::ffi::CStr;

    let rk = consumer.client().native_ptr();
    // SAFETY: `rk` lives as long as the borrowed `consumer`; the event is destroyed here after
    // its strings are copied out.
    unsafe {
        let call = AdminCall::new(
            rk,
            rd::rd_kafka_admin_op_t::RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPS,
            timeout,
        );
        rd::rd_kafka_ListConsumerGroups(rk, call.options, call.queue);
        let event = call.next_result(timeout + Duration::from_secs(1), timeout)?;
        let listing = rd::rd_kafka_event_ListConsumerGroups_result(event);
        let mut count = 0usize;
        let groups = rd::rd_kafka_ListConsumerGroups_result_valid(listing, &mut count);
        let mut out = Vec::with_capacity(count);
        for i in 0..count {
            let g = *groups.add(i);
            let name = CStr::from_ptr(rd::rd_kafka_ConsumerGroupListing_group_id(g))
                .to_string_lossy()
                .into_owned();
            let state = rd::rd_kafka_ConsumerGroupListing_state(g);
            let state = (state
                != rd::rd_kafka_consumer_group_state_t::RD_KAFKA_CONSUMER_GROUP_STATE_UNKNOWN)
                .then(|| {
                    CStr::from_ptr(rd::rd_kafka_consumer_group_state_name(state))
                        .to_string_lossy()
                        .into_owned()
                });
            out.push((name, state));
        }
        rd::rd_kafka_event_destroy(event);
        Ok(out)
    }
}

/// Committed offsets of `groups` for the partitions of `tpl`, through
/// `rd_kafka_ListConsumerGroupOffsets` (rdkafka does not wrap it): one request per group, all
/// on one queue, so that many groups cost one round trip rather than one client each.
fn list_group_offsets(
    consumer: &BaseConsumer<Reporter>,
    groups: &[String],
    tpl: &TopicPartitionList,
    timeout: Duration,
) -> std::result::Result<HashMap<String, Committed>, String> {
    use rdkafka::bindings as rd;
    use std::ffi::{CStr, CString};

    let rk = consumer.client().native_ptr();
    let names: Vec<CString> = groups
        .iter()
        .map(|g| CString::new(g.as_str()).map_err(|_| format!("group name '{g}' contains NUL")))
        .collect::<std::result::Result<_, _>>()?;
    let mut out = HashMap::new();
    // SAFETY: librdkafka copies the group name and partition list into each request, which is
    // destroyed right after; everything read from an event is copied out before the event is
    // destroyed; `rk` lives as long as the borrowed `consumer`.
    unsafe {
        let call = AdminCall::new(
            rk,
            rd::rd_kafka_admin_op_t::RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS,
            timeout,
        );
        for name in &names {
            let mut request = rd::rd_kafka_ListConsumerGroupOffsets_new(name.as_ptr(), tpl.ptr());
            rd::rd_kafka_ListConsumerGroupOffsets(rk, &mut request, 1, call.options, call.queue);
            rd::rd_kafka_ListConsumerGroupOffsets_destroy(request);
        }
        let deadline = Instant::now() + timeout + Duration::from_secs(1);
        for _ in 0..names.len() {
            let event =
                call.next_result(deadline.saturating_duration_since(Instant::now()), timeout)?;
            let result = rd::rd_kafka_event_ListConsumerGroupOffsets_result(event);
            let mut count = 0usize;
            let results = rd::rd_kafka_ListConsumerGroupOffsets_result_groups(result, &mut count);
            let mut failure = None;
            for i in 0..count {
                let group = *results.add(i);
                let name = CStr::from_ptr(rd::rd_kafka_group_result_name(group))
                    .to_string_lossy()
                    .into_owned();
                let error = rd::rd_kafka_group_result_error(group);
                if !error.is_null() {
                    failure = Some(format!(
                        "group '{name}': {}",
                        CStr::from_ptr(rd::rd_kafka_error_string(error)).to_string_lossy()
                    ));
                    continue;
                }
                let list = rd::rd_kafka_group_result_partitions(group);
                let mut offsets = HashMap::new();
                if !list.is_null() {
                    for j in 0..(*list).cnt.max(0) as usize {
                        let e = &*(*list).elems.add(j);
                        let topic = CStr::from_ptr(e.topic).to_string_lossy().into_owned();
                        let ok = e.err == rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR;
                        offsets.insert(
                            (topic, e.partition),
                            (ok && e.offset >= 0).then_some(e.offset),
                        );
                    }
                }
                out.insert(name, offsets);
            }
            rd::rd_kafka_event_destroy(event);
            if let Some(f) = failure {
                return Err(f);
            }
        }
    }
    Ok(out)
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
            brokers: vec![super::super::spec::Broker {
                host: "127.0.0.1".into(),
                port: 9092,
            }],
            topic: Some("t".into()),
        };
        let c = client_config(&spec, Some(&file), &["client.id=cli".into()]).unwrap();
        assert_eq!(c.get("bootstrap.servers"), Some("127.0.0.1:9092"));
        assert_eq!(c.get("security.protocol"), Some("SASL_SSL"));
        assert_eq!(c.get("client.id"), Some("cli"));
        assert!(client_config(&spec, None, &["novalue".into()]).is_err());
        std::fs::write(&file, "sasl.password\n").unwrap();
        let e = client_config(&spec, Some(&file), &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("kafka.conf:1"), "{e}");
    }

    #[test]
    fn reads_are_planned_in_passes_and_rounds() {
        let w = |t: &str, p: i32, o: i64| (t.to_string(), p, o);
        let wanted = [
            w("a", 0, 10),
            w("a", 0, 12),
            w("a", 0, 9000),
            w("a", 1, 5),
            w("b", 0, 1),
            w("a", 0, 10),
        ];
        let rounds = plan_reads(&wanted, 100);
        let shape: Vec<Vec<(String, i32, Vec<i64>)>> = rounds
            .into_iter()
            .map(|r| {
                r.into_iter()
                    .map(|x| (x.topic, x.partition, x.offsets))
                    .collect()
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                vec![("a".into(), 0, vec![10, 12]), ("a".into(), 1, vec![5])],
                vec![("a".into(), 0, vec![9000])],
                vec![("b".into(), 0, vec![1])],
            ]
        );
    }

    #[test]
    fn secrets_are_recognised() {
        assert!(is_secret("sasl.password"));
        assert!(is_secret("ssl.key.password"));
        assert!(!is_secret("bootstrap.servers"));
    }
}
