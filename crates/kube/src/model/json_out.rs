//! A hand-written compact JSON writer for the two kinds endpointd writes on
//! every change, [`EndpointSlice`] and [`Endpoints`]: exactly the bytes
//! `serde_json::to_vec` gives for them, without serde's per-field dispatch.
//!
//! Measured under readiness churn (callgrind, 200 flips of 10-pod
//! Services): serialising the two objects through serde took ~85,000
//! instructions per flip, a seventh of all of endpointd's, most of it
//! per-key and per-string overhead (serde_json's escaping loop alone
//! 46,000); an endpoint's ~200 bytes cost ~4,000 instructions.
//!
//! Owns only that writing. The parts that are rare or intricate (the
//! object's `metadata`, an endpoint's `hints`, any string that needs
//! escaping) are written by serde_json itself, so they cannot differ.
//! Must never produce anything serde_json would not: the tests compare
//! both, byte for byte, on a table of objects with every optional field
//! set and unset and strings that need escaping.

use super::endpoints::{EndpointAddress, EndpointPort, EndpointSubset, Endpoints};
use super::endpointslice::{AddressType, Endpoint, EndpointSlice, EndpointSlicePort};
use super::{ObjectMeta, ObjectReference};
use serde::Serialize;

/// Whether JSON needs an escape for a byte of `s`: a control character,
/// `"` or `\\` (serde_json escapes nothing else). Eight bytes at a time.
fn needs_escape(s: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Any byte of `x` zero / below 0x20 (exact as an "any" answer).
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH != 0;
    let below = |x: u64| x.wrapping_sub(ONES * 0x20) & !x & HIGH != 0;
    let mut chunks = s.chunks_exact(8);
    for c in &mut chunks {
        let mut b = [0u8; 8];
        b.copy_from_slice(c);
        let x = u64::from_le_bytes(b);
        if below(x) || zero(x ^ (ONES * u64::from(b'"'))) || zero(x ^ (ONES * u64::from(b'\\'))) {
            return true;
        }
    }
    chunks
        .remainder()
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

/// `s` as a JSON string: copied between quotes when nothing in it needs
/// escaping, else escaped by serde_json.
fn string(out: &mut Vec<u8>, s: &str) {
    match needs_escape(s.as_bytes()) {
        false => quoted(out, s.as_bytes()),
        true => serde(out, s),
    }
}

/// Bytes that need no escaping, between quotes.
fn quoted(out: &mut Vec<u8>, b: &[u8]) {
    out.reserve(b.len() + 2);
    out.push(b'"');
    out.extend_from_slice(b);
    out.push(b'"');
}

/// Through serde_json (writing to a `Vec` cannot fail; a value whose
/// `Serialize` fails would fail the serde path the same way, and none of
/// ours do).
fn serde<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    let _ = serde_json::to_writer(&mut *out, v);
}

/// An `i32` in decimal (as serde_json's `itoa`).
fn int(out: &mut Vec<u8>, v: i32) {
    let mut buf = [0u8; 11];
    let mut i = buf.len();
    let neg = v < 0;
    let mut n = v.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if neg {
        i -= 1;
        buf[i] = b'-';
    }
    out.extend_from_slice(&buf[i..]);
}

fn boolean(out: &mut Vec<u8>, v: bool) {
    out.extend_from_slice(if v { b"true" } else { b"false" });
}

/// Writes the members of one JSON object: a comma before all but the
/// first.
struct Obj<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Obj<'a> {
    fn open(out: &'a mut Vec<u8>) -> Obj<'a> {
        out.push(b'{');
        Obj { out, first: true }
    }

    /// `key` is written as is: callers pass a constant that needs no
    /// escaping, with its quotes and colon (`"name":`).
    fn key(&mut self, key: &[u8]) -> &mut Vec<u8> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.extend_from_slice(key);
        self.out
    }

    fn str(&mut self, key: &[u8], v: &str) {
        let out = self.key(key);
        string(out, v);
    }

    fn close(self) {
        self.out.push(b'}');
    }
}

/// An object opened with its constant `apiVersion`/`kind` (`type_meta`,
/// up to the `metadata` key) and its metadata; the rest follows.
fn head<'a>(out: &'a mut Vec<u8>, type_meta: &[u8], m: &ObjectMeta) -> Obj<'a> {
    out.extend_from_slice(type_meta);
    serde(out, m);
    Obj { out, first: false }
}

/// A JSON array of `items`, each written by `f`.
fn array<T>(out: &mut Vec<u8>, items: &[T], mut f: impl FnMut(&mut Vec<u8>, &T)) {
    out.push(b'[');
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        f(out, x);
    }
    out.push(b']');
}

fn address_type(t: AddressType) -> &'static str {
    match t {
        AddressType::IPv4 => "IPv4",
        AddressType::IPv6 => "IPv6",
        AddressType::FQDN => "FQDN",
        AddressType::IP => "IP",
        AddressType::Unknown => "Unknown",
    }
}

