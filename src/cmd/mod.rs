//! One module per subcommand: its plan (every rule checked, nothing opened) and its step (the
//! work on each record), with a few lines of glue that hand both to the run
//! (`runtime::run_command`). `plan` holds what the plans share; `files` checks that no
//! written file is also an input or another output; `generate` writes `man/` and
//! `completions/`.

pub mod consume;
pub mod dedupe;
mod files;
pub mod generate;
pub mod lag;
mod plan;
pub mod profile;
pub mod replay;
pub mod window;

use crate::cli::Command;
use crate::error::Result;
use crate::runtime::signals;

/// Runs one parsed command line; `matches` are the subcommand's own (for flag order).
pub fn run(command: Command, matches: &clap::ArgMatches) -> Result<()> {
    files::check_distinct(command.name(), matches)?;
    signals::install();
    let stop = &signals::STOP;
    match command {
        Command::Consume(args) => consume::run(args, stop),
        Command::Window(args) => window::run(args, matches, stop),
        Command::Dedupe(args) => dedupe::run(args, stop),
        Command::WatermarkProfile(args) => profile::run(args, stop),
        Command::Replay(args) => replay::run(args, stop),
        Command::Lag(args) => lag::run(args, stop),
        Command::Generate(args) => generate::run(&args.out_dir),
    }
}
