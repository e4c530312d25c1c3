//! `storage.*`, `cache.*` and `federation.*`: where state lives and how outbound fetches behave.

use serde::{Deserialize, Serialize};

use super::{Duration, Secret};
use crate::interop::{AnchorEcConstraints, Interop, Profile};

/// The database all DB-managed state lives in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageSettings {
    /// Which database engine.
    pub driver: StorageDriver,
    /// Directory of the SQLite file (`pharos.db`).
    pub data_dir: String,
    /// Full connection URL for mysql/postgres; built from the parts below when empty.
    pub dsn: String,
    /// Database user (mysql/postgres parts).
    pub user: String,
    /// Database password (secret; redacted by `check-config`).
    pub password: Secret,
    /// Database host.
    pub host: String,
    /// Database port; 0 = the driver's default (3306 / 5432).
    pub port: u16,
    /// Database name.
    pub db: String,
    /// Log SQL statements.
    pub debug: bool,
    /// Size of the connection pool. On PostgreSQL the subordinate registry's read at start-up
    /// and on a full reload goes through a second pool of up to this size, whose connections
    /// close after 10 s unused.
    pub max_connections: u32,
    /// Replay protection for client assertions (`private_key_jwt`).
    pub endpoint_auth: EndpointAuth,
}

impl Default for StorageSettings {
    fn default() -> Self {
        Self {
            driver: StorageDriver::Sqlite,
            data_dir: "./data".into(),
            dsn: String::new(),
            user: "pharos".into(),
            password: Secret::default(),
            host: "localhost".into(),
            port: 0,
            db: "pharos".into(),
            debug: false,
            max_connections: 10,
            endpoint_auth: EndpointAuth::default(),
        }
    }
}

/// Supported database engines (sqlx drivers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StorageDriver {
    /// Embedded file database; the zero-configuration default.
    Sqlite,
    /// MySQL / MariaDB.
    Mysql,
    /// PostgreSQL.
    Postgres,
}

/// Where used client-assertion `jti`s are remembered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EndpointAuth {
    /// In-process cache (single instance) or the database (shared by several instances).
    pub jti_backend: JtiBackend,
    /// How often expired `jti` rows are deleted (db backend only).
    pub jti_cleanup_interval: Duration,
    /// Longest lifetime a client assertion may have (`exp` − `iat`, or `exp` − now without
    /// `iat`): a long-lived assertion is a bearer credential for that long, and its `jti` must
    /// be remembered for as long.
    pub max_assertion_lifetime: Duration,
}

impl Default for EndpointAuth {
    fn default() -> Self {
        Self {
            jti_backend: JtiBackend::Cache,
            jti_cleanup_interval: Duration::from_secs(3_600),
            max_assertion_lifetime: Duration::from_secs(300),
        }
    }
}

/// Storage of seen `jti` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JtiBackend {
    /// In-process cache.
    Cache,
    /// Database table.
    Db,
}

/// `cache.*`: Pharos caches in process; the redis keys are accepted so old files still load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheSettings {
    /// Turn caching off (tests only).
    pub disabled: bool,
    /// Upper bound on any cache entry's lifetime; 0 = none.
    pub max_lifetime: Duration,
    /// Bytes of signed Subordinate Statements kept for reuse (about 1 KB each under ES256; an
    /// ML-DSA signature adds 3.2 KB with ML-DSA-44, 4.4 KB with ML-DSA-65, 6.2 KB with
    /// ML-DSA-87); past it the statements not asked for lately make room (CLOCK eviction), so
    /// the often-fetched subjects stay signed. 0 = no bound. The default (128 MiB) holds every
    /// statement of about 125,000 subordinates under ES256, about 25,000 under ML-DSA-65: raise
    /// it in proportion when signing with ML-DSA, whose first signatures run at about half
    /// the rate of ES256's (BENCHMARKS.md, "ML-DSA").
    pub statements_max_bytes: u64,
    /// Accepted for compatibility; ignored (warning).
    pub redis_addr: String,
    /// Accepted for compatibility; ignored.
    pub username: String,
    /// Accepted for compatibility; ignored (secret; redacted).
    pub password: Secret,
    /// Accepted for compatibility; ignored.
    pub redis_db: u32,
}

impl Default for CacheSettings {
    fn default() -> Self {
        Self {
            disabled: false,
            max_lifetime: Duration::default(),
            statements_max_bytes: 128 * 1024 * 1024,
            redis_addr: String::new(),
            username: String::new(),
            password: Secret::default(),
            redis_db: 0,
        }
    }
}

