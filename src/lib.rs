//! weir: a command-line stream toolkit. The binary is a thin shell over this library.
//!
//! Layers, each using only those before it: `core` (pure, synchronous: time, windows,
//! watermarks, dedupe, lateness, lag math), `runtime` (the record path every command shares),
//! `io` (sources and sinks), `report` (how `lag` and `watermark-profile` render), `cmd` (one
//! module per subcommand, from plan to run) and `cli` (the clap definition).

pub mod cli;
pub mod cmd;
pub mod core;
pub mod error;
pub mod io;
pub mod report;
pub mod runtime;
