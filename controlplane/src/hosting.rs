//! The federation entities this deployment hosts (issue 38): the default one, configured in
//! `entity_id`, and the others, created at run time through the Admin API.
//!
//! Each hosted entity is a whole control plane of its own ([`ControlPlane::start_hosted`]):
//! its database handle is scoped to its rows ([`crate::db::Db::for_entity`]), and it has its
//! own keys, snapshot, writer lock and background jobs, so a write to one entity never touches
//! another's snapshot or caches. What the process has once (the pool, the outbound clients,
//! leadership among replicas) is shared. How an entity is served on the public port and which
//! jobs it runs is the application's to say ([`Launch`]); this module decides which entities
//! there are, and refuses one that could not be told apart from the others on the public port.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::StreamExt as _;
use pharos_shared::hosted::{EntityNo, Placement, collision, nested};
use tokio_util::sync::CancellationToken;

use crate::control_plane::{ControlPlane, Peers};
use crate::db::entities::{self, EntityRow};
use crate::error::{Error, Result};

/// How many hosted entities start at once (each holds a pooled connection while it reads).
const CONCURRENT_STARTS: usize = 4;

/// What the application does to serve a hosted entity other than the default one.
pub trait Launch: Send + Sync {
    /// Serves entity `cp` until `stop` is cancelled: its data plane on the public port and its
    /// background jobs.
    fn launch(&self, cp: Arc<ControlPlane>, stop: CancellationToken);
    /// Takes entity `entity` off the public port (its jobs end with its `stop`).
    fn retire(&self, entity: EntityNo);
    /// From now until [`Self::release`], entities launched are put on the public port
    /// together, at the release (the start of every stored entity).
    fn hold(&self) {}
    /// Puts the entities launched since [`Self::hold`] on the public port.
    fn release(&self) {}
}

/// The hosted entities of this process.
pub struct Hosting {
    default: Arc<ControlPlane>,
    running: std::sync::RwLock<BTreeMap<EntityNo, Running>>,
    launcher: Arc<dyn Launch>,
    /// Paths the public port keeps for itself on every host (health checks, the Admin API).
    reserved: Vec<String>,
    shutdown: CancellationToken,
    /// Serialises creations and deletions: each one's collision check sees the last one.
    changes: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Hosting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hosting")
            .field("entities", &self.numbers())
            .finish_non_exhaustive()
    }
}

#[derive(Clone)]
struct Running {
    cp: Arc<ControlPlane>,
    stop: CancellationToken,
}

impl Hosting {
    /// Starts every hosted entity stored (besides `default`, already started) and serves
    /// each through `launcher` until `shutdown`. `reserved`: the public port's own paths.
    pub async fn start(
        default: Arc<ControlPlane>,
        launcher: Arc<dyn Launch>,
        reserved: Vec<String>,
        shutdown: CancellationToken,
    ) -> Result<Arc<Self>> {
        let hosting = Arc::new(Self {
            default,
            running: Default::default(),
            launcher,
            reserved,
            shutdown,
            changes: tokio::sync::Mutex::new(()),
        });
        // Several at once (each reads its snapshot and keys): a thousand entities one after
        // the other took 9.5 s to start (BENCHMARKS.md, "Hosted entities").
        let rows: Vec<EntityRow> = entities::list(&hosting.default.db)
            .await?
            .into_iter()
            .filter(|r| !r.id.is_default())
            .collect();
        // Served together once all have started (nothing is served before `start` returns).
        hosting.launcher.hold();
        {
            let h = &hosting;
            let starts = rows
                .iter()
                .map(|row| async move { (row, h.run(row).await) });
            let mut started =
                futures_util::stream::iter(starts).buffer_unordered(CONCURRENT_STARTS);
            while let Some((row, result)) = started.next().await {
                // One entity that cannot start (a key it cannot open) must not keep the
                // others from serving: it is left out, loudly.
                if let Err(e) = result {
                    tracing::error!(error = %e, entity = %row.id, entity_id = %row.entity_id,
                        "hosted entity not started; the others are served");
                }
            }
        }
        hosting.launcher.release();
        let peers: Arc<dyn Peers> = hosting.clone();
        hosting.default.set_peers(Arc::downgrade(&peers));
        Ok(hosting)
    }

