//! The command channel from the data plane to the control plane (design §2).
//!
//! The data plane never touches the database. A request that changes state sends one typed
//! [`Command`] over an `mpsc` channel and awaits the control plane's answer on the command's
//! own `oneshot` reply; the control plane commits to the database first and publishes a new
//! snapshot before it replies, so the caller's next request already sees the change.
//!
//! Later state-changing features (enroll, enroll_request, trust_mark_request, recording issued
//! trust marks) become new variants with their own reply types; nothing else changes.

use tokio::sync::{mpsc, oneshot};

use crate::jose::Jwks;

/// How many commands may wait for the control plane before senders wait too. Commands are
/// rare (key pushes, triggers, replay records), so a small bound is backpressure, not a limit.
pub const CHANNEL_CAPACITY: usize = 256;

/// Where a command's answer goes.
pub type Reply<T> = oneshot::Sender<Result<T, CommandError>>;

/// A state change requested by the data plane.
#[derive(Debug)]
pub enum Command {
    /// Re-fetch a subordinate's keys from its Entity Configuration now (jwks_update_trigger).
    JwksUpdateTrigger {
        /// The subordinate's entity identifier.
        sub: String,
        /// The authenticated client, recorded as the event's actor (`None` when the endpoint
        /// does not authenticate).
        actor: Option<String>,
        /// `changed` = whether the stored keys changed.
        reply: Reply<bool>,
    },
    /// Replace a subordinate's keys with a pushed signed JWK Set (jwks_update). The control
    /// plane checks the token itself against the keys stored in the database, so a check and
    /// a concurrent key change cannot interleave.
    JwksUpdate {
        /// The compact JWS as received.
        token: String,
        /// Replies once the new keys are committed and published.
        reply: Reply<()>,
    },
    /// Remember a client assertion's `jti` until `expires_at` (db replay store). Answers
    /// `true` when the `jti` was new, `false` when it had been used before.
    RecordJti {
        /// The assertion identifier (namespaced by issuer by the caller).
        jti: String,
        /// Unix seconds after which the record may be deleted.
        expires_at: i64,
        /// `true` = first use.
        reply: Reply<bool>,
    },
}

/// A refusal or failure of a command, carrying the federation error the data plane renders.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code} ({status}): {description}")]
pub struct CommandError {
    /// HTTP status to answer with.
    pub status: u16,
    /// Federation error code (`invalid_request`, `not_found`, …).
    pub code: &'static str,
    /// Human-readable detail.
    pub description: String,
}

impl CommandError {
    /// An error with an explicit status and code.
    pub fn new(status: u16, code: &'static str, description: impl Into<String>) -> Self {
        Self {
            status,
            code,
            description: description.into(),
        }
    }

    /// 400 `invalid_request`.
    pub fn invalid_request(d: impl Into<String>) -> Self {
        Self::new(400, "invalid_request", d)
    }

    /// 401 `invalid_client`.
    pub fn invalid_client(d: impl Into<String>) -> Self {
        Self::new(401, "invalid_client", d)
    }

    /// 404 `not_found`.
    pub fn not_found(d: impl Into<String>) -> Self {
        Self::new(404, "not_found", d)
    }

    /// 500 `server_error` (the detail stays in the control plane's log).
    pub fn server_error() -> Self {
        Self::new(500, "server_error", "internal error")
    }
}

/// The data plane's end of the channel.
#[derive(Debug, Clone)]
pub struct Commands(mpsc::Sender<Command>);

impl Commands {
    /// A connected pair: the sender for the data plane, the receiver for the control plane.
    pub fn channel() -> (Self, mpsc::Receiver<Command>) {
        let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
        (Self(tx), rx)
    }

    /// Sends the command built by `make` around a fresh reply channel and waits for the
    /// answer. A control plane that has stopped is a 503-style server error, never a hang.
    pub async fn call<T>(&self, make: impl FnOnce(Reply<T>) -> Command) -> Result<T, CommandError> {
        let (tx, rx) = oneshot::channel();
        let unavailable = || CommandError::new(503, "temporarily_unavailable", "shutting down");
        self.0.send(make(tx)).await.map_err(|_| unavailable())?;
        rx.await.map_err(|_| unavailable())?
    }
}

/// Checks a pushed JWK Set's own keys: non-empty, and a valid public key set
/// ([`crate::jose::check_public_key_set`], the same rule as the Admin API's).
pub fn check_new_keys(jwks: &Jwks) -> Result<(), String> {
    if jwks.keys.is_empty() {
        return Err("keys must not be empty".into());
    }
    crate::jose::check_public_key_set(jwks)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn jwks(v: serde_json::Value) -> Jwks {
        serde_json::from_value(json!({ "keys": v })).unwrap()
    }

    #[test]
    fn new_keys_need_unique_non_empty_kids() {
        assert!(
            check_new_keys(&jwks(
                json!([{"kty": "EC", "kid": "a"}, {"kty": "EC", "kid": "b"}])
            ))
            .is_ok()
        );
        assert!(check_new_keys(&jwks(json!([]))).is_err());
        assert!(
            check_new_keys(&jwks(
                json!([{"kty": "EC", "kid": "a"}, {"kty": "EC", "kid": "a"}])
            ))
            .is_err()
        );
        assert!(check_new_keys(&jwks(json!([{"kty": "EC", "kid": ""}]))).is_err());
        assert!(check_new_keys(&jwks(json!([{"kty": "EC"}]))).is_err());
    }

    #[tokio::test]
    async fn a_stopped_control_plane_is_an_error_not_a_hang() {
        let (c, rx) = Commands::channel();
        drop(rx);
        let e = c
            .call(|reply| Command::RecordJti {
                jti: "x".into(),
                expires_at: 0,
                reply,
            })
            .await
            .unwrap_err();
        assert_eq!(e.status, 503);
    }
}
