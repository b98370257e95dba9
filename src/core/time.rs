//! Event time: parsing timestamps and durations, formatting output times.
//!
//! Internally every instant is `i64` milliseconds since the Unix epoch (UTC), as in Flink.
//! Sub-millisecond input is floored, so an instant always falls in the window that contains it.

use std::cell::Cell;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, SecondsFormat, Utc};

/// Milliseconds since 1970-01-01T00:00:00Z.
pub type Millis = i64;

/// 0000-01-01T00:00:00Z: the earliest instant an RFC 3339 output can show.
pub const MIN_MILLIS: Millis = -62_167_219_200_000;
/// 9999-12-31T23:59:59.999Z: the latest instant an RFC 3339 output can show.
pub const MAX_MILLIS: Millis = 253_402_300_799_999;

/// How `--time` values are read.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum TimeFormat {
    /// RFC 3339 strings, or epoch numbers whose unit follows from their magnitude.
    #[default]
    Auto,
    Rfc3339,
    EpochSeconds,
    EpochMillis,
    EpochMicros,
    EpochNanos,
    /// A chrono `strftime` pattern; without an offset in it the time is taken as UTC.
    Pattern(String),
}

impl FromStr for TimeFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "auto" => TimeFormat::Auto,
            "rfc3339" | "iso8601" => TimeFormat::Rfc3339,
            "s" | "epoch" | "epoch-s" => TimeFormat::EpochSeconds,
            "ms" | "epoch-ms" => TimeFormat::EpochMillis,
            "us" | "epoch-us" => TimeFormat::EpochMicros,
            "ns" | "epoch-ns" => TimeFormat::EpochNanos,
            p if p.contains('%') => {
                check_pattern(p)?;
                TimeFormat::Pattern(p.to_string())
            }
            other => {
                return Err(format!(
                    "unknown time format '{other}': use auto, rfc3339, s, ms, us, ns or a strftime pattern such as '%Y-%m-%d %H:%M:%S'"
                ))
            }
        })
    }
}

/// A pattern must be valid strftime and read an instant back from its own rendering of one:
/// a pattern without a date (`%H:%M`) would make every record bad.
fn check_pattern(pattern: &str) -> Result<(), String> {
    // 2001-02-03T04:05:06.789Z: every field tells apart from the others.
    let sample = DateTime::from_timestamp_millis(981_173_106_789).expect("in range");
    let mut text = String::new();
    // Formatting fails on what is not strftime (chrono's `Item::Error`).
    if fmt::write(&mut text, format_args!("{}", sample.format(pattern))).is_err() {
        return Err(format!("'{pattern}' is not a valid strftime pattern"));
    }
    match parse_pattern(&text, pattern) {
        Some(Ok(_)) => Ok(()),
        _ => Err(format!(
            "'{pattern}' does not name an instant: it writes 2001-02-03T04:05:06Z as '{text}', which reads back as no date and time (give at least the date)"
        )),
    }
}

/// Why a value is not a usable event time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimeError {
    Unparsable(String),
    Ambiguous(String),
    OutOfRange(String),
}

impl fmt::Display for TimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeError::Unparsable(v) => write!(f, "unparsable time {v}"),
            TimeError::Ambiguous(v) => write!(
                f,
                "ambiguous epoch time {v}: its unit cannot be told from its size; pass --time-format s|ms|us|ns"
            ),
            TimeError::OutOfRange(v) => {
                write!(f, "time {v} is out of range (years 0000 to 9999)")
            }
        }
    }
}

impl std::error::Error for TimeError {}

fn in_range(ms: i128, shown: &str) -> Result<Millis, TimeError> {
    if (MIN_MILLIS as i128..=MAX_MILLIS as i128).contains(&ms) {
        Ok(ms as Millis)
    } else {
        Err(TimeError::OutOfRange(shown.to_string()))
    }
}

/// Parses a time that arrived as a JSON string (already unescaped).
pub fn parse_time_str(s: &str, format: &TimeFormat) -> Result<Millis, TimeError> {
    let shown = || format!("\"{}\"", truncate_for_message(s));
    match format {
        TimeFormat::Auto => {
            if let Some(ms) = fast_rfc3339(s.as_bytes()) {
                return Ok(ms); // the common case, before any other look at the text
            }
            if looks_numeric(s) {
                parse_epoch(s, None).map_err(|e| relabel(e, shown()))
            } else {
                parse_rfc3339(s).ok_or_else(|| unparsable_rfc3339(s, shown()))?
            }
        }
        TimeFormat::Rfc3339 => parse_rfc3339(s).ok_or_else(|| unparsable_rfc3339(s, shown()))?,
        TimeFormat::Pattern(p) => parse_pattern(s, p)
            .ok_or_else(|| TimeError::Unparsable(format!("{} by '{p}'", shown())))?,
        unit => parse_epoch(s.trim(), Some(unit)).map_err(|e| relabel(e, shown())),
    }
}

/// Parses a time that arrived as a JSON number, given as its literal text (`1700000000123`,
/// `1.7e9`, `1700000000.5`).
pub fn parse_time_number(literal: &str, format: &TimeFormat) -> Result<Millis, TimeError> {
    match format {
        TimeFormat::Rfc3339 | TimeFormat::Pattern(_) => Err(TimeError::Unparsable(format!(
            "{literal} (a number, but --time-format expects a string)"
        ))),
        TimeFormat::Auto => parse_epoch(literal, None),
        unit => parse_epoch(literal, Some(unit)),
    }
}

/// Not RFC 3339. A date and time without a UTC offset is common (a naive ISO 8601 export);
/// weir does not guess its zone, but says how to read it as UTC. Other common layouts
/// (slashed, dotted) get the pattern that reads them; anything else the general hint.
fn unparsable_rfc3339(s: &str, shown: String) -> TimeError {
    let naive = ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
        .into_iter()
        .find(|p| chrono::NaiveDateTime::parse_from_str(s.trim(), p).is_ok());
    if let Some(p) = naive {
        return TimeError::Unparsable(format!(
            "{shown}: it has no UTC offset; to read it as UTC, pass --time-format '{p}'"
        ));
    }
    const LAYOUTS: [&str; 6] = [
        "%Y/%m/%d %H:%M:%S%.f",
        "%Y/%m/%dT%H:%M:%S%.f",
        "%d/%m/%Y %H:%M:%S%.f",
        "%d.%m.%Y %H:%M:%S%.f",
        "%Y/%m/%d %H:%M:%S%.f %z",
        "%d/%b/%Y:%H:%M:%S %z",
    ];
    let layout = LAYOUTS.into_iter().find(|p| {
        chrono::NaiveDateTime::parse_from_str(s.trim(), p).is_ok()
            || chrono::DateTime::parse_from_str(s.trim(), p).is_ok()
    });
    TimeError::Unparsable(match layout {
        // Day first or month first cannot be told from one value: the pattern says which.
        Some(p) => format!("{shown}: not RFC 3339; to read this layout, pass --time-format '{p}' (a strftime pattern: check the day and month order; without %z it is UTC)"),
        None => format!("{shown}: not RFC 3339 (2026-11-28T12:00:00Z) nor epoch digits; pass --time-format with its strftime pattern"),
    })
}

fn relabel(e: TimeError, shown: String) -> TimeError {
    match e {
        TimeError::Unparsable(_) => TimeError::Unparsable(shown),
        TimeError::Ambiguous(_) => TimeError::Ambiguous(shown),
        TimeError::OutOfRange(_) => TimeError::OutOfRange(shown),
    }
}

