//! `/kms` and `/keys/rotation`: the signing configuration (algorithm, RSA key size, rotation
//! policy) and immediate rotation. Paths and bodies follow the reference service so that
//! operators' scripts keep working; `/keys/rotation` is the interface's name of `/kms/rotation`.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use pharos_shared::config::Duration;
use pharos_shared::jose::Algorithm;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::extract::{Json, Text, integer};
use crate::admin::actor::Actor;
use crate::admin::error::{ApiError, ApiResult};
use crate::control_plane::key_lifecycle::check_reason;
use crate::control_plane::{ControlPlane, Write};
use crate::db::settings;
use crate::keys::rotation::{self, RotationSettings};
use crate::keys::{current_alg, pending_alg, rsa_key_len};

type Cp = State<Arc<ControlPlane>>;

/// This module's routes, merged by [`crate::admin::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new()
        .routes(routes!(get_kms))
        .routes(routes!(put_alg))
        .routes(routes!(put_rsa_key_len))
        .routes(routes!(rotate))
        .routes(routes!(get_rotation, put_rotation, patch_rotation))
        .routes(routes!(
            get_kms_rotation,
            put_kms_rotation,
            patch_kms_rotation
        ))
}

/// The signing configuration as the reference service shows it (durations in seconds).
async fn info(cp: &ControlPlane) -> ApiResult<Value> {
    let mut v = json!({
        "kms": cp.kms.name(),
        "alg": current_alg(&cp.db, &cp.settings).await?.as_str(),
        "rsa_key_len": rsa_key_len(&cp.db, &cp.settings).await?,
        "rotation": rotation::load(&cp.db).await?,
        // What `PUT /kms/alg` accepts, so a client (the console) offers exactly these.
        "algorithms": Algorithm::ALL.iter().map(|a| a.as_str()).collect::<Vec<_>>(),
    });
    if let Some(p) = pending_alg(&cp.db).await? {
        v["pending_alg"] = json!(p.alg.as_str());
        v["alg_change_at"] = json!(p.at);
    }
    Ok(v)
}

/// Shows the KMS type, algorithm (and a scheduled change), RSA key size and rotation policy.
#[utoipa::path(get, path = "/kms", tag = "keys", responses((status = 200, body = Object)))]
pub async fn get_kms(State(cp): Cp) -> ApiResult<axum::Json<Value>> {
    Ok(axum::Json(info(&cp).await?))
}

/// Schedules a change of the signing algorithm (raw name, e.g. `ES384`): a key of the new
/// algorithm is announced now and signs from now + the key announcement lead time.
#[utoipa::path(put, path = "/kms/alg", tag = "keys", request_body(content = String, content_type = "text/plain"),
    responses((status = 200, body = Object), (status = 400)))]
pub async fn put_alg(
    State(cp): Cp,
    actor: Actor,
    Text(body): Text,
) -> ApiResult<axum::Json<Value>> {
    let name = body.trim_matches('"');
    let alg: Algorithm = name.parse().map_err(|_| {
        ApiError::BadRequest(format!(
            "unsupported algorithm {name:?}; use one of {}",
            Algorithm::names(" ")
        ))
    })?;
    cp.change_alg(alg, actor.name()).await?;
    Ok(axum::Json(info(&cp).await?))
}

/// Sets the modulus size of RSA keys generated from now on (at least 2048).
#[utoipa::path(put, path = "/kms/rsa-key-len", tag = "keys", request_body(content = String, content_type = "text/plain"),
    responses((status = 200, body = Object), (status = 400)))]
pub async fn put_rsa_key_len(
    State(cp): Cp,
    actor: Actor,
    Text(body): Text,
) -> ApiResult<axum::Json<Value>> {
    let n = integer(&body)?;
    if !(2048..=16384).contains(&n) {
        return Err(ApiError::BadRequest(
            "rsa key length must be between 2048 and 16384".into(),
        ));
    }
    let mut w = cp.write(actor.name()).await;
    let tx = w.tx().await?;
    settings::set(&cp.db, tx, settings::SIGNING, "rsa_key_len", &json!(n)).await?;
    w.commit().await?;
    Ok(axum::Json(info(&cp).await?))
}

/// Rotates every signing key now (`revoke=true` revokes the old ones, with `reason`
/// `unspecified`, `compromised` or `superseded`).
#[utoipa::path(post, path = "/kms/rotate", tag = "keys",
    params(("revoke" = Option<bool>, Query), ("reason" = Option<String>, Query)),
    responses((status = 202, body = Object), (status = 400)))]
pub async fn rotate(
    State(cp): Cp,
    actor: Actor,
    RawQuery(q): RawQuery,
) -> ApiResult<impl IntoResponse> {
    let (revoke, reason) = revoke_params(q.as_deref())?;
    cp.rotate_now(revoke, reason.as_deref(), actor.name())
        .await?;
    Ok((StatusCode::ACCEPTED, axum::Json(info(&cp).await?)))
}

