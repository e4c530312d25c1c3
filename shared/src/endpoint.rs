//! Federation endpoint types and their type-specific configuration.
//!
//! The endpoint registry is data, not code: operators create, move and disable endpoints at run
//! time. This module owns the closed set of endpoint *types*, the metadata names under which each
//! is published, the HTTP method each answers, and the validation of each type's `config` object,
//! so that a bad configuration is refused by the Admin API instead of breaking a request later.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::checks::Checker;

/// Values a repeated request parameter (`entity_type`, `trust_mark_type`, …) may have at most:
/// each value widens the work a filter does and the number of distinct answers a cache must
/// keep apart, and no legitimate client needs more. More is `400 invalid_request`, naming the
/// parameter.
pub const MAX_PARAMETER_VALUES: usize = 16;

/// Refuses the `count`th value of `name` when it is past [`MAX_PARAMETER_VALUES`].
pub fn bound_values(name: &str, count: usize) -> Result<(), String> {
    if count > MAX_PARAMETER_VALUES {
        return Err(format!(
            "parameter '{name}' given more than {MAX_PARAMETER_VALUES} times"
        ));
    }
    Ok(())
}

/// A boolean request parameter (`intermediate`, `trust_marked`, `audit_timestamps`): exactly
/// `true` or `false`; anything else is refused, naming the parameter.
pub fn boolean_parameter(name: &str, value: &str) -> Result<bool, String> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(format!("parameter '{name}' must be true or false")),
    }
}

/// The kinds of federation endpoint Pharos can serve (one row per kind at most).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndpointType {
    /// Subordinate statement fetch (spec §8.1).
    Fetch,
    /// Subordinate listing (spec §8.2).
    List,
    /// Resolve (spec §8.3).
    Resolve,
    /// Trust mark status (spec §8.4).
    TrustMarkStatus,
    /// Trust marked entities listing (spec §8.5).
    TrustMarkListing,
    /// Trust mark issuance (spec §8.6).
    TrustMark,
    /// Historical keys (spec §8.7).
    HistoricalKeys,
    /// Automatic enrollment guarded by entity checks (custom).
    Enroll,
    /// Enrollment request approved by an administrator (custom).
    EnrollRequest,
    /// Trust mark request approved by an administrator (custom).
    TrustMarkRequest,
    /// Entity collection (extension draft).
    EntityCollection,
    /// Trigger a re-fetch of a subordinate's JWKS (custom).
    JwksUpdateTrigger,
    /// Signed JWK Set push by a subordinate (custom).
    JwksUpdate,
    /// Extended subordinate listing (OpenID Federation Extended Subordinate Listing 1.0).
    ExtendedList,
    /// A subordinate's public history (OpenID Federation Subordinate Events Endpoint 1.0).
    SubordinateEvents,
}

impl EndpointType {
    /// Every type, in a stable order (used for listing and validation messages).
    pub const ALL: [EndpointType; 15] = [
        Self::Fetch,
        Self::List,
        Self::Resolve,
        Self::TrustMarkStatus,
        Self::TrustMarkListing,
        Self::TrustMark,
        Self::HistoricalKeys,
        Self::Enroll,
        Self::EnrollRequest,
        Self::TrustMarkRequest,
        Self::EntityCollection,
        Self::JwksUpdateTrigger,
        Self::JwksUpdate,
        Self::ExtendedList,
        Self::SubordinateEvents,
    ];

