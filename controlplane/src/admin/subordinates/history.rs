//! A subordinate's event history and the unsigned preview of its statement.

use axum::extract::{Path, Query, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::{Cp, find};
use crate::admin::error::{ApiError, ApiResult};
use crate::db::subordinate_events::{Event, HistoryQuery};

/// This module's routes, merged by [`crate::admin::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new()
        .routes(routes!(history))
        .routes(routes!(statement))
}

/// Query of the history route.
#[derive(Debug, Deserialize, IntoParams)]
pub struct HistoryParams {
    /// Page size (default 50, at most 100).
    pub limit: Option<i64>,
    /// Events to skip.
    pub offset: Option<i64>,
    /// Only this event type.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Only events at or after this Unix time.
    pub from: Option<i64>,
    /// Only events at or before this Unix time.
    pub to: Option<i64>,
}

/// Page position of a history answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Pagination {
    /// Events matching the filters.
    pub total: i64,
    /// Page size used.
    pub limit: i64,
    /// Events skipped.
    pub offset: i64,
}

/// A page of history.
#[derive(Debug, Serialize, ToSchema)]
pub struct History {
    /// Events, newest first.
    pub events: Vec<Event>,
    /// Where the page is.
    pub pagination: Pagination,
}

/// The subordinate's event history, newest first.
#[utoipa::path(get, path = "/subordinates/{subordinateID}/history", tag = "subordinates",
    params(("subordinateID" = String, Path), HistoryParams),
    responses((status = 200, body = History), (status = 400), (status = 404)))]
pub async fn history(
    State(cp): Cp,
    Path(id): Path<String>,
    Query(p): Query<HistoryParams>,
) -> ApiResult<axum::Json<History>> {
    let limit = p.limit.unwrap_or(50);
    let offset = p.offset.unwrap_or(0);
    if limit < 1 || offset < 0 {
        return Err(ApiError::BadRequest(
            "limit must be positive and offset non-negative".into(),
        ));
    }
    let limit = limit.min(100);
    let row = find(&cp, &id).await?;
    let q = HistoryQuery {
        kind: p.kind.filter(|k| !k.is_empty()),
        from: p.from,
        to: p.to,
        limit,
        offset,
    };
    let (events, total) = crate::db::subordinate_events::history(&cp.db, row.id, &q).await?;
    Ok(axum::Json(History {
        events,
        pagination: Pagination {
            total,
            limit,
            offset,
        },
    }))
}

/// The unsigned statement about this subordinate as it would be issued now (no
/// `source_endpoint`).
#[utoipa::path(get, path = "/subordinates/{subordinateID}/statement", tag = "subordinates",
    params(("subordinateID" = String, Path)), responses((status = 200, body = Object), (status = 404)))]
pub async fn statement(State(cp): Cp, Path(id): Path<String>) -> ApiResult<axum::Json<Value>> {
    let row = find(&cp, &id).await?;
    let snap = cp.snapshot();
    let sub = snap
        .subordinates
        .get(&row.entity_id)
        .ok_or_else(|| ApiError::NotFound(format!("unknown subordinate {id:?}")))?;
    Ok(axum::Json(Value::Object(
        pharos_shared::subordinate_statement::payload(&snap, sub, cp.now(), None),
    )))
}
