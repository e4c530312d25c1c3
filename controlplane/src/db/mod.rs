//! Database access: one pool over SQLite, MySQL/MariaDB or PostgreSQL through sqlx's `Any`
//! driver, the embedded per-dialect migrations, and the repositories of each table.
//!
//! Column conventions keep one code path for all three: times are BIGINT Unix seconds, flags
//! BIGINT 0/1, JSON documents TEXT. SQL is written with `?` placeholders and rewritten to `$n`
//! for PostgreSQL by [`Db::sql`].

pub mod claims;
pub mod collections;
pub mod endpoints;
pub mod entity_config;
pub mod jti;
pub mod jwks_polling;
pub mod keys;
pub mod published_marks;
pub mod settings;
pub mod stats;
pub mod subordinate_events;
pub mod subordinates;
pub mod trust_anchors;
pub mod trust_mark_events;
pub mod trust_mark_issuance;
pub mod trust_mark_parties;
pub mod trust_mark_specs;
pub mod trust_mark_subjects;
pub mod trust_mark_types;
pub mod trust_marks;
pub mod users;

use std::borrow::Cow;

use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::{AnyPool, AssertSqlSafe, SqlSafeStr, SqlStr};

use crate::error::{Error, Result};

/// Which SQL dialect the pool speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Embedded SQLite file.
    Sqlite,
    /// MySQL or MariaDB.
    Mysql,
    /// PostgreSQL.
    Postgres,
}

impl Dialect {
    /// Picks the dialect from a connection URL's scheme.
    pub fn from_url(url: &str) -> Result<Self> {
        let scheme = url.split(':').next().unwrap_or_default();
        match scheme {
            "sqlite" => Ok(Self::Sqlite),
            "mysql" | "mariadb" => Ok(Self::Mysql),
            "postgres" | "postgresql" => Ok(Self::Postgres),
            other => Err(Error::BadRequest(format!(
                "unsupported database scheme {other:?}"
            ))),
        }
    }
}

/// How long `/readyz` waits for the database before answering "not ready".
pub const PING_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// How long a request waits for a pooled connection before it fails (the Admin API then
/// answers 503): bounded, so that an unreachable database never makes a request hang.
pub const ACQUIRE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How often the breaker's probe asks an unreachable database whether it is back.
pub const PROBE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// A connection pool plus its dialect.
#[derive(Debug, Clone)]
pub struct Db {
    /// The pool.
    pub pool: AnyPool,
    /// Its dialect.
    pub dialect: Dialect,
    /// Whether the database is known to be unreachable (see [`Breaker`]).
    pub breaker: std::sync::Arc<Breaker>,
}

/// What is known of the database's reachability: a circuit breaker for Admin API writes.
///
/// During an outage every request that touches the pool waits its full [`ACQUIRE_TIMEOUT`]
/// before it fails, and writes queue one behind another on the writer lock, so N writes would
/// cost N × 10 s. Once an outage is seen (an unreachable-database error from a write or from
/// the readiness check), the breaker opens: writes answer 503 `temporarily_unavailable` at
/// once, and a background probe pings the database every [`PROBE_INTERVAL`] until it answers;
/// a successful readiness check closes it too.
#[derive(Debug, Default)]
pub struct Breaker {
    open: std::sync::atomic::AtomicBool,
    probing: std::sync::atomic::AtomicBool,
    trips: std::sync::atomic::AtomicU64,
}

impl Breaker {
    /// Whether the database is known to be unreachable now.
    pub fn is_open(&self) -> bool {
        self.open.load(std::sync::atomic::Ordering::Acquire)
    }

