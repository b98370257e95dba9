//! SIGINT and SIGTERM: the first asks for a clean stop (commands check the flag between
//! records, flush, report and exit 130); a second one exits at once.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the first SIGINT/SIGTERM.
pub static STOP: AtomicBool = AtomicBool::new(false);

pub fn install() {
    let _ = ctrlc::set_handler(|| {
        if STOP.swap(true, Ordering::SeqCst) {
            std::process::exit(crate::error::exit::INTERRUPTED as i32);
        }
    });
}

/// Whether a signal asked the run to stop: waits for a source that does not answer (a
/// broker's first contact, AWS retries) end then, rather than at their timeout.
pub fn stopping() -> bool {
    STOP.load(Ordering::Relaxed)
}
