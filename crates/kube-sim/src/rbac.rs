//! RBAC policy and its evaluation, as kube-apiserver's RBAC authorizer does
//! it (`plugin/pkg/auth/authorizer/rbac`): Roles, ClusterRoles,
//! RoleBindings and ClusterRoleBindings of `rbac.authorization.k8s.io/v1`
//! read from `--load` items, and `Policy::allows` for one request's
//! attributes. Also the 403 Forbidden `Status` with upstream's wording.
//!
//! Not modelled: aggregated ClusterRoles (`aggregationRule`) and the
//! admission-time checks (`update services/finalizers`,
//! `create endpoints/restricted`).
//!
//! Pure: no I/O, no locks, no store. It never authenticates (the user and
//! groups come from `authn`) and never logs; an unknown kind or a binding
//! to a missing role simply grants nothing, as upstream.

use super::status::ApiError;
use serde_json::{json, Value};

/// Why an RBAC item cannot be added to a [`Policy`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyError {
    /// The item has no `metadata.name`.
    NoName {
        /// The item's kind.
        kind: String,
    },
    /// A binding's `roleRef.kind` is neither ClusterRole nor (for a
    /// RoleBinding) Role.
    RoleRef {
        /// The binding's kind.
        kind: String,
        /// The binding's name.
        name: String,
        /// The `roleRef.kind` it has.
        role_kind: String,
    },
    /// The item is not a Role, ClusterRole, RoleBinding or ClusterRoleBinding.
    NotRbac {
        /// The item's kind.
        kind: String,
    },
}

impl std::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PolicyError::NoName { kind } => write!(f, "{kind}: metadata.name is missing"),
            PolicyError::RoleRef {
                kind,
                name,
                role_kind,
            } => write!(f, "{kind} {name:?}: roleRef.kind {role_kind:?}"),
            PolicyError::NotRbac { kind } => write!(f, "kind {kind:?} is not an RBAC kind"),
        }
    }
}

impl std::error::Error for PolicyError {}

/// The group whose members bypass authorization (kube-apiserver's
/// privileged-group authorizer runs before RBAC).
pub const MASTERS: &str = "system:masters";

/// Who makes a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    /// User name (`system:serviceaccount:NS:NAME` for a ServiceAccount).
    pub name: String,
    /// Groups, `system:authenticated` included for authenticated users.
    pub groups: Vec<String>,
}

impl UserInfo {
    /// A user with groups.
    pub fn new(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.to_string(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }

    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// What a request asks to do (kube-apiserver's authorizer.Attributes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attributes {
    /// A request on an API resource.
    Resource {
        /// Verb ("list", "deletecollection", …).
        verb: String,
        /// API group, "" for core.
        group: String,
        /// Plural resource.
        resource: String,
        /// Subresource, "" if none.
        subresource: String,
        /// Namespace, "" for a cluster-scoped request.
        namespace: String,
        /// Object name, "" if none.
        name: String,
    },
    /// A request on another path (discovery, `/sim/*`).
    NonResource {
        /// Lower-case HTTP-derived verb ("get", "post", …).
        verb: String,
        /// The path.
        path: String,
    },
}

impl Attributes {
    /// The resource as rules and messages name it: `resource` or
    /// `resource/subresource` ("" for a non-resource request).
    pub fn resource_path(&self) -> String {
        match self {
            Attributes::Resource {
                resource,
                subresource,
                ..
            } => match subresource.is_empty() {
                true => resource.clone(),
                false => format!("{resource}/{subresource}"),
            },
            Attributes::NonResource { .. } => String::new(),
        }
    }
}

/// One rule of a role.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    /// Verbs ("*" for all).
    pub verbs: Vec<String>,
    /// API groups ("" for core, "*" for all).
    pub api_groups: Vec<String>,
    /// Resources, "res/sub" for subresources, "*" and "*/sub" wildcards.
    pub resources: Vec<String>,
    /// Object names; empty allows every name.
    pub resource_names: Vec<String>,
    /// Non-resource URLs, "*" suffix for a prefix.
    pub non_resource_urls: Vec<String>,
}