    /// The identifier used in the Admin API and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fetch => "fetch",
            Self::List => "list",
            Self::Resolve => "resolve",
            Self::TrustMarkStatus => "trust_mark_status",
            Self::TrustMarkListing => "trust_mark_listing",
            Self::TrustMark => "trust_mark",
            Self::HistoricalKeys => "historical_keys",
            Self::Enroll => "enroll",
            Self::EnrollRequest => "enroll_request",
            Self::TrustMarkRequest => "trust_mark_request",
            Self::EntityCollection => "entity_collection",
            Self::JwksUpdateTrigger => "jwks_update_trigger",
            Self::JwksUpdate => "jwks_update",
            Self::ExtendedList => "extended_list",
            Self::SubordinateEvents => "subordinate_events",
        }
    }

    /// Parses the Admin API / database identifier.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// The `federation_entity` metadata member that publishes this endpoint's URL.
    pub fn metadata_key(self) -> &'static str {
        match self {
            Self::Fetch => "federation_fetch_endpoint",
            Self::List => "federation_list_endpoint",
            Self::Resolve => "federation_resolve_endpoint",
            Self::TrustMarkStatus => "federation_trust_mark_status_endpoint",
            Self::TrustMarkListing => "federation_trust_mark_list_endpoint",
            Self::TrustMark => "federation_trust_mark_endpoint",
            Self::HistoricalKeys => "federation_historical_keys_endpoint",
            Self::Enroll => "federation_enroll_endpoint",
            Self::EnrollRequest => "federation_enroll_request_endpoint",
            Self::TrustMarkRequest => "federation_trust_mark_request_endpoint",
            Self::EntityCollection => "federation_collection_endpoint",
            Self::JwksUpdateTrigger => "federation_jwks_update_trigger_endpoint",
            Self::JwksUpdate => "federation_jwks_update_endpoint",
            Self::ExtendedList => "federation_extended_list_endpoint",
            Self::SubordinateEvents => "federation_subordinate_events_endpoint",
        }
    }

    /// Whether client authentication applies at all (`jwks_update` authenticates by signature).
    pub fn supports_client_auth(self) -> bool {
        self != Self::JwksUpdate
    }

    /// The one HTTP method the endpoint answers: POST when client authentication is on (the
    /// assertion travels in a form body), and always POST for the endpoints that carry a body.
    pub fn method(self, auth_enabled: bool) -> http_method::Method {
        match self {
            Self::TrustMarkStatus | Self::JwksUpdateTrigger | Self::JwksUpdate => {
                http_method::Method::Post
            }
            _ if auth_enabled => http_method::Method::Post,
            _ => http_method::Method::Get,
        }
    }
}

impl std::fmt::Display for EndpointType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A dependency-free HTTP method type, so the shared crate does not need `http`.
pub mod http_method {
    /// The methods a federation endpoint can require.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Method {
        /// GET with query parameters.
        Get,
        /// POST with a body.
        Post,
    }

    impl Method {
        /// Upper-case name as on the wire.
        pub fn as_str(self) -> &'static str {
            match self {
                Self::Get => "GET",
                Self::Post => "POST",
            }
        }
    }
}

/// `fetch` endpoint configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FetchConfig {
    /// Lifetime of issued subordinate statements, seconds.
    pub statement_lifetime: u64,
}

impl Default for FetchConfig {
    fn default() -> Self {
        Self {
            statement_lifetime: 600_000,
        }
    }
}

/// `extended_list` endpoint configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExtendedListConfig {
    /// The most entries one page holds (the draft's "practical upper limit", §3.1.2): the
    /// page size without `limit`, and the cap of a larger `limit`. 1 … 10,000.
    pub max_page_size: u32,
}

impl Default for ExtendedListConfig {
    fn default() -> Self {
        Self {
            max_page_size: 1000,
        }
    }
}

/// Where the proactive resolver keeps pre-computed responses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ResponseStorage {
    /// Directory of stored responses.
    pub dir: String,
    /// Store parsed JSON responses (signed at request time).
    pub store_json: bool,
    /// Store pre-signed JWT responses.
    pub store_jwt: bool,
}

impl Default for ResponseStorage {
    fn default() -> Self {
        Self {
            dir: String::new(),
            store_json: false,
            store_jwt: true,
        }
    }
}

