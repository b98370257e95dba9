//! The reader thread: a `Source` runs there and hands its records over in chunks, checked as
//! the command's `Prepare` says, through a bounded channel that gives backpressure.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use super::checkpoint::{Giving, PartitionState, ShardStart, ShardState};
use super::chunk::{
    Chunk, ChunkData, LinePosition, Prepare, Prepared, Scratch, ShardPosition, CHUNK_BYTES,
};
use crate::core::record::{Extractor, RecordError};
use crate::core::shuffle::Marker;
use crate::core::time::{Millis, TimeFormat};
use crate::error::{panic_as_error, Error, Result};

/// Chunks in flight between the threads; bounds memory and gives backpressure.
const CHUNKS_IN_FLIGHT: usize = 4;

/// Where records come from. A source runs on the reader thread: it reads its input, puts its
/// records into chunks, and hands each over with `Feed::lines` (a line source: the records
/// are the lines) or a `Framing` (a broker source: it frames its records and gives each
/// its partition and offset). Returning ends the input; a partitioned source reports a
/// partition it has finished, or one that is new, by the positions of the records it hands
/// over. When it has nothing to hand over it hands over nothing: the driver sees an empty
/// channel and lets the command flush (idleness).
pub trait Source: Send + 'static {
    /// Reads until the input ends, the feed is cancelled or the reader of the chunks is gone
    /// (both are a normal end), or an error.
    fn read(self: Box<Self>, feed: &mut Feed) -> Result<()>;

    /// Whether the reader must be joined when the run ends (a broker source commits and
    /// closes its client; a file reader may be blocked on stdin and is left).
    fn join_at_end(&self) -> bool {
        false
    }
}

/// What the driver receives from the reader thread.
pub(crate) enum Item {
    Records(Chunk),
    /// A line longer than the limit `max`, dropped by the reader to keep memory bounded.
    TooLong {
        origin: Arc<str>,
        line: u64,
        len: u64,
        /// The input bytes it took: `len`, and its newline if it had one.
        bytes: u64,
        max: u64,
        prefix: Vec<u8>,
        /// Where the input stands past the line.
        end: LinePosition,
    },
    /// The partitions the source now reads (its assignment, at the start or after a
    /// rebalance; a stream's shards), before any record of theirs, by the JSON text of their
    /// envelope field.
    Assigned(Vec<String>),
    /// A Kinesis shard was read to its end; every record of it was handed over before.
    ShardEnded(Arc<str>),
    /// A Kafka partition a group member reads was read to its end (`-e`); every record of
    /// it was handed over before.
    PartitionEnded(i32),
    /// A writer's watermark marker, read at (partition, offset) of a shuffle's topic, in
    /// order with that partition's records (`--repartition`).
    Marker {
        at: (i32, i64),
        marker: Marker,
    },
    /// Where the source starts reading, before any record there: Kafka partitions at these
    /// offsets, or a Kinesis shard at the records arriving from this time on.
    Starts(Starts),
    /// A consumer-group member with state per partition (`Checkpoints::for_group`) was given
    /// `owned`, with the state their last owner saved, before any of their records.
    Restored {
        owned: Vec<i32>,
        states: Vec<PartitionState>,
    },
    /// The group takes these partitions away: the driver, having handled every record
    /// before, makes the output durable and answers with each one's state and next offset,
    /// which the source saves and commits before the group moves them.
    Revoked {
        partitions: Vec<i32>,
        reply: mpsc::Sender<Vec<PartitionState>>,
    },
    /// A Kinesis member reads `shard` (task `task`) from now on, going on from the state
    /// its last owner saved (or its parents'), before any of its records.
    ShardOwned {
        shard: Arc<str>,
        task: i32,
        start: Option<ShardStart>,
    },
    /// A Kinesis member stops reading the shard of `task`, all of its records handed over
    /// before: the driver answers with its state, or drops it, as `giving` says.
    ShardRevoked {
        task: i32,
        giving: Giving,
        reply: mpsc::Sender<Option<ShardState>>,
    },
    /// The source read to its end and waits for the records still in flight to be handled,
    /// before its last commit.
    Draining,
    Failed(Error),
}

