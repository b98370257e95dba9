//! Counters every command keeps, the stderr summary and the `--stats` JSON.

use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::chunk::FieldsSeen;
use crate::error::{Error, Result};

/// How a run reports itself: `--stats PATH` and `--quiet`.
#[derive(Clone, Debug, Default)]
pub struct ReportPlan {
    pub stats: Option<std::path::PathBuf>,
    pub quiet: bool,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Counters {
    /// Records read (blank lines are not records).
    pub read: u64,
    pub written: u64,
    /// Outside `--from`/`--to`.
    pub filtered: u64,
    pub late: u64,
    pub duplicates: u64,
    /// Passed, but their id may have been evicted for room (dedupe --max-keys).
    #[serde(skip_serializing_if = "is_zero")]
    pub possibly_duplicates: u64,
    /// Records that failed the error policy (skipped or dead-lettered).
    pub bad: u64,
    /// State entries dropped to keep state bounded.
    pub evicted: u64,
    /// Ids forgotten because their horizon passed (dedupe).
    #[serde(skip_serializing_if = "is_zero")]
    pub expired: u64,
    /// Empty or whitespace-only lines, which are not records.
    pub blank_lines: u64,
    pub bytes_read: u64,
    /// Most (key, window) pairs held at once (window).
    #[serde(skip_serializing_if = "is_zero")]
    pub peak_open_windows: u64,
    /// Most keys held at once (window, dedupe).
    #[serde(skip_serializing_if = "is_zero")]
    pub peak_keys: u64,
    /// Which located fields this run's records had (not kept across a restart).
    #[serde(skip)]
    pub fields: FieldsSeen,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Serialize)]
pub struct Report<'a> {
    pub command: &'a str,
    #[serde(flatten)]
    pub counters: &'a Counters,
    pub elapsed_s: f64,
    pub records_per_s: f64,
    pub exit_code: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The schema the output's values were encoded with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_schema: Option<&'a str>,
    /// Likely mistakes, as stderr said them (a named field no record had).
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub warnings: &'a [String],
}

pub struct Stats {
    pub command: &'static str,
    pub counters: Counters,
    /// Nothing is written (`replay --dry-run`): the summary says "would write".
    pub dry_run: bool,
    /// The schema the output's values are encoded with, resolved at the start.
    pub encoding: Option<String>,
    /// Said after the summary line: what a user would otherwise wonder about.
    pub note: Option<String>,
    /// Said on stderr whatever -q says, and kept in --stats: likely mistakes.
    pub warnings: Vec<String>,
    started: Instant,
}

impl Stats {
    pub fn new(command: &'static str) -> Stats {
        Stats {
            command,
            counters: Counters::default(),
            dry_run: false,
            encoding: None,
            note: None,
            warnings: Vec::new(),
            started: Instant::now(),
        }
    }

    fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// One line for stderr: `weir consume: read 3, written 2, bad 1 in 0.01 s (300 records/s)`.
    pub fn summary_line(&self) -> String {
        let c = &self.counters;
        let written = match self.dry_run {
            true => "would write",
            false => "written",
        };
        let mut parts = vec![
            format!("read {}", c.read),
            format!("{written} {}", c.written),
        ];
        for (name, n) in [
            ("filtered", c.filtered),
            ("late", c.late),
            ("duplicates", c.duplicates),
            ("possibly duplicates", c.possibly_duplicates),
            ("bad", c.bad),
            ("evicted", c.evicted),
            ("expired", c.expired),
            ("blank lines", c.blank_lines),
            ("peak open windows", c.peak_open_windows),
            ("peak keys", c.peak_keys),
        ] {
            if n > 0 {
                parts.push(format!("{name} {n}"));
            }
        }
        let secs = self.elapsed_s();
        let rate = if secs > 0.0 {
            c.read as f64 / secs
        } else {
            0.0
        };
        let encoding = match &self.encoding {
            Some(schema) => format!("; values encoded with {schema}"),
            None => String::new(),
        };
        format!(
            "weir {}: {} in {:.3} s ({} records/s){encoding}",
            self.command,
            parts.join(", "),
            secs,
            human_rate(rate)
        )
    }

    pub fn write_json(&self, path: &Path, exit_code: u8, error: Option<String>) -> Result<()> {
        let secs = self.elapsed_s();
        let report = Report {
            command: self.command,
            counters: &self.counters,
            elapsed_s: secs,
            records_per_s: if secs > 0.0 {
                self.counters.read as f64 / secs
            } else {
                0.0
            },
            exit_code,
            error,
            value_schema: self.encoding.as_deref(),
            warnings: &self.warnings,
        };
        let mut text = serde_json::to_string_pretty(&report).expect("stats serialise");
        text.push('\n');
        std::fs::write(path, text).map_err(|e| Error::write(&path.display().to_string(), e))
    }
}

/// Ends a run: the stderr summary (unless quiet, or stdout was closed under us) and the
/// `--stats` JSON, then the run's own result.
pub fn finish(stats: &Stats, report: &ReportPlan, result: Result<()>) -> Result<()> {
    let broken_pipe = matches!(result, Err(Error::BrokenPipe));
    // A usage error means nothing ran: there is nothing to summarise. Nor is there when the
    // run failed before its first line or record (a missing file, an unreachable broker): the
    // error says it all. A run stopped by a signal is always summed up.
    let usage = matches!(result, Err(Error::Usage(_)));
    let c = &stats.counters;
    let failed_before_input =
        !matches!(result, Ok(()) | Err(Error::Interrupted)) && c.read == 0 && c.blank_lines == 0;
    if !report.quiet && !broken_pipe && !usage && !failed_before_input {
        eprintln!("{}", stats.summary_line());
        if let Some(note) = &stats.note {
            eprintln!("weir {}: {note}", stats.command);
        }
    }
    if !usage {
        for warning in &stats.warnings {
            eprintln!("weir {}: warning: {warning}", stats.command);
        }
    }
    if let Some(path) = &report.stats {
        let (code, message) = match &result {
            Ok(()) => (0, None),
            Err(e) => (e.exit_code(), (!broken_pipe).then(|| e.to_string())),
        };
        // A usage error leaves every file as it was, this one included. When the run failed
        // and the stats cannot be written either, the run's own error is the one to exit on;
        // the other is said too, unless the run's error was about this very file.
        if !usage {
            match (stats.write_json(path, code, message), &result) {
                (Err(e), Ok(())) => return Err(e),
                (Err(e), Err(run)) if !run.to_string().contains(&*path.to_string_lossy()) => {
                    eprintln!("weir: error: {e}")
                }
                _ => {}
            }
        }
    }
    result
}

fn human_rate(rate: f64) -> String {
    if rate >= 1e6 {
        format!("{:.2}M", rate / 1e6)
    } else if rate >= 1e3 {
        format!("{:.1}k", rate / 1e3)
    } else {
        format!("{rate:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_names_only_what_happened() {
        let mut s = Stats::new("consume");
        s.counters.read = 3;
        s.counters.written = 2;
        s.counters.bad = 1;
        let line = s.summary_line();
        assert!(
            line.starts_with("weir consume: read 3, written 2, bad 1 in "),
            "{line}"
        );
        assert!(!line.contains("late"));
        s.dry_run = true;
        assert!(s
            .summary_line()
            .starts_with("weir consume: read 3, would write 2, bad 1 in "));
    }

    #[test]
    fn rates() {
        assert_eq!(human_rate(2_500_000.0), "2.50M");
        assert_eq!(human_rate(1500.0), "1.5k");
        assert_eq!(human_rate(12.0), "12");
    }
}
