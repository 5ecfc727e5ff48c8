//! Bounded decoding of non-watch response bodies (issue 17, items 1 and 8).
//!
//! Every body is read through a capped reader that fails once more than
//! `max_bytes` arrive, and a LIST page's `items` are counted while they are
//! decoded; the bytes read and the items' in-memory size are charged to one
//! process-wide pool ([`IN_FLIGHT`]) capped at `max_bytes` too, so a server that streams `{"items":[{},{},…` without end costs
//! at most the byte cap (plus the decoded items within it), never all the
//! memory of the machine. A body cut off mid-read (early EOF, read timeout,
//! reset) is a retryable transport error, not a decode error.
//!
//! A small body (up to 256 KiB) is read whole into a per-thread buffer and
//! a LIST page (up to 8 MiB) into its own mapping (`memory::PageBuf`), both
//! then parsed from the slice; anything larger is decoded while the rest
//! streams in, so no body is ever buffered beyond those sizes.
//!
//! Owns only the reading and the error classification; must never buffer a
//! body past those sizes and never retry.

use super::error::Error;
use serde::de::{DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use std::io::{self, BufReader, Read};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Default cap on one response body: far above the largest page a real API
/// server sends at `limit=500` (500 large pods are a few MiB), far below
/// what would hurt a small control-plane node.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 64 << 20;

/// The limits a body is read under, named by their config keys in errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BodyLimits {
    /// `kubernetes.max_response_bytes`.
    pub max_bytes: u64,
    /// Items one LIST page may carry (derived from `kubernetes.max_list_items`).
    pub max_items: usize,
}

impl Default for BodyLimits {
    fn default() -> BodyLimits {
        BodyLimits {
            max_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_items: DEFAULT_MAX_LIST_ITEMS,
        }
    }
}

/// Default bound on the objects of one LIST (all pages together): above
/// upstream's scalability limit of 150,000 pods per cluster.
pub const DEFAULT_MAX_LIST_ITEMS: usize = 200_000;

/// Memory held by response bodies being decoded right now, process-wide:
/// the bytes read so far plus the in-memory size of the items decoded so
/// far. Concurrent LISTs (one per informer) share `max_bytes` through it,
/// so six informers against a hostile server cannot hold six caps at once.
pub static IN_FLIGHT: AtomicU64 = AtomicU64::new(0);

/// What one body has charged to a shared in-flight pool; released when
/// the decoding ends (success or failure).
struct Charge<'a> {
    pool: &'a AtomicU64,
    cap: u64,
    charged: AtomicU64,
    over: AtomicBool,
}

impl<'a> Charge<'a> {
    fn new(pool: &'a AtomicU64, cap: u64) -> Charge<'a> {
        Charge {
            pool,
            cap,
            charged: AtomicU64::new(0),
            over: AtomicBool::new(false),
        }
    }

    /// Charge `n` bytes; false (and remembered) once the pool is over cap.
    fn charge(&self, n: u64) -> bool {
        self.charged.fetch_add(n, Ordering::SeqCst);
        let total = self.pool.fetch_add(n, Ordering::SeqCst).saturating_add(n);
        if total > self.cap {
            self.over.store(true, Ordering::SeqCst);
            return false;
        }
        true
    }

    fn is_over(&self) -> bool {
        self.over.load(Ordering::SeqCst)
    }
}

impl Drop for Charge<'_> {
    fn drop(&mut self) {
        self.pool
            .fetch_sub(self.charged.load(Ordering::SeqCst), Ordering::SeqCst);
    }
}

/// A reader that fails with an `Other` I/O error once more than `left`
/// bytes were read, or once the shared pool is over its cap.
struct CappedReader<'a, R> {
    inner: R,
    left: u64,
    charge: &'a Charge<'a>,
}