    /// Serves what the database holds: starts the entities another replica created, stops
    /// the ones it deleted.
    async fn follow_database(&self) {
        let _one_at_a_time = self.changes.lock().await;
        let rows = match entities::list(&self.default.db).await {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(error = %e, "hosted entities not re-read; the next announcement retries");
                return;
            }
        };
        let stored: Vec<EntityNo> = rows.iter().map(|r| r.id).collect();
        let gone: Vec<EntityNo> = self
            .numbers()
            .into_iter()
            .filter(|n| !n.is_default() && !stored.contains(n))
            .collect();
        for n in gone {
            self.stop(n);
        }
        for row in rows {
            if !row.id.is_default()
                && self.get(row.id).is_none()
                && let Err(e) = self.run(&row).await
            {
                tracing::error!(error = %e, entity = %row.id, "hosted entity not started");
            }
        }
    }

    /// Takes entity `entity` off the public port and stops its jobs.
    fn stop(&self, entity: EntityNo) {
        let running = self
            .running
            .write()
            .ok()
            .and_then(|mut r| r.remove(&entity));
        if let Some(r) = running {
            self.launcher.retire(entity);
            r.stop.cancel();
            tracing::info!(%entity, entity_id = %r.cp.settings.entity_id, "hosted entity no longer served");
        }
    }

    /// The control plane of hosted entity `entity`, if it is hosted.
    pub fn get(&self, entity: EntityNo) -> Option<Arc<ControlPlane>> {
        if entity.is_default() {
            return Some(self.default.clone());
        }
        let running = self.running.read().ok()?;
        running.get(&entity).map(|r| r.cp.clone())
    }

    /// The hosted entity named by `key` in a path: its number, or its Entity Identifier.
    pub fn find(&self, key: &str) -> Option<Arc<ControlPlane>> {
        if let Some(n) = key.parse::<i64>().ok().and_then(EntityNo::new) {
            return self.get(n);
        }
        if key == self.default.settings.entity_id {
            return Some(self.default.clone());
        }
        let running = self.running.read().ok()?;
        running
            .values()
            .find(|r| r.cp.settings.entity_id == key)
            .map(|r| r.cp.clone())
    }

    /// The numbers of the hosted entities, the default one first.
    pub fn numbers(&self) -> Vec<EntityNo> {
        let mut all = vec![EntityNo::DEFAULT];
        if let Ok(running) = self.running.read() {
            all.extend(running.keys().copied());
        }
        all
    }

    /// Every hosted entity, as stored.
    pub async fn list(&self) -> Result<Vec<EntityRow>> {
        entities::list(&self.default.db).await
    }

    /// One hosted entity, as stored.
    pub async fn row(&self, entity: EntityNo) -> Result<Option<EntityRow>> {
        entities::get(&self.default.db, entity).await
    }

    /// Hosts a new entity identified by `entity_id` (checked by the caller as an entity
    /// identifier): stores it, starts its control plane (its first keys are generated) and
    /// serves it. Refused, naming the other, when it would collide on the public port with a
    /// hosted entity, the default entity's endpoints or the port's own paths; an identifier
    /// already hosted is [`Error::AlreadyExists`].
    pub async fn create(
        &self,
        entity_id: &str,
        display_name: &str,
        actor: Option<&str>,
    ) -> Result<EntityRow> {
        let _one_at_a_time = self.changes.lock().await;
        let db = &self.default.db;
        if entities::find(db, entity_id).await?.is_some() {
            return Err(Error::AlreadyExists {
                what: "hosted entity",
            });
        }
        self.check_placement(entity_id).await?;
        let now = self.default.now();
        let settings = self.default.settings.for_hosted(entity_id);
        let kms = crate::keys::kms::Kms::open(&settings)?;
        let mut w = self.default.write(actor).await;
        let tx = w.tx().await?;
        let entity = entities::insert(db, tx, entity_id, display_name, now).await?;
        crate::keys::seed_new_entity(&db.for_entity(entity), tx, &settings, &kms, now).await?;
        w.touch_hosted_entities();
        w.commit().await?;
        let row = entities::get(db, entity)
            .await?
            .ok_or_else(|| Error::Internal(format!("hosted entity {entity} vanished")))?;
        if let Err(e) = self.run(&row).await {
            // Not served, so not hosted: the row goes again (its number stays used).
            let mut w = self.default.write(actor).await;
            entities::delete(db, w.tx().await?, entity, now).await?;
            w.touch_hosted_entities();
            w.commit().await?;
            return Err(e);
        }
        tracing::info!(%entity, entity_id, "hosted entity created");
        Ok(row)
    }

    /// Renames hosted entity `entity` for people.
    pub async fn rename(
        &self,
        entity: EntityNo,
        display_name: &str,
        actor: Option<&str>,
    ) -> Result<Option<EntityRow>> {
        let db = &self.default.db;
        let mut w = self.default.write(actor).await;
        if entities::get(db, entity).await?.is_none() {
            return Ok(None);
        }
        let now = self.default.now();
        entities::set_display_name(db, w.tx().await?, entity, display_name, now).await?;
        w.commit().await?;
        entities::get(db, entity).await
    }

    /// Stops hosting entity `entity`: it leaves the public port, its jobs stop, and its rows
    /// stay in the database under its number (its history). The default entity is the
    /// configuration's and cannot be deleted here (`Ok(false)`, as for an unknown one).
    pub async fn delete(&self, entity: EntityNo, actor: Option<&str>) -> Result<bool> {
        if entity.is_default() {
            return Ok(false);
        }
        let _one_at_a_time = self.changes.lock().await;
        let db = &self.default.db;
        let mut w = self.default.write(actor).await;
        let deleted = entities::delete(db, w.tx().await?, entity, self.default.now()).await?;
        w.touch_hosted_entities();
        w.commit().await?;
        self.stop(entity);
        Ok(deleted)
    }

    /// The hosted entity an endpoint of `cp` at `path` would collide with on the public port,
    /// if any: the default entity answers at the root of every host, so its endpoint paths
    /// must stay clear of the paths of the entities hosted on its own host.
    pub fn endpoint_collision(&self, cp: &ControlPlane, path: &str) -> Option<String> {
        if !cp.db.hosted().is_default() {
            return None;
        }
        let default = Placement::of(&self.default.settings.entity_id).ok()?;
        let running = self.running.read().ok()?;
        running.values().find_map(|r| {
            let id = &r.cp.settings.entity_id;
            let place = Placement::of(id).ok()?;
            (place.same_host(&default) && nested(&place.prefix, path)).then(|| id.clone())
        })
    }

    /// Refuses `entity_id` when the public port could not tell it apart from what it serves.
    async fn check_placement(&self, entity_id: &str) -> Result<()> {
        let new = Placement::of(entity_id).map_err(|why| Error::EntityPlacement {
            entity_id: entity_id.to_owned(),
            why: format!("entity_id {why}"),
        })?;
        let default = Placement::of(&self.default.settings.entity_id).map_err(Error::Internal)?;
        let hosted: Vec<(String, Placement)> = self
            .list()
            .await?
            .into_iter()
            .filter(|r| !r.id.is_default())
            .filter_map(|r| Placement::of(&r.entity_id).ok().map(|p| (r.entity_id, p)))
            .collect();
        let snapshot = self.default.snapshot();
        let default_paths = snapshot
            .registry
            .by_path
            .keys()
            .chain(snapshot.registry.legacy.keys())
            .map(String::as_str);
        let reserved: Vec<&str> = self.reserved.iter().map(String::as_str).collect();
        let others = hosted.iter().map(|(id, p)| (id.as_str(), p));
        match collision(&new, &default, others, default_paths, &reserved) {
            Some(why) => Err(Error::EntityPlacement {
                entity_id: entity_id.to_owned(),
                why,
            }),
            None => Ok(()),
        }
    }

    /// Starts the control plane of stored entity `row` and serves it.
    async fn run(&self, row: &EntityRow) -> Result<()> {
        let settings = Arc::new(self.default.settings.for_hosted(&row.entity_id));
        let db = self.default.db.for_entity(row.id);
        let cp = ControlPlane::start_hosted(db, settings, &self.default).await?;
        let stop = self.shutdown.child_token();
        self.launcher.launch(cp.clone(), stop.clone());
        if let Ok(mut running) = self.running.write() {
            running.insert(row.id, Running { cp, stop });
        }
        Ok(())
    }
}

impl Peers for Hosting {
    fn entity(&self, entity: EntityNo) -> Option<Arc<ControlPlane>> {
        self.get(entity)
    }

    fn others(&self) -> Vec<Arc<ControlPlane>> {
        self.running
            .read()
            .map(|r| r.values().map(|r| r.cp.clone()).collect())
            .unwrap_or_default()
    }

    fn entities_changed(&self) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(self.follow_database())
    }
}
