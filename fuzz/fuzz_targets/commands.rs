//! Each command's record step, end to end in process, over arbitrary input: the first byte
//! picks one of a few fixed configurations and the error policy, the rest is the input file.
//! Any result is fine but a panic.
#![no_main]

use clap::FromArgMatches;
use libfuzzer_sys::fuzz_target;

const CONFIGS: &[&[&str]] = &[
    &["consume", "--time", "t", "--from", "2026-01-01T00:00:00Z"],
    &[
        "window", "--time", "t", "--key", "k", "--tumbling", "1m", "--count", "--sum", "v",
        "--min", "v", "--max", "v", "--avg", "v", "--distinct", "k", "--percentile", "v:p50,p99",
        "--first", "k", "--last", "v", "--delay", "10s",
    ],
    &[
        "window", "--time", "t", "--key", "k", "--tumbling", "1m", "--count", "--sum", "v",
        "--first", "k", "--last", "v", "--format", "csv", "--allowed-lateness", "1m",
    ],
    &[
        "window", "--time", "t", "--hop", "10m", "--slide", "5m", "--count", "--max", "v",
        "--partition-by", "p", "--emit", "updates",
    ],
    &[
        "window", "--time", "t", "--key", "k", "--hop", "10m", "--slide", "3m", "--count",
        "--min", "v", "--allowed-lateness", "5m", "--offset", "1m",
    ],
    &[
        "window", "--time", "t", "--key", "k", "--session", "5m", "--count", "--avg", "v",
        "--allowed-lateness", "10m", "--format", "csv",
    ],
    &["dedupe", "--id", "id", "--time", "t", "--horizon", "1h", "--max-keys", "8"],
    &["dedupe", "--id", "id", "--id", "k", "--keep", "last", "--max-keys", "4"],
    &["watermark-profile", "--time", "t", "--arrival", "a", "--by", "k", "--format", "json"],
    &["watermark-profile", "--time", "t", "--partition-by", "p", "--bucket", "1s"],
    &["replay", "--dry-run", "--time", "t", "--to", "2026-01-02T00:00:00Z"],
    &["replay", "--dry-run", "-J"],
];

fuzz_target!(|input: &[u8]| {
    let Some((&head, data)) = input.split_first() else {
        return;
    };
    let config = CONFIGS[head as usize % CONFIGS.len()];
    let dir = std::env::temp_dir().join(format!("weir-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A file of its own for every input, removed after the run (removing does not cut a file
    // short): a run that stops early leaves its reader thread to notice, and that thread
    // may still read its map while the next input is written. Rewriting one file in place
    // cut it short under that thread, whose read then faulted (SIGBUS, exit 4).
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = dir.join(format!("input-{run}.ndjson"));
    std::fs::write(&path, data).unwrap();
    let mut args = vec!["weir"];
    args.extend_from_slice(config);
    let file = path.to_str().unwrap();
    args.extend([file, "-q", "-o", "/dev/null"]);
    if head & 0x80 != 0 {
        args.extend(["--on-error", "skip"]);
    }
    let matches = weir::cli::command()
        .try_get_matches_from(&args)
        .expect("a fixed configuration parses");
    let cli = weir::cli::Cli::from_arg_matches(&matches).unwrap();
    let sub = matches.subcommand().map(|(_, m)| m.clone()).unwrap_or_default();
    let _ = weir::cmd::run(cli.command, &sub);
    let _ = std::fs::remove_file(&path);
});
