//! The single place where the control plane's reasons for a failed command (the error types
//! of [`pharos_runtime::command`]) become federation error responses
//! (`{"error","error_description"}` and a status).
//!
//! The statuses below are the ones clients have always seen, so changing one is a visible
//! change of the endpoint and belongs in its documentation.

use axum::http::StatusCode;
use pharos_runtime::command::{
    CheckError, CollectError, EnrollError, HistoryError, JtiError, MarkRequestError, PushError,
    RecordMarkError, Refused, TriggerError,
};

use crate::endpoints::trust_mark_eligibility::{Refusal, refusal};
use crate::error::FedError;

impl From<CollectError> for FedError {
    fn from(e: CollectError) -> Self {
        match e {
            CollectError::Refused(r) => refused(r),
            // The draft's code for a Trust Anchor the responder cannot collect from.
            CollectError::AnchorUnusable(_) => {
                FedError::new(StatusCode::NOT_FOUND, "invalid_trust_anchor", e.to_string())
            }
        }
    }
}

fn refused(r: Refused) -> FedError {
    FedError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "temporarily_unavailable",
        r.to_string(),
    )
}

fn internal() -> FedError {
    FedError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "server_error",
        "internal error",
    )
}

impl From<TriggerError> for FedError {
    fn from(e: TriggerError) -> Self {
        let d = e.to_string();
        match e {
            TriggerError::Refused(r) => refused(r),
            TriggerError::UnknownSubordinate | TriggerError::NotActiveOrPending => {
                FedError::not_found(d)
            }
            TriggerError::FetchFailed(_) => {
                FedError::new(StatusCode::BAD_GATEWAY, "server_error", d)
            }
            TriggerError::BadSignature(_) => {
                FedError::new(StatusCode::UNAUTHORIZED, "invalid_client", d)
            }
            // A 500 as before this type existed (the subordinate's fault, but a visible
            // status change is out of scope here); the detail goes to the log only.
            TriggerError::InvalidConfiguration(_) => FedError::server_error(d),
            TriggerError::Internal => internal(),
        }
    }
}

impl From<PushError> for FedError {
    fn from(e: PushError) -> Self {
        let d = e.to_string();
        match e {
            PushError::Refused(r) => refused(r),
            PushError::Invalid(_) | PushError::Stale { .. } => FedError::invalid_request(d),
            PushError::UnknownSubordinate | PushError::NotActiveOrPending => FedError::not_found(d),
            PushError::NoStoredKeys | PushError::NotSignedByCurrentKey(_) => {
                FedError::new(StatusCode::UNAUTHORIZED, "invalid_client", d)
            }
            PushError::Internal => internal(),
        }
    }
}

impl From<HistoryError> for FedError {
    fn from(e: HistoryError) -> Self {
        match e {
            HistoryError::Refused(r) => refused(r),
            HistoryError::Internal => internal(),
        }
    }
}

impl From<JtiError> for FedError {
    fn from(e: JtiError) -> Self {
        match e {
            JtiError::Refused(r) => refused(r),
            JtiError::Internal => internal(),
        }
    }
}

/// A refused record is answered as the stored standing would have been answered in the first
/// place (one rendering, [`refusal`]).
impl From<RecordMarkError> for Refusal {
    fn from(e: RecordMarkError) -> Self {
        match e {
            RecordMarkError::Refused(r) => refused(r).into(),
            RecordMarkError::NotAdmitted(s) => refusal(s),
            RecordMarkError::Internal => internal().into(),
        }
    }
}

impl From<MarkRequestError> for FedError {
    fn from(e: MarkRequestError) -> Self {
        let d = e.to_string();
        match e {
            MarkRequestError::Refused(r) => refused(r),
            MarkRequestError::UnknownType => FedError::not_found(d),
            MarkRequestError::Blocked => FedError::new(StatusCode::FORBIDDEN, "invalid_request", d),
            MarkRequestError::Configuration(_) => FedError::invalid_request(d),
            MarkRequestError::Full { .. } => FedError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                d,
            ),
            MarkRequestError::Internal => internal(),
        }
    }
}

/// An enrollment's failure as an answer; a check's denial is answered as it is, exactly as a
/// trust mark eligibility denial (one rendering, [`Refusal`]).
impl From<EnrollError> for Refusal {
    fn from(e: EnrollError) -> Self {
        let d = e.to_string();
        match e {
            EnrollError::Refused(r) => refused(r).into(),
            EnrollError::Blocked | EnrollError::Inactive => {
                FedError::new(StatusCode::FORBIDDEN, "invalid_request", d).into()
            }
            EnrollError::Configuration(_) => FedError::invalid_request(d).into(),
            EnrollError::Denied(denial) => Refusal::Denied(denial),
            EnrollError::Internal => internal().into(),
        }
    }
}

