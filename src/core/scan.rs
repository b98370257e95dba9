//! A validating single-pass JSON scanner that captures the raw text of requested fields.
//!
//! Why not serde_json or sonic-rs: serde_json's visitor walks every key through the serde
//! machinery (about 20 instructions a byte here), and sonic-rs' lazy `get_many` is slower
//! still and accepts lines with garbage after the wanted fields. This scanner checks the full
//! RFC 8259 grammar (the same acceptance as `serde_json::from_str::<IgnoredAny>`, which the
//! property tests hold it to, except that nesting stops at 127 levels as serde_json's `Value`
//! parser does) and copies nothing. It notes whether any byte is above ASCII, so that the
//! caller's UTF-8 check is needed only for lines that have such bytes.
//!
//! Lines of one stream almost always repeat one of a few layouts: the same keys in the same
//! order. A [`Shape`] remembers the text between the values of the last few layouts seen, and
//! a line that repeats one of them byte for byte needs only its values scanned.

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

/// A trie of no paths, for a scan that only validates: one for the whole run, where building
/// and dropping an empty one for each line showed in the profile of `consume`.
pub static NO_PATHS: PathTrie = PathTrie {
    children: Vec::new(),
    lengths: 0,
    leaves: Vec::new(),
    below: Vec::new(),
};

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

    /// Forgets what the paths at or below this node captured: its key appeared again, and
    /// the last duplicate key wins (as in serde_json).
    #[inline]
    fn forget_below(&self, out: &mut [Option<Span>]) {
        for &i in &self.below {
            out[i] = None;
        }
    }

    /// The one path that ends at this node, when no other path passes through it: its value
    /// is captured with a single store, nothing below to forget.
    fn sole_leaf(&self) -> Option<usize> {
        match (&self.leaves[..], &self.below[..]) {
            ([leaf], [below]) if leaf == below => Some(*leaf),
            _ => None,
        }
    }

    /// Captures `span` for the paths that end at this node.
    #[inline]
    fn capture(&self, span: Span, out: &mut [Option<Span>]) {
        for &leaf in &self.leaves {
            out[leaf] = Some(span);
        }
    }

    /// The position of the child for `key` in `children`.
    #[inline]
    fn child_index(&self, key: &[u8]) -> Option<usize> {
        if self.lengths & length_bit(key.len()) == 0 {
            return None;
        }
        self.children
            .iter()
            .position(|(name, _)| same_bytes(name, key))
    }
}

fn length_bit(len: usize) -> u64 {
    1 << len.min(63)
}

/// `a == b`, with texts of 4 to 32 bytes (most JSON keys, and the text between two values)
/// compared as overlapping words instead of through a `memcmp` call: every key of every line
/// is compared here.
#[inline(always)]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word8 = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8"));
    let word4 = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().expect("4"));
    let same8 = |at: usize| word8(a, at) == word8(b, at);
    match n {
        17..=32 => same8(0) & same8(8) & same8(n - 16) & same8(n - 8),
        8..=16 => same8(0) & same8(n - 8),
        4..=7 => word4(a, 0) == word4(b, 0) && word4(a, n - 4) == word4(b, n - 4),
        _ => a == b,
    }
}

/// Whether the bytes of `a` and `b` that `mask` selects (bit k for byte k) are the same.
#[inline(always)]
fn same_under_mask(a: &[u8; 16], b: &[u8; 16], mask: u32) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of x86-64, and the loads read the 16 bytes of `a` and `b`.
        let same = unsafe {
            _mm_movemask_epi8(_mm_cmpeq_epi8(
                _mm_loadu_si128(a.as_ptr().cast()),
                _mm_loadu_si128(b.as_ptr().cast()),
            )) as u32
        };
        same & mask == mask
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        (0..16).all(|k| mask & 1 << k == 0 || a[k] == b[k])
    }
}

/// Whether `line` holds `text` at `at`.
#[inline(always)]
fn has_at(line: &[u8], at: usize, text: &[u8]) -> bool {
    line.len() - at >= text.len() && same_bytes(&line[at..at + text.len()], text)
}

/// Byte range of a captured value in the line.
pub type Span = (u32, u32);

