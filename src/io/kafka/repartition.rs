//! `--repartition`: a shuffle through an internal topic, as Kafka Streams repartitions before
//! a grouping by something other than the record key. Each member runs two stages:
//!
//! - the **writer** reads the input topic as a plain member of the group and sends each
//!   record's envelope, as the command would have seen it, to the internal topic, keyed by its
//!   state key (so Kafka's default partitioner, murmur2, puts every record of a key in one
//!   partition, where any Kafka client would look for it); now and then, and whenever its
//!   partitions change, it sends every partition of the topic a watermark marker
//!   (`core::shuffle`). Its input offsets are committed only once what it sent is delivered.
//! - the **reader** is the command's source: a member of the same group on the internal
//!   topic, with the per-partition state, changelog and rebalances every `-G` member has. It
//!   hands the writers' markers over in their place among the records.
//!
//! With `-e` the reader ends once the writers have: this member's writer ends when every
//! input partition is read and committed to its end (its records delivered), and the reader
//! then reads the internal topic to the ends it has at that moment, as every member must.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use smallvec::SmallVec;

use super::config::ClientOptions;
use super::plan::ReadPlan;
use super::sink::KafkaSink;
use super::source::{KafkaSource, Upstream};
use super::topic::{self, Cleanup};
use crate::core::envelope::{write_state_key, Render};
use crate::core::record::{Extractor, FieldList, FieldPath};
use crate::core::shuffle::{write_forwarded, InputMarks, MARKER_HEADER};
use crate::core::time::{LogPosition, TimeFormat};
use crate::error::{panic_as_error, Error, Fault, Result};
use crate::io::spec::KafkaSpec;
use crate::runtime::{
    run_stage, Counters, Feed, Flow, Line, Outgoing, Prepare, RecordStep, Source,
};

/// The writer's producer: Java's default partitioner, so that every Kafka client agrees
/// where a key lives; one request in flight per partition, so that a retry cannot reorder a
/// partition's records (a reader drops what comes at or below an offset it has taken);
/// without idempotence, whose sequence bookkeeping kept librdkafka's broker thread busy
/// polling.
const SHUFFLE_PRODUCER: &[(&str, &str)] = &[
    ("partitioner", "murmur2_random"),
    ("enable.idempotence", "false"),
    ("max.in.flight.requests.per.connection", "1"),
];

/// How often a writer sends markers while its input moves.
const MARK_EVERY: Duration = Duration::from_millis(200);

/// A shuffle, checked: the internal topic and what a writer reads of each record.
#[derive(Clone, Debug)]
pub struct ShufflePlan {
    /// `GROUP-COMMAND-repartition`.
    pub topic: String,
    /// `--repartition-partitions`; the input's count when `None`.
    pub partitions: Option<usize>,
    /// The state key's fields (`--key`, `--id`), and the event time's.
    pub key: Vec<FieldPath>,
    pub time: Option<FieldPath>,
    pub time_format: TimeFormat,
}

/// The reader of a shuffle, with the writer it starts when the read starts.
pub struct ShuffledSource {
    reader: KafkaSource,
    writer: KafkaSource,
    step: ShuffleStep,
    prepare: Prepare,
    max_line_bytes: usize,
}

impl ShuffledSource {
    /// Opens both stages: the writer joins the group on the input, the internal topic is
    /// created when missing, and the reader joins the group on it.
    pub fn open(
        spec: &KafkaSpec,
        read: &ReadPlan,
        client: &ClientOptions,
        shuffle: &ShufflePlan,
        max_line_bytes: usize,
    ) -> Result<ShuffledSource> {
        let mut input = read.clone();
        input.changelog = None;
        let writer = KafkaSource::open(spec, &input, client, Render::Envelope, &[])?;
        let inputs = writer.partition_count;
        let wanted = shuffle.partitions.unwrap_or(inputs);
        let count = topic::ensure(spec, client, &shuffle.topic, wanted, Cleanup::Delete)?;
        let internal = KafkaSpec {
            brokers: spec.brokers.clone(),
            topic: Some(shuffle.topic.clone()),
        };
        let reader = KafkaSource::open(
            &internal,
            &reader_plan(read, shuffle),
            client,
            Render::Value,
            &[],
        )?;
        // Java's default partitioner, so that every Kafka client agrees where a key lives.
        let sink = KafkaSink::open_with(&internal, client, SHUFFLE_PRODUCER)?;
        let step = ShuffleStep::new(sink, shuffle, inputs as u32, count as i32);
        Ok(ShuffledSource {
            reader,
            writer,
            prepare: Prepare::Extract(step.extractor.clone()),
            step,
            max_line_bytes,
        })
    }
}

/// The reader's read: the internal topic from its start for a group that has no offset
/// there yet, bounded only once the writers end.
fn reader_plan(read: &ReadPlan, shuffle: &ShufflePlan) -> ReadPlan {
    ReadPlan {
        topic: shuffle.topic.clone(),
        from: LogPosition::Beginning,
        to: None,
        group: read.group.clone(),
        partitions: Vec::new(),
        balanced: true,
        reset: Some("earliest"),
        bounded: false,
        // A bounded input (-e, --to) ends the read once the writers have read it all.
        exit_at_end: read.bounded,
        changelog: read.changelog.clone(),
    }
}

