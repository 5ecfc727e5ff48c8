//! Label and field selectors as kube-apiserver parses and applies them
//! (`labelSelector=a=b,c!=d,e in (x,y),f notin (z),g,!h`,
//! `fieldSelector=metadata.name=x,spec.nodeName!=y`).
//!
//! Pure: parsing returns typed errors naming the bad part; matching reads an
//! object's JSON and never touches the store.

use super::obj::Obj;
use serde_json::{Map, Value};
use std::fmt;

/// Why a selector did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectorError(pub String);

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One label requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// `key=value` / `key==value`.
    Eq(String, String),
    /// `key!=value` (also matches when the key is absent).
    NotEq(String, String),
    /// `key in (a,b)`.
    In(String, Vec<String>),
    /// `key notin (a,b)` (also matches when the key is absent).
    NotIn(String, Vec<String>),
    /// `key`.
    Exists(String),
    /// `!key`.
    NotExists(String),
}

/// A parsed label selector; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(pub Vec<Requirement>);

/// Split on commas that are not inside parentheses.
fn split_top(s: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

fn check_key(k: &str) -> Result<String, SelectorError> {
    let ok = !k.is_empty()
        && k.len() <= 316
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c));
    if ok {
        Ok(k.to_string())
    } else {
        Err(SelectorError(format!("invalid label key {k:?}")))
    }
}

fn check_value(v: &str) -> Result<String, SelectorError> {
    let ok = v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if ok {
        Ok(v.to_string())
    } else {
        Err(SelectorError(format!("invalid label value {v:?}")))
    }
}

fn parse_set(rest: &str) -> Result<Vec<String>, SelectorError> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| SelectorError(format!("expected '(' ... ')' in {rest:?}")))?;
    inner.split(',').map(|v| check_value(v.trim())).collect()
}

fn parse_requirement(part: &str) -> Result<Requirement, SelectorError> {
    let p = part.trim();
    if let Some(k) = p.strip_prefix('!') {
        return Ok(Requirement::NotExists(check_key(k.trim())?));
    }
    if let Some(i) = p.find("!=") {
        return Ok(Requirement::NotEq(
            check_key(p[..i].trim())?,
            check_value(p[i + 2..].trim())?,
        ));
    }
    if let Some(i) = p.find("==") {
        return Ok(Requirement::Eq(
            check_key(p[..i].trim())?,
            check_value(p[i + 2..].trim())?,
        ));
    }
    if let Some(i) = p.find('=') {
        return Ok(Requirement::Eq(
            check_key(p[..i].trim())?,
            check_value(p[i + 1..].trim())?,
        ));
    }
    for (op, notin) in [(" notin ", true), (" in ", false)] {
        if let Some(i) = p.find(op) {
            let key = check_key(p[..i].trim())?;
            let set = parse_set(&p[i + op.len()..])?;
            return Ok(if notin {
                Requirement::NotIn(key, set)
            } else {
                Requirement::In(key, set)
            });
        }
    }
    if p.contains(['(', ')', ' ', '<', '>']) {
        return Err(SelectorError(format!("unable to parse requirement: {p:?}")));
    }
    Ok(Requirement::Exists(check_key(p)?))
}

impl LabelSelector {
    /// Parse the `labelSelector` query syntax.
    pub fn parse(s: &str) -> Result<LabelSelector, SelectorError> {
        if s.trim().is_empty() {
            return Ok(LabelSelector::default());
        }
        split_top(s)
            .into_iter()
            .map(parse_requirement)
            .collect::<Result<Vec<_>, _>>()
            .map(LabelSelector)
    }

    /// Whether the selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `labels` (an object's `metadata.labels`, possibly absent) match.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        self.matches_with(|k| labels.and_then(|l| l.get(k)).and_then(Value::as_str))
    }

    /// Whether the labels `get` looks up match.
    pub fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Eq(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEq(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, set) => get(k).is_some_and(|x| set.iter().any(|s| s == x)),
            Requirement::NotIn(k, set) => !get(k).is_some_and(|x| set.iter().any(|s| s == x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
        })
    }

    /// Whether an object (its JSON) matches.
    pub fn matches_object(&self, obj: &Value) -> bool {
        self.is_empty() || self.matches(obj.pointer("/metadata/labels").and_then(Value::as_object))
    }
}

/// Fields every resource can select on.
pub const COMMON_FIELDS: &[&str] = &["metadata.name", "metadata.namespace"];

/// Extra selectable fields per resource (upstream `GetAttrs` / field label
/// conversion functions of each registry).
pub fn resource_fields(resource: &str) -> &'static [&'static str] {
    match resource {
        "pods" => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        "events" => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        "namespaces" => &["status.phase"],
        "nodes" => &["spec.unschedulable"],
        _ => &[],
    }
}

/// JSON pointer of a selectable field ("source" is `source.component`).
fn pointer_of(field: &str) -> String {
    match field {
        "source" => "/source/component".into(),
        f => format!("/{}", f.replace('.', "/")),
    }
}

