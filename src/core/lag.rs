//! Consumer lag math: messages behind the log end, and time behind the newest record, per
//! partition and per group/topic, with the thresholds scripts alert on. Pure: offsets, sampled
//! timestamps and "now" come in as numbers.

use std::collections::{BTreeMap, BTreeSet};

use super::time::{format_millis, human_duration, Millis};

/// What the cluster says about one partition for one group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionOffsets {
    pub group: String,
    pub topic: String,
    pub partition: i32,
    /// The group's committed offset (the next record it will read); `None` when it has none.
    pub committed: Option<i64>,
    /// The earliest offset still in the log.
    pub log_start: i64,
    /// The log-end offset (high watermark): the offset the next record will get.
    pub log_end: i64,
}

/// A record read from the log: its offset and timestamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    pub offset: i64,
    pub timestamp: Millis,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeMode {
    Exact,
    Estimate,
}

/// How the time lag of a partition was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeLag {
    /// The group has read everything: no time lag.
    CaughtUp,
    /// now - timestamp of the first unconsumed record. `understated` when that record is gone
    /// (retention, compaction) and the next one stood in for it.
    Exact { ms: Millis, understated: bool },
    /// Interpolated between sampled (offset, time) points.
    Estimate { ms: Millis },
    /// No committed offset, or no record or points to go by.
    Unknown,
}

impl TimeLag {
    pub fn millis(self) -> Option<Millis> {
        match self {
            TimeLag::CaughtUp => Some(0),
            TimeLag::Exact { ms, .. } | TimeLag::Estimate { ms } => Some(ms),
            TimeLag::Unknown => None,
        }
    }
}

/// One row of the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionLag {
    pub offsets: PartitionOffsets,
    /// log end - committed; `None` when the group has no committed offset (not zero).
    pub messages: Option<i64>,
    pub time: TimeLag,
}

/// Messages behind: what `kafka-consumer-groups.sh` shows as LAG. A committed offset past the
/// end (a truncated or recreated topic) counts as zero, not negative.
pub fn messages_behind(o: &PartitionOffsets) -> Option<i64> {
    o.committed.map(|c| (o.log_end - c).max(0))
}

/// The exact time lag, from the first record at or after the committed offset.
pub fn exact_time_lag(
    o: &PartitionOffsets,
    first_unconsumed: Option<Sample>,
    now: Millis,
) -> TimeLag {
    let Some(committed) = o.committed else {
        return TimeLag::Unknown;
    };
    if committed >= o.log_end {
        return TimeLag::CaughtUp;
    }
    match first_unconsumed {
        Some(s) => TimeLag::Exact {
            ms: (now - s.timestamp).max(0),
            understated: s.offset > committed,
        },
        None => TimeLag::Unknown,
    }
}

/// The estimated time lag: the committed offset's time interpolated linearly between the
/// nearest sampled points around it, never extrapolated beyond them.
pub fn estimated_time_lag(o: &PartitionOffsets, points: &[Sample], now: Millis) -> TimeLag {
    let Some(committed) = o.committed else {
        return TimeLag::Unknown;
    };
    if committed >= o.log_end {
        return TimeLag::CaughtUp;
    }
    match interpolate(points, committed) {
        Some(t) => TimeLag::Estimate {
            ms: (now - t).max(0),
        },
        None => TimeLag::Unknown,
    }
}

/// The time at `offset` between the sampled points on either side (points in any order).
pub fn interpolate(points: &[Sample], offset: i64) -> Option<Millis> {
    let below = points
        .iter()
        .filter(|p| p.offset <= offset)
        .max_by_key(|p| p.offset)?;
    let above = points
        .iter()
        .filter(|p| p.offset >= offset)
        .min_by_key(|p| p.offset)?;
    if below.offset == above.offset {
        return Some(below.timestamp);
    }
    let span = (above.offset - below.offset) as f64;
    let share = (offset - below.offset) as f64 / span;
    let t = below.timestamp as f64 + share * (above.timestamp - below.timestamp) as f64;
    Some(t.round() as Millis)
}

/// Sums per group and topic: messages add up, time lag is the worst partition's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Total {
    pub partitions: usize,
    pub without_commit: usize,
    pub messages: i64,
    pub max_time_ms: Option<Millis>,
}

