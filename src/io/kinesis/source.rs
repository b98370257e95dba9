//! The Kinesis source: every shard of a stream read concurrently, children only after their
//! parents (so a key's records stay in order across splits and merges), within the service's
//! limits, with KPL aggregates unpacked into their user records.
//!
//! Shards are read by tasks on the client's tokio runtime, which send what GetRecords returns
//! through a small bounded channel (backpressure) to the reader thread; there each record is
//! rendered as the command wants it and handed over in chunks, like a Kafka source's. The
//! responses held at once, asked for or waiting, share one byte budget (`RESPONSE_BUDGET`):
//! memory does not grow with the number of shards.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_kinesis::config::http::HttpResponse;
use aws_sdk_kinesis::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_kinesis::operation::get_records::{GetRecordsError, GetRecordsOutput};
use aws_sdk_kinesis::operation::subscribe_to_shard::SubscribeToShardOutput;
use aws_sdk_kinesis::primitives::DateTime;
use aws_sdk_kinesis::types::{
    ConsumerStatus, Record, ShardIteratorType, StartingPosition, SubscribeToShardEventStream,
};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

use super::client::{
    arrival_millis, classify, described, dynamo_client, jitter, not_reached_by_service, retrying,
    sdk_config, AwsOptions, Failure, KinesisClient,
};
use super::member::{Fresh, Handled, Leaving, Membership, SharedHandled};
use super::plan::{
    backoff, Lineage, ReadPlan, Reservation, ShardEnd, ShardInfo, StartAt, GET_RECORDS_EVERY_MS,
    RESPONSE_BUDGET,
};
use super::state_store::StateStore;
use crate::core::envelope::{write_shard_envelope, write_value_line, Render, ShardRecord};
use crate::core::kpl;
use crate::core::lag::ShardCheckpoint;
use crate::core::partitioned::shard_task;
use crate::core::record::RecordError;
use crate::core::time::{now_millis, Millis};
use crate::error::{Error, Result};
use crate::io::schema::{Decoders, Decoding};

use crate::runtime::metrics::{self, ClientLag};
use crate::runtime::{
    Feed, Framing, Giving, ShardPosition, ShardResume, ShardStart, Source, Starts,
};

/// How long a shard's reader waits before asking again once it has caught up.
const IDLE_WAIT: Duration = Duration::from_millis(500);
/// Responses in the channel to the reader thread (their bytes count against the budget).
const RESPONSES_IN_FLIGHT: usize = 4;
/// How long a member may take to commit and hand its shards over as it leaves.
const LEAVE_WITHIN: Duration = Duration::from_secs(15);

/// A stream being read.
pub struct KinesisSource {
    runtime: tokio::runtime::Runtime,
    client: KinesisClient,
    plan: ReadPlan,
    render: Render,
    /// The shards the stream listed at the start.
    listed: Vec<ShardInfo>,
    /// Where a checkpoint says each shard goes on.
    resume: BTreeMap<String, ShardResume>,
    /// When the read started (local time): -e reads what had arrived by then.
    started: Millis,
    /// Values in a schema's binary are decoded into JSON before they are rendered.
    decoding: Option<Decoding>,
    /// A member of an application (`-G`).
    member: Option<Membership>,
}

impl KinesisSource {
    /// Connects and lists the stream's shards; a stream that does not exist, or refused
    /// credentials, is exit 4 here, before any output is opened.
    pub fn open(
        runtime: tokio::runtime::Runtime,
        client: KinesisClient,
        plan: &ReadPlan,
        render: Render,
        resume: &BTreeMap<String, ShardResume>,
    ) -> Result<KinesisSource> {
        let started = now_millis();
        let all = runtime.block_on(list_shards(&client))?;
        // A shard the stream lacks is a mistake in the command line (exit 2), nothing opened.
        if let Some(missing) = (plan.shards.iter()).find(|id| !all.iter().any(|s| &s.id == *id)) {
            let ids: Vec<&str> = all.iter().map(|s| s.id.as_str()).take(8).collect();
            return Err(Error::Usage(format!(
                "stream '{}' has no shard '{missing}'; its shards: {}{}",
                client.stream.name,
                ids.join(", "),
                if all.len() > ids.len() { ", ..." } else { "" }
            )));
        }
        let listed = all
            .into_iter()
            .filter(|s| plan.shards.is_empty() || plan.shards.contains(&s.id))
            .collect::<Vec<_>>();
        // A member joins before any output is opened: a table that is not weir's is exit 2,
        // DynamoDB out of reach exit 4.
        let member = match &plan.group {
            Some(group) => Some(runtime.block_on(async {
                // --endpoint-url is Kinesis's: DynamoDB's comes from the AWS chain
                // (AWS_ENDPOINT_URL_DYNAMODB).
                let options = AwsOptions {
                    endpoint_url: None,
                    ..client.options.clone()
                };
                let dynamo = dynamo_client(&options, None).await;
                let store = match &group.states {
                    Some(states) => Some(StateStore::open(
                        &states.store,
                        &sdk_config(&options).await,
                    )?),
                    None => None,
                };
                let ends_at = plan.exit_at_end.then_some(started);
                Membership::join(group, (&plan.from, ends_at), &client, dynamo, store).await
            })?),
            None => None,
        };
        Ok(KinesisSource {
            runtime,
            client,
            plan: plan.clone(),
            render,
            listed,
            resume: resume.clone(),
            started,
            decoding: None,
            member,
        })
    }

    /// Decodes values with these before rendering them.
    pub fn decode_with(&mut self, decoders: Decoders) {
        self.decoding = Some(Decoding::new(decoders));
    }

    /// The lineage at the start: every shard listed, those a checkpoint finished marked so,
    /// and, for a read from the end, those closed before it skipped.
    fn lineage(&self) -> Lineage {
        let mut lineage = Lineage::default();
        for shard in &self.listed {
            lineage.add(shard.clone());
        }
        for shard in &self.listed {
            match self.resume.get(&shard.id) {
                Some(ShardResume::Done) => lineage.finish(&shard.id),
                Some(ShardResume::After { .. } | ShardResume::From { .. }) => {}
                None if shard.closed && self.plan.from == StartAt::End => lineage.skip(&shard.id),
                None => {}
            }
        }
        lineage
    }
}