/// Background resolver that refreshes resolve results before they expire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProactiveResolver {
    /// Turns the proactive resolver on.
    pub enabled: bool,
    /// Maximum parallel refresh tasks.
    pub concurrency_limit: u32,
    /// Maximum pending refresh jobs.
    pub queue_size: u32,
    /// Required when enabled.
    pub response_storage: Option<ResponseStorage>,
    /// Lighthouse's flat spelling of `response_storage.dir`.
    #[serde(skip_serializing)]
    pub response_storage_dir: Option<String>,
    /// Lighthouse's flat spelling of `response_storage.store_json`.
    #[serde(skip_serializing)]
    pub response_storage_store_json: Option<bool>,
    /// Lighthouse's flat spelling of `response_storage.store_jwt`.
    #[serde(skip_serializing)]
    pub response_storage_store_jwt: Option<bool>,
}

impl Default for ProactiveResolver {
    fn default() -> Self {
        Self {
            enabled: false,
            concurrency_limit: 64,
            queue_size: 10_000,
            response_storage: None,
            response_storage_dir: None,
            response_storage_store_json: None,
            response_storage_store_jwt: None,
        }
    }
}

/// `resolve` endpoint configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ResolveConfig {
    /// Grace period of the resolver cache, seconds.
    #[serde(alias = "grace_period_seconds")]
    pub grace_period: u64,
    /// Fraction of a cached statement's lifetime that must have elapsed before a refresh.
    pub time_elapsed_grace_factor: f64,
    /// Trust anchors permitted on this resolver (empty = the trust anchor repository and our
    /// own entity, see [`AnchorRule`]).
    pub allowed_trust_anchors: Vec<String>,
    /// Use the entity collection endpoint's allowed trust anchors instead.
    pub use_entity_collection_allowed_trust_anchors: bool,
    /// Resolve towards any anchor a caller names: every stranger's federation may then be
    /// walked on request. Off unless said so (a warning is logged while it is on).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub allow_any_trust_anchor: bool,
    /// Optional background resolver.
    pub proactive_resolver: Option<ProactiveResolver>,
    /// Seconds a failed resolution is answered from the cache (0: never), so a flood of
    /// requests for a broken chain does not refetch it each time; short, so a chain fixed
    /// upstream resolves again soon.
    pub error_cache_seconds: u64,
}

impl Default for ResolveConfig {
    fn default() -> Self {
        Self {
            grace_period: 3600,
            time_elapsed_grace_factor: 0.5,
            allowed_trust_anchors: Vec::new(),
            use_entity_collection_allowed_trust_anchors: false,
            allow_any_trust_anchor: false,
            proactive_resolver: None,
            error_cache_seconds: 5,
        }
    }
}

/// An entity check definition (`{type, config}`), as stored; [`EnrollConfig::parsed_checker`]
/// gives the [`Checker`] it describes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckerConfig {
    /// Checker type, e.g. `trust_path`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Type-specific settings.
    #[serde(default)]
    pub config: Value,
}

/// `enroll` / `enroll_request` endpoint configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EnrollConfig {
    /// Entity check deciding whether an entity is enrolled; none = everyone may enroll.
    pub checker: Option<CheckerConfig>,
    /// Lighthouse's flat spelling: checker type.
    #[serde(skip_serializing)]
    pub checker_type: Option<String>,
    /// Lighthouse's flat spelling: checker config.
    #[serde(skip_serializing)]
    pub checker_config: Option<Value>,
    /// Enrolled entities get their keys polled from their Entity Configuration (the
    /// subordinate's `enable_jwks_update`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub enable_jwks_update: bool,
    /// Their `jwks_poll_interval`, seconds (0 = derive from the configuration's `exp`).
    #[serde(skip_serializing_if = "is_zero")]
    pub jwks_poll_interval: i64,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

impl EnrollConfig {
    /// The entity check to run (`none` when no checker is configured). Stored configurations
    /// were validated with this when written, so an error here means a corrupted row.
    pub fn parsed_checker(&self) -> Result<Checker, String> {
        match &self.checker {
            None => Ok(Checker::None),
            Some(c) => Checker::parse(
                &serde_json::json!({"type": c.kind, "config": c.config}),
                "checker",
            ),
        }
    }
}

