//! The dedupe id map: an open-addressing hash table, laid out as hashbrown's (a byte of tag
//! per slot, probed sixteen at a time, entries in a flat array), that can also prefetch.
//! Probing is linear from a key's home slot, so that a new key usually lands in the cache
//! line its prefetch brought in.
//!
//! Why not hashbrown itself: at millions of ids, nearly every lookup misses the cache twice
//! (the tags, then the entry), and these misses are most of `dedupe`'s time. The command sees
//! each record a few records before judging it, and fetching both places into cache then
//! needs their addresses, which hashbrown does not give out. (Measured on 5M events: this
//! table with its prefetch took `dedupe` from 2.81 to 2.44 s on one core; the prefetch alone
//! is about 5% of that.)

use std::mem::{self, MaybeUninit};

/// Slots probed together.
const GROUP: usize = 16;
/// A tag: the slot holds no entry, and no probe needs to pass it.
const EMPTY: u8 = 0;
/// A tag: the slot's entry was removed; probing goes on past it.
const DELETED: u8 = 1;

/// A table from `K` to `V`, given each key's 64-bit hash by the caller (the same hash for the
/// same key every time). Tags are `0x80` plus the hash's top seven bits; the hash's low bits
/// pick the home slot.
#[derive(Debug)]
pub struct IdTable<K, V> {
    /// One tag per slot, then the first `GROUP` tags again, so that sixteen tags from any
    /// slot can be read at once.
    tags: Vec<u8>,
    /// The entries: a slot's is initialised exactly when its tag is full (`0x80` and up). A
    /// new table's slots are left as the allocator hands them over, so that growing does not
    /// write the whole new table before moving the entries in (that fill, of `Default`
    /// entries, was 4% of dedupe's instructions and a pass over freshly faulted memory).
    slots: Box<[MaybeUninit<(K, V)>]>,
    len: usize,
    /// Slots that are not `EMPTY` (entries and tombstones): probing ends at an empty slot,
    /// so at most 7/8 of the slots may be used.
    used: usize,
}

impl<K, V> Default for IdTable<K, V> {
    fn default() -> Self {
        IdTable {
            tags: Vec::new(),
            slots: Box::default(),
            len: 0,
            used: 0,
        }
    }
}

fn tag_of(hash: u64) -> u8 {
    0x80 | (hash >> 57) as u8
}

/// The slots of a group holding `tag`, and those that are empty, as bit masks.
#[inline(always)]
fn group_masks(tags: &[u8], tag: u8) -> (u32, u32) {
    let group: &[u8; GROUP] = tags.try_into().expect("a whole group");
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of x86-64, and the load reads the 16 bytes of `group`.
        unsafe {
            let g = _mm_loadu_si128(group.as_ptr().cast());
            let hits = _mm_movemask_epi8(_mm_cmpeq_epi8(g, _mm_set1_epi8(tag as i8)));
            let empty = _mm_movemask_epi8(_mm_cmpeq_epi8(g, _mm_setzero_si128()));
            (hits as u32, empty as u32)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mask = |want: u8| {
            group
                .iter()
                .enumerate()
                .fold(0u32, |m, (i, &t)| m | ((t == want) as u32) << i)
        };
        (mask(tag), mask(EMPTY))
    }
}

/// The slots of a group that hold an entry (tags with the top bit set), as a bit mask.
#[inline(always)]
fn full_mask(tags: &[u8]) -> u32 {
    let group: &[u8; GROUP] = tags.try_into().expect("a whole group");
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of x86-64, and the load reads the 16 bytes of `group`.
        unsafe { _mm_movemask_epi8(_mm_loadu_si128(group.as_ptr().cast())) as u32 }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        group
            .iter()
            .enumerate()
            .fold(0u32, |m, (i, &t)| m | ((t >= 0x80) as u32) << i)
    }
}

impl<K, V> Drop for IdTable<K, V> {
    fn drop(&mut self) {
        if mem::needs_drop::<(K, V)>() {
            self.each_full_slot(|table, slot| {
                // SAFETY: the slot is full, so its entry is initialised; it is dropped once,
                // as the table goes.
                unsafe { table.slots[slot].assume_init_drop() }
            });
        }
    }
}

