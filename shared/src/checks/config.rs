//! Parsing a check's `{type, config}` into a [`Checker`]. Every problem is reported with the
//! path of the field (`checker.config.url`, `checker.config[1].type`, …) so that the Admin API
//! can refuse the configuration with a message the operator can act on.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::config::Duration;
use crate::jose::Jwks;

/// Checks nest at most this deep (`multiple_and` inside `multiple_or` …); deeper is refused.
pub const MAX_NESTING: usize = 8;

/// A parsed entity check.
#[derive(Debug, Clone, PartialEq)]
pub enum Checker {
    /// `none`: always passes.
    None,
    /// `entity_id`: the entity must be listed.
    EntityId(EntityIds),
    /// `authority_hints`: the EC's `authority_hints` must name a given superior.
    AuthorityHints(AuthorityHints),
    /// `trust_path`: a valid chain to one of the given trust anchors must exist.
    TrustPath(TrustPath),
    /// `trust_mark`: the EC must carry a valid trust mark of a given type.
    TrustMark(TrustMarkCheck),
    /// `multiple_and`: all must pass; the first denial is returned.
    All(Vec<Checker>),
    /// `multiple_or`: one must pass.
    Any(Vec<Checker>),
    /// `db_list`: the stored trust mark subject standing (trust mark eligibility only).
    DbList,
    /// `http_list`: the entity must be in a JSON array served by an operator's service.
    HttpList(HttpList),
    /// `http_list_jwt`: as `http_list`, the list being a claim of a signed JWT.
    HttpListJwt(HttpListJwt),
    /// `cmd`: an operator program decides (exit 0 = pass).
    Cmd(Cmd),
    /// `http`: an operator web service decides (2xx = pass).
    Http(Http),
}

/// `entity_id` config.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntityIds {
    /// Allowed entity identifiers.
    pub entity_ids: Vec<String>,
}

/// `authority_hints` config.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthorityHints {
    /// The superior the EC must name.
    pub entity_id: String,
}

/// `trust_path` config.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustPath {
    /// Entity identifiers of trust anchors, looked up in the trust anchor repository when the
    /// check runs (never inline keys).
    pub trust_anchors: Vec<String>,
}

/// The owner of a trust mark type, for delegated marks verified with inline issuer keys.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustMarkOwner {
    /// The owner's entity identifier.
    pub entity_id: String,
    /// The owner's keys (verify the delegation JWT).
    pub jwks: Jwks,
}

/// `trust_mark` config: the mark is verified either through trust anchors (their
/// `trust_mark_issuers` / `trust_mark_owners`) or with given issuer keys.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustMarkCheck {
    /// The type the EC must carry.
    pub trust_mark_type: String,
    /// Trust anchors (entity identifiers from the repository).
    #[serde(default)]
    pub trust_anchors: Vec<String>,
    /// Keys of the trust mark issuer, when not verified through anchors.
    #[serde(default)]
    pub trust_mark_issuer_jwks: Option<Jwks>,
    /// The type's owner, when marks are issued under delegation.
    #[serde(default)]
    pub trust_mark_owner: Option<TrustMarkOwner>,
}

/// `http_list` config.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpList {
    /// Where the list is served.
    pub url: String,
    /// HTTP method (default GET).
    #[serde(default = "get")]
    pub method: String,
    /// Extra request headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Timeout (default 30 s).
    #[serde(default = "thirty_seconds")]
    pub timeout: Duration,
    /// How long a fetched list is reused (default 60 s).
    #[serde(default = "sixty_seconds")]
    pub cache_ttl: Duration,
}

/// How an `http_list_jwt` list is verified.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, tag = "mode", rename_all = "snake_case")]
pub enum ListVerification {
    /// With the given keys.
    Jwks {
        /// The signer's keys.
        jwks: Jwks,
    },
    /// The JWT's `iss` must have a valid chain to one of these anchors; verified with the
    /// issuer's keys from that chain.
    TrustAnchor {
        /// Entity identifiers of trust anchors (from the repository).
        trust_anchors: Vec<String>,
    },
}

