//! Validation of what endpointd writes, with kube-apiserver's 422 `Invalid`
//! shape: message `Kind.group "name" is invalid: <field errors>` and
//! `details.causes[] {reason, message, field}` (reasons `FieldValueRequired`,
//! `FieldValueInvalid`, `FieldValueNotSupported`, `FieldValueTooMany`,
//! `FieldValueDuplicate`). Wrongly typed JSON is a 400 decode error, as on
//! the real server.
//!
//! Pure: a function of (resource, old object, new object). Rules follow
//! upstream `pkg/apis/discovery/validation`, `pkg/apis/core/validation`
//! (Endpoints, object names) and `pkg/apis/coordination/validation`.
//!
//! It must never modify the object it checks (defaulting is `defaults`'
//! job).

use super::objects::bad_request;
use super::resources::ResourceInfo;
use super::status::ApiError;
use serde_json::{json, Value};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One field error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// `FieldValueRequired`, `FieldValueInvalid`, …
    pub reason: &'static str,
    /// Upstream's error body ("Required value", `Invalid value: "x": …`).
    pub message: String,
    /// Field path ("endpoints[0].addresses[1]").
    pub field: String,
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

impl Cause {
    /// `Required value[: detail]`.
    pub fn required(field: &str, detail: &str) -> Cause {
        let message = if detail.is_empty() {
            "Required value".to_string()
        } else {
            format!("Required value: {detail}")
        };
        Cause {
            reason: "FieldValueRequired",
            message,
            field: field.into(),
        }
    }
    /// `Invalid value: V: detail`.
    pub fn invalid(field: &str, value: &Value, detail: &str) -> Cause {
        Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {}: {detail}", show(value)),
            field: field.into(),
        }
    }
    /// `Unsupported value: V: supported values: "a", "b"`.
    pub fn not_supported(field: &str, value: &Value, supported: &[&str]) -> Cause {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        Cause {
            reason: "FieldValueNotSupported",
            message: format!(
                "Unsupported value: {}: supported values: {}",
                show(value),
                list.join(", ")
            ),
            field: field.into(),
        }
    }
    /// `Too many: N: must have at most M items`.
    pub fn too_many(field: &str, actual: usize, max: usize) -> Cause {
        Cause {
            reason: "FieldValueTooMany",
            message: format!("Too many: {actual}: must have at most {max} items"),
            field: field.into(),
        }
    }
    /// `Duplicate value: V`.
    pub fn duplicate(field: &str, value: &Value) -> Cause {
        Cause {
            reason: "FieldValueDuplicate",
            message: format!("Duplicate value: {}", show(value)),
            field: field.into(),
        }
    }
    /// `field: message`, as in the aggregate error message.
    pub fn error(&self) -> String {
        format!("{}: {}", self.field, self.message)
    }
}

