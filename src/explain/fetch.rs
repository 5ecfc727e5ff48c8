//! The reads of `endpointd explain`: the Service, the pods of its
//! namespace, the nodes, its Endpoints and its EndpointSlices — one-shot
//! paginated LISTs and GETs through the configured client. Must never
//! write, and never start an informer.

use super::analyze::{analyze, Inputs, Report};
use crate::informer::SERVICE_NAME_LABEL;
use crate::kube::{
    self, Client, ListParams, Resource, ENDPOINTS, ENDPOINTSLICES, NODES, PODS, SERVICES,
};
use crate::model::{EndpointSlice, Endpoints, Object, Service};
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
            ExplainError::Read { what, source } => write!(f, "reading {what}: {source}"),
        }
    }
}

impl std::error::Error for ExplainError {}

/// Every object of `r` in `ns` (all pages).
fn list_all<T: Object>(
    client: &Client,
    r: &Resource,
    ns: Option<&str>,
    label_selector: Option<String>,
) -> Result<Vec<Arc<T>>, ExplainError> {
    let mut out = Vec::new();
    let mut cont = None;
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
        out.extend(page.items.into_iter().map(Arc::new));
        match page.continue_token {
            Some(c) => cont = Some(c),
            None => return Ok(out),
        }
    }
}

/// Read everything and analyse it.
pub fn explain(
    client: &Client,
    namespace: &str,
    name: &str,
    max_endpoints_per_slice: usize,
) -> Result<Report, ExplainError> {
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
    let pods = list_all(client, &PODS, Some(namespace), None)?;
    let nodes = list_all(client, &NODES, None, None)?;
    let slices: Vec<Arc<EndpointSlice>> = list_all(
        client,
        &ENDPOINTSLICES,
        Some(namespace),
        Some(format!("{SERVICE_NAME_LABEL}={name}")),
    )?;
    Ok(analyze(&Inputs {
        service: &svc,
        pods: &pods,
        nodes: &nodes,
        endpoints: endpoints.as_ref(),
        slices: &slices,
        max_endpoints_per_slice,
    }))
}
