//! Watermarks: `W = (max event time seen) - delay`, per partition, combined as the minimum over
//! active partitions (docs/ARCHITECTURE.md, "Event time").
//!
//! Flink-exact: a window `[start, end)` is complete once `W >= end`. A partition that has seen
//! no record for `idle_timeout` of processing time stops holding `W` back; when every partition
//! is idle, `W` is the maximum over partitions (as Flink's StatusWatermarkValve does). `W` never
//! goes back. Pure: processing time is passed in.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::shuffle::Marker;
use super::time::Millis;

/// Most distinct partition values tracked (`--partition-by`); more means the field is not a
/// partition.
pub const MAX_PARTITIONS: usize = 65_536;

/// Dense ids for partition values (the JSON text of `--partition-by`), bounded.
#[derive(Debug, Default)]
pub struct PartitionIds {
    ids: FxHashMap<Box<str>, usize>,
}

impl PartitionIds {
    /// The id of `value`, or `None` when `MAX_PARTITIONS` are already known.
    pub fn id(&mut self, value: &str) -> Option<usize> {
        if let Some(id) = self.ids.get(value) {
            return Some(*id);
        }
        if self.ids.len() >= MAX_PARTITIONS {
            return None;
        }
        let id = self.ids.len();
        self.ids.insert(value.into(), id);
        Some(id)
    }

    /// The ids of the partitions a source reports reading (by their field's JSON text), for
    /// `Watermarks::assign`; values past the bound are left out.
    pub fn ids_of(&mut self, values: &[String]) -> Vec<usize> {
        values.iter().filter_map(|v| self.id(v)).collect()
    }

    /// The values in id order, for a checkpoint.
    pub fn values(&self) -> Vec<String> {
        let mut values = vec![String::new(); self.ids.len()];
        for (value, id) in &self.ids {
            values[*id] = value.to_string();
        }
        values
    }

    /// The ids `values` gave, back again.
    pub fn from_values(values: Vec<String>) -> PartitionIds {
        let mut ids = PartitionIds::default();
        for v in values {
            ids.id(&v);
        }
        ids
    }
}

/// The watermark before any record: nothing is complete.
pub const NO_WATERMARK: Millis = Millis::MIN;
/// The watermark at the end of a bounded input: everything is complete.
pub const END_OF_INPUT: Millis = Millis::MAX;

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Partition {
    max_event_time: Millis,
    last_seen: Millis,
    idle: bool,
    /// Behind a shuffle (`--repartition`): the highest input offset of this partition taken
    /// in, so that a record a restarted writer sends again is known as a repeat.
    #[serde(default = "no_offset")]
    taken: i64,
}

fn no_offset() -> i64 {
    -1
}

impl Partition {
    /// Its value in the `MinTree`: an idle partition holds nothing back.
    fn bound(&self) -> Millis {
        if self.idle {
            NOT_ACTIVE
        } else {
            self.max_event_time
        }
    }
}

/// A leaf of no active partition. Event times stop at the year 9999, far below it.
const NOT_ACTIVE: Millis = Millis::MAX;

/// The smallest of the active partitions' maxima, in a tournament tree: a record costs
/// O(log P) instead of a scan of every partition, which a `--partition-by device` with
/// thousands of values paid on every record.
#[derive(Clone, Debug, Default)]
struct MinTree {
    /// `nodes[1]` is the root, `nodes[width + i]` the leaf of partition `i`; unused leaves
    /// hold `NOT_ACTIVE`.
    nodes: Vec<Millis>,
    /// Partitions with a leaf.
    len: usize,
}

impl MinTree {
    fn new(leaves: impl ExactSizeIterator<Item = Millis>) -> MinTree {
        let len = leaves.len();
        let width = len.next_power_of_two();
        let mut nodes = vec![NOT_ACTIVE; 2 * width];
        for (i, value) in leaves.enumerate() {
            nodes[width + i] = value;
        }
        for k in (1..width).rev() {
            nodes[k] = nodes[2 * k].min(nodes[2 * k + 1]);
        }
        MinTree { nodes, len }
    }

    fn width(&self) -> usize {
        self.nodes.len() / 2
    }

