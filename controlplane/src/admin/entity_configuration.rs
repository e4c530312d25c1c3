//! `/entity-configuration`: what our Entity Configuration says, edited at run time.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use pharos_shared::chain::STANDARD_CLAIMS;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use super::body::{Json, Text, entity_id, integer};
use crate::admin::actor::Actor;
use crate::admin::error::{ApiError, ApiResult};
use crate::control_plane::{ControlPlane, Section, Write};
use crate::db::entity_config::{self as repo, AuthorityHint, ClaimRow};
use crate::db::settings;

type Cp = State<Arc<ControlPlane>>;

/// The one standard claim an operator may set as an additional claim: Pharos does not
/// compute `trust_anchor_hints` itself. Every other standard claim is Pharos's to set.
const OPERATOR_STANDARD_CLAIMS: [&str; 1] = ["trust_anchor_hints"];

/// Shows the unsigned Entity Configuration payload as it would be signed now.
#[utoipa::path(get, path = "/entity-configuration", tag = "entity-configuration",
    responses((status = 200, body = Object)))]
pub async fn show(State(cp): Cp) -> Json2 {
    let snap = cp.snapshot();
    axum::Json(Value::Object(pharos_shared::entity_configuration::payload(
        &snap,
        cp.now(),
    )))
}

type Json2 = axum::Json<Value>;

/// Shows the published keys.
#[utoipa::path(get, path = "/entity-configuration/jwks", tag = "entity-configuration",
    responses((status = 200, body = Object)))]
pub async fn jwks(State(cp): Cp) -> Json2 {
    axum::Json(json!({ "keys": cp.snapshot().keys.published }))
}

async fn stored_metadata(cp: &ControlPlane) -> ApiResult<Map<String, Value>> {
    Ok(
        match settings::get(&cp.db, settings::EC, "metadata").await? {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        },
    )
}

async fn save_metadata(
    cp: &ControlPlane,
    mut w: Write<'_>,
    metadata: Map<String, Value>,
) -> ApiResult<()> {
    for (t, v) in &metadata {
        if !v.is_object() {
            return Err(ApiError::BadRequest(format!(
                "metadata for entity type {t:?} must be a JSON object"
            )));
        }
    }
    let tx = w.tx().await?;
    settings::set(
        &cp.db,
        tx,
        settings::EC,
        "metadata",
        &Value::Object(metadata),
    )
    .await?;
    w.touch(Section::EntityConfiguration);
    Ok(w.commit().await?)
}

/// Shows the stored metadata (before endpoint URLs are merged in).
#[utoipa::path(get, path = "/entity-configuration/metadata", tag = "entity-configuration",
    responses((status = 200, body = Object)))]
pub async fn get_metadata(State(cp): Cp) -> ApiResult<Json2> {
    Ok(axum::Json(Value::Object(stored_metadata(&cp).await?)))
}

/// Replaces the stored metadata.
#[utoipa::path(put, path = "/entity-configuration/metadata", tag = "entity-configuration",
    request_body = Object, responses((status = 200, body = Object), (status = 400)))]
pub async fn put_metadata(
    State(cp): Cp,
    actor: Actor,
    Json(body): Json<Value>,
) -> ApiResult<Json2> {
    let Value::Object(m) = body else {
        return Err(ApiError::BadRequest(
            "metadata must be a JSON object".into(),
        ));
    };
    let w = cp.write(actor.name()).await;
    save_metadata(&cp, w, m.clone()).await?;
    Ok(axum::Json(Value::Object(m)))
}

/// Shows the metadata of one entity type.
#[utoipa::path(get, path = "/entity-configuration/metadata/{entityType}", tag = "entity-configuration",
    params(("entityType" = String, Path)), responses((status = 200, body = Object), (status = 404)))]
pub async fn get_type(State(cp): Cp, Path(t): Path<String>) -> ApiResult<Json2> {
    stored_metadata(&cp)
        .await?
        .remove(&t)
        .map(axum::Json)
        .ok_or_else(|| ApiError::NotFound(format!("no metadata for entity type {t:?}")))
}

