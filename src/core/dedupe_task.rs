//! A dedupe run's task: the ids it remembers (hashed or as text, keeping each id's first
//! record or its last) and the watermarks its horizon is measured by. A run has one; a
//! consumer-group member has one per input partition it owns, which moves with the
//! partition (`PartitionTask`).

use serde::{Deserialize, Serialize};

use super::dedupe::{
    halves, hash_id128, Clocks, DedupeCounts, Deduper, DeduperState, IdHash, Verdict,
};
use super::partitioned::{Parent, PartitionTask};
use super::time::Millis;
use super::watermark::{PartitionIds, Watermarks};
use super::window::partition_key_of;

/// Which record of an id's group is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Keep {
    /// The first record of each id within the horizon, written as it arrives.
    #[default]
    First,
    /// The last record of each id within the horizon, written when the id is forgotten.
    Last,
}

/// The flags a new task is made with.
#[derive(Clone, Copy, Debug)]
pub struct TaskSpec {
    pub keep: Keep,
    /// Ids kept as their text (`--exact-ids`), not as a 128-bit hash.
    pub exact_ids: bool,
    pub horizon: Option<Millis>,
    pub max_keys: usize,
    pub delay: Millis,
    pub idle_timeout: Option<Millis>,
}

impl TaskSpec {
    /// A task that remembers nothing yet.
    pub fn fresh(&self) -> Task {
        let (horizon, max) = (self.horizon, self.max_keys);
        let ids = match (self.keep, self.exact_ids) {
            (Keep::First, true) => Ids::Exact(Deduper::new(horizon, max)),
            (Keep::First, false) => Ids::Hashed(Deduper::new(horizon, max)),
            (Keep::Last, true) => Ids::ExactLast(Deduper::keeping_last(horizon, max)),
            (Keep::Last, false) => Ids::HashedLast(Deduper::keeping_last(horizon, max)),
        };
        Task {
            ids,
            partitions: PartitionIds::default(),
            watermarks: Watermarks::new(self.delay, self.idle_timeout),
            seq: 0,
        }
    }
}

/// The ids remembered and the watermarks: of the whole run, or, for a consumer-group
/// member, of one partition.
pub struct Task {
    pub ids: Ids,
    /// The values of `--partition-by` seen, as the watermarks number them.
    pub partitions: PartitionIds,
    pub watermarks: Watermarks,
    /// Records seen, the stand-in for time without --time.
    pub seq: Millis,
}

/// What a checkpoint keeps of a task: a run's ids and watermarks, or one partition's.
#[derive(Serialize, Deserialize)]
pub struct TaskState {
    ids: IdsState,
    partitions: Vec<String>,
    watermarks: Watermarks,
    seq: Millis,
}

impl Task {
    /// The clocks of an event-time horizon for a record of `partition`: its own partition's
    /// watermark judges it, the run's forgets.
    pub fn event_clocks(&self, partition: usize) -> Clocks {
        Clocks {
            judge: self.watermarks.judging(partition),
            forget: self.watermarks.current(),
        }
    }

    /// Judges a record (keep-first) of `id` at time `t` against `clock`; the watermark then
    /// observes it, when the horizon is in event time (`observe`: its partition and the
    /// processing time).
    /// `hash` is the id's `hash_id128` when the caller has it already (see `AheadHashes`).
    #[inline]
    pub fn check(
        &mut self,
        (id, hash): (&str, Option<u128>),
        t: Millis,
        clock: Clocks,
        observe: Option<(usize, Millis)>,
    ) -> Verdict {
        let verdict = self.ids.check_hashed(id, hash, t, clock);
        if let Some((partition, now)) = observe {
            self.watermarks.observe(partition, t, now);
        }
        verdict
    }

