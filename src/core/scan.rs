//! A validating single-pass JSON scanner that captures the raw text of requested fields.
//!
//! Why not serde_json or sonic-rs: serde_json's visitor walks every key through the serde
//! machinery (about 20 instructions a byte here), and sonic-rs' lazy `get_many` is slower
//! still and accepts lines with garbage after the wanted fields. This scanner checks the full
//! RFC 8259 grammar (the same acceptance as `serde_json::from_str::<IgnoredAny>`, which the
//! property tests hold it to, except that nesting stops at 127 levels as serde_json's `Value`
//! parser does) and copies nothing. UTF-8 is checked before, by the caller.

use std::fmt;

/// Deepest nesting accepted: 127 levels, as serde_json's `Value` parser.
const MAX_DEPTH: u32 = 127;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanError {
    pub what: &'static str,
    /// Byte offset of the problem.
    pub at: usize,
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at column {}", self.what, self.at + 1)
    }
}

/// A trie of the requested paths: children by key, and the path indices ending here.
#[derive(Debug, Default)]
pub struct PathTrie {
    pub children: Vec<(Box<[u8]>, PathTrie)>,
    /// Bit n set when a child's key is n bytes long (bit 63: 63 or more), so that most keys of
    /// a line are ruled out by their length alone.
    pub lengths: u64,
    pub leaves: Vec<usize>,
    /// Every path index at or below this node, cleared when its key appears again (the last
    /// duplicate key wins, as in serde_json).
    pub below: Vec<usize>,
}

impl PathTrie {
    pub fn insert(&mut self, segments: &[String], index: usize) {
        let mut node = self;
        for seg in segments {
            let at = match node
                .children
                .iter()
                .position(|(name, _)| **name == *seg.as_bytes())
            {
                Some(at) => at,
                None => {
                    node.lengths |= length_bit(seg.len());
                    node.children
                        .push((seg.as_bytes().into(), PathTrie::default()));
                    node.children.len() - 1
                }
            };
            node = &mut node.children[at].1;
            node.below.push(index);
        }
        node.leaves.push(index);
    }

    #[inline]
    fn child(&self, key: &[u8]) -> Option<&PathTrie> {
        if self.lengths & length_bit(key.len()) == 0 {
            return None;
        }
        self.children
            .iter()
            .find(|(name, _)| same_bytes(name, key))
            .map(|(_, n)| n)
    }
}

fn length_bit(len: usize) -> u64 {
    1 << len.min(63)
}

/// `a == b`, with keys of 4 to 16 bytes (most JSON keys) compared as two overlapping words
/// each instead of through a `memcmp` call: every key of every line is compared here.
#[inline(always)]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word8 = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8"));
    let word4 = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().expect("4"));
    match n {
        8..=16 => word8(a, 0) == word8(b, 0) && word8(a, n - 8) == word8(b, n - 8),
        4..=7 => word4(a, 0) == word4(b, 0) && word4(a, n - 4) == word4(b, n - 4),
        _ => a == b,
    }
}

/// Byte range of a captured value in the line.
pub type Span = (u32, u32);

/// Scans `line` as one JSON value; for each path of `trie` found, stores the value's span in
/// `out[index]` (the last occurrence wins). Returns whether the value is an object.
pub fn scan(line: &[u8], trie: &PathTrie, out: &mut [Option<Span>]) -> Result<bool, ScanError> {
    let mut s = Scanner {
        b: line,
        i: 0,
        depth: 0,
        error: None,
    };
    s.ws();
    let is_object = s.peek() == Some(b'{');
    let scanned = s.value(Some(trie), out).and_then(|_| {
        s.ws();
        if s.i < line.len() {
            Err(s.err("trailing characters"))
        } else {
            Ok(())
        }
    });
    match scanned {
        Ok(()) => Ok(is_object),
        Err(Stop) => Err(s.error.take().expect("a stop records its error")),
    }
}

/// Scanning stopped at an error, which the scanner holds: the hot path passes back only
/// this zero-sized marker.
struct Stop;

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    depth: u32,
    error: Option<ScanError>,
}

