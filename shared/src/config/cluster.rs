//! `cluster.*`: several replicas on one PostgreSQL or MariaDB database (issue 19).
//!
//! Replicas agree through the database only: a committed write is announced to the others
//! (PostgreSQL `NOTIFY`, a polled generation table on MariaDB) and work that must run once
//! runs on the replica holding the lease row (see `leadership.rs` of the control plane). Nothing here is a consensus of its own.

use serde::{Deserialize, Serialize};

use super::{Duration, JtiBackend, StorageDriver, StorageSettings};

/// Replication settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterSettings {
    /// Run as one replica among several on a shared database.
    pub enabled: bool,
    /// This replica's name in statistics and logs; empty = `<hostname>-<pid>`, chosen at start.
    pub instance_id: String,
    /// How often a replica on MariaDB polls for changes made by the others.
    pub poll_interval: Duration,
    /// How long after the leader dies another replica takes over the background work.
    pub leader_lease: Duration,
}

impl Default for ClusterSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            instance_id: String::new(),
            // A poll is one indexed range read of the change log: twenty a second per replica
            // cost the database little, and keep propagation on MariaDB within 100 ms (issue 33).
            poll_interval: Duration(std::time::Duration::from_millis(50)),
            leader_lease: Duration::from_secs(10),
        }
    }
}

/// Longest accepted `cluster.instance_id` (it is stored with every statistics record).
pub const MAX_INSTANCE_ID: usize = 64;

impl ClusterSettings {
    /// Records every problem with clustering on this storage.
    pub(crate) fn check(&self, storage: &StorageSettings, problems: &mut Vec<String>) {
        if self.instance_id.len() > MAX_INSTANCE_ID {
            problems.push(format!(
                "cluster.instance_id must be at most {MAX_INSTANCE_ID} bytes"
            ));
        }
        if self.poll_interval.is_zero() {
            problems.push("cluster.poll_interval must be greater than 0".into());
        }
        if self.leader_lease.get().as_secs() < 2 {
            problems.push("cluster.leader_lease must be at least 2s".into());
        }
        if !self.enabled {
            return;
        }
        if storage.driver == StorageDriver::Sqlite {
            problems.push(
                "cluster.enabled needs storage.driver postgres or mysql: a SQLite file cannot \
                 be shared by replicas"
                    .into(),
            );
        }
        if storage.endpoint_auth.jti_backend == JtiBackend::Cache {
            problems.push(
                "cluster.enabled needs storage.endpoint_auth.jti_backend: db (with the in-process \
                 cache a client assertion used on one replica could be replayed on another)"
                    .into(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(c: &ClusterSettings, s: &StorageSettings) -> Vec<String> {
        let mut p = Vec::new();
        c.check(s, &mut p);
        p
    }

    #[test]
    fn clustering_needs_a_shared_database_and_the_db_replay_store() {
        let on = ClusterSettings {
            enabled: true,
            ..ClusterSettings::default()
        };
        let sqlite = StorageSettings::default();
        assert!(problems(&ClusterSettings::default(), &sqlite).is_empty());
        let p = problems(&on, &sqlite);
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].contains("SQLite"), "{p:?}");
        assert!(p[1].contains("jti_backend: db"), "{p:?}");

        let mut pg = StorageSettings {
            driver: StorageDriver::Postgres,
            ..StorageSettings::default()
        };
        pg.endpoint_auth.jti_backend = JtiBackend::Db;
        assert!(problems(&on, &pg).is_empty());
        pg.driver = StorageDriver::Mysql;
        assert!(problems(&on, &pg).is_empty());
    }

    #[test]
    fn intervals_and_names_are_bounded() {
        let c = ClusterSettings {
            instance_id: "x".repeat(65),
            poll_interval: Duration::from_secs(0),
            leader_lease: Duration::from_secs(1),
            ..ClusterSettings::default()
        };
        assert_eq!(problems(&c, &StorageSettings::default()).len(), 3);
    }
}
