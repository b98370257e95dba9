//! Adapters between the record path and the outside world: SOURCE and SINK parsing (`spec`),
//! the NDJSON source (`ndjson`), Kafka's source, sink and admin calls (`kafka`), Kinesis's
//! source, sink and lag (`kinesis`), and the sinks behind one interface (`sink`). Nothing here knows the command line.

pub mod input;
pub mod kafka;
pub mod kinesis;
pub mod ndjson;
pub mod schema;
pub mod sink;
pub mod spec;
