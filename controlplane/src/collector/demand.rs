//! Collection on request (the endpoint has no `interval_seconds`): the data plane asks
//! through [`pharos_runtime::command::Command::CollectEntities`], for an anchor the data
//! plane admitted (the endpoint's `AnchorRule`). Walks are expensive, so
//! they are bounded ([`COLLECTIONS_AT_ONCE`]; more is refused at once, 503), shared by every
//! request for the same anchor while one runs (single flight), and their result is cached for
//! [`CACHE_TTL`], so a client paging through or repeating a query walks nothing again. Each
//! walk has the endpoint's bounds (deadline, bytes, Entities); one stopped by a bound answers
//! with what it verified until then (logged).

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use moka::sync::Cache;
use pharos_runtime::command::{CollectError, CollectReply, Refused};
use pharos_runtime::outbound::HttpFetcher;
use pharos_runtime::single_flight::Flights;
use pharos_shared::collection::Collection;
use pharos_shared::endpoint::{EndpointConfig, EndpointType, EntityCollectionConfig};
use pharos_shared::snapshot::Snapshot;
use tokio::sync::Semaphore;

use super::walk::{Limits, walk};
use crate::control_plane::ControlPlane;

/// Walks running at once for requests.
pub const COLLECTIONS_AT_ONCE: usize = 2;
/// How long a collection made for a request answers later requests.
pub const CACHE_TTL: Duration = Duration::from_secs(60);
/// Anchors whose collections are cached.
const CACHED_ANCHORS: u64 = 64;
/// Requests that may wait for one anchor's walk.
const WAITERS: usize = 1_024;

type Outcome = Result<Arc<Collection>, CollectError>;

/// The `entity_collection` endpoint's configuration in `snap` (its defaults without one).
fn collection_config(snap: &Snapshot) -> EntityCollectionConfig {
    match snap
        .registry
        .by_type
        .get(&EndpointType::EntityCollection)
        .map(|e| &e.config)
    {
        Some(EndpointConfig::EntityCollection(c)) => c.clone(),
        _ => EntityCollectionConfig::default(),
    }
}

/// On-demand collections: bound, flights and cache.
#[derive(Debug)]
pub struct OnDemand {
    cp: Arc<ControlPlane>,
    fetcher: Arc<HttpFetcher>,
    running: Arc<Semaphore>,
    flights: Arc<Flights<String, Outcome>>,
    /// Made on the first collection: an empty cache is about 20 kB, and most hosted
    /// entities never collect (BENCHMARKS.md, "Hosted entities").
    cache: LazyLock<Cache<String, Arc<Collection>>>,
}

impl OnDemand {
    /// Collections for `cp`'s requests, fetched under its `federation.*` rules.
    pub fn new(cp: Arc<ControlPlane>) -> Arc<Self> {
        let fetcher = Arc::new(cp.outbound.clone());
        Arc::new(Self {
            cp,
            fetcher,
            running: Arc::new(Semaphore::new(COLLECTIONS_AT_ONCE)),
            flights: Flights::new(WAITERS),
            cache: LazyLock::new(|| {
                Cache::builder()
                    .max_capacity(CACHED_ANCHORS)
                    .time_to_live(CACHE_TTL)
                    .build()
            }),
        })
    }

    /// Answers `reply` from the cache, by joining the walk in progress, or by starting one if
    /// there is room; never waits itself.
    pub fn admit(self: &Arc<Self>, trust_anchor: String, reply: CollectReply) {
        if let Some(c) = self.cache.get(&trust_anchor) {
            let _ = reply.send(Ok(c));
            return;
        }
        let Some((lead, permit)) = self.flights.lead_with(
            &trust_anchor,
            reply,
            || Err(Refused::Busy.into()),
            || self.running.clone().try_acquire_owned().ok(),
        ) else {
            return;
        };
        let me = self.clone();
        tokio::spawn(async move {
            let snap = me.cp.snapshot();
            let spec = snap.trust_anchors.spec(&trust_anchor);
            let limits = Limits::new(&me.cp.settings.federation, &collection_config(&snap));
            let now = me.cp.now();
            let outcome = match walk(me.fetcher.as_ref(), &spec, &limits, now).await {
                Ok(w) => {
                    let c = Arc::new(Collection::new(
                        trust_anchor.clone(),
                        now,
                        w.entities.into_iter().map(Arc::new).collect(),
                    ));
                    me.cache.insert(trust_anchor, c.clone());
                    Ok(c)
                }
                Err(e) => {
                    tracing::warn!(trust_anchor = %trust_anchor, error = %e, "on-demand entity collection failed");
                    Err(CollectError::AnchorUnusable(e))
                }
            };
            drop(permit);
            lead.finish(outcome);
        });
    }
}