impl<'a, R: Read> CappedReader<'a, R> {
    /// Wrap `inner`; at most `max` bytes may be read.
    fn new(inner: R, max: u64, charge: &'a Charge<'a>) -> CappedReader<'a, R> {
        CappedReader {
            inner,
            left: max,
            charge,
        }
    }
}

impl<R: Read> Read for CappedReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let over = || io::Error::other("response body exceeds the size limit");
        if self.left == 0 {
            // One byte more than allowed tells "exactly at the cap" (fine)
            // from "over it".
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => {
                    self.charge.over.store(true, Ordering::SeqCst);
                    Err(over())
                }
            };
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        if !self.charge.charge(n as u64) {
            return Err(over());
        }
        Ok(n)
    }
}

/// Why decoding stopped early, recorded by the item-counting visitor.
#[derive(Default)]
struct Overflow(AtomicBool);

/// What a failed decode means: the cap → [`Error::TooLarge`]; an I/O error
/// or an early end of input → a retryable [`Error::Transport`]; anything
/// else → [`Error::Decode`].
fn classify(
    e: serde_json::Error,
    what: &str,
    server: &str,
    limits: &BodyLimits,
    bytes_exceeded: bool,
    items_exceeded: bool,
) -> Error {
    use serde_json::error::Category;
    let too_large = |limit: String| Error::TooLarge {
        what: what.to_string(),
        limit,
    };
    if bytes_exceeded {
        return too_large(format!(
            "{} bytes (kubernetes.max_response_bytes, shared by the responses being read at once)",
            limits.max_bytes
        ));
    }
    if items_exceeded {
        return too_large(format!(
            "{} items in one page (kubernetes.max_list_items)",
            limits.max_items
        ));
    }
    match e.classify() {
        Category::Io | Category::Eof => {
            let timeout = e
                .io_error_kind()
                .is_some_and(|k| matches!(k, io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock));
            Error::Transport {
                server: server.to_string(),
                timeout,
                unreachable: !timeout,
                cause: format!("response body of {what} cut off: {e}"),
            }
        }
        _ => Error::Decode {
            what: what.to_string(),
            detail: e.to_string(),
        },
    }
}

/// Decode one JSON object from `body` under `limits.max_bytes`, charging
/// the shared in-flight `pool` (normally [`IN_FLIGHT`]).
pub fn decode<T: DeserializeOwned, R: Read>(
    body: R,
    what: &str,
    server: &str,
    limits: &BodyLimits,
    pool: &AtomicU64,
) -> Result<T, Error> {
    decode_part(body, Part::Whole, what, server, limits, pool)
}

/// What of a response body to decode into `T`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The whole object.
    Whole,
    /// Only its top-level `metadata` (for `T` = `model::MetaOnly`): in a
    /// small body the `metadata` value is found by [`metadata_span`] and
    /// only it is parsed; what follows it (a write's echoed endpoints,
    /// about 44 k instructions per 2.5 KB slice through serde's skipping)
    /// is not read. Anything unexpected before it, or a span serde refuses,
    /// falls back to decoding the whole body (its error then is the one
    /// reported), so a body this accepts that [`Part::Whole`] would refuse
    /// can only be one whose flaw lies after a well-formed `metadata`
    /// (or repeats the key: the first is taken).
    Metadata,
}

/// [`decode`], decoding `part` of the body.
pub fn decode_part<T: DeserializeOwned, R: Read>(
    body: R,
    part: Part,
    what: &str,
    server: &str,
    limits: &BodyLimits,
    pool: &AtomicU64,
) -> Result<T, Error> {
    decode_inner(body, part, what, server, limits, pool, false).map(|(t, _)| t)
}

/// [`decode_part`], and the body's top-level `kind` (see [`top_level_kind`]:
/// looked for in the first 256 KiB only, where the API server writes it
/// first; `None` when not found there): a write's answer is checked
/// against what was written.
pub fn decode_answer<T: DeserializeOwned, R: Read>(
    body: R,
    part: Part,
    what: &str,
    server: &str,
    limits: &BodyLimits,
    pool: &AtomicU64,
) -> Result<(T, Option<String>), Error> {
    decode_inner(body, part, what, server, limits, pool, true)
}

