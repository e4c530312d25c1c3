//! `/entities`: the federation entities this deployment hosts (issue 38). Entity 1 is the one
//! configured in `entity_id`; the others are created here and served where their identifiers
//! say. Every per-entity resource of the Admin API is also at `/entities/{entity}/<path>`
//! (see [`crate::admin::nested`]).

use std::sync::Arc;

use axum::Extension;
use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use pharos_shared::hosted::EntityNo;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::extract::{Json, entity_id};
use crate::admin::access::Scope;
use crate::admin::actor::Actor;
use crate::admin::error::{ApiError, ApiResult};
use crate::db::entities::EntityRow;
use crate::hosting::Hosting;

type Hosted = Extension<Arc<Hosting>>;

/// This module's routes, merged by [`crate::admin::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new()
        .routes(routes!(list, create))
        .routes(routes!(get, update, delete))
}

/// A hosted entity as the Admin API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EntityRecord {
    /// Its number: `/entities/{id}/…` manages it.
    pub id: i64,
    /// Its Entity Identifier: where it is served.
    pub entity_id: String,
    /// A name for people.
    pub display_name: String,
    /// Whether it is the entity configured in `entity_id` (the unprefixed paths' entity).
    pub default: bool,
    /// Creation time (Unix seconds).
    pub created_at: i64,
    /// Last update (Unix seconds).
    pub updated_at: i64,
}

impl From<EntityRow> for EntityRecord {
    fn from(r: EntityRow) -> Self {
        Self {
            id: r.id.get(),
            default: r.id.is_default(),
            entity_id: r.entity_id,
            display_name: r.display_name,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

/// Body of `POST /entities`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityInput {
    /// The new entity's identifier: an https URL (http for loopback hosts), served on this
    /// port at its path (`https://fed.example.org/edu` → `/edu/.well-known/openid-federation`).
    pub entity_id: Option<String>,
    /// A name for people (at most 255 characters).
    #[serde(default)]
    pub display_name: String,
}

/// Body of `PATCH /entities/{entity}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityUpdate {
    /// A name for people (at most 255 characters).
    pub display_name: String,
}

/// Longest display name (the column's width).
const MAX_DISPLAY_NAME: usize = 255;

fn check_display_name(name: &str) -> ApiResult<()> {
    if name.chars().count() > MAX_DISPLAY_NAME {
        return Err(ApiError::BadRequest(format!(
            "display_name must be at most {MAX_DISPLAY_NAME} characters"
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(ApiError::BadRequest(
            "display_name must not contain control characters".into(),
        ));
    }
    Ok(())
}

impl EntityInput {
    /// Checks the body as its route does before it reads the database: the identifier.
    pub fn check(&self) -> ApiResult<String> {
        let id = self
            .entity_id
            .clone()
            .ok_or_else(|| ApiError::BadRequest("entity_id is required".into()))?;
        entity_id("entity_id", &id)?;
        check_display_name(&self.display_name)?;
        Ok(id)
    }
}

impl EntityUpdate {
    /// Checks the body as its route does.
    pub fn check(&self) -> ApiResult<()> {
        check_display_name(&self.display_name)
    }
}

/// The entity a path names: its number or its URL-encoded identifier.
fn number(hosting: &Hosting, key: &str) -> ApiResult<EntityNo> {
    hosting
        .find(key)
        .map(|cp| cp.db.hosted())
        .ok_or_else(|| ApiError::NotFound(format!("unknown hosted entity {key:?}")))
}

async fn record(hosting: &Hosting, entity: EntityNo) -> ApiResult<EntityRecord> {
    hosting
        .row(entity)
        .await?
        .map(Into::into)
        .ok_or_else(|| ApiError::NotFound(format!("unknown hosted entity {entity}")))
}

/// Lists the hosted entities, the default one first.
#[utoipa::path(get, path = "/entities", tag = "entities",
    responses((status = 200, body = [EntityRecord])))]
pub async fn list(
    Extension(hosting): Hosted,
    scope: Option<Extension<Scope>>,
) -> ApiResult<axum::Json<Vec<EntityRecord>>> {
    let scope = scope.map_or(Scope::Deployment, |Extension(s)| s);
    let rows = hosting.list().await?;
    Ok(axum::Json(
        rows.into_iter()
            .filter(|r| scope.sees(r.id))
            .map(Into::into)
            .collect(),
    ))
}

/// Hosts a new entity: its keys are generated, and it is served at once where its identifier
/// says. Refused with 409, naming the other, when its path collides on its host with another
/// hosted entity, an endpoint of the default entity or the port's own paths.
#[utoipa::path(post, path = "/entities", tag = "entities",
    request_body = EntityInput,
    responses((status = 201, body = EntityRecord), (status = 400), (status = 409)))]
