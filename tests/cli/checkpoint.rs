//! Checkpoints: a run killed at any moment and started again loses nothing and writes nothing
//! twice, judged against one uninterrupted run.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

use crate::{weir, weir_std};

/// About 80 MB of records with event times, a bad line now and then, and lines of varied
/// length (so chunks end mid-way through records of every size).
fn big_input(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("in.ndjson");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(19);
    for i in 0..400_000u64 {
        if i % 997 == 5 {
            writeln!(out, "not json {i}").unwrap();
            continue;
        }
        let pad = "x".repeat(rng.random_range(0..300));
        writeln!(
            out,
            "{{\"i\":{i},\"t\":\"2026-01-01T{:02}:{:02}:{:02}Z\",\"pad\":\"{pad}\"}}",
            (i / 3600) % 24,
            (i / 60) % 60,
            i % 60
        )
        .unwrap();
    }
    out.flush().unwrap();
    path
}

/// The output length `checkpoint` (or the one before it) committed for `sink`.
fn committed_len(checkpoint: &Path, sink: &Path) -> u64 {
    use weir::runtime::checkpoint::file::{CheckpointFile, Loaded};
    let c = match CheckpointFile::new(checkpoint).read().unwrap() {
        Loaded::Fresh => return 0,
        Loaded::Current(c) | Loaded::Previous(c, _) => c,
    };
    let name = sink.display().to_string();
    c.sinks
        .iter()
        .find(|s| s.path == name)
        .map_or(0, |s| s.committed_len)
}

fn consume_args(input: &Path, out: &Path, bad: &Path) -> Vec<String> {
    [
        "consume",
        input.to_str().unwrap(),
        "--time",
        "t",
        "--from",
        "2026-01-01T00:10:00Z",
        "-o",
        out.to_str().unwrap(),
        "--dead-letter",
        bad.to_str().unwrap(),
        "-q",
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn consume_killed_twenty_times_writes_what_one_run_writes() {
    let dir = tempfile::tempdir().unwrap();
    let input = big_input(dir.path());
    let (full, full_bad) = (dir.path().join("full.ndjson"), dir.path().join("full.bad"));
    let out = weir()
        .args(consume_args(&input, &full, &full_bad))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");

    let (part, part_bad) = (dir.path().join("part.ndjson"), dir.path().join("part.bad"));
    let checkpoint = dir.path().join("run.ckpt");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut kills = 0;
    // The checkpoint's committed output length after each kill: it never goes back, and it
    // moves on, so restarts resume rather than start over.
    let (mut last_committed, mut advanced) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        assert!(Instant::now() < deadline, "no end after {kills} kills");
        let mut child = weir_std()
            .args(consume_args(&input, &part, &part_bad))
            .args(["--checkpoint", checkpoint.to_str().unwrap()])
            .args(["--checkpoint-interval", "1ms"])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Killed at a random moment once it has moved its checkpoint on (so that a loaded
        // machine cannot turn the drill into restarts that never get anywhere), until it has
        // been killed 20 times; then left to finish.
        let extra = Duration::from_millis(rng.random_range(0..15));
        let mut progressed: Option<Instant> = None;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if progressed.is_none() && committed_len(&checkpoint, &part) > last_committed {
                progressed = Some(Instant::now());
            }
            if kills < 20 && progressed.is_some_and(|at| at.elapsed() >= extra) {
                child.kill().unwrap();
                child.wait().unwrap();
                break None;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        match status {
            None => {
                kills += 1;
                let committed = committed_len(&checkpoint, &part);
                assert!(committed >= last_committed, "the checkpoint went back");
                advanced += usize::from(committed > last_committed);
                last_committed = committed;
            }
            Some(status) if status.success() => break,
            Some(status) => panic!("a restart failed: {status:?}"),
        }
    }
    assert!(kills >= 20);
    assert!(
        advanced >= 5,
        "the checkpoint moved on only {advanced} times"
    );
    assert!(
        std::fs::read(&part).unwrap() == std::fs::read(&full).unwrap(),
        "the output differs from one uninterrupted run's"
    );
    assert_eq!(
        std::fs::read_to_string(&part_bad).unwrap(),
        std::fs::read_to_string(&full_bad).unwrap()
    );
    // A finished run's checkpoint says so: running again adds nothing.
    let again = weir_std()
        .args(consume_args(&input, &part, &part_bad))
        .args(["--checkpoint", checkpoint.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(again.status.success(), "{again:?}");
    assert!(std::fs::read(&part).unwrap() == std::fs::read(&full).unwrap());
}

#[test]
fn a_checkpoint_of_another_job_is_refused_and_reset_starts_afresh() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.ndjson");
    std::fs::write(
        &input,
        "{\"t\":\"2026-01-01T00:00:00Z\"}\n{\"t\":\"2026-01-01T00:20:00Z\"}\n",
    )
    .unwrap();
    let (out, bad, ck) = (
        dir.path().join("out"),
        dir.path().join("bad"),
        dir.path().join("ck"),
    );
    let run = |from: &str, extra: &[&str]| {
        let mut args = consume_args(&input, &out, &bad);
        args[5] = from.into();
        weir()
            .args(args)
            .args(["--checkpoint", ck.to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap()
    };
    assert!(run("2026-01-01T00:10:00Z", &[]).status.success());
    let before = std::fs::read(&out).unwrap();
    let other = run("2026-01-01T00:00:00Z", &[]);
    assert_eq!(other.status.code(), Some(2), "{other:?}");
    assert!(String::from_utf8_lossy(&other.stderr).contains("another job"));
    // Refused before anything was touched.
    assert_eq!(std::fs::read(&out).unwrap(), before);
    let fresh = run("2026-01-01T00:00:00Z", &["--reset"]);
    assert!(fresh.status.success(), "{fresh:?}");
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 2);
    // A torn checkpoint falls back to the one before it; both torn is exit 2.
    std::fs::write(&ck, b"WEIRCKPT torn").unwrap();
    std::fs::write(dir.path().join("ck.prev"), b"torn").unwrap();
    let torn = run("2026-01-01T00:00:00Z", &[]);
    assert_eq!(torn.status.code(), Some(2), "{torn:?}");
    assert!(String::from_utf8_lossy(&torn.stderr).contains("--reset"));
}

#[test]
fn checkpoints_need_a_file_sink_and_a_file_source() {
    let out = weir()
        .args([
            "consume",
            "fixtures/checkouts.ndjson",
            "--checkpoint",
            "/tmp/never",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("-o FILE"));
    let out = weir()
        .args(["consume", "kafka://127.0.0.1:1/t", "-o", "/tmp/never"])
        .args(["--checkpoint", "/tmp/never.ckpt"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!Path::new("/tmp/never").exists());
}
