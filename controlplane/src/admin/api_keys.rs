//! `/entity-configuration/keys`: API-managed public keys. Their private keys are held
//! elsewhere; Pharos only publishes them in its `jwks` (while valid) and in its historical keys
//! (once expired or revoked), e.g. to announce a key before an external signer starts using it.
//!
//! Unlike lighthouse 0.22 (whose rotation writes to a key store named differently from the one
//! API keys live in), rotating an API-managed key reads and writes the same key set, so the old
//! key is found and the new one is published.

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use pharos_shared::jose::{Jwk, thumbprint};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::extract::Json;
use super::kms::revoke_params;
use crate::admin::actor::Actor;
use crate::admin::error::{ApiError, ApiResult};
use crate::control_plane::{ControlPlane, Section, Write};
use crate::db::keys::{self as repo, API, KeyRow};
use crate::keys::rotation;

type Cp = State<Arc<ControlPlane>>;

/// This module's routes, merged by [`crate::admin::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new()
        .routes(routes!(list, add))
        .routes(routes!(update, rotate, remove))
}

/// JWK members that would make a "public" key private.
const PRIVATE_MEMBERS: [&str; 7] = ["d", "p", "q", "dp", "dq", "qi", "k"];

/// One API-managed key as shown.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyEntry {
    kid: String,
    #[schema(value_type = Object)]
    key: Jwk,
    iat: i64,
    nbf: i64,
    exp: Option<i64>,
    revoked_at: Option<i64>,
    reason: Option<String>,
}

impl From<&KeyRow> for KeyEntry {
    fn from(r: &KeyRow) -> Self {
        Self {
            kid: r.kid.clone(),
            key: r.public_jwk.clone(),
            iat: r.iat,
            nbf: r.nbf,
            exp: r.exp,
            revoked_at: r.revoked_at,
            reason: r.reason.clone(),
        }
    }
}

/// A key to add.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewKey {
    /// Defaults to the key's `kid`, else its RFC 7638 thumbprint.
    kid: Option<String>,
    /// The public JWK.
    #[schema(value_type = Object)]
    key: Jwk,
    iat: Option<i64>,
    nbf: Option<i64>,
    exp: Option<i64>,
}

/// The new key of a rotation.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RotateKey {
    /// The new public JWK.
    #[schema(value_type = Object)]
    key: Jwk,
    iat: Option<i64>,
    /// When the new key takes over (default now).
    nbf: Option<i64>,
    exp: Option<i64>,
    /// End of the old key (default nbf + rotation overlap).
    old_key_exp: Option<i64>,
}

/// An expiry change.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExpUpdate {
    exp: Option<i64>,
}

impl NewKey {
    /// Checks the body of `POST /entity-configuration/keys` (times default to `now`): the row
    /// to store.
    pub fn into_row(self, now: i64) -> ApiResult<KeyRow> {
        let (iat, nbf) = (self.iat.unwrap_or(now), self.nbf.unwrap_or(now));
        row(self.kid, self.key, iat, nbf, self.exp)
    }
}

impl RotateKey {
    /// Checks the body of a rotation (times default to `now`): the new key's row.
    pub fn new_row(&self, now: i64) -> ApiResult<KeyRow> {
        let (iat, nbf) = (self.iat.unwrap_or(now), self.nbf.unwrap_or(now));
        row(None, self.key.clone(), iat, nbf, self.exp)
    }
}

fn row(
    kid: Option<String>,
    mut key: Jwk,
    iat: i64,
    nbf: i64,
    exp: Option<i64>,
) -> ApiResult<KeyRow> {
    match key.get("kty").and_then(Value::as_str) {
        Some("RSA" | "EC" | "OKP") => {}
        Some(other) => {
            return Err(ApiError::BadRequest(format!(
                "key must be a public signing key (kty RSA, EC or OKP), not kty {other:?}"
            )));
        }
        None => return Err(ApiError::BadRequest("key must be a JWK with kty".into())),
    }
    if let Some(m) = PRIVATE_MEMBERS.iter().find(|m| key.contains_key(**m)) {
        return Err(ApiError::BadRequest(format!(
            "key must be a public key (it has the private member {m:?})"
        )));
    }
    // The thumbprint needs the key's required members: a key without them is the operator's
    // mistake (400), not ours, also when a kid is given.
    let print = thumbprint(&key)
        .map_err(|e| ApiError::BadRequest(format!("key is not a usable public JWK: {e}")))?;
    let own = key.get("kid").and_then(Value::as_str).map(String::from);
    let kid = match (kid, own) {
        (Some(a), Some(b)) if a != b => {
            return Err(ApiError::BadRequest(format!(
                "kid {a:?} does not match the key's kid {b:?}"
            )));
        }
        (Some(k), _) | (None, Some(k)) => k,
        (None, None) => print,
    };
    key.insert("kid".into(), json!(kid));
    let alg = key
        .get("alg")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    Ok(KeyRow {
        kid,
        key_set: API.into(),
        alg,
        public_jwk: key,
        private_pem: None,
        iat,
        nbf,
        exp,
        revoked_at: None,
        reason: None,
    })
}

