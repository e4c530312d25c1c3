//! Composition root: configuration → database → first snapshot → listeners → serve.
//!
//! Used by the `pharos serve` command and by the whole-process tests, which start Pharos on
//! port 0 with a database of their own.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use pharos_dataplane::front::Front;
use pharos_dataplane::hosts::Hosts;
use pharos_dataplane::stats::capture::Capture;
use pharos_dataplane::stats::metrics::RequestMetrics;
use pharos_dataplane::stats::unobserved;
use pharos_runtime::outbound::HttpFetcher;
use pharos_shared::config::JtiBackend;
use pharos_shared::config::Settings;
use pharos_shared::time::Clock;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use pharos_controlplane::admin;
use pharos_controlplane::command_dispatch;
use pharos_controlplane::control_plane::ControlPlane;
use pharos_controlplane::control_plane::cluster::Subscription;
use pharos_controlplane::db::Db;
use pharos_controlplane::error::{Error, Result};
use pharos_controlplane::hosting::Hosting;
use pharos_controlplane::leadership::Leadership;
use pharos_controlplane::refresh::Refreshers;
use pharos_controlplane::stats::Statistics;

use crate::http::{self, cors, layers, tls};
use crate::metrics::Metrics;
use crate::metrics::tls_expiry::Served;

/// How long shutdown waits for borrowed database connections to be returned.
const POOL_CLOSE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// A running Pharos.
#[derive(Debug)]
pub struct App {
    /// Address of the main (public) port.
    pub addr: SocketAddr,
    /// Address of the separate admin port, when configured.
    pub admin_addr: Option<SocketAddr>,
    /// The control plane (tests inspect it): the default entity's.
    pub control: Arc<ControlPlane>,
    /// Every hosted entity's control plane.
    pub hosting: Arc<Hosting>,
    /// Serves the hosted entities besides the default one (their jobs end at shutdown).
    launcher: Arc<crate::entity::Launcher>,
    /// The key refreshers (tests drive `tick` directly instead of waiting).
    pub refreshers: Arc<Refreshers<HttpFetcher>>,
    /// Who may use the Admin API before its first user exists.
    pub admin_bootstrap: Arc<admin::bootstrap::Bootstrap>,
    /// Statistics: the ring, the request metrics and the daily job (tests flush and tick them).
    pub stats: Arc<Statistics>,
    /// Whether this replica runs the once-per-federation background work.
    pub leadership: Arc<Leadership>,
    shutdown: CancellationToken,
    drain: std::time::Duration,
    tasks: Vec<JoinHandle<()>>,
    /// The statistics flusher, stopped after the listeners drained (see [`App::shutdown`]).
    flusher: Option<(CancellationToken, JoinHandle<()>)>,
}

/// Listeners the caller has already bound (tests bind port 0 first to learn the address that
/// becomes part of the entity identifier).
#[derive(Debug, Default)]
pub struct Listeners {
    /// Main port; bound from `server.ip_listen:server.port` when absent.
    pub main: Option<TcpListener>,
    /// Admin port; bound from `server.ip_listen:api.admin.port` when absent and configured.
    pub admin: Option<TcpListener>,
    /// Plain-HTTP redirect port of `server.tls.redirect_http`; bound from
    /// `server.ip_listen:80` when absent and configured.
    pub redirect: Option<TcpListener>,
}