/// What a scan found out about a valid line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scanned {
    /// The value is an object.
    pub object: bool,
    /// Every byte is ASCII, so the line is UTF-8 with no further check. (Bytes above ASCII
    /// can only pass inside strings, and the string scan sees every byte of a string.)
    pub ascii: bool,
}

/// Scans `line` as one JSON value; for each path of `trie` found, stores the value's span in
/// `out[index]` (the last occurrence wins; `out` starts all `None`).
///
/// With a `shape` (kept by the caller from line to line, always with the same `trie`), a line
/// laid out like a recent object line is checked against that layout, and any other line is
/// scanned in full and its layout remembered. Both ways accept and capture exactly the same.
pub fn scan(
    line: &[u8],
    trie: &PathTrie,
    out: &mut [Option<Span>],
    shape: Option<&mut Shape>,
) -> Result<Scanned, ScanError> {
    let Some(shape) = shape else {
        return scan_in_full(line, trie, out, None);
    };
    if shape.resting > 0 {
        shape.resting -= 1;
        return scan_in_full(line, trie, out, None);
    }
    if let Some((len, scanned)) = shape.scan_line(line, trie, out) {
        if len == line.len() {
            return Ok(scanned);
        }
        // A layout matched the start of `line` only: the full scan judges the line.
        out.fill(None);
    }
    // Lines that share no layout (keys in any order) would pay for trying and learning
    // layouts on every line: after a run of misses, layouts rest for a while.
    shape.misses += 1;
    if shape.misses == MISSES_BEFORE_REST {
        shape.misses = 0;
        shape.resting = REST_LINES;
    }
    shape.marks.clear();
    let scanned = scan_in_full(line, trie, out, Some(&mut shape.marks));
    // Only valid objects teach a layout; a bad line leaves the layouts as they were.
    if let Ok(Scanned { object: true, .. }) = scanned {
        shape.learn(line);
    }
    scanned
}

fn scan_in_full(
    line: &[u8],
    trie: &PathTrie,
    out: &mut [Option<Span>],
    marks: Option<&mut Vec<Mark>>,
) -> Result<Scanned, ScanError> {
    let mut s = Scanner::new(line, marks);
    s.ws();
    let object = s.peek() == Some(b'{');
    let scanned = s.value(Some(trie), out).and_then(|_| {
        s.ws();
        if s.i < line.len() {
            Err(s.err("trailing characters"))
        } else {
            Ok(())
        }
    });
    match scanned {
        Ok(()) => Ok(Scanned {
            object,
            ascii: s.high == 0,
        }),
        Err(Stop) => Err(s.error.take().expect("a stop records its error")),
    }
}

/// The layouts of the last few object lines that were scanned in full, most recently
/// matched first, and the full scan's record of a line's top-level members, to learn from.
#[derive(Debug, Default)]
pub struct Shape {
    layouts: Vec<Layout>,
    marks: Vec<Mark>,
    /// Lines in a row that matched no layout.
    misses: u32,
    /// Lines still to scan in full without trying layouts.
    resting: u32,
}

/// Layouts kept: streams that mix a few kinds of event (say, orders and refunds) keep each.
const MAX_LAYOUTS: usize = 4;
/// Misses in a row after which layouts rest, and for how many lines.
const MISSES_BEFORE_REST: u32 = 8;
const REST_LINES: u32 = 1024;

/// An object line's layout: the text before each member's value (`{"a":`, then `,"b":` and so
/// on, spaces included), the text after the last value, and which requested field, if any,
/// each member is.
#[derive(Debug, Default)]
struct Layout {
    /// The texts, one after another.
    text: Vec<u8>,
    /// The texts are all ASCII (a key may not be).
    ascii: bool,
    members: Vec<Member>,
    /// Where the text after the last value starts in `text`.
    tail_start: usize,
    /// The text after the last value (most often `}`), compared in one step as the members'
    /// texts are, where a call to `memcmp` took about twenty instructions a line.
    short_tail: ShortText,
}

/// Layouts longer than this are not kept: matching them would save little.
const MAX_SHAPE_TEXT: usize = 4096;

