//! A `watermark-profile` run's task: the lateness profile of the records it reads, and how
//! far each of its partitions has got in event time, for out-of-orderness. A run has one; a
//! consumer-group member has one per input partition it owns, which moves with the partition
//! (`PartitionTask`), and reports them merged as one.

use serde::{Deserialize, Serialize};

use super::lateness::{Late, Profile, ProfileState, Report};
use super::partitioned::{Parent, PartitionTask, Tasks};
use super::time::{human_duration, Millis};
use super::watermark::{Watermarks, NO_WATERMARK};
use super::window::{
    EmitMode, Outcome, Row, TooManyWindows, WindowConfig, WindowKind, WindowOperator, WindowState,
};

/// The delays a session profile tries besides those asked for, to recommend the smallest that
/// meets each target: a session's lateness is no one number per record to take a quantile of.
pub const SESSION_DELAYS_TRIED: [Millis; 18] = [
    0, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000,
    1_800_000, 3_600_000, 7_200_000, 21_600_000, 43_200_000, 86_400_000,
];

/// The rule of a window run that a profile predicts (`--tumbling`, `--hop`): a record is
/// late when the end of its last window, plus the allowed lateness, is at or behind its
/// partition's watermark, the largest event time before it there minus the delay. A session
/// (`--session`) is judged by the session it would join, which depends on which earlier
/// records of its key were late: `Sessions` runs the window itself.
#[derive(Clone, Copy, Debug)]
pub struct WindowRule {
    pub kind: WindowKind,
    pub allowed_lateness: Millis,
    /// As window's --max-open-windows (sessions only).
    pub max_open_windows: usize,
}

impl WindowRule {
    /// The flags of `window` this rule follows, as a user types them (sessions by `keys`).
    pub fn flags(&self, keys: &[impl std::fmt::Display]) -> String {
        let mut flags = self.kind.flags();
        if let WindowKind::Session { .. } = self.kind {
            flags.extend(keys.iter().map(|k| format!(" --key {k}")));
        }
        if self.allowed_lateness != 0 {
            let lateness = human_duration(self.allowed_lateness);
            flags += &format!(" --allowed-lateness {lateness}");
        }
        flags
    }

    /// The measure a delay is compared with: a record is late with delay `d` exactly when it
    /// exceeds `d`, as out-of-orderness is (late at `max - d >= end + lateness`, so at
    /// `max - end - lateness + 1 > d`). `None` before any record of the partition.
    fn lateness(&self, max_before: Millis, event: Millis) -> Millis {
        let closes = self
            .kind
            .last_end(event)
            .saturating_add(self.allowed_lateness);
        max_before.saturating_sub(closes).saturating_add(1)
    }
}

/// What is profiled: a run's records, or, for a consumer-group member, one partition's.
#[derive(Clone)]
pub struct Task {
    pub profile: Profile,
    /// Largest event time seen per partition (of `--partition-by`, numbered).
    max_seen: Vec<Millis>,
    /// Records left out without a usable time.
    pub no_time: u64,
    /// Late counts and recommendations by a window's rule instead of out-of-orderness.
    pub window: Option<WindowRule>,
    /// With `--session`: the window run once per delay of the profile.
    sessions: Option<Sessions>,
    /// What window judges a record by, with no delay: its partition's largest event time
    /// before it, or the combined watermark where that stands further on (a partition new
    /// to a watermark that already moved). The window's at delay d is this minus d.
    judged: Watermarks,
}

/// Session windows run as `window` runs them, one operator per delay of the profile (with
/// only a count to keep), for each record's late verdicts.
struct Sessions {
    config: WindowConfig,
    ops: Vec<WindowOperator>,
    verdicts: Vec<bool>,
    /// The rows the operators fire, dropped: only the verdicts count.
    rows: Vec<Row>,
}

impl Sessions {
    fn new(rule: &WindowRule, delays: &[Millis]) -> Sessions {
        let config = WindowConfig {
            kind: rule.kind,
            allowed_lateness: rule.allowed_lateness,
            emit: EmitMode::Final,
            aggs: Vec::new(),
            max_open_windows: rule.max_open_windows,
        };
        let ops = (delays.iter())
            .map(|d| WindowOperator::new(config.clone(), Watermarks::new(*d, None)))
            .collect();
        Sessions {
            config,
            ops,
            verdicts: vec![false; delays.len()],
            rows: Vec::new(),
        }
    }

    /// Judges a record of `key` with every delay, as window would.
    fn judge(&mut self, key: &str, event: Millis, partition: usize) -> Result<(), TooManyWindows> {
        for (op, late) in self.ops.iter_mut().zip(&mut self.verdicts) {
            let outcome = op.process(key, event, partition, &[], 0, &mut self.rows)?;
            *late = outcome == Outcome::Late;
            self.rows.clear();
        }
        Ok(())
    }

    fn states(&self) -> Vec<WindowState> {
        self.ops.iter().map(WindowOperator::state).collect()
    }

