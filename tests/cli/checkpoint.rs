//! Checkpoints: a run killed at any moment and started again loses nothing and writes nothing
//! twice, judged against one uninterrupted run.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

use crate::{decompressed, weir, weir_std, KillDrill};

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
        // An id that now and then repeats one up to 1,000 records back.
        let d = match rng.random_range(0..4) {
            0 => i.saturating_sub(rng.random_range(1..1000)),
            _ => i,
        };
        // Event time a second per record, shuffled by up to a minute; arrival up to 10 min
        // after it, as epoch milliseconds.
        let t = 1_767_225_600 + i as i64 - rng.random_range(0..60);
        let a = t * 1000 + rng.random_range(0..600_000);
        let t = chrono::DateTime::from_timestamp(t, 0).unwrap().to_rfc3339();
        writeln!(
            out,
            "{{\"i\":{i},\"d\":{d},\"t\":\"{t}\",\"a\":{a},\"c\":\"c{}\",\"pad\":\"{pad}\"}}",
            i % 7
        )
        .unwrap();
    }
    out.flush().unwrap();
    path
}

/// How far into its input `checkpoint` (or the one before it) says the run got, in bytes.
pub(super) fn checkpointed_offset(checkpoint: &Path) -> u64 {
    use weir::runtime::checkpoint::file::{CheckpointFile, Loaded, Resume};
    let c = match CheckpointFile::new(checkpoint).read().unwrap() {
        Loaded::Fresh => return 0,
        Loaded::Current(c) | Loaded::Previous(c, _) => c,
    };
    c.partitions
        .iter()
        .find_map(|p| match p.resume {
            Resume::File { offset, .. } => Some(offset),
            _ => None,
        })
        .unwrap_or(0)
}

/// Runs `args` with `--checkpoint`, killing it 20 times at random moments, each time once its
/// checkpoint has moved on, then lets it finish; returns its last stdout.
fn killed_twenty_times(args: &[String], checkpoint: &Path, seed: u64) -> Vec<u8> {
    // Stdout to a file: a report bigger than a pipe would block a child nobody reads.
    let stdout = checkpoint.with_extension("stdout");
    // At most 5 ms on after the checkpoint moved: twenty runs of up to 15 ms each could read
    // the whole input (100 MB) on a fast, calm machine, and the last kills would find the
    // run finished.
    let drill = KillDrill {
        kills: 20,
        seed,
        max_extra: Duration::from_millis(5),
        deadline: Duration::from_secs(240),
    };
    drill.run(
        || {
            weir_std()
                .args(args)
                .args(["--checkpoint", checkpoint.to_str().unwrap()])
                .args(["--checkpoint-interval", "1ms"])
                .stdout(std::fs::File::create(&stdout).unwrap())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        },
        || checkpointed_offset(checkpoint),
        || {},
        |status| {
            assert!(status.success(), "a restart failed: {status:?}");
            false
        },
    );
    std::fs::read(&stdout).unwrap()
}

fn consume_args(input: &Path, out: &Path, bad: &Path) -> Vec<String> {
    [
        "consume",
        input.to_str().unwrap(),
        "--time",
        "t",
        "--from",
        "2026-01-01T00:10:00Z",
        "--to",
        "2026-01-05T12:00:00Z",
        "-o",
        out.to_str().unwrap(),
        "--dead-letter",
        bad.to_str().unwrap(),
        "-q",
    ]
    .map(String::from)
    .to_vec()
}

