//! `api.admin.*`: the lighthouse-compatible Admin API (design decision 3).

use serde::{Deserialize, Serialize};

use super::CorsSettings;

/// `api.*`; only the Admin API lives here today.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApiSettings {
    /// The Admin API.
    pub admin: AdminSettings,
}

/// Admin API switches, listener, auditing identity, password hashing and CORS.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdminSettings {
    /// Mount the Admin API at all.
    pub enabled: bool,
    /// Mount admin user management (`/users`). Basic auth is required whenever users exist,
    /// whatever this says: switching management off must not open a protected API.
    pub users_enabled: bool,
    /// 0 serves the Admin API on the main port; otherwise on this separate port.
    pub port: u16,
    /// HTTPS on the separate admin port.
    pub tls: AdminTls,
    /// Where the actor name recorded in audit events comes from.
    pub actor_source: ActorSource,
    /// Header read when `actor_source` is `header`.
    pub actor_header: String,
    /// Argon2id parameters for admin user passwords.
    pub password_hashing: PasswordHashing,
    /// CORS of the Admin API (separate from `server.cors`).
    #[serde(default = "CorsSettings::admin")]
    pub cors: CorsSettings,
    /// Refuse (428) a `PUT`, `PATCH`, `DELETE` or `POST` into a document that carries no
    /// `If-Match`, so that every client shows which version it changes and no edit is made on
    /// a stale read. Off, such a write without `If-Match` is lighthouse-compatible (a
    /// whole-document `PUT` is last-writer-wins).
    pub require_if_match: bool,
}

impl Default for AdminSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            users_enabled: true,
            port: 0,
            tls: AdminTls::default(),
            actor_source: ActorSource::BasicAuth,
            actor_header: "X-Actor".into(),
            password_hashing: PasswordHashing::default(),
            cors: CorsSettings::admin(),
            require_if_match: false,
        }
    }
}

/// TLS of the separate admin listener.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdminTls {
    /// Serve HTTPS on `api.admin.port`.
    pub enabled: bool,
    /// PEM certificate chain path.
    pub cert: String,
    /// PEM private key path.
    pub key: String,
}

/// Source of the audit actor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActorSource {
    /// Basic auth user name, header as fallback.
    BasicAuth,
    /// The `actor_header` header, Basic auth as fallback.
    Header,
}

/// Argon2id cost parameters; configurable so small machines and tests can lower them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PasswordHashing {
    /// Argon2id iterations.
    pub time: u32,
    /// Argon2id memory in KiB.
    pub memory_kib: u32,
    /// Argon2id lanes (threads).
    pub parallelism: u32,
    /// Length of the derived hash in bytes.
    pub key_len: u32,
    /// Length of the random salt in bytes.
    pub salt_len: u32,
}

impl Default for PasswordHashing {
    fn default() -> Self {
        Self {
            time: 1,
            memory_kib: 65_536,
            parallelism: 4,
            key_len: 64,
            salt_len: 32,
        }
    }
}

impl AdminSettings {
    /// Records every problem with the Admin API settings; `main_port` is `server.port`.
    pub(crate) fn check(&self, main_port: u16, problems: &mut Vec<String>) {
        if self.tls.enabled {
            if self.tls.cert.is_empty() || self.tls.key.is_empty() {
                problems.push("api.admin.tls: cert and key are required when enabled".into());
            }
            if self.port == 0 {
                problems.push("api.admin.tls needs a separate api.admin.port (not 0)".into());
            }
        }
        if self.port != 0 && self.port == main_port {
            problems.push("api.admin.port must differ from server.port (use 0 to share it)".into());
        }
        if self.actor_source == ActorSource::Header && self.actor_header.is_empty() {
            problems.push("api.admin.actor_header is required when actor_source is header".into());
        }
        let h = &self.password_hashing;
        let argon_rules = [
            (h.time >= 1, "time must be at least 1"),
            (h.parallelism >= 1, "parallelism must be at least 1"),
            (
                u64::from(h.memory_kib) >= 8 * u64::from(h.parallelism),
                "memory_kib must be at least 8 × parallelism",
            ),
            (h.key_len >= 4, "key_len must be at least 4"),
            (h.salt_len >= 8, "salt_len must be at least 8"),
        ];
        for (ok, rule) in argon_rules {
            if !ok {
                problems.push(format!("api.admin.password_hashing.{rule}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_needs_files_and_port() {
        let mut a = AdminSettings::default();
        a.tls.enabled = true;
        let mut problems = Vec::new();
        a.check(7672, &mut problems);
        assert_eq!(problems.len(), 2, "{problems:?}");
    }

    #[test]
    fn argon_limits() {
        let mut a = AdminSettings::default();
        a.password_hashing.salt_len = 4;
        a.password_hashing.memory_kib = 16;
        let mut problems = Vec::new();
        a.check(7672, &mut problems);
        assert_eq!(problems.len(), 2, "{problems:?}");
    }
}