pub fn totals<'a>(
    rows: impl IntoIterator<Item = &'a PartitionLag>,
) -> BTreeMap<(String, String), Total> {
    let mut out: BTreeMap<(String, String), Total> = BTreeMap::new();
    for r in rows {
        let t = out
            .entry((r.offsets.group.clone(), r.offsets.topic.clone()))
            .or_default();
        t.partitions += 1;
        match r.messages {
            Some(m) => t.messages += m,
            None => t.without_commit += 1,
        }
        if let Some(ms) = r.time.millis() {
            t.max_time_ms = Some(t.max_time_ms.map_or(ms, |m: Millis| m.max(ms)));
        }
    }
    out
}

/// How `lag` finds a time lag.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LagTimeMode {
    /// now - timestamp of the first unconsumed record, read from the log.
    #[default]
    Exact,
    /// Interpolated between sampled (offset, time) points, never beyond them.
    Estimate,
    /// Messages only: no record is read (the cheapest, for very many partitions).
    None,
}

/// Where `--max-messages` applies: to each partition, or to a group's sum over a topic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Scope {
    #[default]
    Group,
    Partition,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Thresholds {
    pub max_time_ms: Option<Millis>,
    pub max_messages: Option<i64>,
    pub scope: Scope,
}

/// What tripped a threshold, for the message on stderr.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Breach {
    pub group: String,
    pub topic: String,
    /// `None` for a group-wide breach.
    pub partition: Option<i32>,
    pub what: String,
}

/// The messages a partition counts against `--max-messages`: its lag, or, where the group has
/// no commit, everything the partition holds (the group has consumed none of it; counting it
/// as nothing would pass a group that never read two of three partitions).
fn counted_messages(r: &PartitionLag) -> i64 {
    r.messages
        .unwrap_or((r.offsets.log_end - r.offsets.log_start).max(0))
}

/// A time lag over its threshold, as the table shows durations (`2h8m > 5m`).
fn time_over_what(lag: Option<Millis>, max: Option<Millis>) -> String {
    format!(
        "time lag {} > {}",
        human_duration(lag.unwrap_or(0)),
        human_duration(max.unwrap_or(0))
    )
}

pub fn breaches(rows: &[PartitionLag], th: &Thresholds) -> Vec<Breach> {
    let mut out = Vec::new();
    let time_over = |ms: Option<Millis>| match (ms, th.max_time_ms) {
        (Some(ms), Some(max)) => ms > max,
        _ => false,
    };
    // A group with no commit at all on a topic cannot be checked there (said apart, by
    // `unmeasured_breaches`): none of its partitions count against the threshold.
    let measured: BTreeSet<(&str, &str)> = (rows.iter())
        .filter(|r| r.messages.is_some())
        .map(|r| (r.offsets.group.as_str(), r.offsets.topic.as_str()))
        .collect();
    let rows: Vec<&PartitionLag> = (rows.iter())
        .filter(|r| measured.contains(&(r.offsets.group.as_str(), r.offsets.topic.as_str())))
        .collect();
    match th.scope {
        Scope::Partition => {
            for r in rows {
                let mut what = Vec::new();
                if let Some(max) = th.max_messages {
                    let m = counted_messages(r);
                    if m > max {
                        what.push(format!("{m} messages > {max}"));
                    }
                }
                if time_over(r.time.millis()) {
                    what.push(time_over_what(r.time.millis(), th.max_time_ms));
                }
                if !what.is_empty() {
                    out.push(Breach {
                        group: r.offsets.group.clone(),
                        topic: r.offsets.topic.clone(),
                        partition: Some(r.offsets.partition),
                        what: what.join(", "),
                    });
                }
            }
        }
        Scope::Group => {
            let mut counted: BTreeMap<(&str, &str), i64> = BTreeMap::new();
            for r in &rows {
                let at = (r.offsets.group.as_str(), r.offsets.topic.as_str());
                *counted.entry(at).or_default() += counted_messages(r);
            }
            for ((group, topic), t) in totals(rows.iter().copied()) {
                let mut what = Vec::new();
                if let Some(max) = th.max_messages {
                    let m = counted[&(group.as_str(), topic.as_str())];
                    if m > max {
                        what.push(format!("{m} messages > {max}"));
                    }
                }
                if time_over(t.max_time_ms) {
                    what.push(time_over_what(t.max_time_ms, th.max_time_ms));
                }
                if !what.is_empty() {
                    out.push(Breach {
                        group,
                        topic,
                        partition: None,
                        what: what.join(", "),
                    });
                }
            }
        }
    }
    out
}