impl Scanner<'_> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[cold]
    fn err(&mut self, what: &'static str) -> Stop {
        self.error = Some(ScanError { what, at: self.i });
        Stop
    }

    #[cold]
    fn eof(&mut self, what: &'static str) -> Stop {
        self.error = Some(ScanError {
            what,
            at: self.b.len(),
        });
        Stop
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    fn value(&mut self, node: Option<&PathTrie>, out: &mut [Option<Span>]) -> Result<(), Stop> {
        match self.peek() {
            Some(b'{') => self.object(node, out),
            Some(b'[') => self.array(out),
            Some(b'"') => self.string().map(|_| ()),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(_) => Err(self.err("expected value")),
            None => Err(self.eof("EOF while parsing a value")),
        }
    }

    fn enter(&mut self) -> Result<(), Stop> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err("recursion limit exceeded"));
        }
        self.i += 1;
        self.ws();
        Ok(())
    }

    fn object(&mut self, node: Option<&PathTrie>, out: &mut [Option<Span>]) -> Result<(), Stop> {
        self.enter()?;
        if self.peek() == Some(b'}') {
            self.i += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            match self.peek() {
                Some(b'"') => {}
                Some(_) => return Err(self.err("key must be a string")),
                None => return Err(self.eof("EOF while parsing an object")),
            }
            let key_start = self.i + 1;
            let escaped = self.string()?;
            let key = &self.b[key_start..self.i - 1];
            let child = match node {
                Some(n) if !n.children.is_empty() => {
                    if escaped {
                        let unescaped: String =
                            serde_json::from_slice(&self.b[key_start - 1..self.i])
                                .unwrap_or_default();
                        n.child(unescaped.as_bytes())
                    } else {
                        n.child(key)
                    }
                }
                _ => None,
            };
            self.ws();
            match self.peek() {
                Some(b':') => self.i += 1,
                Some(_) => return Err(self.err("expected ':'")),
                None => return Err(self.eof("EOF while parsing an object")),
            }
            self.ws();
            let start = self.i;
            if let Some(c) = child {
                for &i in &c.below {
                    out[i] = None;
                }
            }
            // Most values are strings: scan them here rather than through the recursive
            // dispatch.
            if self.peek() == Some(b'"') {
                self.string()?;
            } else {
                self.value(child, out)?;
            }
            if let Some(c) = child {
                for &leaf in &c.leaves {
                    out[leaf] = Some((start as u32, self.i as u32));
                }
            }
            self.ws();
            match self.peek() {
                Some(b',') => {
                    self.i += 1;
                    self.ws();
                }
                Some(b'}') => {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                Some(_) => return Err(self.err("expected ',' or '}'")),
                None => return Err(self.eof("EOF while parsing an object")),
            }
        }
    }

    fn array(&mut self, out: &mut [Option<Span>]) -> Result<(), Stop> {
        self.enter()?;
        if self.peek() == Some(b']') {
            self.i += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            // Paths do not index into arrays: elements are validated only.
            self.value(None, out)?;
            self.ws();
            match self.peek() {
                Some(b',') => {
                    self.i += 1;
                    self.ws();
                }
                Some(b']') => {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                Some(_) => return Err(self.err("expected ',' or ']'")),
                None => return Err(self.eof("EOF while parsing a list")),
            }
        }
    }

    /// Scans a string from its opening quote to just past its closing one; returns whether
    /// it held an escape.
    #[inline(always)]
    fn string(&mut self) -> Result<bool, Stop> {
        self.i += 1;
        let mut escaped = false;
        loop {
            self.i += special_offset(&self.b[self.i..]);
            match self.peek() {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(escaped);
                }
                Some(b'\\') => {
                    escaped = true;
                    self.i += 1;
                    match self.peek() {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.i += 1,
                        Some(b'u') => {
                            let hex = self.b.get(self.i + 1..self.i + 5);
                            match hex {
                                Some(h) if h.iter().all(u8::is_ascii_hexdigit) => self.i += 5,
                                Some(_) => return Err(self.err("invalid escape")),
                                None => return Err(self.eof("EOF while parsing a string")),
                            }
                        }
                        Some(_) => return Err(self.err("invalid escape")),
                        None => return Err(self.eof("EOF while parsing a string")),
                    }
                }
                Some(_) => {
                    return Err(self
                        .err("control character (\\u0000-\\u001F) found while parsing a string"))
                }
                None => return Err(self.eof("EOF while parsing a string")),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Result<(), Stop> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => {
                self.i += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return Err(self.err("invalid number"));
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            Some(_) => return Err(self.err("invalid number")),
            None => return Err(self.eof("EOF while parsing a value")),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(match self.peek() {
                    Some(_) => self.err("invalid number"),
                    None => self.eof("EOF while parsing a value"),
                });
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(match self.peek() {
                    Some(_) => self.err("invalid number"),
                    None => self.eof("EOF while parsing a value"),
                });
            }
        }
        Ok(())
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<(), Stop> {
        for &expected in word {
            match self.peek() {
                Some(c) if c == expected => self.i += 1,
                Some(_) => return Err(self.err("expected ident")),
                None => return Err(self.eof("EOF while parsing a value")),
            }
        }
        Ok(())
    }
}

/// Offset of the first `"`, `\` or control byte in `s` (or `s.len()`), eight bytes at a time.
#[inline]
pub(crate) fn special_offset(s: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut words = s.chunks_exact(8);
    let mut at = 0;
    for word in words.by_ref() {
        let v = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        let quote = v ^ (ONES * b'"' as u64);
        let backslash = v ^ (ONES * b'\\' as u64);
        // A byte is flagged when it is zero (quote/backslash) or below 0x20; bytes >= 0x80
        // (UTF-8) are excluded by `!v`. Borrows only run upward, so the lowest flag is exact.
        let flags = ((quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | v.wrapping_sub(ONES * 0x20))
            & !v
            & HIGHS;
        if flags != 0 {
            return at + (flags.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    let rest = words.remainder();
    at + rest
        .iter()
        .position(|c| matches!(c, b'"' | b'\\' | 0..=0x1f))
        .unwrap_or(rest.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ok(s: &str) -> bool {
        scan(s.as_bytes(), &PathTrie::default(), &mut []).is_ok()
    }

    fn serde_ok(s: &str) -> bool {
        serde_json::from_str::<serde::de::IgnoredAny>(s).is_ok()
    }

    #[test]
    fn accepts_and_rejects_like_serde_json() {
        let cases = [
            "{}",
            "[]",
            "0",
            "-0",
            "1.5e+3",
            "-1E-2",
            "\"a\\u00e9\\n\"",
            "true",
            "null",
            " {\"a\" : [1, {\"b\":null}] } ",
            "01",
            "1.",
            ".5",
            "-",
            "1e",
            "1e+",
            "+1",
            "tru",
            "nul",
            "{\"a\"}",
            "{\"a\":}",
            "{,}",
            "[1,]",
            "{\"a\":1,}",
            "\"\\q\"",
            "\"\\u12g4\"",
            "\"a\tb\"",
            "{} x",
            "",
            " ",
            "{\"a\":1",
            "[",
            "\"abc",
            "{1:2}",
            "[1 2]",
            "\"\\\"\"",
            "\"\\\\\"",
            "{\"\\u0061\":1}",
            "1 2",
            "-01",
            "2.e5",
            "[[[]]]",
        ];
        for c in cases {
            assert_eq!(ok(c), serde_ok(c), "{c:?}");
        }
        let deep_ok = format!("{}{}", "[".repeat(127), "]".repeat(127));
        let deep_bad = format!("{}1{}", "{\"a\":".repeat(128), "}".repeat(128));
        let shallow = format!("{}1{}", "{\"a\":".repeat(127), "}".repeat(127));
        // Nesting: IgnoredAny has no limit; we keep serde_json::Value's 128, so that a
        // hostile line cannot overflow the stack.
        let value_ok = |s: &str| serde_json::from_str::<serde_json::Value>(s).is_ok();
        assert!(ok(&deep_ok) && value_ok(&deep_ok));
        assert!(ok(&shallow) && value_ok(&shallow));
        assert!(!ok(&deep_bad) && !value_ok(&deep_bad));
    }

    proptest! {
        #[test]
        fn same_bytes_is_equality(a in prop::collection::vec(prop::sample::select(b"ab".to_vec()), 0..20), b in prop::collection::vec(prop::sample::select(b"ab".to_vec()), 0..20)) {
            prop_assert_eq!(same_bytes(&a, &b), a == b);
            prop_assert!(same_bytes(&a, &a.clone()));
        }
    }

    #[test]
    fn special_offsets() {
        assert_eq!(special_offset(b"abcdefghij\"k"), 10);
        assert_eq!(special_offset(b"ab\\"), 2);
        assert_eq!(special_offset(b"abcdefg\x01"), 7);
        assert_eq!(special_offset("ééééé\"".as_bytes()), 10);
        assert_eq!(special_offset(b"abcdefgh"), 8);
        assert_eq!(special_offset(b"\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x1f"), 8);
    }

    #[test]
    fn captures_spans_and_escaped_keys() {
        let mut trie = PathTrie::default();
        trie.insert(&["a".into()], 0);
        trie.insert(&["b".into(), "c".into()], 1);
        trie.insert(&["b".into()], 2);
        let line = r#"{"a\u0020":0,"a": "x" ,"b":{"c":[1,2],"d":1}}"#;
        let mut out = [None; 3];
        assert_eq!(scan(line.as_bytes(), &trie, &mut out), Ok(true));
        let text = |i: usize| out[i].map(|(s, e)| &line[s as usize..e as usize]);
        assert_eq!(text(0), Some("\"x\""));
        assert_eq!(text(1), Some("[1,2]"));
        assert_eq!(text(2), Some(r#"{"c":[1,2],"d":1}"#));
        let mut out = [None; 3];
        assert_eq!(scan(br#"{"\u0061":7}"#, &trie, &mut out), Ok(true));
        assert_eq!(out[0], Some((10, 11)), "the 7 after the escaped key");
    }

    fn json_text() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_string()),
            Just("true".to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| serde_json::to_string(&f).unwrap()),
            "[ -~é\\n\\t\"\\\\]{0,8}".prop_map(|s| serde_json::to_string(&s).unwrap()),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5)
                    .prop_map(|v| format!("[{}]", v.join(" ,"))),
                prop::collection::vec(("[a-c]{1,2}", inner), 0..5).prop_map(|kv| {
                    let body: Vec<String> =
                        kv.iter().map(|(k, v)| format!("\"{k}\" : {v}")).collect();
                    format!("{{ {} }}", body.join(","))
                }),
            ]
        })
    }

    proptest! {
        /// Valid JSON is accepted, and any corruption is judged exactly as serde_json judges it.
        #[test]
        fn agrees_with_serde_json(text in json_text(), cut in any::<prop::sample::Index>(), byte in prop::sample::select(b"{}[]\",:\\ 0-.eEtfnu\t\x01x".to_vec())) {
            prop_assert!(ok(&text), "{}", text);
            let mut corrupt = text.clone().into_bytes();
            let at = cut.index(corrupt.len() + 1);
            if at < corrupt.len() && corrupt[at].is_ascii() {
                corrupt[at] = byte;
            } else {
                corrupt.insert(at.min(corrupt.len()), byte);
            }
            if let Ok(c) = String::from_utf8(corrupt) {
                prop_assert_eq!(ok(&c), serde_ok(&c), "{}", c);
                let half = (0..=c.len() / 2).rev().find(|i| c.is_char_boundary(*i)).unwrap();
                let truncated = &c[..half];
                prop_assert_eq!(ok(truncated), serde_ok(truncated), "{}", truncated);
            }
        }

        /// Captured spans are exactly the values serde_json finds at those paths.
        #[test]
        fn spans_match_serde_json(text in json_text(), path in "[a-c]{1,2}(\\.[a-c]{1,2})?") {
            let segments: Vec<String> = path.split('.').map(String::from).collect();
            let mut trie = PathTrie::default();
            trie.insert(&segments, 0);
            let mut out = [None];
            scan(text.as_bytes(), &trie, &mut out).unwrap();
            let value: serde_json::Value = serde_json::from_str(&text).unwrap();
            let expected = segments.iter().try_fold(&value, |v, s| v.as_object()?.get(s));
            let got: Option<serde_json::Value> = out[0].map(|(s, e)| serde_json::from_str(&text[s as usize..e as usize]).unwrap());
            prop_assert_eq!(got.as_ref(), expected);
        }
    }
}
