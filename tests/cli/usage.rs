//! Check first, then open: a usage error (exit 2) leaves every file as it was. Each case is
//! one that can only be found after parsing, by the command's plan; several of them used to
//! be found only after the output files had been created.

use std::path::Path;

use crate::{weir, weir_std};

/// What the output files hold before the run; a usage error must leave them so.
const OUT: &str = "{\"kept\":\"out\"}\n";
const DEAD: &str = "{\"kept\":\"dead letter\"}\n";
const STATS: &str = "{\"kept\":\"stats\"}\n";

/// Runs `args` with an existing -o, --dead-letter and --stats file; expects exit 2 and all
/// three files byte for byte as they were.
fn leaves_files_as_they_were(args: &[&str], code: i32, message: &str) {
    run_with_files(args, code, message, true);
}

/// As above; `stats_kept`: whether the --stats file must be kept too (a run that fails
/// after its plan reports the failure there).
fn run_with_files(args: &[&str], code: i32, message: &str, stats_kept: bool) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.ndjson");
    let dead = dir.path().join("dead.ndjson");
    let stats = dir.path().join("stats.json");
    std::fs::write(&out, OUT).unwrap();
    std::fs::write(&dead, DEAD).unwrap();
    std::fs::write(&stats, STATS).unwrap();
    let p = |p: &Path| p.to_str().unwrap().to_string();
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.extend(["-o".into(), p(&out), "--dead-letter".into(), p(&dead)]);
    all.extend(["--stats".into(), p(&stats)]);
    let run = weir()
        .args(&all)
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(code), "{all:?}: {stderr}");
    assert!(stderr.contains(message), "{all:?}: {stderr}");
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        OUT,
        "{all:?}: -o changed"
    );
    assert_eq!(
        std::fs::read_to_string(&dead).unwrap(),
        DEAD,
        "{all:?}: --dead-letter changed"
    );
    if stats_kept {
        assert_eq!(
            std::fs::read_to_string(&stats).unwrap(),
            STATS,
            "{all:?}: --stats changed"
        );
    }
}

/// A Kafka source whose broker is not there: the plan must refuse the flags before any
/// connection is tried (a connection would fail with exit 4 instead).
const NO_BROKER: &str = "kafka://127.0.0.1:1/x";
const CHECKOUTS: &str = "fixtures/checkouts.ndjson";

#[test]
fn consume_usage_errors_leave_files_as_they_were() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["consume", NO_BROKER, "--from", "stored"],
            "--from stored needs --group",
        ),
        (
            &["consume", CHECKOUTS, "--to", "5"],
            "--to 5: offsets are a Kafka or Kinesis source's",
        ),
        (
            &["replay", CHECKOUTS, "--from", "-10"],
            "--from -10: a count back from the end",
        ),
        (
            &["consume", NO_BROKER, "-G", "g", "--from", "-1h"],
            "--partitions",
        ),
        (
            &[
                "consume",
                NO_BROKER,
                "--partitions",
                "0",
                "-G",
                "g",
                "--to",
                "stored",
            ],
            "not an end position",
        ),
        (
            &["consume", NO_BROKER, "-X", "novalue"],
            "expected key=value",
        ),
        (&["consume", NO_BROKER, "--time", "t"], "log positions"),
        (
            &["consume", CHECKOUTS, "--from", "-1h"],
            "need --time FIELD",
        ),
        (
            &["consume", CHECKOUTS, "-J"],
            "describe Kafka and Kinesis records",
        ),
        (
            &["consume", CHECKOUTS, "--key", "merchant_id"],
            "need -o kafka://",
        ),
        (
            &["consume", CHECKOUTS, "-G", "g"],
            "applies to a Kafka source",
        ),
        (
            &[
                "consume",
                CHECKOUTS,
                "--time",
                "occurred_at",
                "--from",
                "-1h",
                "--to",
                "-2h",
            ],
            "--from -1h comes after --to -2h",
        ),
        (
            &["consume", NO_BROKER, "--from", "100", "--to", "42"],
            "--from 100 comes after --to 42",
        ),
    ];
    for (args, message) in cases {
        leaves_files_as_they_were(args, 2, message);
    }
}

