//! Who made an admin change, for the audit trail (subordinate history, logs).
//!
//! A request authenticated as an admin user is that user's, whatever it claims: the actor
//! header cannot replace an authenticated identity in the audit trail. Without an
//! authenticated user (bootstrap, before the first user exists), per `api.admin.actor_source`:
//! the Basic-auth username with the actor header as fallback (`basic_auth`), or the header
//! with the Basic-auth username as fallback (`header`).

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use base64::Engine as _;
use pharos_shared::config::ActorSource;

use crate::control_plane::ControlPlane;

/// The actor of an admin request, if one can be named.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Actor(pub Option<String>);

impl Actor {
    /// The actor name as stored (`None` when anonymous).
    pub fn name(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

/// The user the request authenticated as (set by the authentication middleware).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthenticatedUser(pub String);

/// The username of an HTTP Basic `Authorization` header, if well-formed.
pub fn basic_username(parts: &Parts) -> Option<String> {
    let h = parts.headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, b64) = h.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (user, _) = text.split_once(':')?;
    (!user.is_empty()).then(|| user.to_string())
}

impl FromRequestParts<Arc<ControlPlane>> for Actor {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        cp: &Arc<ControlPlane>,
    ) -> Result<Self, Self::Rejection> {
        if let Some(AuthenticatedUser(user)) = parts.extensions.get::<AuthenticatedUser>() {
            return Ok(Actor(Some(user.clone())));
        }
        let admin = &cp.settings.api.admin;
        let header = parts
            .headers
            .get(admin.actor_header.as_str())
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| v.chars().take(255).collect::<String>());
        let basic = basic_username(parts);
        Ok(Actor(match admin.actor_source {
            ActorSource::BasicAuth => basic.or(header),
            ActorSource::Header => header.or(basic),
        }))
    }
}