fn object_reference(out: &mut Vec<u8>, r: &ObjectReference) {
    let mut o = Obj::open(out);
    for (key, v) in [
        (&b"\"kind\":"[..], &*r.kind),
        (b"\"namespace\":", &*r.namespace),
    ] {
        if !v.is_empty() {
            o.str(key, v);
        }
    }
    if !r.name.is_empty() {
        o.str(b"\"name\":", &r.name);
    }
    if !r.uid.is_empty() {
        let u = r.uid.as_str();
        let out = o.key(b"\"uid\":");
        // A canonical UUID (hex digits and dashes) without `Deref`'s
        // UTF-8 check.
        match needs_escape(u.as_bytes()) {
            false => quoted(out, u.as_bytes()),
            true => string(out, &u),
        }
    }
    for (key, v) in [
        (&b"\"apiVersion\":"[..], r.api_version()),
        (b"\"resourceVersion\":", r.resource_version()),
        (b"\"fieldPath\":", r.field_path()),
    ] {
        if !v.is_empty() {
            o.str(key, v);
        }
    }
    o.close();
}

fn endpoint(out: &mut Vec<u8>, e: &Endpoint) {
    let mut o = Obj::open(out);
    let out = o.key(b"\"addresses\":");
    array(out, e.addresses.as_slice(), |out, a| string(out, a));
    let out = o.key(b"\"conditions\":");
    let mut c = Obj::open(out);
    for (key, v) in [
        (&b"\"ready\":"[..], e.conditions.ready),
        (b"\"serving\":", e.conditions.serving),
        (b"\"terminating\":", e.conditions.terminating),
    ] {
        if let Some(v) = v {
            boolean(c.key(key), v);
        }
    }
    c.close();
    if let Some(h) = &e.hostname {
        o.str(b"\"hostname\":", h);
    }
    if let Some(r) = &e.target_ref {
        object_reference(o.key(b"\"targetRef\":"), r);
    }
    if let Some(n) = &e.node_name {
        o.str(b"\"nodeName\":", n);
    }
    if let Some(z) = &e.zone {
        o.str(b"\"zone\":", z);
    }
    if let Some(h) = &e.hints {
        serde(o.key(b"\"hints\":"), h);
    }
    o.close();
}

fn slice_port(out: &mut Vec<u8>, p: &EndpointSlicePort) {
    let mut o = Obj::open(out);
    if let Some(n) = &p.name {
        o.str(b"\"name\":", n);
    }
    if let Some(pr) = &p.protocol {
        o.str(b"\"protocol\":", pr.as_str());
    }
    if let Some(n) = p.port {
        int(o.key(b"\"port\":"), n);
    }
    if let Some(a) = &p.app_protocol {
        o.str(b"\"appProtocol\":", a);
    }
    o.close();
}

/// An EndpointSlice as compact JSON, appended to `out`.
pub(crate) fn endpoint_slice(out: &mut Vec<u8>, s: &EndpointSlice) {
    let mut o = head(
        out,
        br#"{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":"#,
        &s.metadata,
    );
    o.str(b"\"addressType\":", address_type(s.address_type));
    array(o.key(b"\"endpoints\":"), &s.endpoints, endpoint);
    array(o.key(b"\"ports\":"), &s.ports, slice_port);
    o.close();
}

fn address(out: &mut Vec<u8>, a: &EndpointAddress) {
    let mut o = Obj::open(out);
    o.str(b"\"ip\":", &a.ip);
    if !a.hostname.is_empty() {
        o.str(b"\"hostname\":", &a.hostname);
    }
    if let Some(n) = &a.node_name {
        o.str(b"\"nodeName\":", n);
    }
    if let Some(r) = &a.target_ref {
        object_reference(o.key(b"\"targetRef\":"), r);
    }
    o.close();
}

fn port(out: &mut Vec<u8>, p: &EndpointPort) {
    let mut o = Obj::open(out);
    if !p.name.is_empty() {
        o.str(b"\"name\":", &p.name);
    }
    int(o.key(b"\"port\":"), p.port);
    if let Some(pr) = &p.protocol {
        o.str(b"\"protocol\":", pr.as_str());
    }
    if let Some(a) = &p.app_protocol {
        o.str(b"\"appProtocol\":", a);
    }
    o.close();
}

fn subset(out: &mut Vec<u8>, s: &EndpointSubset) {
    let mut o = Obj::open(out);
    if !s.addresses.is_empty() {
        array(o.key(b"\"addresses\":"), &s.addresses, address);
    }
    if !s.not_ready_addresses.is_empty() {
        array(
            o.key(b"\"notReadyAddresses\":"),
            &s.not_ready_addresses,
            address,
        );
    }
    if !s.ports.is_empty() {
        array(o.key(b"\"ports\":"), &s.ports, port);
    }
    o.close();
}

/// An Endpoints as compact JSON, appended to `out`.
pub(crate) fn endpoints(out: &mut Vec<u8>, e: &Endpoints) {
    let mut o = head(
        out,
        br#"{"apiVersion":"v1","kind":"Endpoints","metadata":"#,
        &e.metadata,
    );
    if !e.subsets.is_empty() {
        array(o.key(b"\"subsets\":"), &e.subsets, subset);
    }
    o.close();
}

#[cfg(test)]
#[path = "json_out_tests.rs"]
mod tests;
