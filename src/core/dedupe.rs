//! Dedupe: keep the first occurrence of an id within a horizon, with bounded memory.
//!
//! The rule (exact, and what the tests hold the command to): a record with id X at time t
//! meets the clock C (the watermark for event-time horizons, processing time for arrival
//! horizons). If X was kept at time t0 and `C < t0 + horizon`, the record is a duplicate.
//! Otherwise it passes, and X is remembered from t unless `C >= t + horizon` already (then
//! nothing would remember it). Without a horizon, ids are remembered until evicted.
//!
//! Memory: a remembered id is its 128-bit hash and its time (24 bytes and a tag byte in the
//! [`IdTable`], about 28 to 57 bytes each with the table's spare room, 43 at 10M ids), or its
//! text with `--exact-ids`. The command prefetches each id's place a few records ahead
//! ([`Deduper::prefetch`]), since at millions of ids every lookup misses the cache. Expired ids are
//! treated as absent when looked up (so expiry is exact) and swept out in passes whose cost
//! is spread over the records. `max_keys` is a hard bound: when full, the oldest eighth of each
//! of the 64 shards is
//! evicted (ties by hash), counted, and remembered in a Bloom filter so that a later repeat of an evicted id
//! is counted as "possibly duplicate" (it passes).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::id_table::IdTable;
use super::time::Millis;

/// What happened to a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The first occurrence within the horizon: written.
    First,
    /// A repeat within the horizon: dropped.
    Duplicate,
    /// Passes, but its id may be one that was evicted for room: counted.
    PossiblyDuplicate,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DedupeCounts {
    pub evicted: u64,
    pub possibly_duplicate: u64,
    pub expired: u64,
    pub peak_keys: u64,
}

/// The id as kept: a 128-bit hash, or the text itself.
pub trait IdKey: Eq + Clone + Default {
    /// The id as a checkpoint keeps it.
    type Saved: Serialize + DeserializeOwned;
    /// The id as a record gives it, looked up without making a key of it (an exact id's
    /// text is copied only when it is remembered).
    type Text: ?Sized + PartialEq;
    fn text(&self) -> &Self::Text;
    fn own(text: &Self::Text) -> Self;
    fn hash_text(text: &Self::Text) -> u128;
    fn hash128(&self) -> u128 {
        Self::hash_text(self.text())
    }
    fn save(&self) -> Self::Saved;
    fn load(saved: Self::Saved) -> Self;
}

/// Where an id's hash places it: its shard (the top bits) and its hash within the shard's
/// table (the low word).
fn place(hash: u128) -> (usize, u64) {
    ((hash >> 122) as usize % SHARDS, hash as u64)
}

fn table_hash<K: IdKey>(id: &K) -> u64 {
    place(id.hash128()).1
}

/// A 128-bit hash as two words: `u128` is 16-byte aligned, which would pad each map entry
/// (hash + time) from 24 to 32 bytes.
pub type IdHash = [u64; 2];

impl IdKey for IdHash {
    /// Sixteen bytes, as they are: postcard would write a random word in ten.
    type Saved = [u8; 16];
    type Text = IdHash;

    fn text(&self) -> &IdHash {
        self
    }

    fn own(text: &IdHash) -> IdHash {
        *text
    }

    fn hash_text(text: &IdHash) -> u128 {
        (text[0] as u128) << 64 | text[1] as u128
    }

    fn save(&self) -> [u8; 16] {
        self.hash128().to_le_bytes()
    }

    fn load(saved: [u8; 16]) -> IdHash {
        let h = u128::from_le_bytes(saved);
        [(h >> 64) as u64, h as u64]
    }
}

impl IdKey for Box<str> {
    type Saved = Box<str>;
    type Text = str;

    fn text(&self) -> &str {
        self
    }

    fn own(text: &str) -> Box<str> {
        text.into()
    }

    fn hash_text(text: &str) -> u128 {
        hash_id128(text.as_bytes())
    }

    fn save(&self) -> Box<str> {
        self.clone()
    }

