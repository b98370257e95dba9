//! KPL de-aggregation of arbitrary Kinesis record bytes: no panic, every user record's key
//! inside the aggregate's table, and packing then unpacking gives the records back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir::core::kpl::{aggregate, deaggregate, is_aggregated, user_records, MAGIC};

/// Unpacks `data` if it is an aggregate, checking what comes out against the table.
fn unpack(data: &[u8]) -> Option<Vec<(String, Vec<u8>)>> {
    if !is_aggregated(data) {
        return None;
    }
    let (message, index) = deaggregate(data).ok()?;
    assert_eq!(
        index.len(),
        message.records.len(),
        "one index entry per user record"
    );
    Some(
        user_records(&message, &index)
            .map(|r| (r.key.to_string(), r.data.to_vec()))
            .collect(),
    )
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, body)) = input.split_first() else {
        return;
    };
    match mode % 3 {
        // The bytes as a Kinesis record's data, as the source sees it.
        0 => {
            unpack(body);
        }
        // The bytes as the protobuf message, wrapped with the magic and a matching MD5, so
        // the fuzzer reaches the message decoding past the digest check.
        1 => {
            use md5::{Digest, Md5};
            let mut data = MAGIC.to_vec();
            data.extend_from_slice(body);
            data.extend_from_slice(&Md5::digest(body));
            unpack(&data);
        }
        // The bytes as user records, packed and unpacked again: pieces split on 0xFF, the
        // first byte of each piece says how much of it is the key.
        _ => {
            let pieces: Vec<(String, &[u8])> = body
                .split(|&b| b == 0xFF)
                .filter_map(|piece| {
                    let (&cut, rest) = piece.split_first()?;
                    let cut = (cut as usize).min(rest.len());
                    let key = String::from_utf8_lossy(&rest[..cut]).into_owned();
                    Some((key, &rest[cut..]))
                })
                .collect();
            if pieces.is_empty() {
                return;
            }
            let records: Vec<(&str, &[u8])> =
                pieces.iter().map(|(k, d)| (k.as_str(), *d)).collect();
            let packed = aggregate(&records);
            let back = unpack(&packed).expect("an aggregate weir packed unpacks");
            let expected: Vec<(String, Vec<u8>)> = records
                .iter()
                .map(|(k, d)| (k.to_string(), d.to_vec()))
                .collect();
            assert_eq!(back, expected);
        }
    }
});
