//! What one hosted entity runs in this process: its data plane (its caches, its resolver, its
//! command channel), its router on the public port, and its jobs. The default entity's are
//! built by [`crate::app`] with the same functions; every other hosted entity's by
//! [`Launcher`], when the process starts and when one is created through the Admin API.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use pharos_controlplane::command_dispatch;
use pharos_controlplane::control_plane::ControlPlane;
use pharos_controlplane::hosting::Launch;
use pharos_controlplane::leadership::Leadership;
use pharos_controlplane::refresh::{Failures, Refreshers};
use pharos_dataplane::DataPlane;
use pharos_dataplane::front::Front;
use pharos_dataplane::hosts::{HostedRoute, Hosts};
use pharos_dataplane::stats::metrics::RequestMetrics;
use pharos_runtime::command::{CommandQueue, Commands};
use pharos_runtime::outbound::HttpFetcher;
use pharos_runtime::resolver_caches::ResolverCaches;
use pharos_shared::hosted::EntityNo;
use pharos_shared::time::Clock;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Entity `cp`'s data plane and the receiving end of its command channel.
pub fn data_plane(cp: &ControlPlane, clock: Arc<dyn Clock>) -> (Arc<DataPlane>, CommandQueue) {
    let (commands, command_rx) = Commands::channel();
    let settings = &cp.settings;
    let data = DataPlane::connected(
        cp.snapshot_handle(),
        clock,
        Arc::new(cp.outbound.clone()),
        commands,
        &settings.storage.endpoint_auth,
        &settings.cache,
        &settings.server,
    );
    (data, command_rx)
}

/// The jobs of entity `cp` until `stop`: its reconciler and command handler everywhere, and,
/// on the leader only, its key task, key refreshers, entity collector and issued-mark prune.
pub fn spawn_jobs(
    cp: &Arc<ControlPlane>,
    refreshers: &Arc<Refreshers<HttpFetcher>>,
    command_rx: CommandQueue,
    leadership: &Arc<Leadership>,
    stop: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    let mut tasks = vec![
        cp.spawn_reconciler(stop.clone()),
        command_dispatch::spawn(refreshers.clone(), command_rx, stop.clone()),
    ];
    let c = cp.clone();
    tasks.push(leadership.supervise(stop.clone(), move |t| c.spawn_key_task(t)));
    let r = refreshers.clone();
    tasks.push(leadership.supervise(stop.clone(), move |t| r.spawn(t)));
    let (c, fetcher) = (cp.clone(), Arc::new(cp.outbound.clone()));
    tasks.push(leadership.supervise(stop.clone(), move |t| {
        pharos_controlplane::collector::job::spawn(c.clone(), fetcher.clone(), t)
    }));
    let c = cp.clone();
    tasks.push(leadership.supervise(stop.clone(), move |t| {
        use command_dispatch::trust_marks::{PRUNE_EVERY, spawn_prune};
        spawn_prune(c.clone(), PRUNE_EVERY, t)
    }));
    tasks
}

/// Serves the hosted entities other than the default one.
pub struct Launcher {
    /// The default entity's data plane: the others share its port-wide limits.
    default: Arc<DataPlane>,
    leadership: Arc<Leadership>,
    hosts: Hosts,
    /// The public port's request metrics, which the entities' ready answers count into.
    requests: RequestMetrics,
    /// The public port's CORS layer, when configured (it wraps every entity's routes).
    cors: Option<tower_http::cors::CorsLayer>,
    /// Each entity's resolver caches, for its Admin API's `/resolver` routes.
    resolvers: Mutex<HashMap<EntityNo, Arc<dyn ResolverCaches>>>,
    /// Each entity's refresh failures, for `/metrics`.
    failures: Mutex<HashMap<EntityNo, Arc<Failures>>>,
    /// The jobs of every entity launched, awaited at shutdown.
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// While held (see [`Launch::hold`]): the routes launched, not yet on the port.
    held: Mutex<Option<Vec<HostedRoute>>>,
}

impl std::fmt::Debug for Launcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launcher").finish_non_exhaustive()
    }
}

