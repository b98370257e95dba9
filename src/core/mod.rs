//! The pure, synchronous core: no I/O, no clocks except where passed in.

pub mod aggregate;
pub mod avro;
pub mod avro_encode;
pub mod avro_resolve;
pub mod dedupe;
pub mod dedupe_task;
pub mod envelope;
pub mod filter;
pub mod framing;
pub mod id_table;
pub mod kpl;
pub mod lag;
pub mod lateness;
pub mod lease;
pub mod pace;
pub mod partitioned;
pub mod profile_task;
pub mod protobuf;
pub mod record;
pub mod saved;
pub mod scan;
pub mod shuffle;
pub mod time;
pub mod watermark;
pub mod window;
pub mod window_table;
