//! The history of a trust mark type (every event of its spec, type and subjects) and of one
//! subject: who changed what, newest first, paged like a subordinate's history.

use axum::extract::{Path, Query, State};
use serde::Serialize;
use utoipa::ToSchema;

use super::{Cp, find_spec, find_subject};
use crate::admin::error::{ApiError, ApiResult};
use crate::admin::subordinates::history::{HistoryParams, Pagination};
use crate::control_plane::ControlPlane;
use crate::db::subordinate_events::HistoryQuery;
use crate::db::trust_mark_events::{self as repo, TrustMarkEvent};

/// This module's routes, merged by [`super::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new()
        .routes(routes!(spec_history))
        .routes(routes!(subject_history))
}

/// A page of trust mark history.
#[derive(Debug, Serialize, ToSchema)]
pub struct TrustMarkHistory {
    /// Events, newest first.
    pub events: Vec<TrustMarkEvent>,
    /// Where the page is.
    pub pagination: Pagination,
}

async fn page(
    cp: &ControlPlane,
    tm_type: &str,
    subject: Option<&str>,
    p: HistoryParams,
) -> ApiResult<TrustMarkHistory> {
    let limit = p.limit.unwrap_or(50);
    let offset = p.offset.unwrap_or(0);
    if limit < 1 || offset < 0 {
        return Err(ApiError::BadRequest(
            "limit must be positive and offset non-negative".into(),
        ));
    }
    let limit = limit.min(100);
    let q = HistoryQuery {
        kind: p.kind.filter(|k| !k.is_empty()),
        from: p.from,
        to: p.to,
        limit,
        offset,
    };
    let (events, total) = repo::history(&cp.db, tm_type, subject, &q).await?;
    Ok(TrustMarkHistory {
        events,
        pagination: Pagination {
            total,
            limit,
            offset,
        },
    })
}

/// Every event of the spec's trust mark type (type, owner, issuers, spec, subjects).
#[utoipa::path(get, path = "/trust-marks/issuance-spec/{trustMarkSpecID}/history", tag = "trust-marks",
    params(("trustMarkSpecID" = String, Path), HistoryParams),
    responses((status = 200, body = TrustMarkHistory), (status = 400), (status = 404)))]
pub async fn spec_history(
    State(cp): Cp,
    Path(key): Path<String>,
    Query(p): Query<HistoryParams>,
) -> ApiResult<axum::Json<TrustMarkHistory>> {
    let spec = find_spec(&cp, &key).await?;
    Ok(axum::Json(
        page(&cp, &spec.spec.trust_mark_type, None, p).await?,
    ))
}

/// The events of one subject of a spec (request, approval, blocking, claims…).
#[utoipa::path(get, path = "/trust-marks/issuance-spec/{trustMarkSpecID}/subjects/{subjectID}/history",
    tag = "trust-marks", params(("trustMarkSpecID" = String, Path), ("subjectID" = String, Path), HistoryParams),
    responses((status = 200, body = TrustMarkHistory), (status = 400), (status = 404)))]
pub async fn subject_history(
    State(cp): Cp,
    Path((key, sub)): Path<(String, String)>,
    Query(p): Query<HistoryParams>,
) -> ApiResult<axum::Json<TrustMarkHistory>> {
    let spec = find_spec(&cp, &key).await?;
    let s = find_subject(&cp, &spec, &sub).await?;
    let tm_type = &spec.spec.trust_mark_type;
    Ok(axum::Json(page(&cp, tm_type, Some(&s.entity_id), p).await?))
}