/// No requested field starts at this member.
const NO_CHILD: u32 = u32::MAX;
/// A member that is not a requested path's sole leaf (see `PathTrie::sole_leaf`).
const NO_LEAF: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Member {
    /// Where the member's text before its value starts in `Layout::text`, and its length.
    lead_start: u32,
    lead_len: u32,
    /// Index of the member's key in the trie's root children, or `NO_CHILD` (also when
    /// `leaf` says all there is to do).
    child: u32,
    /// The path index when the member's key is that path's sole leaf (the common case of a
    /// requested top-level field), or `NO_LEAF`.
    leaf: u32,
    /// The member's text before its value, when it has at most 16 bytes (most do).
    short_lead: ShortText,
}

/// A text of at most 16 bytes, zero-padded, compared with the line in one step.
#[derive(Clone, Copy, Debug, Default)]
struct ShortText {
    bytes: [u8; 16],
    /// A bit for each byte of `bytes` that belongs to the text; 0 for a longer text.
    mask: u32,
}

impl ShortText {
    fn of(text: &[u8]) -> ShortText {
        let mut short = ShortText::default();
        if text.len() <= 16 {
            short.bytes[..text.len()].copy_from_slice(text);
            short.mask = (1 << text.len()) - 1;
        }
        short
    }

    /// Whether `data` holds the text at `at`; `text` gives it in full, for a text longer than
    /// 16 bytes or a line that ends less than 16 bytes on.
    #[inline(always)]
    fn is_at<'t>(&self, data: &[u8], at: usize, text: impl FnOnce() -> &'t [u8]) -> bool {
        // Sliced from `at` first: no test of `at + 16` for overflow.
        match data.get(at..).and_then(<[u8]>::first_chunk) {
            Some(window) if self.mask != 0 => same_under_mask(window, &self.bytes, self.mask),
            _ => has_at(data, at, text()),
        }
    }
}

/// A top-level member as the full scan found it.
#[derive(Clone, Copy, Debug)]
struct Mark {
    value_start: u32,
    value_end: u32,
    child: u32,
    leaf: u32,
}

impl Shape {
    /// Scans the line at the start of `data` when it begins with a learned layout: returns
    /// where the layout's last text ends and what the scan found, so that the line's end is
    /// found by scanning it (the caller checks that the line ends there). `None` when no layout
    /// fits, or layouts are resting: `scan` must then judge the line (and count the miss).
    pub fn scan_line(
        &mut self,
        data: &[u8],
        trie: &PathTrie,
        out: &mut [Option<Span>],
    ) -> Option<(usize, Scanned)> {
        if self.resting > 0 {
            return None;
        }
        for k in 0..self.layouts.len() {
            if let Some(found) = self.layouts[k].scan(data, trie, out) {
                // Most recently matched first.
                self.layouts[..=k].rotate_right(1);
                self.misses = 0;
                return Some(found);
            }
            forget_captures(out);
        }
        None
    }

    /// Remembers `line`'s layout (from `marks`) in front, in place of the least recently
    /// matched one when all places are taken.
    fn learn(&mut self, line: &[u8]) {
        if self.layouts.len() < MAX_LAYOUTS {
            self.layouts.push(Layout::default());
        }
        let last = self.layouts.len() - 1;
        if self.layouts[last].learn(line, &self.marks) {
            self.layouts.rotate_right(1);
        } else {
            self.layouts.pop();
        }
    }
}

/// Empties what a layout that did not fit captured: out of line, as a miss is rare and the
/// fill's setup, inlined, was computed for every line.
#[cold]
#[inline(never)]
fn forget_captures(out: &mut [Option<Span>]) {
    out.fill(None);
}

impl Layout {
    /// Learns `line`'s layout; returns whether it is worth keeping.
    fn learn(&mut self, line: &[u8], marks: &[Mark]) -> bool {
        self.text.clear();
        self.members.clear();
        let mut from = 0;
        for mark in marks {
            let lead = &line[from..mark.value_start as usize];
            let lead_start = self.text.len() as u32;
            self.text.extend_from_slice(lead);
            self.members.push(Member {
                lead_start,
                lead_len: lead.len() as u32,
                child: if mark.leaf == NO_LEAF {
                    mark.child
                } else {
                    NO_CHILD
                },
                leaf: mark.leaf,
                short_lead: ShortText::of(lead),
            });
            from = mark.value_end as usize;
        }
        self.tail_start = self.text.len();
        self.text.extend_from_slice(&line[from..]);
        self.short_tail = ShortText::of(&line[from..]);
        self.ascii = self.text.is_ascii();
        self.text.len() <= MAX_SHAPE_TEXT
    }