fn has(list: &[String], want: &str) -> bool {
    list.iter().any(|x| x == want || x == "*")
}

impl Rule {
    /// Whether this rule allows `a` (upstream's `RuleAllows`).
    pub fn allows(&self, a: &Attributes) -> bool {
        match a {
            Attributes::Resource {
                verb,
                group,
                subresource,
                name,
                ..
            } => {
                let combined = a.resource_path();
                let resource_ok = self.resources.iter().any(|r| {
                    r == "*"
                        || *r == combined
                        || (!subresource.is_empty() && r.strip_prefix("*/") == Some(subresource))
                });
                has(&self.verbs, verb)
                    && has(&self.api_groups, group)
                    && resource_ok
                    && (self.resource_names.is_empty() || self.resource_names.contains(name))
            }
            Attributes::NonResource { verb, path } => {
                has(&self.verbs, verb)
                    && self.non_resource_urls.iter().any(|u| {
                        u == "*"
                            || u == path
                            || u.strip_suffix('*').is_some_and(|p| path.starts_with(p))
                    })
            }
        }
    }
}

/// A subject of a binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// "User", "Group" or "ServiceAccount".
    pub kind: String,
    /// Name.
    pub name: String,
    /// Namespace (ServiceAccount only; the binding's if empty).
    pub namespace: String,
}

impl Subject {
    /// Whether the subject is `user` (upstream's `appliesToUser`).
    fn applies_to(&self, user: &UserInfo, binding_ns: &str) -> bool {
        match self.kind.as_str() {
            "User" => user.name == self.name,
            "Group" => user.in_group(&self.name),
            "ServiceAccount" => {
                let ns = match self.namespace.is_empty() {
                    true => binding_ns,
                    false => &self.namespace,
                };
                !ns.is_empty() && user.name == format!("system:serviceaccount:{ns}:{}", self.name)
            }
            _ => false,
        }
    }
}

/// A RoleBinding (namespace set) or ClusterRoleBinding (namespace "").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The binding's namespace, "" for a ClusterRoleBinding.
    pub namespace: String,
    /// The binding's name.
    pub name: String,
    /// "Role" or "ClusterRole".
    pub role_kind: String,
    /// The role's name.
    pub role_name: String,
    /// Who it binds.
    pub subjects: Vec<Subject>,
}

/// A Role (namespace set) or ClusterRole (namespace "").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Role {
    /// The role's namespace, "" for a ClusterRole.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Rules.
    pub rules: Vec<Rule>,
}

/// Every role and binding known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Roles and ClusterRoles.
    pub roles: Vec<Role>,
    /// RoleBindings and ClusterRoleBindings.
    pub bindings: Vec<Binding>,
}