/// Replaces the metadata of one entity type.
#[utoipa::path(put, path = "/entity-configuration/metadata/{entityType}", tag = "entity-configuration",
    params(("entityType" = String, Path)), request_body = Object,
    responses((status = 200, body = Object), (status = 400)))]
pub async fn put_type(
    State(cp): Cp,
    actor: Actor,
    Path(t): Path<String>,
    Json(body): Json<Value>,
) -> ApiResult<Json2> {
    if !body.is_object() {
        return Err(ApiError::BadRequest(
            "entity type metadata must be a JSON object".into(),
        ));
    }
    let w = cp.write(actor.name()).await;
    let mut m = stored_metadata(&cp).await?;
    m.insert(t, body.clone());
    save_metadata(&cp, w, m).await?;
    Ok(axum::Json(body))
}

/// Merges claims into the metadata of one entity type (shallow).
#[utoipa::path(post, path = "/entity-configuration/metadata/{entityType}", tag = "entity-configuration",
    params(("entityType" = String, Path)), request_body = Object,
    responses((status = 200, body = Object), (status = 400)))]
pub async fn post_type(
    State(cp): Cp,
    actor: Actor,
    Path(t): Path<String>,
    Json(body): Json<Value>,
) -> ApiResult<Json2> {
    let Value::Object(add) = body else {
        return Err(ApiError::BadRequest(
            "entity type metadata must be a JSON object".into(),
        ));
    };
    let w = cp.write(actor.name()).await;
    let mut m = stored_metadata(&cp).await?;
    let entry = m.entry(t).or_insert_with(|| Value::Object(Map::new()));
    let merged = match entry {
        Value::Object(o) => {
            o.extend(add);
            Value::Object(o.clone())
        }
        other => {
            *other = Value::Object(add);
            other.clone()
        }
    };
    save_metadata(&cp, w, m).await?;
    Ok(axum::Json(merged))
}

/// Removes the metadata of one entity type.
#[utoipa::path(delete, path = "/entity-configuration/metadata/{entityType}", tag = "entity-configuration",
    params(("entityType" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete_type(
    State(cp): Cp,
    actor: Actor,
    Path(t): Path<String>,
) -> ApiResult<StatusCode> {
    let w = cp.write(actor.name()).await;
    let mut m = stored_metadata(&cp).await?;
    if m.remove(&t).is_none() {
        return Err(ApiError::NotFound(format!(
            "no metadata for entity type {t:?}"
        )));
    }
    save_metadata(&cp, w, m).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Shows one metadata claim.
#[utoipa::path(get, path = "/entity-configuration/metadata/{entityType}/{claim}", tag = "entity-configuration",
    params(("entityType" = String, Path), ("claim" = String, Path)),
    responses((status = 200, body = Object), (status = 404)))]
pub async fn get_claim(State(cp): Cp, Path((t, c)): Path<(String, String)>) -> ApiResult<Json2> {
    stored_metadata(&cp)
        .await?
        .get(&t)
        .and_then(|v| v.get(&c))
        .cloned()
        .map(axum::Json)
        .ok_or_else(|| ApiError::NotFound(format!("no claim {c:?} in {t:?} metadata")))
}

/// Sets one metadata claim (any JSON value).
#[utoipa::path(put, path = "/entity-configuration/metadata/{entityType}/{claim}", tag = "entity-configuration",
    params(("entityType" = String, Path), ("claim" = String, Path)), request_body = Object,
    responses((status = 200, body = Object), (status = 400)))]
pub async fn put_claim(
    State(cp): Cp,
    actor: Actor,
    Path((t, c)): Path<(String, String)>,
    Json(v): Json<Value>,
) -> ApiResult<Json2> {
    let w = cp.write(actor.name()).await;
    let mut m = stored_metadata(&cp).await?;
    let entry = m.entry(t).or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(o) = entry {
        o.insert(c, v.clone());
    }
    save_metadata(&cp, w, m).await?;
    Ok(axum::Json(v))
}

/// Removes one metadata claim.
#[utoipa::path(delete, path = "/entity-configuration/metadata/{entityType}/{claim}", tag = "entity-configuration",
    params(("entityType" = String, Path), ("claim" = String, Path)),
    responses((status = 204), (status = 404)))]
