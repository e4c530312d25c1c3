//! `/federation-endpoints`: the endpoint registry, managed at run time.

use std::sync::Arc;

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use pharos_shared::endpoint::{EndpointConfig, EndpointType};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::extract::{Json, http_url};
use super::trust_anchors::TrustAnchorRecord;
use crate::admin::actor::Actor;
use crate::admin::error::{ApiError, ApiResult};
use crate::control_plane::{ControlPlane, Section};
use crate::db::endpoints::{self as repo, EndpointRow, EndpointWrite};
use crate::hosting::Hosting;

type Cp = State<Arc<ControlPlane>>;

/// This module's routes, merged by [`crate::admin::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new()
        .routes(routes!(list, create))
        .routes(routes!(get, update, delete))
        .routes(routes!(set_auth_trust_anchors))
}

/// Paths that belong to fixed routes and can never be endpoint paths.
const RESERVED_PATHS: [&str; 3] = ["/.well-known/openid-federation", "/healthz", "/readyz"];
const ADMIN_PREFIX: &str = "/api/v1/admin";

/// An endpoint as the Admin API shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct EndpointRecord {
    /// Database id.
    pub id: i64,
    /// Creation time (Unix seconds).
    pub created_at: i64,
    /// Last update (Unix seconds).
    pub updated_at: i64,
    /// Endpoint type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Served path; null = disabled.
    pub path: Option<String>,
    /// Published URL override.
    pub url: Option<String>,
    /// Client authentication required.
    pub auth_enabled: bool,
    /// Type-specific configuration.
    #[schema(value_type = Object)]
    pub config: Value,
    /// Trust anchors accepted for client authentication.
    pub auth_trust_anchors: Vec<TrustAnchorRecord>,
}

/// Create/update body of an endpoint.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EndpointInput {
    /// Endpoint type (required on create; must match the path on update).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Served path; null or absent = disabled.
    pub path: Option<String>,
    /// Published URL override.
    pub url: Option<String>,
    /// Require `private_key_jwt` client authentication.
    #[serde(default)]
    pub auth_enabled: bool,
    /// Trust anchors for client authentication: entity identifiers (or trust anchor objects
    /// with an `entity_id`, as a GET returns them).
    #[serde(default)]
    #[schema(value_type = Vec<String>)]
    pub auth_trust_anchors: Vec<TrustAnchorRef>,
    /// Type-specific configuration, as a JSON object or a string containing one.
    #[schema(value_type = Object)]
    pub config: Option<Value>,
    /// Ignored read-only fields, so that a GET result can be PUT back.
    #[serde(default)]
    #[schema(ignore)]
    pub id: Option<Value>,
    /// Ignored read-only field.
    #[serde(default)]
    #[schema(ignore)]
    pub created_at: Option<Value>,
    /// Ignored read-only field.
    #[serde(default)]
    #[schema(ignore)]
    pub updated_at: Option<Value>,
}

/// A trust anchor named in a body: its entity identifier, or an object carrying it.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum TrustAnchorRef {
    /// `"https://ta.example"`.
    Id(String),
    /// `{"entity_id": "https://ta.example", ...}`.
    Object {
        /// The entity identifier.
        entity_id: String,
    },
}

impl TrustAnchorRef {
    fn entity_id(&self) -> &str {
        match self {
            Self::Id(s) | Self::Object { entity_id: s } => s,
        }
    }
}

/// An endpoint type named in a path or body (400 for an unknown one).
pub fn parse_type(s: &str) -> ApiResult<EndpointType> {
    EndpointType::parse(s).ok_or_else(|| {
        let all: Vec<&str> = EndpointType::ALL.iter().map(|t| t.as_str()).collect();
        ApiError::BadRequest(format!(
            "unknown endpoint type {s:?}; one of {}",
            all.join(", ")
        ))
    })
}

