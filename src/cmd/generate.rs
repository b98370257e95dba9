//! `weir generate` (hidden): man pages and shell completions from the clap definition.

use std::fs;
use std::path::Path;

use clap_complete::Shell;

use crate::error::{Error, Result};

pub fn run(out_dir: &Path) -> Result<()> {
    write_docs(out_dir)
}

/// Writes `man/weir.1`, `man/weir-<command>.1` and `completions/*` under `out_dir`.
pub fn write_docs(out_dir: &Path) -> Result<()> {
    let fail =
        |what: &str, e: std::io::Error| Error::Unreachable(format!("cannot write {what}: {e}"));
    let man = out_dir.join("man");
    let completions = out_dir.join("completions");
    for dir in [&man, &completions] {
        fs::create_dir_all(dir).map_err(|e| fail(&dir.display().to_string(), e))?;
    }
    let mut cmd = crate::cli::command();
    cmd.build();
    write_man(&cmd, "weir", &man).map_err(|e| fail("man pages", e))?;
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        let name = format!("weir-{}", sub.get_name());
        write_man(&sub.clone().name(name.clone()), &name, &man)
            .map_err(|e| fail("man pages", e))?;
    }
    for shell in [
        Shell::Bash,
        Shell::Zsh,
        Shell::Fish,
        Shell::Elvish,
        Shell::PowerShell,
    ] {
        clap_complete::generate_to(shell, &mut cmd, "weir", &completions)
            .map_err(|e| fail("completions", e))?;
    }
    Ok(())
}

/// One man page: clap_mangen's title, name, synopsis, description and options, then the
/// commands (each its own page), the text after the options (examples kept line for line, so
/// that they paste as from `--help`) and the version. Left-aligned and unhyphenated: a flag
/// or a path is never cut or stretched.
fn write_man(cmd: &clap::Command, name: &str, dir: &Path) -> std::io::Result<()> {
    let man = clap_mangen::Man::new(cmd.clone());
    let mut page = Vec::new();
    man.render_title(&mut page)?;
    page.extend_from_slice(b".ad l\n.nh\n");
    man.render_name_section(&mut page)?;
    man.render_synopsis_section(&mut page)?;
    man.render_description_section(&mut page)?;
    man.render_options_section(&mut page)?;
    write_commands(cmd, &mut page);
    if let Some(after) = cmd.get_after_long_help().or(cmd.get_after_help()) {
        write_after_help(&after.to_string(), &mut page);
    }
    man.render_version_section(&mut page)?;
    fs::write(dir.join(format!("{name}.1")), page)
}

/// The COMMANDS section of weir(1): each command's page, as `man` names it.
fn write_commands(cmd: &clap::Command, page: &mut Vec<u8>) {
    let subs: Vec<&clap::Command> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .collect();
    if subs.is_empty() {
        return;
    }
    page.extend_from_slice(b".SH COMMANDS\n");
    for sub in subs {
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        let entry = format!(".TP\nweir\\-{}(1)\n{}\n", sub.get_name(), roff_text(&about));
        page.extend_from_slice(entry.as_bytes());
    }
}

/// The text `--help` prints after the options, as man sections: a line such as `Examples:`
/// opens one; indented lines (commands, their comments) are kept as they are (`.nf`), other
/// lines are filled as prose.
fn write_after_help(text: &str, page: &mut Vec<u8>) {
    let mut out = String::new();
    let mut section = false;
    let mut verbatim = false;
    for line in text.lines() {
        let indented = line.starts_with(' ');
        if verbatim && !indented && !line.is_empty() {
            out.push_str(".fi\n");
            verbatim = false;
        }
        if !indented && line.ends_with(':') && !line.contains(". ") && line.len() < 40 {
            out.push_str(&format!(
                ".SH {}\n",
                line.trim_end_matches(':').to_uppercase()
            ));
            section = true;
            continue;
        }
        if !section {
            out.push_str(".SH NOTES\n");
            section = true;
        }
        if line.is_empty() {
            out.push_str(if verbatim { "\n" } else { ".PP\n" });
            continue;
        }
        if indented && !verbatim {
            out.push_str(".nf\n");
            verbatim = true;
        }
        out.push_str(&roff_text(line));
        out.push('\n');
    }
    if verbatim {
        out.push_str(".fi\n");
    }
    page.extend_from_slice(out.as_bytes());
}

/// A line as roff text: backslashes and leading control characters escaped, minus signs
/// kept as minus signs.
fn roff_text(line: &str) -> String {
    let escaped = line.replace('\\', "\\e").replace('-', "\\-");
    match escaped.starts_with(['.', '\'']) {
        true => format!("\\&{escaped}"),
        false => escaped,
    }
}
