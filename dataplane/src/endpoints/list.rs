//! The subordinate listing endpoint (spec §8.2): entity identifiers of active subordinates.
//!
//! Filters: `entity_type` (repeatable, any-of, as the reference service and the resolve
//! endpoint read it), `intermediate=true` (subordinates that are federation authorities
//! themselves, see [`Subordinate::is_intermediate`]), `trust_marked=true` (holding a valid mark
//! issued here, of any type) and `trust_mark_type` (holding a valid mark of that type issued
//! here; the instances the trust mark endpoint recorded, see
//! [`pharos_shared::trust_mark_issuer::TrustMarks::valid_holders`]). Parameters the
//! specification does not define are ignored, as OAuth endpoints ignore unknown parameters;
//! `entity_type` may be given at most
//! [`MAX_PARAMETER_VALUES`](pharos_shared::endpoint::MAX_PARAMETER_VALUES) times.
//!
//! Entity types that no active subordinate is registered with, and a trust mark type we do not
//! issue, are dropped from the filter before anything else (they match nothing), so the
//! distinct filters a client can make are few; an `entity_type` filter reads the snapshot's
//! per-type identifier sets instead of walking every record (`intermediate=true` still walks,
//! it needs each record). Every answer is serialised once per snapshot generation and
//! normalised filter set (the unfiltered list of 100,000 identifiers, and each filtered list
//! asked for), so a repeated request copies a `Bytes` handle, whatever order or unknown
//! parameters it comes with; concurrent first requests for one key compute it once. A list
//! filtered by trust marks is kept until the first counted mark expires (or is revoked as
//! scheduled) as well: marks expire with the clock, not with a new snapshot.
//!
//! HTTP caching: a list has no expiry and changes with any write, so nothing bounds how long
//! a cache could keep it. Anonymous answers are `Cache-Control: no-cache` with a strong
//! `ETag` (hashed once per cached list): a CDN may keep the body but asks every time, and
//! gets a bodiless `304` while the list is unchanged.

use std::collections::HashSet;
use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use moka::future::Cache;
use pharos_shared::endpoint::{boolean_parameter, bound_values};
use pharos_shared::http_cache::Tagged;
use pharos_shared::snapshot::Snapshot;
use pharos_shared::subordinate::Subordinate;

use super::Call;
use crate::error::FedError;

/// Upper bound of the cache, in bytes of serialised lists (a list of 100,000 identifiers is
/// about 3 MB, of 1,000,000 about 33 MB: this keeps the unfiltered list and two filtered
/// ones of a million, or dozens of 100,000).
const CACHE_BYTES: u64 = 96 * 1024 * 1024;

/// Serialised lists by filters, each with the snapshot generation it was made from. One entry
/// per filter set: the list of a newer generation replaces the older one at once, so lists of
/// past snapshots never linger until the byte bound pushes them out (a soak that added 1,800
/// subordinates, each write a new generation, grew the anchor by 60 MB of stale lists).
#[derive(Debug)]
pub struct ListCache(Cache<Filters, Arc<Made>>);

/// A serialised list, the snapshot generation it was made from, and until when (exclusive)
/// the clock leaves it true (`i64::MAX` without trust mark filters).
#[derive(Debug)]
struct Made {
    generation: u64,
    until: i64,
    list: Tagged,
}

impl Made {
    fn serves(&self, generation: u64, now: i64) -> bool {
        self.generation == generation && now < self.until
    }
}

impl ListCache {
    pub(crate) fn new() -> Self {
        Self(
            Cache::builder()
                .max_capacity(CACHE_BYTES)
                .weigher(|k: &Filters, v: &Arc<Made>| {
                    let key: usize = k.entity_types.iter().map(String::len).sum();
                    let key = key + k.trust_mark_type.as_ref().map_or(0, String::len);
                    u32::try_from(v.list.held_len() + key + 64).unwrap_or(u32::MAX)
                })
                .build(),
        )
    }
}

/// Parsed filters of a list request, normalised (entity types sorted, without duplicates) so
/// that equivalent requests share one cache entry.
#[derive(Debug, Default, Clone, PartialEq, Eq, Hash)]
struct Filters {
    entity_types: Vec<String>,
    intermediate: bool,
    trust_marked: bool,
    trust_mark_type: Option<String>,
}

impl Filters {
    fn by_trust_marks(&self) -> bool {
        self.trust_marked || self.trust_mark_type.is_some()
    }
}

fn flag(name: &str, v: &str) -> Result<bool, FedError> {
    boolean_parameter(name, v).map_err(FedError::invalid_request)
}

