//! Entity checks: whether an entity may enroll (enroll endpoint) or obtain a trust mark
//! (eligibility modes with a checker).
//!
//! A check is configured as `{"type": …, "config": …}` (lighthouse's flat `checker_type` +
//! `checker_config` is normalised to that by the callers) and parsed once into a [`Checker`],
//! so an invalid configuration is refused when it is stored, with a message naming the field,
//! never discovered by the first entity that tries to enroll.
//!
//! The logic is pure: whatever needs the network, a process or the database goes through
//! [`CheckEnv`], which the control plane implements (and tests implement in memory). A check
//! answers [`Verdict::Pass`] or a [`Denial`]: the HTTP status and the federation error body
//! the endpoint answers with.

mod cmd;
mod config;
mod http;
mod http_list;
mod run;
mod trust_mark;
mod trust_path;

#[cfg(test)]
mod tests;

use std::future::Future;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::chain::{AnchorSpec, Fetcher};
use crate::trust_mark_issuer::Standing;

pub use cmd::MAX_DESCRIPTION;
pub use config::{
    AuthorityHints, BodyMode, Checker, Cmd, EntityIds, Http, HttpList, HttpListJwt,
    ListVerification, TrustMarkCheck, TrustMarkOwner, TrustPath,
};
pub use run::check;

/// The entity being checked.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    /// Its Entity Identifier (`sub`).
    pub entity_id: &'a str,
    /// Its entity types: the request's `entity_type` values, else the keys of its metadata.
    pub entity_types: &'a [String],
    /// The claims of its Entity Configuration, whose self-signature has been verified.
    pub configuration: &'a Map<String, Value>,
    /// The compact JWS of that Entity Configuration.
    pub configuration_jws: &'a str,
    /// The trust mark type when checking trust mark eligibility (`db_list` needs it).
    pub trust_mark_type: Option<&'a str>,
}

/// A check's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The entity passes.
    Pass,
    /// The entity does not pass (or the check could not be carried out).
    Deny(Denial),
}

/// Why a check did not pass: the HTTP status and the `{"error","error_description"}` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// HTTP status of the endpoint's answer.
    pub status: u16,
    /// The federation error code (`invalid_request`, `forbidden`, `server_error`, …).
    pub error: String,
    /// Human-readable detail.
    pub error_description: String,
}

impl Denial {
    /// A denial with `status`, `error` and `description`.
    pub fn new(status: u16, error: &str, description: impl Into<String>) -> Self {
        Self {
            status,
            error: error.to_owned(),
            error_description: description.into(),
        }
    }

    /// `403 forbidden`.
    pub fn forbidden(description: impl Into<String>) -> Self {
        Self::new(403, "forbidden", description)
    }
}

/// An HTTP request a check makes to a service the operator configured (`http`, `http_list`,
/// `http_list_jwt`). These URLs come from the Admin API, not from the entity, so they may be
/// private addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpCall {
    /// `GET`, `POST`, …
    pub method: String,
    /// The URL.
    pub url: String,
    /// Extra request headers.
    pub headers: Vec<(String, String)>,
    /// Request body (sent with `Content-Type: application/json`).
    pub body: Option<Vec<u8>>,
    /// Time allowed for the whole exchange.
    pub timeout: Duration,
    /// The environment may answer from a cache entry younger than this (`http_list`).
    pub cache_ttl: Option<Duration>,
}

/// The answer to an [`HttpCall`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpAnswer {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`, if sent.
    pub content_type: Option<String>,
    /// The body (at most the environment's size limit: a longer answer is an error).
    pub body: Vec<u8>,
}

/// The variables of Pharos's environment every program check gets, when set: enough to find
/// programs, read text and tell the time. Nothing else is inherited — Pharos's environment
/// holds database DSNs with passwords (`SVC_STORAGE_…`) and other secrets — unless the checker
/// configuration names it.
pub const PROGRAM_ENV_ALLOWED: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR"];

/// An operator program a `cmd` check runs (never through a shell).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessCall {
    /// The program.
    pub path: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment variables set for the program (its environment is otherwise cleared to
    /// [`PROGRAM_ENV_ALLOWED`] plus `inherit`).
    pub env: Vec<(String, String)>,
    /// Variables of Pharos's own environment the checker configuration names (`env` entries
    /// without `=`), passed through when set.
    pub inherit: Vec<String>,
    /// Written to its standard input (the Entity Configuration's claims as JSON).
    pub stdin: Vec<u8>,
    /// Killed after this long.
    pub timeout: Duration,
}

/// How an operator program ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessOutcome {
    /// It exited (code `None` when killed by a signal); stderr cut at the output limit.
    Exited {
        /// The exit code.
        code: Option<i32>,
        /// What it wrote to standard error.
        stderr: String,
    },
    /// It did not end within its timeout and was killed.
    TimedOut,
    /// It could not be started.
    CannotStart(String),
}

/// What checks need from outside: implemented by the control plane over the network, the
/// trust anchor repository and processes; in memory by tests.
pub trait CheckEnv: Send + Sync {
    /// How statements of other entities are fetched (the resolver's outbound rules).
    type Fetcher: Fetcher;

    /// The statement fetcher.
    fn fetcher(&self) -> &Self::Fetcher;

    /// The current time, Unix seconds.
    fn now(&self) -> i64;

    /// `entity_id` as the trust anchor repository knows it (keys pinned when stored), or
    /// `None` when it is not a configured trust anchor.
    fn anchor(&self, entity_id: &str) -> Option<AnchorSpec>;

    /// Whether trust marks verified outside any anchor's rules (with configured issuer keys)
    /// may use the draft-era shapes (`id` for the type): off under `federation.profile:
    /// strict`. Marks verified through an anchor follow that anchor's rules instead.
    fn draft_shapes(&self) -> bool {
        true
    }

    /// The stored standing of `sub` for `trust_mark_type` (`db_list`).
    fn standing(&self, trust_mark_type: &str, sub: &str) -> Standing;

    /// Performs an HTTP exchange with an operator-configured service.
    fn http(&self, call: HttpCall) -> impl Future<Output = Result<HttpAnswer, String>> + Send;

    /// Runs an operator program.
    fn run(&self, call: ProcessCall) -> impl Future<Output = ProcessOutcome> + Send;
}
