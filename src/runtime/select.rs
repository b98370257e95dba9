//! `--where`: the records a run keeps. The condition's fields are located by the reader
//! thread with the command's own (one pass over each line), and the drive loop tests each
//! record before its step sees it: a record the condition drops costs no step work, and is
//! counted as `filtered`.

use super::chunk::Line;
use crate::core::filter::Filter;

/// A condition and where its fields start among those the reader thread locates.
#[derive(Debug)]
pub struct Selection {
    filter: Filter,
    at: usize,
}

impl Selection {
    /// `filter`, whose field `i` the reader thread locates at `at + i`.
    pub fn new(filter: Filter, at: usize) -> Selection {
        Selection { filter, at }
    }

    /// Whether the run keeps `line`.
    #[inline]
    pub fn keeps(&self, line: &Line<'_>) -> bool {
        self.filter.holds(&|i| line.field(self.at + i))
    }
}
