//! How far a Kinesis consumer is behind, per shard: its checkpoint (a weir checkpoint file,
//! or a KCL application's lease table in DynamoDB), the arrival time of the first record
//! after it, and what GetRecords says of the distance to the tip (MillisBehindLatest).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use aws_sdk_kinesis::primitives::DateTime;
use aws_sdk_kinesis::types::{Record, ShardIteratorType};

use super::client::{
    arrival_millis, dynamo_client, not_reached_by_service, retry_passing, retrying, AwsOptions,
    Failure, KinesisClient,
};
use super::lease::{lag_entry, marked_stream};
use super::source::list_shards;
use crate::core::kpl;
use crate::core::lag::{shard_time_lag, ShardCheckpoint, ShardLag};
use crate::core::time::{now_millis, Millis};
use crate::error::{Error, Result};
use crate::io::spec::KinesisSpec;
use crate::runtime::checkpoint::file::{Checkpoint, CheckpointFile, Loaded, PartitionId};
use crate::runtime::signals::stopping;
use crate::runtime::ShardResume;

/// Whose lag: a weir checkpoint, or a KCL application.
enum Consumer {
    Checkpoint(PathBuf),
    Kcl {
        app: String,
        dynamo: aws_sdk_dynamodb::Client,
    },
}

impl Consumer {
    /// The consumer's name in a report.
    pub fn name(&self) -> String {
        match self {
            Consumer::Checkpoint(path) => path.display().to_string(),
            Consumer::Kcl { app, .. } => app.clone(),
        }
    }

    /// Where the consumer stands in each shard it has a position in, and who holds it.
    async fn positions(
        &self,
        client: &KinesisClient,
    ) -> Result<BTreeMap<String, (ShardCheckpoint, Option<String>)>> {
        match self {
            Consumer::Checkpoint(path) => checkpoint_positions(path, &client.stream.name),
            Consumer::Kcl { app, dynamo } => lease_positions(app, dynamo, client).await,
        }
    }
}

/// A weir checkpoint, as a restart would read it (falling back to the one before a torn
/// write); none at `path` is a missing input (exit 4).
pub fn load_checkpoint(path: &Path) -> Result<Checkpoint> {
    match CheckpointFile::new(path).read()? {
        Loaded::Current(c) | Loaded::Previous(c, _) => Ok(c),
        Loaded::Fresh => Err(Error::Unreachable(format!(
            "no checkpoint at {}",
            path.display()
        ))),
    }
}

/// The shards of a weir checkpoint of a read of `stream`.
fn checkpoint_positions(
    path: &Path,
    stream: &str,
) -> Result<BTreeMap<String, (ShardCheckpoint, Option<String>)>> {
    let checkpoint = load_checkpoint(path)?;
    let mut positions = BTreeMap::new();
    for p in checkpoint.partitions {
        let PartitionId::Kinesis { stream: s, shard } = p.partition else {
            continue;
        };
        if s != stream {
            continue;
        }
        let Some(position) = ShardResume::of(p.resume).map(|r| r.checkpoint()) else {
            continue;
        };
        positions.insert(shard, (position, None));
    }
    if positions.is_empty() {
        return Err(Error::Usage(format!(
            "{} holds no position in stream '{stream}': it is the checkpoint of another read",
            path.display()
        )));
    }
    Ok(positions)
}

/// The leases of a KCL application: its DynamoDB table, named after it, one item a shard.
/// A throttled or failed scan is tried again with backoff for up to the client's timeout, as
/// the Kinesis calls are (a lease table is often provisioned small, and KCL keeps it busy).
async fn lease_positions(
    app: &str,
    dynamo: &aws_sdk_dynamodb::Client,
    client: &KinesisClient,
) -> Result<BTreeMap<String, (ShardCheckpoint, Option<String>)>> {
    let mut positions = BTreeMap::new();
    let mut others = std::collections::BTreeSet::new();
    let mut start = None;
    loop {
        let scan = || {
            dynamo
                .scan()
                .table_name(app)
                .set_exclusive_start_key(start.clone())
                .send()
        };
        let out = retry_passing(client, "DynamoDB Scan", scan)
            .await
            .map_err(|failure| match failure {
                Failure::Retry(_) if stopping() => Error::Interrupted,
                Failure::Retry(why) => Error::Unreachable(format!(
                    "the lease table of KCL application '{app}': Scan failed for {:?}: {why}",
                    client.options.timeout
                )),
                Failure::Refused(why) | Failure::Invalid(why) => {
                    Error::Unreachable(format!("the lease table of KCL application '{app}': {why}"))
                }
                Failure::ExpiredIterator => unreachable!("a scan has no iterator"),
            })?;
        for item in out.items() {
            let stream = &client.stream.name;
            if let Some(other) = marked_stream(item).filter(|s| s != stream) {
                return Err(Error::Usage(format!(
                    "the application '{app}' reads stream '{other}', not '{stream}'"
                )));
            }
            match lag_entry(item) {
                Some(e) if e.stream.as_ref().is_none_or(|s| s == stream) => {
                    positions.insert(e.shard, (e.checkpoint, e.owner));
                }
                Some(e) => others.extend(e.stream),
                None => {}
            }
        }
        match out.last_evaluated_key {
            Some(key) if !key.is_empty() => start = Some(key),
            _ => break,
        }
    }
    if positions.is_empty() && !others.is_empty() {
        let others: Vec<String> = others.into_iter().collect();
        return Err(Error::Usage(format!(
            "the application '{app}' holds leases of stream(s) {}, none of '{}'",
            others.join(", "),
            client.stream.name
        )));
    }
    Ok(positions)
}