/// Every shard of the stream, page by page.
pub async fn list_shards(client: &KinesisClient) -> Result<Vec<ShardInfo>> {
    let mut shards = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut call = client.sdk.list_shards().max_results(1000);
        call = match &token {
            Some(t) => call.next_token(t),
            None => match &client.stream.arn {
                Some(arn) => call.stream_arn(arn),
                None => call.stream_name(&client.stream.name),
            },
        };
        let out = retrying(client, "ListShards", || call.clone().send()).await?;
        for s in out.shards() {
            shards.push(ShardInfo {
                id: s.shard_id().to_string(),
                parents: s
                    .parent_shard_id()
                    .into_iter()
                    .chain(s.adjacent_parent_shard_id())
                    .map(String::from)
                    .collect(),
                closed: s
                    .sequence_number_range()
                    .is_some_and(|r| r.ending_sequence_number().is_some()),
                hash_range: s
                    .hash_key_range()
                    .map(|r| (r.starting_hash_key().into(), r.ending_hash_key().into()))
                    .unwrap_or_default(),
                first_sequence: (s.sequence_number_range())
                    .map(|r| r.starting_sequence_number().to_string())
                    .unwrap_or_default(),
            });
        }
        match out.next_token() {
            Some(t) => token = Some(t.to_string()),
            None => return Ok(shards),
        }
    }
}

/// What the shard readers tell the reader thread.
enum Event {
    /// Records of one shard, as a GetRecords call returned them (cut at the read's end).
    Records {
        shard: Arc<str>,
        records: Vec<Record>,
        /// Their share of the response budget, given back once they are rendered.
        _held: OwnedSemaphorePermit,
        /// A member's: the shard's stop flag and whether its leases still hold.
        lease: Option<(Arc<AtomicBool>, Arc<Fresh>)>,
    },
    /// The shards read from now on.
    Reading(Vec<String>),
    /// A shard was read to its end; all of its records were sent before this.
    Ended(Arc<str>),
    /// A shard's reading begins at the records arriving from this time (ms) on.
    Started(Arc<str>, Millis),
    Failed(Error),
    /// Every shard is finished (a bounded read, or only closed shards).
    Done,
    /// A member with -e read a shard to the run's end: its task has all its input.
    ReadToEnd(Arc<str>),
    /// A member stopped reading a shard; all of its records read were sent before this. Its
    /// state is saved for the next owner (`save`), or dropped (another member took it).
    Released {
        shard: String,
        save: bool,
    },
    /// A member that keeps state per shard reads `shard` from now on, going on from the
    /// state its last owner saved.
    Own {
        shard: Arc<str>,
        start: Option<ShardStart>,
    },
    /// A member starts a shard at a lease's checkpoint: the records up to it are done.
    SkipTo {
        shard: String,
        sequence: String,
        subsequence: u64,
    },
}

/// What a shard's reader tells the coordinator when it stops.
enum Stopped {
    /// The shard is closed and read to its end; its children, if the response named them.
    Closed {
        shard: String,
        children: Vec<ShardInfo>,
    },
    /// A bounded read reached its end in this shard (not closed).
    AtEnd {
        shard: String,
    },
    Failed(Error),
}

/// Where one shard's reading starts.
#[derive(Clone, Debug)]
enum Start {
    TrimHorizon,
    Latest,
    At(String),
    After(String),
    Time(Millis),
}

impl Source for KinesisSource {
    fn read(mut self: Box<Self>, feed: &mut Feed) -> Result<()> {
        let (tx, mut rx) = mpsc::channel(RESPONSES_IN_FLIGHT);
        let cancel = Arc::new(AtomicBool::new(false));
        let skips: HashMap<String, (String, u64)> = self
            .resume
            .iter()
            .filter_map(|(shard, r)| match r {
                ShardResume::After {
                    sequence,
                    subsequence: Some(sub),
                } => Some((shard.clone(), (sequence.clone(), *sub))),
                _ => None,
            })
            .collect();
        let handled = self.member.as_ref().map(|m| m.handled.clone());
        let coordinator = Coordinator {
            member: self.member.take(),
            lineage: self.lineage(),
            client: self.client.clone(),
            plan: self.plan.clone(),
            resume: self.resume.clone(),
            end: ShardEnd::new(&self.plan, self.started),
            out: tx,
            cancel: cancel.clone(),
            budget: Arc::new(Semaphore::new(RESPONSE_BUDGET / 1024)),
        };
        let task = self.runtime.spawn(coordinator.run());
        let mut renderer = Renderer {
            stream: Arc::from(self.plan.stream.as_str()),
            render: self.render,
            decoding: self.decoding.take(),
            skips,
            pending: Framing::new(feed),
            handled,
            owned: HashMap::new(),
            started: HashSet::new(),
        };
        let mut result = renderer.take_events(feed, &self.runtime, &mut rx);
        // A member commits what was handled and hands its shards over as it leaves.
        let left = match renderer.handled.is_some() {
            true => {
                feed.wait_handled(|_, _| {});
                renderer.take_handled(feed);
                renderer.give_up_all(feed);
                cancel.store(true, Ordering::Relaxed);
                drop(rx);
                let wait = async { tokio::time::timeout(LEAVE_WITHIN, task).await };
                match self.runtime.block_on(wait) {
                    Ok(Ok(left)) => left,
                    Ok(Err(_)) => Ok(()),
                    Err(_) => Err(Error::Unreachable(format!(
                        "the member did not leave its application within {LEAVE_WITHIN:?}: the others take its shards after the lease time"
                    ))),
                }
            }
            false => {
                cancel.store(true, Ordering::Relaxed);
                task.abort();
                Ok(())
            }
        };
        result = result.and(left);
        // Said now: the shard tasks' clones of the client may outlive the read.
        self.client.say_retries();
        // The shard readers may be in the middle of calls: leave them, do not wait.
        self.runtime.shutdown_background();
        result
    }

    fn join_at_end(&self) -> bool {
        true
    }
}

/// The reader thread's side: renders records and hands them over.
struct Renderer {
    stream: Arc<str>,
    render: Render,
    /// Values in a schema's binary are decoded into JSON before they are rendered.
    decoding: Option<Decoding>,
    /// Per shard, a KPL aggregate a checkpoint stopped inside: its sequence number and the
    /// last subsequence handled, whose user records are skipped when it comes again.
    skips: HashMap<String, (String, u64)>,
    pending: Framing<ShardPosition>,
    /// A member's: where the records handled stand in each shard, for its commits.
    handled: Option<SharedHandled>,
    /// A member that keeps state per shard: the shards whose state the command holds, by
    /// task.
    owned: HashMap<Arc<str>, i32>,
    /// Every shard the read has started, for the envelope's `shards`.
    started: HashSet<Arc<str>>,
}

