//! Request counters and the latency histogram of the public port, for `/metrics`.
//!
//! Kept whether or not `stats.enabled` is on (Prometheus scraping does not depend on the
//! statistics database). The endpoint label is the registered path; requests to paths with no
//! registered endpoint share the label `unmatched`, so a scanner cannot mint unbounded series.
//! A hosted entity's series carry its number as `entity` (two entities at the root of two
//! hosts have the same paths); the default entity's have no such label, as before entities
//! were hosted, so existing queries and alerts keep matching.
//!
//! Every request counts here, so counting is laid out for the request path rather than taken
//! from `prometheus_client`'s families: one (entity, endpoint) pair's counters by status and
//! its histogram are atomics in one block ([`Series`]), found in one map that is read without
//! a lock and copied only when a pair counts for the first time. A fast answer adds to one
//! cache line of its pair's block, with no lock; the families' histogram took a lock to write, and
//! reached its counter, histogram and buckets through four allocations. With a thousand hosted
//! entities and a random one per request, each of those was a cache miss. The exposition is
//! the same two families, written at scrape time ([`Collector`]).
//!
//! A series' block, once made, is never freed, so it may be held as a plain reference
//! ([`KnownSeries`]). A hosted entity's route keeps the series of its ready answers that way
//! and counts into it without the map: with a random entity per request, the map's bucket and
//! the entity's own label bytes were two more cache misses per request. The map loses only a
//! deleted entity's series ([`RequestMetrics::retire`]): they leave `/metrics` with the
//! entity, as its other families do, while their blocks stay for a request still counting.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use arc_swap::ArcSwap;
use pharos_shared::hosted::EntityNo;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeLabel as _, EncodeLabelSet, LabelSetEncoder, NoLabelSet,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use rustc_hash::FxBuildHasher;

/// Labels of the request counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct RequestLabels<'a> {
    /// Endpoint path without the leading `/`, or `unmatched`.
    endpoint: &'a str,
    /// HTTP status code.
    status: u16,
    /// The hosted entity answering; `None` for the default entity (no label).
    entity: Option<i64>,
}

impl EncodeLabelSet for RequestLabels<'_> {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> std::fmt::Result {
        ("endpoint", self.endpoint).encode(encoder.encode_label())?;
        ("status", self.status).encode(encoder.encode_label())?;
        encode_entity(self.entity, encoder)
    }
}

/// Labels of the latency histogram.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct EndpointLabel<'a> {
    /// Endpoint path without the leading `/`, or `unmatched`.
    endpoint: &'a str,
    /// As [`RequestLabels::entity`].
    entity: Option<i64>,
}

impl EncodeLabelSet for EndpointLabel<'_> {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> std::fmt::Result {
        ("endpoint", self.endpoint).encode(encoder.encode_label())?;
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

/// Upper bounds of the latency buckets: 100 µs … ~3.3 s, doubling; then `+Inf`.
const BOUNDS: [f64; 16] = {
    let mut b = [0.0001; 16];
    let mut i = 1;
    while i < 16 {
        b[i] = b[i - 1] * 2.0;
        i += 1;
    }
    b
};

/// Statuses one series counts in place; more distinct ones (rare: an endpoint answers a
/// handful) go to its overflow list.
const STATUS_SLOTS: usize = 8;

/// Buckets kept in the first cache line of a [`Series`], with the sum and the first status
/// slot.
const LOW_BUCKETS: usize = 5;

/// A status slot: the status (0 until one claims it) and its count.
type StatusSlot = (AtomicU32, AtomicU64);

