//! Lateness profiles: how late events arrive, and what watermark delay would cover them.
//!
//! Per record: lateness = arrival time - event time, and out-of-orderness = (max event time
//! seen so far in its partition) - event time, the quantity a bounded-out-of-orderness
//! watermark must cover. With delay D a record is late exactly when its out-of-orderness
//! exceeds D, so the smallest delay that keeps a share q on time is the q-quantile of
//! out-of-orderness. Distributions are hdrhistograms (3 significant digits), so memory does
//! not grow with the input; the late counts for the delays asked for are exact counters.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::OnceLock;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::aggregate::{at_nearest_rank, percentile_upper_bounds, percentiles_of};
use super::saved::{decode_histogram, encode_histogram};
use super::time::{format_millis, Millis};

/// Most groups (`--by` values) and drift buckets kept; the rest are counted as dropped.
pub const MAX_GROUPS: usize = 10_000;
pub const MAX_BUCKETS: usize = 100_000;

/// Quantiles every report lists.
pub const QUANTILES: [f64; 6] = [50.0, 90.0, 99.0, 99.9, 99.99, 100.0];

#[derive(Clone, Debug)]
pub struct Distribution {
    count: u64,
    /// Lateness in ms, its non-negative part; negative lateness (clock skew) is counted apart.
    lateness: Recorder,
    negative: u64,
    min_lateness: Millis,
    max_lateness: Millis,
    out_of_order: Recorder,
    /// The exact largest out-of-orderness (the histogram knows it to 3 digits only).
    max_out_of_order: Millis,
    /// Records with out-of-orderness above each requested delay.
    late_for: Vec<u64>,
}

impl Distribution {
    /// A distribution late counts are kept for `delays` delays in: the `overall` one, or a
    /// group's (see `Recorder`).
    fn new(delays: usize, overall: bool) -> Distribution {
        Distribution {
            count: 0,
            lateness: Recorder::new(overall),
            negative: 0,
            min_lateness: Millis::MAX,
            max_lateness: Millis::MIN,
            out_of_order: Recorder::new(overall),
            max_out_of_order: 0,
            late_for: vec![0; delays],
        }
    }

    /// Counts a record; it is late for delay `i` when `verdicts` says so, or, without
    /// verdicts, when its out-of-orderness exceeds the delay.
    fn record(&mut self, lateness: Millis, out_of_order: Millis, late: Late<'_>) {
        self.count += 1;
        self.min_lateness = self.min_lateness.min(lateness);
        self.max_lateness = self.max_lateness.max(lateness);
        if lateness < 0 {
            self.negative += 1;
        }
        self.lateness.record(lateness.max(0));
        self.out_of_order.record(out_of_order.max(0));
        self.max_out_of_order = self.max_out_of_order.max(out_of_order);
        // The verdicts' kind is matched once, not once per delay.
        match late {
            Late::ByMeasure(delays) => {
                for (count, delay) in self.late_for.iter_mut().zip(delays) {
                    *count += (out_of_order > *delay) as u64;
                }
            }
            Late::Verdicts(verdicts) => {
                for (count, late) in self.late_for.iter_mut().zip(verdicts) {
                    *count += *late as u64;
                }
            }
        }
    }
}

/// Whether a record is late for each delay of a profile.
#[derive(Clone, Copy)]
pub enum Late<'a> {
    /// When its measure (out-of-orderness, or a window's closing) exceeds the delay.
    ByMeasure(&'a [Millis]),
    /// As a window run with each delay judged it (sessions: `profile_task`).
    Verdicts(&'a [bool]),
}

impl Late<'_> {
    fn at(&self, i: usize, measure: Millis) -> bool {
        match self {
            Late::ByMeasure(delays) => measure > delays[i],
            Late::Verdicts(late) => late[i],
        }
    }
}

/// A `Distribution` as a checkpoint keeps it: histograms in their V2 encoding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DistributionState {
    count: u64,
    lateness: Vec<u8>,
    negative: u64,
    min_lateness: Millis,
    max_lateness: Millis,
    out_of_order: Vec<u8>,
    max_out_of_order: Millis,
    late_for: Vec<u64>,
}

/// A `Profile` as a checkpoint keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileState {
    overall: DistributionState,
    groups: Vec<(String, DistributionState)>,
    dropped_groups: u64,
    /// (bucket start, count, late).
    drift: Vec<(Millis, u64, u64)>,
    dropped_buckets: u64,
}

impl Distribution {
    fn state(&self) -> DistributionState {
        DistributionState {
            count: self.count,
            lateness: encode_histogram(&self.lateness.folded()),
            negative: self.negative,
            min_lateness: self.min_lateness,
            max_lateness: self.max_lateness,
            out_of_order: encode_histogram(&self.out_of_order.folded()),
            max_out_of_order: self.max_out_of_order,
            late_for: self.late_for.clone(),
        }
    }

    fn restore(s: DistributionState, delays: usize, overall: bool) -> Result<Distribution, String> {
        if s.late_for.len() != delays {
            return Err("the checkpoint counts other --delay values".into());
        }
        Ok(Distribution {
            count: s.count,
            lateness: Recorder::of(decode_histogram(&s.lateness)?, overall),
            negative: s.negative,
            min_lateness: s.min_lateness,
            max_lateness: s.max_lateness,
            out_of_order: Recorder::of(decode_histogram(&s.out_of_order)?, overall),
            max_out_of_order: s.max_out_of_order,
            late_for: s.late_for,
        })
    }
}

