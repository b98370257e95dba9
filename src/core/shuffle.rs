//! The shuffle behind `--repartition`: writers forward each input record to the partition of
//! an internal topic that its state key belongs to, and readers keep state per partition of
//! that topic. Event time crosses the shuffle as Flink carries watermarks across a network
//! exchange: each writer sends every partition of the topic, now and then, a marker with the
//! highest event time it has forwarded from each input partition it reads, and which of them
//! it has read to their end. A reader's watermark is the minimum over the input's partitions
//! (`Watermarks::expect`, `Watermarks::heard`), as one reader of the input would hold it.
//!
//! Pure: how markers are written to and read from a topic is `io`'s.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::time::Millis;

/// The header that makes a record of the internal topic a marker, not a forwarded record.
pub const MARKER_HEADER: &str = "weir-watermarks";

/// Writes a forwarded record's value: its input partition's largest event time before it
/// (decimal milliseconds; nothing when none is known), a space, then the record. A reader
/// judges the record by it, as one reader of the input would, though it sees only the
/// records of its own partitions of the topic. In the value, not in a header: a header on
/// every record slowed the test broker to a halt, and a record is one line either way.
pub fn write_forwarded(before: Option<Millis>, record: &[u8], out: &mut Vec<u8>) {
    out.clear();
    if let Some(t) = before {
        out.extend_from_slice(itoa::Buffer::new().format(t).as_bytes());
    }
    out.push(b' ');
    out.extend_from_slice(record);
}

/// A forwarded record's value read back: what its writer carried, and the record. A value
/// that does not start as `write_forwarded` writes is taken whole, with nothing carried.
pub fn read_forwarded(value: &[u8]) -> (Option<Millis>, &[u8]) {
    let Some(space) = value.iter().take(21).position(|&b| b == b' ') else {
        return (None, value);
    };
    let (before, record) = (&value[..space], &value[space + 1..]);
    if before.is_empty() {
        return (None, record);
    }
    match std::str::from_utf8(before)
        .ok()
        .and_then(|t| t.parse().ok())
    {
        Some(t) => (Some(t), record),
        None => (None, value),
    }
}

/// What a writer says of the input partitions it reads, to one partition of the topic.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    /// How many partitions the input has: each holds a reader's watermark back until it is
    /// heard of.
    pub inputs: u32,
    pub marks: Vec<InputMark>,
}

/// One input partition, as its writer has forwarded it so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputMark {
    pub partition: u32,
    /// The highest event time forwarded; `None` before any.
    pub max_event_time: Option<Millis>,
    /// Read to its end (`-e`): it no longer holds the watermark back.
    pub finished: bool,
}

impl Marker {
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a marker serialises")
    }

    /// A marker as `encode` wrote it; what is not one says why.
    pub fn decode(bytes: &[u8]) -> Result<Marker, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("not a weir watermark marker: {e}"))
    }
}

/// Where a record that came through the shuffle stood in the input: its envelope's
/// `partition` and `offset` (their JSON texts).
pub fn input_position(partition: &str, offset: &str) -> Option<(usize, i64)> {
    let partition: u32 = partition.parse().ok()?;
    let offset: i64 = offset.parse().ok()?;
    Some((partition as usize, offset))
}

/// A writer's input partitions: what its next marker says.
#[derive(Debug, Default)]
pub struct InputMarks {
    marks: BTreeMap<u32, InputMark>,
    /// Each partition's offset after the last record forwarded: a record before it means the
    /// read went back.
    next: BTreeMap<u32, i64>,
    /// Whether anything changed since the last marker.
    changed: bool,
}

impl InputMarks {
    /// The writer reads `partitions` from now on (after a rebalance): new ones are marked
    /// with nothing forwarded yet; those gone to another writer are no longer spoken for.
    pub fn reading(&mut self, partitions: &[u32]) {
        self.marks
            .retain(|p, m| m.finished || partitions.contains(p));
        self.next.retain(|p, _| partitions.contains(p));
        for &partition in partitions {
            self.marks.entry(partition).or_insert(InputMark {
                partition,
                max_event_time: None,
                finished: false,
            });
        }
        self.changed = true;
    }

    /// The record of `partition` at `offset` (event time `t`, when it has one) is forwarded:
    /// returns the largest event time forwarded from the partition before it, which its
    /// reader judges it by. A record at or before one forwarded already means the read went
    /// back (the group gave the partition again, from its committed offset, the same set of
    /// partitions as before or not): what was forwarded since came after this record in the
    /// partition, so the mark starts again, and knows nothing of the records before it
    /// (their writers told the readers of them).
    #[inline]
    pub fn forward(&mut self, partition: u32, offset: i64, t: Option<Millis>) -> Option<Millis> {
        let mark = self.marks.entry(partition).or_insert(InputMark {
            partition,
            max_event_time: None,
            finished: false,
        });
        let next = self.next.entry(partition).or_insert(offset);
        if offset < *next {
            mark.max_event_time = None;
        }
        *next = offset + 1;
        let before = mark.max_event_time;
        if let Some(t) = t.filter(|&t| mark.max_event_time.is_none_or(|m| t > m)) {
            mark.max_event_time = Some(t);
            self.changed = true;
        }
        before
    }