    /// Scans the line at the start of `data` when it is laid out like this shape, and returns
    /// where the layout's last text ends with what the scan found; `None` for any other line
    /// (valid or not), which the full scan must then judge.
    ///
    /// `data` may go on past the line: the scan cannot cross a newline, because the texts
    /// between values hold none, plain strings and numbers stop at one, and the general
    /// scanner is given the line alone. The caller checks that the line ends where the
    /// layout's last text does.
    fn scan(
        &self,
        data: &[u8],
        trie: &PathTrie,
        out: &mut [Option<Span>],
    ) -> Option<(usize, Scanned)> {
        // A scan that only validates (no slot to fill) runs a loop without the captures, which
        // keeps its state in fewer registers.
        let (i, high) = if out.is_empty() {
            self.scan_members::<false>(data, trie, out)?
        } else {
            self.scan_members::<true>(data, trie, out)?
        };
        // The rest of the line must be the text after the last value, no more.
        let tail = &self.text[self.tail_start..];
        self.short_tail.is_at(data, i, || tail).then_some((
            i + tail.len(),
            Scanned {
                object: true,
                ascii: high == 0 && self.ascii,
            },
        ))
    }

    /// The members' texts and values: where the last value ends, and whether a byte above
    /// ASCII was seen.
    #[inline(always)]
    fn scan_members<const CAPTURE: bool>(
        &self,
        data: &[u8],
        trie: &PathTrie,
        out: &mut [Option<Span>],
    ) -> Option<(usize, u64)> {
        // The position and the above-ASCII flag live in registers here; the general scanner
        // is called only for values other than strings without escapes and numbers without
        // exponents (the scan as `Scanner::member_value`, which the full scan uses).
        let mut i = 0;
        let mut high = 0;
        // Where the line ends, found once, for the general scanner only.
        let mut line_end = usize::MAX;
        for member in &self.members {
            let lead_len = member.lead_len as usize;
            let lead = || &self.text[member.lead_start as usize..][..lead_len];
            if !member.short_lead.is_at(data, i, lead) {
                return None;
            }
            i += lead_len;
            if CAPTURE && member.child != NO_CHILD {
                i = nested_member(data, i, trie, member.child, out, (&mut high, &mut line_end))?;
                continue;
            }
            let start = i;
            let plain = match data.get(i) {
                Some(b'"') => plain_string_end(data, i),
                Some(b'-' | b'0'..=b'9') => plain_number_end(data, i).map(|end| (end, 0)),
                _ => None,
            };
            match plain {
                Some((end, above_ascii)) => {
                    i = end;
                    high |= above_ascii;
                }
                None => i = general_value(data, i, None, out, (&mut high, &mut line_end))?,
            }
            // A requested path's sole leaf is stored once its value is scanned.
            if let (true, Some(slot)) = (CAPTURE, out.get_mut(member.leaf as usize)) {
                *slot = Some((start as u32, i as u32));
            }
        }
        Some((i, high))
    }
}

/// A member's value at `at` that a requested path starts at but does not end at (or whose key
/// came before): `general_value` with the member's node in the trie, found here, out of the
/// layout scan's loop, which then keeps one value fewer alive.
#[inline(never)]
fn nested_member(
    data: &[u8],
    at: usize,
    trie: &PathTrie,
    child: u32,
    out: &mut [Option<Span>],
    seen: (&mut u64, &mut usize),
) -> Option<usize> {
    let child = trie.children.get(child as usize).map(|(_, n)| n);
    general_value(data, at, child, out, seen)
}

/// The member value at `at` scanned by the general scanner, inside the top-level object as the
/// full scan would be (`Scanner::member_value`, with the member's node in the trie): for
/// values other than plain strings and numbers, and members a nested path starts at. Where it
/// ends. `seen` holds the above-ASCII flag and where the line ends (`usize::MAX` until a
/// first general value finds it).
#[inline(never)]
fn general_value(
    data: &[u8],
    at: usize,
    child: Option<&PathTrie>,
    out: &mut [Option<Span>],
    (high, line_end): (&mut u64, &mut usize),
) -> Option<usize> {
    if *line_end == usize::MAX {
        *line_end = memchr::memchr(b'\n', &data[at..]).map_or(data.len(), |k| at + k);
    }
    let mut s = Scanner::new(&data[..*line_end], None);
    s.depth = 1;
    s.i = at;
    s.member_value(child, out).ok()?;
    *high |= s.high;
    Some(s.i)
}