fn decode_inner<T: DeserializeOwned, R: Read>(
    body: R,
    part: Part,
    what: &str,
    server: &str,
    limits: &BodyLimits,
    pool: &AtomicU64,
    want_kind: bool,
) -> Result<(T, Option<String>), Error> {
    let mut kind = None;
    let charge = Charge::new(pool, limits.max_bytes);
    let mut capped = CappedReader::new(body, limits.max_bytes, &charge);
    // A small body (every write response) is read whole and parsed from
    // the slice: a 64 KiB BufReader per response was one large heap
    // allocation per write (each made glibc consolidate its fast bins), and
    // parsing from a slice is faster. A larger one is streamed as before:
    // buffering it whole would hold the raw bytes beside what is decoded
    // (and a growing Vec briefly twice over) — a hostile endless body then
    // took endpointd past twice its body cap.
    // The buffer is the thread's own, kept between responses: a fresh 4 KiB
    // Vec per write was a "large" glibc request each time (one that first
    // consolidates the fast bins).
    let res = with_scratch(&SMALL_BODY, |buf| {
        let read = (&mut capped)
            .take(WHOLE_BODY_MAX as u64)
            .read_to_end(buf)
            .map_err(serde_json::Error::io);
        if want_kind && read.is_ok() {
            kind = top_level_kind(buf);
        }
        match read {
            Err(e) => Err(e),
            Ok(n) if n < WHOLE_BODY_MAX => match part {
                Part::Metadata => match metadata_only(buf) {
                    Some(t) => Ok(t),
                    None => from_json_bytes(buf),
                },
                Part::Whole => from_json_bytes(buf),
            },
            Ok(_) => {
                let rest = std::io::Cursor::new(std::mem::take(buf)).chain(&mut capped);
                serde_json::from_reader(BufReader::with_capacity(64 * 1024, rest))
            }
        }
    });
    res.map(|t| (t, kind))
        .map_err(|e| classify(e, what, server, limits, charge.is_over(), false))
}

/// The top-level `kind` string of the JSON object `body` (or of its first
/// bytes), when found before the body ends: `None` when absent, not a
/// string, or not where [`member_span`] can tell.
pub(crate) fn top_level_kind(body: &[u8]) -> Option<String> {
    string_member(body, b"kind")
}

/// The top-level member `key` of the JSON object `body`, when it is a
/// string (see [`member_span`]).
pub(crate) fn string_member(body: &[u8], key: &[u8]) -> Option<String> {
    let span = member_span(body, key)?;
    if span.first() != Some(&b'"') {
        return None;
    }
    serde_json::from_str(&json_text(span)).ok()
}

/// `T` decoded from `{"metadata":<the body's metadata value>}`, or
/// `None` (decode the whole body instead) when the span is not found or
/// does not decode.
fn metadata_only<T: DeserializeOwned>(body: &[u8]) -> Option<T> {
    let span = metadata_span(body)?;
    let mut wrapped = Vec::with_capacity(span.len() + 13);
    wrapped.extend_from_slice(b"{\"metadata\":");
    wrapped.extend_from_slice(span);
    wrapped.push(b'}');
    from_json_bytes(&wrapped).ok()
}

/// The UTF-8 text of a whole JSON body, checked once: serde_json's slice
/// reader checks every string on its own (867,000 `from_utf8` calls, 8 %
/// of a full-size cold start's instructions), its `str` reader trusts the
/// text. Invalid UTF-8 becomes U+FFFD, as Go's `encoding/json` decodes
/// it: a byte the API server would never send (it writes valid UTF-8) in
/// a field endpointd does not read must not fail a whole LIST page, and
/// serde_json's slice reader skipped unread strings unchecked. A body cut
/// off inside a character still ends in an end-of-input error.
pub(crate) fn json_text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    // `from_utf8` first: its ASCII fast path checks a word at a time,
    // `from_utf8_lossy` a byte at a time (78 M instructions per cold start).
    match std::str::from_utf8(bytes) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// `T` from a whole JSON body (see [`json_text`]).
