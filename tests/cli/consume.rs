use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;

use predicates::prelude::*;
use serde_json::Value;

use crate::{decompressed, fixture, generated, stdout_lines, weir, weir_std};

const TWO_LINES: &str = "{\"t\":\"2026-01-01T00:00:00Z\"}\nnot json\n";

#[test]
fn bad_line_fails_with_exit_3_naming_line_and_reason() {
    weir()
        .args(["consume", "--time", "t"])
        .write_stdin(TWO_LINES)
        .assert()
        .code(3)
        .stdout("{\"t\":\"2026-01-01T00:00:00Z\"}\n")
        .stderr(predicate::str::contains(
            "bad input at <stdin>:2: not valid JSON",
        ));
}

/// A run that fails before its first record prints the error alone, no "read 0" summary.
#[test]
fn a_missing_input_prints_only_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.ndjson");
    weir()
        .arg("consume")
        .arg(&missing)
        .assert()
        .code(4)
        .stdout("")
        .stderr(
            predicate::str::starts_with("weir: error: cannot read")
                .and(predicate::function(|err: &str| err.lines().count() == 1)),
        );
}

#[test]
fn skip_counts_the_bad_record_in_summary_and_stats() {
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("stats.json");
    weir()
        .args(["consume", "--time", "t", "--on-error", "skip", "--stats"])
        .arg(&stats)
        .write_stdin(TWO_LINES)
        .assert()
        .success()
        .stdout("{\"t\":\"2026-01-01T00:00:00Z\"}\n")
        .stderr(predicate::str::contains(
            "weir consume: read 2, written 1, bad 1 in",
        ));
    let s: Value = serde_json::from_str(&std::fs::read_to_string(stats).unwrap()).unwrap();
    assert_eq!(
        (s["read"].as_u64(), s["written"].as_u64(), s["bad"].as_u64()),
        (Some(2), Some(1), Some(1))
    );
    assert_eq!(s["exit_code"], 0);
    assert_eq!(s["command"], "consume");
}

#[test]
fn dead_letter_keeps_the_bad_line_with_its_position() {
    let dir = tempfile::tempdir().unwrap();
    let dead = dir.path().join("bad.ndjson");
    weir()
        .args(["consume", "--time", "t", "--dead-letter"])
        .arg(&dead)
        .write_stdin(TWO_LINES)
        .assert()
        .success();
    let text = std::fs::read_to_string(dead).unwrap();
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["position"], "<stdin>:2");
    assert_eq!(entries[0]["line"], 2);
    assert_eq!(entries[0]["record"], "not json");
    assert!(entries[0]["reason"]
        .as_str()
        .unwrap()
        .starts_with("not valid JSON"));
}