/// One (entity, endpoint) pair's counts. Laid out so that a fast answer (under 100 µs: the
/// first bucket) with the pair's first status, which is what most answers are, touches one
/// cache line: the sum, the first status slot and the lowest buckets come first. With a random
/// hosted entity per request, each line is a cache miss.
#[derive(Debug, Default)]
#[repr(C, align(64))]
struct Series {
    /// Sum of the observed latencies, in nanoseconds (an integer add, exact to the
    /// nanosecond over any realistic lifetime: 2^64 ns is 584 years).
    sum_nanos: AtomicU64,
    /// The first status slot (the first status counted, usually 200).
    first: StatusSlot,
    /// Observations in the lowest buckets (not cumulative).
    low: [AtomicU64; LOW_BUCKETS],
    /// Observations in the others, the last one `+Inf`.
    high: [AtomicU64; BOUNDS.len() + 1 - LOW_BUCKETS],
    /// The other status slots.
    more: [StatusSlot; STATUS_SLOTS - 1],
    /// Statuses beyond the slots.
    overflow: Mutex<Vec<(u16, u64)>>,
}

// The first line holds everything a fast answer counts.
const _: () = assert!(std::mem::offset_of!(Series, high) <= 64);

impl Series {
    fn observe(&self, status: u16, seconds: f64) {
        // `as` saturates: a negative or absurd reading cannot wrap the sum.
        self.sum_nanos.fetch_add((seconds * 1e9) as u64, Relaxed);
        let bucket = BOUNDS
            .iter()
            .position(|b| seconds <= *b)
            .unwrap_or(BOUNDS.len());
        let counter = match bucket.checked_sub(LOW_BUCKETS) {
            None => self.low.get(bucket),
            Some(high) => self.high.get(high),
        };
        if let Some(b) = counter {
            b.fetch_add(1, Relaxed);
        }
        let want = u32::from(status);
        for (slot, count) in self.slots() {
            let held = slot.load(Relaxed);
            if held == want
                || (held == 0
                    && match slot.compare_exchange(0, want, Relaxed, Relaxed) {
                        Ok(_) => true,
                        Err(other) => other == want,
                    })
            {
                count.fetch_add(1, Relaxed);
                return;
            }
        }
        // A poisoned lock only means another request panicked while counting; the list is
        // still whole, so counting goes on.
        let mut more = self.overflow.lock().unwrap_or_else(|e| e.into_inner());
        match more.iter_mut().find(|(s, _)| *s == status) {
            Some((_, n)) => *n += 1,
            None => more.push((status, 1)),
        }
    }

    /// Counts by status, in status order.
    fn by_status(&self) -> Vec<(u16, u64)> {
        let mut out: Vec<(u16, u64)> = self
            .slots()
            .filter_map(|(slot, count)| {
                let status = u16::try_from(slot.load(Relaxed)).ok().filter(|s| *s != 0)?;
                Some((status, count.load(Relaxed)))
            })
            .collect();
        out.extend(
            self.overflow
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .copied(),
        );
        out.sort_unstable();
        out
    }

    /// Every bucket, in order.
    fn buckets(&self) -> impl Iterator<Item = &AtomicU64> {
        self.low.iter().chain(&self.high)
    }

    /// Every status slot, the first one first.
    fn slots(&self) -> impl Iterator<Item = &StatusSlot> {
        std::iter::once(&self.first).chain(&self.more)
    }

    /// The histogram as the exposition wants it: sum in seconds, count, (bound, count) per
    /// bucket.
    fn histogram(&self) -> (f64, u64, Vec<(f64, u64)>) {
        let buckets: Vec<(f64, u64)> = BOUNDS
            .iter()
            .copied()
            .chain(std::iter::once(f64::MAX))
            .zip(self.buckets())
            .map(|(bound, n)| (bound, n.load(Relaxed)))
            .collect();
        let count = buckets.iter().map(|(_, n)| n).sum();
        let sum = self.sum_nanos.load(Relaxed) as f64 / 1e9;
        (sum, count, buckets)
    }
}

/// A series' key: the hosted entity (`None`: the default one) and the endpoint label. Keys
/// with the same label share one copy of it: a lookup compares the request's label with it,
/// and a thousand entities' `fetch` read one string that stays in cache, not a thousand.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    entity: Option<i64>,
    endpoint: Arc<str>,
}

