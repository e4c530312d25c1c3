//! `/subordinates/{subordinateID}/metadata-policies`: a subordinate's `metadata_policy` override,
//! as a whole, per entity type, claim and operator.

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
        .routes(routes!(get_policy, put_policy, post_policy, delete_policy))
        .routes(routes!(get_type, put_type, post_type, delete_type))
        .routes(routes!(get_claim, put_claim, post_claim, delete_claim))
        .routes(routes!(get_operator, put_operator, delete_operator))
}

/// Shows the metadata policy (whole) in effect.
#[utoipa::path(get, path = "/subordinates/{subordinateID}/metadata-policies", tag = "subordinates", params(("subordinateID" = String, Path)), responses((status = 200, body = Object), (status = 404)))]
pub async fn get_policy(State(cp): Cp, Path(id): Path<String>) -> ApiResult<axum::Json<Value>> {
    ops::get(&cp, Some(id.as_str()), Doc::Policy, &[], false).await
}

/// Replaces the metadata policy (whole).
#[utoipa::path(put, path = "/subordinates/{subordinateID}/metadata-policies", tag = "subordinates", params(("subordinateID" = String, Path)), request_body = Object, responses((status = 200, body = Object), (status = 400), (status = 404)))]
pub async fn put_policy(
    State(cp): Cp,
    Path(id): Path<String>,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::put(&cp, Some(id.as_str()), Doc::Policy, &[], body, &actor).await
}

/// Starts the subordinate's override as a copy of the general value (201); 409 when it
/// already has one (POST creates; PUT replaces).
#[utoipa::path(post, path = "/subordinates/{subordinateID}/metadata-policies", tag = "subordinates", params(("subordinateID" = String, Path)), responses((status = 201, body = Object), (status = 404), (status = 409)))]
pub async fn post_policy(
    State(cp): Cp,
    Path(id): Path<String>,
    actor: Actor,
) -> ApiResult<Response> {
    ops::copy_general(&cp, &id, Doc::Policy, &actor).await
}

/// Removes the metadata policy (the whole override or setting).
#[utoipa::path(delete, path = "/subordinates/{subordinateID}/metadata-policies", tag = "subordinates", params(("subordinateID" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete_policy(
    State(cp): Cp,
    Path(id): Path<String>,
    actor: Actor,
) -> ApiResult<StatusCode> {
    ops::delete(&cp, Some(id.as_str()), Doc::Policy, &[], &actor).await
}

/// Shows the metadata policy type in effect.
#[utoipa::path(get, path = "/subordinates/{subordinateID}/metadata-policies/{entityType}", tag = "subordinates", params(("subordinateID" = String, Path), ("entityType" = String, Path)), responses((status = 200, body = Object), (status = 404)))]
pub async fn get_type(
    State(cp): Cp,
    Path((id, t)): Path<(String, String)>,
) -> ApiResult<axum::Json<Value>> {
    ops::get(&cp, Some(id.as_str()), Doc::Policy, &[t.as_str()], false).await
}

/// Replaces the metadata policy type.
#[utoipa::path(put, path = "/subordinates/{subordinateID}/metadata-policies/{entityType}", tag = "subordinates", params(("subordinateID" = String, Path), ("entityType" = String, Path)), request_body = Object, responses((status = 200, body = Object), (status = 201, body = Object), (status = 400), (status = 404)))]
pub async fn put_type(
    State(cp): Cp,
    Path((id, t)): Path<(String, String)>,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::put(
        &cp,
        Some(id.as_str()),
        Doc::Policy,
        &[t.as_str()],
        body,
        &actor,
    )
    .await
}

/// Merges members into the metadata policy type (201 when it is new).
#[utoipa::path(post, path = "/subordinates/{subordinateID}/metadata-policies/{entityType}", tag = "subordinates", params(("subordinateID" = String, Path), ("entityType" = String, Path)), request_body = Object, responses((status = 200, body = Object), (status = 201, body = Object), (status = 400), (status = 404)))]
pub async fn post_type(
    State(cp): Cp,
    Path((id, t)): Path<(String, String)>,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::merge(
        &cp,
        Some(id.as_str()),
        Doc::Policy,
        &[t.as_str()],
        body,
        &actor,
    )
    .await
}

/// Removes the metadata policy type.
#[utoipa::path(delete, path = "/subordinates/{subordinateID}/metadata-policies/{entityType}", tag = "subordinates", params(("subordinateID" = String, Path), ("entityType" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete_type(
    State(cp): Cp,
    Path((id, t)): Path<(String, String)>,
    actor: Actor,
) -> ApiResult<StatusCode> {
    ops::delete(&cp, Some(id.as_str()), Doc::Policy, &[t.as_str()], &actor).await
}