    /// Holds a record (`--keep last`) as `check` judges one (`hash` as there), and returns
    /// the record it replaces, a duplicate now; the held records whose groups ended go to
    /// `released`.
    pub fn hold(
        &mut self,
        (id, hash): (&str, Option<u128>),
        (t, clock): (Millis, Clocks),
        bytes: &[u8],
        observe: Option<(usize, Millis)>,
        released: &mut Vec<(Millis, Held)>,
    ) -> Option<Held> {
        let held = Held {
            seq: self.seq as u64,
            bytes: bytes.into(),
        };
        let replaced = self.ids.check_held_hashed(id, hash, t, clock, held);
        if let Some((partition, now)) = observe {
            self.watermarks.observe(partition, t, now);
        }
        self.ids.take_released(released);
        replaced
    }

    /// Time moves on without records, to `now`: the clock is the watermark for an
    /// event-time horizon (a silent partition may go idle), else `now` itself. What expired
    /// is forgotten, and the held records whose groups ended go to `released`.
    pub fn advance(&mut self, now: Millis, event_time: bool, released: &mut Vec<(Millis, Held)>) {
        let clock = match event_time {
            true => {
                self.watermarks.tick(now);
                self.watermarks.current()
            }
            false => now,
        };
        self.ids.advance(clock);
        self.ids.take_released(released);
    }
}

impl PartitionTask for Task {
    type Saved = TaskState;

    fn saved(&self) -> TaskState {
        TaskState {
            ids: self.ids.state(),
            partitions: self.partitions.values(),
            watermarks: self.watermarks.clone(),
            seq: self.seq,
        }
    }

    fn restored(mut fresh: Task, state: TaskState) -> Result<Task, String> {
        fresh.ids.restore(state.ids)?;
        fresh.partitions = PartitionIds::from_values(state.partitions);
        fresh.watermarks = state.watermarks;
        fresh.seq = state.seq;
        Ok(fresh)
    }

    /// A child shard's ids: its parents' (an id of a sibling's key never comes here, so
    /// keeping it costs only room; a held record goes to the child of its partition key), with
    /// the watermark of the parent furthest behind.
    fn inherited(
        fresh: Task,
        parents: Vec<Parent<TaskState>>,
        owns: &dyn Fn(&str) -> bool,
    ) -> Result<Task, String> {
        let Some(behind) = (parents.iter())
            .min_by_key(|p| p.saved.watermarks.current())
            .map(|p| (p.saved.partitions.clone(), p.saved.watermarks.clone()))
        else {
            return Ok(fresh);
        };
        let seq = parents
            .iter()
            .map(|p| p.saved.seq)
            .max()
            .unwrap_or(Millis::MIN);
        let ids = (parents.into_iter())
            .map(|Parent { saved, whole }| (saved.ids, whole))
            .collect();
        let state = TaskState {
            ids: IdsState::merged(ids, owns)?,
            partitions: behind.0,
            watermarks: behind.1,
            seq,
        };
        Task::restored(fresh, state)
    }
}

/// Whether a held record (an envelope) is of a partition key `owns` says is the child's.
fn held_owned(held: &Held, owns: &dyn Fn(&str) -> bool) -> bool {
    #[derive(Deserialize)]
    struct Keyed {
        key: Option<String>,
    }
    match serde_json::from_slice::<Keyed>(&held.bytes) {
        Ok(Keyed { key: Some(key) }) => owns(&key),
        // Not an envelope: the record goes on in every child rather than in none.
        _ => true,
    }
}

impl IdsState {
    /// Parents' ids as one child's (see `Task::inherited`).
    fn merged(
        parts: Vec<(IdsState, bool)>,
        owns: &dyn Fn(&str) -> bool,
    ) -> Result<IdsState, String> {
        let exact = |id: &str| owns(&partition_key_of(id));
        let held = |h: &Held| held_owned(h, owns);
        Ok(match parts.first().map(|p| &p.0) {
            None | Some(IdsState::Hashed(_)) => {
                let parts = of_kind(parts, |s| match s {
                    IdsState::Hashed(d) => Some(d),
                    _ => None,
                })?;
                IdsState::Hashed(DeduperState::merged(parts, |_, _| true))
            }
            Some(IdsState::Exact(_)) => {
                let parts = of_kind(parts, |s| match s {
                    IdsState::Exact(d) => Some(d),
                    _ => None,
                })?;
                IdsState::Exact(DeduperState::merged(parts, |id, _| exact(id)))
            }
            Some(IdsState::HashedLast(_)) => {
                let parts = of_kind(parts, |s| match s {
                    IdsState::HashedLast(d) => Some(d),
                    _ => None,
                })?;
                IdsState::HashedLast(DeduperState::merged(parts, |_, h| held(h)))
            }
            Some(IdsState::ExactLast(_)) => {
                let parts = of_kind(parts, |s| match s {
                    IdsState::ExactLast(d) => Some(d),
                    _ => None,
                })?;
                IdsState::ExactLast(DeduperState::merged(parts, |id, h| exact(id) && held(h)))
            }
        })
    }
}