impl Distribution {
    /// Adds `other`'s counts (made with the same delays) into this one.
    fn merge(&mut self, other: &Distribution) {
        self.count += other.count;
        self.lateness.add(&other.lateness);
        self.negative += other.negative;
        self.min_lateness = self.min_lateness.min(other.min_lateness);
        self.max_lateness = self.max_lateness.max(other.max_lateness);
        self.out_of_order.add(&other.out_of_order);
        self.max_out_of_order = self.max_out_of_order.max(other.max_out_of_order);
        for (mine, theirs) in self.late_for.iter_mut().zip(&other.late_for) {
            *mine += theirs;
        }
    }
}

/// Adds `other`'s counts into `h` bucket by bucket, so that `h` ends as if it had recorded
/// them itself (`Histogram::add` grows a histogram to another top than recording does, which
/// a checkpoint's encoding would show).
fn add(h: &mut Histogram<u64>, other: &Histogram<u64>) {
    for v in other.iter_recorded() {
        record_into(h, v.value_iterated_to(), v.count_at_value());
    }
}

/// Values under this are counted by a `Recorder` in an array of their own first: a histogram of
/// 3 significant digits gives each of them a count of its own anyway (its first 2,048).
const EXACT: usize = 2048;

/// The overall distributions' `Recorder`s count values from `EXACT` up to `EXACT << WIDE`
/// (about 70 minutes) in a second array by their histogram bucket (`wide_slot`), as the
/// histogram would, without its record's work: a bucket `k` of a 3-digit histogram (values
/// `2^(10+k)` up to `2^(11+k)`) holds 1,024 counts, each for `2^k` values.
const WIDE: u32 = 11;

/// The slot of `value` (`EXACT` and up) among the `WIDE` buckets' counts, or `None` past them.
#[inline]
fn wide_slot(value: u64) -> Option<usize> {
    if value < EXACT as u64 {
        return None;
    }
    let bucket = 63 - value.leading_zeros() - 10;
    let sub = (value >> bucket) as usize - EXACT / 2;
    (bucket <= WIDE).then(|| (bucket as usize - 1) * (EXACT / 2) + sub)
}

/// The lowest value of slot `slot` of the wide counts: one the histogram counts in the same
/// bucket as every value `wide_slot` puts there.
fn wide_value(slot: usize) -> u64 {
    let (bucket, sub) = (slot / (EXACT / 2) + 1, slot % (EXACT / 2) + EXACT / 2);
    (sub as u64) << bucket
}

/// Values a group's `Recorder` keeps as they come before it counts them as the overall one
/// does: that takes a histogram of 3 significant digits, at least 16 KiB (2,048 counts) and
/// about 100 KiB for lateness of hours, and the array, 16 KiB more, where most groups of a
/// profile `--by` a field (up to `MAX_GROUPS`) have far fewer records (on the benchmark file,
/// 9,744 of its 10,000 merchants have 1,024 or fewer).
const FEW: usize = 1024;

/// An hdrhistogram of 3 significant digits, fed a value at a time, which whoever reads it
/// (`folded`) gets as if every value had been recorded into it directly.
///
/// Values under `EXACT` are counted in a plain array and added in when read: most lateness and
/// out-of-orderness is under two seconds, and an array's increment is a few instructions where
/// the histogram's record (an index from the value's magnitude, bounds, extremes and total)
/// took about sixty, twice per record; the overall distributions count the values above, up
/// to `EXACT << WIDE`, by bucket in a second array. A group's recorder keeps its first `FEW`
/// values as they are instead, with no array and no histogram.
#[derive(Clone, Debug)]
struct Recorder {
    /// Counts by value under `EXACT`; empty while the values are `Few`.
    exact: Box<[u64]>,
    /// Counts by `wide_slot`: the overall distributions' only, empty for a group's.
    wide: Box<[u64]>,
    rest: Rest,
}

#[derive(Clone, Debug)]
enum Rest {
    /// A group's values, while it has counted at most `FEW`.
    Few(Vec<u64>),
    /// The values not counted in the array.
    Histogram(Histogram<u64>),
}

/// Records `value` `n` times into `h`, growing it as needed (clamped where it cannot grow).
fn record_into(h: &mut Histogram<u64>, value: u64, n: u64) {
    if h.record_n(value, n).is_err() {
        h.saturating_record_n(value, n);
    }
}

impl Recorder {
    /// The overall distribution's recorder (`overall`), or a group's.
    fn new(overall: bool) -> Recorder {
        if overall {
            Recorder::split(Histogram::new(3).expect("3 significant digits"), true)
        } else {
            Recorder {
                exact: Box::default(),
                wide: Box::default(),
                rest: Rest::Few(Vec::new()),
            }
        }
    }

    /// A recorder with the array (and the wide counts, for an overall one), and `histogram`
    /// for the rest.
    fn split(histogram: Histogram<u64>, overall: bool) -> Recorder {
        let wide = if overall {
            WIDE as usize * EXACT / 2
        } else {
            0
        };
        Recorder {
            exact: vec![0; EXACT].into_boxed_slice(),
            wide: vec![0; wide].into_boxed_slice(),
            rest: Rest::Histogram(histogram),
        }
    }

    /// A recorder that reads as `histogram` (a checkpoint's). A group's with few values keeps
    /// them as values again: each bucket's highest equivalent value, which the histogram
    /// counts in the same bucket, so what is read is the same.
    fn of(histogram: Histogram<u64>, overall: bool) -> Recorder {
        if overall || histogram.len() > FEW as u64 {
            return Recorder::split(histogram, overall);
        }
        let values = histogram
            .iter_recorded()
            .flat_map(|v| std::iter::repeat_n(v.value_iterated_to(), v.count_at_value() as usize));
        Recorder {
            exact: Box::default(),
            wide: Box::default(),
            rest: Rest::Few(values.collect()),
        }
    }