/// The 422 `Invalid` error for an object.
pub fn invalid(info: &ResourceInfo, name: &str, causes: Vec<Cause>) -> ApiError {
    let qualified = if info.group.is_empty() {
        info.kind.to_string()
    } else {
        format!("{}.{}", info.kind, info.group)
    };
    let agg = if causes.len() == 1 {
        causes[0].error()
    } else {
        format!(
            "[{}]",
            causes
                .iter()
                .map(Cause::error)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let mut details = json!({"name": name, "kind": info.kind, "causes": causes.iter().map(|c| json!({
        "reason": c.reason, "message": c.message, "field": c.field})).collect::<Vec<_>>()});
    if !info.group.is_empty() {
        details["group"] = json!(info.group);
    }
    ApiError::new(
        422,
        "Invalid",
        format!("{qualified} \"{name}\" is invalid: {agg}"),
    )
    .with_details(details)
}

/// 422 for bad list/watch options.
pub fn invalid_list_options(field: &str, value: &str, detail: &str) -> ApiError {
    let c = Cause {
        reason: "FieldValueForbidden",
        message: format!("Forbidden: {detail}"),
        field: field.into(),
    };
    let _ = value;
    ApiError::new(
        422,
        "Invalid",
        format!("ListOptions.meta.k8s.io \"\" is invalid: {}", c.error()),
    )
    .with_details(json!({"group": "meta.k8s.io", "kind": "ListOptions",
            "causes": [{"reason": c.reason, "message": c.message, "field": c.field}]}))
}

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

pub use endpointd_base::names::{is_dns1035_label, is_dns1123_label, is_dns1123_subdomain};

fn name_cause(info: &ResourceInfo, name: &str) -> Option<Cause> {
    let (ok, msg) = match info.resource {
        "namespaces" => (is_dns1123_label(name), DNS1123_LABEL_MSG),
        "services" => (is_dns1035_label(name), DNS1035_LABEL_MSG),
        _ => (is_dns1123_subdomain(name), DNS1123_SUBDOMAIN_MSG),
    };
    (!ok).then(|| Cause::invalid("metadata.name", &json!(name), msg))
}

const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const NAME_PART_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, at most 63 characters.
fn is_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
}

/// A label/annotation key: `[prefix/]name`, prefix a DNS subdomain.
pub fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        Some((prefix, name)) => is_dns1123_subdomain(prefix) && is_name_part(name),
        None => is_name_part(s),
    }
}

/// A label value: empty or a name part.
pub fn is_label_value(s: &str) -> bool {
    s.is_empty() || is_name_part(s)
}

/// Label keys and values, annotation keys (upstream `ValidateObjectMeta`).
fn metadata_maps(v: &Value, out: &mut Vec<Cause>) {
    for (field, check_values) in [("labels", true), ("annotations", false)] {
        let Some(m) = v
            .pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_object)
        else {
            continue;
        };
        let path = format!("metadata.{field}");
        for (k, val) in m {
            if !is_qualified_name(k) {
                out.push(Cause::invalid(&path, &json!(k), NAME_PART_MSG));
            }
            let text = val.as_str().unwrap_or("");
            if check_values && !is_label_value(text) {
                out.push(Cause::invalid(&path, val, LABEL_VALUE_MSG));
            }
        }
    }
}

