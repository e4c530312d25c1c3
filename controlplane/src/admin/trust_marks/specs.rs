//! `/trust-marks/issuance-spec`: what we issue for each trust mark type. A spec is what makes
//! the trust mark endpoint know a type. A delegation JWT is checked when stored, against the
//! type's owner (from `/trust-marks/types`), so a mark we issue never carries a delegation a
//! resolver would refuse.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde_json::{Map, Value};

use super::spec_input::{SpecInput, SpecRecord, patched};
use super::{Cp, find_spec};
use crate::admin::actor::Actor;
use crate::admin::error::{ApiError, ApiResult};
use crate::admin::extract::Json;
use crate::control_plane::{ControlPlane, Section};
use crate::db::trust_mark_parties::{self as parties, Key};
use crate::db::trust_mark_specs::{self as repo, SpecWrite};
use crate::db::trust_mark_types as types_repo;

/// This module's routes, merged by [`super::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new()
        .routes(routes!(list, create))
        .routes(routes!(get, put, patch, delete))
}

/// Checks `s.delegation_jwt` (when set) against the owner of its type: signed by the owner's
/// keys, issued by the owner to us for this type, current.
async fn check_delegation(cp: &ControlPlane, s: &SpecWrite) -> ApiResult<()> {
    let Some(jwt) = &s.delegation_jwt else {
        return Ok(());
    };
    let t = types_repo::get(&cp.db, Key::Name(&s.trust_mark_type)).await?;
    let owner = match t.and_then(|t| t.owner_id) {
        Some(id) => parties::owner(&cp.db, Key::Id(id)).await?,
        None => None,
    };
    let owner = owner
        .ok_or_else(|| ApiError::BadRequest("delegation_jwt: the type has no owner".into()))?;
    pharos_shared::trust_mark::check_delegation_for_issuer(
        jwt,
        &owner.entity_id,
        &owner.jwks,
        &cp.settings.entity_id,
        &s.trust_mark_type,
        cp.now(),
    )
    .map_err(|e| ApiError::BadRequest(format!("delegation_jwt: {e}")))
}

/// Lists the issuance specs.
#[utoipa::path(get, path = "/trust-marks/issuance-spec", tag = "trust-marks",
    responses((status = 200, body = [SpecRecord])))]
pub async fn list(State(cp): Cp) -> ApiResult<axum::Json<Vec<SpecRecord>>> {
    let rows = repo::list(&cp.db).await?;
    Ok(axum::Json(rows.into_iter().map(Into::into).collect()))
}

/// Adds an issuance spec; `{trust_mark_type, lifetime}` is enough.
#[utoipa::path(post, path = "/trust-marks/issuance-spec", tag = "trust-marks", request_body = SpecInput,
    responses((status = 201, body = SpecRecord), (status = 400), (status = 409), (status = 413)))]
pub async fn create(
    State(cp): Cp,
    actor: Actor,
    Json(input): Json<SpecInput>,
) -> ApiResult<impl IntoResponse> {
    let s = input.into_write()?;
    let mut w = cp.write(actor.name()).await;
    if repo::get(&cp.db, Key::Name(&s.trust_mark_type))
        .await?
        .is_some()
    {
        return Err(ApiError::Conflict(format!(
            "an issuance spec for {:?} already exists",
            s.trust_mark_type
        )));
    }
    check_delegation(&cp, &s).await?;
    let id = repo::insert(&cp.db, w.tx().await?, &s, cp.now()).await?;
    w.trust_mark_event(&s.trust_mark_type, None, None, "spec_created", None)
        .await?;
    w.touch(Section::TrustMarks);
    w.commit().await?;
    let rec: SpecRecord = find_spec(&cp, &id.to_string()).await?.into();
    Ok((StatusCode::CREATED, axum::Json(rec)))
}

