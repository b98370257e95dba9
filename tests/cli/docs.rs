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

/// Examples are for pasting: each line is a comment, a command, or the rest of a command
/// whose line ended in `\`, and none is long enough for clap to wrap it.
#[test]
fn help_examples_paste_as_they_read() {
    let mut pages = vec![vec!["--help"]];
    pages.extend(SUBCOMMANDS.map(|sub| vec![sub, "--help"]));
    for args in pages {
        let out = weir().args(&args).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let examples = text
            .lines()
            .skip_while(|l| !l.starts_with("Examples"))
            .skip(1)
            .take_while(|l| l.is_empty() || l.starts_with("  "))
            .filter(|l| !l.is_empty());
        let (mut continued, mut commands) = (false, 0);
        for line in examples {
            let what = format!("weir {}: {line}", args.join(" "));
            assert!(line.len() <= 96, "too long to paste: {what}");
            let code = line.trim_start();
            if continued {
                assert!(line.starts_with("    "), "{what}");
            } else if !code.starts_with('#') {
                assert!(code.starts_with("weir "), "not a command: {what}");
                commands += 1;
            }
            continued = line.ends_with('\\');
        }
        assert!(commands > 0, "weir {} has no examples", args.join(" "));
    }
}

/// `weir help window` is `weir window --help`, as with git and cargo.
#[test]
fn help_subcommand_shows_a_command_help() {
    for sub in SUBCOMMANDS {
        let direct = weir().args([sub, "--help"]).output().unwrap();
        let via_help = weir().args(["help", sub]).output().unwrap();
        assert!(via_help.status.success(), "weir help {sub}");
        assert_eq!(via_help.stdout, direct.stdout, "weir help {sub}");
    }
}

#[test]
fn no_arguments_prints_help_and_exits_2() {
    weir()
        .assert()
        .code(2)
        .stderr(predicate::str::contains("Usage: weir <COMMAND>"));
}

/// The README is the user's document: no history, no issue numbers, nothing outside the
/// repository, and short enough to read in the first hour.
#[test]
fn readme_is_for_users() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.lines().count() < 430,
        "README.md has grown past 430 lines"
    );
    let lower = readme.to_lowercase();
    for word in [
        "this session",
        "design §",
        "design.md",
        "coming",
        "not kept",
    ] {
        assert!(!lower.contains(word), "README.md mentions '{word}'");
    }
    // Session windows are a feature; "session 8" is history.
    let numbered_session = lower
        .match_indices("session ")
        .filter(|(at, _)| !lower[..*at].ends_with("--"))
        .any(|(at, m)| lower[at + m.len()..].starts_with(|c: char| c.is_ascii_digit()));
    assert!(!numbered_session, "README.md names a numbered session");
    let issue_reference = readme
        .split(|c: char| c.is_whitespace() || c == '(')
        .find(|w| {
            w.len() > 1 && w.starts_with('#') && w[1..].starts_with(|c: char| c.is_ascii_digit())
        });
    assert_eq!(issue_reference, None, "README.md cites an issue number");
    // The two set-up commands come first.
    let first_blocks: Vec<&str> = readme
        .lines()
        .filter(|l| l.starts_with("    "))
        .take(2)
        .map(str::trim)
        .collect();
    assert!(first_blocks[0].starts_with("cargo install --locked --path . && weir "));
    assert_eq!(first_blocks[1], "scripts/test.sh");
}

