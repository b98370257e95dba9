//! Avro to a JSON line: weir's streaming decoder against `apache-avro` (its datum reader into
//! a `Value`, then serde_json), on the same 10-field records in one run.
//!
//! The same datums framed as a registry frames them are decoded too: Confluent's (magic byte,
//! schema id) and AWS Glue's (header, schema version UUID; plain and zlib), each unframed by
//! `core::framing` first, as a read with `-r` does.
//!
//! Run: `cargo bench --bench avro` (or `WHAT=schemas scripts/bench.sh`).
//! Target: 2M records/s per core or more for weir, and the same for Glue-framed datums.

use std::time::Instant;

use apache_avro::types::Value;
use apache_avro::Schema;
use weir::core::avro::{AvroDecoder, AvroJson};
use weir::core::framing::{frame_glue, frame_prefix, unframe, GlueUnframer};

const RECORDS: usize = 1_000_000;

const SCHEMA: &str = r#"{"type":"record","name":"Checkout","fields":[
 {"name":"event_id","type":"string"},
 {"name":"occurred_at","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"merchant_id","type":"string"},
 {"name":"client","type":{"type":"enum","name":"Client","symbols":["web","ios","android","pos"]}},
 {"name":"partition","type":"int"},
 {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
 {"name":"currency","type":"string"},
 {"name":"status","type":"string"},
 {"name":"note","type":["null","string"]},
 {"name":"ratio","type":"double"}]}"#;

fn record(i: usize) -> Value {
    let cents = (i as i64 * 7919) % 50_000;
    Value::Record(vec![
        ("event_id".into(), Value::String(format!("evt-{i:012}"))),
        (
            "occurred_at".into(),
            Value::TimestampMillis(1_795_867_200_000 + i as i64 * 37),
        ),
        (
            "merchant_id".into(),
            Value::String(format!("m-{:05}", i % 5000)),
        ),
        (
            "client".into(),
            Value::Enum(
                (i % 4) as u32,
                ["web", "ios", "android", "pos"][i % 4].into(),
            ),
        ),
        ("partition".into(), Value::Int((i % 12) as i32)),
        (
            "amount".into(),
            Value::Decimal(apache_avro::Decimal::from(cents.to_be_bytes())),
        ),
        ("currency".into(), Value::String("EUR".into())),
        (
            "status".into(),
            Value::String(if i % 8 == 0 { "failed" } else { "paid" }.into()),
        ),
        (
            "note".into(),
            match i % 3 {
                0 => Value::Union(1, Box::new(Value::String("gift".into()))),
                _ => Value::Union(0, Box::new(Value::Null)),
            },
        ),
        ("ratio".into(), Value::Double(i as f64 / 1024.0)),
    ])
}

#[allow(deprecated)] // the datum functions are apache-avro's plainest path
fn main() {
    let schema = Schema::parse_str(SCHEMA).unwrap();
    let data: Vec<Vec<u8>> = (0..RECORDS)
        .map(|i| apache_avro::to_avro_datum(&schema, record(i)).unwrap())
        .collect();
    let bytes: usize = data.iter().map(Vec::len).sum();
    let decoder = AvroDecoder::new(&schema, &[], AvroJson::Weir).unwrap();
    let mut line = Vec::with_capacity(512);
    let (mut weir_s, mut peer_s) = (f64::MAX, f64::MAX);
    let mut sink = 0usize;
    // Three alternating rounds; the best of each.
    for _ in 0..3 {
        let t = Instant::now();
        for d in &data {
            line.clear();
            decoder.decode(d, &mut line).unwrap();
            line.push(b'\n');
            sink += line.len();
        }
        weir_s = weir_s.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        for d in &data {
            line.clear();
            let v = apache_avro::from_avro_datum(&schema, &mut &d[..], None).unwrap();
            let json = serde_json::Value::try_from(v).unwrap();
            serde_json::to_writer(&mut line, &json).unwrap();
            line.push(b'\n');
            sink += line.len();
        }
        peer_s = peer_s.min(t.elapsed().as_secs_f64());
    }
    let framed = framed_rounds(&data, &decoder);
    let rate = |s: f64| RECORDS as f64 / s / 1e6;
    println!(
        "{RECORDS} records of 10 fields, {:.0} bytes each on average ({sink} bytes written)",
        bytes as f64 / RECORDS as f64
    );
    println!(
        "weir        {:.3} s  {:.2}M records/s",
        weir_s,
        rate(weir_s)
    );
    println!(
        "apache-avro {:.3} s  {:.2}M records/s",
        peer_s,
        rate(peer_s)
    );
    println!("ratio       {:.1}x", peer_s / weir_s);
    for (name, s) in framed {
        println!("{name:<24} {s:.3} s  {:.2}M records/s", rate(s));
    }
}

/// The best of three rounds of decoding `data` framed each way, unframed first.
fn framed_rounds(data: &[Vec<u8>], decoder: &AvroDecoder) -> Vec<(&'static str, f64)> {
    let uuid = [0x5a; 16];
    let ways: [(&str, Vec<Vec<u8>>); 3] = [
        (
            "weir, Confluent-framed",
            data.iter()
                .map(|d| [frame_prefix(7, None), d.clone()].concat())
                .collect(),
        ),
        (
            "weir, Glue-framed",
            data.iter().map(|d| frame_glue(&uuid, d, false)).collect(),
        ),
        (
            "weir, Glue-framed zlib",
            data.iter().map(|d| frame_glue(&uuid, d, true)).collect(),
        ),
    ];
    let mut line = Vec::with_capacity(512);
    let mut glue = GlueUnframer::default();
    ways.into_iter()
        .map(|(name, framed)| {
            let mut best = f64::MAX;
            for _ in 0..3 {
                let t = Instant::now();
                for f in &framed {
                    line.clear();
                    match name.contains("Glue") {
                        true => decoder.decode(glue.unframe(f).unwrap().1, &mut line),
                        false => decoder.decode(unframe(f).unwrap().1, &mut line),
                    }
                    .unwrap();
                    line.push(b'\n');
                }
                best = best.min(t.elapsed().as_secs_f64());
            }
            (name, best)
        })
        .collect()
}