/// When the string whose opening quote is at `at` holds no escape or control character: the
/// offset just past its closing quote, and `find_special`'s above-ASCII flag for it.
#[inline(always)]
fn plain_string_end(line: &[u8], at: usize) -> Option<(usize, u64)> {
    debug_assert_eq!(line.get(at), Some(&b'"'));
    let (offset, high) = find_special(&line[at + 1..]);
    let end = at + 1 + offset;
    (line.get(end) == Some(&b'"')).then_some((end + 1, high))
}

/// When `line[at..]` starts with a number without an exponent, valid as far as it goes: the
/// offset just past it. (The number ends where the scanner's would; what follows is the next
/// member's text, which the caller checks.) Anything else, including a leading zero followed by
/// digits, is left to the scanner.
#[inline(always)]
fn plain_number_end(line: &[u8], at: usize) -> Option<usize> {
    let whole = at + (line.get(at) == Some(&b'-')) as usize;
    let mut end = digits_end(line, whole);
    if end == whole || (end - whole > 1 && line[whole] == b'0') {
        return None;
    }
    if line.get(end) == Some(&b'.') {
        let fraction_end = digits_end(line, end + 1);
        if fraction_end == end + 1 {
            return None;
        }
        end = fraction_end;
    }
    match line.get(end) {
        Some(b'e' | b'E') => None,
        _ => Some(end),
    }
}

/// The offset of the first byte at or after `from` that is not a decimal digit.
#[inline(always)]
fn digits_end(b: &[u8], mut from: usize) -> usize {
    while let Some(b'0'..=b'9') = b.get(from) {
        from += 1;
    }
    from
}

/// Scanning stopped at an error, which the scanner holds: the hot path passes back only
/// this zero-sized marker.
struct Stop;

struct Scanner<'a, 'm> {
    b: &'a [u8],
    i: usize,
    depth: u32,
    /// Nonzero once a byte above ASCII has been seen.
    high: u64,
    error: Option<ScanError>,
    /// Where to record the top-level members, when learning a shape.
    marks: Option<&'m mut Vec<Mark>>,
}

