//! State kept per input partition, as a consumer-group member keeps it: each Kafka partition
//! is a task of its own (its windows, ids and watermark), so that when the group moves a
//! partition to another member, its state can move with it and give the same results there.
//!
//! The state of the partition being read is the *active* one, held by the command in a field
//! of its own (its hot path reads no map); the others are parked here. Records come in runs
//! of one partition, so the swap is rare.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::saved;

/// The task number a Kinesis member keeps shard `id`'s state under, as a Kafka member keeps
/// a partition's under its number: the shard's own number (`shardId-000000000007` is 7);
/// for an id of another form, a hash of it. Numbers stay within one process: a shard's saved
/// state is named by its id.
pub fn shard_task(id: &str) -> i32 {
    let digits = id.trim_start_matches(|c: char| !c.is_ascii_digit());
    match digits.parse::<u64>() {
        Ok(n) if n <= i32::MAX as u64 => n as i32,
        _ => {
            // FNV-1a, kept positive.
            let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
            });
            (hash & 0x7fff_ffff) as i32
        }
    }
}

/// A parent shard's last state as one of its children starts from it (a split or merge of
/// a Kinesis stream): `owns` says which partition keys (as a record's would spell its state
/// key) go to this child; `whole` whether what no key names (counts, a profile) does, which
/// goes to exactly one child of each parent.
pub struct Parent<S> {
    pub saved: S,
    pub whole: bool,
}

/// A partition's state that a group member saves for the partition's next owner.
pub trait PartitionTask: Sized {
    /// What is saved of it.
    type Saved: Serialize + DeserializeOwned;
    fn saved(&self) -> Self::Saved;
    /// `fresh` (a new partition's state) going on from `saved`.
    fn restored(fresh: Self, saved: Self::Saved) -> Result<Self, String>;
    /// `fresh` (a child shard's state) going on from its parents' last states, taking the keys
    /// `owns` says are the child's.
    fn inherited(
        fresh: Self,
        parents: Vec<Parent<Self::Saved>>,
        owns: &dyn Fn(&str) -> bool,
    ) -> Result<Self, String>;
}

/// The parked states of the partitions a member owns, which one is active, and how a
/// partition with no state yet starts.
pub struct PerPartition<T> {
    active: Option<i32>,
    parked: BTreeMap<i32, T>,
    fresh: Box<dyn Fn() -> T>,
}

impl<T> PerPartition<T> {
    /// No partition yet; one starts with `fresh()`.
    pub fn new(fresh: impl Fn() -> T + 'static) -> PerPartition<T> {
        PerPartition {
            active: None,
            parked: BTreeMap::new(),
            fresh: Box::new(fresh),
        }
    }

    /// A new partition's state.
    pub fn fresh(&self) -> T {
        (self.fresh)()
    }

    /// Makes `partition`'s state the one in `slot`, parking the one there.
    pub fn activate(&mut self, slot: &mut T, partition: i32) {
        if self.active == Some(partition) {
            return;
        }
        let next = match self.parked.remove(&partition) {
            Some(state) => state,
            None => self.fresh(),
        };
        let previous = std::mem::replace(slot, next);
        // With no partition active, the slot held a stand-in: it goes.
        if let Some(was) = self.active.replace(partition) {
            self.parked.insert(was, previous);
        }
    }

