//! Window aggregates. Every state can be merged, which session windows need.
//!
//! Sums, minima, maxima and averages are exact decimals, so the result does not depend on
//! the order events arrive in (a float sum would). Null or missing values are ignored, as SQL
//! aggregates do; the record still counts in `count`.

use std::str::FromStr;

use cardinality_estimator::CardinalityEstimator;
use hdrhistogram::Histogram;
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;
use rustc_hash::FxHashSet;
#[cfg(test)]
use serde_json::{Map, Value};

use serde::{Deserialize, Serialize};

use super::record::{FieldPath, Scalar};
use super::saved;
use super::time::Millis;

#[derive(Clone, Debug, PartialEq)]
pub enum AggKind {
    Count,
    Sum,
    Min,
    Max,
    Avg,
    Distinct,
    /// Percentiles to report, each in (0, 100].
    Percentile(Vec<f64>),
    First,
    Last,
}

/// One requested aggregate: its kind, the value field it reads (by index into the command's
/// value fields) and its output name.
#[derive(Clone, Debug, PartialEq)]
pub struct AggSpec {
    pub kind: AggKind,
    pub field: Option<usize>,
    pub name: String,
}

impl AggSpec {
    /// Every column this aggregate can write.
    pub fn columns(&self) -> Vec<String> {
        match &self.kind {
            AggKind::Distinct => vec![self.name.clone(), estimated_column(&self.name)],
            AggKind::Percentile(ps) => ps
                .iter()
                .map(|p| percentile_column(&self.name, *p))
                .collect(),
            _ => vec![self.name.clone()],
        }
    }
}

