//! HTTP Basic authentication of the Admin API, and the audit log line of every admin write.
//!
//! The rule is evaluated on every request against the database, not a cached flag: while the
//! `users` table is empty everything is allowed (so the first user can be created); from the
//! moment one exists every request needs valid Basic credentials of an enabled user. Creating
//! the first user therefore locks the API at once and deleting the last one reopens it, also
//! when another process changed the table.
//!
//! The rule does not depend on `api.admin.users_enabled`: that switch only removes the `/users`
//! routes. Turning user management off must not silently open an API whose users exist.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;

use super::actor::Actor;
use super::password::Passwords;
use crate::admin::error::{ApiError, ApiResult};
use crate::control_plane::ControlPlane;
use crate::db::users;

/// What the authentication middleware needs.
#[derive(Debug, Clone)]
pub struct AuthState {
    /// The control plane (database, settings).
    pub cp: Arc<ControlPlane>,
    /// The password verifier shared with the `/users` handlers.
    pub passwords: Passwords,
}

/// Username and password of an HTTP Basic `Authorization` header, if well-formed.
pub fn basic_credentials(headers: &HeaderMap) -> Option<(String, String)> {
    let h = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, b64) = h.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// Middleware: authenticates the request, runs it, and logs admin writes with their actor.
pub async fn middleware(State(auth): State<AuthState>, req: Request, next: Next) -> Response {
    if let Err(e) = authenticate(&auth, req.headers()).await {
        let mut r = e.into_response();
        if r.status() == axum::http::StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(
                WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"admin\""),
            );
        }
        return r;
    }
    let write = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if !write {
        return next.run(req).await;
    }
    let (mut parts, body) = req.into_parts();
    let actor = match Actor::from_request_parts(&mut parts, &auth.cp).await {
        Ok(a) => a,
        Err(never) => match never {},
    };
    let method = parts.method.clone();
    let path = parts.uri.path().to_string();
    let response = next.run(Request::from_parts(parts, body)).await;
    tracing::info!(
        target: "pharos::audit",
        actor = actor.name().unwrap_or("-"),
        %method,
        path,
        status = response.status().as_u16(),
        "admin change"
    );
    response
}

async fn authenticate(auth: &AuthState, headers: &HeaderMap) -> ApiResult<()> {
    let db = &auth.cp.db;
    if !users::any(db).await? {
        return Ok(());
    }
    let Some((username, password)) = basic_credentials(headers) else {
        return Err(ApiError::Unauthorized("missing credentials".into()));
    };
    let row = users::get(db, &username).await?;
    let stored = row.as_ref().map(|r| r.password_hash.as_str());
    let ok = auth.passwords.verify(&username, &password, stored).await;
    let Some(user) = row.filter(|u| ok && !u.disabled) else {
        return Err(ApiError::Unauthorized("invalid credentials".into()));
    };
    if auth.passwords.needs_rehash(&user.password_hash) {
        // Parameters changed since this password was set: upgrade the hash while the
        // plaintext is at hand. A failure only costs the upgrade, not the login.
        match auth.passwords.hash(&password).await {
            Ok(new) => match users::rehash(db, user.id, &user.password_hash, &new).await {
                Ok(()) => {
                    auth.passwords.remember(&username, &password, &new).await;
                    tracing::info!(user = %username, "re-hashed admin password with new parameters");
                }
                Err(e) => {
                    tracing::warn!(user = %username, error = %e, "password re-hash not stored")
                }
            },
            Err(e) => tracing::warn!(user = %username, error = %e, "password re-hash failed"),
        }
    }
    Ok(())
}
