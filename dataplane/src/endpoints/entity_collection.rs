//! The entity collection endpoint (extension draft "Entity Collection Endpoint 1.0", draft
//! 01, with draft 00's `from_entity_id`/`next_entity_id` as aliases): the Entities under a
//! Trust Anchor, filtered, trimmed and paged by [`pharos_shared::collection::query`].
//!
//! With a periodic collector (`interval_seconds` > 0) the answer comes from the snapshot's
//! stored collection; without one the control plane collects on demand (bounded, single
//! flight per anchor, cached briefly) through [`Command::CollectEntities`]. Either way only
//! for the anchors the operator configured ([`AnchorRule`]): another `trust_anchor` is
//! `404 invalid_trust_anchor` before anything is fetched.
//!
//! Answers from the periodic collection are serialised once per snapshot generation and
//! normalised request ([`PageCache`], keyed by the parsed [`CollectionQuery`]: parameter order,
//! repeated values and unknown parameters make no new entry): a client paging through, or many
//! clients asking the same thing, cost a lookup and a `Bytes` copy. The cache is bounded in
//! bytes (keys are chosen by clients), and a new snapshot (a new collection, a changed
//! endpoint) makes every entry stale. Selecting and serialising a page of a large collection
//! runs on the blocking pool.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use pharos_shared::collection::Collection;
use pharos_shared::collection::query::{CollectionQuery, QueryError, select};
use pharos_shared::endpoint::{AnchorRule, EndpointConfig, EntityCollectionConfig};
use serde_json::{Map, Value};

use super::Call;
use super::list::INLINE_LIMIT;
use crate::DataPlane;
use crate::error::FedError;
use crate::resolver::admits;
use pharos_runtime::command::Command;

impl From<QueryError> for FedError {
    fn from(e: QueryError) -> Self {
        match e {
            QueryError::UnsupportedParameter(d) => {
                FedError::new(StatusCode::BAD_REQUEST, "unsupported_parameter", d)
            }
            QueryError::UnsupportedClaim(d) => {
                FedError::new(StatusCode::BAD_REQUEST, "unsupported_claim", d)
            }
            QueryError::InvalidRequest(d) => FedError::invalid_request(d),
            QueryError::PageNotFound(d) => {
                FedError::new(StatusCode::NOT_FOUND, "page_not_found", d)
            }
        }
    }
}

/// The page size limit of `cfg`, when paging is on.
pub fn pagination_limit(cfg: &EntityCollectionConfig) -> Option<usize> {
    cfg.pagination_limit
        .filter(|l| *l > 0)
        .map(|l| usize::try_from(l).unwrap_or(usize::MAX))
}

/// Upper bound of the page cache, in bytes of keys and answers.
const CACHE_BYTES: u64 = 32 * 1024 * 1024;

/// Serialised answers from the periodic collection by (snapshot generation, request).
#[derive(Debug)]
pub struct PageCache(moka::sync::Cache<(u64, Arc<CollectionQuery>), Bytes>);

impl Default for PageCache {
    fn default() -> Self {
        Self(
            moka::sync::Cache::builder()
                .max_capacity(CACHE_BYTES)
                .weigher(|k: &(u64, Arc<CollectionQuery>), v: &Bytes| {
                    u32::try_from(weight(&k.1) + v.len() + 64).unwrap_or(u32::MAX)
                })
                .build(),
        )
    }
}

/// Bytes of the strings a request holds (what a cache key costs beyond its fixed size).
fn weight(q: &CollectionQuery) -> usize {
    let one = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    let all = |v: &[String]| v.iter().map(|s| s.len() + 24).sum::<usize>();
    one(&q.trust_anchor)
        + one(&q.query)
        + one(&q.from)
        + all(&q.entity_types)
        + all(&q.trust_mark_types)
        + all(&q.language_tags)
        + q.entity_claims.as_deref().map_or(0, all)
        + q.ui_claims.as_deref().map_or(0, all)
        + 256
}

/// The cache key of an anonymous GET with raw query `query` at an endpoint answering from
/// the periodic collection; `Err` is the refusal of a malformed request.
fn key(
    query: &str,
    cfg: &EntityCollectionConfig,
    generation: u64,
) -> Result<(u64, Arc<CollectionQuery>), FedError> {
    let params = super::query::pairs(query.as_bytes());
    let q = CollectionQuery::parse(&params, pagination_limit(cfg).is_some())?;
    Ok((generation, Arc::new(q)))
}

fn periodic(cfg: &EntityCollectionConfig) -> bool {
    cfg.interval_seconds.unwrap_or(0) > 0
}