impl Renderer {
    /// Takes in what the command reports handled; a member keeps the last of each shard.
    fn take_handled(&self, feed: &mut Feed) {
        feed.handled(|_, _| {});
        let positions = feed.take_shards_handled();
        let states = feed.take_saved_shards();
        if let Some(shared) = &self.handled {
            Handled::positions(shared, positions);
            Handled::states(shared, states);
        }
    }

    /// The shards read from now on, said before any of their records.
    fn reading(&mut self, feed: &mut Feed, shards: Vec<String>) -> Result<()> {
        self.pending.hand_over(feed, &self.stream)?;
        (self.started).extend(shards.iter().map(|s| Arc::from(s.as_str())));
        let names = shards
            .iter()
            .map(|s| serde_json::to_string(s).expect("a string serialises"))
            .collect();
        feed.assigned(names)
    }

    /// A member with -e read `shard` to the run's end: its last output goes out while the
    /// member owns it (as a Kafka partition's at -e); what is saved for a next owner is the
    /// state before it.
    fn read_to_end(&mut self, feed: &mut Feed, shard: &str) -> Result<()> {
        self.pending.hand_over(feed, &self.stream)?;
        match self.owned.get(shard) {
            Some(task) => feed.partition_ended(*task),
            None => Ok(()),
        }
    }

    /// A member's shard stopped (handed on, lost or ended): once every record of it handed
    /// over is handled, and the command gave up its state (saved, with `save`), the member
    /// may write its last checkpoint.
    fn released(&mut self, feed: &mut Feed, shard: &str, save: bool) -> Result<()> {
        self.pending.hand_over(feed, &self.stream)?;
        feed.wait_handled(|_, _| {});
        self.take_handled(feed);
        let giving = if save { Giving::Save } else { Giving::Drop };
        self.give_up(feed, shard, giving);
        if let Some(shared) = &self.handled {
            let mut handled = shared.lock().expect("not poisoned");
            handled.drained.insert(shard.to_string());
        }
        Ok(())
    }

    /// Has the command give up `shard`'s state, if it holds one: saved for the member's last
    /// commit of the shard (`save`), or dropped.
    fn give_up(&mut self, feed: &mut Feed, shard: &str, giving: Giving) {
        let Some(task) = self.owned.remove(shard) else {
            return;
        };
        let state = feed.revoke_shard(task, giving).flatten();
        // Every state saved before the answer is in the channel: taken first, so the last
        // state stays the latest.
        self.take_handled(feed);
        if let (Some(shared), Some(state)) = (&self.handled, state) {
            Handled::states(shared, vec![state]);
        }
    }

    /// A member that leaves has the command give up every shard's state, saved for the
    /// member's last commits and kept for the run's last output (a profile's report).
    fn give_up_all(&mut self, feed: &mut Feed) {
        let shards: Vec<Arc<str>> = self.owned.keys().cloned().collect();
        for shard in shards {
            self.give_up(feed, &shard, Giving::SaveAndKeep);
        }
    }

    fn take_events(
        &mut self,
        feed: &mut Feed,
        runtime: &tokio::runtime::Runtime,
        rx: &mut mpsc::Receiver<Event>,
    ) -> Result<()> {
        loop {
            if feed.cancelled() {
                return Ok(());
            }
            self.take_handled(feed);
            // Take what is ready; when nothing is, hand over what we have so that records
            // flow promptly, then wait a little (and look at the feed again).
            let event = match rx.try_recv() {
                Ok(event) => event,
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    return self.pending.hand_over(feed, &self.stream)
                }
                Err(mpsc::error::TryRecvError::Empty) => {
                    self.pending.hand_over(feed, &self.stream)?;
                    match runtime.block_on(async {
                        tokio::time::timeout(Duration::from_millis(100), rx.recv()).await
                    }) {
                        Ok(Some(event)) => event,
                        Ok(None) => return Ok(()),
                        Err(_) => continue,
                    }
                }
            };
            match event {
                Event::Records {
                    shard,
                    records,
                    lease,
                    ..
                } => {
                    if lease.is_none_or(|(stop, fresh)| still_held(feed, &stop, &fresh)) {
                        self.render_all(feed, &shard, records)?;
                    }
                }
                Event::Reading(shards) => self.reading(feed, shards)?,
                Event::Ended(shard) => {
                    self.pending.hand_over(feed, &self.stream)?;
                    feed.shard_ended(shard)?;
                }
                Event::Started(shard, arrival) => {
                    self.pending.hand_over(feed, &self.stream)?;
                    feed.starts(Starts::Shard(shard, arrival))?;
                }
                Event::Released { shard, save } => self.released(feed, &shard, save)?,
                Event::ReadToEnd(shard) => self.read_to_end(feed, &shard)?,
                Event::Own { shard, start } => {
                    self.pending.hand_over(feed, &self.stream)?;
                    let task = shard_task(&shard);
                    self.owned.insert(shard.clone(), task);
                    feed.own_shard(shard, task, start)?;
                }
                Event::SkipTo {
                    shard,
                    sequence,
                    subsequence,
                } => {
                    self.skips.insert(shard, (sequence, subsequence));
                }
                Event::Failed(e) => {
                    self.pending.hand_over(feed, &self.stream)?;
                    return Err(e);
                }
                Event::Done => return self.pending.hand_over(feed, &self.stream),
            }
        }
    }

    /// Renders a response's records, handing chunks over as they fill.
    fn render_all(
        &mut self,
        feed: &mut Feed,
        shard: &Arc<str>,
        records: Vec<Record>,
    ) -> Result<()> {
        let task = shard_task(shard);
        for record in records {
            if let Err(e) = self.add(shard, task, record) {
                // The records before the one that stopped the run go on.
                self.pending.hand_over(feed, &self.stream)?;
                return Err(e);
            }
            if self.pending.is_full() {
                self.pending.hand_over(feed, &self.stream)?;
            }
        }
        Ok(())
    }

    /// Renders one Kinesis record (or each user record of a KPL aggregate) into the chunk
    /// in the making.
    fn add(&mut self, shard: &Arc<str>, task: i32, record: Record) -> Result<()> {
        let sequence: Arc<str> = Arc::from(record.sequence_number);
        let arrival = record
            .approximate_arrival_timestamp
            .map(|t| arrival_millis(&t));
        let key = record.partition_key.unwrap_or_default();
        let data = record.data.into_inner();
        let p = &mut self.pending;
        p.input_bytes += (data.len() + key.len()) as u64;
        let at = |subsequence| ShardPosition {
            shard: shard.clone(),
            sequence: sequence.clone(),
            subsequence,
            task,
        };
        let mut message = ShardRecord {
            stream: &self.stream,
            shard,
            shards: match self.render {
                Render::Piped => self.started.len() as u32,
                _ => 0,
            },
            sequence: &sequence,
            subsequence: None,
            arrival,
            key: &key,
            value: &data,
            decoded: None,
        };
        let decoding = &mut self.decoding;
        if !kpl::is_aggregated(&data) {
            // A lease checkpoint at a plain record (KCL writes subsequence 0) names it done.
            if (self.skips.get(shard.as_ref())).is_some_and(|(seq, _)| **seq == *sequence) {
                self.skips.remove(shard.as_ref());
                return Ok(());
            }
            return emit(&self.render, decoding.as_mut(), p, &message, at(None));
        }
        let unpacked = kpl::deaggregate(&data);
        let (aggregate, index) = match &unpacked {
            Ok(ok) => ok,
            Err(reason) => {
                // The record as it came, in the envelope, is the bad record.
                write_shard_envelope(&mut p.data, &message);
                let error = RecordError::BadValue {
                    path: "(KPL aggregate)".into(),
                    reason: reason.clone(),
                };
                p.push_bad(at(None), error);
                return Ok(());
            }
        };
        // Resuming inside this aggregate: its user records up to the checkpoint's are done.
        let done_below = match self.skips.get(shard.as_ref()) {
            Some((seq, sub)) if seq.as_str() == sequence.as_ref() => {
                let below = sub + 1;
                self.skips.remove(shard.as_ref());
                below
            }
            _ => 0,
        };
        for (i, user) in kpl::user_records(aggregate, index).enumerate() {
            let sub = i as u64;
            if sub < done_below {
                continue;
            }
            message.subsequence = Some(sub);
            message.key = user.key;
            message.value = user.data;
            emit(&self.render, decoding.as_mut(), p, &message, at(Some(sub)))?;
        }
        Ok(())
    }
}