/// Distinct values kept exactly per window and key before switching to an estimate.
pub const DISTINCT_EXACT_LIMIT: usize = 10_000;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Distinct {
    Exact(FxHashSet<Box<str>>),
    Estimated(Box<CardinalityEstimator<str>>),
    /// Only the answer, for a result row (see `AggState::summary`).
    Counted {
        count: u64,
        estimated: bool,
    },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum AggState {
    Count(u64),
    /// Sum and average: the exact sum and how many values it holds.
    Sum {
        #[serde(with = "saved::decimal")]
        sum: Decimal,
        n: u64,
    },
    Min(#[serde(with = "saved::option_decimal")] Option<Decimal>),
    Max(#[serde(with = "saved::option_decimal")] Option<Decimal>),
    /// Boxed, as is `Percentile`: every window holds its states in its own entry, and these
    /// rarer states would make every state (and so every window) a word larger.
    Distinct(Box<Distinct>),
    Percentile(Box<Quantiles>),
    /// First/last by event time: the time and the value's JSON text.
    ByTime(Option<(Millis, Box<str>)>),
}

/// Percentile values are recorded in thousandths, as hdrhistogram counts integers.
const PERCENTILE_SCALE: f64 = 1000.0;

/// A window's values for `--percentile`: the values themselves while there are few (exact, 8
/// bytes each), then a histogram (3 significant digits). A histogram takes 16 KiB or more
/// however little it holds: across 66k open windows that was 5 GiB.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Quantiles {
    Few(Vec<u64>),
    Many(#[serde(with = "saved::histogram")] Box<Histogram<u64>>),
    /// Only the answers, one per requested percentile, for a result row (see
    /// `AggState::summary`).
    Picked(Vec<Option<u64>>),
}

/// Values kept as they are (2 KiB) before a window's percentiles move to a histogram.
const FEW_VALUES: usize = 256;

impl Quantiles {
    fn record(&mut self, value: u64) {
        match self {
            Quantiles::Few(values) if values.len() < FEW_VALUES => values.push(value),
            Quantiles::Few(values) => {
                let mut h = Histogram::new(3).expect("3 significant digits");
                for v in values.drain(..).chain([value]) {
                    record_saturating(&mut h, v);
                }
                *self = Quantiles::Many(Box::new(h));
            }
            Quantiles::Many(h) => record_saturating(h, value),
            Quantiles::Picked(_) => unreachable!("a summary is only written"),
        }
    }

    fn merge(&mut self, other: Quantiles) {
        match other {
            Quantiles::Picked(_) => unreachable!("a summary is only written"),
            Quantiles::Few(values) => values.into_iter().for_each(|v| self.record(v)),
            Quantiles::Many(theirs) => match self {
                Quantiles::Many(mine) => mine
                    .add(&*theirs)
                    .expect("histograms of the same precision merge"),
                Quantiles::Picked(_) => unreachable!("a summary is only written"),
                Quantiles::Few(values) => {
                    let mut merged = theirs;
                    for &v in values.iter() {
                        record_saturating(&mut merged, v);
                    }
                    *self = Quantiles::Many(merged);
                }
            },
        }
    }

    /// The nearest-rank percentile: exact among few values, else as `percentile_of`.
    #[cfg(test)]
    fn percentile(&self, p: f64) -> Option<u64> {
        self.answers(&[p])[0]
    }

    /// The nearest-rank percentiles `ps`, in order (the few values are sorted once).
    fn answers(&self, ps: &[f64]) -> Vec<Option<u64>> {
        match self {
            Quantiles::Few(values) => {
                let mut sorted = values.clone();
                sorted.sort_unstable();
                ps.iter().map(|p| at_nearest_rank(&sorted, *p)).collect()
            }
            Quantiles::Many(h) => percentiles_of(h, ps).into_iter().map(Some).collect(),
            Quantiles::Picked(answers) => answers.clone(),
        }
    }
}

/// The histogram grows to fit; past its hard limit it saturates.
fn record_saturating(h: &mut Histogram<u64>, value: u64) {
    if h.record(value).is_err() {
        h.saturating_record(value);
    }
}

/// `-123.45`-shaped literals (up to 18 characters after the sign) without rust_decimal's general parser, which
/// costs several times more on the hot path; anything else returns `None`.
#[inline]
pub fn plain_decimal(text: &[u8]) -> Option<Decimal> {
    let (negative, digits) = match text {
        [b'-', rest @ ..] => (true, rest),
        rest => (false, rest),
    };
    // 18 characters hold at most 18 digits: no i64 overflow.
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut mantissa: i64 = 0;
    let mut add_digits = |part: &[u8]| {
        part.iter().all(|&c| {
            let digit = c.wrapping_sub(b'0');
            mantissa = mantissa * 10 + digit as i64;
            digit < 10
        })
    };
    // The integer part, then, after a dot, at least one fraction digit.
    let dot = digits.iter().position(|&c| c == b'.');
    let (whole, fraction) = match dot {
        None => (digits, &[][..]),
        Some(at) => (&digits[..at], &digits[at + 1..]),
    };
    if whole.is_empty() || (dot.is_some() && fraction.is_empty()) {
        return None;
    }
    if !(add_digits(whole) && add_digits(fraction)) {
        return None;
    }
    let mantissa = if negative { -mantissa } else { mantissa };
    Some(Decimal::new(mantissa, fraction.len() as u32))
}

/// Parses a number or numeric string exactly.
pub fn parse_decimal(scalar: &Scalar<'_>) -> Result<Decimal, String> {
    let text = match scalar {
        Scalar::Number(n) => *n,
        Scalar::Str(s) => s.as_ref(),
        other => return Err(format!("is {}, not a number", other.kind())),
    };
    if let Some(d) = plain_decimal(text.as_bytes()) {
        return Ok(d);
    }
    let parsed = if text.contains(['e', 'E']) {
        Decimal::from_scientific(text)
    } else {
        Decimal::from_str(text)
    };
    parsed.map_err(|_| {
        format!(
            "value {} is not a number weir can add exactly",
            crate::core::time::truncate_for_message(text)
        )
    })
}

/// A record's value for one aggregate, parsed once and checked before any state changes.
#[derive(Clone, Debug)]
pub enum AggInput<'a> {
    /// Missing or null: ignored, as SQL aggregates ignore NULL.
    Missing,
    Number(Decimal),
    /// The value's raw JSON text.
    Json(&'a str),
}

impl AggKind {
    pub fn numeric(&self) -> bool {
        matches!(
            self,
            AggKind::Sum | AggKind::Min | AggKind::Max | AggKind::Avg | AggKind::Percentile(_)
        )
    }
}

/// Parses and checks a record's value for `kind`; an error makes the record bad.
#[inline]
pub fn prepare<'a>(kind: &AggKind, value: Option<&'a str>) -> Result<AggInput<'a>, String> {
    let Some(raw) = value else {
        return Ok(AggInput::Missing);
    };
    if *kind == AggKind::Count {
        return Ok(AggInput::Missing);
    }
    // Most values are plain JSON numbers, read here as `parse_decimal` would read them.
    if kind.numeric() {
        if let Some(v) = plain_decimal(raw.as_bytes()) {
            return number_input(kind, v);
        }
    }
    let scalar = Scalar::from_raw(raw);
    if scalar == Scalar::Null {
        return Ok(AggInput::Missing);
    }
    if !kind.numeric() {
        return Ok(AggInput::Json(raw));
    }
    number_input(kind, parse_decimal(&scalar)?)
}

/// `prepare` for a value whose plain decimal was read already (on the reader's thread).
#[inline]
pub fn prepare_read<'a>(
    kind: &AggKind,
    value: Option<&'a str>,
    read: Option<Decimal>,
) -> Result<AggInput<'a>, String> {
    match read {
        Some(v) if kind.numeric() => number_input(kind, v),
        _ => prepare(kind, value),
    }
}

#[inline]
fn number_input<'a>(kind: &AggKind, v: Decimal) -> Result<AggInput<'a>, String> {
    if matches!(kind, AggKind::Percentile(_)) && v.is_sign_negative() && !v.is_zero() {
        return Err(format!("percentiles need non-negative numbers, got {v}"));
    }
    Ok(AggInput::Number(v))
}

impl AggState {
    pub fn new(kind: &AggKind) -> AggState {
        match kind {
            AggKind::Count => AggState::Count(0),
            AggKind::Sum | AggKind::Avg => AggState::Sum {
                sum: Decimal::ZERO,
                n: 0,
            },
            AggKind::Min => AggState::Min(None),
            AggKind::Max => AggState::Max(None),
            AggKind::Distinct => {
                AggState::Distinct(Box::new(Distinct::Exact(FxHashSet::default())))
            }
            AggKind::Percentile(_) => AggState::Percentile(Box::new(Quantiles::Few(Vec::new()))),
            AggKind::First | AggKind::Last => AggState::ByTime(None),
        }
    }

