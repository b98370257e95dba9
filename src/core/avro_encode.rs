//! JSON to Avro binary: the inverse of `avro.rs`'s JSON, so that what a decode writes encodes
//! back to the same bytes (bare unions take the first branch that fits, decimals their exact
//! string at the schema's scale, instants their RFC 3339 text, bytes their base64).

use apache_avro::schema::{InnerDecimalSchema, Schema, UuidSchema};
use base64::Engine as _;
use serde_json::Value;

use super::avro_resolve::{named_types, Types};
// An Avro long is a zig-zag varint, as the wire format's message indexes are.
use super::framing::write_zigzag as write_long;

/// A schema to encode JSON records with.
#[derive(Clone, Debug)]
pub struct AvroEncoder {
    schema: Schema,
    /// Named types by full name, for references.
    names: Types,
}

type Result<T> = std::result::Result<T, String>;

impl AvroEncoder {
    pub fn new(schema: Schema, named: Vec<Schema>) -> AvroEncoder {
        let mut names = Types::new();
        for s in named.iter().chain([&schema]) {
            named_types(s, None, &mut names);
        }
        AvroEncoder { schema, names }
    }

    /// Appends the Avro binary of the JSON text `json` to `out`; why it does not fit, with
    /// the field, if it does not.
    pub fn encode(&self, json: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let value: Value = serde_json::from_slice(json).map_err(|e| format!("not JSON: {e}"))?;
        self.write(&self.schema, None, &value, out)
    }

    fn write(&self, s: &Schema, ns: Option<&str>, v: &Value, out: &mut Vec<u8>) -> Result<()> {
        let mismatch = || format!("{} where the schema has {}", kind(v), short(s));
        match s {
            Schema::Ref { name } => {
                let (def, def_ns) = (self.names.get(&name.fullname(ns)))
                    .ok_or_else(|| format!("an undefined type {}", name.fullname(ns)))?;
                self.write(def, def_ns.as_deref(), v, out)
            }
            Schema::Enum(e) => {
                let symbol = v.as_str().ok_or_else(mismatch)?;
                let i = (e.symbols.iter().position(|s| s == symbol))
                    .ok_or_else(|| format!("'{symbol}' is no symbol of {}", e.name.name()))?;
                write_long(out, i as i64);
                Ok(())
            }
            Schema::Array(a) => {
                let items = v.as_array().ok_or_else(mismatch)?;
                if !items.is_empty() {
                    write_long(out, items.len() as i64);
                    for (i, item) in items.iter().enumerate() {
                        self.write(&a.items, ns, item, out)
                            .map_err(|e| format!("[{i}]: {e}"))?;
                    }
                }
                write_long(out, 0);
                Ok(())
            }
            Schema::Map(m) => {
                let entries = v.as_object().ok_or_else(mismatch)?;
                if !entries.is_empty() {
                    write_long(out, entries.len() as i64);
                    for (k, item) in entries {
                        write_bytes(out, k.as_bytes());
                        self.write(&m.types, ns, item, out)
                            .map_err(|e| format!("{k}: {e}"))?;
                    }
                }
                write_long(out, 0);
                Ok(())
            }
            Schema::Union(u) => self.write_union(u.variants(), ns, v, out),
            Schema::Record(r) => {
                let fields = v.as_object().ok_or_else(mismatch)?;
                let inner = r.name.namespace().or(ns);
                for f in &r.fields {
                    let value = fields.get(&f.name).or(f.default.as_ref()).ok_or_else(|| {
                        format!("field {}: missing, and the schema gives no default", f.name)
                    })?;
                    let written = self.write(&f.schema, inner, value, out);
                    written.map_err(|e| format!("field {}: {e}", f.name))?;
                }
                Ok(())
            }
            scalar => self.write_scalar(scalar, v, out),
        }
    }

