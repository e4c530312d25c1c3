//! `server.*` and `logging.*`: how the main listener and the logs are set up.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::{CommaList, Duration};

/// The main (federation) HTTP listener; the Admin API shares it unless `api.admin.port` is set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerSettings {
    /// Address to bind; `0.0.0.0` (or empty, as lighthouse allowed) listens on every interface.
    pub ip_listen: String,
    /// Port to bind (7672); 0 picks a free port, which the tests use.
    pub port: u16,
    /// Optional HTTPS on the main port.
    pub tls: ServerTls,
    /// Peers (IPs or CIDRs) whose `forwarded_ip_header` is trusted for the client address.
    pub trusted_proxies: Vec<String>,
    /// Header carrying the original client address behind a trusted proxy.
    pub forwarded_ip_header: String,
    /// CORS for the federation endpoints (browsers rarely need it, so off by default).
    pub cors: CorsSettings,
    /// Largest accepted request body in bytes; bounds memory per request.
    pub body_limit: u64,
    /// Time limit for one request, so a slow client cannot hold a worker forever.
    pub request_timeout: Duration,
    /// How long a graceful shutdown waits for in-flight requests, and then again for the last
    /// statistics records to be stored.
    pub shutdown_timeout: Duration,
    /// Request rates of the public endpoints that write or fetch, per client and in total.
    pub rate_limits: RateLimits,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            ip_listen: "0.0.0.0".into(),
            port: 7672,
            tls: ServerTls::default(),
            trusted_proxies: Vec::new(),
            forwarded_ip_header: "X-Forwarded-For".into(),
            cors: CorsSettings::default(),
            body_limit: 1_048_576,
            request_timeout: Duration::from_secs(20),
            shutdown_timeout: Duration::from_secs(10),
            rate_limits: RateLimits::default(),
        }
    }
}

/// TLS of the main listener; off by default because deployments usually terminate TLS in front.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerTls {
    /// Serve HTTPS on `server.port`. (The reference service ignores `server.port` with TLS and
    /// listens on 443; Pharos listens where the operator says, so set `port: 443` for that.)
    pub enabled: bool,
    /// Also answer plain HTTP on port 80 with `308` redirects to the HTTPS URL.
    pub redirect_http: bool,
    /// PEM certificate chain path; required when enabled.
    pub cert: String,
    /// PEM private key path; required when enabled.
    pub key: String,
}

/// CORS of a listener: `server.cors` (the main port, lighthouse-compatible defaults) and
/// `api.admin.cors` (the Admin API: credentials on, `OPTIONS` allowed, a one-hour preflight
/// cache; see [`CorsSettings::admin`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CorsSettings {
    /// Add CORS headers at all.
    pub enabled: bool,
    /// Comma-separated origins or `*`.
    pub allow_origins: CommaList,
    /// Comma-separated methods or `*`.
    pub allow_methods: CommaList,
    /// Comma-separated request headers or `*`.
    pub allow_headers: CommaList,
    /// Send `Access-Control-Allow-Credentials: true`.
    pub allow_credentials: bool,
    /// Comma-separated response headers exposed to scripts.
    pub expose_headers: CommaList,
    /// Preflight cache time in seconds (0 = header omitted).
    pub max_age: u64,
}

impl Default for CorsSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            allow_origins: "*".into(),
            allow_methods: "GET,POST,HEAD,PUT,DELETE,PATCH".into(),
            allow_headers: CommaList::default(),
            allow_credentials: false,
            expose_headers: CommaList::default(),
            max_age: 0,
        }
    }
}

impl CorsSettings {
    /// The Admin API's defaults: a console calls it with credentials, so enabling admin CORS
    /// means listing the consoles' origins (`*` with credentials is refused at start-up).
    pub fn admin() -> Self {
        Self {
            allow_methods: "GET,POST,HEAD,PUT,DELETE,PATCH,OPTIONS".into(),
            allow_headers: "Origin,Content-Type,Accept,Authorization".into(),
            allow_credentials: true,
            max_age: 3_600,
            ..Self::default()
        }
    }
}

