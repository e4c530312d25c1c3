//! Draining the data plane's ring into `stats_batches`: whenever the ring reaches its fill
//! threshold the records are taken and encoded; they are written every
//! `stats.buffer.flush_interval`, or as soon as [`COMMIT_RECORDS`] are held, and once more at
//! shutdown.
//!
//! Turning a [`StatsRecord`] into a row (query parameters as JSON, the error class, the country)
//! happens here, off the request path.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use pharos_dataplane::stats::{Ring, StatsRecord};
use tokio_util::sync::CancellationToken;

use super::batch::Encoded;
use super::geo::Geo;
use crate::db::Db;
use crate::db::stats::{self, RequestRow};

/// Records taken from the ring at a time, and so the records of one stored batch.
const DRAIN: usize = 8192;

/// Records held (encoded, ~40 bytes each) before they are written without waiting for the
/// flush interval. A commit is SQLite's rollback journal's four fsyncs, and on a virtual
/// machine each costs an exit to the hypervisor: at 50,000 requests a second, committing every
/// 8,192 records spent ~8 % of the process's CPU in `fsync`. One commit per 65,536 records
/// holds the database's write lock for one insert per batch and one commit.
const COMMIT_RECORDS: usize = 65_536;

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

/// What the records of one drain share, worked out once per distinct value: the JSON of a
/// query string, the text and country of an address. Clients repeat themselves (a resolver
/// polls the same subjects from the same address), and parsing a query string costs more than
/// everything else about a record.
#[derive(Debug, Default)]
pub struct Memo {
    queries: HashMap<String, Option<String>>,
    addresses: HashMap<IpAddr, (String, Option<String>)>,
}

/// The stored row of `r`.
pub fn row(r: StatsRecord, geo: Option<&Geo>, memo: &mut Memo) -> RequestRow {
    let (client_ip, country_code) = match r.ip {
        Some(ip) => {
            let (text, country) = memo
                .addresses
                .entry(ip)
                .or_insert_with(|| (ip.to_string(), geo.and_then(|g| g.country(ip))));
            (r.store_ip.then(|| text.clone()), country.clone())
        }
        None => (None, None),
    };
    let query_params = match r.query {
        Some(q) => match memo.queries.get(&q) {
            Some(json) => json.clone(),
            None => {
                let json = query_json(&q);
                memo.queries.insert(q, json.clone());
                json
            }
        },
        None => None,
    };
    RequestRow {
        ts: r.ts,
        endpoint: r.endpoint,
        method: r.method.as_str().to_owned(),
        status_code: i64::from(r.status),
        duration_us: i64::try_from(r.duration_us).unwrap_or(i64::MAX),
        client_ip,
        country_code,
        user_agent: r.user_agent,
        client_entity_id: r.client_entity_id,
        query_params,
        request_size: i64::try_from(r.request_size).unwrap_or(i64::MAX),
        response_size: i64::try_from(r.response_size).unwrap_or(i64::MAX),
        error_type: error_type(r.status).map(str::to_owned),
    }
}

/// Takes the ring's records and writes them, in batches of [`DRAIN`], committed together.
#[derive(Debug)]
pub struct Flusher {
    db: Db,
    ring: Arc<Ring>,
    geo: Option<Arc<Geo>>,
    /// Encoded batches taken from the ring and not written yet, and their record count. Held
    /// across the write, so a flush requested from outside (shutdown, tests) and the task's own
    /// never write the same batch twice or leave one behind.
    held: tokio::sync::Mutex<(Vec<Encoded>, usize)>,
}

impl Flusher {
    /// A flusher of `ring` into `db`.
    pub fn new(db: Db, ring: Arc<Ring>, geo: Option<Arc<Geo>>) -> Arc<Self> {
        Arc::new(Self {
            db,
            ring,
            geo,
            held: tokio::sync::Mutex::new((Vec::new(), 0)),
        })
    }

    /// Takes everything in the ring; writes what is held if `write` or once [`COMMIT_RECORDS`]
    /// are held. Returns the records written.
    async fn run_once(&self, write: bool) -> u64 {
        let mut held = self.held.lock().await;
        loop {
            let drained = self.ring.drain(DRAIN);
            if drained.is_empty() {
                break;
            }
            let mut memo = Memo::default();
            let rows: Vec<RequestRow> = drained
                .into_iter()
                .map(|r| row(r, self.geo.as_deref(), &mut memo))
                .collect();
            held.1 += rows.len();
            held.0.extend(stats::encode_requests(&rows));
        }
        if !(write || held.1 >= COMMIT_RECORDS) || held.0.is_empty() {
            return 0;
        }
        let (batches, n) = std::mem::take(&mut *held);
        // A batch the database refuses is dropped and logged (as lighthouse does): retrying
        // it would let one bad batch stall every later one.
        match stats::insert_batches(&self.db, &batches).await {
            Ok(written) => written,
            Err(e) => {
                tracing::error!(error = %e, lost = n, "cannot write statistics records");
                0
            }
        }
    }

    /// Writes everything buffered now; returns how many records were written.
    pub async fn flush(&self) -> u64 {
        self.run_once(true).await
    }

    /// The flusher task; its last act before ending on `stop` is a final flush, so a graceful
    /// shutdown loses no buffered record.
    pub fn spawn(
        self: &Arc<Self>,
        every: Duration,
        stop: CancellationToken,
    ) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            let mut due = tokio::time::Instant::now() + every;
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(due) => {
                        me.run_once(true).await;
                        due = tokio::time::Instant::now() + every;
                    }
                    _ = me.ring.full.notified() => {
                        if me.run_once(false).await > 0 {
                            due = tokio::time::Instant::now() + every;
                        }
                    }
                    _ = stop.cancelled() => break,
                }
            }
            let n = me.flush().await;
            tracing::debug!(written = n, "statistics flushed at shutdown");
        })
    }
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
    fn repeated_values_are_worked_out_once_and_stored_alike() {
        let rec = |store_ip| StatsRecord {
            ts: 1,
            endpoint: "fetch".into(),
            method: http::Method::GET,
            status: 404,
            duration_us: 5,
            ip: "192.0.2.1".parse().ok(),
            store_ip,
            user_agent: None,
            client_entity_id: None,
            query: Some("sub=x&a=1".into()),
            request_size: 0,
            response_size: 3,
        };
        let mut memo = Memo::default();
        let a = row(rec(true), None, &mut memo);
        let b = row(rec(false), None, &mut memo);
        assert_eq!(a.query_params.as_deref(), Some(r#"{"a":"1","sub":"x"}"#));
        assert_eq!(b.query_params, a.query_params);
        assert_eq!(a.client_ip.as_deref(), Some("192.0.2.1"));
        assert_eq!(b.client_ip, None, "capture.client_ip off");
        assert_eq!(a.error_type.as_deref(), Some("not_found"));
        assert_eq!((memo.queries.len(), memo.addresses.len()), (1, 1));
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