/// docs/ARCHITECTURE.md names every source file, so its map of the code stays whole; no file
/// in the repository points outside it.
#[test]
fn architecture_names_every_source_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let architecture = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    assert!(root.join("docs/BENCHMARKS.md").is_file());
    let mut missing = Vec::new();
    let mut stack = vec![root.join("src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let name = path.file_name().unwrap().to_str().unwrap();
            let relative = path
                .strip_prefix(root.join("src"))
                .unwrap()
                .to_str()
                .unwrap();
            let named = architecture.contains(relative)
                || architecture.contains(&format!("`{name}`"))
                || ["lib.rs", "mod.rs"].contains(&name);
            if !named {
                missing.push(relative.to_string());
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md does not name {missing:?}"
    );
}

/// The man pages' examples paste as `--help`'s do: rendered by `man` at 80 columns, every
/// example line of `--help` is a line of the page as it is (not filled, justified,
/// hyphenated or wrapped), the sections have names (no EXTRA), and weir(1) lists only pages
/// that exist.
#[test]
fn man_page_examples_paste_as_help_examples_do() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let pages = std::iter::once(("weir".to_string(), vec!["--help"]))
        .chain(SUBCOMMANDS.map(|sub| (format!("weir-{sub}"), vec![sub, "--help"])));
    for (page, help_args) in pages {
        let path = root.join("man").join(format!("{page}.1"));
        let out = std::process::Command::new("man")
            .arg("-l")
            .arg(&path)
            .env("MANWIDTH", "80")
            .env("MAN_KEEP_FORMATTING", "0")
            .output()
            .expect("man on PATH");
        assert!(out.status.success(), "{page}: {out:?}");
        let rendered = String::from_utf8(out.stdout).unwrap();
        assert!(!rendered.contains("EXTRA"), "{page}");
        assert!(!rendered.contains('\u{2010}'), "{page}: a hyphenated word");
        let lines: Vec<&str> = rendered.lines().map(str::trim).collect();
        let help = weir().args(&help_args).output().unwrap();
        let help = String::from_utf8(help.stdout).unwrap();
        let examples = help
            .lines()
            .skip_while(|l| !l.starts_with("Examples"))
            .skip(1)
            .take_while(|l| l.is_empty() || l.starts_with("  "))
            .filter(|l| !l.trim().is_empty());
        let mut n = 0;
        for line in examples {
            assert!(
                lines.contains(&line.trim()),
                "{page}: not pasteable: {line}"
            );
            n += 1;
        }
        assert!(n > 0, "{page}: no examples");
        if page == "weir" {
            for sub in SUBCOMMANDS {
                assert!(rendered.contains(&format!("weir-{sub}(1)")), "{sub}");
                assert!(root.join("man").join(format!("weir-{sub}.1")).exists());
            }
            assert!(
                !rendered.contains("weir-help"),
                "weir(1) lists weir-help(1)"
            );
        }
    }
}

/// `-h` is a command's essentials on about one screen, its own options first; `--help` the
/// whole reference, the command's own options before the shared source, broker and schema
/// groups. Examples print as typed (consume's `-f '%p %o %k %s\n'` once printed a line break).
#[test]
fn short_help_fits_a_screen_and_long_help_puts_the_commands_own_options_first() {
    for sub in SUBCOMMANDS {
        let short = weir().args([sub, "-h"]).output().unwrap();
        let short = String::from_utf8(short.stdout).unwrap();
        assert!(
            short.lines().count() <= 100,
            "weir {sub} -h: {} lines",
            short.lines().count()
        );
        assert!(
            !short.contains("Schemas:"),
            "weir {sub} -h shows the schema options"
        );
        let long = weir().args([sub, "--help"]).output().unwrap();
        let long = String::from_utf8(long.stdout).unwrap();
        assert!(long.lines().count() > short.lines().count(), "{sub}");
        let own = ["Windows:", "Deduplication:", "Predicting a window:"]
            .iter()
            .find_map(|h| long.find(h));
        if let (Some(own), Some(shared)) = (own, long.find("Kafka and Kinesis:")) {
            assert!(
                own < shared,
                "weir {sub} --help: shared options before its own"
            );
        }
    }
    let consume = weir().args(["consume", "--help"]).output().unwrap();
    let consume = String::from_utf8(consume.stdout).unwrap();
    assert!(consume.contains("-f '%p %o %k %s\\n'"), "{consume}");
}
