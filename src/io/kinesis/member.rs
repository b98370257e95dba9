//! A member of a Kinesis application (`-G APP`): the members of one application share a
//! stream's shards through APP's lease table (`lease`), each reading the shards the common
//! plan (`core::lease::plan`) gives it, from the checkpoint in the shard's lease.
//!
//! Every tick the member beats its heartbeat, commits the checkpoints of the records the
//! command has handled (their output durable), reads the table, and follows the plan: it
//! takes a shard whose owner is gone, starts a shard handed to it, and stops one the plan
//! moves away. A stopped shard is handed over only once every record of it read before the
//! stop is handled: one conditional write moves its checkpoint and its owner together, so
//! the next owner repeats nothing. A commit that loses to another member's write (this one
//! stalled, and was taken for gone) stops the shard's reader at once.
//!
//! A pass-through command (`consume`, `replay`) keeps no state per shard: the lease's
//! checkpoint is all a shard's next owner needs, and it follows the records handled. A
//! command that keeps state per shard (`window`, `dedupe`, `watermark-profile`) saves it in
//! the state store (`--state-store`), and the checkpoint moves only with a saved state: one
//! conditional write moves both, so a shard's next owner restores the state and reads on
//! from just after the records it covers.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::client::KinesisClient;
use super::lease::{Commit, Lease, LeaseTable, NewLease, TableScan};
use super::plan::{GroupPlan, ShardInfo, StartAt};
use super::state_store::StateStore;
use crate::core::lag::ShardCheckpoint;
use crate::core::lease::{self, Liveness, ShardLease};
use crate::core::time::{now_millis, Millis};
use crate::error::{Error, Result};
use crate::runtime::{ShardPosition, ShardResume, ShardStart, ShardState};

/// What the reader thread tells the member: the last record handled in each shard, the
/// latest state saved of each (a command that keeps state per shard), and the shards stopped
/// whose every record handed over has been handled.
#[derive(Debug, Default)]
pub struct Handled {
    pub at: HashMap<String, ShardCheckpoint>,
    pub saved: HashMap<String, ShardState>,
    pub drained: HashSet<String>,
}

pub type SharedHandled = Arc<Mutex<Handled>>;

impl Handled {
    /// Takes in positions the command reports handled.
    pub fn positions(shared: &SharedHandled, positions: Vec<ShardPosition>) {
        if positions.is_empty() {
            return;
        }
        let mut handled = shared.lock().expect("not poisoned");
        for p in positions {
            let at = ShardCheckpoint::At {
                sequence: p.sequence.to_string(),
                subsequence: p.subsequence,
            };
            handled.at.insert(p.shard.to_string(), at);
        }
    }

    /// Takes in shard states the command saved, in order: the latest of each shard stays.
    pub fn states(shared: &SharedHandled, states: Vec<ShardState>) {
        if states.is_empty() {
            return;
        }
        let mut handled = shared.lock().expect("not poisoned");
        for state in states {
            handled.saved.insert(state.shard.to_string(), state);
        }
    }
}

/// Until when this member's leases are surely its own: the others take a member's shards
/// only once its heartbeat has stood still for the lease time on their clocks, so a lease
/// holds for the lease time from before the last heartbeat written.
#[derive(Debug)]
pub struct Fresh {
    renewed_at: AtomicI64,
    lease_ms: Millis,
}

impl Fresh {
    fn renew(&self, at: Millis) {
        self.renewed_at.store(at, Ordering::Release);
    }

    pub fn holds(&self) -> bool {
        now_millis() - self.renewed_at.load(Ordering::Acquire) < self.lease_ms
    }
}

/// Why a shard this member read is being let go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Leaving {
    /// The plan gives it to this member.
    To(String),
    /// Read to its end.
    Ended,
    /// Another member's write took it: nothing more is written to its lease.
    Lost,
    /// Read to the run's end (-e): kept, unread, until the member leaves.
    ReadTo,
}

/// A shard this member reads.
pub struct Held {
    /// The lease's counter as of this member's last write.
    counter: u64,
    /// Stops this shard's reader.
    pub stop: Arc<AtomicBool>,
    committed: ShardCheckpoint,
    /// The state object the lease points at, as of this member's last write.
    state: Option<String>,
    pub leaving: Option<Leaving>,
}

