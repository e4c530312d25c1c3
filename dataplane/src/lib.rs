//! Pharos data plane: the public port.
//!
//! It serves the Entity Configuration and the federation endpoints from the current immutable
//! [`Snapshot`] and from caches of signed responses. It never opens a database connection: state
//! changes reach it only as new snapshots published by the control plane.

// Unit tests measure real time and sleep on purpose (clippy.toml bans both elsewhere).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod cache_counters;
/// Public for the `client_assertion` fuzz target (`shared/fuzz/`), which checks its parser.
pub mod client_auth;
mod dispatch;
mod endpoints;
#[cfg(test)]
#[path = "enroll_router_tests.rs"]
mod enroll_router_tests;
mod entity_configuration;
mod error;
pub mod front;
pub mod hosts;
#[cfg(test)]
mod instructions_probe;
mod jwt_response;
pub mod rate_limit;
mod refusals;
mod replay;
mod resolver;
#[cfg(test)]
#[path = "router_tests.rs"]
mod router_tests;
#[cfg(test)]
#[path = "signing_tests.rs"]
mod signing_tests;
pub mod stats;
#[cfg(test)]
mod test_support;
#[cfg(test)]
#[path = "trust_mark_router_tests.rs"]
mod trust_mark_router_tests;
#[cfg(test)]
mod trust_mark_test_support;

/// How long a resolver trusts an issuer's answer about a Trust Mark's status, seconds (for
/// anchors whose record asks for it): the longest a revoked mark stays in resolve answers.
pub use resolver::mark_status::STATUS_TTL as TRUST_MARK_STATUS_TTL;

use std::sync::{Arc, LazyLock};

use axum::Router;
use axum::routing::get;
use pharos_shared::config::{CacheSettings, EndpointAuth, FederationSettings, ServerSettings};
use pharos_shared::snapshot::{Snapshot, SnapshotReader};
use pharos_shared::subordinate::StatementBudget;
use pharos_shared::time::Clock;

use pharos_runtime::command::Commands;
use pharos_runtime::outbound::HttpFetcher;

/// Shared state of the data plane's handlers.
///
/// Laid out in the order written (`repr(C)`): what a ready answer reads (the snapshot handle,
/// the clock, the cache counters) comes first, close together, not wherever the compiler
/// would place it among the lazily made caches that follow: with a random hosted entity per
/// request, each line of it is a cache miss.
#[derive(Debug)]
#[repr(C)]
pub struct DataPlane {
    snapshot: SnapshotReader,
    clock: Arc<dyn Clock>,
    /// Cache hits and misses (for `/metrics`).
    pub caches: Arc<cache_counters::CacheCounters>,
    /// Taken by a request that signs the Entity Configuration (the signed answer is kept at
    /// the snapshot's publication point).
    ec_signing: entity_configuration::EcSigning,
    /// Resolving: resolver, caches and proactive resolver.
    pub resolve: Arc<resolver::service::ResolveService>,
    // The caches of endpoints an entity may not serve are made on first use: an empty cache
    // costs tens of kilobytes, and a deployment may host a thousand entities that never
    // answer a list, a collection or a trust mark question (issue 38, BENCHMARKS.md).
    historical_cache: LazyLock<endpoints::historical_keys::HistoricalKeysCache>,
    list_cache: LazyLock<endpoints::list::ListCache>,
    extended_list_cache: LazyLock<endpoints::extended_list::PageCache>,
    extended_list_holders: LazyLock<endpoints::extended_list::HoldersCache>,
    subordinate_events_cache: LazyLock<endpoints::subordinate_events::EventsCache>,
    collection_cache: LazyLock<endpoints::entity_collection::PageCache>,
    fetch_flights: endpoints::fetch::Flights,
    trust_mark_status_cache: LazyLock<endpoints::trust_mark_status::StatusCache>,
    trust_mark_listing_cache: LazyLock<endpoints::trust_mark_listing::HoldersCache>,
    /// The control plane's command channel (state changes requested by requests).
    pub commands: Commands,
    /// Used client assertion identifiers.
    pub replay: replay::ReplayStore,
    /// `storage.endpoint_auth.max_assertion_lifetime`, seconds.
    pub max_assertion_lifetime: i64,
    /// What the subordinates' statement slots may hold together (`cache.statements_max_bytes`).
    pub statement_budget: Arc<StatementBudget>,
    /// Request rates of the endpoints that write or fetch (`server.rate_limits`).
    pub rate_limits: Arc<rate_limit::RateLimiter>,
}

/// What the data planes of one port share (see [`DataPlane::beside`]).
struct PortWide {
    rate_limits: Arc<rate_limit::RateLimiter>,
    statement_budget: Arc<StatementBudget>,
    caches: Arc<cache_counters::CacheCounters>,
}

impl DataPlane {
    /// A data plane reading snapshots from `snapshot` (the control plane's publication point).
    /// Outbound fetches use the default `federation.*` limits; see [`Self::with_federation`].
    pub fn new(snapshot: SnapshotReader, clock: Arc<dyn Clock>) -> Arc<Self> {
        Self::with_federation(snapshot, clock, &FederationSettings::default())
    }

