//! Authorization of each authenticated request (kube-sim
//! `--authorization-mode RBAC`) and the access log it keeps: per user,
//! verb, resource and scope, how many requests were allowed and denied —
//! what the least-privilege tests compare with `systemd/rbac.yaml`.
//!
//! It decides and records only; the policy evaluation is `rbac`'s, the
//! users are `authn`'s. With authorization off it allows everything and
//! records nothing (no cost on the hot path). It never sees credentials.

use super::rbac::{forbidden, Attributes, Policy, UserInfo};
use super::requestinfo::RequestInfo;
use endpointd_base::httpd::Response;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Distinct (user, verb, group, resource, namespace) entries the access
/// log keeps; later new ones are counted under `(other)`.
pub const MAX_ACCESS_LOG: usize = 4096;

/// One line of the access log.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Access {
    /// The user.
    pub user: String,
    /// The verb ("list", …; lower-case HTTP method for other paths).
    pub verb: String,
    /// API group ("" for core).
    pub group: String,
    /// Resource, "res/sub" for a subresource; the path for other requests.
    pub resource: String,
    /// Namespace, "" for cluster scope.
    pub namespace: String,
    /// Requests allowed.
    pub allowed: u64,
    /// Requests denied (403).
    pub denied: u64,
}

type Key = (String, String, String, String, String);

/// The authorizer: `None` policy allows everything (the default).
#[derive(Debug, Default)]
pub struct Authorizer {
    policy: Option<Policy>,
    log: Mutex<BTreeMap<Key, (u64, u64)>>,
}

/// The attributes of a classified resource request. As upstream's
/// RequestInfoFactory, a request on one namespace object is in that
/// namespace (a RoleBinding there may grant `get` on it).
pub fn attributes(info: &RequestInfo) -> Attributes {
    let namespace = match (info.resource.as_str(), &info.namespace, &info.name) {
        (_, Some(ns), _) => ns.clone(),
        ("namespaces", None, Some(name)) => name.clone(),
        _ => String::new(),
    };
    Attributes::Resource {
        verb: info.verb.as_str().to_string(),
        group: info.group.clone(),
        resource: info.resource.clone(),
        subresource: info.subresource.clone().unwrap_or_default(),
        namespace,
        name: info.name.clone().unwrap_or_default(),
    }
}

impl Authorizer {
    /// Allow everything, record nothing.
    pub fn always_allow() -> Authorizer {
        Authorizer::default()
    }

    /// Evaluate `policy` (plus the bootstrap discovery role).
    pub fn rbac(mut policy: Policy) -> Authorizer {
        let boot = Policy::bootstrap();
        policy.roles.extend(boot.roles);
        policy.bindings.extend(boot.bindings);
        Authorizer {
            policy: Some(policy),
            log: Mutex::default(),
        }
    }

    /// Whether authorization is on.
    pub fn enabled(&self) -> bool {
        self.policy.is_some()
    }

    /// `None` if `user` may make the resource request `info`, else the 403.
    ///
    /// (The access log keeps at most [`MAX_ACCESS_LOG`] distinct entries.)
    pub fn resource(&self, user: &UserInfo, info: &RequestInfo) -> Option<Response> {
        self.check(user, attributes(info))
    }

    /// `None` if `user` may `method` the non-resource `path`, else the 403.
    pub fn non_resource(&self, user: &UserInfo, method: &str, path: &str) -> Option<Response> {
        // kube-apiserver: the lowercased method (`head` is not `get`).
        let verb = method.to_ascii_lowercase();
        self.check(
            user,
            Attributes::NonResource {
                verb,
                path: path.to_string(),
            },
        )
    }

    fn check(&self, user: &UserInfo, a: Attributes) -> Option<Response> {
        let policy = self.policy.as_ref()?;
        let ok = policy.allows(user, &a);
        let key = match &a {
            Attributes::Resource {
                verb,
                group,
                namespace,
                ..
            } => {
                let r = a.resource_path();
                (
                    user.name.clone(),
                    verb.clone(),
                    group.clone(),
                    r,
                    namespace.clone(),
                )
            }
            Attributes::NonResource { verb, path } => (
                user.name.clone(),
                verb.clone(),
                String::new(),
                path.clone(),
                String::new(),
            ),
        };
        {
            let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
            // Bounded: requests for arbitrary paths or resources must not
            // grow it without end; past the bound new ones are folded.
            let key = match log.len() >= MAX_ACCESS_LOG && !log.contains_key(&key) {
                true => (key.0, key.1, String::new(), "(other)".into(), String::new()),
                false => key,
            };
            let e = log.entry(key).or_insert((0, 0));
            match ok {
                true => e.0 += 1,
                false => e.1 += 1,
            }
        }
        match ok {
            true => None,
            false => Some(forbidden(user, &a).to_response()),
        }
    }

    /// What a SubjectAccessReview of `a` for `user` reports: whether it is
    /// allowed and kube-apiserver's reason (see
    /// [`Policy::allowed_by`]). With authorization off everything is
    /// allowed, with no reason (upstream's AlwaysAllow). Not recorded in
    /// the access log: the review itself is the request.
    pub fn review(&self, user: &UserInfo, a: &Attributes) -> (bool, String) {
        match &self.policy {
            None => (true, String::new()),
            Some(p) => match p.allowed_by(user, a) {
                Some(reason) => (true, reason),
                None => (false, String::new()),
            },
        }
    }

    /// The access log so far (empty with authorization off).
    pub fn log(&self) -> Vec<Access> {
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(
                |((user, verb, group, resource, namespace), (allowed, denied))| Access {
                    user: user.clone(),
                    verb: verb.clone(),
                    group: group.clone(),
                    resource: resource.clone(),
                    namespace: namespace.clone(),
                    allowed: *allowed,
                    denied: *denied,
                },
            )
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authn::user_with_groups;

    #[test]
    fn non_resource_verbs_are_the_lowercased_method_and_the_log_is_bounded() {
        let a = Authorizer::rbac(Policy::default());
        let anon = user_with_groups("system:anonymous", &["system:unauthenticated"]);
        let _ = a.non_resource(&anon, "HEAD", "/version");
        assert!(a.log().iter().any(|e| e.verb == "head"), "{:?}", a.log());
        for i in 0..(MAX_ACCESS_LOG + 500) {
            let _ = a.non_resource(&anon, "GET", &format!("/junk/{i}"));
        }
        let log = a.log();
        assert!(log.len() <= MAX_ACCESS_LOG + 1, "{}", log.len());
        let other = log
            .iter()
            .find(|e| e.resource == "(other)")
            .expect("folded");
        assert!(other.allowed + other.denied >= 500);
    }
}
