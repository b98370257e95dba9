//! The Kafka adapter: client options (`config`), a client's context and first contact
//! (`client`), the rules of a read checked before any client is made (`plan`), a source
//! (`source`), a consumer-group member's rebalances, state saves and commits (`group`), the
//! changelog topic where a member keeps its partitions' states (`changelog`), a producing
//! sink (`sink`), the read-only cluster questions of `weir lag` (`admin`) and its measuring of
//! groups' lag with them (`lag`).

pub mod admin;
pub mod changelog;
pub mod client;
pub mod config;
pub mod group;
pub mod lag;
pub mod msk_iam;
pub mod plan;
mod properties;
pub mod repartition;
pub mod sink;
pub mod source;
pub mod topic;

pub use admin::{Cluster, GroupDescription, Owner};
pub use config::ClientOptions;
pub use plan::{ChangelogPlan, ReadPlan, ReadRequest};
pub use sink::KafkaSink;
pub use source::KafkaSource;
