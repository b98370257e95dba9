//! Replay pacing: which records are sent (a time range) and when each is due, by a fixed rate
//! or by its timestamp at a speed-up. Pure: the caller passes elapsed time and sleeps.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::time::{Millis, TimeRange};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pace {
    /// As fast as the sink takes them.
    Unlimited,
    /// Records per second.
    Rate(f64),
    /// Gaps between record timestamps, divided by this factor.
    Speed(f64),
}

/// Due times are absolute (from the start of the run), so short sleeps that overshoot do not
/// add up: the average rate stays exact.
#[derive(Debug)]
pub struct Pacer {
    pace: Pace,
    progress: PaceProgress,
}

/// How far a paced run has got: what a checkpoint keeps of it, with the time elapsed since
/// the start, so that a restored run keeps the pace instead of catching up in a burst.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PaceProgress {
    /// Records sent.
    pub sent: u64,
    /// The timestamp of the first record with one, which `--speed` measures gaps from.
    pub first_time: Option<Millis>,
}

impl Pace {
    /// The pace `--rate` or else `--speed` asks for.
    pub fn of(rate: Option<f64>, speed: Option<f64>) -> Pace {
        match (rate, speed) {
            (Some(r), _) => Pace::Rate(r),
            (None, Some(s)) => Pace::Speed(s),
            (None, None) => Pace::Unlimited,
        }
    }
}

impl Pacer {
    pub fn new(pace: Pace) -> Pacer {
        Pacer::resume(pace, PaceProgress::default())
    }

    /// A pacer that goes on from `progress` (its run's clock goes on from where it was).
    pub fn resume(pace: Pace, progress: PaceProgress) -> Pacer {
        Pacer { pace, progress }
    }

    pub fn progress(&self) -> PaceProgress {
        self.progress
    }

    /// How long to wait, `elapsed()` after the start, before sending the next record (whose
    /// timestamp is `time`, if it has one); asked again for the same record, the same due
    /// time. A record without a timestamp at `--speed` goes at once. The clock is read only
    /// for a record due after the start: unpaced, reading it for every record was 14% of a
    /// replay's time.
    pub fn wait_before(
        &mut self,
        elapsed: impl FnOnce() -> Duration,
        time: Option<Millis>,
    ) -> Duration {
        match self.due_at(time) {
            Duration::ZERO => Duration::ZERO,
            due => due.saturating_sub(elapsed()),
        }
    }

    /// When, after the start, the next record is due: zero (at once) when unpaced.
    fn due_at(&mut self, time: Option<Millis>) -> Duration {
        match self.pace {
            Pace::Unlimited => Duration::ZERO,
            Pace::Rate(per_second) => seconds(self.progress.sent as f64 / per_second),
            Pace::Speed(factor) => match time {
                None => Duration::ZERO,
                Some(t) => {
                    let first = *self.progress.first_time.get_or_insert(t);
                    let gap_ms = t.saturating_sub(first).max(0) as f64;
                    seconds(gap_ms / 1000.0 / factor)
                }
            },
        }
    }

    /// The record `wait_before` was asked about has been sent.
    pub fn sent(&mut self) {
        self.progress.sent += 1;
    }
}

/// What a replay sends, and when: the records of a time range, at a pace.
#[derive(Debug)]
pub struct Schedule {
    range: TimeRange,
    pacer: Pacer,
}

/// What a checkpoint keeps of a schedule.
#[derive(Debug, Serialize, Deserialize)]
pub struct ScheduleState {
    /// The time range as the first run resolved it (`-1h` stays the hour it first meant).
    range: TimeRange,
    pace: PaceProgress,
    /// Milliseconds since the run started: a resumed run's clock goes on from here, so it
    /// keeps the pace rather than catching up in a burst or waiting the whole run again.
    pub elapsed: Millis,
}

/// What to do with a record now.
#[derive(Debug, PartialEq)]
pub enum Due {
    /// Send it.
    Now,
    /// Wait this long first.
    Wait(Duration),
    /// Out of the range: never.
    Out,
}

impl Schedule {
    pub fn new(range: TimeRange, pace: Pace) -> Schedule {
        let pacer = Pacer::new(pace);
        Schedule { range, pacer }
    }

    /// This schedule going on from a checkpoint's: in the range its first run resolved
    /// (`-1h` stays the hour it first meant), from where its pace had got.
    pub fn resumed(self, state: &ScheduleState) -> Schedule {
        let pacer = Pacer::resume(self.pacer.pace, state.pace);
        Schedule {
            range: state.range,
            pacer,
        }
    }

    /// What to do with a record of time `t`, `elapsed()` after the start (read only when the
    /// record is due after the start). Waits under a millisecond are left to add up: due
    /// times are absolute, so nothing drifts.
    pub fn due(&mut self, elapsed: impl FnOnce() -> Duration, t: Option<Millis>) -> Due {
        if !self.range.admits(t) {
            return Due::Out;
        }
        match self.pacer.wait_before(elapsed, t) {
            wait if wait >= Duration::from_millis(1) => Due::Wait(wait),
            _ => Due::Now,
        }
    }