    fn load(saved: Box<str>) -> Box<str> {
        saved
    }
}

/// The 128-bit hash of an id's text (XXH3), as the id table keeps it.
pub fn hash_id(text: &[u8]) -> IdHash {
    halves(hash_id128(text))
}

/// `hash_id` as one number, for a hash kept on the record path: a `u128` comes back in two
/// registers, where an `IdHash` came back through memory as two words and was read back as
/// one, a read that waited for every store before it to reach the cache (the id table's
/// missing stores among them): 11% of a one-core dedupe run's samples.
#[inline]
pub fn hash_id128(text: &[u8]) -> u128 {
    xxhash_rust::xxh3::xxh3_128(text)
}

/// A `hash_id128` as the id table keeps it.
pub fn halves(hash: u128) -> IdHash {
    [(hash >> 64) as u64, hash as u64]
}

/// Shards of the id map: each grows on its own, so a resize briefly doubles 1/64 of the
/// memory rather than all of it.
const SHARDS: usize = 64;

/// Keeps the first record of each id (`H = ()`), or, for `--keep last`, holds the latest
/// record of each id (`H` = the record) until the id is forgotten: expired, evicted, or at the
/// end of the input. An id's *group* is its records from the one that opened it (the one
/// keep-first would write) to the last repeat before it is forgotten.
pub struct Deduper<K: IdKey, H = ()> {
    horizon: Option<Millis>,
    max_keys: usize,
    /// Id → (time its group opened, held record).
    shards: Vec<IdTable<K, (Millis, H)>>,
    len: usize,
    evicted: Option<Bloom>,
    counts: DedupeCounts,
    /// The clock at the last sweep of expired ids.
    swept_at: Millis,
    /// No remembered group opened before this (a lower bound): until the clock passes it by
    /// the horizon, a sweep would find nothing to expire and is skipped.
    oldest: Millis,
    /// Held records of groups that ended, with their opening times (only when holding).
    released: Vec<(Millis, H)>,
    holding: bool,
}

/// The clocks a record is judged by: `judge`, whether its id's group is still open (for an
/// event-time horizon, the watermark of the record's own partition, so that the verdict does
/// not hang on how far other partitions were read), and `forget`, what may be forgotten (the
/// watermark of the run, the least over partitions, so that no id goes that a partition
/// behind could still repeat). One clock is both.
#[derive(Clone, Copy, Debug)]
pub struct Clocks {
    pub judge: Millis,
    pub forget: Millis,
}

impl From<Millis> for Clocks {
    fn from(clock: Millis) -> Clocks {
        Clocks {
            judge: clock,
            forget: clock,
        }
    }
}

impl<K: IdKey> Deduper<K> {
    pub fn new(horizon: Option<Millis>, max_keys: usize) -> Deduper<K> {
        Deduper::build(horizon, max_keys, false)
    }

    /// Judges a record with id `id` at time `t`, the clocks standing at `clock`.
    pub fn check(&mut self, id: &K::Text, t: Millis, clock: impl Into<Clocks>) -> Verdict {
        self.check_hashed(id, K::hash_text(id), t, clock)
    }

    /// `check` with the id's `hash_text` already made (for its prefetch).
    #[inline]
    pub fn check_hashed(
        &mut self,
        id: &K::Text,
        hash128: u128,
        t: Millis,
        clock: impl Into<Clocks>,
    ) -> Verdict {
        self.judge(id, hash128, t, clock.into(), ()).0
    }
}

impl<K: IdKey, H: Default> Deduper<K, H> {
    /// A deduper that holds the latest record of each id (`--keep last`).
    pub fn keeping_last(horizon: Option<Millis>, max_keys: usize) -> Deduper<K, H> {
        Deduper::build(horizon, max_keys, true)
    }

    fn build(horizon: Option<Millis>, max_keys: usize, holding: bool) -> Deduper<K, H> {
        Deduper {
            horizon,
            max_keys: max_keys.max(1),
            shards: (0..SHARDS).map(|_| IdTable::default()).collect(),
            len: 0,
            evicted: None,
            counts: DedupeCounts::default(),
            swept_at: Millis::MIN,
            oldest: Millis::MAX,
            released: Vec::new(),
            holding,
        }
    }