/// A consumer's lag measured again and again on one connection (`weir lag`, `--watch`).
pub struct ShardLags {
    runtime: tokio::runtime::Runtime,
    client: KinesisClient,
    consumer: Consumer,
}

impl ShardLags {
    /// Connects to the stream of `spec` (and for a KCL application, `Err(app)`, to DynamoDB
    /// at `dynamo_endpoint`) to measure the lag of `whose`.
    pub fn connect(
        spec: &KinesisSpec,
        options: &AwsOptions,
        whose: &std::result::Result<PathBuf, String>,
        dynamo_endpoint: Option<&str>,
    ) -> Result<ShardLags> {
        let runtime = super::client::runtime()?;
        let client = KinesisClient::connect(&runtime, spec, options)?;
        let consumer = match whose {
            Ok(path) => Consumer::Checkpoint(path.clone()),
            Err(app) => Consumer::Kcl {
                app: app.clone(),
                dynamo: runtime.block_on(dynamo_client(options, dynamo_endpoint)),
            },
        };
        Ok(ShardLags {
            runtime,
            client,
            consumer,
        })
    }

    /// The lag on every shard now; the retries it took are said on stderr.
    pub fn measure(&self) -> Result<Vec<ShardLag>> {
        let rows = self.runtime.block_on(measure(&self.client, &self.consumer));
        self.client.say_retries();
        rows
    }
}

/// The lag of `consumer` on every shard of the client's stream.
async fn measure(client: &KinesisClient, consumer: &Consumer) -> Result<Vec<ShardLag>> {
    let stream = client.stream.name.clone();
    let shards = list_shards(client).await?;
    let positions = consumer.positions(client).await?;
    check_positions_fit(&consumer.name(), &client.stream.name, &shards, &positions)?;
    let consumer_name = consumer.name();
    let mut rows = Vec::new();
    for shard in shards {
        let (checkpoint, owner) = positions
            .get(&shard.id)
            .cloned()
            .unwrap_or((ShardCheckpoint::None, None));
        let (first_after, behind) = first_after(client, &shard.id, &checkpoint).await?;
        rows.push(ShardLag {
            stream: stream.clone(),
            time: shard_time_lag(&checkpoint, first_after, now_millis()),
            shard: shard.id,
            consumer: consumer_name.clone(),
            checkpoint,
            owner,
            millis_behind_latest: behind,
            closed: shard.closed,
        });
    }
    Ok(rows)
}

/// Refuses positions that cannot be this stream's: a checkpoint before its shard's first
/// sequence number (a table or checkpoint of another stream of the same shard names, or of
/// this stream before it was made again), or positions in shards the stream has none of.
fn check_positions_fit(
    consumer: &str,
    stream: &str,
    shards: &[super::plan::ShardInfo],
    positions: &BTreeMap<String, (ShardCheckpoint, Option<String>)>,
) -> Result<()> {
    for shard in shards {
        let Some((ShardCheckpoint::At { sequence, .. }, _)) = positions.get(&shard.id) else {
            continue;
        };
        if sequence_before(sequence, &shard.first_sequence) {
            return Err(Error::Usage(format!(
                "'{consumer}' stands at {sequence} in {}, before that shard's first record ({}) in stream '{stream}': it is another stream's (or this stream's before it was made again)",
                shard.id, shard.first_sequence
            )));
        }
    }
    let known = |id: &String| shards.iter().any(|s| &s.id == id);
    if !positions.is_empty() && !positions.keys().any(known) {
        let theirs: Vec<&str> = positions.keys().map(String::as_str).take(4).collect();
        return Err(Error::Usage(format!(
            "'{consumer}' has positions in {}, none a shard of stream '{stream}': it is another stream's",
            theirs.join(", ")
        )));
    }
    Ok(())
}

