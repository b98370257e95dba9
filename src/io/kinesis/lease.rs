//! A weir application's lease table in DynamoDB (`-G APP` on a Kinesis source): one item a
//! shard in KCL's lease schema, so that `weir lag --kcl-app APP` and AWS's own tooling read it
//! as they read a KCL table, and items of weir's own beside them (`entityType` other than
//! `LEASE`): the table's mark and each member's heartbeat.
//!
//! Every write that moves a lease is conditional on its `leaseCounter` (and, for its owner's
//! writes, on `leaseOwner`): the counter is the fencing token. A write that loses the race
//! comes back as `Ok(None)`, never as an error: losing a lease is part of the protocol.

use std::collections::HashMap;

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType, TableStatus,
};
use aws_sdk_dynamodb::Client;

use super::client::{retry_passing, Failure, KinesisClient};
use crate::core::lag::ShardCheckpoint;
use crate::core::time::Millis;
use crate::error::{Error, Result};

/// The lease key of the item that marks a table as weir's.
const TABLE_MARK: &str = "weir-table";
/// Member heartbeat items are keyed by this and the member's id.
const MEMBER_PREFIX: &str = "weir-member:";
/// The `entityType` of KCL's leases; weir's own items carry others.
const LEASE: &str = "LEASE";

/// A shard's lease, as the table holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    pub shard: String,
    pub owner: Option<String>,
    /// The fencing token: every write that moves the lease adds one.
    pub counter: u64,
    pub checkpoint: ShardCheckpoint,
    pub parents: Vec<String>,
    pub children: Vec<String>,
    /// The shard's hash key range, as decimal text.
    pub hash_range: (String, String),
    pub owner_switches: u64,
    /// Where the shard's state as of the checkpoint is kept (weir's own attribute).
    pub state: Option<String>,
    /// A member with -e read it to the records that arrived before this time (ms) and
    /// stopped there (weir's own attribute).
    pub read_to: Option<Millis>,
}

/// What a scan of the table finds: the leases, and each member's heartbeat counter.
#[derive(Clone, Debug, Default)]
pub struct TableScan {
    pub leases: Vec<Lease>,
    pub members: Vec<(String, u64)>,
}

/// A new lease's shard: its id, parents and hash key range.
#[derive(Clone, Debug)]
pub struct NewLease {
    pub shard: String,
    pub parents: Vec<String>,
    pub hash_range: (String, String),
    /// Where a shard nobody has read starts (`--from`): TRIM_HORIZON or LATEST.
    pub start: ShardCheckpoint,
}

/// What an owner's commit moves: the checkpoint, the state pointer, and (a handoff) the owner.
#[derive(Clone, Debug)]
pub struct Commit<'a> {
    pub checkpoint: &'a ShardCheckpoint,
    pub state: Option<&'a str>,
    /// Hands the lease to this member in the same write.
    pub hand_to: Option<&'a str>,
    /// The shard was read to the records that arrived before this time (-e).
    pub read_to: Option<Millis>,
}

pub struct LeaseTable {
    dynamo: Client,
    pub name: String,
}

impl LeaseTable {
    /// Opens APP's table, creating and marking it when missing. A table that is not weir's
    /// (a KCL application's, whose leases weir never takes) is exit 2, naming what it holds.
    pub async fn open(app: &str, dynamo: Client, client: &KinesisClient) -> Result<LeaseTable> {
        let table = LeaseTable {
            dynamo,
            name: app.to_string(),
        };
        if !table.exists(client).await? {
            table.create(client).await?;
        }
        match table.get(client, TABLE_MARK).await? {
            Some(mark) => match marked_stream(&mark) {
                Some(other) if other != client.stream.name => Err(Error::Usage(format!(
                    "the application '{app}' reads stream '{other}', not '{}': give -G another name",
                    client.stream.name
                ))),
                _ => Ok(table),
            },
            None => table.claim(client).await.map(|()| table),
        }
    }

    async fn exists(&self, client: &KinesisClient) -> Result<bool> {
        let describe = || async {
            match self
                .dynamo
                .describe_table()
                .table_name(&self.name)
                .send()
                .await
            {
                Ok(out) => Ok(out.table().and_then(|t| t.table_status().cloned())),
                Err(e) if e.code() == Some("ResourceNotFoundException") => Ok(None),
                Err(e) => Err(e),
            }
        };
        match retry_passing(client, "DynamoDB DescribeTable", describe).await {
            Ok(None) => Ok(false),
            Ok(Some(TableStatus::Active)) => Ok(true),
            Ok(Some(_)) => self.wait_active(client).await.map(|()| true),
            Err(failure) => Err(self.failed("DescribeTable", failure)),
        }
    }

