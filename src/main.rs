use std::process::ExitCode;

use clap::FromArgMatches;

use weir::cli::Cli;
use weir::error::Error;

/// The one place that turns errors into messages and exit codes.
fn main() -> ExitCode {
    let matches = weir::cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let sub_matches = matches
        .subcommand()
        .map(|(_, m)| m.clone())
        .unwrap_or_default();
    match weir::cmd::run(cli.command, &sub_matches) {
        Ok(()) => ExitCode::SUCCESS,
        // `weir ... | head`: the reader has all it wanted.
        Err(Error::BrokenPipe) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("weir: error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
