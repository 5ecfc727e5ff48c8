//! LIST: selectors, `limit`/`continue` pagination over a consistent
//! snapshot, and the `resourceVersion`/`resourceVersionMatch` rules of
//! kube-apiserver (etcd-backed reads; `resourceVersion=0` served like the
//! watch cache, which ignores `limit`).
//!
//! Continue tokens are upstream's shape: base64 of
//! `{"v":"meta.k8s.io/v1","rv":N,"start":"<ns>/<name>\u0000"}`. Never writes.

use super::objects::bad_request;
use super::objects::Obj;
use super::resources::ResourceInfo;
use super::selector::Selectors;
use super::status::ApiError;
use super::store::{res_index, Key, Store, Txn};
use base64::Engine;
use endpointd_base::httpd::{Request, Response};
use serde_json::{json, Value};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Message of the 410 for an expired continue token (upstream, verbatim).
pub const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// Encode a continue token.
pub fn encode_continue(rv: u64, last: &Key) -> String {
    let start = if last.info().namespaced {
        format!("{}/{}\u{0}", last.namespace, last.name)
    } else {
        format!("{}\u{0}", last.name)
    };
    B64.encode(json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start}).to_string())
}

/// Decode a continue token into (list resourceVersion, key to resume after).
pub fn decode_continue(info: &ResourceInfo, token: &str) -> Result<(u64, Key), ApiError> {
    let bad = |why: &str| bad_request(format!("continue key is not valid: {why}"));
    let raw = B64.decode(token).map_err(|_| bad("not base64"))?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad("not JSON"))?;
    if v.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
        return Err(bad("unsupported version"));
    }
    let rv = v
        .get("rv")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("no rv"))?;
    let start = v
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("no start"))?;
    let start = start.trim_end_matches('\u{0}');
    let (ns, name) = match start.split_once('/') {
        Some((ns, name)) if info.namespaced => (ns, name),
        None if !info.namespaced => ("", start),
        _ => return Err(bad("start key does not fit the resource")),
    };
    Ok((rv, Key::new(info, ns, name)))
}

/// Parse the `resourceVersion` query value.
pub fn parse_rv(s: &str) -> Result<u64, ApiError> {
    s.parse::<u64>()
        .map_err(|_| bad_request(format!("invalid resource version \"{s}\"")))
}

/// 410 for a resourceVersion older than the history.
pub fn too_old(rv: u64, compacted: u64) -> ApiError {
    ApiError::new(
        410,
        "Expired",
        format!("too old resource version: {rv} ({})", compacted + 1),
    )
}

/// 504 for a resourceVersion newer than the store.
pub fn too_large(rv: u64, current: u64) -> ApiError {
    ApiError::new(
        504,
        "Timeout",
        format!("Too large resource version: {rv}, current: {current}"),
    )
    .with_details(json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1}))
}

/// The list options that choose what to read.
struct ListQuery<'a> {
    /// The request's namespace (`None` = all namespaces).
    namespace: Option<&'a str>,
    limit: i64,
    rv: &'a str,
    rv_match: &'a str,
    cont: Option<&'a str>,
}

/// Where a list reads: at a resourceVersion, after a key, at most `limit`
/// items; or the 410 answer for an expired continue token.
enum ReadPoint {
    At {
        at: u64,
        after: Option<Key>,
        limit: usize,
    },
    Expired(Response),
}