/// Whether a member's records of a shard go on to the command: once its leases hold again
/// (the member stalled past the lease time: its next tick stops what it lost), unless the
/// shard has stopped meanwhile, whose records the next owner reads from its checkpoint.
fn still_held(feed: &Feed, stop: &AtomicBool, fresh: &Fresh) -> bool {
    while !fresh.holds() && !stop.load(Ordering::Relaxed) && !feed.cancelled() {
        std::thread::sleep(Duration::from_millis(20));
    }
    !stop.load(Ordering::Relaxed)
}

/// Renders one record into the chunk in the making, its value decoded first when there are
/// decoders; one that does not decode goes as it came, as a bad record.
fn emit(
    render: &Render,
    decoding: Option<&mut Decoding>,
    p: &mut Framing<ShardPosition>,
    message: &ShardRecord<'_>,
    at: ShardPosition,
) -> Result<()> {
    let Some(d) = decoding else {
        write(render, &mut p.data, message);
        p.push(at);
        return Ok(());
    };
    match d.value(message.value)? {
        Ok((json, id)) => {
            let decoded = ShardRecord {
                value: json,
                decoded: Some(id),
                ..message.clone()
            };
            write(render, &mut p.data, &decoded);
            p.push(at);
        }
        Err(reason) => {
            write(render, &mut p.data, message);
            let path = "value".to_string();
            p.push_bad(at, RecordError::BadValue { path, reason });
        }
    }
    Ok(())
}

/// Writes a record as the command wants it: its envelope, or its value or a kcat format
/// (`consume`).
fn write(render: &Render, out: &mut Vec<u8>, record: &ShardRecord<'_>) {
    match render {
        Render::Value if record.decoded.is_some() => out.extend_from_slice(record.value),
        Render::Value => write_value_line(out, Some(record.value)),
        Render::Envelope | Render::Piped => write_shard_envelope(out, record),
        Render::Format(format) => format.write(out, record),
    }
}

/// Starts shard readers in lineage order and follows the stream as shards close; a member
/// starts those the application's plan gives it.
struct Coordinator {
    member: Option<Membership>,
    lineage: Lineage,
    client: KinesisClient,
    plan: ReadPlan,
    resume: BTreeMap<String, ShardResume>,
    end: ShardEnd,
    out: mpsc::Sender<Event>,
    cancel: Arc<AtomicBool>,
    /// The response budget, in KiB.
    budget: Arc<Semaphore>,
}