fn looks_numeric(s: &str) -> bool {
    let s = s.trim();
    let s = s.strip_prefix('-').unwrap_or(s);
    s.starts_with(|c: char| c.is_ascii_digit())
        && s.bytes().all(|b| {
            b.is_ascii_digit() || b == b'.' || b == b'e' || b == b'E' || b == b'+' || b == b'-'
        })
}

fn parse_rfc3339(s: &str) -> Option<Result<Millis, TimeError>> {
    if let Some(ms) = fast_rfc3339(s.as_bytes()) {
        return Some(Ok(ms));
    }
    let dt = DateTime::parse_from_rfc3339(s).ok()?;
    Some(in_range(dt.timestamp_millis() as i128, s))
}

/// The common shape `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` without chrono's generality
/// (it is the hot path of every windowed command). Anything else, including leap seconds,
/// returns `None` and goes to chrono; the property tests hold the two to the same answers.
/// `b` must be the bytes of a `str`: the hour cache starts with bytes UTF-8 never has.
pub fn fast_rfc3339(b: &[u8]) -> Option<Millis> {
    // The commonest case first, in few registers: an hour already cached and `MM:SS.mmmZ`
    // after it, read as one word and two bytes. The rest is out of line, where the registers
    // it needs were saved and restored around every call.
    if let Ok(t) = <&[u8; 24]>::try_from(b) {
        let head = t.first_chunk::<13>().expect("13 of 24 bytes");
        let tail = t[14..].first_chunk::<10>().expect("10 of 24 bytes");
        let (cached, seconds) = HOUR_START.get();
        if cached == hour_key(head) && t[13] == b':' {
            if let Some(ms) = minute_second_millis(tail) {
                let ms = seconds * 1000 + ms;
                return (MIN_MILLIS..=MAX_MILLIS).contains(&ms).then_some(ms);
            }
        }
    }
    any_rfc3339(b)
}

/// `fast_rfc3339` for any time it reads: a new hour (which it caches), or other fractions and
/// offsets.
#[inline(never)]
fn any_rfc3339(b: &[u8]) -> Option<Millis> {
    let head: &[u8; 13] = b.first_chunk::<13>()?;
    if b.len() < 20 || b[13] != b':' || b[16] != b':' {
        return None;
    }
    // Times in a stream share their date and hour: the seconds at the start of the hour are
    // kept per thread for the last `YYYY-MM-DDTHH` seen (checked when it was stored), which
    // skips the calendar math.
    let key = hour_key(head);
    let (cached, seconds) = HOUR_START.get();
    let hour_start = if cached == key {
        seconds
    } else {
        if head[4] != b'-' || head[7] != b'-' || !matches!(head[10], b'T' | b't' | b' ') {
            return None;
        }
        let seconds = hour_start_seconds(head, digits)?;
        HOUR_START.set((key, seconds));
        seconds
    };
    let tail = b[14..].first_chunk::<10>().filter(|_| b.len() == 24);
    if let Some(ms) = tail.and_then(minute_second_millis) {
        let ms = hour_start * 1000 + ms;
        return (MIN_MILLIS..=MAX_MILLIS).contains(&ms).then_some(ms);
    }
    let (minute, second) = (two_digits(b[14], b[15])?, two_digits(b[17], b[18])?);
    if minute > 59 || second > 59 {
        return None;
    }
    let instant = |millis: i64, offset_minutes: i64| {
        let seconds = hour_start + minute * 60 + second - offset_minutes * 60;
        let ms = seconds * 1000 + millis;
        (MIN_MILLIS..=MAX_MILLIS).contains(&ms).then_some(ms)
    };
    let (millis, offset_minutes) = fraction_and_offset(&b[19..])?;
    instant(millis, offset_minutes)
}

/// `YYYY-MM-DDTHH` as two overlapping words (bytes 0-7 and 5-12): compared in two steps where
/// the thirteen bytes took a dozen instructions.
#[inline(always)]
fn hour_key(head: &[u8; 13]) -> [u64; 2] {
    let word = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().expect("8 bytes"));
    [word(0), word(5)]
}

/// `MM:SS.mmmZ` as milliseconds into the hour, when it is exactly that (minutes and seconds
/// at most 59). The first eight bytes are checked and read as one little-endian word: its six
/// digits are checked together, then paired into two-digit numbers with one multiply.
fn minute_second_millis(t: &[u8; 10]) -> Option<i64> {
    const DIGITS: u64 = 0xffff_00ff_ff00_ffff; // bytes 0-1, 3-4, 6-7
    const ZEROS: u64 = 0x3030_3030_3030_3030 & DIGITS;
    const SEPARATORS: u64 = 0x0000_2e00_003a_0000; // ':' at byte 2, '.' at byte 5
    let word = u64::from_le_bytes(*t.first_chunk::<8>().expect("eight of ten bytes"));
    let high_nibbles = 0xf0f0_f0f0_f0f0_f0f0 & DIGITS;
    // A digit byte is 0x30-0x39: its high nibble is 3, and stays 3 when 6 is added.
    let digits_ok = word & high_nibbles == ZEROS
        && word.wrapping_add(0x0606_0606_0606_0606 & DIGITS) & high_nibbles == ZEROS;
    let (m3, z) = (t[8].wrapping_sub(b'0'), t[9]);
    if !digits_ok || word & !DIGITS != SEPARATORS || m3 > 9 || z != b'Z' {
        return None;
    }
    let d = (word - ZEROS) & DIGITS;
    // Byte k of `d * 10 + (d >> 8)` is digit k times ten plus digit k + 1: at most 99, so
    // no byte carries into the next.
    let pairs = d * 10 + (d >> 8);
    let (minute, second, centis) = (pairs & 0xff, (pairs >> 24) & 0xff, (pairs >> 48) & 0xff);
    if minute > 59 || second > 59 {
        return None;
    }
    Some(((minute * 60 + second) * 1000 + centis * 10 + m3 as u64) as i64)
}

/// A decimal number of ASCII digits (no sign), if `b` is all digits.
fn digits(b: &[u8]) -> Option<i64> {
    b.iter().try_fold(0i64, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + (c - b'0') as i64)
    })
}

fn two_digits(hi: u8, lo: u8) -> Option<i64> {
    (hi.is_ascii_digit() && lo.is_ascii_digit()).then(|| ((hi - b'0') * 10 + (lo - b'0')) as i64)
}

/// What follows the seconds: `[.fraction](Z|±HH:MM)`, as milliseconds (the fraction cut to
/// three digits) and the offset in minutes.
fn fraction_and_offset(b: &[u8]) -> Option<(i64, i64)> {
    let mut i = 0;
    let mut millis = 0;
    if b.first() == Some(&b'.') {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            if i <= 3 {
                millis = millis * 10 + (b[i] - b'0') as i64;
            }
            i += 1;
        }
        match i - 1 {
            0 => return None,
            1 => millis *= 100,
            2 => millis *= 10,
            _ => {}
        }
    }
    let offset_minutes = match &b[i..] {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let (h, m) = (two_digits(*h1, *h2)?, two_digits(*m1, *m2)?);
            if h > 23 || m > 59 {
                return None;
            }
            if *sign == b'+' {
                h * 60 + m
            } else {
                -(h * 60 + m)
            }
        }
        _ => return None,
    };
    Some((millis, offset_minutes))
}