    /// A type that holds no others.
    fn write_scalar(&self, s: &Schema, v: &Value, out: &mut Vec<u8>) -> Result<()> {
        let mismatch = || format!("{} where the schema has {}", kind(v), short(s));
        match s {
            Schema::Null => return v.is_null().then_some(()).ok_or_else(mismatch),
            Schema::Boolean => out.push(u8::from(v.as_bool().ok_or_else(mismatch)?)),
            Schema::Int => {
                let i = v.as_i64().and_then(|i| i32::try_from(i).ok());
                write_long(out, i64::from(i.ok_or_else(mismatch)?));
            }
            Schema::Long => write_long(out, v.as_i64().ok_or_else(mismatch)?),
            Schema::Float => {
                out.extend_from_slice(&(float(v).ok_or_else(mismatch)? as f32).to_le_bytes())
            }
            Schema::Double => out.extend_from_slice(&float(v).ok_or_else(mismatch)?.to_le_bytes()),
            Schema::String | Schema::Uuid(UuidSchema::String) => {
                write_bytes(out, v.as_str().ok_or_else(mismatch)?.as_bytes())
            }
            Schema::Bytes | Schema::BigDecimal | Schema::Uuid(UuidSchema::Bytes) => {
                write_bytes(out, &base64(v).ok_or_else(mismatch)?)
            }
            Schema::Fixed(f) | Schema::Duration(f) => {
                let b = base64(v).ok_or_else(mismatch)?;
                if b.len() != f.size {
                    let name = f.name.name();
                    return Err(format!(
                        "{} bytes where the fixed {name} has {}",
                        b.len(),
                        f.size
                    ));
                }
                out.extend_from_slice(&b);
            }
            logical => return self.write_logical(logical, v, out),
        }
        Ok(())
    }

    /// The first branch the value fits, as a decode writes unions bare.
    fn write_union(
        &self,
        branches: &[Schema],
        ns: Option<&str>,
        v: &Value,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let mark = out.len();
        for (i, b) in branches.iter().enumerate() {
            write_long(out, i as i64);
            if self.write(b, ns, v, out).is_ok() {
                return Ok(());
            }
            out.truncate(mark);
        }
        Err(format!("{} fits no branch of the union", kind(v)))
    }

    fn write_logical(&self, s: &Schema, v: &Value, out: &mut Vec<u8>) -> Result<()> {
        let text = || {
            v.as_str()
                .ok_or_else(|| format!("{} where the schema has {}", kind(v), short(s)))
        };
        match s {
            Schema::Decimal(d) => {
                let unscaled = unscaled(text()?, d.scale)?;
                match &d.inner {
                    InnerDecimalSchema::Bytes => write_bytes(out, &minimal_bytes(unscaled)),
                    InnerDecimalSchema::Fixed(f) => {
                        let full = unscaled.to_be_bytes();
                        let b = &full[16usize
                            .checked_sub(f.size)
                            .ok_or("a decimal fixed over 16 bytes")?..];
                        if i128::from_be_bytes(sign_extend(b)) != unscaled {
                            return Err(format!("{} does not fit {} bytes", text()?, f.size));
                        }
                        out.extend_from_slice(b);
                    }
                }
                Ok(())
            }
            Schema::Uuid(UuidSchema::Fixed(_)) => {
                let hex: String = text()?.chars().filter(|c| *c != '-').collect();
                let b = (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("x"), 16));
                let b: std::result::Result<Vec<u8>, _> = b.collect();
                match b {
                    Ok(b) if b.len() == 16 => out.extend_from_slice(&b),
                    _ => return Err(format!("'{}' is no UUID", text()?)),
                }
                Ok(())
            }
            Schema::Date => write_days(out, text()?),
            Schema::TimeMillis | Schema::TimeMicros => {
                let micros = time_of_day_micros(text()?)?;
                write_long(
                    out,
                    if *s == Schema::TimeMillis {
                        micros / 1000
                    } else {
                        micros
                    },
                );
                Ok(())
            }
            instant => {
                let nanos = match v.as_i64() {
                    Some(n) => {
                        write_long(out, n);
                        return Ok(());
                    }
                    None => instant_nanos(text()?)?,
                };
                let units = match instant {
                    Schema::TimestampMillis | Schema::LocalTimestampMillis => {
                        nanos.div_euclid(1_000_000)
                    }
                    Schema::TimestampMicros | Schema::LocalTimestampMicros => {
                        nanos.div_euclid(1000)
                    }
                    Schema::TimestampNanos | Schema::LocalTimestampNanos => nanos,
                    other => return Err(format!("an Avro type weir does not encode: {other:?}")),
                };
                write_long(
                    out,
                    i64::try_from(units).map_err(|_| "an instant out of range".to_string())?,
                );
                Ok(())
            }
        }
    }
}

