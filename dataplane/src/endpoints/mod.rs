//! The federation endpoints that live in the endpoint registry: one module per type, and the
//! one table ([`serve`]) that says which handler answers each type.
//!
//! A request reaches a handler in one of two steps. [`cached`] runs first, synchronously,
//! under the dispatcher's cheap snapshot guard: the warm answers of the hot endpoints (a
//! signed statement in its subordinate's record, a finished anonymous resolve response) cost
//! no reference count and no allocation there. Everything else goes to [`serve`] with an owned
//! snapshot, because it may await remote fetches, client authentication or signing, and a
//! guard held across such an await pins the snapshot for as long as the remote side takes.
//!
//! Adding an endpoint type: write its module, replace its arm in [`serve`] (the match is
//! exhaustive, so a new [`EndpointType`] does not compile until it has one), and give it an
//! arm in [`cached`] only if it has an answer that needs no await.

pub mod enroll;
pub mod enroll_request;
pub mod entity_collection;
pub mod extended_list;
pub mod fetch;
pub mod historical_keys;
pub mod jwks_update;
pub mod list;
mod query;
pub mod resolve;
pub mod subordinate_events;
pub mod trust_mark;
pub(crate) mod trust_mark_eligibility;
pub mod trust_mark_listing;
pub mod trust_mark_request;
pub mod trust_mark_status;

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use pharos_shared::endpoint::EndpointType;
use pharos_shared::snapshot::{EndpointEntry, Snapshot};

use crate::DataPlane;
use crate::error::FedError;
use crate::rate_limit::Limited;

/// Largest form body accepted (POST, e.g. with client authentication).
const MAX_FORM_BYTES: usize = 64 * 1024;

/// Who is asking, as client authentication established it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Caller {
    /// No client authentication: a response has no `aud`.
    Anonymous,
    /// Authenticated as this Entity: a response's `aud` is exactly its Entity ID.
    Authenticated {
        /// The client's Entity ID.
        entity_id: String,
    },
}

impl Caller {
    /// The `aud` of a response to this caller.
    pub fn aud(&self) -> Option<&str> {
        match self {
            Self::Anonymous => None,
            Self::Authenticated { entity_id } => Some(entity_id),
        }
    }
}

/// A request on its way to the handler of its endpoint, past the registry lookup and the
/// method check.
pub struct Call<'a> {
    /// The data plane.
    pub dp: &'a DataPlane,
    /// The snapshot the endpoint was found in (owned: handlers may await).
    pub snap: Arc<Snapshot>,
    /// The endpoint.
    pub entry: Arc<EndpointEntry>,
    /// The request.
    pub req: Request,
    /// When the request arrived, Unix seconds.
    pub now: i64,
}

impl Call<'_> {
    /// Spends this request's share of `class`'s rates (`server.rate_limits`), before any work;
    /// `Some` is the `429` to answer instead.
    pub(crate) fn over_limit(&self, class: Limited) -> Option<Response> {
        self.dp
            .rate_limits
            .check(class, &self.req)
            .err()
            .map(|r| *r)
    }

    /// The raw query string of an unauthenticated GET, read as is (no parameter vector, no
    /// re-encoding); `None` when the parameters must go through [`Self::params`].
    fn raw_query(&self) -> Option<&str> {
        anonymous_get(&self.entry, &self.req).then(|| self.req.uri().query().unwrap_or(""))
    }

    /// The request's parameters (query for GET, form body for POST) and who sent it: with
    /// `auth_enabled` the client is authenticated first (`private_key_jwt`) and the
    /// authentication parameters are taken out of what the handler sees.
    async fn params(self) -> Result<(Vec<(String, String)>, Caller), FedError> {
        let slot = self
            .req
            .extensions()
            .get::<crate::stats::ClientEntitySlot>()
            .cloned();
        let mut params = params(self.req).await?;
        if !self.entry.auth_enabled {
            return Ok((params, Caller::Anonymous));
        }
        // Boxed, as the remote work in `serve`: see there.
        let entity_id = Box::pin(crate::client_auth::authenticate(
            self.dp,
            &self.snap,
            &self.entry,
            &params,
        ))
        .await?;
        if let Some(slot) = slot {
            slot.set(&entity_id);
        }
        params.retain(|(k, _)| !crate::client_auth::AUTH_PARAMS.contains(&k.as_str()));
        Ok((params, Caller::Authenticated { entity_id }))
    }

    /// The parameters as one query string: the raw one, or the (authenticated) parameters
    /// re-encoded, for handlers that read a query string in both cases.
    async fn query(self) -> Result<String, FedError> {
        if let Some(q) = self.raw_query() {
            return Ok(q.to_owned());
        }
        let (params, _) = self.params().await?;
        Ok(form_urlencoded::Serializer::new(String::new())
            .extend_pairs(params.iter())
            .finish())
    }
}

