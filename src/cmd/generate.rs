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

fn write_man(cmd: &clap::Command, name: &str, dir: &Path) -> std::io::Result<()> {
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut page)?;
    fs::write(dir.join(format!("{name}.1")), page)
}
