//! The Kafka adapter: client configuration (`config`), the rules of a read checked before
//! any client is made (`plan`), a source (`source`), a producing sink (`sink`) and the
//! read-only cluster questions of `weir lag` (`admin`), and the changelog topic where a group
//! member keeps its partitions' states (`changelog`).

pub mod admin;
pub mod changelog;
pub mod config;
pub mod plan;
pub mod sink;
pub mod source;

pub use admin::{Cluster, GroupDescription, Owner};
pub use config::ClientOptions;
pub use plan::{ChangelogPlan, ReadPlan, ReadRequest};
pub use sink::{KafkaSink, Outgoing};
pub use source::{KafkaSource, Render};