#[test]
fn window_usage_errors_leave_files_as_they_were() {
    let w = ["window", "--time", "occurred_at", "--count"];
    let cases: &[(&[&str], &str)] = &[
        (
            &[NO_BROKER, "--tumbling", "1m", "--from", "stored"],
            "--from stored needs --group",
        ),
        (
            &[NO_BROKER, "--tumbling", "1m", "-G", "g", "--to", "5"],
            "end with -e",
        ),
        // A row with two equal names would lose one of them to any JSON reader.
        (
            &[
                CHECKOUTS,
                "--tumbling",
                "1m",
                "--sum",
                "amount",
                "--as",
                "count",
            ],
            "named 'count' (two aggregates): give each once, or name one with --as NAME",
        ),
        (
            &[
                CHECKOUTS,
                "--tumbling",
                "1m",
                "--key",
                "merchant_id",
                "--min",
                "x",
                "--as",
                "merchant_id",
            ],
            "named 'merchant_id' (a --key field and an aggregate)",
        ),
        (
            &[CHECKOUTS, "--tumbling", "1m", "--as", " "],
            "--as needs a column name",
        ),
        (
            &[
                CHECKOUTS,
                "--tumbling",
                "1m",
                "--max",
                "amount",
                "--as",
                "window_end",
            ],
            "named 'window_end' (weir's own and an aggregate)",
        ),
        (
            &[
                CHECKOUTS,
                "--tumbling",
                "1m",
                "--percentile",
                "amount:p50,p99,p50",
            ],
            "named 'p50_amount' (two aggregates)",
        ),
        (
            &[
                CHECKOUTS,
                "--tumbling",
                "1m",
                "--distinct",
                "client",
                "--last",
                "x",
                "--as",
                "distinct_client_estimated",
            ],
            "named 'distinct_client_estimated'",
        ),
        (
            &[CHECKOUTS, "--hop", "10d", "--slide", "1ms"],
            "puts every record in 864000000 windows, more than --max-open-windows (5000000)",
        ),
        (
            &[CHECKOUTS, "--session", "1m", "--offset", "1s"],
            "--offset applies",
        ),
        (
            &[
                CHECKOUTS,
                "--tumbling",
                "1m",
                "--sum",
                "amount",
                "--as",
                "a",
                "--as",
                "b",
            ],
            "already named",
        ),
        (
            &[CHECKOUTS, "--tumbling", "1m", "--percentile", "amount:p0"],
            "--percentile",
        ),
        (
            &[CHECKOUTS, "--tumbling", "1m", "--from", "-1h"],
            "--from applies to a Kafka or Kinesis source",
        ),
        // A group member's state is kept per partition, in the changelog topic.
        (
            &[
                NO_BROKER,
                "--tumbling",
                "1m",
                "-G",
                "g",
                "--checkpoint",
                "/tmp/never",
            ],
            "--checkpoint is for a run without -G",
        ),
        (
            &[
                NO_BROKER,
                "--tumbling",
                "1m",
                "-G",
                "g",
                "--partition-by",
                "p",
            ],
            "--partition-by does not apply",
        ),
        (
            &[NO_BROKER, "--tumbling", "1m", "--changelog", "c"],
            "--group",
        ),
        // Each member's partitions keep windows of their own keys: there must be keys.
        (
            &[NO_BROKER, "--tumbling", "1m", "-G", "g"],
            "give --key FIELD, the field the topic is keyed by",
        ),
        // A shuffle is a group's: it needs -G, and takes what the group shares out.
        (
            &[NO_BROKER, "--tumbling", "1m", "--key", "k", "--repartition"],
            "--group",
        ),
        (
            &[
                NO_BROKER,
                "--tumbling",
                "1m",
                "-G",
                "g",
                "--partitions",
                "0",
                "--repartition",
            ],
            "it takes no --partitions",
        ),
        (
            &[
                NO_BROKER,
                "--tumbling",
                "1m",
                "--repartition-partitions",
                "3",
            ],
            "--repartition",
        ),
    ];
    for (args, message) in cases.iter().chain(HOP_RULES) {
        let all: Vec<&str> = w.iter().chain(args.iter()).copied().collect();
        leaves_files_as_they_were(&all, 2, message);
    }
}

