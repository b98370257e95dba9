//! The files one command line names must not overlap where one is written: an output that is
//! also an input would be truncated before it is read (`weir consume in.ndjson -o in.ndjson`
//! used to empty the file), and two outputs in one file interleave their lines. Checked on
//! the parsed flags, before any plan opens anything (exit 2).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// One file a command line names: the flag that names it, whether the command writes it.
struct Named {
    flag: &'static str,
    path: PathBuf,
    written: bool,
}

/// Where a path leads: an existing regular file by its inode, a file yet to be created by its
/// canonical directory and name. Devices and pipes (`/dev/null`, `/dev/stderr`) are not
/// files: they may be named twice.
#[derive(PartialEq, Eq)]
enum FileId {
    Inode(u64, u64),
    Path(PathBuf),
}

fn file_id(path: &Path) -> Option<FileId> {
    if path == Path::new(STDIN) {
        return stdin_id();
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Some(inode(path, &m)),
        Ok(_) => None,
        Err(_) => Some(FileId::Path(
            directory_of(path)
                .canonicalize()
                .ok()?
                .join(path.file_name()?),
        )),
    }
}

/// The directory a file of `path` is in: `.` for a bare name.
fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

#[cfg(unix)]
fn inode(_: &Path, m: &std::fs::Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt;
    FileId::Inode(m.dev(), m.ino())
}

#[cfg(not(unix))]
fn inode(path: &Path, _: &std::fs::Metadata) -> FileId {
    FileId::Path(path.canonicalize().unwrap_or_else(|_| path.to_path_buf()))
}

/// Stands for standard input among the named files.
const STDIN: &str = "-";

/// The file behind standard input (`weir dedupe -o c.ndjson < c.ndjson`), if it is one: a
/// shell truncates nothing there, but weir's output would empty the file before it is read.
#[cfg(unix)]
fn stdin_id() -> Option<FileId> {
    use std::os::fd::AsFd;
    let fd = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    let m = std::fs::File::from(fd).metadata().ok()?;
    m.is_file().then(|| inode(Path::new(STDIN), &m))
}

#[cfg(not(unix))]
fn stdin_id() -> Option<FileId> {
    None
}

/// A SOURCE or SINK that is not a file: stdin/stdout, a broker URL, a stream's ARN.
fn is_file_spec(text: &str) -> bool {
    text != "-" && !crate::io::spec::is_brokered(text)
}

/// The files of `command`'s parsed arguments `m`, by their clap ids.
fn named_files(command: &str, m: &clap::ArgMatches) -> Vec<Named> {
    let raw = |id: &str| -> Vec<PathBuf> {
        m.try_get_raw(id)
            .ok()
            .flatten()
            .into_iter()
            .flatten()
            .map(PathBuf::from)
            .collect()
    };
    let mut files = Vec::new();
    let mut add = |flag: &'static str, id: &str, written: bool| {
        for path in raw(id) {
            if is_file_spec(&path.to_string_lossy()) {
                files.push(Named {
                    flag,
                    path,
                    written,
                });
            }
        }
    };
    add("the input", "sources", false);
    add("-o", "output", true);
    add("--late-output", "late_output", true);
    add("--duplicates", "duplicates", true);
    add("--dead-letter", "dead_letter", true);
    add("--stats", "stats", true);
    add("--plot", "plot", true);
    // Every command but lag keeps its checkpoint there; lag only reads one.
    add("--checkpoint", "checkpoint", command != "lag");
    // No SOURCE, or `-`: standard input is read.
    let sources = m
        .try_get_raw("sources")
        .map(|s| s.map(|s| s.collect::<Vec<_>>()));
    let reads_stdin = match sources {
        Ok(None) => true,
        Ok(Some(s)) => s.iter().any(|s| *s == STDIN),
        Err(_) => false,
    };
    if reads_stdin {
        files.push(Named {
            flag: "standard input",
            path: PathBuf::from(STDIN),
            written: false,
        });
    }
    files
}

/// The path to name of two that lead to one file: standard input has none.
fn shown<'a>(a: &'a Named, b: &'a Named) -> &'a Path {
    match b.path == Path::new(STDIN) {
        true => &a.path,
        false => &b.path,
    }
}