impl App {
    /// Starts Pharos and returns once it is serving.
    pub async fn start(
        settings: Settings,
        clock: Arc<dyn Clock>,
        listeners: Listeners,
    ) -> Result<Self> {
        tls::install_crypto_provider();
        // Files named in the configuration are read before the database is created or a key
        // generated, so a wrong path leaves nothing behind.
        let missing = crate::preflight::problems(&settings);
        if !missing.is_empty() {
            return Err(pharos_shared::Error::Config(missing).into());
        }
        let settings = Arc::new(settings);
        if settings.storage.driver == pharos_shared::config::StorageDriver::Sqlite {
            let dir = std::path::Path::new(&settings.storage.data_dir);
            pharos_controlplane::private_files::create_dir(dir)
                .and_then(|()| {
                    pharos_controlplane::private_files::create_file(&dir.join("pharos.db"))
                })
                .map_err(|e| {
                    Error::Internal(format!(
                        "cannot create the database in data_dir {}: {e}",
                        settings.storage.data_dir
                    ))
                })?;
        }
        let db = Db::connect(&settings.storage_url(), settings.storage.max_connections).await?;
        db.migrate().await?;
        let stats = Arc::new(Statistics::new(&settings, db.clone())?);
        // A replica subscribes to the others' announcements before it builds its snapshot.
        let subscription = Subscription::open(&db, &settings).await?;
        let control =
            ControlPlane::start(db, settings.clone(), clock.clone(), &subscription).await?;
        // Request counters and latency for `/metrics`, kept also with statistics off.
        let requests = RequestMetrics::default();
        let capture = Capture::new(
            &settings,
            requests.clone(),
            stats.ring.clone(),
            clock.clone(),
        );
        let auth = &settings.storage.endpoint_auth;
        let (data, command_rx) = crate::entity::data_plane(&control, clock.clone());
        let refreshers = Refreshers::new(control.clone(), Arc::new(control.outbound.clone()));

        let admin = &settings.api.admin;
        let separate_admin = admin.enabled && admin.port != 0;
        let main_cors = cors::layer("server.cors", &settings.server.cors)?;
        let admin_cors = cors::layer("api.admin.cors", &admin.cors)?;
        let admin_here = admin.enabled && !separate_admin;
        let shutdown = CancellationToken::new();
        let mut tasks = Vec::new();
        // The other hosted entities: each served where its identifier says, with jobs of its
        // own (see `entity.rs`); the port's own paths are never theirs.
        let reserved = other_routes(admin_here);
        let proxies =
            pharos_shared::client_ip::TrustedProxies::parse(&settings.server.trusted_proxies);
        let hosts = Hosts::new(proxies, &reserved);
        let launcher = Arc::new(crate::entity::Launcher::new(
            data.clone(),
            control.leadership.clone(),
            hosts.clone(),
            requests.clone(),
            main_cors.clone(),
        ));
        let hosting = Hosting::start(
            control.clone(),
            launcher.clone(),
            other_routes(true).iter().map(|p| (*p).to_owned()).collect(),
            shutdown.clone(),
        )
        .await?;
        // The certificates the TLS listeners serve, recorded by them for `/metrics`: the main
        // port's (which serves the Admin API too unless it has a port of its own) and the
        // admin port's.
        let main_cert = settings.server.tls.enabled.then(|| Served::new("main"));
        let admin_cert = (separate_admin && admin.tls.enabled).then(|| Served::new("admin"));
        let metrics = Metrics::new(
            &requests,
            crate::metrics::Parts {
                cp: control.clone(),
                ring: stats.ring.clone(),
                caches: data.caches.clone(),
                statements: data.statement_budget.clone(),
                rate_limits: data.rate_limits.clone(),
                refusals: data.commands.refusals().clone(),
                certificates: main_cert.iter().chain(&admin_cert).cloned().collect(),
                entities: crate::metrics::entities::Entities {
                    hosting: hosting.clone(),
                    failures: refreshers.failures.clone(),
                    launcher: launcher.clone(),
                },
            },
        );
        let bootstrap = Arc::new(admin::bootstrap::Bootstrap::generate(&settings.entity_id));
        let resolver: Arc<dyn pharos_runtime::resolver_caches::ResolverCaches> =
            data.resolve.clone();
        let parts = admin::Parts::new(control.clone(), bootstrap.clone());
        let admin_router = || {
            let h = hosting.clone();
            let l = launcher.clone();
            let nested =
                admin::nested::from_parts(hosting.clone(), parts.clone(), move |cp, api| {
                    let api = api.layer(axum::Extension(h.clone()));
                    match l.resolver(cp.db.hosted()) {
                        Some(r) => api.layer(axum::Extension(r)),
                        None => api,
                    }
                });
            let api = parts
                .router(control.clone(), crate::metrics::router(metrics.clone()))
                .layer(axum::Extension(resolver.clone()))
                .layer(axum::Extension(hosting.clone()))
                .merge(nested.router());
            let r = layers::extractor_limit(api, &settings.server);
            match admin_cors.clone() {
                Some(c) => r.layer(c),
                None => r,
            }
        };
        // The federation routes are measured (request metrics, and statistics when on) by the
        // common layer; the health checks and the Admin API mark their answers as not measured.
        let mut main =
            pharos_dataplane::router(data.clone()).merge(unobserved(health(control.clone())));
        let cors = main_cors.is_some();
        if let Some(c) = main_cors {
            main = main.layer(c);
        }
        if admin_here {
            main = main.merge(unobserved(admin_router()));
        }
        let main = if cors {
            // The CORS layer wraps every route, ready answers included.
            Front::new(main)
        } else {
            Front::with_ready_answers(main, data, &reserved)
        };
        let main = layers::common_measured(main.hosting(hosts), &settings.server, capture);

        let drain: std::time::Duration = settings.server.shutdown_timeout.into();
        // Work that must run once per federation entity runs on the leader only (always this
        // process without clustering); serving, commands and the reconciler run everywhere.
        let leadership = control.leadership.clone();
        let campaign = leadership.start(&settings, shutdown.clone());
        tasks.extend(crate::entity::spawn_jobs(
            &control,
            &refreshers,
            command_rx,
            &leadership,
            &shutdown,
        ));
        tasks.extend(campaign);
        tasks.extend(control.spawn_follower(subscription, shutdown.clone())?);
        tasks.push(crate::open_anchors::spawn(
            control.clone(),
            shutdown.clone(),
        ));
        let flush_stop = CancellationToken::new();
        let (stats_tasks, flusher) = stats.spawn(&control, &shutdown, &flush_stop, &leadership);
        tasks.extend(stats_tasks);
        let flusher = flusher.map(|f| (flush_stop, f));
        if auth.jti_backend == JtiBackend::Db {
            let every = auth.jti_cleanup_interval.into();
            let cp = control.clone();
            tasks.push(leadership.supervise(shutdown.clone(), move |t| {
                command_dispatch::spawn_jti_cleanup(cp.clone(), every, t)
            }));
        }
        let main_listener = match listeners.main {
            Some(l) => l,
            None => bind(&settings.server.ip_listen, settings.server.port).await?,
        };
        let addr = main_listener.local_addr().map_err(io)?;
        let server_tls = &settings.server.tls;
        if server_tls.enabled {
            let files = (server_tls.cert.as_str(), server_tls.key.as_str());
            let cert = main_cert.unwrap_or_else(|| Served::new("main"));
            let stop = (&shutdown, drain);
            let served = tls::serve_reloading("server.tls", files, main_listener, main, stop, cert);
            tasks.extend(served.await?);
            if server_tls.redirect_http {
                let l = match listeners.redirect {
                    Some(l) => l,
                    None => bind(&settings.server.ip_listen, 80).await?,
                };
                let router = layers::common(
                    tls::redirect_router(settings.server.port),
                    &settings.server,
                    "redirect",
                );
                tasks.push(http::serve(l, router, shutdown.clone()));
            }
        } else {
            tasks.push(http::serve(main_listener, main, shutdown.clone()));
        }

        let mut admin_addr = None;
        if separate_admin {
            let l = match listeners.admin {
                Some(l) => l,
                None => bind(&settings.server.ip_listen, admin.port).await?,
            };
            admin_addr = Some(l.local_addr().map_err(io)?);
            let router = admin_router().fallback(|| async {
                pharos_controlplane::admin::error::ApiError::NotFound("no such admin route".into())
                    .into_response()
            });
            let router = layers::common(router, &settings.server, "admin");
            if admin.tls.enabled {
                let files = (admin.tls.cert.as_str(), admin.tls.key.as_str());
                let cert = admin_cert.unwrap_or_else(|| Served::new("admin"));
                let stop = (&shutdown, drain);
                let served = tls::serve_reloading("api.admin.tls", files, l, router, stop, cert);
                tasks.extend(served.await?);
            } else {
                tasks.push(http::serve(l, router, shutdown.clone()));
            }
        }
        if admin.enabled
            && !admin.users_enabled
            && pharos_controlplane::db::users::any(&control.db).await?
        {
            tracing::warn!(
                "api.admin.users_enabled is false but admin users exist: Basic authentication \
                 stays required, and users cannot be managed through the API"
            );
        }
        if admin.enabled && !pharos_controlplane::db::users::any(&control.db).await? {
            let token = bootstrap.token().unwrap_or("(none: no randomness)");
            tracing::warn!(
                "no admin user exists: the Admin API answers only clients on this machine \
                 (loopback), or requests with `Authorization: Bearer {token}`, until the first \
                 user is created (POST /api/v1/admin/users); create one now"
            );
        } else {
            bootstrap.spend();
        }
        tracing::info!(%addr, ?admin_addr, entity_id = %settings.entity_id, "pharos is serving");
        Ok(Self {
            addr,
            admin_addr,
            control,
            hosting,
            launcher,
            refreshers,
            admin_bootstrap: bootstrap,
            stats,
            leadership,
            shutdown,
            drain,
            tasks,
            flusher,
        })
    }

