//! General (all-subordinates) settings that are not documents: the statement lifetime, the
//! critical policy operators, and the general additional claims.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use pharos_shared::policy::STANDARD_OPERATORS;
use serde::Serialize;

use super::Cp;
use super::claims::{ClaimInput, check_claim};
use crate::admin::actor::Actor;
use crate::admin::body::{Json, Text, integer};
use crate::admin::error::{ApiError, ApiResult};
use crate::control_plane::{ControlPlane, GeneralClaim, Section, Write, general_claims};
use crate::db::settings;

async fn store(
    cp: &ControlPlane,
    mut w: Write<'_>,
    name: &str,
    value: &impl Serialize,
) -> ApiResult<()> {
    let v = serde_json::to_value(value).map_err(|e| ApiError::Internal(e.to_string()))?;
    let tx = w.tx().await?;
    settings::set(&cp.db, tx, settings::SUBORDINATE, name, &v).await?;
    w.touch(Section::SubordinateGeneral);
    Ok(w.commit().await?)
}

/// The statement lifetime in effect, seconds (general setting, else the fetch endpoint's
/// `statement_lifetime`, else 600000).
#[utoipa::path(get, path = "/subordinates/lifetime", tag = "subordinates", responses((status = 200, body = i64)))]
pub async fn get_lifetime(State(cp): Cp) -> axum::Json<i64> {
    axum::Json(pharos_shared::subordinate_statement::lifetime(
        &cp.snapshot(),
    ))
}

/// Sets the statement lifetime (plain-text integer seconds).
#[utoipa::path(put, path = "/subordinates/lifetime", tag = "subordinates",
    request_body(content = String, content_type = "text/plain"),
    responses((status = 200, body = i64), (status = 400)))]
pub async fn put_lifetime(
    State(cp): Cp,
    actor: Actor,
    Text(body): Text,
) -> ApiResult<axum::Json<i64>> {
    let secs = integer(&body)?;
    if secs <= 0 {
        return Err(ApiError::BadRequest("lifetime must be positive".into()));
    }
    let w = cp.write(actor.name()).await;
    store(&cp, w, "lifetime", &secs).await?;
    Ok(axum::Json(secs))
}

fn crit_list(cp: &ControlPlane) -> Vec<String> {
    cp.snapshot()
        .subordinates
        .general
        .metadata_policy_crit
        .clone()
}

fn check_operator(op: &str) -> ApiResult<()> {
    if op.is_empty() || STANDARD_OPERATORS.contains(&op) {
        return Err(ApiError::BadRequest(format!(
            "{op:?} is not a non-standard operator name (metadata_policy_crit lists only those)"
        )));
    }
    Ok(())
}

/// The non-standard operators that are critical when a statement uses them.
#[utoipa::path(get, path = "/subordinates/metadata-policy-crit", tag = "subordinates",
    responses((status = 200, body = [String])))]
pub async fn get_crit(State(cp): Cp) -> axum::Json<Vec<String>> {
    axum::Json(crit_list(&cp))
}

/// Replaces the critical operators.
#[utoipa::path(put, path = "/subordinates/metadata-policy-crit", tag = "subordinates",
    request_body = [String], responses((status = 200, body = [String]), (status = 400)))]
pub async fn put_crit(
    State(cp): Cp,
    actor: Actor,
    Json(ops): Json<Vec<String>>,
) -> ApiResult<axum::Json<Vec<String>>> {
    let mut seen = std::collections::HashSet::new();
    for op in &ops {
        check_operator(op)?;
        if !seen.insert(op) {
            return Err(ApiError::BadRequest(format!("duplicate operator {op:?}")));
        }
    }
    let w = cp.write(actor.name()).await;
    store(&cp, w, "metadata_policy_crit", &ops).await?;
    Ok(axum::Json(ops))
}

/// Adds one critical operator (plain-text name); an existing one is a conflict.
#[utoipa::path(post, path = "/subordinates/metadata-policy-crit", tag = "subordinates",
    request_body(content = String, content_type = "text/plain"),
    responses((status = 201, body = [String]), (status = 400), (status = 409)))]
pub async fn add_crit(
    State(cp): Cp,
    actor: Actor,
    Text(body): Text,
) -> ApiResult<impl IntoResponse> {
    let op = body.trim_matches('"').to_string();
    check_operator(&op)?;
    let w = cp.write(actor.name()).await;
    let mut ops = crit_list(&cp);
    if ops.contains(&op) {
        return Err(ApiError::Conflict(format!(
            "operator {op:?} is already critical"
        )));
    }
    ops.push(op);
    store(&cp, w, "metadata_policy_crit", &ops).await?;
    Ok((StatusCode::CREATED, axum::Json(ops)))
}

/// Removes one critical operator.
#[utoipa::path(delete, path = "/subordinates/metadata-policy-crit/{operator}", tag = "subordinates",
    params(("operator" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete_crit(
    State(cp): Cp,
    actor: Actor,
    Path(op): Path<String>,
) -> ApiResult<StatusCode> {
    let w = cp.write(actor.name()).await;
    let mut ops = crit_list(&cp);
    let before = ops.len();
    ops.retain(|o| *o != op);
    if ops.len() == before {
        return Err(ApiError::NotFound(format!(
            "operator {op:?} is not critical"
        )));
    }
    store(&cp, w, "metadata_policy_crit", &ops).await?;
    Ok(StatusCode::NO_CONTENT)
}

fn find_general(list: &[GeneralClaim], key: &str) -> ApiResult<usize> {
    list.iter()
        .position(|c| c.id.to_string() == key || c.claim == key)
        .ok_or_else(|| ApiError::NotFound(format!("unknown additional claim {key:?}")))
}

fn renumber(list: &mut [GeneralClaim]) {
    for (i, c) in list.iter_mut().enumerate() {
        c.id = i as i64 + 1;
    }
}

/// Lists the general additional claims.
#[utoipa::path(get, path = "/subordinates/additional-claims", tag = "subordinates",
    responses((status = 200, body = [GeneralClaim])))]
