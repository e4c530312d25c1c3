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
//! Answers from the periodic collection are serialised once per snapshot generation and raw
//! query string ([`PageCache`]): a client paging through, or many clients asking the same
//! thing, cost a lookup and a `Bytes` copy. The cache is bounded in bytes (keys are chosen by
//! clients), and a new snapshot (a new collection, a changed endpoint) makes every entry stale.

use std::sync::Arc;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use pharos_shared::collection::Collection;
use pharos_shared::collection::query::{CollectionQuery, QueryError, select};
use pharos_shared::endpoint::{AnchorRule, EndpointConfig, EntityCollectionConfig};
use serde_json::{Map, Value};

use super::Call;
use crate::DataPlane;
use crate::command::Command;
use crate::error::FedError;
use crate::resolver::admits;

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

/// Serialised answers from the periodic collection by (snapshot generation, raw query).
#[derive(Debug)]
pub struct PageCache(moka::sync::Cache<(u64, Arc<str>), Bytes>);

impl Default for PageCache {
    fn default() -> Self {
        Self(
            moka::sync::Cache::builder()
                .max_capacity(CACHE_BYTES)
                .weigher(|k: &(u64, Arc<str>), v: &Bytes| {
                    u32::try_from(k.1.len() + v.len() + 64).unwrap_or(u32::MAX)
                })
                .build(),
        )
    }
}

fn periodic(cfg: &EntityCollectionConfig) -> bool {
    cfg.interval_seconds.unwrap_or(0) > 0
}

/// Answers a collection request.
pub(crate) async fn serve(call: Call<'_>) -> Response {
    let key = match &call.entry.config {
        EndpointConfig::EntityCollection(c) if periodic(c) => call
            .raw_query()
            .map(|q| (call.snap.generation, Arc::<str>::from(q))),
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
        Ok(body) => {
            let mut r = (StatusCode::OK, body).into_response();
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            r
        }
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
    let page = select(&collection, &q, paging)?;
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
