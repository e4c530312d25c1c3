//! The extended subordinate listing endpoint ("OpenID Federation Extended Subordinate Listing
//! 1.0", Implementer's Draft 1): pages of subordinates with their signed statements, selected
//! claims and audit timestamps. The parameters, cursor and page selection are
//! [`pharos_shared::extended_listing`]; this module adds what needs the data plane: the trust
//! mark holders a filter reads, the signed statements, and the answer's bytes.
//!
//! Bounds (SECURITY.md): a page holds at most the endpoint's `max_page_size` entries and
//! examines at most
//! [`SCAN_BUDGET`](pharos_shared::extended_listing::SCAN_BUDGET) index entries; statements come from the fetch endpoint's
//! cache, and at most [`SIGNINGS_PER_PAGE`] are signed for one page; entries are serialised
//! one by one into at most [`PAGE_BYTES`] (a page that would need more of either ends early,
//! with `next` after the last entry kept); selecting a page of a large
//! registry runs on the blocking pool. First pages (no `from`) are kept per snapshot
//! generation and normalised request for [`PAGE_TTL`] seconds, bounded in bytes, so clients
//! starting the same listing cost a lookup; later pages are not kept (a client follows each
//! cursor once, and a million subordinates make a thousand of them per filter), nor trust mark
//! filtered ones (marks expire with the clock).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use pharos_shared::endpoint::{EndpointConfig, EndpointType};
use pharos_shared::extended_listing::{
    Cursor, Entry, ListingQuery, QueryError, SUBORDINATE_STATEMENT, Source,
};
use pharos_shared::snapshot::Snapshot;
use pharos_shared::subordinate_statement::payload;
use pharos_shared::trust_mark_issuer::MarkStatus;
use serde_json::{Map, Value, json};

use super::Call;
use super::list::INLINE_LIMIT;
use crate::DataPlane;
use crate::error::FedError;

/// Statements one page may sign; the rest of a cold page comes on the next one.
pub const SIGNINGS_PER_PAGE: usize = 100;

/// How long a page is kept, seconds.
const PAGE_TTL: u64 = 60;

/// Upper bound of the page cache, in bytes.
const CACHE_BYTES: u64 = 32 * 1024 * 1024;

/// Serialised pages by snapshot generation and normalised request.
#[derive(Debug)]
pub struct PageCache(moka::sync::Cache<(u64, Arc<ListingQuery>), Bytes>);

impl Default for PageCache {
    fn default() -> Self {
        Self(
            moka::sync::Cache::builder()
                .max_capacity(CACHE_BYTES)
                .time_to_live(Duration::from_secs(PAGE_TTL))
                .weigher(|_, v: &Bytes| u32::try_from(v.len() + 256).unwrap_or(u32::MAX))
                .build(),
        )
    }
}

impl From<QueryError> for FedError {
    fn from(e: QueryError) -> Self {
        match e {
            QueryError::Invalid(d) => FedError::invalid_request(d),
            QueryError::PageNotFound(d) => {
                FedError::new(StatusCode::NOT_FOUND, "page_not_found", d)
            }
        }
    }
}

/// Answers an extended listing request.
pub(crate) async fn serve(call: Call<'_>) -> Response {
    let (dp, snap, now) = (call.dp, call.snap.clone(), call.now);
    let max = match &call.entry.config {
        EndpointConfig::ExtendedList(c) => usize::try_from(c.max_page_size).unwrap_or(1000),
        _ => 1000,
    };
    let query = match call.query().await {
        Ok(q) => q,
        Err(e) => return e.into_response(),
    };
    match answer(dp, &snap, &query, max, now).await {
        Ok(body) => crate::jwt_response::json(body),
        Err(e) => e.into_response(),
    }
}