/// `logging.*`: access log, internal log and the start-up banner.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoggingSettings {
    /// One line per HTTP request.
    pub access: AccessLog,
    /// The service's own diagnostic log.
    pub internal: InternalLog,
    /// What is printed at start-up.
    pub banner: Banner,
}

/// Access log destinations; both off by default (access logs are opt-in, they can be large).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AccessLog {
    /// Directory for `access.log`; empty = no file.
    pub dir: String,
    /// Also write access lines to stderr.
    pub stderr: bool,
}

/// Internal log destinations, level and formats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InternalLog {
    /// Directory for `pharos.log`; empty = no file.
    pub dir: String,
    /// Write to stderr (on by default so a bare start shows something).
    pub stderr: bool,
    /// `trace`, `debug`, `info`, `warn` or `error` (case-insensitive, lighthouse wrote `INFO`).
    pub level: String,
    /// Format on stderr.
    pub stderr_format: LogFormat,
    /// Format of the file output (never coloured).
    pub dir_format: LogFormat,
}

impl Default for InternalLog {
    fn default() -> Self {
        Self {
            dir: String::new(),
            stderr: true,
            level: "info".into(),
            stderr_format: LogFormat::Console,
            dir_format: LogFormat::Json,
        }
    }
}

/// Log line format; humans read `console`, log shippers read `json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines (coloured on a terminal).
    #[serde(alias = "CONSOLE", alias = "Console")]
    Console,
    /// One JSON object per line.
    #[serde(alias = "JSON", alias = "Json")]
    Json,
}

/// Start-up banner switches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Banner {
    /// Print the logo.
    pub logo: bool,
    /// Print the version.
    pub version: bool,
}

impl Default for Banner {
    fn default() -> Self {
        Self {
            logo: true,
            version: true,
        }
    }
}

/// Request rates of the public endpoints that write or fetch (issue 31). A client is the address
/// `trusted_proxies` resolve (an IPv6 client by its /64); a client over its rate, or a class over
/// its total, gets `429 temporarily_unavailable` with `Retry-After`, naming the bound it hit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimits {
    /// Apply the limits at all.
    pub enabled: bool,
    /// Clients remembered at most (1 to 10,000,000; memory of about 100 bytes each, allocated at start); past it, the least recently seen are forgotten first.
    pub clients: u32,
    /// `trust_mark`: every request, including those a checker decides (cached answers too).
    pub trust_mark: RateLimit,
    /// `trust_mark_request`.
    pub trust_mark_request: RateLimit,
    /// `enroll` and `enroll_request` together.
    pub enroll: RateLimit,
    /// `jwks_update` pushes and `jwks_update_trigger`.
    pub jwks_update: RateLimit,
    /// `entity_collection` answered by an on-demand collection (a periodic collection's answers are not limited).
    pub entity_collection: RateLimit,
    /// `resolve` requests that no cached answer serves.
    pub resolve: RateLimit,
}

impl Default for RateLimits {
    fn default() -> Self {
        Self {
            enabled: true,
            clients: 65_536,
            trust_mark: RateLimit::new(60, 20, 6_000),
            trust_mark_request: RateLimit::new(6, 3, 120),
            enroll: RateLimit::new(6, 3, 120),
            jwks_update: RateLimit::new(30, 10, 1_200),
            entity_collection: RateLimit::new(30, 10, 600),
            resolve: RateLimit::new(120, 60, 6_000),
        }
    }
}

/// The rates of one endpoint class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimit {
    /// Requests per minute one client may make on average (0 = no per-client limit).
    pub per_client: u32,
    /// Requests one client may make at once before `per_client` paces it (at least 1).
    pub burst: u32,
    /// Requests per minute of all clients together (0 = no total limit); up to this many at once.
    pub total: u32,
}

impl RateLimit {
    /// `per_client` per minute with bursts of `burst`, `total` per minute in all.
    pub const fn new(per_client: u32, burst: u32, total: u32) -> Self {
        Self {
            per_client,
            burst,
            total,
        }
    }
}