/// One field requirement: field path (JSON pointer), value, negated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    /// The field as named in the query ("spec.nodeName").
    pub field: String,
    /// Where it lives in the object (JSON pointer).
    pub pointer: String,
    /// The value compared against ("" matches an absent field).
    pub value: String,
    /// `!=` instead of `=`.
    pub negated: bool,
}

/// A parsed field selector; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(pub Vec<FieldRequirement>);

impl FieldSelector {
    /// Parse with the pod fields (the most permissive common case).
    pub fn parse(s: &str) -> Result<FieldSelector, SelectorError> {
        FieldSelector::parse_for("pods", s)
    }

    /// Parse the `fieldSelector` query syntax for `resource`; fields it
    /// does not support are an error (`field label not supported: x`), as
    /// on the real server.
    pub fn parse_for(resource: &str, s: &str) -> Result<FieldSelector, SelectorError> {
        if s.trim().is_empty() {
            return Ok(FieldSelector::default());
        }
        let mut out = Vec::new();
        for part in s.split(',') {
            let part = part.trim();
            let (field, value, negated) = if let Some(i) = part.find("!=") {
                (&part[..i], &part[i + 2..], true)
            } else if let Some(i) = part.find("==") {
                (&part[..i], &part[i + 2..], false)
            } else if let Some(i) = part.find('=') {
                (&part[..i], &part[i + 1..], false)
            } else {
                return Err(SelectorError(format!(
                    "invalid selector: '{part}'; can't understand '{part}'"
                )));
            };
            let field = field.trim();
            if !COMMON_FIELDS.contains(&field) && !resource_fields(resource).contains(&field) {
                return Err(SelectorError(format!("field label not supported: {field}")));
            }
            let pointer = pointer_of(field);
            out.push(FieldRequirement {
                field: field.to_string(),
                pointer,
                value: value.trim().to_string(),
                negated,
            });
        }
        Ok(FieldSelector(out))
    }

    /// Whether the selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The single name this selector pins (`metadata.name=x`), if any.
    pub fn pinned_name(&self) -> Option<&str> {
        self.0
            .iter()
            .find(|r| r.field == "metadata.name" && !r.negated)
            .map(|r| r.value.as_str())
    }

    /// Whether an object (its JSON) matches.
    pub fn matches_object(&self, obj: &Value) -> bool {
        self.0
            .iter()
            .all(|r| (field_string(obj, &r.field) == r.value) != r.negated)
    }

    /// Whether a stored object (its indexed fields) matches.
    pub fn matches_obj(&self, obj: &Obj) -> bool {
        self.0
            .iter()
            .all(|r| (obj.field(&r.field).unwrap_or("") == r.value) != r.negated)
    }
}

/// Every field `resource` can be selected on.
pub fn selectable_fields(resource: &str) -> impl Iterator<Item = &'static str> {
    COMMON_FIELDS
        .iter()
        .chain(resource_fields(resource))
        .copied()
}

/// A field's value as field selectors compare it: strings as is, booleans
/// and numbers printed, absent boolean fields "false", anything else "".
pub fn field_string(obj: &Value, field: &str) -> String {
    match obj.pointer(&pointer_of(field)) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n.to_string(),
        None if is_bool_field(field) => "false".into(),
        _ => String::new(),
    }
}

fn is_bool_field(field: &str) -> bool {
    matches!(field, "spec.hostNetwork" | "spec.unschedulable")
}

/// Both selectors of a request.
#[derive(Debug, Clone, Default)]
pub struct Selectors {
    /// `labelSelector`.
    pub labels: LabelSelector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
}

impl Selectors {
    /// Parse both (either may be absent) for `resource`.
    pub fn parse_for(
        resource: &str,
        labels: Option<&str>,
        fields: Option<&str>,
    ) -> Result<Selectors, SelectorError> {
        Ok(Selectors {
            labels: LabelSelector::parse(labels.unwrap_or(""))?,
            fields: FieldSelector::parse_for(resource, fields.unwrap_or(""))?,
        })
    }

    /// The `labelSelector` and `fieldSelector` query parameters of a
    /// request; a malformed one is a 400 BadRequest.
    pub fn from_request(
        resource: &str,
        req: &endpointd_base::httpd::Request,
    ) -> Result<Selectors, super::status::ApiError> {
        Selectors::parse_for(
            resource,
            req.query("labelSelector"),
            req.query("fieldSelector"),
        )
        .map_err(|e| super::apierrors::bad_request(e.0))
    }

    /// Whether both are empty.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    /// Whether an object (its JSON) matches both.
    pub fn matches(&self, obj: &Value) -> bool {
        self.labels.matches_object(obj) && self.fields.matches_object(obj)
    }

    /// Whether a stored object matches both (from its index, no parsing).
    pub fn matches_obj(&self, obj: &Obj) -> bool {
        self.labels.matches_with(|k| obj.label(k)) && self.fields.matches_obj(obj)
    }
}

#[cfg(test)]
#[path = "selector_tests.rs"]
mod tests;