/// An endpoint path as the Admin API stores it (absolute, no query or fragment), or the
/// error naming what is wrong; `config2db` checks a legacy file's paths with the same rule.
pub fn validate_path(path: Option<String>) -> ApiResult<Option<String>> {
    let Some(p) = path.filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    if !p.starts_with('/') || p.contains(['?', '#', ' ']) || p.len() > 512 {
        return Err(ApiError::BadRequest(format!(
            "path must start with '/' and contain no query, fragment or spaces: {p:?}"
        )));
    }
    if RESERVED_PATHS.contains(&p.as_str()) || p.starts_with(ADMIN_PREFIX) {
        return Err(ApiError::BadRequest(format!("path {p:?} is reserved")));
    }
    Ok(Some(p))
}

fn parse_config(kind: EndpointType, config: Option<Value>) -> ApiResult<Value> {
    let value = match config {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(Value::String(s)) if s.trim().is_empty() => Value::Object(Default::default()),
        Some(Value::String(s)) => serde_json::from_str(&s)
            .map_err(|e| ApiError::BadRequest(format!("config is not valid JSON: {e}")))?,
        Some(v) => v,
    };
    EndpointConfig::parse(kind, &value).map_err(ApiError::BadRequest)?;
    Ok(value)
}

impl EndpointInput {
    /// Checks the body as the create and update routes of an endpoint of type `kind` do
    /// before they read the database: what to store, and the entity identifiers of the trust
    /// anchors it names (each must be in the repository, which [`validate`] checks).
    pub fn check(self, kind: EndpointType) -> ApiResult<(EndpointWrite, Vec<String>)> {
        let path = validate_path(self.path)?;
        let url = self.url.filter(|u| !u.is_empty());
        if let Some(u) = &url {
            http_url("url", u)?;
        }
        let config = parse_config(kind, self.config)?;
        if self.auth_enabled && kind.supports_client_auth() && self.auth_trust_anchors.is_empty() {
            return Err(ApiError::BadRequest(
                "auth_enabled requires at least one entry in auth_trust_anchors".into(),
            ));
        }
        let names = self
            .auth_trust_anchors
            .iter()
            .map(|t| t.entity_id().to_string())
            .collect();
        Ok((
            EndpointWrite {
                kind: kind.as_str().into(),
                path,
                url,
                auth_enabled: self.auth_enabled,
                config,
            },
            names,
        ))
    }
}

/// Validated input plus the trust anchor row ids it references.
async fn validate(
    cp: &ControlPlane,
    kind: EndpointType,
    input: EndpointInput,
) -> ApiResult<(EndpointWrite, Vec<i64>)> {
    let (write, names) = input.check(kind)?;
    let ta_ids = trust_anchor_ids(cp, &names).await.map_err(|e| match e {
        ApiError::NotFound(m) => ApiError::BadRequest(m),
        other => other,
    })?;
    Ok((write, ta_ids))
}

async fn trust_anchor_ids(cp: &ControlPlane, entity_ids: &[String]) -> ApiResult<Vec<i64>> {
    let all = crate::db::trust_anchors::list(&cp.db).await?;
    let mut ids = Vec::new();
    for e in entity_ids {
        let ta = all
            .iter()
            .find(|t| &t.entity_id == e)
            .ok_or_else(|| ApiError::NotFound(format!("unknown trust anchor {e:?}")))?;
        if !ids.contains(&ta.id) {
            ids.push(ta.id);
        }
    }
    Ok(ids)
}

async fn record(cp: &ControlPlane, row: EndpointRow) -> ApiResult<EndpointRecord> {
    let tas = crate::db::trust_anchors::list(&cp.db).await?;
    Ok(EndpointRecord {
        id: row.id,
        created_at: row.created_at,
        updated_at: row.updated_at,
        kind: row.kind,
        path: row.path,
        url: row.url,
        auth_enabled: row.auth_enabled,
        config: row.config,
        auth_trust_anchors: row
            .auth_trust_anchors
            .iter()
            .filter_map(|e| tas.iter().find(|t| &t.entity_id == e))
            .map(|t| TrustAnchorRecord::from(t.clone()))
            .collect(),
    })
}