pub async fn delete_claim(
    State(cp): Cp,
    actor: Actor,
    Path((t, c)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let w = cp.write(actor.name()).await;
    let mut m = stored_metadata(&cp).await?;
    let removed = m
        .get_mut(&t)
        .and_then(Value::as_object_mut)
        .and_then(|o| o.remove(&c));
    if removed.is_none() {
        return Err(ApiError::NotFound(format!(
            "no claim {c:?} in {t:?} metadata"
        )));
    }
    save_metadata(&cp, w, m).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Shows the Entity Configuration lifetime in seconds.
#[utoipa::path(get, path = "/entity-configuration/lifetime", tag = "entity-configuration",
    responses((status = 200, body = i64)))]
pub async fn get_lifetime(State(cp): Cp) -> axum::Json<i64> {
    axum::Json(cp.snapshot().entity_configuration.lifetime)
}

/// Sets the Entity Configuration lifetime (integer seconds, raw or JSON).
#[utoipa::path(put, path = "/entity-configuration/lifetime", tag = "entity-configuration",
    request_body = i64, responses((status = 200, body = i64), (status = 400)))]
pub async fn put_lifetime(
    State(cp): Cp,
    actor: Actor,
    Text(body): Text,
) -> ApiResult<axum::Json<i64>> {
    let secs = integer(&body)?;
    if secs <= 0 {
        return Err(ApiError::BadRequest(
            "lifetime must be a positive number of seconds".into(),
        ));
    }
    let mut w = cp.write(actor.name()).await;
    let tx = w.tx().await?;
    settings::set(&cp.db, tx, settings::EC, "lifetime", &json!(secs)).await?;
    w.touch(Section::EntityConfiguration);
    w.commit().await?;
    Ok(axum::Json(secs))
}

/// Body of an authority hint.
#[derive(Debug, Deserialize, ToSchema)]
pub struct HintInput {
    /// The superior's entity identifier.
    pub entity_id: Option<String>,
    /// Operator's note.
    #[serde(default)]
    pub description: String,
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
    let e = h
        .entity_id
        .ok_or_else(|| ApiError::BadRequest("entity_id is required".into()))?;
    entity_id("entity_id", &e)?;
    if e == cp.settings.entity_id {
        return Err(ApiError::BadRequest(
            "an entity cannot be its own authority".into(),
        ));
    }
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

/// Body of an additional claim.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ClaimInput {
    /// Claim name.
    pub claim: Option<String>,
    /// Claim value (any JSON).
    #[schema(value_type = Object)]
    pub value: Value,
    /// List the claim in `crit`.
    #[serde(default)]
    pub crit: bool,
}

fn check_claim(c: &ClaimInput) -> ApiResult<String> {
    let name = c
        .claim
        .clone()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| ApiError::BadRequest("claim is required".into()))?;
    if STANDARD_CLAIMS.contains(&name.as_str())
        && !OPERATOR_STANDARD_CLAIMS.contains(&name.as_str())
    {
        return Err(ApiError::BadRequest(format!(
            "claim {name:?} is set by Pharos itself"
        )));
    }
    if c.crit && STANDARD_CLAIMS.contains(&name.as_str()) {
        return Err(ApiError::BadRequest(format!(
            "claim {name:?} is defined by the specification and cannot be listed in crit"
        )));
    }
    Ok(name)
}

async fn find_claim(cp: &ControlPlane, id: &str) -> ApiResult<ClaimRow> {
    repo::claims(&cp.db)
        .await?
        .into_iter()
        .find(|c| c.id.to_string() == id || c.claim == id)
        .ok_or_else(|| ApiError::NotFound(format!("unknown additional claim {id:?}")))
}

/// Lists the additional claims.
#[utoipa::path(get, path = "/entity-configuration/additional-claims", tag = "entity-configuration",
    responses((status = 200, body = [ClaimRow])))]
pub async fn list_claims(State(cp): Cp) -> ApiResult<axum::Json<Vec<ClaimRow>>> {
    Ok(axum::Json(repo::claims(&cp.db).await?))
}

/// Replaces all additional claims.
#[utoipa::path(put, path = "/entity-configuration/additional-claims", tag = "entity-configuration",
    request_body = [ClaimInput], responses((status = 200, body = [ClaimRow]), (status = 400), (status = 409)))]