/// The rules of `--hop`/`--slide`, which window and the window a profile predicts both keep,
/// before the first record.
const HOP_RULES: &[(&[&str], &str)] = &[
    (
        &[CHECKOUTS, "--hop", "3m", "--slide", "10m"],
        "--slide (10m) is longer than --hop (3m)",
    ),
    (
        &[
            CHECKOUTS,
            "--hop",
            "10m",
            "--slide",
            "1s",
            "--max-open-windows",
            "599",
        ],
        "puts every record in 600 windows",
    ),
];

#[test]
fn dedupe_usage_errors_leave_files_as_they_were() {
    let cases: &[(&[&str], &str)] = &[
        // A Glue registry's name, and a Glue sink, which is not built yet.
        (
            &["dedupe", NO_BROKER, "--id", "event_id", "-r", "glue://no spaces"],
            "a Glue registry name is 1 to 255",
        ),
        (
            &["dedupe", NO_BROKER, "--id", "event_id", "--from", "stored"],
            "--from stored needs --group",
        ),
        (
            &["dedupe", CHECKOUTS, "--id", "event_id", "--horizon", "1h"],
            "needs --time FIELD",
        ),
        (
            &["dedupe", CHECKOUTS, "--id", "event_id", "--header", "h"],
            "expected NAME=FIELD",
        ),
        (
            &[
                "dedupe",
                CHECKOUTS,
                "--id",
                "event_id",
                "--horizon-by",
                "arrival",
            ],
            "required arguments were not provided:\n  --horizon <D>",
        ),
        (
            &[
                "dedupe",
                CHECKOUTS,
                "--id",
                "event_id",
                "--horizon",
                "1h",
                "--horizon-by",
                "arrival",
                "--idle-timeout",
                "1m",
            ],
            "--idle-timeout lets a silent partition stop holding the watermark back: it needs an event-time --horizon",
        ),
        // Watermark flags that would do nothing are refused, not ignored.
        (
            &["dedupe", CHECKOUTS, "--id", "event_id", "--time", "occurred_at", "--horizon", "1h", "--idle-timeout", "1m"],
            "--idle-timeout has no effect here: it lets a silent partition stop holding back a watermark of several, and one stream is one partition; give --partition-by FIELD for several",
        ),
        (
            &["window", CHECKOUTS, "--time", "occurred_at", "--tumbling", "1m", "--count", "--idle-timeout", "1m"],
            "--idle-timeout has no effect here",
        ),
        (
            &["dedupe", CHECKOUTS, "--id", "event_id", "--time", "occurred_at"],
            "--time is read for the watermark: it needs an event-time --horizon D; without --horizon, ids are kept until --max-keys evicts them",
        ),
        (
            &["dedupe", CHECKOUTS, "--id", "event_id", "--delay", "1m"],
            "--delay holds the watermark back: it needs an event-time --horizon D",
        ),
        (
            &["dedupe", CHECKOUTS, "--id", "event_id", "--horizon", "1h", "--horizon-by", "arrival", "--partition-by", "client"],
            "--partition-by tracks a watermark per partition: it needs an event-time --horizon D; --horizon-by arrival uses none",
        ),
        (
            &["dedupe", CHECKOUTS, "--id", "event_id", "--key", "k"],
            "need -o kafka://",
        ),
        (
            &[
                "dedupe",
                NO_BROKER,
                "--id",
                "event_id",
                "-G",
                "g",
                "--checkpoint",
                "/tmp/never",
            ],
            "--checkpoint is for a run without -G",
        ),
    ];
    for (args, message) in cases {
        leaves_files_as_they_were(args, 2, message);
    }
}

