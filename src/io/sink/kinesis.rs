//! Lines to a Kinesis stream: each line a record, its partition key from `--key FIELD` (or,
//! for envelopes, their own key), sent with PutRecords in batches of up to 500 records or
//! 5 MiB. One batch is in flight while the next fills; a batch's failed entries are sent
//! again, with backoff, before the next batch goes, so each key's records stay in order.

use std::borrow::Cow;
use std::time::Instant;

use aws_sdk_kinesis::primitives::Blob;
use aws_sdk_kinesis::types::PutRecordsRequestEntry;
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

use super::kafka::{field_bytes, RecordFields};
use crate::core::record::{raw, Extractor, Fields, RecordError};
use crate::error::{Error, Fault, Result};
use crate::io::kinesis::client::{classify, jitter, retrying, runtime, Failure};
use crate::io::kinesis::plan::{backoff, entries_to_resend};
use crate::io::kinesis::{AwsOptions, KinesisClient};
use crate::io::schema::encode::ValueEncoder;
use crate::io::spec::KinesisSpec;
use crate::runtime::sink::{Outgoing, Sink};

/// The most entries one PutRecords call takes.
const BATCH_RECORDS: usize = 500;
/// The most bytes (data and partition keys) one PutRecords call takes.
const BATCH_BYTES: usize = 5 << 20;
/// The largest record: data and partition key together.
const RECORD_BYTES: usize = 1 << 20;

/// A batch of entries on its way, and what came of it: how many entries that had gone in
/// were sent again to keep a key's order.
type InFlight = JoinHandle<Result<u64>>;

pub struct KinesisLines {
    runtime: Runtime,
    client: KinesisClient,
    key: Option<Extractor>,
    spans: Fields,
    batch: Vec<PutRecordsRequestEntry>,
    batch_bytes: usize,
    in_flight: Option<InFlight>,
    /// Entries sent again after they had gone in, to keep their key's order.
    pub resent: u64,
    /// Each record's data is encoded with this schema first.
    encoder: Option<ValueEncoder>,
}

impl KinesisLines {
    /// Connects and checks that the stream exists (exit 4 otherwise).
    pub fn open(
        spec: &KinesisSpec,
        options: &AwsOptions,
        fields: &RecordFields,
    ) -> Result<KinesisLines> {
        let runtime = runtime()?;
        let client = KinesisClient::connect(&runtime, spec, options)?;
        let describe = client
            .sdk
            .describe_stream_summary()
            .set_stream_name(client.stream.arn.is_none().then(|| spec.stream.clone()))
            .set_stream_arn(client.stream.arn.clone());
        runtime.block_on(retrying(&client, "DescribeStreamSummary", || {
            describe.clone().send()
        }))?;
        Ok(KinesisLines {
            runtime,
            client,
            key: fields.key.clone().map(|k| Extractor::new(vec![k])),
            spans: Vec::new(),
            batch: Vec::new(),
            batch_bytes: 0,
            in_flight: None,
            resent: 0,
            encoder: fields
                .encode
                .as_ref()
                .map(|e| e.open(&spec.stream))
                .transpose()?,
        })
    }

    pub fn stream(&self) -> &str {
        &self.client.stream.name
    }

    /// Adds one record to the batch, sending the batch when it is full.
    fn add(&mut self, key: &[u8], data: &[u8]) -> Result<(), Fault> {
        let mut encoder = self.encoder.take();
        let added = match &mut encoder {
            Some(e) => e
                .encode(data)
                .map_err(Fault::Record)
                .and_then(|data| self.add_encoded(key, data)),
            None => self.add_encoded(key, data),
        };
        self.encoder = encoder;
        added
    }

    fn add_encoded(&mut self, key: &[u8], data: &[u8]) -> Result<(), Fault> {
        let key = match std::str::from_utf8(key) {
            Ok(k) if !k.is_empty() && k.chars().count() <= 256 => k,
            _ => {
                return Err(Fault::Record(RecordError::BadValue {
                    path: "(partition key)".into(),
                    reason: format!(
                        "a Kinesis partition key is 1 to 256 characters of text, not {:?}",
                        String::from_utf8_lossy(&key[..key.len().min(64)])
                    ),
                }))
            }
        };
        let size = key.len() + data.len();
        if size > RECORD_BYTES {
            return Err(Fault::Record(RecordError::BadValue {
                path: "(record)".into(),
                reason: format!("{size} bytes: a Kinesis record holds at most 1 MiB"),
            }));
        }
        if self.batch.len() == BATCH_RECORDS || self.batch_bytes + size > BATCH_BYTES {
            self.send_batch()?;
        }
        self.batch.push(
            PutRecordsRequestEntry::builder()
                .partition_key(key)
                .data(Blob::new(data))
                .build()
                .expect("data and partition key are set"),
        );
        self.batch_bytes += size;
        Ok(())
    }

    /// Waits for the batch in flight, if any.
    fn settle(&mut self) -> Result<()> {
        if let Some(batch) = self.in_flight.take() {
            self.resent += self
                .runtime
                .block_on(batch)
                .map_err(|e| Error::Unreachable(format!("Kinesis sink: {e}")))??;
        }
        Ok(())
    }