async fn answer(
    dp: &DataPlane,
    snap: &Arc<Snapshot>,
    query: &str,
    max: usize,
    now: i64,
) -> Result<Bytes, FedError> {
    let q = Arc::new(ListingQuery::parse(super::query::borrowed(
        query.as_bytes(),
    ))?);
    let key = (snap.generation, q.clone());
    let cache = &dp.extended_list_cache;
    if let Some(body) = cache.0.get(&key) {
        return Ok(body);
    }
    let body = page(dp, snap, &q, max, now).await?;
    if q.from.is_none() && !q.by_trust_marks() {
        cache.0.insert(key, body.clone());
    }
    Ok(body)
}

/// The page `q` asks for, serialised.
async fn page(
    dp: &DataPlane,
    snap: &Arc<Snapshot>,
    q: &Arc<ListingQuery>,
    max: usize,
    now: i64,
) -> Result<Bytes, FedError> {
    let limit = q.limit.unwrap_or(max).min(max);
    let holders = match q.by_trust_marks() {
        true => Some(holders(dp, snap, q, now).await?),
        false => None,
    };
    let selected = if snap.subordinates.len() <= INLINE_LIMIT {
        select(snap, q, limit, holders.as_ref().map(|h| &h.subjects))
    } else {
        let (snap, q) = (snap.clone(), q.clone());
        tokio::task::spawn_blocking(move || {
            select(&snap, &q, limit, holders.as_ref().map(|h| &h.subjects))
        })
        .await
        .map_err(|e| FedError::server_error(format!("selecting a page failed: {e}")))?
    };
    let (mut entries, mut next) = (selected.entries, selected.next);
    // Statements name our fetch endpoint as their `source_endpoint`, as fetch answers do.
    let source = snap
        .registry
        .by_type
        .get(&EndpointType::Fetch)
        .and_then(|e| e.published_url(&snap.entity_id));
    // The statements: from the fetch endpoint's cache, or signed now within the page's budget.
    let mut statements: Vec<Option<Bytes>> = Vec::with_capacity(entries.len());
    if q.wants_statement() {
        let (general_version, generation) = (
            snap.subordinates.general_version,
            snap.statements_generation,
        );
        let mut signed = 0;
        for (i, e) in entries.iter().enumerate() {
            let Entry::Listed(s, _) = e else {
                statements.push(None);
                continue;
            };
            if s.statement.get(general_version, generation, now).is_none() {
                if signed == SIGNINGS_PER_PAGE {
                    // Not reached for the first entry: the budget is above zero.
                    next = i.checked_sub(1).map(|j| entries[j].cursor(q)).or(next);
                    entries.truncate(i);
                    break;
                }
                signed += 1;
            }
            let t = super::fetch::statement(dp, snap, s, source.as_deref(), now).await?;
            statements.push(Some(t.body()));
        }
    }
    let items = entries.iter().enumerate().map(|(i, e)| {
        let statement = statements.get(i).cloned().flatten();
        item(snap, q, e, statement, source.as_deref(), now)
    });
    let (body, kept) = assemble(items, PAGE_BYTES).map_err(FedError::server_error)?;
    if kept < entries.len() {
        // Not reached with nothing kept: the first entry is always kept.
        next = kept.checked_sub(1).map(|j| entries[j].cursor(q)).or(next);
    }
    finish(body, next).map_err(FedError::server_error)
}

/// The most bytes a page's entries take: a page of 10,000 entries with ML-DSA-87 statements
/// would be about 80 MB; past this the page ends early, with `next`.
const PAGE_BYTES: usize = 8 * 1024 * 1024;

/// `{"immediate_subordinate_entities":[` and as many of `items` as fit in `budget` bytes
/// (the first always), serialised one by one so that no page is held twice; and how many.
fn assemble(
    items: impl Iterator<Item = Value>,
    budget: usize,
) -> serde_json::Result<(Vec<u8>, usize)> {
    let mut out = b"{\"immediate_subordinate_entities\":[".to_vec();
    let mut kept = 0;
    for item in items {
        let mark = out.len();
        if kept > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, &item)?;
        if kept > 0 && out.len() > budget {
            out.truncate(mark);
            break;
        }
        kept += 1;
    }
    out.push(b']');
    Ok((out, kept))
}