impl Launcher {
    /// A launcher whose entities answer on the public port through `hosts`, beside the
    /// default entity's data plane `default`, their requests counted in `requests`.
    pub fn new(
        default: Arc<DataPlane>,
        leadership: Arc<Leadership>,
        hosts: Hosts,
        requests: RequestMetrics,
        cors: Option<tower_http::cors::CorsLayer>,
    ) -> Self {
        Self {
            default,
            leadership,
            hosts,
            requests,
            cors,
            resolvers: Mutex::default(),
            failures: Mutex::default(),
            tasks: Mutex::default(),
            held: Mutex::default(),
        }
    }

    /// Entity `entity`'s resolver caches, while it is hosted.
    pub fn resolver(&self, entity: EntityNo) -> Option<Arc<dyn ResolverCaches>> {
        self.resolvers.lock().ok()?.get(&entity).cloned()
    }

    /// The refresh failures of every launched entity (not the default one's, which
    /// [`crate::app`] keeps).
    pub fn failures(&self) -> Vec<(EntityNo, Arc<Failures>)> {
        self.failures
            .lock()
            .map(|f| f.iter().map(|(n, f)| (*n, f.clone())).collect())
            .unwrap_or_default()
    }

    /// The jobs of the launched entities (they end with the app's shutdown token).
    pub fn take_tasks(&self) -> Vec<JoinHandle<()>> {
        self.tasks
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default()
    }

    /// Entity `data`'s public front: its federation routes and ready answers (the CORS
    /// layer, when configured, wraps the routes and ready answers are off, as on the
    /// default entity's).
    fn front(&self, data: &Arc<DataPlane>) -> Front {
        let router: Router = pharos_dataplane::router(data.clone());
        match &self.cors {
            Some(c) => Front::new(router.layer(c.clone())),
            None => Front::with_ready_answers(router, data.clone(), &[]),
        }
    }
}

impl Launch for Launcher {
    fn launch(&self, cp: Arc<ControlPlane>, stop: CancellationToken) {
        let entity = cp.db.hosted();
        let (commands, command_rx) = self.default.commands.sibling();
        let data = self.default.beside(
            cp.snapshot_handle(),
            Arc::new(cp.outbound.clone()),
            commands,
            &cp.settings.storage.endpoint_auth,
        );
        let refreshers = Refreshers::new(cp.clone(), Arc::new(cp.outbound.clone()));
        let jobs = spawn_jobs(&cp, &refreshers, command_rx, &self.leadership, &stop);
        if let Ok(mut tasks) = self.tasks.lock() {
            tasks.extend(jobs);
        }
        if let Ok(mut r) = self.resolvers.lock() {
            r.insert(entity, data.resolve.clone());
        }
        if let Ok(mut f) = self.failures.lock() {
            f.insert(entity, refreshers.failures.clone());
        }
        match HostedRoute::new(entity, &cp.settings.entity_id, self.front(&data)) {
            Some(route) => {
                let route = route.counted_in(&self.requests);
                let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
                match held.as_mut() {
                    Some(routes) => routes.push(route),
                    None => self.hosts.update(|t| t.with(route.clone())),
                }
            }
            None => tracing::error!(%entity, entity_id = %cp.settings.entity_id,
                "hosted entity not served: its identifier is no http(s) URL"),
        }
    }

    fn retire(&self, entity: EntityNo) {
        if let Some(routes) = self.held.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            routes.retain(|r| r.entity != entity);
        }
        self.hosts.update(|t| t.without(entity));
        // Its request series leave `/metrics` with it, as its refresh failures do below.
        self.requests.retire(entity);
        if let Ok(mut r) = self.resolvers.lock() {
            r.remove(&entity);
        }
        if let Ok(mut f) = self.failures.lock() {
            f.remove(&entity);
        }
    }

    fn hold(&self) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.get_or_insert_with(Vec::new);
    }

    fn release(&self) {
        let routes = self
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or_default();
        if !routes.is_empty() {
            self.hosts.update(|t| t.with_all(routes.clone()));
        }
    }
}
