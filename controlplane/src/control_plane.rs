//! The control plane: the database, the published snapshot, and the one write path.
//!
//! Every change goes through [`Write`] (`control_plane/write.rs`): it holds the writer lock
//! and the transaction, and its `commit()` publishes exactly the snapshot sections it touched.
//! The reload-and-publish step (`control_plane/publish.rs`) is private to this module, so
//! nothing else can publish — and nothing can publish what is not committed. A publish that
//! fails after a commit is not lost: its sections stay marked dirty and are reloaded by the
//! next publish or by the reconciler task, so the snapshot never stays behind the database.
//! Loading the snapshot from the database lives in `control_plane/load.rs`.

pub mod cluster;
pub mod db;
mod durable;
pub mod key_lifecycle;
mod lag;
mod load;
mod publish;
mod write;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use pharos_shared::config::Settings;
use pharos_shared::snapshot::{Snapshot, SnapshotPublisher, SnapshotReader};
use pharos_shared::time::Clock;
use tokio::sync::Mutex;

use crate::db::Db;
use crate::error::Result;
use crate::keys;

pub use publish::{Changes, Section};
pub use write::{BeginHook, Write, with_begin_hook};

/// Shared state of the control plane.
#[derive(Debug)]
pub struct ControlPlane {
    /// The database. Reads go to its pool directly; writes only through [`ControlPlane::write`].
    pub db: Db,
    /// Static configuration.
    pub settings: Arc<Settings>,
    /// Time source.
    pub clock: Arc<dyn Clock>,
    /// Where our private keys live.
    pub kms: keys::kms::Kms,
    /// The entity checks' HTTP client and list cache (outlives every check run).
    pub checks: Arc<crate::checks::Outbound>,
    /// The federation fetcher (`federation.*` limits) of this process: the resolver, the
    /// refreshers and the collectors fetch through clones of it, so `/metrics` counts them all.
    pub outbound: pharos_runtime::outbound::HttpFetcher,
    /// Wakes the key task when an admin change may have moved the next key transition.
    pub key_events: tokio::sync::Notify,
    /// Wakes the key refreshers after a change of trust anchors or subordinates.
    pub refresh_events: tokio::sync::Notify,
    /// Counts publications of the endpoint registry: background jobs configured by an
    /// endpoint (the entity collector) watch it to restart with the new settings.
    pub registry_events: tokio::sync::watch::Sender<u64>,
    /// Subordinates changed since the refresher last looked (it restarts or stops their polls).
    changed_subordinates: std::sync::Mutex<Vec<String>>,
    /// Set by a full reload: any subordinate may have changed.
    resync_all_subordinates: std::sync::atomic::AtomicBool,
    snapshot: SnapshotPublisher,
    generation: AtomicU64,
    /// When the current snapshot was published, Unix seconds (for `/metrics`).
    published_at: std::sync::atomic::AtomicI64,
    /// The next key transition the key task planned, Unix seconds (`i64::MIN`: none planned,
    /// or the task has not run); a failed run leaves it, so it falls into the past.
    next_key_transition: std::sync::atomic::AtomicI64,
    versions: AtomicU64,
    /// Serialises writers: held from the first read that decides a write to its publication.
    write: Mutex<()>,
    /// Group commit on an SQLite file (see `control_plane/durable.rs`); `None` elsewhere,
    /// where each write's commit is durable by itself.
    group: Option<Arc<durable::GroupCommit>>,
    /// Sections committed but not yet published (their reload failed).
    dirty: std::sync::Mutex<Changes>,
    /// Wakes the reconciler when `dirty` gained something.
    dirty_events: tokio::sync::Notify,
    /// This process among the replicas: announcements carrying it are its own.
    pub origin: u64,
    /// Whether this process leads the replicas, and the fencing tokens of its leader-only jobs.
    pub leadership: Arc<crate::leadership::Leadership>,
    /// Whether changes of other replicas may be missing (see [`Self::is_behind`]).
    behind: lag::Lag,
    /// Snapshots built from the whole database: the first, and each full reload.
    full_builds: AtomicU64,
    /// This process's other hosted entities, for announcements naming one of them (set once
    /// by [`crate::hosting::Hosting`]; unset, announcements of other entities are dropped).
    peers: std::sync::OnceLock<std::sync::Weak<dyn Peers>>,
    /// Test hook: how many of the next reloads fail.
    #[cfg(test)]
    failing_reloads: std::sync::atomic::AtomicU32,
}

/// The other hosted entities of this process, as the replica follower reaches them.
pub trait Peers: Send + Sync {
    /// The control plane of hosted entity `entity`, if it runs here.
    fn entity(&self, entity: pharos_shared::hosted::EntityNo) -> Option<Arc<ControlPlane>>;
    /// Every hosted entity's control plane but the default one.
    fn others(&self) -> Vec<Arc<ControlPlane>>;
    /// Another replica created or deleted a hosted entity: serve what the database holds.
    fn entities_changed(&self) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

/// What the control planes of one process's hosted entities share.
struct Shared {
    checks: Arc<crate::checks::Outbound>,
    outbound: pharos_runtime::outbound::HttpFetcher,
    leadership: Arc<crate::leadership::Leadership>,
    origin: u64,
    behind: bool,
}

impl ControlPlane {
    /// Builds the first snapshot from the database and returns the control plane of the
    /// process that made `subscription` (before this call, so that no change of another
    /// replica is missing from the snapshot or left unannounced): the default entity's, the
    /// one configured in `entity_id` (see [`crate::hosting`] for the others).
    pub async fn start(
        db: Db,
        settings: Arc<Settings>,
        clock: Arc<dyn Clock>,
        subscription: &cluster::Subscription,
    ) -> Result<Arc<Self>> {
        let now = clock.now();
        if db.hosted().is_default() {
            // The configuration names the default entity: entity 1 takes its identifier.
            let mut tx = db.begin().await?;
            db::entities::claim_default(&db, &mut tx, &settings.entity_id, now).await?;
            tx.commit().await?;
        }
        let max_bytes = settings.federation.max_response_bytes;
        let shared = Shared {
            checks: Arc::new(crate::checks::Outbound::new(max_bytes)),
            outbound: pharos_runtime::outbound::HttpFetcher::new(&settings.federation),
            leadership: crate::leadership::Leadership::new(
                &settings,
                db.dialect,
                subscription.origin,
            ),
            origin: subscription.origin,
            behind: subscription.is_behind(),
        };
        Self::build(db, settings, clock, shared).await
    }