/// Where a member that keeps state per shard saves it.
pub struct States {
    store: StateStore,
    /// Objects are named `APP/COMMAND/SHARD/...`.
    prefix: String,
}

/// What one commit of a shard's lease writes.
struct Step {
    checkpoint: ShardCheckpoint,
    state: Option<ShardState>,
    hand_to: Option<String>,
    /// The shard is let go with this write.
    done: bool,
    /// Read to the records that arrived before this time (-e), said on the lease.
    read_to: Option<Millis>,
}

/// One member of an application.
pub struct Membership {
    table: LeaseTable,
    pub me: String,
    beat: u64,
    liveness: Liveness,
    pub tick: Duration,
    pub held: HashMap<String, Held>,
    pub handled: SharedHandled,
    pub fresh: Arc<Fresh>,
    /// Where a shard no one has read yet starts (`--from` beginning or end).
    start: ShardCheckpoint,
    listed: Option<Instant>,
    /// A command that keeps state per shard: where it goes.
    pub states: Option<States>,
    /// Every lease as the last scan read it (a child's parents' states are found here).
    known: HashMap<String, Lease>,
    /// With -e: the run's end, the member's start; a shard read to the records that arrived
    /// before it is done.
    pub ends_at: Option<Millis>,
}

/// Shards are listed again this often, for those resharding added.
const LIST_EVERY: Duration = Duration::from_secs(30);

impl Membership {
    /// Joins APP's table (created when missing) as a new member.
    pub async fn join(
        plan: &GroupPlan,
        (from, ends_at): (&StartAt, Option<Millis>),
        client: &KinesisClient,
        dynamo: aws_sdk_dynamodb::Client,
        store: Option<StateStore>,
    ) -> Result<Membership> {
        let start = match from {
            StartAt::Beginning => ShardCheckpoint::TrimHorizon,
            StartAt::End => ShardCheckpoint::Latest,
            _ => {
                return Err(Error::Usage(
                    "with -G a shard no member has read starts at --from beginning or end".into(),
                ))
            }
        };
        // The store first: a run refused for it leaves no lease table behind.
        let states = match (store, &plan.states) {
            (Some(store), Some(p)) => {
                store.check(client).await?;
                let prefix = format!("{}/{}", plan.app, p.command);
                Some(States { store, prefix })
            }
            _ => None,
        };
        let table = LeaseTable::open(&plan.app, dynamo, client).await?;
        let lease_ms = plan.lease_time.as_millis() as Millis;
        Ok(Membership {
            table,
            me: member_id(),
            beat: 0,
            liveness: Liveness::new(lease_ms),
            tick: (plan.lease_time / 10).max(Duration::from_millis(200)),
            held: HashMap::new(),
            handled: SharedHandled::default(),
            fresh: Arc::new(Fresh {
                renewed_at: AtomicI64::new(Millis::MIN / 2),
                lease_ms,
            }),
            start,
            listed: None,
            states,
            known: HashMap::new(),
            ends_at,
        })
    }

    /// With -e, whether every shard in the table is done for this member's end: closed and
    /// read through, read to at least its end, or a child of shards that were stopped at it
    /// before they closed (so every record of the child arrived after the end).
    pub fn all_read_to_end(&self) -> bool {
        let Some(end) = self.ends_at else {
            return false;
        };
        let stopped_at_end = |l: &Lease| {
            l.checkpoint != ShardCheckpoint::ShardEnd && l.read_to.is_some_and(|t| t >= end)
        };
        let done = |l: &Lease| {
            l.checkpoint == ShardCheckpoint::ShardEnd
                || l.read_to.is_some_and(|t| t >= end)
                || (!l.parents.is_empty()
                    && (l.parents.iter()).all(|p| self.known.get(p).is_some_and(stopped_at_end)))
        };
        !self.known.is_empty() && self.known.values().all(done)
    }

    /// Adds a lease for each of `shards` the table lacks: a child of a shard in the table
    /// starts at its beginning, the others where `--from` says.
    pub async fn add_shards(&mut self, client: &KinesisClient, shards: &[ShardInfo]) -> Result<()> {
        let scan = self.table.scan(client).await?;
        let known: HashSet<&str> = scan.leases.iter().map(|l| l.shard.as_str()).collect();
        for s in shards.iter().filter(|s| !known.contains(s.id.as_str())) {
            let child = s.parents.iter().any(|p| known.contains(p.as_str()))
                || s.parents.iter().any(|p| shards.iter().any(|o| &o.id == p));
            let new = NewLease {
                shard: s.id.clone(),
                parents: s.parents.clone(),
                hash_range: s.hash_range.clone(),
                start: match child {
                    true => ShardCheckpoint::TrimHorizon,
                    false => self.start.clone(),
                },
            };
            self.table.ensure(client, &new).await?;
        }
        self.listed = Some(Instant::now());
        Ok(())
    }