/// `entity_collection` endpoint configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EntityCollectionConfig {
    /// Trust anchors a request may name (empty = the trust anchor repository and our own
    /// entity, see [`AnchorRule`]).
    pub allowed_trust_anchors: Vec<String>,
    /// Period of the background collector, seconds (unset/0 = on demand only).
    pub interval_seconds: Option<u64>,
    /// Parallel periodic collection tasks.
    pub concurrency_limit: Option<u32>,
    /// Positive = pagination on with this maximum page size.
    pub pagination_limit: Option<i64>,
    /// Walk any anchor a caller names on request: Pharos then crawls strangers' federations
    /// for anyone. Off unless said so (a warning is logged while it is on).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub allow_any_trust_anchor: bool,
    /// Time one walk may take, seconds (default [`WALK_SECONDS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub walk_timeout_seconds: Option<u64>,
    /// Bytes one walk may fetch in total (default [`WALK_BYTES`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub walk_max_bytes: Option<u64>,
    /// Entities one walk may collect (default [`WALK_ENTITIES`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub walk_max_entities: Option<u64>,
}

/// Default time of one collection walk, seconds.
pub const WALK_SECONDS: u64 = 300;
/// Default bytes one collection walk may fetch (Entity Configurations, Subordinate
/// Statements, listings and Trust Mark issuers' configurations together).
pub const WALK_BYTES: u64 = 256 * 1024 * 1024;
/// Default Entities one collection holds.
pub const WALK_ENTITIES: u64 = 100_000;

impl EntityCollectionConfig {
    /// The walk bounds in force: (deadline, total bytes, Entities).
    pub fn walk_bounds(&self) -> (std::time::Duration, u64, usize) {
        let secs = self.walk_timeout_seconds.unwrap_or(WALK_SECONDS);
        let bytes = self.walk_max_bytes.unwrap_or(WALK_BYTES);
        let entities = self.walk_max_entities.unwrap_or(WALK_ENTITIES);
        (
            std::time::Duration::from_secs(secs),
            bytes,
            usize::try_from(entities).unwrap_or(usize::MAX),
        )
    }
}

/// Which Trust Anchors an endpoint walks towards on a stranger's request (`resolve`,
/// `entity_collection`): what the operator configured, never whatever a caller names unless
/// the operator said so (issue 31: an open endpoint makes Pharos a crawler for hire).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnchorRule {
    /// `allow_any_trust_anchor: true`: any anchor.
    Any,
    /// The endpoint's `allowed_trust_anchors` (or the list it borrows): only these.
    Listed(Vec<String>),
    /// Nothing listed: the anchors of the trust anchor repository and our own entity.
    Configured,
}

impl AnchorRule {
    /// The rule of an endpoint with `allowed` anchors and `allow_any`.
    pub fn new(allowed: &[String], allow_any: bool) -> Self {
        if !allowed.is_empty() {
            Self::Listed(allowed.to_vec())
        } else if allow_any {
            Self::Any
        } else {
            Self::Configured
        }
    }

    /// Whether `anchor` may be walked towards; `configured` says whether it is our own entity
    /// or in the trust anchor repository.
    pub fn admits(&self, anchor: &str, configured: impl FnOnce(&str) -> bool) -> bool {
        match self {
            Self::Any => true,
            Self::Listed(l) => l.iter().any(|a| a == anchor),
            Self::Configured => configured(anchor),
        }
    }

    /// The rule in words, for the `error_description` of a refusal.
    pub fn describe(&self) -> &'static str {
        match self {
            Self::Any => "any trust anchor is admitted",
            Self::Listed(_) => "only the endpoint's allowed_trust_anchors are admitted",
            Self::Configured => {
                "only trust anchors in this entity's trust anchor repository (or this entity \
                 itself) are admitted; allowed_trust_anchors or allow_any_trust_anchor change that"
            }
        }
    }
}

