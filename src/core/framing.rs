//! Confluent's wire format for schema-registry records: a magic byte 0, the schema id as a
//! 4-byte big-endian integer, then the payload (for Protobuf, message indexes first); and the
//! error a payload that does not decode gives, whatever its format.

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