/// A parent's ids, with whether its counts go to the child.
type ParentIds<S, H> = (DeduperState<S, H>, bool);

/// The parents' ids, all of the kind `take` picks out; another kind is an error.
fn of_kind<S, H>(
    parts: Vec<(IdsState, bool)>,
    take: fn(IdsState) -> Option<DeduperState<S, H>>,
) -> Result<Vec<ParentIds<S, H>>, String> {
    (parts.into_iter())
        .map(|(state, whole)| {
            let ids =
                take(state).ok_or("the parent shards keep ids of another --keep or --exact-ids")?;
            Ok((ids, whole))
        })
        .collect()
}

/// The ids as a checkpoint keeps them, one variant per kind of `Ids`.
#[derive(Serialize, Deserialize)]
enum IdsState {
    Hashed(DeduperState<[u8; 16], ()>),
    Exact(DeduperState<Box<str>, ()>),
    HashedLast(DeduperState<[u8; 16], Held>),
    ExactLast(DeduperState<Box<str>, Held>),
}

/// Remembered ids: hashed (the default) or as text (`--exact-ids`); with `--keep last`,
/// each with its latest record.
pub enum Ids {
    Hashed(Deduper<IdHash>),
    Exact(Deduper<Box<str>>),
    HashedLast(Deduper<IdHash, Held>),
    ExactLast(Deduper<Box<str>, Held>),
}

/// A record held for `--keep last`: its place in the input (to order what is released
/// together, and to name it in errors) and its bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    pub seq: u64,
    pub bytes: Box<[u8]>,
}

/// The hashes of the ids a step has looked ahead at (to prefetch their places), in input
/// order, so that each id's text is hashed once: `take` gives a record's id its hash back.
/// Ids are told apart by where their text lies, so the hashes are for one chunk of input
/// (`clear` before the next): its lines stay where they are until it is done.
#[derive(Default)]
pub struct AheadHashes {
    ring: [(usize, usize, u128); AHEAD_HASHES],
    pushed: usize,
    taken: usize,
}

/// Hashes kept: more than a step looks ahead.
const AHEAD_HASHES: usize = 32;

impl AheadHashes {
    pub fn clear(&mut self) {
        (self.pushed, self.taken) = (0, 0);
    }

    /// Hashes `id` and keeps its hash for `take`; the oldest is let go when all are kept.
    #[inline]
    pub fn push(&mut self, id: &str) -> u128 {
        let hash = hash_id128(id.as_bytes());
        self.taken = self
            .taken
            .max((self.pushed + 1).saturating_sub(AHEAD_HASHES));
        self.ring[self.pushed % AHEAD_HASHES] = (id.as_ptr() as usize, id.len(), hash);
        self.pushed += 1;
        hash
    }

    /// The hash `push` kept for this very text (the same place in the chunk), letting go of
    /// those before it (records that were not checked); `None` when it has none.
    #[inline]
    pub fn take(&mut self, id: &str) -> Option<u128> {
        while self.taken < self.pushed {
            let (at, len, hash) = self.ring[self.taken % AHEAD_HASHES];
            self.taken += 1;
            if (at, len) == (id.as_ptr() as usize, id.len()) {
                return Some(hash);
            }
        }
        None
    }
}