    /// Counts `value`, which is not negative.
    #[inline]
    fn record(&mut self, value: Millis) {
        match self.exact.get_mut(value as usize) {
            Some(n) => *n += 1,
            None => self.record_rest(value as u64),
        }
    }

    /// Counts a value the array does not.
    fn record_rest(&mut self, value: u64) {
        if !self.wide.is_empty() {
            if let Some(n) = wide_slot(value).and_then(|slot| self.wide.get_mut(slot)) {
                *n += 1;
                return;
            }
        }
        match &mut self.rest {
            Rest::Histogram(h) => record_into(h, value, 1),
            Rest::Few(values) if values.len() < FEW => values.push(value),
            Rest::Few(_) => {
                self.spill();
                self.record(value as Millis);
            }
        }
    }

    /// A group's values, counted in the array and a histogram from now on.
    fn spill(&mut self) {
        if let Rest::Few(values) = &mut self.rest {
            let values = std::mem::take(values);
            *self = Recorder::split(Histogram::new(3).expect("3 significant digits"), false);
            values.iter().for_each(|&v| self.record(v as Millis));
        }
    }

    /// Adds what `other` counted, as if this recorder had counted those values too.
    fn add(&mut self, other: &Recorder) {
        if let Rest::Few(values) = &other.rest {
            values.iter().for_each(|&v| self.record(v as Millis));
            return;
        }
        self.spill();
        if let Rest::Histogram(h) = &mut self.rest {
            add(h, &other.folded());
        }
    }

    /// What a report reads: a group's few values in order, or the histogram.
    fn measured(&self) -> Measured<'_> {
        match &self.rest {
            Rest::Few(values) => {
                let mut sorted = values.clone();
                sorted.sort_unstable();
                Measured::Sorted(sorted)
            }
            Rest::Histogram(_) => Measured::Histogram(self.folded()),
        }
    }

    /// The histogram of every value counted.
    fn folded(&self) -> Cow<'_, Histogram<u64>> {
        let histogram = match &self.rest {
            Rest::Histogram(h) => h,
            Rest::Few(values) => {
                let mut h = Histogram::new(3).expect("3 significant digits");
                values.iter().for_each(|&v| record_into(&mut h, v, 1));
                return Cow::Owned(h);
            }
        };
        if self.exact.iter().chain(self.wide.iter()).all(|n| *n == 0) {
            return Cow::Borrowed(histogram);
        }
        let mut h = histogram.clone();
        for (value, n) in self.exact.iter().enumerate().filter(|(_, n)| **n > 0) {
            // Within the histogram's range: it starts out tracking 2,048 values.
            h.record_n(value as u64, *n).expect("a value under 2,048");
        }
        for (slot, n) in self.wide.iter().enumerate().filter(|(_, n)| **n > 0) {
            record_into(&mut h, wide_value(slot), *n);
        }
        Cow::Owned(h)
    }
}

/// What a report reads of a `Recorder`: its histogram, or a group's few values in order, whose
/// answers are the histogram's (each value's bucket found by a histogram's own arithmetic)
/// without making a histogram, of up to 128 KiB, for each of up to 10,000 groups.
enum Measured<'a> {
    Histogram(Cow<'a, Histogram<u64>>),
    Sorted(Vec<u64>),
}

/// A histogram of the recorders' precision, for its bucket arithmetic only.
fn buckets() -> &'static Histogram<u64> {
    static BUCKETS: OnceLock<Histogram<u64>> = OnceLock::new();
    BUCKETS.get_or_init(|| Histogram::new(3).expect("3 significant digits"))
}

impl Measured<'_> {
    fn is_empty(&self) -> bool {
        match self {
            Measured::Histogram(h) => h.is_empty(),
            Measured::Sorted(values) => values.is_empty(),
        }
    }

    /// The top of the largest value's bucket (`Histogram::max`).
    fn max(&self) -> u64 {
        match self {
            Measured::Histogram(h) => h.max(),
            Measured::Sorted(values) => values
                .last()
                .map_or(0, |&v| buckets().highest_equivalent(v)),
        }
    }

    /// `percentiles_of` for `ps`; 0s when empty.
    fn percentiles(&self, ps: &[f64]) -> Vec<u64> {
        match self {
            Measured::Histogram(h) => percentiles_of(h, ps),
            Measured::Sorted(values) => ranked(values, ps, |v| buckets().median_equivalent(v)),
        }
    }

    /// `percentile_upper_bounds` for `ps`; 0s when empty.
    fn upper_bounds(&self, ps: &[f64]) -> Vec<u64> {
        match self {
            Measured::Histogram(h) => percentile_upper_bounds(h, ps),
            Measured::Sorted(values) => ranked(values, ps, |v| buckets().highest_equivalent(v)),
        }
    }

    /// `Histogram::count_between`: the values whose buckets lie from `low`'s to `high`'s.
    fn count_between(&self, low: u64, high: u64) -> u64 {
        match self {
            Measured::Histogram(h) => h.count_between(low, high),
            Measured::Sorted(values) => {
                let bucket = |v: u64| buckets().lowest_equivalent(v);
                let (low, high) = (bucket(low), bucket(high));
                let below = values.partition_point(|v| bucket(*v) < low);
                (values.partition_point(|v| bucket(*v) <= high) - below) as u64
            }
        }
    }
}

