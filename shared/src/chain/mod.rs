//! Trust Chain collection and validation (OpenID Federation 1.0 §4, §10).
//!
//! Pure logic: statements are obtained through the [`Fetcher`] trait (implemented with an
//! HTTP client by the planes, in memory by the tests), and time is always the `now` parameter.
//!
//! - [`resolve`] collects every candidate chain upwards from a subject's Entity Configuration
//!   along `authority_hints` to any requested Trust Anchor, validates each candidate with
//!   [`validate_chain`] and picks one (shortest, then latest expiry).
//! - [`validate_chain`] validates an already-assembled chain (subject EC first, Trust Anchor EC
//!   last): per-statement checks (§3.2), linkage and signatures (§10.2), constraints (§6.2) and
//!   metadata resolution (§6.1.4).
//!
//! - [`explain`] is [`resolve`] with every step recorded (the chain explainer): the same
//!   collection and validation, which record into a [`ChainTrace`] when given one.
//! - [`GraceRule`] is the resolver cache rule (serve within `grace_period`, refresh once
//!   `time_elapsed_grace_factor` of the lifetime has elapsed), shared by the data plane caches.
//! - [`response_claims`] shapes a resolve response (§8.3.2) from a [`ResolvedChain`] and the
//!   Trust Marks that passed [`crate::trust_mark::verify`].
//!
//! Structural, temporal, cryptographic and constraint failures are
//! [`crate::Error::InvalidTrustChain`]; metadata policy failures stay
//! [`crate::Error::InvalidPolicy`] / [`crate::Error::InvalidMetadata`].

mod candidates;
mod claims;
mod explain;
mod freshness;
mod resolve;
mod response;
mod statement;
mod trace;
mod validate;

#[cfg(test)]
pub(crate) mod tests;

use serde_json::{Map, Value};

use crate::Error;
use crate::interop::Interop;
use crate::jose::Jwks;

pub use crate::claims::STANDARD_CLAIMS;
pub use candidates::Fetcher;
pub use explain::{Explanation, MAX_EXPLAINED_MARKS, OtherChain, TrustMarkStep, explain};
pub use freshness::{Freshness, GraceRule};
pub use resolve::resolve;
pub use response::{
    RESOLVE_RESPONSE_CONTENT_TYPE, RESOLVE_RESPONSE_TYP, response_claims, response_exp,
};
pub use statement::{Statement, is_entity_identifier};
pub use trace::{ChainTrace, ConstraintStep, Failure, StatementStep};
pub use validate::{ValidatedChain, validate_chain};

pub use crate::time::CLOCK_SKEW;

/// Default for [`ResolveRequest::max_depth`]: the most Subordinate Statements a chain may have.
/// Real federations are two or three levels deep; eight leaves room without inviting abuse.
pub const DEFAULT_MAX_DEPTH: usize = 8;

/// At most this many `authority_hints` are followed per Entity (§18.1 DoS advice); the rest
/// are ignored and noted in the failure summary.
pub const MAX_AUTHORITY_HINTS: usize = 16;

/// At most this many fetches (Entity Configurations plus Subordinate Statements) per
/// [`resolve`] call, so that a hostile federation cannot make the resolver fetch forever.
pub const MAX_FETCHES: usize = 256;

/// A Trust Anchor the caller accepts.
///
/// The keys are pinned when the trust anchor repository holds them; otherwise (`None`) the
/// anchor's keys are taken from its own self-signed Entity Configuration (trust on first use,
/// as go-oidfed does).
///
/// Every chain validator (resolve, client authentication, enrollment's `trust_path` checker,
/// entity collection) receives its anchors in this form, built by the data plane in one place
/// (`snapshot::TrustAnchors::spec`), so the interoperation rules apply wherever a chain is validated.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AnchorSpec {
    /// The Trust Anchor's Entity Identifier, compared code point by code point (§16).
    pub entity_id: String,
    /// Keys configured out of band that must verify the anchor's Entity Configuration.
    pub jwks: Option<Jwks>,
    /// The draft-era leniencies in force for chains to this anchor (settings and the trust
    /// anchor record; see [`crate::interop`]).
    pub interop: Interop,
    /// Whether a Trust Mark Issuer this anchor lists in `trust_mark_issuers` may be trusted
    /// on its self-signed Entity Configuration when it has no trust chain to the anchor (the
    /// trust anchor record's `trust_mark_issuer_self_signed`, off by default; see
    /// [`crate::trust_mark_issuer_keys`]).
    pub trust_mark_issuer_self_signed: bool,
    /// Whether the resolver asks each admitted Trust Mark's issuer for its status before
    /// returning it (the trust anchor record's `trust_mark_status`, off by default).
    pub trust_mark_status: TrustMarkStatusCheck,
}