async fn existing(cp: &ControlPlane, kind: EndpointType) -> ApiResult<EndpointRow> {
    repo::get(&cp.db, kind.as_str())
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no {kind} endpoint configured")))
}

async fn path_taken(
    cp: &ControlPlane,
    hosting: &Hosting,
    path: &Option<String>,
    except: Option<i64>,
) -> ApiResult<()> {
    if let Some(p) = path {
        if let Some(other) = hosting.endpoint_collision(cp, p) {
            return Err(ApiError::Conflict(format!(
                "path {p:?} is served by the hosted entity {other}"
            )));
        }
        let rows = repo::list(&cp.db).await?;
        if rows
            .iter()
            .any(|r| r.path.as_deref() == Some(p) && Some(r.id) != except)
        {
            return Err(ApiError::Conflict(format!("path {p:?} is already in use")));
        }
    }
    Ok(())
}

/// Lists every configured endpoint.
#[utoipa::path(get, path = "/federation-endpoints", tag = "federation-endpoints",
    responses((status = 200, body = [EndpointRecord])))]
pub async fn list(State(cp): Cp) -> ApiResult<axum::Json<Vec<EndpointRecord>>> {
    let mut out = Vec::new();
    for row in repo::list(&cp.db).await? {
        out.push(record(&cp, row).await?);
    }
    Ok(axum::Json(out))
}

/// Shows one endpoint.
#[utoipa::path(get, path = "/federation-endpoints/{type}", tag = "federation-endpoints",
    params(("type" = String, Path, description = "endpoint type")),
    responses((status = 200, body = EndpointRecord), (status = 400), (status = 404)))]
pub async fn get(State(cp): Cp, Path(kind): Path<String>) -> ApiResult<axum::Json<EndpointRecord>> {
    let kind = parse_type(&kind)?;
    let row = existing(&cp, kind).await?;
    Ok(axum::Json(record(&cp, row).await?))
}

/// Creates an endpoint; it is served and published at once.
#[utoipa::path(post, path = "/federation-endpoints", tag = "federation-endpoints",
    request_body = EndpointInput,
    responses((status = 201, body = EndpointRecord), (status = 400), (status = 409)))]
pub async fn create(
    State(cp): Cp,
    actor: Actor,
    Extension(hosting): Extension<Arc<Hosting>>,
    Json(input): Json<EndpointInput>,
) -> ApiResult<impl IntoResponse> {
    let kind_name = input
        .kind
        .clone()
        .ok_or_else(|| ApiError::BadRequest("type is required".into()))?;
    let kind = parse_type(&kind_name)?;
    let (write, ta_ids) = validate(&cp, kind, input).await?;
    let mut w = cp.write(actor.name()).await;
    if repo::get(&cp.db, kind.as_str()).await?.is_some() {
        return Err(ApiError::Conflict(format!(
            "a {kind} endpoint already exists"
        )));
    }
    path_taken(&cp, &hosting, &write.path, None).await?;
    let now = cp.now();
    let tx = w.tx().await?;
    let id = repo::insert(&cp.db, tx, &write, now).await?;
    repo::set_auth_trust_anchors(&cp.db, tx, id, &ta_ids).await?;
    if let Some(p) = &write.path {
        repo::remove_legacy_path(&cp.db, tx, p).await?;
    }
    w.touch(Section::Registry);
    w.commit().await?;
    let row = existing(&cp, kind).await?;
    Ok((StatusCode::CREATED, axum::Json(record(&cp, row).await?)))
}

/// Replaces an endpoint's settings; `path: null` disables it. A path given up keeps being
/// served for one Entity Configuration lifetime.
#[utoipa::path(put, path = "/federation-endpoints/{type}", tag = "federation-endpoints",
    params(("type" = String, Path, description = "endpoint type")),
    request_body = EndpointInput,
    responses((status = 200, body = EndpointRecord), (status = 400), (status = 404), (status = 409)))]
