//! Why a command failed, one type per command kind.
//!
//! The control plane answers with facts (`UnknownSubordinate`, `FetchFailed`, …) and knows
//! nothing of HTTP; the data plane turns them into federation error responses in one place
//! (`pharos_dataplane`'s `refusals` module).

use pharos_shared::checks::Denial;

use pharos_shared::trust_mark_issuer::Standing;

/// The command was not run at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The channel, or the command kind's share of the control plane, is full.
    #[error("too many requests in progress; retry later")]
    Busy,
    /// The control plane has stopped (shutting down) or dropped the command.
    #[error("shutting down")]
    Stopped,
    /// The command ran into an unreachable database: nothing was stored, and a retry once
    /// the database is back will succeed (503, as the Admin API answers the same outage).
    #[error("the database is unreachable; retry later")]
    Unavailable,
}

/// A command kind's error type: one of its variants carries a [`Refused`], which
/// [`super::Commands::call`] reads to count busy refusals.
pub trait CommandError: From<Refused> {
    /// The refusal, when the command was not run.
    fn refused(&self) -> Option<Refused>;
}

/// Implements [`CommandError`] for error types whose `Refused` variant holds the refusal.
macro_rules! command_errors {
    ($($t:ty),+ $(,)?) => {$(
        impl CommandError for $t {
            fn refused(&self) -> Option<Refused> {
                match self {
                    Self::Refused(r) => Some(*r),
                    _ => None,
                }
            }
        }
    )+};
}

command_errors!(
    TriggerError,
    PushError,
    JtiError,
    HistoryError,
    RecordMarkError,
    MarkRequestError,
    EnrollError,
    CheckError,
    CollectError,
);

/// Why a jwks_update_trigger did not refresh keys.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TriggerError {
    /// Not run.
    #[error(transparent)]
    Refused(#[from] Refused),
    /// No subordinate has this entity identifier.
    #[error("subordinate not known")]
    UnknownSubordinate,
    /// The subordinate is blocked or inactive.
    #[error("subordinate not known")]
    NotActiveOrPending,
    /// Its Entity Configuration could not be fetched (or had no `exp`).
    #[error("{0}")]
    FetchFailed(String),
    /// Its Entity Configuration does not verify with the stored keys.
    #[error("{0}")]
    BadSignature(String),
    /// Its Entity Configuration is malformed (wrong `typ`, `iss`/`sub`, no `jwks`).
    #[error("invalid entity configuration: {0}")]
    InvalidConfiguration(String),
    /// Database or snapshot failure (logged by the control plane).
    #[error("internal error")]
    Internal,
}

/// Why a jwks_update push was not stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PushError {
    /// Not run.
    #[error(transparent)]
    Refused(#[from] Refused),
    /// The token's form is wrong (checked in the data plane, before any command).
    #[error("{0}")]
    Invalid(String),
    /// No subordinate has the token's `sub`.
    #[error("subordinate not known")]
    UnknownSubordinate,
    /// The subordinate is blocked or inactive.
    #[error("subordinate not known")]
    NotActiveOrPending,
    /// Nothing to check the signature against.
    #[error("no keys stored for the subordinate")]
    NoStoredKeys,
    /// The signature does not verify with a stored key.
    #[error("not signed by a current key: {0}")]
    NotSignedByCurrentKey(String),
    /// Its `iat` is not newer than the last push accepted: a replay of an older push (which
    /// could put a removed key back), or pushes out of order.
    #[error("not newer than the last accepted push (iat {last})")]
    Stale {
        /// The `iat` of the last accepted push.
        last: i64,
    },
    /// Database or snapshot failure (logged by the control plane).
    #[error("internal error")]
    Internal,
}

/// Why a client assertion's `jti` could not be recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JtiError {
    /// Not run.
    #[error(transparent)]
    Refused(#[from] Refused),
    /// Database failure (logged by the control plane).
    #[error("internal error")]
    Internal,
}

/// Why a subordinate's history could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistoryError {
    /// Not run.
    #[error(transparent)]
    Refused(#[from] Refused),
    /// Database failure (logged by the control plane).
    #[error("internal error")]
    Internal,
}

/// Why an issued trust mark could not be recorded (it is then not handed out: a mark the
/// status endpoint cannot find would be answered 404 there).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordMarkError {
    /// Not run.
    #[error(transparent)]
    Refused(#[from] Refused),
    /// The stored subject (read inside the write) does not admit the mark any more: blocked,
    /// made inactive or removed since the snapshot the request was decided on.
    #[error("subject cannot obtain this trust mark")]
    NotAdmitted(Standing),
    /// Database or snapshot failure (logged by the control plane).
    #[error("internal error")]
    Internal,
}

/// Why a trust mark request was not stored as pending.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MarkRequestError {
    /// Not run.
    #[error(transparent)]
    Refused(#[from] Refused),
    /// No issuance spec has this type (any more).
    #[error("'trust_mark_type' not known")]
    UnknownType,
    /// The subject is blocked for this type.
    #[error("subject cannot obtain this trust mark")]
    Blocked,
    /// The subject's Entity Configuration could not be fetched, or is not a valid,
    /// self-signed Entity Configuration of the subject.
    #[error("could not obtain or verify the entity configuration: {0}")]
    Configuration(String),
    /// As many requests of this type as allowed wait for a decision already.
    #[error(
        "at most {max} requests for this trust mark type may wait for an administrator's \
         decision (federation.trust_mark_pending_max); try again once one is decided"
    )]
    Full {
        /// The bound (`federation.trust_mark_pending_max`).
        max: u32,
    },
    /// Database or snapshot failure (logged by the control plane).
    #[error("internal error")]
    Internal,
}

/// Why an enrollment (or enrollment request) was not stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnrollError {
    /// Not run.
    #[error(transparent)]
    Refused(#[from] Refused),
    /// The subordinate is blocked.
    #[error("the entity cannot enroll")]
    Blocked,
    /// An administrator set the subordinate inactive (or to a status enrollment does not
    /// know): enrollment never changes what an administrator decided.
    #[error(
        "an administrator set this entity inactive; enrollment does not reactivate it, only an administrator does"
    )]
    Inactive,
    /// The entity's configuration could not be fetched, or is not a valid, self-signed
    /// Entity Configuration of the requested entity.
    #[error("could not obtain or verify the entity configuration: {0}")]
    Configuration(String),
    /// The endpoint's entity check denied it: answered with the check's status and body.
    #[error("{}", .0.error_description)]
    Denied(Denial),
    /// Database or snapshot failure (logged by the control plane).
    #[error("internal error")]
    Internal,
}

/// Why a trust mark eligibility check gave no verdict (a verdict, even a denial, is an answer).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// Not run.
    #[error(transparent)]
    Refused(#[from] Refused),
    /// No issuance spec has this type (any more).
    #[error("'trust_mark_type' not known")]
    UnknownType,
    /// The stored checker configuration cannot be used (logged by the control plane).
    #[error("internal error")]
    Internal,
}

/// Why an on-demand entity collection has no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CollectError {
    /// Not run: as many collections as allowed are running.
    #[error(transparent)]
    Refused(#[from] Refused),
    /// The Trust Anchor's Entity Configuration could not be fetched or does not verify.
    #[error("trust anchor not usable: {0}")]
    AnchorUnusable(String),
}
