//! `constraints`: the `constraints` of statements, per subordinate (override) and general, as a
//! whole and per member (`max_path_length`, `naming_constraints`, `allowed_entity_types`).

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
            get_constraints,
            put_constraints,
            post_constraints,
            delete_constraints
        ))
        .routes(routes!(
            get_max_path_length,
            put_max_path_length,
            delete_max_path_length
        ))
        .routes(routes!(
            get_naming_constraints,
            put_naming_constraints,
            delete_naming_constraints
        ))
        .routes(routes!(
            get_allowed_entity_types,
            put_allowed_entity_types,
            super::allowed_types::post
        ))
        .routes(routes!(
            general_get_constraints,
            general_put_constraints,
            general_delete_constraints
        ))
        .routes(routes!(
            general_get_max_path_length,
            general_put_max_path_length,
            general_delete_max_path_length
        ))
        .routes(routes!(
            general_get_naming_constraints,
            general_put_naming_constraints,
            general_delete_naming_constraints
        ))
        .routes(routes!(
            general_get_allowed_entity_types,
            general_put_allowed_entity_types,
            super::allowed_types::general_post
        ))
        .routes(routes!(super::allowed_types::delete))
        .routes(routes!(super::allowed_types::general_delete))
}

/// Shows the constraints (whole) in effect.
#[utoipa::path(get, path = "/subordinates/{subordinateID}/constraints", tag = "subordinates", params(("subordinateID" = String, Path)), responses((status = 200, body = Object), (status = 404)))]
pub async fn get_constraints(
    State(cp): Cp,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Value>> {
    ops::get(&cp, Some(id.as_str()), Doc::Constraints, &[], false).await
}

/// Replaces the constraints (whole).
#[utoipa::path(put, path = "/subordinates/{subordinateID}/constraints", tag = "subordinates", params(("subordinateID" = String, Path)), request_body = Object, responses((status = 200, body = Object), (status = 400), (status = 404)))]
pub async fn put_constraints(
    State(cp): Cp,
    Path(id): Path<String>,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::put(&cp, Some(id.as_str()), Doc::Constraints, &[], body, &actor).await
}

/// Starts the subordinate's override as a copy of the general value (201); 409 when it
/// already has one (POST creates; PUT replaces).
#[utoipa::path(post, path = "/subordinates/{subordinateID}/constraints", tag = "subordinates", params(("subordinateID" = String, Path)), responses((status = 201, body = Object), (status = 404), (status = 409)))]
pub async fn post_constraints(
    State(cp): Cp,
    Path(id): Path<String>,
    actor: Actor,
) -> ApiResult<Response> {
    ops::copy_general(&cp, &id, Doc::Constraints, &actor).await
}

/// Removes the constraints (the whole override or setting).
#[utoipa::path(delete, path = "/subordinates/{subordinateID}/constraints", tag = "subordinates", params(("subordinateID" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete_constraints(
    State(cp): Cp,
    Path(id): Path<String>,
    actor: Actor,
) -> ApiResult<StatusCode> {
    ops::delete(&cp, Some(id.as_str()), Doc::Constraints, &[], &actor).await
}

/// Shows `max_path_length` in effect.
#[utoipa::path(get, path = "/subordinates/{subordinateID}/constraints/max-path-length", tag = "subordinates", params(("subordinateID" = String, Path)), responses((status = 200, body = Object), (status = 404)))]
pub async fn get_max_path_length(
    State(cp): Cp,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Value>> {
    ops::get(
        &cp,
        Some(id.as_str()),
        Doc::Constraints,
        &["max_path_length"],
        false,
    )
    .await
}

/// Sets `max_path_length`.
#[utoipa::path(put, path = "/subordinates/{subordinateID}/constraints/max-path-length", tag = "subordinates", params(("subordinateID" = String, Path)), request_body = Object, responses((status = 200, body = Object), (status = 201, body = Object), (status = 400), (status = 404)))]
pub async fn put_max_path_length(
    State(cp): Cp,
    Path(id): Path<String>,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::put(
        &cp,
        Some(id.as_str()),
        Doc::Constraints,
        &["max_path_length"],
        body,
        &actor,
    )
    .await
}

/// Removes `max_path_length`.
#[utoipa::path(delete, path = "/subordinates/{subordinateID}/constraints/max-path-length", tag = "subordinates", params(("subordinateID" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete_max_path_length(
    State(cp): Cp,
    Path(id): Path<String>,
    actor: Actor,
) -> ApiResult<StatusCode> {
    ops::delete(
        &cp,
        Some(id.as_str()),
        Doc::Constraints,
        &["max_path_length"],
        &actor,
    )
    .await
}

