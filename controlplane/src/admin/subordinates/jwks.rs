//! `/subordinates/{subordinateID}/jwks`: the subordinate's stored federation keys.
//!
//! The stored set keeps every key, expired ones included; filtering happens when a statement
//! is issued.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use pharos_shared::jose::{Jwk, Jwks};
use serde_json::Value;

use super::{Cp, find};
use crate::admin::actor::Actor;
use crate::admin::error::{ApiError, ApiResult};
use crate::admin::extract::Json;
use crate::admin::trust_anchors::validate_jwks;
use crate::control_plane::{ControlPlane, Write};
use crate::db::subordinates::{self as repo, SubordinateRow};

/// This module's routes, merged by [`crate::admin::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new()
        .routes(routes!(get, put, add))
        .routes(routes!(remove))
}

async fn store(
    cp: &ControlPlane,
    mut w: Write<'_>,
    row: &SubordinateRow,
    jwks: &Jwks,
    kind: &str,
    msg: String,
) -> ApiResult<()> {
    let tx = w.tx().await?;
    repo::set_jwks(&cp.db, tx, row.id, jwks, cp.now()).await?;
    w.subordinate_event(row.id, row.status, kind, Some(msg))
        .await?;
    w.touch_subordinate(&row.entity_id);
    Ok(w.commit().await?)
}

/// Shows the stored keys (`{"keys":[]}` when none).
#[utoipa::path(get, path = "/subordinates/{subordinateID}/jwks", tag = "subordinates",
    params(("subordinateID" = String, Path)), responses((status = 200, body = Object), (status = 404)))]
pub async fn get(State(cp): Cp, Path(id): Path<String>) -> ApiResult<axum::Json<Jwks>> {
    Ok(axum::Json(find(&cp, &id).await?.jwks.unwrap_or_default()))
}

/// Replaces the stored keys.
#[utoipa::path(put, path = "/subordinates/{subordinateID}/jwks", tag = "subordinates",
    params(("subordinateID" = String, Path)), request_body = Object,
    responses((status = 200, body = Object), (status = 400), (status = 404)))]
pub async fn put(
    State(cp): Cp,
    Path(id): Path<String>,
    actor: Actor,
    Json(jwks): Json<Jwks>,
) -> ApiResult<axum::Json<Jwks>> {
    validate_jwks(&jwks, &cp.settings.federation.accept.key_types)?;
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let row = find(&cp, &id).await?;
    let msg = format!("JWKS replaced ({} keys)", jwks.keys.len());
    store(&cp, w, &row, &jwks, "jwks_replaced", msg).await?;
    Ok(axum::Json(jwks))
}

/// Adds one key; a `kid` already present is a conflict.
#[utoipa::path(post, path = "/subordinates/{subordinateID}/jwks", tag = "subordinates",
    params(("subordinateID" = String, Path)), request_body = Object,
    responses((status = 201, body = Object), (status = 400), (status = 404), (status = 409)))]
pub async fn add(
    State(cp): Cp,
    Path(id): Path<String>,
    actor: Actor,
    Json(jwk): Json<Jwk>,
) -> ApiResult<impl IntoResponse> {
    validate_jwks(
        &Jwks {
            keys: vec![jwk.clone()],
        },
        &cp.settings.federation.accept.key_types,
    )?;
    let kid = jwk
        .get("kid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let row = find(&cp, &id).await?;
    let mut jwks = row.jwks.clone().unwrap_or_default();
    if jwks
        .keys
        .iter()
        .any(|k| k.get("kid").and_then(Value::as_str) == Some(&kid))
    {
        return Err(ApiError::Conflict(format!(
            "a key with kid {kid:?} already exists"
        )));
    }
    jwks.keys.push(jwk);
    store(&cp, w, &row, &jwks, "jwk_added", format!("key {kid} added")).await?;
    Ok((StatusCode::CREATED, axum::Json(jwks)))
}

/// Removes the key with this `kid`; answers 204 whether or not it existed.
#[utoipa::path(delete, path = "/subordinates/{subordinateID}/jwks/{kid}", tag = "subordinates",
    params(("subordinateID" = String, Path), ("kid" = String, Path)),
    responses((status = 204), (status = 404)))]
pub async fn remove(
    State(cp): Cp,
    Path((id, kid)): Path<(String, String)>,
    actor: Actor,
) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let row = find(&cp, &id).await?;
    let mut jwks = row.jwks.clone().unwrap_or_default();
    let before = jwks.keys.len();
    jwks.keys
        .retain(|k| k.get("kid").and_then(Value::as_str) != Some(kid.as_str()));
    if jwks.keys.len() != before {
        store(
            &cp,
            w,
            &row,
            &jwks,
            "jwk_removed",
            format!("key {kid} removed"),
        )
        .await?;
    }
    Ok(StatusCode::NO_CONTENT)
}
