//! The catch-all dispatcher: every path that is not a fixed route is looked up in the
//! snapshot's endpoint registry and handed to its type's handler.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use pharos_shared::endpoint::{EndpointType, http_method};
use pharos_shared::snapshot::{EndpointEntry, Snapshot};

use crate::DataPlane;
use crate::error::FedError;
use crate::resolve::Caller;

/// Largest form body accepted (POST, e.g. with client authentication).
const MAX_FORM_BYTES: usize = 64 * 1024;

/// The fallback handler of the public router.
pub async fn handler(State(dp): State<Arc<DataPlane>>, req: Request) -> Response {
    let snap = dp.snapshot_ref();
    let now = dp.now();
    let path = req.uri().path();
    let Some(entry) = snap.registry.lookup(path, now) else {
        return FedError::not_found(format!("no endpoint registered for path {path}"))
            .into_response();
    };
    let required = entry.kind.method(entry.auth_enabled);
    let allowed = match required {
        http_method::Method::Get => req.method() == Method::GET,
        http_method::Method::Post => req.method() == Method::POST,
    };
    if !allowed {
        let mut resp = FedError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            format!("endpoint {path} requires {}", required.as_str()),
        )
        .into_response();
        resp.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static(required.as_str()));
        return resp;
    }
    // The key update endpoints wait for the control plane (a trigger for a remote fetch):
    // no snapshot guard is held across that wait.
    match entry.kind {
        // Authenticity comes from the JWK Set's signature; auth_enabled is ignored.
        EndpointType::JwksUpdate => {
            drop(snap);
            return crate::jwks_update::push(&dp, req).await;
        }
        EndpointType::JwksUpdateTrigger if !entry.auth_enabled => {
            drop(snap);
            return crate::jwks_update::trigger_unauthenticated(&dp, req).await;
        }
        _ => {}
    }
    // Fast path of the cached public endpoints: an unauthenticated GET reads the raw query
    // string directly (no parameter vector, no re-encoding).
    if !entry.auth_enabled && req.method() == Method::GET {
        let query = req.uri().query().unwrap_or("");
        match entry.kind {
            EndpointType::Fetch => return crate::fetch::handle(&dp, &snap, entry, query).await,
            EndpointType::List => {
                return crate::list::handle(&dp.list_cache, snap.clone(), query).await;
            }
            EndpointType::Resolve => {
                return crate::resolve::anonymous_get(&dp, &snap, entry, query).await;
            }
            _ => {}
        }
    }
    let (params, caller) = match authenticated(&dp, &snap, entry, req).await {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let query = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(params.iter())
        .finish();
    match entry.kind {
        EndpointType::Fetch => {
            return crate::fetch::handle(&dp, &snap, entry, &query).await;
        }
        EndpointType::List => {
            return crate::list::handle(&dp.list_cache, snap.clone(), &query).await;
        }
        EndpointType::HistoricalKeys => {
            return crate::historical_keys::handle(&dp, snap.clone(), now).await;
        }
        EndpointType::Resolve => {
            return crate::resolve::handler(&dp, &snap, entry, params, caller).await;
        }
        EndpointType::JwksUpdateTrigger => {
            if let Caller::Authenticated { entity_id } = caller {
                drop(snap);
                let actor = Some(entity_id.clone());
                return crate::jwks_update::trigger(&dp, entity_id, actor).await;
            }
        }
        _ => {}
    }
    // Each endpoint type gets its handler as its issue lands; until then the endpoint can be
    // configured and published but answers that it is not available.
    FedError::new(
        StatusCode::NOT_IMPLEMENTED,
        "server_error",
        format!(
            "the {} endpoint is not available in this version of Pharos",
            entry.kind
        ),
    )
    .into_response()
}

/// The request's parameters (query for GET, form body for POST) and who sent it: with
/// `auth_enabled` the client is authenticated first (`private_key_jwt`) and the
/// authentication parameters are taken out of what the handler sees.
async fn authenticated(
    dp: &DataPlane,
    snap: &Snapshot,
    entry: &EndpointEntry,
    req: Request,
) -> Result<(Vec<(String, String)>, Caller), FedError> {
    let mut params = params(req).await?;
    if !entry.auth_enabled {
        return Ok((params, Caller::Anonymous));
    }
    let entity_id = crate::client_auth::authenticate(dp, snap, entry, &params).await?;
    params.retain(|(k, _)| !crate::client_auth::AUTH_PARAMS.contains(&k.as_str()));
    Ok((params, Caller::Authenticated { entity_id }))
}

/// Query string for GET, form body for POST.
async fn params(req: Request) -> Result<Vec<(String, String)>, FedError> {
    let parse = |b: &[u8]| form_urlencoded::parse(b).into_owned().collect::<Vec<_>>();
    if req.method() == Method::POST {
        let body = axum::body::to_bytes(req.into_body(), MAX_FORM_BYTES)
            .await
            .map_err(|e| FedError::invalid_request(format!("cannot read the form body: {e}")))?;
        return Ok(parse(&body));
    }
    Ok(parse(req.uri().query().unwrap_or("").as_bytes()))
}