    /// Whether the shards should be listed again.
    pub fn list_due(&self) -> bool {
        self.listed.is_none_or(|at| at.elapsed() >= LIST_EVERY)
    }

    /// One tick: heartbeat, commits and handovers, then the plan's changes for this member:
    /// the leases of the shards it is to start reading (those it stops have their flags set).
    pub async fn tick(&mut self, client: &KinesisClient) -> Result<Vec<Lease>> {
        let started = now_millis();
        self.beat += 1;
        self.table.heartbeat(client, &self.me, self.beat).await?;
        self.commit(client).await?;
        let scan = self.table.scan(client).await?;
        let starts = self.follow(client, &scan).await?;
        self.forget_dead(client).await?;
        self.known = (scan.leases.into_iter())
            .map(|l| (l.shard.clone(), l))
            .collect();
        // Renewed only now, once the shards lost meanwhile are stopped.
        self.fresh.renew(started);
        Ok(starts)
    }

    /// Removes the heartbeat items of members watched for a lease time without a beat (if
    /// still at the beat seen), so that no member joining later takes them for alive.
    async fn forget_dead(&mut self, client: &KinesisClient) -> Result<()> {
        for (id, beat) in self.liveness.dead(now_millis()) {
            if id != self.me {
                self.table.forget_member(client, &id, beat).await?;
                self.liveness.retain(|m| m != id);
            }
        }
        Ok(())
    }

    /// The live members: those whose heartbeat was seen to move within the lease time, and
    /// this one.
    fn live(&mut self, scan: &TableScan) -> Vec<String> {
        let now = now_millis();
        for (id, beat) in &scan.members {
            self.liveness.observe(id, *beat, now);
        }
        self.liveness
            .retain(|id| scan.members.iter().any(|(m, _)| m == id));
        // Seen to beat: a heartbeat not watched for a lease time yet may be a dead member's,
        // which must be planned no shard (nor handed one).
        let mut live: Vec<String> = (scan.members.iter())
            .filter(|(id, _)| *id == self.me || self.liveness.seen_alive(id, now))
            .map(|(id, _)| id.clone())
            .collect();
        if !live.contains(&self.me) {
            live.push(self.me.clone());
        }
        live
    }

    /// Follows the plan for the table as `scan` read it.
    async fn follow(&mut self, client: &KinesisClient, scan: &TableScan) -> Result<Vec<Lease>> {
        let live = self.live(scan);
        let leases: Vec<ShardLease> = scan.leases.iter().map(shard_lease).collect();
        let plan = lease::plan(&leases, &live);
        let now = now_millis();
        let mut starts = Vec::new();
        for l in &scan.leases {
            let planned = plan.get(&l.shard);
            let ours = l.owner.as_deref() == Some(self.me.as_str());
            if let Some(held) = self.held.get_mut(&l.shard) {
                if held.leaving.is_some() {
                    continue;
                }
                let leaving = match planned {
                    _ if !ours => Leaving::Lost,
                    Some(to) if *to != self.me => Leaving::To(to.clone()),
                    _ => continue,
                };
                held.stop.store(true, Ordering::Relaxed);
                held.leaving = Some(leaving);
                continue;
            }
            if ours && planned.is_some_and(|to| *to != self.me) {
                // Handed to this member, but the plan has moved on: handed on unread.
                let commit = Commit {
                    checkpoint: &l.checkpoint,
                    state: None,
                    hand_to: planned.map(String::as_str),
                    read_to: None,
                };
                (self.table)
                    .commit(client, (&l.shard, l.counter), &self.me, &commit)
                    .await?;
                continue;
            }
            if planned != Some(&self.me) {
                continue;
            }
            let owner_gone = match l.owner.as_deref() {
                None => true,
                Some(o) => o != self.me && !self.liveness.alive(o, now),
            };
            let counter = match (ours, owner_gone) {
                (true, _) => Some(l.counter),
                (false, true) => self.table.take(client, l, &self.me).await?,
                // Its owner hands it over.
                (false, false) => None,
            };
            if let Some(counter) = counter {
                self.hold(&l.shard, counter, l);
                let mut taken = l.clone();
                taken.counter = counter;
                starts.push(taken);
            }
        }
        Ok(starts)
    }