    async fn create(&self, client: &KinesisClient) -> Result<()> {
        let create = || {
            let key = KeySchemaElement::builder()
                .attribute_name("leaseKey")
                .key_type(KeyType::Hash);
            let attribute = AttributeDefinition::builder()
                .attribute_name("leaseKey")
                .attribute_type(ScalarAttributeType::S);
            self.dynamo
                .create_table()
                .table_name(&self.name)
                .key_schema(key.build().expect("complete"))
                .attribute_definitions(attribute.build().expect("complete"))
                .billing_mode(BillingMode::PayPerRequest)
                .send()
        };
        let attempt = || async {
            match create().await {
                Ok(_) => Ok(()),
                // Another member created it first.
                Err(e) if e.code() == Some("ResourceInUseException") => Ok(()),
                Err(e) => Err(e),
            }
        };
        (retry_passing(client, "DynamoDB CreateTable", attempt).await)
            .map_err(|f| self.failed("CreateTable", f))?;
        self.wait_active(client).await
    }

    async fn wait_active(&self, client: &KinesisClient) -> Result<()> {
        let started = std::time::Instant::now();
        loop {
            let describe = || self.dynamo.describe_table().table_name(&self.name).send();
            let out = (retry_passing(client, "DynamoDB DescribeTable", describe).await)
                .map_err(|f| self.failed("DescribeTable", f))?;
            if out.table().and_then(|t| t.table_status()) == Some(&TableStatus::Active) {
                return Ok(());
            }
            if started.elapsed()
                > client
                    .options
                    .timeout
                    .max(std::time::Duration::from_secs(60))
            {
                return Err(Error::Unreachable(format!(
                    "the lease table '{}' did not become active",
                    self.name
                )));
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }

    /// Marks an empty table as weir's; one with items already is another application's.
    async fn claim(&self, client: &KinesisClient) -> Result<()> {
        let scan = || self.dynamo.scan().table_name(&self.name).limit(50).send();
        let out = (retry_passing(client, "DynamoDB Scan", scan).await)
            .map_err(|f| self.failed("Scan", f))?;
        if let Some(found) = foreign(out.items()) {
            return Err(Error::Usage(format!(
                "the DynamoDB table '{}' is not a weir application's: it holds {found}. weir never takes leases in a KCL application's table: give -G another name",
                self.name
            )));
        }
        let mark = [
            ("leaseKey", s(TABLE_MARK)),
            ("entityType", s("WEIR_TABLE")),
            ("weirVersion", n(1)),
            ("weirStream", s(&client.stream.name)),
        ];
        // Losing this race means another member marked it: the table is weir's either way.
        self.put_new(client, &mark).await.map(|_| ())
    }

    async fn get(
        &self,
        client: &KinesisClient,
        key: &str,
    ) -> Result<Option<HashMap<String, AttributeValue>>> {
        let get = || {
            (self.dynamo.get_item().table_name(&self.name))
                .key("leaseKey", s(key))
                .consistent_read(true)
                .send()
        };
        let out = (retry_passing(client, "DynamoDB GetItem", get).await)
            .map_err(|f| self.failed("GetItem", f))?;
        Ok(out.item)
    }

    fn failed(&self, what: &str, failure: Failure) -> Error {
        Error::Unreachable(format!(
            "the lease table '{}': DynamoDB {what}: {}",
            self.name,
            failure.reason()
        ))
    }

    /// Puts an item unless the table has its key: whether it was put.
    async fn put_new(
        &self,
        client: &KinesisClient,
        fields: &[(&str, AttributeValue)],
    ) -> Result<bool> {
        let put = || {
            (self.dynamo.put_item().table_name(&self.name))
                .set_item(Some(item(fields)))
                .condition_expression("attribute_not_exists(leaseKey)")
                .send()
        };
        self.conditional("PutItem", client, put).await
    }
}

impl LeaseTable {
    /// Every lease and member heartbeat in the table (a consistent read).
    pub async fn scan(&self, client: &KinesisClient) -> Result<TableScan> {
        let mut found = TableScan::default();
        let mut start = None;
        loop {
            let scan = || {
                (self.dynamo.scan().table_name(&self.name))
                    .consistent_read(true)
                    .set_exclusive_start_key(start.clone())
                    .send()
            };
            let out = (retry_passing(client, "DynamoDB Scan", scan).await)
                .map_err(|f| self.failed("Scan", f))?;
            for i in out.items() {
                let key = text(i, "leaseKey").unwrap_or_default();
                match key.strip_prefix(MEMBER_PREFIX) {
                    Some(member) => found
                        .members
                        .push((member.to_string(), number(i, "weirHeartbeat"))),
                    None if is_lease(i) => found.leases.push(lease_of(i)),
                    None => {}
                }
            }
            match out.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => return Ok(found),
            }
        }
    }

    /// Adds a shard's lease unless the table has it: unowned, at `start`.
    pub async fn ensure(&self, client: &KinesisClient, new: &NewLease) -> Result<()> {
        let mut fields = vec![
            ("leaseKey", s(&new.shard)),
            ("leaseCounter", n(0)),
            ("checkpoint", s(&checkpoint_text(&new.start))),
            ("checkpointSubSequenceNumber", n(0)),
            ("ownerSwitchesSinceCheckpoint", n(0)),
            ("startingHashKey", s(&new.hash_range.0)),
            ("endingHashKey", s(&new.hash_range.1)),
        ];
        if !new.parents.is_empty() {
            fields.push(("parentShardId", AttributeValue::Ss(new.parents.clone())));
        }
        self.put_new(client, &fields).await.map(|_| ())
    }

    /// Takes `lease` for `me`, as read: the new counter, or `None` when it moved since.
    pub async fn take(
        &self,
        client: &KinesisClient,
        lease: &Lease,
        me: &str,
    ) -> Result<Option<u64>> {
        let next = lease.counter + 1;
        let update = || {
            (self.dynamo.update_item().table_name(&self.name))
                .key("leaseKey", s(&lease.shard))
                .update_expression("SET leaseOwner = :me, leaseCounter = :next ADD ownerSwitchesSinceCheckpoint :one")
                .condition_expression("leaseCounter = :counter")
                .expression_attribute_values(":me", s(me))
                .expression_attribute_values(":next", n(next))
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":counter", n(lease.counter))
                .send()
        };
        Ok(self
            .conditional("UpdateItem", client, update)
            .await?
            .then_some(next))
    }

