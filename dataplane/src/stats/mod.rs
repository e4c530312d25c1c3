//! Request statistics, data-plane side: one [`StatsRecord`] per request on the public port,
//! handed to a bounded lock-free [`Ring`] that the control plane drains into the database.
//!
//! The request path never waits on statistics: pushing is one lock-free operation, and when the
//! ring is full the oldest record is dropped (and counted) instead. Statistics never travel on
//! the command channel. Request counters and the latency histogram for `/metrics`
//! ([`metrics::RequestMetrics`]) are kept by the same measurement ([`capture`]) whether or not
//! records are kept.

pub mod capture;
pub mod metrics;

use std::sync::{Arc, OnceLock};

pub(crate) use pharos_runtime::stats_ring::{Ring, StatsRecord};

/// Where the handler of an authenticated endpoint leaves the client's entity identifier for the
/// statistics layer (a request extension, present only while that capture is on).
#[derive(Debug, Clone, Default)]
pub struct ClientEntitySlot(pub Arc<OnceLock<String>>);

impl ClientEntitySlot {
    /// Records the authenticated client of this request.
    pub fn set(&self, entity_id: &str) {
        let _ = self.0.set(entity_id.to_owned());
    }
}

/// Who answered a request, as the statistics file it: the hosted entity (`None`: the default
/// one) and, when the answer's route keeps it, the series its label counts into.
#[derive(Debug, Clone, Copy, Default)]
pub struct Served {
    /// The hosted entity answering, other than the default one.
    pub entity: Option<pharos_shared::hosted::EntityNo>,
    /// The series of the request's label, found before (see [`metrics::KnownSeries`]).
    pub series: Option<metrics::KnownSeries>,
}

/// Marks a response of the dispatcher's "no endpoint registered" branch, so that `/metrics`
/// and the request statistics label such requests [`UNMATCHED`] instead of minting a label per
/// scanned path.
#[derive(Debug, Clone, Copy)]
pub struct Unregistered;

/// The endpoint label of requests no registered endpoint (nor anything else) answered.
pub const UNMATCHED: &str = "unmatched";

/// Marks a response that the request metrics and statistics do not count: the health checks
/// and the Admin API on the public port (see [`unobserved`]). Only the federation routes are
/// measured; the marker is set on the routes that are not, so that those stay free of it.
#[derive(Debug, Clone, Copy)]
pub struct Unobserved;

/// `router` with every answer marked [`Unobserved`] (a layer on each of its routes: for routes
/// off the hot path only).
pub fn unobserved(router: axum::Router) -> axum::Router {
    router.layer(axum::middleware::map_response(
        |mut r: axum::response::Response| async move {
            r.extensions_mut().insert(Unobserved);
            r
        },
    ))
}