pub async fn put_claims(
    State(cp): Cp,
    actor: Actor,
    Json(list): Json<Vec<ClaimInput>>,
) -> ApiResult<axum::Json<Vec<ClaimRow>>> {
    let mut names = std::collections::HashSet::new();
    for c in &list {
        let n = check_claim(c)?;
        if !names.insert(n.clone()) {
            return Err(ApiError::Conflict(format!("claim {n:?} given twice")));
        }
    }
    let mut w = cp.write(actor.name()).await;
    let now = cp.now();
    let tx = w.tx().await?;
    repo::delete_claims(&cp.db, tx, None).await?;
    for c in &list {
        let n = check_claim(c)?;
        repo::add_claim(&cp.db, tx, &n, &c.value, c.crit, now).await?;
    }
    w.touch(Section::EntityConfiguration);
    w.commit().await?;
    Ok(axum::Json(repo::claims(&cp.db).await?))
}

/// Adds one additional claim.
#[utoipa::path(post, path = "/entity-configuration/additional-claims", tag = "entity-configuration",
    request_body = ClaimInput, responses((status = 201, body = ClaimRow), (status = 400), (status = 409)))]
pub async fn add_claim(
    State(cp): Cp,
    actor: Actor,
    Json(c): Json<ClaimInput>,
) -> ApiResult<impl IntoResponse> {
    let n = check_claim(&c)?;
    let mut w = cp.write(actor.name()).await;
    if repo::claims(&cp.db).await?.iter().any(|x| x.claim == n) {
        return Err(ApiError::Conflict(format!("claim {n:?} already exists")));
    }
    let tx = w.tx().await?;
    let id = repo::add_claim(&cp.db, tx, &n, &c.value, c.crit, cp.now()).await?;
    w.touch(Section::EntityConfiguration);
    w.commit().await?;
    Ok((
        StatusCode::CREATED,
        axum::Json(find_claim(&cp, &id.to_string()).await?),
    ))
}

/// Shows one additional claim (by id or name).
#[utoipa::path(get, path = "/entity-configuration/additional-claims/{id}", tag = "entity-configuration",
    params(("id" = String, Path)), responses((status = 200, body = ClaimRow), (status = 404)))]
pub async fn get_claim_row(
    State(cp): Cp,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<ClaimRow>> {
    Ok(axum::Json(find_claim(&cp, &id).await?))
}

/// Changes one additional claim.
#[utoipa::path(put, path = "/entity-configuration/additional-claims/{id}", tag = "entity-configuration",
    params(("id" = String, Path)), request_body = ClaimInput,
    responses((status = 200, body = ClaimRow), (status = 400), (status = 404), (status = 409)))]
pub async fn put_claim_row(
    State(cp): Cp,
    actor: Actor,
    Path(id): Path<String>,
    Json(mut c): Json<ClaimInput>,
) -> ApiResult<axum::Json<ClaimRow>> {
    let mut w = cp.write(actor.name()).await;
    let old = find_claim(&cp, &id).await?;
    if c.claim.is_none() {
        c.claim = Some(old.claim.clone());
    }
    let n = check_claim(&c)?;
    if n != old.claim && repo::claims(&cp.db).await?.iter().any(|x| x.claim == n) {
        return Err(ApiError::Conflict(format!("claim {n:?} already exists")));
    }
    let tx = w.tx().await?;
    repo::update_claim(&cp.db, tx, old.id, &n, &c.value, c.crit, cp.now()).await?;
    w.touch(Section::EntityConfiguration);
    w.commit().await?;
    Ok(axum::Json(find_claim(&cp, &old.id.to_string()).await?))
}

/// Removes one additional claim.
#[utoipa::path(delete, path = "/entity-configuration/additional-claims/{id}", tag = "entity-configuration",
    params(("id" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete_claim_row(
    State(cp): Cp,
    actor: Actor,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    let old = find_claim(&cp, &id).await?;
    let tx = w.tx().await?;
    repo::delete_claims(&cp.db, tx, Some(old.id)).await?;
    w.touch(Section::EntityConfiguration);
    w.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}
