//! The periodic collector: with `interval_seconds` > 0 on the `entity_collection` endpoint,
//! every allowed Trust Anchor is walked at start and then every interval, at most
//! `concurrency_limit` walks at once. Each finished walk is committed through [`Write`] (only
//! the Entities that changed are rewritten) and so published in the snapshot, from which the
//! data plane answers. A walk stopped by one of its bounds (`walk_timeout_seconds`,
//! `walk_max_bytes`, `walk_max_entities`) is stored as it is, with a warning. A change of the endpoint's collector settings (published registry)
//! stops the round in progress and starts a new one with the new settings; a failed walk
//! keeps the previous collection and is retried at the next round.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{self, StreamExt};
use pharos_runtime::outbound::HttpFetcher;
use pharos_shared::collection::EntityInfo;
use pharos_shared::config::FederationSettings;
use pharos_shared::endpoint::{EndpointConfig, EndpointType};
use pharos_shared::snapshot::Snapshot;
use tokio_util::sync::CancellationToken;

use super::walk::{Limits, walk};
use crate::control_plane::{ControlPlane, Write};
use crate::db;
use crate::error::Result;
use crate::leadership::Fence;

/// Walks at once when `concurrency_limit` is not set.
pub const DEFAULT_CONCURRENCY: usize = 8;

/// What the periodic collector runs with; a change restarts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Trust Anchors to walk.
    pub anchors: Vec<String>,
    /// Time between rounds.
    pub interval: Duration,
    /// Walks at once.
    pub concurrency: usize,
    /// Bounds of each walk.
    pub limits: Limits,
}

/// The periodic plan the snapshot's registry asks for, fetching under `fed`: `None` without
/// an enabled `entity_collection` endpoint or without `interval_seconds`.
pub fn plan(snap: &Snapshot, fed: &FederationSettings) -> Option<Plan> {
    let entry = snap.registry.by_type.get(&EndpointType::EntityCollection)?;
    entry.path.as_deref().filter(|p| !p.is_empty())?;
    let EndpointConfig::EntityCollection(c) = &entry.config else {
        return None;
    };
    let interval = c.interval_seconds.filter(|i| *i > 0)?;
    Some(Plan {
        anchors: c.allowed_trust_anchors.clone(),
        interval: Duration::from_secs(interval),
        concurrency: c
            .concurrency_limit
            .filter(|n| *n > 0)
            .map_or(DEFAULT_CONCURRENCY, |n| n as usize),
        limits: Limits::new(fed, c),
    })
}

/// Whether the endpoint sets `concurrency_limit` without a periodic collector (it has no
/// effect then).
fn idle_concurrency_limit(snap: &Snapshot) -> bool {
    let Some(entry) = snap.registry.by_type.get(&EndpointType::EntityCollection) else {
        return false;
    };
    matches!(&entry.config, EndpointConfig::EntityCollection(c)
        if c.concurrency_limit.is_some() && c.interval_seconds.unwrap_or(0) == 0)
}

/// Starts the periodic collector; it follows the endpoint's settings until `stop`.
pub fn spawn(
    cp: Arc<ControlPlane>,
    fetcher: Arc<HttpFetcher>,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let fed = &cp.settings.federation;
        let mut events = cp.registry_events.subscribe();
        let mut warned = false;
        loop {
            let snap = cp.snapshot();
            let current = plan(&snap, fed);
            let idle = idle_concurrency_limit(&snap);
            if idle && !warned {
                tracing::warn!(
                    "entity_collection: concurrency_limit has no effect without interval_seconds; ignored"
                );
            }
            warned = idle;
            events.borrow_and_update();
            let rounds = async {
                let Some(p) = &current else {
                    return std::future::pending::<()>().await;
                };
                loop {
                    round(&cp, &fetcher, p).await;
                    tokio::time::sleep(p.interval).await;
                }
            };
            // A registry publication that leaves the plan as it is does not interrupt.
            let changed = async {
                loop {
                    if events.changed().await.is_err() {
                        return std::future::pending::<()>().await;
                    }
                    if plan(&cp.snapshot(), fed) != current
                        || idle_concurrency_limit(&cp.snapshot()) != idle
                    {
                        return;
                    }
                }
            };
            tokio::select! {
                _ = rounds => {}
                _ = changed => {
                    tracing::info!("entity_collection settings changed; collector restarted");
                }
                _ = stop.cancelled() => return,
            }
        }
    })
}

/// One round: every anchor of `p`, at most `p.concurrency` at once.
async fn round(cp: &ControlPlane, fetcher: &HttpFetcher, p: &Plan) {
    stream::iter(p.anchors.iter())
        .for_each_concurrent(p.concurrency, |ta| async move {
            if let Err(e) = collect_and_store(cp, fetcher, ta, &p.limits).await {
                tracing::warn!(trust_anchor = %ta, error = %e, "entity collection failed; the previous one is kept");
            }
        })
        .await;
}

/// Walks `ta` and commits the result.
async fn collect_and_store(
    cp: &ControlPlane,
    fetcher: &HttpFetcher,
    ta: &str,
    limits: &Limits,
) -> Result<()> {
    // Taken before the walk: a leader deposed during it stores nothing.
    let fence = cp.fence();
    let spec = cp.snapshot().trust_anchors.spec(ta);
    let walked = walk(fetcher, &spec, limits, cp.now())
        .await
        .map_err(crate::error::Error::Internal)?;
    tracing::info!(trust_anchor = %ta, entities = walked.entities.len(), skipped = walked.skipped, bytes = walked.bytes, stopped_at = ?walked.stopped, "entity collection finished");
    store(cp, ta, walked.entities, &fence).await
}

/// Commits `entities` as `ta`'s collection, now: only new, changed and removed Entities touch
/// the database; the collection is published when the write commits, unless `fence` (the
/// leader's token when the walk began) no longer holds.
pub async fn store(
    cp: &ControlPlane,
    ta: &str,
    entities: Vec<EntityInfo>,
    fence: &Fence,
) -> Result<()> {
    let mut w: Write<'_> = cp.write(None).await;
    let now = cp.now();
    // Read under the writer lock: the stored collection this write changes.
    let snap = cp.snapshot();
    let old: HashMap<&str, &EntityInfo> = snap
        .collections
        .by_anchor
        .get(ta)
        .map(|c| {
            c.entities
                .iter()
                .map(|e| (e.entity_id.as_str(), e.as_ref()))
                .collect()
        })
        .unwrap_or_default();
    let mut new: HashMap<&str, &EntityInfo> = HashMap::new();
    for e in &entities {
        new.entry(e.entity_id.as_str()).or_insert(e);
    }
    let removed: Vec<&str> = old
        .keys()
        .filter(|id| !new.contains_key(*id))
        .copied()
        .collect();
    let upserted: Vec<&EntityInfo> = new
        .values()
        .filter(|e| old.get(e.entity_id.as_str()) != Some(*e))
        .copied()
        .collect();
    let db = cp.db.clone();
    db::collections::save(&db, w.tx().await?, ta, now, &removed, &upserted).await?;
    w.touch_collection(ta);
    fence.check(w.tx().await?).await?;
    w.commit().await
}