    /// `check_held_hashed` without a hash at hand.
    #[cfg(test)]
    pub fn check_held(
        &mut self,
        id: &K::Text,
        t: Millis,
        clock: impl Into<Clocks>,
        record: H,
    ) -> (Verdict, Option<H>) {
        self.check_held_hashed(id, K::hash_text(id), t, clock, record)
    }

    /// Judges a record, with its id's `hash_text` (made for its prefetch), and holds
    /// `record` as its id's latest. For a repeat, returns the record it replaces (a dropped
    /// duplicate). Records of groups that ended are then in `take_released`.
    pub fn check_held_hashed(
        &mut self,
        id: &K::Text,
        hash128: u128,
        t: Millis,
        clock: impl Into<Clocks>,
        record: H,
    ) -> (Verdict, Option<H>) {
        self.judge(id, hash128, t, clock.into(), record)
    }

    /// The held records of groups that ended since the last call, with the times their
    /// groups opened, in the order they ended.
    pub fn take_released(&mut self, out: &mut Vec<(Millis, H)>) {
        out.append(&mut self.released);
    }

    /// The clock moved with no record to judge (processing time went on, or idleness let the
    /// watermark go): expired ids are forgotten, and their held records released, as a record
    /// judged now would have done.
    pub fn advance(&mut self, clock: Millis) {
        self.maybe_sweep(clock);
    }

    /// The end of the input: every group ends; their held records, with opening times.
    pub fn finish(&mut self, out: &mut Vec<(Millis, H)>) {
        for shard in &mut self.shards {
            out.extend(shard.drain().into_iter().map(|(_, slot)| slot));
        }
        self.len = 0;
    }

    /// Brings the place of the id with this `hash128` into cache, for a `check` soon after.
    pub fn prefetch(&self, hash: u128) {
        let (shard, hash) = place(hash);
        self.shards[shard].prefetch(hash);
    }

    pub fn counts(&self) -> DedupeCounts {
        self.counts
    }

    pub fn remembered(&self) -> usize {
        self.len
    }

    /// The memory its tables and the evicted ids' filter hold (exact ids' texts not counted).
    pub fn table_bytes(&self) -> usize {
        let filter = self.evicted.as_ref().map_or(0, |b| b.bits.capacity() * 8);
        self.shards.iter().map(IdTable::table_bytes).sum::<usize>() + filter
    }

    /// The remembered ids and what the rules need besides them, for a checkpoint. Taken
    /// between records, when no released record is waiting.
    pub fn state(&self) -> DeduperState<K::Saved, H>
    where
        H: Clone,
    {
        debug_assert!(self.released.is_empty());
        let entries = self
            .shards
            .iter()
            .flat_map(|shard| shard.iter())
            .map(|(id, (t, held))| (id.save(), *t, held.clone()))
            .collect();
        DeduperState {
            entries,
            evicted: self.evicted.as_ref().map(|b| b.bits.clone()),
            counts: self.counts,
            swept_at: self.swept_at,
            oldest: self.oldest,
        }
    }

    /// Puts a checkpoint's ids back (the horizon and bound are the job's, given again).
    pub fn restore(&mut self, state: DeduperState<K::Saved, H>) -> Result<(), String> {
        if state.entries.len() > self.max_keys {
            return Err("the checkpoint remembers more ids than --max-keys".into());
        }
        // Sized first, so that no insert grows a table. The ids come shard by shard in slot
        // order, so each shard is filled front to back rather than at random.
        let mut per_shard = [0usize; SHARDS];
        let entries: Vec<(K, u64, usize, (Millis, H))> = state
            .entries
            .into_iter()
            .map(|(saved, t, held)| {
                let id = K::load(saved);
                let (at, hash) = place(id.hash128());
                per_shard[at] += 1;
                (id, hash, at, (t, held))
            })
            .collect();
        for (shard, n) in self.shards.iter_mut().zip(per_shard) {
            shard.reserve(n, table_hash);
        }
        for (id, hash, at, slot) in entries {
            self.shards[at].insert_new(id, hash, slot, table_hash);
        }
        self.len += per_shard.iter().sum::<usize>();
        self.evicted = match state.evicted {
            Some(bits) if bits.len() as u64 * 64 == Bloom::BITS => Some(Bloom { bits }),
            Some(_) => return Err("the checkpoint's filter of evicted ids is cut".into()),
            None => None,
        };
        self.counts = state.counts;
        self.swept_at = state.swept_at;
        self.oldest = state.oldest;
        Ok(())
    }

