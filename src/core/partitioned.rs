//! State kept per input partition, as a consumer-group member keeps it: each Kafka partition
//! is a task of its own (its windows, ids and watermark), so that when the group moves a
//! partition to another member, its state can move with it and give the same results there.
//!
//! The state of the partition being read is the *active* one, held by the command in a field
//! of its own (its hot path reads no map); the others are parked here. Records come in runs
//! of one partition, so the swap is rare.

use std::collections::BTreeMap;

/// The parked states of the partitions a member owns, and which one is active.
#[derive(Debug)]
pub struct PerPartition<T> {
    active: Option<i32>,
    parked: BTreeMap<i32, T>,
}

impl<T> Default for PerPartition<T> {
    fn default() -> Self {
        PerPartition {
            active: None,
            parked: BTreeMap::new(),
        }
    }
}

impl<T> PerPartition<T> {
    /// Makes `partition`'s state the one in `slot`, parking the one there; a partition with
    /// no state yet starts with `fresh()`.
    pub fn activate(&mut self, slot: &mut T, partition: i32, fresh: impl FnOnce() -> T) {
        if self.active == Some(partition) {
            return;
        }
        let next = self.parked.remove(&partition).unwrap_or_else(fresh);
        let previous = std::mem::replace(slot, next);
        // With no partition active, the slot held a stand-in: it goes.
        if let Some(was) = self.active.replace(partition) {
            self.parked.insert(was, previous);
        }
    }

    /// Takes `partition`'s state out (it was revoked), leaving a fresh stand-in in `slot` if
    /// it was the active one.
    pub fn take(&mut self, slot: &mut T, partition: i32, fresh: impl FnOnce() -> T) -> Option<T> {
        if self.active == Some(partition) {
            self.active = None;
            return Some(std::mem::replace(slot, fresh()));
        }
        self.parked.remove(&partition)
    }

    /// Gives `partition` this state (restored), replacing any it had.
    pub fn put(&mut self, slot: &mut T, partition: i32, state: T) {
        if self.active == Some(partition) {
            *slot = state;
        } else {
            self.parked.insert(partition, state);
        }
    }

    /// `partition`'s state, wherever it is.
    pub fn get<'a>(&'a self, slot: &'a T, partition: i32) -> Option<&'a T> {
        if self.active == Some(partition) {
            Some(slot)
        } else {
            self.parked.get(&partition)
        }
    }

    /// Every partition's state, the active one first.
    pub fn for_each(&mut self, slot: &mut T, mut f: impl FnMut(i32, &mut T)) {
        if let Some(p) = self.active {
            f(p, slot);
        }
        for (&p, state) in &mut self.parked {
            f(p, state);
        }
    }

    /// The partitions with state.
    pub fn partitions(&self) -> Vec<i32> {
        let mut all: Vec<i32> = self.parked.keys().copied().chain(self.active).collect();
        all.sort_unstable();
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_partition_keeps_its_own_state_across_switches() {
        let mut parts = PerPartition::default();
        let mut slot = 0u32;
        for (p, add) in [(1, 10), (2, 1), (1, 5), (3, 7), (2, 2)] {
            parts.activate(&mut slot, p, || 0);
            slot += add;
        }
        assert_eq!(parts.get(&slot, 1), Some(&15));
        assert_eq!(parts.get(&slot, 2), Some(&3));
        assert_eq!(parts.get(&slot, 3), Some(&7));
        assert_eq!(parts.partitions(), vec![1, 2, 3]);
        let mut seen = Vec::new();
        parts.for_each(&mut slot, |p, s| seen.push((p, *s)));
        seen.sort();
        assert_eq!(seen, vec![(1, 15), (2, 3), (3, 7)]);
    }

    #[test]
    fn a_taken_partition_starts_afresh_and_a_put_one_goes_on() {
        let mut parts = PerPartition::default();
        let mut slot = 0u32;
        parts.activate(&mut slot, 4, || 0);
        slot += 9;
        // The active one is taken: the slot holds a stand-in that no partition owns.
        assert_eq!(parts.take(&mut slot, 4, || 0), Some(9));
        assert_eq!(parts.partitions(), Vec::<i32>::new());
        parts.put(&mut slot, 4, 20);
        parts.activate(&mut slot, 4, || 0);
        assert_eq!(slot, 20);
        parts.activate(&mut slot, 5, || 100);
        assert_eq!(slot, 100);
        assert_eq!(parts.take(&mut slot, 4, || 0), Some(20));
        assert_eq!(parts.take(&mut slot, 6, || 0), None);
    }
}