    /// The control plane of another hosted entity (`db` scoped to it, `settings` its own):
    /// it shares this process's outbound clients, replica identity and leadership with
    /// `default`, and has its own keys, snapshot, writer and jobs.
    pub async fn start_hosted(
        db: Db,
        settings: Arc<Settings>,
        default: &ControlPlane,
    ) -> Result<Arc<Self>> {
        let shared = Shared {
            checks: default.checks.clone(),
            outbound: default.outbound.clone(),
            leadership: default.leadership.clone(),
            origin: default.origin,
            behind: false,
        };
        Self::build(db, settings, default.clock.clone(), shared).await
    }

    async fn build(
        db: Db,
        settings: Arc<Settings>,
        clock: Arc<dyn Clock>,
        shared: Shared,
    ) -> Result<Arc<Self>> {
        let now = clock.now();
        let kms = keys::kms::Kms::open(&settings)?;
        keys::ensure_signing_key(&db, &settings, &kms, now).await?;
        let versions = AtomicU64::new(1);
        let snapshot = load::snapshot(&db, &settings, &kms, &versions, now, None).await?;
        let group = db
            .wal
            .clone()
            .map(|w| Arc::new(durable::GroupCommit::new(w)));
        let cp = Arc::new(Self {
            db,
            settings,
            clock,
            kms,
            checks: shared.checks,
            outbound: shared.outbound,
            key_events: tokio::sync::Notify::new(),
            refresh_events: tokio::sync::Notify::new(),
            registry_events: tokio::sync::watch::Sender::new(0),
            changed_subordinates: std::sync::Mutex::new(Vec::new()),
            resync_all_subordinates: std::sync::atomic::AtomicBool::new(false),
            snapshot: SnapshotPublisher::new(snapshot),
            generation: AtomicU64::new(1),
            published_at: std::sync::atomic::AtomicI64::new(now),
            next_key_transition: std::sync::atomic::AtomicI64::new(i64::MIN),
            versions,
            write: Mutex::new(()),
            group,
            dirty: std::sync::Mutex::new(Changes::default()),
            dirty_events: tokio::sync::Notify::new(),
            origin: shared.origin,
            leadership: shared.leadership,
            behind: lag::Lag::new(shared.behind, now),
            full_builds: AtomicU64::new(1),
            peers: std::sync::OnceLock::new(),
            #[cfg(test)]
            failing_reloads: std::sync::atomic::AtomicU32::new(0),
        });
        if let Some(g) = &cp.group {
            durable::spawn(Arc::downgrade(&cp), g.clone());
        }
        Ok(cp)
    }

    /// Gives announcements of this process's other hosted entities a way to them (once).
    pub fn set_peers(&self, peers: std::sync::Weak<dyn Peers>) {
        let _ = self.peers.set(peers);
    }

    fn peers(&self) -> Option<Arc<dyn Peers>> {
        self.peers.get().and_then(std::sync::Weak::upgrade)
    }

    /// The publication point the data plane reads from.
    pub fn snapshot_handle(&self) -> SnapshotReader {
        self.snapshot.reader()
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.load_full()
    }

    /// When the current snapshot was published, Unix seconds.
    pub fn published_at(&self) -> i64 {
        self.published_at.load(Ordering::Relaxed)
    }

    /// How many snapshots were built from the whole database since start (1 + full reloads).
    pub fn full_builds(&self) -> u64 {
        self.full_builds.load(Ordering::Relaxed)
    }

    /// The fencing token of a leader-only job (see [`crate::leadership::Fence`]): taken before
    /// the reads that decide its write, checked in the write's transaction before the commit.
    pub fn fence(&self) -> crate::leadership::Fence {
        self.leadership.fence()
    }

    /// Current time, Unix seconds.
    pub fn now(&self) -> i64 {
        self.clock.now()
    }

    /// Starts a change made by `actor` (an admin user, an authenticated entity, or `None` for
    /// the service itself): waits for the writer lock. See [`Write`].
    pub async fn write(&self, actor: Option<&str>) -> Write<'_> {
        let asked = pharos_shared::time::Stopwatch::start();
        let lock = self.write.lock().await;
        write::slow("waiting for the writer lock", asked);
        Write::new(self, lock, actor.map(str::to_owned))
    }

    /// Whether a full reload happened since the last call: every subordinate's polling
    /// settings must be read again (see [`Self::take_changed_subordinates`] for single ones).
    pub fn take_resync_all_subordinates(&self) -> bool {
        self.resync_all_subordinates
            .swap(false, std::sync::atomic::Ordering::SeqCst)
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

    fn next_generation(&self) -> u64 {
        self.generation.fetch_add(1, Ordering::SeqCst) + 1
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        if let Some(g) = &self.group {
            g.close();
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
