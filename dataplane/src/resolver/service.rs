//! The resolver as the data plane holds it: the shared [`Resolver`] over HTTP plus the
//! proactive resolver that the current `resolve` endpoint configuration asks for.
//!
//! Kept out of `lib.rs` so that the data plane's state gains one field for all of resolving.

use std::sync::{Arc, LazyLock, OnceLock};

use arc_swap::ArcSwapOption;
use pharos_shared::endpoint::ResolveConfig;
use pharos_shared::snapshot::SnapshotReader;
use pharos_shared::time::Clock;

use super::proactive::{self, Proactive};
use super::{Local, Query, Resolver, admits, anchor_rule, grace_rule, resolve_config};
use pharos_runtime::outbound::HttpFetcher;
use pharos_runtime::resolver_caches::ExplainQuery;
use pharos_runtime::resolver_caches::ResolverCaches;
use pharos_shared::chain::Explanation;
use pharos_shared::endpoint::AnchorRule;

/// The resolver and its caches, made on first use: an entity without a resolve endpoint or
/// client authentication never needs them, and empty caches cost tens of kilobytes each
/// (a deployment may host a thousand entities, issue 38).
#[derive(Debug)]
pub struct LazyResolver {
    fetcher: Arc<HttpFetcher>,
    made: OnceLock<Arc<Resolver<HttpFetcher>>>,
}

impl std::ops::Deref for LazyResolver {
    type Target = Arc<Resolver<HttpFetcher>>;

    fn deref(&self) -> &Self::Target {
        self.made
            .get_or_init(|| Resolver::new(self.fetcher.clone()))
    }
}

/// Resolver, caches and proactive resolver of one data plane.
#[derive(Debug)]
pub struct ResolveService {
    /// The resolver and its caches (statements, resolutions, signed responses).
    pub resolver: LazyResolver,
    /// Finished anonymous responses by raw query (see [`super::front`]), made on first use.
    pub front: LazyLock<super::front::FrontCache>,
    snapshot: SnapshotReader,
    clock: Arc<dyn Clock>,
    proactive: ArcSwapOption<Proactive>,
    change: tokio::sync::Mutex<()>,
}

impl ResolveService {
    /// A service fetching through `fetcher`. When called inside a runtime and
    /// the current snapshot enables a proactive resolver, that resolver is started at once
    /// (reading its stored responses back), so a restarted resolver answers from disk from
    /// the first request on.
    pub fn start(
        snapshot: SnapshotReader,
        clock: Arc<dyn Clock>,
        fetcher: Arc<HttpFetcher>,
    ) -> Arc<Self> {
        let me = Arc::new(Self {
            resolver: LazyResolver {
                fetcher,
                made: OnceLock::new(),
            },
            front: LazyLock::new(super::front::FrontCache::new),
            snapshot,
            clock,
            proactive: ArcSwapOption::empty(),
            change: tokio::sync::Mutex::new(()),
        });
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let service = me.clone();
            rt.spawn(async move {
                let snap = service.snapshot.load_full();
                if let Some(cfg) = resolve_config(&snap) {
                    service.proactive(cfg).await;
                }
            });
        }
        me
    }

    /// Forgets the cached statements, resolutions and failures about `sub` (all, without
    /// one) and every finished response, so the next request resolves anew (the Admin API's
    /// `POST /resolver/flush`).
    pub async fn flush(&self, sub: Option<&str>) {
        self.resolver.flush(sub).await;
        self.front.clear();
    }

    /// The proactive resolver `cfg` asks for, started (or restarted after a change of its
    /// settings) on first use; `None` when it is not enabled. The common case is one atomic
    /// load; only a change takes the lock.
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
        let _change = self.change.lock().await;
        let Some(wanted) = wanted else {
            self.proactive.store(None);
            return None;
        };
        if let Some(p) = self.proactive.load_full().filter(|p| p.settings == wanted) {
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
}

impl ResolverCaches for ResolveService {
    fn flush<'a>(
        &'a self,
        sub: Option<&'a str>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>> {
        Box::pin(ResolveService::flush(self, sub))
    }

    fn explain<'a>(
        &'a self,
        q: ExplainQuery<'a>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Explanation> + Send + 'a>> {
        Box::pin(ResolveService::explain(self, q))
    }
}

impl ResolveService {
    /// The chain explainer (`GET /explain` of the Admin API): `q.sub` resolved towards the
    /// anchors the resolve endpoint would accept (its configuration, or the defaults when
    /// this entity has no resolve endpoint), through the same statement cache, with every
    /// step recorded. An anchor the rule refuses is explained as the failing step, before
    /// anything is fetched.
    pub async fn explain(&self, q: ExplainQuery<'_>) -> Explanation {
        let snap = self.snapshot.load_full();
        let default = ResolveConfig::default();
        let cfg = resolve_config(&snap).unwrap_or(&default);
        let rule = anchor_rule(&snap, cfg);
        let wanted: Vec<String> = match (q.anchor, &rule) {
            (Some(a), _) => vec![a.to_owned()],
            (None, AnchorRule::Listed(l)) => l.clone(),
            (None, _) => {
                let mut all: Vec<String> = snap.trust_anchors.by_id.keys().cloned().collect();
                all.sort();
                all.push(snap.entity_id.to_string());
                all
            }
        };
        let admitted: Vec<String> = wanted
            .iter()
            .filter(|a| admits(&snap, &rule, a))
            .cloned()
            .collect();
        let mut types = q.entity_types.to_vec();
        types.sort();
        types.dedup();
        let query = Query {
            subject: q.sub.to_owned(),
            anchors: admitted
                .iter()
                .map(|a| snap.trust_anchors.spec(a))
                .collect(),
            entity_types: types,
            local: Local::of(&snap, cfg),
        };
        let mut x = self
            .resolver
            .explain(&query, grace_rule(cfg), self.clock.now())
            .await;
        if admitted.is_empty()
            && let Some(f) = x.failed.as_mut()
        {
            f.message = format!("{} is not accepted: {}", wanted.join(", "), rule.describe());
        }
        x
    }
}