#[test]
fn watermark_profile_usage_errors_leave_files_as_they_were() {
    let p = ["watermark-profile", "--time", "occurred_at"];
    let cases: &[(&[&str], &str)] = &[
        (
            &[NO_BROKER, "--from", "stored"],
            "--from stored needs --group",
        ),
        (&[CHECKOUTS, "--target", "0"], "percentages"),
        (&[CHECKOUTS, "--target", "101"], "percentages"),
        (
            &[CHECKOUTS, "-e"],
            "-e applies to a Kafka or Kinesis source",
        ),
        (
            &[NO_BROKER, "-G", "g", "--checkpoint", "/tmp/never"],
            "--checkpoint is for a run without -G",
        ),
    ];
    // The window it predicts keeps window's rules.
    for (args, message) in cases.iter().chain(HOP_RULES) {
        let all: Vec<&str> = p.iter().chain(args.iter()).copied().collect();
        leaves_files_as_they_were(&all, 2, message);
    }
}

#[test]
fn replay_usage_errors_leave_files_as_they_were() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["replay", NO_BROKER, "--from", "stored"],
            "--from stored needs --group",
        ),
        (&["replay", NO_BROKER, "--key", "k"], "carry their own key"),
        (
            &["replay", CHECKOUTS, "--keep-partition"],
            "needs envelopes",
        ),
        (
            &["replay", CHECKOUTS, "-J", "--keep-partition"],
            "--keep-partition is for a Kafka sink",
        ),
        (&["replay", CHECKOUTS, "--speed", "2x"], "give --time FIELD"),
        (&["replay", CHECKOUTS, "--from", "-1h"], "need --time FIELD"),
        (
            &["replay", CHECKOUTS, "--header", "h=k"],
            "need -o kafka://",
        ),
        (
            &[
                "replay",
                CHECKOUTS,
                "--dry-run",
                "--checkpoint",
                "/tmp/never",
            ],
            "'--dry-run' cannot be used with '--checkpoint",
        ),
    ];
    for (args, message) in cases {
        leaves_files_as_they_were(args, 2, message);
    }
}

/// Not a usage error, but found by the plan too: a missing input file is exit 4, and no
/// output file has been touched (the --stats file reports the failure).
#[test]
fn a_missing_input_leaves_files_as_they_were() {
    for command in [
        &["consume", "no-such-file.ndjson"][..],
        &["dedupe", "no-such-file.ndjson", "--id", "event_id"],
        &[
            "window",
            "no-such-file.ndjson",
            "--time",
            "t",
            "--tumbling",
            "1m",
            "--count",
        ],
        &["watermark-profile", "no-such-file.ndjson", "--time", "t"],
        &["replay", "no-such-file.ndjson", "--dry-run"],
    ] {
        run_with_files(command, 4, "cannot read no-such-file.ndjson", false);
    }
}

/// lag's --checkpoint is an input: a missing one is named before the stream is called (here
/// an endpoint that does not answer), and the report file is left as it was.
#[test]
fn lag_names_a_missing_checkpoint_before_calling_the_stream() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("lag.txt");
    std::fs::write(&out, OUT).unwrap();
    let run = weir()
        .args([
            "lag",
            "kinesis://s",
            "--endpoint-url",
            "http://127.0.0.1:1",
            "--timeout",
            "5s",
        ])
        .args(["--checkpoint", "no-such-checkpoint", "-o"])
        .arg(&out)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "x")
        .env("AWS_SECRET_ACCESS_KEY", "x")
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("no checkpoint at no-such-checkpoint"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("127.0.0.1:1"),
        "the stream was called: {stderr}"
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), OUT);
}