/// Closes an [`assemble`]d page, with `next` when more may follow.
fn finish(mut out: Vec<u8>, next: Option<Cursor>) -> serde_json::Result<Bytes> {
    if let Some(n) = next {
        out.extend_from_slice(b",\"next\":");
        serde_json::to_writer(&mut out, &n.encode())?;
    }
    out.push(b'}');
    Ok(Bytes::from(out))
}

/// The page's entries, with `holders` when a trust mark filter reads them.
fn select(
    snap: &Snapshot,
    q: &ListingQuery,
    limit: usize,
    holders: Option<&HashSet<Arc<str>>>,
) -> pharos_shared::extended_listing::Page {
    Source {
        subordinates: &snap.subordinates,
        holders,
    }
    .page(q, limit)
}

/// Subjects holding a valid mark issued here of one of some types (any of; no type: any type
/// issued here), and until when (exclusive) the clock leaves that true.
#[derive(Debug)]
struct Holders {
    subjects: HashSet<Arc<str>>,
    until: i64,
}

/// Holder sets by snapshot generation and trust mark types: computing one reads every issued
/// mark, so it is done once per generation and filter, not per request (a client repeating a
/// `trust_marked=true` page would otherwise make the server walk a million issued marks each
/// time). Bounded in bytes of identifiers.
#[derive(Debug)]
pub struct HoldersCache(moka::future::Cache<(u64, Vec<String>), Arc<Holders>>);

impl Default for HoldersCache {
    fn default() -> Self {
        Self(
            moka::future::Cache::builder()
                .max_capacity(HOLDERS_BYTES)
                .weigher(|_, h: &Arc<Holders>| {
                    let bytes: usize = h.subjects.iter().map(|s| s.len() + 48).sum();
                    u32::try_from(bytes + 64).unwrap_or(u32::MAX)
                })
                .build(),
        )
    }
}

/// Upper bound of the holders cache, in bytes.
const HOLDERS_BYTES: u64 = 64 * 1024 * 1024;

/// The holders `q`'s trust mark filter reads at `now`: cached per generation and types (the
/// types we do not issue dropped first, so made-up ones make no entry), computed on the
/// blocking pool when many marks were issued.
async fn holders(
    dp: &DataPlane,
    snap: &Arc<Snapshot>,
    q: &ListingQuery,
    now: i64,
) -> Result<Arc<Holders>, FedError> {
    let issued = &snap.trust_marks.specs;
    let types: Vec<String> = q
        .trust_mark_types
        .iter()
        .filter(|t| issued.contains_key(*t))
        .cloned()
        .collect();
    if types.is_empty() && !q.trust_mark_types.is_empty() {
        return Ok(Arc::new(Holders {
            subjects: HashSet::new(),
            until: i64::MAX,
        }));
    }
    let key = (snap.generation, types.clone());
    if let Some(h) = dp.extended_list_holders.0.get(&key).await
        && now < h.until
    {
        return Ok(h);
    }
    let made = if snap.trust_marks.issued.len() <= INLINE_LIMIT {
        make_holders(snap, &types, now)
    } else {
        let snap = snap.clone();
        tokio::task::spawn_blocking(move || make_holders(&snap, &types, now))
            .await
            .map_err(|e| {
                FedError::server_error(format!("finding trust mark holders failed: {e}"))
            })?
    };
    let made = Arc::new(made);
    dp.extended_list_holders.0.insert(key, made.clone()).await;
    Ok(made)
}

fn make_holders(snap: &Snapshot, types: &[String], now: i64) -> Holders {
    let types: Vec<Option<&str>> = if types.is_empty() {
        vec![None]
    } else {
        types.iter().map(|t| Some(t.as_str())).collect()
    };
    let mut until = i64::MAX;
    let mut subjects = HashSet::new();
    for t in types {
        let (ids, u) = snap.trust_marks.valid_holders(t, now);
        until = until.min(u);
        subjects.extend(ids.into_iter().map(Arc::from));
    }
    Holders { subjects, until }
}

