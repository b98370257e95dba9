//! The committed man pages and completions match the clap definition; help has examples.

use std::path::Path;

use predicates::prelude::*;

use crate::weir;

const SUBCOMMANDS: [&str; 6] = [
    "consume",
    "window",
    "watermark-profile",
    "dedupe",
    "replay",
    "lag",
];

fn files_of(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn man_pages_and_completions_are_fresh() {
    let fresh = tempfile::tempdir().unwrap();
    weir()
        .args(["generate", "--out-dir"])
        .arg(fresh.path())
        .assert()
        .success();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in ["man", "completions"] {
        let committed = files_of(&root.join(dir));
        let generated = files_of(&fresh.path().join(dir));
        let names = |f: &[(String, Vec<u8>)]| f.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(
            names(&committed),
            names(&generated),
            "{dir}/ is stale: run `cargo run -- generate`"
        );
        for ((name, old), (_, new)) in committed.iter().zip(&generated) {
            assert!(
                old == new,
                "{dir}/{name} is stale: run `cargo run -- generate` and commit"
            );
        }
    }
    let man = files_of(&root.join("man"));
    assert_eq!(man.len(), 1 + SUBCOMMANDS.len());
}

#[test]
fn help_lists_the_six_subcommands() {
    let out = weir().arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for sub in SUBCOMMANDS {
        assert!(
            text.contains(&format!("\n  {sub} ")),
            "{sub} missing from:\n{text}"
        );
    }
    assert!(
        !text.contains("generate"),
        "the generate subcommand is hidden"
    );
    assert!(text.contains("Exit codes:"));
}

#[test]
fn every_subcommand_help_has_examples() {
    for sub in SUBCOMMANDS {
        weir().args([sub, "--help"]).assert().success().stdout(
            predicate::str::contains("Examples")
                .and(predicate::str::contains(format!("weir {sub} "))),
        );
    }
}

#[test]
fn no_arguments_prints_help_and_exits_2() {
    weir()
        .assert()
        .code(2)
        .stderr(predicate::str::contains("Usage: weir <COMMAND>"));
}
