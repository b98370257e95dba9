//! How operator state is written into a checkpoint: serde adapters for the values that have
//! no serde form of their own, and the one binary encoding (postcard) every command's state
//! uses.

use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use rust_decimal::Decimal;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Encodes a command's state.
pub fn encode<T: Serialize>(state: &T) -> Vec<u8> {
    postcard::to_stdvec(state).expect("state serialises to memory")
}

/// Decodes a command's state, or says what is wrong with it.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    postcard::from_bytes(bytes).map_err(|e| format!("the checkpoint's state cannot be read: {e}"))
}

/// A histogram in its V2 encoding.
pub fn encode_histogram(h: &Histogram<u64>) -> Vec<u8> {
    let mut out = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut out)
        .expect("a histogram serialises to memory");
    out
}

/// A histogram from its V2 encoding, able to grow again as later values need.
pub fn decode_histogram(bytes: &[u8]) -> Result<Histogram<u64>, String> {
    let saved: Histogram<u64> = Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(bytes))
        .map_err(|e| format!("a histogram in the checkpoint: {e:?}"))?;
    // A decoded histogram tracks values up to its largest so far only; added into a new
    // one, it grows again as the values do.
    let mut h = Histogram::new(3).expect("3 significant digits");
    h.add(&saved)
        .map_err(|e| format!("a histogram in the checkpoint: {e:?}"))?;
    Ok(h)
}

/// `#[serde(with = "saved::histogram")]` for a boxed histogram.
pub mod histogram {
    use super::*;
    use serde::{Deserialize, Serialize};

    pub fn serialize<S: serde::Serializer>(h: &Histogram<u64>, s: S) -> Result<S::Ok, S::Error> {
        encode_histogram(h).serialize(s)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Box<Histogram<u64>>, D::Error> {
        let bytes = Vec::<u8>::deserialize(d)?;
        decode_histogram(&bytes)
            .map(Box::new)
            .map_err(serde::de::Error::custom)
    }
}

/// `#[serde(with = "saved::decimal")]`: a decimal as its 16 bytes.
pub mod decimal {
    use super::*;
    use serde::Deserialize;

    pub fn serialize<S: serde::Serializer>(d: &Decimal, s: S) -> Result<S::Ok, S::Error> {
        d.serialize().serialize(s)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
        <[u8; 16]>::deserialize(d).map(Decimal::deserialize)
    }
}

/// `#[serde(with = "saved::option_decimal")]`.
pub mod option_decimal {
    use super::*;
    use serde::Deserialize;

    pub fn serialize<S: serde::Serializer>(d: &Option<Decimal>, s: S) -> Result<S::Ok, S::Error> {
        d.map(|d| d.serialize()).serialize(s)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Decimal>, D::Error> {
        Option::<[u8; 16]>::deserialize(d).map(|b| b.map(Decimal::deserialize))
    }
}