/// Shows `naming_constraints` in effect.
#[utoipa::path(get, path = "/subordinates/{subordinateID}/constraints/naming-constraints", tag = "subordinates", params(("subordinateID" = String, Path)), responses((status = 200, body = Object), (status = 404)))]
pub async fn get_naming_constraints(
    State(cp): Cp,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Value>> {
    ops::get(
        &cp,
        Some(id.as_str()),
        Doc::Constraints,
        &["naming_constraints"],
        false,
    )
    .await
}

/// Sets `naming_constraints`.
#[utoipa::path(put, path = "/subordinates/{subordinateID}/constraints/naming-constraints", tag = "subordinates", params(("subordinateID" = String, Path)), request_body = Object, responses((status = 200, body = Object), (status = 201, body = Object), (status = 400), (status = 404)))]
pub async fn put_naming_constraints(
    State(cp): Cp,
    Path(id): Path<String>,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::put(
        &cp,
        Some(id.as_str()),
        Doc::Constraints,
        &["naming_constraints"],
        body,
        &actor,
    )
    .await
}

/// Removes `naming_constraints`.
#[utoipa::path(delete, path = "/subordinates/{subordinateID}/constraints/naming-constraints", tag = "subordinates", params(("subordinateID" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete_naming_constraints(
    State(cp): Cp,
    Path(id): Path<String>,
    actor: Actor,
) -> ApiResult<StatusCode> {
    ops::delete(
        &cp,
        Some(id.as_str()),
        Doc::Constraints,
        &["naming_constraints"],
        &actor,
    )
    .await
}

