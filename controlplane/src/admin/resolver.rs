//! `/resolver/flush`: forgets what the resolver of this process has cached (fetched
//! statements, resolutions, failures, finished responses), for everything or for one subject.
//!
//! Changes of our own statements, policies, keys and trust anchors reach the resolver without
//! it (they carry the snapshot generation); a flush is for what a remote entity changed before
//! its statements expire. It is not state: nothing is written, and each replica of a cluster
//! holds its own caches (flush each).

use std::sync::Arc;

use axum::Extension;
use pharos_runtime::resolver_caches::ResolverCaches;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::extract::{Json, entity_id};
use crate::admin::error::{ApiError, ApiResult};

/// This module's routes, merged by [`crate::admin::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new().routes(routes!(flush))
}

/// Body of `POST /resolver/flush`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FlushInput {
    /// Only what concerns this subject (its resolutions, its Entity Configuration and the
    /// Subordinate Statements about it); absent: everything.
    pub sub: Option<String>,
}

impl FlushInput {
    /// The subject, checked as an entity identifier.
    pub fn check(&self) -> ApiResult<Option<&str>> {
        match &self.sub {
            Some(s) => entity_id("sub", s).map(|()| Some(s.as_str())),
            None => Ok(None),
        }
    }
}

/// The resolver of this process, handed to the Admin API by the application.
pub type Handle = Option<Extension<Arc<dyn ResolverCaches>>>;

/// Clears the resolver's caches, or those about `sub`; the next resolve fetches anew.
#[utoipa::path(post, path = "/resolver/flush", tag = "resolver",
    request_body = FlushInput,
    responses((status = 200, body = Object), (status = 400), (status = 503)))]
pub async fn flush(resolver: Handle, Json(body): Json<FlushInput>) -> ApiResult<axum::Json<Value>> {
    let sub = body.check()?;
    let Some(Extension(service)) = resolver else {
        return Err(ApiError::Unavailable(
            "this process serves no resolver".into(),
        ));
    };
    service.flush(sub).await;
    Ok(axum::Json(json!({ "flushed": sub.unwrap_or("*") })))
}
