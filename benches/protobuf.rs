//! Protobuf to a JSON line: weir's decoder against `prost-reflect` (decoding into a
//! `DynamicMessage`, then its serde JSON), on the same 10-field messages in one run.
//!
//! Run: `cargo bench --bench protobuf` (or `WHAT=schemas scripts/bench.sh`, which runs
//! both schema benchmarks).
//! Target: 1M records/s per core or more for weir.

use std::time::Instant;

use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, SerializeOptions};
use serde_json::json;
use weir::core::protobuf::ProtoDecoder;

const RECORDS: usize = 1_000_000;

const PROTO: &str = r#"syntax = "proto3";
package bench;
import "google/protobuf/timestamp.proto";
message Checkout {
  enum Client { WEB = 0; IOS = 1; ANDROID = 2; POS = 3; }
  string event_id = 1;
  google.protobuf.Timestamp occurred_at = 2;
  string merchant_id = 3;
  Client client = 4;
  int32 partition = 5;
  int64 amount_cents = 6;
  string currency = 7;
  string status = 8;
  optional string note = 9;
  double ratio = 10;
}
"#;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bench.proto"), PROTO).unwrap();
    let files = protox::compile(["bench.proto"], [dir.path()]).unwrap();
    let pool = DescriptorPool::from_file_descriptor_set(files).unwrap();
    let desc = pool.get_message_by_name("bench.Checkout").unwrap();
    let data: Vec<Vec<u8>> = (0..RECORDS)
        .map(|i| {
            let client = ["WEB", "IOS", "ANDROID", "POS"][i % 4];
            let mut m = json!({
                "event_id": format!("evt-{i:012}"),
                "occurred_at": "2026-11-28T12:00:01.234Z",
                "merchant_id": format!("m-{:05}", i % 5000),
                "client": client,
                "partition": i % 12,
                "amount_cents": ((i * 7919) % 50_000).to_string(),
                "currency": "EUR",
                "status": if i % 8 == 0 { "failed" } else { "paid" },
                "ratio": i as f64 / 1024.0,
            });
            if i % 3 == 0 {
                m["note"] = json!("gift");
            }
            DynamicMessage::deserialize(desc.clone(), m)
                .unwrap()
                .encode_to_vec()
        })
        .collect();
    let bytes: usize = data.iter().map(Vec::len).sum();
    let decoder = ProtoDecoder::new(&pool);
    let root = decoder.message("bench.Checkout").unwrap();
    let options = SerializeOptions::new()
        .use_proto_field_name(true)
        .skip_default_fields(false)
        .stringify_64_bit_integers(true);
    let mut line = Vec::with_capacity(512);
    let (mut weir_s, mut peer_s, mut sink) = (f64::MAX, f64::MAX, 0usize);
    // Three alternating rounds; the best of each.
    for _ in 0..3 {
        let t = Instant::now();
        for d in &data {
            line.clear();
            decoder.decode(root, d, &mut line).unwrap();
            line.push(b'\n');
            sink += line.len();
        }
        weir_s = weir_s.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        for d in &data {
            line.clear();
            let m = DynamicMessage::decode(desc.clone(), d.as_slice()).unwrap();
            let mut ser = serde_json::Serializer::new(&mut line);
            m.serialize_with_options(&mut ser, &options).unwrap();
            line.push(b'\n');
            sink += line.len();
        }
        peer_s = peer_s.min(t.elapsed().as_secs_f64());
    }
    let rate = |s: f64| RECORDS as f64 / s / 1e6;
    println!(
        "{RECORDS} messages of 10 fields, {:.0} bytes each on average ({sink} bytes written)",
        bytes as f64 / RECORDS as f64
    );
    println!(
        "weir          {weir_s:.3} s  {:.2}M records/s",
        rate(weir_s)
    );
    println!(
        "prost-reflect {peer_s:.3} s  {:.2}M records/s",
        rate(peer_s)
    );
    println!("ratio         {:.1}x", peer_s / weir_s);
}
