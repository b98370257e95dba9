//! SIGINT/SIGTERM: a clean stop that flushes output, prints the summary and exits 130.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;
use std::time::Duration;

use crate::weir_std;

fn stops_cleanly_on(signal: &str) {
    let mut child = weir_std()
        .arg("consume")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
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
