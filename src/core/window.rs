//! Event-time windows, pure and synchronous (the rules are in the README and
//! docs/ARCHITECTURE.md).
//!
//! Windows are half-open `[start, end)`. A window fires once the watermark `W >= end` (the
//! least over partitions); it stays in state until `W >= end + allowed_lateness`, and a
//! record that reaches it before then updates it and re-emits it marked as an update. A
//! record is late when every window it belongs to (for a session: the session it would
//! join) has `W_p >= end + allowed_lateness`, `W_p` the watermark of the record's own
//! partition as the records before it there left it (`Watermarks::judging`). Since `W` never
//! passes a partition's `W_p`, a window is still held whenever a record could reach it, and
//! which records are late depends on each partition's contents alone, not on the order in
//! which partitions are read. Rows of one watermark step come out in (window_end, key) order.

use std::collections::{btree_map, BTreeMap, HashMap};
use std::sync::Arc;

use hashbrown::HashTable;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use super::aggregate::{AggInput, AggSpec, AggState, Cell, Columns, ToColumns};
use super::envelope::state_key_text;
use super::key_code::{KeyCode, Spelling};
use super::partitioned::{Parent, PartitionTask};
use super::shuffle::Marker;
use super::time::{human_duration, Millis};
use super::watermark::Watermarks;
use super::window_table::{Drained, KeyId, Place, WindowTable};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowKind {
    Tumbling {
        size: Millis,
        offset: Millis,
    },
    Hopping {
        size: Millis,
        slide: Millis,
        offset: Millis,
    },
    Session {
        gap: Millis,
    },
}

impl WindowKind {
    /// The flags that give this window, as a user types them (`--tumbling 1m --offset -8h`).
    pub fn flags(&self) -> String {
        let (mut text, offset) = match *self {
            WindowKind::Tumbling { size, offset } => {
                (format!("--tumbling {}", human_duration(size)), offset)
            }
            WindowKind::Hopping {
                size,
                slide,
                offset,
            } => {
                let (size, slide) = (human_duration(size), human_duration(slide));
                (format!("--hop {size} --slide {slide}"), offset)
            }
            WindowKind::Session { gap } => (format!("--session {}", human_duration(gap)), 0),
        };
        if offset != 0 {
            let sign = if offset < 0 { "-" } else { "" };
            text += &format!(" --offset {sign}{}", human_duration(offset.abs()));
        }
        text
    }

    /// Calls `f(start, end)` for every tumbling/hopping window containing `ts`, latest first.
    pub fn for_each_window(&self, ts: Millis, mut f: impl FnMut(Millis, Millis)) {
        match *self {
            WindowKind::Tumbling { size, offset } => {
                let start = ts - (ts - offset).rem_euclid(size);
                f(start, start.saturating_add(size));
            }
            WindowKind::Hopping {
                size,
                slide,
                offset,
            } => {
                let mut start = ts - (ts - offset).rem_euclid(slide);
                while start > ts - size {
                    f(start, start.saturating_add(size));
                    start -= slide;
                }
            }
            WindowKind::Session { gap } => f(ts, ts.saturating_add(gap)),
        }
    }

    /// The latest end among the windows containing `ts` (for a session, its own window).
    pub fn last_end(&self, ts: Millis) -> Millis {
        let mut last = Millis::MIN;
        self.for_each_window(ts, |_, end| last = last.max(end));
        last
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum EmitMode {
    /// One row per window when it is complete (and an update row per late change).
    #[default]
    Final,
    /// A row on every change, as Kafka Streams without suppress.
    Updates,
}

#[derive(Clone, Debug)]
pub struct WindowConfig {
    pub kind: WindowKind,
    pub allowed_lateness: Millis,
    pub emit: EmitMode,
    pub aggs: Vec<AggSpec>,
    /// Bound on (key, window) pairs held; exceeding it is an error.
    pub max_open_windows: usize,
}

impl WindowConfig {
    /// When a window leaves state, where it does not as it fires: at its end plus the
    /// allowed lateness, when no record can reach it any more; a session one gap later,
    /// closed, so that a record that would join it is known to be late (instead of opening a
    /// second session of the key beside it).
    fn drop_at(&self, end: Millis) -> Option<Millis> {
        let after = end.saturating_add(self.allowed_lateness);
        match self.kind {
            WindowKind::Session { gap } => Some(after.saturating_add(gap)),
            _ => (self.allowed_lateness > 0).then_some(after),
        }
    }
}

/// A window's aggregate states, one per aggregate. Most commands ask for one or two, held in
/// the window's own entry rather than in an allocation of their own (one cache miss less
/// per record).
pub type States = smallvec::SmallVec<[AggState; 2]>;

/// One result row.
#[derive(Clone, Debug)]
pub struct Row {
    /// The key fields' JSON texts joined by `KEY_SEPARATOR`, shared with the operator's
    /// interned key (a row costs no copy of it). `Arc`: a large batch of rows is formatted
    /// on two threads.
    pub key: Arc<str>,
    pub start: Millis,
    pub end: Millis,
    /// This row replaces an earlier row for the same key and window.
    pub update: bool,
    /// This row withdraws an earlier row for the same key and window: a session it described
    /// was merged into one that starts elsewhere. It carries no aggregates.
    pub retract: bool,
    /// The aggregates, in the order of `WindowConfig::aggs`.
    pub states: States,
}

/// A row as columns: its key fields by their names, then its bounds and aggregates.
pub struct RowColumns<'a> {
    pub row: &'a Row,
    pub key_columns: &'a [String],
    pub aggs: &'a [AggSpec],
}

impl ToColumns for RowColumns<'_> {
    /// Key fields, window bounds, aggregates, and the update flag.
    fn fill(&self, out: &mut impl Columns) {
        let row = self.row;
        if let [column] = self.key_columns {
            // One key field (the common case): its text is the whole key, nothing to split.
            out.put(column, Cell::Json(&row.key));
        } else {
            for (column, text) in self.key_columns.iter().zip(row.key.split(KEY_SEPARATOR)) {
                out.put(column, Cell::Json(text));
            }
        }
        out.put("window_start", Cell::Time(row.start));
        out.put("window_end", Cell::Time(row.end));
        if row.retract {
            out.put("retract", Cell::Bool(true));
            return;
        }
        for (state, spec) in row.states.iter().zip(self.aggs) {
            state.output(spec, out);
        }
        if row.update {
            out.put("update", Cell::Bool(true));
        }
    }
}

/// Where a row's column comes from, to say why two share a name.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ColumnSource {
    Key,
    Own,
    Aggregate,
}

impl ColumnSource {
    fn one(self) -> &'static str {
        match self {
            ColumnSource::Key => "a --key field",
            ColumnSource::Own => "weir's own",
            ColumnSource::Aggregate => "an aggregate",
        }
    }
}

/// Two columns of one name would make rows that lose one of them: JSON readers keep the last
/// of two equal names, and a CSV column is read by its name.
pub fn check_column_names(key_columns: &[String], aggs: &[AggSpec]) -> Result<(), String> {
    use ColumnSource::*;
    let own = ["window_start", "window_end", "update", "retract"].map(|c| (c.to_string(), Own));
    let keys = key_columns.iter().map(|c| (c.clone(), Key));
    let aggregates = aggs
        .iter()
        .flat_map(AggSpec::columns)
        .map(|c| (c, Aggregate));
    let mut seen: HashMap<String, ColumnSource> = HashMap::new();
    for (name, second) in keys.chain(own).chain(aggregates) {
        let Some(first) = seen.insert(name.clone(), second) else {
            continue;
        };
        let from = match (first, second) {
            (Key, Key) => "two --key fields".to_string(),
            (Aggregate, Aggregate) => "two aggregates".to_string(),
            _ => format!("{} and {}", first.one(), second.one()),
        };
        let hint = match (first, second) {
            (Aggregate, _) => ": give each once, or name one with --as NAME",
            (_, Aggregate) => ": name the aggregate otherwise with --as NAME",
            _ => "",
        };
        return Err(format!(
            "two columns of each row would be named '{name}' ({from}){hint}"
        ));
    }
    Ok(())
}

/// Joins key fields' JSON texts: a raw control character never occurs in JSON text.
pub const KEY_SEPARATOR: char = '\u{1f}';

/// The partition key a record keyed by its state key has, for a key as windows and ids keep
/// it (its fields' JSON texts joined by `KEY_SEPARATOR`).
pub fn partition_key_of(joined: &str) -> String {
    state_key_text(&joined.split(KEY_SEPARATOR).collect::<Vec<_>>())
}

#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Accepted,
    Late,
}

/// More windows open than `max_open_windows`. It carries nothing, so that `process`
/// returns its result in a register: a wider result goes through memory, and reading it back
/// waits behind the map's cache-missing stores.
#[derive(Debug, PartialEq, Eq)]
pub struct TooManyWindows;

/// A key's session made of a new record's and those it overlaps or touches.
struct Merged {
    start: Millis,
    end: Millis,
    states: States,
    /// Whether any absorbed session had fired.
    emitted: bool,
    /// The absorbed sessions whose rows went out, by start and end.
    withdrawn: Vec<(Millis, Millis)>,
}

#[derive(Debug, Default)]
struct Entry {
    end: Millis,
    states: States,
    /// Emitted and not changed since.
    fired: bool,
    /// Some row for this window has been emitted (so the next one is an update).
    emitted: bool,
    /// A row for this very window (key and start) has gone out, so a sink holds it.
    row_out: bool,
}

/// Interned keys with reference counts, so keys of closed windows are forgotten.
#[derive(Debug, Default)]
struct Keys {
    /// The live keys' ids with their spellings, by `Spelling::hash`: a lookup compares the
    /// spelling in the table's own entry, where reading `spellings[id]` was one more cache
    /// miss per record.
    ids: HashTable<Interned>,
    texts: Vec<Arc<str>>,
    /// Each id's text in brief, beside the others: keys are ordered by their first eight
    /// bytes first, without reading their texts (a cache miss each).
    spellings: Vec<Spelling>,
    refs: Vec<u32>,
    free: Vec<KeyId>,
    /// The bytes of the live keys' texts.
    text_bytes: usize,
    /// By the reader's code for a key's text (`core::key_code`): the live key's id, or
    /// `NO_KEY`; a record with a code finds its key here, without hashing its text.
    by_code: Vec<KeyId>,
    /// Per id: its place in `by_code`, or `NO_CODE`.
    code_of: Vec<u32>,
    /// The coder whose codes `by_code` holds.
    coder: Option<u32>,
}