    /// Keeps the shard's entries for which `keep` holds (the others' held records are
    /// released); returns how many were dropped.
    fn forget(
        shard: &mut IdTable<K, (Millis, H)>,
        released: &mut Vec<(Millis, H)>,
        holding: bool,
        mut keep: impl FnMut(&K, Millis) -> bool,
    ) -> usize {
        shard.retain(
            |k, slot| keep(k, slot.0),
            |slot| {
                if holding {
                    released.push(slot);
                }
            },
        )
    }

    fn judge(
        &mut self,
        id: &K::Text,
        hash128: u128,
        t: Millis,
        clocks: Clocks,
        record: H,
    ) -> (Verdict, Option<H>) {
        let clock = clocks.judge;
        let (at, hash) = place(hash128);
        let horizon = self.horizon;
        let expired = |since: Millis| horizon.is_some_and(|h| clock >= since.saturating_add(h));
        let already_past = expired(t);
        // One probe of the map in the common cases (a repeat, or a new id with room).
        // A record that opens a group nothing would remember (the clock is already past its
        // horizon) ends its group at once.
        let mut ended_at_once = None;
        let shard = &mut self.shards[at];
        match shard.find(hash, |key| key.text() == id) {
            Some(slot) => {
                let entry = shard.value_mut(slot);
                if !expired(entry.0) {
                    let replaced = std::mem::replace(&mut entry.1, record);
                    return (Verdict::Duplicate, Some(replaced));
                }
                // Remembered but expired: its group ends, and the record opens a new one.
                self.counts.expired += 1;
                let old = if already_past {
                    self.len -= 1;
                    ended_at_once = Some((t, record));
                    shard.remove_at(slot)
                } else {
                    // The new group opens after the old one (which had expired while this
                    // one has not), so `oldest` still holds.
                    std::mem::replace(entry, (t, record))
                };
                if self.holding {
                    self.released.push(old);
                }
            }
            None if !already_past && self.len < self.max_keys => {
                shard.insert_new(K::own(id), hash, (t, record), table_hash);
                self.len += 1;
                self.oldest = self.oldest.min(t);
            }
            None if !already_past => {
                self.make_room(clocks.forget);
                self.shards[at].insert_new(K::own(id), hash, (t, record), table_hash);
                self.len += 1;
                self.oldest = self.oldest.min(t);
            }
            None => ended_at_once = Some((t, record)),
        }
        if let (true, Some(slot)) = (self.holding, ended_at_once) {
            self.released.push(slot);
        }
        self.counts.peak_keys = self.counts.peak_keys.max(self.len as u64);
        self.maybe_sweep(clocks.forget);
        let verdict = match &self.evicted {
            Some(bloom) if bloom.contains(hash128) => {
                self.counts.possibly_duplicate += 1;
                Verdict::PossiblyDuplicate
            }
            _ => Verdict::First,
        };
        (verdict, None)
    }

    /// Drops expired ids once the clock has moved a quarter horizon since the last sweep, so
    /// memory follows the horizon at a cost spread over the records.
    fn maybe_sweep(&mut self, clock: Millis) {
        let Some(h) = self.horizon else { return };
        if clock < self.swept_at.saturating_add((h / 4).max(1)) {
            return;
        }
        self.swept_at = clock;
        if clock < self.oldest.saturating_add(h) {
            return;
        }
        let mut dropped = 0;
        let mut oldest = Millis::MAX;
        for shard in &mut self.shards {
            dropped += Self::forget(shard, &mut self.released, self.holding, |_, t0| {
                let keep = clock < t0.saturating_add(h);
                if keep {
                    oldest = oldest.min(t0);
                }
                keep
            });
        }
        self.oldest = oldest;
        self.len -= dropped;
        self.counts.expired += dropped as u64;
    }