pub(crate) fn from_json_bytes<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, serde_json::Error> {
    serde_json::from_str(&json_text(bytes))
}

/// The bytes of the top-level `"metadata"` value of the JSON object in
/// `body`, found by skipping the members before it without parsing them
/// (the API server writes `kind`, `apiVersion`, then `metadata`) and not
/// looking at anything after it. `None` when unsure: not an object, a key
/// with an escape, no `metadata`, nesting deeper than serde_json allows,
/// or anything else unexpected.
pub(crate) fn metadata_span(body: &[u8]) -> Option<&[u8]> {
    member_span(body, b"metadata")
}

/// The bytes of the top-level `wanted` member's value of the JSON object
/// in `body`, found as [`metadata_span`] finds `metadata` (members before
/// it skipped unparsed, nothing after it looked at); `None` when unsure.
pub(crate) fn member_span<'a>(body: &'a [u8], wanted: &[u8]) -> Option<&'a [u8]> {
    let mut i = skip_ws(body, 0);
    if body.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i = skip_ws(body, i);
        if body.get(i) != Some(&b'"') {
            return None;
        }
        let start = i + 1;
        let end = start
            + body
                .get(start..)?
                .iter()
                .position(|&b| b == b'"' || b == b'\\')?;
        if body[end] == b'\\' {
            return None;
        }
        let key = &body[start..end];
        i = skip_ws(body, end + 1);
        if body.get(i) != Some(&b':') {
            return None;
        }
        let value = skip_ws(body, i + 1);
        let after = skip_value(body, value)?;
        if key == wanted {
            return Some(&body[value..after]);
        }
        i = skip_ws(body, after);
        if body.get(i) != Some(&b',') {
            return None;
        }
        i += 1;
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// serde_json's own nesting limit.
const MAX_DEPTH: usize = 128;

/// The index just past the JSON value starting at `i`, skipped by its
/// delimiters only (strings with their escapes, brackets by depth).
fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match *b.get(j)? {
                    b'"' => {
                        j = skip_string(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => {
                        depth += 1;
                        if depth > MAX_DEPTH {
                            return None;
                        }
                    }
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let n = b[i..]
                .iter()
                .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))?;
            (n > 0).then_some(i + n)
        }
    }
}

/// The index just past the string starting (with its quote) at `i`.
fn skip_string(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        match *b.get(j)? {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
}

thread_local! {
    /// Per-thread buffer for small response bodies (see [`decode`]).
    static SMALL_BODY: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Per-thread buffer for serialised request bodies (see
    /// [`with_request_buffer`]).
    static REQUEST_BODY: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A kept buffer larger than this is dropped after use, so one large body
/// does not stay resident in every thread that once read or sent one.
const SCRATCH_KEEP: usize = 64 * 1024;

/// Run `f` with the thread's scratch buffer `key` (empty on entry), or a
/// fresh one if it is in use further up this thread's stack.
fn with_scratch<R>(
    key: &'static std::thread::LocalKey<std::cell::RefCell<Vec<u8>>>,
    f: impl FnOnce(&mut Vec<u8>) -> R,
) -> R {
    key.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            let r = f(&mut buf);
            if buf.capacity() > SCRATCH_KEEP {
                *buf = Vec::new();
            } else {
                buf.clear();
            }
            r
        }
        Err(_) => f(&mut Vec::new()),
    })
}

