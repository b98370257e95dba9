//! The lag of Kafka consumer groups, measured: which groups (named, every one, or those a
//! pattern matches), each one's committed offsets against each partition's log, and the time
//! lag, exact (the timestamp of the first record a group has not consumed) or estimated (from
//! the log's ends sampled over time). The math is `core::lag`'s; showing it, `report::lag`'s.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use regex::Regex;

use super::admin::Committed;
use super::{Cluster, GroupDescription};
use crate::core::lag::{
    estimated_time_lag, exact_time_lag, messages_behind, History, LagTimeMode, PartitionLag,
    PartitionOffsets, Sample, TimeLag,
};
use crate::core::time::now_millis;
use crate::error::Result;

/// Whose lag, and how its time lag is found.
pub struct GroupsQuery {
    /// The topic the cluster's URL names, if any: without one, a group's topics are those it
    /// has committed on.
    pub topic: Option<String>,
    /// The groups named (`--group`).
    pub groups: Vec<String>,
    pub all_groups: bool,
    /// `--group-pattern`.
    pub pattern: Option<Regex>,
    pub time_mode: LagTimeMode,
}

/// One measurement of every partition of every group asked about.
pub struct Measured {
    pub rows: Vec<PartitionLag>,
    pub groups: BTreeMap<String, GroupDescription>,
    /// Groups named with --group that have no committed offset on the topics asked about.
    pub uncommitted: Vec<String>,
    /// --group-pattern, when it matched no group.
    pub unmatched_pattern: Option<String>,
}

impl GroupsQuery {
    /// One measurement: each group's lag on each partition, in messages and in time.
    pub fn measure(
        &self,
        cluster: &Cluster,
        history: &mut History,
        describe: &mut bool,
    ) -> Result<Measured> {
        let topics = cluster.topics(self.topic.as_deref())?;
        let mut found = self.groups(cluster)?;
        let log = cluster.log_offsets(&topics)?;
        let committed = cluster.committed(&found.groups, &topics)?;
        let (mut rows, uncommitted) = self.rows(&found.groups, &committed, &topics, &log);
        // Groups that never read these topics are no part of the report, unless named.
        let shown: BTreeSet<&str> = rows.iter().map(|r| r.offsets.group.as_str()).collect();
        (found.groups).retain(|g| self.groups.contains(g) || shown.contains(g.as_str()));
        match self.time_mode {
            LagTimeMode::Exact => exact_times(cluster, &mut rows)?,
            LagTimeMode::None => {}
            LagTimeMode::Estimate => estimated_times(cluster, &mut rows, &log, history)?,
        }
        let groups = descriptions(cluster, &found, describe);
        Ok(Measured {
            rows,
            groups,
            uncommitted,
            unmatched_pattern: (self.pattern.as_ref())
                .filter(|_| !found.matched)
                .map(|p| p.as_str().to_string()),
        })
    }

    /// The groups to measure: those named, and those the cluster has that match.
    fn groups(&self, cluster: &Cluster) -> Result<Groups> {
        let mut groups: BTreeSet<String> = self.groups.iter().cloned().collect();
        let mut states: HashMap<String, String> = HashMap::new();
        let mut matched = false;
        if self.all_groups || self.pattern.is_some() {
            for (g, state) in cluster.groups()? {
                if self.pattern.as_ref().is_none_or(|p| p.is_match(&g)) {
                    matched = true;
                    if let Some(state) = state {
                        states.insert(g.clone(), state);
                    }
                    groups.insert(g);
                }
            }
        }
        Ok(Groups {
            groups: groups.into_iter().collect(),
            states,
            matched,
        })
    }