impl<'a, 'm> Scanner<'a, 'm> {
    fn new(b: &'a [u8], marks: Option<&'m mut Vec<Mark>>) -> Self {
        Scanner {
            b,
            i: 0,
            depth: 0,
            high: 0,
            error: None,
            marks,
        }
    }

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
            let child_index = match node {
                Some(n) if !n.children.is_empty() => {
                    if escaped {
                        let unescaped: String =
                            serde_json::from_slice(&self.b[key_start - 1..self.i])
                                .unwrap_or_default();
                        n.child_index(unescaped.as_bytes())
                    } else {
                        n.child_index(key)
                    }
                }
                _ => None,
            };
            let child = child_index.and_then(|k| Some(&node?.children[k].1));
            self.ws();
            match self.peek() {
                Some(b':') => self.i += 1,
                Some(_) => return Err(self.err("expected ':'")),
                None => return Err(self.eof("EOF while parsing an object")),
            }
            self.ws();
            let start = self.i;
            self.member_value(child, out)?;
            if self.depth == 1 {
                if let Some(marks) = self.marks.as_mut() {
                    marks.push(Mark {
                        value_start: start as u32,
                        value_end: self.i as u32,
                        child: child_index.map_or(NO_CHILD, |k| k as u32),
                        leaf: child
                            .and_then(PathTrie::sole_leaf)
                            .map_or(NO_LEAF, |l| l as u32),
                    });
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

    /// Scans an object member's value, `child` being its key's node in the trie: the paths
    /// below it found earlier are forgotten (the last duplicate key wins), and the paths
    /// ending at it capture the value.
    #[inline(always)]
    fn member_value(
        &mut self,
        child: Option<&PathTrie>,
        out: &mut [Option<Span>],
    ) -> Result<(), Stop> {
        let start = self.i;
        if let Some(c) = child {
            c.forget_below(out);
        }
        // Most values are strings: scan them here rather than through the recursive dispatch.
        if self.peek() == Some(b'"') {
            self.string()?;
        } else {
            self.value(child, out)?;
        }
        if let Some(c) = child {
            c.capture((start as u32, self.i as u32), out);
        }
        Ok(())
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
            let (offset, high) = find_special(&self.b[self.i..]);
            self.i += offset;
            self.high |= high;
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
        self.i = digits_end(self.b, start);
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

/// Offset of the first `"`, `\` or control byte in `s` (or `s.len()`).
#[inline]
pub(crate) fn special_offset(s: &[u8]) -> usize {
    find_special(s).0
}

/// Offset of the first `"`, `\` or control byte in `s` (or `s.len()`), and a value that is
/// nonzero when a byte above ASCII comes before it (or shortly after: the bytes after it are
/// the next token's, which the grammar checks anyway). Sixteen bytes at a time with SSE2,
/// which every x86-64 has, then eight at a time.
#[inline(always)]
fn find_special(s: &[u8]) -> (usize, u64) {
    let mut at = 0;
    let mut high = 0;
    #[cfg(target_arch = "x86_64")]
    while s.len() - at >= 16 {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of x86-64, and the load reads `s[at..at + 16]`.
        let (special, above_ascii) = unsafe {
            let v = _mm_loadu_si128(s.as_ptr().add(at).cast());
            let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
            let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
            let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
            let special = _mm_or_si128(_mm_or_si128(quote, backslash), control);
            (
                _mm_movemask_epi8(special) as u32,
                _mm_movemask_epi8(v) as u32,
            )
        };
        high |= above_ascii as u64;
        if special != 0 {
            return (at + special.trailing_zeros() as usize, high);
        }
        at += 16;
    }
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut words = s[at..].chunks_exact(8);
    for word in words.by_ref() {
        let v = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        let quote = v ^ (ONES * b'"' as u64);
        let backslash = v ^ (ONES * b'\\' as u64);
        high |= v & HIGHS;
        // A byte is flagged when it is zero (quote/backslash) or below 0x20; bytes >= 0x80
        // (UTF-8) are excluded by `!v`. Borrows only run upward, so the lowest flag is exact.
        let flags = ((quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | v.wrapping_sub(ONES * 0x20))
            & !v
            & HIGHS;
        if flags != 0 {
            return (at + (flags.trailing_zeros() / 8) as usize, high);
        }
        at += 8;
    }
    for &c in words.remainder() {
        if matches!(c, b'"' | b'\\' | 0..=0x1f) {
            break;
        }
        high |= (c & 0x80) as u64;
        at += 1;
    }
    (at, high)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ok(s: &str) -> bool {
        scan(s.as_bytes(), &PathTrie::default(), &mut [], None).is_ok()
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
        fn same_bytes_is_equality(a in prop::collection::vec(prop::sample::select(b"ab".to_vec()), 0..40), b in prop::collection::vec(prop::sample::select(b"ab".to_vec()), 0..40)) {
            prop_assert_eq!(same_bytes(&a, &b), a == b);
            prop_assert!(same_bytes(&a, &a.clone()));
        }

        /// Texts of one length that differ in one byte, wherever it is, are told apart.
        #[test]
        fn same_bytes_sees_any_one_byte_changed(a in prop::collection::vec(any::<u8>(), 1..40), at in any::<prop::sample::Index>()) {
            let mut b = a.clone();
            let at = at.index(a.len());
            b[at] ^= 0x20;
            prop_assert!(!same_bytes(&a, &b));
            prop_assert!(same_bytes(&a[..at], &b[..at]));
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
        let long = b"0123456789abcdefghijklmnopqrstuvwxyz\"";
        assert_eq!(special_offset(long), 36);
        assert_eq!(special_offset(&long[..36]), 36);
        assert_eq!(special_offset(b"0123456789abcdef\x00"), 16);
        assert_eq!(special_offset(b"0123456789abcdefghijklm\\"), 23);
    }

    proptest! {
        /// After runs long enough for several 16-byte steps, with bytes above ASCII or not:
        /// the offset of the byte that ends the run, and the run's bytes above ASCII noticed.
        #[test]
        fn find_special_sees_past_a_long_run(run in prop::collection::vec(prop::sample::select(b"ab \x7f\x80\xc3\xff".to_vec()), 0..80), stop in prop::sample::select(b"\"\\\x01\x1f".to_vec()), after in prop::collection::vec(any::<u8>(), 0..20)) {
            let text = [run.clone(), vec![stop], after].concat();
            let (at, high) = find_special(&text);
            prop_assert_eq!(at, run.len());
            if !run.is_ascii() {
                prop_assert!(high != 0);
            }
            if text.is_ascii() {
                prop_assert_eq!(high, 0);
            }
        }

        /// Across the SSE2 blocks, the words and the last bytes: the offset is the first
        /// special byte's, and a byte above ASCII before it is always noticed.
        #[test]
        fn find_special_is_the_first_special_byte(text in prop::collection::vec(prop::sample::select(b"ab\"\\\x01\x1f\x20\x7f\x80\xc3\xff".to_vec()), 0..80)) {
            let (at, high) = find_special(&text);
            let first = text.iter().position(|c| matches!(c, b'"' | b'\\' | 0..=0x1f)).unwrap_or(text.len());
            prop_assert_eq!(at, first);
            if !text[..first].is_ascii() {
                prop_assert!(high != 0);
            }
            if text.is_ascii() {
                prop_assert_eq!(high, 0);
            }
        }
    }

    /// A learned layout's scan, with fields to capture and without (a scan that only
    /// validates runs a loop of its own): bytes above ASCII in any kind of value are noticed,
    /// and a nested requested path is captured below a member.
    #[test]
    fn layout_scans_notice_non_ascii_values_with_and_without_captures() {
        let mut trie = PathTrie::default();
        trie.insert(&["b".into(), "c".into()], 0);
        trie.insert(&["d".into()], 1);
        let learn = br#"{"a":"x","b":{"c":1},"d":2,"e":true}"#;
        let lines: [&[u8]; 4] = [
            "{\"a\":\"\u{e9}\",\"b\":{\"c\":1},\"d\":2,\"e\":true}".as_bytes(),
            "{\"a\":\"x\",\"b\":{\"c\":\"\u{e9}\"},\"d\":2,\"e\":true}".as_bytes(),
            "{\"a\":\"x\",\"b\":{\"c\":1},\"d\":\"\u{e9}\",\"e\":true}".as_bytes(),
            br#"{"a":"x","b":{"c":1},"d":2,"e":true}"#,
        ];
        // A scan with no slot is one with no paths.
        let none = PathTrie::default();
        for (trie, paths) in [(&none, 0), (&trie, 2)] {
            let mut shape = Shape::default();
            let mut out = vec![None; paths];
            scan(learn, trie, &mut out, Some(&mut shape)).unwrap();
            for line in lines {
                let mut out = vec![None; paths];
                let got = shape.scan_line(line, trie, &mut out);
                let (end, scanned) = got.expect("the learned layout fits");
                assert_eq!(end, line.len());
                assert_eq!(
                    scanned.ascii,
                    line.is_ascii(),
                    "{}",
                    String::from_utf8_lossy(line)
                );
                let mut full = vec![None; paths];
                scan(line, trie, &mut full, None).unwrap();
                assert_eq!(out, full);
            }
        }
    }

    #[test]
    fn captures_spans_and_escaped_keys() {
        let mut trie = PathTrie::default();
        trie.insert(&["a".into()], 0);
        trie.insert(&["b".into(), "c".into()], 1);
        trie.insert(&["b".into()], 2);
        let line = r#"{"a\u0020":0,"a": "x" ,"b":{"c":[1,2],"d":1}}"#;
        let mut out = [None; 3];
        assert!(scan(line.as_bytes(), &trie, &mut out, None).unwrap().object);
        let text = |i: usize| out[i].map(|(s, e)| &line[s as usize..e as usize]);
        assert_eq!(text(0), Some("\"x\""));
        assert_eq!(text(1), Some("[1,2]"));
        assert_eq!(text(2), Some(r#"{"c":[1,2],"d":1}"#));
        let mut out = [None; 3];
        assert!(
            scan(br#"{"\u0061":7}"#, &trie, &mut out, None)
                .unwrap()
                .object
        );
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

    /// Lines of one stream: objects whose keys usually repeat one of two layouts (spaces
    /// included) but whose values change kind from line to line, some corrupted.
    fn stream() -> impl Strategy<Value = Vec<String>> {
        let key = prop::sample::select(vec!["a", "b", "c", "ab", "é"]).prop_map(String::from);
        let layout =
            move || prop::collection::vec((key.clone(), prop::sample::select(vec!["", " "])), 0..5);
        let line = |keys: Vec<(String, &'static str)>| {
            let n = keys.len();
            (
                Just(keys),
                prop::collection::vec(json_text(), n),
                any::<prop::sample::Index>(),
                prop::sample::select(b"{}[]\",:\\ 0-.eEtfnu\x01x".to_vec()),
                0..4u8,
            )
                .prop_map(|(keys, values, cut, byte, corrupt)| {
                    let body: Vec<String> = keys
                        .iter()
                        .zip(&values)
                        .map(|((k, space), v)| format!("{space}\"{k}\":{space}{v}"))
                        .collect();
                    let text = format!("{{{}}}", body.join(","));
                    if corrupt > 0 {
                        return text;
                    }
                    let mut bytes = text.into_bytes();
                    let at = cut.index(bytes.len());
                    if bytes[at].is_ascii() {
                        bytes[at] = byte;
                    }
                    String::from_utf8(bytes).unwrap_or_default()
                })
        };
        (layout(), layout()).prop_flat_map(move |(one, two)| {
            let pick = prop_oneof![Just(one.clone()), Just(two.clone()), layout()];
            prop::collection::vec(pick.prop_flat_map(line), 1..12)
        })
    }

    proptest! {
        /// A scan that keeps the layout from line to line accepts, rejects, captures and
        /// reports ASCII exactly as a scan of each line on its own.
        #[test]
        fn shaped_scans_agree_with_full_scans(lines in stream(), paths in prop::collection::vec("(a|b|ab)(\\.[a-c])?", 0..4)) {
            let mut trie = PathTrie::default();
            for (i, path) in paths.iter().enumerate() {
                trie.insert(&path.split('.').map(String::from).collect::<Vec<_>>(), i);
            }
            let mut shape = Shape::default();
            for line in &lines {
                let mut full = vec![None; paths.len()];
                let mut shaped = vec![None; paths.len()];
                let expected = scan(line.as_bytes(), &trie, &mut full, None);
                let got = scan(line.as_bytes(), &trie, &mut shaped, Some(&mut shape));
                prop_assert_eq!(&got, &expected, "{}", line);
                if let Ok(scanned) = got {
                    prop_assert_eq!(&shaped, &full, "{}", line);
                    prop_assert_eq!(scanned.ascii, line.is_ascii(), "{}", line);
                }
            }
        }

        /// Number-like values of a learned layout's members (which the layout scan reads
        /// itself) are accepted, rejected and captured as the full scan does.
        #[test]
        fn shaped_numbers_agree_with_full_scans(values in prop::collection::vec("-?0?[0-9]{0,3}(\\.[0-9]{0,2})?([eE][+-]?[0-9]{0,2})?[x.-]?", 1..8)) {
            let mut trie = PathTrie::default();
            trie.insert(&["a".to_string()], 0);
            let mut shape = Shape::default();
            for value in std::iter::once("1".to_string()).chain(values) {
                let line = format!("{{\"a\":{value},\"b\":\"x\"}}");
                let (mut full, mut shaped) = (vec![None], vec![None]);
                let expected = scan(line.as_bytes(), &trie, &mut full, None);
                let got = scan(line.as_bytes(), &trie, &mut shaped, Some(&mut shape));
                prop_assert_eq!(&got, &expected, "{}", line);
                prop_assert_eq!(&shaped, &full, "{}", line);
            }
        }

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
            scan(text.as_bytes(), &trie, &mut out, None).unwrap();
            let value: serde_json::Value = serde_json::from_str(&text).unwrap();
            let expected = segments.iter().try_fold(&value, |v, s| v.as_object()?.get(s));
            let got: Option<serde_json::Value> = out[0].map(|(s, e)| serde_json::from_str(&text[s as usize..e as usize]).unwrap());
            prop_assert_eq!(got.as_ref(), expected);
        }
    }
}
