//! The protobuf wire format, read side: a cursor over one message's bytes
//! yielding `(field number, value)` pairs (varint, 64-bit, length-delimited,
//! 32-bit), and the few encoders the OpenAPI v2 document needs.
//!
//! Owns only byte-level framing: it knows nothing of schemas or JSON, never
//! allocates more than the input holds and never panics on hostile input
//! (every malformed byte sequence is an `Err`).

use super::error::ProtobufError;

/// One field's value as it appears on the wire.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WireValue<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 2 (strings, bytes, embedded messages, packed repeated).
    Bytes(&'a [u8]),
    /// Wire type 5.
    Fixed32(u32),
}

impl WireValue<'_> {
    /// The wire type's name, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            WireValue::Varint(_) => "varint",
            WireValue::Fixed64(_) => "64-bit",
            WireValue::Bytes(_) => "length-delimited",
            WireValue::Fixed32(_) => "32-bit",
        }
    }
}

/// Iterates over the fields of one message.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader over one message's encoded bytes.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Whether every byte has been read.
    pub fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// Read a base-128 varint (at most 10 bytes).
    pub fn varint(&mut self) -> Result<u64, ProtobufError> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let b = *self
                .buf
                .get(self.pos)
                .ok_or(ProtobufError::TruncatedVarint { at: self.pos })?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(ProtobufError::VarintTooLong { at: self.pos })
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtobufError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.buf.len())
            .ok_or(ProtobufError::PastEnd {
                len: n,
                at: self.pos,
                message_len: self.buf.len(),
            })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    /// The next field, or `None` at the end of the message.
    pub fn next_field(&mut self) -> Result<Option<(u32, WireValue<'a>)>, ProtobufError> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = u32::try_from(key >> 3)
            .ok()
            .filter(|n| *n > 0)
            .ok_or(ProtobufError::FieldNumber(key >> 3))?;
        let value = match key & 7 {
            0 => WireValue::Varint(self.varint()?),
            1 => {
                let b = self.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                WireValue::Fixed64(u64::from_le_bytes(a))
            }
            2 => {
                let len =
                    usize::try_from(self.varint()?).map_err(|_| ProtobufError::LengthTooLarge)?;
                WireValue::Bytes(self.take(len)?)
            }
            5 => {
                let b = self.take(4)?;
                let mut a = [0u8; 4];
                a.copy_from_slice(b);
                WireValue::Fixed32(u32::from_le_bytes(a))
            }
            t => {
                return Err(ProtobufError::WireType {
                    wire_type: t,
                    field: number,
                })
            }
        };
        Ok(Some((number, value)))
    }
}

/// Append a varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Append a length-delimited field.
pub fn put_bytes(out: &mut Vec<u8>, field: u32, data: &[u8]) {
    put_varint(out, (u64::from(field) << 3) | 2);
    put_varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

/// Append a varint field.
pub fn put_uint(out: &mut Vec<u8>, field: u32, v: u64) {
    put_varint(out, u64::from(field) << 3);
    put_varint(out, v);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        let mut b = Vec::new();
        put_uint(&mut b, 3, 300);
        put_bytes(&mut b, 16, b"hi");
        b.extend_from_slice(&[0x0d, 1, 0, 0, 0]); // field 1, fixed32
        let mut r = Reader::new(&b);
        assert_eq!(
            r.next_field().map_err(|e| e.to_string()),
            Ok(Some((3, WireValue::Varint(300))))
        );
        assert_eq!(
            r.next_field().map_err(|e| e.to_string()),
            Ok(Some((16, WireValue::Bytes(b"hi"))))
        );
        assert_eq!(
            r.next_field().map_err(|e| e.to_string()),
            Ok(Some((1, WireValue::Fixed32(1))))
        );
        assert_eq!(r.next_field().map_err(|e| e.to_string()), Ok(None));
        for bad in [
            &[0x0a, 5, 1][..],
            &[0x08],
            &[0x0b],
            &[0x00, 0],
            &[
                0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1,
            ],
        ] {
            let mut r = Reader::new(bad);
            assert!(r.next_field().is_err(), "{bad:?}");
        }
    }
}
