//! Shard leases shared by the members of a Kinesis application (`-G APP`): who is alive, and
//! which member should own which shard. Pure: the lease table's items come in as values and
//! the plan goes out; `io/kinesis/lease.rs` reads and writes the table.
//!
//! Every member computes the same plan from the same table, so members never race to steal:
//! each takes only the shards the plan gives it and hands over only those it takes away.
//! - **Liveness** is judged by counters seen to move on the local clock, as KCL judges leases:
//!   a member whose heartbeat counter has not moved for the lease time is gone. No clocks are
//!   compared across machines.
//! - **Balance.** Each live member owns the floor or the ceiling of shards / members.
//! - **Few moves.** A shard keeps its live owner unless that owner holds more than its share;
//!   the members allowed the ceiling are those holding the most already. A shard that must
//!   move goes to the member under its share that ranks highest for it by rendezvous hashing,
//!   so the plan does not depend on the order items were read in.
//! - **Parents first.** A child shard is assignable only once each parent it has in the
//!   table has reached `SHARD_END`.

use std::collections::{BTreeMap, HashMap};

use super::time::Millis;

/// A shard's lease, as the plan needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardLease {
    pub shard: String,
    /// The member holding it, if any.
    pub owner: Option<String>,
    /// Its checkpoint is `SHARD_END`: read through, nothing more to own.
    pub ended: bool,
    pub parents: Vec<String>,
}

/// What each member should own: shard id to member id, for every assignable shard.
pub type Plan = BTreeMap<String, String>;

/// The shards that can be owned now: not ended, and every parent in the table ended.
pub fn assignable(leases: &[ShardLease]) -> Vec<&ShardLease> {
    let ended: HashMap<&str, bool> = leases.iter().map(|l| (l.shard.as_str(), l.ended)).collect();
    let mut open: Vec<&ShardLease> = (leases.iter())
        .filter(|l| !l.ended)
        .filter(|l| {
            l.parents
                .iter()
                .all(|p| ended.get(p.as_str()).copied().unwrap_or(true))
        })
        .collect();
    open.sort_by(|a, b| a.shard.cmp(&b.shard));
    open
}

/// The plan for `leases` among the live `members` (empty: no plan).
pub fn plan(leases: &[ShardLease], members: &[String]) -> Plan {
    let mut members: Vec<&str> = members.iter().map(String::as_str).collect();
    members.sort_unstable();
    members.dedup();
    let open = assignable(leases);
    if members.is_empty() {
        return Plan::new();
    }
    let held = |m: &str| {
        open.iter()
            .filter(|l| l.owner.as_deref() == Some(m))
            .count()
    };
    let targets = shares(open.len(), &members, held);
    let mut plan = Plan::new();
    let mut load: HashMap<&str, usize> = members.iter().map(|m| (*m, 0)).collect();
    // Keep: each live owner keeps its shards, those it ranks highest first, up to its share.
    let mut by_rank: Vec<&&ShardLease> = open.iter().collect();
    by_rank.sort_by_key(|l| {
        let owner = l.owner.as_deref().unwrap_or_default();
        (std::cmp::Reverse(rank(&l.shard, owner)), l.shard.clone())
    });
    for l in &by_rank {
        let Some(owner) = l.owner.as_deref().filter(|o| targets.contains_key(o)) else {
            continue;
        };
        if load[owner] < targets[owner] {
            *load.get_mut(owner).expect("a member") += 1;
            plan.insert(l.shard.clone(), owner.to_string());
        }
    }
    // Move: the rest, each to the member under its share that ranks highest for it.
    let rest: Vec<&&ShardLease> = open
        .iter()
        .filter(|l| !plan.contains_key(&l.shard))
        .collect();
    for l in rest {
        let to = (members.iter())
            .filter(|m| load[*m] < targets[*m])
            .max_by_key(|m| (rank(&l.shard, m), std::cmp::Reverse(**m)))
            .expect("the shares add up to the shards");
        *load.get_mut(to).expect("a member") += 1;
        plan.insert(l.shard.clone(), to.to_string());
    }
    plan
}

/// Each member's share of `shards`: the floor, or the ceiling for as many members as the
/// remainder, given to those that hold the most already (then by id).
fn shares<'m>(
    shards: usize,
    members: &[&'m str],
    held: impl Fn(&str) -> usize,
) -> HashMap<&'m str, usize> {
    let (floor, extra) = (shards / members.len(), shards % members.len());
    let mut order: Vec<&str> = members.to_vec();
    order.sort_by_key(|m| (std::cmp::Reverse(held(m)), *m));
    (order.iter().enumerate())
        .map(|(i, m)| (*m, floor + usize::from(i < extra)))
        .collect()
}

