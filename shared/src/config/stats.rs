//! `stats.*`: request statistics (off by default; the collector is fed from the data plane).

use serde::{Deserialize, Serialize};

use super::Duration;

/// Statistics collection.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StatsSettings {
    /// Collect at all.
    pub enabled: bool,
    /// In-memory buffering before rows are written.
    pub buffer: StatsBuffer,
    /// Which request attributes are recorded (privacy switches).
    pub capture: StatsCapture,
    /// How long data is kept.
    pub retention: StatsRetention,
    /// Endpoint types recorded; empty = every non-admin endpoint.
    pub endpoints: Vec<String>,
}

/// Write buffering: batches keep the request path free of database writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StatsBuffer {
    /// Capacity in records; when full the oldest are dropped (and counted).
    pub size: u32,
    /// Flush at least this often.
    pub flush_interval: Duration,
    /// Flush early when the buffer is this full (fraction in (0, 1]).
    pub flush_threshold: f64,
}

impl Default for StatsBuffer {
    fn default() -> Self {
        Self {
            size: 10_000,
            flush_interval: Duration::from_secs(5),
            flush_threshold: 0.8,
        }
    }
}

/// Per-attribute capture switches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StatsCapture {
    /// Record the client IP.
    pub client_ip: bool,
    /// Record the User-Agent.
    pub user_agent: bool,
    /// Record query parameters.
    pub query_params: bool,
    /// Record the authenticated client entity identifier.
    pub client_entity_id: bool,
    /// Country lookup of client IPs.
    pub geo_ip: GeoIp,
}

impl Default for StatsCapture {
    fn default() -> Self {
        Self {
            client_ip: true,
            user_agent: true,
            query_params: true,
            client_entity_id: true,
            geo_ip: GeoIp::default(),
        }
    }
}

/// GeoIP lookup with a MaxMind database.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GeoIp {
    /// Look up countries.
    pub enabled: bool,
    /// Path of the `.mmdb` file; required when enabled.
    pub database_path: String,
}

/// Retention in days.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StatsRetention {
    /// Days detailed request records are kept.
    pub detailed_days: u32,
    /// Days daily aggregates are kept.
    pub aggregated_days: u32,
}

impl Default for StatsRetention {
    fn default() -> Self {
        Self {
            detailed_days: 90,
            aggregated_days: 365,
        }
    }
}

impl StatsSettings {
    /// Records every problem; lighthouse silently reset bad buffer values, Pharos reports them.
    pub(crate) fn check(&self, problems: &mut Vec<String>) {
        let b = &self.buffer;
        if b.size == 0 {
            problems.push("stats.buffer.size must be greater than 0".into());
        }
        if b.flush_interval.is_zero() {
            problems.push("stats.buffer.flush_interval must be greater than 0".into());
        }
        if !(b.flush_threshold > 0.0 && b.flush_threshold <= 1.0) {
            problems.push("stats.buffer.flush_threshold must be in (0, 1]".into());
        }
        if self.capture.geo_ip.enabled && self.capture.geo_ip.database_path.is_empty() {
            problems.push("stats.capture.geo_ip.database_path is required when enabled".into());
        }
        if self.retention.detailed_days == 0 || self.retention.aggregated_days == 0 {
            problems.push("stats.retention days must be at least 1".into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_buffer_values_reported() {
        let mut s = StatsSettings::default();
        let mut problems = Vec::new();
        s.check(&mut problems);
        assert!(problems.is_empty());
        s.buffer.flush_threshold = 1.5;
        s.capture.geo_ip.enabled = true;
        s.check(&mut problems);
        assert_eq!(problems.len(), 2, "{problems:?}");
    }
}
