//! The catch-all dispatcher: every path that is not a fixed route is looked up in the
//! snapshot's endpoint registry and handed to its type's handler.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use pharos_shared::endpoint::{EndpointType, http_method};

use crate::DataPlane;
use crate::error::FedError;

/// The fallback handler of the public router.
pub async fn handler(State(dp): State<Arc<DataPlane>>, req: Request) -> Response {
    let snap = dp.snapshot();
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
    // Resolve answers 501 itself while client authentication is on (see resolve::authenticate).
    if entry.kind == EndpointType::Resolve {
        return crate::resolve::handler(&dp, &snap, entry, req).await;
    }
    let query = req.uri().query().unwrap_or("");
    // Client authentication is not implemented yet: an auth-enabled endpoint must not answer
    // as if the client had been authenticated, so it stays unavailable (501) until it is.
    match entry.kind {
        EndpointType::Fetch if !entry.auth_enabled => {
            return crate::fetch::handle(&dp, snap.clone(), entry, query).await;
        }
        EndpointType::List if !entry.auth_enabled => {
            return crate::list::handle(&dp.list_cache, snap.clone(), query).await;
        }
        EndpointType::HistoricalKeys if !entry.auth_enabled => {
            return crate::historical_keys::handle(&dp, snap.clone(), now).await;
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
