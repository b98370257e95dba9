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
        // says it); nor is a check's verdict under -q (exit 1 or 5 says it).
        Err(e @ (Error::Interrupted | Error::CheckFailed(_) | Error::NothingToCheck(_))) => {
            let quiet = matches!(sub_matches.try_get_one::<bool>("quiet"), Ok(Some(true)));
            match (&e, quiet) {
                (_, true) => {}
                (Error::Interrupted, false) => eprintln!("weir: stopped by a signal"),
                (e, false) => eprintln!("weir: {e}"),
            }
            ExitCode::from(e.exit_code())
        }
        Err(e) => {
            eprintln!("weir: error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
