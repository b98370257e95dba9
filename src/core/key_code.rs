//! Dense codes for the key texts of a run, given on the reader's thread: the window's thread
//! then finds a key by its code in an array, where it would hash the key's text and probe a
//! table for it. With a core of its own the reader has time to spare, and the command's
//! thread is the one that sets the wall time.
//!
//! A code only stands for a text within its coder (one per reader), so it carries the
//! coder's number; whoever keeps codes starts afresh when that number changes.

use std::collections::hash_map::Entry;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU32, Ordering};

use rustc_hash::{FxHashMap, FxHasher};

/// Codes one coder gives at most: past them, keys go without (and are found by their text),
/// so the coder's memory stays bounded whatever the number of keys.
pub const MAX_CODES: usize = 1 << 16;

/// A key text's code, and the coder that gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyCode {
    pub coder: u32,
    pub code: u32,
}

/// Gives each distinct key text (a field's raw JSON) a code, 0, 1, 2..., for the coder's
/// life.
#[derive(Debug)]
pub struct KeyCoder {
    number: u32,
    /// Texts of up to 16 bytes, by their spelling, which holds them whole.
    short: FxHashMap<(u64, u64, usize), u32>,
    long: FxHashMap<Box<[u8]>, u32>,
}

impl Default for KeyCoder {
    fn default() -> Self {
        // Coders of one process never share a number (two runs of a step, one after the
        // other, each have their reader).
        static NEXT: AtomicU32 = AtomicU32::new(0);
        KeyCoder {
            number: NEXT.fetch_add(1, Ordering::Relaxed),
            short: FxHashMap::default(),
            long: FxHashMap::default(),
        }
    }
}

impl KeyCoder {
    /// `text`'s code: the one it had, or the next; none once `MAX_CODES` are given.
    #[inline]
    pub fn code(&mut self, text: &[u8]) -> Option<KeyCode> {
        let given = self.short.len() + self.long.len();
        let room = given < MAX_CODES;
        let s = Spelling::of_bytes(text);
        let code = if s.is_whole() {
            match self.short.entry((s.first, s.last, s.len)) {
                Entry::Occupied(e) => *e.get(),
                Entry::Vacant(e) if room => *e.insert(given as u32),
                Entry::Vacant(_) => return None,
            }
        } else {
            match self.long.get(text) {
                Some(&code) => code,
                None if room => *self.long.entry(text.into()).or_insert(given as u32),
                None => return None,
            }
        };
        Some(KeyCode {
            coder: self.number,
            code,
        })
    }
}

/// A key's length and its first and last eight bytes (big-endian, zero-padded), which spell a
/// key of up to 16 bytes in full.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Spelling {
    pub(crate) len: usize,
    pub(crate) first: u64,
    pub(crate) last: u64,
}

impl Spelling {
    pub(crate) fn of(text: &str) -> Spelling {
        Spelling::of_bytes(text.as_bytes())
    }

    #[inline]
    pub(crate) fn of_bytes(bytes: &[u8]) -> Spelling {
        let n = bytes.len();
        Spelling {
            len: n,
            first: word(&bytes[..n.min(8)]),
            last: word(&bytes[n.saturating_sub(8)..]),
        }
    }

    /// Whether this spells its text in full (two keys with equal spellings are equal).
    pub(crate) fn is_whole(&self) -> bool {
        self.len <= 16
    }

    pub(crate) fn hash(&self, text: &str) -> u64 {
        let mut h = FxHasher::default();
        if self.is_whole() {
            (self.first, self.last, self.len).hash(&mut h);
        } else {
            text.hash(&mut h);
        }
        h.finish()
    }
}

/// Up to eight bytes as a big-endian number, zero-padded. Read as two loads that overlap, not
/// copied: a copy of a length known only at run time is a call to `memcpy`, twice per record
/// (3% of a window run's samples).
#[inline]
pub(crate) fn word(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    debug_assert!(n <= 8);
    let be32 = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as u64;
    let be16 = |at: usize| u16::from_be_bytes(bytes[at..at + 2].try_into().unwrap()) as u64;
    // Each part placed at its bytes' place in the word; where two overlap they agree.
    match n {
        8 => u64::from_be_bytes(bytes.try_into().unwrap()),
        4..=7 => be32(0) << 32 | be32(n - 4) << (64 - 8 * n),
        2..=3 => be16(0) << 48 | be16(n - 2) << (64 - 8 * n),
        1 => (bytes[0] as u64) << 56,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_keeps_its_code_and_codes_are_dense_up_to_the_cap() {
        let mut coder = KeyCoder::default();
        let a = coder.code(b"\"a\"").unwrap();
        let b = coder.code(b"\"b\"").unwrap();
        assert_eq!((a.code, b.code), (0, 1));
        assert_eq!(coder.code(b"\"a\""), Some(a));
        for i in 2..MAX_CODES {
            assert_eq!(coder.code(i.to_string().as_bytes()).unwrap().code, i as u32);
        }
        assert_eq!(coder.code(b"one too many"), None);
        assert_eq!(coder.code(b"\"b\""), Some(b));
        assert_ne!(KeyCoder::default().number, coder.number);
        let mut long = KeyCoder::default();
        let a = long.code(b"\"a key of more than sixteen bytes\"").unwrap();
        let b = long.code(b"\"a key of more than sixteen bytez\"").unwrap();
        assert_eq!((a.code, b.code), (0, 1));
        assert_eq!(long.code(b"\"a key of more than sixteen bytes\""), Some(a));
    }
}
