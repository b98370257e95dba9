//! A deterministic, seedable event generator for tests and benchmarks.
//!
//! Events arrive as a Poisson process; each has an event time earlier than its arrival by a
//! heavy-tailed lateness that depends on the client type (most under 2 s, a small share up to
//! hours, a few in the future from clock skew). Keys follow a Zipf law. A share of events is
//! delivered again later (same id and event time), as at-least-once delivery does. Lines come
//! out in arrival order, so event time is out of order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Write;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, LogNormal, Pareto, Zipf};

use weir::core::time::{format_millis, Millis};

#[derive(Clone, Debug)]
pub struct GenConfig {
    pub seed: u64,
    pub events: u64,
    /// Distinct merchant keys, Zipf-distributed.
    pub keys: u64,
    pub zipf_exponent: f64,
    /// Mean arrivals per second.
    pub rate_per_s: f64,
    /// Arrival time of the first event.
    pub start: Millis,
    /// Share of events delivered a second time.
    pub duplicate_share: f64,
    pub partitions: u32,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            seed: 42,
            events: 1000,
            keys: 10_000,
            zipf_exponent: 1.1,
            rate_per_s: 1000.0,
            start: 1_795_867_200_000, // 2026-11-28T12:00:00Z
            duplicate_share: 0.02,
            partitions: 4,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Client {
    Web,
    Ios,
    Android,
    /// Point-of-sale terminals that sync in batches: the late ones.
    Pos,
}

impl Client {
    pub fn name(self) -> &'static str {
        match self {
            Client::Web => "web",
            Client::Ios => "ios",
            Client::Android => "android",
            Client::Pos => "pos",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Event {
    pub arrived_at: Millis,
    pub id: u64,
    pub occurred_at: Millis,
    pub merchant: u64,
    pub client: Client,
    pub partition: u32,
    pub amount_cents: u64,
    /// The checkout failed: see `failed`.
    pub failed: bool,
    /// A redelivery of an event already emitted.
    pub redelivery: bool,
}

impl Event {
    /// One NDJSON line (about 200 bytes), without the newline.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        let _ = write!(
            out,
            r#"{{"event_id":"evt-{:012}","occurred_at":"{}","arrived_at":"{}","merchant_id":"m-{:05}","client":"{}","partition":{},"amount":{}.{:02},"currency":"EUR","status":"{}"}}"#,
            self.id,
            format_millis(self.occurred_at),
            format_millis(self.arrived_at),
            self.merchant,
            self.client.name(),
            self.partition,
            self.amount_cents / 100,
            self.amount_cents % 100,
            if self.failed { "failed" } else { "paid" },
        );
    }
}

/// A checkout fails when its authorization expired before it reached the server (5 minutes
/// late or more) and otherwise one time in eight, by a hash of its id: no draw of the
/// generator's random stream, so the other fields stay as they were before statuses existed.
fn failed(id: u64, lateness: Millis) -> bool {
    let mut z = id.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    lateness >= 5 * 60_000 || (z ^ (z >> 31)) % 8 == 0
}

pub struct Generator {
    cfg: GenConfig,
    rng: ChaCha8Rng,
    zipf: Zipf<f64>,
    gap: Exp<f64>,
    emitted: u64,
    next_id: u64,
    arrival: f64,
    /// Redeliveries waiting for their arrival time.
    pending: BinaryHeap<Reverse<Event>>,
}

impl Generator {
    pub fn new(cfg: GenConfig) -> Generator {
        let keys = cfg.keys.max(1) as f64;
        Generator {
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
            zipf: Zipf::new(keys, cfg.zipf_exponent).expect("valid Zipf parameters"),
            gap: Exp::new(cfg.rate_per_s / 1000.0).expect("positive rate"),
            arrival: cfg.start as f64,
            emitted: 0,
            next_id: 0,
            pending: BinaryHeap::new(),
            cfg,
        }
    }

    fn client(&mut self) -> Client {
        match self.rng.random_range(0..100) {
            0..40 => Client::Web,
            40..65 => Client::Ios,
            65..90 => Client::Android,
            _ => Client::Pos,
        }
    }