    /// At the bound: sweep expired ids, then evict the oldest eighth of each shard (by time;
    /// ids are spread evenly over shards by their hash).
    fn make_room(&mut self, clock: Millis) {
        if self.horizon.is_some() {
            self.swept_at = Millis::MIN;
            self.maybe_sweep(clock);
        }
        if self.len < self.max_keys {
            return;
        }
        let bloom = self.evicted.get_or_insert_with(Bloom::new);
        let mut evicted = 0;
        let mut times = Vec::new();
        for shard in &mut self.shards {
            if shard.is_empty() {
                continue;
            }
            // Ties in time are broken by the id's hash, so that which ids go does not
            // depend on where they sit in the table (a restored table sits otherwise).
            times.clear();
            times.extend(shard.iter().map(|(id, slot)| (slot.0, id.hash128())));
            let cut = (times.len() / 8).max(1);
            let (_, &mut threshold, _) = times.select_nth_unstable(cut - 1);
            evicted += Self::forget(shard, &mut self.released, self.holding, |id, t0| {
                let hash = id.hash128();
                let keep = (t0, hash) > threshold;
                if !keep {
                    bloom.insert(hash);
                }
                keep
            });
        }
        self.len -= evicted;
        self.counts.evicted += evicted as u64;
    }
}

impl<S, H> DeduperState<S, H> {
    /// Several parent shards' states as one child's start: the entries `keep` says, every
    /// id each evicted (their filters joined), and the counts of those marked `whole` (each
    /// parent's go to one child).
    pub fn merged(
        parts: Vec<(DeduperState<S, H>, bool)>,
        keep: impl Fn(&S, &H) -> bool,
    ) -> DeduperState<S, H> {
        let mut out = DeduperState {
            entries: Vec::new(),
            evicted: None,
            counts: DedupeCounts::default(),
            swept_at: Millis::MIN,
            oldest: Millis::MAX,
        };
        for (part, whole) in parts {
            (out.entries).extend(part.entries.into_iter().filter(|(s, _, h)| keep(s, h)));
            out.evicted = match (out.evicted.take(), part.evicted) {
                (Some(a), Some(b)) => Some(a.iter().zip(&b).map(|(x, y)| x | y).collect()),
                (a, b) => a.or(b),
            };
            if whole {
                let (c, p) = (&mut out.counts, part.counts);
                c.evicted += p.evicted;
                c.possibly_duplicate += p.possibly_duplicate;
                c.expired += p.expired;
                c.peak_keys = c.peak_keys.max(p.peak_keys);
            }
            out.swept_at = out.swept_at.max(part.swept_at);
            out.oldest = out.oldest.min(part.oldest);
        }
        out
    }
}

/// What a checkpoint keeps of a `Deduper`: every remembered id with the time its group
/// opened (and, keeping last, its held record), the filter of evicted ids, the counts, and
/// the sweep's place.
#[derive(Debug, Serialize, Deserialize)]
pub struct DeduperState<S, H> {
    entries: Vec<(S, Millis, H)>,
    evicted: Option<Vec<u64>>,
    counts: DedupeCounts,
    swept_at: Millis,
    oldest: Millis,
}

/// A fixed 1 MiB Bloom filter over 128-bit hashes (k = 4), for evicted ids.
struct Bloom {
    bits: Vec<u64>,
}

impl Bloom {
    const BITS: u64 = 1 << 23;

    fn new() -> Bloom {
        Bloom {
            bits: vec![0; (Self::BITS / 64) as usize],
        }
    }