    /// Adds one record's prepared value at event time `ts`. Cannot fail: `prepare` checked it.
    /// Counts and sums, the commonest aggregates, are updated in the caller's code; the
    /// others through a call.
    #[inline(always)]
    pub fn update(&mut self, kind: &AggKind, input: &AggInput<'_>, ts: Millis) {
        match (self, input) {
            (AggState::Count(n), _) => *n += 1,
            (_, AggInput::Missing) => {}
            (AggState::Sum { sum, n }, AggInput::Number(v)) => {
                *sum = add_saturating(*sum, *v);
                *n += 1;
            }
            (state, input) => state.update_other(kind, input, ts),
        }
    }

    fn update_other(&mut self, kind: &AggKind, input: &AggInput<'_>, ts: Millis) {
        match (self, input) {
            (AggState::Min(m), AggInput::Number(v)) => *m = Some(m.map_or(*v, |m| m.min(*v))),
            (AggState::Max(m), AggInput::Number(v)) => *m = Some(m.map_or(*v, |m| m.max(*v))),
            (AggState::Percentile(q), AggInput::Number(v)) => {
                let scaled = (v.to_f64().unwrap_or(f64::MAX) * PERCENTILE_SCALE).round();
                q.record(scaled.clamp(0.0, u64::MAX as f64) as u64);
            }
            // By JSON text: the string "1" and the number 1 are different values.
            (AggState::Distinct(d), AggInput::Json(raw)) => d.insert(raw),
            (AggState::ByTime(slot), AggInput::Json(raw)) => {
                let replace = match (kind, &slot) {
                    (_, None) => true,
                    // Ties keep the first arrival for `first` and the latest for `last`.
                    (AggKind::First, Some((t, _))) => ts < *t,
                    (_, Some((t, _))) => ts >= *t,
                };
                if replace {
                    *slot = Some((ts, (*raw).into()));
                }
            }
            (state, input) => unreachable!("{state:?} given {input:?}"),
        }
    }

    /// What a result row needs of this state: the state itself where that is small, else
    /// only its answers. Rows re-emitted per record (`--emit updates`, late updates) would
    /// otherwise copy a whole distinct set or value list every time.
    pub fn summary(&self, kind: &AggKind) -> AggState {
        match (self, kind) {
            (AggState::Distinct(d), _) if !matches!(**d, Distinct::Counted { .. }) => {
                AggState::Distinct(Box::new(Distinct::Counted {
                    count: d.count(),
                    estimated: d.is_estimated(),
                }))
            }
            (AggState::Percentile(q), AggKind::Percentile(ps)) => {
                AggState::Percentile(Box::new(Quantiles::Picked(q.answers(ps))))
            }
            (state, _) => state.clone(),
        }
    }

    /// Folds `other` (the same kind of aggregate, over other records) into `self`.
    pub fn merge(&mut self, kind: &AggKind, other: AggState) {
        match (self, other) {
            (AggState::Count(a), AggState::Count(b)) => *a += b,
            (AggState::Sum { sum, n }, AggState::Sum { sum: s2, n: n2 }) => {
                *sum = sum.saturating_add(s2);
                *n += n2;
            }
            (AggState::Min(a), AggState::Min(b)) => *a = min_opt(*a, b, Decimal::min),
            (AggState::Max(a), AggState::Max(b)) => *a = min_opt(*a, b, Decimal::max),
            (AggState::Distinct(a), AggState::Distinct(b)) => a.merge(*b),
            (AggState::Percentile(a), AggState::Percentile(b)) => a.merge(*b),
            (AggState::ByTime(a), AggState::ByTime(b)) => {
                if let Some((tb, vb)) = b {
                    let take = match (&a, kind) {
                        (None, _) => true,
                        (Some((ta, _)), AggKind::First) => tb < *ta,
                        (Some((ta, _)), _) => tb >= *ta,
                    };
                    if take {
                        *a = Some((tb, vb));
                    }
                }
            }
            _ => unreachable!("merging aggregates of different kinds"),
        }
    }

    /// Writes this aggregate's output column(s) to `out`.
    pub fn output(&self, spec: &AggSpec, out: &mut impl Columns) {
        let name = &spec.name;
        let decimal = |d: &Decimal| Cell::Decimal(normalized(d));
        match (self, &spec.kind) {
            (AggState::Count(n), _) => out.put(name, Cell::U64(*n)),
            (AggState::Sum { sum, n }, AggKind::Avg) => {
                let avg = (*n > 0).then(|| decimal(&(*sum / Decimal::from(*n)).round_dp(12)));
                out.put(name, avg.unwrap_or(Cell::Null));
            }
            (AggState::Sum { sum, n }, _) => {
                out.put(name, if *n > 0 { decimal(sum) } else { Cell::Null })
            }
            (AggState::Min(m) | AggState::Max(m), _) => {
                out.put(name, m.as_ref().map_or(Cell::Null, decimal))
            }
            (AggState::Distinct(d), _) => {
                out.put(name, Cell::U64(d.count()));
                if d.is_estimated() {
                    out.put(&estimated_column(name), Cell::Bool(true));
                }
            }
            (AggState::Percentile(q), AggKind::Percentile(ps)) => {
                for (p, answer) in ps.iter().zip(q.answers(ps)) {
                    let v = answer.map(|v| v as f64 / PERCENTILE_SCALE);
                    out.put(
                        &percentile_column(name, *p),
                        v.map_or(Cell::Null, Cell::F64),
                    );
                }
            }
            (AggState::ByTime(slot), _) => {
                out.put(
                    name,
                    slot.as_ref()
                        .map_or(Cell::Null, |(_, text)| Cell::Json(text)),
                );
            }
            (AggState::Percentile(_), _) => unreachable!("percentile state with another kind"),
        }
    }
}