/// A [`Key`] borrowed from a request: found without allocating.
#[derive(Hash)]
struct Lookup<'a> {
    entity: Option<i64>,
    endpoint: &'a str,
}

impl hashbrown::Equivalent<Key> for Lookup<'_> {
    fn equivalent(&self, key: &Key) -> bool {
        self.entity == key.entity && self.endpoint == &*key.endpoint
    }
}

// `Lookup` must hash as `Key` does: the derived impls hash the same fields in the same order,
// and `Arc<str>` hashes as `str`.
type SeriesMap = hashbrown::HashMap<Key, &'static Series, FxBuildHasher>;

/// The data plane's request metrics.
#[derive(Debug, Clone, Default)]
pub struct RequestMetrics {
    shared: Arc<Shared>,
}

/// What the clones of one [`RequestMetrics`] share.
#[derive(Debug, Default)]
struct Shared {
    /// Series by entity and endpoint label. As bounded as the families were (hosted entities'
    /// registered paths and `unmatched`); the labels are not chosen by clients, so the map
    /// hashes with FxHash, not SipHash.
    map: ArcSwap<SeriesMap>,
    /// Held while the map changes.
    making: Mutex<Retired>,
}

/// The deleted entities, whose series are no longer shown.
#[derive(Debug, Default)]
struct Retired {
    /// Their numbers (never given to another entity: a deleted entity's rows stay).
    entities: HashSet<i64>,
    /// Where a request to one of them that ends after its deletion counts: one block for all,
    /// in no map.
    sink: Option<&'static Series>,
}

const REQUESTS: &str = "pharos_http_requests";
const REQUESTS_HELP: &str = "Requests on the public port by endpoint and status";
const LATENCY: &str = "pharos_http_request_duration_seconds";
const LATENCY_HELP: &str = "Time to the response head on the public port";

impl RequestMetrics {
    /// Registers the families in `registry` (prefix `pharos_`).
    pub fn register(&self, registry: &mut Registry) {
        registry.register_collector(Box::new(self.clone()));
    }

    /// Counts one request answered by `entity` (`None`: the default entity).
    pub fn observe(&self, entity: Option<EntityNo>, endpoint: &str, status: u16, seconds: f64) {
        self.find(entity, endpoint).observe(status, seconds);
    }

    /// The series of `entity`'s `endpoint`, to count into later without looking it up.
    pub fn series(&self, entity: Option<EntityNo>, endpoint: &str) -> KnownSeries {
        KnownSeries {
            series: self.find(entity, endpoint),
            of: self.id(),
        }
    }

    /// Counts one request into `known` when it is one of these metrics' series; `false`
    /// (nothing counted) when it is another's.
    pub fn observe_known(&self, known: KnownSeries, status: u16, seconds: f64) -> bool {
        if known.of != self.id() {
            return false;
        }
        known.series.observe(status, seconds);
        true
    }

    /// Takes the series of `entity`, deleted, out of the exposition. A request still answered
    /// by it counts into no shown series, and none is made for it again.
    pub fn retire(&self, entity: EntityNo) {
        let mut retired = self.shared.making.lock().unwrap_or_else(|e| e.into_inner());
        retired.entities.insert(entity.get());
        let map = self.shared.map.load();
        if map.keys().any(|k| k.entity == Some(entity.get())) {
            let mut next = SeriesMap::clone(&map);
            next.retain(|k, _| k.entity != Some(entity.get()));
            self.shared.map.store(Arc::new(next));
        }
    }

    /// What tells these metrics from others: the address of their shared state.
    fn id(&self) -> usize {
        Arc::as_ptr(&self.shared).addr()
    }

