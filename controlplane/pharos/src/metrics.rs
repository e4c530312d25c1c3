//! `GET /metrics`: Prometheus metrics in the OpenMetrics text format, on the admin listener
//! behind the Admin API's authentication (Prometheus scrapes with Basic credentials).
//!
//! Request counters and the latency histogram are kept by the data plane's statistics layer
//! whether `stats.enabled` is on or off; everything else is read at scrape time from where it
//! already lives (the ring, the pool, the snapshot, the refreshers), so nothing is counted twice.
//! What each hosted entity's alerts need is in [`entities`], the served certificates' expiry in
//! [`tls_expiry`]; `deploy/prometheus/pharos-alerts.yml` and `deploy/grafana/pharos.json` use
//! these names, and `tests/monitoring.rs` checks that every name they use is exported.

pub mod entities;
pub mod tls_expiry;

use std::sync::Arc;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use pharos_dataplane::cache_counters::{Cache, CacheCounters};
use pharos_dataplane::rate_limit::{Limited, RateLimiter};
use pharos_dataplane::stats::metrics::RequestMetrics;
use pharos_runtime::command::Refusals;
use pharos_runtime::command::refusals::Kind as CommandKind;
use pharos_runtime::stats_ring::Ring;
use pharos_shared::subordinate::StatementBudget;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::registry::Registry;

use pharos_controlplane::control_plane::ControlPlane;

use tls_expiry::Served;

/// OpenMetrics media type, which Prometheus negotiates first.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The process's metrics registry.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
}

/// What the scrape-time collector reads.
#[derive(Debug)]
struct Sources {
    cp: Arc<ControlPlane>,
    ring: Option<Arc<Ring>>,
    caches: Arc<CacheCounters>,
    statements: Arc<StatementBudget>,
    rate_limits: Arc<RateLimiter>,
    refusals: Arc<Refusals>,
    certificates: Vec<Arc<Served>>,
}