fn filters(query: &str) -> Result<Filters, FedError> {
    let mut f = Filters::default();
    let mut entity_types = 0;
    for (k, v) in super::query::borrowed(query.as_bytes()) {
        match &*k {
            "entity_type" => {
                entity_types += 1;
                bound_values(&k, entity_types).map_err(FedError::invalid_request)?;
                if !v.is_empty() {
                    f.entity_types.push(v.into_owned());
                }
            }
            "trust_marked" => f.trust_marked = flag(&k, &v)?,
            "trust_mark_type" if f.trust_mark_type.is_some() => {
                return Err(FedError::invalid_request(
                    "parameter 'trust_mark_type' given more than once",
                ));
            }
            "trust_mark_type" if !v.is_empty() => f.trust_mark_type = Some(v.into_owned()),
            "intermediate" => f.intermediate = flag(&k, &v)?,
            _ => {}
        }
    }
    f.entity_types.sort_unstable();
    f.entity_types.dedup();
    Ok(f)
}

/// The answer: the list, or a bodiless `304` when the request's `If-None-Match` names its tag;
/// `Cache-Control: no-cache` (see the module documentation).
fn json(list: Tagged, request: &HeaderMap) -> Response {
    let not_modified = request
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| pharos_shared::http_cache::none_match(v.as_bytes(), list.etag_bytes()));
    let (body, etag) = list.into_parts();
    let mut r = if not_modified {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut r = (StatusCode::OK, body).into_response();
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        r
    };
    let h = r.headers_mut();
    h.insert(header::ETAG, etag);
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

fn serialise<'a>(subs: impl Iterator<Item = &'a Arc<Subordinate>>) -> Bytes {
    serialise_ids(subs.map(|s| &*s.entity_id))
}

fn serialise_ids<'a>(ids: impl Iterator<Item = &'a str>) -> Bytes {
    let ids: Vec<&str> = ids.collect();
    Bytes::from(serde_json::to_vec(&ids).unwrap_or_else(|_| b"[]".to_vec()))
}

/// Answers a list request.
pub(crate) async fn serve(call: Call<'_>) -> Response {
    let now = call.now;
    if let Some(query) = call.raw_query() {
        return match list(&call.dp.list_cache, &call.snap, query, now).await {
            Ok(l) => json(l, call.req.headers()),
            Err(e) => e.into_response(),
        };
    }
    // Authenticated: meant for one client (the dispatcher makes it no-store).
    let (cache, snap) = (&call.dp.list_cache, call.snap.clone());
    let list = match call.query().await {
        Ok(query) => list(cache, &snap, &query, now).await,
        Err(e) => Err(e),
    };
    match list {
        Ok(l) => json(l, &HeaderMap::new()),
        Err(e) => e.into_response(),
    }
}

/// Registries above this size compute a list on the blocking pool: a million identifiers
/// take a third of a second to serialise, which on an async worker would stall every request
/// queued behind it.
pub(crate) const INLINE_LIMIT: usize = 20_000;

/// The list answering the query string `query` at `now`.
async fn list(
    cache: &ListCache,
    snap: &Arc<Snapshot>,
    query: &str,
    now: i64,
) -> Result<Tagged, FedError> {
    let Some(f) = normalised(snap, filters(query)?) else {
        return Ok(Tagged::new(Bytes::from_static(b"[]"), now));
    };
    let generation = snap.generation;
    // Per filter set, one computation at a time: concurrent first requests for a new
    // generation compute it once, and the result replaces the older generation's list.
    let entry = cache
        .0
        .entry_by_ref(&f)
        .and_try_compute_with(|existing| async {
            use moka::ops::compute::Op;
            if existing.is_some_and(|e| {
                let made = e.value();
                made.generation > generation || made.serves(generation, now)
            }) {
                return Ok::<_, tokio::task::JoinError>(Op::Nop);
            }
            Ok(Op::Put(Arc::new(build(snap, &f, now).await?)))
        })
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "computing a list failed");
            FedError::server_error("the list could not be computed")
        })?;
    match entry.into_entry() {
        Some(e) if e.value().serves(generation, now) => Ok(e.value().list.clone()),
        // A request still holding an older snapshot found a newer list: it answers from its
        // own snapshot instead.
        _ => build(snap, &f, now)
            .await
            .map(|m| m.list)
            .map_err(|e| FedError::server_error(format!("computing a list failed: {e}"))),
    }
}

