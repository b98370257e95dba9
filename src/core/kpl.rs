//! KPL aggregation, the format the Kinesis Producer Library packs many user records into
//! one Kinesis record with: the magic bytes `F3 89 9A C2`, an `AggregatedRecord` protobuf
//! message, and the MD5 digest of that message.
//!
//! ```text
//! message AggregatedRecord {
//!   repeated string partition_key_table     = 1;
//!   repeated string explicit_hash_key_table = 2;
//!   repeated Record records                 = 3;
//! }
//! message Record {
//!   required uint64 partition_key_index     = 1;
//!   optional uint64 explicit_hash_key_index = 2;
//!   required bytes  data                    = 3;
//!   repeated Tag    tags                    = 4;
//! }
//! ```
//!
//! Pure: a record's bytes in, its user records (or why they cannot be had) out.

use md5::{Digest, Md5};
use prost::Message;

/// The first bytes of an aggregated record.
pub const MAGIC: [u8; 4] = [0xF3, 0x89, 0x9A, 0xC2];
const DIGEST_LEN: usize = 16;

#[derive(Clone, PartialEq, prost::Message)]
pub struct AggregatedRecord {
    #[prost(string, repeated, tag = "1")]
    pub partition_key_table: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    pub explicit_hash_key_table: Vec<String>,
    #[prost(message, repeated, tag = "3")]
    pub records: Vec<UserRecord>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct UserRecord {
    #[prost(uint64, tag = "1")]
    pub partition_key_index: u64,
    #[prost(uint64, optional, tag = "2")]
    pub explicit_hash_key_index: Option<u64>,
    #[prost(bytes = "vec", tag = "3")]
    pub data: Vec<u8>,
    #[prost(message, repeated, tag = "4")]
    pub tags: Vec<Tag>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Tag {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(string, optional, tag = "2")]
    pub value: Option<String>,
}

/// Whether `data` is a KPL aggregate (its magic bytes, and room for a digest after them).
pub fn is_aggregated(data: &[u8]) -> bool {
    data.len() > MAGIC.len() + DIGEST_LEN && data.starts_with(&MAGIC)
}

/// One user record of an aggregate: its own partition key and data, in aggregate order
/// (its index is its subsequence number).
#[derive(Debug, PartialEq, Eq)]
pub struct Unpacked<'a> {
    pub key: &'a str,
    pub data: &'a [u8],
}

/// The user records of aggregate `data` (which `is_aggregated`), or why it is unusable:
/// a digest that does not match, a message that does not decode, a key index out of range.
pub fn deaggregate(data: &[u8]) -> Result<(AggregatedRecord, Vec<(usize, usize)>), String> {
    let body = &data[MAGIC.len()..data.len() - DIGEST_LEN];
    let digest = &data[data.len() - DIGEST_LEN..];
    if Md5::digest(body).as_slice() != digest {
        return Err("KPL aggregate: the MD5 digest does not match its contents".into());
    }
    let aggregate = AggregatedRecord::decode(body)
        .map_err(|e| format!("KPL aggregate: not an AggregatedRecord message: {e}"))?;
    let mut index = Vec::with_capacity(aggregate.records.len());
    for (i, r) in aggregate.records.iter().enumerate() {
        let key = usize::try_from(r.partition_key_index)
            .ok()
            .filter(|&k| k < aggregate.partition_key_table.len())
            .ok_or_else(|| {
                format!(
                    "KPL aggregate: user record {i} names partition key {} of {}",
                    r.partition_key_index,
                    aggregate.partition_key_table.len()
                )
            })?;
        index.push((i, key));
    }
    Ok((aggregate, index))
}

/// The user records of an aggregate `deaggregate` checked, with their keys.
pub fn user_records<'a>(
    aggregate: &'a AggregatedRecord,
    index: &'a [(usize, usize)],
) -> impl Iterator<Item = Unpacked<'a>> + 'a {
    index.iter().map(|&(record, key)| Unpacked {
        key: &aggregate.partition_key_table[key],
        data: &aggregate.records[record].data,
    })
}

/// Packs user records (key, data) into one aggregate, as the KPL does: each distinct key
/// once in the table. For tests and for producing aggregated records.
pub fn aggregate(records: &[(&str, &[u8])]) -> Vec<u8> {
    let mut message = AggregatedRecord::default();
    for (key, data) in records {
        let index = match message.partition_key_table.iter().position(|k| k == key) {
            Some(i) => i,
            None => {
                message.partition_key_table.push(key.to_string());
                message.partition_key_table.len() - 1
            }
        };
        message.records.push(UserRecord {
            partition_key_index: index as u64,
            explicit_hash_key_index: None,
            data: data.to_vec(),
            tags: Vec::new(),
        });
    }
    let body = message.encode_to_vec();
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&body);
    out.extend_from_slice(&Md5::digest(&body));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn unpack(data: &[u8]) -> Result<Vec<(String, Vec<u8>)>, String> {
        let (aggregate, index) = deaggregate(data)?;
        Ok(user_records(&aggregate, &index)
            .map(|u| (u.key.to_string(), u.data.to_vec()))
            .collect())
    }

    #[test]
    fn a_plain_record_is_not_an_aggregate() {
        assert!(!is_aggregated(b"{\"a\":1}"));
        assert!(!is_aggregated(&MAGIC));
        assert!(is_aggregated(&aggregate(&[("k", b"x")])));
    }

    #[test]
    fn a_bad_digest_or_message_is_refused() {
        let mut data = aggregate(&[("k1", b"one"), ("k2", b"two")]);
        let last = data.len() - 1;
        data[last] ^= 1;
        assert!(unpack(&data).unwrap_err().contains("MD5"));
        // A body that is no protobuf message, with a digest that matches it.
        let body = [0xFFu8, 0xFF, 0xFF];
        let mut bad = MAGIC.to_vec();
        bad.extend_from_slice(&body);
        bad.extend_from_slice(&Md5::digest(body));
        assert!(unpack(&bad).unwrap_err().contains("AggregatedRecord"));
        // A key index past the table.
        let mut message = AggregatedRecord::default();
        message.records.push(UserRecord {
            partition_key_index: 3,
            explicit_hash_key_index: None,
            data: b"x".to_vec(),
            tags: Vec::new(),
        });
        let body = message.encode_to_vec();
        let mut bad = MAGIC.to_vec();
        bad.extend_from_slice(&body);
        bad.extend_from_slice(&Md5::digest(&body));
        assert!(unpack(&bad).unwrap_err().contains("partition key 3"));
    }

    proptest! {
        #[test]
        fn user_records_come_back_in_order_with_their_keys(
            records in prop::collection::vec(("[a-c]{1,3}", prop::collection::vec(any::<u8>(), 0..40)), 1..30)
        ) {
            let borrowed: Vec<(&str, &[u8])> =
                records.iter().map(|(k, d)| (k.as_str(), d.as_slice())).collect();
            let data = aggregate(&borrowed);
            let back = unpack(&data).unwrap();
            let want: Vec<(String, Vec<u8>)> = records.clone();
            prop_assert_eq!(back, want);
        }

        /// Whatever the message (with a digest that matches it, so that it is decoded),
        /// de-aggregation answers without panicking.
        #[test]
        fn any_message_is_judged_without_panic(body in prop::collection::vec(any::<u8>(), 1..200)) {
            let mut data = MAGIC.to_vec();
            data.extend_from_slice(&body);
            data.extend_from_slice(&Md5::digest(&body));
            let _ = unpack(&data);
        }
    }
}
