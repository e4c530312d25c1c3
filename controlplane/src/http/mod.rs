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

/// A response body fed by a producer task through a bounded channel (the statistics export,
/// the Admin API's subordinate list): the client's reading paces the producer, so memory holds
/// only the chunks in flight. An `Err` chunk breaks the transfer off, so a client sees a broken
/// response rather than a short one that parses.
pub fn channel_body(
    rx: tokio::sync::mpsc::Receiver<std::io::Result<bytes::Bytes>>,
) -> axum::body::Body {
    axum::body::Body::from_stream(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    }))
}
