//! `/subordinates/metadata-policies`: the general `metadata_policy`, applied to every subordinate
//! without its own, as a whole, per entity type, claim and operator.

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
        .routes(routes!(
            general_get_policy,
            general_put_policy,
            general_delete_policy
        ))
        .routes(routes!(
            general_get_type,
            general_put_type,
            general_post_type,
            general_delete_type
        ))
        .routes(routes!(
            general_get_claim,
            general_put_claim,
            general_post_claim,
            general_delete_claim
        ))
        .routes(routes!(
            general_get_operator,
            general_put_operator,
            general_delete_operator
        ))
}

/// Shows the general metadata policy (whole) in effect.
#[utoipa::path(get, path = "/subordinates/metadata-policies", tag = "subordinates", responses((status = 200, body = Object), (status = 404)))]
pub async fn general_get_policy(State(cp): Cp) -> ApiResult<axum::Json<Value>> {
    ops::get(&cp, None, Doc::Policy, &[], true).await
}

/// Replaces the general metadata policy (whole).
#[utoipa::path(put, path = "/subordinates/metadata-policies", tag = "subordinates", request_body = Object, responses((status = 200, body = Object), (status = 400), (status = 404)))]
pub async fn general_put_policy(
    State(cp): Cp,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::put(&cp, None, Doc::Policy, &[], body, &actor).await
}

/// Removes the general metadata policy (the whole override or setting).
#[utoipa::path(delete, path = "/subordinates/metadata-policies", tag = "subordinates", responses((status = 204), (status = 404)))]
pub async fn general_delete_policy(State(cp): Cp, actor: Actor) -> ApiResult<StatusCode> {
    ops::delete(&cp, None, Doc::Policy, &[], &actor).await
}

/// Shows the general metadata policy type in effect.
#[utoipa::path(get, path = "/subordinates/metadata-policies/{entityType}", tag = "subordinates", params(("entityType" = String, Path)), responses((status = 200, body = Object), (status = 404)))]
pub async fn general_get_type(
    State(cp): Cp,
    Path(t): Path<String>,
) -> ApiResult<axum::Json<Value>> {
    ops::get(&cp, None, Doc::Policy, &[t.as_str()], false).await
}

/// Replaces the general metadata policy type.
#[utoipa::path(put, path = "/subordinates/metadata-policies/{entityType}", tag = "subordinates", params(("entityType" = String, Path)), request_body = Object, responses((status = 200, body = Object), (status = 201, body = Object), (status = 400), (status = 404)))]
pub async fn general_put_type(
    State(cp): Cp,
    Path(t): Path<String>,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::put(&cp, None, Doc::Policy, &[t.as_str()], body, &actor).await
}

/// Merges members into the general metadata policy type (201 when it is new).
#[utoipa::path(post, path = "/subordinates/metadata-policies/{entityType}", tag = "subordinates", params(("entityType" = String, Path)), request_body = Object, responses((status = 200, body = Object), (status = 201, body = Object), (status = 400), (status = 404)))]
pub async fn general_post_type(
    State(cp): Cp,
    Path(t): Path<String>,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::merge(&cp, None, Doc::Policy, &[t.as_str()], body, &actor).await
}

/// Removes the general metadata policy type.
#[utoipa::path(delete, path = "/subordinates/metadata-policies/{entityType}", tag = "subordinates", params(("entityType" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn general_delete_type(
    State(cp): Cp,
    Path(t): Path<String>,
    actor: Actor,
) -> ApiResult<StatusCode> {
    ops::delete(&cp, None, Doc::Policy, &[t.as_str()], &actor).await
}

/// Shows the general metadata policy claim in effect.
#[utoipa::path(get, path = "/subordinates/metadata-policies/{entityType}/{claim}", tag = "subordinates", params(("entityType" = String, Path), ("claim" = String, Path)), responses((status = 200, body = Object), (status = 404)))]
pub async fn general_get_claim(
    State(cp): Cp,
    Path((t, c)): Path<(String, String)>,
) -> ApiResult<axum::Json<Value>> {
    ops::get(&cp, None, Doc::Policy, &[t.as_str(), c.as_str()], false).await
}

