//! HTTPS for the main port (`server.tls`) and the separate admin port (`api.admin.tls`):
//! rustls through axum-server, with the certificate reloaded on SIGHUP.
//!
//! A reload reads both PEM files and swaps the server configuration atomically; connections in
//! flight keep the old one, the listener is never closed. If the new files are missing or
//! invalid the old certificate stays in use and the failure is logged, so a botched renewal does
//! not take the Admin API down. Each certificate put in service is recorded for `/metrics`
//! ([`Served`]), from the bytes rustls was given.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum_server::Handle;
use axum_server::tls_rustls::RustlsConfig;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use pharos_controlplane::error::{Error, Result};

use crate::metrics::tls_expiry::Served;

/// Makes aws-lc-rs the process's rustls provider. Idempotent; call before building any TLS
/// configuration, because with two providers in the dependency tree rustls cannot choose one.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
}

/// The certificate chain and key files' bytes.
async fn read(cert: &str, key: &str) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    Ok((tokio::fs::read(cert).await?, tokio::fs::read(key).await?))
}

/// Loads the certificate chain and key; a clear error names the setting (`scope`, e.g.
/// `server.tls`) and the files.
async fn load(scope: &str, cert: &str, key: &str, served: &Served) -> Result<RustlsConfig> {
    install_crypto_provider();
    let fail =
        |e: std::io::Error| Error::Internal(format!("{scope}: cannot load {cert} / {key}: {e}"));
    let (chain, private) = read(cert, key).await.map_err(fail)?;
    let config = RustlsConfig::from_pem(chain.clone(), private)
        .await
        .map_err(fail)?;
    served.record(&chain);
    Ok(config)
}

/// Reloads `config` from the files; keeps the current certificate when they are invalid.
async fn reload(
    scope: &str,
    config: &RustlsConfig,
    cert: &str,
    key: &str,
    served: &Served,
) -> bool {
    let reloaded = match read(cert, key).await {
        Ok((chain, private)) => config
            .reload_from_pem(chain.clone(), private)
            .await
            .map(|()| chain),
        Err(e) => Err(e),
    };
    match reloaded {
        Ok(chain) => {
            served.record(&chain);
            tracing::info!(scope, cert, "TLS certificate reloaded");
            true
        }
        Err(e) => {
            tracing::error!(scope, cert, key, error = %e, "TLS reload failed; keeping the current certificate");
            false
        }
    }
}

/// Reloads `config` on every SIGHUP until `stop` is cancelled.
fn reload_on_sighup(
    scope: &'static str,
    config: RustlsConfig,
    (cert, key): (String, String),
    served: Arc<Served>,
    stop: CancellationToken,
) -> Result<JoinHandle<()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hup = signal(SignalKind::hangup())
            .map_err(|e| Error::Internal(format!("cannot watch SIGHUP: {e}")))?;
        Ok(tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stop.cancelled() => break,
                    got = hup.recv() => {
                        if got.is_none() { break; }
                        reload(scope, &config, &cert, &key, &served).await;
                    }
                }
            }
        }))
    }
    #[cfg(not(unix))]
    {
        let _ = (scope, config, cert, key, served);
        Ok(tokio::spawn(async move { stop.cancelled().await }))
    }
}

/// Serves `app` over HTTPS on `listener` with the certificate and key `files` (`scope` names
/// the setting in messages), reloading them on SIGHUP, and recording each certificate put in
/// service in `served`: the server task and the reload task.
pub async fn serve_reloading(
    scope: &'static str,
    files: (&str, &str),
    listener: TcpListener,
    app: super::layers::Served,
    (stop, drain): (&CancellationToken, Duration),
    served: Arc<Served>,
) -> Result<Vec<JoinHandle<()>>> {
    let (cert, key) = files;
    let config = load(scope, cert, key, &served).await?;
    let paths = (cert.to_owned(), key.to_owned());
    let reload = reload_on_sighup(scope, config.clone(), paths, served, stop.clone())?;
    Ok(vec![
        reload,
        serve(listener, config, app, stop.clone(), drain)?,
    ])
}

/// Serves `app` over HTTPS on `listener`; on `stop`, drains for at most `drain`.
fn serve(
    listener: TcpListener,
    config: RustlsConfig,
    app: super::layers::Served,
    stop: CancellationToken,
    drain: Duration,
) -> Result<JoinHandle<()>> {
    let std = listener
        .into_std()
        .map_err(|e| Error::Internal(format!("TLS listener: {e}")))?;
    let handle = Handle::new();
    let server = axum_server::from_tcp_rustls(std, config)
        .map_err(|e| Error::Internal(format!("TLS listener: {e}")))?
        .handle(handle.clone());
    tokio::spawn(async move {
        stop.cancelled().await;
        handle.graceful_shutdown(Some(drain));
    });
    Ok(tokio::spawn(async move {
        let r = server.serve(app.per_connection()).await;
        if let Err(e) = r {
            tracing::error!(error = %e, "TLS server stopped with an error");
        }
    }))
}

/// The plain-HTTP side of `server.tls.redirect_http`: every request is answered `308 Permanent
/// Redirect` to the same host, path and query over HTTPS on `https_port` (the port is left out
/// of the URL when it is 443). A request without a usable `Host` gets a JSON 400.
pub fn redirect_router(https_port: u16) -> Router {
    Router::new()
        .fallback(move |req: axum::extract::Request| async move { redirect(&req, https_port) })
}

fn redirect(req: &axum::extract::Request, https_port: u16) -> axum::response::Response {
    use axum::http::{HeaderValue, StatusCode, header};
    use axum::response::IntoResponse;
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.parse::<axum::http::uri::Authority>().ok());
    let Some(host) = host else {
        return pharos_runtime::error_body::json_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "a Host header is required",
        );
    };
    let port = if https_port == 443 {
        String::new()
    } else {
        format!(":{https_port}")
    };
    let path = req.uri().path_and_query().map_or("/", |p| p.as_str());
    let location = format!("https://{}{port}{path}", host.host());
    match HeaderValue::from_str(&location) {
        Ok(v) => (StatusCode::PERMANENT_REDIRECT, [(header::LOCATION, v)]).into_response(),
        Err(_) => pharos_runtime::error_body::json_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "the request cannot be redirected",
        ),
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::{Request, StatusCode, header};
    use tower::ServiceExt as _;

    use super::redirect_router;

    async fn redirect(port: u16, host: Option<&str>, uri: &str) -> (StatusCode, Option<String>) {
        let mut req = Request::get(uri);
        if let Some(h) = host {
            req = req.header(header::HOST, h);
        }
        let r = redirect_router(port)
            .oneshot(req.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let location = r
            .headers()
            .get(header::LOCATION)
            .map(|v| v.to_str().unwrap().to_owned());
        (r.status(), location)
    }

    #[tokio::test]
    async fn redirects_keep_host_path_and_query_and_drop_port_443() {
        let (s, l) = redirect(443, Some("ta.example:80"), "/list?entity_type=x").await;
        assert_eq!(s, StatusCode::PERMANENT_REDIRECT);
        assert_eq!(l.as_deref(), Some("https://ta.example/list?entity_type=x"));
        let (_, l) = redirect(8443, Some("ta.example"), "/").await;
        assert_eq!(l.as_deref(), Some("https://ta.example:8443/"));
        let (s, l) = redirect(443, None, "/").await;
        assert_eq!((s, l), (StatusCode::BAD_REQUEST, None));
    }
}