/// `f` without the values that cannot match in `snap`, so that the cache keys stay few
/// whatever clients send: entity types no active subordinate has (the filter is any-of) and a
/// trust mark type we do not issue. `None`: nothing can match (the answer is `[]`).
fn normalised(snap: &Snapshot, mut f: Filters) -> Option<Filters> {
    if !f.entity_types.is_empty() {
        f.entity_types
            .retain(|t| snap.subordinates.has_entity_type(t));
        if f.entity_types.is_empty() {
            return None;
        }
    }
    if let Some(t) = &f.trust_mark_type
        && !snap.trust_marks.specs.contains_key(t)
    {
        return None;
    }
    Some(f)
}

/// [`compute`], on the blocking pool when the registry (or the issued marks a trust mark
/// filter reads) is large (see [`INLINE_LIMIT`]).
async fn build(
    snap: &Arc<Snapshot>,
    f: &Filters,
    now: i64,
) -> Result<Made, tokio::task::JoinError> {
    let marks = if f.by_trust_marks() {
        snap.trust_marks.issued.len()
    } else {
        0
    };
    if snap.subordinates.len().saturating_add(marks) <= INLINE_LIMIT {
        return Ok(compute(snap, f, now));
    }
    let (snap, f) = (snap.clone(), f.clone());
    tokio::task::spawn_blocking(move || compute(&snap, &f, now)).await
}

/// The list of `snap`'s subordinates that `f` selects at `now`, serialised.
fn compute(snap: &Snapshot, f: &Filters, now: i64) -> Made {
    let (generation, subs) = (snap.generation, &snap.subordinates);
    if f.by_trust_marks() {
        let (body, until) = trust_marked(snap, f, now);
        return Made {
            generation,
            until,
            list: Tagged::new(body, 0),
        };
    }
    let body = if *f == Filters::default() {
        serialise(subs.active())
    } else if !f.intermediate {
        let ids = subs.active_ids_with_any_type(&f.entity_types);
        serialise_ids(ids.iter().map(|id| &***id))
    } else {
        serialise(
            subs.active()
                .filter(|s| s.has_any_type(&f.entity_types) && s.is_intermediate(&subs.general)),
        )
    };
    // No freshness: the list is revalidated on every use.
    Made {
        generation,
        until: i64::MAX,
        list: Tagged::new(body, 0),
    }
}

/// The active subordinates matching `f` that hold a valid mark issued here (of
/// `f.trust_mark_type`, or of any type), and until when that stays so.
fn trust_marked(snap: &Snapshot, f: &Filters, now: i64) -> (Bytes, i64) {
    let (holders, until) = snap
        .trust_marks
        .valid_holders(f.trust_mark_type.as_deref(), now);
    let holders: HashSet<&str> = holders.into_iter().collect();
    let subs = &snap.subordinates;
    let body = serialise(subs.active().filter(|s| {
        holders.contains(&*s.entity_id)
            && s.has_any_type(&f.entity_types)
            && (!f.intermediate || s.is_intermediate(&subs.general))
    }));
    (body, until)
}

#[cfg(test)]
mod tests {
    use pharos_shared::trust_mark_issuer::IssuedMark;

    use super::*;
    use crate::test_support::{SnapshotBuilder, invalidated};

    #[tokio::test]
    async fn a_newer_snapshot_replaces_the_cached_list_and_an_older_one_still_gets_its_own() {
        let cache = ListCache::new();
        let old = Arc::new(
            SnapshotBuilder::new()
                .subordinate("https://a.example")
                .build(),
        );
        let mut next = invalidated(&old);
        next.subordinates = Arc::new(
            next.subordinates.with(
                "https://b.example",
                Some(Arc::new(
                    crate::test_support::SnapshotBuilder::new()
                        .subordinate("https://b.example")
                        .build()
                        .subordinates
                        .get("https://b.example")
                        .unwrap()
                        .as_ref()
                        .clone(),
                )),
            ),
        );
        let next = Arc::new(next);
        let body = |t: Tagged| String::from_utf8(t.body().to_vec()).unwrap();
        assert_eq!(
            body(list(&cache, &old, "", 0).await.unwrap()),
            r#"["https://a.example"]"#
        );
        let both = r#"["https://a.example","https://b.example"]"#;
        assert_eq!(body(list(&cache, &next, "", 0).await.unwrap()), both);
        cache.0.run_pending_tasks().await;
        assert_eq!(
            cache.0.entry_count(),
            1,
            "one list per filter set, not per generation"
        );
        // A request still holding the older snapshot answers from it, not from the newer list.
        assert_eq!(
            body(list(&cache, &old, "", 0).await.unwrap()),
            r#"["https://a.example"]"#
        );
        assert_eq!(body(list(&cache, &next, "", 0).await.unwrap()), both);
        let filtered = list(&cache, &next, "entity_type=openid_relying_party", 0);
        assert_eq!(body(filtered.await.unwrap()), both);
        cache.0.run_pending_tasks().await;
        assert_eq!(cache.0.entry_count(), 2);
    }

