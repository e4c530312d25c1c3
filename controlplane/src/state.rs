//! The control plane's state: the database, the published snapshot, and the single-writer rule.
//!
//! Every change follows one path: take the write lock, commit the change in a database
//! transaction, reload the affected snapshot sections from the database, publish. A failed
//! reload keeps the previous snapshot (and is reported), so the data plane never sees state that
//! is not committed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::ArcSwap;
use pharos_shared::config::Settings;
use pharos_shared::endpoint::{EndpointConfig, EndpointType};
use pharos_shared::snapshot::{
    AdditionalClaim, EcSettings, EndpointEntry, Registry, Snapshot, TrustAnchor, TrustAnchors,
};
use pharos_shared::subordinate::Subordinates;
use pharos_shared::time::Clock;
use serde_json::Value;
use tokio::sync::{Mutex, MutexGuard};

use crate::db::subordinates::SubKey;
use crate::db::{self, Db, settings};
use crate::error::Result;
use crate::keys;
use crate::subs;

/// Parts of the snapshot that a change can touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// Endpoint registry (endpoints, auth trust anchors, legacy paths).
    Registry,
    /// Entity Configuration inputs.
    EntityConfiguration,
    /// Trust anchor repository.
    TrustAnchors,
    /// Our keys.
    Keys,
    /// The general subordinate statement settings (per-subordinate changes use
    /// [`ControlPlane::refresh_subordinate`], which does not reload the other 99,999).
    SubordinateGeneral,
}

/// Shared state of the control plane.
#[derive(Debug)]
pub struct ControlPlane {
    /// The database.
    pub db: Db,
    /// Static configuration.
    pub settings: Arc<Settings>,
    /// Time source.
    pub clock: Arc<dyn Clock>,
    /// Where our private keys live.
    pub kms: keys::kms::Kms,
    /// Wakes the key task when an admin change may have moved the next key transition.
    pub key_events: tokio::sync::Notify,
    /// Wakes the key refreshers after a change of trust anchors or subordinates.
    pub refresh_events: tokio::sync::Notify,
    /// Subordinates changed since the refresher last looked (it restarts or stops their polls).
    changed_subordinates: std::sync::Mutex<Vec<String>>,
    snapshot: Arc<ArcSwap<Snapshot>>,
    generation: AtomicU64,
    versions: AtomicU64,
    write: Mutex<()>,
}

impl ControlPlane {
    /// Builds the first snapshot from the database and returns the control plane.
    pub async fn start(
        db: Db,
        settings: Arc<Settings>,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<Self>> {
        let now = clock.now();
        let kms = keys::kms::Kms::open(&settings)?;
        keys::ensure_signing_key(&db, &settings, &kms, now).await?;
        let versions = AtomicU64::new(1);
        let snapshot = Snapshot {
            generation: 1,
            entity_id: settings.entity_id.as_str().into(),
            registry: Arc::new(load_registry(&db, now).await?),
            entity_configuration: Arc::new(load_ec(&db).await?),
            trust_anchors: Arc::new(load_trust_anchors(&db).await?),
            keys: Arc::new(keys::load_keyset(&db, &kms, now).await?),
            subordinates: Arc::new(subs::load_all(&db, &versions).await?),
            keys_generation: 1,
        };
        Ok(Arc::new(Self {
            db,
            settings,
            clock,
            kms,
            key_events: tokio::sync::Notify::new(),
            refresh_events: tokio::sync::Notify::new(),
            changed_subordinates: std::sync::Mutex::new(Vec::new()),
            snapshot: Arc::new(ArcSwap::from_pointee(snapshot)),
            generation: AtomicU64::new(1),
            versions,
            write: Mutex::new(()),
        }))
    }

    /// The publication point the data plane reads from.
    pub fn snapshot_handle(&self) -> pharos_shared::snapshot::SnapshotReader {
        self.snapshot.clone().into()
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.load_full()
    }

    /// Current time, Unix seconds.
    pub fn now(&self) -> i64 {
        self.clock.now()
    }

    /// Serialises writers: hold the guard across commit and [`Self::refresh`].
    pub async fn writer(&self) -> MutexGuard<'_, ()> {
        self.write.lock().await
    }

    /// Reloads `sections` from the database and publishes a new snapshot. Call after commit,
    /// while holding the writer guard.
    pub async fn refresh(&self, sections: &[Section]) -> Result<()> {
        let now = self.now();
        let mut next = Snapshot::clone(&self.snapshot.load());
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        for s in sections {
            match s {
                Section::Registry => next.registry = Arc::new(load_registry(&self.db, now).await?),
                Section::EntityConfiguration => {
                    next.entity_configuration = Arc::new(load_ec(&self.db).await?)
                }
                Section::TrustAnchors => {
                    next.trust_anchors = Arc::new(load_trust_anchors(&self.db).await?)
                }
                Section::Keys => {
                    next.keys = Arc::new(keys::load_keyset(&self.db, &self.kms, now).await?)
                }
                Section::SubordinateGeneral => {
                    let mut subs = Subordinates::clone(&next.subordinates);
                    subs.general = Arc::new(subs::load_general(&self.db).await?);
                    subs.general_version = self.next_version();
                    next.subordinates = Arc::new(subs);
                }
            }
            if matches!(s, Section::Keys | Section::Registry) {
                next.keys_generation = generation;
            }
        }
        next.generation = generation;
        self.snapshot.store(Arc::new(next));
        if sections.contains(&Section::TrustAnchors) {
            self.refresh_events.notify_one();
        }
        Ok(())
    }