impl From<CheckError> for FedError {
    fn from(e: CheckError) -> Self {
        let d = e.to_string();
        match e {
            CheckError::Refused(r) => refused(r),
            CheckError::UnknownType => FedError::not_found(d),
            CheckError::Internal => internal(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::response::IntoResponse as _;
    use pharos_shared::checks::Denial;
    use pharos_shared::trust_mark_issuer::Standing;

    fn status(e: impl Into<FedError>) -> (u16, &'static str) {
        let e = e.into();
        (e.status.as_u16(), e.code)
    }

    #[test]
    fn trigger_errors_keep_their_statuses() {
        let m = || "m".to_owned();
        let busy = TriggerError::Refused(Refused::Busy);
        assert_eq!(status(busy), (503, "temporarily_unavailable"));
        let stopped = TriggerError::Refused(Refused::Stopped);
        assert_eq!(status(stopped), (503, "temporarily_unavailable"));
        assert_eq!(status(TriggerError::UnknownSubordinate), (404, "not_found"));
        assert_eq!(status(TriggerError::NotActiveOrPending), (404, "not_found"));
        assert_eq!(
            status(TriggerError::FetchFailed(m())),
            (502, "server_error")
        );
        assert_eq!(
            status(TriggerError::BadSignature(m())),
            (401, "invalid_client")
        );
        let invalid = TriggerError::InvalidConfiguration(m());
        assert_eq!(status(invalid), (500, "server_error"));
        assert_eq!(status(TriggerError::Internal), (500, "server_error"));
    }

    #[test]
    fn push_errors_keep_their_statuses() {
        let m = || "m".to_owned();
        assert_eq!(
            status(PushError::Refused(Refused::Busy)),
            (503, "temporarily_unavailable")
        );
        assert_eq!(status(PushError::Invalid(m())), (400, "invalid_request"));
        assert_eq!(
            status(PushError::Stale { last: 1 }),
            (400, "invalid_request")
        );
        assert_eq!(status(PushError::UnknownSubordinate), (404, "not_found"));
        assert_eq!(status(PushError::NotActiveOrPending), (404, "not_found"));
        assert_eq!(status(PushError::NoStoredKeys), (401, "invalid_client"));
        let unsigned = PushError::NotSignedByCurrentKey(m());
        assert_eq!(status(unsigned), (401, "invalid_client"));
        assert_eq!(status(PushError::Internal), (500, "server_error"));
    }

    #[test]
    fn jti_errors_keep_their_statuses() {
        assert_eq!(
            status(JtiError::Refused(Refused::Busy)),
            (503, "temporarily_unavailable")
        );
        assert_eq!(status(JtiError::Internal), (500, "server_error"));
    }

    #[test]
    fn trust_mark_errors_keep_their_statuses() {
        let record = |e: RecordMarkError| match Refusal::from(e) {
            Refusal::Fed(status, code, _) => (status.as_u16(), code),
            Refusal::Denied(d) => panic!("{d:?}"),
        };
        let busy = RecordMarkError::Refused(Refused::Busy);
        assert_eq!(record(busy), (503, "temporarily_unavailable"));
        assert_eq!(record(RecordMarkError::Internal), (500, "server_error"));
        // A subject whose standing changed under the request: answered as that standing.
        let blocked = RecordMarkError::NotAdmitted(Standing::Blocked);
        assert_eq!(record(blocked), (403, "invalid_request"));
        let gone = RecordMarkError::NotAdmitted(Standing::NotEntitled);
        assert_eq!(record(gone), (404, "not_found"));
        let full = MarkRequestError::Full { max: 7 };
        let d = full.to_string();
        assert!(
            d.contains("at most 7") && d.contains("trust_mark_pending_max"),
            "{d}"
        );
        assert_eq!(status(full), (503, "temporarily_unavailable"));
        let unfetched = MarkRequestError::Configuration("unreachable".into());
        assert_eq!(status(unfetched), (400, "invalid_request"));
        let busy = MarkRequestError::Refused(Refused::Busy);
        assert_eq!(status(busy), (503, "temporarily_unavailable"));
        assert_eq!(status(MarkRequestError::UnknownType), (404, "not_found"));
        assert_eq!(status(MarkRequestError::Blocked), (403, "invalid_request"));
        assert_eq!(status(MarkRequestError::Internal), (500, "server_error"));
    }

    #[test]
    fn enroll_errors_keep_their_statuses() {
        let answer = |e: EnrollError| {
            let r = Refusal::from(e).into_response();
            let status = r.status().as_u16();
            (status, r)
        };
        let code = |e: EnrollError| match Refusal::from(e) {
            Refusal::Fed(status, code, _) => (status.as_u16(), code.to_owned()),
            Refusal::Denied(d) => (d.status, d.error),
        };
        let down = EnrollError::Refused(Refused::Unavailable);
        assert_eq!(code(down), (503, "temporarily_unavailable".into()));
        let busy = EnrollError::Refused(Refused::Busy);
        assert_eq!(code(busy), (503, "temporarily_unavailable".into()));
        assert_eq!(code(EnrollError::Blocked), (403, "invalid_request".into()));
        assert_eq!(code(EnrollError::Inactive), (403, "invalid_request".into()));
        let bad = EnrollError::Configuration("wrong media type".into());
        assert_eq!(code(bad.clone()), (400, "invalid_request".into()));
        assert!(bad.to_string().contains("wrong media type"));
        assert_eq!(code(EnrollError::Internal), (500, "server_error".into()));
        let denied = |status, error: &str| EnrollError::Denied(Denial::new(status, error, "no"));
        assert_eq!(code(denied(403, "forbidden")), (403, "forbidden".into()));
        assert_eq!(code(denied(418, "teapot")), (418, "teapot".into()));
        assert_eq!(answer(denied(418, "teapot")).0, 418);
    }

    #[test]
    fn check_errors_keep_their_statuses() {
        let busy = CheckError::Refused(Refused::Busy);
        assert_eq!(status(busy), (503, "temporarily_unavailable"));
        assert_eq!(status(CheckError::UnknownType), (404, "not_found"));
        assert_eq!(status(CheckError::Internal), (500, "server_error"));
    }

    #[test]
    fn internal_details_are_not_shown() {
        let e: FedError = TriggerError::InvalidConfiguration("secret detail".into()).into();
        assert_eq!(e.description, "internal error");
    }
}