/// Shows one spec (numeric id or URL-encoded trust mark type).
#[utoipa::path(get, path = "/trust-marks/issuance-spec/{trustMarkSpecID}", tag = "trust-marks",
    params(("trustMarkSpecID" = String, Path, description = "numeric id or URL-encoded trust mark type")),
    responses((status = 200, body = SpecRecord), (status = 404)))]
pub async fn get(State(cp): Cp, Path(key): Path<String>) -> ApiResult<axum::Json<SpecRecord>> {
    Ok(axum::Json(find_spec(&cp, &key).await?.into()))
}

/// Replaces spec `key` by what `input` makes of the stored one.
async fn replace(
    cp: &ControlPlane,
    key: &str,
    actor: &Actor,
    input: impl FnOnce(repo::SpecRow) -> ApiResult<SpecInput>,
) -> ApiResult<SpecRecord> {
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let old = find_spec(cp, key).await?;
    let (id, old_spec) = (old.id, old.spec.clone());
    let s = input(old)?.into_write()?;
    if s.trust_mark_type != old_spec.trust_mark_type
        && repo::get(&cp.db, Key::Name(&s.trust_mark_type))
            .await?
            .is_some()
    {
        return Err(ApiError::Conflict(format!(
            "an issuance spec for {:?} already exists",
            s.trust_mark_type
        )));
    }
    // An unchanged delegation of an unchanged type was checked when stored; editing the
    // description must not fail because it has since expired.
    if s.delegation_jwt != old_spec.delegation_jwt || s.trust_mark_type != old_spec.trust_mark_type
    {
        check_delegation(cp, &s).await?;
    }
    repo::update(&cp.db, w.tx().await?, id, &s, cp.now()).await?;
    let msg = (s.trust_mark_type != old_spec.trust_mark_type)
        .then(|| format!("renamed from {}", old_spec.trust_mark_type));
    w.trust_mark_event(&s.trust_mark_type, None, None, "spec_updated", msg)
        .await?;
    w.touch(Section::TrustMarks);
    w.commit().await?;
    Ok(find_spec(cp, &id.to_string()).await?.into())
}

/// Replaces a spec (omitted fields take their defaults).
#[utoipa::path(put, path = "/trust-marks/issuance-spec/{trustMarkSpecID}", tag = "trust-marks",
    params(("trustMarkSpecID" = String, Path)), request_body = SpecInput,
    responses((status = 200, body = SpecRecord), (status = 400), (status = 404), (status = 409)))]
pub async fn put(
    State(cp): Cp,
    Path(key): Path<String>,
    actor: Actor,
    Json(input): Json<SpecInput>,
) -> ApiResult<axum::Json<SpecRecord>> {
    Ok(axum::Json(replace(&cp, &key, &actor, |_| Ok(input)).await?))
}

/// Changes the fields given (any field of the spec; null clears one).
#[utoipa::path(patch, path = "/trust-marks/issuance-spec/{trustMarkSpecID}", tag = "trust-marks",
    params(("trustMarkSpecID" = String, Path)), request_body = Object,
    responses((status = 200, body = SpecRecord), (status = 400), (status = 404), (status = 409)))]
pub async fn patch(
    State(cp): Cp,
    Path(key): Path<String>,
    actor: Actor,
    Json(fields): Json<Map<String, Value>>,
) -> ApiResult<axum::Json<SpecRecord>> {
    Ok(axum::Json(
        replace(&cp, &key, &actor, |old| patched(old, fields)).await?,
    ))
}

/// Deletes a spec with its subjects; instances already issued keep their status.
#[utoipa::path(delete, path = "/trust-marks/issuance-spec/{trustMarkSpecID}", tag = "trust-marks",
    params(("trustMarkSpecID" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete(State(cp): Cp, actor: Actor, Path(key): Path<String>) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    let s = find_spec(&cp, &key).await?;
    repo::delete(&cp.db, w.tx().await?, s.id).await?;
    w.trust_mark_event(&s.spec.trust_mark_type, None, None, "spec_deleted", None)
        .await?;
    w.touch(Section::TrustMarks);
    w.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}