    /// How many times an outage was seen (opened from closed) since start.
    pub fn trips(&self) -> u64 {
        self.trips.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn close(&self) {
        if self.open.swap(false, std::sync::atomic::Ordering::AcqRel) {
            tracing::info!("database reachable again; Admin API writes accepted");
        }
    }
}

/// Migrations embedded per dialect, in version order. A test checks that every file under
/// `migrations/<dialect>/` is listed here.
const MIGRATIONS: &[(i64, &str, [&str; 3])] = &[
    (
        1,
        "foundation",
        [
            include_str!("../../../migrations/sqlite/0001_foundation.sql"),
            include_str!("../../../migrations/mysql/0001_foundation.sql"),
            include_str!("../../../migrations/postgres/0001_foundation.sql"),
        ],
    ),
    (
        2,
        "subordinates",
        [
            include_str!("../../../migrations/sqlite/0002_subordinates.sql"),
            include_str!("../../../migrations/mysql/0002_subordinates.sql"),
            include_str!("../../../migrations/postgres/0002_subordinates.sql"),
        ],
    ),
    (
        3,
        "users",
        [
            include_str!("../../../migrations/sqlite/0003_users.sql"),
            include_str!("../../../migrations/mysql/0003_users.sql"),
            include_str!("../../../migrations/postgres/0003_users.sql"),
        ],
    ),
    (
        4,
        "jti",
        [
            include_str!("../../../migrations/sqlite/0004_jti.sql"),
            include_str!("../../../migrations/mysql/0004_jti.sql"),
            include_str!("../../../migrations/postgres/0004_jti.sql"),
        ],
    ),
    (
        5,
        "additional_claims",
        [
            include_str!("../../../migrations/sqlite/0005_additional_claims.sql"),
            include_str!("../../../migrations/mysql/0005_additional_claims.sql"),
            include_str!("../../../migrations/postgres/0005_additional_claims.sql"),
        ],
    ),
    (
        6,
        "trust_marks",
        [
            include_str!("../../../migrations/sqlite/0006_trust_marks.sql"),
            include_str!("../../../migrations/mysql/0006_trust_marks.sql"),
            include_str!("../../../migrations/postgres/0006_trust_marks.sql"),
        ],
    ),
    (
        8,
        "statistics",
        [
            include_str!("../../../migrations/sqlite/0008_statistics.sql"),
            include_str!("../../../migrations/mysql/0008_statistics.sql"),
            include_str!("../../../migrations/postgres/0008_statistics.sql"),
        ],
    ),
    (
        9,
        "anchor_constraints",
        [
            include_str!("../../../migrations/sqlite/0009_anchor_constraints.sql"),
            include_str!("../../../migrations/mysql/0009_anchor_constraints.sql"),
            include_str!("../../../migrations/postgres/0009_anchor_constraints.sql"),
        ],
    ),
    (
        10,
        "entity_collection",
        [
            include_str!("../../../migrations/sqlite/0010_entity_collection.sql"),
            include_str!("../../../migrations/mysql/0010_entity_collection.sql"),
            include_str!("../../../migrations/postgres/0010_entity_collection.sql"),
        ],
    ),
    (
        11,
        "push_freshness",
        [
            include_str!("../../../migrations/sqlite/0011_push_freshness.sql"),
            include_str!("../../../migrations/mysql/0011_push_freshness.sql"),
            include_str!("../../../migrations/postgres/0011_push_freshness.sql"),
        ],
    ),
    (
        12,
        "cluster_changes",
        [
            include_str!("../../../migrations/sqlite/0012_cluster_changes.sql"),
            include_str!("../../../migrations/mysql/0012_cluster_changes.sql"),
            include_str!("../../../migrations/postgres/0012_cluster_changes.sql"),
        ],
    ),
    (
        13,
        "stats_batches",
        [
            include_str!("../../../migrations/sqlite/0013_stats_batches.sql"),
            include_str!("../../../migrations/mysql/0013_stats_batches.sql"),
            include_str!("../../../migrations/postgres/0013_stats_batches.sql"),
        ],
    ),
    (
        14,
        "issued_mark_reuse",
        [
            include_str!("../../../migrations/sqlite/0014_issued_mark_reuse.sql"),
            include_str!("../../../migrations/mysql/0014_issued_mark_reuse.sql"),
            include_str!("../../../migrations/postgres/0014_issued_mark_reuse.sql"),
        ],
    ),
];

impl Db {
    /// Opens a pool for `url` (sqlx URL) with at most `max_connections`.
    pub async fn connect(url: &str, max_connections: u32) -> Result<Self> {
        install_default_drivers();
        let dialect = Dialect::from_url(url)?;
        // An in-memory SQLite database exists per connection: keep exactly one.
        let max = if dialect == Dialect::Sqlite && url.contains(":memory:") {
            1
        } else {
            max_connections.max(1)
        };
        // Rollback journal (sqlx's default), not WAL: a soak with WAL on this service
        // answered 5 of 153 Admin API writes with "database is locked" after 5 s waits
        // (BENCHMARKS.md, soak of 2026-11-24 06:30), where the rollback journal had 0 of 2,255.
        let options = AnyPoolOptions::new()
            .max_connections(max)
            .acquire_timeout(ACQUIRE_TIMEOUT);
        let pool = options.connect(url).await?;
        Ok(Self {
            pool,
            dialect,
            breaker: Default::default(),
        })
    }