/// An output that is also the input is refused before anything is opened: the input is left
/// whole (it used to be truncated before it was read).
#[test]
fn an_output_that_is_the_input_is_refused_and_the_input_kept() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.ndjson");
    let content = std::fs::read(CHECKOUTS).unwrap();
    std::fs::write(&input, &content).unwrap();
    let input = input.to_str().unwrap();
    for args in [
        vec!["consume", input, "-o", input],
        vec!["dedupe", input, "--id", "event_id", "--duplicates", input],
        vec!["replay", input, "--stats", input],
    ] {
        let out = weir().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("name the same file"), "{err}");
        assert_eq!(std::fs::read(input).unwrap(), content, "{args:?}");
    }
}

/// A file weir writes that is the file behind standard input (`weir dedupe -o c.ndjson <
/// c.ndjson`) is refused as a named input is, by device and inode: the file is kept. Its own
/// copy, or a pipe of it, is read.
#[test]
fn an_output_that_is_the_file_behind_stdin_is_refused_and_the_file_kept() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("c.ndjson");
    let content = std::fs::read(CHECKOUTS).unwrap();
    std::fs::write(&input, &content).unwrap();
    let link = dir.path().join("link.ndjson");
    std::fs::hard_link(&input, &link).unwrap();
    let plot = dir.path().join("plot.svg");
    std::fs::hard_link(&input, &plot).unwrap();
    let (input, link, plot) = (
        input.to_str().unwrap(),
        link.to_str().unwrap(),
        plot.to_str().unwrap(),
    );
    for args in [
        vec!["dedupe", "--id", "event_id", "-o", input],
        vec!["consume", "-", "-o", link],
        vec![
            "window",
            "--time",
            "occurred_at",
            "--tumbling",
            "1m",
            "--count",
        ]
        .into_iter()
        .chain(["--late-output", input])
        .collect(),
        vec!["watermark-profile", "--time", "occurred_at", "--plot", plot],
        vec!["replay", "--checkpoint", link],
        vec!["dedupe", "--id", "event_id", "--dead-letter", input],
        vec!["consume", "--stats", input],
    ] {
        let stdin = std::fs::File::open(input).unwrap();
        let out = weir_std().args(&args).stdin(stdin).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("standard input"), "{err}");
        assert_eq!(std::fs::read(input).unwrap(), content, "{args:?}");
    }
    // Another file of the same text is read.
    let copy = dir.path().join("copy.ndjson");
    std::fs::write(&copy, &content).unwrap();
    let out = weir_std()
        .args(["consume", "-q", "-o", input])
        .stdin(std::fs::File::open(&copy).unwrap())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read(input).unwrap(), content);
}