thread_local! {
    /// The last two instants `write_millis` wrote, newer first (Millis::MIN: none yet, and
    /// outside the range written this way).
    static WRITTEN: Cell<[(Millis, [u8; 24]); 2]> = const { Cell::new([(Millis::MIN, [0; 24]); 2]) };
    /// The last `YYYY-MM-DDTHH` prefix fast_rfc3339 read (as `hour_key`), and its seconds
    /// (before the offset). At first, a prefix no text has (0xff is never in UTF-8).
    static HOUR_START: Cell<([u64; 2], i64)> = const { Cell::new(([u64::MAX; 2], 0)) };
}

/// Seconds from the epoch to the start of the hour `YYYY-MM-DDTHH` (local to its offset),
/// or `None` for an invalid date or hour.
fn hour_start_seconds(p: &[u8; 13], num: fn(&[u8]) -> Option<i64>) -> Option<i64> {
    let (year, month, day, hour) = (
        num(&p[0..4])?,
        num(&p[5..7])?,
        num(&p[8..10])?,
        num(&p[11..13])?,
    );
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&month) || day < 1 || day > month_days[month as usize - 1] || hour > 23 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hour * 3600)
}

fn parse_pattern(s: &str, pattern: &str) -> Option<Result<Millis, TimeError>> {
    if let Ok(dt) = DateTime::parse_from_str(s, pattern) {
        return Some(in_range(dt.timestamp_millis() as i128, s));
    }
    // A date alone (`%Y-%m-%d`) is its midnight, UTC.
    let naive = NaiveDateTime::parse_from_str(s, pattern)
        .or_else(|_| NaiveDate::parse_from_str(s, pattern).map(|d| d.and_time(NaiveTime::MIN)))
        .ok()?;
    Some(in_range(naive.and_utc().timestamp_millis() as i128, s))
}

/// Epoch units, and the magnitude bounds auto-detection uses. A value is read in the unit
/// whose range it falls in; ranges are chosen so that every instant from 1973-03-03 to
/// 5138-11-16 has exactly one reading. Smaller magnitudes (and negatives) are ambiguous.
const AUTO_SECONDS_FROM: f64 = 1e8;
const AUTO_MILLIS_FROM: f64 = 1e11;
const AUTO_MICROS_FROM: f64 = 1e14;
const AUTO_NANOS_FROM: f64 = 1e17;

fn unit_divisor(unit: &TimeFormat) -> (i128, i128) {
    // (multiplier to ms, divisor to ms)
    match unit {
        TimeFormat::EpochSeconds => (1000, 1),
        TimeFormat::EpochMillis => (1, 1),
        TimeFormat::EpochMicros => (1, 1000),
        TimeFormat::EpochNanos => (1, 1_000_000),
        _ => unreachable!("not an epoch unit"),
    }
}

fn auto_unit(magnitude: f64) -> Option<TimeFormat> {
    if magnitude < AUTO_SECONDS_FROM || !magnitude.is_finite() {
        None
    } else if magnitude < AUTO_MILLIS_FROM {
        Some(TimeFormat::EpochSeconds)
    } else if magnitude < AUTO_MICROS_FROM {
        Some(TimeFormat::EpochMillis)
    } else if magnitude < AUTO_NANOS_FROM {
        Some(TimeFormat::EpochMicros)
    } else {
        Some(TimeFormat::EpochNanos)
    }
}

fn parse_epoch(literal: &str, unit: Option<&TimeFormat>) -> Result<Millis, TimeError> {
    let unparsable = || TimeError::Unparsable(literal.to_string());
    if let Ok(int) = literal.parse::<i128>() {
        let unit = match unit {
            Some(u) => u.clone(),
            None if int < 0 => return Err(TimeError::Ambiguous(literal.to_string())),
            None => {
                auto_unit(int as f64).ok_or_else(|| TimeError::Ambiguous(literal.to_string()))?
            }
        };
        let (mul, div) = unit_divisor(&unit);
        let ms = int
            .checked_mul(mul)
            .ok_or_else(|| TimeError::OutOfRange(literal.to_string()))?
            .div_euclid(div);
        return in_range(ms, literal);
    }
    let value: f64 = literal.parse().map_err(|_| unparsable())?;
    if !value.is_finite() {
        return Err(unparsable());
    }
    let unit = match unit {
        Some(u) => u.clone(),
        None if value < 0.0 => return Err(TimeError::Ambiguous(literal.to_string())),
        None => auto_unit(value).ok_or_else(|| TimeError::Ambiguous(literal.to_string()))?,
    };
    let (mul, div) = unit_divisor(&unit);
    let ms = (value * mul as f64 / div as f64).floor();
    if ms.abs() > 1e18 {
        return Err(TimeError::OutOfRange(literal.to_string()));
    }
    in_range(ms as i128, literal)
}

/// RFC 3339 UTC with milliseconds: `2026-11-28T12:00:01.234Z`.
pub fn format_millis(ms: Millis) -> String {
    let mut out = Vec::with_capacity(24);
    write_millis(ms, &mut out);
    String::from_utf8(out).expect("ASCII")
}

/// Appends `format_millis(ms)` to `out` without allocating: output rows write two instants
/// each, so this stays off chrono's general formatter.
pub fn write_millis(ms: Millis, out: &mut Vec<u8>) {
    if !(MIN_MILLIS..=MAX_MILLIS).contains(&ms) {
        let text = match DateTime::<Utc>::from_timestamp_millis(ms) {
            Some(dt) => dt.to_rfc3339_opts(SecondsFormat::Millis, true),
            None => ms.to_string(),
        };
        out.extend_from_slice(text.as_bytes());
        return;
    }
    // Result rows repeat their window's bounds: the last two instants are kept written.
    let [newer, older] = WRITTEN.get();
    for (at, text) in [newer, older] {
        if at == ms {
            out.extend_from_slice(&text);
            return;
        }
    }
    let text = rfc3339_millis(ms);
    WRITTEN.set([(ms, text), newer]);
    out.extend_from_slice(&text);
}

/// `ms` (within `MIN_MILLIS..=MAX_MILLIS`) as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn rfc3339_millis(ms: Millis) -> [u8; 24] {
    let (year, month, day) = civil(ms.div_euclid(86_400_000));
    let in_day = ms.rem_euclid(86_400_000);
    // Digits written into a fixed template, right to left: one copy into `out`, no pushes.
    let mut text = *b"0000-00-00T00:00:00.000Z";
    put_digits(&mut text[0..4], year);
    put_digits(&mut text[5..7], month);
    put_digits(&mut text[8..10], day);
    put_digits(&mut text[11..13], in_day / 3_600_000);
    put_digits(&mut text[14..16], in_day / 60_000 % 60);
    put_digits(&mut text[17..19], in_day / 1000 % 60);
    put_digits(&mut text[20..23], in_day % 1000);
    text
}

