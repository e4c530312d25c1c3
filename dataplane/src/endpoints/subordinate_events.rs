//! The subordinate events endpoint ("OpenID Federation Subordinate Events Endpoint 1.0", draft
//! 01): a signed statement of one subordinate's public history (`typ`
//! `entity-events-statement+jwt`), made by [`pharos_shared::subordinate_events`] from the
//! history the control plane recorded.
//!
//! The snapshot decides first, without a command: an identifier that was never a subordinate,
//! or one still pending, is `404 not_found`; a deleted one is answered from its tombstone
//! (registered, then revoked). Otherwise the rows come from the database through
//! [`Command::SubordinateHistory`] (at most 8 read at once, else `503`), and the signed answer
//! is kept per subordinate record version (a write to the subordinate makes a new record, so
//! a new history) for [`KEEP`], bounded in bytes: a client, or many, asking again costs a
//! lookup; concurrent first requests for one subordinate read once.

use std::sync::Arc;
use std::time::Duration;

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use pharos_runtime::command::Command;
use pharos_runtime::signing;
use pharos_shared::snapshot::Snapshot;
use pharos_shared::subordinate::SubordinateStatus;
use pharos_shared::subordinate_events::{
    EVENTS_STATEMENT_MEDIA_TYPE, EVENTS_STATEMENT_TYP, Event, claims, public,
};

use super::Call;
use crate::DataPlane;
use crate::error::FedError;
use crate::jwt_response::jwt;

/// How long a signed answer is kept (it is valid for a day).
const KEEP: Duration = Duration::from_secs(3600);

/// Upper bound of the cache, in bytes of signed answers.
const CACHE_BYTES: u64 = 16 * 1024 * 1024;

/// Signed answers by subordinate and record version.
#[derive(Debug)]
pub struct EventsCache(moka::future::Cache<(Arc<str>, u64), Bytes>);

impl Default for EventsCache {
    fn default() -> Self {
        Self(
            moka::future::Cache::builder()
                .max_capacity(CACHE_BYTES)
                .time_to_live(KEEP)
                .weigher(|k: &(Arc<str>, u64), v: &Bytes| {
                    u32::try_from(k.0.len() + v.len() + 64).unwrap_or(u32::MAX)
                })
                .build(),
        )
    }
}

/// Answers a subordinate events request.
pub(crate) async fn serve(call: Call<'_>) -> Response {
    let (dp, snap, now) = (call.dp, call.snap.clone(), call.now);
    let query = match call.query().await {
        Ok(q) => q,
        Err(e) => return e.into_response(),
    };
    match answer(dp, &snap, &query, now).await {
        Ok(body) => jwt(EVENTS_STATEMENT_MEDIA_TYPE, body),
        Err(e) => e.into_response(),
    }
}

fn unknown() -> FedError {
    FedError::not_found("the entity is not a subordinate of this entity")
}

async fn answer(
    dp: &DataPlane,
    snap: &Arc<Snapshot>,
    query: &str,
    now: i64,
) -> Result<Bytes, FedError> {
    let sub = super::fetch::subject(query)?;
    let subs = &snap.subordinates;
    let record = match subs.get(&sub) {
        Some(s) if s.status != SubordinateStatus::Pending => s.clone(),
        Some(_) => return Err(unknown()),
        None => {
            let t = subs.tombstone(&sub).ok_or_else(unknown)?;
            let events = [
                Event {
                    iat: t.registered,
                    event: "registration",
                },
                Event {
                    iat: t.revoked,
                    event: "revocation",
                },
            ];
            return sign(snap, &sub, now, &events).await;
        }
    };
    let key = (record.entity_id.clone(), record.version);
    let id = record.entity_id.to_string();
    dp.subordinate_events_cache
        .0
        .try_get_with(key, async {
            let history = dp
                .commands
                .call(|reply| Command::SubordinateHistory {
                    sub: id.clone(),
                    reply,
                })
                .await?;
            // Deleted since the snapshot was made: the next snapshot has its tombstone.
            let (created, rows) = history.ok_or_else(unknown)?;
            let events = public(created, &rows);
            if events.is_empty() {
                return Err(unknown());
            }
            sign(snap, &id, now, &events).await
        })
        .await
        .map_err(|e: Arc<FedError>| FedError::clone(&e))
}

/// The signed statement of `events` about `sub`.
async fn sign(snap: &Snapshot, sub: &str, now: i64, events: &[Event]) -> Result<Bytes, FedError> {
    let claims = claims(&snap.entity_id, sub, now, events);
    let token = signing::sign(&snap.keys.signer, EVENTS_STATEMENT_TYP, claims)
        .await
        .map_err(FedError::server_error)?;
    Ok(Bytes::from(token))
}
