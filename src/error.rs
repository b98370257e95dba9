//! The one error type, the exit codes it maps to, and the per-record fault every layer
//! reports (a bad record goes to the error policy; anything else ends the run).

use std::io;
use std::panic::{self, AssertUnwindSafe};

use crate::core::record::RecordError;

/// Exit codes, as documented in the README and man pages.
pub mod exit {
    pub const OK: u8 = 0;
    pub const CHECK_FAILED: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const BAD_INPUT: u8 = 3;
    pub const UNREACHABLE: u8 = 4;
    pub const NOTHING_TO_CHECK: u8 = 5;
    /// A bug: as a panic exits.
    pub const INTERNAL: u8 = 101;
    pub const INTERRUPTED: u8 = 130;
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad flags or configuration.
    #[error("{0}")]
    Usage(String),
    /// A record that cannot be used, under `--on-error fail`.
    #[error("bad input at {position}: {reason}")]
    BadInput { position: String, reason: String },
    /// A source or sink that cannot be reached, opened or written.
    #[error("{0}")]
    Unreachable(String),
    /// A check tripped (`lag --max-lag`).
    #[error("{0}")]
    CheckFailed(String),
    /// A check found nothing to check (`lag --group` without commits): not a breach, not a
    /// pass.
    #[error("{0}")]
    NothingToCheck(String),
    #[error("interrupted")]
    Interrupted,
    /// The reader of stdout went away (`weir ... | head`): a quiet success.
    #[error("broken pipe")]
    BrokenPipe,
    /// A bug stopped a thread of the run (its panic message was printed before).
    #[error("internal error: {0} (a bug in weir: please report it)")]
    Internal(String),
}

impl Error {
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => exit::USAGE,
            Error::BadInput { .. } => exit::BAD_INPUT,
            Error::Unreachable(_) => exit::UNREACHABLE,
            Error::CheckFailed(_) => exit::CHECK_FAILED,
            Error::NothingToCheck(_) => exit::NOTHING_TO_CHECK,
            Error::Interrupted => exit::INTERRUPTED,
            Error::BrokenPipe => exit::OK,
            Error::Internal(_) => exit::INTERNAL,
        }
    }

    /// A failed write to a sink named `what`.
    pub fn write(what: &str, e: io::Error) -> Error {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Error::BrokenPipe
        } else {
            Error::Unreachable(format!("cannot write to {what}: {e}"))
        }
    }
}

/// Runs `work`, all a thread does, with a panic (a bug; its message is printed already) made
/// `Error::Internal` naming `what` stopped: whoever waits on a thread that just ended would
/// take it for work done.
pub fn panic_as_error<T>(what: &str, work: impl FnOnce() -> Result<T>) -> Result<T> {
    panic::catch_unwind(AssertUnwindSafe(work))
        .unwrap_or_else(|_| Err(Error::Internal(format!("{what} stopped"))))
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::write("output", e)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why one record could not be handled: the record itself is bad (it goes to the error
/// policy: `--on-error`, `--dead-letter`), or the run cannot go on.
#[derive(Debug)]
pub enum Fault {
    Record(RecordError),
    Fatal(Error),
}

impl From<RecordError> for Fault {
    fn from(e: RecordError) -> Fault {
        Fault::Record(e)
    }
}

impl From<Error> for Fault {
    fn from(e: Error) -> Fault {
        Fault::Fatal(e)
    }
}