    /// Lateness in ms: mostly short, a heavy tail, and a little clock skew (negative).
    fn lateness(&mut self, client: Client) -> Millis {
        let r: f64 = self.rng.random();
        // (share of short delays, their mean in ms, share of the medium lognormal band)
        let (short_share, short_mean, medium_share) = match client {
            Client::Web => (0.96, 250.0, 0.035),
            Client::Ios => (0.95, 400.0, 0.04),
            Client::Android => (0.90, 600.0, 0.08),
            Client::Pos => (0.60, 800.0, 0.25),
        };
        let ms = if r < 0.001 {
            -self.rng.random_range(1.0..2000.0) // a client clock running ahead
        } else if r < short_share {
            Exp::<f64>::new(1.0 / short_mean)
                .unwrap()
                .sample(&mut self.rng)
                .min(1999.0)
        } else if r < short_share + medium_share {
            // median 10 s, most between 2 s and a minute
            LogNormal::new((10_000f64).ln(), 0.8)
                .unwrap()
                .sample(&mut self.rng)
        } else {
            // the tail: from a minute up to 6 hours
            Pareto::<f64>::new(60_000.0, 1.1)
                .unwrap()
                .sample(&mut self.rng)
                .min(6.0 * 3_600_000.0)
        };
        ms.round() as Millis
    }

    fn fresh(&mut self) -> Event {
        self.arrival += self.gap.sample(&mut self.rng);
        let arrived_at = self.arrival as Millis;
        let client = self.client();
        let lateness = self.lateness(client);
        let merchant = self.zipf.sample(&mut self.rng) as u64;
        let id = self.next_id;
        self.next_id += 1;
        Event {
            arrived_at,
            id,
            occurred_at: arrived_at - lateness,
            merchant,
            client,
            partition: (merchant % self.cfg.partitions.max(1) as u64) as u32,
            amount_cents: self.rng.random_range(100..50_000),
            failed: failed(id, lateness),
            redelivery: false,
        }
    }
}

impl Iterator for Generator {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        if self.emitted >= self.cfg.events {
            return None;
        }
        self.emitted += 1;
        let candidate = self.fresh();
        if let Some(Reverse(first)) = self.pending.peek() {
            if first.arrived_at <= candidate.arrived_at {
                let Reverse(redelivery) = self.pending.pop().unwrap();
                // The fresh event is not lost: give its id back and rewind the clock.
                self.next_id -= 1;
                self.arrival = redelivery.arrived_at as f64;
                return Some(redelivery);
            }
        }
        if self
            .rng
            .random_bool(self.cfg.duplicate_share.clamp(0.0, 1.0))
        {
            let delay = Exp::new(1.0 / 20_000.0).unwrap().sample(&mut self.rng) as Millis + 1;
            let mut again = candidate.clone();
            again.arrived_at += delay;
            again.redelivery = true;
            self.pending.push(Reverse(again));
        }
        Some(candidate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(n: u64, seed: u64) -> Vec<Event> {
        Generator::new(GenConfig {
            events: n,
            seed,
            ..GenConfig::default()
        })
        .collect()
    }

    #[test]
    fn deterministic_per_seed() {
        assert_eq!(events(500, 7), events(500, 7));
        assert_ne!(events(500, 7), events(500, 8));
        assert_eq!(events(500, 7).len(), 500);
    }

    #[test]
    fn arrival_ordered_event_time_unordered_with_duplicates_and_tail() {
        let evs = events(50_000, 1);
        assert!(evs.windows(2).all(|w| w[0].arrived_at <= w[1].arrived_at));
        let out_of_order = evs
            .windows(2)
            .filter(|w| w[1].occurred_at < w[0].occurred_at)
            .count();
        assert!(out_of_order > 1000, "{out_of_order}");
        let dups = evs.iter().filter(|e| e.redelivery).count();
        assert!((500..1500).contains(&dups), "{dups}");
        let late: Vec<Millis> = evs.iter().map(|e| e.arrived_at - e.occurred_at).collect();
        let under_2s =
            late.iter().filter(|l| (0..2000).contains(*l)).count() as f64 / late.len() as f64;
        assert!(under_2s > 0.8, "{under_2s}");
        assert!(
            late.iter().any(|l| *l > 3_600_000 / 2),
            "some lateness above 30 minutes"
        );
        assert!(late.iter().any(|l| *l < 0), "some clock skew");
        // Ids are unique except for redeliveries.
        let mut ids: Vec<u64> = evs.iter().filter(|e| !e.redelivery).map(|e| e.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), evs.len() - dups);
    }

    #[test]
    fn keys_are_skewed() {
        let evs = events(20_000, 3);
        let top = evs.iter().filter(|e| e.merchant == 1).count();
        assert!(top > 20_000 / 20, "the hottest key has {top}");
    }

    #[test]
    fn lines_are_json_of_about_200_bytes() {
        let mut line = Vec::new();
        events(1, 5)[0].write_json(&mut line);
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert!(v["occurred_at"].is_string());
        assert!((180..230).contains(&line.len()), "{}", line.len());
    }
}
