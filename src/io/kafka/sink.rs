//! The Kafka sink: an idempotent producer with librdkafka's bounded in-flight queue, every
//! delivery accounted for before the run ends.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, Message as _, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::ClientContext;

use super::client::{reach, scrub, topic_error, Reporter};
use super::config::ClientOptions;
use crate::core::record::RecordError;
use crate::error::{Error, Fault, Result};
use crate::io::schema::encode::ValueEncoder;
use crate::io::spec::KafkaSpec;
use crate::runtime::sink::Outgoing;

/// Delivery outcomes, shared with librdkafka's callback.
#[derive(Default)]
pub struct Deliveries {
    delivered: AtomicU64,
    failed: AtomicU64,
    first_failure: Mutex<Option<String>>,
    failing: AtomicBool,
    reporter: Reporter,
}

impl super::client::Reports for Deliveries {
    fn reporter(&self) -> &Reporter {
        &self.reporter
    }
}

impl ClientContext for Deliveries {
    const ENABLE_REFRESH_OAUTH_TOKEN: bool = true;

    fn log(&self, _level: RDKafkaLogLevel, _fac: &str, _message: &str) {}

    fn generate_oauth_token(
        &self,
        _config: Option<&str>,
    ) -> std::result::Result<rdkafka::client::OAuthToken, Box<dyn std::error::Error>> {
        self.reporter.oauth_token()
    }

    fn error(&self, error: KafkaError, reason: &str) {
        self.reporter.record(&error, reason);
    }
}