/// The civil date (year, month, day) of a day counted from 1970-01-01 (Howard Hinnant's
/// algorithm).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// Writes `v` in the digits of `at`, zero-padded.
fn put_digits(at: &mut [u8], mut v: i64) {
    for c in at.iter_mut().rev() {
        *c = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

/// A unit of time after the epoch or after midnight, as Avro's logical types count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Millis,
    Micros,
    Nanos,
}

impl Unit {
    fn per_second(self) -> i64 {
        match self {
            Unit::Millis => 1_000,
            Unit::Micros => 1_000_000,
            Unit::Nanos => 1_000_000_000,
        }
    }

    fn digits(self) -> usize {
        match self {
            Unit::Millis => 3,
            Unit::Micros => 6,
            Unit::Nanos => 9,
        }
    }
}

/// Days since 1970-01-01 as a quoted `YYYY-MM-DD` (years 0 to 9999; others as a number).
pub fn write_date(out: &mut Vec<u8>, days: i32) {
    let (year, month, day) = civil(i64::from(days));
    if !(0..=9999).contains(&year) {
        out.extend_from_slice(days.to_string().as_bytes());
        return;
    }
    let mut text = *b"\"0000-00-00\"";
    put_digits(&mut text[1..5], year);
    put_digits(&mut text[6..8], month);
    put_digits(&mut text[9..11], day);
    out.extend_from_slice(&text);
}

/// A time of day in `unit`s after midnight as a quoted `HH:MM:SS.fff` (as many fraction
/// digits as the unit has).
pub fn write_time_of_day(out: &mut Vec<u8>, t: i64, unit: Unit) -> Result<(), String> {
    let per_day = 86_400 * unit.per_second();
    if !(0..per_day).contains(&t) {
        return Err(format!("a time of day of {t} is not within a day"));
    }
    let (seconds, fraction) = (t / unit.per_second(), t % unit.per_second());
    let mut text = *b"\"00:00:00.000000000\"";
    put_digits(&mut text[1..3], seconds / 3600);
    put_digits(&mut text[4..6], seconds / 60 % 60);
    put_digits(&mut text[7..9], seconds % 60);
    put_digits(&mut text[10..10 + unit.digits()], fraction);
    out.extend_from_slice(&text[..10 + unit.digits()]);
    out.push(b'"');
    Ok(())
}

/// An instant of `t` `unit`s since the epoch as a quoted RFC 3339 date and time with the
/// unit's fraction digits, ending in `Z` when `utc`.
pub fn write_instant(out: &mut Vec<u8>, t: i64, unit: Unit, utc: bool) -> Result<(), String> {
    let seconds = t.div_euclid(unit.per_second());
    let fraction = t.rem_euclid(unit.per_second());
    let nanos = fraction * (1_000_000_000 / unit.per_second());
    match write_seconds_nanos(out, seconds, nanos as u32, unit.digits(), utc) {
        true => Ok(()),
        false => Err(format!("an instant of {t} outside years 0 to 9999")),
    }
}

/// `seconds` since the epoch and `nanos` (below 1e9) as a quoted RFC 3339 date and time with
/// `digits` fraction digits (0: none), ending in `Z` when `utc`; false, and nothing written,
/// outside years 0 to 9999.
pub fn write_seconds_nanos(
    out: &mut Vec<u8>,
    seconds: i64,
    nanos: u32,
    digits: usize,
    utc: bool,
) -> bool {
    let (year, month, day) = civil(seconds.div_euclid(86_400));
    if !(0..=9999).contains(&year) || nanos >= 1_000_000_000 {
        return false;
    }
    let in_day = seconds.rem_euclid(86_400);
    let mut text = *b"\"0000-00-00T00:00:00.000000000";
    put_digits(&mut text[1..5], year);
    put_digits(&mut text[6..8], month);
    put_digits(&mut text[9..11], day);
    put_digits(&mut text[12..14], in_day / 3600);
    put_digits(&mut text[15..17], in_day / 60 % 60);
    put_digits(&mut text[18..20], in_day % 60);
    put_digits(&mut text[21..30], i64::from(nanos));
    let end = if digits == 0 { 20 } else { 21 + digits };
    out.extend_from_slice(&text[..end]);
    out.extend_from_slice(if utc { b"Z\"" } else { b"\"" });
    true
}

/// The fraction digits protobuf's JSON gives `nanos`: 0, 3, 6 or 9.
pub fn nanos_digits(nanos: u32) -> usize {
    match nanos {
        0 => 0,
        n if n % 1_000_000 == 0 => 3,
        n if n % 1_000 == 0 => 6,
        _ => 9,
    }
}

pub fn now_millis() -> Millis {
    Utc::now().timestamp_millis()
}

/// Parses `500ms`, `10s`, `5m`, `1h30m`, `2d` (humantime's grammar). Zero is allowed.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let trimmed = s.trim();
    if trimmed.is_empty() {
        return Err("empty duration".into());
    }
    if trimmed == "0" {
        return Ok(Duration::ZERO);
    }
    if trimmed.starts_with('-') {
        return Err(format!(
            "'{s}': durations are positive (a negative one has no meaning here)"
        ));
    }
    if let Some(at) = misread_months(trimmed) {
        let n = &trimmed[..at];
        return Err(format!(
            "'{s}': 'M' is months, easily misread for minutes: write {n}m for minutes, {n}months for months"
        ));
    }
    humantime::parse_duration(trimmed)
        .map_err(|e| format!("invalid duration '{s}': {e} (examples: 500ms, 10s, 5m, 1h30m, 2d)"))
}

/// Where a bare `M` unit (humantime's months) follows a number in `s`, if one does.
fn misread_months(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    (1..b.len()).find(|&i| {
        b[i] == b'M'
            && b[i - 1].is_ascii_digit()
            && !b.get(i + 1).is_some_and(u8::is_ascii_alphabetic)
    })
}

/// A duration as whole milliseconds, for the event-time core.
pub fn duration_millis(d: Duration) -> Millis {
    d.as_millis().min(i64::MAX as u128) as Millis
}

/// A duration for people, which also reads back as a duration (`--delay` takes it as it
/// is): exact below a minute (`120ms`, `5s600ms`), then its two largest units, rounded up
/// so that a recommended delay never falls short (`3m5s`, `1h2m`, `1d1h`).
pub fn human_duration(ms: Millis) -> String {
    if ms < 0 {
        return format!("-{}", human_duration(ms.saturating_neg()));
    }
    const UNITS: [(Millis, &str); 5] = [
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "m"),
        (1000, "s"),
        (1, "ms"),
    ];
    if ms == 0 {
        return "0s".into();
    }
    let top = UNITS
        .iter()
        .position(|(unit, _)| ms >= *unit)
        .expect("ms >= 1");
    // Below a minute every unit is kept; from a minute on, the two largest, rounded up.
    let kept = if top >= 3 { UNITS.len() } else { top + 2 };
    // In i128: rounding up near i64::MAX must not saturate, which would round down.
    let smallest = UNITS[kept - 1].0 as i128;
    let mut rest = (ms as i128 + smallest - 1) / smallest * smallest;
    let mut out = String::new();
    for &(unit, name) in &UNITS[..kept] {
        let n = rest / unit as i128;
        rest %= unit as i128;
        if n > 0 {
            out.push_str(&format!("{n}{name}"));
        }
    }
    out
}

/// A place in a partitioned log, as `--from` / `--to` name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogPosition {
    Beginning,
    End,
    /// The consumer group's committed position (Kafka).
    Stored,
    /// An absolute offset or sequence number.
    Offset(i64),
    /// N records before the end (`-N`, as in kcat).
    FromEnd(u64),
    /// An instant, from an RFC 3339 timestamp or a relative time (`-1h`) resolved at start.
    Time(Millis),
}