impl Source for ShuffledSource {
    fn read(self: Box<Self>, feed: &mut Feed) -> Result<()> {
        let ShuffledSource {
            mut reader,
            writer,
            mut step,
            prepare,
            max_line_bytes,
        } = *self;
        let upstream = Arc::new(Upstream::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (ended, stopped) = (upstream.clone(), stop.clone());
        let writing = thread::Builder::new()
            .name("weir-shuffle".into())
            .spawn(move || {
                let stage = || {
                    run_stage(
                        Box::new(writer),
                        prepare,
                        max_line_bytes,
                        &mut step,
                        &stopped,
                    )
                };
                // A panic ends the upstream too, as a failure: the reader would wait for it.
                let written = panic_as_error("the shuffle's writer", stage);
                ended.end(written.map(|_: Counters| ()));
            })
            .map_err(|e| Error::Unreachable(format!("cannot start the shuffle's writer: {e}")))?;
        reader.follow(upstream);
        let read = Box::new(reader).read(feed);
        stop.store(true, std::sync::atomic::Ordering::Release);
        let _ = writing.join();
        read
    }

    fn join_at_end(&self) -> bool {
        true
    }
}

/// The writer's step: each record to the partition of its state key, markers now and then.
struct ShuffleStep {
    sink: KafkaSink,
    key_fields: usize,
    time_at: Option<usize>,
    time_format: TimeFormat,
    extractor: Arc<Extractor>,
    /// A marker that could not be sent where no error can be returned (`assigned`).
    failed: Option<Error>,
    marks: InputMarks,
    inputs: u32,
    partitions: i32,
    marked_at: Instant,
    /// The composite key being built.
    key: String,
    /// The forwarded value being built.
    value: Vec<u8>,
}

impl ShuffleStep {
    fn new(sink: KafkaSink, plan: &ShufflePlan, inputs: u32, partitions: i32) -> ShuffleStep {
        let mut fields = FieldList::default();
        let keys = fields.add_all(plan.key.iter().cloned());
        let time_at = fields.add_some(plan.time.clone());
        debug_assert_eq!(keys, 0);
        ShuffleStep {
            sink,
            key_fields: plan.key.len(),
            time_at,
            time_format: plan.time_format.clone(),
            extractor: Arc::new(fields.extractor()),
            failed: None,
            marks: InputMarks::default(),
            inputs,
            partitions,
            marked_at: Instant::now(),
            key: String::new(),
            value: Vec::new(),
        }
    }

    /// Sends every partition of the topic the marker of what this writer has forwarded.
    fn mark(&mut self) -> Result<()> {
        let marker = self.marks.marker(self.inputs).encode();
        let headers = [(MARKER_HEADER, Some(&b"1"[..]))];
        for partition in 0..self.partitions {
            let record = Outgoing {
                value: Some(&marker),
                key: None,
                headers: &headers,
                timestamp: None,
                partition: Some(partition),
            };
            (self.sink).send_own(&record, "topic", "a watermark marker")?;
        }
        self.marked_at = Instant::now();
        Ok(())
    }

    /// Puts the record's state key in `key`, spelled as the readers' key check spells it;
    /// false when a field of it is missing.
    fn state_key(&mut self, line: &Line<'_>) -> bool {
        let parts: Option<SmallVec<[&str; 4]>> =
            (0..self.key_fields).map(|i| line.field(i)).collect();
        self.key.clear();
        match parts {
            Some(parts) => write_state_key(&mut self.key, &parts),
            None => return false,
        }
        true
    }
}

impl RecordStep for ShuffleStep {
    fn record(&mut self, line: &Line<'_>, counters: &mut Counters) -> Result<Flow, Fault> {
        if let Some(e) = self.failed.take() {
            return Err(Fault::Fatal(e));
        }
        let (input, offset) = line.offset.expect("a Kafka record");
        let time_at = self.time_at;
        let t = time_at.and_then(|at| line.time_if_any(at, &self.extractor, &self.time_format));
        // What its input partition had reached before it: a reader judges it by that.
        let before = self.marks.forward(input as u32, offset, t);
        let keyed = self.state_key(line);
        // A record without its key goes on all the same, for the reader to report.
        let partition = (!keyed).then_some(input % self.partitions);
        write_forwarded(before, line.bytes, &mut self.value);
        let record = Outgoing {
            value: Some(&self.value),
            key: keyed.then_some(self.key.as_bytes()),
            headers: &[],
            timestamp: None,
            partition,
        };
        self.sink.send(&record)?;
        counters.written += 1;
        Ok(Flow::Continue)
    }

    fn idle(&mut self) -> Result<()> {
        self.sink.poll()
    }

    fn durable(&mut self) -> Result<()> {
        self.sink.flush()
    }

    fn tick(&mut self, _: &mut Counters) -> Result<()> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if self.marks.changed() && self.marked_at.elapsed() >= MARK_EVERY {
            self.mark()?;
        }
        Ok(())
    }

    fn assigned(&mut self, partitions: &[String]) {
        let read: Vec<u32> = partitions.iter().filter_map(|p| p.parse().ok()).collect();
        self.marks.reading(&read);
        // Before any record of theirs: a reader then waits for every input partition.
        if let Err(e) = self.mark() {
            self.failed.get_or_insert(e);
        }
    }

    fn partition_ended(&mut self, partition: i32, _: &mut Counters) -> Result<()> {
        self.marks.finished(partition as u32);
        self.mark()
    }

    fn finish(&mut self, ended: Result<()>, _: &mut Counters) -> Result<()> {
        ended?;
        // Markers that say nothing new would only stand unread behind the readers' ends.
        if self.marks.changed() {
            self.mark()?;
        }
        self.sink.flush()
    }

    fn close(&mut self, _: &mut Counters) -> Result<()> {
        self.sink.flush()
    }
}
