//! Adapters between the record path and the outside world: SOURCE and SINK parsing (`spec`),
//! the NDJSON source (`ndjson`; plain files through a memory map: `mapped`), Kafka's source,
//! sink and admin calls (`kafka`), Kinesis's source, sink and lag (`kinesis`), the sinks behind
//! one interface (`sink`), and the AWS chain for the clients that are not the SDK's (`aws`),
//! and the HTTP endpoint that serves metrics (`metrics`). Nothing here knows the command line.

pub mod aws;
pub mod input;
pub mod kafka;
pub mod kinesis;
pub mod mapped;
pub mod metrics;
pub mod ndjson;
pub mod schema;
pub mod sink;
pub mod spec;
