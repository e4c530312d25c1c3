//! HTTPS for the separate admin port: rustls through axum-server, with the certificate reloaded
//! on SIGHUP.
//!
//! A reload reads both PEM files and swaps the server configuration atomically; connections in
//! flight keep the old one, the listener is never closed. If the new files are missing or
//! invalid the old certificate stays in use and the failure is logged, so a botched renewal does
//! not take the Admin API down.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum_server::Handle;
use axum_server::tls_rustls::RustlsConfig;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};

/// Makes aws-lc-rs the process's rustls provider. Idempotent; call before building any TLS
/// configuration, because with two providers in the dependency tree rustls cannot choose one.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
}

/// Loads the certificate chain and key; a clear error names the files.
pub async fn load(cert: &str, key: &str) -> Result<RustlsConfig> {
    install_crypto_provider();
    RustlsConfig::from_pem_file(cert, key)
        .await
        .map_err(|e| Error::Internal(format!("api.admin.tls: cannot load {cert} / {key}: {e}")))
}

/// Reloads `config` from the files; keeps the current certificate when they are invalid.
pub async fn reload(config: &RustlsConfig, cert: &str, key: &str) -> bool {
    match config.reload_from_pem_file(cert, key).await {
        Ok(()) => {
            tracing::info!(cert, "admin TLS certificate reloaded");
            true
        }
        Err(e) => {
            tracing::error!(cert, key, error = %e, "admin TLS reload failed; keeping the current certificate");
            false
        }
    }
}

/// Reloads `config` on every SIGHUP until `stop` is cancelled.
pub fn reload_on_sighup(
    config: RustlsConfig,
    cert: String,
    key: String,
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
                        reload(&config, &cert, &key).await;
                    }
                }
            }
        }))
    }
    #[cfg(not(unix))]
    {
        let _ = (config, cert, key);
        Ok(tokio::spawn(async move { stop.cancelled().await }))
    }
}

/// Serves `router` over HTTPS on `listener`; on `stop`, drains for at most `drain`.
pub fn serve(
    listener: TcpListener,
    config: RustlsConfig,
    router: Router,
    stop: CancellationToken,
    drain: Duration,
) -> Result<JoinHandle<()>> {
    let std = listener
        .into_std()
        .map_err(|e| Error::Internal(format!("admin listener: {e}")))?;
    let handle = Handle::new();
    let server = axum_server::from_tcp_rustls(std, config)
        .map_err(|e| Error::Internal(format!("admin listener: {e}")))?
        .handle(handle.clone());
    tokio::spawn(async move {
        stop.cancelled().await;
        handle.graceful_shutdown(Some(drain));
    });
    Ok(tokio::spawn(async move {
        let r = server
            .serve(router.into_make_service_with_connect_info::<SocketAddr>())
            .await;
        if let Err(e) = r {
            tracing::error!(error = %e, "admin TLS server stopped with an error");
        }
    }))
}