    /// Stops accepting, drains in-flight requests for at most `server.shutdown_timeout`, and
    /// waits for the servers to end; requests still running then are cut off.
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        let mut tasks = self.tasks;
        tasks.extend(self.launcher.take_tasks());
        let aborts: Vec<_> = tasks.iter().map(|t| t.abort_handle()).collect();
        let all = async {
            for t in tasks {
                let _ = t.await;
            }
        };
        if tokio::time::timeout(self.drain, all).await.is_err() {
            tracing::warn!(timeout = ?self.drain, "shutdown timeout reached; dropping unfinished requests");
            for a in aborts {
                a.abort();
            }
        }
        // Every request has finished (or was cut off): the last records are in the ring.
        // Its last write is bounded like the drain: a database that stops answering during
        // shutdown (a stalled connection waits for no pool timeout) must not keep the process
        // alive until it is killed; those records are then lost, and said so.
        if let Some((stop, flusher)) = self.flusher {
            stop.cancel();
            if tokio::time::timeout(self.drain, flusher).await.is_err() {
                tracing::warn!(timeout = ?self.drain,
                    "statistics flush unfinished at shutdown; its last records are not stored");
            }
        }
        // `close` waits for every borrowed connection to come back; a task that outlived the
        // drain (a walk stuck on a hanging peer, a detached job) must not hold the shutdown
        // (or a restart on the same database) for ever: the connections go with the process.
        let close = self.control.db.close();
        if tokio::time::timeout(POOL_CLOSE_TIMEOUT, close)
            .await
            .is_err()
        {
            tracing::warn!(
                timeout = ?POOL_CLOSE_TIMEOUT,
                "database connections still in use at shutdown; not waiting for them"
            );
        }
    }

    /// A token that stops the app when cancelled (used by signal handling).
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Waits until the app is told to stop, then shuts down.
    pub async fn run_until_stopped(self) {
        self.shutdown.cancelled().await;
        self.shutdown().await;
    }
}

