//! What the Admin API's resource modules share: the subordinate a path segment names, and the
//! created-or-updated answer. It sits below both the subordinate routes and the document engine,
//! which address the same subordinates.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::admin::error::{ApiError, ApiResult};
use crate::control_plane::ControlPlane;
use crate::db::subordinates::{self as repo, SubKey, SubordinateRow};

/// The subordinate addressed by a path segment: a numeric database id or an entity identifier
/// (URL-encoded in the path; axum has already decoded it).
pub async fn find(cp: &ControlPlane, key: &str) -> ApiResult<SubordinateRow> {
    let row = match key.parse::<i64>() {
        Ok(id) => repo::get(&cp.db, SubKey::Id(id)).await?,
        Err(_) => repo::get(&cp.db, SubKey::EntityId(key)).await?,
    };
    row.ok_or_else(|| ApiError::NotFound(format!("unknown subordinate {key:?}")))
}

/// `201 Created` when something new was created, else `200 OK`, with a JSON body.
pub fn created_or_ok(created: bool, body: impl Serialize) -> Response {
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    (status, axum::Json(body)).into_response()
}
