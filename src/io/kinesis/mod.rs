//! The Kinesis adapter: the AWS client at the edge (`client`), the rules of a read and the
//! pure parts of reading and writing a stream (`plan`), a shard-aware source (`source`), a
//! PutRecords sink (`sink`), the lag of a consumer (`lag`), the lease table members of an
//! application share (`lease`), a member's part in it (`member`) and where members keep
//! each shard's state (`state_store`).

pub mod client;
pub mod lag;
pub mod lease;
pub mod member;
pub mod plan;
pub mod source;
pub mod state_store;

pub use client::{AwsOptions, KinesisClient};
pub use plan::{ReadPlan, ReadRequest, StatesPlan, StoreSpec};
pub use source::KinesisSource;
