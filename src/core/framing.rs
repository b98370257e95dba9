//! Confluent's wire format for schema-registry records: a magic byte 0, the schema id as a
//! 4-byte big-endian integer, then the payload (for Protobuf, message indexes first); the AWS
//! Glue Schema Registry's: a header version byte 3, a compression byte (0 none, 5 zlib), the
//! schema version's 16-byte UUID, then the payload; and the error a payload that does not
//! decode gives, whatever its format.

/// Why a payload did not decode, and the field it was in (outermost first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    pub path: Vec<String>,
    pub reason: String,
}

impl DecodeError {
    pub(crate) fn new(reason: impl Into<String>) -> DecodeError {
        DecodeError {
            path: Vec::new(),
            reason: reason.into(),
        }
    }

    /// Puts the error inside the field whose `"name":` (JSON key and colon) this is.
    pub(crate) fn in_field(mut self, name_json: &[u8]) -> DecodeError {
        let name = serde_json::from_slice::<String>(&name_json[..name_json.len() - 1]);
        self.path.insert(0, name.unwrap_or_default());
        self
    }
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.path.is_empty() {
            true => write!(f, "{}", self.reason),
            false => write!(f, "field {}: {}", self.path.join("."), self.reason),
        }
    }
}

/// The schema id and payload of a framed key or value.
pub fn unframe(bytes: &[u8]) -> Result<(u32, &[u8]), String> {
    match bytes {
        [0, a, b, c, d, payload @ ..] => Ok((u32::from_be_bytes([*a, *b, *c, *d]), payload)),
        [0, ..] => Err(format!(
            "{} bytes: too short for the schema registry's framing (magic byte and schema id)",
            bytes.len()
        )),
        [magic, ..] => Err(format!(
            "magic byte 0x{magic:02x}: not in the schema registry's framing"
        )),
        [] => Err("no bytes: not in the schema registry's framing".into()),
    }
}

/// Glue's header version byte, and its compression bytes.
const GLUE_VERSION: u8 = 3;
const GLUE_PLAIN: u8 = 0;
const GLUE_ZLIB: u8 = 5;

/// Takes Glue-framed keys and values apart, inflating compressed payloads with one
/// decompressor and one buffer for every record: a fresh zlib stream per record cost five
/// times the Avro decode.
#[derive(Default)]
pub struct GlueUnframer {
    inflate: Option<flate2::Decompress>,
    inflated: Vec<u8>,
}

impl GlueUnframer {
    /// The schema version UUID and payload (inflated when it was compressed) of a key or
    /// value framed as Glue's serializers frame it.
    pub fn unframe<'a>(&'a mut self, bytes: &'a [u8]) -> Result<([u8; 16], &'a [u8]), String> {
        let (version, compression, uuid, payload) = match bytes {
            [v, c, rest @ ..] if rest.len() >= 16 => (*v, *c, &rest[..16], &rest[16..]),
            _ => {
                return Err(format!(
                "{} bytes: too short for Glue's framing (version, compression, schema version id)",
                bytes.len()
            ))
            }
        };
        if version != GLUE_VERSION {
            return Err(format!(
                "header version byte 0x{version:02x}: not in Glue's framing (3)"
            ));
        }
        let uuid: [u8; 16] = uuid.try_into().expect("16 bytes");
        match compression {
            GLUE_PLAIN => Ok((uuid, payload)),
            GLUE_ZLIB => self.inflate(payload).map(|inflated| (uuid, inflated)),
            other => Err(format!(
                "compression byte 0x{other:02x}: Glue knows 0 (none) and 5 (zlib)"
            )),
        }
    }

    /// `payload`'s zlib stream, inflated, up to `MAX_INFLATED` bytes.
    fn inflate(&mut self, mut payload: &[u8]) -> Result<&[u8], String> {
        let inflate = self
            .inflate
            .get_or_insert_with(|| flate2::Decompress::new(true));
        inflate.reset(true);
        self.inflated.clear();
        let broken = |e: String| format!("a zlib-compressed payload that does not inflate: {e}");
        loop {
            self.inflated.reserve(payload.len().max(64) * 2);
            let (read, written) = (inflate.total_in(), self.inflated.len());
            let status = inflate
                .decompress_vec(payload, &mut self.inflated, flate2::FlushDecompress::Finish)
                .map_err(|e| broken(e.to_string()))?;
            payload = &payload[(inflate.total_in() - read) as usize..];
            if status == flate2::Status::StreamEnd {
                return Ok(&self.inflated);
            }
            if self.inflated.len() as u64 > MAX_INFLATED {
                return Err(broken(format!("more than {MAX_INFLATED} bytes")));
            }
            if payload.is_empty() && self.inflated.len() == written {
                return Err(broken("the stream ends before its end".into()));
            }
        }
    }
}

/// The schema version UUID and payload of a Glue-framed key or value, as `GlueUnframer`
/// reads it, for one record alone.
pub fn unframe_glue(bytes: &[u8]) -> Result<([u8; 16], Vec<u8>), String> {
    let mut unframer = GlueUnframer::default();
    let (uuid, payload) = unframer.unframe(bytes)?;
    Ok((uuid, payload.to_vec()))
}