/// `d` without trailing zeros after the point, as `Decimal::normalize`; most sums have none
/// to strip, and checking the last digit is far cheaper than the general division.
fn normalized(d: &Decimal) -> Decimal {
    // A nonzero last digit, or a nonzero integer: nothing to strip, and not a negative zero
    // (which normalising turns into zero).
    if d.mantissa() % 10 != 0 || (d.scale() == 0 && !d.is_zero()) {
        *d
    } else {
        d.normalize()
    }
}

/// One output value.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell<'a> {
    U64(u64),
    Decimal(Decimal),
    F64(f64),
    Bool(bool),
    /// Raw JSON text, written as it is.
    Json(&'a str),
    /// An instant, written as RFC 3339 UTC with milliseconds.
    Time(Millis),
    Null,
}

/// Where output columns go: a JSON map (for CSV and tests) or JSON bytes (the NDJSON path).
pub trait Columns {
    fn put(&mut self, name: &str, value: Cell<'_>);
}

/// A row that puts its own columns, in order.
pub trait ToColumns {
    fn fill(&self, out: &mut impl Columns);
}

/// Rows as JSON maps, for tests that compare them with `json!` values.
#[cfg(test)]
impl Columns for Map<String, Value> {
    fn put(&mut self, name: &str, value: Cell<'_>) {
        let v = match value {
            Cell::U64(n) => Value::from(n),
            Cell::Decimal(d) => {
                let text = d.to_string();
                serde_json::from_str(&text).unwrap_or(Value::String(text))
            }
            Cell::F64(f) => Value::from(f),
            Cell::Bool(b) => Value::Bool(b),
            Cell::Json(text) => {
                serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
            }
            Cell::Time(ms) => Value::String(crate::core::time::format_millis(ms)),
            Cell::Null => Value::Null,
        };
        self.insert(name.to_string(), v);
    }
}

/// Appends `"name":value` pairs (comma-separated) to an NDJSON line being built.
pub struct JsonColumns<'b> {
    pub out: &'b mut Vec<u8>,
    /// Every column name is known to need no JSON escaping (checked once, up front).
    pub plain_names: bool,
}

/// Whether `name` can be written between quotes as it is.
pub fn is_plain_name(name: &str) -> bool {
    name.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl Columns for JsonColumns<'_> {
    fn put(&mut self, name: &str, value: Cell<'_>) {
        use std::io::Write;
        let out = &mut *self.out;
        if out.last() != Some(&b'{') {
            out.push(b',');
        }
        if self.plain_names || is_plain_name(name) {
            out.push(b'"');
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":");
        } else {
            serde_json::to_writer(&mut *out, name).expect("a string serialises");
            out.push(b':');
        }
        let _ = match value {
            Cell::U64(n) => out.write_all(itoa::Buffer::new().format(n).as_bytes()),
            Cell::Decimal(d) => {
                write_decimal(&d, out);
                Ok(())
            }
            Cell::F64(f) => serde_json::to_writer(&mut *out, &f).map_err(std::io::Error::from),
            Cell::Bool(b) => write!(out, "{b}"),
            Cell::Json(text) => out.write_all(text.as_bytes()),
            Cell::Time(ms) => {
                out.push(b'"');
                crate::core::time::write_millis(ms, out);
                out.write_all(b"\"")
            }
            Cell::Null => out.write_all(b"null"),
        };
    }
}

/// `a + b`, saturating at `Decimal::MIN`/`MAX`: `Decimal::saturating_add`, bit for bit.
///
/// Values of one scale (amounts with a fixed number of decimals) add as integers. That is
/// not only fewer instructions: `checked_add` builds its result in memory a 32-bit part at a
/// time, and copying it into the state as one 16-byte value waits for those stores to land.
#[inline(always)]
pub fn add_saturating(a: Decimal, b: Decimal) -> Decimal {
    // As `checked_add`: a zero plus `b` is `b`, bit for bit (`0 + -0` is `-0`).
    if a.is_zero() {
        return b;
    }
    if a.scale() == b.scale() {
        // Mantissas are at most 96 bits, so the i128 sum cannot overflow.
        let sum = a.mantissa() + b.mantissa();
        if let Ok(sum) = Decimal::try_from_i128_with_scale(sum, a.scale()) {
            return sum;
        }
    }
    a.saturating_add(b)
}

/// Writes `d` as its `Display` does (every digit of its scale kept), without the formatting
/// machinery: this runs for every aggregate of every result row.
pub fn write_decimal(d: &Decimal, out: &mut Vec<u8>) {
    if d.is_sign_negative() {
        out.push(b'-');
    }
    let mut digits = itoa::Buffer::new();
    let mantissa = d.mantissa().unsigned_abs();
    // Most mantissas fit 64 bits, whose digits come without 128-bit divisions.
    let digits = match u64::try_from(mantissa) {
        Ok(small) => digits.format(small),
        Err(_) => digits.format(mantissa),
    }
    .as_bytes();
    let scale = d.scale() as usize;
    if scale == 0 {
        out.extend_from_slice(digits);
    } else if digits.len() > scale {
        let (whole, fraction) = digits.split_at(digits.len() - scale);
        out.extend_from_slice(whole);
        out.push(b'.');
        out.extend_from_slice(fraction);
    } else {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + scale - digits.len(), b'0');
        out.extend_from_slice(digits);
    }
}