/// The producer's record for `r`, its delivery numbered `n`.
fn record_of<'a>(topic: &'a str, n: usize, r: &Outgoing<'a>) -> BaseRecord<'a, [u8], [u8], usize> {
    let mut record = BaseRecord::with_opaque_to(topic, n);
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
    record
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

/// A producing sink: idempotent by default, bounded in-flight queue (librdkafka's), every
/// delivery accounted for before exit.
pub struct KafkaSink {
    producer: BaseProducer<Deliveries>,
    pub topic: String,
    timeout: Duration,
    sent: usize,
    /// Values are encoded with this schema (and framed with its id) before they are sent.
    encoder: Option<ValueEncoder>,
}

impl KafkaSink {
    pub fn open(spec: &KafkaSpec, client: &ClientOptions) -> Result<KafkaSink> {
        KafkaSink::open_with(spec, client, &[])
    }

    /// A sink with producer properties of its own, set over `-X`/`-F`'s.
    pub fn open_with(
        spec: &KafkaSpec,
        client: &ClientOptions,
        fixed: &[(&str, &str)],
    ) -> Result<KafkaSink> {
        let timeout = client.timeout;
        let topic = spec.topic.clone().ok_or_else(|| {
            Error::Usage("a Kafka sink needs a topic: kafka://HOST:PORT/TOPIC".into())
        })?;
        let mut config = ClientConfig::new();
        // Ours first, so that -F/-X can override them.
        config.set("enable.idempotence", "true");
        config.set("message.timeout.ms", "30000");
        config.set("linger.ms", "20");
        // The Java client's partitioner (murmur2 of the key; keyless records spread): a key
        // weir writes lands where a Java or Kafka Streams producer puts it, so topics weir
        // writes are co-partitioned with the rest of a Kafka estate. librdkafka's default
        // (CRC32) would not be.
        config.set("partitioner", "murmur2_random");
        for (k, v) in client.config(spec).config_map() {
            config.set(k, v);
        }
        for (k, v) in fixed {
            config.set(*k, *v);
        }
        let producer: BaseProducer<Deliveries> = config
            .create_with_context(Deliveries {
                reporter: Reporter::for_client(client, spec)?,
                ..Deliveries::default()
            })
            .map_err(|e| Error::Usage(format!("Kafka producer configuration: {}", scrub(&e))))?;
        // Fail fast and clearly when the cluster or topic is not there.
        let serve = || producer.poll(Duration::from_millis(100));
        let metadata = reach(producer.client(), &serve, Some(&topic), timeout, spec)?;
        match metadata.topics().iter().find(|t| t.name() == topic) {
            Some(t) if t.error().is_none() && !t.partitions().is_empty() => {}
            t => {
                return Err(topic_error(
                    spec,
                    &topic,
                    t.and_then(|t| t.error()).map(Into::into),
                    true,
                ))
            }
        }
        Ok(KafkaSink {
            producer,
            topic,
            timeout,
            sent: 0,
            encoder: None,
        })
    }

    /// Sends a record weir makes itself (`record`: "a state record") to its own topic (`kind`:
    /// "changelog topic"): one the topic refuses is no bad input record but a failure of the
    /// run.
    pub fn send_own(&mut self, r: &Outgoing<'_>, kind: &str, record: &str) -> Result<()> {
        self.send(r).map_err(|f| match f {
            Fault::Fatal(e) => e,
            Fault::Record(e) => {
                Error::Unreachable(format!("the {kind} '{}' refused {record}: {e}", self.topic))
            }
        })
    }

    /// Encodes every value with `encoder` from now on.
    pub fn encode_with(&mut self, encoder: ValueEncoder) {
        self.encoder = Some(encoder);
    }

    /// The schema values are encoded with, as the summary names it.
    pub fn encoding(&self) -> Option<&str> {
        self.encoder.as_ref().map(|e| e.described.as_str())
    }

    /// Sends a record, its value encoded first when the sink encodes: a value that does not
    /// fit the schema is a bad record, with the field and the reason.
    pub fn send(&mut self, r: &Outgoing<'_>) -> Result<(), Fault> {
        let mut encoder = self.encoder.take();
        let sent = match (&mut encoder, r.value) {
            (Some(encoder), Some(value)) => match encoder.encode(value) {
                Ok(value) => self.send_as_is(&Outgoing {
                    value: Some(value),
                    ..*r
                }),
                Err(bad) => Err(Fault::Record(bad)),
            },
            _ => self.send_as_is(r),
        };
        self.encoder = encoder;
        sent
    }

    fn send_as_is(&mut self, r: &Outgoing<'_>) -> Result<(), Fault> {
        if self.producer.context().failing.load(Ordering::Acquire) {
            return Err(Fault::Fatal(self.failure()));
        }
        self.sent += 1;
        let mut record = record_of(&self.topic, self.sent, r);
        let started = Instant::now();
        loop {
            let code = match self.producer.send(record) {
                Ok(()) => {
                    self.producer.poll(Duration::ZERO);
                    return Ok(());
                }
                Err((KafkaError::MessageProduction(code), back)) => {
                    record = back;
                    code
                }
                Err((e, _)) => {
                    return Err(Fault::Fatal(Error::Unreachable(format!(
                        "cannot produce to '{}': {e}",
                        self.topic
                    ))))
                }
            };
            if code != RDKafkaErrorCode::QueueFull {
                let fault = self.refused(code, r.partition);
                if let Fault::Record(_) = fault {
                    self.sent -= 1;
                }
                return Err(fault);
            }
            // Backpressure: wait for deliveries to make room.
            self.producer.poll(Duration::from_millis(50));
            if started.elapsed() > self.timeout.max(Duration::from_secs(30)) {
                let why = (self.producer.context().reporter.error_since(started))
                    .unwrap_or_else(|| "the broker is not accepting records".into());
                return Err(Fault::Fatal(Error::Unreachable(format!(
                    "Kafka producer queue stayed full for {:?}: {why}",
                    started.elapsed(),
                ))));
            }
        }
    }

    /// Why the producer did not take a record: too large or for a partition the topic lacks
    /// (a bad record), or a failure that ends the run.
    fn refused(&self, code: RDKafkaErrorCode, partition: Option<i32>) -> Fault {
        match code {
            RDKafkaErrorCode::MessageSizeTooLarge | RDKafkaErrorCode::InvalidMessageSize => {
                Fault::Record(RecordError::Refused(format!(
                    "record too large for Kafka topic '{}' ({code}; see -X message.max.bytes)",
                    self.topic
                )))
            }
            RDKafkaErrorCode::UnknownPartition => Fault::Record(RecordError::Refused(format!(
                "topic '{}' has no partition {}",
                self.topic,
                partition.unwrap_or(-1)
            ))),
            code => Fault::Fatal(Error::Unreachable(format!(
                "cannot produce to '{}': {}",
                self.topic,
                KafkaError::MessageProduction(code)
            ))),
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