/// Whether decimal sequence number `a` comes before `b` (which may be unknown: empty).
fn sequence_before(a: &str, b: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    if !digits(a) || !digits(b) {
        return false;
    }
    let (a, b) = (a.trim_start_matches('0'), b.trim_start_matches('0'));
    (a.len(), a) < (b.len(), b)
}

/// The arrival time of the first record after `checkpoint` in `shard` (none when there is
/// none yet), and MillisBehindLatest from there.
async fn first_after(
    client: &KinesisClient,
    shard: &str,
    checkpoint: &ShardCheckpoint,
) -> Result<(Option<Millis>, Option<i64>)> {
    let Some((kind, sequence, inside)) = iterator_after(checkpoint) else {
        return Ok((None, None));
    };
    let at_time = match checkpoint {
        ShardCheckpoint::AtTimestamp(t) => Some(*t),
        _ => None,
    };
    let stream = &client.stream;
    let call = client
        .sdk
        .get_shard_iterator()
        .set_stream_name(stream.arn.is_none().then(|| stream.name.clone()))
        .set_stream_arn(stream.arn.clone())
        .shard_id(shard)
        .shard_iterator_type(kind)
        .set_starting_sequence_number(sequence)
        .set_timestamp(at_time.map(DateTime::from_millis));
    let out = match retrying(client, "GetShardIterator", || call.clone().send()).await {
        // Nothing has arrived after the start time yet, by the service's clock.
        Err(e) if at_time.is_some_and(|t| not_reached_by_service(&e, t)) => {
            return Ok((None, None))
        }
        other => other?,
    };
    let mut iterator = out.shard_iterator;
    let mut behind = None;
    // A sparse shard can answer empty before its next record: a few calls more.
    for _ in 0..5 {
        let Some(it) = iterator.take() else { break };
        let call = client.sdk.get_records().shard_iterator(&it).limit(2);
        let out = retrying(client, "GetRecords", || call.clone().send()).await?;
        behind = out.millis_behind_latest.or(behind);
        if let Some(arrival) = first_pending(&out.records, inside) {
            return Ok((arrival, behind));
        }
        if out.records.len() > usize::from(inside.is_some()) || behind == Some(0) {
            break;
        }
        iterator = out.next_shard_iterator;
    }
    Ok((None, behind))
}

/// Where to read a shard from to find the first record after `checkpoint`: the iterator's
/// type and sequence number, and, inside a KPL aggregate, the checkpoint's subsequence.
/// `None` when no record is pending after it.
fn iterator_after(
    checkpoint: &ShardCheckpoint,
) -> Option<(ShardIteratorType, Option<String>, Option<u64>)> {
    Some(match checkpoint {
        ShardCheckpoint::None | ShardCheckpoint::ShardEnd | ShardCheckpoint::Latest => return None,
        ShardCheckpoint::TrimHorizon => (ShardIteratorType::TrimHorizon, None, None),
        ShardCheckpoint::AtTimestamp(_) => (ShardIteratorType::AtTimestamp, None, None),
        ShardCheckpoint::At {
            sequence,
            subsequence: None,
        } => (
            ShardIteratorType::AfterSequenceNumber,
            Some(sequence.clone()),
            None,
        ),
        // Inside an aggregate: its user records after the checkpoint's are still to come.
        ShardCheckpoint::At {
            sequence,
            subsequence: Some(sub),
        } => (
            ShardIteratorType::AtSequenceNumber,
            Some(sequence.clone()),
            Some(*sub),
        ),
    })
}

/// The arrival time of the first pending record among `records`, read from where
/// `iterator_after` said: inside an aggregate (`inside`), the checkpoint's own record is
/// pending only while user records remain after the checkpoint's.
fn first_pending(records: &[Record], inside: Option<u64>) -> Option<Option<Millis>> {
    let arrival = |r: &Record| r.approximate_arrival_timestamp.map(|t| arrival_millis(&t));
    let mut records = records.iter();
    if let Some(sub) = inside {
        if let Some(first) = records.next() {
            let data = first.data.as_ref();
            let remaining = kpl::is_aggregated(data)
                && kpl::deaggregate(data).is_ok_and(|(_, index)| index.len() as u64 > sub + 1);
            if remaining {
                return Some(arrival(first));
            }
        }
    }
    records.next().map(arrival)
}