    #[test]
    fn filter_parsing() {
        let f =
            filters("entity_type=b&entity_type=a&entity_type=b&iss=x&intermediate=true").unwrap();
        assert_eq!(f.entity_types, ["a", "b"], "sorted, without duplicates");
        assert!(f.intermediate);
        assert!(filters("trust_marked=true").unwrap().trust_marked);
        assert!(!filters("trust_marked=false").unwrap().by_trust_marks());
        assert_eq!(
            filters("trust_mark_type=x")
                .unwrap()
                .trust_mark_type
                .as_deref(),
            Some("x")
        );
        assert_eq!(
            filters("trust_marked=yes").unwrap_err().code,
            "invalid_request"
        );
        assert_eq!(
            filters("trust_mark_type=x&trust_mark_type=y")
                .unwrap_err()
                .code,
            "invalid_request"
        );
        assert_eq!(
            filters("intermediate=yes").unwrap_err().code,
            "invalid_request"
        );
        assert_eq!(filters("intermediate=false").unwrap(), Filters::default());
    }

    fn marked(jti: &str, sub: &str, tm_type: &str, exp: Option<i64>) -> IssuedMark {
        IssuedMark {
            jti: jti.into(),
            trust_mark_type: tm_type.into(),
            subject: sub.into(),
            issued_at: 0,
            expires_at: exp,
            revoked_at: None,
            signed: None,
        }
    }

    #[tokio::test]
    async fn equivalent_queries_share_one_cache_entry_trust_mark_filters_included() {
        let cache = ListCache::new();
        let snap = Arc::new(
            SnapshotBuilder::new()
                .subordinate("https://a.example")
                .subordinate("https://b.example")
                .mark_spec("https://tm.example", |_| {})
                .issued_mark(marked(
                    "1",
                    "https://a.example",
                    "https://tm.example",
                    Some(100),
                ))
                .issued_mark(marked("2", "https://b.example", "https://tm.example", None))
                .build(),
        );
        let body = |t: Tagged| String::from_utf8(t.body().to_vec()).unwrap();
        let rp = "entity_type=openid_relying_party";
        for q in [
            format!("{rp}&entity_type=nobody_has_this&junk=1"),
            format!("entity_type=nobody_has_this&x=y&{rp}&{rp}"),
        ] {
            list(&cache, &snap, &q, 0).await.unwrap();
        }
        cache.0.run_pending_tasks().await;
        assert_eq!(cache.0.entry_count(), 1);
        let tm = "trust_mark_type=https%3A%2F%2Ftm.example";
        let both = r#"["https://a.example","https://b.example"]"#;
        for q in [
            format!("trust_marked=true&{tm}&junk=1"),
            format!("a=b&{tm}&trust_marked=true"),
        ] {
            assert_eq!(body(list(&cache, &snap, &q, 50).await.unwrap()), both);
        }
        cache.0.run_pending_tasks().await;
        assert_eq!(
            cache.0.entry_count(),
            2,
            "one list per normalised filter set"
        );
        // A type we do not issue matches nothing and makes no entry.
        let other = "trust_mark_type=https%3A%2F%2Fother.example";
        assert_eq!(body(list(&cache, &snap, other, 50).await.unwrap()), "[]");
        cache.0.run_pending_tasks().await;
        assert_eq!(cache.0.entry_count(), 2);
        // The kept list is not served past the first expiry it counted.
        let q = format!("{tm}&trust_marked=true");
        assert_eq!(
            body(list(&cache, &snap, &q, 100).await.unwrap()),
            r#"["https://b.example"]"#
        );
    }

    #[test]
    fn a_repeated_parameter_is_bounded() {
        let q = |n: usize| vec!["entity_type=x"; n].join("&");
        assert!(filters(&q(16)).is_ok());
        let e = filters(&q(17)).unwrap_err();
        assert_eq!(
            (e.status, e.code),
            (StatusCode::BAD_REQUEST, "invalid_request")
        );
        assert!(e.description.contains("'entity_type'"), "{}", e.description);
    }
}