impl LogPosition {
    /// Parses a position; relative times are resolved against `now`.
    pub fn parse(s: &str, now: Millis) -> Result<LogPosition, String> {
        let s = s.trim();
        match s {
            "beginning" | "earliest" | "start" => return Ok(LogPosition::Beginning),
            "end" | "latest" => return Ok(LogPosition::End),
            "stored" => return Ok(LogPosition::Stored),
            "now" => return Ok(LogPosition::Time(now)),
            _ => {}
        }
        if let Ok(offset) = s.parse::<i64>() {
            return Ok(if offset < 0 {
                LogPosition::FromEnd(offset.unsigned_abs())
            } else {
                LogPosition::Offset(offset)
            });
        }
        if let Some(rel) = s.strip_prefix('-') {
            let d = parse_duration(rel)?;
            return Ok(LogPosition::Time(now.saturating_sub(duration_millis(d))));
        }
        if let Some(at) = parse_instant(s) {
            return at.map(LogPosition::Time).map_err(|e| e.to_string());
        }
        Err(format!(
            "invalid position '{s}': use beginning, end, stored, an offset, -N, an RFC 3339 time, a date, now or a relative time such as -1h"
        ))
    }
}

/// An instant as a person types one, the one reader of `--from`/`--to` times and of `--where`'s
/// `time(...)` comparisons: RFC 3339, or a date or date and time read as UTC. `None`: not one.
pub fn parse_instant(s: &str) -> Option<Result<Millis, TimeError>> {
    let s = s.trim();
    match parse_rfc3339(s) {
        Some(Ok(ms)) => Some(Ok(ms)),
        _ => parse_utc_date_time(s),
    }
}

/// A date (`2026-01-01`, its midnight) or a date and time without an offset (`2026-01-01
/// 12:30`, `2026-01-01T12:30:00.5`), read as UTC: weir writes every time in UTC, and a
/// position is typed by hand far more often than it is pasted with its zone.
fn parse_utc_date_time(s: &str) -> Option<Result<Millis, TimeError>> {
    // The patterns `--time-format` reads: without `%z` they are UTC, a date alone midnight.
    const PATTERNS: [&str; 5] = [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%d",
    ];
    PATTERNS.iter().find_map(|p| parse_pattern(s, p))
}

/// Refuses a `--from` past `--to`: such a range reads nothing and is surely a mistake (Spark
/// refuses it too). An equal pair is an empty read, which a script that computes its bounds
/// may well ask for. Only positions of one kind compare; the rest depend on the log.
pub fn check_range_order(
    from: (&LogPosition, &str),
    to: (&LogPosition, &str),
) -> Result<(), String> {
    let backwards = match (from.0, to.0) {
        (LogPosition::Time(a), LogPosition::Time(b))
        | (LogPosition::Offset(a), LogPosition::Offset(b)) => a > b,
        (LogPosition::FromEnd(a), LogPosition::FromEnd(b)) => a < b,
        // Nothing comes before the beginning.
        (LogPosition::Beginning, LogPosition::Beginning) => false,
        (_, LogPosition::Beginning) => true,
        _ => false,
    };
    if backwards {
        return Err(format!(
            "--from {} comes after --to {}: the range reads nothing (--to is exclusive)",
            from.1.trim(),
            to.1.trim()
        ));
    }
    Ok(())
}

pub(crate) fn truncate_for_message(s: &str) -> &str {
    match s.char_indices().nth(64) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// An event-time range `[from, to)`; `None` is open.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TimeRange {
    pub from: Option<Millis>,
    pub to: Option<Millis>,
}

impl TimeRange {
    pub fn contains(&self, t: Millis) -> bool {
        self.from.is_none_or(|f| t >= f) && self.to.is_none_or(|to| t < to)
    }

    pub fn is_open(&self) -> bool {
        self.from.is_none() && self.to.is_none()
    }

    /// Whether a record at `t` is kept; one without a time only by an open range.
    pub fn admits(&self, t: Option<Millis>) -> bool {
        match t {
            Some(t) => self.contains(t),
            None => self.is_open(),
        }
    }

    /// `--from` and `--to` as an event-time range (of NDJSON input), relative times
    /// resolved against `now`: only times, or open ends, make sense there.
    pub fn parse(
        from_text: Option<&str>,
        to_text: Option<&str>,
        now: Millis,
    ) -> Result<TimeRange, String> {
        let from = time_bound("--from", from_text, now)?;
        let to = time_bound("--to", to_text, now)?;
        if let (Some(from), Some(to), Some(from_text), Some(to_text)) =
            (from, to, from_text, to_text)
        {
            let (start, end) = (LogPosition::Time(from), LogPosition::Time(to));
            check_range_order((&start, from_text), (&end, to_text))?;
        }
        Ok(TimeRange { from, to })
    }
}