/// What feeds `/metrics` besides the request metrics: the scrape-time sources.
#[derive(Debug)]
pub struct Parts {
    /// The default entity's control plane (process-wide figures: leadership, pool, ring).
    pub cp: Arc<ControlPlane>,
    /// The statistics ring, when statistics are on.
    pub ring: Option<Arc<Ring>>,
    /// The data plane's cache counters.
    pub caches: Arc<CacheCounters>,
    /// The signed-statement budget.
    pub statements: Arc<StatementBudget>,
    /// The public port's rate limiter.
    pub rate_limits: Arc<RateLimiter>,
    /// Busy refusals of the command channels.
    pub refusals: Arc<Refusals>,
    /// The certificates the TLS listeners serve.
    pub certificates: Vec<Arc<Served>>,
    /// Every hosted entity's figures.
    pub entities: entities::Entities,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LimitBound {
    endpoint: &'static str,
    bound: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CacheResult {
    cache: &'static str,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Change {
    change: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CommandLabel {
    command: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Listener {
    listener: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolState {
    state: &'static str,
}

fn counter(enc: &mut DescriptorEncoder, name: &str, help: &str, v: u64) -> std::fmt::Result {
    let c = ConstCounter::new(v);
    c.encode(enc.encode_descriptor(name, help, None, c.metric_type())?)
}

fn gauge(enc: &mut DescriptorEncoder, name: &str, help: &str, v: i64) -> std::fmt::Result {
    let g = ConstGauge::new(v);
    g.encode(enc.encode_descriptor(name, help, None, g.metric_type())?)
}

impl Collector for Sources {
    fn encode(&self, mut enc: DescriptorEncoder) -> std::fmt::Result {
        let snap = self.cp.snapshot();
        let generation = i64::try_from(snap.generation).unwrap_or(i64::MAX);
        gauge(
            &mut enc,
            "pharos_snapshot_generation",
            "Generation of the published snapshot",
            generation,
        )?;
        counter(
            &mut enc,
            "pharos_snapshot_full_builds",
            "Snapshots built from the whole database: the first, and each full reload of a replica",
            self.cp.full_builds(),
        )?;
        let l = &self.cp.leadership;
        gauge(
            &mut enc,
            "pharos_leader",
            "1 while this process runs the leader-only jobs (always without clustering)",
            i64::from(l.is_leader()),
        )?;
        gauge(
            &mut enc,
            "pharos_leader_generation",
            "Lease generation this process leads under (the fencing token); -1 when not leading",
            l.generation().unwrap_or(-1),
        )?;
        counter(
            &mut enc,
            "pharos_leader_fenced_writes",
            "Leader-only job writes refused by their fence: this process no longer led under the generation the job began with",
            l.refused_writes(),
        )?;
        let age = (self.cp.now() - self.cp.published_at()).max(0);
        gauge(
            &mut enc,
            "pharos_snapshot_age_seconds",
            "Seconds since the snapshot was published",
            age,
        )?;
        let (dropped, buffered) = self
            .ring
            .as_ref()
            .map_or((0, 0), |r| (r.dropped(), r.len()));
        counter(
            &mut enc,
            "pharos_stats_records_dropped",
            "Statistics records dropped because the buffer was full",
            dropped,
        )?;
        gauge(
            &mut enc,
            "pharos_stats_records_buffered",
            "Statistics records waiting for the flusher",
            i64::try_from(buffered).unwrap_or(i64::MAX),
        )?;
        let breaker = &self.cp.db.breaker;
        gauge(
            &mut enc,
            "pharos_database_unreachable",
            "1 while the database is known to be unreachable (Admin API writes answer 503 at once)",
            i64::from(breaker.is_open()),
        )?;
        counter(
            &mut enc,
            "pharos_database_outages",
            "Times the database was found unreachable since start",
            breaker.trips(),
        )?;
        counter(
            &mut enc,
            "pharos_outbound_fetches",
            "Outbound federation fetches",
            self.cp.outbound.fetches(),
        )?;
        // Counters with labels, read at scrape time: one descriptor, one sample per label set.
        use std::sync::atomic::Ordering::Relaxed;
        let changes = l.changes();
        let mut family = enc.encode_descriptor(
            "pharos_leader_changes",
            "Leadership terms this process began (acquired) and ended (lost) since start; often means lease renewals that do not reach the database in time",
            None,
            MetricType::Counter,
        )?;
        for (change, n) in [
            ("acquired", changes.acquired.load(Relaxed)),
            ("lost", changes.lost.load(Relaxed)),
        ] {
            ConstCounter::new(n).encode(family.encode_family(&Change { change })?)?;
        }
        gauge(
            &mut enc,
            "pharos_replica_behind_seconds",
            "Seconds since this replica may have missed changes of the others (listener lost, poll failing, full reload pending); 0 when up to date",
            self.cp.behind_seconds(),
        )?;
        let mut family = enc.encode_descriptor(
            "pharos_command_refusals",
            "Commands of the public endpoints refused at once (503) because their queue or their share of the control plane was full, by command",
            None,
            MetricType::Counter,
        )?;
        for kind in CommandKind::ALL {
            let labels = CommandLabel {
                command: kind.name(),
            };
            ConstCounter::new(self.refusals.get(kind)).encode(family.encode_family(&labels)?)?;
        }
        let mut family = enc.encode_descriptor(
            "pharos_tls_certificate_expiry_timestamp_seconds",
            "notAfter of the certificate a TLS listener serves (main or admin), Unix seconds, as loaded at start and on SIGHUP",
            None,
            MetricType::Gauge,
        )?;
        for c in &self.certificates {
            if let Some(t) = c.not_after() {
                let labels = Listener {
                    listener: c.listener,
                };
                ConstGauge::new(t).encode(family.encode_family(&labels)?)?;
            }
        }
        let mut family = enc.encode_descriptor(
            "pharos_cache_requests",
            "Answers from a cache (hit) or made anew (miss: signed or resolved), by cache",
            None,
            MetricType::Counter,
        )?;
        for cache in Cache::ALL {
            let (hits, misses) = self.caches.get(cache);
            for (result, n) in [("hit", hits), ("miss", misses)] {
                let labels = CacheResult {
                    cache: cache.name(),
                    result,
                };
                ConstCounter::new(n).encode(family.encode_family(&labels)?)?;
            }
        }
        gauge(
            &mut enc,
            "pharos_statement_cache_bytes",
            "Bytes of signed Subordinate Statements held for reuse (bounded by cache.statements_max_bytes)",
            i64::try_from(self.statements.held()).unwrap_or(i64::MAX),
        )?;
        counter(
            &mut enc,
            "pharos_statement_cache_evictions",
            "Signed Subordinate Statements evicted to make room for others (cache.statements_max_bytes)",
            self.statements.evicted(),
        )?;
        gauge(
            &mut enc,
            "pharos_rate_limiter_clients",
            "Clients the rate limiter remembers (at most pharos_rate_limiter_capacity, server.rate_limits.clients)",
            i64::try_from(self.rate_limits.clients()).unwrap_or(i64::MAX),
        )?;
        gauge(
            &mut enc,
            "pharos_rate_limiter_capacity",
            "Clients the rate limiter remembers at most (fixed memory)",
            i64::try_from(self.rate_limits.capacity()).unwrap_or(i64::MAX),
        )?;
        {
            let mut family = enc.encode_descriptor(
                "pharos_rate_limited",
                "Requests refused with 429 by server.rate_limits, by endpoint class and bound (per_client or total)",
                None,
                MetricType::Counter,
            )?;
            for class in Limited::ALL {
                for (bound, n) in self.rate_limits.refused(class) {
                    let labels = LimitBound {
                        endpoint: class.name(),
                        bound,
                    };
                    ConstCounter::new(n).encode(family.encode_family(&labels)?)?;
                }
            }
        }
        let (size, idle) = self.cp.db.pool_connections();
        let (size, idle) = (i64::from(size), i64::try_from(idle).unwrap_or(0));
        let conns: Family<PoolState, Gauge> = Family::default();
        conns.get_or_create(&PoolState { state: "idle" }).set(idle);
        conns
            .get_or_create(&PoolState { state: "used" })
            .set((size - idle).max(0));
        conns.encode(enc.encode_descriptor(
            "pharos_db_pool_connections",
            "Database pool connections by state",
            None,
            conns.metric_type(),
        )?)?;
        Ok(())
    }
}

impl Metrics {
    /// The registry over the data plane's request metrics and the scrape-time sources.
    pub fn new(requests: &RequestMetrics, parts: Parts) -> Arc<Self> {
        let mut registry = Registry::default();
        requests.register(&mut registry);
        registry.register_collector(Box::new(Sources {
            cp: parts.cp,
            ring: parts.ring,
            caches: parts.caches,
            statements: parts.statements,
            rate_limits: parts.rate_limits,
            refusals: parts.refusals,
            certificates: parts.certificates,
        }));
        registry.register_collector(Box::new(parts.entities));
        Arc::new(Self { registry })
    }

    /// The text exposition.
    pub fn render(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::with_capacity(4096);
        prometheus_client::encoding::text::encode(&mut out, &self.registry)?;
        Ok(out)
    }
}

/// The `/metrics` route over `metrics`, for the Admin API to mount behind its authentication.
pub fn router(metrics: Arc<Metrics>) -> axum::Router {
    axum::Router::new()
        .route("/metrics", axum::routing::get(handler))
        .with_state(metrics)
}

/// `GET /metrics`.
pub async fn handler(State(m): State<Arc<Metrics>>) -> Response {
    match m.render() {
        Ok(body) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], body).into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "cannot render metrics").into_response(),
    }
}
