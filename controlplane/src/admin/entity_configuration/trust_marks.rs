//! `/entity-configuration/trust-marks`: the trust marks we hold, published in our Entity
//! Configuration's `trust_marks` (one row per `trust_mark_type`). Three kinds of row:
//!
//! 1. external — `trust_mark_issuer`: obtained from that issuer's trust mark endpoint by the
//!    refresher (`refresh` forced on); published once obtained;
//! 2. given — `trust_mark`: a JWT checked now (typ, `sub` = us, type, not expired) and
//!    published as is; with `refresh: true` renewed like 1 from its `iss`;
//! 3. self-issued — `self_issuance_spec`: signed by us now and renewed (`refresh` forced on).
//!
//! Every change wakes the refresher (`crate::refresh::held_marks`), which restarts the row's
//! schedule. These rows are ours, not a subordinate's: nothing goes to subordinate history
//! (the common request layer logs each write with its actor).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use pharos_shared::trust_mark_holder::{
    self as holder, DEFAULT_GRACE_PERIOD, DEFAULT_MIN_LIFETIME, DEFAULT_RATE_LIMIT, SelfIssuance,
};
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::Cp;
use crate::admin::actor::Actor;
use crate::admin::error::{ApiError, ApiResult};
use crate::admin::extract::{Json, entity_id};
use crate::control_plane::{ControlPlane, Section};
use crate::db::published_marks::{self as repo, PublishedRow, PublishedWrite};
use crate::refresh::held_marks::self_issue;

/// Body of a held trust mark (lighthouse's shape). Exactly one of `trust_mark_issuer`,
/// `trust_mark` and `self_issuance_spec` decides the kind (a given `trust_mark` may name its
/// issuer too, which must then be its `iss`).
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct HeldInput {
    /// The type (required, unique).
    pub trust_mark_type: Option<String>,
    /// The issuer to obtain the mark from.
    pub trust_mark_issuer: Option<String>,
    /// A JWT to publish.
    pub trust_mark: Option<String>,
    /// Renew a given JWT from its issuer (always on for the other kinds).
    pub refresh: Option<bool>,
    /// Seconds a newly obtained mark must at least live (default 10).
    pub min_lifetime: Option<i64>,
    /// Renew when the mark has this many seconds left (default 3600).
    pub refresh_grace_period: Option<i64>,
    /// Shortest spacing of two renewal attempts, seconds (default 60).
    pub refresh_rate_limit: Option<i64>,
    /// `{lifetime, ref, logo_uri, additional_claims}`: issue the mark to ourselves.
    #[schema(value_type = Option<Object>)]
    pub self_issuance_spec: Option<Value>,
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError::BadRequest(msg.into())
}

fn non_negative(name: &str, v: Option<i64>, default: i64) -> ApiResult<i64> {
    match v {
        Some(n) if n < 0 => Err(bad(format!("{name} must not be negative"))),
        Some(n) => Ok(n),
        None => Ok(default),
    }
}

/// Checks `h` and works out what to store; `old` is the row a PUT replaces (an external
/// row keeps its obtained mark while its type and issuer stay). Signs a self-issued mark.
async fn prepare(
    cp: &ControlPlane,
    h: HeldInput,
    old: Option<&PublishedRow>,
) -> ApiResult<PublishedWrite> {
    let now = cp.now();
    let (mut w, spec) = h.plan(&cp.settings.entity_id, now, old)?;
    if let Some(spec) = spec {
        w.trust_mark = Some(self_issue(cp, &w.trust_mark_type, &spec, now).await?);
    }
    Ok(w)
}

impl HeldInput {
    /// Checks the body as the routes of held marks do (`us`: our own entity identifier, `old`:
    /// the row a PUT replaces) and works out what to store; a self-issued mark's spec is
    /// returned to be signed (the stored `trust_mark` is then still to be filled in).
    pub fn plan(
        self,
        us: &str,
        now: i64,
        old: Option<&PublishedRow>,
    ) -> ApiResult<(PublishedWrite, Option<SelfIssuance>)> {
        let h = self;
        let tm_type = h
            .trust_mark_type
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| bad("trust_mark_type is required"))?;
        let min_lifetime = non_negative("min_lifetime", h.min_lifetime, DEFAULT_MIN_LIFETIME)?;
        let mut w = PublishedWrite {
            trust_mark_type: tm_type.clone(),
            trust_mark_issuer: None,
            trust_mark: None,
            refresh: true,
            min_lifetime,
            refresh_grace_period: non_negative(
                "refresh_grace_period",
                h.refresh_grace_period,
                DEFAULT_GRACE_PERIOD,
            )?,
            refresh_rate_limit: non_negative(
                "refresh_rate_limit",
                h.refresh_rate_limit,
                DEFAULT_RATE_LIMIT,
            )?,
            self_issuance_spec: None,
        };
        let issuer = h.trust_mark_issuer.filter(|i| !i.is_empty());
        match (h.self_issuance_spec.filter(|s| !s.is_null()), h.trust_mark) {
            (Some(_), Some(_)) => Err(bad("self_issuance_spec and trust_mark exclude each other")),
            (Some(spec), None) => {
                let spec: SelfIssuance = serde_json::from_value(spec)
                    .map_err(|e| bad(format!("invalid self_issuance_spec: {e}")))?;
                spec.check().map_err(bad)?;
                if spec.lifetime > 0 && spec.lifetime <= min_lifetime {
                    return Err(bad(
                        "self_issuance_spec.lifetime must be longer than min_lifetime",
                    ));
                }
                if issuer.as_deref().is_some_and(|i| i != us) {
                    return Err(bad("a self-issued mark's trust_mark_issuer is this entity"));
                }
                w.trust_mark_issuer = Some(us.to_owned());
                w.self_issuance_spec = serde_json::to_value(&spec).ok();
                Ok((w, Some(spec)))
            }
            (None, Some(jwt)) => {
                let held = holder::check(jwt.trim(), us, &tm_type, None, now, 0).map_err(bad)?;
                if issuer.as_deref().is_some_and(|i| i != held.iss) {
                    return Err(bad(format!(
                        "trust_mark_issuer differs from the trust_mark's iss {:?}",
                        held.iss
                    )));
                }
                w.trust_mark = Some(jwt.trim().to_owned());
                w.trust_mark_issuer = Some(held.iss);
                w.refresh = h.refresh.unwrap_or(false);
                Ok((w, None))
            }
            (None, None) => {
                let issuer = issuer.ok_or_else(|| {
                    bad("one of trust_mark_issuer, trust_mark or self_issuance_spec is required")
                })?;
                entity_id("trust_mark_issuer", &issuer)?;
                w.trust_mark = old
                    .filter(|o| o.trust_mark_type == tm_type && o.self_issuance_spec.is_none())
                    .filter(|o| o.trust_mark_issuer.as_deref() == Some(issuer.as_str()))
                    .and_then(|o| o.trust_mark.clone());
                w.trust_mark_issuer = Some(issuer);
                Ok((w, None))
            }
        }
    }
}

