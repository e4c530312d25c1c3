//! Service configuration (design decision 5): built-in defaults → YAML file → `SVC_` environment
//! variables → validation, with every problem reported at once before any port is bound.
//!
//! The defaults alone are a working single-node setup (decision 6): SQLite under `./data`,
//! generated ES256 keys, entity identifier `http://127.0.0.1:7672`, Admin API on the main port.

mod admin;
mod cluster;
mod comma_list;
mod duration;
mod legacy;
mod load;
mod secret;
mod server;
mod signing;
mod stats;
mod storage;
mod traces;
mod tree;

#[cfg(test)]
mod docs_check;
#[cfg(test)]
mod load_tests;
#[cfg(test)]
mod reference;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use admin::{ActorSource, AdminSettings, AdminTls, ApiSettings, PasswordHashing};
pub use cluster::{ClusterSettings, MAX_INSTANCE_ID};
pub use comma_list::CommaList;
pub use duration::Duration;
pub use load::{Loaded, env_names, load, load_legacy};
pub use secret::Secret;
pub use server::{
    AccessLog, Banner, CorsSettings, InternalLog, LogFormat, LoggingSettings, RateLimit,
    RateLimits, ServerSettings, ServerTls,
};
pub use signing::{FilesystemKeys, Kms, PkBackend, Pkcs11Settings, SigningSettings};
pub use stats::{GeoIp, StatsBuffer, StatsCapture, StatsRetention, StatsSettings};
pub use storage::{
    AcceptSettings, CacheSettings, EndpointAuth, FederationSettings, JtiBackend, StorageDriver,
    StorageSettings,
};
pub use traces::{OtlpProtocol, TraceExport, TracingSettings};

/// The whole static configuration; everything else is managed in the database.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Our entity identifier: an http(s) URL without query or fragment. The default names
    /// port 7672: with another `server.port` set this too (a warning says so).
    pub entity_id: String,
    /// Main HTTP listener.
    pub server: ServerSettings,
    /// Logs and banner.
    pub logging: LoggingSettings,
    /// Database (all state managed through the Admin API lives here).
    pub storage: StorageSettings,
    /// In-process cache (redis keys accepted and ignored).
    pub cache: CacheSettings,
    /// Signing keys.
    pub signing: SigningSettings,
    /// Admin API (lighthouse-compatible, `/api/v1/admin`).
    pub api: ApiSettings,
    /// Request statistics.
    pub stats: StatsSettings,
    /// Outbound fetches, the shape of issued trust marks, and draft-era leniencies.
    pub federation: FederationSettings,
    /// Several replicas on one database.
    pub cluster: ClusterSettings,
    /// OpenTelemetry traces.
    pub tracing: TracingSettings,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            entity_id: "http://127.0.0.1:7672".into(),
            server: ServerSettings::default(),
            logging: LoggingSettings::default(),
            storage: StorageSettings::default(),
            cache: CacheSettings::default(),
            signing: SigningSettings::default(),
            api: ApiSettings::default(),
            stats: StatsSettings::default(),
            federation: FederationSettings::default(),
            cluster: ClusterSettings::default(),
            tracing: TracingSettings::default(),
        }
    }
}

/// Paths of the secrets that `redacted` hides.
const SECRET_PATHS: [&str; 4] = [
    "storage.password",
    "cache.password",
    "signing.pkcs11.pin",
    "signing.db_encryption_key",
];

impl Settings {
    /// The settings of another hosted entity of this deployment (see [`crate::hosted`]):
    /// these, with its identifier. Its keys are its own: a static `signing.filesystem.key_file`
    /// is the default entity's, so the hosted one generates keys in the same backend, or in
    /// the database when that backend is only the one file (no `key_dir`).
    pub fn for_hosted(&self, entity_id: &str) -> Self {
        let mut s = self.clone();
        s.entity_id = entity_id.to_owned();
        s.signing.filesystem.key_file.clear();
        if s.signing.kms == Kms::Filesystem && s.signing.filesystem.key_dir.is_empty() {
            s.signing.kms = Kms::Db;
        }
        s
    }

    /// The sqlx connection URL for `storage`, so no caller assembles or escapes it itself.
    pub fn storage_url(&self) -> String {
        self.storage.url()
    }