    /// Every record of `partition` was forwarded.
    pub fn finished(&mut self, partition: u32) {
        if let Some(mark) = self.marks.get_mut(&partition) {
            mark.finished = true;
            self.changed = true;
        }
    }

    /// Whether anything changed since the last marker.
    pub fn changed(&self) -> bool {
        self.changed
    }

    /// The marker to send every partition of the topic now.
    pub fn marker(&mut self, inputs: u32) -> Marker {
        self.changed = false;
        Marker {
            inputs,
            marks: self.marks.values().copied().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forwarded_record_reads_back_with_what_its_writer_carried() {
        let mut out = Vec::new();
        for before in [None, Some(0), Some(-5), Some(1_767_225_600_000)] {
            write_forwarded(before, br#"{"a":"b c"}"#, &mut out);
            assert_eq!(read_forwarded(&out), (before, &br#"{"a":"b c"}"#[..]));
        }
        // Not as written: whole, nothing carried.
        let plain = br#"{"a":"b c"}"#;
        assert_eq!(read_forwarded(plain), (None, &plain[..]));
        assert_eq!(read_forwarded(b"12x {}"), (None, &b"12x {}"[..]));
    }
    use crate::core::watermark::Watermarks;
    use proptest::prelude::*;

    #[test]
    fn a_marker_reads_back_as_written() {
        let mut marks = InputMarks::default();
        marks.reading(&[2, 0]);
        assert_eq!(marks.forward(2, 0, Some(1_000)), None);
        assert_eq!(marks.forward(2, 1, Some(900)), Some(1_000));
        marks.finished(0);
        let marker = marks.marker(4);
        assert!(!marks.changed());
        assert_eq!(Marker::decode(&marker.encode()), Ok(marker.clone()));
        let expect = vec![
            InputMark {
                partition: 0,
                max_event_time: None,
                finished: true,
            },
            InputMark {
                partition: 2,
                max_event_time: Some(1_000),
                finished: false,
            },
        ];
        assert_eq!(marker.marks, expect);
        // Partition 2 moves to another writer: this one no longer speaks for it.
        marks.reading(&[1]);
        let parts: Vec<u32> = marks.marker(4).marks.iter().map(|m| m.partition).collect();
        assert_eq!(parts, vec![0, 1]);
        assert!(Marker::decode(b"{\"a\":1}").is_err());
    }

    /// An input record, or a writer's marker, as the writers send them in one interleaving.
    #[derive(Clone, Debug)]
    enum Step {
        Record {
            partition: u32,
            t: Millis,
            target: usize,
        },
        Mark {
            writer: usize,
        },
    }

    /// Input partitions (each a list of event times), their writers, and the order in which
    /// the writers forward records and send markers.
    fn shuffle_case() -> impl Strategy<Value = (Vec<Vec<Millis>>, Vec<usize>, Vec<Step>)> {
        let partitions = prop::collection::vec(prop::collection::vec(0i64..500, 1..12), 1..5);
        (partitions, 1usize..4).prop_flat_map(|(parts, writers)| {
            let owners = prop::collection::vec(0..writers, parts.len());
            let total: usize = parts.iter().map(Vec::len).sum();
            // For each record: which partition speaks next (by its rank among those with
            // records left), its target, and whether a marker (of which writer) follows.
            let picks = prop::collection::vec((0usize..64, 0usize..3, 0usize..8), total);
            (Just(parts), owners, picks).prop_map(|(parts, owners, picks)| {
                let steps = interleave(&parts, &owners, &picks);
                (parts, owners, steps)
            })
        })
    }

    fn interleave(
        parts: &[Vec<Millis>],
        owners: &[usize],
        picks: &[(usize, usize, usize)],
    ) -> Vec<Step> {
        let mut next = vec![0usize; parts.len()];
        let mut steps = Vec::new();
        for &(pick, target, mark) in picks {
            let open: Vec<usize> = (0..parts.len())
                .filter(|&p| next[p] < parts[p].len())
                .collect();
            let p = open[pick % open.len()];
            let t = parts[p][next[p]];
            next[p] += 1;
            steps.push(Step::Record {
                partition: p as u32,
                t,
                target,
            });
            if mark < 3 {
                steps.push(Step::Mark { writer: owners[p] });
            }
        }
        steps
    }

    /// The read of `times`' partition from offset 0, going back at each `(after, to)`: after
    /// `after` records read in all, to offset `to` (modulo where the read stands).
    fn read_with_rewinds(n: usize, rewinds: &[(usize, usize)]) -> Vec<usize> {
        let (mut order, mut at, mut k) = (Vec::new(), 0, 0);
        while at < n && order.len() < 4 * n {
            order.push(at);
            at += 1;
            if let Some(&(after, to)) = rewinds.get(k) {
                if order.len() >= after {
                    at = to % at;
                    k += 1;
                }
            }
        }
        order
    }

    #[test]
    fn a_read_that_goes_back_carries_no_time_from_after_its_record() {
        let mut marks = InputMarks::default();
        marks.reading(&[0]);
        assert_eq!(marks.forward(0, 0, Some(10)), None);
        assert_eq!(marks.forward(0, 1, Some(50)), Some(10));
        assert_eq!(marks.forward(0, 2, Some(20)), Some(50));
        // Given again from offset 1: 50 came from offset 1 itself, 20 after it.
        assert_eq!(marks.forward(0, 1, Some(50)), None);
        assert_eq!(marks.forward(0, 2, Some(20)), Some(50));
        // Given again from offset 5, past what this writer read (another read 3 and 4).
        assert_eq!(marks.forward(0, 5, Some(30)), Some(50));
    }

    proptest! {
        /// However a writer's read of a partition goes back (the partition given again from
        /// an earlier offset), the time it carries with a record is never beyond the largest
        /// event time of the records before it in the partition; read straight through, it
        /// is exactly that.
        #[test]
        fn what_a_writer_carries_is_never_ahead_of_the_partition(
            times in prop::collection::vec(0i64..1000, 1..40),
            rewinds in prop::collection::vec((1usize..60, 0usize..40), 0..4),
        ) {
            let order = read_with_rewinds(times.len(), &rewinds);
            let mut marks = InputMarks::default();
            marks.reading(&[0]);
            let mut went_back = false;
            let mut last = None;
            for &at in &order {
                went_back |= last.is_some_and(|l| at <= l);
                last = Some(at);
                let truth = times[..at].iter().copied().max();
                let carried = marks.forward(0, at as i64, Some(times[at]));
                prop_assert!(carried.is_none() || carried <= truth, "{carried:?} > {truth:?} at {at}");
                if !went_back {
                    prop_assert_eq!(carried, truth);
                }
            }
        }

        /// Behind the shuffle, a reader's watermark is never ahead of one reader of the
        /// input (so the shuffle makes no record late), and equals it whenever every writer
        /// has sent a marker since it last forwarded a record.
        #[test]
        fn a_reader_behind_the_shuffle_holds_the_watermark_one_reader_holds(
            (parts, owners, steps) in shuffle_case(),
            delay in 0i64..50,
        ) {
            let n = parts.len();
            let writers = owners.iter().max().unwrap() + 1;
            let mut one = Watermarks::new(delay, None);
            one.assign(&(0..n).collect::<Vec<_>>(), 0);
            let mut left: Vec<usize> = parts.iter().map(Vec::len).collect();
            let mut marks: Vec<InputMarks> = (0..writers).map(|_| InputMarks::default()).collect();
            for (p, &w) in owners.iter().enumerate() {
                marks[w].reading(&[p as u32]);
            }
            let mut readers: Vec<Watermarks> = (0..3).map(|_| Watermarks::new(delay, None)).collect();
            let send = |readers: &mut Vec<Watermarks>, marker: &Marker| {
                for r in readers.iter_mut() {
                    r.expect(marker.inputs as usize, 0);
                    for m in &marker.marks {
                        r.heard(m.partition as usize, m.max_event_time, m.finished, 0);
                    }
                }
            };
            // Every writer marks before its first record.
            for m in &mut marks {
                let marker = m.marker(n as u32);
                send(&mut readers, &marker);
            }
            let mut marked_since = vec![true; writers];
            for step in steps {
                match step {
                    Step::Record { partition, t, target } => {
                        let p = partition as usize;
                        one.observe(p, t, 0);
                        left[p] -= 1;
                        let w = owners[p];
                        let at = (parts[p].len() - left[p] - 1) as i64;
                        marks[w].forward(partition, at, Some(t));
                        readers[target].observe(p, t, 0);
                        marked_since[w] = false;
                        if left[p] == 0 {
                            // One reader stops waiting for a partition read to its end.
                            let reading: Vec<usize> = (0..n).filter(|&q| left[q] > 0).collect();
                            one.assign(&reading, 0);
                            marks[w].finished(partition);
                        }
                    }
                    Step::Mark { writer } => {
                        let marker = marks[writer].marker(n as u32);
                        send(&mut readers, &marker);
                        marked_since[writer] = true;
                    }
                }
                for r in &readers {
                    prop_assert!(r.current() <= one.current());
                    if marked_since.iter().all(|&m| m) {
                        prop_assert_eq!(r.current(), one.current());
                    }
                }
            }
        }
    }
}
