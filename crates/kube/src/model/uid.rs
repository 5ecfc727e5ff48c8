//! [`Uid`]: an object UID as the caches keep it in every `targetRef`. A
//! canonical UID (a lowercase 8-4-4-4-12 hex UUID, what the API server
//! assigns) is kept as its 16 bytes inline instead of a 36-byte heap
//! string: one allocation less per cached Endpoints address and per slice
//! endpoint (issue 13).
//!
//! Must never change a UID's text: any other string (upper case, no
//! dashes, made up by a test or another server) is kept verbatim, and a
//! canonical UUID prints back exactly as it was read. Ordering, equality
//! and hashing agree with those of the text.

use compact_str::CompactString;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;

/// An object UID: a canonical lowercase UUID as 16 bytes, anything else
/// as text (24 bytes inline either way).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Uid(Repr);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    /// A canonical lowercase UUID's 16 bytes.
    Uuid([u8; 16]),
    /// Anything else, verbatim (never a canonical UUID, so that equal
    /// texts always have equal representations).
    Text(CompactString),
}

/// Byte offsets of the dashes in a canonical UUID's text.
const DASHES: [usize; 4] = [8, 13, 18, 23];

/// Offsets of each byte's two hex digits in a canonical UUID's text
/// (8-4-4-4-12 digits between the [`DASHES`]). Both hot loops run over it
/// with a constant trip count, which the compiler unrolls with the
/// offsets folded in (no bounds checks).
const PAIRS: [usize; 16] = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];

/// Each byte's hex digit value, or 0xFF for anything but `0-9a-f`.
const HEX_VALUE: [u8; 256] = {
    let mut t = [0xFF; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// A canonical UUID text's 16 bytes. Hot (every `targetRef.uid` of every
/// Endpoints and slice watch event): one table look-up per digit and a
/// single validity test at the end.
fn parse_uuid(s: &str) -> Option<[u8; 16]> {
    let b: &[u8; 36] = s.as_bytes().try_into().ok()?;
    if DASHES.iter().any(|&i| b[i] != b'-') {
        return None;
    }
    let mut out = [0u8; 16];
    let mut bad = 0u8;
    let mut k = 0;
    while k < 16 {
        let p = PAIRS[k];
        let (hi, lo) = (
            HEX_VALUE[usize::from(b[p])],
            HEX_VALUE[usize::from(b[p + 1])],
        );
        bad |= hi | lo;
        out[k] = (hi << 4) | (lo & 15);
        k += 1;
    }
    (bad & 0xF0 == 0).then_some(out)
}

/// A UID's text, formatted on the stack when it is stored as bytes.
pub struct UidStr<'a>(UidStrRepr<'a>);

enum UidStrRepr<'a> {
    Buf([u8; 36]),
    Ref(&'a str),
}

impl<'a> From<&'a str> for UidStr<'a> {
    fn from(s: &'a str) -> UidStr<'a> {
        UidStr(UidStrRepr::Ref(s))
    }
}

impl From<UidStr<'_>> for Uid {
    fn from(s: UidStr<'_>) -> Uid {
        Uid::new(&s)
    }
}

impl UidStr<'_> {
    /// The text's bytes, without the UTF-8 check `Deref` makes.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            UidStrRepr::Buf(b) => b,
            UidStrRepr::Ref(s) => s.as_bytes(),
        }
    }
}

impl std::ops::Deref for UidStr<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        match &self.0 {
            // Only ever filled with ASCII hex digits and dashes.
            UidStrRepr::Buf(b) => std::str::from_utf8(b).unwrap_or_default(),
            UidStrRepr::Ref(s) => s,
        }
    }
}

impl Uid {
    /// The UID with this text.
    pub fn new(s: &str) -> Uid {
        match parse_uuid(s) {
            Some(b) => Uid(Repr::Uuid(b)),
            None => Uid(Repr::Text(s.into())),
        }
    }

    /// Whether the UID is empty (unset).
    pub fn is_empty(&self) -> bool {
        matches!(&self.0, Repr::Text(t) if t.is_empty())
    }

    /// The UID's text (formatted on the stack for a canonical UUID).
    pub fn as_str(&self) -> UidStr<'_> {
        match &self.0 {
            Repr::Uuid(b) => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let mut buf = [b'-'; 36];
                let mut k = 0;
                while k < 16 {
                    let p = PAIRS[k];
                    buf[p] = HEX[usize::from(b[k] >> 4)];
                    buf[p + 1] = HEX[usize::from(b[k] & 15)];
                    k += 1;
                }
                UidStr(UidStrRepr::Buf(buf))
            }
            Repr::Text(t) => UidStr(UidStrRepr::Ref(t)),
        }
    }

    /// Heap bytes owned (0 for a canonical UUID or a short text).
    pub fn heap_bytes(&self) -> usize {
        match &self.0 {
            Repr::Text(t) => super::meta::compact_heap(t),
            Repr::Uuid(_) => 0,
        }
    }
}

impl Default for Uid {
    fn default() -> Uid {
        Uid(Repr::Text(CompactString::default()))
    }
}

impl From<&str> for Uid {
    fn from(s: &str) -> Uid {
        Uid::new(s)
    }
}

impl From<&String> for Uid {
    fn from(s: &String) -> Uid {
        Uid::new(s)
    }
}

impl From<String> for Uid {
    fn from(s: String) -> Uid {
        Uid::new(&s)
    }
}

impl From<&CompactString> for Uid {
    fn from(s: &CompactString) -> Uid {
        Uid::new(s)
    }
}

