//! Who may obtain a trust mark: the spec's eligibility mode combines the stored standing of
//! the subject with the spec's entity checker, which the control plane runs
//! ([`Command::CheckEligibility`]: it fetches and verifies the subject's Entity
//! Configuration, runs the checker and reuses verdicts for `check_cache_ttl`).
//!
//! - `db_only`: the stored standing alone (active; blocked `403`; pending `202`; else `404`).
//! - `check_only`: the checker decides.
//! - `db_or_check`: stored active, or else the checker.
//! - `db_and_check`: stored active (else the standing's answer), and then the checker.
//!
//! A subject an administrator blocked stays blocked in every mode: blocking is how a mark is
//! withdrawn, and a checker that still passes must not hand it out again. A checker's denial
//! is answered with the checker's status and body (its "not listed" is its `403`, as the
//! operator configured it); the standing's "not entitled" stays `404`, as the specification
//! requires for an entity that does not have the mark.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use pharos_shared::checks::{Denial, Verdict};
use pharos_shared::trust_mark_issuer::{EligibilityMode, Standing};

use crate::DataPlane;
use crate::error::FedError;
use pharos_runtime::command::Command;
use pharos_runtime::error_body::json_error;

/// What the stored standing decides before any checker runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ByStanding {
    /// Entitled; no checker needed.
    Entitled,
    /// Refused with this answer.
    Refused(Refusal),
    /// The checker decides.
    AskChecker,
}

/// Why a trust mark is not handed out.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Refusal {
    /// One of ours (standing, request, command failure).
    Fed(StatusCode, &'static str, String),
    /// The checker's denial, answered as it is.
    Denied(Denial),
}

impl From<FedError> for Refusal {
    fn from(e: FedError) -> Self {
        Self::Fed(e.status, e.code, e.description)
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Self::Fed(status, code, d) => FedError::new(status, code, d).into_response(),
            Self::Denied(d) => {
                let status =
                    StatusCode::from_u16(d.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                json_error(status, &d.error, &d.error_description)
            }
        }
    }
}

/// The standing's own answer when it does not entitle.
pub(crate) fn refusal(standing: Standing) -> Refusal {
    match standing {
        Standing::Blocked => FedError::new(
            StatusCode::FORBIDDEN,
            "invalid_request",
            "subject cannot obtain this trust mark",
        ),
        Standing::Pending => FedError::new(
            StatusCode::ACCEPTED,
            "invalid_request",
            "the request is pending approval by an administrator",
        ),
        Standing::Entitled | Standing::NotEntitled => {
            FedError::not_found("the entity does not hold this trust mark")
        }
    }
    .into()
}

/// The part of the decision the stored standing makes (pure; see the module documentation).
pub(crate) fn by_standing(mode: EligibilityMode, standing: Standing) -> ByStanding {
    use EligibilityMode::*;
    match (mode, standing) {
        (_, Standing::Blocked) => ByStanding::Refused(refusal(standing)),
        (DbOnly | DbOrCheck, Standing::Entitled) => ByStanding::Entitled,
        (DbOnly | DbAndCheck, _) if standing != Standing::Entitled => {
            ByStanding::Refused(refusal(standing))
        }
        _ => ByStanding::AskChecker,
    }
}

/// Whether `sub` may obtain a mark of `trust_mark_type` whose spec has `mode`, given its
/// stored `standing`; asks the control plane's checker when the mode needs it. `Ok(true)`:
/// the checker passed it (the control plane decides again on that when it records the mark).
pub(crate) async fn decide(
    dp: &DataPlane,
    mode: EligibilityMode,
    standing: Standing,
    trust_mark_type: &str,
    sub: &str,
) -> Result<bool, Refusal> {
    match by_standing(mode, standing) {
        ByStanding::Entitled => Ok(false),
        ByStanding::Refused(r) => Err(r),
        ByStanding::AskChecker => {
            let verdict = dp
                .commands
                .call(|reply| Command::CheckEligibility {
                    trust_mark_type: trust_mark_type.to_owned(),
                    sub: sub.to_owned(),
                    reply,
                })
                .await
                .map_err(FedError::from)?;
            match verdict {
                Verdict::Pass => Ok(true),
                Verdict::Deny(d) => Err(Refusal::Denied(d)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(b: ByStanding) -> Option<u16> {
        match b {
            ByStanding::Entitled => Some(200),
            ByStanding::Refused(Refusal::Fed(s, _, _)) => Some(s.as_u16()),
            ByStanding::Refused(Refusal::Denied(d)) => Some(d.status),
            ByStanding::AskChecker => None,
        }
    }

    #[test]
    fn each_mode_combines_standing_and_checker() {
        use EligibilityMode::*;
        use Standing::*;
        let ask = None;
        // (mode, entitled, not entitled, pending, blocked)
        let table = [
            (DbOnly, Some(200), Some(404), Some(202), Some(403)),
            (CheckOnly, ask, ask, ask, Some(403)),
            (DbOrCheck, Some(200), ask, ask, Some(403)),
            (DbAndCheck, ask, Some(404), Some(202), Some(403)),
        ];
        for (mode, entitled, not_entitled, pending, blocked) in table {
            assert_eq!(status(by_standing(mode, Entitled)), entitled, "{mode:?}");
            assert_eq!(
                status(by_standing(mode, NotEntitled)),
                not_entitled,
                "{mode:?}"
            );
            assert_eq!(status(by_standing(mode, Pending)), pending, "{mode:?}");
            assert_eq!(status(by_standing(mode, Blocked)), blocked, "{mode:?}");
        }
    }

    #[test]
    fn a_checker_denial_is_answered_as_it_is() {
        let r = Refusal::Denied(Denial::new(429, "slow_down", "later"));
        let resp = r.into_response();
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    }
}