/// Shows `allowed_entity_types` in effect.
#[utoipa::path(get, path = "/subordinates/{subordinateID}/constraints/allowed-entity-types", tag = "subordinates", params(("subordinateID" = String, Path)), responses((status = 200, body = Object), (status = 404)))]
pub async fn get_allowed_entity_types(
    State(cp): Cp,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Value>> {
    ops::get(
        &cp,
        Some(id.as_str()),
        Doc::Constraints,
        &["allowed_entity_types"],
        false,
    )
    .await
}

/// Sets `allowed_entity_types`.
#[utoipa::path(put, path = "/subordinates/{subordinateID}/constraints/allowed-entity-types", tag = "subordinates", params(("subordinateID" = String, Path)), request_body = Object, responses((status = 200, body = Object), (status = 201, body = Object), (status = 400), (status = 404)))]
pub async fn put_allowed_entity_types(
    State(cp): Cp,
    Path(id): Path<String>,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::put(
        &cp,
        Some(id.as_str()),
        Doc::Constraints,
        &["allowed_entity_types"],
        body,
        &actor,
    )
    .await
}

/// Shows the general constraints (whole) in effect.
#[utoipa::path(get, path = "/subordinates/constraints", tag = "subordinates", responses((status = 200, body = Object), (status = 404)))]
pub async fn general_get_constraints(State(cp): Cp) -> ApiResult<axum::Json<Value>> {
    ops::get(&cp, None, Doc::Constraints, &[], false).await
}

/// Replaces the general constraints (whole).
#[utoipa::path(put, path = "/subordinates/constraints", tag = "subordinates", request_body = Object, responses((status = 200, body = Object), (status = 400), (status = 404)))]
pub async fn general_put_constraints(
    State(cp): Cp,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::put(&cp, None, Doc::Constraints, &[], body, &actor).await
}

/// Removes the general constraints (the whole override or setting).
#[utoipa::path(delete, path = "/subordinates/constraints", tag = "subordinates", responses((status = 204), (status = 404)))]
pub async fn general_delete_constraints(State(cp): Cp, actor: Actor) -> ApiResult<StatusCode> {
    ops::delete(&cp, None, Doc::Constraints, &[], &actor).await
}

/// Shows `max_path_length` in effect.
#[utoipa::path(get, path = "/subordinates/constraints/max-path-length", tag = "subordinates", responses((status = 200, body = Object), (status = 404)))]
pub async fn general_get_max_path_length(State(cp): Cp) -> ApiResult<axum::Json<Value>> {
    ops::get(&cp, None, Doc::Constraints, &["max_path_length"], false).await
}

/// Sets `max_path_length`.
#[utoipa::path(put, path = "/subordinates/constraints/max-path-length", tag = "subordinates", request_body = Object, responses((status = 200, body = Object), (status = 201, body = Object), (status = 400), (status = 404)))]
pub async fn general_put_max_path_length(
    State(cp): Cp,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::put(
        &cp,
        None,
        Doc::Constraints,
        &["max_path_length"],
        body,
        &actor,
    )
    .await
}

/// Removes `max_path_length`.
#[utoipa::path(delete, path = "/subordinates/constraints/max-path-length", tag = "subordinates", responses((status = 204), (status = 404)))]
pub async fn general_delete_max_path_length(State(cp): Cp, actor: Actor) -> ApiResult<StatusCode> {
    ops::delete(&cp, None, Doc::Constraints, &["max_path_length"], &actor).await
}

/// Shows `naming_constraints` in effect.
#[utoipa::path(get, path = "/subordinates/constraints/naming-constraints", tag = "subordinates", responses((status = 200, body = Object), (status = 404)))]
pub async fn general_get_naming_constraints(State(cp): Cp) -> ApiResult<axum::Json<Value>> {
    ops::get(&cp, None, Doc::Constraints, &["naming_constraints"], false).await
}

/// Sets `naming_constraints`.
#[utoipa::path(put, path = "/subordinates/constraints/naming-constraints", tag = "subordinates", request_body = Object, responses((status = 200, body = Object), (status = 201, body = Object), (status = 400), (status = 404)))]
pub async fn general_put_naming_constraints(
    State(cp): Cp,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::put(
        &cp,
        None,
        Doc::Constraints,
        &["naming_constraints"],
        body,
        &actor,
    )
    .await
}

/// Removes `naming_constraints`.
#[utoipa::path(delete, path = "/subordinates/constraints/naming-constraints", tag = "subordinates", responses((status = 204), (status = 404)))]
pub async fn general_delete_naming_constraints(
    State(cp): Cp,
    actor: Actor,
) -> ApiResult<StatusCode> {
    ops::delete(&cp, None, Doc::Constraints, &["naming_constraints"], &actor).await
}

/// Shows `allowed_entity_types` in effect.
#[utoipa::path(get, path = "/subordinates/constraints/allowed-entity-types", tag = "subordinates", responses((status = 200, body = Object), (status = 404)))]
pub async fn general_get_allowed_entity_types(State(cp): Cp) -> ApiResult<axum::Json<Value>> {
    ops::get(
        &cp,
        None,
        Doc::Constraints,
        &["allowed_entity_types"],
        false,
    )
    .await
}

/// Sets `allowed_entity_types`.
#[utoipa::path(put, path = "/subordinates/constraints/allowed-entity-types", tag = "subordinates", request_body = Object, responses((status = 200, body = Object), (status = 201, body = Object), (status = 400), (status = 404)))]
pub async fn general_put_allowed_entity_types(
    State(cp): Cp,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::put(
        &cp,
        None,
        Doc::Constraints,
        &["allowed_entity_types"],
        body,
        &actor,
    )
    .await
}