impl PartialEq<str> for Uid {
    fn eq(&self, other: &str) -> bool {
        match &self.0 {
            Repr::Text(t) => t == other,
            Repr::Uuid(b) => parse_uuid(other).is_some_and(|o| o == *b),
        }
    }
}

impl PartialEq<&str> for Uid {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

impl Ord for Uid {
    /// The order of the texts (for two canonical UUIDs, byte order is
    /// that of their lowercase hex texts).
    fn cmp(&self, other: &Uid) -> Ordering {
        match (&self.0, &other.0) {
            (Repr::Uuid(a), Repr::Uuid(b)) => a.cmp(b),
            (Repr::Text(a), Repr::Text(b)) => a.as_str().cmp(b.as_str()),
            _ => (*self.as_str()).cmp(&*other.as_str()),
        }
    }
}

impl PartialOrd for Uid {
    fn partial_cmp(&self, other: &Uid) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_str())
    }
}

impl fmt::Debug for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.as_str(), f)
    }
}

impl Serialize for Uid {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.as_str())
    }
}

impl<'de> Deserialize<'de> for Uid {
    /// A string (read borrowed where the input allows); null as "".
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Uid, D::Error> {
        d.deserialize_option(super::intern::StrOrNull(Uid::new))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const U: &str = "6f1c2a7e-3b4d-4c5e-9f60-0123456789ab";

    #[test]
    fn canonical_uuids_are_16_bytes_inline_and_print_back_exactly() {
        assert_eq!(std::mem::size_of::<Uid>(), 24);
        let u = Uid::new(U);
        assert!(matches!(u.0, Repr::Uuid(_)));
        assert_eq!(u.heap_bytes(), 0);
        assert_eq!(&*u.as_str(), U);
        assert_eq!(u.to_string(), U);
        assert_eq!(format!("{u:?}"), format!("{U:?}"));
        assert!(u == U && !u.is_empty());
        assert_eq!(serde_json::to_string(&u).expect("json"), format!("\"{U}\""));
        let back: Uid = serde_json::from_str(&format!("\"{U}\"")).expect("uid");
        assert_eq!(back, u);
    }

    #[test]
    fn any_other_text_is_kept_verbatim() {
        for s in [
            "",
            "u",
            "uid1",
            "6F1C2A7E-3B4D-4C5E-9F60-0123456789AB",
            "6f1c2a7e3b4d4c5e9f600123456789ab",
            "6f1c2a7e-3b4d-4c5e-9f60-0123456789ag",
            "6f1c2a7e-3b4d-4c5e-9f60_0123456789ab",
            "6f1c2a7e-3b4d-4c5e-9f60-0123456789ab-and-then-some",
        ] {
            let u = Uid::new(s);
            assert!(matches!(u.0, Repr::Text(_)), "{s}");
            assert_eq!(&*u.as_str(), s);
            assert!(u == s);
            assert_eq!(u.is_empty(), s.is_empty());
            let json = serde_json::to_string(&u).expect("json");
            assert_eq!(json, serde_json::to_string(s).expect("json"));
            assert_eq!(serde_json::from_str::<Uid>(&json).expect("uid"), u);
        }
        assert_eq!(
            serde_json::from_str::<Uid>("null").expect("null"),
            Uid::default()
        );
        assert!(serde_json::from_str::<Uid>("3").is_err());
        assert!(Uid::new(U) != "6F1C2A7E-3B4D-4C5E-9F60-0123456789AB");
        assert!(Uid::new("x") != U);
    }

    #[test]
    fn parse_uuid_takes_exactly_lowercase_hex_and_dashes() {
        assert_eq!(
            parse_uuid(U),
            Some([
                0x6f, 0x1c, 0x2a, 0x7e, 0x3b, 0x4d, 0x4c, 0x5e, 0x9f, 0x60, 0x01, 0x23, 0x45, 0x67,
                0x89, 0xab
            ])
        );
        // PAIRS: the 32 digits, two by two, around the dashes.
        let mut digits: Vec<usize> = PAIRS.iter().flat_map(|&p| [p, p + 1]).collect();
        digits.extend(DASHES);
        digits.sort_unstable();
        assert_eq!(digits, (0..36).collect::<Vec<_>>());
        // Every byte value at every position: only 0-9a-f (or the dash in
        // a dash's place) keep it canonical.
        for pos in 0..36 {
            for c in 0..=255u8 {
                let mut t = U.as_bytes().to_vec();
                t[pos] = c;
                let Ok(t) = String::from_utf8(t) else {
                    continue;
                };
                let ok = if DASHES.contains(&pos) {
                    c == b'-'
                } else {
                    c.is_ascii_digit() || (b'a'..=b'f').contains(&c)
                };
                assert_eq!(parse_uuid(&t).is_some(), ok, "{t:?}");
                assert_eq!(&*Uid::new(&t).as_str(), t.as_str());
            }
        }
    }

    #[test]
    fn order_is_the_order_of_the_texts() {
        let texts = [
            "",
            "0",
            "00000000-0000-0000-0000-000000000000",
            "00000000-0000-0000-0000-00000000000a",
            "6f1c2a7e-3b4d-4c5e-9f60-0123456789ab",
            "6f1c2a7e-3b4d-4c5e-9f60-0123456789ab0",
            "6f1c2a7e-3b4d-4c5f-0000-000000000000",
            "A",
            "ffffffff-ffff-ffff-ffff-ffffffffffff",
            "g",
            "uid1",
        ];
        for a in texts {
            for b in texts {
                assert_eq!(Uid::new(a).cmp(&Uid::new(b)), a.cmp(b), "{a} vs {b}");
                assert_eq!(Uid::new(a) == Uid::new(b), a == b, "{a} vs {b}");
            }
        }
    }
}