/// Rendezvous rank of `member` for `shard`: FNV-1a of both, mixed.
fn rank(shard: &str, member: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in shard.bytes().chain([0xff]).chain(member.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    // A final mix, so that near names do not rank alike.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

/// Who is alive, by counters seen to move: a member's heartbeat (or a lease's counter)
/// that has not changed for `lease_time` of this member's own clock is gone.
#[derive(Debug)]
pub struct Liveness {
    lease_time: Millis,
    /// Each one's last counter seen, when (local time) it was first seen, and whether it was
    /// seen to move at all.
    seen: HashMap<String, Seen>,
}

#[derive(Debug)]
struct Seen {
    counter: u64,
    since: Millis,
    moved: bool,
}

impl Liveness {
    pub fn new(lease_time: Millis) -> Liveness {
        Liveness {
            lease_time,
            seen: HashMap::new(),
        }
    }

    /// Notes `id`'s counter as read at local time `now`.
    pub fn observe(&mut self, id: &str, counter: u64, now: Millis) {
        match self.seen.get_mut(id) {
            Some(seen) if seen.counter == counter => {}
            Some(seen) => {
                *seen = Seen {
                    counter,
                    since: now,
                    moved: true,
                }
            }
            None => {
                let seen = Seen {
                    counter,
                    since: now,
                    moved: false,
                };
                self.seen.insert(id.to_string(), seen);
            }
        }
    }

    /// Whether `id` may be alive: it moved within the lease time before `now`, or it was first
    /// seen less than a lease time ago (the benefit of the doubt a newcomer's plan gives it).
    pub fn alive(&self, id: &str, now: Millis) -> bool {
        (self.seen.get(id)).is_some_and(|s| now - s.since < self.lease_time)
    }

    /// Whether `id` was seen to move, within the lease time before `now`: the only members
    /// a leaving member hands its shards to (one merely not watched long enough may be dead).
    pub fn seen_alive(&self, id: &str, now: Millis) -> bool {
        (self.seen.get(id)).is_some_and(|s| s.moved && now - s.since < self.lease_time)
    }

    /// Those watched for a whole lease time without moving, with the counter they stopped at:
    /// known dead.
    pub fn dead(&self, now: Millis) -> Vec<(String, u64)> {
        (self.seen.iter())
            .filter(|(_, s)| now - s.since >= self.lease_time)
            .map(|(id, s)| (id.clone(), s.counter))
            .collect()
    }

    /// Forgets what is no longer in the table.
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.seen.retain(|id, _| keep(id));
    }
}

/// Where a Kinesis partition key falls in the stream's hash key space: the MD5 of its UTF-8
/// bytes as a 128-bit big-endian number, as the service places records in shards.
pub fn hash_key(partition_key: &str) -> u128 {
    use md5::{Digest, Md5};
    u128::from_be_bytes(Md5::digest(partition_key.as_bytes()).into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn lease(shard: &str, owner: Option<&str>) -> ShardLease {
        ShardLease {
            shard: shard.into(),
            owner: owner.map(str::to_string),
            ended: false,
            parents: Vec::new(),
        }
    }

    fn names(prefix: &str, n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{prefix}{i:03}")).collect()
    }

    fn counts(plan: &Plan) -> BTreeMap<&str, usize> {
        let mut c = BTreeMap::new();
        for m in plan.values() {
            *c.entry(m.as_str()).or_default() += 1;
        }
        c
    }

    #[test]
    fn a_member_joining_takes_only_its_share() {
        let shards = names("shard-", 8);
        let leases: Vec<ShardLease> = (shards.iter().enumerate())
            .map(|(i, s)| lease(s, Some(["a", "b"][i % 2])))
            .collect();
        let members = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        let plan = plan(&leases, &members);
        assert_eq!(
            counts(&plan).values().copied().collect::<Vec<_>>(),
            [3, 3, 2]
        );
        let moved = (leases.iter()).filter(|l| plan[&l.shard] != *l.owner.as_ref().unwrap());
        assert_eq!(moved.count(), 2, "c takes two, one from each");
    }

    #[test]
    fn children_wait_for_their_parents_to_end() {
        let mut parent = lease("p", Some("a"));
        let mut child = lease("c", None);
        child.parents = vec!["p".into()];
        let members = vec!["a".to_string(), "b".to_string()];
        let plan1 = plan(&[parent.clone(), child.clone()], &members);
        assert_eq!(plan1.keys().collect::<Vec<_>>(), ["p"]);
        parent.ended = true;
        let plan2 = plan(&[parent, child.clone()], &members);
        assert_eq!(plan2.keys().collect::<Vec<_>>(), ["c"]);
        // A parent the table no longer has (trimmed from the stream) holds nothing back.
        assert_eq!(plan(&[child], &members).len(), 1);
    }

    #[test]
    fn liveness_goes_by_counters_that_move_on_the_local_clock() {
        let mut live = Liveness::new(10_000);
        assert!(!live.alive("a", 0));
        live.observe("a", 7, 1_000);
        live.observe("a", 7, 9_000);
        assert!(live.alive("a", 10_999));
        assert!(!live.alive("a", 11_000), "stuck at 7 for the lease time");
        live.observe("a", 8, 12_000);
        assert!(live.alive("a", 12_000));
        live.retain(|id| id != "a");
        assert!(!live.alive("a", 12_000));
    }

    /// A member first seen may be alive for a lease time, but is seen alive only once its
    /// counter moved; one watched a whole lease time without moving is dead.
    #[test]
    fn a_member_is_seen_alive_once_it_moves_and_dead_after_a_still_lease_time() {
        let mut live = Liveness::new(10_000);
        live.observe("dead", 3, 0);
        live.observe("new", 1, 0);
        assert!(live.alive("dead", 5_000) && !live.seen_alive("dead", 5_000));
        live.observe("new", 2, 4_000);
        assert!(live.seen_alive("new", 5_000));
        assert_eq!(live.dead(9_999), vec![]);
        live.observe("new", 3, 9_000);
        assert_eq!(live.dead(10_000), vec![("dead".to_string(), 3)]);
    }

    /// A table: `n` shards, each owned by one of the `owners` (or none), a few ended with
    /// children.
    fn table() -> impl Strategy<Value = (Vec<ShardLease>, Vec<String>)> {
        (1usize..40, 1usize..9, 0usize..9).prop_flat_map(|(n, m, old)| {
            let owners = prop::collection::vec(prop::option::of(0..old.max(1) + m), n);
            let ended = prop::collection::vec(prop::bool::weighted(0.15), n);
            (owners, ended, Just(m)).prop_map(move |(owners, ended, m)| {
                let mut leases = Vec::new();
                for (i, (o, e)) in owners.iter().zip(&ended).enumerate() {
                    let mut l = lease(&format!("s{i:03}"), None);
                    l.owner = o.map(|o| format!("m{o:03}"));
                    l.ended = *e;
                    if i > 0 && ended[i - 1] && i % 3 == 0 {
                        l.parents = vec![format!("s{:03}", i - 1)];
                    }
                    leases.push(l);
                }
                (leases, names("m", m))
            })
        })
    }

    proptest! {
        #[test]
        fn plans_are_balanced_complete_and_move_no_more_than_they_must(
            (leases, members) in table()
        ) {
            let got = plan(&leases, &members);
            let open = assignable(&leases);
            // Every assignable shard once, nothing else.
            let planned: Vec<&String> = got.keys().collect();
            let expected: Vec<&String> = open.iter().map(|l| &l.shard).collect();
            prop_assert_eq!(planned, expected);
            // Each member the floor or the ceiling.
            let (floor, ceil) = (open.len() / members.len(), open.len().div_ceil(members.len()));
            let c = counts(&got);
            for m in &members {
                let n = c.get(m.as_str()).copied().unwrap_or(0);
                prop_assert!(n == floor || n == ceil, "{} has {}", m, n);
            }
            // Moves: a live owner loses only what it holds beyond its share, and the members
            // keeping the ceiling are those that held the most.
            let held = |m: &str| open.iter().filter(|l| l.owner.as_deref() == Some(m)).count();
            let mut helds: Vec<usize> = members.iter().map(|m| held(m)).collect();
            helds.sort_unstable_by(|a, b| b.cmp(a));
            let extra = open.len() % members.len();
            let must: usize = (helds.iter().enumerate())
                .map(|(i, h)| h.saturating_sub(floor + usize::from(i < extra)))
                .sum();
            let moved = (open.iter())
                .filter(|l| l.owner.as_ref().is_some_and(|o| members.contains(o)))
                .filter(|l| got[&l.shard] != *l.owner.as_ref().unwrap())
                .count();
            prop_assert_eq!(moved, must);
            // The same plan whatever order the table and members were read in.
            let mut reversed = leases.clone();
            reversed.reverse();
            let mut others = members.clone();
            others.reverse();
            prop_assert_eq!(plan(&reversed, &others), got);
        }
    }
}
