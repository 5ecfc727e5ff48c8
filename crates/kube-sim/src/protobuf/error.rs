//! Why a protobuf body (or the compiled-in schema) could not be decoded.
//!
//! One [`ProtobufError`] for the wire reader, the schema-driven decoder and
//! the envelope; one [`SchemaError`] for `schema.txt`. Context (the message,
//! the field, the envelope) is added by wrapping, so the innermost reason
//! stays typed and reachable through [`std::error::Error::source`].

use std::fmt;

/// Why a protobuf body could not be decoded.
#[derive(Debug)]
pub enum ProtobufError {
    /// A varint ran past the end of its message (at byte offset `at`).
    TruncatedVarint {
        /// Byte offset where the varint was cut off.
        at: usize,
    },
    /// A varint had more than 10 bytes.
    VarintTooLong {
        /// Byte offset after the tenth byte.
        at: usize,
    },
    /// A field's declared length runs past the end of its message.
    PastEnd {
        /// The field's length in bytes.
        len: usize,
        /// Byte offset where the field starts.
        at: usize,
        /// Length of the enclosing message in bytes.
        message_len: usize,
    },
    /// A field key carried field number 0 or one beyond `u32`.
    FieldNumber(u64),
    /// A length-delimited field's length does not fit in `usize`.
    LengthTooLarge,
    /// A wire type other than varint, 64-bit, length-delimited or 32-bit.
    WireType {
        /// The wire type.
        wire_type: u64,
        /// The field it was found on.
        field: u32,
    },
    /// Messages nested deeper than the decoder accepts.
    TooDeep {
        /// Full name of the message that was too deep.
        message: String,
        /// The nesting limit.
        limit: usize,
    },
    /// A problem inside message `message` (not inside one of its fields).
    InMessage {
        /// Full name of the message.
        message: String,
        /// What went wrong.
        source: Box<ProtobufError>,
    },
    /// A problem inside one field of a message.
    InField {
        /// Short name of the message.
        message: String,
        /// Name of the field.
        field: String,
        /// Number of the field.
        number: u32,
        /// What went wrong.
        source: Box<ProtobufError>,
    },
    /// Packed doubles whose length is not a multiple of 8.
    PackedDoubles,
    /// A problem inside a map entry.
    MapEntry(Box<ProtobufError>),
    /// Expected a length-delimited value, got another wire type.
    NotLengthDelimited(&'static str),
    /// Expected a varint, got another wire type.
    NotVarint(&'static str),
    /// Expected a 64-bit value, got another wire type.
    NotFixed64(&'static str),
    /// A string field is not UTF-8.
    NotUtf8,
    /// A double is NaN or infinite (JSON has no such numbers).
    NotFinite,
    /// A `Quantity` with an empty string.
    EmptyQuantity,
    /// A `RawExtension` whose bytes are not JSON.
    EmbeddedJson(serde_json::Error),
    /// A field refers to a message the schema does not have.
    UnknownMessage(String),
    /// A `Time` or `MicroTime` outside the representable range.
    TimeRange(jiff::Error),
    /// The body does not start with `k8s\0`.
    NoMagic,
    /// A problem in the `runtime.Unknown` envelope.
    Envelope(Box<ProtobufError>),
    /// An envelope field that is not length-delimited.
    EnvelopeField {
        /// The field number.
        field: u32,
        /// The wire type it had.
        got: &'static str,
    },
    /// A string in the envelope is not UTF-8.
    EnvelopeUtf8,
    /// The envelope names a `contentEncoding` (kube-sim decodes none).
    ContentEncoding(String),
    /// No schema for the kind in that version.
    NoKindSchema {
        /// The kind.
        kind: String,
        /// The version.
        version: String,
    },
    /// A JSON DELETE body that is not JSON.
    Json(serde_json::Error),
    /// A DELETE body whose envelope names a kind other than DeleteOptions.
    NotDeleteOptions(String),
    /// The schema has no DeleteOptions message.
    NoDeleteOptionsSchema,
    /// The compiled-in schema does not parse.
    Schema(SchemaError),
}

impl fmt::Display for ProtobufError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ProtobufError as E;
        match self {
            E::TruncatedVarint { at } => write!(f, "truncated varint at byte {at}"),
            E::VarintTooLong { at } => write!(f, "varint longer than 10 bytes at byte {at}"),
            E::PastEnd {
                len,
                at,
                message_len,
            } => write!(
                f,
                "field of {len} bytes at byte {at} runs past the end of its message ({message_len} bytes)"
            ),
            E::FieldNumber(n) => write!(f, "invalid field number {n} in a field key"),
            E::LengthTooLarge => f.write_str("length does not fit in memory"),
            E::WireType { wire_type, field } => {
                write!(f, "unsupported wire type {wire_type} (field {field})")
            }
            E::TooDeep { message, limit } => {
                write!(f, "{message}: nested more than {limit} levels deep")
            }
            E::InMessage { message, source } => write!(f, "{message}: {source}"),
            E::InField {
                message,
                field,
                number,
                source,
            } => write!(f, "{message}.{field} (field {number}): {source}"),
            E::PackedDoubles => f.write_str("packed doubles are not a multiple of 8 bytes"),
            E::MapEntry(e) => write!(f, "map entry: {e}"),
            E::NotLengthDelimited(got) => {
                write!(f, "expected a length-delimited value, got {got}")
            }
            E::NotVarint(got) => write!(f, "expected a varint, got {got}"),
            E::NotFixed64(got) => write!(f, "expected a 64-bit value, got {got}"),
            E::NotUtf8 => f.write_str("string is not valid UTF-8"),
            E::NotFinite => f.write_str("double is not a finite number"),
            E::EmptyQuantity => f.write_str("quantity is empty"),
            E::EmbeddedJson(e) => write!(f, "embedded JSON: {e}"),
            E::UnknownMessage(name) => write!(f, "no schema for message {name}"),
            E::TimeRange(e) => write!(f, "time out of range: {e}"),
            E::NoMagic => f.write_str(
                "the body does not start with the Kubernetes protobuf magic \"k8s\\x00\"",
            ),
            E::Envelope(e) => write!(f, "runtime.Unknown envelope: {e}"),
            E::EnvelopeField { field, got } => write!(
                f,
                "runtime.Unknown envelope: field {field} is a {got}, not length-delimited"
            ),
            E::EnvelopeUtf8 => f.write_str("envelope string is not valid UTF-8"),
            E::ContentEncoding(c) => write!(
                f,
                "unsupported contentEncoding {c:?} in the runtime.Unknown envelope"
            ),
            E::NoKindSchema { kind, version } => write!(
                f,
                "kube-sim has no protobuf schema for {kind} in version {version:?}"
            ),
            E::Json(e) => write!(f, "{e}"),
            E::NotDeleteOptions(kind) => write!(f, "expected DeleteOptions, got {kind}"),
            E::NoDeleteOptionsSchema => {
                f.write_str("kube-sim has no protobuf schema for DeleteOptions")
            }
            E::Schema(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ProtobufError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        use ProtobufError as E;
        match self {
            E::InMessage { source, .. } | E::InField { source, .. } => Some(source.as_ref()),
            E::MapEntry(e) | E::Envelope(e) => Some(e.as_ref()),
            E::EmbeddedJson(e) | E::Json(e) => Some(e),
            E::TimeRange(e) => Some(e),
            E::Schema(e) => Some(e),
            _ => None,
        }
    }
}

impl From<SchemaError> for ProtobufError {
    fn from(e: SchemaError) -> Self {
        ProtobufError::Schema(e)
    }
}

/// Why `schema.txt` does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaError {
    /// A line that is not understood.
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: &'static str,
        /// The line as written.
        text: String,
    },
    /// A field refers to a message that is not defined.
    UnknownReference {
        /// The message holding the field.
        message: String,
        /// The name as written.
        name: String,
    },
    /// An alias of a message that is not defined.
    UnknownAlias {
        /// The alias.
        alias: String,
        /// The message it names.
        other: String,
    },
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaError::Line { line, reason, text } => {
                write!(f, "schema.txt line {line}: {reason}: {text:?}")
            }
            SchemaError::UnknownReference { message, name } => {
                write!(f, "schema.txt: {message} refers to unknown message {name}")
            }
            SchemaError::UnknownAlias { alias, other } => {
                write!(f, "schema.txt: alias {alias} of unknown {other}")
            }
        }
    }
}

impl std::error::Error for SchemaError {}
