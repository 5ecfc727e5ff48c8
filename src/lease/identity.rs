//! This instance's identity Lease (the heartbeat, after the seed's lease
//! controller `component-helpers/apimachinery/lease/controller.go` and
//! kube-apiserver's identity leases; docs/behaviour.md#up-f8, #up-f9): its name, its
//! label, the Lease itself, and when another instance's identity Lease
//! counts as abandoned.
//!
//! Pure; never does I/O.

use endpointd_kube::model::{Lease, LeaseSpec, MicroTime, ObjectMeta};
use std::time::{Duration, SystemTime};

/// Label on every endpointd identity Lease: `kubectl get leases -n
/// kube-system -l endpointd.io/identity` lists the live instances (as
/// `apiserver.kubernetes.io/identity=kube-apiserver` does for API servers).
pub const IDENTITY_LABEL: &str = "endpointd.io/identity";
/// Its value.
pub const IDENTITY_LABEL_VALUE: &str = "endpointd";
/// Identity Leases expired for longer than this are deleted by the leader.
pub const ABANDONED_AFTER: Duration = Duration::from_secs(3600);

/// A DNS-1123 subdomain from an identity (the default identity
/// `<hostname>_<uuid>` contains `_`): `endpointd-` + the identity
/// lowercased, every character outside `[a-z0-9-]` replaced by `-`,
/// trimmed to valid ends; names that would exceed 63 characters (kept
/// short enough to be a DNS label too, which every tool accepts) are cut
/// and get an FNV-1a hash of the whole identity so two long identities
/// never share a name.
pub fn lease_name(identity: &str) -> String {
    let mut body: String = identity
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    body = body.trim_matches('-').to_string();
    let name = format!("endpointd-{body}");
    if name.len() <= MAX_NAME && !body.is_empty() {
        return name;
    }
    let hash = identity.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    let cut: String = name.chars().take(MAX_NAME - 17).collect();
    format!("{}-{hash:016x}", cut.trim_end_matches('-'))
}

/// Longest identity Lease name we generate.
const MAX_NAME: usize = 63;

/// Longest `reportingInstance` kube-apiserver accepts on an Event.
pub const MAX_REPORTING_INSTANCE: usize = 128;

/// The Events' `reportingInstance` for `identity`: the identity itself,
/// cut at a character boundary to [`MAX_REPORTING_INSTANCE`] bytes if it
/// is ever longer (the configuration refuses such identities; this keeps
/// every Event acceptable whatever the identity came from).
pub fn reporting_instance(identity: &str) -> String {
    if identity.len() <= MAX_REPORTING_INSTANCE {
        return identity.to_string();
    }
    let mut end = MAX_REPORTING_INSTANCE;
    while !identity.is_char_boundary(end) {
        end -= 1;
    }
    identity[..end].to_string()
}

/// The identity Lease to create.
pub fn new_lease(namespace: &str, identity: &str, duration: Duration, wall: SystemTime) -> Lease {
    Lease {
        metadata: ObjectMeta {
            name: lease_name(identity).into(),
            namespace: namespace.into(),
            labels: [(IDENTITY_LABEL, IDENTITY_LABEL_VALUE)]
                .into_iter()
                .collect(),
            ..ObjectMeta::default()
        },
        spec: LeaseSpec {
            holder_identity: Some(identity.to_string()),
            lease_duration_seconds: Some(duration.as_secs().max(1) as i32),
            renew_time: Some(MicroTime::from_system(wall)),
            ..LeaseSpec::default()
        },
        ..Lease::default()
    }
}

/// The next renewal of `base` (the seed's `newLease` from the last written
/// lease: renewTime now, duration re-asserted).
pub fn renewed(base: &Lease, duration: Duration, wall: SystemTime) -> Lease {
    let mut l = base.clone();
    l.spec.renew_time = Some(MicroTime::from_system(wall));
    l.spec.lease_duration_seconds = Some(duration.as_secs().max(1) as i32);
    l
}

/// Whether another instance's identity Lease is abandoned at `wall`:
/// expired (renewTime + duration) for longer than `after`.
pub fn abandoned(l: &Lease, wall: SystemTime, after: Duration) -> bool {
    let Some(renew) = l.spec.renew_time else {
        return true;
    };
    let secs = l.spec.lease_duration_seconds.unwrap_or(0).max(0) as u64;
    let expired_at = renew.to_system() + Duration::from_secs(secs);
    wall.duration_since(expired_at).is_ok_and(|d| d > after)
}

#[cfg(test)]
mod tests {
    use super::*;
    use endpointd_base::names;

    #[test]
    fn the_reporting_instance_stays_within_the_api_limit() {
        let long_ascii = "n".repeat(300);
        let long_utf8 = "é".repeat(100); // 200 bytes
                                         // (identity, expected reportingInstance)
        let table = [
            ("node-a_1234", "node-a_1234".to_string()),
            (&long_ascii[..128], "n".repeat(128)),
            (&long_ascii[..], "n".repeat(128)),
            (&long_utf8[..], "é".repeat(64)),
        ];
        for (id, want) in table {
            let got = reporting_instance(id);
            assert_eq!(got, want, "{id}");
            assert!(got.len() <= MAX_REPORTING_INSTANCE);
        }
        let odd = format!("a{}", "é".repeat(100)); // the cut falls inside a character
        let got = reporting_instance(&odd);
        assert_eq!(got.len(), 127, "{got}");
    }

    #[test]
    fn lease_names_are_valid_and_distinct() {
        let long = "x".repeat(300);
        let long2 = format!("{}y", "x".repeat(299));
        let cases = [
            (
                "node-a_3f2c9e1a-0b4d-4e8a-9c1f-2d3e4f5a6b7c",
                "endpointd-node-a-3f2c9e1a-0b4d-4e8a-9c1f-2d3e4f5a6b7c",
            ),
            ("Node-A", "endpointd-node-a"),
            ("demo-a", "endpointd-demo-a"),
            ("__x__", "endpointd-x"),
        ];
        for (id, want) in cases {
            assert_eq!(lease_name(id), want, "{id}");
        }
        for id in [
            "_",
            "***",
            long.as_str(),
            long2.as_str(),
            "a.b_c",
            "a..b",
            "-lead-",
        ] {
            let n = lease_name(id);
            assert!(n.len() <= 63, "{id}");
            assert!(names::is_dns1123_subdomain(&n), "{id} → {n}");
        }
        assert_ne!(lease_name(&long), lease_name(&long2));
    }

    #[test]
    fn abandoned_after_an_hour_past_expiry() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let l = new_lease("kube-system", "a", Duration::from_secs(40), t);
        assert_eq!(
            l.metadata.labels.get(IDENTITY_LABEL),
            Some(IDENTITY_LABEL_VALUE)
        );
        assert!(!abandoned(&l, t, ABANDONED_AFTER));
        assert!(!abandoned(
            &l,
            t + Duration::from_secs(40 + 3600),
            ABANDONED_AFTER
        ));
        assert!(abandoned(
            &l,
            t + Duration::from_secs(40 + 3601),
            ABANDONED_AFTER
        ));
        let r = renewed(&l, Duration::from_secs(40), t + Duration::from_secs(10));
        assert_eq!(
            r.spec.renew_time,
            Some(MicroTime::from_system(t + Duration::from_secs(10)))
        );
    }
}