/// Upstream `ValidateObjectMetaUpdate`: once `deletionTimestamp` is set no
/// finalizer may be added.
fn no_new_finalizers_while_deleting(old: &Value, new: &Value, out: &mut Vec<Cause>) {
    if old.pointer("/metadata/deletionTimestamp").is_none() {
        return;
    }
    let list = |v: &Value| -> Vec<String> {
        v.pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|f| f.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let before = list(old);
    let added: Vec<String> = list(new)
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    if !added.is_empty() {
        let shown: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
        out.push(Cause {
            reason: "FieldValueForbidden",
            message: format!(
                "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                shown.join(", ")
            ),
            field: "metadata.finalizers".into(),
        });
    }
}

/// Validate a create (`old` = None) or an update.
pub fn validate(info: &ResourceInfo, old: Option<&Value>, new: &Value) -> Result<(), ApiError> {
    check_types(info, new)?;
    let name = new
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut causes: Vec<Cause> = name_cause(info, name).into_iter().collect();
    metadata_maps(new, &mut causes);
    if let Some(old) = old {
        no_new_finalizers_while_deleting(old, new, &mut causes);
    }
    match info.resource {
        "endpointslices" => super::validate_rules::endpoint_slice(old, new, &mut causes),
        "endpoints" => super::validate_rules::endpoints(new, &mut causes),
        "leases" => super::validate_rules::lease(new, &mut causes),
        "services" => super::validate_rules::service(old, new, &mut causes),
        // Strict rules on events.k8s.io creates only (upstream
        // ValidateEventUpdate checks legacy rules plus immutability).
        "events" => {
            let strict = !info.group.is_empty() && old.is_none();
            super::validate_rules::event(new, strict, &mut causes)
        }
        _ => {}
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(invalid(info, name, causes))
    }
}

/// Expected JSON type of a field: (pointer into each element, Go type name).
type TypeRule = (&'static str, &'static str, &'static str);

const LEASE_TYPES: &[TypeRule] = &[
    (
        "/spec/holderIdentity",
        "string",
        "LeaseSpec.spec.holderIdentity",
    ),
    (
        "/spec/leaseDurationSeconds",
        "int32",
        "LeaseSpec.spec.leaseDurationSeconds",
    ),
    ("/spec/acquireTime", "time", "LeaseSpec.spec.acquireTime"),
    ("/spec/renewTime", "time", "LeaseSpec.spec.renewTime"),
    (
        "/spec/leaseTransitions",
        "int32",
        "LeaseSpec.spec.leaseTransitions",
    ),
    ("/spec/strategy", "string", "LeaseSpec.spec.strategy"),
    (
        "/spec/preferredHolder",
        "string",
        "LeaseSpec.spec.preferredHolder",
    ),
];

fn type_ok(v: &Value, ty: &str) -> bool {
    match ty {
        "string" => v.is_string(),
        "int32" => v.as_i64().is_some_and(|n| i32::try_from(n).is_ok()),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "time" => v
            .as_str()
            .is_some_and(|s| s.parse::<jiff::Timestamp>().is_ok()),
        _ => true,
    }
}

fn type_error(info: &ResourceInfo, field: &str, ty: &str, v: &Value) -> ApiError {
    let got = match v {
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    };
    let why = if ty == "time" {
        format!(
            "parsing time {} as an RFC 3339 time: invalid ({field})",
            show(v)
        )
    } else {
        format!("json: cannot unmarshal {got} into Go struct field {field} of type {ty}")
    };
    bad_request(format!(
        "{} in version \"{}\" cannot be handled as a {}: {why}",
        info.kind, info.version, info.kind
    ))
}

/// Field types the Go decoder would reject (400, not 422).
fn check_types(info: &ResourceInfo, v: &Value) -> Result<(), ApiError> {
    let rules: &[TypeRule] = match info.resource {
        "leases" => LEASE_TYPES,
        "endpointslices" => &[
            ("/addressType", "string", "EndpointSlice.addressType"),
            ("/endpoints", "array", "EndpointSlice.endpoints"),
            ("/ports", "array", "EndpointSlice.ports"),
        ],
        "endpoints" => &[("/subsets", "array", "Endpoints.subsets")],
        "events" => &[("/eventTime", "time", "Event.eventTime")],
        _ => &[],
    };
    for field in ["labels", "annotations"] {
        let m = v.pointer(&format!("/metadata/{field}"));
        let go_field = format!("ObjectMeta.metadata.{field}");
        match m {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                if let Some(bad) = m.values().find(|x| !x.is_string()) {
                    return Err(type_error(info, &go_field, "string", bad));
                }
            }
            Some(other) => return Err(type_error(info, &go_field, "map[string]string", other)),
        }
    }
    for (ptr, ty, field) in rules {
        match v.pointer(ptr) {
            None | Some(Value::Null) => {}
            Some(x) if type_ok(x, ty) => {}
            Some(x) => return Err(type_error(info, field, ty, x)),
        }
    }
    Ok(())
}

/// Whether `s` is a valid address of the EndpointSlice address type.
pub fn address_ok(address_type: &str, s: &str) -> bool {
    match address_type {
        "IPv4" => s.parse::<Ipv4Addr>().is_ok(),
        "IPv6" => s.parse::<Ipv6Addr>().is_ok(),
        "FQDN" => is_dns1123_subdomain(s),
        _ => true,
    }
}

/// Whether `s` is an IP address (either family).
pub fn ip_ok(s: &str) -> bool {
    s.parse::<IpAddr>().is_ok()
}
