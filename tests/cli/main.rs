//! Integration tests: the built `weir` binary on fixtures and generated data.

mod checkpoint;
mod consume;
mod corpus;
mod dedupe;
mod docs;
mod kafka;
mod profile;
mod signals;
mod usage;
mod window;

#[path = "../support/gen.rs"]
pub mod gen;

use std::path::PathBuf;

pub fn weir() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("weir").expect("weir binary");
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

pub fn weir_std() -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("weir"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

pub fn stdout_lines(out: &std::process::Output) -> Vec<String> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Writes `n` generated events to a temp file; returns the file and the events.
pub fn generated(n: u64, seed: u64) -> (tempfile::NamedTempFile, Vec<gen::Event>) {
    generated_with(gen::GenConfig {
        events: n,
        seed,
        ..Default::default()
    })
}

pub fn generated_with(cfg: gen::GenConfig) -> (tempfile::NamedTempFile, Vec<gen::Event>) {
    use std::io::Write;
    let events: Vec<_> = gen::Generator::new(cfg).collect();
    let mut file = tempfile::NamedTempFile::new().unwrap();
    let mut buf = Vec::new();
    for e in &events {
        e.write_json(&mut buf);
        buf.push(b'\n');
    }
    file.write_all(&buf).unwrap();
    (file, events)
}