/// What cannot be checked at all, with or without a threshold: a group named with `--group`
/// that has no committed offset on the topics asked about (a mistyped or retired group must
/// not pass an alert as "no lag"), and a `--group-pattern` no group matches.
pub fn unmeasured_breaches(
    groups: &[String],
    pattern_matched_nothing: Option<&str>,
    topic: Option<&str>,
) -> Vec<Breach> {
    let mut out: Vec<Breach> = groups
        .iter()
        .map(|group| Breach {
            group: group.clone(),
            topic: topic.unwrap_or_default().to_string(),
            partition: None,
            what: "no committed offsets, so its lag cannot be checked".into(),
        })
        .collect();
    if let Some(pattern) = pattern_matched_nothing {
        out.push(Breach {
            group: String::new(),
            topic: topic.unwrap_or_default().to_string(),
            partition: None,
            what: format!("no group matches --group-pattern '{pattern}'"),
        });
    }
    out
}

/// Where a Kinesis consumer stands in a shard: a weir checkpoint's or a KCL lease's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShardCheckpoint {
    /// The consumer has no position in this shard yet.
    None,
    /// It starts at the oldest record (KCL's TRIM_HORIZON): it has read nothing.
    TrimHorizon,
    /// It starts at the newest (KCL's LATEST).
    Latest,
    /// It has read none of the shard's records yet and starts at those that arrived from
    /// this time on (a weir checkpoint's shard started from `end` or a time).
    AtTimestamp(Millis),
    /// It has read the shard to its end (KCL's SHARD_END; a weir checkpoint's done shard).
    ShardEnd,
    /// It has handled the record with this sequence number (with a subsequence: that user
    /// record of a KPL aggregate).
    At {
        sequence: String,
        subsequence: Option<u64>,
    },
}

impl ShardCheckpoint {
    /// How a report shows it: a sequence number, or the name KCL gives the position (the
    /// subsequence, where there is one, is `subsequence`).
    pub fn text(&self) -> String {
        match self {
            ShardCheckpoint::None => "-".into(),
            ShardCheckpoint::TrimHorizon => "TRIM_HORIZON".into(),
            ShardCheckpoint::Latest => "LATEST".into(),
            ShardCheckpoint::ShardEnd => "SHARD_END".into(),
            ShardCheckpoint::AtTimestamp(t) => format!("AT_TIMESTAMP {}", format_millis(*t)),
            ShardCheckpoint::At { sequence, .. } => sequence.clone(),
        }
    }

    /// The user record of a KPL aggregate the checkpoint is at.
    pub fn subsequence(&self) -> Option<u64> {
        match self {
            ShardCheckpoint::At { subsequence, .. } => *subsequence,
            _ => None,
        }
    }
}

/// One shard's row of a Kinesis lag report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardLag {
    pub stream: String,
    pub shard: String,
    /// The consumer: a weir checkpoint's path, or a KCL application's name.
    pub consumer: String,
    pub checkpoint: ShardCheckpoint,
    /// The KCL worker holding the shard's lease.
    pub owner: Option<String>,
    pub time: TimeLag,
    /// What GetRecords said from the checkpoint on.
    pub millis_behind_latest: Option<i64>,
    /// The shard was closed by a split or merge.
    pub closed: bool,
}

/// A shard's time lag: `now` minus the arrival time of the first record after the
/// checkpoint (`first_after`), or none when the consumer is caught up or done.
pub fn shard_time_lag(
    checkpoint: &ShardCheckpoint,
    first_after: Option<Millis>,
    now: Millis,
) -> TimeLag {
    match (checkpoint, first_after) {
        (ShardCheckpoint::None, _) => TimeLag::Unknown,
        (ShardCheckpoint::ShardEnd | ShardCheckpoint::Latest, _) => TimeLag::CaughtUp,
        (_, None) => TimeLag::CaughtUp,
        (_, Some(arrival)) => TimeLag::Exact {
            ms: now.saturating_sub(arrival).max(0),
            understated: false,
        },
    }
}

/// The shards whose time lag is over `max_time_ms`.
pub fn shard_breaches(rows: &[ShardLag], max_time_ms: Option<Millis>) -> Vec<(usize, Millis)> {
    let Some(max) = max_time_ms else {
        return Vec::new();
    };
    rows.iter()
        .enumerate()
        .filter_map(|(i, r)| r.time.millis().filter(|&ms| ms > max).map(|ms| (i, ms)))
        .collect()
}

