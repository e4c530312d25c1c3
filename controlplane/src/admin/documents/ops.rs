//! Request-level operations on statement documents shared by the per-subordinate, the general
//! and the Entity Configuration routes, so that each route handler is one call.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Map, Value};

use super::{self as docs, Doc, Owner, target};
use crate::admin::actor::Actor;
use crate::admin::error::{ApiError, ApiResult};
use crate::admin::resource::created_or_ok;
use crate::control_plane::ControlPlane;

/// GET: the member at `path` in effect; the whole document when `path` is empty, or
/// `empty_default` (`{}`) when nothing is set and the route answers so.
pub async fn get(
    cp: &ControlPlane,
    id: impl Into<Owner<'_>>,
    doc: Doc,
    path: &[&str],
    empty_default: bool,
) -> ApiResult<axum::Json<Value>> {
    let t = target(cp, id).await?;
    if path.is_empty() && empty_default {
        let v = docs::effective(cp, &t, doc).await?;
        return Ok(axum::Json(v.unwrap_or_else(|| Value::Object(Map::new()))));
    }
    docs::get_at(cp, &t, doc, path).await.map(axum::Json)
}

/// PUT: replaces the whole document (200) or sets one member (201 when new, else 200).
pub async fn put(
    cp: &ControlPlane,
    id: impl Into<Owner<'_>>,
    doc: Doc,
    path: &[&str],
    body: Value,
    actor: &Actor,
) -> ApiResult<Response> {
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let t = target(cp, id).await?;
    if path.is_empty() {
        docs::save(cp, w, &t, doc, Some(body.clone()), false).await?;
        return Ok(created_or_ok(false, body));
    }
    let created = docs::put_at(cp, &t, doc, path, body.clone(), w).await?;
    Ok(created_or_ok(created && t.reports_created(), body))
}

/// POST on a member: merges the body's members into it (201 when new, else 200).
pub async fn merge(
    cp: &ControlPlane,
    id: impl Into<Owner<'_>>,
    doc: Doc,
    path: &[&str],
    body: Value,
    actor: &Actor,
) -> ApiResult<Response> {
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let t = target(cp, id).await?;
    let (created, merged) = docs::merge_at(cp, &t, doc, path, body, w).await?;
    Ok(created_or_ok(created && t.reports_created(), merged))
}

/// POST on a subordinate's whole document: starts its override as a copy of the general
/// value (the one explicit way to copy general values into a subordinate). POST creates: when
/// the subordinate already has its own document the answer is 409 and nothing changes
/// (lighthouse copies again, silently replacing what was edited since); PUT replaces it.
pub async fn copy_general(
    cp: &ControlPlane,
    id: &str,
    doc: Doc,
    actor: &Actor,
) -> ApiResult<Response> {
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let t = target(cp, Some(id)).await?;
    if docs::own_in(cp, &mut w, &t, doc).await?.is_some() {
        return Err(ApiError::Conflict(format!(
            "the subordinate already has its own {}; PUT replaces it, DELETE removes it",
            doc.setting()
        )));
    }
    let copy = docs::general_copy(cp, doc).await?;
    docs::save(cp, w, &t, doc, Some(copy.clone()), false).await?;
    Ok(created_or_ok(true, copy))
}

/// DELETE: removes the member at `path`, or the whole override/setting (204; 404 when absent).
pub async fn delete(
    cp: &ControlPlane,
    id: impl Into<Owner<'_>>,
    doc: Doc,
    path: &[&str],
    actor: &Actor,
) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let t = target(cp, id).await?;
    docs::delete_at(cp, &t, doc, path, w).await?;
    Ok(StatusCode::NO_CONTENT)
}