pub async fn update(
    State(cp): Cp,
    actor: Actor,
    Extension(hosting): Extension<Arc<Hosting>>,
    Path(kind): Path<String>,
    Json(input): Json<EndpointInput>,
) -> ApiResult<axum::Json<EndpointRecord>> {
    let kind = parse_type(&kind)?;
    if let Some(k) = &input.kind
        && k != kind.as_str()
    {
        return Err(ApiError::BadRequest(format!(
            "type {k:?} in the body does not match the path ({kind})"
        )));
    }
    let (write, ta_ids) = validate(&cp, kind, input).await?;
    let mut w = cp.write(actor.name()).await;
    let old = existing(&cp, kind).await?;
    path_taken(&cp, &hosting, &write.path, Some(old.id)).await?;
    let now = cp.now();
    let tx = w.tx().await?;
    repo::update(&cp.db, tx, old.id, &write, now).await?;
    repo::set_auth_trust_anchors(&cp.db, tx, old.id, &ta_ids).await?;
    retire_path(&cp, tx, &old, write.path.as_deref(), now).await?;
    if let Some(p) = &write.path {
        repo::remove_legacy_path(&cp.db, tx, p).await?;
    }
    w.touch(Section::Registry);
    w.commit().await?;
    let row = existing(&cp, kind).await?;
    Ok(axum::Json(record(&cp, row).await?))
}

/// Deletes an endpoint; its path stays served for one Entity Configuration lifetime.
#[utoipa::path(delete, path = "/federation-endpoints/{type}", tag = "federation-endpoints",
    params(("type" = String, Path, description = "endpoint type")),
    responses((status = 204), (status = 400), (status = 404)))]
pub async fn delete(
    State(cp): Cp,
    actor: Actor,
    Path(kind): Path<String>,
) -> ApiResult<StatusCode> {
    let kind = parse_type(&kind)?;
    let mut w = cp.write(actor.name()).await;
    let old = existing(&cp, kind).await?;
    let now = cp.now();
    let tx = w.tx().await?;
    retire_path(&cp, tx, &old, None, now).await?;
    repo::delete(&cp.db, tx, old.id).await?;
    w.touch(Section::Registry);
    w.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Replaces the trust anchors accepted for client authentication at an endpoint.
#[utoipa::path(put, path = "/federation-endpoints/{type}/auth-trust-anchors", tag = "federation-endpoints",
    params(("type" = String, Path, description = "endpoint type")),
    request_body = Vec<String>,
    responses((status = 200, body = [TrustAnchorRecord]), (status = 400), (status = 404)))]
pub async fn set_auth_trust_anchors(
    State(cp): Cp,
    actor: Actor,
    Path(kind): Path<String>,
    Json(list): Json<Vec<String>>,
) -> ApiResult<axum::Json<Vec<TrustAnchorRecord>>> {
    let kind = parse_type(&kind)?;
    let mut w = cp.write(actor.name()).await;
    let old = existing(&cp, kind).await?;
    if old.auth_enabled && kind.supports_client_auth() && list.is_empty() {
        return Err(ApiError::BadRequest(
            "an endpoint with auth_enabled needs at least one auth trust anchor".into(),
        ));
    }
    let ids = trust_anchor_ids(&cp, &list).await?;
    let tx = w.tx().await?;
    repo::set_auth_trust_anchors(&cp.db, tx, old.id, &ids).await?;
    w.touch(Section::Registry);
    w.commit().await?;
    let row = existing(&cp, kind).await?;
    Ok(axum::Json(record(&cp, row).await?.auth_trust_anchors))
}

/// Records the old path of `old` as legacy when it is given up.
async fn retire_path(
    cp: &ControlPlane,
    c: &mut sqlx::AnyConnection,
    old: &EndpointRow,
    new_path: Option<&str>,
    now: i64,
) -> ApiResult<()> {
    if let Some(p) = old.path.as_deref().filter(|p| !p.is_empty())
        && Some(p) != new_path
    {
        let lifetime = cp.snapshot().entity_configuration.lifetime;
        repo::add_legacy_path(&cp.db, c, p, &old.kind, now + lifetime, now).await?;
    }
    Ok(())
}
