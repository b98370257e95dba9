//! The open windows of a window operator, by key and start. Entries sit in a slab found through
//! a hash map, and each key remembers the slot of the window it last added to: most records of
//! a key fall in that window, and find it by the key's id alone, without a probe of a table far
//! larger than the cache.

use rustc_hash::FxHashMap;

use super::time::Millis;

/// A key's id (`window::Keys`): dense, reused once the key has no window left.
pub type KeyId = u32;

/// No window: the start no window has.
const NONE: (Millis, u32) = (Millis::MIN, u32::MAX);

/// A window's key and start, and where its entry is.
pub type Place = (KeyId, Millis, u32);

#[derive(Debug)]
pub struct WindowTable<E> {
    slots: FxHashMap<(KeyId, Millis), u32>,
    entries: Vec<E>,
    free: Vec<u32>,
    /// Per key id: the start and slot of the window it last added to, or `NONE`.
    latest: Vec<(Millis, u32)>,
}

impl<E> Default for WindowTable<E> {
    fn default() -> Self {
        WindowTable {
            slots: FxHashMap::default(),
            entries: Vec::new(),
            free: Vec::new(),
            latest: Vec::new(),
        }
    }
}

impl<E: Default> WindowTable<E> {
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The memory the table holds, near enough.
    pub fn bytes(&self) -> usize {
        use std::mem::size_of;
        self.slots.capacity() * (size_of::<((KeyId, Millis), u32)>() + 1)
            + self.entries.capacity() * size_of::<E>()
            + (self.free.capacity() + 3 * self.latest.capacity()) * size_of::<u32>()
    }

    fn slot(&self, key: KeyId, start: Millis) -> Option<u32> {
        match self.latest.get(key as usize) {
            Some(&(s, slot)) if s == start => Some(slot),
            _ => self.slots.get(&(key, start)).copied(),
        }
    }

    pub fn get(&self, key: KeyId, start: Millis) -> Option<&E> {
        let slot = self.slot(key, start)?;
        Some(&self.entries[slot as usize])
    }

    /// The window (key, start), which must be there.
    pub fn at(&self, key: KeyId, start: Millis) -> &E {
        self.get(key, start).expect("window in state")
    }

    pub fn get_mut(&mut self, key: KeyId, start: Millis) -> Option<&mut E> {
        let slot = self.slot(key, start)?;
        Some(&mut self.entries[slot as usize])
    }

    /// The window (key, start), made by `new` when there is none (then `true`); it becomes
    /// the key's latest.
    pub fn get_or_insert_with(
        &mut self,
        key: KeyId,
        start: Millis,
        new: impl FnOnce() -> E,
    ) -> (&mut E, bool) {
        let k = key as usize;
        if self.latest.len() <= k {
            self.latest.resize(k + 1, NONE);
        }
        let (slot, made) = match self.slot(key, start) {
            Some(slot) => (slot, false),
            None => (self.put(key, start, new()), true),
        };
        self.latest[k] = (start, slot);
        (&mut self.entries[slot as usize], made)
    }

    /// Adds the window (key, start); `false` when it is there already (and left as it was).
    pub fn insert(&mut self, key: KeyId, start: Millis, entry: E) -> bool {
        if self.slots.contains_key(&(key, start)) {
            return false;
        }
        self.put(key, start, entry);
        true
    }

    fn put(&mut self, key: KeyId, start: Millis, entry: E) -> u32 {
        let slot = match self.free.pop() {
            Some(slot) => {
                self.entries[slot as usize] = entry;
                slot
            }
            None => {
                self.entries.push(entry);
                (self.entries.len() - 1) as u32
            }
        };
        self.slots.insert((key, start), slot);
        slot
    }

    pub fn remove(&mut self, key: KeyId, start: Millis) -> Option<E> {
        let slot = self.slots.remove(&(key, start))?;
        if self.latest.get(key as usize) == Some(&(start, slot)) {
            self.latest[key as usize] = NONE;
        }
        self.free.push(slot);
        Some(std::mem::take(&mut self.entries[slot as usize]))
    }