    fn restored(&self, states: Vec<WindowState>) -> Result<Sessions, String> {
        if states.len() != self.ops.len() {
            return Err("the checkpoint's sessions were profiled with other delays".into());
        }
        let ops = (states.into_iter())
            .map(|s| WindowOperator::restore(self.config.clone(), s))
            .collect::<Result<_, _>>()?;
        Ok(Sessions {
            config: self.config.clone(),
            ops,
            verdicts: self.verdicts.clone(),
            rows: Vec::new(),
        })
    }
}

impl Clone for Sessions {
    fn clone(&self) -> Sessions {
        self.restored(self.states())
            .expect("an operator's own state restores")
    }
}

/// What a checkpoint keeps of a task: a run's, or one partition's.
#[derive(Serialize, Deserialize)]
pub struct TaskState {
    profile: ProfileState,
    max_seen: Vec<Millis>,
    no_time: u64,
    #[serde(default)]
    sessions: Vec<WindowState>,
    #[serde(default = "undelayed")]
    judged: Watermarks,
}

fn undelayed() -> Watermarks {
    Watermarks::new(0, None)
}

impl Task {
    pub fn new(profile: Profile) -> Task {
        Task {
            profile,
            max_seen: Vec::new(),
            no_time: 0,
            window: None,
            sessions: None,
            judged: undelayed(),
        }
    }

    /// The source reads exactly these partitions from now on, as window's `assign`.
    /// Each input partition heard from: id, highest event time, and the watermark with no
    /// delay a window's record of it would be judged by.
    pub fn partition_marks(&self) -> impl Iterator<Item = (usize, Millis, Millis)> + '_ {
        self.judged.partitions()
    }

    pub fn assign(&mut self, partitions: &[usize]) {
        self.judged.assign(partitions, 0);
        if let Some(s) = &mut self.sessions {
            for op in &mut s.ops {
                op.assign(partitions, 0, &mut s.rows);
            }
            s.rows.clear();
        }
    }

    /// The input has `n` partitions (an envelope's count): as in window, those not heard
    /// from yet hold the combined watermark back.
    pub fn expect(&mut self, n: usize) {
        self.judged.expect(n, 0);
        for op in self.sessions.iter_mut().flat_map(|s| s.ops.iter_mut()) {
            op.expect(n, 0);
        }
    }

    /// A task whose late counts follow `window`'s rule, if given; for sessions, its
    /// recommendations are the smallest of `SESSION_DELAYS_TRIED` and the delays asked for.
    pub fn predicting(self, window: Option<WindowRule>) -> Task {
        let Some(rule) = window.filter(|w| matches!(w.kind, WindowKind::Session { .. })) else {
            return Task { window, ..self };
        };
        let profile = self.profile.trying(&SESSION_DELAYS_TRIED);
        let sessions = Some(Sessions::new(&rule, profile.delays()));
        Task {
            profile,
            window,
            sessions,
            ..self
        }
    }

    /// Profiles a record of `group` and `key` with its event and arrival times, read in
    /// `partition`: its out-of-orderness is how far its partition had got past it.
    pub fn record(
        &mut self,
        (group, key): (Option<&str>, &str),
        event: Millis,
        arrival: Millis,
        partition: usize,
    ) -> Result<(), TooManyWindows> {
        let max_seen = &mut self.max_seen;
        if partition >= max_seen.len() {
            max_seen.resize(partition + 1, Millis::MIN);
        }
        let max = &mut max_seen[partition];
        let judged = self.judged.judging(partition);
        let out_of_order = match (*max, self.window) {
            (_, Some(rule)) if self.sessions.is_none() => match judged {
                // No watermark yet: never late.
                NO_WATERMARK => 0,
                _ => rule.lateness(judged, event),
            },
            // Nothing before it in its partition: not out of order.
            (Millis::MIN, _) => 0,
            _ => max.saturating_sub(event).max(0),
        };
        *max = (*max).max(event);
        self.judged.observe(partition, event, 0);
        let times = (event, arrival);
        match &mut self.sessions {
            None => self.profile.record(group, event, arrival, out_of_order),
            Some(sessions) => {
                sessions.judge(key, event, partition)?;
                let late = Late::Verdicts(&sessions.verdicts);
                self.profile.record_judged(group, times, out_of_order, late);
            }
        }
        Ok(())
    }
}

impl PartitionTask for Task {
    type Saved = TaskState;

    fn saved(&self) -> TaskState {
        TaskState {
            profile: self.profile.state(),
            max_seen: self.max_seen.clone(),
            no_time: self.no_time,
            sessions: self
                .sessions
                .as_ref()
                .map(Sessions::states)
                .unwrap_or_default(),
            judged: self.judged.clone(),
        }
    }

    fn restored(mut fresh: Task, state: TaskState) -> Result<Task, String> {
        fresh.profile.restore(state.profile)?;
        fresh.max_seen = state.max_seen;
        fresh.no_time = state.no_time;
        fresh.judged = state.judged;
        if let Some(sessions) = &fresh.sessions {
            fresh.sessions = Some(sessions.restored(state.sessions)?);
        }
        Ok(fresh)
    }

