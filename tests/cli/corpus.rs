//! The bad-input corpus (`fixtures/bad/`, one file per thing real streams carry) through
//! every command: each run ends with exit 0, or exit 3 naming the file and line; with
//! `--on-error skip` with exit 0; never a panic (101), a signal death or a hang. A corrupt
//! gzip stream may end with exit 3 after what came before it, even under skip.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::{fixture, weir_std};

/// Every command, in the configurations the corpus runs through.
const CONFIGS: &[(&str, &[&str])] = &[
    ("consume", &["consume"]),
    (
        "window ndjson tumbling",
        &[
            "window",
            "--time",
            "t",
            "--key",
            "k",
            "--tumbling",
            "1m",
            "--count",
            "--sum",
            "v",
            "--min",
            "v",
            "--max",
            "v",
            "--avg",
            "v",
            "--distinct",
            "k",
            "--percentile",
            "v:p50,p99",
            "--first",
            "k",
            "--last",
            "v",
        ],
    ),
    (
        "window csv tumbling",
        &[
            "window",
            "--time",
            "t",
            "--key",
            "k",
            "--tumbling",
            "1m",
            "--count",
            "--sum",
            "v",
            "--min",
            "v",
            "--max",
            "v",
            "--avg",
            "v",
            "--distinct",
            "k",
            "--percentile",
            "v:p50,p99",
            "--first",
            "k",
            "--last",
            "v",
            "--format",
            "csv",
        ],
    ),
    (
        "window csv session",
        &[
            "window",
            "--time",
            "t",
            "--key",
            "k",
            "--session",
            "5m",
            "--count",
            "--sum",
            "v",
            "--first",
            "v",
            "--last",
            "k",
            "--format",
            "csv",
            "--allowed-lateness",
            "1m",
        ],
    ),
    (
        "window hopping",
        &[
            "window", "--time", "t", "--hop", "10m", "--slide", "5m", "--count", "--max", "v",
        ],
    ),
    (
        "dedupe first",
        &["dedupe", "--id", "id", "--time", "t", "--horizon", "1h"],
    ),
    ("dedupe last", &["dedupe", "--id", "id", "--keep", "last"]),
    ("watermark-profile", &["watermark-profile", "--time", "t"]),
    ("replay --dry-run", &["replay", "--dry-run", "--time", "t"]),
];

fn corpus() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixture("bad"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e != "md"))
        .collect();
    files.sort();
    files
}

/// Runs one configuration on one file; returns a description of what went wrong, if
/// anything did.
fn check(file: &Path, name: &str, args: &[&str], skip: bool) -> Option<String> {
    let mut cmd = weir_std();
    cmd.args(args).arg(file).arg("-q");
    if skip {
        cmd.args(["--on-error", "skip"]);
    }
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Some(format!("{name} on {}: no exit within 60 s", file.display()));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    let what = format!(
        "{name}{} on {}: {status:?}: {}",
        if skip { " --on-error skip" } else { "" },
        file.display(),
        err.trim()
    );
    let gzip = file.extension().is_some_and(|e| e == "gz");
    // Positions name the path as given, then the line.
    let named = err.contains(&format!("{}:", file.display()));
    match status.code() {
        Some(0) => None,
        Some(3) if gzip && named => None,
        Some(3) if !skip && named && line_named(&err, file) => None,
        _ => Some(what),
    }
}

/// The message names `file:N` with a line number N.
fn line_named(err: &str, file: &Path) -> bool {
    let at = format!("{}:", file.display());
    err.match_indices(&at)
        .any(|(i, m)| err[i + m.len()..].starts_with(|c: char| c.is_ascii_digit()))
}

#[test]
fn bad_input_never_crashes_any_command() {
    let files = corpus();
    assert!(files.len() >= 40, "the corpus has {} cases", files.len());
    let jobs: Vec<(PathBuf, &str, &[&str], bool)> = files
        .iter()
        .flat_map(|f| {
            CONFIGS.iter().flat_map(move |(name, args)| {
                [false, true].map(|skip| (f.clone(), *name, *args, skip))
            })
        })
        .collect();
    // Two at a time: the runs are independent processes.
    let failures: Vec<String> = std::thread::scope(|s| {
        let halves: Vec<_> = jobs
            .chunks(jobs.len().div_ceil(2))
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .filter_map(|(f, name, args, skip)| check(f, name, args, *skip))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        halves.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Nothing is lost silently: under skip, every record read is written or counted bad.
#[test]
fn consume_accounts_for_every_record_of_the_corpus() {
    let dir = tempfile::tempdir().unwrap();
    for file in corpus() {
        if file.extension().is_some_and(|e| e == "gz") {
            continue;
        }
        let stats = dir.path().join("stats.json");
        let out = weir_std()
            .args(["consume", "-q", "--on-error", "skip", "--stats"])
            .arg(&stats)
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}: {out:?}", file.display());
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        let lines = out.stdout.iter().filter(|b| **b == b'\n').count() as u64;
        assert_eq!(s["written"].as_u64(), Some(lines), "{}", file.display());
        assert_eq!(
            s["read"].as_u64().unwrap(),
            s["written"].as_u64().unwrap() + s["bad"].as_u64().unwrap(),
            "{}: {s}",
            file.display()
        );
    }
}