/// Where a source starts reading (see `Feed::starts`).
#[derive(Debug)]
pub enum Starts {
    /// Kafka partitions, each at its first offset.
    Partitions(Vec<(i32, i64)>),
    /// A Kinesis shard, from the records arriving at this time (ms) on.
    Shard(Arc<str>, i64),
}

/// Records a source framed itself: record `i` is `data[ends[i - 1]..ends[i]]`; the records
/// at the indexes in `bad` are bad as they came, for the reason given; `input_bytes` is what
/// they were read as, for the summary.
struct Framed<'a> {
    data: Vec<u8>,
    ends: &'a [u32],
    bad: &'a [(u32, RecordError)],
    input_bytes: u64,
}

/// Where a record a broker source framed comes from: a Kafka (partition, offset) or a
/// Kinesis `ShardPosition`.
pub trait FramedPosition: Sized {
    /// The positions as a chunk keeps them: Kafka's, and Kinesis's.
    fn into_chunk(positions: Vec<Self>) -> (Vec<(i32, i64)>, Vec<ShardPosition>);
}

impl FramedPosition for (i32, i64) {
    fn into_chunk(positions: Vec<Self>) -> (Vec<(i32, i64)>, Vec<ShardPosition>) {
        (positions, Vec::new())
    }
}

impl FramedPosition for ShardPosition {
    fn into_chunk(positions: Vec<Self>) -> (Vec<(i32, i64)>, Vec<ShardPosition>) {
        (Vec::new(), positions)
    }
}

/// Records a broker source has rendered and not yet handed over: one chunk in the making.
/// The source writes each record's bytes into `data`, then ends it with `push` (or
/// `push_bad`, for one that is bad as it came); `hand_over` sends the chunk.
pub struct Framing<P: FramedPosition> {
    pub data: Vec<u8>,
    ends: Vec<u32>,
    positions: Vec<P>,
    bad: Vec<(u32, RecordError)>,
    /// Bytes of input the records stand for, for the summary.
    pub input_bytes: u64,
    /// The number of the first record in `data`, counted from 1 over the whole read.
    next_record: u64,
    /// Behind a shuffle: what each record's writer said of its input partition (`carry`).
    carried: Vec<Millis>,
}

impl<P: FramedPosition> Framing<P> {
    pub fn new(feed: &Feed) -> Framing<P> {
        Framing {
            data: feed.buffer(),
            ends: Vec::new(),
            positions: Vec::new(),
            bad: Vec::new(),
            input_bytes: 0,
            next_record: 1,
            carried: Vec::new(),
        }
    }

    /// Ends the record just written into `data`, at `position`.
    pub fn push(&mut self, position: P) {
        self.ends.push(self.data.len() as u32);
        self.positions.push(position);
    }

    /// Ends the record just written into `data`, at `position`, as a bad one.
    pub fn push_bad(&mut self, position: P, error: RecordError) {
        self.bad.push((self.ends.len() as u32, error));
        self.push(position);
    }

    /// Behind a shuffle: the largest event time of the input partition before the record
    /// just pushed, as its writer forwarded them (`Millis::MIN`: none). Records pushed
    /// without one have none.
    pub fn carry(&mut self, before: Millis) {
        self.carried.resize(self.positions.len() - 1, Millis::MIN);
        self.carried.push(before);
    }

    /// Whether the chunk is full.
    pub fn is_full(&self) -> bool {
        self.data.len() >= CHUNK_BYTES
    }

    /// Hands the records over as one chunk of `origin`, if there are any.
    pub fn hand_over(&mut self, feed: &mut Feed, origin: &Arc<str>) -> Result<()> {
        if self.positions.is_empty() {
            return Ok(());
        }
        let count = self.positions.len() as u64;
        let framed = Framed {
            data: std::mem::replace(&mut self.data, feed.buffer()),
            ends: &self.ends,
            bad: &self.bad,
            input_bytes: std::mem::take(&mut self.input_bytes),
        };
        let (positions, shard_positions) = P::into_chunk(std::mem::take(&mut self.positions));
        let carried = std::mem::take(&mut self.carried);
        feed.framed(
            origin,
            self.next_record,
            framed,
            positions,
            shard_positions,
            carried,
        )?;
        self.ends.clear();
        self.bad.clear();
        self.next_record += count;
        Ok(())
    }
}

