//! A `watermark-profile` run's task: the lateness profile of the records it reads, and how
//! far each of its partitions has got in event time, for out-of-orderness. A run has one; a
//! consumer-group member has one per input partition it owns, which moves with the partition
//! (`PartitionTask`), and reports them merged as one.

use serde::{Deserialize, Serialize};

use super::lateness::{Profile, ProfileState, Report};
use super::partitioned::{Parent, PartitionTask, Tasks};
use super::time::Millis;
use super::window::WindowKind;

/// The rule of a window run that a profile predicts (`--tumbling`, `--hop`): a record is
/// late when the end of its last window, plus the allowed lateness, is at or behind its
/// partition's watermark, the largest event time before it there minus the delay.
#[derive(Clone, Copy, Debug)]
pub struct WindowRule {
    pub kind: WindowKind,
    pub allowed_lateness: Millis,
}

impl WindowRule {
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
}

/// What a checkpoint keeps of a task: a run's, or one partition's.
#[derive(Serialize, Deserialize)]
pub struct TaskState {
    profile: ProfileState,
    max_seen: Vec<Millis>,
    no_time: u64,
}

impl Task {
    pub fn new(profile: Profile) -> Task {
        Task {
            profile,
            max_seen: Vec::new(),
            no_time: 0,
            window: None,
        }
    }

    /// A task whose late counts follow `window`'s rule, if given.
    pub fn predicting(self, window: Option<WindowRule>) -> Task {
        Task { window, ..self }
    }

    /// Profiles a record of `group` with its event and arrival times, read in `partition`:
    /// its out-of-orderness is how far its partition had got past it.
    pub fn record(
        &mut self,
        group: Option<&str>,
        event: Millis,
        arrival: Millis,
        partition: usize,
    ) {
        let max_seen = &mut self.max_seen;
        if partition >= max_seen.len() {
            max_seen.resize(partition + 1, Millis::MIN);
        }
        let max = &mut max_seen[partition];
        let out_of_order = match (*max, self.window) {
            // Nothing before it in its partition: no watermark yet, never late.
            (Millis::MIN, _) => 0,
            (_, None) => max.saturating_sub(event).max(0),
            (_, Some(rule)) => rule.lateness(*max, event),
        };
        *max = (*max).max(event);
        self.profile.record(group, event, arrival, out_of_order);
    }
}

impl PartitionTask for Task {
    type Saved = TaskState;

    fn saved(&self) -> TaskState {
        TaskState {
            profile: self.profile.state(),
            max_seen: self.max_seen.clone(),
            no_time: self.no_time,
        }
    }

    fn restored(mut fresh: Task, state: TaskState) -> Result<Task, String> {
        fresh.profile.restore(state.profile)?;
        fresh.max_seen = state.max_seen;
        fresh.no_time = state.no_time;
        Ok(fresh)
    }

    /// A child shard's profile: each parent's goes on in one of its children (`whole`), so
    /// that a member's report counts every record once; out-of-orderness is measured afresh
    /// in the child, as a run over the stream measures it in each shard.
    fn inherited(
        mut fresh: Task,
        parents: Vec<Parent<TaskState>>,
        _owns: &dyn Fn(&str) -> bool,
    ) -> Result<Task, String> {
        let empty = fresh.clone();
        for parent in parents.into_iter().filter(|p| p.whole) {
            let task = Task::restored(empty.clone(), parent.saved)?;
            fresh.profile.merge(&task.profile);
            fresh.no_time += task.no_time;
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

    /// Out-of-orderness is measured within a partition: a record behind another
    /// partition's newest is not out of order.
    #[test]
    fn out_of_order_is_per_partition() {
        let mut t = task();
        t.record(None, 10_000, 10_000, 0);
        t.record(None, 4_000, 10_000, 1);
        t.record(None, 7_000, 10_000, 0);
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
        t.record(None, 10_000, 12_000, 0);
        t.no_time = 2;
        let state: TaskState = saved::decode(&saved::encode(&t.saved())).unwrap();
        let again = Task::restored(task(), state).unwrap();
        assert_eq!((again.max_seen.clone(), again.no_time), (vec![10_000], 2));
        let mut tasks = Tasks::per_partition(task);
        tasks.activate(Some(0));
        tasks.active.record(None, 10_000, 12_000, 0);
        tasks.activate(Some(1));
        tasks.active.record(None, 20_000, 20_500, 0);
        tasks.active.no_time = 1;
        let r = report(&mut tasks);
        assert_eq!((r.records, r.no_time), (2, 1));
    }
}