    /// Sends the batch once the one before it is in, every entry of it.
    fn send_batch(&mut self) -> Result<()> {
        self.settle()?;
        if self.batch.is_empty() {
            return Ok(());
        }
        let entries = std::mem::take(&mut self.batch);
        self.batch_bytes = 0;
        let client = self.client.clone();
        self.in_flight = Some(self.runtime.spawn(put_all(client, entries)));
        Ok(())
    }
}

/// Puts `entries`, sending failed ones again (and those after a failure of their key, to
/// keep the key's order) with backoff, until all are in or the client's timeout passes
/// without progress. Returns how many entries went twice.
async fn put_all(client: KinesisClient, mut entries: Vec<PutRecordsRequestEntry>) -> Result<u64> {
    let stream = &client.stream;
    let mut resent = 0;
    let mut attempt = 0;
    let mut since = Instant::now();
    loop {
        let call = client
            .sdk
            .put_records()
            .set_stream_name(stream.arn.is_none().then(|| stream.name.clone()))
            .set_stream_arn(stream.arn.clone())
            .set_records(Some(entries.clone()));
        let why = match call.send().await {
            Ok(out) => {
                let failed: Vec<bool> =
                    out.records.iter().map(|r| r.error_code.is_some()).collect();
                if !failed.contains(&true) {
                    return Ok(resent);
                }
                let first_error = out
                    .records
                    .iter()
                    .find_map(|r| r.error_code.clone())
                    .unwrap_or_default();
                if first_error.starts_with("KMS") && first_error != "KMSThrottlingException" {
                    return Err(Error::Unreachable(format!(
                        "Kinesis stream '{}': PutRecords: {first_error}",
                        stream.name
                    )));
                }
                let keys: Vec<&str> = entries
                    .iter()
                    .map(|e| e.partition_key().unwrap_or_default())
                    .collect();
                let again = entries_to_resend(&keys, &failed);
                resent += again.iter().filter(|&&i| !failed[i]).count() as u64;
                entries = again.into_iter().map(|i| entries[i].clone()).collect();
                // Some went in: that is progress.
                if failed.contains(&false) {
                    since = Instant::now();
                    attempt = 0;
                }
                first_error
            }
            Err(e) => match classify(&e) {
                Failure::Retry(why) => why,
                Failure::ExpiredIterator => "an expired iterator".into(),
                Failure::Refused(why) | Failure::Invalid(why) => {
                    return Err(Error::Unreachable(format!(
                        "Kinesis stream '{}' at {}: PutRecords: {why}",
                        stream.name,
                        client.endpoint()
                    )))
                }
            },
        };
        if since.elapsed() >= client.options.timeout {
            return Err(Error::Unreachable(format!(
                "Kinesis at {}: PutRecords failed for {:?}: {why}",
                client.endpoint(),
                client.options.timeout
            )));
        }
        client.retried("PutRecords", &why);
        tokio::time::sleep(backoff(attempt, jitter(attempt as u64))).await;
        attempt += 1;
    }
}

impl Sink for KinesisLines {
    fn write_record(&mut self, line: &[u8]) -> Result<(), Fault> {
        let x = self
            .key
            .as_ref()
            .expect("the plan gives lines a --key field");
        let text = x
            .extract_bytes(line, &mut self.spans, None)
            .map_err(Fault::Record)?;
        let key: Cow<'_, [u8]> = match raw(text, self.spans[0]) {
            Some(value) => field_bytes(value),
            None => return Err(Fault::Record(x.missing(0, text))),
        };
        let key = key.into_owned();
        self.add(&key, line)
    }

    fn send(&mut self, record: &Outgoing<'_>) -> Result<(), Fault> {
        let (Some(key), Some(value)) = (record.key, record.value) else {
            let (path, reason) = match record.key {
                None => ("key", "null, and a Kinesis record needs a partition key (give null keys one first, e.g. jq -c '.key //= (.partition|tostring)')"),
                Some(_) => ("value", "null (a tombstone), and a Kinesis record needs a value"),
            };
            return Err(Fault::Record(RecordError::BadValue {
                path: path.into(),
                reason: reason.into(),
            }));
        };
        self.add(key, value)
    }

    fn write_raw(&mut self, _bytes: &[u8]) -> Result<()> {
        Err(Error::Usage(
            "text for people (-f, reports, CSV) cannot be written to Kinesis".into(),
        ))
    }

    fn flush(&mut self) -> Result<()> {
        self.send_batch()?;
        self.settle()
    }

    fn idle(&mut self) -> Result<()> {
        // What has gathered goes now; waiting for it is for flush.
        self.send_batch()
    }

    fn name(&self) -> String {
        format!("kinesis stream '{}'", self.stream())
    }

    fn encoding(&self) -> Option<String> {
        self.encoder.as_ref().map(|e| e.described.clone())
    }
}

impl Drop for KinesisLines {
    fn drop(&mut self) {
        self.client.say_retries();
        if self.resent > 0 {
            eprintln!(
                "weir: {} records went to Kinesis stream '{}' twice, sent again after a failure of an earlier record of their key so that the key's last copies are in order",
                self.resent,
                self.stream()
            );
        }
    }
}