impl Ids {
    /// `check_hashed` without a hash at hand.
    #[cfg(test)]
    pub fn check(&mut self, id: &str, t: Millis, clock: impl Into<Clocks>) -> Verdict {
        self.check_hashed(id, None, t, clock)
    }

    /// Judges a record (keep-first), with the id's `hash_id128` when the caller has it already.
    /// Only a verdict comes back: the hot path keeps it in a register, where a wider result
    /// would be stored and reloaded across the watermark call, and that reload waits behind
    /// the table's cache-missing stores.
    #[inline]
    pub fn check_hashed(
        &mut self,
        id: &str,
        hash: Option<u128>,
        t: Millis,
        clock: impl Into<Clocks>,
    ) -> Verdict {
        let clock = clock.into();
        let hash = hash.unwrap_or_else(|| hash_id128(id.as_bytes()));
        match self {
            Ids::Hashed(d) => d.check_hashed(&halves(hash), hash, t, clock),
            // Placed by the same hash of the text, and copied only when remembered.
            Ids::Exact(d) => d.check_hashed(id, hash, t, clock),
            Ids::HashedLast(_) | Ids::ExactLast(_) => unreachable!("keep-last uses check_held"),
        }
    }

    /// Brings the place of the id whose `hash_id128` is `hash` into cache, for a check soon
    /// after. Hashed and exact ids are both placed by the hash of their text.
    #[inline]
    pub fn prefetch(&self, hash: u128) {
        match self {
            Ids::Hashed(d) => d.prefetch(hash),
            Ids::Exact(d) => d.prefetch(hash),
            Ids::HashedLast(d) => d.prefetch(hash),
            Ids::ExactLast(d) => d.prefetch(hash),
        }
    }

    /// `check_held_hashed` without a hash at hand.
    #[cfg(test)]
    pub fn check_held(
        &mut self,
        id: &str,
        t: Millis,
        clock: impl Into<Clocks>,
        record: Held,
    ) -> Option<Held> {
        self.check_held_hashed(id, None, t, clock, record)
    }

    /// Judges a record for `--keep last`, with the id's `hash_id128` when the caller has it
    /// already: holds it, and returns the record it replaces.
    pub fn check_held_hashed(
        &mut self,
        id: &str,
        hash: Option<u128>,
        t: Millis,
        clock: impl Into<Clocks>,
        record: Held,
    ) -> Option<Held> {
        let clock = clock.into();
        let hash = hash.unwrap_or_else(|| hash_id128(id.as_bytes()));
        match self {
            Ids::HashedLast(d) => d.check_held_hashed(&halves(hash), hash, t, clock, record).1,
            Ids::ExactLast(d) => d.check_held_hashed(id, hash, t, clock, record).1,
            Ids::Hashed(_) | Ids::Exact(_) => unreachable!("keep-first uses check"),
        }
    }

    /// Forgets what expired by `clock`.
    pub fn advance(&mut self, clock: Millis) {
        match self {
            Ids::Hashed(d) => d.advance(clock),
            Ids::Exact(d) => d.advance(clock),
            Ids::HashedLast(d) => d.advance(clock),
            Ids::ExactLast(d) => d.advance(clock),
        }
    }

    /// The held records whose ids were forgotten, each with the time its group opened.
    pub fn take_released(&mut self, out: &mut Vec<(Millis, Held)>) {
        match self {
            Ids::HashedLast(d) => d.take_released(out),
            Ids::ExactLast(d) => d.take_released(out),
            Ids::Hashed(_) | Ids::Exact(_) => {}
        }
    }

    /// Every record still held, at the end of the input.
    pub fn finish(&mut self, out: &mut Vec<(Millis, Held)>) {
        match self {
            Ids::HashedLast(d) => d.finish(out),
            Ids::ExactLast(d) => d.finish(out),
            Ids::Hashed(_) | Ids::Exact(_) => {}
        }
    }

    fn state(&self) -> IdsState {
        match self {
            Ids::Hashed(d) => IdsState::Hashed(d.state()),
            Ids::Exact(d) => IdsState::Exact(d.state()),
            Ids::HashedLast(d) => IdsState::HashedLast(d.state()),
            Ids::ExactLast(d) => IdsState::ExactLast(d.state()),
        }
    }