    /// The record `due` said to send has been sent.
    pub fn sent(&mut self) {
        self.pacer.sent();
    }

    pub fn state(&self, elapsed: Duration) -> ScheduleState {
        ScheduleState {
            range: self.range,
            pace: self.pacer.progress(),
            elapsed: elapsed.as_millis() as Millis,
        }
    }
}

/// `secs` as a duration; one too long to hold is as good as forever.
fn seconds(secs: f64) -> Duration {
    Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
}

/// The slowest rate taken: one record a day. Slower is a typo, not a replay.
pub const MIN_RATE: f64 = 1.0 / 86_400.0;
/// The fastest rate taken; above it pacing means nothing (leave `--rate` out).
pub const MAX_RATE: f64 = 1e9;
/// The range of `--speed` factors: from 10,000 times slower to a million times faster.
pub const MIN_SPEED: f64 = 1e-4;
pub const MAX_SPEED: f64 = 1e6;

/// `5000/s`, `5000` (per second), `300/m`, `10k/h`.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    let (count, per) = s.split_once('/').unwrap_or((s, "s"));
    let count = count.trim();
    let (digits, scale) = match count.strip_suffix(['k', 'K']) {
        Some(d) => (d, 1000.0),
        None => (count, 1.0),
    };
    let n: f64 = digits
        .parse()
        .map_err(|_| format!("invalid rate '{s}': use N/s, N/m or N/h"))?;
    let seconds = match per.trim() {
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => return Err(format!("invalid rate unit '/{other}': use /s, /m or /h")),
    };
    let rate = n * scale / seconds;
    if !(rate.is_finite() && rate > 0.0) {
        Err(format!("invalid rate '{s}': must be above 0"))
    } else if !(MIN_RATE..=MAX_RATE).contains(&rate) {
        Err(format!(
            "invalid rate '{s}': must be between one record a day (0.0417/h) and 1000000000/s"
        ))
    } else {
        Ok(rate)
    }
}