/// For each of `ps`, `answer` of the value at its nearest rank among `sorted` (0 when empty):
/// the histogram's walk stops in that value's bucket.
fn ranked(sorted: &[u64], ps: &[f64], answer: impl Fn(u64) -> u64) -> Vec<u64> {
    let at = |p: &f64| at_nearest_rank(sorted, *p).map_or(0, &answer);
    ps.iter().map(at).collect()
}

type DriftMap = rustc_hash::FxHashMap<Millis, DriftBucket>;

#[derive(Clone, Debug, Default)]
struct DriftBucket {
    count: u64,
    late: u64,
}

/// Adds the recent bucket's pending counts to its entry (admitted when the bucket began).
fn add_recent(drift: &mut DriftMap, (start, counts): &(Millis, DriftBucket)) {
    let b = drift.get_mut(start).expect("recent bucket admitted");
    b.count += counts.count;
    b.late += counts.late;
}

/// The whole profile, pure: the command feeds it records.
#[derive(Clone)]
pub struct Profile {
    /// The delays late counts are kept for: the `shown` ones asked for, then the ones
    /// recommendations are chosen among (sessions only; empty otherwise).
    delays: Vec<Millis>,
    shown: usize,
    targets: Vec<f64>,
    bucket: Millis,
    overall: Distribution,
    /// By group, in no order (a record finds its group by hash; an ordered map's search by
    /// text was a fifth of a profile `--by` a field of 10,000 values); what reads them sorts.
    groups: rustc_hash::FxHashMap<Box<str>, Distribution>,
    dropped_groups: u64,
    /// By bucket start, in no order: a record whose bucket is not the last one's finds its
    /// own by hash (an ordered map's search was 2% of a profile's instructions); what reads
    /// the series sorts it.
    drift: DriftMap,
    /// The bucket the last record went to (already admitted to `drift`), with the counts not
    /// yet added there: a stream stays in one bucket for many records, so most records skip
    /// the map.
    recent: Option<(Millis, DriftBucket)>,
    dropped_buckets: u64,
}

impl Profile {
    /// `delays` to report late counts for (the first one also drives the drift series),
    /// `targets` as shares in percent, `bucket` the drift bucket size.
    pub fn new(delays: Vec<Millis>, targets: Vec<f64>, bucket: Millis) -> Profile {
        Profile {
            overall: Distribution::new(delays.len(), true),
            shown: delays.len(),
            delays,
            targets,
            bucket: bucket.max(1),
            groups: Default::default(),
            dropped_groups: 0,
            drift: DriftMap::default(),
            recent: None,
            dropped_buckets: 0,
        }
    }

    /// Counts a record whose late verdicts follow its measure `out_of_order`.
    pub fn record(
        &mut self,
        group: Option<&str>,
        event: Millis,
        arrival: Millis,
        out_of_order: Millis,
    ) {
        let delays = std::mem::take(&mut self.delays);
        self.record_judged(
            group,
            (event, arrival),
            out_of_order,
            Late::ByMeasure(&delays),
        );
        self.delays = delays;
    }

    /// Counts a record with (event, arrival) `times`, late for each delay as `late` says.
    pub fn record_judged(
        &mut self,
        group: Option<&str>,
        (event, arrival): (Millis, Millis),
        out_of_order: Millis,
        late: Late<'_>,
    ) {
        let lateness = arrival.saturating_sub(event);
        // Not `self.delays`: `record` lends them out for the call.
        let delays = self.overall.late_for.len();
        self.overall.record(lateness, out_of_order, late);
        if let Some(g) = group {
            let room = self.groups.len() < MAX_GROUPS;
            match self.groups.get_mut(g) {
                Some(d) => d.record(lateness, out_of_order, late),
                None if room => {
                    let mut d = Distribution::new(delays, false);
                    d.record(lateness, out_of_order, late);
                    self.groups.insert(g.into(), d);
                }
                None => self.dropped_groups += 1,
            }
        }
        let late = (delays > 0 && late.at(0, out_of_order)) as u64;
        self.count_drift(event, late);
    }

    /// Counts a record at `event` in its drift bucket.
    fn count_drift(&mut self, event: Millis, late: u64) {
        if let Some((recent, counts)) = &mut self.recent {
            // Most records fall in the bucket of the record before: no division for those.
            if (0..self.bucket).contains(&(event - *recent)) {
                counts.count += 1;
                counts.late += late;
                return;
            }
        }
        let start = event - event.rem_euclid(self.bucket);
        self.flush_recent();
        if self.drift.contains_key(&start) || self.drift.len() < MAX_BUCKETS {
            self.drift.entry(start).or_default();
            self.recent = Some((start, DriftBucket { count: 1, late }));
        } else {
            self.dropped_buckets += 1;
        }
    }

    fn flush_recent(&mut self) {
        if let Some(recent) = self.recent.take() {
            add_recent(&mut self.drift, &recent);
        }
    }

    /// The drift series with the recent bucket's counts included.
    fn drift(&self) -> BTreeMap<Millis, DriftBucket> {
        let mut drift = self.drift.clone();
        if let Some(recent) = &self.recent {
            add_recent(&mut drift, recent);
        }
        drift.into_iter().collect()
    }