/// `http_list_jwt` config.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpListJwt {
    /// Where the signed list is served.
    pub url: String,
    /// HTTP method (default GET).
    #[serde(default = "get")]
    pub method: String,
    /// Extra request headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Timeout (default 30 s).
    #[serde(default = "thirty_seconds")]
    pub timeout: Duration,
    /// How long a fetched list is reused (default 60 s).
    #[serde(default = "sixty_seconds")]
    pub cache_ttl: Duration,
    /// The claim holding the list (default `entities`).
    #[serde(default = "entities")]
    pub list_claim: String,
    /// How the JWT is verified.
    pub verification: ListVerification,
}

/// `cmd` config.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cmd {
    /// The program (run directly, no shell).
    pub path: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// `K=V` entries set in its environment, and `K` entries naming a variable of Pharos's
    /// own environment to pass through (nothing else is inherited beyond
    /// [`super::PROGRAM_ENV_ALLOWED`]).
    #[serde(default)]
    pub env: Vec<String>,
    /// Timeout (default 30 s).
    #[serde(default = "thirty_seconds")]
    pub timeout: Duration,
}

/// What an `http` check sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BodyMode {
    /// The EC's claims as JSON.
    #[default]
    EntityConfiguration,
    /// `{"sub", "entity_types"}`.
    EntityId,
    /// No body.
    None,
}

/// `http` config.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Http {
    /// The service.
    pub url: String,
    /// HTTP method (default POST).
    #[serde(default = "post")]
    pub method: String,
    /// Extra request headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Timeout (default 30 s).
    #[serde(default = "thirty_seconds")]
    pub timeout: Duration,
    /// What the request carries.
    #[serde(default)]
    pub body_mode: BodyMode,
}

fn get() -> String {
    "GET".into()
}
fn post() -> String {
    "POST".into()
}
fn entities() -> String {
    "entities".into()
}
fn thirty_seconds() -> Duration {
    Duration::from_secs(30)
}
fn sixty_seconds() -> Duration {
    Duration::from_secs(60)
}

impl Checker {
    /// Parses `{"type": …, "config": …}` (also `checker_type` + `checker_config`). `at` names
    /// the value in messages, e.g. `checker`.
    pub fn parse(value: &Value, at: &str) -> Result<Self, String> {
        parse(value, at, 0)
    }
}