    /// The owner's commit of `shard` held at `counter`: the checkpoint and state pointer
    /// together, and the lease handed over with them when `commit.hand_to` says. The new
    /// counter, or `None` when the lease is no longer `me`'s at `counter` (fenced).
    pub async fn commit(
        &self,
        client: &KinesisClient,
        (shard, counter): (&str, u64),
        me: &str,
        commit: &Commit<'_>,
    ) -> Result<Option<u64>> {
        let next = counter + 1;
        let (sequence, sub) = match commit.checkpoint {
            ShardCheckpoint::At {
                sequence,
                subsequence,
            } => (sequence.clone(), subsequence.unwrap_or(0)),
            other => (checkpoint_text(other), 0),
        };
        let owner = commit.hand_to.unwrap_or(me);
        let mut set = "SET checkpoint = :checkpoint, checkpointSubSequenceNumber = :sub, leaseCounter = :next, leaseOwner = :owner, ownerSwitchesSinceCheckpoint = :zero".to_string();
        if commit.state.is_some() {
            set.push_str(", weirState = :state");
        }
        if commit.read_to.is_some() {
            set.push_str(", weirReadTo = :readTo");
        }
        let update = || {
            let mut u = (self.dynamo.update_item().table_name(&self.name))
                .key("leaseKey", s(shard))
                .update_expression(&set)
                .condition_expression("leaseCounter = :counter AND leaseOwner = :me")
                .expression_attribute_values(":checkpoint", s(&sequence))
                .expression_attribute_values(":sub", n(sub))
                .expression_attribute_values(":next", n(next))
                .expression_attribute_values(":owner", s(owner))
                .expression_attribute_values(":zero", n(u64::from(commit.hand_to.is_some())))
                .expression_attribute_values(":counter", n(counter))
                .expression_attribute_values(":me", s(me));
            if let Some(state) = commit.state {
                u = u.expression_attribute_values(":state", s(state));
            }
            if let Some(t) = commit.read_to {
                u = u.expression_attribute_values(":readTo", n(t.max(0) as u64));
            }
            u.send()
        };
        Ok(self
            .conditional("UpdateItem", client, update)
            .await?
            .then_some(next))
    }