/// Reads `revoke` and `reason` from a query string.
pub fn revoke_params(q: Option<&str>) -> ApiResult<(bool, Option<String>)> {
    let (mut revoke, mut reason) = (false, None);
    for (k, v) in url::form_urlencoded::parse(q.unwrap_or_default().as_bytes()) {
        match &*k {
            "revoke" => {
                revoke = match &*v {
                    "true" | "1" => true,
                    "false" | "0" | "" => false,
                    other => {
                        return Err(ApiError::BadRequest(format!(
                            "revoke must be true or false, got {other:?}"
                        )));
                    }
                }
            }
            "reason" if !v.is_empty() => reason = Some(v.into_owned()),
            _ => {}
        }
    }
    check_reason(reason.as_deref())?;
    Ok((revoke, reason))
}

/// A rotation policy as sent: durations as seconds or strings such as `"168h"`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RotationInput {
    /// Whether keys rotate automatically.
    enabled: Option<bool>,
    /// Key lifetime.
    #[schema(value_type = Option<String>)]
    interval: Option<Duration>,
    /// Verification period of the old key after a switch.
    #[schema(value_type = Option<String>)]
    overlap: Option<Duration>,
    /// Fixed announcement lead time (0 = derived).
    #[schema(value_type = Option<String>)]
    key_announcement_lead_time: Option<Duration>,
    /// Lead time as a multiple of the Entity Configuration lifetime (0 = not used).
    key_announcement_lead_time_ec_multiplier: Option<f64>,
}

fn secs(d: Duration) -> ApiResult<i64> {
    i64::try_from(d.get().as_secs()).map_err(|_| ApiError::BadRequest("duration too large".into()))
}

impl RotationInput {
    fn apply_to(self, mut s: RotationSettings) -> ApiResult<RotationSettings> {
        if let Some(v) = self.enabled {
            s.enabled = v;
        }
        if let Some(v) = self.interval {
            s.interval = secs(v)?;
        }
        if let Some(v) = self.overlap {
            s.overlap = secs(v)?;
        }
        if let Some(v) = self.key_announcement_lead_time {
            s.key_announcement_lead_time = secs(v)?;
        }
        if let Some(v) = self.key_announcement_lead_time_ec_multiplier {
            s.key_announcement_lead_time_ec_multiplier = v;
        }
        s.validate()?;
        Ok(s)
    }
}

/// Stores the policy, then lets the key planner act on it at once (after the commit: the
/// planner is a write of its own).
async fn save(
    cp: &ControlPlane,
    mut w: Write<'_>,
    s: RotationSettings,
) -> ApiResult<axum::Json<RotationSettings>> {
    let tx = w.tx().await?;
    rotation::store(&cp.db, tx, &s).await?;
    w.commit().await?;
    // Enabling (or changing) the policy may make a key due now; plan at once.
    let lifetime = cp.snapshot().entity_configuration.lifetime;
    rotation::resolve_lead_time(&s, lifetime);
    cp.rotate_keys(cp.now()).await?;
    cp.key_events.notify_one();
    Ok(axum::Json(s))
}

async fn get_policy(cp: &ControlPlane) -> ApiResult<axum::Json<RotationSettings>> {
    Ok(axum::Json(rotation::load(&cp.db).await?))
}

async fn put_policy(
    cp: &ControlPlane,
    actor: &Actor,
    body: RotationInput,
) -> ApiResult<axum::Json<RotationSettings>> {
    let w = cp.write(actor.name()).await;
    save(cp, w, body.apply_to(RotationSettings::default())?).await
}

async fn patch_policy(
    cp: &ControlPlane,
    actor: &Actor,
    body: RotationInput,
) -> ApiResult<axum::Json<RotationSettings>> {
    // Read under the writer lock: two concurrent patches must not both start from one state.
    let w = cp.write(actor.name()).await;
    let current = rotation::load(&cp.db).await?;
    save(cp, w, body.apply_to(current)?).await
}

macro_rules! rotation_routes {
    ($path:literal, $get:ident, $put:ident, $patch:ident) => {
        /// Shows the key rotation policy (durations in seconds).
        #[utoipa::path(get, path = $path, tag = "keys", responses((status = 200, body = RotationSettings)))]
        pub async fn $get(State(cp): Cp) -> ApiResult<axum::Json<RotationSettings>> {
            get_policy(&cp).await
        }

        /// Replaces the key rotation policy (omitted fields take their defaults).
        #[utoipa::path(put, path = $path, tag = "keys", request_body = RotationInput,
            responses((status = 200, body = RotationSettings), (status = 400)))]
        pub async fn $put(State(cp): Cp, actor: Actor, Json(b): Json<RotationInput>) -> ApiResult<axum::Json<RotationSettings>> {
            put_policy(&cp, &actor, b).await
        }

        /// Changes some fields of the key rotation policy.
        #[utoipa::path(patch, path = $path, tag = "keys", request_body = RotationInput,
            responses((status = 200, body = RotationSettings), (status = 400)))]
        pub async fn $patch(State(cp): Cp, actor: Actor, Json(b): Json<RotationInput>) -> ApiResult<axum::Json<RotationSettings>> {
            patch_policy(&cp, &actor, b).await
        }
    };
}

rotation_routes!("/keys/rotation", get_rotation, put_rotation, patch_rotation);
rotation_routes!(
    "/kms/rotation",
    get_kms_rotation,
    put_kms_rotation,
    patch_kms_rotation
);