async fn find(cp: &ControlPlane, id: &str) -> ApiResult<PublishedRow> {
    repo::find(&cp.db, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no held trust mark {id:?}")))
}

/// Lists the trust marks we hold.
#[utoipa::path(get, path = "/entity-configuration/trust-marks", tag = "entity-configuration",
    responses((status = 200, body = [PublishedRow])))]
pub async fn list_held(State(cp): Cp) -> ApiResult<axum::Json<Vec<PublishedRow>>> {
    Ok(axum::Json(repo::all(&cp.db).await?))
}

/// Adds a trust mark we hold (one per `trust_mark_type`).
#[utoipa::path(post, path = "/entity-configuration/trust-marks", tag = "entity-configuration",
    request_body = HeldInput,
    responses((status = 201, body = PublishedRow), (status = 400), (status = 409)))]
pub async fn add_held(
    State(cp): Cp,
    actor: Actor,
    Json(h): Json<HeldInput>,
) -> ApiResult<impl IntoResponse> {
    let mut w = cp.write(actor.name()).await;
    let input = prepare(&cp, h, None).await?;
    if repo::find(&cp.db, &input.trust_mark_type).await?.is_some() {
        return Err(ApiError::Conflict(format!(
            "a trust mark of type {:?} is already held",
            input.trust_mark_type
        )));
    }
    let tx = w.tx().await?;
    let id = repo::insert(&cp.db, tx, &input, cp.now()).await?;
    w.touch(Section::TrustMarks);
    w.commit().await?;
    cp.refresh_events.notify_one();
    Ok((
        StatusCode::CREATED,
        axum::Json(find(&cp, &id.to_string()).await?),
    ))
}

/// Shows one held trust mark (by id or URL-encoded type).
#[utoipa::path(get, path = "/entity-configuration/trust-marks/{id}", tag = "entity-configuration",
    params(("id" = String, Path)), responses((status = 200, body = PublishedRow), (status = 404)))]
pub async fn get_held(
    State(cp): Cp,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<PublishedRow>> {
    Ok(axum::Json(find(&cp, &id).await?))
}

/// Replaces one held trust mark.
#[utoipa::path(put, path = "/entity-configuration/trust-marks/{id}", tag = "entity-configuration",
    params(("id" = String, Path)), request_body = HeldInput,
    responses((status = 200, body = PublishedRow), (status = 400), (status = 404), (status = 409)))]
pub async fn put_held(
    State(cp): Cp,
    actor: Actor,
    Path(id): Path<String>,
    Json(mut h): Json<HeldInput>,
) -> ApiResult<axum::Json<PublishedRow>> {
    let mut w = cp.write(actor.name()).await;
    let old = find(&cp, &id).await?;
    if h.trust_mark_type.is_none() {
        h.trust_mark_type = Some(old.trust_mark_type.clone());
    }
    let input = prepare(&cp, h, Some(&old)).await?;
    if input.trust_mark_type != old.trust_mark_type
        && repo::find(&cp.db, &input.trust_mark_type).await?.is_some()
    {
        return Err(ApiError::Conflict(format!(
            "a trust mark of type {:?} is already held",
            input.trust_mark_type
        )));
    }
    let tx = w.tx().await?;
    repo::update(&cp.db, tx, old.id, &input, cp.now()).await?;
    w.touch(Section::TrustMarks);
    w.commit().await?;
    cp.refresh_events.notify_one();
    Ok(axum::Json(find(&cp, &old.id.to_string()).await?))
}

/// Stops holding (and publishing) one trust mark.
#[utoipa::path(delete, path = "/entity-configuration/trust-marks/{id}", tag = "entity-configuration",
    params(("id" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete_held(
    State(cp): Cp,
    actor: Actor,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    let old = find(&cp, &id).await?;
    let tx = w.tx().await?;
    repo::delete(&cp.db, tx, old.id).await?;
    w.touch(Section::TrustMarks);
    w.commit().await?;
    cp.refresh_events.notify_one();
    Ok(StatusCode::NO_CONTENT)
}