    fn set(&mut self, leaf: usize, value: Millis) {
        let mut k = self.width() + leaf;
        self.nodes[k] = value;
        while k > 1 {
            k /= 2;
            self.nodes[k] = self.nodes[2 * k].min(self.nodes[2 * k + 1]);
        }
    }

    fn min(&self) -> Millis {
        self.nodes.get(1).copied().unwrap_or(NOT_ACTIVE)
    }
}

/// Serialised into a checkpoint (all but the tree, rebuilt from the partitions): its delay
/// and idle timeout are the job's, which a restore has checked are the same.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Watermarks {
    delay: Millis,
    idle_timeout: Option<Millis>,
    partitions: Vec<Partition>,
    current: Millis,
    #[serde(skip)]
    tree: MinTree,
}

impl Watermarks {
    pub fn new(delay: Millis, idle_timeout: Option<Millis>) -> Watermarks {
        Watermarks {
            delay,
            idle_timeout,
            partitions: Vec::new(),
            current: NO_WATERMARK,
            tree: MinTree::default(),
        }
    }

    pub fn current(&self) -> Millis {
        self.current
    }

    /// The watermark a record of `partition` is judged by: its own partition's, as the
    /// records before it in that partition left it, so that whether it is late depends on
    /// that partition's contents alone, not on how far the others happen to be read. Where
    /// the combined watermark stands further on (the partition was idle, or is new to a
    /// watermark that already moved), that one: what it completed is gone.
    #[inline]
    pub fn judging(&self, partition: usize) -> Millis {
        let own = match self.partitions.get(partition) {
            Some(p) => p.max_event_time.saturating_sub(self.delay),
            None => NO_WATERMARK,
        };
        own.max(self.current)
    }

