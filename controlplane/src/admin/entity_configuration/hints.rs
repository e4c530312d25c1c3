//! `/entity-configuration/authority-hints`: our superiors, published as `authority_hints`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde::Deserialize;
use utoipa::ToSchema;

use super::Cp;
use crate::admin::actor::Actor;
use crate::admin::error::{ApiError, ApiResult};
use crate::admin::extract::{Json, entity_id};
use crate::control_plane::{ControlPlane, Section};
use crate::db::entity_config::{self as repo, AuthorityHint};

/// Body of an authority hint.
#[derive(Debug, Deserialize, ToSchema)]
pub struct HintInput {
    /// The superior's entity identifier.
    pub entity_id: Option<String>,
    /// Operator's note.
    #[serde(default)]
    pub description: String,
}

impl HintInput {
    /// Checks the body of a new hint as its route does before it reads the database (`us`: our
    /// own entity identifier): the superior's entity identifier.
    pub fn check_new(&self, us: &str) -> ApiResult<String> {
        let e = self
            .entity_id
            .clone()
            .ok_or_else(|| ApiError::BadRequest("entity_id is required".into()))?;
        entity_id("entity_id", &e)?;
        if e == us {
            return Err(ApiError::BadRequest(
                "an entity cannot be its own authority".into(),
            ));
        }
        Ok(e)
    }
}

async fn find_hint(cp: &ControlPlane, id: &str) -> ApiResult<AuthorityHint> {
    repo::hints(&cp.db)
        .await?
        .into_iter()
        .find(|h| h.id.to_string() == id || h.entity_id == id)
        .ok_or_else(|| ApiError::NotFound(format!("unknown authority hint {id:?}")))
}

/// Lists our authority hints.
#[utoipa::path(get, path = "/entity-configuration/authority-hints", tag = "entity-configuration",
    responses((status = 200, body = [AuthorityHint])))]
pub async fn list_hints(State(cp): Cp) -> ApiResult<axum::Json<Vec<AuthorityHint>>> {
    Ok(axum::Json(repo::hints(&cp.db).await?))
}

/// Adds an authority hint.
#[utoipa::path(post, path = "/entity-configuration/authority-hints", tag = "entity-configuration",
    request_body = HintInput, responses((status = 201, body = AuthorityHint), (status = 400), (status = 409)))]
pub async fn add_hint(
    State(cp): Cp,
    actor: Actor,
    Json(h): Json<HintInput>,
) -> ApiResult<impl IntoResponse> {
    let e = h.check_new(&cp.settings.entity_id)?;
    let mut w = cp.write(actor.name()).await;
    if repo::hints(&cp.db).await?.iter().any(|x| x.entity_id == e) {
        return Err(ApiError::Conflict(format!(
            "authority hint {e:?} already exists"
        )));
    }
    let tx = w.tx().await?;
    let id = repo::add_hint(&cp.db, tx, &e, &h.description, cp.now()).await?;
    w.touch(Section::EntityConfiguration);
    w.commit().await?;
    Ok((
        StatusCode::CREATED,
        axum::Json(find_hint(&cp, &id.to_string()).await?),
    ))
}

/// Shows one authority hint (by id or entity identifier).
#[utoipa::path(get, path = "/entity-configuration/authority-hints/{id}", tag = "entity-configuration",
    params(("id" = String, Path)), responses((status = 200, body = AuthorityHint), (status = 404)))]
pub async fn get_hint(
    State(cp): Cp,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<AuthorityHint>> {
    Ok(axum::Json(find_hint(&cp, &id).await?))
}

/// Changes one authority hint.
#[utoipa::path(put, path = "/entity-configuration/authority-hints/{id}", tag = "entity-configuration",
    params(("id" = String, Path)), request_body = HintInput,
    responses((status = 200, body = AuthorityHint), (status = 400), (status = 404), (status = 409)))]
pub async fn put_hint(
    State(cp): Cp,
    actor: Actor,
    Path(id): Path<String>,
    Json(h): Json<HintInput>,
) -> ApiResult<axum::Json<AuthorityHint>> {
    let mut w = cp.write(actor.name()).await;
    let old = find_hint(&cp, &id).await?;
    let e = h.entity_id.unwrap_or(old.entity_id.clone());
    entity_id("entity_id", &e)?;
    if e != old.entity_id && repo::hints(&cp.db).await?.iter().any(|x| x.entity_id == e) {
        return Err(ApiError::Conflict(format!(
            "authority hint {e:?} already exists"
        )));
    }
    let tx = w.tx().await?;
    repo::update_hint(&cp.db, tx, old.id, &e, &h.description, cp.now()).await?;
    w.touch(Section::EntityConfiguration);
    w.commit().await?;
    Ok(axum::Json(find_hint(&cp, &old.id.to_string()).await?))
}

/// Removes one authority hint.
#[utoipa::path(delete, path = "/entity-configuration/authority-hints/{id}", tag = "entity-configuration",
    params(("id" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete_hint(
    State(cp): Cp,
    actor: Actor,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    let old = find_hint(&cp, &id).await?;
    let tx = w.tx().await?;
    repo::delete_hint(&cp.db, tx, old.id).await?;
    w.touch(Section::EntityConfiguration);
    w.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}