/// A source's side of the channel: buffers to fill, and the calls that hand chunks over.
pub struct Feed {
    out: SyncSender<Item>,
    spare: Receiver<ChunkData>,
    spare_prepared: Receiver<Prepared>,
    scratch: Scratch,
    prepare: Prepare,
    max_line_bytes: usize,
    cancel: Arc<AtomicBool>,
    /// What the command sends back: the positions of records it has handled, in order, and
    /// the partition states it saved.
    handled: Receiver<Back>,
    /// Saved partition states received and not yet taken by the source, the latest of each
    /// partition.
    saved: Vec<PartitionState>,
    /// Saved shard states received and not yet taken by the source.
    saved_shards: Vec<ShardState>,
    /// Framed records handed over and not yet reported handled.
    unhandled: usize,
    /// The last positions of Kinesis records reported handled and not yet taken by the
    /// source, in the order they came.
    shards_handled: Vec<ShardPosition>,
}

/// Kinesis records handled: how many, and the last position of each shard among them.
#[derive(Debug, Default)]
pub(crate) struct HandledShards {
    pub records: usize,
    pub last: Vec<ShardPosition>,
}

impl HandledShards {
    /// Takes in these positions, in the order their records were handled.
    pub fn hold(&mut self, positions: &[ShardPosition]) {
        self.records += positions.len();
        for at in positions {
            // A chunk holds few shards: a short scan.
            match self.last.iter_mut().rev().find(|p| p.shard == at.shard) {
                Some(p) => p.clone_from(at),
                None => self.last.push(at.clone()),
            }
        }
    }
}

impl Feed {
    /// The longest record accepted; a longer one is a bad record.
    pub fn max_line_bytes(&self) -> usize {
        self.max_line_bytes.max(1)
    }

    /// The run is ending: the source should return.
    pub fn cancelled(&self) -> bool {
        // Acquire: positions the driver reported before it cancelled are then seen too.
        self.cancel.load(Ordering::Acquire)
    }

    /// Calls `done` with the (partition, offset) of each record the command has handled
    /// since the last call, in order: what a broker source may mark as done.
    pub fn handled(&mut self, mut done: impl FnMut(i32, i64)) {
        while let Ok(back) = self.handled.try_recv() {
            self.take_handled(back, &mut done);
        }
    }

    fn take_handled(&mut self, back: Back, done: &mut impl FnMut(i32, i64)) {
        match back {
            Back::Handled(positions) => {
                self.unhandled = self.unhandled.saturating_sub(positions.len());
                positions.into_iter().for_each(|(p, o)| done(p, o));
            }
            Back::Saved(states) => keep_latest(&mut self.saved, states),
            Back::SavedShards(states) => self.saved_shards.extend(states),
            Back::Shards(shards) => {
                self.unhandled = self.unhandled.saturating_sub(shards.records);
                self.shards_handled.extend(shards.last);
            }
        }
    }

    /// Where the Kinesis records the command has handled (their output durable) stand since
    /// the last call, in order: a later position of a shard comes after an earlier one, and
    /// is where a lease's checkpoint may move.
    pub fn take_shards_handled(&mut self) -> Vec<ShardPosition> {
        std::mem::take(&mut self.shards_handled)
    }

    /// The partition states the command saved since the last call (after `handled` or
    /// `wait_handled` took them from the channel), for the source to keep where the next
    /// owner of each partition finds it.
    pub fn take_saved(&mut self) -> Vec<PartitionState> {
        std::mem::take(&mut self.saved)
    }

    /// The shard states the command saved since the last call (after `handled` took them
    /// from the channel), in order, for a Kinesis member to store and commit.
    pub fn take_saved_shards(&mut self) -> Vec<ShardState> {
        std::mem::take(&mut self.saved_shards)
    }