impl Default for RateLimit {
    fn default() -> Self {
        Self::new(0, 1, 0)
    }
}

/// Largest `server.rate_limits.clients`: the table is allocated whole at start (about 1 GB here).
const MAX_LIMITED_CLIENTS: u32 = 10_000_000;

const LEVELS: [&str; 5] = ["trace", "debug", "info", "warn", "error"];

impl ServerSettings {
    /// Records every problem with the listener settings.
    pub(crate) fn check(&self, problems: &mut Vec<String>) {
        if !self.ip_listen.is_empty() && self.ip_listen.parse::<IpAddr>().is_err() {
            problems.push(format!(
                "server.ip_listen: {:?} is not an IP address",
                self.ip_listen
            ));
        }
        if self.tls.enabled && (self.tls.cert.is_empty() || self.tls.key.is_empty()) {
            problems.push("server.tls: cert and key are required when enabled".into());
        }
        if self.tls.redirect_http && !self.tls.enabled {
            problems.push("server.tls.redirect_http needs server.tls.enabled".into());
        }
        for proxy in &self.trusted_proxies {
            if !is_ip_or_cidr(proxy) {
                problems.push(format!(
                    "server.trusted_proxies: {proxy:?} is not an IP or CIDR"
                ));
            }
        }
        if self.body_limit == 0 {
            problems.push("server.body_limit must be greater than 0".into());
        }
        if self.request_timeout.is_zero() {
            problems.push("server.request_timeout must be greater than 0".into());
        }
        if self.rate_limits.enabled
            && !(1..=MAX_LIMITED_CLIENTS).contains(&self.rate_limits.clients)
        {
            problems.push(format!(
                "server.rate_limits.clients must be between 1 and {MAX_LIMITED_CLIENTS}"
            ));
        }
    }
}

impl LoggingSettings {
    /// Records an unknown log level (the formats are checked by their enum).
    pub(crate) fn check(&self, problems: &mut Vec<String>) {
        let level = self.internal.level.to_ascii_lowercase();
        if !LEVELS.contains(&level.as_str()) {
            problems.push(format!(
                "logging.internal.level: {:?} is not one of {}",
                self.internal.level,
                LEVELS.join(", ")
            ));
        }
    }
}

/// `10.0.0.1`, `10.0.0.0/8`, `::1`, `fd00::/8`.
pub(super) fn is_ip_or_cidr(text: &str) -> bool {
    let (addr, prefix) = text.split_once('/').unwrap_or((text, ""));
    let Ok(ip) = addr.trim().parse::<IpAddr>() else {
        return false;
    };
    let max = if ip.is_ipv4() { 32 } else { 128 };
    prefix.is_empty() || prefix.parse::<u8>().is_ok_and(|p| p <= max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxies_and_tls_checked() {
        let mut s = ServerSettings {
            trusted_proxies: vec!["10.0.0.0/8".into(), "::1".into(), "10.0.0.0/33".into()],
            ..ServerSettings::default()
        };
        s.tls.enabled = true;
        let mut problems = Vec::new();
        s.check(&mut problems);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("10.0.0.0/33")));
    }

    #[test]
    fn the_rate_limiter_table_is_bounded_by_configuration() {
        for (clients, ok) in [
            (0, false),
            (1, true),
            (10_000_000, true),
            (10_000_001, false),
        ] {
            let mut s = ServerSettings::default();
            s.rate_limits.clients = clients;
            let mut problems = Vec::new();
            s.check(&mut problems);
            assert_eq!(problems.is_empty(), ok, "{clients}: {problems:?}");
        }
    }

    #[test]
    fn level_is_case_insensitive() {
        let mut l = LoggingSettings::default();
        l.internal.level = "INFO".into();
        let mut problems = Vec::new();
        l.check(&mut problems);
        assert!(problems.is_empty());
        l.internal.level = "loud".into();
        l.check(&mut problems);
        assert_eq!(problems.len(), 1);
    }
}