/// A bound on an inflated payload, so that a small record cannot ask for unbounded memory.
const MAX_INFLATED: u64 = 64 << 20;

/// Frames `payload` as Glue's serializers do, for schema version `uuid`, compressed with zlib
/// when asked.
pub fn frame_glue(uuid: &[u8; 16], payload: &[u8], zlib: bool) -> Vec<u8> {
    let mut out = glue_header(uuid, zlib).to_vec();
    if zlib {
        use std::io::Write;
        let mut z = flate2::write::ZlibEncoder::new(out, flate2::Compression::default());
        z.write_all(payload).expect("writing to memory");
        return z.finish().expect("writing to memory");
    }
    out.extend_from_slice(payload);
    out
}

/// The 18 bytes before a Glue-framed payload: header version, compression, schema version.
pub fn glue_header(uuid: &[u8; 16], zlib: bool) -> [u8; 18] {
    let mut header = [0u8; 18];
    header[0] = GLUE_VERSION;
    header[1] = if zlib { GLUE_ZLIB } else { GLUE_PLAIN };
    header[2..].copy_from_slice(uuid);
    header
}

/// A schema version UUID from its text (`uuid_text`'s spelling, either case).
pub fn parse_uuid(text: &str) -> Option<[u8; 16]> {
    let hex: Vec<u8> = text.bytes().filter(|&b| b != b'-').collect();
    let dashes = text.bytes().filter(|&b| b == b'-').count();
    if hex.len() != 32 || !(dashes == 0 || dashes == 4) {
        return None;
    }
    let mut uuid = [0u8; 16];
    for (i, pair) in hex.chunks(2).enumerate() {
        let pair = std::str::from_utf8(pair).ok()?;
        uuid[i] = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(uuid)
}

/// A schema version UUID as Glue's API spells it (8-4-4-4-12 lowercase hex).
pub fn uuid_text(uuid: &[u8; 16]) -> String {
    let hex: String = uuid.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Whether `bytes` look framed as Glue frames: its header version byte and room for the
/// compression byte and the schema version id.
pub fn looks_glue_framed(bytes: &[u8]) -> bool {
    bytes.len() >= 18 && bytes[0] == GLUE_VERSION
}

/// Whether `bytes` look framed: the magic byte and room for a schema id.
pub fn looks_framed(bytes: &[u8]) -> bool {
    bytes.len() >= 5 && bytes[0] == 0
}

/// A Protobuf payload's message indexes (after the schema id): a count, then that many
/// indexes, all zig-zag varints; a count of 0 stands for `[0]`, the file's first message.
pub fn message_indexes(payload: &[u8]) -> Result<(Vec<i32>, &[u8]), String> {
    let mut at = 0;
    let mut next = || -> Result<i64, String> {
        let mut value: u64 = 0;
        for shift in (0..70).step_by(7) {
            let byte = *payload
                .get(at)
                .ok_or("the message indexes end early (truncated)")?;
            at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok((value >> 1) as i64 ^ -((value & 1) as i64));
            }
        }
        Err("a message index longer than 10 bytes".into())
    };
    let count = next()?;
    if !(0..=100).contains(&count) {
        return Err(format!("a count of {count} message indexes"));
    }
    let mut indexes = Vec::with_capacity(count.max(1) as usize);
    for _ in 0..count {
        let i = next()?;
        indexes.push(i32::try_from(i).map_err(|_| format!("message index {i} out of range"))?);
    }
    if indexes.is_empty() {
        indexes.push(0);
    }
    Ok((indexes, &payload[at..]))
}

/// The framing a value written with schema `id` starts with; for Protobuf, its message
/// indexes (`[0]`, the file's first message, as the single byte 0, as Confluent writes it).
pub fn frame_prefix(id: u32, message_indexes: Option<&[i32]>) -> Vec<u8> {
    let mut out = vec![0];
    out.extend_from_slice(&id.to_be_bytes());
    match message_indexes {
        None => {}
        Some([0]) => out.push(0),
        Some(indexes) => {
            write_zigzag(&mut out, indexes.len() as i64);
            for &i in indexes {
                write_zigzag(&mut out, i64::from(i));
            }
        }
    }
    out
}

/// Appends `n` as a zig-zag varint.
pub(crate) fn write_zigzag(out: &mut Vec<u8>, n: i64) {
    let mut v = ((n << 1) ^ (n >> 63)) as u64;
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Glue's framing as AWS's own Python library (aws-glue-schema-registry 1.1.3) writes it
    /// (`scripts/peers/glue_frame.py`): plain and zlib-compressed, read back to the payload and
    /// the schema version id; ours frames plain bytes identically and zlib ones to the same
    /// payload.
    #[test]
    fn glue_framing_reads_what_the_reference_library_writes() {
        let hex = |s: &str| -> Vec<u8> {
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
                .collect()
        };
        let plain = hex("03000b5a3d3c9c1e4b7e8f4a2d6e1f0a9b7768656c6c6f20676c7565");
        let zlib = hex("03050b5a3d3c9c1e4b7e8f4a2d6e1f0a9b77789ccb48cdc9c95748cf294d0500156403e2");
        for framed in [&plain, &zlib] {
            let (uuid, payload) = unframe_glue(framed).unwrap();
            assert_eq!(uuid_text(&uuid), "0b5a3d3c-9c1e-4b7e-8f4a-2d6e1f0a9b77");
            assert_eq!(&payload[..], b"hello glue");
        }
        let (uuid, _) = unframe_glue(&plain).unwrap();
        assert_eq!(frame_glue(&uuid, b"hello glue", false), plain);
        assert_eq!(parse_uuid(&uuid_text(&uuid)), Some(uuid));
        let upper = uuid_text(&uuid).to_uppercase().replace('-', "");
        assert_eq!(parse_uuid(&upper), Some(uuid));
        for bad in [
            "",
            "0b5a3d3c-9c1e-4b7e-8f4a-2d6e1f0a9b7",
            "0b5a3d3c-9c1e-4b7e-8f4a-2d6e1f0a9bzz",
        ] {
            assert_eq!(parse_uuid(bad), None, "{bad}");
        }
        let ours = frame_glue(&uuid, b"hello glue", true);
        assert_eq!(&unframe_glue(&ours).unwrap().1[..], b"hello glue");
        assert!(unframe_glue(&[0, 0, 0, 0, 1])
            .unwrap_err()
            .contains("too short"));
        let mut confluent = plain.clone();
        confluent[0] = 0;
        assert!(unframe_glue(&confluent)
            .unwrap_err()
            .contains("header version"));
        let mut unknown = plain.clone();
        unknown[1] = 7;
        assert!(unframe_glue(&unknown)
            .unwrap_err()
            .contains("compression byte 0x07"));
        let mut broken = zlib.clone();
        broken.truncate(25);
        assert!(unframe_glue(&broken)
            .unwrap_err()
            .contains("does not inflate"));
    }

    /// One unframer, reused across records of every size, plain and compressed, broken ones
    /// among them, reads each as a fresh one would.
    #[test]
    fn a_reused_glue_unframer_reads_each_record_as_a_fresh_one() {
        let uuid = [7u8; 16];
        let mut reused = GlueUnframer::default();
        for n in [0usize, 1, 63, 64, 65, 1000, 100_000, 5] {
            let payload: Vec<u8> = (0..n).map(|i| (i * 31 % 251) as u8).collect();
            for zlib in [true, false] {
                let framed = frame_glue(&uuid, &payload, zlib);
                assert_eq!(
                    reused.unframe(&framed),
                    Ok((uuid, &payload[..])),
                    "{n} {zlib}"
                );
                let cut = &framed[..framed.len() - 3];
                if zlib {
                    assert!(reused
                        .unframe(cut)
                        .unwrap_err()
                        .contains("does not inflate"));
                }
            }
        }
    }

    #[test]
    fn frames_are_split_and_others_named() {
        assert_eq!(unframe(&[0, 0, 0, 1, 2, 9, 9]), Ok((258, &[9u8, 9][..])));
        assert_eq!(unframe(&[0, 0, 0, 0, 7]), Ok((7, &[][..])));
        assert!(unframe(b"{\"a\":1}")
            .unwrap_err()
            .contains("magic byte 0x7b"));
        assert!(unframe(&[0, 1]).unwrap_err().contains("2 bytes"));
        assert!(unframe(&[]).is_err());
        assert!(looks_framed(&[0, 0, 0, 0, 1]) && !looks_framed(b"m-42"));
    }

    #[test]
    fn message_indexes_are_zigzag_varints_and_zero_means_the_first() {
        assert_eq!(message_indexes(&[0, 9]), Ok((vec![0], &[9u8][..])));
        // [1, 2]: count 2, then 1 and 2, each zig-zag (doubled).
        assert_eq!(message_indexes(&[4, 2, 4, 7]), Ok((vec![1, 2], &[7u8][..])));
        assert!(message_indexes(&[4, 2]).unwrap_err().contains("truncated"));
        assert!(message_indexes(&[3]).unwrap_err().contains("count of -2"));
    }

    #[test]
    fn a_prefix_reads_back_as_its_id_and_indexes() {
        assert_eq!(frame_prefix(258, None), [0, 0, 0, 1, 2]);
        assert_eq!(frame_prefix(7, Some(&[0])), [0, 0, 0, 0, 7, 0]);
        for indexes in [vec![1], vec![0, 2], vec![3, 70, 0]] {
            let mut framed = frame_prefix(9, Some(&indexes));
            framed.push(42);
            let (id, payload) = unframe(&framed).unwrap();
            assert_eq!(id, 9);
            assert_eq!(message_indexes(payload), Ok((indexes, &[42u8][..])));
        }
    }
}
