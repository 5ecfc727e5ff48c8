use super::*;
use crate::model::Pod;
use std::io::Cursor;
use std::sync::atomic::AtomicU64;

/// `{"items":[` + `n` small pods, never closed when `endless`.
struct PodStream {
    n: usize,
    i: usize,
    buf: Vec<u8>,
    pos: usize,
}

impl PodStream {
    fn endless() -> PodStream {
        PodStream {
            n: usize::MAX,
            i: 0,
            buf: br#"{"kind":"PodList","items":["#.to_vec(),
            pos: 0,
        }
    }
}

impl Read for PodStream {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.buf.len() {
            if self.i == self.n {
                return Ok(0);
            }
            let sep = if self.i == 0 { "" } else { "," };
            self.buf = format!(
                r#"{sep}{{"metadata":{{"name":"p{}","namespace":"x"}}}}"#,
                self.i
            )
            .into_bytes();
            self.pos = 0;
            self.i += 1;
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn limits(max_bytes: u64, max_items: usize) -> BodyLimits {
    BodyLimits {
        max_bytes,
        max_items,
    }
}

#[test]
fn an_endless_list_stops_at_the_item_cap_naming_the_key() {
    let e = decode_list::<Pod, _>(
        PodStream::endless(),
        "list pods",
        "s",
        &limits(1 << 30, 1000),
        &AtomicU64::new(0),
    )
    .expect_err("endless");
    assert!(matches!(e, Error::TooLarge { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("list pods") && msg.contains("1000 items"),
        "{msg}"
    );
    assert!(msg.contains("kubernetes.max_list_items"), "{msg}");
    assert!(!e.is_retryable());
}

#[test]
fn an_endless_list_stops_at_the_byte_cap_naming_the_key() {
    let e = decode_list::<Pod, _>(
        PodStream::endless(),
        "list pods",
        "s",
        &limits(1 << 16, 1 << 20),
        &AtomicU64::new(0),
    )
    .expect_err("endless");
    let msg = e.to_string();
    assert!(matches!(e, Error::TooLarge { .. }), "{e:?}");
    assert!(
        msg.contains("65536 bytes (kubernetes.max_response_bytes"),
        "{msg}"
    );
    // A plain object body is capped the same way.
    let e = decode::<serde_json::Value, _>(
        PodStream::endless(),
        "get pods/x",
        "s",
        &limits(1 << 16, 10),
        &AtomicU64::new(0),
    )
    .expect_err("endless");
    assert!(matches!(e, Error::TooLarge { .. }), "{e:?}");
}

#[test]
fn a_body_exactly_at_the_cap_is_fine() {
    // (No items: their in-memory size is charged to the pool as well.)
    let body = br#"{"metadata":{"resourceVersion":"7","continue":"c1"},"items":[]}"#;
    let l = decode_list::<Pod, _>(
        Cursor::new(&body[..]),
        "list pods",
        "s",
        &limits(body.len() as u64, 1),
        &AtomicU64::new(0),
    )
    .expect("at the cap");
    assert!(l.items.is_empty());
    assert_eq!(l.resource_version, "7");
    assert_eq!(l.continue_token.as_deref(), Some("c1"));
    let e = decode_list::<Pod, _>(
        Cursor::new(&body[..]),
        "list pods",
        "s",
        &limits(body.len() as u64 - 1, 1),
        &AtomicU64::new(0),
    )
    .expect_err("one byte over");
    assert!(matches!(e, Error::TooLarge { .. }), "{e:?}");
}

#[test]
fn null_items_empty_continue_and_unknown_fields() {
    let body = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"3","continue":""},"items":null,"extra":[1,{"a":2}]}"#;
    let l = decode_list::<Pod, _>(
        Cursor::new(&body[..]),
        "list pods",
        "s",
        &BodyLimits::default(),
        &AtomicU64::new(0),
    )
    .expect("decodes");
    assert!(l.items.is_empty());
    assert_eq!(l.resource_version, "3");
    assert_eq!(l.continue_token, None);
}

/// A reader that yields `data` and then fails like a reset or a timeout.
struct CutOff {
    data: Cursor<Vec<u8>>,
    then: Option<io::ErrorKind>,
}

impl Read for CutOff {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.data.read(out)?;
        match (n, self.then) {
            (0, Some(k)) => Err(io::Error::new(k, "peer went away")),
            _ => Ok(n),
        }
    }
}

#[test]
fn a_body_cut_off_mid_read_is_a_retryable_transport_error() {
    let half = br#"{"metadata":{"resourceVersion":"3"},"items":[{"metadata":{"name":"a"}},{"meta"#
        .to_vec();
    let cases = [
        (None, false),
        (Some(io::ErrorKind::TimedOut), true),
        (Some(io::ErrorKind::ConnectionReset), false),
    ];
    for (then, timeout) in cases {
        let r = CutOff {
            data: Cursor::new(half.clone()),
            then,
        };
        let e = decode_list::<Pod, _>(
            r,
            "list pods",
            "https://api:6443",
            &BodyLimits::default(),
            &AtomicU64::new(0),
        )
        .expect_err("cut off");
        match &e {
            Error::Transport {
                timeout: t, cause, ..
            } => {
                assert_eq!(*t, timeout, "{then:?}: {e}");
                assert!(cause.contains("list pods"), "{cause}");
            }
            other => panic!("{then:?}: want Transport, got {other:?}"),
        }
        assert!(e.is_retryable(), "{then:?}");
    }
    // Garbage stays a (non-retryable) decode error.
    let e = decode_list::<Pod, _>(
        Cursor::new(b"<html>".to_vec()),
        "list pods",
        "s",
        &BodyLimits::default(),
        &AtomicU64::new(0),
    )
    .expect_err("garbage");
    assert!(matches!(e, Error::Decode { .. }), "{e:?}");
}

#[test]
fn concurrent_bodies_share_one_pool_and_release_it() {
    let pool = AtomicU64::new(0);
    // Another body holds most of the pool: this one fails early.
    pool.fetch_add((1 << 16) - 100, Ordering::SeqCst);
    let body = br#"{"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}"#;
    let e = decode_list::<Pod, _>(
        Cursor::new(&body[..]),
        "list pods",
        "s",
        &limits(1 << 16, 10),
        &pool,
    )
    .expect_err("pool exhausted");
    assert!(matches!(e, Error::TooLarge { .. }), "{e:?}");
    assert!(
        e.to_string()
            .contains("shared by the responses being read at once"),
        "{e}"
    );
    assert_eq!(
        pool.load(Ordering::SeqCst),
        (1 << 16) - 100,
        "the failed body released its charge"
    );
    pool.fetch_sub((1 << 16) - 100, Ordering::SeqCst);
    let l = decode_list::<Pod, _>(
        Cursor::new(&body[..]),
        "list pods",
        "s",
        &limits(1 << 16, 10),
        &pool,
    )
    .expect("room again");
    assert_eq!(l.items.len(), 2);
    assert_eq!(pool.load(Ordering::SeqCst), 0, "released after success");
}

#[test]
fn small_bodies_are_read_whole_and_large_ones_streamed_alike() {
    // Either side of the whole-body size, the same object decodes, and a
    // body over the cap is refused on both paths.
    for pad in [10, WHOLE_BODY_MAX - 200, WHOLE_BODY_MAX, 3 * WHOLE_BODY_MAX] {
        let text = format!(
            r#"{{"metadata":{{"name":"p","namespace":"x","annotations":{{"a":"{}"}}}}}}"#,
            "z".repeat(pad)
        );
        let p: Pod = decode(
            Cursor::new(text.as_bytes()),
            "get pod",
            "s",
            &limits(text.len() as u64, 1),
            &AtomicU64::new(0),
        )
        .expect("decodes");
        assert_eq!(p.metadata.name.as_str(), "p", "pad {pad}");
        let e = decode::<Pod, _>(
            Cursor::new(text.as_bytes()),
            "get pod",
            "s",
            &limits(text.len() as u64 - 1, 1),
            &AtomicU64::new(0),
        )
        .expect_err("over the cap");
        assert!(matches!(e, Error::TooLarge { .. }), "pad {pad}: {e:?}");
    }
}

/// `n` small pods as a LIST page, with a continue token or without.
fn pod_page(n: usize, cont: Option<&str>) -> Vec<u8> {
    let items: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"metadata":{{"name":"p{i}","namespace":"x"}}}}"#))
        .collect();
    let cont = cont.map_or(String::new(), |c| format!(r#","continue":"{c}""#));
    format!(
        r#"{{"kind":"PodList","metadata":{{"resourceVersion":"9"{cont}}},"items":[{}]}}"#,
        items.join(",")
    )
    .into_bytes()
}

fn kept_page() -> bool {
    LIST_PAGE.with(|c| c.borrow().is_some())
}

#[test]
fn pages_read_whole_or_streamed_past_the_page_size_decode_alike() {
    let body = pod_page(200, Some("c"));
    for page_max in [1, 100, body.len() - 1, body.len(), body.len() + 1, 1 << 20] {
        let l = decode_page::<Pod, _>(
            Cursor::new(&body),
            "list pods",
            "s",
            &BodyLimits::default(),
            &AtomicU64::new(0),
            page_max,
        )
        .expect("decodes");
        assert_eq!(l.items.len(), 200, "{page_max}");
        assert_eq!(l.items[199].metadata.name.as_str(), "p199");
        assert_eq!(l.resource_version, "9");
        assert_eq!(l.continue_token.as_deref(), Some("c"));
        // Kept for the next page only if the page fitted.
        assert_eq!(kept_page(), page_max > body.len(), "{page_max}");
        LIST_PAGE.with(|c| *c.borrow_mut() = None);
        // The caps hold on both paths.
        let e = decode_page::<Pod, _>(
            Cursor::new(&body),
            "list pods",
            "s",
            &limits(body.len() as u64 - 1, 1000),
            &AtomicU64::new(0),
            page_max,
        )
        .expect_err("over the byte cap");
        assert!(matches!(e, Error::TooLarge { .. }), "{page_max}: {e:?}");
        let e = decode_page::<Pod, _>(
            Cursor::new(&body),
            "list pods",
            "s",
            &limits(1 << 30, 199),
            &AtomicU64::new(0),
            page_max,
        )
        .expect_err("over the item cap");
        assert!(e.to_string().contains("199 items"), "{page_max}: {e}");
        assert!(!kept_page(), "released after a failure");
    }
}

#[test]
fn the_page_buffer_is_kept_between_pages_and_released_after_the_last() {
    let pool = AtomicU64::new(0);
    let one = |body: Vec<u8>| {
        decode_list::<Pod, _>(
            Cursor::new(body),
            "list pods",
            "s",
            &BodyLimits::default(),
            &pool,
        )
    };
    assert!(!kept_page());
    let first = one(pod_page(300, Some("c1"))).expect("first");
    assert_eq!(first.items.len(), 300);
    assert!(kept_page(), "more pages follow");
    // A shorter page over the kept buffer: nothing of the longer one left.
    let second = one(pod_page(2, Some("c2"))).expect("second");
    assert_eq!(second.items.len(), 2);
    assert!(kept_page());
    assert!(one(b"{not json".to_vec()).is_err());
    assert!(!kept_page(), "released after a failure");
    one(pod_page(1, Some("c3"))).expect("again");
    let last = one(pod_page(3, None)).expect("last");
    assert_eq!(last.items.len(), 3);
    assert_eq!(last.continue_token, None);
    assert!(!kept_page(), "released after the last page");
    // A LIST abandoned between pages (its next request failed): the
    // client releases the buffer without another page.
    one(pod_page(1, Some("c4"))).expect("again");
    assert!(kept_page());
    release_list_page();
    assert!(!kept_page(), "released when the LIST is abandoned");
    assert_eq!(pool.load(Ordering::SeqCst), 0);
}

#[test]
fn metadata_span_finds_the_top_level_metadata_or_says_unsure() {
    let cases: &[(&str, Option<&str>)] = &[
        (
            r#"{"kind":"Endpoints","apiVersion":"v1","metadata":{"name":"a"},"subsets":[]}"#,
            Some(r#"{"name":"a"}"#),
        ),
        (
            " {\n \"metadata\" :\t{\"name\":\"}{\\\"\"} , \"x\":1}",
            Some(r#"{"name":"}{\""}"#),
        ),
        (
            r#"{"a":{"metadata":{"x":1}},"b":["metadata",{"c":[1,{"d":"]"}]}],"n":-1.5e3,"t":true,"z":null,"metadata":{"uid":"u"}}"#,
            Some(r#"{"uid":"u"}"#),
        ),
        (r#"{"metadata":null}"#, Some("null")),
        (r#"{"kind":"Status","code":200}"#, None),
        (r#"{}"#, None),
        (r#"[{"metadata":{}}]"#, None),
        (r#"{"meta\u0064ata":{"name":"a"}}"#, None),
        (r#"{"kind":"x" "metadata":{}}"#, None),
        (r#"{"kind":,"metadata":{}}"#, None),
        (r#"{"kind":"unterminated"#, None),
        (r#"{"metadata":{"name":"a""#, None),
        ("", None),
    ];
    for (body, want) in cases {
        let got = metadata_span(body.as_bytes()).map(|s| std::str::from_utf8(s).expect("utf-8"));
        assert_eq!(got, *want, "{body}");
    }
    let deep = format!(
        r#"{{"a":{}{},"metadata":{{}}}}"#,
        "[".repeat(129),
        "]".repeat(129)
    );
    assert_eq!(
        metadata_span(deep.as_bytes()),
        None,
        "deeper than serde_json allows"
    );
    let ok = format!(
        r#"{{"a":{}{},"metadata":{{}}}}"#,
        "[".repeat(128),
        "]".repeat(128)
    );
    assert_eq!(metadata_span(ok.as_bytes()), Some(&b"{}"[..]));
}

#[test]
fn a_metadata_only_decode_equals_the_whole_decode_and_falls_back_when_unsure() {
    use crate::model::MetaOnly;
    let pool = AtomicU64::new(0);
    let l = limits(1 << 20, 100);
    let dec = |body: &str, part: Part| {
        decode_part::<MetaOnly, _>(
            Cursor::new(body.as_bytes().to_vec()),
            part,
            "PUT x",
            "s",
            &l,
            &pool,
        )
    };
    for body in [
        r#"{"kind":"EndpointSlice","apiVersion":"discovery.k8s.io/v1","metadata":{"name":"s","namespace":"ns","uid":"6b1f7f4e-9d7c-4d0e-8a40-0f9d3c0c9a11","resourceVersion":"42","generation":3,"creationTimestamp":"2026-01-01T00:00:00Z","labels":{"a":"b"},"annotations":{"x":"y"},"ownerReferences":[{"apiVersion":"v1","kind":"Service","name":"s","uid":"u","controller":true,"blockOwnerDeletion":true}],"managedFields":[{"manager":"m"}],"finalizers":["f"]},"addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"]}],"ports":[]}"#,
        r#"{"apiVersion":"v1","kind":"Endpoints","subsets":[{"addresses":[{"ip":"10.0.0.1"}]}],"metadata":{"name":"e","resourceVersion":"7"}}"#,
        r#"{"metadata":null,"subsets":[]}"#,
        r#"{"kind":"Endpoints"}"#,
        r#"{"meta\u0064ata":{"name":"escaped","resourceVersion":"9"}}"#,
    ] {
        let fast = dec(body, Part::Metadata).expect(body);
        let whole = dec(body, Part::Whole).expect(body);
        assert_eq!(fast, whole, "{body}");
    }
    // A metadata value serde refuses: the whole body is decoded and its
    // error reported, as before.
    let bad = r#"{"metadata":{"name":1},"subsets":[]}"#;
    let (fast, whole) = (dec(bad, Part::Metadata), dec(bad, Part::Whole));
    assert_eq!(
        fast.expect_err("bad name").to_string(),
        whole.expect_err("bad name").to_string()
    );
    // A flaw after a good metadata is not read.
    let tail = r#"{"metadata":{"name":"a","resourceVersion":"5"},"subsets":[oops"#;
    assert!(dec(tail, Part::Whole).is_err());
    assert_eq!(
        dec(tail, Part::Metadata)
            .expect("metadata only")
            .metadata
            .resource_version(),
        "5"
    );
}

#[test]
fn json_text_reads_invalid_utf8_as_replacement_characters_and_a_cut_body_ends_early() {
    use serde_json::error::Category;
    assert_eq!(json_text("{\"a\":\"é\"}".as_bytes()), "{\"a\":\"é\"}");
    // Go's encoding/json decodes an invalid byte as U+FFFD; so do we.
    let v: serde_json::Value = from_json_bytes(b"{\"a\":\"x\xffy\"}").expect("lossy");
    assert_eq!(v["a"], "x\u{fffd}y");
    // An invalid byte in a field nobody reads does not fail the body
    // (serde_json's slice reader never checked unread strings either).
    let m: crate::model::MetaOnly =
        from_json_bytes(b"{\"metadata\":{\"name\":\"a\"},\"note\":\"\xc3\x28\"}").expect("unread");
    assert_eq!(m.metadata.name(), "a");
    // Cut inside the two-byte "é": still an end of input, as before.
    let cut = &"{\"a\":\"é\"}".as_bytes()[..7];
    let e = from_json_bytes::<serde_json::Value>(cut).expect_err("cut");
    assert_eq!(e.classify(), Category::Eof);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(cut)
            .expect_err("cut")
            .classify(),
        Category::Eof
    );
}