    /// The series of `entity`'s `endpoint`, made on its first request.
    fn find(&self, entity: Option<EntityNo>, endpoint: &str) -> &'static Series {
        let key = Lookup {
            entity: entity.map(EntityNo::get),
            endpoint,
        };
        if let Some(s) = self.shared.map.load().get(&key) {
            return s;
        }
        // The pair's first request: a new map with it, made by one request at a time (so that
        // a block is made only for the map that keeps it). A poisoned lock only means a
        // request panicked while making one; the map it guards is whole.
        let mut retired = self.shared.making.lock().unwrap_or_else(|e| e.into_inner());
        let map = self.shared.map.load();
        if let Some(s) = map.get(&key) {
            return s;
        }
        if key.entity.is_some_and(|e| retired.entities.contains(&e)) {
            return retired
                .sink
                .get_or_insert_with(|| Box::leak(Box::default()));
        }
        let series: &'static Series = Box::leak(Box::default());
        let mut next = SeriesMap::clone(&map);
        let endpoint = map
            .keys()
            .find(|k| *k.endpoint == *endpoint)
            .map_or_else(|| Arc::from(endpoint), |k| Arc::clone(&k.endpoint));
        next.insert(
            Key {
                entity: key.entity,
                endpoint,
            },
            series,
        );
        self.shared.map.store(Arc::new(next));
        series
    }
}

/// A series found once (see [`RequestMetrics::series`]), with the metrics it belongs to.
#[derive(Debug, Clone, Copy)]
pub struct KnownSeries {
    series: &'static Series,
    of: usize,
}

impl KnownSeries {
    /// Reads the line a request's count will be added to, now rather than when the answer is
    /// counted: a random hosted entity's series is a cache miss, and read here, beside the
    /// request's other misses (its publication point), it is waited for once with them
    /// instead of alone at the end of the request.
    pub fn touch(&self) {
        std::hint::black_box(self.series.sum_nanos.load(Relaxed));
    }
}