/// A `--where` that does not parse is exit 2, with its column and what was expected there,
/// before any file is touched, in every command that takes one.
#[test]
fn a_malformed_where_names_its_column_and_leaves_files_as_they_were() {
    let cases: &[(&str, &str)] = &[
        ("", "column 1: a field"),
        ("status", "column 7: a comparison"),
        ("status ==", "column 10: a JSON string, number"),
        (r#"status == "failed"#, "column 11: a closing"),
        (r#"status = "x""#, "column 8: an operator"),
        ("(a == 1", "column 8: ')'"),
        ("a == 1 b == 2", "column 8: 'and', 'or' or the end"),
        ("a in [1, 2", "column 11: ',' or ']'"),
        ("a < true", "column 5: a number or a string"),
        (r#"a =~ "(""#, "column 6: a regular expression"),
        (
            r#"time(occurred_at) > "soon""#,
            "column 21: an RFC 3339 instant",
        ),
        ("startswith(a, 1)", "column 15: a JSON string"),
    ];
    for (expr, message) in cases {
        let args = ["consume", CHECKOUTS, "--where", expr];
        leaves_files_as_they_were(&args, 2, message);
    }
    let commands: [&[&str]; 4] = [
        &[
            "window",
            CHECKOUTS,
            "--time",
            "occurred_at",
            "--tumbling",
            "1m",
            "--count",
        ],
        &["dedupe", CHECKOUTS, "--id", "event_id"],
        &["watermark-profile", CHECKOUTS, "--time", "occurred_at"],
        &["replay", CHECKOUTS],
    ];
    for command in commands {
        let mut args = command.to_vec();
        args.extend(["--where", "a =="]);
        leaves_files_as_they_were(&args, 2, "--where 'a ==': column 5");
    }
}

/// Flags that would silently mean something else are exit 2, saying what was likely meant:
/// `M` (months, beside `m`), a negative duration, `--slide` beside `--tumbling`, a mistyped
/// `-X` key (never printing its value, which may be a secret), SQL's `=` in `--where`, and a
/// range that ends before the beginning.
#[test]
fn flags_that_would_mean_something_else_are_refused_with_the_likely_meaning() {
    let window = ["window", CHECKOUTS, "--time", "occurred_at", "--count"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--tumbling", "10M"],
            "write 10m for minutes, 10months for months",
        ),
        (
            vec!["--tumbling", "1m", "--delay", "-5s"],
            "durations are positive",
        ),
        (
            vec!["--tumbling", "1m", "--slide", "30s"],
            "cannot be used with '--slide",
        ),
        (
            vec!["--session", "1m", "--slide", "30s"],
            "cannot be used with '--slide",
        ),
    ];
    for (extra, message) in cases {
        let args: Vec<&str> = window.iter().copied().chain(extra).collect();
        leaves_files_as_they_were(&args, 2, message);
    }
    let profile = ["watermark-profile", CHECKOUTS, "--time", "occurred_at"];
    let args = [&profile[..], &["--tumbling", "1m", "--slide", "30s"]].concat();
    leaves_files_as_they_were(&args, 2, "cannot be used with '--slide");
    let args = ["consume", CHECKOUTS, "-X", "sasl.pasword=hunter2x"];
    leaves_files_as_they_were(&args, 2, "did you mean 'sasl.password'?");
    let out = weir().args(args).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("hunter2x"));
    let args = ["consume", CHECKOUTS, "--where", r#"status = "failed""#];
    leaves_files_as_they_were(&args, 2, "did you mean '=='?");
    let args = [
        "consume",
        "kafka://127.0.0.1:1/t",
        "--from",
        "end",
        "--to",
        "beginning",
    ];
    leaves_files_as_they_were(&args, 2, "--from end comes after --to beginning");
    // lag: --per without a threshold to apply it to, --all-groups beside named groups.
    for (args, message) in [
        (
            &["--group", "g", "--per", "partition"][..],
            "--max-lag <D>|--max-messages <N>",
        ),
        (
            &["--group", "g", "--all-groups"][..],
            "cannot be used with '--all-groups'",
        ),
    ] {
        let out = weir()
            .args(["lag", "kafka://127.0.0.1:1"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(message),
            "{out:?}"
        );
    }
}

/// With no SOURCE and a terminal on stdin, weir reads the terminal (as `cat` and `jq` do)
/// and says so first, so that a forgotten SOURCE does not look like a hang. A pipe is read
/// without a word. The terminal is a pseudo-terminal made by Python's `pty`.
#[test]
fn a_terminal_on_stdin_is_read_and_said_to_be() {
    let weir = assert_cmd::cargo::cargo_bin("weir");
    let script = r#"
import os, pty, subprocess, sys, time
m, s = pty.openpty()
p = subprocess.Popen([sys.argv[1], "consume"], stdin=s, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
os.close(s)
time.sleep(0.3)
os.write(m, b'{"a":1}\n\x04')
out, err = p.communicate(timeout=20)
sys.stdout.write(out.decode() + "--\n" + err.decode() + "--\n" + str(p.returncode))
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&weir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(text.starts_with("{\"a\":1}\n--\n"), "{text}");
    assert!(text.contains("reading NDJSON from the terminal"), "{text}");
    assert!(text.ends_with("--\n0"), "{text}");
    let piped = weir_std_piped();
    assert!(!piped.contains("terminal"), "{piped}");
}

fn weir_std_piped() -> String {
    let out = weir()
        .arg("consume")
        .write_stdin("{\"a\":1}\n")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stderr).into_owned()
}
