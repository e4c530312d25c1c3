//! What both listeners share: CORS, the common request layers, plain and TLS serving.

pub mod cors;
pub mod layers;
pub mod tls;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Serves `app` over plain HTTP on `listener` until `stop`, then drains in-flight requests
/// (the caller bounds the drain with `server.shutdown_timeout`).
pub fn serve(
    listener: TcpListener,
    app: layers::Served,
    stop: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let r = axum::serve(listener, app.per_connection())
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await;
        if let Err(e) = r {
            tracing::error!(error = %e, "server stopped with an error");
        }
    })
}