impl Collector for RequestMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        let map = self.shared.map.load();
        // In a stable order, the default entity's first: scrapes compare line by line.
        let mut series: Vec<(&Key, &&Series)> = map.iter().collect();
        series
            .sort_unstable_by(|a, b| (a.0.entity, &a.0.endpoint).cmp(&(b.0.entity, &b.0.endpoint)));
        {
            let mut family =
                encoder.encode_descriptor(REQUESTS, REQUESTS_HELP, None, MetricType::Counter)?;
            for (key, s) in &series {
                for (status, n) in s.by_status() {
                    let labels = RequestLabels {
                        endpoint: &key.endpoint,
                        status,
                        entity: key.entity,
                    };
                    family
                        .encode_family(&labels)?
                        .encode_counter::<NoLabelSet, _, u64>(&n, None)?;
                }
            }
        }
        let mut family =
            encoder.encode_descriptor(LATENCY, LATENCY_HELP, None, MetricType::Histogram)?;
        for (key, s) in &series {
            let labels = EndpointLabel {
                endpoint: &key.endpoint,
                entity: key.entity,
            };
            let (sum, count, buckets) = s.histogram();
            family
                .encode_family(&labels)?
                .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
        }
        Ok(())
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

    #[test]
    fn a_deleted_entitys_series_leave_the_exposition() {
        let m = RequestMetrics::default();
        let mut registry = Registry::default();
        m.register(&mut registry);
        let (two, three) = (EntityNo::new(2).unwrap(), EntityNo::new(3).unwrap());
        m.observe(Some(two), "edu/fetch", 200, 0.001);
        let kept = m.series(Some(two), "edu/.well-known/openid-federation");
        m.observe(Some(three), "law/fetch", 200, 0.001);
        m.observe(None, "fetch", 200, 0.001);
        m.retire(two);
        // Still counted by a request that ends after the deletion, but shown nowhere, and no
        // series is made for the entity again.
        assert!(m.observe_known(kept, 200, 0.001));
        m.observe(Some(two), "edu/fetch", 200, 0.001);
        m.observe(Some(two), "unmatched", 404, 0.001);
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        assert!(!text.contains(r#"entity="2""#), "{text}");
        assert!(
            text.contains(
                r#"pharos_http_requests_total{endpoint="law/fetch",status="200",entity="3"} 1"#
            ),
            "{text}"
        );
        assert!(text.contains(r#"pharos_http_requests_total{endpoint="fetch",status="200"} 1"#));
        // Every later request of the deleted entity counts into one block.
        let (a, b) = (m.find(Some(two), "a"), m.find(Some(two), "b"));
        assert!(std::ptr::eq(a, b));
    }

    #[test]
    fn histogram_buckets_sum_and_statuses_beyond_the_slots() {
        let m = RequestMetrics::default();
        let mut registry = Registry::default();
        m.register(&mut registry);
        // On a bound counts in that bucket (`le`); beyond the last, in `+Inf` only.
        m.observe(None, "fetch", 200, 0.0001);
        m.observe(None, "fetch", 200, 0.00015);
        m.observe(None, "fetch", 200, 10.0);
        // More distinct statuses than slots: every one still counted.
        let statuses: Vec<u16> = (0..12).map(|i| 400 + i).collect();
        for s in &statuses {
            m.observe(None, "fetch", *s, 0.001);
        }
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        for (le, n) in [("0.0001", 1), ("0.0002", 2), ("3.2768", 14), ("+Inf", 15)] {
            let line = format!(
                r#"pharos_http_request_duration_seconds_bucket{{le="{le}",endpoint="fetch"}} {n}"#
            );
            assert!(text.contains(&line), "{line} in\n{text}");
        }
        assert!(
            text.contains(r#"pharos_http_request_duration_seconds_count{endpoint="fetch"} 15"#)
        );
        let sum: f64 = text
            .lines()
            .find_map(|l| {
                l.strip_prefix(r#"pharos_http_request_duration_seconds_sum{endpoint="fetch"} "#)
            })
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            (sum - (0.0001 + 0.00015 + 10.0 + 0.012)).abs() < 1e-6,
            "{sum}"
        );
        for s in statuses {
            let line = format!(r#"pharos_http_requests_total{{endpoint="fetch",status="{s}"}} 1"#);
            assert!(text.contains(&line), "{line} in\n{text}");
        }
        assert!(text.contains(r#"pharos_http_requests_total{endpoint="fetch",status="200"} 3"#));
        assert!(text.contains("# TYPE pharos_http_requests counter"));
        assert!(text.contains("# TYPE pharos_http_request_duration_seconds histogram"));
    }

    #[test]
    fn entities_share_one_copy_of_an_endpoint_label() {
        let m = RequestMetrics::default();
        for n in 1..=3 {
            m.observe(EntityNo::new(n), "fetch", 200, 0.001);
        }
        m.observe(None, "list", 200, 0.001);
        let map = m.shared.map.load();
        let labels: Vec<&Arc<str>> = map
            .keys()
            .filter(|k| &*k.endpoint == "fetch")
            .map(|k| &k.endpoint)
            .collect();
        assert_eq!(labels.len(), 3, "one series per entity");
        assert!(labels.windows(2).all(|w| Arc::ptr_eq(w[0], w[1])));
    }

    #[test]
    fn requests_on_two_threads_are_all_counted() {
        let m = RequestMetrics::default();
        let threads: Vec<_> = (0..2)
            .map(|t| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for i in 0..10_000u32 {
                        let endpoint = format!("e{}", i % 7);
                        m.observe(
                            EntityNo::new(i64::from(t + 2)),
                            &endpoint,
                            200 + (i % 3) as u16,
                            0.001,
                        );
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let map = m.shared.map.load();
        let total: u64 = map
            .values()
            .flat_map(|s| s.by_status())
            .map(|(_, n)| n)
            .sum();
        assert_eq!(total, 20_000);
        assert_eq!(map.len(), 14, "7 labels for each of 2 entities");
    }
}
