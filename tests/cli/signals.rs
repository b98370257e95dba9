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
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("weir consume: read 2, written 2"), "{err}");
    assert!(err.contains("interrupted"), "{err}");
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
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(&dups).unwrap_or_default() != "{\"id\":\"a\",\"v\":1}\n" {
        assert!(
            std::time::Instant::now() < deadline,
            "the repeat was not read"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
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