/// One entry of `immediate_subordinate_entities` (§3.3, Table 4).
fn item(
    snap: &Snapshot,
    q: &ListingQuery,
    e: &Entry,
    statement: Option<Bytes>,
    source: Option<&str>,
    now: i64,
) -> Value {
    let mut o = Map::new();
    o.insert("id".into(), json!(e.id()));
    match e {
        Entry::Listed(s, updated) => {
            if let Some(jwt) = statement {
                let jwt = String::from_utf8_lossy(&jwt).into_owned();
                o.insert(SUBORDINATE_STATEMENT.into(), Value::String(jwt));
            }
            let mut claims = q.statement_claims().peekable();
            if claims.peek().is_some() {
                let mut p = payload(snap, s, now, source);
                for c in claims {
                    if let Some(v) = p.remove(c) {
                        o.insert(c.to_owned(), v);
                    }
                }
            }
            if q.wants_trust_marks() {
                let marks = trust_marks(snap, &s.entity_id, now);
                if !marks.is_empty() {
                    o.insert("trust_marks".into(), Value::Array(marks));
                }
            }
            if q.timestamps() {
                o.insert("registered".into(), json!(s.registered));
                o.insert("updated".into(), json!(updated));
            }
        }
        Entry::Departed {
            registered,
            revoked,
            ..
        } => {
            if q.timestamps() {
                o.insert("registered".into(), json!(registered));
            }
            o.insert("revoked".into(), json!(revoked));
        }
    }
    Value::Object(o)
}

