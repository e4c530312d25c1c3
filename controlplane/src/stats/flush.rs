//! Draining the data plane's ring into `stats_requests`: every `stats.buffer.flush_interval`,
//! early when the ring reaches its fill threshold, and once more at shutdown.
//!
//! Turning a [`StatsRecord`] into a row (query parameters as JSON, the error class, the country)
//! happens here, off the request path.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use pharos_dataplane::stats::{Ring, StatsRecord};
use tokio_util::sync::CancellationToken;

use super::geo::Geo;
use crate::db::Db;
use crate::db::stats::{self, RequestRow};

/// Records taken from the ring per database round: one transaction, so one commit (a round of
/// disk syncs on SQLite) per 8,192 records. Larger rounds would hold SQLite's write lock longer
/// against the write path (about 30 ms per round here).
const DRAIN: usize = 8192;

/// The error class lighthouse records for a status (`None` below 400).
pub fn error_type(status: u16) -> Option<&'static str> {
    Some(match status {
        400 => "bad_request",
        401 => "unauthorized",
        403 => "forbidden",
        404 => "not_found",
        402..=499 => "client_error",
        500.. => "server_error",
        _ => return None,
    })
}

/// `b=2&a=1&a=3` → `{"a":"3","b":"2"}`: keys sorted (so equal combinations compare equal in
/// `top/params`), the last value of a repeated key wins.
pub fn query_json(query: &str) -> Option<String> {
    // A BTreeMap, not `serde_json::Map`: its order depends on a crate feature.
    let map: std::collections::BTreeMap<String, String> = form_urlencoded_pairs(query).collect();
    if map.is_empty() {
        return None;
    }
    serde_json::to_string(&map).ok()
}

fn form_urlencoded_pairs(query: &str) -> impl Iterator<Item = (String, String)> + '_ {
    url::form_urlencoded::parse(query.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned()))
}

/// The stored row of `r`.
pub fn row(r: StatsRecord, geo: Option<&Geo>) -> RequestRow {
    let country = match (geo, r.ip) {
        (Some(g), Some(ip)) => g.country(ip),
        _ => None,
    };
    RequestRow {
        ts: r.ts,
        endpoint: r.endpoint,
        method: r.method.as_str().to_owned(),
        status_code: i64::from(r.status),
        duration_us: i64::try_from(r.duration_us).unwrap_or(i64::MAX),
        client_ip: r.ip.filter(|_| r.store_ip).map(|ip: IpAddr| ip.to_string()),
        country_code: country,
        user_agent: r.user_agent,
        client_entity_id: r.client_entity_id,
        query_params: r.query.as_deref().and_then(query_json),
        request_size: i64::try_from(r.request_size).unwrap_or(i64::MAX),
        response_size: i64::try_from(r.response_size).unwrap_or(i64::MAX),
        error_type: error_type(r.status).map(str::to_owned),
    }
}

/// Drains everything buffered now; returns how many records were written. A batch the
/// database refuses is dropped and logged (as lighthouse does): retrying it would let one bad
/// batch stall every later one.
pub async fn flush(db: &Db, ring: &Ring, geo: Option<&Geo>) -> u64 {
    let mut written = 0;
    loop {
        let batch = ring.drain(DRAIN);
        if batch.is_empty() {
            return written;
        }
        let rows: Vec<RequestRow> = batch.into_iter().map(|r| row(r, geo)).collect();
        let n = rows.len();
        match stats::insert_requests(db, rows).await {
            Ok(w) => written += w,
            Err(e) => {
                tracing::error!(error = %e, lost = n, "cannot write statistics records");
            }
        }
    }
}

/// The flusher task; its last act before ending on `stop` is a final flush, so a graceful
/// shutdown loses no buffered record.
pub fn spawn(
    db: Db,
    ring: Arc<Ring>,
    geo: Option<Arc<Geo>>,
    every: Duration,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = ring.full.notified() => {}
                _ = stop.cancelled() => break,
            }
            flush(&db, &ring, geo.as_deref()).await;
        }
        let n = flush(&db, &ring, geo.as_deref()).await;
        tracing::debug!(written = n, "statistics flushed at shutdown");
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_classes() {
        assert_eq!(error_type(200), None);
        assert_eq!(error_type(304), None);
        assert_eq!(error_type(400), Some("bad_request"));
        assert_eq!(error_type(405), Some("client_error"));
        assert_eq!(error_type(404), Some("not_found"));
        assert_eq!(error_type(503), Some("server_error"));
    }

    #[test]
    fn query_parameters_as_sorted_json() {
        assert_eq!(
            query_json("sub=https%3A%2F%2Fa.example&b=1&b=2").as_deref(),
            Some(r#"{"b":"2","sub":"https://a.example"}"#)
        );
        assert_eq!(query_json(""), None);
    }
}
