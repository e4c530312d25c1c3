//! The trust marked entities listing endpoint (spec §8.5): the entities holding a valid
//! (unrevoked, unexpired) mark of `trust_mark_type` issued here; with `sub`, only that one.
//! An unknown type is 404 `not_found`, as at the trust mark endpoint.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use pharos_shared::snapshot::Snapshot;

use super::Call;
use super::trust_mark::{optional_param, param, spec};
use crate::error::FedError;

/// Answers a listing request.
pub(crate) async fn serve(call: Call<'_>) -> Response {
    let (snap, now) = (call.snap.clone(), call.now);
    let params = match call.params().await {
        Ok((p, _)) => p,
        Err(e) => return e.into_response(),
    };
    match holders(&snap, &params, now) {
        Ok(ids) => {
            let body = serde_json::to_vec(&ids).unwrap_or_else(|_| b"[]".to_vec());
            let mut r = (StatusCode::OK, body).into_response();
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            r
        }
        Err(e) => e.into_response(),
    }
}

fn holders(
    snap: &Snapshot,
    params: &[(String, String)],
    now: i64,
) -> Result<Vec<String>, FedError> {
    let tm_type = param(params, "trust_mark_type")?;
    let sub = optional_param(params, "sub")?;
    spec(snap, tm_type)?;
    Ok(snap.trust_marks.holders(tm_type, sub, now))
}