    /// A row per group and partition, its lag in messages; and the named groups with no
    /// committed offset on these topics.
    fn rows(
        &self,
        groups: &[String],
        committed: &[Committed],
        topics: &[(String, Vec<i32>)],
        log: &LogOffsets,
    ) -> (Vec<PartitionLag>, Vec<String>) {
        let mut rows = Vec::new();
        let mut uncommitted = Vec::new();
        for (group, offsets) in groups.iter().zip(committed) {
            let mut any_commit = false;
            for (topic, partitions) in topics {
                let commit_of = |p: i32| offsets.get(&(topic.clone(), p)).copied().flatten();
                let has_commit = partitions.iter().any(|p| commit_of(*p).is_some());
                any_commit |= has_commit;
                // Without a topic in the URL, a group's topics are those it has committed on;
                // with one, a group found by --all-groups or a pattern that never committed
                // on it has not read it, and is left out (a named group's partitions show).
                let named = self.groups.contains(group);
                if !has_commit && (self.topic.is_none() || !named) {
                    continue;
                }
                for &p in partitions {
                    let (log_start, log_end) =
                        log.get(&(topic.clone(), p)).copied().unwrap_or((0, 0));
                    let o = PartitionOffsets {
                        group: group.clone(),
                        topic: topic.clone(),
                        partition: p,
                        committed: commit_of(p),
                        log_start,
                        log_end,
                    };
                    rows.push(PartitionLag {
                        messages: messages_behind(&o),
                        offsets: o,
                        time: TimeLag::Unknown,
                    });
                }
            }
            // A named group without commits is said as a finding (exit 5); another is left out.
            if !any_commit && self.groups.contains(group) {
                uncommitted.push(group.clone());
            }
        }
        (rows, uncommitted)
    }
}

/// The groups a report covers, with the states the cluster's listing gave.
struct Groups {
    groups: Vec<String>,
    states: HashMap<String, String>,
    /// Whether any group matched `--group-pattern`.
    matched: bool,
}

/// Each partition's log start and end.
type LogOffsets = HashMap<(String, i32), (i64, i64)>;

/// `--time-mode exact`: each row's time lag from the timestamp of the first record it has
/// not consumed.
fn exact_times(cluster: &Cluster, rows: &mut [PartitionLag]) -> Result<()> {
    let wanted: BTreeSet<(String, i32, i64)> = rows
        .iter()
        .filter_map(|r| {
            let o = &r.offsets;
            let c = o.committed?;
            (c < o.log_end).then(|| (o.topic.clone(), o.partition, c.max(o.log_start)))
        })
        .collect();
    let wanted: Vec<_> = wanted.into_iter().collect();
    let found = cluster.first_records(&wanted)?;
    let now = now_millis();
    for r in rows {
        let o = &r.offsets;
        let sample = o.committed.and_then(|c| {
            found
                .get(&(o.topic.clone(), o.partition, c.max(o.log_start)))
                .map(|&(offset, timestamp)| Sample { offset, timestamp })
        });
        r.time = exact_time_lag(o, sample, now);
    }
    Ok(())
}

/// `--time-mode estimate`: each row's time lag read off its partition's rate of writes,
/// from the log's first and last records and the ends sampled so far.
fn estimated_times(
    cluster: &Cluster,
    rows: &mut [PartitionLag],
    log: &LogOffsets,
    history: &mut History,
) -> Result<()> {
    let mut wanted = BTreeSet::new();
    for ((topic, p), &(start, end)) in log {
        if end > start {
            wanted.insert((topic.clone(), *p, start));
            wanted.insert((topic.clone(), *p, end - 1));
        }
    }
    let wanted: Vec<_> = wanted.into_iter().collect();
    let found = cluster.first_records(&wanted)?;
    let now = now_millis();
    for ((topic, p), &(_, end)) in log {
        let sample = Sample {
            offset: end,
            timestamp: now,
        };
        history.add(topic, *p, sample);
    }
    // A partition's points are the same for every group: gathered once.
    let mut points: HashMap<(String, i32), Vec<Sample>> = log
        .keys()
        .map(|(t, p)| ((t.clone(), *p), history.points(t, *p).to_vec()))
        .collect();
    for ((t, p, _), &(offset, timestamp)) in &found {
        if let Some(list) = points.get_mut(&(t.clone(), *p)) {
            list.push(Sample { offset, timestamp });
        }
    }
    for r in rows {
        let o = &r.offsets;
        let partition_points = points
            .get(&(o.topic.clone(), o.partition))
            .map_or(&[][..], Vec::as_slice);
        r.time = estimated_time_lag(o, partition_points, now);
    }
    Ok(())
}

/// Each group's state and members, as the cluster describes them (or lists them, for a
/// broker that will not describe).
fn descriptions(
    cluster: &Cluster,
    found: &Groups,
    describe: &mut bool,
) -> BTreeMap<String, GroupDescription> {
    let mut descriptions = BTreeMap::new();
    for g in &found.groups {
        let mut d = if *describe {
            cluster.describe(g)
        } else {
            GroupDescription::default()
        };
        // A broker that will not describe one group will not describe the next either.
        if d.state.is_none() && d.members.is_none() {
            *describe = false;
        }
        if d.state.is_none() {
            d.state = found.states.get(g).cloned();
        }
        descriptions.insert(g.clone(), d);
    }
    descriptions
}
