//! Over-capacity truncation (upstream `truncateEndpoints` in
//! `pkg/controller/endpoint/endpoints_controller.go`; docs/behaviour.md#up-a20):
//! an Endpoints object holds at most [`MAX_CAPACITY`] addresses.
//!
//! Pure; must never reorder what it keeps.

use endpointd_kube::model::{EndpointAddress, EndpointSubset};

/// Upstream `maxCapacity`.
pub const MAX_CAPACITY: usize = 1000;

/// Cut `subsets` to [`MAX_CAPACITY`] addresses as upstream does; true if
/// anything was cut. With at most 1000 ready addresses all are kept and
/// the not-ready ones share what is left; with more, every subset keeps
/// `ceil(its share × 1000)` ready addresses (bounded by what is left) and
/// every not-ready address is dropped. The first N of each list are kept.
pub fn truncate(subsets: &mut [EndpointSubset]) -> bool {
    let total_ready: usize = subsets.iter().map(|s| s.addresses.len()).sum();
    let total_not_ready: usize = subsets.iter().map(|s| s.not_ready_addresses.len()).sum();
    if total_ready + total_not_ready <= MAX_CAPACITY {
        return false;
    }
    let truncate_ready = total_ready > MAX_CAPACITY;
    let (max, num_total) = match truncate_ready {
        true => (MAX_CAPACITY, total_ready),
        false => (MAX_CAPACITY - total_ready, total_not_ready),
    };
    let mut can_be_added = max;
    for s in subsets.iter_mut() {
        let in_subset = match truncate_ready {
            true => s.addresses.len(),
            false => s.not_ready_addresses.len(),
        };
        let share = (in_subset as f64 / num_total as f64 * max as f64).ceil() as usize;
        let to_be_added = share.min(can_be_added);
        if truncate_ready {
            keep_first(&mut s.addresses, to_be_added);
            s.not_ready_addresses.clear();
            can_be_added -= s.addresses.len();
        } else {
            keep_first(&mut s.not_ready_addresses, to_be_added);
            can_be_added -= s.not_ready_addresses.len();
        }
    }
    true
}

fn keep_first(v: &mut Vec<EndpointAddress>, n: usize) {
    v.truncate(n);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addrs(prefix: &str, n: usize) -> Vec<EndpointAddress> {
        (0..n)
            .map(|i| EndpointAddress {
                ip: format!("{prefix}.{i}").into(),
                ..Default::default()
            })
            .collect()
    }

    fn subset(ready: usize, not_ready: usize, tag: &str) -> EndpointSubset {
        EndpointSubset {
            addresses: addrs(&format!("r{tag}"), ready),
            not_ready_addresses: addrs(&format!("n{tag}"), not_ready),
            ports: Vec::new(),
        }
    }

    fn sizes(s: &[EndpointSubset]) -> Vec<(usize, usize)> {
        s.iter()
            .map(|x| (x.addresses.len(), x.not_ready_addresses.len()))
            .collect()
    }

    /// Upstream TestTruncateEndpoints, in our words.
    type Row = (&'static str, Vec<(usize, usize)>, bool, Vec<(usize, usize)>);

    #[test]
    fn truncate_table() {
        let cases: Vec<Row> = vec![
            (
                "at capacity: untouched",
                vec![(1000, 0)],
                false,
                vec![(1000, 0)],
            ),
            (
                "under: untouched",
                vec![(500, 400)],
                false,
                vec![(500, 400)],
            ),
            (
                "ready within, not ready cut",
                vec![(800, 400)],
                true,
                vec![(800, 200)],
            ),
            (
                "ready over: not ready dropped",
                vec![(1200, 100)],
                true,
                vec![(1000, 0)],
            ),
            (
                "two subsets, ready within",
                vec![(300, 300), (300, 300)],
                true,
                vec![(300, 200), (300, 200)],
            ),
            (
                "two subsets, ready over (ceil shares)",
                vec![(900, 10), (600, 10)],
                true,
                vec![(600, 0), (400, 0)],
            ),
            (
                "uneven shares bounded by what is left",
                vec![(1, 999), (1, 2)],
                true,
                vec![(1, 997), (1, 1)],
            ),
            (
                "three subsets, ready over",
                vec![(501, 0), (501, 0), (1, 0)],
                true,
                vec![(500, 0), (500, 0), (0, 0)],
            ),
        ];
        for (what, input, cut, want) in cases {
            let mut s: Vec<EndpointSubset> = input
                .iter()
                .enumerate()
                .map(|(i, (r, n))| subset(*r, *n, &i.to_string()))
                .collect();
            assert_eq!(truncate(&mut s), cut, "{what}");
            assert_eq!(sizes(&s), want, "{what}");
            let total: usize = s
                .iter()
                .map(|x| x.addresses.len() + x.not_ready_addresses.len())
                .sum();
            assert!(total <= MAX_CAPACITY, "{what}");
        }
    }

    #[test]
    fn keeps_the_first_addresses() {
        let mut s = vec![subset(1001, 0, "x")];
        truncate(&mut s);
        assert_eq!(s[0].addresses.first().map(|a| a.ip.as_str()), Some("rx.0"));
        assert_eq!(s[0].addresses.last().map(|a| a.ip.as_str()), Some("rx.999"));
    }
}