    /// Opens the breaker when `e` says the database is unreachable (see [`Breaker`]), and
    /// starts the probe that closes it again.
    pub fn note(&self, e: &sqlx::Error) {
        if crate::error::db_unavailable(e) {
            self.trip();
        }
    }

    /// [`Db::note`] for the control plane's error type.
    pub fn note_error(&self, e: &Error) {
        if e.is_unavailable() {
            self.trip();
        }
    }

    /// Opens the breaker: the database is unreachable.
    pub fn trip(&self) {
        use std::sync::atomic::Ordering;
        let b = &self.breaker;
        if !b.open.swap(true, Ordering::AcqRel) {
            b.trips.fetch_add(1, Ordering::Relaxed);
            tracing::warn!("database unreachable; Admin API writes answer 503 until it is back");
        }
        if b.probing.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            b.probing.store(false, Ordering::Release);
            return;
        };
        let db = self.clone();
        rt.spawn(async move {
            // A closed pool (the service stopping) ends the probe.
            while db.breaker.is_open() && !db.pool.is_closed() {
                tokio::time::sleep(PROBE_INTERVAL).await;
                if db.answers().await {
                    db.breaker.close();
                }
            }
            db.breaker.probing.store(false, Ordering::Release);
            // A trip between the loop's last check and the store above starts no probe of its
            // own: start it here.
            if db.breaker.is_open() && !db.pool.is_closed() {
                db.trip();
            }
        });
    }

    /// The error a write answers while the breaker is open.
    pub fn refuse_if_down(&self) -> Result<()> {
        if self.breaker.is_open() {
            return Err(Error::Database(sqlx::Error::PoolTimedOut));
        }
        Ok(())
    }

    /// Applies the embedded migrations of this dialect, then the data moves that SQL cannot
    /// express portably (see [`Db::move_data`]).
    pub async fn migrate(&self) -> Result<()> {
        self.migrate_schema(None).await?;
        self.move_data().await
    }

    /// Applies the embedded migrations up to `target` (all with `None`); tests use a target to
    /// build a database as an older release left it.
    pub async fn migrate_schema(&self, target: Option<i64>) -> Result<()> {
        let idx = match self.dialect {
            Dialect::Sqlite => 0,
            Dialect::Mysql => 1,
            Dialect::Postgres => 2,
        };
        let migrations = MIGRATIONS
            .iter()
            .filter(|(version, _, _)| target.is_none_or(|t| *version <= t))
            .map(|(version, name, sql)| {
                Migration::new(
                    *version,
                    Cow::Borrowed(*name),
                    MigrationType::Simple,
                    sql[idx].into_sql_str(),
                    false,
                )
            })
            .collect();
        Migrator::with_migrations(migrations)
            .run(&self.pool)
            .await?;
        Ok(())
    }

