//! Adapters between the core and the outside world: inputs, sinks, the error policy.

pub mod dead_letter;
pub mod kafka;
pub mod ndjson;
pub mod sink;
pub mod spec;