async fn find(cp: &ControlPlane, kid: &str) -> ApiResult<KeyRow> {
    repo::list(&cp.db)
        .await?
        .into_iter()
        .find(|k| k.key_set == API && k.kid == kid)
        .ok_or_else(|| ApiError::NotFound(format!("no API-managed key {kid:?}")))
}

/// Commits and republishes, then lets the key task plan for the new key's transitions.
async fn publish(cp: &ControlPlane, mut w: Write<'_>) -> ApiResult<()> {
    w.touch(Section::Keys);
    w.commit().await?;
    cp.key_events.notify_one();
    Ok(())
}

/// Lists every API-managed key, including expired and revoked ones.
#[utoipa::path(get, path = "/entity-configuration/keys", tag = "keys",
    responses((status = 200, body = [KeyEntry])))]
pub async fn list(State(cp): Cp) -> ApiResult<axum::Json<Vec<KeyEntry>>> {
    let rows = repo::list(&cp.db).await?;
    Ok(axum::Json(
        rows.iter()
            .filter(|k| k.key_set == API)
            .map(KeyEntry::from)
            .collect(),
    ))
}

/// Adds a public key to publish.
#[utoipa::path(post, path = "/entity-configuration/keys", tag = "keys", request_body = NewKey,
    responses((status = 201, body = KeyEntry), (status = 400), (status = 409)))]
pub async fn add(
    State(cp): Cp,
    actor: Actor,
    Json(b): Json<NewKey>,
) -> ApiResult<impl IntoResponse> {
    let r = b.into_row(cp.now())?;
    let mut w = cp.write(actor.name()).await;
    let tx = w.tx().await?;
    repo::insert(&cp.db, tx, &r).await?;
    publish(&cp, w).await?;
    Ok((StatusCode::CREATED, axum::Json(KeyEntry::from(&r))))
}

/// Changes the expiry of an API-managed key.
#[utoipa::path(put, path = "/entity-configuration/keys/{kid}", tag = "keys", request_body = ExpUpdate,
    params(("kid" = String, Path)), responses((status = 200, body = KeyEntry), (status = 404)))]
pub async fn update(
    State(cp): Cp,
    actor: Actor,
    Path(kid): Path<String>,
    Json(b): Json<ExpUpdate>,
) -> ApiResult<axum::Json<KeyEntry>> {
    let mut w = cp.write(actor.name()).await;
    let mut r = find(&cp, &kid).await?;
    let tx = w.tx().await?;
    repo::set_exp(&cp.db, tx, &kid, b.exp).await?;
    publish(&cp, w).await?;
    r.exp = b.exp;
    Ok(axum::Json(KeyEntry::from(&r)))
}

/// Rotates an API-managed key: adds the new key and ends the old one at `old_key_exp`
/// (default: the new key's `nbf` + the rotation overlap).
#[utoipa::path(post, path = "/entity-configuration/keys/{kid}", tag = "keys", request_body = RotateKey,
    params(("kid" = String, Path)), responses((status = 201, body = KeyEntry), (status = 400), (status = 404)))]
pub async fn rotate(
    State(cp): Cp,
    actor: Actor,
    Path(kid): Path<String>,
    Json(b): Json<RotateKey>,
) -> ApiResult<impl IntoResponse> {
    let now = cp.now();
    let nbf = b.nbf.unwrap_or(now);
    let new = b.new_row(now)?;
    let overlap = rotation::load(&cp.db).await?.overlap;
    let mut w = cp.write(actor.name()).await;
    let old = find(&cp, &kid).await?;
    let old_exp = b.old_key_exp.unwrap_or(nbf + overlap);
    let tx = w.tx().await?;
    repo::insert(&cp.db, tx, &new).await?;
    repo::set_exp(&cp.db, tx, &old.kid, Some(old_exp)).await?;
    publish(&cp, w).await?;
    Ok((StatusCode::CREATED, axum::Json(KeyEntry::from(&new))))
}

/// Revokes (`revoke=true`, kept for historical keys) or deletes an API-managed key; always 204.
#[utoipa::path(delete, path = "/entity-configuration/keys/{kid}", tag = "keys",
    params(("kid" = String, Path), ("revoke" = Option<bool>, Query), ("reason" = Option<String>, Query)),
    responses((status = 204), (status = 400)))]
pub async fn remove(
    State(cp): Cp,
    actor: Actor,
    Path(kid): Path<String>,
    RawQuery(q): RawQuery,
) -> ApiResult<StatusCode> {
    let (revoke, reason) = revoke_params(q.as_deref())?;
    let mut w = cp.write(actor.name()).await;
    if find(&cp, &kid).await.is_err() {
        return Ok(StatusCode::NO_CONTENT);
    }
    let tx = w.tx().await?;
    if revoke {
        repo::revoke(&cp.db, tx, &kid, cp.now(), reason.as_deref()).await?;
    } else {
        repo::delete(&cp.db, tx, &kid).await?;
    }
    publish(&cp, w).await?;
    Ok(StatusCode::NO_CONTENT)
}