    /// A data plane whose resolver fetches with the `federation.*` limits (and starts the
    /// proactive resolver when the snapshot enables one).
    pub fn with_federation(
        snapshot: SnapshotReader,
        clock: Arc<dyn Clock>,
        federation: &FederationSettings,
    ) -> Arc<Self> {
        // No control plane: state-changing requests answer 503, replays are kept in memory.
        let (commands, _) = Commands::channel();
        Self::connected(
            snapshot,
            clock,
            Arc::new(HttpFetcher::new(federation)),
            commands,
            &EndpointAuth::default(),
            &CacheSettings::default(),
            &ServerSettings::default(),
        )
    }

    /// A data plane wired to the control plane: `commands` carries its state changes, and
    /// client authentication follows `auth` (used `jti`s go to the store its `jti_backend`
    /// names, `db` = through the control plane); requests are limited as `server.rate_limits`
    /// says, their clients read as `server.trusted_proxies` says.
    pub fn connected(
        snapshot: SnapshotReader,
        clock: Arc<dyn Clock>,
        fetcher: Arc<HttpFetcher>,
        commands: Commands,
        auth: &EndpointAuth,
        cache: &CacheSettings,
        server: &ServerSettings,
    ) -> Arc<Self> {
        let port = PortWide {
            rate_limits: Arc::new(rate_limit::RateLimiter::new(server)),
            statement_budget: StatementBudget::new(cache.statements_max_bytes),
            caches: Arc::default(),
        };
        Self::assemble(port, snapshot, clock, fetcher, commands, auth)
    }

    /// The data plane of another hosted entity served on the same port: its own snapshot,
    /// caches, resolver and command channel, and this one's port-wide limits — request rates
    /// per client and in total, the memory budget of signed statements — and cache counters,
    /// so that hosting more entities never multiplies what one client may cost or what the
    /// statements may hold, and `/metrics` counts every entity's requests.
    pub fn beside(
        &self,
        snapshot: SnapshotReader,
        fetcher: Arc<HttpFetcher>,
        commands: Commands,
        auth: &EndpointAuth,
    ) -> Arc<Self> {
        let port = PortWide {
            rate_limits: self.rate_limits.clone(),
            statement_budget: self.statement_budget.clone(),
            caches: self.caches.clone(),
        };
        Self::assemble(port, snapshot, self.clock.clone(), fetcher, commands, auth)
    }

    fn assemble(
        port: PortWide,
        snapshot: SnapshotReader,
        clock: Arc<dyn Clock>,
        fetcher: Arc<HttpFetcher>,
        commands: Commands,
        auth: &EndpointAuth,
    ) -> Arc<Self> {
        Arc::new(Self {
            rate_limits: port.rate_limits,
            statement_budget: port.statement_budget,
            caches: port.caches,
            replay: replay::ReplayStore::new(&auth.jti_backend, commands.clone()),
            max_assertion_lifetime: i64::try_from(auth.max_assertion_lifetime.get().as_secs())
                .unwrap_or(i64::MAX),
            commands,
            resolve: resolver::service::ResolveService::start(
                snapshot.clone(),
                clock.clone(),
                fetcher,
            ),
            snapshot,
            clock,
            ec_signing: entity_configuration::EcSigning::default(),
            historical_cache: LazyLock::new(Default::default),
            list_cache: LazyLock::new(endpoints::list::ListCache::new),
            extended_list_cache: LazyLock::new(Default::default),
            extended_list_holders: LazyLock::new(Default::default),
            subordinate_events_cache: LazyLock::new(Default::default),
            collection_cache: LazyLock::new(Default::default),
            // Unbounded per key: the burst is bounded by the requests in progress.
            fetch_flights: pharos_runtime::single_flight::Flights::new(usize::MAX),
            trust_mark_status_cache: LazyLock::new(Default::default),
            trust_mark_listing_cache: LazyLock::new(Default::default),
        })
    }

    /// The current snapshot as an owned `Arc` (for work that outlives the request).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.load_full()
    }

    /// The current snapshot without touching its shared reference count (the request path:
    /// load once per request and hold the guard for the request's duration only).
    pub fn snapshot_ref(&self) -> arc_swap::Guard<Arc<Snapshot>> {
        self.snapshot.load()
    }

    /// The snapshot's publication point, as this data plane reads it.
    pub(crate) fn reader(&self) -> &SnapshotReader {
        &self.snapshot
    }

    /// The clock every answer is made at.
    pub(crate) fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Current time in Unix seconds.
    pub fn now(&self) -> i64 {
        self.clock.now()
    }
}

/// Routes of the public port: the Entity Configuration and, as fallback, the dispatcher of
/// every registered federation endpoint.
pub fn router(dp: Arc<DataPlane>) -> Router {
    Router::new()
        .route(
            front::ENTITY_CONFIGURATION_PATH,
            get(entity_configuration::handler),
        )
        .fallback(dispatch::handler)
        .with_state(dp)
}
