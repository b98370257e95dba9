//! The pure, synchronous core: no I/O, no clocks except where passed in.

pub mod record;
pub mod time;
