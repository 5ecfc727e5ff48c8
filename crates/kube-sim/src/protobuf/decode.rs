//! Schema-driven decoding of one Kubernetes protobuf message into the JSON
//! the same object has in a JSON request.
//!
//! Owns the mapping of wire values to JSON values: Kubernetes' special types
//! (Time, MicroTime, Duration, IntOrString, Quantity, RawExtension) become
//! their JSON forms, and zero scalars that Go's `omitempty` would leave out
//! of JSON are dropped (kubectl's encoder writes every non-pointer scalar).
//! Fields the schema does not know are skipped, as Kubernetes' generated
//! decoders skip them. Never panics on input: every problem is an `Err`
//! naming the message and field.

use super::error::ProtobufError;
use super::schema::{Field, Message, Schema, Ty};
use super::wire::{Reader, WireValue};
use base64::Engine;
use serde_json::{Map, Number, Value};

/// Deepest nesting accepted (the schema's own depth is far below).
const MAX_DEPTH: usize = 64;

/// Go's zero `time.Time` as Unix seconds (year 1).
const GO_ZERO_SECONDS: i64 = -62_135_596_800;

/// Decode `buf` as message `msg` into a JSON object.
pub fn message(
    schema: &Schema,
    msg: &Message,
    buf: &[u8],
    depth: usize,
) -> Result<Map<String, Value>, ProtobufError> {
    if depth > MAX_DEPTH {
        return Err(ProtobufError::TooDeep {
            message: msg.name.clone(),
            limit: MAX_DEPTH,
        });
    }
    let mut out = Map::new();
    let mut r = Reader::new(buf);
    while let Some((number, wv)) = r.next_field().map_err(|e| ProtobufError::InMessage {
        message: msg.name.clone(),
        source: Box::new(e),
    })? {
        let Some(f) = msg.field(number) else {
            continue;
        };
        let ctx = |e: ProtobufError| ProtobufError::InField {
            message: short(&msg.name).to_string(),
            field: f.name.clone(),
            number,
            source: Box::new(e),
        };
        if f.map {
            let (k, v) = map_entry(schema, f, wv, depth).map_err(ctx)?;
            let m = out
                .entry(f.name.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(m) = m {
                m.insert(k, v);
            }
            continue;
        }
        let values = match f.repeated.then(|| packed(&f.ty, wv)).flatten() {
            Some(p) => p.map_err(ctx)?,
            None => vec![wv],
        };
        for v in values {
            let v = value(schema, &f.ty, v, depth).map_err(ctx)?;
            put(&mut out, f, v);
        }
    }
    Ok(out)
}

fn put(out: &mut Map<String, Value>, f: &Field, v: Value) {
    if f.inline {
        if let Value::Object(inner) = v {
            out.extend(inner);
        }
    } else if f.repeated {
        let a = out
            .entry(f.name.clone())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(a) = a {
            a.push(v);
        }
    } else if f.keep || !is_zero(&f.ty, &v) {
        out.insert(f.name.clone(), v);
    } else {
        out.remove(&f.name);
    }
}

/// What Go's `omitempty` drops: zero scalars (structs are never dropped).
fn is_zero(ty: &Ty, v: &Value) -> bool {
    match ty {
        Ty::String | Ty::Bytes => v.as_str() == Some(""),
        Ty::Bool => v == &Value::Bool(false),
        Ty::Int32 | Ty::Int64 | Ty::Double => v.as_f64() == Some(0.0),
        _ => false,
    }
}

fn short(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// Repeated numeric fields may come packed in one length-delimited value.
fn packed<'a>(ty: &Ty, wv: WireValue<'a>) -> Option<Result<Vec<WireValue<'a>>, ProtobufError>> {
    let WireValue::Bytes(b) = wv else {
        return None;
    };
    match ty {
        Ty::Double if b.len() % 8 == 0 => Some(Ok(b
            .chunks_exact(8)
            .map(|c| {
                let mut a = [0u8; 8];
                a.copy_from_slice(c);
                WireValue::Fixed64(u64::from_le_bytes(a))
            })
            .collect())),
        Ty::Double => Some(Err(ProtobufError::PackedDoubles)),
        Ty::Bool | Ty::Int32 | Ty::Int64 => {
            let mut r = Reader::new(b);
            let mut out = Vec::new();
            while !r.at_end() {
                match r.varint() {
                    Ok(v) => out.push(WireValue::Varint(v)),
                    Err(e) => return Some(Err(e)),
                }
            }
            Some(Ok(out))
        }
        _ => None,
    }
}

fn map_entry(
    schema: &Schema,
    f: &Field,
    wv: WireValue<'_>,
    depth: usize,
) -> Result<(String, Value), ProtobufError> {
    let b = bytes(wv)?;
    let mut r = Reader::new(b);
    let (mut key, mut val) = (String::new(), None);
    while let Some((n, v)) = r
        .next_field()
        .map_err(|e| ProtobufError::MapEntry(Box::new(e)))?
    {
        match n {
            1 => key = utf8(bytes(v)?)?,
            2 => val = Some(value(schema, &f.ty, v, depth)?),
            _ => {}
        }
    }
    let val = match val {
        Some(v) => v,
        None => value(schema, &f.ty, WireValue::Bytes(&[]), depth)
            .or_else(|_| value(schema, &f.ty, WireValue::Varint(0), depth))?,
    };
    Ok((key, val))
}

fn bytes<'a>(wv: WireValue<'a>) -> Result<&'a [u8], ProtobufError> {
    match wv {
        WireValue::Bytes(b) => Ok(b),
        o => Err(ProtobufError::NotLengthDelimited(o.kind())),
    }
}