fn parse(value: &Value, at: &str, depth: usize) -> Result<Checker, String> {
    if depth > MAX_NESTING {
        return Err(format!(
            "{at}: checks nest deeper than {MAX_NESTING} levels"
        ));
    }
    let obj = value
        .as_object()
        .ok_or_else(|| format!("{at} must be an object with 'type' and 'config'"))?;
    let (kind, config) = match (obj.get("type"), obj.get("checker_type")) {
        (Some(k), None) => (k, obj.get("config")),
        (None, Some(k)) => (k, obj.get("checker_config")),
        (Some(_), Some(_)) => return Err(format!("{at}: give either type or checker_type")),
        (None, None) => return Err(format!("{at}.type is required")),
    };
    if let Some(extra) = obj
        .keys()
        .find(|k| !["type", "config", "checker_type", "checker_config"].contains(&k.as_str()))
    {
        return Err(format!("{at}.{extra} is not a checker field"));
    }
    let kind = kind
        .as_str()
        .ok_or_else(|| format!("{at}.type must be a string"))?;
    let null = Value::Null;
    let config = config.unwrap_or(&null);
    let cfg_at = format!("{at}.config");
    Ok(match kind {
        "none" => Checker::None,
        "db_list" => Checker::DbList,
        "entity_id" => Checker::EntityId(typed(config, &cfg_at)?),
        "authority_hints" => Checker::AuthorityHints(typed(config, &cfg_at)?),
        "trust_path" => {
            let c: TrustPath = typed(config, &cfg_at)?;
            if c.trust_anchors.is_empty() {
                return Err(format!(
                    "{cfg_at}.trust_anchors must name at least one anchor"
                ));
            }
            Checker::TrustPath(c)
        }
        "trust_mark" => {
            let c: TrustMarkCheck = typed(config, &cfg_at)?;
            if c.trust_anchors.is_empty() && c.trust_mark_issuer_jwks.is_none() {
                return Err(format!(
                    "{cfg_at}: give trust_anchors or trust_mark_issuer_jwks"
                ));
            }
            Checker::TrustMark(c)
        }
        "multiple_and" | "multiple_or" => {
            // lighthouse writes the list as the config itself; `{"checkers": [...]}` is accepted too.
            let list = match config {
                Value::Array(a) => a,
                Value::Object(o) => match o.get("checkers") {
                    Some(Value::Array(a)) => a,
                    _ => return Err(format!("{cfg_at} must be a list of checks")),
                },
                _ => return Err(format!("{cfg_at} must be a list of checks")),
            };
            if list.is_empty() {
                return Err(format!("{cfg_at} must name at least one check"));
            }
            let checks = list
                .iter()
                .enumerate()
                .map(|(i, c)| parse(c, &format!("{cfg_at}[{i}]"), depth + 1))
                .collect::<Result<Vec<_>, _>>()?;
            if kind == "multiple_and" {
                Checker::All(checks)
            } else {
                Checker::Any(checks)
            }
        }
        "http_list" => {
            let c: HttpList = typed(config, &cfg_at)?;
            check_url(&c.url, &cfg_at)?;
            check_request(&c.method, &c.headers, c.timeout, &cfg_at)?;
            Checker::HttpList(c)
        }
        "http_list_jwt" => {
            let c: HttpListJwt = typed(config, &cfg_at)?;
            check_url(&c.url, &cfg_at)?;
            check_request(&c.method, &c.headers, c.timeout, &cfg_at)?;
            Checker::HttpListJwt(c)
        }
        "cmd" => {
            let c: Cmd = typed(config, &cfg_at)?;
            if c.path.trim().is_empty() {
                return Err(format!("{cfg_at}.path must not be empty"));
            }
            if let Some(bad) = c.env.iter().find(|e| !env_entry(e)) {
                return Err(format!(
                    "{cfg_at}.env entry {bad:?} is neither K=V nor the name K of a variable to \
                     pass through"
                ));
            }
            if c.timeout.get().is_zero() {
                return Err(format!("{cfg_at}.timeout must be positive"));
            }
            Checker::Cmd(c)
        }
        "http" => {
            let c: Http = typed(config, &cfg_at)?;
            check_url(&c.url, &cfg_at)?;
            check_request(&c.method, &c.headers, c.timeout, &cfg_at)?;
            Checker::Http(c)
        }
        other => return Err(format!("{at}.type {other:?} is not a known checker type")),
    })
}

/// A `cmd` environment entry: `K=V`, or a bare name `K` (to pass through), `K` non-empty and
/// without `=` or NUL (which no environment can hold).
fn env_entry(e: &str) -> bool {
    let name = e.split_once('=').map_or(e, |(k, _)| k);
    !name.is_empty() && !e.contains('\0')
}

/// Deserialises `config` into `T`; serde's message names the field.
fn typed<T: DeserializeOwned>(config: &Value, at: &str) -> Result<T, String> {
    T::deserialize(config).map_err(|e| format!("{at}: {e}"))
}

/// The parts of an HTTP request that would otherwise fail only when the check runs: the
/// method and header names must be tokens (RFC 9110 §5.6.2), header values visible ASCII
/// (or spaces and tabs), and the timeout positive.
fn check_request(
    method: &str,
    headers: &BTreeMap<String, String>,
    timeout: Duration,
    at: &str,
) -> Result<(), String> {
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    };
    if !token(method) {
        return Err(format!("{at}.method {method:?} is not an HTTP method"));
    }
    for (name, value) in headers {
        if !token(name) {
            return Err(format!("{at}.headers: {name:?} is not a header name"));
        }
        if !value
            .bytes()
            .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
        {
            return Err(format!("{at}.headers.{name}: value must be visible ASCII"));
        }
    }
    if timeout.get().is_zero() {
        return Err(format!("{at}.timeout must be positive"));
    }
    Ok(())
}

fn check_url(url: &str, at: &str) -> Result<(), String> {
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(()),
        _ => Err(format!("{at}.url must be an http(s) URL")),
    }
}