/// Replaces the general metadata policy claim.
#[utoipa::path(put, path = "/subordinates/metadata-policies/{entityType}/{claim}", tag = "subordinates", params(("entityType" = String, Path), ("claim" = String, Path)), request_body = Object, responses((status = 200, body = Object), (status = 201, body = Object), (status = 400), (status = 404)))]
pub async fn general_put_claim(
    State(cp): Cp,
    Path((t, c)): Path<(String, String)>,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::put(
        &cp,
        None,
        Doc::Policy,
        &[t.as_str(), c.as_str()],
        body,
        &actor,
    )
    .await
}

/// Merges members into the general metadata policy claim (201 when it is new).
#[utoipa::path(post, path = "/subordinates/metadata-policies/{entityType}/{claim}", tag = "subordinates", params(("entityType" = String, Path), ("claim" = String, Path)), request_body = Object, responses((status = 200, body = Object), (status = 201, body = Object), (status = 400), (status = 404)))]
pub async fn general_post_claim(
    State(cp): Cp,
    Path((t, c)): Path<(String, String)>,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::merge(
        &cp,
        None,
        Doc::Policy,
        &[t.as_str(), c.as_str()],
        body,
        &actor,
    )
    .await
}

/// Removes the general metadata policy claim.
#[utoipa::path(delete, path = "/subordinates/metadata-policies/{entityType}/{claim}", tag = "subordinates", params(("entityType" = String, Path), ("claim" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn general_delete_claim(
    State(cp): Cp,
    Path((t, c)): Path<(String, String)>,
    actor: Actor,
) -> ApiResult<StatusCode> {
    ops::delete(&cp, None, Doc::Policy, &[t.as_str(), c.as_str()], &actor).await
}

/// Shows the general metadata policy operator in effect.
#[utoipa::path(get, path = "/subordinates/metadata-policies/{entityType}/{claim}/{operator}", tag = "subordinates", params(("entityType" = String, Path), ("claim" = String, Path), ("operator" = String, Path)), responses((status = 200, body = Object), (status = 404)))]
pub async fn general_get_operator(
    State(cp): Cp,
    Path((t, c, o)): Path<(String, String, String)>,
) -> ApiResult<axum::Json<Value>> {
    ops::get(
        &cp,
        None,
        Doc::Policy,
        &[t.as_str(), c.as_str(), o.as_str()],
        false,
    )
    .await
}

/// Replaces the general metadata policy operator.
#[utoipa::path(put, path = "/subordinates/metadata-policies/{entityType}/{claim}/{operator}", tag = "subordinates", params(("entityType" = String, Path), ("claim" = String, Path), ("operator" = String, Path)), request_body = Object, responses((status = 200, body = Object), (status = 201, body = Object), (status = 400), (status = 404)))]
pub async fn general_put_operator(
    State(cp): Cp,
    Path((t, c, o)): Path<(String, String, String)>,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::put(
        &cp,
        None,
        Doc::Policy,
        &[t.as_str(), c.as_str(), o.as_str()],
        body,
        &actor,
    )
    .await
}

/// Removes the general metadata policy operator.
#[utoipa::path(delete, path = "/subordinates/metadata-policies/{entityType}/{claim}/{operator}", tag = "subordinates", params(("entityType" = String, Path), ("claim" = String, Path), ("operator" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn general_delete_operator(
    State(cp): Cp,
    Path((t, c, o)): Path<(String, String, String)>,
    actor: Actor,
) -> ApiResult<StatusCode> {
    ops::delete(
        &cp,
        None,
        Doc::Policy,
        &[t.as_str(), c.as_str(), o.as_str()],
        &actor,
    )
    .await
}