fn write_bytes(out: &mut Vec<u8>, b: &[u8]) {
    write_long(out, b.len() as i64);
    out.extend_from_slice(b);
}

fn float(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

fn base64(v: &Value) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(v.as_str()?)
        .ok()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn short(s: &Schema) -> String {
    let text = format!("{:?}", apache_avro::schema::SchemaKind::from(s));
    text.to_lowercase()
}

/// `"12.50"` at scale 2 as 1250; more fraction digits than the scale is an error.
fn unscaled(text: &str, scale: usize) -> Result<i128> {
    let bad = || format!("'{text}' is no decimal of scale {scale}");
    let (negative, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty()
        || fraction.len() > scale
        || !(whole.chars().chain(fraction.chars())).all(|c| c.is_ascii_digit())
    {
        return Err(bad());
    }
    let padded = format!("{whole}{fraction:0<scale$}");
    let n: i128 = padded.parse().map_err(|_| bad())?;
    Ok(if negative { -n } else { n })
}

/// The shortest big-endian two's complement of `n` (as Java's `BigInteger.toByteArray`).
fn minimal_bytes(n: i128) -> Vec<u8> {
    let full = n.to_be_bytes();
    let mut start = 0;
    while start < 15 {
        let (b, next) = (full[start], full[start + 1]);
        if (b == 0 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    full[start..].to_vec()
}

fn sign_extend(b: &[u8]) -> [u8; 16] {
    let fill = if b.first().is_some_and(|x| x & 0x80 != 0) {
        0xff
    } else {
        0
    };
    let mut full = [fill; 16];
    full[16 - b.len()..].copy_from_slice(b);
    full
}

fn write_days(out: &mut Vec<u8>, text: &str) -> Result<()> {
    let date = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .map_err(|_| format!("'{text}' is no date (YYYY-MM-DD)"))?;
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).expect("a date");
    write_long(out, (date - epoch).num_days());
    Ok(())
}

fn time_of_day_micros(text: &str) -> Result<i64> {
    let t = chrono::NaiveTime::parse_from_str(text, "%H:%M:%S%.f")
        .map_err(|_| format!("'{text}' is no time of day"))?;
    let since = t - chrono::NaiveTime::MIN;
    since
        .num_microseconds()
        .ok_or_else(|| format!("'{text}' is out of range"))
}

/// An RFC 3339 instant (or one without an offset, for local timestamps) in nanoseconds.
fn instant_nanos(text: &str) -> Result<i128> {
    let parsed = chrono::DateTime::parse_from_rfc3339(text)
        .map(|d| d.naive_utc())
        .or_else(|_| chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f"))
        .map_err(|_| format!("'{text}' is no RFC 3339 instant"))?;
    let utc = parsed.and_utc();
    Ok(i128::from(utc.timestamp()) * 1_000_000_000 + i128::from(utc.timestamp_subsec_nanos()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_and_longs_encode_as_java_does() {
        assert_eq!(minimal_bytes(1250), vec![0x04, 0xe2]);
        assert_eq!(minimal_bytes(-5), vec![0xfb]);
        assert_eq!(minimal_bytes(0), vec![0]);
        assert_eq!(minimal_bytes(128), vec![0, 0x80]);
        assert_eq!(unscaled("12.5", 2), Ok(1250));
        assert_eq!(unscaled("-0.05", 2), Ok(-5));
        assert!(unscaled("1.234", 2).is_err() && unscaled("1e3", 2).is_err());
        let mut out = Vec::new();
        write_long(&mut out, -1);
        write_long(&mut out, 64);
        assert_eq!(out, vec![1, 0x80, 1]);
    }
}
