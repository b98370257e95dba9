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
        // A stop asked for by a signal is no error: said as such, and not under -q (exit 130
        // says it).
        Err(Error::Interrupted) => {
            let quiet = matches!(sub_matches.try_get_one::<bool>("quiet"), Ok(Some(true)));
            if !quiet {
                eprintln!("weir: stopped by a signal");
            }
            ExitCode::from(Error::Interrupted.exit_code())
        }
        Err(e) => {
            eprintln!("weir: error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
