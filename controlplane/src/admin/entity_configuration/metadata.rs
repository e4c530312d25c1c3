//! `/entity-configuration/metadata[/{entityType}[/{claim}]]`: our Entity Configuration's
//! metadata, edited through the same document engine as the subordinate documents
//! ([`crate::admin::documents`]).
//!
//! Two answers differ from the subordinate metadata routes, because lighthouse answers so on
//! these routes and operators' scripts expect it:
//! - a write that creates an entity type or a claim answers `200`, not `201`;
//! - deleting the last claim of an entity type keeps the (empty) entity type.
//!
//! Endpoint URLs are merged into the published metadata when it is signed; these routes show
//! and edit only what the operator stored.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;

use super::Cp;
use crate::admin::actor::Actor;
use crate::admin::documents::{Doc, Owner, ops};
use crate::admin::error::ApiResult;
use crate::admin::extract::Json;

const EC: Owner<'static> = Owner::EntityConfiguration;

/// Shows the stored metadata (before endpoint URLs are merged in).
#[utoipa::path(get, path = "/entity-configuration/metadata", tag = "entity-configuration",
    responses((status = 200, body = Object)))]
pub async fn get_metadata(State(cp): Cp) -> ApiResult<axum::Json<Value>> {
    ops::get(&cp, EC, Doc::Metadata, &[], true).await
}

/// Replaces the stored metadata.
#[utoipa::path(put, path = "/entity-configuration/metadata", tag = "entity-configuration",
    request_body = Object, responses((status = 200, body = Object), (status = 400)))]
pub async fn put_metadata(
    State(cp): Cp,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::put(&cp, EC, Doc::Metadata, &[], body, &actor).await
}

/// Shows the metadata of one entity type.
#[utoipa::path(get, path = "/entity-configuration/metadata/{entityType}", tag = "entity-configuration",
    params(("entityType" = String, Path)), responses((status = 200, body = Object), (status = 404)))]
pub async fn get_type(State(cp): Cp, Path(t): Path<String>) -> ApiResult<axum::Json<Value>> {
    ops::get(&cp, EC, Doc::Metadata, &[t.as_str()], false).await
}

/// Replaces the metadata of one entity type.
///
/// `200` also when the entity type is new (the subordinate route answers `201` then;
/// lighthouse answers `200` here).
#[utoipa::path(put, path = "/entity-configuration/metadata/{entityType}", tag = "entity-configuration",
    params(("entityType" = String, Path)), request_body = Object,
    responses((status = 200, description = "Replaced, or created (no 201 on this route, as in lighthouse)", body = Object), (status = 400)))]
pub async fn put_type(
    State(cp): Cp,
    actor: Actor,
    Path(t): Path<String>,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::put(&cp, EC, Doc::Metadata, &[t.as_str()], body, &actor).await
}

/// Merges claims into the metadata of one entity type (shallow).
///
/// `200` also when the entity type is new (the subordinate route answers `201` then;
/// lighthouse answers `200` here).
#[utoipa::path(post, path = "/entity-configuration/metadata/{entityType}", tag = "entity-configuration",
    params(("entityType" = String, Path)), request_body = Object,
    responses((status = 200, description = "Merged, or created (no 201 on this route, as in lighthouse)", body = Object), (status = 400)))]
pub async fn post_type(
    State(cp): Cp,
    actor: Actor,
    Path(t): Path<String>,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    ops::merge(&cp, EC, Doc::Metadata, &[t.as_str()], body, &actor).await
}

/// Removes the metadata of one entity type.
#[utoipa::path(delete, path = "/entity-configuration/metadata/{entityType}", tag = "entity-configuration",
    params(("entityType" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete_type(
    State(cp): Cp,
    actor: Actor,
    Path(t): Path<String>,
) -> ApiResult<StatusCode> {
    ops::delete(&cp, EC, Doc::Metadata, &[t.as_str()], &actor).await
}

/// Shows one metadata claim.
#[utoipa::path(get, path = "/entity-configuration/metadata/{entityType}/{claim}", tag = "entity-configuration",
    params(("entityType" = String, Path), ("claim" = String, Path)),
    responses((status = 200, body = Object), (status = 404)))]
pub async fn get_claim(
    State(cp): Cp,
    Path((t, c)): Path<(String, String)>,
) -> ApiResult<axum::Json<Value>> {
    ops::get(&cp, EC, Doc::Metadata, &[t.as_str(), c.as_str()], false).await
}

/// Sets one metadata claim (any JSON value).
///
/// `200` also when the claim is new (the subordinate route answers `201` then; lighthouse
/// answers `200` here).
#[utoipa::path(put, path = "/entity-configuration/metadata/{entityType}/{claim}", tag = "entity-configuration",
    params(("entityType" = String, Path), ("claim" = String, Path)), request_body = Object,
    responses((status = 200, description = "Set, or created (no 201 on this route, as in lighthouse)", body = Object), (status = 400)))]
pub async fn put_claim(
    State(cp): Cp,
    actor: Actor,
    Path((t, c)): Path<(String, String)>,
    Json(v): Json<Value>,
) -> ApiResult<Response> {
    ops::put(&cp, EC, Doc::Metadata, &[t.as_str(), c.as_str()], v, &actor).await
}

/// Removes one metadata claim.
///
/// The entity type stays, empty, when this was its last claim (the subordinate route removes
/// it too).
#[utoipa::path(delete, path = "/entity-configuration/metadata/{entityType}/{claim}", tag = "entity-configuration",
    params(("entityType" = String, Path), ("claim" = String, Path)),
    responses((status = 204, description = "Removed; an emptied entity type stays"), (status = 404)))]
pub async fn delete_claim(
    State(cp): Cp,
    actor: Actor,
    Path((t, c)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    ops::delete(&cp, EC, Doc::Metadata, &[t.as_str(), c.as_str()], &actor).await
}