/// Run `f` with an empty per-thread buffer to serialise a request body
/// into (kept between requests: serialising into a fresh Vec grew it
/// through about ten reallocations per 2.5 KB object).
pub(crate) fn with_request_buffer<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    with_scratch(&REQUEST_BODY, f)
}

/// Bodies up to this size are read whole before parsing; larger ones are
/// parsed as they stream.
const WHOLE_BODY_MAX: usize = 256 * 1024;

/// A decoded LIST page.
#[derive(Debug)]
pub struct ListBody<T> {
    /// `items` (null → empty).
    pub items: Vec<T>,
    /// `metadata.resourceVersion`.
    pub resource_version: String,
    /// `metadata.continue`.
    pub continue_token: Option<String>,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ListMeta {
    resource_version: String,
    #[serde(rename = "continue")]
    continue_token: Option<String>,
}

/// Decode a LIST page from `body` under both limits, charging the bytes
/// read and the items' in-memory size to the shared in-flight `pool`.
pub fn decode_list<T: DeserializeOwned, R: Read>(
    body: R,
    what: &str,
    server: &str,
    limits: &BodyLimits,
    pool: &AtomicU64,
) -> Result<ListBody<T>, Error> {
    decode_page(body, what, server, limits, pool, WHOLE_PAGE_MAX)
}

/// [`decode_list`] with pages up to `page_max` bytes read whole.
fn decode_page<T: DeserializeOwned, R: Read>(
    body: R,
    what: &str,
    server: &str,
    limits: &BodyLimits,
    pool: &AtomicU64,
    page_max: usize,
) -> Result<ListBody<T>, Error> {
    let charge = Charge::new(pool, limits.max_bytes);
    let mut capped = CappedReader::new(body, limits.max_bytes, &charge);
    let overflow = Overflow::default();
    let seed = ListSeed::<T> {
        max_items: limits.max_items,
        overflow: &overflow,
        charge: &charge,
        _t: PhantomData,
    };
    // A page up to `page_max` is read whole and parsed from the slice:
    // strings are then scanned in place instead of being copied byte by
    // byte through a reader (the pods' LIST is on the cold-start critical
    // path; measured in the commit that made it so). The buffer is its own
    // mapping (see `memory::PageBuf`), kept by this thread while the LIST
    // goes on (the next page then writes over pages already resident
    // instead of faulting in fresh ones) and unmapped after its last page
    // or a failure. A larger page goes on streaming after what was read,
    // as before, so a hostile endless body still stops at the byte and
    // item caps.
    let kept = LIST_PAGE.with(|c| c.borrow_mut().take());
    let mut page = kept.or_else(|| crate::memory::PageBuf::new(page_max));
    let whole = match &mut page {
        Some(page) => {
            page.clear();
            page.fill(&mut capped)
        }
        // No mapping: stream it all.
        None => Ok(false),
    };
    // One streaming instantiation of every item type's decoder (the one
    // over checked text is shared with the watches and small bodies): the
    // binary and its resident text stay as they were.
    let res = match whole {
        Err(e) => Err(serde_json::Error::io(e)),
        Ok(true) => {
            let bytes = page.as_ref().map_or(&[][..], |p| p.as_slice());
            let text = json_text(bytes);
            let mut de = serde_json::Deserializer::from_str(&text);
            seed.deserialize(&mut de).and_then(|l| de.end().map(|()| l))
        }
        Ok(false) => {
            let head = page.as_ref().map_or(&[][..], |p| p.as_slice());
            let rest = std::io::Cursor::new(head).chain(&mut capped);
            let reader = BufReader::with_capacity(64 * 1024, rest);
            let mut de = serde_json::Deserializer::from_reader(reader);
            seed.deserialize(&mut de).and_then(|l| de.end().map(|()| l))
        }
    };
    let more = res.as_ref().is_ok_and(|l| l.continue_token.is_some());
    let whole = page.as_ref().is_some_and(|p| p.as_slice().len() < page_max);
    if more && whole {
        LIST_PAGE.with(|c| *c.borrow_mut() = page);
    }
    res.map_err(|e| {
        classify(
            e,
            what,
            server,
            limits,
            charge.is_over(),
            overflow.0.load(Ordering::SeqCst),
        )
    })
}

/// Unmap this thread's kept LIST page buffer: the LIST it was kept for
/// ended without reaching its last page (the next page's request failed,
/// e.g. an expired continue token), so no later page will release it.
pub fn release_list_page() {
    LIST_PAGE.with(|c| drop(c.borrow_mut().take()));
}

thread_local! {
    /// The LIST page buffer of this thread, between the pages of one LIST
    /// (see [`decode_list`]).
    static LIST_PAGE: std::cell::RefCell<Option<crate::memory::PageBuf>> =
        const { std::cell::RefCell::new(None) };
}

/// LIST pages up to this size are read whole before parsing (address
/// space only until written: see [`crate::memory::PageBuf`]); larger ones
/// are parsed as they stream. 500 real pods with managed fields are a few
/// MiB.
const WHOLE_PAGE_MAX: usize = 8 << 20;

struct ListSeed<'a, T> {
    max_items: usize,
    overflow: &'a Overflow,
    charge: &'a Charge<'a>,
    _t: PhantomData<fn() -> T>,
}