fn io(e: std::io::Error) -> Error {
    Error::Internal(format!("listener error: {e}"))
}

async fn bind(ip: &str, port: u16) -> Result<TcpListener> {
    let ip = if ip.is_empty() { "0.0.0.0" } else { ip };
    TcpListener::bind((ip, port))
        .await
        .map_err(|e| Error::Internal(format!("cannot listen on {ip}:{port}: {e}")))
}

/// `/healthz` (the process is up) and `/readyz` (snapshot published, database answers).
/// Path prefixes of the public port's routes that are not federation endpoints: the health
/// checks and, when the Admin API shares the port, its API, documentation, console and
/// `/metrics`. The data plane answers nothing under them before routing, so their routes keep
/// precedence over an endpoint registered at the same path (see
/// [`pharos_dataplane::front`]).
fn other_routes(admin: bool) -> Vec<&'static str> {
    let mut p = vec!["/healthz", "/readyz"];
    if admin {
        p.extend([
            pharos_controlplane::admin::PREFIX,
            pharos_controlplane::admin::docs::DOCS_PATH,
            pharos_controlplane::console::PREFIX,
            "/metrics",
        ]);
    }
    p
}

fn health(cp: Arc<ControlPlane>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(|State(cp): State<Arc<ControlPlane>>| async move {
                if cp.is_behind() {
                    (
                        StatusCode::SERVICE_UNAVAILABLE,
                        "catching up with the other replicas",
                    )
                        .into_response()
                } else if cp.db.ping().await {
                    (StatusCode::OK, "ready").into_response()
                } else {
                    (
                        StatusCode::SERVICE_UNAVAILABLE,
                        "database unreachable; Admin API writes refused until it answers",
                    )
                        .into_response()
                }
            }),
        )
        .with_state(cp)
}
