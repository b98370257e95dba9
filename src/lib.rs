//! weir: a command-line stream toolkit. The binary is a thin shell over this library.
//!
//! Layers, each using only those before it: `core` (pure, synchronous: time, windows,
//! watermarks, dedupe, lateness, lag math), `runtime` (the record path every command shares),
//! `io` (sources and sinks), `report` (how `lag` and `watermark-profile` render), `cli` (the
//! clap definition) and `cmd` (one module per subcommand, from arguments to a plan to a run).
//! `error` is shared by all. docs/ARCHITECTURE.md follows a record through them.

pub mod cli;
pub mod cmd;
pub mod core;
pub mod error;
pub mod io;
pub mod report;
pub mod runtime;