/// `federation.*`: limits on outbound fetches of other entities' statements, and how the
/// trust marks we issue are shaped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FederationSettings {
    /// Refuse to fetch from loopback/private/link-local addresses (SSRF protection). On by
    /// default: a resolver fetches URLs chosen by whoever publishes `authority_hints`, so a
    /// fresh instance must not be a scanner of its own network. Federations on one machine
    /// (tests, demos) turn it off explicitly.
    pub block_private_addresses: bool,
    /// Timeout of one outbound HTTP request.
    pub http_timeout: Duration,
    /// Largest response body accepted from another entity.
    pub max_response_bytes: u64,
    /// How many Entity Configurations the control plane's key refreshers fetch at once, polls
    /// and jwks_update_trigger requests together. One bound for both so that a flood of
    /// triggers cannot open more outbound connections than the polls may; a trigger that finds
    /// every slot taken is refused at once (503) instead of queueing.
    pub refresh_concurrency: u32,
    /// Whether the trust marks we issue also carry the type as `id` (the claim's name before
    /// `trust_mark_type` existed), so that clients of earlier drafts read them. Extra claims
    /// are allowed, so carrying both costs conforming clients nothing.
    pub trust_mark_legacy_id: bool,
    /// When a subject asking again for a trust mark it holds gets a new one: once this
    /// percentage (1–100) of the held mark's lifetime has passed. Before, the held mark is
    /// handed out again (same `jti`, same bytes), so repeated requests store nothing.
    pub trust_mark_renew_after_percent: u32,
    /// Most subjects of one trust mark type waiting for an administrator's decision
    /// (`pending`) at once: a `trust_mark_request` beyond it is refused and stores nothing.
    pub trust_mark_pending_max: u32,
    /// What chain validation does with `constraints` in a Trust Anchor's own Entity
    /// Configuration (SPID/CIE anchors publish `max_path_length` there): `apply` (as if in the
    /// anchor's statement about each immediate subordinate), `ignore` (logged once per anchor)
    /// or `refuse` (the final text). A trust anchor record may override it.
    pub anchor_ec_constraints: AnchorEcConstraints,
    /// `interop` accepts the harmless shapes of earlier drafts that deployed federations still
    /// send (`docs/interop.md`); `strict` switches every one of them off, overrides included.
    pub profile: Profile,
    /// What the Admin API, `pharos config2db` and key pushes accept beyond what Pharos
    /// understands (`docs/admin-api.md`, "What is refused"). Empty by default: a typo is refused.
    pub accept: AcceptSettings,
}

/// `federation.accept.*`: names Pharos does not know that an operator deliberately allows in
/// what it stores and signs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AcceptSettings {
    /// JWK `kty` values stored as given (only `kid` and the absence of private members are
    /// checked); `EC`, `RSA`, `OKP` and `AKP` (ML-DSA) keys are always parsed in full.
    pub key_types: Vec<String>,
    /// Entity types allowed in metadata and policies besides those of the specifications
    /// (their parameters are not type-checked).
    pub entity_types: Vec<String>,
    /// Non-standard metadata policy operators allowed in policies. Pharos's resolver ignores
    /// them (it does not implement them) and `metadata_policy_crit` cannot list them.
    pub policy_operators: Vec<String>,
}

impl Default for FederationSettings {
    fn default() -> Self {
        Self {
            block_private_addresses: true,
            http_timeout: Duration::from_secs(20),
            max_response_bytes: 1_048_576,
            refresh_concurrency: 16,
            trust_mark_legacy_id: true,
            trust_mark_renew_after_percent: 50,
            trust_mark_pending_max: 1_000,
            anchor_ec_constraints: AnchorEcConstraints::Apply,
            profile: Profile::Interop,
            accept: AcceptSettings::default(),
        }
    }
}

/// The error for files written for lighthouse < 0.22, whose key-value store is gone.
pub(crate) const LEGACY_BACKEND: &str =
    "storage.backend is no longer supported; migrate with `pharos config2db`";

