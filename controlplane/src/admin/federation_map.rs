//! `/federation-map`: who is in the federation and under whom ([`pharos_shared::federation_map`]),
//! from this entity's subordinates and the entity collector's last walk, both read from the
//! snapshot. Nothing is fetched: a map of a federation this entity has not walked shows its
//! own subordinates only (`collected_at` is null).

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use pharos_shared::federation_map::{self, FederationMap};
use serde::Serialize;
use utoipa::ToSchema;

use crate::admin::error::{ApiError, ApiResult};
use crate::control_plane::ControlPlane;

/// Nodes answered when no `limit` is given, and the most a `limit` may ask for. The console
/// draws 10,000 comfortably; a larger federation is answered with every superior and the first
/// leaves, flagged `truncated`.
pub const DEFAULT_LIMIT: usize = 20_000;
/// See [`DEFAULT_LIMIT`].
pub const MAX_LIMIT: usize = 100_000;

/// This module's routes, merged by [`crate::admin::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new().routes(routes!(show))
}

/// The answer's shape, for the OpenAPI document.
#[derive(Serialize, ToSchema)]
#[allow(dead_code)]
struct MapDoc {
    /// The root's entity identifier (the collection's Trust Anchor, or this entity).
    root: String,
    /// When the included collection was walked (Unix seconds); null without one.
    collected_at: Option<i64>,
    /// Nodes in the whole map.
    total: usize,
    /// Leaves were left out to stay within `limit` (every superior is kept).
    truncated: bool,
    /// `{entity_id, superior, entity_types, trust_marks, status, keys_expiring, subordinates}`
    /// each; `status` is `root`, `active`, `pending`, `blocked`, `inactive` (this entity's
    /// subordinates) or `collected`.
    #[schema(value_type = Vec<Object>)]
    nodes: Vec<serde_json::Value>,
}

/// The query: `anchor` (whose collection to include) and `limit`.
fn parse(q: Option<&str>) -> ApiResult<(Option<String>, usize)> {
    let (mut anchor, mut limit) = (None, DEFAULT_LIMIT);
    for (k, v) in url::form_urlencoded::parse(q.unwrap_or_default().as_bytes()) {
        match &*k {
            "anchor" => {
                super::extract::entity_id("anchor", &v)?;
                anchor = Some(v.into_owned());
            }
            "limit" => {
                limit = v
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=MAX_LIMIT).contains(n))
                    .ok_or_else(|| {
                        ApiError::BadRequest(format!(
                            "limit must be a whole number from 1 to {MAX_LIMIT}, got {v:?}"
                        ))
                    })?;
            }
            other => {
                return Err(ApiError::BadRequest(format!(
                    "unknown parameter {other:?}; use anchor or limit"
                )));
            }
        }
    }
    Ok((anchor, limit))
}

/// The federation as a tree: this entity's subordinates (with their status and expiring keys)
/// and what the collector found below the Trust Anchor (each entity with the superior that
/// listed it, its entity types and verified trust marks). Without `anchor`, the collection
/// walked from this entity, or the only one there is.
#[utoipa::path(get, path = "/federation-map", tag = "entity-collection",
    params(("anchor" = Option<String>, Query), ("limit" = Option<usize>, Query)),
    responses((status = 200, body = MapDoc), (status = 400), (status = 404)))]
pub async fn show(
    State(cp): State<Arc<ControlPlane>>,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<FederationMap>> {
    let (anchor, limit) = parse(q.as_deref())?;
    let snap = cp.snapshot();
    let ours: &str = &snap.entity_id;
    let by_anchor = &snap.collections.by_anchor;
    let collection = match &anchor {
        Some(a) => Some(by_anchor.get(a).ok_or_else(|| {
            ApiError::NotFound(format!("no entity collection of trust anchor {a:?}"))
        })?),
        None => by_anchor.get(ours).or_else(|| {
            (by_anchor.len() == 1)
                .then(|| by_anchor.values().next())
                .flatten()
        }),
    };
    let root = collection.map_or(ours, |c| c.trust_anchor.as_str());
    let map = federation_map::build(
        root,
        ours,
        snap.subordinates.all().map(|s| &**s),
        collection.map(|c| &**c),
        cp.now(),
        limit,
    );
    Ok(axum::Json(map))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_is_checked_field_by_field() {
        assert_eq!(parse(None).ok(), Some((None, DEFAULT_LIMIT)));
        assert_eq!(
            parse(Some("anchor=https%3A%2F%2Fta.example&limit=5")).ok(),
            Some((Some("https://ta.example".into()), 5))
        );
        for (q, field) in [
            ("limit=0", "limit"),
            ("limit=x", "limit"),
            ("anchor=nope", "anchor"),
            ("sub=1", "sub"),
        ] {
            let e = parse(Some(q))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.contains(field), "{q}: {e}");
        }
    }
}
