//! Request counters and the latency histogram of the public port, for `/metrics`.
//!
//! Kept whether or not `stats.enabled` is on (Prometheus scraping does not depend on the
//! statistics database). The endpoint label is the registered path; requests to paths with no
//! registered endpoint share the label `other`, so a scanner cannot mint unbounded series.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Labels of the request counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// Endpoint path without the leading `/`, or `other`.
    pub endpoint: String,
    /// HTTP status code.
    pub status: u16,
}

/// Labels of the latency histogram.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EndpointLabel {
    /// Endpoint path without the leading `/`, or `other`.
    pub endpoint: String,
}

type HistogramFamily = Family<EndpointLabel, Histogram, fn() -> Histogram>;

/// The data plane's request metrics.
#[derive(Debug, Clone)]
pub struct RequestMetrics {
    requests: Family<RequestLabels, Counter>,
    latency: HistogramFamily,
}

fn latency_histogram() -> Histogram {
    // 100 µs … ~3.3 s, doubling.
    Histogram::new(exponential_buckets(0.0001, 2.0, 16))
}

impl Default for RequestMetrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
        }
    }
}

impl RequestMetrics {
    /// Registers the families in `registry` (prefix `pharos_`).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "pharos_http_requests",
            "Requests on the public port by endpoint and status",
            self.requests.clone(),
        );
        registry.register(
            "pharos_http_request_duration_seconds",
            "Time to the response head on the public port",
            self.latency.clone(),
        );
    }

    /// Counts one request.
    pub fn observe(&self, endpoint: &str, status: u16, seconds: f64) {
        let endpoint = endpoint.to_owned();
        self.latency
            .get_or_create(&EndpointLabel {
                endpoint: endpoint.clone(),
            })
            .observe(seconds);
        self.requests
            .get_or_create(&RequestLabels { endpoint, status })
            .inc();
    }
}
