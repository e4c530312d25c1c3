//! Request counters and the latency histogram of the public port, for `/metrics`.
//!
//! Kept whether or not `stats.enabled` is on (Prometheus scraping does not depend on the
//! statistics database). The endpoint label is the registered path; requests to paths with no
//! registered endpoint share the label `unmatched`, so a scanner cannot mint unbounded series.
//! A hosted entity's series carry its number as `entity` (two entities at the root of two
//! hosts have the same paths); the default entity's have no such label, as before entities
//! were hosted, so existing queries and alerts keep matching.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use pharos_shared::hosted::EntityNo;
use prometheus_client::encoding::{EncodeLabel as _, EncodeLabelSet, LabelSetEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use rustc_hash::FxBuildHasher;

/// Labels of the request counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct RequestLabels {
    /// Endpoint path without the leading `/`, or `unmatched`.
    pub endpoint: String,
    /// HTTP status code.
    pub status: u16,
    /// The hosted entity answering; `None` for the default entity (no label).
    pub entity: Option<i64>,
}

impl EncodeLabelSet for RequestLabels {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> std::fmt::Result {
        ("endpoint", self.endpoint.as_str()).encode(encoder.encode_label())?;
        ("status", self.status).encode(encoder.encode_label())?;
        encode_entity(self.entity, encoder)
    }
}

/// Labels of the latency histogram.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct EndpointLabel {
    /// Endpoint path without the leading `/`, or `unmatched`.
    pub endpoint: String,
    /// As [`RequestLabels::entity`].
    pub entity: Option<i64>,
}

impl EncodeLabelSet for EndpointLabel {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> std::fmt::Result {
        ("endpoint", self.endpoint.as_str()).encode(encoder.encode_label())?;
        encode_entity(self.entity, encoder)
    }
}

/// The `entity` label of a hosted entity's series (none for the default entity's).
fn encode_entity(entity: Option<i64>, encoder: &mut LabelSetEncoder) -> std::fmt::Result {
    match entity {
        Some(n) => ("entity", n).encode(encoder.encode_label()),
        None => Ok(()),
    }
}

type HistogramFamily = Family<EndpointLabel, Histogram, fn() -> Histogram>;

type BySeries =
    HashMap<Option<i64>, HashMap<Box<str>, EndpointSeries, FxBuildHasher>, FxBuildHasher>;

/// The series of one endpoint label: its histogram and its counters by status. Handles share
/// their values with the families' series, so counting through them is what `/metrics` shows.
#[derive(Debug)]
struct EndpointSeries {
    latency: Histogram,
    by_status: Vec<(u16, Counter)>,
}

/// The data plane's request metrics.
#[derive(Debug, Clone)]
pub struct RequestMetrics {
    requests: Family<RequestLabels, Counter>,
    latency: HistogramFamily,
    /// Handles by entity (`None`: the default one) and endpoint label, found by `&str`: a
    /// request then builds no label set and allocates nothing. As bounded as the families
    /// (hosted entities' registered paths and `unmatched`); the labels are not chosen by
    /// clients, so the maps hash with FxHash, not SipHash.
    series: Arc<RwLock<BySeries>>,
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
            series: Arc::default(),
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

    /// Counts one request answered by `entity` (`None`: the default entity).
    pub fn observe(&self, entity: Option<EntityNo>, endpoint: &str, status: u16, seconds: f64) {
        let entity = entity.map(EntityNo::get);
        // A poisoned lock only means another request panicked while counting; the map is
        // still whole, so counting goes on.
        {
            let series = self.series.read().unwrap_or_else(|e| e.into_inner());
            if let Some(s) = series.get(&entity).and_then(|e| e.get(endpoint))
                && let Some((_, counter)) = s.by_status.iter().find(|(st, _)| *st == status)
            {
                s.latency.observe(seconds);
                counter.inc();
                return;
            }
        }
        let mut series = self.series.write().unwrap_or_else(|e| e.into_inner());
        let s = series
            .entry(entity)
            .or_default()
            .entry(endpoint.into())
            .or_insert_with(|| EndpointSeries {
                latency: self
                    .latency
                    .get_or_create(&EndpointLabel {
                        endpoint: endpoint.to_owned(),
                        entity,
                    })
                    .clone(),
                by_status: Vec::new(),
            });
        let counter = match s.by_status.iter().find(|(st, _)| *st == status) {
            Some((_, c)) => c.clone(),
            None => {
                let c = self
                    .requests
                    .get_or_create(&RequestLabels {
                        endpoint: endpoint.to_owned(),
                        status,
                        entity,
                    })
                    .clone();
                s.by_status.push((status, c.clone()));
                c
            }
        };
        s.latency.observe(seconds);
        counter.inc();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;

    #[test]
    fn cached_handles_count_into_the_registered_series() {
        let m = RequestMetrics::default();
        let mut registry = Registry::default();
        m.register(&mut registry);
        for _ in 0..3 {
            m.observe(None, "fetch", 200, 0.001);
        }
        m.observe(None, "fetch", 404, 0.001);
        m.observe(None, "unmatched", 404, 0.001);
        // A hosted entity at the root of another host: the same path, its own series.
        m.observe(EntityNo::new(2), "fetch", 200, 0.001);
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        assert!(text.contains(r#"pharos_http_requests_total{endpoint="fetch",status="200"} 3"#));
        assert!(text.contains(r#"pharos_http_requests_total{endpoint="fetch",status="404"} 1"#));
        assert!(
            text.contains(r#"pharos_http_requests_total{endpoint="unmatched",status="404"} 1"#)
        );
        assert!(text.contains(r#"pharos_http_request_duration_seconds_count{endpoint="fetch"} 4"#));
        assert!(
            text.contains(
                r#"pharos_http_requests_total{endpoint="fetch",status="200",entity="2"} 1"#
            ),
            "{text}"
        );
        assert!(text.contains(
            r#"pharos_http_request_duration_seconds_count{endpoint="fetch",entity="2"} 1"#
        ));
    }
}