    /// `me`'s heartbeat: its counter, which others watch move.
    pub async fn heartbeat(&self, client: &KinesisClient, me: &str, beat: u64) -> Result<()> {
        let fields = [
            ("leaseKey", s(&format!("{MEMBER_PREFIX}{me}"))),
            ("entityType", s("WEIR_MEMBER")),
            ("weirHeartbeat", n(beat)),
        ];
        let put = || {
            (self.dynamo.put_item().table_name(&self.name))
                .set_item(Some(item(&fields)))
                .send()
        };
        (retry_passing(client, "DynamoDB PutItem", put).await)
            .map(|_| ())
            .map_err(|f| self.failed("PutItem", f))
    }

    /// `me` leaves: its heartbeat goes, so the others need not wait out the lease time.
    pub async fn leave(&self, client: &KinesisClient, me: &str) -> Result<()> {
        let key = format!("{MEMBER_PREFIX}{me}");
        let delete = || {
            (self.dynamo.delete_item().table_name(&self.name))
                .key("leaseKey", s(&key))
                .send()
        };
        (retry_passing(client, "DynamoDB DeleteItem", delete).await)
            .map(|_| ())
            .map_err(|f| self.failed("DeleteItem", f))
    }

    /// Removes a dead member's heartbeat, unless it beat since `beat` was read.
    pub async fn forget_member(&self, client: &KinesisClient, id: &str, beat: u64) -> Result<()> {
        let key = format!("{MEMBER_PREFIX}{id}");
        let delete = || {
            (self.dynamo.delete_item().table_name(&self.name))
                .key("leaseKey", s(&key))
                .condition_expression("weirHeartbeat = :beat")
                .expression_attribute_values(":beat", n(beat))
                .send()
        };
        self.conditional("DeleteItem", client, delete)
            .await
            .map(|_| ())
    }

    /// Runs a conditional write: whether its condition held.
    async fn conditional<T, E, F, Fut>(
        &self,
        what: &str,
        client: &KinesisClient,
        call: F,
    ) -> Result<bool>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = std::result::Result<T, SdkError<E, HttpResponse>>>,
        E: ProvideErrorMetadata + std::error::Error + 'static,
    {
        let attempt = || async {
            match call().await {
                Ok(_) => Ok(true),
                Err(e) if e.code() == Some("ConditionalCheckFailedException") => Ok(false),
                Err(e) => Err(e),
            }
        };
        (retry_passing(client, &format!("DynamoDB {what}"), attempt).await)
            .map_err(|f| self.failed(what, f))
    }
}

/// What in `items` says the table is not weir's: a KCL 3.x item, or a KCL lease.
fn foreign(items: &[HashMap<String, AttributeValue>]) -> Option<String> {
    let kcl3 = items
        .iter()
        .find_map(|i| text(i, "entityType").filter(|t| t != LEASE && !t.starts_with("WEIR_")));
    if let Some(kind) = kcl3 {
        return Some(format!("KCL 3.x items (entityType {kind})"));
    }
    (items.iter()).find(|i| is_lease(i)).map(|i| {
        format!(
            "KCL leases (leaseKey '{}')",
            text(i, "leaseKey").unwrap_or_default()
        )
    })
}

/// Whether an item is a shard's lease: KCL's, or weir's own, with no other entity type.
fn is_lease(i: &HashMap<String, AttributeValue>) -> bool {
    text(i, "leaseKey").is_some_and(|k| k != TABLE_MARK && !k.starts_with(MEMBER_PREFIX))
        && text(i, "entityType").is_none_or(|t| t == LEASE)
}

fn lease_of(i: &HashMap<String, AttributeValue>) -> Lease {
    let set = |name: &str| (i.get(name).and_then(|v| v.as_ss().ok()).cloned()).unwrap_or_default();
    let sub = i
        .get("checkpointSubSequenceNumber")
        .and_then(|v| v.as_n().ok())
        .and_then(|n| n.parse().ok());
    Lease {
        shard: text(i, "leaseKey").unwrap_or_default(),
        owner: text(i, "leaseOwner"),
        counter: number(i, "leaseCounter"),
        checkpoint: checkpoint_of(text(i, "checkpoint").as_deref(), sub),
        parents: set("parentShardId"),
        children: set("childShardIds"),
        hash_range: (
            text(i, "startingHashKey").unwrap_or_default(),
            text(i, "endingHashKey").unwrap_or_default(),
        ),
        owner_switches: number(i, "ownerSwitchesSinceCheckpoint"),
        state: text(i, "weirState"),
        read_to: (i.get("weirReadTo"))
            .and_then(|v| v.as_n().ok())
            .and_then(|v| v.parse().ok()),
    }
}