/// The valid marks issued here to `subject`, as an Entity Configuration lists them
/// (`trust_mark_type`, `trust_mark`): the latest instance of each type we issue.
fn trust_marks(snap: &Snapshot, subject: &str, now: i64) -> Vec<Value> {
    let tm = &snap.trust_marks;
    let mut types: Vec<&String> = tm.specs.keys().collect();
    types.sort_unstable();
    types
        .into_iter()
        .filter_map(|t| {
            let jti = tm.latest.get(&(t.clone(), subject.to_owned()))?;
            let mark = tm.issued.get(jti)?;
            let signed = mark.signed.as_ref()?;
            (mark.status(now) == MarkStatus::Active)
                .then(|| json!({"trust_mark_type": t, "trust_mark": &*signed.token}))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use pharos_shared::entity_configuration::ENTITY_STATEMENT_TYP;

    use super::*;
    use crate::test_support::{SnapshotBuilder, data_plane, get};

    #[tokio::test]
    async fn a_cold_page_signs_a_bounded_number_of_statements() {
        let mut b = SnapshotBuilder::new()
            .endpoint(EndpointType::Fetch, "/fetch")
            .endpoint(EndpointType::ExtendedList, "/x");
        let n = SIGNINGS_PER_PAGE + 30;
        for i in 0..n {
            b = b.subordinate(&format!("https://{i:04}.example"));
        }
        let (dp, publisher) = data_plane(b.build());
        let snap = publisher.load_full();
        let keys = snap.keys.jwks();
        let page = |uri: String| {
            let dp = dp.clone();
            async move {
                let a = get(&dp, &uri).await;
                assert_eq!(a.status, StatusCode::OK);
                assert_eq!(a.content_type(), "application/json");
                a.json()
            }
        };
        // Cold: the first page stops after the budget's signatures, with `next`.
        let first = page("/x".into()).await;
        let entries = first["immediate_subordinate_entities"].as_array().unwrap();
        assert_eq!(entries.len(), SIGNINGS_PER_PAGE);
        for (i, e) in entries.iter().enumerate() {
            let jwt = e[SUBORDINATE_STATEMENT].as_str().unwrap();
            let d = pharos_shared::jose::verify(jwt, &keys).unwrap();
            assert_eq!(d.header["typ"], ENTITY_STATEMENT_TYP);
            assert_eq!(d.claims["sub"], format!("https://{i:04}.example"));
        }
        let next = first["next"].as_str().unwrap();
        let second = page(format!("/x?from={next}")).await;
        let rest = second["immediate_subordinate_entities"].as_array().unwrap();
        assert_eq!(rest.len(), n - SIGNINGS_PER_PAGE);
        assert!(second.get("next").is_none());
        // Warm (the statements are cached now): one page holds them all, a kept page answers
        // the same bytes.
        let all = page("/x?limit=1000&claims=subordinate_statement".into()).await;
        assert_eq!(
            all["immediate_subordinate_entities"]
                .as_array()
                .unwrap()
                .len(),
            n
        );
        assert_eq!(
            page("/x?claims=subordinate_statement&limit=1000".into()).await,
            all
        );
    }

    #[tokio::test]
    async fn trust_mark_holders_are_found_once_per_generation_and_filter() {
        use pharos_shared::trust_mark_issuer::IssuedMark;
        let tm = "https://tm.example";
        let mark = |jti: &str, sub: &str| IssuedMark {
            jti: jti.into(),
            trust_mark_type: tm.into(),
            subject: sub.into(),
            issued_at: 0,
            expires_at: None,
            revoked_at: None,
            signed: None,
        };
        let snap = SnapshotBuilder::new()
            .endpoint(EndpointType::ExtendedList, "/x")
            .subordinate("https://a.example")
            .subordinate("https://b.example")
            .mark_spec(tm, |_| {})
            .issued_mark(mark("1", "https://b.example"))
            .build();
        let (dp, _publisher) = data_plane(snap);
        let ids = |v: Value| -> Vec<String> {
            v["immediate_subordinate_entities"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["id"].as_str().unwrap().to_owned())
                .collect()
        };
        let enc = "https%3A%2F%2Ftm.example";
        for q in [
            "trust_marked=true&claims=id".to_owned(),
            "claims=id&trust_marked=true".to_owned(),
            format!("trust_mark_type={enc}&claims=id"),
            format!("trust_mark_type={enc}&trust_mark_type=https%3A%2F%2Fmade-up&claims=id"),
        ] {
            let a = get(&dp, &format!("/x?{q}")).await;
            assert_eq!(ids(a.json()), ["https://b.example"], "{q}");
        }
        let made_up = get(&dp, "/x?trust_mark_type=https%3A%2F%2Fmade-up&claims=id").await;
        assert!(ids(made_up.json()).is_empty());
        dp.extended_list_holders.0.run_pending_tasks().await;
        assert_eq!(
            dp.extended_list_holders.0.entry_count(),
            2,
            "any type, and the one type issued here; made-up types make no entry"
        );
    }

    #[test]
    fn a_page_ends_where_its_byte_budget_does() {
        let items = || (0..5).map(|i| json!({"id": format!("https://{i}.example")}));
        let (all, kept) = assemble(items(), usize::MAX).unwrap();
        assert_eq!(kept, 5);
        let v: Value = serde_json::from_slice(&finish(all, None).unwrap()).unwrap();
        assert_eq!(
            v["immediate_subordinate_entities"]
                .as_array()
                .unwrap()
                .len(),
            5
        );
        // Room for two entries: two, and a well-formed body with `next`.
        let (two, kept) = assemble(items(), 90).unwrap();
        assert_eq!(kept, 2);
        let next = Cursor::Id("https://1.example".into());
        let v: Value = serde_json::from_slice(&finish(two, Some(next.clone())).unwrap()).unwrap();
        assert_eq!(
            v["immediate_subordinate_entities"][1]["id"],
            "https://1.example"
        );
        assert_eq!(Cursor::decode(v["next"].as_str().unwrap()).unwrap(), next);
        // The first entry is kept whatever its size: a page is never empty for want of room.
        assert_eq!(assemble(items(), 0).unwrap().1, 1);
    }
}