    /// Each partition heard from: its id, its highest event time, and the watermark a record
    /// of it is judged by (`judging`).
    pub fn partitions(&self) -> impl Iterator<Item = (usize, Millis, Millis)> + '_ {
        (self.partitions.iter().enumerate())
            .filter(|(_, p)| p.max_event_time != NO_WATERMARK)
            .map(|(id, p)| (id, p.max_event_time, self.judging(id)))
    }

    /// The source reads exactly `assigned` from `now` on (a Kafka source's partitions, at the
    /// start or after a rebalance). As in Flink, an assigned partition holds the watermark
    /// back until it delivers or goes idle, even before its first record; one no longer
    /// assigned stops holding it back. Returns the new watermark if it advanced.
    pub fn assign(&mut self, assigned: &[usize], now: Millis) -> Option<Millis> {
        if let Some(&highest) = assigned.iter().max() {
            self.ensure(highest + 1, now);
        }
        for (id, p) in self.partitions.iter_mut().enumerate() {
            if assigned.contains(&id) {
                if p.idle {
                    p.idle = false;
                    p.last_seen = now;
                }
            } else {
                p.idle = true;
            }
        }
        self.rebuild_tree();
        self.advance()
    }

    fn rebuild_tree(&mut self) {
        self.tree = MinTree::new(self.partitions.iter().map(Partition::bound));
    }

    /// Gives every partition its leaf: after new partitions, and after a restore (the tree
    /// is not saved, so it comes back with no leaves at all). The tree doubles when full, so
    /// growing one partition at a time stays linear.
    fn sync_tree(&mut self) {
        let len = self.partitions.len();
        if self.tree.len == len {
            return;
        }
        if len > self.tree.width() {
            self.rebuild_tree();
            return;
        }
        for id in self.tree.len..len {
            self.tree.set(id, self.partitions[id].bound());
        }
        self.tree.len = len;
    }

    fn ensure(&mut self, n: usize, now: Millis) {
        if n > self.partitions.len() {
            self.partitions.resize(
                n,
                Partition {
                    max_event_time: NO_WATERMARK,
                    last_seen: now,
                    idle: false,
                    taken: no_offset(),
                },
            );
        }
    }

    /// Takes in one record's event time on `partition` at processing time `now`; returns the
    /// new watermark if it advanced. Partitions below `partition` not seen yet are created as
    /// silent ones.
    pub fn observe(&mut self, partition: usize, event_time: Millis, now: Millis) -> Option<Millis> {
        self.ensure(partition + 1, now);
        let p = &mut self.partitions[partition];
        p.last_seen = now;
        let was_idle = std::mem::replace(&mut p.idle, false);
        if event_time > p.max_event_time {
            p.max_event_time = event_time;
        } else if !was_idle {
            // Neither this partition's max nor the set of active partitions changed.
            return None;
        }
        let bound = p.bound();
        self.sync_tree();
        self.tree.set(partition, bound);
        self.advance()
    }

    /// The input has `n` partitions (behind a shuffle, or a piped envelope's count), and each
    /// holds the watermark back until a writer's marker or a record speaks for it, as every
    /// partition a reader of the input is assigned does. Returns the new watermark if it
    /// advanced.
    pub fn expect(&mut self, n: usize, now: Millis) -> Option<Millis> {
        if n <= self.partitions.len() {
            return None;
        }
        self.ensure(n, now);
        self.rebuild_tree();
        self.advance()
    }

    /// Behind a shuffle: a writer's marker says input partition `partition` has reached
    /// `max_event_time` (every record of it before the marker came before it), or that it is
    /// read to its end (`finished`), when it stops holding the watermark back, as a partition
    /// a reader of the input reads to its end does. A marker that says nothing new does not
    /// count as the partition speaking (it may still go idle). Returns the new watermark if
    /// it advanced.
    pub fn heard(
        &mut self,
        partition: usize,
        max_event_time: Option<Millis>,
        finished: bool,
        now: Millis,
    ) -> Option<Millis> {
        self.ensure(partition + 1, now);
        let p = &mut self.partitions[partition];
        let newer = max_event_time.filter(|&t| t > p.max_event_time);
        if let Some(t) = newer {
            p.max_event_time = t;
            p.last_seen = now;
            p.idle = false;
        }
        if finished {
            p.idle = true;
        }
        if newer.is_none() && !finished {
            return None;
        }
        let bound = p.bound();
        self.sync_tree();
        self.tree.set(partition, bound);
        self.advance()
    }

    /// Behind a shuffle: whether the record at `offset` of input partition `partition` is
    /// taken in for the first time. A writer forwards a partition's records in offset order,
    /// so one at or below the highest offset taken is one a restarted writer sent again.
    pub fn first_pass(&mut self, partition: usize, offset: i64, now: Millis) -> bool {
        self.ensure(partition + 1, now);
        let p = &mut self.partitions[partition];
        if offset <= p.taken {
            return false;
        }
        p.taken = offset;
        true
    }

    /// Takes in a writer's marker (`core::shuffle`); returns the new watermark if it advanced.
    pub fn marker(&mut self, marker: &Marker, now: Millis) -> Option<Millis> {
        let mut advanced = self.expect(marker.inputs as usize, now);
        for m in &marker.marks {
            let p = m.partition as usize;
            advanced = self
                .heard(p, m.max_event_time, m.finished, now)
                .or(advanced);
        }
        advanced.map(|_| self.current)
    }

    /// Marks partitions idle whose last record is `idle_timeout` old; returns the new watermark
    /// if that let it advance.
    pub fn tick(&mut self, now: Millis) -> Option<Millis> {
        let timeout = self.idle_timeout?;
        let mut changed = false;
        for p in &mut self.partitions {
            if !p.idle && now.saturating_sub(p.last_seen) >= timeout {
                p.idle = true;
                changed = true;
            }
        }
        if changed {
            self.rebuild_tree();
            self.advance()
        } else {
            None
        }
    }

    /// The end of a bounded input: every window is complete.
    pub fn end_of_input(&mut self) -> Millis {
        self.current = END_OF_INPUT;
        self.current
    }

    fn advance(&mut self) -> Option<Millis> {
        self.sync_tree();
        let candidate = match self.tree.min() {
            NOT_ACTIVE => self
                .partitions
                .iter()
                .map(|p| p.max_event_time)
                .max()?
                .saturating_sub(self.delay),
            active_min => active_min.saturating_sub(self.delay),
        };
        if candidate > self.current {
            self.current = candidate;
            Some(candidate)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn partition_ids_are_dense_and_bounded() {
        let mut p = PartitionIds::default();
        assert_eq!(p.id("\"a\""), Some(0));
        assert_eq!(p.id("3"), Some(1));
        assert_eq!(p.id("\"a\""), Some(0));
        for i in 2..MAX_PARTITIONS {
            assert_eq!(p.id(&format!("\"p{i}\"")), Some(i));
        }
        assert_eq!(p.id("one too many"), None);
    }

    #[test]
    fn an_assigned_partition_holds_the_watermark_until_it_speaks_or_idles() {
        let mut w = Watermarks::new(10, Some(1_000));
        assert_eq!(w.assign(&[0, 1], 0), None);
        // Partition 1 has said nothing: W stays where it was.
        assert_eq!(w.observe(0, 100, 10), None);
        assert_eq!(w.current(), NO_WATERMARK);
        // It speaks: W is the minimum of both.
        assert_eq!(w.observe(1, 50, 20), Some(40));
        assert_eq!(w.observe(0, 200, 30), None);
        // Silent past the idle timeout from its last record: it lets go.
        assert_eq!(w.tick(1_019), None);
        assert_eq!(w.tick(1_020), Some(190));
    }

    #[test]
    fn a_silent_assigned_partition_idles_and_a_revoked_one_lets_go() {
        let mut w = Watermarks::new(0, Some(1_000));
        w.assign(&[0, 1, 2], 0);
        w.observe(0, 100, 0);
        w.observe(1, 300, 0);
        assert_eq!(w.current(), NO_WATERMARK);
        // Partition 2 never spoke: the idle timeout, counted from the assignment, releases it.
        w.observe(0, 100, 500);
        w.observe(1, 300, 500);
        assert_eq!(w.tick(999), None);
        assert_eq!(w.tick(1_000), Some(100));
        // A rebalance takes partition 0 away: it no longer holds W back.
        assert_eq!(w.assign(&[1], 1_100), Some(300));
        // W never goes back, whatever is assigned next.
        assert_eq!(w.assign(&[0, 1], 1_200), None);
        assert_eq!(w.current(), 300);
    }

    #[test]
    fn single_partition_is_max_minus_delay() {
        let mut w = Watermarks::new(10, None);
        assert_eq!(w.current(), NO_WATERMARK);
        assert_eq!(w.observe(0, 100, 0), Some(90));
        assert_eq!(w.observe(0, 50, 0), None, "an older event does not move it");
        assert_eq!(w.observe(0, 120, 0), Some(110));
        assert_eq!(w.end_of_input(), END_OF_INPUT);
    }

    #[test]
    fn minimum_over_partitions() {
        let mut w = Watermarks::new(0, None);
        w.observe(0, 100, 0);
        assert_eq!(w.current(), 100);
        // A new partition behind the others cannot pull W back, but holds it from now on.
        assert_eq!(w.observe(1, 40, 0), None);
        assert_eq!(w.current(), 100);
        assert_eq!(w.observe(0, 200, 0), None);
        assert_eq!(w.observe(1, 150, 0), Some(150));
        assert_eq!(w.observe(1, 300, 0), Some(200));
    }

    #[test]
    fn idle_partition_stops_holding_back() {
        let mut w = Watermarks::new(0, Some(1000));
        w.observe(0, 100, 0);
        w.observe(1, 100, 0);
        assert_eq!(w.observe(0, 500, 10), None, "partition 1 holds W at 100");
        assert_eq!(w.tick(999), None);
        assert_eq!(w.tick(1000), Some(500), "partition 1 idle");
        // Partition 0 keeps going; partition 1 comes back and holds again from its own max.
        assert_eq!(
            w.observe(0, 600, 1500),
            Some(600),
            "only partition 1 is idle"
        );
        assert_eq!(w.observe(1, 200, 1600), None, "W never goes back");
        assert_eq!(w.observe(0, 700, 1700), None, "held by partition 1 at 200");
        assert_eq!(w.observe(1, 800, 1800), Some(700));
    }

    #[test]
    fn all_idle_takes_the_maximum() {
        let mut w = Watermarks::new(5, Some(10));
        w.observe(0, 100, 0);
        w.observe(1, 300, 0);
        assert_eq!(w.current(), 95);
        assert_eq!(w.tick(10), Some(295));
    }

    /// The watermark by a scan of every partition on every change: the plain rule the tree
    /// must agree with.
    struct Scan {
        delay: Millis,
        timeout: Millis,
        /// (max event time, last seen, idle)
        parts: Vec<(Millis, Millis, bool)>,
        current: Millis,
    }

    impl Scan {
        fn ensure(&mut self, n: usize, now: Millis) {
            while self.parts.len() < n {
                self.parts.push((NO_WATERMARK, now, false));
            }
        }

        fn advance(&mut self) -> Option<Millis> {
            let active = self.parts.iter().filter(|p| !p.2).map(|p| p.0).min();
            let all = self.parts.iter().map(|p| p.0).max()?;
            let w = active.unwrap_or(all).saturating_sub(self.delay);
            (w > self.current).then(|| {
                self.current = w;
                w
            })
        }

        fn observe(&mut self, id: usize, t: Millis, now: Millis) -> Option<Millis> {
            self.ensure(id + 1, now);
            let p = &mut self.parts[id];
            p.0 = p.0.max(t);
            p.1 = now;
            p.2 = false;
            self.advance()
        }

        fn tick(&mut self, now: Millis) -> Option<Millis> {
            for p in &mut self.parts {
                if now - p.1 >= self.timeout {
                    p.2 = true;
                }
            }
            self.advance()
        }

        fn assign(&mut self, ids: &[usize], now: Millis) -> Option<Millis> {
            if let Some(&highest) = ids.iter().max() {
                self.ensure(highest + 1, now);
            }
            for (id, p) in self.parts.iter_mut().enumerate() {
                if !ids.contains(&id) {
                    p.2 = true;
                } else if p.2 {
                    p.2 = false;
                    p.1 = now;
                }
            }
            self.advance()
        }
    }

    proptest! {
        /// The tree gives the scan's watermark after every step, whatever the mix of records
        /// on up to 40 partitions, idle timeouts, assignments and restores from a checkpoint.
        #[test]
        fn the_tree_agrees_with_a_scan_of_every_partition(
            ops in prop::collection::vec((0u8..12, 0usize..40, 0i64..10_000, 0i64..300), 1..300),
            delay in 0i64..500,
        ) {
            let timeout = 1_000;
            let mut w = Watermarks::new(delay, Some(timeout));
            let mut scan = Scan { delay, timeout, parts: Vec::new(), current: NO_WATERMARK };
            let mut now = 0;
            for (op, id, t, dt) in ops {
                now += dt;
                match op {
                    0 => prop_assert_eq!(w.tick(now), scan.tick(now)),
                    1 => {
                        let ids: Vec<usize> = (0..id).filter(|i| (i + t as usize) % 3 != 0).collect();
                        prop_assert_eq!(w.assign(&ids, now), scan.assign(&ids, now));
                    }
                    2 => w = crate::core::saved::decode(&crate::core::saved::encode(&w)).unwrap(),
                    _ => prop_assert_eq!(w.observe(id, t, now), scan.observe(id, t, now)),
                }
                prop_assert_eq!(w.current(), scan.current);
            }
        }

        /// W is monotonic, never above any active partition's bound, and with one partition
        /// equals max - delay after every record.
        #[test]
        fn monotonic_and_bounded(
            events in prop::collection::vec((0usize..3, 0i64..10_000, 0i64..50), 1..200),
            delay in 0i64..500,
        ) {
            let mut w = Watermarks::new(delay, Some(1_000_000));
            let mut single = Watermarks::new(delay, None);
            let mut max_per = [NO_WATERMARK; 3];
            let mut max_all = NO_WATERMARK;
            let mut now = 0;
            for (p, t, dt) in events {
                now += dt;
                let before = w.current();
                w.observe(p, t, now);
                max_per[p] = max_per[p].max(t);
                prop_assert!(w.current() >= before);
                // No partition is idle (the timeout is never reached): W is the minimum bound,
                // unless it was already higher.
                let known = max_per.iter().rposition(|m| *m != NO_WATERMARK).unwrap() + 1;
                let bound = max_per[..known].iter().min().unwrap().saturating_sub(delay);
                prop_assert_eq!(w.current(), bound.max(before));
                single.observe(0, t, now);
                max_all = max_all.max(t);
                prop_assert_eq!(single.current(), max_all - delay);
            }
        }
    }
}
