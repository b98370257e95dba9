//! Envelope decoding (`replay -J`): no panic, and what decodes writes back to an envelope that
//! decodes to the same record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir::core::envelope::{read_envelope, write_envelope, Decoded, Message, TimestampType};

fuzz_target!(|input: &str| {
    let Ok(record) = read_envelope(input) else {
        return;
    };
    let headers: Vec<(&str, Option<&[u8]>)> = record
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_deref()))
        .collect();
    let message = Message {
        topic: "t",
        partition: record.partition.unwrap_or(0),
        // Written when known: a reader of the envelope takes it as it takes any other member.
        partitions: record.partition.map_or(0, |p| p.unsigned_abs() + 1),
        offset: 0,
        timestamp: record.timestamp.map(|t| (t, TimestampType::Create)),
        key: record.key.as_deref(),
        value: record.value.as_deref(),
        headers,
        decoded: Decoded::default(),
    };
    let mut out = Vec::new();
    write_envelope(&mut out, &message);
    let text = String::from_utf8(out).expect("an envelope is UTF-8");
    let back = read_envelope(&text).expect("a written envelope reads back");
    assert_eq!(back.key, record.key);
    assert_eq!(back.value, record.value);
    assert_eq!(back.headers, record.headers);
    assert_eq!(back.timestamp, record.timestamp);
});
