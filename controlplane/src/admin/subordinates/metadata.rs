//! `/subordinates/{subordinateID}/metadata`: a subordinate's metadata override, as a whole,
//! per entity type and per claim (the subordinate statement's `metadata` claim).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;

use super::Cp;
use crate::admin::actor::Actor;
use crate::admin::documents::Doc;
use crate::admin::documents::ops;
use crate::admin::error::ApiResult;
use crate::admin::extract::Json;

/// This module's routes, merged by [`crate::admin::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new()
        .routes(routes!(get_metadata, put_metadata))
        .routes(routes!(get_type, put_type, post_type, delete_type))
        .routes(routes!(get_claim, put_claim, delete_claim))
}

/// Shows the metadata (whole) in effect.
#[utoipa::path(get, path = "/subordinates/{subordinateID}/metadata", tag = "subordinates", params(("subordinateID" = String, Path)), responses((status = 200, body = Object), (status = 404)))]
pub async fn get_metadata(State(cp): Cp, Path(id): Path<String>) -> ApiResult<axum::Json<Value>> {
    ops::get(&cp, Some(id.as_str()), Doc::Metadata, &[], true).await
}

/// Replaces the metadata (whole).
#[utoipa::path(put, path = "/subordinates/{subordinateID}/metadata", tag = "subordinates", params(("subordinateID" = String, Path)), request_body = Object, responses((status = 200, body = Object), (status = 400), (status = 404)))]
pub async fn put_metadata(
    State(cp): Cp,
    Path(id): Path<String>,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::put(&cp, Some(id.as_str()), Doc::Metadata, &[], body, &actor).await
}

/// Shows the metadata type in effect.
#[utoipa::path(get, path = "/subordinates/{subordinateID}/metadata/{entityType}", tag = "subordinates", params(("subordinateID" = String, Path), ("entityType" = String, Path)), responses((status = 200, body = Object), (status = 404)))]
pub async fn get_type(
    State(cp): Cp,
    Path((id, t)): Path<(String, String)>,
) -> ApiResult<axum::Json<Value>> {
    ops::get(&cp, Some(id.as_str()), Doc::Metadata, &[t.as_str()], false).await
}

/// Replaces the metadata type.
#[utoipa::path(put, path = "/subordinates/{subordinateID}/metadata/{entityType}", tag = "subordinates", params(("subordinateID" = String, Path), ("entityType" = String, Path)), request_body = Object, responses((status = 200, body = Object), (status = 201, body = Object), (status = 400), (status = 404)))]
pub async fn put_type(
    State(cp): Cp,
    Path((id, t)): Path<(String, String)>,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::put(
        &cp,
        Some(id.as_str()),
        Doc::Metadata,
        &[t.as_str()],
        body,
        &actor,
    )
    .await
}

/// Merges members into the metadata type (201 when it is new).
#[utoipa::path(post, path = "/subordinates/{subordinateID}/metadata/{entityType}", tag = "subordinates", params(("subordinateID" = String, Path), ("entityType" = String, Path)), request_body = Object, responses((status = 200, body = Object), (status = 201, body = Object), (status = 400), (status = 404)))]
pub async fn post_type(
    State(cp): Cp,
    Path((id, t)): Path<(String, String)>,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::merge(
        &cp,
        Some(id.as_str()),
        Doc::Metadata,
        &[t.as_str()],
        body,
        &actor,
    )
    .await
}

/// Removes the metadata type.
#[utoipa::path(delete, path = "/subordinates/{subordinateID}/metadata/{entityType}", tag = "subordinates", params(("subordinateID" = String, Path), ("entityType" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete_type(
    State(cp): Cp,
    Path((id, t)): Path<(String, String)>,
    actor: Actor,
) -> ApiResult<StatusCode> {
    ops::delete(&cp, Some(id.as_str()), Doc::Metadata, &[t.as_str()], &actor).await
}

/// Shows the metadata claim in effect.
#[utoipa::path(get, path = "/subordinates/{subordinateID}/metadata/{entityType}/{claim}", tag = "subordinates", params(("subordinateID" = String, Path), ("entityType" = String, Path), ("claim" = String, Path)), responses((status = 200, body = Object), (status = 404)))]
pub async fn get_claim(
    State(cp): Cp,
    Path((id, t, c)): Path<(String, String, String)>,
) -> ApiResult<axum::Json<Value>> {
    ops::get(
        &cp,
        Some(id.as_str()),
        Doc::Metadata,
        &[t.as_str(), c.as_str()],
        false,
    )
    .await
}

/// Replaces the metadata claim.
#[utoipa::path(put, path = "/subordinates/{subordinateID}/metadata/{entityType}/{claim}", tag = "subordinates", params(("subordinateID" = String, Path), ("entityType" = String, Path), ("claim" = String, Path)), request_body = Object, responses((status = 200, body = Object), (status = 201, body = Object), (status = 400), (status = 404)))]
pub async fn put_claim(
    State(cp): Cp,
    Path((id, t, c)): Path<(String, String, String)>,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::put(
        &cp,
        Some(id.as_str()),
        Doc::Metadata,
        &[t.as_str(), c.as_str()],
        body,
        &actor,
    )
    .await
}

/// Removes the metadata claim.
#[utoipa::path(delete, path = "/subordinates/{subordinateID}/metadata/{entityType}/{claim}", tag = "subordinates", params(("subordinateID" = String, Path), ("entityType" = String, Path), ("claim" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete_claim(
    State(cp): Cp,
    Path((id, t, c)): Path<(String, String, String)>,
    actor: Actor,
) -> ApiResult<StatusCode> {
    ops::delete(
        &cp,
        Some(id.as_str()),
        Doc::Metadata,
        &[t.as_str(), c.as_str()],
        &actor,
    )
    .await
}