    /// Adds what `other` (a profile made with the same flags, of other records: another
    /// partition's) counted into this one, as if it had seen those records too. Groups and
    /// buckets past the caps are counted as dropped.
    pub fn merge(&mut self, other: &Profile) {
        self.overall.merge(&other.overall);
        for (g, d) in other.sorted_groups() {
            let room = self.groups.len() < MAX_GROUPS;
            match self.groups.get_mut(g) {
                Some(mine) => mine.merge(d),
                None if room => {
                    self.groups.insert(g.into(), d.clone());
                }
                None => self.dropped_groups += d.count,
            }
        }
        self.dropped_groups += other.dropped_groups;
        self.flush_recent();
        for (start, b) in other.drift() {
            if self.drift.contains_key(&start) || self.drift.len() < MAX_BUCKETS {
                let mine = self.drift.entry(start).or_default();
                mine.count += b.count;
                mine.late += b.late;
            } else {
                self.dropped_buckets += b.count;
            }
        }
        self.dropped_buckets += other.dropped_buckets;
    }

    /// The groups in the order of their texts.
    fn sorted_groups(&self) -> Vec<(&str, &Distribution)> {
        let mut groups: Vec<_> = (self.groups.iter()).map(|(g, d)| (&**g, d)).collect();
        groups.sort_unstable_by_key(|(g, _)| *g);
        groups
    }

    /// Everything the profile has counted, for a checkpoint.
    pub fn state(&self) -> ProfileState {
        ProfileState {
            overall: self.overall.state(),
            groups: (self.sorted_groups().into_iter())
                .map(|(g, d)| (g.to_string(), d.state()))
                .collect(),
            dropped_groups: self.dropped_groups,
            drift: self
                .drift()
                .into_iter()
                .map(|(start, b)| (start, b.count, b.late))
                .collect(),
            dropped_buckets: self.dropped_buckets,
        }
    }

    /// Takes back what `state` gave, into a profile made with the same flags.
    pub fn restore(&mut self, state: ProfileState) -> Result<(), String> {
        let delays = self.delays.len();
        self.overall = Distribution::restore(state.overall, delays, true)?;
        self.groups = state
            .groups
            .into_iter()
            .map(|(g, d)| Ok((g.into(), Distribution::restore(d, delays, false)?)))
            .collect::<Result<_, String>>()?;
        self.dropped_groups = state.dropped_groups;
        self.drift = state
            .drift
            .into_iter()
            .map(|(start, count, late)| (start, DriftBucket { count, late }))
            .collect();
        self.recent = None;
        self.dropped_buckets = state.dropped_buckets;
        Ok(())
    }

    pub fn report(&self, no_time: u64) -> Report {
        let summary = |d: &Distribution| self.summary(d);
        let all_drift = self.drift();
        let shares: Vec<f64> = all_drift
            .values()
            .map(|b| b.late as f64 / b.count as f64)
            .collect();
        let mut sorted = shares.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
        let drift = all_drift
            .iter()
            .zip(&shares)
            .map(|((start, b), share)| DriftRow {
                bucket_start: format_millis(*start),
                start_ms: *start,
                count: b.count,
                late: b.late,
                late_share: *share,
                // A jump: well above the typical bucket, and not noise on a handful of records.
                flagged: b.late >= 5 && *share > (3.0 * median).max(0.01),
            })
            .collect();
        Report {
            interrupted: false,
            records: self.overall.count,
            no_time,
            window: None,
            arrival_is_read_time: false,
            overall: summary(&self.overall),
            groups: self
                .groups
                .iter()
                .map(|(g, d)| (g.to_string(), summary(d)))
                .collect(),
            dropped_groups: self.dropped_groups,
            drift_delay_ms: self.delays.first().copied(),
            delays_tried: self.delays[self.shown..].to_vec(),
            drift_bucket_ms: self.bucket,
            drift,
            dropped_buckets: self.dropped_buckets,
        }
    }

    /// Delays whose late counts are kept to choose recommendations among, besides the ones
    /// asked for: where lateness is not one measure per record (sessions), recommendations
    /// are the smallest of these delays that meet each target.
    pub fn trying(mut self, delays: &[Millis]) -> Profile {
        self.delays.extend_from_slice(delays);
        self.overall = Distribution::new(self.delays.len(), true);
        self
    }

    /// The delays late counts are kept for, those asked for first.
    pub fn delays(&self) -> &[Millis] {
        &self.delays
    }

    /// For each target, the smallest delay keeping that share of `d`'s records on time: the
    /// top of the measure's quantile bucket (a delay rounded down could leave more late), or,
    /// with delays tried, the smallest of them that does. `out_of_order` is `d`'s, as read.
    fn recommended(&self, d: &Distribution, out_of_order: &Measured) -> Vec<Recommendation> {
        if self.delays.len() > self.shown {
            let meeting = |t: &f64| smallest_meeting(&self.delays, &d.late_for, d.count, *t);
            return self.targets.iter().map(meeting).collect();
        }
        let tops = out_of_order.upper_bounds(&self.targets);
        (self.targets.iter().zip(tops))
            .map(|(t, top)| Recommendation {
                target: *t,
                // An empty histogram's top is 0.
                delay_ms: (top as Millis).min(d.max_out_of_order),
                above_tried: false,
            })
            .collect()
    }

