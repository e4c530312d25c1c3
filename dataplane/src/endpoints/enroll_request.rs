//! The enroll_request endpoint (lighthouse extension, reference §1.10): an entity asks to
//! become our subordinate and an administrator decides later (`PUT
//! /api/v1/admin/subordinates/{id}/status` with `active` approves, `blocked` or a delete
//! declines).
//!
//! The request is the enroll endpoint's ([`super::enroll`]). Already `active`: `204`;
//! `pending`: `202`; `blocked`: `403 invalid_request`. Otherwise the control plane fetches the
//! entity's Entity Configuration and verifies its self-signature and subject (lighthouse does
//! not verify it, reference §13 item 12), runs the endpoint's check if one is configured, and
//! stores the entity `pending` with the configuration's keys: `202`, empty body. A
//! configuration that cannot be fetched or verified is `400 invalid_request`, and nothing is
//! stored.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::Call;
use super::enroll::standing;
use pharos_runtime::command::{EnrollMode, EnrollOutcome};

/// Answers an enrollment request.
pub(crate) async fn serve(call: Call<'_>) -> Response {
    if let Some(refused) = call.over_limit(crate::rate_limit::Limited::Enroll) {
        return refused;
    }
    match standing(call, EnrollMode::Request).await {
        Ok((_, EnrollOutcome::Active)) => StatusCode::NO_CONTENT.into_response(),
        Ok((_, EnrollOutcome::Pending)) => StatusCode::ACCEPTED.into_response(),
        Err(e) => e.into_response(),
    }
}