impl<'de, T: DeserializeOwned> DeserializeSeed<'de> for ListSeed<'_, T> {
    type Value = ListBody<T>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<ListBody<T>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, T: DeserializeOwned> Visitor<'de> for ListSeed<'_, T> {
    type Value = ListBody<T>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<ListBody<T>, A::Error> {
        let mut meta = ListMeta::default();
        let mut items = Vec::new();
        while let Some(k) = a.next_key::<String>()? {
            match k.as_str() {
                "metadata" => meta = a.next_value::<Option<ListMeta>>()?.unwrap_or_default(),
                "items" => {
                    items = a
                        .next_value_seed(ItemsSeed::<T> {
                            max_items: self.max_items,
                            overflow: self.overflow,
                            charge: self.charge,
                            _t: PhantomData,
                        })?
                        .unwrap_or_default()
                }
                _ => {
                    a.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(ListBody {
            items,
            resource_version: meta.resource_version,
            continue_token: meta.continue_token.filter(|c| !c.is_empty()),
        })
    }
}

/// `items`: null or an array of at most `max_items` objects.
struct ItemsSeed<'a, T> {
    max_items: usize,
    overflow: &'a Overflow,
    charge: &'a Charge<'a>,
    _t: PhantomData<fn() -> T>,
}

impl<'de, T: DeserializeOwned> DeserializeSeed<'de> for ItemsSeed<'_, T> {
    type Value = Option<Vec<T>>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Option<Vec<T>>, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de, T: DeserializeOwned> Visitor<'de> for ItemsSeed<'_, T> {
    type Value = Option<Vec<T>>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("null or an array of objects")
    }
    fn visit_none<E>(self) -> Result<Option<Vec<T>>, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Option<Vec<T>>, E> {
        Ok(None)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Option<Vec<T>>, D::Error> {
        d.deserialize_seq(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Option<Vec<T>>, A::Error> {
        let mut items = Vec::with_capacity(s.size_hint().unwrap_or(0).min(1024));
        // Twice the item's size: a growing Vec briefly holds its old and its
        // new buffer.
        let size = 2 * std::mem::size_of::<T>() as u64;
        while let Some(item) = s.next_element::<T>()? {
            if items.len() >= self.max_items {
                self.overflow.0.store(true, Ordering::SeqCst);
                return Err(serde::de::Error::custom("too many items"));
            }
            if !self.charge.charge(size) {
                return Err(serde::de::Error::custom(
                    "response body exceeds the size limit",
                ));
            }
            items.push(item);
        }
        Ok(Some(items))
    }
}

#[cfg(test)]
mod tests;