    fn summary(&self, d: &Distribution) -> Summary {
        // A histogram bucket's middle can lie outside what was seen (a p50 below the
        // minimum): every quantile is held to the exact extremes.
        let quantiles = |h: &Measured, low: Millis, high: Millis| -> Vec<Quantile> {
            let values = h.percentiles(&QUANTILES);
            (QUANTILES.iter().zip(values))
                .map(|(q, v)| Quantile {
                    q: *q,
                    ms: if h.is_empty() {
                        0
                    } else {
                        (v as Millis).clamp(low, high)
                    },
                })
                .collect()
        };
        // Read once each: a fold of values in the array is a copy of the histogram, and a
        // group's few values are sorted.
        let (lateness, out_of_order) = (d.lateness.measured(), d.out_of_order.measured());
        Summary {
            count: d.count,
            lateness_min_ms: (d.count > 0).then_some(d.min_lateness),
            lateness_max_ms: (d.count > 0).then_some(d.max_lateness),
            lateness: quantiles(&lateness, d.min_lateness.max(0), d.max_lateness.max(0)),
            negative_lateness_share: if d.count > 0 {
                d.negative as f64 / d.count as f64
            } else {
                0.0
            },
            out_of_order: quantiles(&out_of_order, 0, d.max_out_of_order),
            recommended: self.recommended(d, &out_of_order),
            late_for_delay: self.delays[..self.shown]
                .iter()
                .zip(&d.late_for)
                .map(|(delay, late)| LateForDelay {
                    delay_ms: *delay,
                    late: *late,
                    share: if d.count > 0 {
                        *late as f64 / d.count as f64
                    } else {
                        0.0
                    },
                })
                .collect(),
            lateness_histogram: log_buckets(&lateness),
        }
    }
}

/// The smallest of `delays` whose late count keeps `target` percent of `count` records on
/// time; the largest, marked, when none does.
fn smallest_meeting(delays: &[Millis], late: &[u64], count: u64, target: f64) -> Recommendation {
    let allowed = count as f64 * (1.0 - target / 100.0);
    let meets = (delays.iter().zip(late))
        .filter(|(_, late)| **late as f64 <= allowed + 1e-9)
        .map(|(d, _)| *d)
        .min();
    Recommendation {
        target,
        delay_ms: meets.unwrap_or_else(|| delays.iter().copied().max().unwrap_or(0)),
        above_tried: meets.is_none(),
    }
}