/// Shows the metadata policy claim in effect.
#[utoipa::path(get, path = "/subordinates/{subordinateID}/metadata-policies/{entityType}/{claim}", tag = "subordinates", params(("subordinateID" = String, Path), ("entityType" = String, Path), ("claim" = String, Path)), responses((status = 200, body = Object), (status = 404)))]
pub async fn get_claim(
    State(cp): Cp,
    Path((id, t, c)): Path<(String, String, String)>,
) -> ApiResult<axum::Json<Value>> {
    ops::get(
        &cp,
        Some(id.as_str()),
        Doc::Policy,
        &[t.as_str(), c.as_str()],
        false,
    )
    .await
}

/// Replaces the metadata policy claim.
#[utoipa::path(put, path = "/subordinates/{subordinateID}/metadata-policies/{entityType}/{claim}", tag = "subordinates", params(("subordinateID" = String, Path), ("entityType" = String, Path), ("claim" = String, Path)), request_body = Object, responses((status = 200, body = Object), (status = 201, body = Object), (status = 400), (status = 404)))]
pub async fn put_claim(
    State(cp): Cp,
    Path((id, t, c)): Path<(String, String, String)>,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::put(
        &cp,
        Some(id.as_str()),
        Doc::Policy,
        &[t.as_str(), c.as_str()],
        body,
        &actor,
    )
    .await
}

/// Merges members into the metadata policy claim (201 when it is new).
#[utoipa::path(post, path = "/subordinates/{subordinateID}/metadata-policies/{entityType}/{claim}", tag = "subordinates", params(("subordinateID" = String, Path), ("entityType" = String, Path), ("claim" = String, Path)), request_body = Object, responses((status = 200, body = Object), (status = 201, body = Object), (status = 400), (status = 404)))]
pub async fn post_claim(
    State(cp): Cp,
    Path((id, t, c)): Path<(String, String, String)>,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::merge(
        &cp,
        Some(id.as_str()),
        Doc::Policy,
        &[t.as_str(), c.as_str()],
        body,
        &actor,
    )
    .await
}

/// Removes the metadata policy claim.
#[utoipa::path(delete, path = "/subordinates/{subordinateID}/metadata-policies/{entityType}/{claim}", tag = "subordinates", params(("subordinateID" = String, Path), ("entityType" = String, Path), ("claim" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete_claim(
    State(cp): Cp,
    Path((id, t, c)): Path<(String, String, String)>,
    actor: Actor,
) -> ApiResult<StatusCode> {
    ops::delete(
        &cp,
        Some(id.as_str()),
        Doc::Policy,
        &[t.as_str(), c.as_str()],
        &actor,
    )
    .await
}

/// Shows the metadata policy operator in effect.
#[utoipa::path(get, path = "/subordinates/{subordinateID}/metadata-policies/{entityType}/{claim}/{operator}", tag = "subordinates", params(("subordinateID" = String, Path), ("entityType" = String, Path), ("claim" = String, Path), ("operator" = String, Path)), responses((status = 200, body = Object), (status = 404)))]
pub async fn get_operator(
    State(cp): Cp,
    Path((id, t, c, o)): Path<(String, String, String, String)>,
) -> ApiResult<axum::Json<Value>> {
    ops::get(
        &cp,
        Some(id.as_str()),
        Doc::Policy,
        &[t.as_str(), c.as_str(), o.as_str()],
        false,
    )
    .await
}

/// Replaces the metadata policy operator.
#[utoipa::path(put, path = "/subordinates/{subordinateID}/metadata-policies/{entityType}/{claim}/{operator}", tag = "subordinates", params(("subordinateID" = String, Path), ("entityType" = String, Path), ("claim" = String, Path), ("operator" = String, Path)), request_body = Object, responses((status = 200, body = Object), (status = 201, body = Object), (status = 400), (status = 404)))]
pub async fn put_operator(
    State(cp): Cp,
    Path((id, t, c, o)): Path<(String, String, String, String)>,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::put(
        &cp,
        Some(id.as_str()),
        Doc::Policy,
        &[t.as_str(), c.as_str(), o.as_str()],
        body,
        &actor,
    )
    .await
}

/// Removes the metadata policy operator.
#[utoipa::path(delete, path = "/subordinates/{subordinateID}/metadata-policies/{entityType}/{claim}/{operator}", tag = "subordinates", params(("subordinateID" = String, Path), ("entityType" = String, Path), ("claim" = String, Path), ("operator" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete_operator(
    State(cp): Cp,
    Path((id, t, c, o)): Path<(String, String, String, String)>,
    actor: Actor,
) -> ApiResult<StatusCode> {
    ops::delete(
        &cp,
        Some(id.as_str()),
        Doc::Policy,
        &[t.as_str(), c.as_str(), o.as_str()],
        &actor,
    )
    .await
}