/// Consume killed twenty times writes what one run writes, over plain, gzip and zstd input
/// alike: a checkpoint's offset is of the decompressed stream, and a restored run decompresses
/// again up to it. Every output is the one uninterrupted run's over the plain input.
#[test]
fn consume_killed_twenty_times_writes_what_one_run_writes() {
    let dir = tempfile::tempdir().unwrap();
    let input = big_input(dir.path());
    let plain = std::fs::read(&input).unwrap();
    let (full, full_bad) = (dir.path().join("full.ndjson"), dir.path().join("full.bad"));
    let out = weir()
        .args(consume_args(&input, &full, &full_bad))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let gzip = {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&plain).unwrap();
        gz.finish().unwrap()
    };
    let zstd = zstd::stream::encode_all(&plain[..], 1).unwrap();
    let inputs = [
        ("in.ndjson", None, 7),
        ("in.ndjson.gz", Some(gzip), 11),
        ("in.ndjson.zst", Some(zstd), 13),
    ];
    for (name, compressed, seed) in inputs {
        let input = dir.path().join(name);
        if let Some(bytes) = compressed {
            std::fs::write(&input, bytes).unwrap();
        }
        let (part, part_bad) = (dir.path().join("part.ndjson"), dir.path().join("part.bad"));
        let checkpoint = dir.path().join(format!("{name}.ckpt"));
        let args = consume_args(&input, &part, &part_bad);
        killed_twenty_times(&args, &checkpoint, seed);
        let same = || std::fs::read(&part).unwrap() == std::fs::read(&full).unwrap();
        assert!(
            same(),
            "{name}: the output differs from one uninterrupted run's"
        );
        assert_eq!(
            std::fs::read_to_string(&part_bad)
                .unwrap()
                .replace(name, "in.ndjson"),
            std::fs::read_to_string(&full_bad).unwrap(),
            "{name}"
        );
        // A finished run's checkpoint says so: running again adds nothing.
        let again = weir_std()
            .args(&args)
            .args(["--checkpoint", checkpoint.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(again.status.success(), "{name}: {again:?}");
        assert!(same(), "{name}: a finished job ran again");
    }
}

/// Runs `command` (arguments, with `{dir}/{run}-` before each output file's name) once
/// uninterrupted and once killed twenty times; every output file must be the same.
fn drill(command: &[&str], outputs: &[&str], seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let input = big_input(dir.path());
    let args = |run: &str| -> Vec<String> {
        let mut args: Vec<String> = vec![command[0].into(), input.to_str().unwrap().into()];
        for a in &command[1..] {
            args.push(match outputs.contains(a) {
                true => dir.path().join(format!("{run}-{a}")).display().to_string(),
                false => a.to_string(),
            });
        }
        args.push("-q".into());
        args
    };
    let whole = weir().args(args("whole")).output().unwrap();
    assert!(whole.status.success(), "{whole:?}");
    let checkpoint = dir.path().join("run.ckpt");
    killed_twenty_times(&args("drilled"), &checkpoint, seed);
    // A finished job's checkpoint says so: running it again changes nothing.
    let again = weir_std()
        .args(args("drilled"))
        .args(["--checkpoint", checkpoint.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(again.status.success(), "{again:?}");
    for name in outputs {
        let read = |run: &str| std::fs::read(dir.path().join(format!("{run}-{name}"))).unwrap();
        let (whole, drilled) = (read("whole"), read("drilled"));
        // A compressed file's members end at other places in each run: its text must agree.
        let (whole, drilled) = (decompressed(name, whole), decompressed(name, drilled));
        assert!(
            !whole.is_empty(),
            "{name} is empty: the drill tests nothing there"
        );
        assert!(
            drilled == whole,
            "{name} differs from one uninterrupted run's ({} and {} bytes)",
            drilled.len(),
            whole.len()
        );
    }
}

const DRILL_AGGREGATES: [&str; 9] = [
    "--count",
    "--sum",
    "i",
    "--distinct",
    "d",
    "--percentile",
    "i:p50,p99",
    "--first",
    "i",
];

#[test]
fn window_tumbling_with_lateness_killed_twenty_times_writes_what_one_run_writes() {
    let mut command = vec![
        "window",
        "--time",
        "t",
        "--key",
        "c",
        "--tumbling",
        "10s",
        "--delay",
        "20s",
        "--allowed-lateness",
        "10s",
        "-o",
        "rows",
        "--late-output",
        "late",
        "--on-error",
        "skip",
        "--dead-letter",
        "bad",
    ];
    command.extend(DRILL_AGGREGATES);
    drill(&command, &["rows", "late", "bad"], 23);
}

/// Into gzip and zstd files: a restored run cuts each back to the end of a member.
#[test]
fn window_sessions_as_csv_killed_twenty_times_write_what_one_run_writes() {
    let mut command = vec![
        "window",
        "--time",
        "t",
        "--key",
        "c",
        "--session",
        "8s",
        "--delay",
        "5s",
        "--allowed-lateness",
        "40s",
        "--format",
        "csv",
        "-o",
        "rows.csv.gz",
        "--late-output",
        "late.ndjson.zst",
        "--on-error",
        "skip",
    ];
    command.extend(DRILL_AGGREGATES);
    drill(&command, &["rows.csv.gz", "late.ndjson.zst"], 29);
}

#[test]
fn dedupe_keep_first_killed_twenty_times_writes_what_one_run_writes() {
    drill(
        &[
            "dedupe",
            "--id",
            "d",
            "--time",
            "t",
            "--horizon",
            "5m",
            "--delay",
            "30s",
            "--max-keys",
            "400",
            "-o",
            "kept",
            "--duplicates",
            "dups",
            "--on-error",
            "skip",
            "--dead-letter",
            "bad",
        ],
        &["kept", "dups", "bad"],
        31,
    );
}

/// Into zstd and gzip files, as the window drill above.
#[test]
fn dedupe_keep_last_killed_twenty_times_writes_what_one_run_writes() {
    drill(
        &[
            "dedupe",
            "--id",
            "d",
            "--time",
            "t",
            "--horizon",
            "5m",
            "--delay",
            "30s",
            "--keep",
            "last",
            "--exact-ids",
            "-o",
            "kept.ndjson.zst",
            "--duplicates",
            "dups.ndjson.gz",
            "--on-error",
            "skip",
        ],
        &["kept.ndjson.zst", "dups.ndjson.gz"],
        37,
    );
}

#[test]
fn watermark_profile_killed_twenty_times_reports_what_one_run_reports() {
    let dir = tempfile::tempdir().unwrap();
    let input = big_input(dir.path());
    let args: Vec<String> = [
        "watermark-profile",
        input.to_str().unwrap(),
        "--time",
        "t",
        "--arrival",
        "a",
        "--by",
        "c",
        "--format",
        "json",
        "-q",
        "--on-error",
        "skip",
    ]
    .map(String::from)
    .to_vec();
    let whole = weir().args(&args).output().unwrap();
    assert!(whole.status.success(), "{whole:?}");
    let checkpoint = dir.path().join("profile.ckpt");
    let resumed = killed_twenty_times(&args, &checkpoint, 11);
    let whole: serde_json::Value = serde_json::from_slice(&whole.stdout).unwrap();
    let resumed: serde_json::Value = serde_json::from_slice(&resumed).unwrap();
    assert_eq!(resumed, whole);
    assert!(whole["records"].as_u64().unwrap() > 390_000);
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
        args[7] = "2026-02-01T00:00:00Z".into();
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
    let err = String::from_utf8_lossy(&other.stderr);
    // The flag that differs, as typed, not the job's inner spelling.
    assert!(
        err.contains(
            "another job (--from 2026-01-01T00:10:00Z then, --from 2026-01-01T00:00:00Z now)"
        ),
        "{err}"
    );
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

/// A finished job run again reads nothing, and says why: its checkpoint stands at the end of
/// the input. A run that went on with new records does not say it.
#[test]
fn a_finished_job_run_again_says_its_checkpoint_is_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.ndjson");
    std::fs::write(&input, "{\"n\":1}\n{\"n\":2}\n").unwrap();
    let (out, ck) = (dir.path().join("out"), dir.path().join("ck"));
    let run = || {
        weir()
            .arg("consume")
            .arg(&input)
            .arg("-o")
            .arg(&out)
            .arg("--checkpoint")
            .arg(&ck)
            .output()
            .unwrap()
    };
    let first = run();
    assert!(first.status.success(), "{first:?}");
    let said = "nothing was left to read: the checkpoint";
    assert!(!String::from_utf8_lossy(&first.stderr).contains(said));
    let again = run();
    assert!(again.status.success(), "{again:?}");
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(err.contains(said) && err.contains("--reset"), "{err}");
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 2);
}

#[test]
fn checkpoints_need_a_file_or_topic_sink() {
    for source in ["fixtures/checkouts.ndjson", "kafka://127.0.0.1:1/t"] {
        let out = weir()
            .args(["consume", source, "--checkpoint", "/tmp/never"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        assert!(String::from_utf8_lossy(&out.stderr)
            .contains("--checkpoint needs -o FILE, kafka://... or kinesis://..."));
    }
    // A Kafka source may be checkpointed: here its broker is unreachable (exit 4), found
    // before the output file is created.
    let dir = tempfile::tempdir().unwrap();
    let never = dir.path().join("never");
    let out = weir()
        .args(["consume", "kafka://127.0.0.1:1/t", "--timeout", "2s", "-o"])
        .arg(&never)
        .arg("--checkpoint")
        .arg(dir.path().join("never.ckpt"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(!never.exists());
}

/// Stdin in two parts, the second run restored from the first one's final checkpoint, writes
/// what one run over the whole writes: the open windows and remembered ids go on with the new
/// stdin, and the rows the first run wrote at its end are cut off and written again, updated.
#[test]
fn a_new_stdin_goes_on_from_the_last_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let input = std::fs::read_to_string("fixtures/checkouts.ndjson").unwrap();
    let lines: Vec<&str> = input.lines().collect();
    // Some event ids again in the second part, so that dedupe has something to remember.
    let second: String = lines[250..]
        .iter()
        .chain(&lines[200..220])
        .map(|l| format!("{l}\n"))
        .collect();
    let first: String = lines[..250].iter().map(|l| format!("{l}\n")).collect();
    let commands: [&[&str]; 2] = [
        &[
            "window",
            "--time",
            "occurred_at",
            "--key",
            "merchant_id",
            "--tumbling",
            "1m",
            "--delay",
            "30s",
            "--count",
            "--sum",
            "amount",
        ],
        &[
            "dedupe",
            "--id",
            "event_id",
            "--time",
            "occurred_at",
            "--horizon",
            "10m",
            "--keep",
            "last",
        ],
    ];
    for command in commands {
        let whole_out = dir.path().join("whole");
        let whole = weir()
            .args(command)
            .args(["-q", "-o", whole_out.to_str().unwrap()])
            .write_stdin(format!("{first}{second}"))
            .output()
            .unwrap();
        assert!(whole.status.success(), "{whole:?}");
        let (out, ck) = (dir.path().join("parts"), dir.path().join(command[0]));
        for (part, said) in [(&first, false), (&second, true)] {
            let run = weir()
                .args(command)
                .args(["-q", "-o", out.to_str().unwrap()])
                .args(["--checkpoint", ck.to_str().unwrap()])
                .write_stdin(part.clone())
                .output()
                .unwrap();
            assert!(run.status.success(), "{run:?}");
            let stderr = String::from_utf8_lossy(&run.stderr);
            assert_eq!(stderr.contains("where this stdin starts"), said, "{stderr}");
        }
        let (want, got) = (
            std::fs::read_to_string(&whole_out).unwrap(),
            std::fs::read_to_string(&out).unwrap(),
        );
        assert!(want.lines().count() > 10, "{want}");
        assert_eq!(got, want, "{}", command[0]);
    }
}

#[test]
fn replay_at_a_rate_killed_twenty_times_sends_what_one_run_sends() {
    // At 150,000 records a second most records are sent at once and every few hundred the
    // run waits a millisecond or more: checkpoints are taken inside chunks, in those waits.
    // `-n` stops short of the input's end: the killed runs together send exactly N.
    drill(
        &[
            "replay",
            "--rate",
            "150k/s",
            "-n",
            "300000",
            "--time",
            "t",
            "--from",
            "2026-01-01T00:10:00Z",
            "-o",
            "sent",
            "--on-error",
            "skip",
            "--dead-letter",
            "bad",
        ],
        &["sent", "bad"],
        41,
    );
}

#[test]
fn replay_at_a_speed_killed_twenty_times_sends_what_one_run_sends() {
    drill(
        &[
            "replay",
            "--speed",
            "200000x",
            "--time",
            "t",
            "-o",
            "sent",
            "--on-error",
            "skip",
        ],
        &["sent"],
        43,
    );
}

/// A paced replay killed half way and started again goes on at its pace: the records left
/// neither go out in a burst to catch up nor wait for the time already spent.
#[test]
fn a_restored_replay_keeps_its_pace() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.ndjson");
    let lines: String = (0..60).map(|i| format!("{{\"i\":{i}}}\n")).collect();
    std::fs::write(&input, &lines).unwrap();
    let (out, ck) = (dir.path().join("out"), dir.path().join("ck"));
    let run = || {
        weir_std()
            .args(["replay", "--rate", "20/s", "-q", "-o"])
            .arg(&out)
            .arg(&input)
            .arg("--checkpoint")
            .arg(&ck)
            .args(["--checkpoint-interval", "50ms"])
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut first = run();
    std::thread::sleep(Duration::from_millis(1500));
    first.kill().unwrap();
    first.wait().unwrap();
    let sent_before = std::fs::read_to_string(&out).unwrap().lines().count();
    assert!((15..=40).contains(&sent_before), "{sent_before} sent");

    let started = Instant::now();
    let status = run().wait().unwrap();
    let took = started.elapsed();
    assert!(status.success());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), lines);
    // The whole run is due over 59 / 20 = 2.95 s; the restored one has the rest of it. A
    // burst would take next to nothing; a clock started afresh would take 2.95 s.
    let checkpointed: f64 = 2.95 - (sent_before as f64 - 1.0) / 20.0;
    assert!(
        took.as_secs_f64() >= checkpointed - 0.3,
        "the rest went out in {took:?}, faster than the pace"
    );
    assert!(
        took.as_secs_f64() <= checkpointed + 0.9,
        "the rest took {took:?}: the clock did not go on from the checkpoint"
    );
}

/// A checkpoint corrupted (a flipped byte) and one truncated, each found at a restart: the
/// run says so, goes on from the checkpoint before it, and still writes what one
/// uninterrupted run writes.
#[test]
fn a_corrupted_or_truncated_checkpoint_gives_way_to_the_one_before() {
    let dir = tempfile::tempdir().unwrap();
    let input = big_input(dir.path());
    let (full, full_bad) = (dir.path().join("full.ndjson"), dir.path().join("full.bad"));
    let whole = weir()
        .args(consume_args(&input, &full, &full_bad))
        .output()
        .unwrap();
    assert!(whole.status.success(), "{whole:?}");
    let (part, part_bad) = (dir.path().join("part.ndjson"), dir.path().join("part.bad"));
    let checkpoint = dir.path().join("run.ckpt");
    let previous = dir.path().join("run.ckpt.prev");
    let stderr = dir.path().join("stderr");
    let damaged = std::cell::Cell::new(0);
    let mut said = Vec::new();
    let mut after_damage = false;
    KillDrill {
        kills: 2,
        seed: 3,
        max_extra: Duration::from_millis(30),
        deadline: Duration::from_secs(120),
    }
    .run(
        || {
            // What the last run said, when it started on a damaged checkpoint.
            if std::mem::replace(&mut after_damage, damaged.get() > said.len()) {
                said.push(std::fs::read_to_string(&stderr).unwrap());
            }
            weir_std()
                .args(consume_args(&input, &part, &part_bad))
                .args(["--checkpoint", checkpoint.to_str().unwrap()])
                .args(["--checkpoint-interval", "1ms"])
                .stderr(std::fs::File::create(&stderr).unwrap())
                .spawn()
                .unwrap()
        },
        // Progress counts once there are two checkpoints: one to damage, one to fall back on.
        || match previous.exists() {
            true => checkpointed_offset(&checkpoint),
            false => 0,
        },
        || {
            assert!(previous.exists(), "no checkpoint before the last one");
            // (Killed between its two renames, the run left no current one: that is damage
            // enough.)
            if let Ok(mut bytes) = std::fs::read(&checkpoint) {
                if damaged.get() == 0 {
                    let middle = bytes.len() / 2;
                    bytes[middle] ^= 0x20;
                } else {
                    bytes.truncate(bytes.len() * 2 / 3);
                }
                std::fs::write(&checkpoint, bytes).unwrap();
            }
            damaged.set(damaged.get() + 1);
        },
        |status| {
            assert!(status.success(), "a restart failed: {status:?}");
            false
        },
    );
    said.push(std::fs::read_to_string(&stderr).unwrap());
    // The runs after each damage said which checkpoint they used.
    assert_eq!(said.len(), 2, "{said:?}");
    for text in &said {
        assert!(text.contains("restoring the one before it"), "{text}");
    }
    assert!(std::fs::read(&part).unwrap() == std::fs::read(&full).unwrap());
    assert_eq!(
        std::fs::read_to_string(&part_bad).unwrap(),
        std::fs::read_to_string(&full_bad).unwrap()
    );
}