/// Refuses a command line where a written file is also another input or output.
pub fn check_distinct(command: &str, m: &clap::ArgMatches) -> Result<()> {
    let files = named_files(command, m);
    let ids: Vec<Option<FileId>> = files.iter().map(|f| file_id(&f.path)).collect();
    for (i, a) in files.iter().enumerate() {
        for (j, b) in files.iter().enumerate().skip(i + 1) {
            if !(a.written || b.written) || ids[i].is_none() || ids[i] != ids[j] {
                continue;
            }
            let why = if a.written && b.written {
                "one file cannot take both; give each its own"
            } else {
                "it would be truncated before it is read"
            };
            return Err(Error::Usage(format!(
                "{} and {} name the same file ({}): {why}",
                a.flag,
                b.flag,
                shown(a, b).display()
            )));
        }
    }
    Ok(())
}

/// A file written only when the run ends (`--stats`, `--plot`) is checked before the run
/// starts, so that hours of reading do not end in "cannot write": its directory must exist,
/// and it must not be a directory itself. Nothing is created.
pub fn check_written_at_end(flag: &str, path: &Path) -> Result<()> {
    let why = if path.is_dir() {
        "it is a directory"
    } else if !directory_of(path).is_dir() {
        "no such directory"
    } else {
        return Ok(());
    };
    Err(Error::Unreachable(format!(
        "cannot write {flag} to {}: {why}",
        path.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(args: &[&str]) -> Result<()> {
        let mut argv = vec!["weir"];
        argv.extend_from_slice(args);
        let matches = crate::cli::command().try_get_matches_from(argv).unwrap();
        let (name, sub) = matches.subcommand().unwrap();
        check_distinct(name, sub)
    }

    #[test]
    fn a_written_file_may_not_be_another_input_or_output() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.ndjson");
        std::fs::write(&input, "{}\n").unwrap();
        let link = dir.path().join("link.ndjson");
        std::fs::hard_link(&input, &link).unwrap();
        let input = input.to_str().unwrap();
        let new = dir.path().join("out.ndjson");
        let new = new.to_str().unwrap();
        // The same path, or another name of the same file (a hard link, a relative path).
        let refused = [
            vec!["consume", input, "-o", input],
            vec!["consume", input, "-o", link.to_str().unwrap()],
            vec!["consume", input, "--checkpoint", input],
            vec!["dedupe", input, "--id", "a", "-o", new, "--duplicates", new],
            vec!["window", "-", "--time", "t", "--tumbling", "1m", "--count"]
                .into_iter()
                .chain(["-o", new, "--late-output", new])
                .collect(),
            vec!["consume", input, "--dead-letter", new, "--stats", new],
            vec!["lag", "kinesis://s", "--checkpoint", input, "-o", input],
        ];
        for args in &refused {
            let e = check(args).expect_err(&format!("{args:?}"));
            assert!(e.to_string().contains("name the same file"), "{e}");
        }
        let allowed = [
            vec!["consume", input, input, "-o", new],
            vec![
                "consume",
                input,
                "-o",
                "/dev/null",
                "--dead-letter",
                "/dev/null",
            ],
            vec!["consume", "-", "-o", "-"],
            vec!["lag", "kinesis://s", "--checkpoint", input],
        ];
        for args in &allowed {
            check(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        }
        let e = check(&["consume", input, "-o", input]).unwrap_err();
        assert!(e.to_string().contains("truncated before it is read"), "{e}");
    }

    #[test]
    fn a_file_written_at_the_end_needs_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        check_written_at_end("--stats", &dir.path().join("s.json")).unwrap();
        check_written_at_end("--stats", Path::new("s.json")).unwrap();
        let missing = dir.path().join("no/s.json");
        let e = check_written_at_end("--stats", &missing).unwrap_err();
        assert_eq!(e.exit_code(), 4);
        assert!(e.to_string().contains("no such directory"), "{e}");
        let e = check_written_at_end("--plot", dir.path()).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        assert!(!missing.parent().unwrap().exists(), "nothing is created");
    }
}