const NO_KEY: KeyId = KeyId::MAX;
const NO_CODE: u32 = u32::MAX;

/// A record's key: its text, and the code the reader gave the text, if any.
#[derive(Clone, Copy, Debug)]
pub struct Key<'a> {
    pub text: &'a str,
    pub code: Option<KeyCode>,
}

impl<'a> From<&'a str> for Key<'a> {
    fn from(text: &'a str) -> Key<'a> {
        Key { text, code: None }
    }
}

impl<'a> From<&'a String> for Key<'a> {
    fn from(text: &'a String) -> Key<'a> {
        Key::from(text.as_str())
    }
}

/// A key's entry in `Keys::ids`: its spelling and id in 24 bytes (a `Spelling` and an id
/// side by side would take 32).
#[derive(Clone, Copy, Debug)]
struct Interned {
    first: u64,
    last: u64,
    len: u32,
    id: KeyId,
}

impl Interned {
    fn new(s: Spelling, id: KeyId) -> Interned {
        Interned {
            first: s.first,
            last: s.last,
            // A longer key (never a line's field) compares as not whole, by its text.
            len: u32::try_from(s.len).unwrap_or(u32::MAX),
            id,
        }
    }

    fn spells(&self, s: &Spelling) -> bool {
        let len = self.len as usize == s.len || self.len == u32::MAX;
        self.first == s.first && self.last == s.last && len
    }

    fn spelling(&self) -> Spelling {
        Spelling {
            len: self.len as usize,
            first: self.first,
            last: self.last,
        }
    }
}

impl Keys {
    /// The id of `key`, found by its code where it has one.
    #[inline]
    fn id_of(&mut self, key: Key<'_>) -> KeyId {
        let code = key.code.filter(|c| self.coder == Some(c.coder));
        match code.and_then(|c| self.by_code.get(c.code as usize)) {
            Some(&id) if id != NO_KEY => id,
            _ => self.id_coding(key),
        }
    }

    /// The id of `key` found by its text; its code (if any) finds it from now on.
    fn id_coding(&mut self, key: Key<'_>) -> KeyId {
        let id = self.id(key.text);
        let Some(code) = key.code else {
            return id;
        };
        if self.coder != Some(code.coder) {
            // Another reader's codes: those of the last one mean nothing now.
            self.coder = Some(code.coder);
            self.by_code.clear();
            self.code_of.fill(NO_CODE);
        }
        let at = code.code as usize;
        if self.by_code.len() <= at {
            self.by_code.resize(at + 1, NO_KEY);
        }
        self.by_code[at] = id;
        self.code_of[id as usize] = code.code;
        id
    }

    fn id(&mut self, text: &str) -> KeyId {
        let spelling = Spelling::of(text);
        let hash = spelling.hash(text);
        let texts = &self.texts;
        let same = |e: &Interned| {
            e.spells(&spelling) && (spelling.is_whole() || *texts[e.id as usize] == *text)
        };
        if let Some(&Interned { id, .. }) = self.ids.find(hash, same) {
            return id;
        }
        let text: Arc<str> = text.into();
        self.text_bytes += text.len();
        let id = match self.free.pop() {
            Some(id) => {
                self.texts[id as usize] = text;
                self.spellings[id as usize] = spelling;
                id
            }
            None => {
                self.texts.push(text);
                self.spellings.push(spelling);
                self.refs.push(0);
                self.code_of.push(NO_CODE);
                (self.texts.len() - 1) as KeyId
            }
        };
        let texts = &self.texts;
        let rehash = |e: &Interned| e.spelling().hash(&texts[e.id as usize]);
        self.ids
            .insert_unique(hash, Interned::new(spelling, id), rehash);
        id
    }

    /// Orders two keys by their texts.
    #[cfg(test)]
    fn cmp(&self, a: KeyId, b: KeyId) -> std::cmp::Ordering {
        self.cmp_sorted((self.first(a), a), (self.first(b), b))
    }

    /// A key's first eight bytes, which order it among keys that differ there.
    fn first(&self, id: KeyId) -> u64 {
        self.spellings[id as usize].first
    }

    /// Orders two keys by their texts, given their `first` words (carried beside them by a
    /// sort, which then reads no text unless they agree).
    fn cmp_sorted(&self, (fa, a): (u64, KeyId), (fb, b): (u64, KeyId)) -> std::cmp::Ordering {
        fa.cmp(&fb)
            .then_with(|| self.texts[a as usize].cmp(&self.texts[b as usize]))
    }

    fn retain(&mut self, id: KeyId) {
        self.refs[id as usize] += 1;
    }

    fn release(&mut self, id: KeyId) {
        let r = &mut self.refs[id as usize];
        *r -= 1;
        if *r == 0 {
            self.forget(id);
        }
    }

    /// Takes back a `retain` without forgetting the key: the caller still uses it.
    fn unhold(&mut self, id: KeyId) {
        self.refs[id as usize] -= 1;
    }

    /// Forgets a key looked up for a record that opened no window (a late one).
    fn release_if_unused(&mut self, id: KeyId) {
        if self.refs[id as usize] == 0 {
            self.forget(id);
        }
    }

    fn forget(&mut self, id: KeyId) {
        let text = std::mem::take(&mut self.texts[id as usize]);
        self.text_bytes -= text.len();
        let hash = self.spellings[id as usize].hash(&text);
        if let Ok(entry) = self.ids.find_entry(hash, |e| e.id == id) {
            entry.remove();
        }
        let code = std::mem::replace(&mut self.code_of[id as usize], NO_CODE);
        if code != NO_CODE {
            self.by_code[code as usize] = NO_KEY;
        }
        self.free.push(id);
    }

    fn live(&self) -> usize {
        self.ids.len()
    }

    /// The memory the keys hold, near enough: their texts (each with its count of
    /// references) and the tables that find and order them.
    fn bytes(&self) -> usize {
        use std::mem::size_of;
        let texts = self.text_bytes + self.ids.len() * 2 * size_of::<usize>();
        let map = self.ids.capacity() * (size_of::<Interned>() + 1);
        let per_id = size_of::<Arc<str>>() + size_of::<Spelling>() + size_of::<u32>();
        let codes = (self.by_code.capacity() + self.code_of.capacity()) * size_of::<u32>();
        texts
            + map
            + self.texts.capacity() * per_id
            + self.free.capacity() * size_of::<KeyId>()
            + codes
    }
}

/// Peak sizes, for the summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Peaks {
    pub open_windows: usize,
    pub keys: usize,
}

pub struct WindowOperator {
    cfg: WindowConfig,
    watermarks: Watermarks,
    keys: Keys,
    windows: WindowTable<Entry>,
    /// Windows waiting to fire: (end, start, key).
    pending: Schedule,
    /// Windows kept after they fire, by when they may be dropped: (end + lateness, start,
    /// key). Only with an allowed lateness: without one, a window is dropped as it fires.
    expiry: Schedule,
    /// Scratch for `fire`.
    due: Vec<(Millis, Millis, KeyId)>,
    /// Scratch for `fire`: due windows as (end, the key's `first` word, key, start).
    ordered: Vec<(Millis, u64, KeyId, Millis)>,
    /// Sessions per key as (start, end), sorted (sessions of a key never overlap or touch):
    /// each end is its window's, kept here too so that finding a record's session reads no
    /// window.
    sessions: FxHashMap<KeyId, Vec<(Millis, Millis)>>,
    /// The tumbling window of the last record, `[start, end)` (empty before the first).
    last_tumble: (Millis, Millis),
    peaks: Peaks,
    /// At the end of the input, the windows still to fire (`finish_some`).
    ending: Option<Drained<Entry>>,
}

impl WindowOperator {
    pub fn new(cfg: WindowConfig, watermarks: Watermarks) -> WindowOperator {
        WindowOperator {
            cfg,
            watermarks,
            keys: Keys::default(),
            windows: WindowTable::default(),
            pending: Schedule::default(),
            expiry: Schedule::default(),
            due: Vec::new(),
            ordered: Vec::new(),
            sessions: FxHashMap::default(),
            last_tumble: (0, 0),
            peaks: Peaks::default(),
            ending: None,
        }
    }

    /// A row of `keys` empty key fields and no records, for the names of a row's columns.
    pub fn empty_row(&self, keys: usize) -> Row {
        let key: String = vec![""; keys].join(&KEY_SEPARATOR.to_string());
        Row {
            key: Arc::from(key),
            start: 0,
            end: 0,
            update: false,
            retract: false,
            states: fresh_states(&self.cfg.aggs),
        }
    }

    pub fn aggs(&self) -> &[AggSpec] {
        &self.cfg.aggs
    }

    pub fn peaks(&self) -> Peaks {
        self.peaks
    }

    pub fn max_open_windows(&self) -> usize {
        self.cfg.max_open_windows
    }

    pub fn open_windows(&self) -> usize {
        self.windows.len()
    }

    /// Keys with an open window now.
    pub fn live_keys(&self) -> usize {
        self.keys.live()
    }

    /// The memory the state holds, near enough: the windows' table, the keys, and the
    /// schedules of when each window fires (and, with an allowed lateness, is dropped).
    pub fn state_bytes(&self) -> usize {
        use std::mem::size_of;
        let windows = self.windows.bytes();
        let schedules = if self.cfg.allowed_lateness > 0 { 2 } else { 1 };
        let scheduled = self.windows.len() * schedules * size_of::<(Millis, Millis, KeyId)>();
        windows + scheduled + self.keys.bytes()
    }