/// A lease as `weir lag` shows it.
#[derive(Debug, PartialEq)]
pub struct LagEntry {
    /// The stream a multi-stream application's lease names; none in a single-stream table.
    pub stream: Option<String>,
    pub shard: String,
    pub checkpoint: ShardCheckpoint,
    pub owner: Option<String>,
}

/// A lease's shard, checkpoint and owner for `weir lag`, from a KCL table (2.x, or 3.x with
/// its other entities skipped; a multi-stream application's key `account:stream:epoch:shard`)
/// or weir's (its mark and heartbeats skipped). During a KCL 3.x graceful handoff the owner
/// shown is `checkpointOwner`, the one still reading, handing to `leaseOwner`.
pub fn lag_entry(item: &HashMap<String, AttributeValue>) -> Option<LagEntry> {
    if !is_lease(item) {
        return None;
    }
    let key = text(item, "leaseKey")?;
    let parts: Vec<&str> = key.split(':').collect();
    let stream = match parts[..] {
        [_, stream, _, _] => Some(stream.to_string()),
        _ => None,
    };
    let shard = parts.last().copied().unwrap_or_default().to_string();
    let sub = (item.get("checkpointSubSequenceNumber"))
        .and_then(|v| v.as_n().ok())
        .and_then(|n| n.parse().ok());
    let checkpoint = checkpoint_of(text(item, "checkpoint").as_deref(), sub);
    let owner = match (text(item, "checkpointOwner"), text(item, "leaseOwner")) {
        (Some(from), Some(to)) if from != to => Some(format!("{from} (handing to {to})")),
        (from, to) => from.or(to),
    };
    Some(LagEntry {
        stream,
        shard,
        checkpoint,
        owner,
    })
}

/// The stream a weir table's mark says the table is for (tables marked before it was kept
/// say nothing).
pub fn marked_stream(item: &HashMap<String, AttributeValue>) -> Option<String> {
    (text(item, "leaseKey").as_deref() == Some(TABLE_MARK))
        .then(|| text(item, "weirStream"))
        .flatten()
}

/// A `checkpoint` attribute as KCL writes it: a sentinel or a sequence number.
pub fn checkpoint_of(text: Option<&str>, sub: Option<u64>) -> ShardCheckpoint {
    match text {
        None => ShardCheckpoint::None,
        Some("TRIM_HORIZON") => ShardCheckpoint::TrimHorizon,
        Some("LATEST") => ShardCheckpoint::Latest,
        Some("SHARD_END") => ShardCheckpoint::ShardEnd,
        Some(seq) if !seq.is_empty() && seq.bytes().all(|b| b.is_ascii_digit()) => {
            ShardCheckpoint::At {
                sequence: seq.to_string(),
                subsequence: sub,
            }
        }
        Some(_) => ShardCheckpoint::None,
    }
}

fn checkpoint_text(c: &ShardCheckpoint) -> String {
    match c {
        ShardCheckpoint::At { sequence, .. } => sequence.clone(),
        ShardCheckpoint::Latest => "LATEST".into(),
        ShardCheckpoint::ShardEnd => "SHARD_END".into(),
        // A time or no position: read from the oldest record kept.
        _ => "TRIM_HORIZON".into(),
    }
}

fn text(i: &HashMap<String, AttributeValue>, name: &str) -> Option<String> {
    i.get(name).and_then(|v| v.as_s().ok()).cloned()
}

fn number(i: &HashMap<String, AttributeValue>, name: &str) -> u64 {
    (i.get(name)
        .and_then(|v| v.as_n().ok())
        .and_then(|n| n.parse().ok()))
    .unwrap_or(0)
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_string())
}

