//! SIGINT/SIGTERM: a clean stop that flushes output, prints the summary and exits 130.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::weir_std;

/// weir on a live pipe: every stream piped, stdin kept open by the test.
fn spawn_live(command: &mut Command) -> Child {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Everything `child` wrote to its piped stderr, once it has ended.
fn stderr_of(child: &mut Child) -> String {
    let mut err = String::new();
    let stderr = child.stderr.as_mut().expect("stderr piped");
    stderr.read_to_string(&mut err).unwrap();
    err
}

fn stops_cleanly_on(signal: &str) {
    let mut child = spawn_live(weir_std().arg("consume"));
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"{\"n\":1}\n{\"n\":2}\n").unwrap();
    stdin.flush().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    for _ in 0..2 {
        stdout.read_line(&mut seen).unwrap();
    }
    assert_eq!(seen, "{\"n\":1}\n{\"n\":2}\n");
    // stdin stays open: weir is waiting for input when the signal comes.
    let kill = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "weir did not stop on {signal}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = stderr_of(&mut child);
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("weir consume: read 2, written 2"), "{err}");
    assert!(err.contains("weir: stopped by a signal"), "{err}");
    drop(stdin);
}

#[test]
fn sigint_stops_cleanly() {
    stops_cleanly_on("-INT");
}

#[test]
fn sigterm_stops_cleanly() {
    stops_cleanly_on("-TERM");
}

/// `dedupe --keep last` on a live pipe: Ctrl-C writes the records it holds, like the end of
/// the input would.
#[test]
fn sigint_writes_what_keep_last_holds() {
    let dir = tempfile::tempdir().unwrap();
    let dups = dir.path().join("dups.ndjson");
    let mut child = spawn_live(
        weir_std()
            .args(["dedupe", "--id", "id", "--keep", "last", "--duplicates"])
            .arg(&dups),
    );
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"id\":\"a\",\"v\":1}\n{\"id\":\"b\",\"v\":1}\n{\"id\":\"a\",\"v\":2}\n")
        .unwrap();
    stdin.flush().unwrap();
    // The first "a" is replaced, and written aside, once weir has read the second.
    wait_for_file(&dups, "{\"id\":\"a\",\"v\":1}\n", "the repeat was not read");
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    // Groups in the order they opened: "a" (its last record), then "b".
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "{\"id\":\"a\",\"v\":2}\n{\"id\":\"b\",\"v\":1}\n"
    );
    assert!(err.contains("written 2"), "{err}");
    drop(stdin);
}