pub async fn list_claims(State(cp): Cp) -> ApiResult<axum::Json<Vec<GeneralClaim>>> {
    Ok(axum::Json(general_claims(&cp.db).await?))
}

/// Replaces the general additional claims.
#[utoipa::path(put, path = "/subordinates/additional-claims", tag = "subordinates",
    request_body = [ClaimInput], responses((status = 200, body = [GeneralClaim]), (status = 400), (status = 409)))]
pub async fn put_claims(
    State(cp): Cp,
    actor: Actor,
    Json(input): Json<Vec<ClaimInput>>,
) -> ApiResult<axum::Json<Vec<GeneralClaim>>> {
    let mut list: Vec<GeneralClaim> = Vec::new();
    for c in &input {
        let claim = check_claim(c)?;
        if list.iter().any(|x| x.claim == claim) {
            return Err(ApiError::Conflict(format!("duplicate claim {claim:?}")));
        }
        list.push(GeneralClaim {
            id: 0,
            claim,
            value: c.value.clone(),
            crit: c.crit,
        });
    }
    renumber(&mut list);
    let w = cp.write(actor.name()).await;
    store(&cp, w, "additional_claims", &list).await?;
    Ok(axum::Json(list))
}

/// Adds one general additional claim.
#[utoipa::path(post, path = "/subordinates/additional-claims", tag = "subordinates",
    request_body = ClaimInput, responses((status = 201, body = GeneralClaim), (status = 400), (status = 409)))]
pub async fn add_claim(
    State(cp): Cp,
    actor: Actor,
    Json(c): Json<ClaimInput>,
) -> ApiResult<impl IntoResponse> {
    let claim = check_claim(&c)?;
    let w = cp.write(actor.name()).await;
    let mut list = general_claims(&cp.db).await?;
    if list.iter().any(|x| x.claim == claim) {
        return Err(ApiError::Conflict(format!(
            "claim {claim:?} already exists"
        )));
    }
    list.push(GeneralClaim {
        id: 0,
        claim,
        value: c.value,
        crit: c.crit,
    });
    renumber(&mut list);
    store(&cp, w, "additional_claims", &list).await?;
    let added = list
        .last()
        .cloned()
        .ok_or_else(|| ApiError::Internal("empty list".into()))?;
    Ok((StatusCode::CREATED, axum::Json(added)))
}

/// Shows one general additional claim (by id or claim name).
#[utoipa::path(get, path = "/subordinates/additional-claims/{claimID}", tag = "subordinates",
    params(("claimID" = String, Path)), responses((status = 200, body = GeneralClaim), (status = 404)))]
pub async fn get_claim(
    State(cp): Cp,
    Path(key): Path<String>,
) -> ApiResult<axum::Json<GeneralClaim>> {
    let list = general_claims(&cp.db).await?;
    Ok(axum::Json(list[find_general(&list, &key)?].clone()))
}

/// Updates one general additional claim.
#[utoipa::path(put, path = "/subordinates/additional-claims/{claimID}", tag = "subordinates",
    params(("claimID" = String, Path)), request_body = ClaimInput,
    responses((status = 200, body = GeneralClaim), (status = 400), (status = 404), (status = 409)))]
pub async fn put_claim(
    State(cp): Cp,
    actor: Actor,
    Path(key): Path<String>,
    Json(mut c): Json<ClaimInput>,
) -> ApiResult<axum::Json<GeneralClaim>> {
    let w = cp.write(actor.name()).await;
    let mut list = general_claims(&cp.db).await?;
    let i = find_general(&list, &key)?;
    c.claim = c.claim.or(Some(list[i].claim.clone()));
    let claim = check_claim(&c)?;
    if list
        .iter()
        .enumerate()
        .any(|(j, x)| j != i && x.claim == claim)
    {
        return Err(ApiError::Conflict(format!(
            "claim {claim:?} already exists"
        )));
    }
    list[i] = GeneralClaim {
        id: list[i].id,
        claim,
        value: c.value,
        crit: c.crit,
    };
    store(&cp, w, "additional_claims", &list).await?;
    Ok(axum::Json(list[i].clone()))
}

/// Removes one general additional claim (the others are renumbered 1..n).
#[utoipa::path(delete, path = "/subordinates/additional-claims/{claimID}", tag = "subordinates",
    params(("claimID" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete_claim(
    State(cp): Cp,
    actor: Actor,
    Path(key): Path<String>,
) -> ApiResult<StatusCode> {
    let w = cp.write(actor.name()).await;
    let mut list = general_claims(&cp.db).await?;
    let i = find_general(&list, &key)?;
    list.remove(i);
    renumber(&mut list);
    store(&cp, w, "additional_claims", &list).await?;
    Ok(StatusCode::NO_CONTENT)
}
