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

use pharos_runtime::stats_ring::{Ring, StatsRecord};
use tokio_util::sync::CancellationToken;

use super::geo::Geo;
use crate::db::Db;
use crate::db::stats;
use crate::db::stats::batch::{self, Encoded, Encoder, Positions, Text};

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

/// The records of one drain as batches (one, unless a document would pass
/// [`stats::MAX_BODY`]), encoded straight from the ring's records: no row is built, the
/// document borrows their text. What records share is worked out once per batch: the JSON of
/// each distinct query string (parsing one costs more than everything else about a record),
/// the text and country of each address.
pub fn encode(records: &[StatsRecord], geo: Option<&Geo>) -> Vec<Encoded> {
    batch::encode_within(records, stats::MAX_BODY, |part| {
        encode_part(part, geo).finish()
    })
}

fn encode_part<'a>(records: &'a [StatsRecord], geo: Option<&Geo>) -> Encoder<'a> {
    let mut e = Encoder::with_capacity(records.len());
    let mut queries: HashMap<&str, u32> = HashMap::new();
    let mut addresses: HashMap<IpAddr, (u32, u32)> = HashMap::new();
    // The previous record's, so that a run from one client skips the hash lookups.
    let mut last_ip: Option<(IpAddr, (u32, u32))> = None;
    let mut last_query: Option<(&str, u32)> = None;
    for r in records {
        let (client_ip, country) = match (r.ip, last_ip) {
            (Some(ip), Some((last, at))) if ip == last => at,
            (Some(ip), _) => {
                let at = *addresses.entry(ip).or_insert_with(|| {
                    // The address itself only when it may be stored (`capture.client_ip`).
                    let text = if r.store_ip {
                        e.owned(ip.to_string())
                    } else {
                        0
                    };
                    let country = geo.and_then(|g| g.country(ip)).map_or(0, |c| e.owned(c));
                    (text, country)
                });
                last_ip = Some((ip, at));
                at
            }
            (None, _) => (0, 0),
        };
        let query_params = match (r.query.as_deref(), last_query) {
            (Some(q), Some((last, at))) if q == last => at,
            (Some(q), _) => {
                let at = *queries
                    .entry(q)
                    .or_insert_with(|| query_json(q).map_or(0, |j| e.owned(j)));
                last_query = Some((q, at));
                at
            }
            (None, _) => 0,
        };
        let p = Positions {
            ts: r.ts,
            endpoint: e.text(Text::Endpoint, Some(&r.endpoint)),
            method: e.text(Text::Method, Some(r.method.as_str())),
            status: i64::from(r.status),
            duration_us: i64::try_from(r.duration_us).unwrap_or(i64::MAX),
            client_ip,
            country,
            user_agent: e.text(Text::UserAgent, r.user_agent.as_deref()),
            client_entity_id: e.text(Text::ClientEntityId, r.client_entity_id.as_deref()),
            query_params,
            request_size: i64::try_from(r.request_size).unwrap_or(i64::MAX),
            response_size: i64::try_from(r.response_size).unwrap_or(i64::MAX),
            error_type: e.text(Text::ErrorType, error_type(r.status)),
            entity: r.entity,
        };
        e.push(p);
    }
    e
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
            held.1 += drained.len();
            held.0.extend(encode(&drained, self.geo.as_deref()));
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
    fn records_are_stored_as_captured_and_shared_values_once() {
        let rec = |store_ip, query: &str| StatsRecord {
            ts: 1_700_000_000,
            endpoint: "fetch".into(),
            method: http::Method::GET,
            status: 404,
            duration_us: 5,
            ip: "192.0.2.1".parse().ok(),
            store_ip,
            user_agent: Some("ua/1".into()),
            client_entity_id: None,
            query: Some(query.into()),
            request_size: 0,
            response_size: 3,
            entity: 1,
        };
        let records = [
            rec(true, "sub=x&a=1"),
            rec(true, "a=1&sub=x"),
            rec(true, "sub=x&a=1"),
        ];
        let [batch] = encode(&records, None).try_into().unwrap();
        let body = &batch.body;
        let back: Vec<_> = batch::Batch::decode(body)
            .unwrap()
            .iter()
            .map(|r| r.to_row())
            .collect();
        assert_eq!(back.len(), 3);
        for r in &back {
            assert_eq!(r.query_params.as_deref(), Some(r#"{"a":"1","sub":"x"}"#));
            assert_eq!(r.client_ip.as_deref(), Some("192.0.2.1"));
            assert_eq!(r.error_type.as_deref(), Some("not_found"));
            assert_eq!((r.endpoint.as_str(), r.method.as_str()), ("fetch", "GET"));
        }
        // One JSON per distinct query string, one text per address.
        assert_eq!(body.matches("192.0.2.1").count(), 1);
        assert_eq!(body.matches("sub").count(), 2, "{body}");
        // capture.client_ip off: the address is not in the document at all.
        let hidden = encode(&[rec(false, "sub=x")], None);
        assert!(!hidden[0].body.contains("192.0.2.1"), "{}", hidden[0].body);
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
