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
//! checkpoint is all a shard's next owner needs.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::client::KinesisClient;
use super::lease::{Commit, Lease, LeaseTable, NewLease, TableScan};
use super::plan::{GroupPlan, ShardInfo, StartAt};
use crate::core::lag::ShardCheckpoint;
use crate::core::lease::{self, Liveness, ShardLease};
use crate::core::time::{now_millis, Millis};
use crate::error::{Error, Result};
use crate::runtime::ShardPosition;

/// What the reader thread tells the member: the last record handled in each shard, and the
/// shards stopped whose every record handed over has been handled.
#[derive(Debug, Default)]
pub struct Handled {
    pub at: HashMap<String, ShardCheckpoint>,
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
}

/// A shard this member reads.
pub struct Held {
    /// The lease's counter as of this member's last write.
    counter: u64,
    /// Stops this shard's reader.
    pub stop: Arc<AtomicBool>,
    committed: ShardCheckpoint,
    pub leaving: Option<Leaving>,
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
}

/// Shards are listed again this often, for those resharding added.
const LIST_EVERY: Duration = Duration::from_secs(30);

impl Membership {
    /// Joins APP's table (created when missing) as a new member.
    pub async fn join(
        plan: &GroupPlan,
        from: &StartAt,
        client: &KinesisClient,
        dynamo: aws_sdk_dynamodb::Client,
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
        })
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
        // Renewed only now, once the shards lost meanwhile are stopped.
        self.fresh.renew(started);
        Ok(starts)
    }

    /// The live members: those whose heartbeat moved within the lease time, and this one.
    fn live(&mut self, scan: &TableScan) -> Vec<String> {
        let now = now_millis();
        for (id, beat) in &scan.members {
            self.liveness.observe(id, *beat, now);
        }
        self.liveness
            .retain(|id| scan.members.iter().any(|(m, _)| m == id));
        let mut live: Vec<String> = (scan.members.iter())
            .filter(|(id, _)| *id == self.me || self.liveness.alive(id, now))
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
                self.hold(&l.shard, counter, l.checkpoint.clone());
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
    fn hold(&mut self, shard: &str, counter: u64, committed: ShardCheckpoint) {
        (self.handled.lock().expect("not poisoned").at).remove(shard);
        let held = Held {
            counter,
            stop: Arc::new(AtomicBool::new(false)),
            committed,
            leaving: None,
        };
        self.held.insert(shard.to_string(), held);
    }

    /// Commits each held shard's handled checkpoint when it moved, and hands over (or ends)
    /// the stopped shards whose records are all handled. A commit another member's write
    /// fenced stops the shard.
    async fn commit(&mut self, client: &KinesisClient) -> Result<()> {
        let (at, drained) = {
            let mut handled = self.handled.lock().expect("not poisoned");
            (handled.at.clone(), std::mem::take(&mut handled.drained))
        };
        let shards: Vec<String> = self.held.keys().cloned().collect();
        for shard in shards {
            let held = &self.held[&shard];
            let done = drained.contains(&shard);
            let checkpoint = match (&held.leaving, done) {
                (Some(Leaving::Lost), true) => {
                    self.held.remove(&shard);
                    continue;
                }
                // Nothing more is written to a lost shard's lease.
                (Some(Leaving::Lost), false) => continue,
                (Some(Leaving::Ended), true) => ShardCheckpoint::ShardEnd,
                _ => at.get(&shard).cloned().unwrap_or(held.committed.clone()),
            };
            let hand_to = match (&held.leaving, done) {
                (Some(Leaving::To(to)), true) => Some(to.clone()),
                _ => None,
            };
            if !done && checkpoint == held.committed {
                continue;
            }
            let commit = Commit {
                checkpoint: &checkpoint,
                state: None,
                hand_to: hand_to.as_deref(),
            };
            let written = (self.table)
                .commit(client, (&shard, held.counter), &self.me, &commit)
                .await?;
            match (written, done) {
                (Some(counter), false) => {
                    let held = self.held.get_mut(&shard).expect("held");
                    held.counter = counter;
                    held.committed = checkpoint;
                }
                (Some(_), true) => {
                    self.held.remove(&shard);
                }
                (None, true) => {
                    self.held.remove(&shard);
                }
                (None, false) => {
                    // Fenced: another member owns it now.
                    let held = self.held.get_mut(&shard).expect("held");
                    held.stop.store(true, Ordering::Relaxed);
                    held.leaving = Some(Leaving::Lost);
                }
            }
        }
        Ok(())
    }

    /// Leaves the application at the end of the run: each shard's last handled checkpoint
    /// is committed and the shard handed to the member the plan without this one gives it
    /// (kept, for a later member to take at once, when there is none); then the heartbeat
    /// goes, so no member waits out the lease time.
    pub async fn leave(&mut self, client: &KinesisClient) -> Result<()> {
        let scan = self.table.scan(client).await?;
        let mut live = self.live(&scan);
        live.retain(|m| *m != self.me);
        let leases: Vec<ShardLease> = scan.leases.iter().map(shard_lease).collect();
        let plan = lease::plan(&leases, &live);
        let at = self.handled.lock().expect("not poisoned").at.clone();
        for (shard, held) in self.held.drain() {
            if held.leaving == Some(Leaving::Lost) {
                continue;
            }
            let checkpoint = at.get(&shard).cloned().unwrap_or(held.committed);
            let commit = Commit {
                checkpoint: &checkpoint,
                state: None,
                hand_to: plan.get(&shard).map(String::as_str),
            };
            (self.table)
                .commit(client, (&shard, held.counter), &self.me, &commit)
                .await?;
        }
        self.table.leave(client, &self.me).await
    }
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