    /// Reloads one subordinate (by entity identifier) from the database and publishes a new
    /// snapshot that shares every other subordinate with the current one: O(log n), not O(n).
    /// Call after commit, while holding the writer guard.
    pub async fn refresh_subordinate(&self, entity_id: &str) -> Result<()> {
        let row = db::subordinates::get(&self.db, SubKey::EntityId(entity_id)).await?;
        let sub = row.map(|r| Arc::new(subs::to_snapshot(r, self.next_version())));
        let mut next = Snapshot::clone(&self.snapshot.load());
        next.subordinates = Arc::new(next.subordinates.with(entity_id, sub));
        next.generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        self.snapshot.store(Arc::new(next));
        if let Ok(mut changed) = self.changed_subordinates.lock() {
            changed.push(entity_id.to_owned());
        }
        self.refresh_events.notify_one();
        Ok(())
    }

    /// The subordinates published since the last call (the key refresher re-reads their
    /// polling settings).
    pub fn take_changed_subordinates(&self) -> Vec<String> {
        match self.changed_subordinates.lock() {
            Ok(mut c) => {
                let mut ids = std::mem::take(&mut *c);
                ids.sort();
                ids.dedup();
                ids
            }
            Err(_) => Vec::new(),
        }
    }

    /// A fresh version number for a subordinate or the general settings (cache keys).
    pub fn next_version(&self) -> u64 {
        self.versions.fetch_add(1, Ordering::SeqCst) + 1
    }
}

/// The endpoint registry as stored.
pub async fn load_registry(db: &Db, now: i64) -> Result<Registry> {
    let rows = db::endpoints::list(db).await?;
    let mut entries = Vec::with_capacity(rows.len());
    for r in rows {
        let Some(kind) = EndpointType::parse(&r.kind) else {
            tracing::warn!(kind = %r.kind, "skipping endpoint of unknown type");
            continue;
        };
        let config = match EndpointConfig::parse(kind, &r.config) {
            Ok(c) => c,
            Err(e) => {
                // Stored configs were validated on write; an invalid one means the database
                // was edited by hand. Serve nothing rather than something half-configured.
                tracing::error!(kind = %kind, error = %e, "skipping endpoint with invalid config");
                continue;
            }
        };
        entries.push(EndpointEntry {
            kind,
            path: r.path,
            url: r.url,
            auth_enabled: r.auth_enabled,
            auth_trust_anchors: r.auth_trust_anchors,
            config,
        });
    }
    let legacy = db::endpoints::legacy_paths(db, now)
        .await?
        .into_iter()
        .filter_map(|(p, k, e)| EndpointType::parse(&k).map(|k| (p, k, e)))
        .collect();
    Ok(Registry::new(entries, legacy))
}

/// The Entity Configuration inputs as stored.
pub async fn load_ec(db: &Db) -> Result<EcSettings> {
    let lifetime = settings::get(db, settings::EC, "lifetime")
        .await?
        .and_then(|v| v.as_i64())
        .unwrap_or(EcSettings::default().lifetime);
    let metadata = match settings::get(db, settings::EC, "metadata").await? {
        Some(Value::Object(m)) => m,
        _ => Default::default(),
    };
    let authority_hints = db::entity_config::hints(db)
        .await?
        .into_iter()
        .map(|h| h.entity_id)
        .collect();
    let additional_claims = db::entity_config::claims(db)
        .await?
        .into_iter()
        .map(|c| AdditionalClaim {
            claim: c.claim,
            value: c.value,
            crit: c.crit,
        })
        .collect();
    Ok(EcSettings {
        lifetime,
        metadata,
        authority_hints,
        additional_claims,
    })
}

/// The trust anchor repository as stored.
pub async fn load_trust_anchors(db: &Db) -> Result<TrustAnchors> {
    let rows = db::trust_anchors::list(db).await?;
    Ok(TrustAnchors {
        by_id: rows
            .into_iter()
            .map(|r| {
                let ta = TrustAnchor {
                    entity_id: r.entity_id.clone(),
                    jwks: r.jwks,
                    enable_jwks_update: r.enable_jwks_update,
                    key_poll_interval: r.key_poll_interval,
                };
                (r.entity_id, Arc::new(ta))
            })
            .collect(),
    })
}