    /// Empties the table in one pass: every window's key, start and entry, in the order `sort`
    /// puts their (key, start, place) in. Removing windows one by one probes the table for
    /// each; at the end of a large run, with the table far larger than the cache, reading it
    /// through once is much cheaper.
    pub fn drain_sorted(&mut self, sort: &dyn Fn(&mut [Place])) -> Drained<E> {
        let slots = self.slots.drain();
        let mut places: Vec<_> = slots
            .map(|((key, start), slot)| (key, start, slot))
            .collect();
        sort(&mut places);
        self.latest.clear();
        self.free.clear();
        Drained {
            places: places.into_iter(),
            entries: std::mem::take(&mut self.entries),
        }
    }

    /// Every window, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (KeyId, Millis, &E)> + '_ {
        (self.slots.iter()).map(|(&(key, start), &slot)| (key, start, &self.entries[slot as usize]))
    }
}

/// The windows `drain_sorted` took out of the table, handed over in its order: a value of its
/// own, so that its owner can take them a batch at a time.
#[derive(Debug)]
pub struct Drained<E> {
    places: std::vec::IntoIter<Place>,
    entries: Vec<E>,
}

impl<E: Default> Iterator for Drained<E> {
    type Item = (KeyId, Millis, E);

    fn next(&mut self) -> Option<Self::Item> {
        let (key, start, slot) = self.places.next()?;
        Some((key, start, std::mem::take(&mut self.entries[slot as usize])))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.places.size_hint()
    }
}

impl<E: Default> ExactSizeIterator for Drained<E> {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[derive(Debug, Clone, Copy)]
    enum Op {
        Add(KeyId, Millis, u64),
        Insert(KeyId, Millis, u64),
        Remove(KeyId, Millis),
    }

    fn op() -> impl Strategy<Value = Op> {
        let at = (0u32..4, 0i64..4);
        prop_oneof![
            (at.clone(), any::<u64>()).prop_map(|((k, s), v)| Op::Add(k, s, v)),
            (at.clone(), any::<u64>()).prop_map(|((k, s), v)| Op::Insert(k, s, v)),
            at.prop_map(|(k, s)| Op::Remove(k, s)),
        ]
    }

    proptest! {
        /// The table holds what a plain map of (key, start) holds, whatever the order of adds
        /// and removes, and each key's latest window never points at another's entry.
        #[test]
        fn the_table_is_a_map_of_key_and_start(ops in prop::collection::vec(op(), 1..200)) {
            let mut table = WindowTable::<u64>::default();
            let mut model = HashMap::new();
            for op in ops {
                match op {
                    Op::Add(k, s, v) => {
                        let (e, made) = table.get_or_insert_with(k, s, || 0);
                        let m = model.entry((k, s));
                        prop_assert_eq!(made, matches!(m, std::collections::hash_map::Entry::Vacant(_)));
                        let m = m.or_insert(0);
                        prop_assert_eq!(*e, *m);
                        *e = e.wrapping_add(v);
                        *m = m.wrapping_add(v);
                    }
                    Op::Insert(k, s, v) => {
                        let fresh = !model.contains_key(&(k, s));
                        prop_assert_eq!(table.insert(k, s, v), fresh);
                        model.entry((k, s)).or_insert(v);
                    }
                    Op::Remove(k, s) => {
                        prop_assert_eq!(table.remove(k, s), model.remove(&(k, s)));
                    }
                }
                prop_assert_eq!(table.len(), model.len());
                for k in 0..4 {
                    for s in 0..4 {
                        prop_assert_eq!(table.get(k, s), model.get(&(k, s)));
                    }
                }
            }
            let mut all: Vec<_> = table.iter().map(|(k, s, v)| ((k, s), *v)).collect();
            let mut want: Vec<_> = model.into_iter().collect();
            all.sort_unstable();
            want.sort_unstable();
            prop_assert_eq!(&all, &want);
            // Drained in the order asked for, every entry once, and nothing left.
            let by_place = |p: &mut [Place]| p.sort_unstable_by_key(|&(k, s, _)| (k, s));
            let drained: Vec<_> = table.drain_sorted(&by_place).map(|(k, s, v)| ((k, s), v)).collect();
            prop_assert_eq!(drained, want);
            prop_assert!(table.is_empty() && table.get(0, 0).is_none());
            table.get_or_insert_with(0, 0, || 7);
            prop_assert_eq!(table.get(0, 0), Some(&7));
        }
    }
}
