//! Decoding a JSON array (or null) into a `Vec` of exactly its length.
//!
//! A JSON array has no length hint, so serde grows a `Vec` by doubling (room
//! for 4, 8, 16, … each a new allocation and a copy) and a cached object
//! would keep the spare room; shrinking it afterwards frees the tail of the
//! chunk in place, a hole between live objects. Cached EndpointSlices and
//! Endpoints are decoded again on every change of their Service, so those
//! holes were most of the free chunks that made a long soak's heap creep.
//! Here the elements are collected in a buffer each thread keeps for the
//! type, then moved into one allocation of exactly the array's length: no
//! reallocation, no hole.
//!
//! Owns: the per-thread scratch buffers and the exact-size decode. Must
//! never: keep elements between decodes (a buffer is emptied before it is
//! put back, also on error) or keep a buffer larger than [`KEEP`] elements.

use serde::de::{Deserialize, Deserializer, SeqAccess, Visitor};
use std::marker::PhantomData;

/// Largest buffer (in elements) a thread keeps between decodes; a larger
/// one (a 1,000-address Endpoints subset) is freed after its decode.
pub(crate) const KEEP: usize = 256;

/// A type with a per-thread scratch buffer; see [`scratch!`].
pub(crate) trait Scratch: Sized + 'static {
    /// Run `f` with this thread's buffer (empty; a nested decode of the
    /// same type gets a new empty one).
    fn with_scratch<R>(f: impl FnOnce(&mut Vec<Self>) -> R) -> R;
}

/// Implement [`Scratch`] for each listed type with a thread-local buffer.
macro_rules! scratch {
    ($($t:ty),* $(,)?) => {$(
        impl $crate::model::exact_vec::Scratch for $t {
            fn with_scratch<R>(f: impl FnOnce(&mut Vec<Self>) -> R) -> R {
                thread_local! {
                    static BUF: std::cell::Cell<Vec<$t>> = const { std::cell::Cell::new(Vec::new()) };
                }
                let mut buf = BUF.take();
                let r = f(&mut buf);
                buf.clear();
                if buf.capacity() <= $crate::model::exact_vec::KEEP {
                    BUF.set(buf);
                }
                r
            }
        }
    )*};
}
pub(crate) use scratch;

/// Deserialize a possibly-null array into a `Vec` whose capacity is its
/// length.
pub(crate) fn null_default_vec<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Scratch,
{
    null_default_seq(d, take_exact)
}

/// The elements of `buf` moved into a `Vec` of exactly their number.
pub(crate) fn take_exact<T>(buf: &mut Vec<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(buf.len());
    out.append(buf);
    out
}

/// Deserialize a possibly-null array: its elements (none for null) are
/// collected in this thread's buffer and `finish` takes what it keeps.
pub(crate) fn null_default_seq<'de, D, T, R>(
    d: D,
    finish: impl FnOnce(&mut Vec<T>) -> R,
) -> Result<R, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Scratch,
{
    d.deserialize_option(OptSeq(finish, PhantomData))
}

struct OptSeq<F, T>(F, PhantomData<T>);

impl<'de, T, R, F> Visitor<'de> for OptSeq<F, T>
where
    T: Deserialize<'de> + Scratch,
    F: FnOnce(&mut Vec<T>) -> R,
{
    type Value = R;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array or null")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<R, E> {
        Ok((self.0)(&mut Vec::new()))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<R, E> {
        self.visit_none()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<R, D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<R, A::Error> {
        T::with_scratch(|buf| {
            while let Some(x) = seq.next_element()? {
                buf.push(x);
            }
            Ok((self.0)(buf))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Item(u32);
    scratch!(Item);

    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Nested {
        #[serde(deserialize_with = "null_default_vec")]
        inner: Vec<Nested>,
    }
    scratch!(Nested);

    fn items(json: &str) -> Result<Vec<Item>, serde_json::Error> {
        let mut d = serde_json::Deserializer::from_str(json);
        null_default_vec(&mut d)
    }

    #[test]
    fn arrays_and_null_decode_to_vecs_of_exactly_their_length() {
        for (json, want) in [
            ("null", vec![]),
            ("[]", vec![]),
            ("[7]", vec![Item(7)]),
            ("[1,2,3,4,5,6,7,8,9,10]", (1..=10).map(Item).collect()),
        ] {
            let v = items(json).expect(json);
            assert_eq!(v, want, "{json}");
            assert_eq!(v.capacity(), v.len(), "{json}");
        }
        let big: Vec<String> = (0..1000).map(|i| i.to_string()).collect();
        let v = items(&format!("[{}]", big.join(","))).expect("1,000");
        assert_eq!((v.len(), v.capacity()), (1000, 1000));
    }

    #[test]
    fn a_failed_decode_leaves_nothing_behind_for_the_next() {
        assert!(items("[1,2,\"x\"]").is_err());
        assert!(items("{}").is_err());
        assert_eq!(items("[3]").expect("after errors"), vec![Item(3)]);
        Item::with_scratch(|b| assert!(b.is_empty() && b.capacity() <= KEEP));
    }

    #[test]
    fn a_nested_array_of_the_same_type_gets_its_own_buffer() {
        let n: Nested = serde_json::from_str(
            r#"{"inner":[{"inner":[{"inner":null}]},{"inner":[]},{"inner":[{"inner":[]},{"inner":[]}]}]}"#,
        )
        .expect("nested");
        assert_eq!(n.inner.len(), 3);
        assert_eq!(n.inner[0].inner.len(), 1);
        assert_eq!(n.inner[2].inner.len(), 2);
    }
}