/// Waits up to 10 s until the file at `path` holds `content`; fails saying `what` otherwise.
fn wait_for_file(path: &std::path::Path, content: &str, what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(path).unwrap_or_default() != content {
        assert!(std::time::Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends SIGINT to `child` and returns how long it took to exit, with its exit code.
fn interrupt(child: &mut Child) -> (Duration, Option<i32>) {
    let sent = std::time::Instant::now();
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (sent.elapsed(), status.code());
        }
        assert!(
            sent.elapsed() < Duration::from_secs(10),
            "no exit 10 s after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A paced replay stops within 100 ms of SIGINT, in the middle of a long wait, and keeps
/// what it wrote before it.
#[test]
fn replay_stops_in_the_middle_of_a_pace_wait() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.ndjson");
    let output = dir.path().join("out.ndjson");
    let lines: String = (0..100).map(|i| format!("{{\"n\":{i}}}\n")).collect();
    std::fs::write(&input, &lines).unwrap();
    let mut child = weir_std()
        .args(["replay", "--rate", "1/m"])
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first record goes at once, the second is due in a minute: the file shows the first
    // while replay waits.
    wait_for_file(&output, "{\"n\":0}\n", "the first record was not written");
    std::thread::sleep(Duration::from_millis(200));
    let (took, code) = interrupt(&mut child);
    assert_eq!(code, Some(130));
    assert!(took < Duration::from_millis(100), "took {took:?}");
    assert_eq!(std::fs::read_to_string(&output).unwrap(), "{\"n\":0}\n");
    let err = stderr_of(&mut child);
    // The record it waited for was not taken: the run stopped before it (a run restored
    // from a checkpoint taken there reads it, and counts it, then).
    assert!(err.contains("read 1, written 1"), "{err}");
}

/// A profile of a live pipe reports what it read when interrupted, marked as such, and
/// still exits 130.
#[test]
fn watermark_profile_reports_what_it_read_when_interrupted() {
    for format in ["text", "json"] {
        let mut child = spawn_live(weir_std().args([
            "watermark-profile",
            "--time",
            "t",
            "--arrival",
            "a",
            "--format",
            format,
        ]));
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(
                b"{\"t\":\"2026-01-01T00:00:00Z\",\"a\":\"2026-01-01T00:00:02Z\"}\n\
                  {\"t\":\"2026-01-01T00:00:01Z\",\"a\":\"2026-01-01T00:00:05Z\"}\n",
            )
            .unwrap();
        stdin.flush().unwrap();
        // The summary line is written only at exit; give the reader time to take both lines.
        std::thread::sleep(Duration::from_millis(500));
        let (_, code) = interrupt(&mut child);
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(code, Some(130), "{err}");
        assert!(err.contains("read 2"), "{err}");
        if format == "json" {
            let report: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(report["interrupted"], true);
            assert_eq!(report["records"], 2);
            assert_eq!(report["overall"]["lateness_max_ms"], 4000);
        } else {
            assert!(text.starts_with("interrupted: "), "{text}");
            assert!(
                text.contains("2 records profiled, 0 left out without a usable time"),
                "{text}"
            );
        }
        drop(stdin);
    }
}

/// `lag` without `--watch`, on a cluster that does not answer: SIGINT ends it at once, not
/// after its 30 s timeout.
#[test]
fn lag_exits_promptly_on_sigint() {
    let mut child = weir_std()
        .args([
            "lag",
            "kafka://127.0.0.1:1",
            "--group",
            "g",
            "--timeout",
            "30s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let (took, code) = interrupt(&mut child);
    assert_eq!(code, Some(130));
    assert!(took < Duration::from_millis(500), "took {took:?}");
}

/// `window` on SIGINT: windows the watermark completed are out, open ones are not emitted
/// (they are incomplete), and the run exits 130.
#[test]
fn window_does_not_emit_open_windows_on_sigint() {
    let mut child =
        spawn_live(weir_std().args(["window", "--time", "t", "--tumbling", "1m", "--count"]));
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(
            b"{\"t\":\"2026-01-01T00:00:10Z\"}\n{\"t\":\"2026-01-01T00:01:10Z\"}\n\
              {\"t\":\"2026-01-01T00:02:10Z\"}\n",
        )
        .unwrap();
    stdin.flush().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    for _ in 0..2 {
        stdout.read_line(&mut seen).unwrap();
    }
    let (_, code) = interrupt(&mut child);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert_eq!(code, Some(130));
    assert_eq!(
        seen,
        "{\"window_start\":\"2026-01-01T00:00:00.000Z\",\"window_end\":\"2026-01-01T00:01:00.000Z\",\"count\":1}\n\
         {\"window_start\":\"2026-01-01T00:01:00.000Z\",\"window_end\":\"2026-01-01T00:02:00.000Z\",\"count\":1}\n"
    );
    // The window of 00:02 is still open: nothing more.
    assert_eq!(rest, "");
    drop(stdin);
}

/// Ctrl-C while weir waits for a broker or endpoint that does not answer stops it at once
/// (exit 130), not once `--timeout` has passed.
#[test]
fn a_signal_stops_a_wait_for_an_unreachable_source() {
    let cases: [&[&str]; 3] = [
        &["consume", "kafka://127.0.0.1:1/t"],
        &["lag", "kafka://127.0.0.1:1", "--group", "g"],
        &[
            "consume",
            "kinesis://s",
            "--endpoint-url",
            "http://127.0.0.1:1",
        ],
    ];
    for args in cases {
        let mut child = weir_std()
            .args(args)
            .args(["--timeout", "60s"])
            .env("AWS_ACCESS_KEY_ID", "weir-test")
            .env("AWS_SECRET_ACCESS_KEY", "weir-test")
            .env("AWS_REGION", "us-east-1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        let signalled = std::time::Instant::now();
        let kill = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if signalled.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                panic!("{args:?}: still waiting 10 s after the signal");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(130), "{args:?}");
    }
}

/// coreutils `timeout` signals weir and then its process group, so weir gets the signal
/// twice at once: one request, a clean stop with its checkpoint and summary, as a single
/// signal gives.
#[test]
fn a_signal_repeated_at_once_is_one_request_for_a_clean_stop() {
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("ck.json");
    let out = dir.path().join("out.ndjson");
    // Under -q, nothing is said: exit 130 says it.
    for (signal, quiet) in [("INT", false), ("TERM", true)] {
        let _ = std::fs::remove_file(&checkpoint);
        let mut child = spawn_live(
            Command::new("timeout")
                .args(["--preserve-status", "-s", signal, "1"])
                .arg(assert_cmd::cargo::cargo_bin("weir"))
                .args(["window", "--time", "t", "--time-format", "ms"])
                .args(["--tumbling", "1s", "--count", "--checkpoint"])
                .arg(&checkpoint)
                .arg("-o")
                .arg(&out)
                .args(quiet.then_some("-q")),
        );
        let mut stdin = child.stdin.take().unwrap();
        for t in 0..100 {
            writeln!(stdin, "{{\"t\":{}}}", t * 100).unwrap();
        }
        stdin.flush().unwrap();
        // stdin stays open: weir is waiting for input when the signals come.
        let status = child.wait().unwrap();
        let err = stderr_of(&mut child);
        assert_eq!(status.code(), Some(130), "{signal}: {err}");
        match quiet {
            false => assert!(err.contains("weir window: read 100"), "{signal}: {err}"),
            true => assert_eq!(err, "", "{signal}"),
        }
        assert!(checkpoint.exists(), "{signal}: no checkpoint: {err}");
        drop(stdin);
    }
}