/// Whether an item is one of the four RBAC kinds.
pub fn is_rbac(item: &Value) -> bool {
    item["apiVersion"] == "rbac.authorization.k8s.io/v1"
        && matches!(
            item["kind"].as_str(),
            Some("Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding")
        )
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

fn text(v: &Value, p: &str) -> String {
    v.pointer(p)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

impl Policy {
    /// kube-apiserver's bootstrap policy that matters here: discovery and
    /// `/version` for every authenticated user (`system:discovery`,
    /// `system:public-info-viewer`), and self-reviews (`system:basic-user`).
    pub fn bootstrap() -> Policy {
        let mut p = Policy::default();
        let _ = p.add(&json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "system:discovery"},
            "rules": [{"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*",
                "/openapi", "/openapi/*", "/version", "/version/", "/healthz", "/livez", "/readyz"]}]}));
        // system:basic-user: every authenticated user may ask what it may
        // do (SelfSubjectAccessReview, SelfSubjectRulesReview) and who it
        // is (SelfSubjectReview).
        let _ = p.add(
            &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "system:basic-user"},
            "rules": [{"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                       "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
                      {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"],
                       "resources": ["selfsubjectreviews"]}]}),
        );
        let _ = p.add(&json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "system:basic-user"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:basic-user"},
            "subjects": [{"kind": "Group", "name": "system:authenticated"}]}));
        let _ = p.add(&json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "system:discovery"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:discovery"},
            "subjects": [{"kind": "Group", "name": "system:authenticated"}]}));
        p
    }

    /// Add one Role, ClusterRole, RoleBinding or ClusterRoleBinding item.
    pub fn add(&mut self, item: &Value) -> Result<(), PolicyError> {
        let kind = item["kind"].as_str().unwrap_or("");
        let name = text(item, "/metadata/name");
        if name.is_empty() {
            return Err(PolicyError::NoName {
                kind: kind.to_string(),
            });
        }
        let cluster = kind.starts_with("Cluster");
        let namespace = match cluster {
            true => String::new(),
            false => match text(item, "/metadata/namespace") {
                ns if ns.is_empty() => "default".to_string(),
                ns => ns,
            },
        };
        match kind {
            "Role" | "ClusterRole" => {
                let rules = item["rules"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|r| Rule {
                        verbs: strings(&r["verbs"]),
                        api_groups: strings(&r["apiGroups"]),
                        resources: strings(&r["resources"]),
                        resource_names: strings(&r["resourceNames"]),
                        non_resource_urls: strings(&r["nonResourceURLs"]),
                    })
                    .collect();
                // One object per name, as in the API: a later item replaces.
                self.roles
                    .retain(|r| !(r.namespace == namespace && r.name == name));
                self.roles.push(Role {
                    namespace,
                    name,
                    rules,
                });
            }
            "RoleBinding" | "ClusterRoleBinding" => {
                let role_kind = text(item, "/roleRef/kind");
                if role_kind != "ClusterRole" && (cluster || role_kind != "Role") {
                    return Err(PolicyError::RoleRef {
                        kind: kind.to_string(),
                        name,
                        role_kind,
                    });
                }
                let subjects = item["subjects"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|s| Subject {
                        kind: text(s, "/kind"),
                        name: text(s, "/name"),
                        namespace: text(s, "/namespace"),
                    })
                    .collect();
                self.bindings
                    .retain(|b| !(b.namespace == namespace && b.name == name));
                self.bindings.push(Binding {
                    name: name.clone(),
                    namespace,
                    role_kind,
                    role_name: text(item, "/roleRef/name"),
                    subjects,
                });
            }
            _ => {
                return Err(PolicyError::NotRbac {
                    kind: kind.to_string(),
                })
            }
        }
        Ok(())
    }

    fn rules_of<'a>(&'a self, b: &'a Binding) -> impl Iterator<Item = &'a Rule> + 'a {
        let ns = match b.role_kind.as_str() {
            "Role" => b.namespace.as_str(),
            _ => "",
        };
        self.roles
            .iter()
            .filter(move |r| r.name == b.role_name && r.namespace == ns)
            .flat_map(|r| r.rules.iter())
    }

    /// Whether `user` may do `a`: a member of `system:masters`, or a rule
    /// of a role bound to the user by a ClusterRoleBinding, or by a
    /// RoleBinding of the request's namespace.
    pub fn allows(&self, user: &UserInfo, a: &Attributes) -> bool {
        if user.in_group(MASTERS) {
            return true;
        }
        let req_ns = match a {
            Attributes::Resource { namespace, .. } => namespace.as_str(),
            Attributes::NonResource { .. } => "",
        };
        self.bindings
            .iter()
            .filter(|b| b.namespace.is_empty() || (!req_ns.is_empty() && b.namespace == req_ns))
            .filter(|b| b.subjects.iter().any(|s| s.applies_to(user, &b.namespace)))
            .any(|b| self.rules_of(b).any(|r| r.allows(a)))
    }
}

