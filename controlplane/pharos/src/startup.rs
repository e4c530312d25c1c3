//! Start-up while the database is not reachable yet (a database server restarting with the
//! host, a network not up): rather than exiting, and being restarted in a loop by the service
//! manager, the process retries with a growing delay, logs each attempt with its cause, and
//! answers on its main port meanwhile — `/healthz` 200 (the process is alive), `/readyz` and
//! everything else 503 — so that load balancers and probes see "starting", not "down".
//!
//! SQLite needs no wait (the file is local), and a TLS main port gets no interim answers (they
//! would need the certificate; probes see a refused connection as before).

use std::time::Duration;

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use pharos_shared::config::{Settings, StorageDriver};
use pharos_shared::refresh::Backoff;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use pharos_controlplane::db::Db;
use pharos_controlplane::error::{Error, Result};

use crate::app::Listeners;

/// Longest delay between two attempts.
const MAX_DELAY: Duration = Duration::from_secs(30);

/// Returns once the database answers, with the main listener it bound meanwhile (to hand to
/// [`crate::app::App::start`]); an error when `stopped` fires first.
pub async fn wait_for_database(
    settings: &Settings,
    stopped: &CancellationToken,
) -> Result<Listeners> {
    if settings.storage.driver == StorageDriver::Sqlite {
        return Ok(Listeners::default());
    }
    let url = settings.storage_url();
    let Err(first) = probe(&url).await else {
        return Ok(Listeners::default());
    };
    let ip = match settings.server.ip_listen.as_str() {
        "" => "0.0.0.0",
        ip => ip,
    };
    let port = settings.server.port;
    let listener = TcpListener::bind((ip, port))
        .await
        .map_err(|e| Error::Internal(format!("cannot listen on {ip}:{port}: {e}")))?;
    let interim_stop = CancellationToken::new();
    let (main, interim) = if settings.server.tls.enabled {
        (listener, None)
    } else {
        let (interim_listener, main) = share(listener)
            .map_err(|e| Error::Internal(format!("cannot share the main listener: {e}")))?;
        let stop = interim_stop.clone();
        let task = tokio::spawn(async move {
            let _ = axum::serve(interim_listener, waiting_router())
                .with_graceful_shutdown(stop.cancelled_owned())
                .await;
        });
        (main, Some(task))
    };
    wait(&url, first, stopped, interim_stop, interim, main).await
}

/// Two handles of one listening socket: the interim server stops accepting on its handle,
/// and connections waiting in the backlog are accepted by the service on the other.
fn share(l: TcpListener) -> std::io::Result<(TcpListener, TcpListener)> {
    let a = l.into_std()?;
    let b = a.try_clone()?;
    Ok((TcpListener::from_std(a)?, TcpListener::from_std(b)?))
}

async fn wait(
    url: &str,
    mut last: Error,
    stopped: &CancellationToken,
    interim_stop: CancellationToken,
    interim: Option<tokio::task::JoinHandle<()>>,
    main: TcpListener,
) -> Result<Listeners> {
    let mut backoff = Backoff::between(Duration::from_secs(1), MAX_DELAY);
    let outcome = loop {
        let delay = backoff.fail();
        tracing::warn!(
            error = %last,
            retry_in_s = delay.as_secs(),
            "database unreachable; retrying (/healthz 200, /readyz 503 until it answers)"
        );
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = stopped.cancelled() => {
                break Err(Error::Internal("stopped while waiting for the database".into()));
            }
        }
        match probe(url).await {
            Ok(()) => break Ok(()),
            Err(e) => last = e,
        }
    };
    interim_stop.cancel();
    if let Some(task) = interim {
        // Keep-alive connections get until the drain's end to finish their request.
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
    }
    outcome?;
    tracing::info!("database reachable; starting");
    Ok(Listeners {
        main: Some(main),
        ..Listeners::default()
    })
}

/// One connection attempt.
async fn probe(url: &str) -> Result<()> {
    let db = Db::connect(url, 1).await?;
    let ok = db.ping().await;
    db.close().await;
    if ok {
        Ok(())
    } else {
        Err(Error::Internal("the database does not answer".into()))
    }
}

/// The interim answers: alive, not ready, and a specification-format error for the rest.
fn waiting_router() -> Router {
    Router::new()
        .route("/healthz", get(|| async { "starting" }))
        .route(
            "/readyz",
            get(|| async { (StatusCode::SERVICE_UNAVAILABLE, "waiting for the database") }),
        )
        .fallback(|| async { unavailable() })
}

fn unavailable() -> Response {
    let body = serde_json::json!({
        "error": "temporarily_unavailable",
        "error_description": "starting: the database is not reachable yet",
    });
    let mut r = (StatusCode::SERVICE_UNAVAILABLE, body.to_string()).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}