    /// Reports that a Kinesis member reads `shard` from now on, going on from `start`,
    /// before any of its records.
    pub fn own_shard(&self, shard: Arc<str>, task: i32, start: Option<ShardStart>) -> Result<()> {
        self.send(Item::ShardOwned { shard, task, start })
    }

    /// Has the command give up the shard of `task`, every record of it handed over before:
    /// its state, its output durable, as `giving` says; `None` when the run ended without
    /// answering.
    pub fn revoke_shard(&self, task: i32, giving: Giving) -> Option<Option<ShardState>> {
        let (reply, answer) = mpsc::channel();
        let item = Item::ShardRevoked {
            task,
            giving,
            reply,
        };
        self.send(item).ok()?;
        answer.recv().ok()
    }

    /// A handle the source's group callbacks use to have the command give up partitions.
    pub fn revoker(&self) -> Revoker {
        Revoker {
            out: self.out.clone(),
        }
    }

    /// Reports the partitions a group member owns now and the states it restored for those
    /// it was given, before any of their records.
    pub fn restored(&self, owned: Vec<i32>, states: Vec<PartitionState>) -> Result<()> {
        self.send(Item::Restored { owned, states })
    }

    /// At the end of its input, waits until the command has handled every record handed
    /// over (calling `done` for each as `handled` does), or until the run is cancelled
    /// (the command stopped early or failed: what it did not handle is not done). A source
    /// that commits its position calls this before it commits, so that the records still in
    /// flight are committed too.
    pub fn wait_handled(&mut self, mut done: impl FnMut(i32, i64)) {
        self.handled(&mut done);
        if self.unhandled > 0 {
            // The driver may hold positions until its next checkpoint: it takes one now.
            let _ = self.send(Item::Draining);
        }
        loop {
            // Read first: what the driver reported before it cancelled is drained below.
            let cancelled = self.cancelled();
            self.handled(&mut done);
            if self.unhandled == 0 || cancelled {
                return;
            }
            match self.handled.recv_timeout(Duration::from_millis(50)) {
                Ok(back) => self.take_handled(back, &mut done),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// An empty buffer to fill, reused from an earlier chunk when one is free.
    pub fn buffer(&self) -> Vec<u8> {
        let mut buf = self.read_space();
        buf.clear();
        buf
    }

    /// A buffer whose initialised bytes can be read into without zeroing them first.
    pub fn read_space(&self) -> Vec<u8> {
        while let Ok(data) = self.spare.try_recv() {
            if let ChunkData::Owned(buf) = data {
                return buf;
            }
        }
        Vec::with_capacity(CHUNK_BYTES * 2)
    }

    /// Lets go of the chunks the command is done with: a mapped file's ranges leave the
    /// process here, on the reader's thread, rather than on the command's.
    pub fn let_go(&self) {
        while self.spare.try_recv().is_ok() {}
    }

    /// Hands over whole lines of `origin` (each ending in `\n`), the first of them line
    /// `first_line`; returns how many lines there were. `input_bytes` is what they were read
    /// as (a last line's added newline is not input); `end` is where the input stands after
    /// them (its line number is filled in here).
    pub fn lines(
        &mut self,
        origin: &Arc<str>,
        first_line: u64,
        data: ChunkData,
        input_bytes: u64,
        end: LinePosition,
    ) -> Result<u64> {
        let mut prepared = self.spare_prepared.try_recv().unwrap_or_default();
        prepared.fill(
            &data,
            &self.prepare,
            self.max_line_bytes(),
            &mut self.scratch,
        );
        let lines = prepared.lines.len() as u64;
        self.send(Item::Records(Chunk {
            origin: origin.clone(),
            first_line,
            data,
            input_bytes,
            positions: Vec::new(),
            shard_positions: Vec::new(),
            carried: Vec::new(),
            end: Some(LinePosition {
                next_line: first_line + lines,
                ..end
            }),
            prepared,
        }))?;
        Ok(lines)
    }

    /// Hands over the records of `framing`, from `origin`, as one chunk: record `i` is
    /// `data[ends[i - 1]..ends[i]]` at its position (a Kafka record's partition and offset,
    /// a Kinesis record's shard and sequence).
    fn framed(
        &mut self,
        origin: &Arc<str>,
        first_record: u64,
        framed: Framed<'_>,
        positions: Vec<(i32, i64)>,
        shard_positions: Vec<ShardPosition>,
        carried: Vec<Millis>,
    ) -> Result<()> {
        // Broker records are reported back as handled (their positions are committed).
        self.unhandled += positions.len() + shard_positions.len();
        let mut prepared = self.spare_prepared.try_recv().unwrap_or_default();
        prepared.fill_framed(
            &framed.data,
            framed.ends,
            &self.prepare,
            self.max_line_bytes(),
            &mut self.scratch,
        );
        for (i, error) in framed.bad {
            prepared.mark_bad(*i as usize, error.clone());
        }
        self.send(Item::Records(Chunk {
            origin: origin.clone(),
            first_line: first_record,
            data: ChunkData::Owned(framed.data),
            input_bytes: framed.input_bytes,
            positions,
            shard_positions,
            carried,
            end: None,
            prepared,
        }))
    }

    /// Reports the partitions the source reads from now on, before it hands over any of
    /// their records: each holds a watermark back from here until it delivers or goes idle.
    /// A source calls this at the start and whenever its set of partitions changes (a
    /// group's rebalance; a stream's new shards).
    pub fn assigned(&self, partitions: Vec<String>) -> Result<()> {
        self.send(Item::Assigned(partitions))
    }

    /// Reports that `shard` was read to its end (closed by a split or merge), after all of
    /// its records: a checkpoint then counts it done, and its children may be read.
    pub fn shard_ended(&self, shard: Arc<str>) -> Result<()> {
        self.send(Item::ShardEnded(shard))
    }

    /// Reports that Kafka `partition` was read to its end, after all of its records.
    pub fn partition_ended(&self, partition: i32) -> Result<()> {
        self.send(Item::PartitionEnded(partition))
    }

    /// Hands over a watermark marker read at `at`, after every record before it.
    pub fn marker(&self, at: (i32, i64), marker: Marker) -> Result<()> {
        self.send(Item::Marker { at, marker })
    }

    /// Reports where the source starts reading, before any record there, when a restart
    /// would not find the same place from the flags alone (`--from end`, `-1h`): a checkpoint
    /// keeps it for a partition or shard none of whose records were handled yet.
    pub fn starts(&self, starts: Starts) -> Result<()> {
        self.send(Item::Starts(starts))
    }

    /// Reports line `line` of `origin`, `len` bytes long (and its newline, when `ended` by
    /// one: the input's last line may have none), which was too long to keep; the input stands
    /// at `end` past it.
    pub fn too_long(
        &self,
        origin: &Arc<str>,
        (line, len, ended): (u64, u64, bool),
        prefix: Vec<u8>,
        end: LinePosition,
    ) -> Result<()> {
        self.send(Item::TooLong {
            origin: origin.clone(),
            line,
            len,
            bytes: len + ended as u64,
            max: self.max_line_bytes() as u64,
            prefix,
            end: LinePosition {
                next_line: line + 1,
                ..end
            },
        })
    }

    fn send(&self, item: Item) -> Result<()> {
        // The receiver is gone only when the command stopped early (`-n`): not an error.
        self.out.send(item).map_err(|_| Error::BrokenPipe)
    }
}

/// What the command sends back to the source.
pub(crate) enum Back {
    /// The positions of records handled, in order.
    Handled(Vec<(i32, i64)>),
    /// Kinesis records handled.
    Shards(HandledShards),
    /// Partition states saved, their output durable.
    Saved(Vec<PartitionState>),
    /// Shard states saved, their output durable.
    SavedShards(Vec<ShardState>),
}

/// Asks the command to give up partitions, from a group's rebalance callback on the reader
/// thread.
pub struct Revoker {
    out: SyncSender<Item>,
}

impl Revoker {
    /// Has the command hand over `partitions`, every record before handled and its output
    /// durable, and returns their states; `None` when the run ended without answering (it
    /// failed, or reached its end: the next owner goes on from the last saved state). A
    /// command that stops on a signal still answers (`Reader::drain`).
    pub fn revoke(&self, partitions: Vec<i32>) -> Option<Vec<PartitionState>> {
        let (reply, answer) = mpsc::channel();
        self.out.send(Item::Revoked { partitions, reply }).ok()?;
        // Disconnected when the request is dropped unanswered, with the channel at the
        // latest: the reader's end drops what is still in it.
        answer.recv().ok()
    }
}

/// The command's side: the chunks, and the thread that makes them.
pub struct Reader {
    pub(crate) items: Option<Receiver<Item>>,
    spare: SyncSender<ChunkData>,
    spare_prepared: SyncSender<Prepared>,
    handled: mpsc::Sender<Back>,
    /// A source that must be joined is told to stop and then joined, so that it can commit
    /// and close its client before the process exits.
    joined: Option<(Arc<AtomicBool>, thread::JoinHandle<()>)>,
}

impl Drop for Reader {
    fn drop(&mut self) {
        if let Some((cancel, handle)) = self.joined.take() {
            cancel.store(true, Ordering::Release);
            // Unblocks a source waiting to hand over a chunk.
            drop(self.items.take());
            let _ = handle.join();
        }
    }
}

impl Reader {
    /// Starts `source` on the reader thread; its records are checked as `prepare` says.
    pub fn spawn(source: Box<dyn Source>, prepare: Prepare, max_line_bytes: usize) -> Reader {
        let (item_tx, items) = mpsc::sync_channel(CHUNKS_IN_FLIGHT);
        let (spare, spare_rx) = mpsc::sync_channel(CHUNKS_IN_FLIGHT + 2);
        let (spare_prepared, spare_prepared_rx) = mpsc::sync_channel(CHUNKS_IN_FLIGHT + 2);
        let (handled, handled_rx) = mpsc::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let join = source.join_at_end();
        let mut feed = Feed {
            out: item_tx,
            spare: spare_rx,
            spare_prepared: spare_prepared_rx,
            scratch: Scratch::default(),
            prepare,
            max_line_bytes,
            cancel: cancel.clone(),
            handled: handled_rx,
            saved: Vec::new(),
            saved_shards: Vec::new(),
            unhandled: 0,
            shards_handled: Vec::new(),
        };
        let handle = thread::Builder::new()
            .name("weir-read".into())
            .spawn(move || {
                // The end of this thread closes the channel, which the driver takes for the
                // end of the input: a panic is sent as a failure, so that no run ends as if
                // it had read everything.
                let read = panic_as_error("the input's reader", || source.read(&mut feed));
                if let Err(e) = read {
                    let _ = feed.out.send(Item::Failed(e));
                }
            })
            .expect("spawn reader thread");
        Reader {
            items: Some(items),
            spare,
            spare_prepared,
            handled,
            joined: join.then_some((cancel, handle)),
        }
    }

    /// Tells a source that must be joined to stop, and hands `each` what it still sends
    /// until it has ended. A group member that stops answers the revocations of a rebalance
    /// under way this way: unanswered, the group could give a partition to its next owner
    /// before its latest state is saved, and that owner would repeat the output since the
    /// older one.
    pub(crate) fn drain(&mut self, mut each: impl FnMut(Item)) {
        let Some((cancel, _)) = &self.joined else {
            return;
        };
        cancel.store(true, Ordering::Release);
        let items = self.items.as_ref().expect("receiver kept until drop");
        while let Ok(item) = items.recv() {
            each(item);
        }
    }

    /// Tells the source that the command has handled these records.
    pub(crate) fn handled(&self, positions: Vec<(i32, i64)>) {
        if !positions.is_empty() {
            let _ = self.handled.send(Back::Handled(positions));
        }
    }

    /// Tells the source that the command has handled these Kinesis records.
    pub(crate) fn handled_shards(&self, shards: HandledShards) {
        if shards.records > 0 {
            let _ = self.handled.send(Back::Shards(shards));
        }
    }

    /// Gives the source partition states to save, their output durable.
    pub(crate) fn saved(&self, states: Vec<PartitionState>) {
        if !states.is_empty() {
            let _ = self.handled.send(Back::Saved(states));
        }
    }

    /// Gives a Kinesis member's source shard states to store, their output durable.
    pub(crate) fn saved_shards(&self, states: Vec<ShardState>) {
        if !states.is_empty() {
            let _ = self.handled.send(Back::SavedShards(states));
        }
    }

    /// Gives a chunk's buffers back for reuse, so the steady state allocates nothing (its
    /// positions were taken first, to be released once the output covers them).
    pub(crate) fn recycle(&self, chunk: Chunk) {
        // Not cleared: the reader reuses the initialised bytes as read space. A mapped
        // range goes back too, for the reader to release its pages (`Feed::let_go`).
        let _ = self.spare.try_send(chunk.data);
        let _ = self.spare_prepared.try_send(chunk.prepared);
    }
}

/// Adds `states` to the `saved` ones not yet taken, keeping one per partition, the latest:
/// the command may save twice before the source takes them (a due save, then the last), and
/// a changelog write of one partition twice would leave the first write's parts behind.
fn keep_latest(saved: &mut Vec<PartitionState>, states: Vec<PartitionState>) {
    for state in states {
        saved.retain(|s| s.partition != state.partition);
        saved.push(state);
    }
}

/// The extractor `x` with field `i` (if any) read as the event time on the reader's thread,
/// when that thread has a core of its own (more than one CPU is ours): there the command's
/// thread, which sets the wall time, is spared the work; on one core it would only cost more.
pub fn time_read_ahead(x: Extractor, i: Option<usize>, format: &TimeFormat) -> Extractor {
    on_own_core(x, i, |x, i| x.reading_time_at(i, format))
}

/// The extractor `x` with field `i` (if any) read as a plain decimal on the reader's thread,
/// when that thread has a core of its own (as `time_read_ahead`).
pub fn number_read_ahead(x: Extractor, i: Option<usize>) -> Extractor {
    on_own_core(x, i, Extractor::reading_number_at)
}

/// The extractor `x` with field `i` (if any), the key, coded on the reader's thread when that
/// thread has a core of its own (as `time_read_ahead`).
pub fn key_read_ahead(x: Extractor, i: Option<usize>) -> Extractor {
    on_own_core(x, i, Extractor::reading_key_at)
}

/// `x` asked by `read` to read field `i` on the reader's thread, when there is a field and
/// that thread has a core of its own.
fn on_own_core(
    x: Extractor,
    i: Option<usize>,
    read: impl FnOnce(Extractor, usize) -> Extractor,
) -> Extractor {
    match i.filter(|_| own_core()) {
        Some(i) => read(x, i),
        None => x,
    }
}

/// Whether a second thread has a core of its own (the reader's, or a helper's): more than one
/// CPU is ours.
pub fn own_core() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(partition: i32, next_offset: i64) -> PartitionState {
        PartitionState {
            partition,
            next_offset,
            state: vec![next_offset as u8],
            ended: false,
        }
    }

    struct Panicking;

    impl Source for Panicking {
        fn read(self: Box<Self>, _: &mut Feed) -> Result<()> {
            panic!("a bug in a source");
        }
    }

    #[test]
    fn a_reader_that_panics_fails_the_run_rather_than_ending_its_input() {
        let reader = Reader::spawn(Box::new(Panicking), Prepare::AsIs, 1024);
        let items = reader.items.as_ref().expect("items");
        let first = items.recv().expect("an item before the channel closes");
        assert!(
            matches!(first, Item::Failed(Error::Internal(_))),
            "the driver would take the closed channel for the input's end"
        );
    }

    #[test]
    fn a_partition_saved_twice_before_it_is_taken_is_kept_once_at_its_latest() {
        let mut saved = Vec::new();
        keep_latest(&mut saved, vec![state(0, 5), state(1, 7)]);
        keep_latest(&mut saved, vec![state(0, 9)]);
        assert_eq!(saved, vec![state(1, 7), state(0, 9)]);
    }
}