fn n(v: u64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn item(fields: &[(&str, AttributeValue)]) -> HashMap<String, AttributeValue> {
    fields
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    //! Against dynalite (`scripts/kinesis-servers.sh`, `WEIR_TEST_DYNAMODB`): a real server's
    //! conditional writes, which a mock of our own could not vouch for.

    use std::sync::Arc;

    use super::*;
    use crate::io::kinesis::client::testing;

    struct Server {
        runtime: tokio::runtime::Runtime,
        dynamo: Client,
        client: KinesisClient,
    }

    fn server() -> Option<Server> {
        let endpoint = testing::endpoint("WEIR_TEST_DYNAMODB")?;
        let (config, client) = testing::aws(&endpoint);
        Some(Server {
            runtime: crate::io::kinesis::client::runtime().unwrap(),
            dynamo: Client::new(&config),
            client,
        })
    }

    #[test]
    fn lag_reads_leases_and_skips_what_is_not_one() {
        let i = |fields: &[(&str, &str)]| -> HashMap<String, AttributeValue> {
            fields.iter().map(|(k, v)| (k.to_string(), s(v))).collect()
        };
        let at = |seq: &str| ShardCheckpoint::At {
            sequence: seq.into(),
            subsequence: None,
        };
        let plain = i(&[
            ("leaseKey", "shardId-1"),
            ("checkpoint", "42"),
            ("leaseOwner", "w1"),
        ]);
        let entry = LagEntry {
            stream: None,
            shard: "shardId-1".into(),
            checkpoint: at("42"),
            owner: Some("w1".into()),
        };
        assert_eq!(lag_entry(&plain), Some(entry));
        // KCL 3.x: a handoff in progress, a multi-stream key, its other entities.
        let handoff = i(&[
            ("leaseKey", "123:orders:1:shardId-2"),
            ("entityType", "LEASE"),
            ("checkpoint", "SHARD_END"),
            ("leaseOwner", "w2"),
            ("checkpointOwner", "w1"),
        ]);
        let e = lag_entry(&handoff).unwrap();
        assert_eq!(
            (e.stream.as_deref(), e.shard.as_str(), e.checkpoint),
            (Some("orders"), "shardId-2", ShardCheckpoint::ShardEnd)
        );
        assert_eq!(e.owner.as_deref(), Some("w1 (handing to w2)"));
        for other in [
            i(&[("leaseKey", "w1"), ("entityType", "WORKER_METRIC_STATS")]),
            i(&[("leaseKey", TABLE_MARK), ("entityType", "WEIR_TABLE")]),
            i(&[
                ("leaseKey", "weir-member:m1"),
                ("entityType", "WEIR_MEMBER"),
            ]),
        ] {
            assert_eq!(lag_entry(&other), None, "{other:?}");
        }
    }

    fn app(name: &str) -> String {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{name}-{}-{n}", std::process::id())
    }

    fn new_lease(shard: &str) -> NewLease {
        NewLease {
            shard: shard.into(),
            parents: Vec::new(),
            hash_range: ("0".into(), "340282366920938463463374607431768211455".into()),
            start: ShardCheckpoint::TrimHorizon,
        }
    }

    /// One round: eight members read the lease, then all try to take it as read. The
    /// winners.
    async fn race(table: &Arc<LeaseTable>, client: &KinesisClient) -> Vec<(String, u64)> {
        let barrier = Arc::new(tokio::sync::Barrier::new(8));
        let tries: Vec<_> = (0..8)
            .map(|m| {
                let (table, client, barrier) = (table.clone(), client.clone(), barrier.clone());
                tokio::spawn(async move {
                    let me = format!("member-{m}");
                    let read = table.scan(&client).await.unwrap().leases.remove(0);
                    barrier.wait().await;
                    (me.clone(), table.take(&client, &read, &me).await.unwrap())
                })
            })
            .collect();
        let mut winners = Vec::new();
        for t in tries {
            if let (me, Some(counter)) = t.await.unwrap() {
                winners.push((me, counter));
            }
        }
        winners
    }

    #[test]
    fn eight_members_racing_for_a_lease_never_both_win_and_a_stale_owner_is_fenced() {
        let Some(s) = server() else { return };
        let (dynamo, client) = (s.dynamo.clone(), s.client.clone());
        s.runtime.block_on(async move {
            let table = Arc::new(
                LeaseTable::open(&app("race"), dynamo, &client)
                    .await
                    .unwrap(),
            );
            table
                .ensure(&client, &new_lease("shardId-0"))
                .await
                .unwrap();
            let stale_commit = Commit {
                checkpoint: &ShardCheckpoint::At {
                    sequence: "42".into(),
                    subsequence: None,
                },
                state: Some("s3://x/stale"),
                read_to: None,
                hand_to: None,
            };
            let mut last_winner: Option<(String, u64)> = None;
            for round in 0..100u64 {
                let mut winners = race(&table, &client).await;
                assert_eq!(winners.len(), 1, "round {round}: {winners:?}");
                assert_eq!(winners[0].1, round + 1, "one counter each, in order");
                // The owner before this round still holds its old counter: fenced.
                if let Some((stale, counter)) = last_winner.take() {
                    let at = ("shardId-0", counter);
                    let fenced = table
                        .commit(&client, at, &stale, &stale_commit)
                        .await
                        .unwrap();
                    assert_eq!(fenced, None, "round {round}: {stale}'s commit must fail");
                }
                last_winner = Some(winners.remove(0));
            }
            let lease = table.scan(&client).await.unwrap().leases.remove(0);
            let (owner, counter) = last_winner.unwrap();
            assert_eq!(
                (lease.owner.as_deref(), lease.counter),
                (Some(owner.as_str()), 100)
            );
            assert_eq!(
                lease.checkpoint,
                ShardCheckpoint::TrimHorizon,
                "no stale commit landed"
            );
            assert_eq!(lease.owner_switches, 100);
            hand_over(&table, &client, (&owner, counter)).await;
        });
    }

    /// The owner's commit lands, and a handoff moves checkpoint, state and owner at once.
    async fn hand_over(table: &LeaseTable, client: &KinesisClient, (owner, counter): (&str, u64)) {
        let at = ShardCheckpoint::At {
            sequence: "49590338271490256608559692538361571095921575989136588898".into(),
            subsequence: Some(3),
        };
        let commit = Commit {
            checkpoint: &at,
            state: Some("s3://b/p/1"),
            read_to: None,
            hand_to: Some("member-9"),
        };
        let next = table
            .commit(client, ("shardId-0", counter), owner, &commit)
            .await
            .unwrap();
        assert_eq!(next, Some(counter + 1));
        let lease = table.scan(client).await.unwrap().leases.remove(0);
        assert_eq!(lease.owner.as_deref(), Some("member-9"));
        assert_eq!(
            (
                lease.checkpoint,
                lease.state.as_deref(),
                lease.owner_switches
            ),
            (at, Some("s3://b/p/1"), 1)
        );
    }

    #[test]
    fn a_kcl_table_is_refused_and_a_weir_table_reopens() {
        let Some(server) = server() else { return };
        let (dynamo, client) = (server.dynamo.clone(), server.client.clone());
        server.runtime.block_on(async move {
            let name = app("tables");
            let table = LeaseTable::open(&name, dynamo.clone(), &client)
                .await
                .unwrap();
            table
                .ensure(&client, &new_lease("shardId-1"))
                .await
                .unwrap();
            table.heartbeat(&client, "m1", 7).await.unwrap();
            // Open again (another member): the same table, its leases and members read back.
            let again = LeaseTable::open(&name, dynamo.clone(), &client)
                .await
                .unwrap();
            let scan = again.scan(&client).await.unwrap();
            assert_eq!(scan.leases.len(), 1);
            assert_eq!(scan.members, vec![("m1".to_string(), 7)]);
            again.leave(&client, "m1").await.unwrap();
            assert!(again.scan(&client).await.unwrap().members.is_empty());
            // A table of KCL's, as KCL 2 and 3.x leave them: refused, naming what it holds.
            for (kind, says) in [
                (None, "KCL leases"),
                (Some("WORKER_METRIC_STATS"), "KCL 3.x"),
            ] {
                let kcl = app("kcl");
                let created = LeaseTable {
                    dynamo: dynamo.clone(),
                    name: kcl.clone(),
                };
                created.create(&client).await.unwrap();
                let mut fields = vec![("leaseKey", s("shardId-0")), ("leaseCounter", n(3))];
                if let Some(kind) = kind {
                    fields.push(("entityType", AttributeValue::S(kind.into())));
                }
                dynamo
                    .put_item()
                    .table_name(&kcl)
                    .set_item(Some(item(&fields)))
                    .send()
                    .await
                    .unwrap();
                let refused = LeaseTable::open(&kcl, dynamo.clone(), &client)
                    .await
                    .err()
                    .unwrap();
                assert!(
                    matches!(&refused, Error::Usage(m) if m.contains(says)),
                    "{refused}"
                );
            }
        });
    }
}