impl Coordinator {
    /// Reads until the run ends; a member then leaves its application (what that says).
    async fn run(mut self) -> Result<()> {
        let efo = match &self.plan.efo {
            Some(name) => match efo_consumer(&self.client, name).await {
                Ok(arn) => Some(Arc::<str>::from(arn)),
                Err(e) => {
                    let _ = self.out.send(Event::Failed(e)).await;
                    return Ok(());
                }
            },
            None => None,
        };
        // Every step answers `None` once the reader thread has gone or the read failed.
        match self.member.take() {
            Some(mut member) => {
                if self.as_member(&mut member, efo).await == Some(true) {
                    // -e: every shard read to the run's end. The read ends, and the member
                    // leaves once the command has given up its states (the cancel flag).
                    let _ = self.out.send(Event::Done).await;
                    while !self.cancel.load(Ordering::Relaxed) {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
                member.leave(&self.client).await
            }
            None => {
                let _ = self.coordinate(efo).await;
                Ok(())
            }
        }
    }

    /// A member's read: every tick, the plan's changes; between ticks, shards that stop.
    /// Returns once the run is cancelled (or the reader thread is gone).
    /// `Some(true)` when, with -e, every shard of the application is read to the run's end.
    async fn as_member(&mut self, member: &mut Membership, efo: Option<Arc<str>>) -> Option<bool> {
        let (stopped_tx, mut stopped_rx) = mpsc::unbounded_channel();
        while !self.cancel.load(Ordering::Relaxed) {
            if let Err(e) = self.member_tick(member, &stopped_tx, &efo).await {
                let _ = self.out.send(Event::Failed(e)).await;
                return None;
            }
            if member.all_read_to_end() {
                return Some(true);
            }
            let tick = tokio::time::sleep(member.tick);
            tokio::pin!(tick);
            loop {
                tokio::select! {
                    stopped = stopped_rx.recv() => self.member_stopped(member, stopped?).await?,
                    _ = &mut tick => break,
                }
            }
        }
        for held in member.held.values() {
            held.stop.store(true, Ordering::Relaxed);
        }
        Some(false)
    }

    /// Lists the shards when due (their leases added), runs the member's tick, and starts
    /// reading the shards it takes, each from its lease's checkpoint.
    async fn member_tick(
        &mut self,
        member: &mut Membership,
        stopped: &mpsc::UnboundedSender<Stopped>,
        efo: &Option<Arc<str>>,
    ) -> Result<()> {
        if member.list_due() {
            let shards = list_shards(&self.client).await?;
            member.add_shards(&self.client, &shards).await?;
        }
        for lease in member.tick(&self.client).await? {
            let shard: Arc<str> = Arc::from(lease.shard.as_str());
            if member.states.is_some() {
                let start = member.start_of(&self.client, &lease).await?;
                let own = Event::Own {
                    shard: shard.clone(),
                    start,
                };
                self.out.send(own).await.map_err(|_| Error::Interrupted)?;
            }
            let start = match &lease.checkpoint {
                ShardCheckpoint::At {
                    sequence,
                    subsequence,
                } => {
                    let skip = Event::SkipTo {
                        shard: lease.shard.clone(),
                        sequence: sequence.clone(),
                        subsequence: subsequence.unwrap_or(0),
                    };
                    self.out.send(skip).await.map_err(|_| Error::Interrupted)?;
                    Start::At(sequence.clone())
                }
                ShardCheckpoint::Latest => Start::Latest,
                ShardCheckpoint::AtTimestamp(t) => Start::Time(*t),
                _ => Start::TrimHorizon,
            };
            let reader = ShardReader {
                client: self.client.clone(),
                efo: efo.clone(),
                shard,
                start,
                end: self.end,
                out: self.out.clone(),
                cancel: member.held[&lease.shard].stop.clone(),
                fresh: Some(member.fresh.clone()),
                budget: self.budget.clone(),
            };
            let stopped = stopped.clone();
            tokio::spawn(async move {
                let _ = stopped.send(reader.run().await);
            });
        }
        Ok(())
    }

    /// A member's shard reader stopped: asked to (handed on or lost), or at the shard's end,
    /// whose children get leases. Either way the reader thread is told, after the shard's
    /// last records, so that the member commits only once they are handled.
    async fn member_stopped(&mut self, member: &mut Membership, stopped: Stopped) -> Option<()> {
        let shard = match stopped {
            Stopped::Closed { shard, children } => {
                let ended = Event::Ended(Arc::from(shard.as_str()));
                self.out.send(ended).await.ok()?;
                if let Some(held) = member.held.get_mut(&shard) {
                    held.leaving = Some(Leaving::Ended);
                }
                let children = match self.children_of(&shard, children).await {
                    Ok(children) => member.add_shards(&self.client, &children).await,
                    Err(e) => Err(e),
                };
                if let Err(e) = children {
                    let _ = self.out.send(Event::Failed(e)).await;
                    return None;
                }
                shard
            }
            Stopped::AtEnd { shard } => {
                // Stopped as asked (handed on, lost, the run over), or, with -e, read to the
                // records that arrived before the member's start.
                let cancelled = self.cancel.load(Ordering::Relaxed);
                let held = member.held.get_mut(&shard);
                if let Some(held) = held.filter(|h| h.leaving.is_none() && !cancelled) {
                    if member.ends_at.is_some() {
                        held.leaving = Some(Leaving::ReadTo);
                        let ended = Event::ReadToEnd(Arc::from(shard.as_str()));
                        self.out.send(ended).await.ok()?;
                    }
                }
                shard
            }
            Stopped::Failed(e) => {
                let _ = self.out.send(Event::Failed(e)).await;
                return None;
            }
        };
        // A lost shard's state is dropped; any other's is saved for its next owner.
        let lost = member.held.get(&shard).map(|h| &h.leaving) == Some(&Some(Leaving::Lost));
        let released = Event::Released { shard, save: !lost };
        self.out.send(released).await.ok()
    }

    /// Starts the shards that are ready, and waits for one to stop, until all have finished.
    async fn coordinate(&mut self, efo: Option<Arc<str>>) -> Option<()> {
        let (stopped_tx, mut stopped_rx) = mpsc::unbounded_channel();
        let mut reported = None;
        loop {
            let ready = self.lineage.start_ready();
            // The shards read change as they start and stop: said before any new one's
            // records come.
            let reading = self.lineage.reading();
            if reported.as_ref() != Some(&reading) {
                self.out.send(Event::Reading(reading.clone())).await.ok()?;
                reported = Some(reading);
            }
            for id in ready {
                let reader = self.shard_reader(&id, efo.clone()).await?;
                let stopped = stopped_tx.clone();
                tokio::spawn(async move {
                    let _ = stopped.send(reader.run().await);
                });
            }
            if self.lineage.all_finished() {
                let _ = self.out.send(Event::Done).await;
                return Some(());
            }
            self.stopped(stopped_rx.recv().await?).await?;
        }
    }

    /// The reader of shard `id`, from where it starts. A start a restart would not find again
    /// from the flags is said first, for the checkpoint: `end` as the time it began, a
    /// relative time fixed.
    async fn shard_reader(&self, id: &str, efo: Option<Arc<str>>) -> Option<ShardReader> {
        let shard: Arc<str> = Arc::from(id);
        let start = self.start_of(id);
        let fixed = match &start {
            Start::Latest => Some(now_millis()),
            Start::Time(t) => Some(*t),
            _ => None,
        };
        if let Some(arrival) = fixed {
            let started = Event::Started(shard.clone(), arrival);
            self.out.send(started).await.ok()?;
        }
        Some(ShardReader {
            fresh: None,
            client: self.client.clone(),
            efo,
            shard,
            start,
            end: self.end,
            out: self.out.clone(),
            cancel: self.cancel.clone(),
            budget: self.budget.clone(),
        })
    }

    /// A shard's reader stopped: a closed shard ends and its children follow.
    async fn stopped(&mut self, stopped: Stopped) -> Option<()> {
        match stopped {
            Stopped::Closed { shard, children } => {
                self.lineage.finish(&shard);
                let ended = Event::Ended(Arc::from(shard.as_str()));
                self.out.send(ended).await.ok()?;
                if let Err(e) = self.follow(&shard, children).await {
                    let _ = self.out.send(Event::Failed(e)).await;
                    return None;
                }
            }
            Stopped::AtEnd { shard } => self.lineage.finish(&shard),
            Stopped::Failed(e) => {
                let _ = self.out.send(Event::Failed(e)).await;
                return None;
            }
        }
        Some(())
    }

    /// Adds the children of a closed shard: those its last response named, or, when it
    /// named none, those the stream now lists with it as a parent. A bounded read, and a
    /// read of given shards, reads only the shards it started with.
    async fn follow(&mut self, shard: &str, children: Vec<ShardInfo>) -> Result<()> {
        if self.plan.exit_at_end || !self.plan.shards.is_empty() {
            return Ok(());
        }
        for child in self.children_of(shard, children).await? {
            self.lineage.add(child);
        }
        Ok(())
    }

    /// The children of a closed shard: those its last response named, or, when it named
    /// none, those the stream now lists with it as a parent.
    async fn children_of(&self, shard: &str, children: Vec<ShardInfo>) -> Result<Vec<ShardInfo>> {
        if !children.is_empty() {
            return Ok(children);
        }
        let listed = list_shards(&self.client).await?;
        Ok((listed.into_iter())
            .filter(|s| s.parents.iter().any(|p| p == shard))
            .collect())
    }

    /// Where shard `id` starts: after its checkpoint; at its beginning when a parent was
    /// read through; else where --from says.
    fn start_of(&self, id: &str) -> Start {
        match self.resume.get(id) {
            Some(ShardResume::After {
                sequence,
                subsequence: Some(_),
            }) => return Start::At(sequence.clone()),
            Some(ShardResume::After {
                sequence,
                subsequence: None,
            }) => return Start::After(sequence.clone()),
            Some(ShardResume::From { arrival }) => return Start::Time(*arrival),
            Some(ShardResume::Done) | None => {}
        }
        if self.lineage.parents_read(id) {
            return Start::TrimHorizon;
        }
        match &self.plan.from {
            StartAt::Beginning => Start::TrimHorizon,
            StartAt::End => Start::Latest,
            StartAt::Sequence(s) => Start::At(s.clone()),
            StartAt::Time(t) => Start::Time(*t),
        }
    }
}

/// Reads one shard until it closes, the read ends, or the run is cancelled.
struct ShardReader {
    /// A member's: whether its leases are still surely its own.
    fresh: Option<Arc<Fresh>>,
    client: KinesisClient,
    /// The ARN of the enhanced fan-out consumer to read through, if any.
    efo: Option<Arc<str>>,
    shard: Arc<str>,
    start: Start,
    end: ShardEnd,
    out: mpsc::Sender<Event>,
    cancel: Arc<AtomicBool>,
    /// The response budget, in KiB, shared by every shard's reader.
    budget: Arc<Semaphore>,
}

/// Bytes in KiB, rounded up: the budget's unit.
fn kib(bytes: usize) -> u32 {
    bytes.div_ceil(1024).max(1) as u32
}

/// A response's size in memory, near enough: its records' data and keys, and their sequence
/// numbers and fields.
fn response_bytes(records: &[Record]) -> usize {
    records
        .iter()
        .map(|r| {
            r.data.as_ref().len()
                + r.partition_key.as_deref().map_or(0, str::len)
                + r.sequence_number.len()
                + std::mem::size_of::<Record>()
        })
        .sum()
}

impl ShardReader {
    async fn run(self) -> Stopped {
        let read = match &self.efo {
            Some(consumer) => self.subscribe(consumer).await,
            None => self.read().await,
        };
        match read {
            Ok(stopped) => stopped,
            Err(e) => Stopped::Failed(e),
        }
    }

    /// Reads the shard with enhanced fan-out: SubscribeToShard pushes its records for up to
    /// five minutes, then weir subscribes again from the continuation sequence number.
    async fn subscribe(&self, consumer: &str) -> Result<Stopped> {
        let mut from = self.start.clone();
        let mut failing = Failing::default();
        loop {
            if self.cancel.load(Ordering::Relaxed) {
                return Ok(self.at_end());
            }
            let failure = match self.subscription(consumer, &from).await? {
                Err(failure) => failure,
                Ok(events) => match self.events(events, &mut from, &mut failing).await {
                    Ok(stopped) => return Ok(stopped),
                    Err(failure) => failure,
                },
            };
            // A subscription that ran its course (five minutes) is made again at once.
            if !failure.is_empty() {
                let wait = self.retry_wait(&mut failing, "SubscribeToShard", &failure)?;
                tokio::time::sleep(wait).await;
            }
        }
    }

    /// Subscribes from `from`: the events, or why the call failed, to be tried again.
    async fn subscription(
        &self,
        consumer: &str,
        from: &Start,
    ) -> Result<std::result::Result<SubscribeToShardOutput, String>> {
        let (kind, sequence, time) = iterator_of(from);
        let position = StartingPosition::builder()
            .r#type(kind)
            .set_sequence_number(sequence)
            .set_timestamp(time)
            .build()
            .expect("the type is set");
        let call = self
            .client
            .sdk
            .subscribe_to_shard()
            .consumer_arn(consumer)
            .shard_id(self.shard.as_ref())
            .starting_position(position);
        let e = match call.send().await {
            Ok(out) => return Ok(Ok(out)),
            Err(e) => e,
        };
        match classify(&e) {
            Failure::Retry(why) => Ok(Err(why)),
            Failure::ExpiredIterator => Ok(Err("an expired subscription".into())),
            // Another subscription still holds the shard: one that just ended (the service
            // keeps it for some seconds, as after a restart) or another reader of this
            // consumer; the first kind passes, the second fails when --timeout runs out.
            Failure::Refused(why) if e.code() == Some("ResourceInUseException") => Ok(Err(why)),
            Failure::Refused(why) | Failure::Invalid(why) => Err(Error::Unreachable(format!(
                "Kinesis stream '{}' shard {}: SubscribeToShard: {why}",
                self.client.stream.name, self.shard
            ))),
        }
    }

    /// Takes a subscription's events until the shard stops (`Ok`) or the subscription ends:
    /// why (`Err`), empty when it ran its course. `from` follows the events.
    async fn events(
        &self,
        mut out: SubscribeToShardOutput,
        from: &mut Start,
        failing: &mut Failing,
    ) -> std::result::Result<Stopped, String> {
        loop {
            let event = match out.event_stream.recv().await {
                Ok(Some(SubscribeToShardEventStream::SubscribeToShardEvent(e))) => e,
                Ok(Some(_)) => continue,
                // The subscription ran its course (five minutes): again, from where it stood.
                Ok(None) => return Err(String::new()),
                Err(e) => return Err(described(&e)),
            };
            *failing = Failing::default();
            let mut records = event.records;
            let past = self.cut(&mut records);
            // Pushed, not asked for: its share is taken once it is here, and the next event is
            // not taken before.
            let held = self.reserve(response_bytes(&records)).await;
            if (!records.is_empty() && !self.send(records, held).await) || past {
                return Ok(self.at_end());
            }
            let continuation = event.continuation_sequence_number;
            if continuation.is_empty() {
                return Ok(Stopped::Closed {
                    shard: self.shard.to_string(),
                    children: children_of(event.child_shards),
                });
            }
            *from = Start::After(continuation);
            self.behind(Some(event.millis_behind_latest));
            if event.millis_behind_latest == 0 && self.end.at_tip(now_millis()) {
                return Ok(self.at_end());
            }
        }
    }

    /// How far behind the shard's tip the read is, as the service said (`--metrics`).
    fn behind(&self, ms: Option<i64>) {
        if let Some(ms) = ms.filter(|_| metrics::enabled()) {
            let lag = ClientLag {
                records: None,
                ms: Some(ms),
            };
            metrics::client_lag(&self.client.stream.name, &self.shard, lag);
        }
    }

    /// A bounded read reached its end here, or the run is over.
    fn at_end(&self) -> Stopped {
        Stopped::AtEnd {
            shard: self.shard.to_string(),
        }
    }

    /// Another failure of `op`, for `why`: how long to wait before trying again, or, once
    /// calls have failed for `--timeout`, the error.
    fn retry_wait(&self, failing: &mut Failing, op: &str, why: &str) -> Result<Duration> {
        let (since, attempt) = failing.0.get_or_insert((Instant::now(), 0));
        if since.elapsed() >= self.client.options.timeout {
            return Err(Error::Unreachable(format!(
                "Kinesis at {}: {op} on shard {} failed for {:?}: {why}",
                self.client.endpoint(),
                self.shard,
                self.client.options.timeout
            )));
        }
        self.client.retried(op, why);
        let wait = backoff(*attempt, jitter(*attempt as u64 ^ hash(&self.shard)));
        *attempt += 1;
        Ok(wait)
    }

    /// Cuts records at the read's end; whether one was past it.
    fn cut(&self, records: &mut Vec<Record>) -> bool {
        let past = records.iter().position(|r| {
            r.approximate_arrival_timestamp
                .map(|t| arrival_millis(&t))
                .is_some_and(|t| self.end.is_past(t))
        });
        if let Some(at) = past {
            records.truncate(at);
        }
        past.is_some()
    }

    /// Sends records to the reader thread, with their share of the budget; false when it is
    /// gone (the run is over).
    async fn send(&self, records: Vec<Record>, held: OwnedSemaphorePermit) -> bool {
        self.out
            .send(Event::Records {
                shard: self.shard.clone(),
                records,
                _held: held,
                // A member's records go on only while its leases hold (`still_held`).
                lease: (self.fresh.as_ref()).map(|f| (self.cancel.clone(), f.clone())),
            })
            .await
            .is_ok()
    }

    /// Takes `bytes` of the budget, waiting for records already read to be rendered.
    async fn reserve(&self, bytes: usize) -> OwnedSemaphorePermit {
        self.budget
            .clone()
            .acquire_many_owned(kib(bytes.min(RESPONSE_BUDGET)))
            .await
            .expect("the budget is never closed")
    }

    /// Fits what `held` reserved to a response of `bytes`: gives back what it does not use,
    /// and takes more only if it is free (waiting for it while holding some could deadlock
    /// readers that each hold part; the next reservation learns the size instead).
    fn fit(&self, held: &mut OwnedSemaphorePermit, bytes: usize) {
        let need = kib(bytes) as usize;
        let have = held.num_permits();
        if need < have {
            drop(held.split(have - need));
        } else if need > have {
            if let Ok(more) = self
                .budget
                .clone()
                .try_acquire_many_owned((need - have) as u32)
            {
                held.merge(more);
            }
        }
    }

    /// Reads the shard with GetRecords, at most five calls a second.
    async fn read(&self) -> Result<Stopped> {
        let mut at = Cursor {
            iterator: self.iterator(&self.start).await?,
            last: None,
            next_call: tokio::time::Instant::now(),
            failing: Failing::default(),
            reservation: Reservation::first(),
        };
        loop {
            if self.cancel.load(Ordering::Relaxed) {
                return Ok(self.at_end());
            }
            // The service takes five GetRecords calls a second per shard.
            tokio::time::sleep_until(at.next_call).await;
            let held = self.reserve(at.reservation.bytes).await;
            at.next_call =
                tokio::time::Instant::now() + Duration::from_millis(GET_RECORDS_EVERY_MS);
            let response = self
                .client
                .sdk
                .get_records()
                .shard_iterator(&at.iterator)
                .limit(at.reservation.limit)
                .send()
                .await;
            match response {
                Ok(out) => {
                    at.failing = Failing::default();
                    if let Some(stopped) = self.took(out, held, &mut at).await {
                        return Ok(stopped);
                    }
                }
                Err(e) => self.failed(&e, &mut at).await?,
            }
        }
    }

    /// GetRecords failed: an expired iterator is made again from the last record sent,
    /// what passes is tried again after a backoff, the rest ends the read.
    async fn failed(
        &self,
        e: &SdkError<GetRecordsError, HttpResponse>,
        at: &mut Cursor,
    ) -> Result<()> {
        match classify(e) {
            Failure::ExpiredIterator => {
                let from = match &at.last {
                    Some(seq) => Start::After(seq.clone()),
                    None => self.start.clone(),
                };
                at.iterator = self.iterator(&from).await?;
            }
            Failure::Retry(why) => {
                let wait = self.retry_wait(&mut at.failing, "GetRecords", &why)?;
                at.next_call = tokio::time::Instant::now() + wait;
            }
            Failure::Refused(why) | Failure::Invalid(why) => {
                return Err(Error::Unreachable(format!(
                    "Kinesis stream '{}' shard {}: GetRecords: {why}",
                    self.client.stream.name, self.shard
                )))
            }
        }
        Ok(())
    }

    /// A GetRecords response: its records go to the reader thread; the shard stops when it
    /// closed, when a bounded read passed its end, or when the run is over.
    async fn took(
        &self,
        out: GetRecordsOutput,
        mut held: OwnedSemaphorePermit,
        at: &mut Cursor,
    ) -> Option<Stopped> {
        let caught_up = out.records.is_empty() && out.millis_behind_latest.unwrap_or(0) == 0;
        self.behind(out.millis_behind_latest);
        let mut records = out.records;
        let bytes = response_bytes(&records);
        self.fit(&mut held, bytes);
        at.reservation = at.reservation.next(records.len(), bytes);
        // A bounded read keeps what arrived before its end; the first record past it ends
        // the shard.
        let past = self.cut(&mut records);
        if let Some(r) = records.last() {
            at.last = Some(r.sequence_number.clone());
        }
        // The reader thread gone: the run is over.
        if (!records.is_empty() && !self.send(records, held).await) || past {
            return Some(self.at_end());
        }
        let Some(next) = out.next_shard_iterator else {
            return Some(Stopped::Closed {
                shard: self.shard.to_string(),
                children: children_of(out.child_shards),
            });
        };
        at.iterator = next;
        if caught_up {
            if self.end.at_tip(now_millis()) {
                return Some(self.at_end());
            }
            at.next_call = tokio::time::Instant::now() + IDLE_WAIT;
        }
        None
    }

    /// A shard iterator for `start`.
    async fn iterator(&self, start: &Start) -> Result<String> {
        match self.iterator_at(start).await {
            // Nothing has arrived after the time yet, by the service's clock: read from the tip.
            Err(e) if matches!(start, Start::Time(t) if not_reached_by_service(&e, *t)) => {
                self.iterator_at(&Start::Latest).await
            }
            other => other,
        }
    }

    async fn iterator_at(&self, start: &Start) -> Result<String> {
        let (kind, sequence, time) = iterator_of(start);
        let stream = &self.client.stream;
        let call = self
            .client
            .sdk
            .get_shard_iterator()
            .set_stream_name(stream.arn.is_none().then(|| stream.name.clone()))
            .set_stream_arn(stream.arn.clone())
            .shard_id(self.shard.as_ref())
            .shard_iterator_type(kind)
            .set_starting_sequence_number(sequence)
            .set_timestamp(time);
        let out = retrying(&self.client, "GetShardIterator", || call.clone().send()).await?;
        out.shard_iterator.ok_or_else(|| {
            Error::Unreachable(format!("Kinesis gave no iterator for shard {}", self.shard))
        })
    }
}

/// Where a GetRecords read stands.
struct Cursor {
    iterator: String,
    /// The last record sent, for a new iterator when this one expires.
    last: Option<String>,
    next_call: tokio::time::Instant,
    failing: Failing,
    reservation: Reservation,
}

/// Calls of one kind failing in a row: since when, and how many.
#[derive(Default)]
struct Failing(Option<(Instant, u32)>);

fn hash(s: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(s.as_bytes())
}

/// The iterator type, sequence number and time that `start` asks for.
fn iterator_of(start: &Start) -> (ShardIteratorType, Option<String>, Option<DateTime>) {
    match start {
        Start::TrimHorizon => (ShardIteratorType::TrimHorizon, None, None),
        Start::Latest => (ShardIteratorType::Latest, None, None),
        Start::At(s) => (ShardIteratorType::AtSequenceNumber, Some(s.clone()), None),
        Start::After(s) => (
            ShardIteratorType::AfterSequenceNumber,
            Some(s.clone()),
            None,
        ),
        Start::Time(t) => (
            ShardIteratorType::AtTimestamp,
            None,
            Some(DateTime::from_millis(*t)),
        ),
    }
}

/// The children a closed shard's last response named.
fn children_of(children: Option<Vec<aws_sdk_kinesis::types::ChildShard>>) -> Vec<ShardInfo> {
    children
        .unwrap_or_default()
        .into_iter()
        .map(|c| ShardInfo {
            id: c.shard_id,
            parents: c.parent_shards,
            closed: false,
            hash_range: c
                .hash_key_range
                .map(|r| (r.starting_hash_key, r.ending_hash_key))
                .unwrap_or_default(),
            first_sequence: String::new(),
        })
        .collect()
}

/// The ARN of enhanced fan-out consumer `name` of the stream: registered when it does not
/// exist yet, and waited for until it is active.
async fn efo_consumer(client: &KinesisClient, name: &str) -> Result<String> {
    let stream = &client.stream;
    let summary = client
        .sdk
        .describe_stream_summary()
        .set_stream_name(stream.arn.is_none().then(|| stream.name.clone()))
        .set_stream_arn(stream.arn.clone());
    let summary = retrying(client, "DescribeStreamSummary", || summary.clone().send()).await?;
    let stream_arn = summary
        .stream_description_summary
        .map(|d| d.stream_arn)
        .unwrap_or_default();
    let describe = client
        .sdk
        .describe_stream_consumer()
        .stream_arn(&stream_arn)
        .consumer_name(name);
    let since = Instant::now();
    let mut registered = false;
    loop {
        match describe.clone().send().await {
            Ok(out) => {
                if let Some(c) = out.consumer_description {
                    if c.consumer_status == ConsumerStatus::Active {
                        return Ok(c.consumer_arn);
                    }
                }
            }
            Err(e)
                if !registered
                    && e.as_service_error()
                        .is_some_and(|s| s.is_resource_not_found_exception()) =>
            {
                let register = client
                    .sdk
                    .register_stream_consumer()
                    .stream_arn(&stream_arn)
                    .consumer_name(name);
                retrying(client, "RegisterStreamConsumer", || register.clone().send()).await?;
                registered = true;
                continue;
            }
            Err(e) => match classify(&e) {
                // A server without enhanced fan-out (kinesalite, some emulators).
                Failure::Refused(why) | Failure::Invalid(why)
                    if why.contains("UnknownOperation") =>
                {
                    return Err(Error::Unreachable(format!(
                        "Kinesis stream '{}': {} does not offer enhanced fan-out (DescribeStreamConsumer is unknown there): read without --efo",
                        stream.name,
                        client.endpoint()
                    )));
                }
                Failure::Refused(why) | Failure::Invalid(why) => {
                    return Err(Error::Unreachable(format!(
                        "Kinesis stream '{}': consumer '{name}': {why}",
                        stream.name
                    )));
                }
                Failure::Retry(why) => client.retried("DescribeStreamConsumer", &why),
                Failure::ExpiredIterator => {}
            },
        }
        if since.elapsed() >= client.options.timeout.max(Duration::from_secs(30)) {
            return Err(Error::Unreachable(format!(
                "Kinesis stream '{}': consumer '{name}' did not become active",
                stream.name
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
