//! The reads of `endpointd explain`: the Service, the pods of its
//! namespace, the nodes, its Endpoints and its EndpointSlices — one-shot
//! paginated LISTs and GETs through the configured client. Must never
//! write, and never start an informer.

use super::analyze::{analyze, ExplainInputs, Explanation};
use endpointd_kube::informer::SERVICE_NAME_LABEL;
use endpointd_kube::kube::paging::{Paging, PagingError, DEFAULT_MAX_LIST_PAGES};
use endpointd_kube::kube::{
    self, Client, ListParams, Resource, ENDPOINTS, ENDPOINTSLICES, NODES, PODS, SERVICES,
};
use endpointd_kube::model::{EndpointSlice, Endpoints, Object, Service};
use std::fmt;
use std::sync::Arc;

/// Why `explain` could not produce a report.
#[derive(Debug)]
pub enum ExplainError {
    /// The Service does not exist.
    NoSuchService {
        /// `namespace/name`.
        key: String,
    },
    /// A LIST broke its bounds (too many objects or pages, or a
    /// repeated continue token).
    Paging {
        /// What was listed.
        what: String,
        /// Which bound.
        source: PagingError,
    },
    /// A read failed.
    Read {
        /// What was read.
        what: String,
        /// The client's error.
        source: kube::Error,
    },
}

impl fmt::Display for ExplainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExplainError::NoSuchService { key } => write!(f, "service {key} not found"),
            ExplainError::Paging { what, source } => write!(f, "listing {what}: {source}"),
            ExplainError::Read { what, source } => write!(f, "reading {what}: {source}"),
        }
    }
}

impl std::error::Error for ExplainError {}

/// Every object of `r` in `ns` (all pages, within the informers' bounds).
fn list_all<T: Object>(
    client: &Client,
    r: &Resource,
    ns: Option<&str>,
    label_selector: Option<String>,
    max_items: usize,
) -> Result<Vec<Arc<T>>, ExplainError> {
    let mut out = Vec::new();
    let mut cont = None;
    let mut paging = Paging::new(max_items, DEFAULT_MAX_LIST_PAGES);
    loop {
        let p = ListParams {
            label_selector: label_selector.clone(),
            limit: Some(500),
            continue_token: cont.take(),
            ..ListParams::default()
        };
        let page = client
            .list::<T>(r, ns, &p)
            .map_err(|source| ExplainError::Read {
                what: r.label(),
                source,
            })?;
        let n = page.items.len();
        out.extend(page.items.into_iter().map(Arc::new));
        match paging.page(n, page.continue_token) {
            Ok(Some(c)) => cont = Some(c),
            Ok(None) => return Ok(out),
            Err(source) => {
                return Err(ExplainError::Paging {
                    what: r.label(),
                    source,
                })
            }
        }
    }
}

/// Read everything and analyse it. `max_list_items` bounds each LIST as
/// `kubernetes.max_list_items` bounds the informers'.
pub fn explain(
    client: &Client,
    namespace: &str,
    name: &str,
    max_endpoints_per_slice: usize,
    max_list_items: usize,
) -> Result<Explanation, ExplainError> {
    let key = format!("{namespace}/{name}");
    let svc: Service = match client.get(&SERVICES, Some(namespace), name) {
        Ok(s) => s,
        Err(e) if e.is_not_found() => return Err(ExplainError::NoSuchService { key }),
        Err(source) => {
            return Err(ExplainError::Read {
                what: format!("service {key}"),
                source,
            })
        }
    };
    let endpoints: Option<Endpoints> = match client.get(&ENDPOINTS, Some(namespace), name) {
        Ok(e) => Some(e),
        Err(e) if e.is_not_found() => None,
        Err(source) => {
            return Err(ExplainError::Read {
                what: format!("endpoints {key}"),
                source,
            })
        }
    };
    let pods = list_all(client, &PODS, Some(namespace), None, max_list_items)?;
    let nodes = list_all(client, &NODES, None, None, max_list_items)?;
    let slices: Vec<Arc<EndpointSlice>> = list_all(
        client,
        &ENDPOINTSLICES,
        Some(namespace),
        Some(format!("{SERVICE_NAME_LABEL}={name}")),
        max_list_items,
    )?;
    Ok(analyze(&ExplainInputs {
        service: &svc,
        pods: &pods,
        nodes: &nodes,
        endpoints: endpoints.as_ref(),
        slices: &slices,
        max_endpoints_per_slice,
    }))
}
