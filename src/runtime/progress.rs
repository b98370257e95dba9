//! Progress bars on stderr, only when stderr is a terminal and the work is bounded.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::io::spec::Input;

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

/// A byte-progress bar when every input is a file (the work is bounded and its size known).
pub fn bytes(inputs: &[Input]) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let mut total = 0;
    for input in inputs {
        match input {
            Input::File(path) => total += std::fs::metadata(path).ok()?.len(),
            Input::Stdin => return None,
        }
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