/// The parsed, validated `config` of an endpoint.
#[derive(Debug, Clone, PartialEq)]
pub enum EndpointConfig {
    /// `fetch`.
    Fetch(FetchConfig),
    /// `resolve`.
    Resolve(ResolveConfig),
    /// `enroll` and `enroll_request`.
    Enroll(EnrollConfig),
    /// `entity_collection`.
    EntityCollection(EntityCollectionConfig),
    /// `extended_list`.
    ExtendedList(ExtendedListConfig),
    /// `trust_mark`: the list of issuance specs (validated for `trust_mark_type`).
    TrustMark(Vec<Map<String, Value>>),
    /// Types without settings of their own: any object is kept as given.
    Other(Map<String, Value>),
}

impl EndpointConfig {
    /// Validates `config` for `kind`; the error text is shown to the operator as-is.
    pub fn parse(kind: EndpointType, config: &Value) -> Result<Self, String> {
        let obj = match config {
            Value::Null => Map::new(),
            Value::Object(m) => m.clone(),
            _ => return Err("config must be a JSON object".into()),
        };
        let value = Value::Object(obj.clone());
        let bad = |e: serde_json::Error| format!("invalid {kind} config: {e}");
        Ok(match kind {
            EndpointType::Fetch => {
                let c: FetchConfig = serde_json::from_value(value).map_err(bad)?;
                if c.statement_lifetime == 0 {
                    return Err("statement_lifetime must be positive".into());
                }
                Self::Fetch(c)
            }
            EndpointType::Resolve => {
                let mut c: ResolveConfig = serde_json::from_value(value).map_err(bad)?;
                normalise_resolve(&mut c)?;
                Self::Resolve(c)
            }
            EndpointType::Enroll | EndpointType::EnrollRequest => {
                let mut c: EnrollConfig = serde_json::from_value(value).map_err(bad)?;
                if let Some(kind) = c.checker_type.take() {
                    if c.checker.is_some() {
                        return Err("give either checker or checker_type, not both".into());
                    }
                    let config = c.checker_config.take().unwrap_or(Value::Null);
                    c.checker = Some(CheckerConfig { kind, config });
                }
                // Refused now, with the field named, rather than by the first enrollment.
                c.parsed_checker()?;
                if c.jwks_poll_interval < 0 {
                    return Err("jwks_poll_interval must not be negative".into());
                }
                Self::Enroll(c)
            }
            EndpointType::EntityCollection => {
                let c: EntityCollectionConfig = serde_json::from_value(value).map_err(bad)?;
                if c.allow_any_trust_anchor && !c.allowed_trust_anchors.is_empty() {
                    return Err(
                        "allow_any_trust_anchor and allowed_trust_anchors exclude each other"
                            .into(),
                    );
                }
                for (name, v) in [
                    ("walk_timeout_seconds", c.walk_timeout_seconds),
                    ("walk_max_bytes", c.walk_max_bytes),
                    ("walk_max_entities", c.walk_max_entities),
                ] {
                    if v == Some(0) {
                        return Err(format!("{name} must be positive"));
                    }
                }
                if c.interval_seconds.unwrap_or(0) > 0 && c.allowed_trust_anchors.is_empty() {
                    return Err(
                        "allowed_trust_anchors is required when interval_seconds is set".into(),
                    );
                }
                Self::EntityCollection(c)
            }
            EndpointType::ExtendedList => {
                let c: ExtendedListConfig = serde_json::from_value(value).map_err(bad)?;
                if !(1..=10_000).contains(&c.max_page_size) {
                    return Err("max_page_size must be between 1 and 10000".into());
                }
                Self::ExtendedList(c)
            }
            EndpointType::TrustMark => {
                let specs = match obj.get("trust_mark_specs") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(a)) => {
                        a.iter()
                            .map(|s| match s {
                                Value::Object(m)
                                    if m.get("trust_mark_type")
                                        .and_then(Value::as_str)
                                        .is_some_and(|t| !t.is_empty()) =>
                                {
                                    Ok(m.clone())
                                }
                                _ => Err("each trust_mark_specs entry needs a trust_mark_type"
                                    .to_string()),
                            })
                            .collect::<Result<_, _>>()?
                    }
                    Some(_) => return Err("trust_mark_specs must be an array".into()),
                };
                Self::TrustMark(specs)
            }
            _ => Self::Other(obj),
        })
    }
}