    /// A child shard's profile: each parent's goes on in one of its children (`whole`), so
    /// that a member's report counts every record once; out-of-orderness is measured afresh
    /// in the child, as a run over the stream measures it in each shard.
    fn inherited(
        mut fresh: Task,
        parents: Vec<Parent<TaskState>>,
        owns: &dyn Fn(&str) -> bool,
    ) -> Result<Task, String> {
        let empty = fresh.clone();
        // A session's windows go on in the child that owns its key, as window's do.
        let mut sessions: Vec<Vec<Parent<WindowState>>> = Vec::new();
        let mut behind: Option<Watermarks> = None;
        for parent in parents {
            let whole = parent.whole;
            let mut saved = parent.saved;
            // As window's: the watermark of the parent furthest behind.
            if behind
                .as_ref()
                .is_none_or(|b| saved.judged.current() < b.current())
            {
                behind = Some(saved.judged.clone());
            }
            let states = std::mem::take(&mut saved.sessions);
            sessions.resize_with(states.len(), Vec::new);
            for (i, saved) in states.into_iter().enumerate() {
                sessions[i].push(Parent { saved, whole });
            }
            if whole {
                let task = Task::restored(empty.clone(), saved)?;
                fresh.profile.merge(&task.profile);
                fresh.no_time += task.no_time;
            }
        }
        fresh.judged = behind.unwrap_or_else(undelayed);
        if let Some(s) = &mut fresh.sessions {
            for (op, parents) in s.ops.iter_mut().zip(sessions) {
                let blank = WindowOperator::restore(s.config.clone(), op.state())?;
                *op = WindowOperator::inherited(blank, parents, owns)?;
            }
        }
        Ok(fresh)
    }
}

/// The report of `tasks`: a group member's partitions, each profiled apart, as one.
pub fn report(tasks: &mut Tasks<Task>) -> Report {
    let Some(mut all) = tasks.fresh() else {
        return tasks.active.profile.report(tasks.active.no_time);
    };
    tasks.for_each(|t| {
        all.profile.merge(&t.profile);
        all.no_time += t.no_time;
    });
    all.profile.report(all.no_time)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::saved;

    fn task() -> Task {
        Task::new(Profile::new(vec![1000], vec![99.0], 60_000))
    }

    /// The report names the window it predicts with the flags `window` takes: keys only for
    /// sessions, the allowed lateness only when there is one.
    #[test]
    fn a_rule_says_the_flags_of_its_window() {
        let rule = |kind, allowed_lateness| WindowRule {
            kind,
            allowed_lateness,
            max_open_windows: 10,
        };
        let keys = ["user", "device"];
        let tumbling = WindowKind::Tumbling {
            size: 60_000,
            offset: 0,
        };
        assert_eq!(rule(tumbling, 0).flags(&keys), "--tumbling 1m");
        let session = WindowKind::Session { gap: 30_000 };
        assert_eq!(
            rule(session, 90_000).flags(&keys),
            "--session 30s --key user --key device --allowed-lateness 1m30s"
        );
    }

    /// Out-of-orderness is measured within a partition: a record behind another
    /// partition's newest is not out of order.
    #[test]
    fn out_of_order_is_per_partition() {
        let mut t = task();
        t.record((None, ""), 10_000, 10_000, 0).unwrap();
        t.record((None, ""), 4_000, 10_000, 1).unwrap();
        t.record((None, ""), 7_000, 10_000, 0).unwrap();
        assert_eq!(t.max_seen, vec![10_000, 4_000]);
        let r = t.profile.report(0);
        assert_eq!(r.records, 3);
        // Only the third record came after a later one of its partition: by 3 s.
        let max = r
            .overall
            .out_of_order
            .iter()
            .find(|q| q.q == 100.0)
            .unwrap();
        assert_eq!(max.ms, 3_000);
    }

    /// A saved task restores onto a fresh one; tasks merged report as one profile of all
    /// their records.
    #[test]
    fn saved_restored_and_merged() {
        let mut t = task();
        t.record((None, ""), 10_000, 12_000, 0).unwrap();
        t.no_time = 2;
        let state: TaskState = saved::decode(&saved::encode(&t.saved())).unwrap();
        let again = Task::restored(task(), state).unwrap();
        assert_eq!((again.max_seen.clone(), again.no_time), (vec![10_000], 2));
        let mut tasks = Tasks::per_partition(task);
        tasks.activate(Some(0));
        tasks.active.record((None, ""), 10_000, 12_000, 0).unwrap();
        tasks.activate(Some(1));
        tasks.active.record((None, ""), 20_000, 20_500, 0).unwrap();
        tasks.active.no_time = 1;
        let r = report(&mut tasks);
        assert_eq!((r.records, r.no_time), (2, 1));
    }
}