/// One bound of an event-time range: a time, or an open end.
fn time_bound(flag: &str, text: Option<&str>, now: Millis) -> Result<Option<Millis>, String> {
    let Some(text) = text else { return Ok(None) };
    match LogPosition::parse(text, now).map_err(|e| format!("{flag}: {e}"))? {
        LogPosition::Time(t) => Ok(Some(t)),
        LogPosition::Beginning if flag == "--from" => Ok(None),
        LogPosition::End if flag == "--to" => Ok(None),
        other => {
            let why = match other {
                LogPosition::Offset(_) => "offsets are a Kafka or Kinesis source's",
                LogPosition::FromEnd(_) => {
                    "a count back from the end is a Kafka or Kinesis source's"
                }
                LogPosition::Stored => "a group's stored offsets are a Kafka source's",
                _ => "this bound reads nothing of NDJSON input",
            };
            Err(format!(
                "{flag} {text}: {why}; on NDJSON input give an RFC 3339 or relative time"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misreadable_or_negative_duration_is_refused_with_what_was_likely_meant() {
        let e = parse_duration("10M").unwrap_err();
        assert!(
            e.contains("write 10m for minutes, 10months for months"),
            "{e}"
        );
        assert!(parse_duration("1h10M").is_err());
        assert!(parse_duration("-5s")
            .unwrap_err()
            .contains("durations are positive"));
        // Spelled out, months are what they say.
        assert_eq!(
            parse_duration("1months").unwrap(),
            humantime::parse_duration("1month").unwrap()
        );
        assert_eq!(parse_duration("10m").unwrap(), Duration::from_secs(600));
    }

    #[test]
    fn bounds_of_an_event_time_range() {
        let now = 10_000_000;
        assert_eq!(
            time_bound("--from", Some("-1s"), now).unwrap(),
            Some(now - 1000)
        );
        assert_eq!(time_bound("--from", Some("beginning"), now).unwrap(), None);
        assert_eq!(time_bound("--to", Some("end"), now).unwrap(), None);
        assert!(time_bound("--from", Some("42"), now).is_err());
        assert!(time_bound("--from", Some("stored"), now).is_err());
        assert!(time_bound("--to", Some("beginning"), now).is_err());
        let range = |from: &str, to: &str| {
            TimeRange::parse(Some(from), Some(to), now).map(|r| (r.from, r.to))
        };
        assert_eq!(
            range("-2s", "-1s").unwrap(),
            (Some(now - 2000), Some(now - 1000))
        );
        assert_eq!(
            range("-1s", "-1s").unwrap(),
            (Some(now - 1000), Some(now - 1000))
        );
        let backwards = range("2026-11-28T13:00:00Z", "2026-11-28T12:00:00Z").unwrap_err();
        assert!(backwards.contains("comes after --to"), "{backwards}");
    }

    #[test]
    fn range_is_half_open() {
        let r = TimeRange {
            from: Some(10),
            to: Some(20),
        };
        assert!(!r.contains(9));
        assert!(r.contains(10));
        assert!(r.contains(19));
        assert!(!r.contains(20));
        assert!(TimeRange::default().contains(i64::MIN));
        assert!(!r.admits(None) && TimeRange::default().admits(None));
    }

    proptest! {
        /// Checking a pattern never panics, whatever specifiers and flags it holds; one it
        /// accepts reads back the instant it writes.
        #[test]
        fn any_pattern_is_checked_without_panic(pattern in "%?[%a-zA-Z0-9:.+#_^-]{0,10}") {
            if let Ok(TimeFormat::Pattern(p)) = TimeFormat::from_str(&pattern) {
                let sample = DateTime::from_timestamp_millis(981_173_106_789).unwrap();
                let text = sample.format(&p).to_string();
                prop_assert!(parse_time_str(&text, &TimeFormat::Pattern(p.clone())).is_ok(), "{} {}", p, text);
            }
        }
    }

    #[test]
    fn patterns_must_name_an_instant() {
        let read = |pattern: &str, text: &str| {
            let format = TimeFormat::from_str(pattern).unwrap();
            parse_time_str(text, &format).unwrap()
        };
        // A date alone is its midnight, UTC; an offset in the text is honoured.
        assert_eq!(read("%Y-%m-%d", "2026-01-02"), 1_767_312_000_000);
        assert_eq!(
            read("%d/%m/%Y %H:%M", "02/01/2026 01:30"),
            1_767_317_400_000
        );
        assert_eq!(
            read("%Y-%m-%d %H:%M %z", "2026-01-02 01:00 +0100"),
            1_767_312_000_000
        );
        for (pattern, why) in [
            (
                "%H:%M",
                "does not name an instant: it writes 2001-02-03T04:05:06Z as '04:05'",
            ),
            ("%Y-%m", "does not name an instant"),
            ("%Q", "not a valid strftime pattern"),
            ("%Y-%m-%d %", "not a valid strftime pattern"),
        ] {
            let e = TimeFormat::from_str(pattern).unwrap_err();
            assert!(e.contains(why), "{pattern}: {e}");
        }
    }

    #[test]
    fn human_durations() {
        assert_eq!(human_duration(0), "0s");
        assert_eq!(human_duration(120), "120ms");
        assert_eq!(human_duration(5_600), "5s600ms");
        assert_eq!(human_duration(59_999), "59s999ms");
        assert_eq!(human_duration(184_000), "3m4s");
        assert_eq!(human_duration(184_001), "3m5s");
        assert_eq!(human_duration(3_720_000), "1h2m");
        assert_eq!(human_duration(3_600_001), "1h1m");
        assert_eq!(human_duration(90_000_000), "1d1h");
        assert_eq!(human_duration(-1500), "-1s500ms");
    }

    /// Found by the fuzzer: `176722500612345767s` is past i64::MAX milliseconds, and rounding
    /// up saturated, which rounded down. The printed duration must still cover it.
    #[test]
    fn human_duration_near_the_limit_still_covers_it() {
        let ms = duration_millis(parse_duration("176722500612345767s").unwrap());
        assert_eq!(ms, i64::MAX);
        let text = human_duration(ms);
        assert_eq!(
            duration_millis(parse_duration(&text).unwrap()),
            i64::MAX,
            "{text}"
        );
        for ms in [i64::MAX, i64::MAX - 1, i64::MAX - 3_600_000] {
            let back = duration_millis(parse_duration(&human_duration(ms)).unwrap());
            assert!(back >= ms, "{ms}");
        }
    }

    proptest! {
        /// What it writes reads back, never below the duration, and above it by less than
        /// its smallest unit.
        #[test]
        fn human_durations_read_back(ms in 0i64..10_000_000_000_000) {
            let text = human_duration(ms);
            let back = duration_millis(parse_duration(&text).unwrap());
            prop_assert!(back >= ms, "{} -> {}", ms, text);
            let slack = if ms < 60_000 { 1 } else if ms < 3_600_000 { 1000 } else if ms < 86_400_000 { 60_000 } else { 3_600_000 };
            prop_assert!(back - ms < slack, "{} -> {}", ms, text);
        }
    }
    use proptest::prelude::*;

    fn auto(s: &str) -> Result<Millis, TimeError> {
        parse_time_str(s, &TimeFormat::Auto)
    }

    #[test]
    fn rfc3339_with_offsets() {
        assert_eq!(auto("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(auto("1970-01-01T00:00:01.5Z"), Ok(1500));
        // 02:00 at +02:00 is midnight UTC.
        assert_eq!(auto("1970-01-01T02:00:00+02:00"), Ok(0));
        assert_eq!(auto("1969-12-31T19:00:00-05:00"), Ok(0));
        assert_eq!(
            auto("2026-01-01T00:00:00.123456789Z"),
            Ok(1_767_225_600_123)
        );
        // Lower-case t/z and a space are RFC 3339 too.
        assert_eq!(auto("2026-01-01 00:00:00z"), Ok(1_767_225_600_000));
    }

    #[test]
    fn sub_millisecond_floors_even_before_epoch() {
        // -0.5 ms must fall in the millisecond before the epoch, not round to 0.
        assert_eq!(parse_time_number("-0.5", &TimeFormat::EpochMillis), Ok(-1));
        assert_eq!(parse_time_number("-1", &TimeFormat::EpochMicros), Ok(-1));
        assert_eq!(auto("1969-12-31T23:59:59.9995Z"), Ok(-1));
    }

    #[test]
    fn leap_days() {
        assert_eq!(auto("2024-02-29T12:00:00Z"), Ok(1_709_208_000_000));
        assert_eq!(auto("2000-02-29T00:00:00Z"), Ok(951_782_400_000));
        assert!(matches!(
            auto("2023-02-29T00:00:00Z"),
            Err(TimeError::Unparsable(_))
        ));
        assert!(matches!(
            auto("1900-02-29T00:00:00Z"),
            Err(TimeError::Unparsable(_))
        ));
    }

    #[test]
    fn epoch_units_explicit() {
        let t = 1_767_225_600_123;
        assert_eq!(
            parse_time_number("1767225600", &TimeFormat::EpochSeconds),
            Ok(t - 123)
        );
        assert_eq!(
            parse_time_number("1767225600.123", &TimeFormat::EpochSeconds),
            Ok(t)
        );
        assert_eq!(
            parse_time_number("1767225600123", &TimeFormat::EpochMillis),
            Ok(t)
        );
        assert_eq!(
            parse_time_number("1767225600123456", &TimeFormat::EpochMicros),
            Ok(t)
        );
        assert_eq!(
            parse_time_number("1767225600123456789", &TimeFormat::EpochNanos),
            Ok(t)
        );
        // Small values are fine when the unit is given.
        assert_eq!(
            parse_time_number("10", &TimeFormat::EpochSeconds),
            Ok(10_000)
        );
        // Numeric strings too.
        assert_eq!(
            parse_time_str("1767225600123", &TimeFormat::EpochMillis),
            Ok(t)
        );
    }

    #[test]
    fn epoch_auto_detection() {
        let t = 1_767_225_600_000;
        assert_eq!(parse_time_number("1767225600", &TimeFormat::Auto), Ok(t));
        assert_eq!(parse_time_number("1767225600000", &TimeFormat::Auto), Ok(t));
        assert_eq!(
            parse_time_number("1767225600000000", &TimeFormat::Auto),
            Ok(t)
        );
        assert_eq!(
            parse_time_number("1767225600000000000", &TimeFormat::Auto),
            Ok(t)
        );
        assert_eq!(parse_time_number("1.7672256e9", &TimeFormat::Auto), Ok(t));
        assert_eq!(auto("1767225600"), Ok(t));
        assert!(matches!(
            parse_time_number("12345", &TimeFormat::Auto),
            Err(TimeError::Ambiguous(_))
        ));
        assert!(matches!(
            parse_time_number("-5", &TimeFormat::Auto),
            Err(TimeError::Ambiguous(_))
        ));
    }

    #[test]
    fn out_of_range_and_garbage() {
        assert!(matches!(
            parse_time_number("99999999999999999999999", &TimeFormat::EpochSeconds),
            Err(TimeError::OutOfRange(_))
        ));
        assert!(matches!(
            parse_time_number("1e300", &TimeFormat::EpochSeconds),
            Err(TimeError::OutOfRange(_))
        ));
        assert!(matches!(
            parse_time_number("300000000000", &TimeFormat::EpochSeconds),
            Err(TimeError::OutOfRange(_))
        ));
        assert!(matches!(auto("yesterday"), Err(TimeError::Unparsable(_))));
        // A naive date and time is not guessed at; the error says how to read it as UTC, and
        // that pattern does.
        for (naive, pattern) in [
            ("2026-01-01T00:00:00", "%Y-%m-%dT%H:%M:%S%.f"),
            ("2026-01-01 00:00:00.250", "%Y-%m-%d %H:%M:%S%.f"),
        ] {
            let Err(e) = auto(naive) else {
                panic!("{naive} was read")
            };
            assert!(e.to_string().contains(&format!("'{pattern}'")), "{e}");
            let as_utc = parse_time_str(naive, &TimeFormat::Pattern(pattern.into())).unwrap();
            let z = parse_time_str(&format!("{}Z", naive.replace(' ', "T")), &TimeFormat::Auto);
            assert_eq!(Ok(as_utc), z);
        }
        assert!(matches!(auto(""), Err(TimeError::Unparsable(_))));
        // A slashed or dotted layout gets the pattern that reads it, which does.
        for (other, pattern) in [
            ("2026/11/28 12:00:01", "%Y/%m/%d %H:%M:%S%.f"),
            ("28.11.2026 12:00:01", "%d.%m.%Y %H:%M:%S%.f"),
        ] {
            let e = auto(other).unwrap_err().to_string();
            assert!(e.contains(&format!("--time-format '{pattern}'")), "{e}");
            let read = parse_time_str(other, &TimeFormat::Pattern(pattern.into()));
            assert_eq!(
                read,
                parse_time_str("2026-11-28T12:00:01Z", &TimeFormat::Auto)
            );
        }
        let e = auto("yesterday").unwrap_err().to_string();
        assert!(e.contains("pass --time-format"), "{e}");
        // A pattern names itself when it does not match.
        let pattern = TimeFormat::from_str("%d/%m/%Y").unwrap();
        assert_eq!(
            parse_time_str("2026-01-01", &pattern)
                .unwrap_err()
                .to_string(),
            "unparsable time \"2026-01-01\" by '%d/%m/%Y'"
        );
        assert!(matches!(
            auto("2026-13-01T00:00:00Z"),
            Err(TimeError::Unparsable(_))
        ));
        assert!(matches!(
            parse_time_number("1767225600", &TimeFormat::Rfc3339),
            Err(TimeError::Unparsable(_))
        ));
        // The largest i64 in nanoseconds is 2262: in range.
        assert!(parse_time_number(&i64::MAX.to_string(), &TimeFormat::EpochNanos).is_ok());
    }

    #[test]
    fn strftime_patterns() {
        let f: TimeFormat = "%d/%m/%Y %H:%M:%S".parse().unwrap();
        assert_eq!(parse_time_str("01/01/1970 00:00:01", &f), Ok(1000));
        let f: TimeFormat = "%Y-%m-%d %H:%M:%S %z".parse().unwrap();
        assert_eq!(parse_time_str("1970-01-01 01:00:00 +0100", &f), Ok(0));
        assert!("bogus".parse::<TimeFormat>().is_err());
    }

    #[test]
    fn formats_with_milliseconds() {
        assert_eq!(format_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_millis(1_709_208_000_123), "2024-02-29T12:00:00.123Z");
        assert_eq!(format_millis(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("2d"), Ok(Duration::from_secs(172_800)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("-5s").is_err());
        assert!(parse_duration("5 parsecs").is_err());
    }

    #[test]
    fn positions() {
        let now = 1_000_000_000;
        assert_eq!(
            LogPosition::parse("beginning", now),
            Ok(LogPosition::Beginning)
        );
        assert_eq!(LogPosition::parse("end", now), Ok(LogPosition::End));
        assert_eq!(LogPosition::parse("stored", now), Ok(LogPosition::Stored));
        assert_eq!(
            LogPosition::parse("1042", now),
            Ok(LogPosition::Offset(1042))
        );
        assert_eq!(LogPosition::parse("-10", now), Ok(LogPosition::FromEnd(10)));
        assert_eq!(
            LogPosition::parse("-1h", now),
            Ok(LogPosition::Time(now - 3_600_000))
        );
        assert_eq!(
            LogPosition::parse("1970-01-01T00:00:01Z", now),
            Ok(LogPosition::Time(1000))
        );
        assert!(LogPosition::parse("soon", now).is_err());
        assert_eq!(LogPosition::parse("now", now), Ok(LogPosition::Time(now)));
        // Dates and times without an offset are UTC; checked against `date -u -d ... +%s`.
        let utc = |s: &str| LogPosition::parse(s, now);
        assert_eq!(utc("2026-01-01"), Ok(LogPosition::Time(1_767_225_600_000)));
        for s in [
            "2026-01-01 12:30",
            "2026-01-01T12:30",
            "2026-01-01 12:30:00.0",
        ] {
            assert_eq!(utc(s), Ok(LogPosition::Time(1_767_270_600_000)), "{s}");
        }
        assert_eq!(
            utc("2026-01-01T12:30:00.25"),
            Ok(LogPosition::Time(1_767_270_600_250))
        );
        for bad in ["2026-02-30", "2026-01-01 25:00", "2026-1-1x", "10000-01-01"] {
            assert!(utc(bad).is_err(), "{bad}");
        }
    }

    /// The hour cache starts with a prefix no text has: thirteen NUL bytes are no hour.
    #[test]
    fn an_unset_hour_cache_matches_nothing() {
        let text = "\0\0\0\0\0\0\0\0\0\0\0\0\0:00:00.000Z";
        let first = std::thread::spawn(move || fast_rfc3339(text.as_bytes()));
        assert_eq!(first.join().unwrap(), None);
    }

    proptest! {
        #[test]
        fn formatting_agrees_with_chrono(ms in MIN_MILLIS..=MAX_MILLIS) {
            let chrono_text = DateTime::<Utc>::from_timestamp_millis(ms).unwrap().to_rfc3339_opts(SecondsFormat::Millis, true);
            prop_assert_eq!(format_millis(ms), chrono_text);
        }

        /// Instants written again (as result rows write their window bounds) come out the
        /// same as the first time, whatever was written in between.
        #[test]
        fn repeated_instants_written_the_same(picks in prop::collection::vec((0usize..4, any::<bool>()), 1..40), pool in prop::array::uniform4(MIN_MILLIS..=MAX_MILLIS)) {
            let mut out = Vec::new();
            for (i, out_of_range) in picks {
                let ms = if out_of_range { MAX_MILLIS + 1 + pool[i].rem_euclid(1000) } else { pool[i] };
                out.clear();
                write_millis(ms, &mut out);
                let expected = match DateTime::<Utc>::from_timestamp_millis(ms) {
                    Some(dt) => dt.to_rfc3339_opts(SecondsFormat::Millis, true),
                    None => ms.to_string(),
                };
                prop_assert_eq!(String::from_utf8(out.clone()).unwrap(), expected);
            }
        }

        #[test]
        fn rfc3339_round_trips(ms in MIN_MILLIS..=MAX_MILLIS) {
            prop_assert_eq!(auto(&format_millis(ms)), Ok(ms));
        }

        #[test]
        fn any_offset_names_the_same_instant(ms in 0i64..=200_000_000_000_000, off_min in -1439i32..=1439) {
            let offset = chrono::FixedOffset::east_opt(off_min * 60).unwrap();
            let dt = DateTime::<Utc>::from_timestamp_millis(ms).unwrap().with_timezone(&offset);
            let text = dt.to_rfc3339_opts(SecondsFormat::Millis, false);
            prop_assert_eq!(auto(&text), Ok(ms));
        }

        #[test]
        fn epoch_units_agree(ms in 100_000_000_000i64..=9_000_000_000_000) {
            // Auto-detection reads each unit's rendering of the same instant alike.
            let s = ms.div_euclid(1000);
            prop_assert_eq!(parse_time_number(&s.to_string(), &TimeFormat::Auto), Ok(s * 1000));
            prop_assert_eq!(parse_time_number(&ms.to_string(), &TimeFormat::Auto), Ok(ms));
            prop_assert_eq!(parse_time_number(&(ms as i128 * 1000).to_string(), &TimeFormat::Auto), Ok(ms));
            prop_assert_eq!(parse_time_number(&(ms as i128 * 1_000_000 + 999_999).to_string(), &TimeFormat::Auto), Ok(ms));
        }

        #[test]
        fn durations_round_trip(ms in 0u64..10_000_000_000) {
            let d = Duration::from_millis(ms);
            let text = humantime::format_duration(d).to_string().replace(' ', "");
            prop_assert_eq!(parse_duration(&text), Ok(d));
        }

        /// The fast path agrees with chrono on well-formed times...
        #[test]
        fn fast_path_agrees_with_chrono(ms in MIN_MILLIS..=MAX_MILLIS, off_min in -1439i32..=1439, digits in 0usize..10) {
            let offset = chrono::FixedOffset::east_opt(off_min * 60).unwrap();
            let Some(dt) = DateTime::<Utc>::from_timestamp_millis(ms).map(|d| d.with_timezone(&offset)) else { return Ok(()) };
            let text = match digits {
                0 => dt.format("%Y-%m-%dT%H:%M:%S%:z").to_string(),
                d => format!("{}.{:0<width$}{}", dt.format("%Y-%m-%dT%H:%M:%S"), format!("{:03}", ms.rem_euclid(1000)), dt.format("%:z"), width = d),
            };
            let chrono_ms = DateTime::parse_from_rfc3339(&text).map(|d| d.timestamp_millis()).ok();
            prop_assert_eq!(fast_rfc3339(text.as_bytes()), chrono_ms.filter(|m| (MIN_MILLIS..=MAX_MILLIS).contains(m)), "{}", text);
        }

        /// The commonest shape, UTC with milliseconds, read right.
        #[test]
        fn fast_path_reads_utc_millis(ms in MIN_MILLIS..=MAX_MILLIS) {
            let Some(dt) = DateTime::<Utc>::from_timestamp_millis(ms) else { return Ok(()) };
            let text = dt.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
            prop_assert_eq!(fast_rfc3339(text.as_bytes()), Some(ms), "{}", text);
        }

        /// ... and never accepts what chrono rejects, or reads it differently.
        #[test]
        fn fast_path_never_contradicts_chrono(text in "[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{0,4})?([Zz]|[+-][0-9]{2}:[0-9]{2})") {
            if let Some(ms) = fast_rfc3339(text.as_bytes()) {
                let chrono_ms = DateTime::parse_from_rfc3339(&text).map(|d| d.timestamp_millis());
                prop_assert_eq!(Ok(ms), chrono_ms, "{}", text);
            }
        }

        /// With a time's hour cached, a time of that hour with one byte after the hour changed
        /// is read as chrono reads it, or not at all (the cached path checks what it skips).
        #[test]
        fn cached_hour_never_contradicts_chrono(ms in 0i64..4_102_444_800_000, at in 13usize..24, byte in prop::sample::select(b"0123456789:.-+TZz \x00".to_vec())) {
            let text = DateTime::<Utc>::from_timestamp_millis(ms).unwrap().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
            prop_assert_eq!(fast_rfc3339(text.as_bytes()), Some(ms), "{}", text);
            let mut changed = text.into_bytes();
            changed[at] = byte;
            let changed = String::from_utf8(changed).unwrap();
            if let Some(got) = fast_rfc3339(changed.as_bytes()) {
                let chrono_ms = DateTime::parse_from_rfc3339(&changed).map(|d| d.timestamp_millis());
                prop_assert_eq!(Ok(got), chrono_ms, "{}", changed);
            }
        }

        /// The word-at-a-time reading of `MM:SS.mmmZ` against one byte at a time, on tails
        /// made of digits, separators and the bytes just outside the digits' range.
        #[test]
        fn minute_second_millis_reads_as_bytes_do(minute in prop_oneof![0..100, 59..61], second in prop_oneof![0..100, 59..61], millis in 0..1000, changes in prop::collection::vec((0usize..10, prop::sample::select(b"0123456789:./;Zz\x00\xff".to_vec())), 0..3)) {
            let mut tail = *format!("{minute:02}:{second:02}.{millis:03}Z").as_bytes().first_chunk::<10>().unwrap();
            for (at, byte) in changes {
                tail[at] = byte;
            }
            let digit = |c: u8| c.is_ascii_digit().then(|| (c - b'0') as i64);
            let bytewise = (|| {
                let [m1, m2, b':', s1, s2, b'.', f1, f2, f3, b'Z'] = tail else { return None };
                let [m1, m2, s1, s2, f1, f2, f3] = [m1, m2, s1, s2, f1, f2, f3].map(digit);
                let (minute, second, millis) = (m1? * 10 + m2?, s1? * 10 + s2?, f1? * 100 + f2? * 10 + f3?);
                (minute < 60 && second < 60).then_some((minute * 60 + second) * 1000 + millis)
            })();
            prop_assert_eq!(minute_second_millis(&tail), bytewise);
        }

        #[test]
        fn never_panics_on_garbage(s in "\\PC{0,40}") {
            let _ = auto(&s);
            let _ = parse_time_number(&s, &TimeFormat::Auto);
            let _ = parse_duration(&s);
            let _ = LogPosition::parse(&s, 0);
        }
    }
}