impl Subject {
    /// How kube-apiserver's RBAC authorizer names the subject in a reason
    /// (`describeSubject`): `User "alice"`, `ServiceAccount "name/ns"`.
    fn describe(&self, binding_ns: &str) -> String {
        match self.kind.as_str() {
            "ServiceAccount" => {
                let ns = match self.namespace.is_empty() {
                    true => binding_ns,
                    false => &self.namespace,
                };
                format!("{} {:?}", self.kind, format!("{}/{ns}", self.name))
            }
            _ => format!("{} {:?}", self.kind, self.name),
        }
    }
}

impl Policy {
    /// The decision with kube-apiserver's reason, as a SubjectAccessReview
    /// reports it: `Some("")` for `system:masters` (the privileged-group
    /// authorizer gives no reason), `Some("RBAC: allowed by ClusterRoleBinding
    /// \"b\" of ClusterRole \"r\" to User \"u\"")` for a rule, `None`
    /// when nothing allows it (RBAC has no opinion: not allowed, not denied,
    /// no reason).
    pub fn allowed_by(&self, user: &UserInfo, a: &Attributes) -> Option<String> {
        if user.in_group(MASTERS) {
            return Some(String::new());
        }
        let req_ns = match a {
            Attributes::Resource { namespace, .. } => namespace.as_str(),
            Attributes::NonResource { .. } => "",
        };
        // Upstream visits ClusterRoleBindings first, then the RoleBindings
        // of the request's namespace.
        let cluster = self.bindings.iter().filter(|b| b.namespace.is_empty());
        let local = self
            .bindings
            .iter()
            .filter(|b| !b.namespace.is_empty() && !req_ns.is_empty() && b.namespace == req_ns);
        for b in cluster.chain(local) {
            let Some(s) = b.subjects.iter().find(|s| s.applies_to(user, &b.namespace)) else {
                continue;
            };
            if !self.rules_of(b).any(|r| r.allows(a)) {
                continue;
            }
            let who = s.describe(&b.namespace);
            return Some(match b.namespace.is_empty() {
                true => format!(
                    "RBAC: allowed by ClusterRoleBinding {:?} of {} {:?} to {who}",
                    b.name, b.role_kind, b.role_name
                ),
                false => format!(
                    "RBAC: allowed by RoleBinding {:?} of {} {:?} to {who}",
                    format!("{}/{}", b.name, b.namespace),
                    b.role_kind,
                    b.role_name
                ),
            });
        }
        None
    }
}

/// The 403 kube-apiserver answers a denied request with, e.g.
/// `pods is forbidden: User "u" cannot list resource "pods" in API group ""
/// at the cluster scope`.
pub fn forbidden(user: &UserInfo, a: &Attributes) -> ApiError {
    let u = &user.name;
    match a {
        Attributes::NonResource { verb, path } => ApiError::new(
            403,
            "Forbidden",
            format!("forbidden: User \"{u}\" cannot {verb} path \"{path}\""),
        )
        .with_details(json!({})),
        Attributes::Resource {
            verb,
            group,
            resource,
            namespace,
            name,
            ..
        } => {
            let shown = a.resource_path();
            let scope = match namespace.is_empty() {
                true => "at the cluster scope".to_string(),
                false => format!("in the namespace \"{namespace}\""),
            };
            let why = format!(
                "User \"{u}\" cannot {verb} resource \"{shown}\" in API group \"{group}\" {scope}"
            );
            let qualified = match group.is_empty() {
                true => resource.clone(),
                false => format!("{resource}.{group}"),
            };
            let message = match name.is_empty() {
                true => format!("{qualified} is forbidden: {why}"),
                false => format!("{qualified} \"{name}\" is forbidden: {why}"),
            };
            let mut details = json!({"kind": resource});
            if !name.is_empty() {
                details["name"] = json!(name);
            }
            if !group.is_empty() {
                details["group"] = json!(group);
            }
            ApiError::new(403, "Forbidden", message).with_details(details)
        }
    }
}

#[cfg(test)]
#[path = "rbac_tests.rs"]
mod tests;
