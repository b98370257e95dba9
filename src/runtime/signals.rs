//! SIGINT and SIGTERM: the first asks for a clean stop (commands check the flag between
//! records, flush, report and exit 130); a second one exits at once, unless it comes within
//! a second of the first: coreutils `timeout` signals weir and then its process group, and
//! scripts, systemd and container runtimes repeat a signal, all meaning the one request.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Set by the first SIGINT/SIGTERM.
pub static STOP: AtomicBool = AtomicBool::new(false);

/// When the first signal came.
static FIRST: OnceLock<Instant> = OnceLock::new();

/// A signal this soon after the first repeats it.
const GRACE: Duration = Duration::from_secs(1);

pub fn install() {
    let _ = ctrlc::set_handler(|| {
        if !STOP.swap(true, Ordering::SeqCst) {
            let _ = FIRST.set(Instant::now());
            return;
        }
        if FIRST.get().is_none_or(|first| first.elapsed() >= GRACE) {
            std::process::exit(crate::error::exit::INTERRUPTED as i32);
        }
    });
}

/// Whether a signal asked the run to stop: waits for a source that does not answer (a
/// broker's first contact, AWS retries) end then, rather than at their timeout.
pub fn stopping() -> bool {
    STOP.load(Ordering::Relaxed)
}