/// `10x`, `0.5x`, `2`.
pub fn parse_speed(s: &str) -> Result<f64, String> {
    let factor: f64 = s
        .trim()
        .trim_end_matches(['x', 'X'])
        .parse()
        .map_err(|_| format!("invalid speed '{s}': use a factor such as 10x"))?;
    if !(factor.is_finite() && factor > 0.0) {
        Err(format!("invalid speed '{s}': must be above 0"))
    } else if !(MIN_SPEED..=MAX_SPEED).contains(&factor) {
        Err(format!(
            "invalid speed '{s}': must be between 0.0001x and 1000000x"
        ))
    } else {
        Ok(factor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_schedule_sends_its_range_at_its_pace_and_resumes_where_it_was() {
        let range = TimeRange {
            from: Some(1_000),
            to: Some(5_000),
        };
        let mut s = Schedule::new(range, Pace::Rate(2.0));
        let unpaced =
            Schedule::new(range, Pace::Unlimited).due(|| panic!("read the clock"), Some(1_000));
        assert_eq!(unpaced, Due::Now, "needs no clock");
        let at = Duration::from_millis;
        assert_eq!(s.due(|| at(0), Some(999)), Due::Out);
        assert_eq!(
            s.due(|| at(0), Some(5_000)),
            Due::Out,
            "the end is not in it"
        );
        assert_eq!(s.due(|| at(0), Some(1_000)), Due::Now);
        s.sent();
        // The second of two a second is due at 500 ms.
        assert_eq!(s.due(|| at(200), Some(2_000)), Due::Wait(at(300)));
        let nearly = Duration::from_micros(499_500);
        assert_eq!(s.due(|| nearly, Some(2_000)), Due::Now, "under 1 ms: now");
        s.sent();
        let saved = s.state(at(700));
        assert_eq!(saved.elapsed, 700);
        let mut resumed = Schedule::new(TimeRange::default(), Pace::Rate(2.0)).resumed(&saved);
        assert_eq!(resumed.due(|| at(700), Some(3_000)), Due::Wait(at(300)));
        assert_eq!(resumed.due(|| at(700), Some(6_000)), Due::Out);
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("5000/s"), Ok(5000.0));
        assert_eq!(parse_rate("5000"), Ok(5000.0));
        assert_eq!(parse_rate("300/m"), Ok(5.0));
        assert_eq!(parse_rate("36k/h"), Ok(10.0));
        assert!(parse_rate("0/s").is_err());
        assert!(parse_rate("5/d").is_err());
        assert_eq!(parse_speed("10x"), Ok(10.0));
        assert!(parse_speed("-1x").is_err());
    }

    #[test]
    fn extreme_paces_are_refused() {
        for rate in [
            "1e-20/s", "1e-15", "0.01/h", "1e10/s", "1e400/s", "NaN/s", "inf",
        ] {
            assert!(parse_rate(rate).is_err(), "{rate}");
        }
        assert!(parse_rate("1/h").is_ok());
        for speed in ["1e-15x", "0.00001x", "1e7x", "infx", "NaNx"] {
            assert!(parse_speed(speed).is_err(), "{speed}");
        }
        assert_eq!(parse_speed("0.0001x"), Ok(1e-4));
        assert_eq!(parse_speed("1000000x"), Ok(1e6));
    }

    proptest! {
        /// No pace and no timestamps make a due time that cannot be held: a wait is always
        /// a duration, however far apart the timestamps.
        #[test]
        fn waits_never_overflow(rate in MIN_RATE..MAX_RATE, speed in MIN_SPEED..MAX_SPEED,
                                times in prop::collection::vec(any::<i64>(), 1..20)) {
            let mut by_rate = Pacer::new(Pace::Rate(rate));
            let mut by_speed = Pacer::new(Pace::Speed(speed));
            for t in times {
                by_rate.wait_before(|| Duration::ZERO, None);
                by_rate.sent();
                by_speed.wait_before(|| Duration::ZERO, Some(t));
                by_speed.sent();
            }
        }
    }

    #[test]
    fn speed_keeps_gaps() {
        let mut p = Pacer::new(Pace::Speed(10.0));
        let at = Duration::ZERO;
        let mut send = |elapsed, t| {
            let wait = p.wait_before(|| elapsed, Some(t));
            p.sent();
            wait
        };
        assert_eq!(send(at, 1_000), Duration::ZERO);
        assert_eq!(send(at, 11_000), Duration::from_secs(1));
        // Out of order: an earlier timestamp is due at once.
        assert_eq!(send(at, 500), Duration::ZERO);
        assert_eq!(
            send(Duration::from_millis(1500), 21_000),
            Duration::from_millis(500)
        );
    }

    #[test]
    fn asking_again_gives_the_same_due_time() {
        let mut p = Pacer::new(Pace::Rate(10.0));
        p.sent();
        assert_eq!(
            p.wait_before(|| Duration::ZERO, None),
            Duration::from_millis(100)
        );
        assert_eq!(
            p.wait_before(|| Duration::from_millis(60), None),
            Duration::from_millis(40)
        );
        p.sent();
        assert_eq!(
            p.wait_before(|| Duration::ZERO, None),
            Duration::from_millis(200)
        );
    }

    proptest! {
        /// At a fixed rate, record i is due at i / rate, whatever the sleeps overshot.
        #[test]
        fn rate_due_times(rate in 1.0f64..100_000.0, n in 1u64..2000, late_us in 0u64..50) {
            let mut p = Pacer::new(Pace::Rate(rate));
            let mut clock = Duration::ZERO;
            for _ in 0..n {
                clock += p.wait_before(|| clock, None);
                p.sent();
                // Every sleep overshoots a little.
                clock += Duration::from_micros(late_us);
            }
            let ideal = (n - 1) as f64 / rate;
            let got = clock.as_secs_f64() - late_us as f64 / 1e6;
            // Never early; late by at most one overshoot, unless every send is slower than
            // the rate allows (then records go back to back).
            let step = late_us as f64 / 1e6;
            prop_assert!(got + 1e-9 >= ideal);
            prop_assert!(got <= ideal.max((n - 1) as f64 * step) + step + 1e-6);
        }
    }

    proptest! {
        /// A pacer restored from its progress, on a clock that goes on from the elapsed time
        /// at the cut, gives every later record the wait an uninterrupted one gives.
        #[test]
        fn a_resumed_pacer_keeps_the_pace(by_rate in any::<bool>(), cut in 0usize..50,
                                          gaps in prop::collection::vec(0i64..5_000, 1..50)) {
            let pace = if by_rate { Pace::Rate(20.0) } else { Pace::Speed(4.0) };
            let times: Vec<Millis> = gaps
                .iter()
                .scan(1_000_000, |t, g| { *t += g; Some(*t) })
                .collect();
            let cut = cut.min(times.len());
            let run = |p: &mut Pacer, clock: &mut Duration, times: &[Millis]| -> Vec<Duration> {
                times.iter().map(|&t| {
                    let wait = p.wait_before(|| *clock, Some(t));
                    *clock += wait + Duration::from_micros(300);
                    p.sent();
                    wait
                }).collect()
            };
            let (mut whole, mut clock) = (Pacer::new(pace), Duration::ZERO);
            let want = run(&mut whole, &mut clock, &times);
            let (mut first, mut clock) = (Pacer::new(pace), Duration::ZERO);
            let mut got = run(&mut first, &mut clock, &times[..cut]);
            let mut resumed = Pacer::resume(pace, first.progress());
            got.extend(run(&mut resumed, &mut clock, &times[cut..]));
            prop_assert_eq!(got, want);
        }
    }
}