pub async fn create(
    Extension(hosting): Hosted,
    actor: Actor,
    Json(input): Json<EntityInput>,
) -> ApiResult<impl IntoResponse> {
    let id = input.check()?;
    let row = hosting
        .create(&id, &input.display_name, actor.name())
        .await?;
    Ok((StatusCode::CREATED, axum::Json(EntityRecord::from(row))))
}

/// Shows one hosted entity (`{entity}`: its number or its URL-encoded identifier).
#[utoipa::path(get, path = "/entities/{entity}", tag = "entities",
    params(("entity" = String, Path, description = "number or URL-encoded entity identifier")),
    responses((status = 200, body = EntityRecord), (status = 404)))]
pub async fn get(
    Extension(hosting): Hosted,
    scope: Option<Extension<Scope>>,
    Path(entity): Path<String>,
) -> ApiResult<axum::Json<EntityRecord>> {
    let n = number(&hosting, &entity)?;
    if scope.is_some_and(|Extension(s)| !s.sees(n)) {
        return Err(ApiError::NotFound(format!(
            "unknown hosted entity {entity:?}"
        )));
    }
    Ok(axum::Json(record(&hosting, n).await?))
}

/// Renames a hosted entity for people.
#[utoipa::path(patch, path = "/entities/{entity}", tag = "entities",
    params(("entity" = String, Path, description = "number or URL-encoded entity identifier")),
    request_body = EntityUpdate,
    responses((status = 200, body = EntityRecord), (status = 400), (status = 404)))]
pub async fn update(
    Extension(hosting): Hosted,
    actor: Actor,
    Path(entity): Path<String>,
    Json(input): Json<EntityUpdate>,
) -> ApiResult<axum::Json<EntityRecord>> {
    input.check()?;
    let n = number(&hosting, &entity)?;
    let row = hosting
        .rename(n, &input.display_name, actor.name())
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("unknown hosted entity {entity:?}")))?;
    Ok(axum::Json(row.into()))
}

/// Query of `DELETE /entities/{entity}`.
#[derive(Debug, Deserialize, IntoParams)]
pub struct DeleteQuery {
    /// The entity's identifier again: deleting takes it off the public port at once.
    pub confirm: Option<String>,
}

/// Stops hosting an entity: it is no longer served, its jobs stop, and its rows stay in the
/// database (its history). `confirm` must repeat its identifier. The default entity is the
/// configuration's and cannot be deleted (409).
#[utoipa::path(delete, path = "/entities/{entity}", tag = "entities",
    params(("entity" = String, Path, description = "number or URL-encoded entity identifier"),
        DeleteQuery),
    responses((status = 204), (status = 400), (status = 404), (status = 409)))]
pub async fn delete(
    Extension(hosting): Hosted,
    actor: Actor,
    Path(entity): Path<String>,
    Query(q): Query<DeleteQuery>,
) -> ApiResult<StatusCode> {
    let n = number(&hosting, &entity)?;
    let row = record(&hosting, n).await?;
    if n.is_default() {
        return Err(ApiError::Conflict(
            "the default entity is the one configured in entity_id; it cannot be deleted".into(),
        ));
    }
    if q.confirm.as_deref() != Some(row.entity_id.as_str()) {
        return Err(ApiError::BadRequest(format!(
            "confirm must repeat the entity's identifier ({}) to delete it",
            row.entity_id
        )));
    }
    if !hosting.delete(n, actor.name()).await? {
        return Err(ApiError::NotFound(format!(
            "unknown hosted entity {entity:?}"
        )));
    }
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_checked_naming_the_field() {
        let ok = EntityInput {
            entity_id: Some("https://fed.example.org/edu".into()),
            display_name: "Education".into(),
        };
        assert_eq!(ok.check().unwrap(), "https://fed.example.org/edu");
        let missing = EntityInput {
            entity_id: None,
            display_name: String::new(),
        };
        assert!(
            missing
                .check()
                .unwrap_err()
                .to_string()
                .contains("entity_id")
        );
        let query = EntityInput {
            entity_id: Some("https://fed.example.org/edu?x=1".into()),
            display_name: String::new(),
        };
        assert!(query.check().is_err());
        let long = EntityUpdate {
            display_name: "x".repeat(256),
        };
        assert!(
            long.check()
                .unwrap_err()
                .to_string()
                .contains("display_name")
        );
        let control = EntityUpdate {
            display_name: "a\nb".into(),
        };
        assert!(control.check().is_err());
    }
}
