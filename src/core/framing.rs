//! Confluent's wire format for schema-registry records: a magic byte 0, the schema id as a
//! 4-byte big-endian integer, then the payload (for Protobuf, message indexes first).

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
}