/// Points sampled over time for `--time-mode estimate` under `--watch`: per partition, the
/// log end seen at each poll and when. Bounded: the oldest points go first.
#[derive(Debug, Default)]
pub struct History {
    points: BTreeMap<(String, i32), Vec<Sample>>,
    cap: usize,
    pub evicted: u64,
}

impl History {
    pub fn new(cap_per_partition: usize) -> History {
        History {
            points: BTreeMap::new(),
            cap: cap_per_partition.max(2),
            evicted: 0,
        }
    }

    pub fn add(&mut self, topic: &str, partition: i32, sample: Sample) {
        let points = self
            .points
            .entry((topic.to_string(), partition))
            .or_default();
        if points.last().is_some_and(|p| p.offset == sample.offset) {
            return; // nothing new was written: the first time this end was seen stays
        }
        points.push(sample);
        if points.len() > self.cap {
            points.remove(0);
            self.evicted += 1;
        }
    }

    pub fn points(&self, topic: &str, partition: i32) -> &[Sample] {
        self.points
            .get(&(topic.to_string(), partition))
            .map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn offsets(committed: Option<i64>, log_start: i64, log_end: i64) -> PartitionOffsets {
        PartitionOffsets {
            group: "g".into(),
            topic: "t".into(),
            partition: 0,
            committed,
            log_start,
            log_end,
        }
    }

    #[test]
    fn a_group_without_commits_and_a_pattern_matching_none_are_unchecked() {
        let groups = vec!["typo".to_string()];
        let b = unmeasured_breaches(&groups, None, Some("t"));
        assert_eq!(b.len(), 1);
        assert_eq!((b[0].group.as_str(), b[0].topic.as_str()), ("typo", "t"));
        let b = unmeasured_breaches(&[], Some("^etl-"), None);
        assert_eq!(b.len(), 1);
        assert!(b[0].what.contains("'^etl-'"), "{}", b[0].what);
        assert!(unmeasured_breaches(&[], None, None).is_empty());
    }

    #[test]
    fn messages_and_exact_time() {
        let now = 100_000;
        let o = offsets(Some(40), 0, 100);
        assert_eq!(messages_behind(&o), Some(60));
        let first = Sample {
            offset: 40,
            timestamp: 70_000,
        };
        assert_eq!(
            exact_time_lag(&o, Some(first), now),
            TimeLag::Exact {
                ms: 30_000,
                understated: false
            }
        );
        // The record at 40 is gone: 55 stands in, and the lag is flagged as understated.
        let later = Sample {
            offset: 55,
            timestamp: 80_000,
        };
        assert_eq!(
            exact_time_lag(&o, Some(later), now),
            TimeLag::Exact {
                ms: 20_000,
                understated: true
            }
        );
        let caught_up = offsets(Some(100), 0, 100);
        assert_eq!(messages_behind(&caught_up), Some(0));
        assert_eq!(exact_time_lag(&caught_up, None, now), TimeLag::CaughtUp);
        let none = offsets(None, 0, 100);
        assert_eq!(messages_behind(&none), None);
        assert_eq!(exact_time_lag(&none, None, now), TimeLag::Unknown);
        // Committed past the end (topic recreated): zero, not negative.
        assert_eq!(messages_behind(&offsets(Some(120), 0, 100)), Some(0));
    }

    #[test]
    fn estimates_never_extrapolate() {
        let points = [
            Sample {
                offset: 0,
                timestamp: 0,
            },
            Sample {
                offset: 100,
                timestamp: 10_000,
            },
        ];
        assert_eq!(interpolate(&points, 50), Some(5_000));
        assert_eq!(interpolate(&points, 100), Some(10_000));
        assert_eq!(interpolate(&points, 101), None);
        assert_eq!(interpolate(&points, -1), None);
        let o = offsets(Some(25), 0, 200);
        assert_eq!(
            estimated_time_lag(&o, &points, 20_000),
            TimeLag::Estimate { ms: 17_500 }
        );
        assert_eq!(
            estimated_time_lag(&offsets(Some(150), 0, 200), &points, 20_000),
            TimeLag::Unknown
        );
    }

    #[test]
    fn totals_and_thresholds() {
        let row = |p: i32, committed: Option<i64>, end: i64, ms: Option<Millis>| PartitionLag {
            offsets: PartitionOffsets {
                partition: p,
                ..offsets(committed, 0, end)
            },
            messages: messages_behind(&offsets(committed, 0, end)),
            time: ms.map_or(TimeLag::Unknown, |ms| TimeLag::Exact {
                ms,
                understated: false,
            }),
        };
        let rows = [
            row(0, Some(90), 100, Some(1_000)),
            row(1, Some(50), 100, Some(60_000)),
            row(2, None, 100, None),
        ];
        let t = &totals(&rows)[&("g".to_string(), "t".to_string())];
        assert_eq!(t.messages, 60);
        assert_eq!(t.without_commit, 1);
        assert_eq!(t.max_time_ms, Some(60_000));
        let th = |ms: Option<Millis>, msgs: Option<i64>, scope| Thresholds {
            max_time_ms: ms,
            max_messages: msgs,
            scope,
        };
        // Against --max-messages the uncommitted partition counts all it holds: 10 + 50 + 100.
        assert!(breaches(&rows, &th(Some(60_000), Some(160), Scope::Group)).is_empty());
        let b = breaches(&rows, &th(None, Some(159), Scope::Group));
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].what, "160 messages > 159");
        assert_eq!(
            breaches(&rows, &th(Some(59_999), None, Scope::Group)).len(),
            1
        );
        // Per partition: no single partition is over 100.
        assert!(breaches(&rows, &th(None, Some(100), Scope::Partition)).is_empty());
        let b = breaches(&rows, &th(None, Some(49), Scope::Partition));
        let over: Vec<Option<i32>> = b.iter().map(|b| b.partition).collect();
        assert_eq!(over, [Some(1), Some(2)]);
    }

    #[test]
    fn history_is_bounded() {
        let mut h = History::new(3);
        for i in 0..5 {
            h.add(
                "t",
                0,
                Sample {
                    offset: i * 10,
                    timestamp: i * 1000,
                },
            );
            h.add(
                "t",
                0,
                Sample {
                    offset: i * 10,
                    timestamp: i * 1000 + 500,
                },
            );
        }
        assert_eq!(h.points("t", 0).len(), 3);
        assert_eq!(h.evicted, 2);
        assert_eq!(
            h.points("t", 0)[0],
            Sample {
                offset: 20,
                timestamp: 2000
            }
        );
        assert!(h.points("t", 1).is_empty());
    }

    proptest! {
        /// Interpolation on a line gives the line, and stays between its neighbours.
        #[test]
        fn interpolation_stays_between_points(
            mut offsets in proptest::collection::vec(0i64..1_000_000, 2..20),
            at in 0i64..1_000_000,
        ) {
            offsets.sort_unstable();
            offsets.dedup();
            let points: Vec<Sample> = offsets.iter().map(|&o| Sample { offset: o, timestamp: 3 * o + 7 }).collect();
            match interpolate(&points, at) {
                Some(t) => {
                    prop_assert!(at >= offsets[0] && at <= *offsets.last().unwrap());
                    prop_assert!((t - (3 * at + 7)).abs() <= 1);
                }
                None => prop_assert!(at < offsets[0] || at > *offsets.last().unwrap()),
            }
        }
    }

    #[test]
    fn shard_time_lags() {
        let at = ShardCheckpoint::At {
            sequence: "1".into(),
            subsequence: None,
        };
        assert_eq!(
            shard_time_lag(&at, Some(1_000), 5_000),
            TimeLag::Exact {
                ms: 4_000,
                understated: false
            }
        );
        assert_eq!(shard_time_lag(&at, None, 5_000), TimeLag::CaughtUp);
        // A clock behind the service's does not make a negative lag.
        assert_eq!(shard_time_lag(&at, Some(6_000), 5_000).millis(), Some(0));
        assert_eq!(
            shard_time_lag(&ShardCheckpoint::TrimHorizon, Some(1_000), 5_000).millis(),
            Some(4_000)
        );
        assert_eq!(
            shard_time_lag(&ShardCheckpoint::ShardEnd, Some(1_000), 5_000),
            TimeLag::CaughtUp
        );
        assert_eq!(
            shard_time_lag(&ShardCheckpoint::None, Some(1_000), 5_000),
            TimeLag::Unknown
        );
        let row = |ms| ShardLag {
            stream: "s".into(),
            shard: "shardId-0".into(),
            consumer: "c".into(),
            checkpoint: at.clone(),
            owner: None,
            time: TimeLag::Exact {
                ms,
                understated: false,
            },
            millis_behind_latest: None,
            closed: false,
        };
        let rows = [row(10), row(30)];
        assert_eq!(shard_breaches(&rows, Some(20)), [(1, 30)]);
        assert!(shard_breaches(&rows, None).is_empty());
    }
}