    /// Holds `shard` from its lease's checkpoint; a handled position left from an earlier
    /// hold of it (before it went to another member and came back) is no longer where it
    /// stands, and would move its checkpoint back.
    fn hold(&mut self, shard: &str, counter: u64, lease: &Lease) {
        {
            let mut handled = self.handled.lock().expect("not poisoned");
            handled.at.remove(shard);
            handled.saved.remove(shard);
        }
        let held = Held {
            counter,
            stop: Arc::new(AtomicBool::new(false)),
            committed: lease.checkpoint.clone(),
            state: lease.state.clone(),
            leaving: None,
        };
        self.held.insert(shard.to_string(), held);
    }

    /// Commits each held shard's checkpoint when it moved (with its saved state, for a
    /// command that keeps one), and hands over (or ends) the stopped shards whose records
    /// are all handled. A commit another member's write fenced stops the shard.
    async fn commit(&mut self, client: &KinesisClient) -> Result<()> {
        let (at, mut saved, drained) = {
            let mut handled = self.handled.lock().expect("not poisoned");
            let saved = std::mem::take(&mut handled.saved);
            (
                handled.at.clone(),
                saved,
                std::mem::take(&mut handled.drained),
            )
        };
        let shards: Vec<String> = self.held.keys().cloned().collect();
        for shard in shards {
            let held = &self.held[&shard];
            let done = drained.contains(&shard);
            let state = saved.remove(&shard);
            let checkpoint = match (&held.leaving, done) {
                (Some(Leaving::Lost), true) => {
                    self.held.remove(&shard);
                    continue;
                }
                // Nothing more is written to a lost shard's lease.
                (Some(Leaving::Lost), false) => continue,
                (Some(Leaving::Ended), true) => ShardCheckpoint::ShardEnd,
                _ => self.checkpoint_of(&shard, &at, state.as_ref()),
            };
            let hand_to = match (&held.leaving, done) {
                (Some(Leaving::To(to)), true) => Some(to.clone()),
                _ => None,
            };
            // Read to the run's end: said on the lease, which the member keeps holding.
            let read_to = (held.leaving == Some(Leaving::ReadTo) && done)
                .then_some(self.ends_at)
                .flatten();
            if !done && checkpoint == held.committed && state.is_none() {
                continue;
            }
            let step = Step {
                checkpoint,
                state,
                hand_to,
                done: done && read_to.is_none(),
                read_to,
            };
            self.write(client, &shard, step).await?;
        }
        Ok(())
    }

    /// Where `shard`'s checkpoint moves to: its saved state's position, for a command that
    /// keeps state (which moves only with a state), else its last record handled.
    fn checkpoint_of(
        &self,
        shard: &str,
        at: &HashMap<String, ShardCheckpoint>,
        state: Option<&ShardState>,
    ) -> ShardCheckpoint {
        let committed = &self.held[shard].committed;
        let moved = match self.states.is_some() {
            true => state
                .and_then(|s| s.resume.as_ref())
                .map(ShardResume::checkpoint),
            false => at.get(shard).cloned(),
        };
        moved.unwrap_or_else(|| committed.clone())
    }

