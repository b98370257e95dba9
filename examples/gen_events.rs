//! Writes generated NDJSON events to stdout (the generator is `tests/support/gen.rs`, which
//! the tests share; it stays out of the weir binary).
//!
//!     cargo run --release --example gen_events -- --events 1000000 --seed 7 > events.ndjson

use std::io::{BufWriter, Write};

use clap::Parser;
use weir::core::time::parse_time_str;
#[path = "../tests/support/gen.rs"]
mod gen;
use gen::{GenConfig, Generator};

#[derive(Parser)]
struct Args {
    /// How many lines to write.
    #[arg(long, default_value_t = 1000)]
    events: u64,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Distinct keys (Zipf-distributed).
    #[arg(long, default_value_t = 10_000)]
    keys: u64,
    /// Mean arrivals per second.
    #[arg(long, default_value_t = 1000.0)]
    rate: f64,
    /// Share of events delivered twice.
    #[arg(long, default_value_t = 0.02)]
    duplicates: f64,
    #[arg(long, default_value_t = 4)]
    partitions: u32,
    /// Arrival time of the first event (RFC 3339).
    #[arg(long, default_value = "2026-11-28T12:00:00Z")]
    start: String,
}

fn main() -> std::io::Result<()> {
    let a = Args::parse();
    let start = parse_time_str(&a.start, &Default::default()).expect("--start is RFC 3339");
    let cfg = GenConfig {
        seed: a.seed,
        events: a.events,
        keys: a.keys,
        rate_per_s: a.rate,
        duplicate_share: a.duplicates,
        partitions: a.partitions,
        start,
        ..GenConfig::default()
    };
    let mut out = BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    let mut line = Vec::with_capacity(256);
    for event in Generator::new(cfg) {
        line.clear();
        event.write_json(&mut line);
        line.push(b'\n');
        if let Err(e) = out.write_all(&line) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                return Ok(());
            }
            return Err(e);
        }
    }
    out.flush()
}