    /// The effective configuration for `pharos check-config`, with non-empty secrets (passwords,
    /// PIN, the DSN's credentials) replaced by `***` so the output can be pasted into tickets.
    pub fn redacted(&self) -> Value {
        let mut tree = match serde_json::to_value(self) {
            Ok(tree) => tree,
            Err(e) => return Value::String(format!("cannot render configuration: {e}")),
        };
        for path in SECRET_PATHS {
            if tree::get(&tree, path)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
            {
                tree::set(&mut tree, path, Value::String("***".into()));
            }
        }
        tree::set(
            &mut tree,
            "storage.dsn",
            Value::String(redact_dsn(&self.storage.dsn)),
        );
        tree
    }

    /// Records every problem with the combination of values; warnings do not stop start-up.
    fn check(&self, problems: &mut Vec<String>, warnings: &mut Vec<String>) {
        check_entity_id(&self.entity_id, problems);
        self.server.check(problems);
        self.logging.check(problems);
        self.storage.check(problems);
        self.cache.check(warnings);
        self.signing.check(problems);
        self.api.admin.check(self.server.port, problems);
        self.stats.check(problems);
        self.federation.check(problems);
        self.cluster.check(&self.storage, problems);
        self.tracing.check(problems);
    }
}

fn check_entity_id(entity_id: &str, problems: &mut Vec<String>) {
    match url::Url::parse(entity_id) {
        Ok(u) if !matches!(u.scheme(), "http" | "https") || !u.has_host() => {
            problems.push(format!(
                "entity_id: {entity_id:?} must be an http(s) URL with a host"
            ));
        }
        Ok(u) if u.query().is_some() || u.fragment().is_some() => {
            problems.push(format!(
                "entity_id: {entity_id:?} must not have a query or fragment"
            ));
        }
        Ok(_) => {}
        Err(e) => problems.push(format!("entity_id: {entity_id:?} is not a URL: {e}")),
    }
}

/// Hides the password in URL (`scheme://user:pass@host`), Go (`user:pass@tcp(host)/db`) and
/// key-value (`password=...`) DSNs; the rest stays visible because it helps debugging.
fn redact_dsn(dsn: &str) -> String {
    let start = dsn.find("://").map_or(0, |i| i + 3);
    let mut out = dsn.to_string();
    if let Some(at) = dsn[start..].rfind('@').map(|i| start + i)
        && let Some(colon) = dsn[start..at].find(':').map(|i| start + i)
        && colon + 1 < at
    {
        out = format!("{}***{}", &dsn[..=colon], &dsn[at..]);
    }
    let mut result = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(i) = rest.find("password=") {
        let value_start = i + "password=".len();
        result.push_str(&rest[..value_start]);
        let tail = &rest[value_start..];
        let end = tail.find([' ', '&', ';']).unwrap_or(tail.len());
        if end > 0 {
            result.push_str("***");
        }
        rest = &tail[end..];
    }
    result.push_str(rest);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        let mut problems = Vec::new();
        let mut warnings = Vec::new();
        Settings::default().check(&mut problems, &mut warnings);
        assert!(problems.is_empty() && warnings.is_empty(), "{problems:?}");
    }

    #[test]
    fn entity_id_rules() {
        for bad in [
            "ftp://x.example",
            "https://x.example/?a=1",
            "https://x.example/#f",
            "x",
        ] {
            let mut problems = Vec::new();
            check_entity_id(bad, &mut problems);
            assert_eq!(problems.len(), 1, "{bad} accepted");
        }
    }

    #[test]
    fn redacted_hides_secrets() {
        let mut s = Settings::default();
        s.storage.password = "db-secret".into();
        s.storage.dsn = "postgres://app:dsn-secret@db:5432/fed".into();
        s.signing.pkcs11.pin = "1234".into();
        let out = s.redacted();
        let text = out.to_string();
        for secret in ["db-secret", "dsn-secret", "1234"] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
        assert_eq!(out["storage"]["dsn"], "postgres://app:***@db:5432/fed");
        assert_eq!(out["signing"]["pkcs11"]["pin"], "***");
        assert_eq!(out["cache"]["password"], "", "empty secrets stay empty");
    }

    #[test]
    fn dsn_forms() {
        assert_eq!(redact_dsn("u:p@tcp(h:3306)/db"), "u:***@tcp(h:3306)/db");
        assert_eq!(
            redact_dsn("host=h password=pw dbname=d"),
            "host=h password=*** dbname=d"
        );
        assert_eq!(
            redact_dsn("postgres://h/db?password=pw&x=1"),
            "postgres://h/db?password=***&x=1"
        );
        assert_eq!(redact_dsn("mysql://u@h/db"), "mysql://u@h/db");
    }
}
