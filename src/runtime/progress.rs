//! Progress bars on stderr, only when stderr is a terminal and the work is bounded.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A record-progress bar for a bounded broker read of `total` records.
pub fn records(total: u64) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template(
            "{bar:40} {human_pos}/{human_len} records {per_sec} eta {eta}",
        )
        .expect("valid template"),
    );
    Some(pb)
}

/// A byte-progress bar for a bounded read of `total` bytes.
pub fn bytes(total: u64) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template(
            "{bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
        )
        .expect("valid template"),
    );
    Some(pb)
}