    fn restore(&mut self, state: IdsState) -> Result<(), String> {
        match (self, state) {
            (Ids::Hashed(d), IdsState::Hashed(s)) => d.restore(s),
            (Ids::Exact(d), IdsState::Exact(s)) => d.restore(s),
            (Ids::HashedLast(d), IdsState::HashedLast(s)) => d.restore(s),
            (Ids::ExactLast(d), IdsState::ExactLast(s)) => d.restore(s),
            _ => Err("the checkpoint keeps ids of another --keep or --exact-ids".into()),
        }
    }

    /// Ids remembered now.
    pub fn remembered(&self) -> usize {
        match self {
            Ids::Hashed(d) => d.remembered(),
            Ids::Exact(d) => d.remembered(),
            Ids::HashedLast(d) => d.remembered(),
            Ids::ExactLast(d) => d.remembered(),
        }
    }

    /// The memory the ids' tables hold (`Deduper::table_bytes`).
    pub fn table_bytes(&self) -> usize {
        match self {
            Ids::Hashed(d) => d.table_bytes(),
            Ids::Exact(d) => d.table_bytes(),
            Ids::HashedLast(d) => d.table_bytes(),
            Ids::ExactLast(d) => d.table_bytes(),
        }
    }

    /// Whether records are held (`--keep last`).
    pub fn holding(&self) -> bool {
        matches!(self, Ids::HashedLast(_) | Ids::ExactLast(_))
    }