fn normalise_resolve(c: &mut ResolveConfig) -> Result<(), String> {
    if c.allow_any_trust_anchor
        && (!c.allowed_trust_anchors.is_empty() || c.use_entity_collection_allowed_trust_anchors)
    {
        return Err("allow_any_trust_anchor excludes allowed_trust_anchors and use_entity_collection_allowed_trust_anchors".into());
    }
    if !(0.0..=1.0).contains(&c.time_elapsed_grace_factor) {
        return Err("time_elapsed_grace_factor must be between 0 and 1".into());
    }
    if let Some(p) = c.proactive_resolver.as_mut() {
        if let Some(dir) = p.response_storage_dir.take() {
            let rs = p
                .response_storage
                .get_or_insert_with(ResponseStorage::default);
            rs.dir = dir;
        }
        if let Some(v) = p.response_storage_store_json.take() {
            p.response_storage
                .get_or_insert_with(ResponseStorage::default)
                .store_json = v;
        }
        if let Some(v) = p.response_storage_store_jwt.take() {
            p.response_storage
                .get_or_insert_with(ResponseStorage::default)
                .store_jwt = v;
        }
        if p.enabled {
            if p.response_storage.as_ref().is_none_or(|r| r.dir.is_empty()) {
                return Err("proactive_resolver.response_storage.dir is required when the proactive resolver is enabled".into());
            }
            if c.allowed_trust_anchors.is_empty() && !c.use_entity_collection_allowed_trust_anchors
            {
                return Err(
                    "allowed_trust_anchors is required when the proactive resolver is enabled"
                        .into(),
                );
            }
            if p.concurrency_limit == 0 || p.queue_size == 0 {
                return Err(
                    "proactive_resolver concurrency_limit and queue_size must be positive".into(),
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn type_names_round_trip() {
        for t in EndpointType::ALL {
            assert_eq!(EndpointType::parse(t.as_str()), Some(t));
        }
        assert_eq!(EndpointType::parse("fetcher"), None);
    }

    #[test]
    fn methods_follow_auth_and_body_rules() {
        use http_method::Method::*;
        assert_eq!(EndpointType::Fetch.method(false), Get);
        assert_eq!(EndpointType::Fetch.method(true), Post);
        assert_eq!(EndpointType::TrustMarkStatus.method(false), Post);
        assert_eq!(EndpointType::JwksUpdate.method(false), Post);
    }

    #[test]
    fn fetch_config_defaults_and_rejects_unknown() {
        let c = EndpointConfig::parse(EndpointType::Fetch, &json!({})).unwrap();
        assert_eq!(c, EndpointConfig::Fetch(FetchConfig::default()));
        assert!(EndpointConfig::parse(EndpointType::Fetch, &json!({"lifetime": 3})).is_err());
        assert!(EndpointConfig::parse(EndpointType::Fetch, &json!([1])).is_err());
    }

    #[test]
    fn resolve_proactive_needs_dir_and_anchors() {
        let e = EndpointConfig::parse(
            EndpointType::Resolve,
            &json!({"proactive_resolver": {"enabled": true}}),
        );
        assert!(e.unwrap_err().contains("dir"));
        let e = EndpointConfig::parse(
            EndpointType::Resolve,
            &json!({"proactive_resolver": {"enabled": true, "response_storage_dir": "/tmp/x"}}),
        );
        assert!(e.unwrap_err().contains("allowed_trust_anchors"));
        let ok = EndpointConfig::parse(
            EndpointType::Resolve,
            &json!({"grace_period_seconds": 10, "allowed_trust_anchors": ["https://ta"],
                    "proactive_resolver": {"enabled": true, "response_storage": {"dir": "/tmp/x"}}}),
        )
        .unwrap();
        let EndpointConfig::Resolve(r) = ok else {
            panic!("wrong variant")
        };
        assert_eq!(r.grace_period, 10);
    }

    #[test]
    fn enroll_accepts_lighthouse_flat_checker() {
        let c = EndpointConfig::parse(
            EndpointType::Enroll,
            &json!({"checker_type": "trust_path", "checker_config": {"trust_anchors": ["https://ta"]}}),
        )
        .unwrap();
        let EndpointConfig::Enroll(e) = c else {
            panic!("wrong variant")
        };
        assert_eq!(e.checker.unwrap().kind, "trust_path");
    }

    #[test]
    fn enroll_key_polling_settings() {
        let c = EndpointConfig::parse(
            EndpointType::Enroll,
            &json!({"enable_jwks_update": true, "jwks_poll_interval": 600}),
        )
        .unwrap();
        let EndpointConfig::Enroll(e) = c else {
            panic!("wrong variant")
        };
        assert!(e.enable_jwks_update);
        assert_eq!(e.jwks_poll_interval, 600);
        let stored = serde_json::to_value(&e).unwrap();
        assert_eq!(stored["jwks_poll_interval"], 600);
        let e = EndpointConfig::parse(EndpointType::Enroll, &json!({"jwks_poll_interval": -1}))
            .unwrap_err();
        assert!(e.contains("jwks_poll_interval"), "{e}");
        let none = serde_json::to_value(EnrollConfig::default()).unwrap();
        assert_eq!(none, json!({"checker": null}));
    }

    #[test]
    fn trust_mark_specs_need_type() {
        assert!(
            EndpointConfig::parse(EndpointType::TrustMark, &json!({"trust_mark_specs": [{}]}))
                .is_err()
        );
        assert!(
            EndpointConfig::parse(
                EndpointType::TrustMark,
                &json!({"trust_mark_specs": [{"trust_mark_type": "https://tm"}]})
            )
            .is_ok()
        );
    }

    #[test]
    fn opening_to_any_anchor_is_explicit_and_exclusive() {
        let open = |kind, v| EndpointConfig::parse(kind, &v);
        for kind in [EndpointType::Resolve, EndpointType::EntityCollection] {
            let e = open(
                kind,
                json!({"allow_any_trust_anchor": true, "allowed_trust_anchors": ["https://ta"]}),
            );
            assert!(e.unwrap_err().contains("allow_any_trust_anchor"));
            assert!(open(kind, json!({"allow_any_trust_anchor": true})).is_ok());
        }
        let rule = AnchorRule::new(&[], false);
        assert_eq!(rule, AnchorRule::Configured);
        assert!(!rule.admits("https://stranger", |_| false));
        assert!(rule.admits("https://ta", |a| a == "https://ta"));
        assert!(AnchorRule::new(&[], true).admits("https://stranger", |_| false));
        let listed = AnchorRule::new(&["https://ta".into()], false);
        assert!(!listed.admits("https://other", |_| true));
        let Ok(EndpointConfig::EntityCollection(c)) = open(
            EndpointType::EntityCollection,
            json!({"walk_max_bytes": 1000, "walk_timeout_seconds": 5}),
        ) else {
            panic!("valid")
        };
        assert_eq!(
            c.walk_bounds(),
            (std::time::Duration::from_secs(5), 1000, 100_000)
        );
        let e = open(EndpointType::EntityCollection, json!({"walk_max_bytes": 0}));
        assert!(e.unwrap_err().contains("walk_max_bytes"));
        // Defaults are not written back into stored configurations.
        let c = EntityCollectionConfig::default();
        assert_eq!(
            serde_json::to_value(&c)
                .unwrap()
                .get("allow_any_trust_anchor"),
            None
        );
    }

    #[test]
    fn collection_interval_needs_anchors() {
        assert!(
            EndpointConfig::parse(
                EndpointType::EntityCollection,
                &json!({"interval_seconds": 60})
            )
            .is_err()
        );
    }
}