impl<K, V> IdTable<K, V> {
    /// The slots holding entries, in order, found sixteen tags at a time.
    fn full_slots(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.capacity()).step_by(GROUP).flat_map(move |at| {
            let mut mask = full_mask(&self.tags[at..at + GROUP]);
            std::iter::from_fn(move || {
                (mask != 0).then(|| {
                    let slot = at + mask.trailing_zeros() as usize;
                    mask &= mask - 1;
                    slot
                })
            })
        })
    }

    /// Calls `f` with each slot that holds an entry when its group is reached, in slot order
    /// (`f` may empty the slot).
    fn each_full_slot(&mut self, mut f: impl FnMut(&mut Self, usize)) {
        for at in (0..self.capacity()).step_by(GROUP) {
            let mut mask = full_mask(&self.tags[at..at + GROUP]);
            while mask != 0 {
                let slot = at + mask.trailing_zeros() as usize;
                mask &= mask - 1;
                f(self, slot);
            }
        }
    }

    /// Slots in all (a power of two, or zero).
    fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The entry in `slot`, which must be full.
    #[inline(always)]
    fn entry(&self, slot: usize) -> &(K, V) {
        debug_assert!(self.tags[slot] >= 0x80);
        // SAFETY: a full slot's entry is initialised (see `slots`).
        unsafe { self.slots[slot].assume_init_ref() }
    }

    /// Moves the entry out of `slot`, which must be full, and marks the slot empty or deleted.
    fn take(&mut self, slot: usize) -> (K, V) {
        debug_assert!(self.tags[slot] >= 0x80);
        self.vacate(slot);
        self.read_vacated(slot)
    }

    /// Moves out the entry of `slot`, whose tag was full until the caller changed it.
    fn read_vacated(&mut self, slot: usize) -> (K, V) {
        debug_assert!(self.tags[slot] < 0x80);
        // SAFETY: the slot was full, so its entry is initialised; now that its tag says it is
        // not, nothing else reads or drops the entry.
        unsafe { self.slots[slot].assume_init_read() }
    }

    fn set_tag(&mut self, slot: usize, tag: u8) {
        self.tags[slot] = tag;
        if slot < GROUP {
            let mirror = self.capacity() + slot;
            self.tags[mirror] = tag;
        }
    }

    /// Marks a slot whose entry is leaving as empty when no probe needs to pass over it, else
    /// as deleted, so that a table whose keys come and go does not fill up with tombstones
    /// (hashbrown does the same). A probe must pass a slot only on its way to a key beyond
    /// the first sixteen slots from that key's home, and every slot from such a key's home
    /// to the key is in use: a run of at least seventeen. So a slot whose neighbours in use
    /// number fewer than sixteen may be empty.
    fn vacate(&mut self, slot: usize) {
        let after = slot + 1;
        let before = (slot + self.capacity() - GROUP) & (self.capacity() - 1);
        let (_, empty_after) = group_masks(&self.tags[after..after + GROUP], EMPTY);
        let (_, empty_before) = group_masks(&self.tags[before..before + GROUP], EMPTY);
        let run = (empty_after as u16).trailing_zeros() + (empty_before as u16).leading_zeros();
        if run >= GROUP as u32 {
            self.set_tag(slot, DELETED);
        } else {
            self.set_tag(slot, EMPTY);
            self.used -= 1;
        }
    }
}

impl<K: Eq, V> IdTable<K, V> {
    pub fn len(&self) -> usize {
        self.len
    }