    pub fn counts(&self) -> DedupeCounts {
        match self {
            Ids::Hashed(d) => d.counts(),
            Ids::Exact(d) => d.counts(),
            Ids::HashedLast(d) => d.counts(),
            Ids::ExactLast(d) => d.counts(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::saved;

    /// A record's id gets back the hash its look-ahead made, found by where its text lies:
    /// not a neighbour's, whatever was skipped, and nothing for a text never looked at or
    /// looked at too long ago.
    #[test]
    fn ahead_hashes_give_each_id_its_own_hash() {
        let line = "\"a\" \"b\" \"a\" \"c\"";
        let ids: Vec<&str> = line.split(' ').collect();
        let mut ahead = AheadHashes::default();
        let push_all = |ahead: &mut AheadHashes| {
            ahead.clear();
            for id in &ids {
                assert_eq!(ahead.push(id), hash_id128(id.as_bytes()));
            }
        };
        push_all(&mut ahead);
        assert_eq!(
            ahead.take(&String::from("\"a\"")),
            None,
            "an equal text elsewhere"
        );
        push_all(&mut ahead);
        // The second id is skipped (a record not checked); the third, the same text as the
        // first, is told apart by its place.
        assert_eq!(ahead.take(ids[0]), Some(hash_id128(b"\"a\"")));
        assert_eq!(ahead.take(ids[2]), Some(hash_id128(b"\"a\"")));
        assert_eq!(ahead.take(ids[3]), Some(hash_id128(b"\"c\"")));
        assert_eq!(
            ahead.take(ids[1]),
            None,
            "let go once a later one was taken"
        );
        // Past the ring's size, the oldest are let go.
        let many: Vec<String> = (0..AHEAD_HASHES + 3).map(|i| format!("{i}")).collect();
        for (asked, kept) in [(2, false), (3, true)] {
            ahead.clear();
            many.iter().for_each(|id| _ = ahead.push(id));
            let hash = hash_id128(many[asked].as_bytes());
            assert_eq!(ahead.take(&many[asked]), kept.then_some(hash));
        }
        let last = &many[AHEAD_HASHES + 2];
        assert_eq!(ahead.take(last), Some(hash_id128(last.as_bytes())));
    }

    fn spec(keep: Keep, exact_ids: bool) -> TaskSpec {
        TaskSpec {
            keep,
            exact_ids,
            horizon: Some(100),
            max_keys: 1000,
            delay: 0,
            idle_timeout: None,
        }
    }

    fn held(seq: u64) -> Held {
        Held {
            seq,
            bytes: format!("{{\"n\":{seq}}}").into_bytes().into(),
        }
    }

    /// Hashed and exact ids judge alike: a repeat within the horizon is a duplicate, one
    /// past it is a first again.
    #[test]
    fn keep_first_drops_repeats_within_the_horizon() {
        for exact in [false, true] {
            let mut task = spec(Keep::First, exact).fresh();
            assert!(!task.ids.holding());
            assert_eq!(task.ids.check("\"a\"", 10, 10), Verdict::First);
            assert_eq!(task.ids.check("\"a\"", 50, 50), Verdict::Duplicate);
            assert_eq!(task.ids.check("\"b\"", 50, 50), Verdict::First);
            // The clock has passed a's time plus the horizon: a is forgotten.
            assert_eq!(task.ids.check("\"a\"", 120, 120), Verdict::First);
            assert_eq!(task.ids.counts().peak_keys, 2, "exact ids: {exact}");
        }
    }

    /// A child shard's ids: both parents' of a merge; for a split, every id (a sibling's
    /// never comes), but each held record only in the child of its partition key, and each
    /// parent's counts in one child.
    #[test]
    fn children_inherit_ids_and_their_own_held_records() {
        let envelope = |seq: u64, key: &str| Held {
            seq,
            bytes: format!("{{\"key\":\"{key}\",\"value\":{{}}}}")
                .into_bytes()
                .into(),
        };
        for exact in [false, true] {
            let mut parent = spec(Keep::Last, exact).fresh();
            parent.ids.check_held("\"a\"", 10, 10, envelope(1, "a"));
            parent.ids.check_held("\"b\"", 20, 20, envelope(2, "b"));
            let only_a = |key: &str| key == "a";
            let from = |whole| Parent {
                saved: parent.saved(),
                whole,
            };
            let mut child =
                Task::inherited(spec(Keep::Last, exact).fresh(), vec![from(true)], &only_a)
                    .unwrap();
            let mut out = Vec::new();
            child.ids.finish(&mut out);
            assert_eq!(out, vec![(10, envelope(1, "a"))], "exact ids: {exact}");
            // A merge: the other parent's ids too.
            let mut other = spec(Keep::Last, exact).fresh();
            other.ids.check_held("\"c\"", 30, 30, envelope(3, "c"));
            let both = vec![
                from(false),
                Parent {
                    saved: other.saved(),
                    whole: true,
                },
            ];
            let mut merged =
                Task::inherited(spec(Keep::Last, exact).fresh(), both, &|_| true).unwrap();
            assert_eq!(
                merged.ids.check_held("\"a\"", 40, 40, envelope(4, "a")),
                Some(envelope(1, "a"))
            );
            let mut out = Vec::new();
            merged.ids.finish(&mut out);
            assert_eq!(out.len(), 3, "{out:?}");
        }
        // Keeping first, with hashed ids: a split child remembers every id of its parent.
        let mut parent = spec(Keep::First, false).fresh();
        parent.ids.check("\"a\"", 10, 10);
        let saved = Parent {
            saved: parent.saved(),
            whole: false,
        };
        let mut child =
            Task::inherited(spec(Keep::First, false).fresh(), vec![saved], &|_| false).unwrap();
        assert_eq!(child.ids.check("\"a\"", 20, 20), Verdict::Duplicate);
    }

    /// `--keep last`: a repeat replaces the held record, and the last one goes out when the
    /// id is forgotten, or at the end.
    #[test]
    fn keep_last_holds_each_ids_latest_record() {
        for exact in [false, true] {
            let mut task = spec(Keep::Last, exact).fresh();
            assert!(task.ids.holding());
            assert_eq!(task.ids.check_held("\"a\"", 10, 10, held(1)), None);
            assert_eq!(task.ids.check_held("\"b\"", 20, 20, held(2)), None);
            assert_eq!(task.ids.check_held("\"a\"", 30, 30, held(3)), Some(held(1)));
            let mut out = Vec::new();
            task.ids.advance(115);
            task.ids.take_released(&mut out);
            assert_eq!(
                out,
                vec![(10, held(3))],
                "a's group opened at 10, held 3 last"
            );
            task.ids.finish(&mut out);
            assert_eq!(out, vec![(10, held(3)), (20, held(2))]);
        }
    }

    /// A task saved and restored judges the rest of the input as the uninterrupted one.
    #[test]
    fn a_restored_task_goes_on_where_it_was_saved() {
        let spec = spec(Keep::Last, false);
        let mut task = spec.fresh();
        task.seq = 7;
        task.ids.check_held("\"a\"", 10, 10, held(1));
        let bytes = saved::encode(&task.saved());
        let state: TaskState = saved::decode(&bytes).unwrap();
        let mut again = Task::restored(spec.fresh(), state).unwrap();
        assert_eq!(again.seq, 7);
        assert_eq!(
            again.ids.check_held("\"a\"", 20, 20, held(2)),
            Some(held(1))
        );
        // Ids of another kind do not restore.
        let other = saved::decode(&bytes).unwrap();
        let kind = Task::restored(
            TaskSpec {
                keep: Keep::First,
                ..spec
            }
            .fresh(),
            other,
        );
        assert!(kind.is_err());
    }

    proptest::proptest! {
        /// An event-time horizon judged by each record's own partition: however partitions'
        /// records interleave, the records kept and dropped are those of each partition run
        /// alone, when each id lives in one partition (as on a topic keyed by it).
        #[test]
        fn interleaving_never_changes_what_is_kept(
            parts in proptest::collection::vec(proptest::collection::vec((0u8..6, 0i64..300), 0..40), 2..5),
            order in proptest::collection::vec(0usize..8, 0..200),
            delay in 0i64..40,
            horizon in 1i64..80,
            keep_last in proptest::bool::ANY,
        ) {
            let keep = if keep_last { Keep::Last } else { Keep::First };
            let spec = TaskSpec { horizon: Some(horizon), delay, ..spec(keep, false) };
            let id = |p: usize, k: u8| format!("\"{p}-{k}\"");
            let mut want = std::collections::BTreeSet::new();
            for (p, records) in parts.iter().enumerate() {
                let mut alone = spec.fresh();
                let picks: Vec<(usize, usize)> = (0..records.len()).map(|i| (p, i)).collect();
                want.extend(kept(&mut alone, &parts, &picks, |_| 0, &id));
            }
            let mut all = spec.fresh();
            all.watermarks.assign(&(0..parts.len()).collect::<Vec<_>>(), 0);
            let picks = crate::core::window::tests::interleave(&parts, &order);
            let got = kept(&mut all, &parts, &picks, |p| p, &id);
            proptest::prop_assert_eq!(got, want);
        }
    }

    /// The (partition, index) of each record `task` writes, fed `picks` of `parts`, each on
    /// the watermark partition `partition_of` gives.
    fn kept(
        task: &mut Task,
        parts: &[Vec<(u8, Millis)>],
        picks: &[(usize, usize)],
        partition_of: impl Fn(usize) -> usize,
        id: &dyn Fn(usize, u8) -> String,
    ) -> std::collections::BTreeSet<(usize, usize)> {
        let mut out = std::collections::BTreeSet::new();
        let mut released = Vec::new();
        let seq = |p: usize, i: usize| (p * 1_000 + i) as u64;
        for &(p, i) in picks {
            let (k, t) = parts[p][i];
            let w = partition_of(p);
            let clocks = task.event_clocks(w);
            if task.ids.holding() {
                task.seq = seq(p, i) as Millis;
                task.hold(
                    (&id(p, k), None),
                    (t, clocks),
                    b"",
                    Some((w, 0)),
                    &mut released,
                );
            } else if task.check((&id(p, k), None), t, clocks, Some((w, 0))) != Verdict::Duplicate {
                out.insert((p, i));
            }
        }
        task.ids.finish(&mut released);
        out.extend(
            released
                .iter()
                .map(|(_, h)| ((h.seq / 1_000) as usize, (h.seq % 1_000) as usize)),
        );
        out
    }
}
