//! `/entity-configuration/superiors`: whether each superior (authority hint) publishes our
//! keys in its Subordinate Statement about us ([`pharos_shared::superior_keys`]) — the key
//! calendar's alarm when a rotation left a dropped key published above us, or a new key not
//! yet. One Entity Configuration and one statement per hint, through the outbound client
//! (its timeouts, size limit and private-address policy), the hints at most
//! [`PARALLEL`] at a time.

use std::sync::Arc;

use axum::extract::State;
use futures_util::StreamExt;
use pharos_shared::chain::Fetcher;
use pharos_shared::jose::{self, Jwks};
use pharos_shared::media_types::ENTITY_STATEMENT_TYP;
use pharos_shared::superior_keys::{self, SuperiorKeys};
use pharos_shared::trust_mark::self_signed_keys;
use serde_json::Value;

use crate::admin::error::ApiResult;
use crate::control_plane::ControlPlane;

/// Superiors asked at once.
pub const PARALLEL: usize = 4;

/// This module's routes, merged by [`crate::admin::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new().routes(routes!(show))
}

/// For each authority hint: its Subordinate Statement about this entity, fetched and verified
/// with the superior's own keys, compared with the keys this entity publishes: `in_step`,
/// `stale` (it still publishes a key dropped here), `missing` (it does not publish a key
/// published here yet), `stale_and_missing`, or `unreachable` with the reason.
#[utoipa::path(get, path = "/entity-configuration/superiors", tag = "entity-configuration",
    responses((status = 200, body = Vec<Object>)))]
pub async fn show(State(cp): State<Arc<ControlPlane>>) -> ApiResult<axum::Json<Vec<SuperiorKeys>>> {
    let snap = cp.snapshot();
    let ours = Arc::new(snap.keys.jwks());
    let us = snap.entity_id.clone();
    let now = cp.now();
    let fetcher = cp.outbound.clone();
    // Owned values in each future: the handler's future must not borrow across them.
    let answers: Vec<SuperiorKeys> =
        futures_util::stream::iter(snap.entity_configuration.authority_hints.clone())
            .map(move |sup| {
                let (ours, us, fetcher) = (ours.clone(), us.clone(), fetcher.clone());
                async move {
                    match statement_about(&fetcher, &sup, &us, now).await {
                        Ok(claims) => superior_keys::compare(&sup, &ours, &claims),
                        Err(e) => superior_keys::unreachable(&sup, e),
                    }
                }
            })
            .buffered(PARALLEL)
            .collect()
            .await;
    Ok(axum::Json(answers))
}

/// The verified claims of `superior`'s statement about `us`.
async fn statement_about<F: Fetcher>(
    fetcher: &F,
    superior: &str,
    us: &str,
    now: i64,
) -> Result<serde_json::Map<String, Value>, String> {
    let ec = fetcher
        .entity_configuration(superior)
        .await
        .map_err(|e| format!("its Entity Configuration: {e}"))?;
    let keys: Jwks = self_signed_keys(&ec, superior, now).map_err(|e| e.to_string())?;
    let claims = jose::decode_unverified(&ec)
        .map_err(|e| e.to_string())?
        .claims;
    let endpoint = claims
        .get("metadata")
        .and_then(|m| m.get("federation_entity"))
        .and_then(|m| m.get("federation_fetch_endpoint"))
        .and_then(Value::as_str)
        .ok_or("it publishes no federation_fetch_endpoint")?;
    let jws = fetcher
        .subordinate_statement(endpoint, us)
        .await
        .map_err(|e| format!("its statement about this entity: {e}"))?;
    let d = jose::verify(&jws, &keys)
        .map_err(|e| format!("its statement does not verify with its keys: {e}"))?;
    jose::check_typ(&d, ENTITY_STATEMENT_TYP).map_err(|e| e.to_string())?;
    let names = |c: &str| d.claims.get(c).and_then(Value::as_str).map(str::to_owned);
    if names("iss").as_deref() != Some(superior) || names("sub").as_deref() != Some(us) {
        return Err(format!("its statement is not about {us} from {superior}"));
    }
    if d.claims
        .get("exp")
        .and_then(Value::as_i64)
        .is_some_and(|exp| exp <= now)
    {
        return Err("its statement about this entity has expired".into());
    }
    Ok(d.claims)
}