#[test]
fn bad_fixture_known_answers() {
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("s.json");
    let dead = dir.path().join("d.ndjson");
    let out = weir()
        .args([
            "consume",
            "fixtures/bad.ndjson",
            "--time",
            "t",
            "--on-error",
            "skip",
            "-q",
        ])
        .arg("--stats")
        .arg(&stats)
        .arg("--dead-letter")
        .arg(&dead)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "-q prints nothing: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ids: Vec<i64> = stdout_lines(&out)
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(ids, [1, 6, 8, 11]);
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(s["read"], 10);
    assert_eq!(s["bad"], 6);
    assert_eq!(s["blank_lines"], 1);

    // Each dead letter names its line and why (checked against fixtures/README.md).
    let dead: Vec<Value> = std::fs::read_to_string(&dead)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by_line: Vec<(u64, String)> = dead
        .iter()
        .map(|d| {
            (
                d["line"].as_u64().unwrap(),
                d["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expect = [
        (2, "not valid JSON"),
        (3, "missing field 't'"),
        (4, "field 't': unparsable time \"yesterday\": not RFC 3339"),
        (7, "invalid UTF-8 at byte"),
        (9, "not a JSON object"),
        (10, "field 't': ambiguous epoch time 12345"),
    ];
    assert_eq!(by_line.len(), expect.len(), "{by_line:?}");
    for ((line, reason), (want_line, want_reason)) in by_line.iter().zip(expect) {
        assert_eq!(*line, want_line);
        assert!(reason.starts_with(want_reason), "line {line}: {reason}");
    }
    // The invalid UTF-8 record survives byte for byte.
    assert!(dead[3]["record_base64"].is_string());
}

#[test]
fn long_lines_and_json_only_validation() {
    let out = weir()
        .args([
            "consume",
            "fixtures/bad.ndjson",
            "--time",
            "t",
            "--on-error",
            "skip",
            "--max-line-bytes",
            "1000",
        ])
        .output()
        .unwrap();
    assert_eq!(stdout_lines(&out).len(), 3);
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad 7"));

    let out = weir()
        .args(["consume", "fixtures/bad.ndjson", "--on-error", "skip"])
        .output()
        .unwrap();
    assert_eq!(stdout_lines(&out).len(), 8);
    assert!(String::from_utf8_lossy(&out.stderr).contains("written 8, bad 2"));
}

#[test]
fn fail_on_the_fixture_names_the_file_and_line() {
    weir()
        .args(["consume", "fixtures/bad.ndjson"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains(
            "bad input at fixtures/bad.ndjson:2",
        ));
}

#[test]
fn missing_time_field_suggests_the_path() {
    weir()
        .args(["consume", "--time", "occurred_at"])
        .write_stdin("{\"topic\":\"t\",\"value\":{\"occurred_at\":\"2026-01-01T00:00:00Z\"}}\n")
        .assert()
        .code(3)
        .stderr(predicate::str::contains(
            "missing field 'occurred_at' (did you mean 'value.occurred_at'?)",
        ));
}

/// Every spelling of the data's times, and of the bounds: an RFC 3339 time, or one without
/// an offset (UTC).
#[test]
fn time_range_over_every_spelling() {
    let bounds = [
        ("2026-11-28T12:00:00Z", "2026-11-28T12:02:00Z"),
        ("2026-11-28 12:00", "2026-11-28T12:02"),
        ("2026-11-28T13:00:00+01:00", "2026-11-28 12:02:00.000"),
    ];
    for (from, to) in bounds {
        let out = weir()
            .args(["consume", "fixtures/times.ndjson", "--time", "t"])
            .args(["--from", from, "--to", to])
            .output()
            .unwrap();
        assert!(out.status.success(), "{from} {to}: {out:?}");
        let ids: Vec<String> = stdout_lines(&out)
            .iter()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["id"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(ids, ["a", "c", "d", "g"], "{from} {to}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("filtered 3"));
    }
}

/// The range on the generated fixture, against text comparison of its UTC timestamps.
#[test]
fn time_range_on_checkouts_matches_text_order() {
    let (from, to) = ("2026-11-28T12:02:00.000Z", "2026-11-28T12:05:30.000Z");
    let text = std::fs::read_to_string(fixture("checkouts.ndjson")).unwrap();
    let expected: Vec<&str> = text
        .lines()
        .filter(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let t = v["occurred_at"].as_str().unwrap().to_string();
            t.as_str() >= from && t.as_str() < to
        })
        .collect();
    assert!(
        expected.len() > 100 && expected.len() < 400,
        "a range that cuts: {}",
        expected.len()
    );
    let out = weir()
        .args([
            "consume",
            "fixtures/checkouts.ndjson",
            "--time",
            "occurred_at",
            "--from",
            from,
            "--to",
            to,
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(stdout_lines(&out), expected);
}

/// On generated out-of-order data, the output is exactly the events whose true event time
/// (known to the generator, not parsed) lies in the range, in input order, bytes unchanged.
#[test]
fn time_range_on_generated_data_matches_generator_truth() {
    let (file, events) = generated(20_000, 11);
    let from = events[5000].occurred_at;
    let to = events[15000].occurred_at;
    let fmt = weir::core::time::format_millis;
    let out = weir()
        .arg("consume")
        .arg(file.path())
        .args([
            "--time",
            "occurred_at",
            "--from",
            &fmt(from),
            "--to",
            &fmt(to),
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let expected: Vec<String> = events
        .iter()
        .filter(|e| e.occurred_at >= from && e.occurred_at < to)
        .map(|e| {
            let mut b = Vec::new();
            e.write_json(&mut b);
            String::from_utf8(b).unwrap()
        })
        .collect();
    assert_eq!(stdout_lines(&out), expected);
}

#[test]
fn count_stops_after_n_records() {
    let out = weir()
        .args(["consume", "fixtures/checkouts.ndjson", "-n", "3"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = std::fs::read_to_string(fixture("checkouts.ndjson")).unwrap();
    let first3: Vec<&str> = text.lines().take(3).collect();
    assert_eq!(stdout_lines(&out), first3);
    let out = weir()
        .args(["consume", "fixtures/checkouts.ndjson", "-n", "0"])
        .output()
        .unwrap();
    assert!(out.status.success() && out.stdout.is_empty());
}

/// `replay -n N` stops after N records sent; records outside --from/--to are not counted,
/// and --dry-run counts as it would send.
#[test]
fn replay_count_stops_after_n_records_sent() {
    let input: String = (0..10)
        .map(|i| format!("{{\"i\":{i},\"t\":\"2026-01-01T00:0{i}:00Z\"}}\n"))
        .collect();
    let replay = |extra: &[&str]| {
        weir()
            .args(["replay", "--time", "t", "--from", "2026-01-01T00:02:00Z"])
            .args(extra)
            .write_stdin(input.clone())
            .output()
            .unwrap()
    };
    let out = replay(&["-n", "3"]);
    assert!(out.status.success(), "{out:?}");
    let want: Vec<&str> = input.lines().skip(2).take(3).collect();
    assert_eq!(stdout_lines(&out), want);
    let out = replay(&["-n", "3", "--dry-run", "--stats", "/dev/stdout", "-q"]);
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (stats["written"].clone(), stats["filtered"].clone()),
        (3.into(), 2.into())
    );
    let out = replay(&["-n", "3", "--dry-run"]);
    assert!(out.stdout.is_empty(), "{out:?}");
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(
        summary.contains("read 5, would write 3, filtered 2"),
        "{summary}"
    );
    assert!(replay(&["-n", "0"]).stdout.is_empty());
}

#[test]
fn output_bytes_are_the_input_bytes() {
    // Key order, spacing and number spelling survive.
    let input = "{ \"b\" : 1.50, \"a\":1e3 }\n{\"z\":[1, 2],\"y\":\"\\u00e9\"}\n";
    weir()
        .arg("consume")
        .write_stdin(input)
        .assert()
        .success()
        .stdout(input);
}

#[test]
fn files_in_order_gzip_and_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("times.ndjson.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&std::fs::read(fixture("times.ndjson")).unwrap())
        .unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let out_file = dir.path().join("out.ndjson");
    weir()
        .args(["consume", "fixtures/times.ndjson"])
        .arg(&gz)
        .arg("-o")
        .arg(&out_file)
        .assert()
        .success()
        .stdout("");
    let times = std::fs::read_to_string(fixture("times.ndjson")).unwrap();
    assert_eq!(
        std::fs::read_to_string(out_file).unwrap(),
        format!("{times}{times}")
    );
    // A bad line in the second file is reported with that file's name and line.
    let bad = dir.path().join("second.ndjson");
    std::fs::write(&bad, "{}\n{}\n{\n").unwrap();
    weir()
        .args(["consume", "fixtures/times.ndjson"])
        .arg(&bad)
        .assert()
        .code(3)
        .stderr(predicate::str::contains(format!("{}:3", bad.display())));
}

#[test]
fn exit_codes_for_usage_and_unreachable() {
    weir()
        .args(["consume", "--from", "-1h"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("need --time"));
    weir()
        .args(["consume", "--time", "t", "--from", "42"])
        .assert()
        .code(2);
    weir()
        .args(["consume", "--time-format", "fortnights"])
        .assert()
        .code(2);
    weir()
        .args(["consume", "kafka://localhost:0/t"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("invalid port '0'"));
    weir()
        .args(["consume", "--partitions", "1", "fixtures/checkouts.ndjson"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("applies to a Kafka source"));
    weir()
        .args(["consume", "-J", "fixtures/checkouts.ndjson"])
        .assert()
        .code(2);
    weir()
        .args(["consume", "no/such/file.ndjson"])
        .assert()
        .code(4)
        .stderr(predicate::str::contains("no/such/file.ndjson"));
    weir()
        .args(["consume", "-o", "/no/such/dir/out"])
        .write_stdin("{}\n")
        .assert()
        .code(4);
    weir()
        .args(["lag", "kafka://localhost:9092"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--group"));
}

/// `weir consume big.ndjson | head -1`: exit 0, nothing on stderr.
#[test]
fn closed_stdout_is_a_quiet_success() {
    let (file, _) = generated(100_000, 3);
    let mut child = weir_std()
        .arg("consume")
        .arg(file.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("{\"event_id\""));
    // Reader dropped: stdout is closed, as `head -1` does.
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "{status:?} {err}");
    assert_eq!(err, "");
}

/// In a live pipeline a record comes out as soon as it is read, not when a buffer fills.
#[test]
fn records_flow_through_a_live_pipe() {
    let mut child = weir_std()
        .args(["consume", "-q"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"{\"n\":1}\n").unwrap();
    stdin.flush().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        tx.send(line).unwrap();
    });
    let line = rx
        .recv_timeout(std::time::Duration::from_secs(5))
        .expect("record flushed while input stays open");
    assert_eq!(line, "{\"n\":1}\n");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// An output file named `.gz` or `.zst` is compressed, and decompresses to what a plain one
/// holds: whole also when the run stops on bad input (exit 3), dead letters included; weir
/// reads it back.
#[test]
fn output_files_named_gz_or_zst_are_compressed() {
    let dir = tempfile::tempdir().unwrap();
    let run = |out: &str, dead: &str| {
        let (out, dead) = (dir.path().join(out), dir.path().join(dead));
        let code = weir()
            .args([
                "consume",
                "fixtures/bad.ndjson",
                "--time",
                "t",
                "--on-error",
                "fail",
            ])
            .arg("-o")
            .arg(&out)
            .arg("--dead-letter")
            .arg(&dead)
            .output()
            .unwrap()
            .status
            .code();
        (
            code,
            std::fs::read(out).unwrap(),
            std::fs::read(dead).unwrap(),
        )
    };
    let (code, plain, plain_dead) = run("plain.ndjson", "plain.bad");
    assert_eq!(code, Some(3));
    assert!(!plain.is_empty() && !plain_dead.is_empty());
    for codec in ["gz", "zst"] {
        let (out, dead) = (format!("out.ndjson.{codec}"), format!("bad.ndjson.{codec}"));
        let (code, packed, packed_dead) = run(&out, &dead);
        assert_eq!(code, Some(3), "{codec}");
        assert_eq!(decompressed(&out, packed), plain, "{codec}");
        assert_eq!(decompressed(&dead, packed_dead), plain_dead, "{codec}");
    }
    let fixture_bytes = std::fs::read(fixture("checkouts.ndjson")).unwrap();
    for name in ["all.ndjson.gz", "all.ndjson.zst"] {
        let path = dir.path().join(name);
        weir()
            .args(["consume", "fixtures/checkouts.ndjson", "-q", "-o"])
            .arg(&path)
            .assert()
            .success();
        let back = weir().arg("consume").arg(&path).arg("-q").output().unwrap();
        assert_eq!(back.stdout, fixture_bytes, "{name}");
    }
    // No record written: still a compressed file (gzip -d refuses one of no bytes).
    for name in ["none.ndjson.gz", "none.ndjson.zst"] {
        let path = dir.path().join(name);
        weir()
            .args([
                "consume",
                "fixtures/checkouts.ndjson",
                "-q",
                "--time",
                "occurred_at",
            ])
            .args(["--from", "2099-01-01T00:00:00Z", "-o"])
            .arg(&path)
            .assert()
            .success();
        assert_eq!(decompressed(name, std::fs::read(&path).unwrap()), b"");
    }
}

/// A full disk is a sink that refused us (exit 4, naming the file), plain or compressed,
/// whether the write fails mid-run or only when the end of a member is written.
#[test]
fn a_full_disk_is_exit_4_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["full.ndjson", "full.ndjson.gz", "full.ndjson.zst"] {
        let path = dir.path().join(name);
        std::os::unix::fs::symlink("/dev/full", &path).unwrap();
        for input in ["fixtures/checkouts.ndjson", "fixtures/bad.ndjson"] {
            weir()
                .args(["consume", input, "--on-error", "skip", "-o"])
                .arg(&path)
                .assert()
                .code(4)
                .stderr(predicate::str::contains(format!(
                    "cannot write to {}: No space left on device",
                    path.display()
                )));
        }
    }
}

/// A plain file is read through a memory map and stdin as a stream: the same bytes give the
/// same records, dead letters and summary either way. The input has a byte order mark, CRLF
/// and blank lines, bad records, lines longer than a chunk (1 MiB) under and over
/// `--max-line-bytes`, and a last line without its newline.
#[test]
fn a_mapped_file_reads_as_the_same_bytes_on_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let long = |n: usize| format!("{{\"t\":1,\"pad\":\"{}\"}}", "x".repeat(n));
    let mut text = String::from("\u{feff}{\"t\":1}\r\n\n{\"t\":2}\nnot json\n");
    text.push_str(&long(1_500_000)); // under the limit below, longer than a chunk
    text.push('\n');
    text.push_str(&long(2_500_000)); // over it
    text.push('\n');
    for i in 0..20_000 {
        text.push_str(&format!("{{\"t\":{i},\"v\":\"{}\"}}\n", "y".repeat(i % 90)));
    }
    text.push_str("{\"t\":3}"); // no newline
    let path = dir.path().join("in.ndjson");
    std::fs::write(&path, &text).unwrap();
    let run = |from_file: bool, dead: &str| {
        let dead = dir.path().join(dead);
        let mut cmd = weir();
        cmd.args([
            "consume",
            "--on-error",
            "skip",
            "--max-line-bytes",
            "2000000",
        ])
        .args(["--dead-letter", dead.to_str().unwrap()]);
        let out = if from_file {
            cmd.arg(&path).output().unwrap()
        } else {
            cmd.write_stdin(text.as_bytes()).output().unwrap()
        };
        assert!(out.status.success(), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        let letters: Vec<serde_json::Value> = std::fs::read_to_string(&dead)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (out.stdout, letters, stderr)
    };
    let (file_out, file_dead, file_err) = run(true, "file.dead");
    let (pipe_out, pipe_dead, pipe_err) = run(false, "pipe.dead");
    assert_eq!(file_out.len(), pipe_out.len());
    assert!(file_out == pipe_out, "the records differ");
    // Positions name the file or stdin; the rest is the same.
    let without_source = |letters: &[serde_json::Value]| -> String {
        let text = serde_json::to_string(letters).unwrap();
        text.replace(path.to_str().unwrap(), "SOURCE")
            .replace("<stdin>", "SOURCE")
    };
    assert_eq!(without_source(&file_dead), without_source(&pipe_dead));
    assert_eq!(file_dead.len(), 2, "{file_dead:?}"); // `not json` and the line over the limit
    assert!(file_err.contains("written 20004"), "{file_err}");
    assert!(pipe_err.contains("written 20004"), "{pipe_err}");
}

/// A file cut short while weir reads it through its map: exit 4 and a message naming it, not
/// death by SIGBUS. The output is held up (a reader that sleeps) so that most of the file is
/// still unread when it is cut.
#[cfg(unix)]
#[test]
fn a_file_cut_short_while_it_is_read_is_exit_4() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.ndjson");
    let line = format!("{{\"t\":1,\"pad\":\"{}\"}}\n", "x".repeat(200));
    std::fs::write(&path, line.repeat(300_000)).unwrap(); // 65 MB
    let mut child = super::weir_std()
        .args(["consume", "-q"])
        .arg(&path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Its first output says the file is mapped and being read; then nobody reads for a
    // while, and weir stops when the pipe and its chunks in flight are full.
    let mut first = [0u8; 1];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(0)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("it was cut short while it was being read"),
        "{stderr}"
    );
    assert!(stderr.contains(path.to_str().unwrap()), "{stderr}");
    assert!(out.stdout.len() < 65_000_000);
}

/// A mapped file's pages leave the process as its chunks are done with: reading a 96 MB file
/// keeps the peak resident memory far below the file's size. The peak is the process's own
/// (`VmHWM`, since its exec), read while the test takes its output a little at a time.
#[cfg(target_os = "linux")]
#[test]
fn a_mapped_file_is_not_held_in_memory_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.ndjson");
    let line = format!("{{\"t\":1,\"pad\":\"{}\"}}\n", "x".repeat(300));
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for _ in 0..300_000 {
        file.write_all(line.as_bytes()).unwrap();
    }
    file.flush().unwrap();
    let mut child = weir_std()
        .args(["consume", "-q"])
        .arg(&path)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let high_water_kb = || -> Option<u64> {
        let text = std::fs::read_to_string(&status).ok()?;
        let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    let (mut out, mut buf, mut peak_kb, mut read) =
        (child.stdout.take().unwrap(), vec![0; 1 << 20], 0, 0);
    loop {
        let n = out.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        read += n;
        peak_kb = peak_kb.max(high_water_kb().unwrap_or(0));
    }
    assert!(child.wait().unwrap().success());
    assert_eq!(read, line.len() * 300_000);
    assert!(peak_kb > 0, "no reading of the peak");
    assert!(
        peak_kb < 60 * 1024,
        "peak resident memory {} MB",
        peak_kb / 1024
    );
}