    /// The memory its arrays hold (what a key or value owns besides is not counted).
    pub fn table_bytes(&self) -> usize {
        self.tags.capacity() + self.slots.len() * std::mem::size_of::<(K, V)>()
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn home(&self, hash: u64) -> usize {
        hash as usize & (self.capacity() - 1)
    }

    /// Asks the processor to fetch where `hash`'s key would be: the tags at its home slot, and
    /// the two cache lines from its home entry on (an entry may straddle two lines, and a new
    /// key usually lands at its home or just after). Nothing else changes.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        if self.tags.is_empty() {
            return;
        }
        let at = self.home(hash);
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            // SAFETY: a prefetch reads nothing and cannot fault; `add` stays in bounds.
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(self.tags.as_ptr().add(at).cast());
                let entry = self.slots.as_ptr().add(at).cast::<i8>();
                _mm_prefetch::<_MM_HINT_T0>(entry);
                // `wrapping_add`: past the last entry this points beyond the table, which a
                // prefetch may do.
                _mm_prefetch::<_MM_HINT_T0>(entry.wrapping_add(64));
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = at;
    }

    /// The slot holding the key with this `hash` that `is` picks, if any.
    #[inline]
    pub fn find(&self, hash: u64, is: impl Fn(&K) -> bool) -> Option<usize> {
        if self.tags.is_empty() {
            return None;
        }
        let tag = tag_of(hash);
        let mask = self.capacity() - 1;
        let mut at = self.home(hash);
        // Used slots are at most 7/8 of all, so some slot is empty. A key sits at or after
        // its home, in the first group of sixteen from there that holds an empty slot or
        // before it (`vacate` empties a slot only where that stays true).
        loop {
            let (mut hits, empty) = group_masks(&self.tags[at..at + GROUP], tag);
            // Hits after the first empty slot are mirrored tags seen again, or keys of
            // another run: both harmless to compare.
            while hits != 0 {
                let slot = (at + hits.trailing_zeros() as usize) & mask;
                if is(&self.entry(slot).0) {
                    return Some(slot);
                }
                hits &= hits - 1;
            }
            if empty != 0 {
                return None;
            }
            at = (at + GROUP) & mask;
        }
    }

    /// The value in `slot`, which must be full (as `find` returns it).
    pub fn value_mut(&mut self, slot: usize) -> &mut V {
        assert!(self.tags[slot] >= 0x80, "slot {slot} holds no entry");
        // SAFETY: the slot is full (checked above), so its entry is initialised.
        unsafe { &mut self.slots[slot].assume_init_mut().1 }
    }

    /// Inserts `key`, which must not be in the table.
    pub fn insert_new(&mut self, key: K, hash: u64, value: V, rehash: impl Fn(&K) -> u64) {
        if (self.used + 1) * 8 > self.capacity() * 7 {
            self.grow(rehash);
        }
        self.put(key, hash, value);
    }

    /// Puts `key`, which is not in the table, in the first free slot from its home: the
    /// table has room (`insert_new` made it, or `grow` moves entries into a larger table).
    #[inline(always)]
    fn put(&mut self, key: K, hash: u64, value: V) {
        let mask = self.capacity() - 1;
        let mut at = self.home(hash);
        loop {
            // The first slot from here that is empty or deleted.
            let free = !full_mask(&self.tags[at..at + GROUP]) & 0xffff;
            if free != 0 {
                let slot = (at + free.trailing_zeros() as usize) & mask;
                self.used += (self.tags[slot] == EMPTY) as usize;
                self.set_tag(slot, tag_of(hash));
                // An empty or deleted slot holds no entry to drop.
                self.slots[slot].write((key, value));
                self.len += 1;
                return;
            }
            at = (at + GROUP) & mask;
        }
    }

    /// Removes the entry in `slot`; returns its value.
    pub fn remove_at(&mut self, slot: usize) -> V {
        assert!(self.tags[slot] >= 0x80, "slot {slot} holds no entry");
        self.len -= 1;
        self.take(slot).1
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.full_slots().map(|slot| &self.entry(slot).1)
    }

    /// The entries, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = &(K, V)> {
        self.full_slots().map(|slot| self.entry(slot))
    }

    /// Takes every entry out, keeping the room.
    pub fn drain(&mut self) -> Vec<(K, V)> {
        let mut entries = Vec::with_capacity(self.len);
        // Every tag is emptied: no slot needs `vacate`'s choice between empty and deleted.
        self.each_full_slot(|table, slot| {
            table.set_tag(slot, EMPTY);
            entries.push(table.read_vacated(slot));
        });
        self.tags.fill(EMPTY);
        self.len = 0;
        self.used = 0;
        entries
    }

    /// Keeps the entries for which `keep` holds and hands the others' values to `dropped`,
    /// vacating their slots: one pass over the table in slot order, nothing moved or
    /// allocated (inserts reuse tombstones; `grow` clears them when they fill the table).
    /// Returns how many were dropped.
    pub fn retain(
        &mut self,
        mut keep: impl FnMut(&K, &V) -> bool,
        mut dropped: impl FnMut(V),
    ) -> usize {
        let mut gone = 0;
        self.each_full_slot(|table, slot| {
            let (k, v) = table.entry(slot);
            if !keep(k, v) {
                dropped(table.take(slot).1);
                gone += 1;
            }
        });
        self.len -= gone;
        gone
    }

    /// Doubles the room (or, when tombstones make up much of what is used, clears them at the
    /// same size) and moves every entry to its place in the new arrays. The old entries are
    /// read in slot order, which is their hashes' order, so the new places are written
    /// nearly in order too.
    fn grow(&mut self, rehash: impl Fn(&K) -> u64) {
        let slots = if self.slots.is_empty() {
            GROUP
        } else if self.len * 16 <= self.capacity() * 7 {
            self.capacity()
        } else {
            self.capacity() * 2
        };
        self.resize(slots, rehash);
    }

    /// Makes room for `more` entries at once (a restore), so that no insert grows the table.
    pub fn reserve(&mut self, more: usize, rehash: impl Fn(&K) -> u64) {
        let need = ((self.len + more) * 8).div_ceil(7) + 1;
        if need > self.capacity() * 7 / 8 || self.slots.is_empty() {
            let slots = need.next_power_of_two().max(GROUP);
            if slots > self.capacity() {
                self.resize(slots, rehash);
            }
        }
    }

    /// Moves the entries into a table of `slots` slots (a power of two, at least `GROUP`).
    fn resize(&mut self, slots: usize, rehash: impl Fn(&K) -> u64) {
        let old_tags = mem::replace(&mut self.tags, vec![EMPTY; slots + GROUP]);
        let old_slots = mem::replace(&mut self.slots, Box::new_uninit_slice(slots));
        self.len = 0;
        self.used = 0;
        for (entry, tag) in old_slots.into_vec().into_iter().zip(old_tags) {
            if tag >= 0x80 {
                // SAFETY: the slot was full, so its entry is initialised; it is moved once,
                // and the old array then goes without dropping what it held.
                let (key, value) = unsafe { entry.assume_init() };
                let h = rehash(&key);
                self.put(key, h, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;
    use std::rc::Rc;

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u16),
        Remove(u16),
        Drain,
        /// Keeps the keys not divisible by this.
        Retain(u16),
    }

    /// A poor hash: keys share a few homes (so runs pass many groups and wrap around the
    /// end) and a few tags.
    fn hash(k: &u32) -> u64 {
        (*k as u64 % 7).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (*k as u64 & 3) << 57
    }

    proptest! {
        /// Inserting absent keys, removing present ones and draining agree with a HashMap, and
        /// every value is dropped once: each holds a clone of `alive`, whose count is one
        /// again when the table and the map are gone (a value dropped twice would make it
        /// lower, or fail).
        #[test]
        fn behaves_like_a_map(ops in prop::collection::vec(prop_oneof![
            60 => any::<u16>().prop_map(|k| Op::Insert(k % 300)),
            15 => any::<u16>().prop_map(|k| Op::Remove(k % 300)),
            1 => Just(Op::Drain),
            2 => (2u16..6).prop_map(Op::Retain),
        ], 0..1000)) {
            let alive = Rc::new(());
            let value = |n: usize| (n as u64, Rc::clone(&alive));
            let mut table: IdTable<u32, (u64, Rc<()>)> = IdTable::default();
            let mut model: HashMap<u32, (u64, Rc<()>)> = HashMap::new();
            for (n, op) in ops.into_iter().enumerate() {
                match op {
                    Op::Insert(k) => {
                        let k = k as u32;
                        if table.find(hash(&k), |x| *x == k).is_none() {
                            table.insert_new(k, hash(&k), value(n), hash);
                            model.insert(k, value(n));
                        } else {
                            table.value_mut(table.find(hash(&k), |x| *x == k).unwrap()).0 += 1;
                            model.get_mut(&k).unwrap().0 += 1;
                        }
                    }
                    Op::Remove(k) => {
                        let k = k as u32;
                        let got = table.find(hash(&k), |x| *x == k).map(|slot| table.remove_at(slot));
                        prop_assert_eq!(got, model.remove(&k));
                    }
                    Op::Drain => {
                        let mut drained = table.drain();
                        drained.sort_unstable();
                        let mut expected: Vec<(u32, (u64, Rc<()>))> = model.drain().collect();
                        expected.sort_unstable();
                        prop_assert_eq!(drained, expected);
                    }
                    Op::Retain(d) => {
                        let d = d as u32;
                        let mut dropped = Vec::new();
                        let gone = table.retain(|k, _| k % d != 0, |v| dropped.push(v));
                        let mut expected: Vec<(u64, Rc<()>)> = model
                            .iter()
                            .filter(|(k, _)| *k % d == 0)
                            .map(|(_, v)| v.clone())
                            .collect();
                        model.retain(|k, _| k % d != 0);
                        dropped.sort_unstable();
                        expected.sort_unstable();
                        prop_assert_eq!(gone, dropped.len());
                        prop_assert_eq!(dropped, expected);
                    }
                }
                prop_assert_eq!(table.len(), model.len());
                prop_assert!(table.used * 8 <= table.capacity() * 7);
                let capacity = table.capacity();
                if capacity > 0 {
                    prop_assert_eq!(&table.tags[..GROUP], &table.tags[capacity..]);
                }
            }
            for (k, v) in &model {
                let slot = table.find(hash(k), |x| x == k);
                prop_assert_eq!(slot.map(|s| table.entry(s).1 .0), Some(v.0));
            }
            let mut values: Vec<u64> = table.values().map(|v| v.0).collect();
            values.sort_unstable();
            let mut expected: Vec<u64> = model.values().map(|v| v.0).collect();
            expected.sort_unstable();
            prop_assert_eq!(values, expected);
            prop_assert_eq!(Rc::strong_count(&alive), 1 + table.len() + model.len());
            drop((table, model));
            prop_assert_eq!(Rc::strong_count(&alive), 1);
        }
    }
}