    /// Each input partition heard from: id, highest event time, watermark.
    pub fn partition_marks(&self) -> impl Iterator<Item = (usize, Millis, Millis)> + '_ {
        self.watermarks.partitions()
    }

    /// Processes one record: its key text, event time, partition and prepared aggregate
    /// inputs. Result rows are appended to `out`.
    pub fn process<'k>(
        &mut self,
        key: impl Into<Key<'k>>,
        ts: Millis,
        partition: usize,
        inputs: &[AggInput<'_>],
        now: Millis,
        out: &mut Vec<Row>,
    ) -> Result<Outcome, TooManyWindows> {
        // Judged by its own partition's watermark: the same verdict whatever the order in
        // which partitions are read. Windows still fire by the combined one.
        let w = self.watermarks.judging(partition);
        let key_id = self.keys.id_of(key.into());
        let accepted = match self.cfg.kind {
            WindowKind::Session { gap } => self.add_to_session(key_id, ts, gap, w, inputs, out),
            _ => self.add_to_windows(key_id, ts, w, inputs, out),
        };
        if !accepted {
            self.keys.release_if_unused(key_id);
        }
        if self.windows.len() > self.cfg.max_open_windows {
            return Err(TooManyWindows);
        }
        self.peaks.open_windows = self.peaks.open_windows.max(self.windows.len());
        self.peaks.keys = self.peaks.keys.max(self.keys.live());
        self.watermarks.observe(partition, ts, now);
        self.fire(out);
        Ok(if accepted {
            Outcome::Accepted
        } else {
            Outcome::Late
        })
    }

    /// The source reads exactly these partitions from now on (`Watermarks::assign`); fires
    /// what a partition that is no longer read held back.
    pub fn assign(&mut self, partitions: &[usize], now: Millis, out: &mut Vec<Row>) {
        if self.watermarks.assign(partitions, now).is_some() {
            self.fire(out);
        }
    }

    /// The input has `n` partitions (`Watermarks::expect`): those not heard from yet hold the
    /// watermark back.
    pub fn expect(&mut self, n: usize, now: Millis) {
        self.watermarks.expect(n, now);
    }

    /// Behind a shuffle: the next record of input partition `partition` came after event time
    /// `before` there (its writer says), so it is judged as one reader of the input would
    /// judge it; fires what that completes.
    pub fn carried(&mut self, partition: usize, before: Millis, now: Millis, out: &mut Vec<Row>) {
        if self
            .watermarks
            .heard(partition, Some(before), false, now)
            .is_some()
        {
            self.fire(out);
        }
    }

    /// Behind a shuffle: a writer's marker moves the watermark; fires what that completes.
    pub fn marker(&mut self, marker: &Marker, now: Millis, out: &mut Vec<Row>) {
        if self.watermarks.marker(marker, now).is_some() {
            self.fire(out);
        }
    }

    /// Behind a shuffle: whether the record at `offset` of input partition `partition` is
    /// seen for the first time (a restarted writer sends records again).
    pub fn first_pass(&mut self, partition: usize, offset: i64, now: Millis) -> bool {
        self.watermarks.first_pass(partition, offset, now)
    }

    /// Lets idle partitions stop holding the watermark back; fires what that completes.
    pub fn tick(&mut self, now: Millis, out: &mut Vec<Row>) {
        if self.watermarks.tick(now).is_some() {
            self.fire(out);
        }
    }

    /// The end of a bounded input: every open window fires.
    pub fn finish(&mut self, out: &mut Vec<Row>) {
        while !self.finish_some(out, usize::MAX) {}
    }

    /// `finish` a part at a time: fires windows into `out` until it holds `batch` rows, and
    /// says whether every window has fired. Called again until it has, with the rows written
    /// in between, so that the rows of a large state are not all held at once (490k rows of
    /// about 110 bytes each at the end of the 3M-event benchmark: its peak RSS went from 97
    /// to 78 MB, its page faults from 35k to 27k).
    pub fn finish_some(&mut self, out: &mut Vec<Row>, batch: usize) -> bool {
        if self.ending.is_some() {
            return self.fire_some(out, batch);
        }
        self.watermarks.end_of_input();
        if !self.each_window_fires_once() {
            self.fire(out);
            return true;
        }
        let keys = &self.keys;
        let in_row_order = |places: &mut [Place]| {
            places.sort_unstable_by(|a, b| {
                let (first_a, first_b) = ((keys.first(a.0), a.0), (keys.first(b.0), b.0));
                (a.1.cmp(&b.1)).then_with(|| keys.cmp_sorted(first_a, first_b))
            })
        };
        self.ending = Some(self.windows.drain_sorted(&in_row_order));
        self.pending = Schedule::default();
        self.expiry = Schedule::default();
        self.fire_some(out, batch)
    }

    /// Each window fires once, with a row, and goes: windows of one size, final rows, no
    /// allowed lateness. Every open window is then one row due at the end.
    fn each_window_fires_once(&self) -> bool {
        let sessions = matches!(self.cfg.kind, WindowKind::Session { .. });
        !sessions && self.cfg.emit == EmitMode::Final && self.cfg.allowed_lateness == 0
    }

    /// Fires the windows the end's drain holds, as `fire` would (the same rows in the same
    /// order: windows of one size end in the order they start), with the table taken apart in
    /// one pass rather than each window found and removed in turn; stops once `out` holds
    /// `batch` rows, and says whether the drain is done.
    fn fire_some(&mut self, out: &mut Vec<Row>, batch: usize) -> bool {
        let Some(ending) = &mut self.ending else {
            return true;
        };
        // Room for the batch at once: grown by doubling, the rows were copied over and over.
        out.reserve(ending.len().min(batch.saturating_sub(out.len())));
        for (key, start, mut entry) in ending.by_ref() {
            if !entry.fired {
                let states = std::mem::take(&mut entry.states);
                out.push(row(&self.keys.texts[key as usize], start, &entry, states));
            }
            self.keys.release(key);
            if out.len() >= batch {
                return false;
            }
        }
        self.ending = None;
        true
    }

    /// The operator's state, for a checkpoint: the watermarks and every open window, by key
    /// text. What is derived from them (key ids, schedules, session lists) is rebuilt.
    pub fn state(&self) -> WindowState {
        let windows = self
            .windows
            .iter()
            .map(|(key, start, e)| SavedWindow {
                key: self.keys.texts[key as usize].to_string(),
                start,
                end: e.end,
                states: e.states.to_vec(),
                fired: e.fired,
                emitted: e.emitted,
                row_out: e.row_out,
            })
            .collect();
        WindowState {
            watermarks: self.watermarks.clone(),
            windows,
            peak_open_windows: self.peaks.open_windows as u64,
            peak_keys: self.peaks.keys as u64,
        }
    }

    /// An operator for `cfg` holding a checkpoint's state.
    pub fn restore(cfg: WindowConfig, state: WindowState) -> Result<WindowOperator, String> {
        let mut op = WindowOperator::new(cfg, state.watermarks);
        op.peaks = Peaks {
            open_windows: state.peak_open_windows as usize,
            keys: state.peak_keys as usize,
        };
        for w in state.windows {
            // A closed session keeps no states.
            let closed = w.fired && w.states.is_empty();
            if w.states.len() != op.cfg.aggs.len() && !closed {
                return Err("the checkpoint's windows hold other aggregates".into());
            }
            let key = op.keys.id(&w.key);
            op.keys.retain(key);
            // A window waits to fire until it has fired and not changed since.
            if !w.fired {
                op.pending.insert(w.end, w.start, key);
            }
            if let Some(at) = op.cfg.drop_at(w.end) {
                op.expiry.insert(at, w.start, key);
            }
            if let WindowKind::Session { .. } = op.cfg.kind {
                op.sessions.entry(key).or_default().push((w.start, w.end));
            }
            let entry = Entry {
                end: w.end,
                states: w.states.into_iter().collect(),
                fired: w.fired,
                emitted: w.emitted,
                row_out: w.row_out,
            };
            if !op.windows.insert(key, w.start, entry) {
                return Err("the checkpoint holds a window twice".into());
            }
        }
        for starts in op.sessions.values_mut() {
            starts.sort_unstable();
        }
        Ok(op)
    }

    fn late(&self, end: Millis, w: Millis) -> bool {
        w >= end.saturating_add(self.cfg.allowed_lateness)
    }

    fn add_to_windows(
        &mut self,
        key: KeyId,
        ts: Millis,
        w: Millis,
        inputs: &[AggInput<'_>],
        out: &mut Vec<Row>,
    ) -> bool {
        let WindowOperator {
            cfg,
            keys,
            windows,
            pending,
            expiry,
            last_tumble,
            ..
        } = self;
        let mut accepted = false;
        let mut add = |start: Millis, end: Millis| {
            if w >= end.saturating_add(cfg.allowed_lateness) {
                return; // this window is past its lateness; the record may fit another
            }
            accepted = true;
            let (entry, made) = windows.get_or_insert_with(key, start, || Entry {
                end,
                states: fresh_states(&cfg.aggs),
                ..Entry::default()
            });
            if made {
                keys.retain(key);
                pending.insert(end, start, key);
                if let Some(at) = cfg.drop_at(end) {
                    expiry.insert(at, start, key);
                }
            }
            update_states(&mut entry.states, &cfg.aggs, inputs, ts);
            if entry.fired {
                // A fired window within the allowed lateness changed: it fires again.
                entry.fired = false;
                pending.insert(end, start, key);
            }
            if cfg.emit == EmitMode::Updates {
                out.push(row(
                    &keys.texts[key as usize],
                    start,
                    entry,
                    summaries(&entry.states, &cfg.aggs),
                ));
                entry.emitted = true;
                entry.row_out = true;
            }
        };
        match cfg.kind {
            // Records mostly fall in the window of the record before: that saves a division.
            WindowKind::Tumbling { .. } => {
                if !(last_tumble.0..last_tumble.1).contains(&ts) {
                    cfg.kind.for_each_window(ts, |s, e| *last_tumble = (s, e));
                }
                add(last_tumble.0, last_tumble.1);
            }
            _ => cfg.kind.for_each_window(ts, add),
        }
        accepted
    }

    fn add_to_session(
        &mut self,
        key: KeyId,
        ts: Millis,
        gap: Millis,
        w: Millis,
        inputs: &[AggInput<'_>],
        out: &mut Vec<Row>,
    ) -> bool {
        let (start, end) = (ts, ts.saturating_add(gap));
        let late_alone = self.late(end, w);
        let lateness = self.cfg.allowed_lateness;
        // Held meanwhile: dropping the key's last session must not forget the key.
        self.keys.retain(key);
        self.drop_gone_sessions(key, (start, end), w, out);
        self.keys.unhold(key);
        let starts = self.sessions.entry(key).or_default();
        // Sessions of a key are disjoint and sorted, so their ends are sorted too: the ones
        // that overlap or touch [start, end] are a contiguous run.
        let lo = starts.partition_point(|(_, e)| *e < start);
        let hi = starts.partition_point(|(s, _)| *s <= end);
        // The session it would join has closed for this record's partition: the record is
        // late, whatever it would add. (Its ends are sorted as its starts: the first ends
        // first.) A closed session stays in state as long as a record can touch it.
        let joins_closed = starts
            .get(lo)
            .is_some_and(|(_, e)| lo < hi && w >= e.saturating_add(lateness));
        // A record late on its own may join an open session, but not move its start earlier:
        // the gap before that session may have held a session of the key already dropped
        // (known for one gap past its lateness only), which the record would have joined.
        let extends_left = lo < hi && start < starts[lo].0;
        if joins_closed || (late_alone && (lo >= hi || extends_left)) {
            if starts.is_empty() {
                self.sessions.remove(&key);
            }
            return false;
        }
        if hi == lo + 1 && start >= starts[lo].0 {
            let joined = &mut starts[lo];
            joined.1 = joined.1.max(end);
            let (start, end) = *joined;
            self.join_session(key, start, end, (ts, inputs), out);
            return true;
        }
        let absorbed: Vec<Millis> = starts.drain(lo..hi.max(lo)).map(|(s, _)| s).collect();
        // Hold the key for the merged session before releasing the absorbed ones, so its
        // count never touches zero in between.
        self.keys.retain(key);
        let mut merged = self.absorb(key, (start, end), absorbed);
        update_states(&mut merged.states, &self.cfg.aggs, inputs, ts);
        let row_out = self.withdraw(key, &merged, out);
        self.place_session(key, merged, row_out, out);
        true
    }

    /// A record that joins the one session of `key` starting at `start` without moving its
    /// start, which now ends at `end`: `add_to_session`'s absorb and place for a single
    /// session (the common case, as most records of a key follow its last one), done in
    /// place. The states are merged into fresh ones as `absorb` merges them, so that the
    /// result cannot depend on which way a record went; the session is rescheduled only when
    /// its end moves or it had fired.
    fn join_session(
        &mut self,
        key: KeyId,
        start: Millis,
        end: Millis,
        (ts, inputs): (Millis, &[AggInput<'_>]),
        out: &mut Vec<Row>,
    ) {
        let aggs = &self.cfg.aggs;
        let entry = self.windows.get_mut(key, start).expect("session in state");
        let mut states = fresh_states(aggs);
        merge_states(&mut states, aggs, std::mem::take(&mut entry.states));
        update_states(&mut states, aggs, inputs, ts);
        entry.states = states;
        let (old_end, was_fired) = (entry.end, entry.fired);
        debug_assert!(end >= old_end, "a session's end never moves back");
        entry.end = end;
        entry.fired = false;
        if end != old_end || was_fired {
            if !was_fired {
                self.pending.remove(old_end, start, key);
            }
            self.pending.insert(end, start, key);
        }
        if end != old_end {
            if let Some(at) = self.cfg.drop_at(old_end) {
                self.expiry.remove(at, start, key);
            }
            if let Some(at) = self.cfg.drop_at(end) {
                self.expiry.insert(at, start, key);
            }
        }
        if self.cfg.emit == EmitMode::Updates {
            let text = &self.keys.texts[key as usize];
            out.push(row(text, start, entry, summaries(&entry.states, aggs)));
            entry.emitted = true;
            entry.row_out = true;
        }
    }

    /// Drops the sessions of `key` touching `span` that a read of the record's partition
    /// alone would have dropped by now (its watermark `w` at their `drop_at`), with their rows
    /// if they have not fired. Only another partition holding the combined watermark back
    /// kept them, and the record must find what it would find in a read of its partition.
    fn drop_gone_sessions(
        &mut self,
        key: KeyId,
        span: (Millis, Millis),
        w: Millis,
        out: &mut Vec<Row>,
    ) {
        let Some(starts) = self.sessions.get(&key) else {
            return;
        };
        let cfg = &self.cfg;
        let lo = starts.partition_point(|(_, e)| *e < span.0);
        // Ends are sorted as starts are: the gone ones come first.
        let gone: SmallVec<[Millis; 2]> = starts[lo..]
            .iter()
            .take_while(|(s, e)| *s <= span.1 && cfg.drop_at(*e).is_some_and(|at| w >= at))
            .map(|(s, _)| *s)
            .collect();
        for start in gone {
            let mut entry = self.windows.remove(key, start).expect("session in state");
            if let Some(at) = self.cfg.drop_at(entry.end) {
                self.expiry.remove(at, start, key);
            }
            if !entry.fired {
                self.pending.remove(entry.end, start, key);
                if self.cfg.emit == EmitMode::Final {
                    let states = std::mem::take(&mut entry.states);
                    out.push(row(&self.keys.texts[key as usize], start, &entry, states));
                }
            }
            self.forget_window(key, start);
        }
    }

    /// Takes the `absorbed` sessions of `key` out, merged with a new one spanning `span`.
    fn absorb(&mut self, key: KeyId, span: (Millis, Millis), absorbed: Vec<Millis>) -> Merged {
        let aggs = &self.cfg.aggs;
        let mut merged = Merged {
            start: span.0,
            end: span.1,
            states: fresh_states(aggs),
            emitted: false,
            withdrawn: Vec::new(),
        };
        for s in absorbed {
            let old = self.windows.remove(key, s).expect("session in state");
            self.pending.remove(old.end, s, key);
            if let Some(at) = self.cfg.drop_at(old.end) {
                self.expiry.remove(at, s, key);
            }
            self.keys.release(key);
            merged.start = merged.start.min(s);
            merged.end = merged.end.max(old.end);
            merged.emitted |= old.emitted;
            if old.row_out {
                merged.withdrawn.push((s, old.end));
            }
            merge_states(&mut merged.states, aggs, old.states);
        }
        merged
    }

    /// An emitted session now inside one that starts elsewhere: its row is withdrawn, so a
    /// sink upserting on (key, window_start) does not keep it beside the merged one. One
    /// that starts where the merged session does is replaced by its next row: whether there
    /// is one is returned.
    fn withdraw(&self, key: KeyId, merged: &Merged, out: &mut Vec<Row>) -> bool {
        for &(old_start, old_end) in &merged.withdrawn {
            if old_start != merged.start {
                out.push(Row {
                    key: self.keys.texts[key as usize].clone(),
                    start: old_start,
                    end: old_end,
                    update: false,
                    retract: true,
                    states: States::new(),
                });
            }
        }
        merged.withdrawn.iter().any(|(s, _)| *s == merged.start)
    }

    /// Keeps the `merged` session of `key`, to fire when the watermark passes its end.
    fn place_session(&mut self, key: KeyId, merged: Merged, row_out: bool, out: &mut Vec<Row>) {
        let (start, end) = (merged.start, merged.end);
        let starts = self.sessions.get_mut(&key).expect("created above");
        let at = starts.partition_point(|(s, _)| *s < start);
        starts.insert(at, (start, end));
        self.pending.insert(end, start, key);
        if let Some(at) = self.cfg.drop_at(end) {
            self.expiry.insert(at, start, key);
        }
        let (entry, _) = self.windows.get_or_insert_with(key, start, || Entry {
            end,
            states: merged.states,
            fired: false,
            emitted: merged.emitted,
            row_out,
        });
        if self.cfg.emit == EmitMode::Updates {
            out.push(row(
                &self.keys.texts[key as usize],
                start,
                entry,
                summaries(&entry.states, &self.cfg.aggs),
            ));
            entry.emitted = true;
            entry.row_out = true;
        }
    }

    /// Emits every pending window the watermark completed, then drops windows past their
    /// allowed lateness.
    #[inline]
    fn fire(&mut self, out: &mut Vec<Row>) {
        let w = self.watermarks.current();
        // Most records complete no window: answered here, without a call.
        if self.pending.due_by(w) || self.expiry.due_by(w) {
            self.fire_due(w, out);
        }
    }

    fn fire_due(&mut self, w: Millis, out: &mut Vec<Row>) {
        let mut due = std::mem::take(&mut self.due);
        self.pending.take_due(w, &mut due);
        let ordered = self.in_row_order(&mut due);
        let final_rows = self.cfg.emit == EmitMode::Final;
        let sessions = matches!(self.cfg.kind, WindowKind::Session { .. });
        for &(end, _, key, start) in &ordered {
            let text = &self.keys.texts[key as usize];
            let closing = w >= end.saturating_add(self.cfg.allowed_lateness);
            if closing && !sessions {
                // Past its lateness too: the window is dropped now, and its states move into
                // the row instead of being copied.
                let mut entry = (self.windows.remove(key, start)).expect("pending window in state");
                debug_assert_eq!(entry.end, end);
                if final_rows {
                    let states = std::mem::take(&mut entry.states);
                    out.push(row(text, start, &entry, states));
                }
                self.forget_window(key, start);
            } else {
                let entry = (self.windows.get_mut(key, start)).expect("pending window in state");
                debug_assert_eq!(entry.end, end);
                entry.fired = true;
                // A session past its lateness stays closed, without its states, until
                // `drop_at`.
                if final_rows {
                    let states = match closing {
                        true => std::mem::take(&mut entry.states),
                        false => summaries(&entry.states, &self.cfg.aggs),
                    };
                    out.push(row(text, start, entry, states));
                    entry.emitted = true;
                    entry.row_out = true;
                } else if closing {
                    entry.states = States::new();
                }
            }
        }
        self.ordered = ordered;
        self.expiry.take_due(w, &mut due);
        for &(_, start, key) in &due {
            // A window that fired past its lateness in this step is already gone (a session's
            // closed entry stays until now).
            if self.windows.remove(key, start).is_some() {
                self.forget_window(key, start);
            }
        }
        due.clear();
        self.due = due;
    }

    /// The windows of `due` (grouped by end, as the schedule gives them) in the order their rows
    /// go out: (end, key, start). Each end's group is sorted on its own, by the keys' first
    /// eight bytes carried beside them: at the end of a large run, sorting every open window
    /// by texts behind their pointers took a tenth of the command's time. The entries are
    /// distinct, so an unstable sort is deterministic.
    fn in_row_order(
        &mut self,
        due: &mut Vec<(Millis, Millis, KeyId)>,
    ) -> Vec<(Millis, u64, KeyId, Millis)> {
        let mut ordered = std::mem::take(&mut self.ordered);
        ordered.clear();
        let keys = &self.keys;
        let with_first = |(end, start, key)| (end, keys.first(key), key, start);
        ordered.extend(due.drain(..).map(with_first));
        for group in ordered.chunk_by_mut(|a, b| a.0 == b.0) {
            group.sort_unstable_by(|a, b| {
                (keys.cmp_sorted((a.1, a.2), (b.1, b.2))).then(a.3.cmp(&b.3))
            });
        }
        ordered
    }

    /// What remains of a window just dropped from state: its place among its key's sessions,
    /// and its hold on the key.
    fn forget_window(&mut self, key: KeyId, start: Millis) {
        if let WindowKind::Session { .. } = self.cfg.kind {
            let starts = self.sessions.get_mut(&key).expect("session key");
            starts.retain(|(s, _)| *s != start);
            if starts.is_empty() {
                self.sessions.remove(&key);
            }
        }
        self.keys.release(key);
    }
}

/// What a checkpoint keeps of a window operator.
#[derive(Debug, Serialize, Deserialize)]
pub struct WindowState {
    watermarks: Watermarks,
    windows: Vec<SavedWindow>,
    peak_open_windows: u64,
    peak_keys: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct SavedWindow {
    key: String,
    start: Millis,
    end: Millis,
    states: Vec<AggState>,
    fired: bool,
    emitted: bool,
    row_out: bool,
}

/// Windows grouped by a time (when they fire, or when they may be dropped): one B-tree entry
/// per distinct time, so a new (key, window) pair costs a push, not a tree insert. A time's
/// first two windows are kept in the tree's node itself: sessions, which end at times of
/// their own, then cost no allocation and no pointer to follow.
#[derive(Debug, Default)]
struct Schedule {
    by_time: BTreeMap<Millis, SmallVec<[(Millis, KeyId); 2]>>,
    /// The first key of `by_time`: most records find nothing due, and this answers that
    /// without walking the tree.
    earliest: Option<Millis>,
}

impl Schedule {
    fn insert(&mut self, time: Millis, start: Millis, key: KeyId) {
        self.by_time.entry(time).or_default().push((start, key));
        self.earliest = Some(self.earliest.map_or(time, |e| e.min(time)));
    }

    fn remove(&mut self, time: Millis, start: Millis, key: KeyId) {
        // One search of the tree, and another only when the earliest time empties.
        let btree_map::Entry::Occupied(mut at_time) = self.by_time.entry(time) else {
            return;
        };
        let windows = at_time.get_mut();
        if let Some(i) = windows.iter().position(|e| *e == (start, key)) {
            windows.swap_remove(i);
            if windows.is_empty() {
                at_time.remove();
                if self.earliest == Some(time) {
                    self.earliest = self.by_time.keys().next().copied();
                }
            }
        }
    }

    /// Whether some entry is due at or before `w`.
    #[inline]
    fn due_by(&self, w: Millis) -> bool {
        self.earliest.is_some_and(|e| e <= w)
    }

    /// Moves every entry due at or before `w` to `out`, as (time, start, key).
    fn take_due(&mut self, w: Millis, out: &mut Vec<(Millis, Millis, KeyId)>) {
        if !self.due_by(w) {
            return;
        }
        while let Some(entry) = self.by_time.first_entry() {
            if *entry.key() > w {
                break;
            }
            let (time, at_time) = entry.remove_entry();
            out.extend(at_time.into_iter().map(|(start, key)| (time, start, key)));
        }
        self.earliest = self.by_time.keys().next().copied();
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.by_time.is_empty()
    }
}

/// A new window's states, one per aggregate, holding nothing yet.
fn fresh_states(aggs: &[AggSpec]) -> States {
    aggs.iter().map(|a| AggState::new(&a.kind)).collect()
}

/// Adds a record's `inputs` at time `ts` to a window's states. Inlined: it is on every
/// record's path.
#[inline(always)]
fn update_states(states: &mut States, aggs: &[AggSpec], inputs: &[AggInput<'_>], ts: Millis) {
    for ((state, spec), input) in states.iter_mut().zip(aggs).zip(inputs) {
        state.update(&spec.kind, input, ts);
    }
}

/// Merges another window's states (`theirs`) into `states`.
fn merge_states(states: &mut States, aggs: &[AggSpec], theirs: States) {
    for ((mine, spec), theirs) in states.iter_mut().zip(aggs).zip(theirs) {
        mine.merge(&spec.kind, theirs);
    }
}

/// What a row needs of a window that stays open: its states' answers, not the sets or value
/// lists behind them.
fn summaries(states: &States, aggs: &[AggSpec]) -> States {
    states
        .iter()
        .zip(aggs)
        .map(|(state, spec)| state.summary(&spec.kind))
        .collect()
}

/// The row for a window, with its states summarised (the window stays) or moved out of it.
fn row(key: &Arc<str>, start: Millis, entry: &Entry, states: States) -> Row {
    Row {
        key: key.clone(),
        start,
        end: entry.end,
        update: entry.emitted,
        retract: false,
        states,
    }
}

/// A consumer-group member's windows of one partition move with it: the fresh operator gives
/// the configuration, the saved state the rest.
impl PartitionTask for WindowOperator {
    type Saved = WindowState;
    fn saved(&self) -> WindowState {
        self.state()
    }
    fn restored(fresh: WindowOperator, saved: WindowState) -> Result<WindowOperator, String> {
        WindowOperator::restore(fresh.cfg, saved)
    }

    /// A child shard's windows: those of its parents' keys that are its own, with the
    /// watermark of the parent furthest behind, so that no record of a key is late in the
    /// child that would not have been in its parent.
    fn inherited(
        fresh: WindowOperator,
        parents: Vec<Parent<WindowState>>,
        owns: &dyn Fn(&str) -> bool,
    ) -> Result<WindowOperator, String> {
        let behind = (parents.iter().map(|p| &p.saved.watermarks))
            .min_by_key(|w| w.current())
            .cloned();
        let mut windows = Vec::new();
        let (mut open, mut keys) = (0, 0);
        for Parent { saved, .. } in parents {
            let own = |w: &SavedWindow| owns(&partition_key_of(&w.key));
            windows.extend(saved.windows.into_iter().filter(own));
            open = saved.peak_open_windows.max(open);
            keys = saved.peak_keys.max(keys);
        }
        let state = WindowState {
            watermarks: behind.unwrap_or_else(|| fresh.watermarks.clone()),
            windows,
            peak_open_windows: open,
            peak_keys: keys,
        };
        WindowOperator::restore(fresh.cfg, state)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::core::aggregate::{prepare, AggKind, JsonColumns};
    use crate::core::key_code::{word, KeyCoder};
    use crate::core::saved;
    use proptest::prelude::*;

    #[test]
    fn a_window_says_the_flags_that_give_it() {
        let kind = WindowKind::Tumbling {
            size: 86_400_000,
            offset: -8 * 3_600_000,
        };
        assert_eq!(kind.flags(), "--tumbling 1d --offset -8h");
        let kind = WindowKind::Hopping {
            size: 600_000,
            slide: 60_000,
            offset: 0,
        };
        assert_eq!(kind.flags(), "--hop 10m --slide 1m");
        assert_eq!(WindowKind::Session { gap: 30_000 }.flags(), "--session 30s");
    }

    #[test]
    fn a_word_is_its_bytes_big_endian_and_zero_padded() {
        let text = b"abcdefgh";
        for n in 0..=8 {
            let mut padded = [0u8; 8];
            padded[..n].copy_from_slice(&text[..n]);
            assert_eq!(word(&text[..n]), u64::from_be_bytes(padded), "{n} bytes");
        }
    }

    /// A key longer than its spelling (17 bytes: the two words leave byte 8 out) is told
    /// apart by its whole text; up to 16 bytes the spelling alone decides.
    #[test]
    fn keys_that_differ_where_the_spelling_does_not_look_are_two() {
        let mut keys = Keys::default();
        let (a, b) = ("aaaaaaaaXaaaaaaaa", "aaaaaaaaYaaaaaaaa");
        assert_eq!(Spelling::of(a), Spelling::of(b));
        assert_ne!(keys.id(a), keys.id(b));
        assert_eq!(keys.id(a), keys.id(a));
        let (c, d) = ("aaaaaaaXaaaaaaaa", "aaaaaaaYaaaaaaaa");
        assert_ne!(Spelling::of(c), Spelling::of(d));
        assert_ne!(keys.id(c), keys.id(d));
        assert_eq!(keys.live(), 4);
    }

    const MIN: Millis = 60_000;

    proptest! {
        /// Interning gives one id per distinct text and forgets a text when released, for
        /// texts that share their first 8 or 16 bytes, differ only after them or only in
        /// trailing zero bytes (which a zero-padded spelling must still tell apart), or have a
        /// multi-byte character across byte 8. Keys found by the codes of a reader
        /// (`core::key_code`), of a later reader, or by their texts alone get the same ids.
        #[test]
        fn keys_intern_texts_exactly(ops in prop::collection::vec(("(ab|é|x|\\x00){0,10}", any::<bool>(), any::<bool>(), 0u8..8), 1..80)) {
            let mut keys = Keys::default();
            let mut coder = KeyCoder::default();
            let mut model: std::collections::HashMap<String, (KeyId, u32)> = Default::default();
            for (text, release, long, how) in ops {
                let head = if long { "0123456789abcdef" } else { "0123456" };
                let text = format!("{head}{text}");
                if how == 0 {
                    coder = KeyCoder::default();
                }
                let code = (how > 1).then(|| coder.code(text.as_bytes())).flatten();
                let id = keys.id_of(Key { text: &text, code });
                match model.get(&text) {
                    Some(&(known, _)) => prop_assert_eq!(id, known, "{}", text),
                    None => prop_assert!(model.values().all(|&(other, _)| other != id), "{}", text),
                }
                keys.retain(id);
                model.entry(text.clone()).or_insert((id, 0)).1 += 1;
                if release {
                    keys.release(id);
                    let held = &mut model.get_mut(&text).expect("interned").1;
                    *held -= 1;
                    if *held == 0 {
                        model.remove(&text);
                    }
                }
                prop_assert_eq!(keys.live(), model.len());
                for (text, &(id, _)) in &model {
                    prop_assert_eq!(&*keys.texts[id as usize], text.as_str());
                }
            }
        }
    }

    fn op(kind: WindowKind, delay: Millis, lateness: Millis, emit: EmitMode) -> WindowOperator {
        let cfg = WindowConfig {
            kind,
            allowed_lateness: lateness,
            emit,
            aggs: vec![AggSpec {
                kind: AggKind::Count,
                field: None,
                name: "count".into(),
            }],
            max_open_windows: 1_000_000,
        };
        WindowOperator::new(cfg, Watermarks::new(delay, None))
    }

    fn count_of(r: &Row) -> u64 {
        match r.states[0] {
            AggState::Count(n) => n,
            ref other => panic!("{other:?}"),
        }
    }

    /// (key, start, end, count, update)
    fn summary(rows: &[Row]) -> Vec<(String, Millis, Millis, u64, bool)> {
        rows.iter()
            .map(|r| (r.key.to_string(), r.start, r.end, count_of(r), r.update))
            .collect()
    }

    fn feed(op: &mut WindowOperator, key: &str, ts: Millis) -> (Outcome, Vec<Row>) {
        let mut out = Vec::new();
        let outcome = op
            .process(key, ts, 0, &[AggInput::Missing], 0, &mut out)
            .unwrap();
        (outcome, out)
    }

    /// A window whose distinct count became an estimate and whose percentiles went to a
    /// histogram gives the same row after a checkpoint's round trip as without it.
    #[test]
    fn estimated_states_survive_a_checkpoint() {
        let aggs = vec![
            AggSpec {
                kind: AggKind::Distinct,
                field: Some(0),
                name: "d".into(),
            },
            AggSpec {
                kind: AggKind::Percentile(vec![50.0, 99.9]),
                field: Some(0),
                name: "p".into(),
            },
        ];
        let cfg = WindowConfig {
            kind: WindowKind::Tumbling {
                size: 1_000_000,
                offset: 0,
            },
            allowed_lateness: 0,
            emit: EmitMode::Final,
            aggs: aggs.clone(),
            max_open_windows: 10,
        };
        let feed_values = |op: &mut WindowOperator, values: std::ops::Range<u64>| {
            for v in values {
                let text = (v * 7919 % 1_000_003).to_string();
                let input = [
                    prepare(&AggKind::Distinct, Some(&text)).unwrap(),
                    prepare(&AggKind::Percentile(vec![50.0]), Some(&text)).unwrap(),
                ];
                op.process("k", v as Millis, 0, &input, 0, &mut Vec::new())
                    .unwrap();
            }
        };
        let row_text = |mut op: WindowOperator| {
            let mut rows = Vec::new();
            op.finish(&mut rows);
            let mut bytes = Vec::new();
            let mut columns = JsonColumns {
                out: &mut bytes,
                plain_names: true,
            };
            for (state, spec) in rows[0].states.iter().zip(&aggs) {
                state.output(spec, &mut columns);
            }
            String::from_utf8(bytes).unwrap()
        };
        let mut whole = WindowOperator::new(cfg.clone(), Watermarks::new(0, None));
        feed_values(&mut whole, 0..30_000);
        let mut first = WindowOperator::new(cfg.clone(), Watermarks::new(0, None));
        feed_values(&mut first, 0..20_000);
        let bytes = saved::encode(&first.state());
        let mut second = WindowOperator::restore(cfg, saved::decode(&bytes).unwrap()).unwrap();
        feed_values(&mut second, 20_000..30_000);
        let (want, got) = (row_text(whole), row_text(second));
        assert!(want.contains("\"d_estimated\":true"), "{want}");
        assert_eq!(got, want);
    }

    /// A split: each child takes its own keys' open windows from the parent, and fed the
    /// rest of its keys' records writes what the parent would have. A merge: the child takes
    /// both parents' windows, with the watermark of the parent that stands behind.
    #[test]
    fn children_inherit_their_keys_windows_and_the_watermark_behind() {
        let tumbling = WindowKind::Tumbling {
            size: MIN,
            offset: 0,
        };
        let fresh = || op(tumbling, 0, 0, EmitMode::Final);
        let (a, b) = ("\"a\"", "\"b\"");
        let mut parent = fresh();
        for (key, t) in [(a, 1_000), (b, 2_000), (a, 30_000), (b, 70_000)] {
            feed(&mut parent, key, t);
        }
        let mut whole = WindowOperator::restore(parent.cfg.clone(), parent.state()).unwrap();
        let saved = || Parent {
            saved: saved::decode(&saved::encode(&parent.state())).unwrap(),
            whole: true,
        };
        let only = |key: &'static str| move |pk: &str| pk == key;
        let mut child_a = WindowOperator::inherited(fresh(), vec![saved()], &only("a")).unwrap();
        let mut child_b = WindowOperator::inherited(fresh(), vec![saved()], &only("b")).unwrap();
        assert_eq!(child_a.watermarks.current(), parent.watermarks.current());
        let (mut want, mut got) = (Vec::new(), Vec::new());
        for (key, t) in [(a, 40_000), (b, 75_000), (a, 130_000)] {
            want.extend(feed(&mut whole, key, t).1);
            let child = if key == a { &mut child_a } else { &mut child_b };
            got.extend(feed(child, key, t).1);
        }
        whole.finish(&mut want);
        child_a.finish(&mut got);
        child_b.finish(&mut got);
        let sorted = |rows: &[Row]| {
            let mut s = summary(rows);
            s.sort();
            s
        };
        assert_eq!(sorted(&got), sorted(&want));
        // By hand: a@40s is late behind b@70s; b's second window gets b@70s and b@75s.
        let a_row = ("\"a\"".to_string(), 120_000, 180_000, 1, false);
        let b_row = ("\"b\"".to_string(), 60_000, 120_000, 2, false);
        assert_eq!(sorted(&want), vec![a_row, b_row]);
        // A merge: one parent far behind the other.
        let mut behind = fresh();
        feed(&mut behind, a, 5_000);
        let parents = vec![
            saved(),
            Parent {
                saved: behind.state(),
                whole: false,
            },
        ];
        let merged = WindowOperator::inherited(fresh(), parents, &|_| true).unwrap();
        assert_eq!(merged.watermarks.current(), behind.watermarks.current());
        assert_eq!(
            merged.state().windows.len(),
            parent.state().windows.len() + 1
        );
    }

    #[test]
    fn tumbling_assignment_with_offset_and_negatives() {
        let mut got = vec![];
        WindowKind::Tumbling {
            size: 10,
            offset: 0,
        }
        .for_each_window(-1, |s, e| got.push((s, e)));
        WindowKind::Tumbling {
            size: 10,
            offset: 3,
        }
        .for_each_window(12, |s, e| got.push((s, e)));
        WindowKind::Tumbling {
            size: 10,
            offset: 3,
        }
        .for_each_window(13, |s, e| got.push((s, e)));
        assert_eq!(got, vec![(-10, 0), (3, 13), (13, 23)]);
    }

    #[test]
    fn hopping_assignment() {
        let mut got = vec![];
        WindowKind::Hopping {
            size: 10,
            slide: 5,
            offset: 0,
        }
        .for_each_window(12, |s, e| got.push((s, e)));
        assert_eq!(got, vec![(10, 20), (5, 15)]);
        got.clear();
        WindowKind::Hopping {
            size: 10,
            slide: 5,
            offset: 0,
        }
        .for_each_window(10, |s, e| got.push((s, e)));
        assert_eq!(
            got,
            vec![(10, 20), (5, 15)],
            "half-open: 10 is not in [0, 10)"
        );
    }

    /// Spark Structured Streaming's worked example: 10-minute windows sliding every 5
    /// minutes, 10-minute watermark delay. Window 12:00-12:10 is final once the max event
    /// time reaches 12:20; a 12:04 event arriving after that is late.
    #[test]
    fn spark_structured_streaming_example() {
        let t = |h: i64, m: i64| (h * 60 + m) * MIN;
        let mut op = op(
            WindowKind::Hopping {
                size: 10 * MIN,
                slide: 5 * MIN,
                offset: 0,
            },
            10 * MIN,
            0,
            EmitMode::Final,
        );
        let (_, rows) = feed(&mut op, "k", t(12, 7));
        assert!(rows.is_empty());
        let (_, rows) = feed(&mut op, "k", t(12, 19));
        // W = 12:09: 12:07's windows [12:00, 12:10) and [12:05, 12:15) are still open.
        assert!(rows.is_empty());
        let (outcome, rows) = feed(&mut op, "k", t(12, 4));
        // [11:55, 12:05) is past W for it, but [12:00, 12:10) is not: on time.
        assert_eq!(outcome, Outcome::Accepted);
        assert!(rows.is_empty());
        let (_, rows) = feed(&mut op, "k", t(12, 20));
        // W = 12:10: [12:00, 12:10) holds 12:07 and 12:04.
        assert_eq!(
            summary(&rows),
            vec![("k".into(), t(12, 0), t(12, 10), 2, false)]
        );
        let (outcome, rows) = feed(&mut op, "k", t(12, 4));
        assert_eq!(outcome, Outcome::Late);
        assert!(rows.is_empty());
    }

    /// Events 10, 12, 20 with gap 5 give two sessions; a later event at 16 merges them.
    #[test]
    fn session_merge_with_allowed_lateness() {
        let mut op = op(WindowKind::Session { gap: 5 }, 0, 100, EmitMode::Final);
        feed(&mut op, "k", 10);
        feed(&mut op, "k", 12);
        let (_, rows) = feed(&mut op, "k", 20);
        assert_eq!(
            summary(&rows),
            vec![("k".into(), 10, 17, 2, false)],
            "W = 20 closes [10, 17)"
        );
        let (outcome, rows) = feed(&mut op, "k", 16);
        assert_eq!(outcome, Outcome::Accepted);
        assert!(
            rows.is_empty(),
            "the merged [10, 25) is not complete at W = 20"
        );
        let mut rows = vec![];
        op.finish(&mut rows);
        assert_eq!(
            summary(&rows),
            vec![("k".into(), 10, 25, 4, true)],
            "an update of the emitted session"
        );
    }

    #[test]
    fn a_session_extended_to_the_left_withdraws_its_row() {
        let mut op = op(WindowKind::Session { gap: 5 }, 0, 100, EmitMode::Final);
        feed(&mut op, "k", 10);
        feed(&mut op, "k", 12);
        let (_, rows) = feed(&mut op, "k", 20);
        assert_eq!(summary(&rows), vec![("k".into(), 10, 17, 2, false)]);
        // [7, 12) overlaps the emitted [10, 17): the session is now [7, 17), complete at
        // W = 20, and the row for [10, 17) is withdrawn first.
        let (outcome, rows) = feed(&mut op, "k", 7);
        assert_eq!(outcome, Outcome::Accepted);
        assert_eq!(rows.len(), 2);
        assert!(rows[0].retract && rows[0].states.is_empty());
        assert_eq!((rows[0].start, rows[0].end), (10, 17));
        assert!(!rows[1].retract);
        assert_eq!(summary(&rows[1..]), vec![("k".into(), 7, 17, 3, true)]);
    }

    /// A closed session stays known for one gap: a record that would join it is late, not
    /// the start of a second session of the key overlapping it (as Flink's would be). That
    /// keeps a key's sessions disjoint, and the verdict the same whatever the read order.
    #[test]
    fn a_record_that_would_join_a_closed_session_is_late() {
        let mut op = op(WindowKind::Session { gap: 5 }, 0, 0, EmitMode::Final);
        feed(&mut op, "k", 10);
        feed(&mut op, "k", 12);
        let (_, fired) = feed(&mut op, "k", 20);
        assert_eq!(summary(&fired), vec![("k".into(), 10, 17, 2, false)]);
        let (outcome, _) = feed(&mut op, "k", 11);
        assert_eq!(outcome, Outcome::Late, "[11, 16) is past W = 20");
        let (outcome, _) = feed(&mut op, "k", 16);
        assert_eq!(
            outcome,
            Outcome::Late,
            "[16, 21) would join [10, 17), closed"
        );
        // At W = 22, one gap past its end, [10, 17) is forgotten: nothing can join it.
        let (outcome, _) = feed(&mut op, "k", 22);
        assert_eq!(outcome, Outcome::Accepted);
        assert_eq!(op.sessions[&op.keys.id("k")], vec![(20, 27)]);
        let mut rows = vec![];
        op.finish(&mut rows);
        assert_eq!(summary(&rows), vec![("k".into(), 20, 27, 2, false)]);
    }

    #[test]
    fn allowed_lateness_re_emits_as_update_then_drops() {
        let mut op = op(
            WindowKind::Tumbling {
                size: 10,
                offset: 0,
            },
            0,
            5,
            EmitMode::Final,
        );
        feed(&mut op, "k", 1);
        let (_, rows) = feed(&mut op, "k", 10);
        assert_eq!(summary(&rows), vec![("k".into(), 0, 10, 1, false)]);
        let (outcome, rows) = feed(&mut op, "k", 2);
        assert_eq!(outcome, Outcome::Accepted);
        assert_eq!(summary(&rows), vec![("k".into(), 0, 10, 2, true)]);
        feed(&mut op, "k", 15); // W = 15 = end + lateness: [0, 10) is dropped
        let (outcome, _) = feed(&mut op, "k", 3);
        assert_eq!(outcome, Outcome::Late);
    }

    #[test]
    fn emit_updates_gives_a_row_per_change() {
        let mut op = op(
            WindowKind::Tumbling {
                size: 10,
                offset: 0,
            },
            0,
            0,
            EmitMode::Updates,
        );
        let (_, a) = feed(&mut op, "k", 1);
        let (_, b) = feed(&mut op, "k", 2);
        let (_, c) = feed(&mut op, "k", 12);
        assert_eq!(summary(&a), vec![("k".into(), 0, 10, 1, false)]);
        assert_eq!(summary(&b), vec![("k".into(), 0, 10, 2, true)]);
        assert_eq!(
            summary(&c),
            vec![("k".into(), 10, 20, 1, false)],
            "firing adds no row"
        );
    }

    #[test]
    fn rows_of_a_step_are_ordered_by_end_then_key() {
        let mut op = op(
            WindowKind::Tumbling {
                size: 10,
                offset: 0,
            },
            0,
            0,
            EmitMode::Final,
        );
        for (k, t) in [("b", 15), ("a", 16), ("c", 3), ("a", 4)] {
            feed(&mut op, k, t);
        }
        let mut rows = vec![];
        op.finish(&mut rows);
        let order: Vec<(Millis, String)> =
            rows.iter().map(|r| (r.end, r.key.to_string())).collect();
        assert_eq!(
            order,
            vec![(20, "a".into()), (20, "b".into())],
            "[0, 10) fired when 15 arrived"
        );
    }

    #[test]
    fn state_is_bounded_and_keys_are_forgotten() {
        let mut op = op(
            WindowKind::Tumbling {
                size: 10,
                offset: 0,
            },
            0,
            0,
            EmitMode::Final,
        );
        for i in 0..10_000 {
            feed(&mut op, &format!("k{}", i % 100), i);
            assert!(op.open_windows() <= 100);
        }
        assert!(op.keys.live() <= 100);
        let mut rows = vec![];
        op.finish(&mut rows);
        assert_eq!(op.open_windows(), 0);
        assert_eq!(op.keys.live(), 0);
        assert!(op.pending.is_empty() && op.expiry.is_empty() && op.sessions.is_empty());

        let mut small = WindowOperator::new(
            WindowConfig {
                max_open_windows: 2,
                ..op.cfg.clone()
            },
            Watermarks::new(1000, None),
        );
        let mut out = vec![];
        small
            .process("a", 0, 0, &[AggInput::Missing], 0, &mut out)
            .unwrap();
        small
            .process("b", 0, 0, &[AggInput::Missing], 0, &mut out)
            .unwrap();
        assert_eq!(
            small.process("c", 0, 0, &[AggInput::Missing], 0, &mut out),
            Err(TooManyWindows)
        );
    }

    fn kinds() -> impl Strategy<Value = WindowKind> {
        prop_oneof![
            // Offsets negative too (`--offset -8h`), and beyond the size.
            (1i64..50, -60i64..60).prop_map(|(size, offset)| WindowKind::Tumbling { size, offset }),
            // Any size from the slide up: a multiple of it or not.
            (1i64..10, 0i64..40, -20i64..20).prop_map(|(slide, more, offset)| {
                WindowKind::Hopping {
                    size: slide + more,
                    slide,
                    offset,
                }
            }),
        ]
    }

    proptest! {
        /// The schedule hands out exactly the entries due, whatever the order of inserts,
        /// removals and watermarks.
        #[test]
        fn schedule_takes_exactly_what_is_due(ops in prop::collection::vec((0u8..3, 0i64..50, 0i64..4, 0u32..3), 1..80)) {
            let mut schedule = Schedule::default();
            let mut model: Vec<(Millis, Millis, KeyId)> = Vec::new();
            for (op, time, start, key) in ops {
                match op {
                    0 => {
                        if !model.contains(&(time, start, key)) {
                            schedule.insert(time, start, key);
                            model.push((time, start, key));
                        }
                    }
                    1 => {
                        schedule.remove(time, start, key);
                        model.retain(|e| *e != (time, start, key));
                    }
                    _ => {
                        let mut got = Vec::new();
                        schedule.take_due(time, &mut got);
                        let mut want: Vec<_> = model.iter().filter(|e| e.0 <= time).copied().collect();
                        model.retain(|e| e.0 > time);
                        got.sort();
                        want.sort();
                        prop_assert_eq!(got, want);
                    }
                }
            }
            let mut rest = Vec::new();
            schedule.take_due(Millis::MAX, &mut rest);
            prop_assert_eq!(rest.len(), model.len());
        }

        /// Ordering by interned key agrees with ordering by text, whatever the texts share.
        #[test]
        fn key_order_is_text_order(texts in prop::collection::vec("[\"ab\\x00é]{0,10}", 2..20)) {
            let mut keys = Keys::default();
            let ids: Vec<KeyId> = texts.iter().map(|t| keys.id(t)).collect();
            for (a, ta) in ids.iter().zip(&texts) {
                for (b, tb) in ids.iter().zip(&texts) {
                    prop_assert_eq!(keys.cmp(*a, *b), ta.cmp(tb), "{:?} {:?}", ta, tb);
                }
            }
        }

        /// Every window reported contains ts, has the right size, and the count matches the
        /// windows that truly contain ts (checked by brute force over candidate starts).
        #[test]
        fn assignment_is_exact(kind in kinds(), ts in -1000i64..1000) {
            let mut got = vec![];
            kind.for_each_window(ts, |s, e| got.push((s, e)));
            let (size, slide, offset) = match kind {
                WindowKind::Tumbling { size, offset } => (size, size, offset),
                WindowKind::Hopping { size, slide, offset } => (size, slide, offset),
                WindowKind::Session { .. } => unreachable!(),
            };
            let mut want: Vec<(Millis, Millis)> = (ts - size - slide..=ts)
                .filter(|s| (s - offset).rem_euclid(slide) == 0 && *s <= ts && ts < s + size)
                .map(|s| (s, s + size))
                .collect();
            want.sort_by(|a, b| b.cmp(a));
            prop_assert_eq!(got, want);
        }

        /// An operator saved at any record, encoded, decoded and restored, goes on to emit
        /// exactly the rows the uninterrupted one emits, for every kind of window, lateness,
        /// emit mode and aggregate (exact and estimated distinct counts, few and many
        /// percentile values, sums, first values).
        #[test]
        fn restored_operator_goes_on_as_the_uninterrupted_one(
            kind in prop_oneof![kinds(), (1i64..30).prop_map(|gap| WindowKind::Session { gap })],
            delay in 0i64..20,
            lateness in prop_oneof![Just(0i64), 1i64..30],
            updates in any::<bool>(),
            events in prop::collection::vec((0u8..4, 0i64..300, 0u16..400), 1..400),
            cut in 0usize..400,
        ) {
            let aggs = vec![
                AggSpec { kind: AggKind::Count, field: None, name: "count".into() },
                AggSpec { kind: AggKind::Sum, field: Some(0), name: "sum".into() },
                AggSpec { kind: AggKind::Distinct, field: Some(0), name: "distinct".into() },
                AggSpec { kind: AggKind::Percentile(vec![50.0, 99.0]), field: Some(0), name: "p".into() },
                AggSpec { kind: AggKind::First, field: Some(0), name: "first".into() },
            ];
            let cfg = WindowConfig {
                kind,
                allowed_lateness: lateness,
                emit: if updates { EmitMode::Updates } else { EmitMode::Final },
                aggs: aggs.clone(),
                max_open_windows: 1_000_000,
            };
            let render = |rows: &mut Vec<Row>, out: &mut Vec<String>| {
                for r in rows.drain(..) {
                    let mut bytes = Vec::new();
                    let mut columns = JsonColumns { out: &mut bytes, plain_names: true };
                    for (state, spec) in r.states.iter().zip(&aggs) {
                        state.output(spec, &mut columns);
                    }
                    out.push(format!("{} {} {} {} {} {}", r.key, r.start, r.end, r.update, r.retract, String::from_utf8(bytes).unwrap()));
                }
            };
            let run = |op: &mut WindowOperator, events: &[(u8, Millis, u16)], out: &mut Vec<String>| {
                let mut rows = Vec::new();
                for (k, t, v) in events {
                    // Many values of one key make the distinct count an estimate and the
                    // percentiles a histogram.
                    let value = (v * 40).to_string();
                    let input = [
                        AggInput::Missing,
                        prepare(&AggKind::Sum, Some(&value)).unwrap(),
                        prepare(&AggKind::Distinct, Some(&value)).unwrap(),
                        prepare(&AggKind::Percentile(vec![50.0]), Some(&value)).unwrap(),
                        prepare(&AggKind::First, Some(&value)).unwrap(),
                    ];
                    op.process(&k.to_string(), *t, 0, &input, 0, &mut rows).unwrap();
                    render(&mut rows, out);
                }
            };
            let mut whole = WindowOperator::new(cfg.clone(), Watermarks::new(delay, None));
            let mut want = Vec::new();
            run(&mut whole, &events, &mut want);
            let mut rows = Vec::new();
            whole.finish(&mut rows);
            render(&mut rows, &mut want);

            let cut = cut.min(events.len());
            let mut first = WindowOperator::new(cfg.clone(), Watermarks::new(delay, None));
            let mut got = Vec::new();
            run(&mut first, &events[..cut], &mut got);
            let bytes = saved::encode(&first.state());
            drop(first);
            let mut second = WindowOperator::restore(cfg, saved::decode(&bytes).unwrap()).unwrap();
            run(&mut second, &events[cut..], &mut got);
            second.finish(&mut rows);
            render(&mut rows, &mut got);
            prop_assert_eq!(got, want);
        }

        /// The end of the input taken apart in one pass (`finish_some`) gives the rows, in the
        /// order, that firing each window in turn gives, and leaves the same nothing behind:
        /// keys of many spellings, windows fired during the run (their places reused),
        /// records late or not; taken a batch of rows at a time, the same rows in the same
        /// order, no batch over its size.
        #[test]
        fn firing_all_at_the_end_equals_firing_each(
            kind in kinds(),
            events in prop::collection::vec(("[ab]{0,3}|k[0-9]{0,9}", 0i64..300), 1..150),
            delay in 0i64..60,
            batch in prop_oneof![1usize..6, Just(usize::MAX)],
        ) {
            let mut each = op(kind, delay, 0, EmitMode::Final);
            let mut rows = vec![];
            for (k, t) in &events {
                each.process(k, *t, 0, &[AggInput::Missing], 0, &mut rows).unwrap();
            }
            let mut all = WindowOperator::restore(each.cfg.clone(), each.state()).unwrap();
            prop_assert!(all.each_window_fires_once());
            let (mut by_each, mut by_all) = (vec![], vec![]);
            each.watermarks.end_of_input();
            each.fire(&mut by_each);
            loop {
                let mut part = vec![];
                let done = all.finish_some(&mut part, batch);
                prop_assert!(part.len() <= batch);
                by_all.append(&mut part);
                if done {
                    break;
                }
            }
            prop_assert_eq!(summary(&by_all), summary(&by_each));
            prop_assert!(all.windows.is_empty() && all.keys.live() == 0 && each.keys.live() == 0);
            prop_assert!(all.pending.is_empty() && all.expiry.is_empty());
        }

        /// With a delay covering all disorder, tumbling counts equal a batch count, and
        /// every record is either counted or late.
        #[test]
        fn counts_equal_batch_when_delay_covers_disorder(
            events in prop::collection::vec((0u8..3, 0i64..200), 1..150),
            size in 1i64..40,
        ) {
            let disorder = {
                let mut max = Millis::MIN;
                events.iter().map(|(_, t)| { max = max.max(*t); max - t }).max().unwrap()
            };
            let mut op = op(WindowKind::Tumbling { size, offset: 0 }, disorder, 0, EmitMode::Final);
            let mut rows = vec![];
            for (k, t) in &events {
                let outcome = op.process(&k.to_string(), *t, 0, &[AggInput::Missing], 0, &mut rows).unwrap();
                prop_assert_eq!(outcome, Outcome::Accepted);
            }
            op.finish(&mut rows);
            let mut batch = std::collections::BTreeMap::new();
            for (k, t) in &events {
                let start = t - t.rem_euclid(size);
                *batch.entry((k.to_string(), start)).or_insert(0u64) += 1;
            }
            let mut got: Vec<((String, Millis), u64)> = rows.iter()
                .map(|r| ((r.key.to_string(), r.start), count_of(r)))
                .collect();
            got.sort();
            prop_assert_eq!(got, batch.into_iter().collect::<Vec<_>>());
            prop_assert!(rows.iter().all(|r| !r.update));
        }

        /// Lateness by the record's own partition: however the partitions' records are
        /// interleaved, the final rows (upserted on key and start) and the late records are
        /// those of each partition run alone, for every window kind, delay and lateness, when
        /// each key lives in one partition (as on a keyed topic). The partitions are declared
        /// at the start, as a broker source's are.
        #[test]
        fn interleaving_never_changes_rows_or_late_records(
            kind in prop_oneof![kinds(), (1i64..40).prop_map(|gap| WindowKind::Session { gap })],
            parts in prop::collection::vec(prop::collection::vec((0u8..3, 0i64..300), 0..40), 2..5),
            order in prop::collection::vec(0usize..8, 0..200),
            delay in 0i64..40,
            lateness in prop_oneof![Just(0i64), 1i64..30],
            emit in prop_oneof![Just(EmitMode::Final), Just(EmitMode::Updates)],
        ) {
            let keyed = |p: usize, k: u8| format!("{p}-{k}");
            let mut want = Upserted::default();
            for (p, records) in parts.iter().enumerate() {
                let mut alone = op(kind, delay, lateness, emit);
                let mut out = vec![];
                for (i, (k, t)) in records.iter().enumerate() {
                    let o = alone.process(&keyed(p, *k), *t, 0, &[AggInput::Missing], 0, &mut out).unwrap();
                    want.record(p, i, o);
                }
                alone.finish(&mut out);
                want.rows(&out);
            }
            for interleaving in [interleave(&parts, &order), interleave(&parts, &[])] {
                let mut all = op(kind, delay, lateness, emit);
                let mut out = vec![];
                all.assign(&(0..parts.len()).collect::<Vec<_>>(), 0, &mut out);
                let mut got = Upserted::default();
                for (p, i) in interleaving {
                    let (k, t) = parts[p][i];
                    let o = all.process(&keyed(p, k), t, p, &[AggInput::Missing], 0, &mut out).unwrap();
                    got.record(p, i, o);
                }
                all.finish(&mut out);
                got.rows(&out);
                prop_assert_eq!(&got, &want);
            }
        }

        /// The same rule checked against a batch computation, with keys spread over every
        /// partition: a record is late when each of its windows ends (plus the lateness) at or
        /// behind its partition's largest earlier event time minus the delay, and a window's
        /// count is its records that were not late for it.
        #[test]
        fn tumbling_and_hopping_rows_equal_a_batch_by_own_partition(
            kind in kinds().prop_filter("not a session", |k| !matches!(k, WindowKind::Session { .. })),
            parts in prop::collection::vec(prop::collection::vec((0u8..3, 0i64..300), 0..40), 2..5),
            order in prop::collection::vec(0usize..8, 0..200),
            delay in 0i64..40,
            lateness in prop_oneof![Just(0i64), 1i64..30],
        ) {
            let mut want = Upserted::default();
            for (p, records) in parts.iter().enumerate() {
                let mut max = Millis::MIN;
                for (i, (k, t)) in records.iter().enumerate() {
                    let w = max.saturating_sub(delay);
                    let mut late = true;
                    kind.for_each_window(*t, |start, end| {
                        if w < end + lateness {
                            late = false;
                            let row = want.rows.entry((k.to_string(), start)).or_insert((end, 0));
                            row.1 += 1;
                        }
                    });
                    if late {
                        want.late.insert((p, i));
                    }
                    max = max.max(*t);
                }
            }
            let mut all = op(kind, delay, lateness, EmitMode::Final);
            let mut out = vec![];
            all.assign(&(0..parts.len()).collect::<Vec<_>>(), 0, &mut out);
            let mut got = Upserted::default();
            for (p, i) in interleave(&parts, &order) {
                let (k, t) = parts[p][i];
                let o = all.process(&k.to_string(), t, p, &[AggInput::Missing], 0, &mut out).unwrap();
                got.record(p, i, o);
            }
            all.finish(&mut out);
            got.rows(&out);
            prop_assert_eq!(got, want);
        }
    }

    /// Final rows upserted on (key, start), and the late records by (partition, index).
    #[derive(Debug, Default, PartialEq)]
    struct Upserted {
        rows: std::collections::BTreeMap<(String, Millis), (Millis, u64)>,
        late: std::collections::BTreeSet<(usize, usize)>,
    }

    impl Upserted {
        fn record(&mut self, p: usize, i: usize, outcome: Outcome) {
            if outcome == Outcome::Late {
                self.late.insert((p, i));
            }
        }

        fn rows(&mut self, rows: &[Row]) {
            for r in rows {
                let at = (r.key.to_string(), r.start);
                if r.retract {
                    self.rows.remove(&at);
                } else {
                    self.rows.insert(at, (r.end, count_of(r)));
                }
            }
        }
    }

    /// The partitions' records interleaved, each partition's in its order: `order` picks
    /// the partition of each next record (among those with records left), then the rest go
    /// partition after partition.
    pub(crate) fn interleave(parts: &[Vec<(u8, Millis)>], order: &[usize]) -> Vec<(usize, usize)> {
        let mut next = vec![0; parts.len()];
        let mut out = Vec::new();
        for pick in order {
            let left: Vec<usize> = (0..parts.len())
                .filter(|p| next[*p] < parts[*p].len())
                .collect();
            if left.is_empty() {
                break;
            }
            let p = left[pick % left.len()];
            out.push((p, next[p]));
            next[p] += 1;
        }
        for (p, records) in parts.iter().enumerate().rev() {
            out.extend((next[p]..records.len()).map(|i| (p, i)));
        }
        out
    }
}
