//! Streamed answers of the Admin API (the statistics export, the subordinate list).

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