    /// One-time data moves after the schema migrations, in one transaction, before the first
    /// snapshot is built: the general additional claims leave their JSON array in `settings`
    /// for rows of `additional_claims` (migration 5). Each move is a no-op once done, so a
    /// crash between the schema migration and the move is repaired by the next start.
    pub async fn move_data(&self) -> Result<()> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        let mut tx = self.pool.begin().await?;
        let moved = claims::move_general_claims(self, &mut tx, now).await?;
        tx.commit().await?;
        if moved > 0 {
            tracing::info!(moved, "general additional claims moved into their table");
        }
        Ok(())
    }

    /// Rewrites `?` placeholders for the pool's dialect.
    pub fn sql(&self, sql: &'static str) -> SqlStr {
        match self.dialect {
            Dialect::Postgres => AssertSqlSafe(numbered_placeholders(sql)).into_sql_str(),
            _ => sql.into_sql_str(),
        }
    }

    /// Like [`Db::sql`] for statements assembled at run time (multi-row inserts, optional
    /// filters). Callers only assemble fixed SQL text and `?` placeholders, never values.
    pub fn sql_built(&self, sql: String) -> SqlStr {
        match self.dialect {
            Dialect::Postgres => AssertSqlSafe(numbered_placeholders(&sql)).into_sql_str(),
            _ => AssertSqlSafe(sql).into_sql_str(),
        }
    }

    /// `SUM(expr)` as a BIGINT in every dialect, 0 over no rows (PostgreSQL sums BIGINTs to
    /// NUMERIC and MySQL to DECIMAL, neither of which the `Any` driver decodes).
    pub fn sum(&self, expr: &str) -> String {
        match self.dialect {
            Dialect::Sqlite => format!("COALESCE(SUM({expr}), 0)"),
            Dialect::Mysql => format!("COALESCE(CAST(SUM({expr}) AS SIGNED), 0)"),
            Dialect::Postgres => format!("COALESCE(CAST(SUM({expr}) AS BIGINT), 0)"),
        }
    }

    /// Checks that the database answers within [`PING_TIMEOUT`] (used by `/readyz`): a
    /// readiness probe must get its answer before its own timeout, not after the pool's
    /// acquire timeout, or an unreachable database reads as a hung instance.
    /// The answer also opens or closes the write breaker ([`Breaker`]).
    pub async fn ping(&self) -> bool {
        let up = self.answers().await;
        if up {
            self.breaker.close();
        } else {
            self.trip();
        }
        up
    }

    /// Whether `SELECT 1` answers within [`PING_TIMEOUT`].
    async fn answers(&self) -> bool {
        let query = sqlx::query(self.sql("SELECT 1")).execute(&self.pool);
        tokio::time::timeout(PING_TIMEOUT, query)
            .await
            .is_ok_and(|r| r.is_ok())
    }
}

/// `a = ? AND b = ?` → `a = $1 AND b = $2`.
pub(crate) fn numbered_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for ch in sql.chars() {
        if ch == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(ch);
        }
    }
    out
}

/// Database representation of a flag.
pub fn flag(b: bool) -> i64 {
    i64::from(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_breaker_refuses_writes_until_the_database_answers() {
        let Ok(db) = Db::connect("sqlite::memory:", 1).await else {
            panic!("no in-memory SQLite");
        };
        assert!(db.refuse_if_down().is_ok());
        // A connection-class error opens it; a query error does not.
        db.note(&sqlx::Error::RowNotFound);
        assert!(!db.breaker.is_open());
        db.note(&sqlx::Error::PoolTimedOut);
        assert!(db.breaker.is_open());
        assert!(db.refuse_if_down().is_err_and(|e| e.is_unavailable()));
        assert_eq!(db.breaker.trips(), 1);
        // The readiness check (or the probe) finds the database again and closes it.
        assert!(db.ping().await);
        assert!(!db.breaker.is_open());
        assert!(db.refuse_if_down().is_ok());
    }

    #[test]
    fn placeholders_are_numbered() {
        assert_eq!(
            numbered_placeholders("a = ? AND b IN (?, ?)"),
            "a = $1 AND b IN ($2, $3)"
        );
    }

    #[test]
    fn every_migration_file_is_embedded() {
        for dialect in ["sqlite", "mysql", "postgres"] {
            let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../migrations/").to_string() + dialect;
            let files = std::fs::read_dir(&dir).unwrap().count();
            assert_eq!(files, MIGRATIONS.len(), "{dialect}: files vs embedded");
        }
    }

    #[test]
    fn dialect_from_scheme() {
        assert_eq!(Dialect::from_url("sqlite://x").unwrap(), Dialect::Sqlite);
        assert_eq!(Dialect::from_url("mysql://x").unwrap(), Dialect::Mysql);
        assert_eq!(
            Dialect::from_url("postgres://x").unwrap(),
            Dialect::Postgres
        );
        assert!(Dialect::from_url("redis://x").is_err());
    }
}