/// One nearest-rank percentile, a walk of the counts for each: the oracle the tests hold
/// `percentiles_of` to.
#[cfg(test)]
fn percentile_of(h: &Histogram<u64>, p: f64) -> u64 {
    h.median_equivalent(nearest_rank_value(h, p))
}

/// One percentile's bucket top: the tests' oracle for `percentile_upper_bounds`.
#[cfg(test)]
fn percentile_upper_bound(h: &Histogram<u64>, p: f64) -> u64 {
    h.highest_equivalent(nearest_rank_value(h, p))
}

/// The nearest-rank percentiles `ps` (rank `ceil(p/100 * n)`, as SQL's `percentile_disc`,
/// computed exactly: hdrhistogram's own float product would turn 0.999 * 1000 into rank 1000),
/// each reported as the middle of its histogram bucket; `ps` in any order, answered from one
/// walk of the counts.
pub fn percentiles_of(h: &Histogram<u64>, ps: &[f64]) -> Vec<u64> {
    let values = nearest_rank_values(h, ps);
    values.into_iter().map(|v| h.median_equivalent(v)).collect()
}

/// The top of the bucket holding each nearest-rank percentile of `ps`, never below the exact
/// value; from one walk of the counts.
pub fn percentile_upper_bounds(h: &Histogram<u64>, ps: &[f64]) -> Vec<u64> {
    let values = nearest_rank_values(h, ps);
    values
        .into_iter()
        .map(|v| h.highest_equivalent(v))
        .collect()
}

/// A value in the bucket of each nearest-rank percentile of `ps`: the ranks are put in order,
/// so that hdrhistogram can answer them all in one walk. An empty histogram answers 0.
fn nearest_rank_values(h: &Histogram<u64>, ps: &[f64]) -> Vec<u64> {
    let n = h.len();
    if n == 0 {
        return vec![0; ps.len()];
    }
    let ranks: Vec<u64> = ps.iter().map(|p| nearest_rank(*p, n)).collect();
    let mut order: Vec<usize> = (0..ps.len()).collect();
    order.sort_unstable_by_key(|&i| ranks[i]);
    let quantiles = order.iter().map(|&i| (ranks[i] as f64 - 0.5) / n as f64);
    let mut values = vec![0; ps.len()];
    for (&i, v) in order.iter().zip(h.value_at_quantiles(quantiles)) {
        values[i] = v;
    }
    values
}

/// A value in the bucket of the nearest-rank percentile.
#[cfg(test)]
fn nearest_rank_value(h: &Histogram<u64>, p: f64) -> u64 {
    let n = h.len();
    let rank = nearest_rank(p, n);
    h.value_at_quantile((rank as f64 - 0.5) / n as f64)
}

/// The value at the nearest rank of percentile `p` among `sorted` (ascending); none when empty.
pub fn at_nearest_rank(sorted: &[u64], p: f64) -> Option<u64> {
    let n = sorted.len() as u64;
    (n > 0).then(|| sorted[nearest_rank(p, n) as usize - 1])
}

/// `ceil(p/100 * n)` within 1..=n, computed exactly.
fn nearest_rank(p: f64, n: u64) -> u64 {
    let exact = Decimal::from_f64_retain(p)
        .unwrap_or(Decimal::ONE_HUNDRED)
        .round_dp(6)
        * Decimal::from(n)
        / Decimal::ONE_HUNDRED;
    exact.ceil().to_u64().unwrap_or(n).clamp(1, n)
}

fn min_opt(
    a: Option<Decimal>,
    b: Option<Decimal>,
    pick: fn(Decimal, Decimal) -> Decimal,
) -> Option<Decimal> {
    match (a, b) {
        (Some(a), Some(b)) => Some(pick(a, b)),
        (a, b) => a.or(b),
    }
}

/// The flag beside a distinct count that has become an estimate.
fn estimated_column(name: &str) -> String {
    format!("{name}_estimated")
}

/// `p99` for 99, `p99_9` for 99.9.
pub fn percentile_column(base: &str, p: f64) -> String {
    let text = format!("{p}").replace('.', "_");
    match base.strip_prefix("p_") {
        Some(field) => format!("p{text}_{field}"),
        None => format!("{base}_p{text}"),
    }
}

impl Distinct {
    fn insert(&mut self, value: &str) {
        match self {
            Distinct::Exact(set) => {
                if !set.contains(value) {
                    set.insert(value.into());
                    if set.len() > DISTINCT_EXACT_LIMIT {
                        self.estimate();
                    }
                }
            }
            Distinct::Estimated(e) => e.insert(value),
            Distinct::Counted { .. } => unreachable!("a summary is only written"),
        }
    }

    /// Switches to the estimate, carrying over the values seen so far.
    fn estimate(&mut self) {
        if let Distinct::Exact(set) = self {
            let mut e = CardinalityEstimator::<str>::new();
            for v in set.iter() {
                e.insert(v);
            }
            *self = Distinct::Estimated(Box::new(e));
        }
    }

    fn merge(&mut self, other: Distinct) {
        match other {
            Distinct::Counted { .. } => unreachable!("a summary is only written"),
            Distinct::Exact(set) => {
                for v in set {
                    self.insert(&v);
                }
            }
            Distinct::Estimated(e) => {
                self.estimate();
                if let Distinct::Estimated(mine) = self {
                    mine.merge(&e);
                }
            }
        }
    }

