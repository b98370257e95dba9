//! weir: a command-line stream toolkit. The binary is a thin shell over this library.

pub mod cli;
pub mod cmd;
pub mod core;
pub mod error;
pub mod gen;
pub mod io;
pub mod stats;