/// Counts in log-scale buckets `[2^k, 2^(k+1))` ms (the first is `[0, 1)`), for the ASCII
/// histogram and the plot.
fn log_buckets(h: &Measured) -> Vec<LogBucket> {
    let mut out = Vec::new();
    if h.is_empty() {
        return out;
    }
    let mut lo = 0u64;
    let mut hi = 1u64;
    while lo <= h.max() {
        let count = h.count_between(lo, hi - 1);
        out.push(LogBucket {
            from_ms: lo,
            to_ms: hi,
            count,
        });
        lo = hi;
        hi = hi.saturating_mul(2);
    }
    out
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Quantile {
    pub q: f64,
    pub ms: Millis,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Recommendation {
    /// Share of records to keep on time, in percent.
    pub target: f64,
    pub delay_ms: Millis,
    /// No delay tried met the target: it needs more than `delay_ms`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub above_tried: bool,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LateForDelay {
    pub delay_ms: Millis,
    pub late: u64,
    pub share: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LogBucket {
    pub from_ms: u64,
    pub to_ms: u64,
    pub count: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    pub count: u64,
    pub lateness_min_ms: Option<Millis>,
    pub lateness_max_ms: Option<Millis>,
    /// Quantiles of lateness (arrival - event time; negative values count as 0 here).
    pub lateness: Vec<Quantile>,
    /// Share of records whose event time is after their arrival (clock skew).
    pub negative_lateness_share: f64,
    /// Quantiles of out-of-orderness (max event time before - event time).
    pub out_of_order: Vec<Quantile>,
    pub recommended: Vec<Recommendation>,
    pub late_for_delay: Vec<LateForDelay>,
    pub lateness_histogram: Vec<LogBucket>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct DriftRow {
    pub bucket_start: String,
    /// The bucket's start, for the plot.
    #[serde(skip)]
    pub start_ms: Millis,
    pub count: u64,
    pub late: u64,
    pub late_share: f64,
    /// The late share jumped here (above 3x the median bucket and 1%).
    pub flagged: bool,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Report {
    /// The run was stopped by a signal: the report covers the records read before it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    pub records: u64,
    /// Records without a usable event or arrival time.
    pub no_time: u64,
    /// The window whose rule the late counts and recommendations follow (`--tumbling 1m`);
    /// without one they follow out-of-orderness.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
    /// No arrival field: a record arrived when weir read it (on an old file, its age).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub arrival_is_read_time: bool,
    pub overall: Summary,
    pub groups: BTreeMap<String, Summary>,
    pub dropped_groups: u64,
    /// The delay the drift series counts lateness for.
    pub drift_delay_ms: Option<Millis>,
    /// The delays recommendations were chosen among, where lateness is not one measure per
    /// record (sessions); empty when they are quantiles of the measure.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub delays_tried: Vec<Millis>,
    /// The drift series' event-time bucket.
    pub drift_bucket_ms: Millis,
    pub drift: Vec<DriftRow>,
    pub dropped_buckets: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// With delays tried, each record's verdicts are counted as given (the asked-for delays
    /// shown, the tried ones not), and a recommendation is the smallest delay, asked for or
    /// tried, whose late count meets the target; past every one, the largest, marked.
    #[test]
    fn tried_delays_recommend_the_smallest_that_meets_the_target() {
        let mut p = Profile::new(vec![30], vec![50.0, 90.0, 100.0], 1000).trying(&[0, 10, 60]);
        assert_eq!(p.delays(), &[30, 0, 10, 60]);
        // Ten records: late at 0 for 6, at 10 for 4, at 30 for 1, at 60 for 1.
        for i in 0..10 {
            let late = [i < 1, i < 6, i < 4, i < 1];
            p.record_judged(None, (i, i), 0, Late::Verdicts(&late));
        }
        let r = p.report(0);
        let shown: Vec<(Millis, u64)> = (r.overall.late_for_delay.iter())
            .map(|l| (l.delay_ms, l.late))
            .collect();
        assert_eq!(shown, vec![(30, 1)]);
        assert_eq!(r.delays_tried, vec![0, 10, 60]);
        let recs: Vec<(Millis, bool)> = (r.overall.recommended.iter())
            .map(|r| (r.delay_ms, r.above_tried))
            .collect();
        // 50%: 5 may be late, so 10 (4 late); 90%: 1 may be, so 30; 100%: none meets.
        assert_eq!(recs, vec![(10, false), (30, false), (60, true)]);
        assert_eq!(
            r.drift[0].late, 1,
            "the drift follows the first delay asked for"
        );
    }

    /// A wide slot's value is the lowest of the histogram bucket of every value put in that
    /// slot, and each bucket has a slot of its own.
    #[test]
    fn wide_slots_are_the_histograms_buckets() {
        let h = Histogram::<u64>::new(3).expect("3 digits");
        let top = (EXACT as u64) << WIDE;
        let mut last = None;
        for value in (0..EXACT as u64 + 10).chain((EXACT as u64..top + 3000).step_by(7)) {
            let Some(slot) = wide_slot(value) else {
                assert!(value < EXACT as u64 || value >= top, "{value}");
                continue;
            };
            assert!(slot < WIDE as usize * EXACT / 2);
            assert_eq!(wide_value(slot), h.lowest_equivalent(value), "{value}");
            let bucket = h.lowest_equivalent(value);
            if let Some((s, b)) = last {
                assert_eq!(s == slot, b == bucket, "{value}");
            }
            last = Some((slot, bucket));
        }
    }

    proptest! {
        /// A recorder's histogram, the overall one's (with its array) or a group's (values,
        /// then a histogram past `FEW`), is the one every value recorded straight into an
        /// hdrhistogram gives, values under 2,048 and above, read any number of times; so is
        /// one that added another's values, and one taken back from its histogram.
        #[test]
        fn a_recorder_reads_as_the_histogram_itself(
            values in prop::collection::vec(prop_oneof![0i64..2_100, 0i64..100_000_000], 0..2_500),
            split in any::<prop::sample::Index>(),
            overall in any::<bool>(),
            other_overall in any::<bool>(),
        ) {
            let direct = |values: &[i64]| {
                let mut h = Histogram::<u64>::new(3).expect("3 digits");
                values.iter().for_each(|&v| h.record(v as u64).expect("auto-resizing"));
                h
            };
            let same = |r: &Recorder, h: &Histogram<u64>| -> Result<(), TestCaseError> {
                prop_assert_eq!(&*r.folded(), h);
                prop_assert_eq!(encode_histogram(&r.folded()), encode_histogram(h));
                prop_assert_eq!(r.folded().max(), h.max());
                Ok(())
            };
            let mut recorder = Recorder::new(overall);
            values.iter().for_each(|&v| recorder.record(v));
            same(&recorder, &direct(&values))?;
            same(&Recorder::of(recorder.folded().into_owned(), overall), &direct(&values))?;
            let (mine, theirs) = values.split_at(split.index(values.len() + 1));
            let (mut a, mut b) = (Recorder::new(overall), Recorder::new(other_overall));
            mine.iter().for_each(|&v| a.record(v));
            theirs.iter().for_each(|&v| b.record(v));
            a.add(&b);
            same(&a, &direct(&values))?;
        }

        /// The drift series counts every record in its bucket, however the records jump
        /// between buckets.
        #[test]
        fn drift_counts_every_record(records in prop::collection::vec((0i64..5_000, 0i64..300), 1..300)) {
            let mut p = Profile::new(vec![100], vec![99.0], 1000);
            let mut expected: BTreeMap<Millis, (u64, u64)> = BTreeMap::new();
            for &(event, out_of_order) in &records {
                p.record(None, event, event, out_of_order);
                let e = expected.entry(event - event % 1000).or_default();
                e.0 += 1;
                e.1 += (out_of_order > 100) as u64;
            }
            let got: Vec<(u64, u64)> = p.report(0).drift.iter().map(|r| (r.count, r.late)).collect();
            let want: Vec<(u64, u64)> = expected.into_values().collect();
            prop_assert_eq!(got, want);
        }

        /// A group's report, read from its values in order while it has few, is the one its
        /// histogram gives: the overall distribution's, of the same records.
        #[test]
        fn a_group_of_few_reports_as_its_histogram(
            records in prop::collection::vec((-500i64..100_000_000, prop_oneof![0i64..3_000, 0i64..100_000_000]), 1..1_024),
            targets in prop::collection::vec(prop_oneof![0.0f64..=100.0, Just(99.9), Just(100.0)], 1..4),
        ) {
            let mut p = Profile::new(vec![100, 5_000], targets, 1000);
            for &(lateness, ooo) in &records {
                p.record(Some("g"), 0, lateness, ooo);
            }
            let r = p.report(0);
            prop_assert_eq!(&r.groups["g"], &r.overall);
        }

        /// A profile saved at any record and restored goes on to the report one profile
        /// would have given (groups on both sides of `FEW` records).
        #[test]
        fn a_restored_profile_reports_as_one_that_never_stopped(
            records in prop::collection::vec((0i64..50_000, -500i64..5_000, 0i64..3_000, 0u8..3), 1..3_000),
            cut in 0usize..3_000,
        ) {
            let feed = |p: &mut Profile, rs: &[(i64, i64, i64, u8)]| {
                for &(event, lateness, ooo, g) in rs {
                    let group = format!("g{g}");
                    p.record(Some(&group), event, event + lateness, ooo);
                }
            };
            let new = || Profile::new(vec![100, 1000], vec![50.0, 99.0], 1000);
            let mut whole = new();
            feed(&mut whole, &records);
            let cut = cut.min(records.len());
            let mut before = new();
            feed(&mut before, &records[..cut]);
            let state: ProfileState =
                serde_json::from_slice(&serde_json::to_vec(&before.state()).unwrap()).unwrap();
            let mut after = new();
            after.restore(state).unwrap();
            feed(&mut after, &records[cut..]);
            prop_assert_eq!(after.report(3), whole.report(3));
        }

        /// Profiles of the records of each partition, merged, report and save as one profile
        /// of all the records (out-of-orderness being each partition's own; groups on both
        /// sides of `FEW` records).
        #[test]
        fn merged_partition_profiles_report_as_one_profile(
            records in prop::collection::vec((0i64..50_000, -500i64..5_000, 0i64..3_000, 0u8..3, 0u8..3), 1..4_000),
        ) {
            let new = || Profile::new(vec![100, 1000], vec![50.0, 99.0], 1000);
            let mut whole = new();
            let mut parts = [new(), new(), new()];
            for &(event, lateness, ooo, g, partition) in &records {
                let group = format!("g{g}");
                whole.record(Some(&group), event, event + lateness, ooo);
                parts[partition as usize].record(Some(&group), event, event + lateness, ooo);
            }
            let mut merged = new();
            for p in &parts {
                merged.merge(p);
            }
            prop_assert_eq!(merged.report(3), whole.report(3));
            prop_assert_eq!(merged.state(), whole.state());
        }
    }

    #[test]
    fn recommendation_is_the_out_of_order_quantile_and_late_counts_are_exact() {
        let mut p = Profile::new(vec![10, 100], vec![50.0, 99.0], 1000);
        // Out-of-orderness 0..=999: 989 are above 10, 899 above 100.
        for i in 0..1000 {
            p.record(Some("a"), 5000 - i, 5000, i);
        }
        let r = p.report(0);
        let rec: Vec<Millis> = r.overall.recommended.iter().map(|x| x.delay_ms).collect();
        assert!((rec[0] - 499).abs() <= 1, "{rec:?}");
        assert!((rec[1] - 989).abs() <= 1, "{rec:?}");
        assert_eq!(r.overall.late_for_delay[0].late, 989);
        assert_eq!(r.overall.late_for_delay[1].late, 899);
        assert_eq!(r.groups["a"], r.overall);
    }

    /// Past 2,048 ms a histogram bucket spans several values: the quantiles stay inside the
    /// exact extremes, and a recommendation is never below the exact quantile.
    #[test]
    fn quantiles_stay_within_what_was_seen_and_recommendations_never_fall_short() {
        let mut p = Profile::new(vec![], vec![50.0, 100.0], 1000);
        // Lateness of about 336 days, in one bucket some 16 million ms wide.
        // Out-of-orderness: 0 for the first record (nothing came before it), then about 50 s.
        for (lateness, out_of_order) in [
            (29_037_663_010, 0),
            (29_037_673_010, 50_001),
            (29_037_683_010, 50_002),
            (29_037_733_010, 50_003),
        ] {
            p.record(None, 0, lateness, out_of_order);
        }
        let r = p.report(0).overall;
        for q in &r.lateness {
            assert!((29_037_663_010..=29_037_733_010).contains(&q.ms), "{q:?}");
        }
        for q in &r.out_of_order {
            assert!((0..=50_003).contains(&q.ms), "{q:?}");
        }
        // Nearest rank: the 50th percentile of the four is the second, 50,001 (in a bucket
        // 32 ms wide); the 100th, 50,003.
        let rec: Vec<Millis> = r.recommended.iter().map(|x| x.delay_ms).collect();
        assert!((50_001..50_001 + 32).contains(&rec[0]), "{rec:?}");
        assert_eq!(rec[1], 50_003, "the exact maximum caps the bucket's top");
    }

    #[test]
    fn negative_lateness_and_drift_flags() {
        let mut p = Profile::new(vec![100], vec![99.0], 1000);
        for b in 0..10 {
            for i in 0..100 {
                // Bucket 7 is much later than the others.
                let ooo = if b == 7 && i < 50 {
                    500
                } else if i == 0 {
                    200
                } else {
                    0
                };
                p.record(
                    None,
                    b * 1000 + i,
                    b * 1000 + i + if i == 1 { -5 } else { 3 },
                    ooo,
                );
            }
        }
        let r = p.report(2);
        assert_eq!(r.no_time, 2);
        assert!((r.overall.negative_lateness_share - 0.01).abs() < 1e-9);
        assert_eq!(r.overall.lateness_min_ms, Some(-5));
        let flagged: Vec<&str> = r
            .drift
            .iter()
            .filter(|d| d.flagged)
            .map(|d| d.bucket_start.as_str())
            .collect();
        assert_eq!(flagged, ["1970-01-01T00:00:07.000Z"]);
    }

    #[test]
    fn log_buckets_cover_every_record() {
        let mut p = Profile::new(vec![], vec![], 1000);
        for l in [0, 1, 2, 3, 900, 70_000] {
            p.record(None, 0, l, 0);
        }
        let buckets = p.report(0).overall.lateness_histogram;
        assert_eq!(buckets.iter().map(|b| b.count).sum::<u64>(), 6);
        assert_eq!(
            buckets[0],
            LogBucket {
                from_ms: 0,
                to_ms: 1,
                count: 1
            }
        );
    }
}
