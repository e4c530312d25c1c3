//! Pharos data plane: the public port.
//!
//! It serves the Entity Configuration and the federation endpoints from the current immutable
//! [`Snapshot`] and from caches of signed responses. It never opens a database connection: state
//! changes reach it only as new snapshots published by the control plane.

pub mod dispatch;
pub mod entity_configuration;
pub mod error;
pub mod historical_keys;
pub mod jwt_response;
pub mod outbound;
pub mod resolve;
pub mod resolver;

use std::sync::Arc;

use arc_swap::{ArcSwap, ArcSwapOption};
use axum::Router;
use axum::routing::get;
use pharos_shared::config::FederationSettings;
use pharos_shared::endpoint::ResolveConfig;
use pharos_shared::snapshot::Snapshot;
use pharos_shared::time::Clock;

use crate::outbound::HttpFetcher;
use crate::resolver::Resolver;
use crate::resolver::proactive::{self, Proactive};

/// Shared state of the data plane's handlers.
#[derive(Debug)]
pub struct DataPlane {
    snapshot: Arc<ArcSwap<Snapshot>>,
    clock: Arc<dyn Clock>,
    ec_cache: entity_configuration::EcCache,
    /// The resolver and its caches (statements, resolutions, signed responses).
    pub resolver: Arc<Resolver<HttpFetcher>>,
    proactive: ArcSwapOption<Proactive>,
    proactive_change: tokio::sync::Mutex<()>,
    historical_cache: historical_keys::HistoricalKeysCache,
}

impl DataPlane {
    /// A data plane reading snapshots from `snapshot` (the control plane's publication point).
    /// Outbound fetches use the default `federation.*` limits; see [`Self::with_federation`].
    pub fn new(snapshot: Arc<ArcSwap<Snapshot>>, clock: Arc<dyn Clock>) -> Arc<Self> {
        Self::with_federation(snapshot, clock, &FederationSettings::default())
    }

    /// A data plane whose resolver fetches with the `federation.*` limits. When the current
    /// snapshot enables a proactive resolver, it is started at once (reading its stored
    /// responses back), so a restarted resolver answers from disk from the first request.
    pub fn with_federation(
        snapshot: Arc<ArcSwap<Snapshot>>,
        clock: Arc<dyn Clock>,
        federation: &FederationSettings,
    ) -> Arc<Self> {
        let dp = Arc::new(Self {
            snapshot,
            clock,
            ec_cache: entity_configuration::EcCache::new(),
            resolver: Resolver::new(Arc::new(HttpFetcher::new(federation))),
            proactive: ArcSwapOption::empty(),
            proactive_change: tokio::sync::Mutex::new(()),
            historical_cache: historical_keys::HistoricalKeysCache::default(),
        });
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let me = dp.clone();
            rt.spawn(async move {
                let snap = me.snapshot();
                if let Some(cfg) = resolver::resolve_config(&snap) {
                    me.proactive(cfg).await;
                }
            });
        }
        dp
    }

    /// The proactive resolver `cfg` asks for, started (or restarted after a change of its
    /// settings) on first use; `None` when it is not enabled.
    pub async fn proactive(&self, cfg: &ResolveConfig) -> Option<Arc<Proactive>> {
        let wanted = cfg
            .proactive_resolver
            .as_ref()
            .and_then(proactive::Settings::from_config);
        let current = self.proactive.load_full();
        match (&wanted, &current) {
            (None, None) => return None,
            (Some(w), Some(p)) if p.settings == *w => return current,
            _ => {}
        }
        let _change = self.proactive_change.lock().await;
        let current = self.proactive.load_full();
        let Some(wanted) = wanted else {
            self.proactive.store(None);
            return None;
        };
        if let Some(p) = current.filter(|p| p.settings == wanted) {
            return Some(p);
        }
        let ctx = proactive::Context {
            resolver: self.resolver.clone(),
            snapshot: self.snapshot.clone(),
            clock: self.clock.clone(),
        };
        let p = Proactive::start(wanted, ctx).await;
        self.proactive.store(Some(p.clone()));
        Some(p)
    }

    /// The current snapshot; load once per request and keep the `Arc` for its duration.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.load_full()
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
            "/.well-known/openid-federation",
            get(entity_configuration::handler),
        )
        .fallback(dispatch::handler)
        .with_state(dp)
}