    /// Takes `partition`'s state out (it was revoked), leaving a fresh stand-in in `slot` if
    /// it was the active one.
    pub fn take(&mut self, slot: &mut T, partition: i32) -> Option<T> {
        if self.active == Some(partition) {
            self.active = None;
            return Some(std::mem::replace(slot, self.fresh()));
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

    /// Every partition's state, to look at.
    pub fn each<'a>(&'a self, slot: &'a T, mut f: impl FnMut(i32, &T)) {
        if let Some(p) = self.active {
            f(p, slot);
        }
        for (&p, state) in &self.parked {
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

impl<T: PartitionTask> PerPartition<T> {
    /// `partition`'s state, encoded for its next owner; empty when it has none.
    pub fn save(&self, slot: &T, partition: i32) -> Vec<u8> {
        self.get(slot, partition)
            .map(|state| saved::encode(&state.saved()))
            .unwrap_or_default()
    }

    /// Gives `partition` (a child shard) the state its parents' last states hand it (each
    /// as `save` made it, with whether what no key names goes to it): the keys `owns` says.
    pub fn inherit(
        &mut self,
        slot: &mut T,
        partition: i32,
        parents: &[(&[u8], bool)],
        owns: &dyn Fn(&str) -> bool,
    ) -> Result<(), String> {
        let mut decoded = Vec::new();
        for (bytes, whole) in parents.iter().filter(|(b, _)| !b.is_empty()) {
            let saved = saved::decode(bytes)?;
            decoded.push(Parent {
                saved,
                whole: *whole,
            });
        }
        if decoded.is_empty() {
            return Ok(());
        }
        let state = T::inherited(self.fresh(), decoded, owns)?;
        self.put(slot, partition, state);
        Ok(())
    }

    /// Gives `partition` the state its last owner saved (`bytes`, as `save` made them; empty:
    /// none, it starts afresh).
    pub fn restore(&mut self, slot: &mut T, partition: i32, bytes: &[u8]) -> Result<(), String> {
        if bytes.is_empty() {
            return Ok(());
        }
        let state = T::restored(self.fresh(), saved::decode(bytes)?)?;
        self.put(slot, partition, state);
        Ok(())
    }
}

/// What a consumer-group member does with the states of the partitions it owns, as the
/// runtime asks: each moves with its partition.
pub trait PartitionStates {
    /// `partition`'s state, encoded for its next owner; empty when it has none.
    fn save(&self, partition: i32) -> Vec<u8>;
    /// `partition` goes on from `state`, as its last owner saved it.
    fn restore(&mut self, partition: i32, state: &[u8]) -> Result<(), String>;
    /// `partition` is no longer this member's: its state goes (saved before, if it was
    /// revoked; lost with it, if the group gave it away for a missed heartbeat).
    fn revoke(&mut self, partition: i32);
    /// `partition`, a child shard, starts from its parents' last states (`parents`, each
    /// with whether what no key names goes to it), taking the keys `owns` says are its own.
    fn inherit(
        &mut self,
        partition: i32,
        parents: &[(&[u8], bool)],
        owns: &dyn Fn(&str) -> bool,
    ) -> Result<(), String>;
}

/// A command's tasks (its windows, ids or profile, with their watermark): one for the whole
/// run, or, for a consumer-group member, one per input partition it owns.
pub struct Tasks<T> {
    /// The task records go to: the run's, or the partition being read's.
    pub active: T,
    /// A group member's other partitions' tasks.
    parked: Option<PerPartition<T>>,
    /// Partitions read to their end whose last output went out (`end_partition`): what a
    /// save gives their next owner is their state as it stood before it.
    ended: BTreeMap<i32, Vec<u8>>,
}

impl<T> Tasks<T> {
    /// The run's task, `first`; or, for a group member (`per_partition`), one per partition,
    /// each starting as `fresh()`, `first` standing in until a partition is read.
    pub fn new(per_partition: bool, first: T, fresh: impl Fn() -> T + 'static) -> Tasks<T> {
        Tasks {
            active: first,
            parked: per_partition.then(|| PerPartition::new(fresh)),
            ended: BTreeMap::new(),
        }
    }

    /// One task for the whole run.
    pub fn one(task: T) -> Tasks<T> {
        Tasks {
            active: task,
            parked: None,
            ended: BTreeMap::new(),
        }
    }

    /// A task per partition, each starting as `fresh()`.
    pub fn per_partition(fresh: impl Fn() -> T + 'static) -> Tasks<T> {
        Tasks {
            active: fresh(),
            parked: Some(PerPartition::new(fresh)),
            ended: BTreeMap::new(),
        }
    }

    pub fn is_per_partition(&self) -> bool {
        self.parked.is_some()
    }

    /// Makes the task of `partition` (a record's) the active one, for a group member.
    #[inline]
    pub fn activate(&mut self, partition: Option<i32>) {
        if let (Some(parked), Some(p)) = (&mut self.parked, partition) {
            parked.activate(&mut self.active, p);
        }
    }

    /// Runs `f` on every task, the active one first.
    pub fn for_each(&mut self, mut f: impl FnMut(&mut T)) {
        match &mut self.parked {
            Some(parked) => parked.for_each(&mut self.active, |_, t| f(t)),
            None => f(&mut self.active),
        }
    }

    /// Looks at every task (none is made or moved).
    pub fn each(&self, mut f: impl FnMut(&T)) {
        match &self.parked {
            Some(parked) => parked.each(&self.active, |_, t| f(t)),
            None => f(&self.active),
        }
    }

    /// A new partition's task, for a group member.
    pub fn fresh(&self) -> Option<T> {
        self.parked.as_ref().map(PerPartition::fresh)
    }
}

impl<T: PartitionTask> Tasks<T> {
    /// As `new`, the run's first task going on from a checkpoint's `saved` state if there is
    /// one.
    pub fn resumed(
        per_partition: bool,
        fresh: impl Fn() -> T + 'static,
        saved: Option<T::Saved>,
    ) -> Result<Tasks<T>, String> {
        let first = match saved {
            Some(saved) => T::restored(fresh(), saved)?,
            None => fresh(),
        };
        Ok(Tasks::new(per_partition, first, fresh))
    }

    /// A group member's `partition` was read to its end (`-e`): its task has all its input,
    /// and `last` writes its last output (the windows it holds, the records it holds back)
    /// now, while the member still owns it, rather than at the run's end. What is saved for
    /// its next owner stays its state before that, so that a run over more of the topic goes
    /// on from it (and a next owner that restores it writes the same last output again).
    pub fn end_partition(&mut self, partition: i32, last: impl FnOnce(&mut T)) {
        let Some(parked) = &mut self.parked else {
            return;
        };
        parked.activate(&mut self.active, partition);
        let before = parked.save(&self.active, partition);
        last(&mut self.active);
        self.ended.insert(partition, before);
    }
}

impl<T: PartitionTask> PartitionStates for Tasks<T> {
    fn save(&self, partition: i32) -> Vec<u8> {
        if let Some(before) = self.ended.get(&partition) {
            return before.clone();
        }
        match &self.parked {
            Some(parked) => parked.save(&self.active, partition),
            None => Vec::new(),
        }
    }

    fn restore(&mut self, partition: i32, state: &[u8]) -> Result<(), String> {
        self.ended.remove(&partition);
        match &mut self.parked {
            Some(parked) => parked.restore(&mut self.active, partition, state),
            None => Err("this run keeps no state per partition".into()),
        }
    }

    fn revoke(&mut self, partition: i32) {
        self.ended.remove(&partition);
        if let Some(parked) = &mut self.parked {
            parked.take(&mut self.active, partition);
        }
    }

    fn inherit(
        &mut self,
        partition: i32,
        parents: &[(&[u8], bool)],
        owns: &dyn Fn(&str) -> bool,
    ) -> Result<(), String> {
        self.ended.remove(&partition);
        match &mut self.parked {
            Some(parked) => parked.inherit(&mut self.active, partition, parents, owns),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_task_is_its_number_or_a_hash() {
        assert_eq!(shard_task("shardId-000000000007"), 7);
        assert_eq!(shard_task("shardId-000000000000"), 0);
        let other = shard_task("my-shard");
        assert!(other >= 0);
        assert_eq!(other, shard_task("my-shard"));
        assert_ne!(other, shard_task("my-shard-2"));
    }

    #[test]
    fn each_partition_keeps_its_own_state_across_switches() {
        let mut parts = PerPartition::new(|| 0u32);
        let mut slot = 0u32;
        for (p, add) in [(1, 10), (2, 1), (1, 5), (3, 7), (2, 2)] {
            parts.activate(&mut slot, p);
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

    impl PartitionTask for Vec<u32> {
        type Saved = Vec<u32>;
        fn saved(&self) -> Vec<u32> {
            self.clone()
        }
        fn restored(_: Self, saved: Vec<u32>) -> Result<Self, String> {
            Ok(saved)
        }
        /// The numbers `owns` takes (by their text), in the parents' order.
        fn inherited(
            _: Self,
            parents: Vec<Parent<Vec<u32>>>,
            owns: &dyn Fn(&str) -> bool,
        ) -> Result<Self, String> {
            let all = parents.into_iter().flat_map(|p| p.saved);
            Ok(all.filter(|n| owns(&n.to_string())).collect())
        }
    }

    /// A child starts from its parents' saved states, taking what it owns; parents with
    /// nothing saved give nothing.
    #[test]
    fn a_child_inherits_what_it_owns_of_its_parents() {
        let mut parents: Tasks<Vec<u32>> = Tasks::per_partition(Vec::new);
        parents.activate(Some(1));
        parents.active.extend([1, 2, 3]);
        parents.activate(Some(2));
        parents.active.extend([4, 5]);
        let (one, two) = (
            PartitionStates::save(&parents, 1),
            PartitionStates::save(&parents, 2),
        );
        let mut child: Tasks<Vec<u32>> = Tasks::per_partition(Vec::new);
        let even = |key: &str| key.parse::<u32>().unwrap() % 2 == 0;
        let from = [
            (one.as_slice(), true),
            (&[][..], false),
            (two.as_slice(), false),
        ];
        child.inherit(7, &from, &even).unwrap();
        child.activate(Some(7));
        assert_eq!(child.active, vec![2, 4]);
        child.inherit(8, &[(&[][..], true)], &even).unwrap();
        assert_eq!(child.save(8), Vec::<u8>::new(), "nothing to inherit");
    }

    /// A partition read to its end writes its last output at once; its next owner is given
    /// its state from before, and a restore or a revocation forgets the difference.
    #[test]
    fn an_ended_partition_saves_its_state_from_before_its_last_output() {
        let mut tasks: Tasks<Vec<u32>> = Tasks::per_partition(Vec::new);
        tasks.activate(Some(2));
        tasks.active.push(7);
        let before = tasks.save(2);
        tasks.end_partition(2, |t| t.clear());
        assert!(tasks.active.is_empty(), "the last output went out");
        assert_eq!(tasks.save(2), before);
        tasks.restore(2, &before).unwrap();
        tasks.activate(Some(2));
        assert_eq!(tasks.active, vec![7]);
        tasks.end_partition(2, |t| t.push(8));
        tasks.revoke(2);
        assert_eq!(
            tasks.save(2),
            Vec::<u8>::new(),
            "revoked: nothing of it is left"
        );
    }

    #[test]
    fn a_taken_partition_starts_afresh_and_a_put_one_goes_on() {
        let mut parts = PerPartition::new(|| 0u32);
        let mut slot = 0u32;
        parts.activate(&mut slot, 4);
        slot += 9;
        // The active one is taken: the slot holds a stand-in that no partition owns.
        assert_eq!(parts.take(&mut slot, 4), Some(9));
        assert_eq!(parts.partitions(), Vec::<i32>::new());
        parts.put(&mut slot, 4, 20);
        parts.activate(&mut slot, 4);
        assert_eq!(slot, 20);
        parts.activate(&mut slot, 5);
        assert_eq!(slot, 0);
        assert_eq!(parts.take(&mut slot, 4), Some(20));
        assert_eq!(parts.take(&mut slot, 6), None);
    }

    /// A count that a restore adds to the fresh state's, so that the test sees both.
    impl PartitionTask for u32 {
        type Saved = u32;
        fn saved(&self) -> u32 {
            *self
        }
        fn restored(fresh: u32, saved: u32) -> Result<u32, String> {
            Ok(fresh + saved)
        }
        fn inherited(
            fresh: u32,
            parents: Vec<Parent<u32>>,
            _: &dyn Fn(&str) -> bool,
        ) -> Result<u32, String> {
            Ok(fresh
                + parents
                    .iter()
                    .filter(|p| p.whole)
                    .map(|p| p.saved)
                    .sum::<u32>())
        }
    }

    #[test]
    fn a_saved_partition_restores_onto_a_fresh_state() {
        let mut parts = PerPartition::new(|| 100u32);
        let mut slot = 0u32;
        parts.activate(&mut slot, 1);
        slot += 5;
        let bytes = parts.save(&slot, 1);
        assert!(parts.save(&slot, 2).is_empty(), "no state, nothing saved");
        let mut next = PerPartition::new(|| 100u32);
        let mut other = 0u32;
        next.restore(&mut other, 1, &bytes).unwrap();
        next.restore(&mut other, 2, &[]).unwrap();
        assert_eq!(next.partitions(), vec![1], "an empty save restores nothing");
        next.activate(&mut other, 1);
        assert_eq!(other, 205);
        assert!(next.restore(&mut other, 3, &[0xff; 3]).is_err());
    }

    /// A group member's tasks move through the runtime's `PartitionStates`; a run's one task
    /// has none to move.
    #[test]
    fn tasks_save_restore_and_revoke_per_partition() {
        let mut tasks = Tasks::new(true, 0u32, || 100u32);
        tasks.activate(Some(1));
        tasks.active += 5;
        tasks.activate(Some(2));
        tasks.active += 1;
        let saved = PartitionStates::save(&tasks, 1);
        PartitionStates::revoke(&mut tasks, 2);
        assert_eq!(
            tasks.active, 100,
            "the revoked active task leaves a fresh stand-in"
        );
        let mut other = Tasks::new(true, 0u32, || 100u32);
        other.restore(1, &saved).unwrap();
        other.activate(Some(1));
        assert_eq!(other.active, 205, "restored onto a fresh task");
        let mut seen = Vec::new();
        other.for_each(|t| seen.push(*t));
        assert_eq!(seen, vec![205]);
        let mut one = Tasks::one(7u32);
        one.activate(Some(3));
        assert_eq!(one.active, 7, "a run's one task takes every partition");
        assert!(PartitionStates::save(&one, 3).is_empty());
        assert!(one.restore(3, &saved).is_err());
        assert!(one.fresh().is_none() && tasks.fresh() == Some(100));
    }
}