    /// Writes `step` to `shard`'s lease: its state saved first as a new object, then the
    /// checkpoint, the state's pointer and the owner in one conditional write. The object
    /// the lease pointed at before is deleted once no lease points at it; a write that lost
    /// deletes its own, and stops the shard.
    async fn write(&mut self, client: &KinesisClient, shard: &str, step: Step) -> Result<()> {
        let held = &self.held[shard];
        let pointer = match (&self.states, &step.state) {
            (Some(states), Some(saved)) => {
                let name = format!(
                    "{}/{shard}/{}-{}.state",
                    states.prefix,
                    held.counter,
                    now_millis()
                );
                Some(states.store.put(client, &name, saved.state.clone()).await?)
            }
            _ => None,
        };
        let commit = Commit {
            checkpoint: &step.checkpoint,
            state: pointer.as_deref(),
            hand_to: step.hand_to.as_deref(),
            read_to: step.read_to,
        };
        let written = (self.table)
            .commit(client, (shard, held.counter), &self.me, &commit)
            .await?;
        let (old, new) = match written {
            Some(_) if pointer.is_some() => (held.state.clone(), pointer.clone()),
            Some(_) => (None, held.state.clone()),
            None => (pointer, held.state.clone()),
        };
        if let (Some(states), Some(old)) = (&self.states, old) {
            states.store.delete(client, &old).await?;
        }
        match (written, step.done) {
            (_, true) => {
                self.held.remove(shard);
            }
            (Some(counter), false) => {
                let held = self.held.get_mut(shard).expect("held");
                held.counter = counter;
                held.committed = step.checkpoint;
                held.state = new;
            }
            (None, false) => {
                // Fenced: another member owns it now.
                let held = self.held.get_mut(shard).expect("held");
                held.stop.store(true, Ordering::Relaxed);
                held.leaving = Some(Leaving::Lost);
            }
        }
        Ok(())
    }

    /// Where the member that takes `lease` starts its state: from what its last owner saved;
    /// for a child shard no member has read, from its parents' last states (each parent's
    /// keyless part going to the child that covers the parent's first hash key); `None` when
    /// the command keeps no state, or there is none yet.
    pub async fn start_of(
        &self,
        client: &KinesisClient,
        lease: &Lease,
    ) -> Result<Option<ShardStart>> {
        let Some(states) = &self.states else {
            return Ok(None);
        };
        if let Some(pointer) = &lease.state {
            return Ok(Some(ShardStart::Restored(ShardState {
                shard: Arc::from(lease.shard.as_str()),
                resume: ShardResume::at_checkpoint(&lease.checkpoint),
                state: states.store.get(client, pointer).await?,
            })));
        }
        let range = hash_range(&lease.hash_range);
        let mut parents = Vec::new();
        for parent in lease.parents.iter().filter_map(|p| self.known.get(p)) {
            let Some(pointer) = &parent.state else {
                continue;
            };
            let whole = range.contains(hash_range(&parent.hash_range).start());
            parents.push((states.store.get(client, pointer).await?, whole));
        }
        Ok((!parents.is_empty()).then(|| ShardStart::Inherited {
            parents,
            hash_range: (*range.start(), *range.end()),
        }))
    }

    /// Leaves the application at the end of the run: each shard's last checkpoint (its last
    /// saved state, for a command that keeps one) is committed and the shard handed to the
    /// member the plan without this one gives it (kept, for a later member to take at once,
    /// when there is none); then the heartbeat goes, so no member waits out the lease time.
    pub async fn leave(&mut self, client: &KinesisClient) -> Result<()> {
        let scan = self.table.scan(client).await?;
        let mut live = self.live(&scan);
        live.retain(|m| *m != self.me);
        let leases: Vec<ShardLease> = scan.leases.iter().map(shard_lease).collect();
        let plan = lease::plan(&leases, &live);
        let (at, mut saved) = {
            let mut handled = self.handled.lock().expect("not poisoned");
            (handled.at.clone(), std::mem::take(&mut handled.saved))
        };
        let shards: Vec<String> = self.held.keys().cloned().collect();
        for shard in shards {
            if self.held[&shard].leaving == Some(Leaving::Lost) {
                continue;
            }
            let state = saved.remove(&shard);
            let step = Step {
                checkpoint: self.checkpoint_of(&shard, &at, state.as_ref()),
                state,
                hand_to: plan.get(&shard).cloned(),
                done: true,
                read_to: None,
            };
            self.write(client, &shard, step).await?;
        }
        self.table.leave(client, &self.me).await
    }
}

/// A lease's hash key range; the whole space when the lease does not say.
fn hash_range((low, high): &(String, String)) -> std::ops::RangeInclusive<u128> {
    let low = low.parse().unwrap_or(0);
    let high = high.parse().unwrap_or(u128::MAX);
    low..=high
}

/// A lease as the plan sees it.
fn shard_lease(l: &Lease) -> ShardLease {
    ShardLease {
        shard: l.shard.clone(),
        owner: l.owner.clone(),
        ended: l.checkpoint == ShardCheckpoint::ShardEnd,
        parents: l.parents.clone(),
    }
}

/// This member's id: the host, the process and when it started, unique across restarts.
fn member_id() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "weir".into());
    format!("{host}:{}:{}", std::process::id(), now_millis())
}