/// How a resolver treats the status of the Trust Marks it returns for chains to an anchor:
/// not asked (the marks' signatures and `exp` decide), or asked at each mark's issuer's
/// `federation_trust_mark_status_endpoint` (§8.4), dropping marks that are not `active`; an
/// issuer that cannot be asked drops its marks (`fail_closed`) or keeps them (`fail_open`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum TrustMarkStatusCheck {
    /// Not asked.
    #[default]
    Off,
    /// Asked; an issuer that cannot be asked drops its marks.
    FailClosed,
    /// Asked; an issuer that cannot be asked keeps its marks.
    FailOpen,
}

impl TrustMarkStatusCheck {
    /// Every value, in the order the Admin API documents them.
    pub const ALL: [Self; 3] = [Self::Off, Self::FailClosed, Self::FailOpen];

    /// The word used in the Admin API and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::FailClosed => "fail_closed",
            Self::FailOpen => "fail_open",
        }
    }

    /// Parses the Admin API / database word.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// What [`resolve`] needs: one request of the resolve endpoint, plus the clock and the depth
/// bound, so that the logic stays free of configuration and clock access.
#[derive(Clone, Copy, Debug)]
pub struct ResolveRequest<'a> {
    /// The Entity whose chain is wanted (`sub`).
    pub subject: &'a str,
    /// Acceptable Trust Anchors (`trust_anchor`, repeatable); earlier ones win ties.
    pub anchors: &'a [AnchorSpec],
    /// Entity Types to keep in the resolved metadata (`entity_type`); empty keeps all.
    pub entity_types: &'a [String],
    /// The current time, Unix seconds.
    pub now: i64,
    /// The most Subordinate Statements a chain may contain (see [`DEFAULT_MAX_DEPTH`]).
    pub max_depth: usize,
}

/// A validated chain and everything a resolve response is built from.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedChain {
    /// The Entity ID of the Trust Anchor the chain ends at.
    pub trust_anchor: String,
    /// Compact JWSs: subject EC first, then each statement about an Entity issued by its
    /// superior, ending with the Trust Anchor's EC (the resolve response `trust_chain`).
    pub chain: Vec<String>,
    /// Resolved metadata (superior overlay, `allowed_entity_types`, merged policies applied),
    /// reduced to the requested Entity Types when some were given.
    pub metadata: Value,
    /// The chain's expiry: the minimum `exp` over its statements (§10.4).
    pub exp: i64,
    /// Claims of the subject's Entity Configuration (its `trust_marks` are checked later).
    pub subject_claims: Map<String, Value>,
    /// Claims of the Trust Anchor's Entity Configuration (`trust_mark_issuers`/`_owners`).
    pub anchor_claims: Map<String, Value>,
}

/// Shorthand for a chain failure with a message.
fn invalid(msg: impl std::fmt::Display) -> Error {
    Error::InvalidTrustChain(msg.to_string())
}

/// Prefix a failure with where in the chain it happened. Policy and metadata errors keep their
/// kind (they map onto `invalid_metadata`), every other error becomes an invalid chain.
fn at(position: impl std::fmt::Display, e: Error) -> Error {
    match e {
        Error::InvalidPolicy(_) | Error::InvalidMetadata(_) => e,
        Error::InvalidTrustChain(m) => invalid(format!("{position}: {m}")),
        other => invalid(format!("{position}: {other}")),
    }
}