/// Answers a collection request.
pub(crate) async fn serve(call: Call<'_>) -> Response {
    let on_demand =
        !matches!(&call.entry.config, EndpointConfig::EntityCollection(c) if periodic(c));
    if on_demand
        && let Some(refused) = call.over_limit(crate::rate_limit::Limited::EntityCollection)
    {
        return refused;
    }
    let key = match (&call.entry.config, call.raw_query()) {
        (EndpointConfig::EntityCollection(c), Some(q)) if periodic(c) => {
            match key(q, c, call.snap.generation) {
                Ok(k) => Some(k),
                Err(e) => return e.into_response(),
            }
        }
        _ => None,
    };
    let cache = &call.dp.collection_cache;
    let found = key.as_ref().and_then(|k| cache.0.get(k));
    let result = match found {
        Some(body) => Ok(body),
        None => answer(call).await.map(|b| {
            let body = Bytes::from(b);
            if let Some(k) = key {
                cache.0.insert(k, body.clone());
            }
            body
        }),
    };
    match result {
        Ok(body) => crate::jwt_response::json(body),
        Err(e) => e.into_response(),
    }
}

async fn answer(call: Call<'_>) -> Result<Vec<u8>, FedError> {
    let (dp, snap) = (call.dp, call.snap.clone());
    let cfg = match &call.entry.config {
        EndpointConfig::EntityCollection(c) => c.clone(),
        _ => EntityCollectionConfig::default(),
    };
    let (params, _) = call.params().await?;
    let paging = pagination_limit(&cfg);
    let q = CollectionQuery::parse(&params, paging.is_some())?;
    let anchor = q
        .trust_anchor
        .clone()
        .unwrap_or_else(|| snap.entity_id.to_string());
    if anchor.is_empty() {
        return Err(FedError::invalid_request("trust_anchor must not be empty"));
    }
    // Decided before anything is fetched: a stranger's anchor is not walked for anyone.
    let rule = AnchorRule::new(&cfg.allowed_trust_anchors, cfg.allow_any_trust_anchor);
    if !admits(&snap, &rule, &anchor) {
        return Err(FedError::new(
            StatusCode::NOT_FOUND,
            "invalid_trust_anchor",
            format!(
                "{anchor} is not a trust anchor this endpoint collects for: {}",
                rule.describe()
            ),
        ));
    }
    let collection = if periodic(&cfg) {
        snap.collections
            .by_anchor
            .get(&anchor)
            .cloned()
            .ok_or_else(|| {
                FedError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "temporarily_unavailable",
                    "the first collection of this trust anchor has not finished yet",
                )
            })?
    } else {
        on_demand(dp, anchor).await?
    };
    if collection.entities.len() <= INLINE_LIMIT {
        return page(&collection, &q, paging);
    }
    tokio::task::spawn_blocking(move || page(&collection, &q, paging))
        .await
        .map_err(FedError::server_error)?
}

/// The answer: the page of `collection` that `q` selects, serialised.
fn page(
    collection: &Collection,
    q: &CollectionQuery,
    paging: Option<usize>,
) -> Result<Vec<u8>, FedError> {
    let page = select(collection, q, paging)?;
    let mut body = Map::new();
    body.insert("entities".into(), Value::Array(page.entities));
    if let Some(next) = page.next {
        if q.legacy_pointer {
            body.insert("next_entity_id".into(), Value::String(next.clone()));
        }
        body.insert("next".into(), Value::String(next));
    }
    body.insert("last_updated".into(), collection.last_updated.into());
    serde_json::to_vec(&body).map_err(FedError::server_error)
}

async fn on_demand(dp: &DataPlane, trust_anchor: String) -> Result<Arc<Collection>, FedError> {
    let c = dp
        .commands
        .call(|reply| Command::CollectEntities {
            trust_anchor,
            reply,
        })
        .await?;
    Ok(c)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn requests_differing_in_order_repetition_or_junk_are_one_cache_key() {
        let cfg = EntityCollectionConfig::default();
        let a = key("entity_type=b&entity_type=a&junk=1&query=Foo", &cfg, 7).unwrap();
        let b = key(
            "query=foo&entity_type=a&x=y&entity_type=b&entity_type=a",
            &cfg,
            7,
        )
        .unwrap();
        assert_eq!(a, b);
        assert_ne!(a, key("entity_type=a", &cfg, 7).unwrap());
        let cache = PageCache::default();
        cache.0.insert(a, Bytes::from_static(b"{}"));
        assert!(cache.0.get(&b).is_some(), "one entry serves both");
        let e = key(&vec!["trust_mark_type=t"; 17].join("&"), &cfg, 7).unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert!(
            e.description.contains("'trust_mark_type'"),
            "{}",
            e.description
        );
    }
}