fn varint(wv: WireValue<'_>) -> Result<u64, ProtobufError> {
    match wv {
        WireValue::Varint(v) => Ok(v),
        o => Err(ProtobufError::NotVarint(o.kind())),
    }
}

fn utf8(b: &[u8]) -> Result<String, ProtobufError> {
    String::from_utf8(b.to_vec()).map_err(|_| ProtobufError::NotUtf8)
}

/// Decode a small fixed message into (field number → first wire value).
fn fields(b: &[u8]) -> Result<Vec<(u32, WireValue<'_>)>, ProtobufError> {
    let mut r = Reader::new(b);
    let mut v = Vec::new();
    while let Some(f) = r.next_field()? {
        v.push(f);
    }
    Ok(v)
}

fn value(
    schema: &Schema,
    ty: &Ty,
    wv: WireValue<'_>,
    depth: usize,
) -> Result<Value, ProtobufError> {
    Ok(match ty {
        Ty::String => Value::String(utf8(bytes(wv)?)?),
        Ty::Bool => Value::Bool(varint(wv)? != 0),
        // Negative int32 values are sign-extended to 64 bits on the wire.
        Ty::Int32 => Value::from(i64::from(varint(wv)? as i64 as i32)),
        Ty::Int64 => Value::from(varint(wv)? as i64),
        Ty::Double => match wv {
            WireValue::Fixed64(b) => Number::from_f64(f64::from_bits(b))
                .map(Value::Number)
                .ok_or(ProtobufError::NotFinite)?,
            o => return Err(ProtobufError::NotFixed64(o.kind())),
        },
        Ty::Bytes => Value::String(base64::engine::general_purpose::STANDARD.encode(bytes(wv)?)),
        Ty::Time | Ty::MicroTime => time(bytes(wv)?, *ty == Ty::MicroTime)?,
        Ty::Duration => {
            let mut ns = 0i64;
            for (n, v) in fields(bytes(wv)?)? {
                if n == 1 {
                    ns = varint(v)? as i64;
                }
            }
            Value::String(go_duration(ns))
        }
        Ty::IntOrString => {
            let (mut kind, mut int, mut s) = (0u64, 0i64, String::new());
            for (n, v) in fields(bytes(wv)?)? {
                match n {
                    1 => kind = varint(v)?,
                    2 => int = i64::from(varint(v)? as i64 as i32),
                    3 => s = utf8(bytes(v)?)?,
                    _ => {}
                }
            }
            if kind == 1 {
                Value::String(s)
            } else {
                Value::from(int)
            }
        }
        Ty::Quantity => {
            let mut s = String::new();
            for (n, v) in fields(bytes(wv)?)? {
                if n == 1 {
                    s = utf8(bytes(v)?)?;
                }
            }
            if s.is_empty() {
                return Err(ProtobufError::EmptyQuantity);
            }
            Value::String(s)
        }
        Ty::Raw => {
            let mut raw: &[u8] = &[];
            for (n, v) in fields(bytes(wv)?)? {
                if n == 1 {
                    raw = bytes(v)?;
                }
            }
            if raw.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(raw).map_err(ProtobufError::EmbeddedJson)?
            }
        }
        Ty::Message(name) => {
            let m = schema
                .message(name)
                .ok_or_else(|| ProtobufError::UnknownMessage(name.clone()))?;
            Value::Object(message(schema, m, bytes(wv)?, depth + 1)?)
        }
    })
}

/// meta/v1 Time (seconds; nanos are dropped as upstream drops them) or
/// MicroTime (microseconds); Go's zero time is JSON null.
fn time(b: &[u8], micro: bool) -> Result<Value, ProtobufError> {
    if b.is_empty() {
        return Ok(Value::Null);
    }
    let (mut secs, mut nanos) = (0i64, 0i32);
    for (n, v) in fields(b)? {
        match n {
            1 => secs = varint(v)? as i64,
            2 => nanos = varint(v)? as i64 as i32,
            _ => {}
        }
    }
    if secs == GO_ZERO_SECONDS && nanos == 0 {
        return Ok(Value::Null);
    }
    let nanos = if micro { nanos } else { 0 };
    let ts = jiff::Timestamp::new(secs, nanos).map_err(ProtobufError::TimeRange)?;
    let base = ts.strftime("%Y-%m-%dT%H:%M:%S").to_string();
    Ok(Value::String(if micro {
        format!("{base}.{:06}Z", ts.subsec_nanosecond() / 1000)
    } else {
        format!("{base}Z")
    }))
}

/// Go's `time.Duration.String()`.
pub fn go_duration(ns: i64) -> String {
    fn frac(v: u64, div: u64) -> String {
        let (whole, rest) = (v / div, v % div);
        if rest == 0 {
            return whole.to_string();
        }
        let width = div.to_string().len() - 1;
        let f = format!("{rest:0width$}");
        format!("{whole}.{}", f.trim_end_matches('0'))
    }
    if ns == 0 {
        return "0s".into();
    }
    let u = ns.unsigned_abs();
    let s = if u < 1_000_000_000 {
        let (unit, div) = match u {
            0..1_000 => ("ns", 1),
            1_000..1_000_000 => ("µs", 1_000),
            _ => ("ms", 1_000_000),
        };
        format!("{}{unit}", frac(u, div))
    } else {
        let (h, rest) = (u / 3_600_000_000_000, u % 3_600_000_000_000);
        let (m, sec) = (rest / 60_000_000_000, rest % 60_000_000_000);
        let mut s = String::new();
        if h > 0 {
            s += &format!("{h}h");
        }
        if h > 0 || m > 0 {
            s += &format!("{m}m");
        }
        format!("{s}{}s", frac(sec, 1_000_000_000))
    };
    if ns < 0 {
        format!("-{s}")
    } else {
        s
    }
}