    pub fn count(&self) -> u64 {
        match self {
            Distinct::Exact(set) => set.len() as u64,
            Distinct::Estimated(e) => e.estimate() as u64,
            Distinct::Counted { count, .. } => *count,
        }
    }

    fn is_estimated(&self) -> bool {
        match self {
            Distinct::Exact(_) => false,
            Distinct::Estimated(_) => true,
            Distinct::Counted { estimated, .. } => *estimated,
        }
    }
}

/// `--percentile amount:p50,p99,99.9` → (amount, [50, 99, 99.9]).
pub fn parse_percentile(text: &str) -> Result<(FieldPath, Vec<f64>), String> {
    let usage = || format!("--percentile {text}: expected FIELD:p50,p99 (percentiles in (0, 100])");
    let (field, list) = text.rsplit_once(':').ok_or_else(usage)?;
    let field = FieldPath::parse(field)?;
    let pcts = list
        .split(',')
        .map(|p| {
            p.trim()
                .trim_start_matches('p')
                .parse::<f64>()
                .ok()
                .filter(|p| *p > 0.0 && *p <= 100.0)
        })
        .collect::<Option<Vec<f64>>>()
        .ok_or_else(usage)?;
    Ok((field, pcts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_specs() {
        let (f, p) = parse_percentile("value.latency:p50,p99.9,99").unwrap();
        assert_eq!(f.as_str(), "value.latency");
        assert_eq!(p, vec![50.0, 99.9, 99.0]);
        assert!(parse_percentile("latency").is_err());
        assert!(parse_percentile("latency:p0").is_err());
        assert!(parse_percentile("latency:p101").is_err());
    }
    use proptest::prelude::*;

    #[test]
    fn normalized_equals_normalize() {
        for mantissa in [
            -1001i64,
            -100,
            -10,
            -1,
            0,
            1,
            7,
            10,
            120,
            1000,
            123_450,
            i64::MAX,
        ] {
            for scale in [0u32, 1, 2, 3, 28] {
                for negate in [false, true] {
                    let mut d = Decimal::new(mantissa, scale);
                    d.set_sign_negative(negate ^ d.is_sign_negative());
                    let (fast, general) = (normalized(&d), d.normalize());
                    assert_eq!(fast, general);
                    assert_eq!(fast.to_string(), general.to_string(), "{d:?}");
                }
            }
        }
    }

    fn raw(s: &str) -> &str {
        s
    }

    fn run(kind: AggKind, values: &[(&str, Millis)]) -> Value {
        let mut st = AggState::new(&kind);
        for (v, t) in values {
            let r = raw(v);
            st.update(&kind, &prepare(&kind, Some(r)).unwrap(), *t);
        }
        let spec = AggSpec {
            kind,
            field: Some(0),
            name: "x".into(),
        };
        let mut row = Map::new();
        st.output(&spec, &mut row);
        Value::Object(row)
    }

    #[test]
    fn exact_decimal_sums() {
        // 0.1 + 0.2 is 0.3 here, not 0.30000000000000004.
        assert_eq!(
            run(AggKind::Sum, &[("0.1", 0), ("0.2", 0)])["x"].to_string(),
            "0.3"
        );
        assert_eq!(
            run(AggKind::Sum, &[("1e3", 0), ("\"2.5\"", 0), ("null", 0)])["x"].to_string(),
            "1002.5"
        );
        assert_eq!(
            run(AggKind::Avg, &[("1", 0), ("2", 0)])["x"].to_string(),
            "1.5"
        );
        assert_eq!(run(AggKind::Sum, &[])["x"], Value::Null);
        assert_eq!(
            run(AggKind::Min, &[("3", 0), ("-1.5", 0), ("2", 0)])["x"].to_string(),
            "-1.5"
        );
        assert_eq!(
            run(AggKind::Max, &[("3", 0), ("-1.5", 0), ("2", 0)])["x"].to_string(),
            "3"
        );
    }

    #[test]
    fn non_numbers_are_errors() {
        assert!(prepare(&AggKind::Sum, Some(raw("\"abc\""))).is_err());
        assert!(prepare(&AggKind::Max, Some(raw("true"))).is_err());
        assert!(prepare(&AggKind::Percentile(vec![50.0]), Some(raw("-1"))).is_err());
        assert!(matches!(
            prepare(&AggKind::Sum, None),
            Ok(AggInput::Missing)
        ));
        assert!(matches!(
            prepare(&AggKind::Sum, Some(raw("null"))),
            Ok(AggInput::Missing)
        ));
        assert!(matches!(
            prepare(&AggKind::Last, Some(raw("\"abc\""))),
            Ok(AggInput::Json(_))
        ));
    }

    #[test]
    fn first_and_last_by_event_time_not_arrival() {
        let vals = [
            ("\"b\"", 20),
            ("\"a\"", 10),
            ("\"c\"", 30),
            ("\"c2\"", 30),
            ("\"a2\"", 10),
        ];
        assert_eq!(run(AggKind::First, &vals)["x"], "a");
        assert_eq!(run(AggKind::Last, &vals)["x"], "c2");
    }

    #[test]
    fn percentiles_within_precision() {
        let vals: Vec<(String, Millis)> = (1..=1000).map(|i| (i.to_string(), 0)).collect();
        let refs: Vec<(&str, Millis)> = vals.iter().map(|(v, t)| (v.as_str(), *t)).collect();
        let out = run(AggKind::Percentile(vec![50.0, 99.0, 99.9]), &refs);
        let p = |k: &str| out[k].as_f64().unwrap();
        // Exact nearest ranks are 500, 990 and 999; 3 significant digits allow 0.1%.
        for (k, exact) in [("x_p50", 500.0), ("x_p99", 990.0), ("x_p99_9", 999.0)] {
            assert!((p(k) - exact).abs() <= exact * 0.001, "{k}: {out}");
        }
        assert_eq!(percentile_column("p_amount", 99.0), "p99_amount");
    }

    /// A summary writes the same columns as the state it summarises, for every kind, with a
    /// distinct set past its exact limit and percentiles past their few values.
    #[test]
    fn summaries_write_what_their_states_write() {
        let kinds = [
            AggKind::Count,
            AggKind::Sum,
            AggKind::Avg,
            AggKind::Min,
            AggKind::Max,
            AggKind::Distinct,
            AggKind::Percentile(vec![50.0, 99.0, 99.9]),
            AggKind::First,
            AggKind::Last,
        ];
        for n in [0, 3, 300, DISTINCT_EXACT_LIMIT + 50] {
            for kind in &kinds {
                let mut state = AggState::new(kind);
                for i in 0..n {
                    let text = if kind.numeric() {
                        format!("{}.{}", i % 997, i % 10)
                    } else {
                        format!("\"v{i}\"")
                    };
                    let input = prepare(kind, Some(&text)).unwrap();
                    state.update(kind, &input, i as Millis);
                }
                let spec = AggSpec {
                    kind: kind.clone(),
                    field: Some(0),
                    name: "x".into(),
                };
                let (mut full, mut summary) = (Map::new(), Map::new());
                state.output(&spec, &mut full);
                state.summary(kind).output(&spec, &mut summary);
                assert_eq!(summary, full, "{kind:?} over {n} values");
            }
        }
    }

    /// Decimals of every size and scale, both zeros among them, most sharing a few scales.
    fn decimals() -> impl Strategy<Value = Decimal> {
        let max = (1i128 << 96) - 1;
        let mantissa = prop_oneof![
            Just(0i128),
            -1000i128..1000,
            -max..=max,
            Just(max),
            Just(-max)
        ];
        let scale = prop_oneof![0u32..3, 0u32..=28];
        (mantissa, scale, any::<bool>()).prop_map(|(m, scale, negate)| {
            let mut d = Decimal::from_i128_with_scale(m, scale);
            d.set_sign_negative(d.is_sign_negative() ^ negate);
            d
        })
    }

    /// The sum as `AggState::update` took it before `add_saturating`: `checked_add`, or the
    /// end of the range on `b`'s side (an addition overflows only when both share a sign).
    fn checked_sum(a: Decimal, b: Decimal) -> Decimal {
        a.checked_add(b).unwrap_or(if b.is_sign_negative() {
            Decimal::MIN
        } else {
            Decimal::MAX
        })
    }

    proptest! {
        /// The sum's integer path gives `checked_add`'s very bits (sign of zero and scale
        /// included), and both saturate alike.
        #[test]
        fn add_saturating_is_checked_add(a in decimals(), b in decimals()) {
            prop_assert_eq!(add_saturating(a, b).serialize(), checked_sum(a, b).serialize());
        }

        /// A value and its negation, in either order and either sign of zero, sum to
        /// `checked_add`'s zero; a value and itself, to its double or the saturated end.
        #[test]
        fn add_saturating_of_opposites_and_doubles(a in decimals()) {
            for (x, y) in [(a, -a), (-a, a), (a, a)] {
                prop_assert_eq!(add_saturating(x, y).serialize(), checked_sum(x, y).serialize(), "{} + {}", x, y);
            }
        }

        /// Few values give the exact nearest rank; many (in a histogram) stay within 0.1% of
        /// it; and merging windows, whichever form each is in, equals recording every value
        /// in one.
        #[test]
        fn quantiles_few_exact_many_within_precision(
            a in prop::collection::vec(1u64..1_000_000, 0..400),
            b in prop::collection::vec(1u64..1_000_000, 0..400),
            p in prop::sample::select(vec![1.0, 50.0, 90.0, 99.0, 99.9, 100.0]),
        ) {
            let fill = |values: &[u64]| {
                let mut q = Quantiles::Few(Vec::new());
                values.iter().for_each(|v| q.record(*v));
                q
            };
            let mut all: Vec<u64> = a.iter().chain(&b).copied().collect();
            all.sort_unstable();
            let mut merged = fill(&a);
            merged.merge(fill(&b));
            let got = merged.percentile(p);
            if all.is_empty() {
                prop_assert_eq!(got, None);
                return Ok(());
            }
            let exact = all[nearest_rank(p, all.len() as u64) as usize - 1];
            let got = got.unwrap();
            if all.len() <= FEW_VALUES {
                prop_assert_eq!(got, exact);
            } else {
                prop_assert!(got.abs_diff(exact) as f64 <= exact as f64 * 0.001 + 1.0, "{} vs {}", got, exact);
            }
            prop_assert_eq!(matches!(merged, Quantiles::Few(_)), all.len() <= FEW_VALUES);
        }
    }

    #[test]
    fn distinct_exact_then_estimated() {
        let vals: Vec<(String, Millis)> =
            (0..100).map(|i| (format!("\"v{}\"", i % 40), 0)).collect();
        let refs: Vec<(&str, Millis)> = vals.iter().map(|(v, t)| (v.as_str(), *t)).collect();
        let out = run(AggKind::Distinct, &refs);
        assert_eq!(out["x"], 40);
        assert!(out.get("x_estimated").is_none());
        let many: Vec<(String, Millis)> = (0..30_000).map(|i| (i.to_string(), 0)).collect();
        let refs: Vec<(&str, Millis)> = many.iter().map(|(v, t)| (v.as_str(), *t)).collect();
        let out = run(AggKind::Distinct, &refs);
        let n = out["x"].as_f64().unwrap();
        assert!((n - 30_000.0).abs() / 30_000.0 < 0.05, "{out}");
        assert_eq!(out["x_estimated"], true);
    }

    /// Every open window holds its states inline: a state is four words, the boxed rare ones
    /// included.
    #[test]
    fn states_stay_small() {
        assert!(std::mem::size_of::<AggState>() <= 32);
    }

    proptest! {
        /// Percentiles asked together, in any order and with repeats, are each what asking
        /// for it alone gives.
        #[test]
        fn percentiles_in_one_walk_are_each_asked_alone(
            values in prop::collection::vec(prop_oneof![0u64..3_000, 0u64..100_000_000], 1..500),
            ps in prop::collection::vec(prop_oneof![0.0f64..=100.0, Just(100.0), Just(50.0), Just(99.9)], 0..12),
        ) {
            let mut h = Histogram::<u64>::new(3).expect("3 digits");
            values.iter().for_each(|&v| h.record(v).expect("auto-resizing"));
            let alone: Vec<u64> = ps.iter().map(|p| percentile_of(&h, *p)).collect();
            prop_assert_eq!(percentiles_of(&h, &ps), alone);
            let alone: Vec<u64> = ps.iter().map(|p| percentile_upper_bound(&h, *p)).collect();
            prop_assert_eq!(percentile_upper_bounds(&h, &ps), alone);
        }
    }

    proptest! {
        /// The fast path reads every plain decimal exactly as rust_decimal does, and declines
        /// what it does not handle.
        #[test]
        fn plain_decimal_never_overflows(text in "-?[0-9]{15,25}") {
            if let Some(d) = plain_decimal(text.as_bytes()) {
                prop_assert_eq!(d, Decimal::from_str(&text).unwrap());
            }
        }

        #[test]
        fn small_decimals_written_as_displayed(m in -100_000i64..100_000, negative in any::<bool>(), scale in 0u32..=8) {
            let mut d = Decimal::new(m, scale);
            d.set_sign_negative(negative);
            let mut out = Vec::new();
            write_decimal(&d, &mut out);
            prop_assert_eq!(String::from_utf8(out).unwrap(), d.to_string());
        }

        #[test]
        fn decimals_written_as_displayed(lo in any::<u32>(), mid in any::<u32>(), hi in prop_oneof![Just(0u32), any::<u32>()], negative in any::<bool>(), scale in 0u32..=28) {
            let d = Decimal::from_parts(lo, mid, hi, negative, scale);
            let mut out = Vec::new();
            write_decimal(&d, &mut out);
            prop_assert_eq!(String::from_utf8(out).unwrap(), d.to_string());
        }

        #[test]
        fn plain_decimals_agree_with_rust_decimal(text in "-?[0-9]{1,10}(\\.[0-9]{1,8})?|[-.0-9eE+]{1,12}") {
            if let Some(d) = plain_decimal(text.as_bytes()) {
                let theirs = Decimal::from_str(&text).unwrap();
                prop_assert_eq!(d, theirs);
                prop_assert_eq!(d.scale(), theirs.scale());
            }
        }

        /// Updating in any order, or in two halves merged, gives the same output.
        #[test]
        fn order_and_merge_independent(
            values in prop::collection::vec((-10_000i64..10_000, 0u32..6, 0i64..50), 1..60),
            split in 0usize..60,
        ) {
            let texts: Vec<(String, Millis)> = values
                .iter()
                .map(|(m, scale, t)| (Decimal::new(*m, *scale).to_string(), *t))
                .collect();
            for kind in [AggKind::Count, AggKind::Sum, AggKind::Min, AggKind::Max, AggKind::Avg, AggKind::Distinct] {
                let spec = AggSpec { kind: kind.clone(), field: Some(0), name: "x".into() };
                let out = |st: &AggState| { let mut r = Map::new(); st.output(&spec, &mut r); r };
                let mut forward = AggState::new(&kind);
                let mut backward = AggState::new(&kind);
                let (mut left, mut right) = (AggState::new(&kind), AggState::new(&kind));
                for (i, (v, t)) in texts.iter().enumerate() {
                    let r = raw(v);
                    let input = prepare(&kind, Some(r)).unwrap();
                    forward.update(&kind, &input, *t);
                    let half = if i < split { &mut left } else { &mut right };
                    half.update(&kind, &input, *t);
                }
                for (v, t) in texts.iter().rev() {
                    let r = raw(v);
                    backward.update(&kind, &prepare(&kind, Some(r)).unwrap(), *t);
                }
                left.merge(&kind, right);
                prop_assert_eq!(out(&forward), out(&backward));
                prop_assert_eq!(out(&forward), out(&left));
            }
        }
    }
}