impl StorageSettings {
    /// The sqlx connection URL, so callers never assemble it (or its escaping) themselves.
    pub(crate) fn url(&self) -> String {
        let (scheme, default_port) = match self.driver {
            StorageDriver::Sqlite => {
                let dir = self.data_dir.trim_end_matches('/');
                return format!("sqlite://{dir}/pharos.db?mode=rwc");
            }
            StorageDriver::Mysql => ("mysql", 3306),
            StorageDriver::Postgres => ("postgres", 5432),
        };
        if !self.dsn.is_empty() {
            return self.dsn.clone();
        }
        let port = if self.port == 0 {
            default_port
        } else {
            self.port
        };
        let host = if self.host.contains(':') && !self.host.starts_with('[') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let mut auth = encode(&self.user);
        if !self.password.is_empty() {
            auth = format!("{auth}:{}", encode(self.password.expose()));
        }
        format!("{scheme}://{auth}@{host}:{port}/{}", encode(&self.db))
    }

    /// Records every problem with the database settings.
    pub(crate) fn check(&self, problems: &mut Vec<String>) {
        match self.driver {
            StorageDriver::Sqlite if self.data_dir.is_empty() => {
                problems.push("storage.data_dir is required for the sqlite driver".into());
            }
            StorageDriver::Mysql | StorageDriver::Postgres if self.dsn.is_empty() => {
                for (key, value) in [("user", &self.user), ("host", &self.host), ("db", &self.db)] {
                    if value.is_empty() {
                        problems.push(format!(
                            "storage.{key} is required when storage.dsn is empty"
                        ));
                    }
                }
            }
            _ => {}
        }
        if self.max_connections == 0 {
            problems.push("storage.max_connections must be at least 1".into());
        }
        if self.endpoint_auth.jti_backend == JtiBackend::Db
            && self.endpoint_auth.jti_cleanup_interval.is_zero()
        {
            problems
                .push("storage.endpoint_auth.jti_cleanup_interval must be greater than 0".into());
        }
    }
}

impl CacheSettings {
    /// Warns about redis settings, which old files carry but Pharos does not use.
    pub(crate) fn check(&self, warnings: &mut Vec<String>) {
        if !self.redis_addr.is_empty() {
            warnings.push("cache.redis_addr ignored: Pharos caches in process".into());
        }
    }
}

impl FederationSettings {
    /// Records limits that would make every outbound fetch fail.
    pub(crate) fn check(&self, problems: &mut Vec<String>) {
        if self.http_timeout.is_zero() {
            problems.push("federation.http_timeout must be greater than 0".into());
        }
        if self.max_response_bytes == 0 {
            problems.push("federation.max_response_bytes must be greater than 0".into());
        }
        if self.refresh_concurrency == 0 {
            problems.push("federation.refresh_concurrency must be greater than 0".into());
        }
        if !(1..=100).contains(&self.trust_mark_renew_after_percent) {
            problems.push("federation.trust_mark_renew_after_percent must be 1 to 100".into());
        }
    }

    /// The leniencies for an anchor with the given record override (none for an anchor
    /// outside the repository).
    pub fn interop(&self, anchor_override: Option<AnchorEcConstraints>) -> Interop {
        Interop::for_anchor(self.profile, self.anchor_ec_constraints, anchor_override)
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters (for URL user info and path).
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_per_driver() {
        let mut s = StorageSettings::default();
        assert_eq!(s.url(), "sqlite://./data/pharos.db?mode=rwc");
        s.data_dir = "/var/lib/pharos/".into();
        assert_eq!(s.url(), "sqlite:///var/lib/pharos/pharos.db?mode=rwc");
        s.driver = StorageDriver::Postgres;
        assert_eq!(s.url(), "postgres://pharos@localhost:5432/pharos");
        s.dsn = "postgres://u:p@db/x".into();
        assert_eq!(s.url(), "postgres://u:p@db/x");
    }

    #[test]
    fn mysql_from_parts_is_escaped() {
        let s = StorageSettings {
            driver: StorageDriver::Mysql,
            user: "app user".into(),
            password: "p@ss:w/rd".into(),
            host: "db.internal".into(),
            port: 3307,
            db: "fed".into(),
            ..StorageSettings::default()
        };
        assert_eq!(
            s.url(),
            "mysql://app%20user:p%40ss%3Aw%2Frd@db.internal:3307/fed"
        );
        let s = StorageSettings {
            port: 0,
            host: "::1".into(),
            password: Secret::default(),
            ..s
        };
        assert_eq!(s.url(), "mysql://app%20user@[::1]:3306/fed");
    }

    #[test]
    fn parts_required_without_dsn() {
        let s = StorageSettings {
            driver: StorageDriver::Mysql,
            host: String::new(),
            ..StorageSettings::default()
        };
        let mut problems = Vec::new();
        s.check(&mut problems);
        assert_eq!(
            problems,
            ["storage.host is required when storage.dsn is empty"]
        );
    }
}