    fn positions(hash: u128) -> impl Iterator<Item = u64> {
        let (a, b) = (hash as u64, (hash >> 64) as u64 | 1);
        (0..4u64).map(move |i| a.wrapping_add(i.wrapping_mul(b)) % Self::BITS)
    }

    fn insert(&mut self, hash: u128) {
        for p in Self::positions(hash) {
            self.bits[(p / 64) as usize] |= 1 << (p % 64);
        }
    }

    fn contains(&self, hash: u128) -> bool {
        Self::positions(hash).all(|p| self.bits[(p / 64) as usize] & (1 << (p % 64)) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn ids(d: &mut Deduper<IdHash>, records: &[(u64, Millis, Millis)]) -> Vec<Verdict> {
        records
            .iter()
            .map(|(id, t, clock)| d.check(&hash_id(&id.to_le_bytes()), *t, *clock))
            .collect()
    }

    /// `--keep last`: every held record comes back exactly once, whether its group ended by
    /// expiry, eviction or the end of the input, and a repeat hands back the one it replaces.
    #[test]
    fn held_records_come_back_once() {
        let mut d: Deduper<IdHash, u32> = Deduper::keeping_last(Some(100), 8);
        let mut dropped = Vec::new();
        let mut released = Vec::new();
        for n in 0..40u32 {
            // Ids 0..20, then 0..20 again: the second round repeats within the horizon for
            // the ids still remembered, and eviction (8 ids at most) forgot the others.
            let id = hash_id(&(n % 20).to_le_bytes());
            let t = n as Millis;
            let (verdict, replaced) = d.check_held(&id, t, t, n);
            assert_eq!(verdict == Verdict::Duplicate, replaced.is_some());
            dropped.extend(replaced);
            d.take_released(&mut released);
        }
        assert!(d.counts().evicted > 0);
        d.finish(&mut released);
        let mut seen: Vec<u32> = released.iter().map(|(_, n)| *n).chain(dropped).collect();
        seen.sort();
        assert_eq!(seen, (0..40).collect::<Vec<u32>>());
    }

    #[test]
    fn first_wins_within_the_horizon() {
        let mut d = Deduper::new(Some(10), 100);
        use Verdict::*;
        assert_eq!(
            ids(
                &mut d,
                &[
                    (1, 0, 0),
                    (1, 5, 5),
                    (2, 6, 6),
                    (1, 9, 9),
                    (1, 10, 10),
                    (1, 12, 12),
                    (1, 19, 19)
                ]
            ),
            [First, Duplicate, First, Duplicate, First, Duplicate, Duplicate],
            "1 is kept at 0, expires at clock 10, is kept again at 10 and held until 20"
        );
        // 1's first group, found expired at clock 10. 2 (kept at 6) has expired by 19 too,
        // but only a record that is not dropped sweeps: it is still remembered.
        assert_eq!(d.counts().expired, 1);
        assert_eq!(d.remembered(), 2);
    }

    #[test]
    fn records_already_past_the_horizon_pass_and_are_not_remembered() {
        let mut d: Deduper<IdHash> = Deduper::new(Some(10), 100);
        assert_eq!(d.check(&hash_id(b"7"), 0, 50), Verdict::First);
        assert_eq!(
            d.check(&hash_id(b"7"), 0, 50),
            Verdict::First,
            "nothing could remember it"
        );
        assert_eq!(d.remembered(), 0);
    }

    #[test]
    fn memory_follows_the_horizon() {
        let mut d: Deduper<IdHash> = Deduper::new(Some(100), usize::MAX);
        for i in 0..100_000u64 {
            d.check(&hash_id(&i.to_le_bytes()), i as Millis, i as Millis);
            assert!(d.remembered() <= 100 + 25 + 1, "{}", d.remembered());
        }
        assert!(d.counts().expired > 99_000);
    }

    #[test]
    fn max_keys_evicts_oldest_and_flags_their_repeats() {
        let mut d: Deduper<IdHash> = Deduper::new(None, 1000);
        let h = |i: u64| hash_id(&i.to_le_bytes());
        for i in 0..2000u64 {
            assert_eq!(d.check(&h(i), i as Millis, 0), Verdict::First);
            assert!(d.remembered() <= 1000);
        }
        assert!(d.counts().evicted >= 1000);
        // The newest are still remembered; the oldest were evicted: they pass, flagged.
        assert_eq!(d.check(&h(1999), 0, 0), Verdict::Duplicate);
        assert_eq!(d.check(&h(0), 0, 0), Verdict::PossiblyDuplicate);
        assert_eq!(d.counts().possibly_duplicate, 1);
    }

    #[test]
    fn exact_ids() {
        let mut d: Deduper<Box<str>> = Deduper::new(None, 10);
        assert_eq!(d.check("a", 0, 0), Verdict::First);
        assert_eq!(d.check("a", 0, 0), Verdict::Duplicate);
        assert_eq!(d.check("b", 0, 0), Verdict::First);
    }

    proptest! {
        /// A deduper saved at any record, encoded, decoded and restored, judges the rest as
        /// the uninterrupted one does, and releases the same held records: with and without
        /// a horizon, at the --max-keys bound (evictions and the filter of evicted ids), for
        /// hashed and exact ids.
        #[test]
        fn restored_deduper_goes_on_as_the_uninterrupted_one(
            records in prop::collection::vec((0u8..40, 0i64..200, 0i64..3), 1..300),
            horizon in prop::option::of(1i64..60),
            max_keys in 1usize..50,
            cut in 0usize..300,
            exact in any::<bool>(),
        ) {
            fn run<K: IdKey>(
                d: &mut Deduper<K, u64>,
                records: &[(u8, Millis, Millis)],
                first_seq: u64,
                make: &dyn Fn(u8) -> K,
            ) -> Vec<String> {
                let mut out = Vec::new();
                let mut released = Vec::new();
                for (i, (id, t, clock)) in records.iter().enumerate() {
                    let seq = first_seq + i as u64;
                    let (verdict, replaced) = d.check_held(make(*id).text(), *t, *clock, seq);
                    d.take_released(&mut released);
                    released.sort_unstable();
                    out.push(format!("{seq}: {verdict:?} {replaced:?} {released:?}"));
                    released.clear();
                }
                out
            }
            fn check<K: IdKey>(
                records: &[(u8, Millis, Millis)],
                horizon: Option<Millis>,
                max_keys: usize,
                cut: usize,
                make: &dyn Fn(u8) -> K,
            ) -> Result<(), TestCaseError> {
                let mut whole = Deduper::keeping_last(horizon, max_keys);
                let want = run(&mut whole, records, 0, make);
                let mut first = Deduper::keeping_last(horizon, max_keys);
                let mut got = run(&mut first, &records[..cut], 0, make);
                let bytes = crate::core::saved::encode(&first.state());
                let mut second = Deduper::keeping_last(horizon, max_keys);
                second.restore(crate::core::saved::decode(&bytes).unwrap()).unwrap();
                got.extend(run(&mut second, &records[cut..], cut as u64, make));
                prop_assert_eq!(got, want);
                prop_assert_eq!(second.counts(), whole.counts());
                let (mut a, mut b) = (Vec::new(), Vec::new());
                whole.finish(&mut a);
                second.finish(&mut b);
                a.sort_unstable();
                b.sort_unstable();
                prop_assert_eq!(a, b);
                Ok(())
            }
            // The clock (a watermark) never goes back.
            let mut clock = 0;
            let records: Vec<(u8, Millis, Millis)> = records
                .into_iter()
                .map(|(id, t, step)| {
                    clock += step;
                    (id, t, clock)
                })
                .collect();
            let cut = cut.min(records.len());
            if exact {
                check(&records, horizon, max_keys, cut, &|id| Box::<str>::from(id.to_string()))?;
            } else {
                check(&records, horizon, max_keys, cut, &|id| hash_id(&[id]))?;
            }
        }

        /// The deduper equals a direct restatement of the rule over a plain map of strings,
        /// whatever the sweeps do to its memory; and its memory follows the horizon: after a
        /// record it does not drop, every id it remembers opened its group less than a horizon
        /// before the last sweep, which was less than a quarter horizon ago.
        #[test]
        fn equals_the_rule(
            records in prop::collection::vec((0u8..20, 0i64..200), 1..300),
            horizon in 1i64..60,
            delay in 0i64..30,
        ) {
            let mut d: Deduper<IdHash> = Deduper::new(Some(horizon), usize::MAX);
            let mut oracle: HashMap<u8, Millis> = HashMap::new();
            let mut max = Millis::MIN;
            for (id, t) in records {
                let clock = max.saturating_sub(delay);
                let expected = match oracle.get(&id) {
                    Some(t0) if clock < t0 + horizon => Verdict::Duplicate,
                    _ => {
                        if clock < t + horizon { oracle.insert(id, t); } else { oracle.remove(&id); }
                        Verdict::First
                    }
                };
                prop_assert_eq!(d.check(&hash_id(&[id]), t, clock), expected);
                // Sweeps run on records that are not dropped (a drop adds no memory).
                if expected != Verdict::Duplicate {
                    let since = clock.saturating_sub((horizon / 4).max(1));
                    let recent = oracle.values().filter(|t0| **t0 + horizon > since).count();
                    prop_assert!(d.remembered() <= recent, "{} remembered, {recent} recent", d.remembered());
                }
                max = max.max(t);
            }
        }

        /// Moving the clock between records (`advance`, as a tick does) changes no verdict and
        /// no replaced record, at the --max-keys bound too; it only releases held records
        /// sooner, each once its group has expired, and every record still comes back once.
        #[test]
        fn advancing_the_clock_between_records_changes_no_verdict(
            records in prop::collection::vec((0u8..30, 0i64..200, 0i64..4, any::<bool>()), 1..300),
            horizon in 1i64..60,
            max_keys in 1usize..40,
        ) {
            let mut clock = 0;
            let records: Vec<(u8, Millis, Millis, bool)> = records
                .into_iter()
                .map(|(id, t, step, advance)| {
                    clock += step;
                    (id, t, clock, advance)
                })
                .collect();
            let run = |advancing: bool| -> Result<(Vec<String>, Vec<u64>), TestCaseError> {
                let mut d: Deduper<IdHash, u64> = Deduper::keeping_last(Some(horizon), max_keys);
                let (mut verdicts, mut out, mut released) = (Vec::new(), Vec::new(), Vec::new());
                for (seq, (id, t, clock, advance)) in records.iter().enumerate() {
                    if advancing && *advance {
                        // Half way to the next record's clock: a tick between records.
                        let previous = seq.checked_sub(1).map_or(0, |i| records[i].2);
                        let at = previous + (clock - previous) / 2;
                        d.advance(at);
                        d.take_released(&mut released);
                        for (opened, _) in &released {
                            prop_assert!(opened + horizon <= at, "released before it expired");
                        }
                        out.extend(released.drain(..).map(|(_, n)| n));
                    }
                    let (verdict, replaced) = d.check_held(&hash_id(&[*id]), *t, *clock, seq as u64);
                    verdicts.push(format!("{seq}: {verdict:?} {replaced:?}"));
                    out.extend(replaced);
                    d.take_released(&mut released);
                    out.extend(released.drain(..).map(|(_, n)| n));
                }
                d.finish(&mut released);
                out.extend(released.drain(..).map(|(_, n)| n));
                out.sort_unstable();
                Ok((verdicts, out))
            };
            let (want, all) = run(false)?;
            let (got, back) = run(true)?;
            prop_assert_eq!(got, want);
            prop_assert_eq!(&back, &(0..records.len() as u64).collect::<Vec<_>>());
            prop_assert_eq!(back, all);
        }

        #[test]
        fn bloom_has_no_false_negatives(hashes in prop::collection::vec(any::<u128>(), 1..200)) {
            let mut b = Bloom::new();
            for h in &hashes { b.insert(*h); }
            prop_assert!(hashes.iter().all(|h| b.contains(*h)));
        }
    }
}