/// Upstream's rules: a continue token pins its RV; "" reads the newest
/// state; "0" is served from the (watch) cache and ignores `limit`; an
/// explicit RV is Exact (also when paginating without a match) or
/// NotOlderThan; too old → 410, newer than the store → 504.
fn read_point(t: &Txn<'_>, info: &ResourceInfo, q: &ListQuery<'_>) -> Result<ReadPoint, ApiError> {
    let limit = |n: i64| {
        usize::try_from(n)
            .ok()
            .filter(|n| *n > 0)
            .unwrap_or(usize::MAX)
    };
    if let Some(tok) = q.cont {
        if !q.rv.is_empty() && q.rv != "0" {
            return Err(bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        let (rv, key) = decode_continue(info, tok)?;
        // A token this server cannot have issued: a resourceVersion it has
        // not reached, or a start key outside the requested namespace.
        if rv > t.rv() {
            return Err(bad_request(format!(
                "continue key is not valid: resourceVersion {rv} is newer than the current resourceVersion {}",
                t.rv()
            )));
        }
        if q.namespace.is_some_and(|ns| ns != key.namespace) {
            return Err(bad_request(
                "continue key is not valid: the start key is outside the requested namespace",
            ));
        }
        if rv < t.compacted() {
            return Ok(ReadPoint::Expired(expired_continue(t.rv(), &key)));
        }
        return Ok(ReadPoint::At {
            at: rv,
            after: Some(key),
            limit: limit(q.limit),
        });
    }
    if q.rv.is_empty() {
        return Ok(ReadPoint::At {
            at: t.rv(),
            after: None,
            limit: limit(q.limit),
        });
    }
    if q.rv == "0" && q.rv_match != "Exact" {
        return Ok(ReadPoint::At {
            at: t.rv(),
            after: None,
            limit: usize::MAX,
        });
    }
    let rv = parse_rv(q.rv)?;
    let exact = q.rv_match == "Exact" || (q.rv_match.is_empty() && q.limit > 0);
    if rv > t.rv() {
        return Err(too_large(rv, t.rv()));
    }
    if exact && rv < t.compacted() {
        return Err(too_old(rv, t.compacted()));
    }
    let at = if exact { rv } else { t.rv() };
    Ok(ReadPoint::At {
        at,
        after: None,
        limit: limit(q.limit),
    })
}

/// Serve a LIST.
pub fn list(
    store: &Store,
    info: &'static ResourceInfo,
    namespace: Option<&str>,
    req: &Request,
) -> Result<Response, ApiError> {
    let sel = Selectors::from_request(info.resource, req)?;
    let limit = match req.query("limit").filter(|s| !s.is_empty()) {
        Some(s) => s
            .parse::<i64>()
            .map_err(|_| bad_request(format!("invalid limit \"{s}\"")))?,
        None => 0,
    };
    let q = ListQuery {
        namespace,
        limit,
        rv: req.query("resourceVersion").unwrap_or(""),
        rv_match: req.query("resourceVersionMatch").unwrap_or(""),
        cont: req.query("continue").filter(|s| !s.is_empty()),
    };
    store.txn(|t| {
        let (at, after, limit) = match read_point(t, info, &q)? {
            ReadPoint::At { at, after, limit } => (at, after, limit),
            ReadPoint::Expired(r) => return Ok(r),
        };
        let keep = |o: &Obj| sel.matches_obj(o);
        let count_rest = sel.is_empty();
        let page = t.page(
            res_index(info),
            namespace,
            at,
            after.as_ref(),
            limit,
            &keep,
            count_rest,
        );
        let mut meta = json!({"resourceVersion": at.to_string()});
        if let Some(last) = &page.next {
            meta["continue"] = json!(encode_continue(at, last));
            if let Some(n) = page.remaining {
                meta["remainingItemCount"] = json!(n);
            }
        }
        let items = page.items.iter().map(|o| o.item_as(info));
        Ok(list_response(info, &meta, items))
    })
}

/// The 410 for an expired continue token, with a fresh (inconsistent) token
/// to resume from in `metadata.continue`, as upstream sends it.
fn expired_continue(current: u64, key: &Key) -> Response {
    let mut s = ApiError::new(410, "Expired", CONTINUE_EXPIRED).to_status();
    s["metadata"] = json!({"continue": encode_continue(current, key)});
    Response::json(410, s.to_string().into_bytes())
}

/// Assemble a list body from serialized items (no per-item re-encoding).
pub fn list_response(
    info: &ResourceInfo,
    meta: &Value,
    items: impl Iterator<Item = impl AsRef<[u8]>>,
) -> Response {
    let mut out = format!(
        "{{\"kind\":\"{}\",\"apiVersion\":\"{}\",\"metadata\":{},\"items\":[",
        info.list_kind(),
        info.api_version(),
        meta
    )
    .into_bytes();
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item.as_ref());
    }
    out.extend_from_slice(b"]}");
    Response::json(200, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::lookup;

    #[test]
    fn continue_token_round_trip() {
        let Some(pods) = lookup("", "v1", "pods") else {
            panic!("pods not served")
        };
        let Some(nodes) = lookup("", "v1", "nodes") else {
            panic!("nodes not served")
        };
        for (info, ns, name) in [(pods, "default", "p-1"), (nodes, "", "n1")] {
            let key = Key::new(info, ns, name);
            let tok = encode_continue(42, &key);
            assert_eq!(decode_continue(info, &tok), Ok((42, key)));
        }
        for bad in ["%%%", "e30=", "bm90IGpzb24="] {
            let e = decode_continue(pods, bad).err().map(|e| e.code);
            assert_eq!(e, Some(400), "{bad}");
        }
    }
}