/// Whether `req` is an unauthenticated GET, whose raw query string is its parameters.
pub(crate) fn anonymous_get(entry: &EndpointEntry, req: &Request) -> bool {
    !entry.auth_enabled && req.method() == Method::GET
}

/// The answer that needs no await (a cached signed response), if there is one; runs under
/// the dispatcher's snapshot guard, so it must not block or allocate for nothing.
pub fn cached(
    dp: &DataPlane,
    snap: &Snapshot,
    entry: &EndpointEntry,
    req: &Request,
    now: i64,
) -> Option<Response> {
    if !anonymous_get(entry, req) {
        return None;
    }
    let query = req.uri().query().unwrap_or("");
    match entry.kind {
        EndpointType::Fetch => {
            let inm = req.headers().get(axum::http::header::IF_NONE_MATCH);
            fetch::cached(&dp.caches, snap, snap.ready(), query, now, inm)
        }
        EndpointType::Resolve => resolve::cached(dp, snap, entry, query, now),
        _ => None,
    }
}

/// The type → handler table.
///
/// Handlers that await remote work (resolving, client authentication) box those futures:
/// they are kilobytes, and kept inline they would make every request's future that large,
/// which axum moves onto the heap for each request, the cached answers included.
pub async fn serve(call: Call<'_>) -> Response {
    match call.entry.kind {
        EndpointType::Fetch => fetch::serve(call).await,
        EndpointType::List => list::serve(call).await,
        EndpointType::Resolve => Box::pin(resolve::serve(call)).await,
        EndpointType::HistoricalKeys => historical_keys::serve(call).await,
        EndpointType::JwksUpdate => jwks_update_push(call).await,
        EndpointType::JwksUpdateTrigger => jwks_update_trigger(call).await,
        EndpointType::TrustMark => trust_mark::serve(call).await,
        EndpointType::TrustMarkStatus => trust_mark_status::serve(call).await,
        EndpointType::TrustMarkListing => trust_mark_listing::serve(call).await,
        EndpointType::TrustMarkRequest => trust_mark_request::serve(call).await,
        EndpointType::Enroll => Box::pin(enroll::serve(call)).await,
        EndpointType::EnrollRequest => Box::pin(enroll_request::serve(call)).await,
        EndpointType::EntityCollection => entity_collection::serve(call).await,
        EndpointType::ExtendedList => extended_list::serve(call).await,
        EndpointType::SubordinateEvents => subordinate_events::serve(call).await,
    }
}

/// Authenticity comes from the JWK Set's signature; `auth_enabled` is ignored.
async fn jwks_update_push(call: Call<'_>) -> Response {
    if let Some(refused) = call.over_limit(Limited::JwksUpdate) {
        return refused;
    }
    jwks_update::push(call.dp, call.req).await
}

/// Without client authentication the target is named in the request; with it, the target is
/// the authenticated client itself.
async fn jwks_update_trigger(call: Call<'_>) -> Response {
    if let Some(refused) = call.over_limit(Limited::JwksUpdate) {
        return refused;
    }
    if !call.entry.auth_enabled {
        return jwks_update::trigger_unauthenticated(call.dp, call.req).await;
    }
    let dp = call.dp;
    match call.params().await {
        Ok((_, Caller::Authenticated { entity_id })) => {
            let actor = Some(entity_id.clone());
            jwks_update::trigger(dp, entity_id, actor).await
        }
        // Not reached: with auth_enabled, params() authenticates or refuses.
        Ok((_, Caller::Anonymous)) => FedError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "client authentication is required",
        )
        .into_response(),
        Err(e) => e.into_response(),
    }
}

/// Query string for GET, form body for POST.
async fn params(req: Request) -> Result<Vec<(String, String)>, FedError> {
    if req.method() == Method::POST {
        let body = axum::body::to_bytes(req.into_body(), MAX_FORM_BYTES)
            .await
            .map_err(|e| FedError::invalid_request(format!("cannot read the form body: {e}")))?;
        return Ok(query::pairs(&body));
    }
    Ok(query::pairs(req.uri().query().unwrap_or("").as_bytes()))
}
