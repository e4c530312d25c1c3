//! Database access: one pool over SQLite, MySQL/MariaDB or PostgreSQL through sqlx's `Any`
//! driver, the embedded per-dialect migrations, and the repositories of each table.
//!
//! Column conventions keep one code path for all three: times are BIGINT Unix seconds, flags
//! BIGINT 0/1, JSON documents TEXT. SQL is written with `?` placeholders and rewritten to `$n`
//! for PostgreSQL by [`Db::sql`].

pub mod backup;
pub mod claims;
pub mod collections;
pub mod endpoints;
pub mod entities;
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
pub mod wal;

use std::borrow::Cow;

use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::{AnyPool, AssertSqlSafe, SqlSafeStr, SqlStr};

use pharos_shared::hosted::EntityNo;

use crate::error::{Error, Result};

/// The last check of a leader-only write, in its transaction just before the commit: that the
/// job's replica still leads ([`crate::leadership::Fence`]). Repositories whose writes only the
/// leader makes take one; the trait keeps them below the leadership module that implements it.
pub trait FenceCheck: Sync {
    /// Refuses ([`crate::Error::Fenced`]) when the write must not land.
    fn check(
        &self,
        tx: &mut sqlx::AnyConnection,
    ) -> impl Future<Output = crate::error::Result<()>> + Send;
}

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
            other => Err(Error::DatabaseScheme(other.to_owned())),
        }
    }

    /// The OpenTelemetry `db.system.name` of this dialect, for trace spans.
    pub fn system_name(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Mysql => "mariadb",
            Self::Postgres => "postgresql",
        }
    }
}

/// How long `/readyz` waits for the database before answering "not ready".
pub const PING_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// How long a request waits for a pooled connection before it fails (the Admin API then
/// answers 503): bounded, so that an unreachable database never makes a request hang.
pub const ACQUIRE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long a connection of [`Db::native_pg`] stays open unused: past a start-up's or a
/// reload's last batch.
const NATIVE_IDLE: std::time::Duration = std::time::Duration::from_secs(10);

/// How often the breaker's probe asks an unreachable database whether it is back.
pub const PROBE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// How long a readiness answer is reused: a flood of `/readyz` costs one database round trip
/// per period (and at most one connection at a time), never the pool the writes need.
pub const READY_CACHE: std::time::Duration = std::time::Duration::from_secs(1);

/// A connection pool plus its dialect.
///
/// The write path is enforced here, by visibility: the pool, the writer's connection and
/// [`Db::begin`]/[`Db::begin_write`] are visible only inside `control_plane` (this module is
/// one of its children). So outside it, SQL runs only in the repositories' named functions,
/// and a repository's write takes the `&mut AnyConnection` of a transaction that only
/// [`crate::control_plane::Write`] hands out (commit, then publish). The few writes that
/// are not federation state are named repository functions on the pool (the replay store, a
/// login's re-hash, statistics; see `control_plane/tests.rs`).
#[derive(Debug, Clone)]
pub struct Db {
    /// The pool.
    pub(in crate::control_plane) pool: AnyPool,
    /// Its dialect.
    pub dialect: Dialect,
    /// Whether the database is known to be unreachable (see [`Breaker`]).
    pub breaker: std::sync::Arc<Breaker>,
    /// On an SQLite file: the WAL and the federation writer's connection (group commit, see
    /// [`wal`]); `None` on PostgreSQL, MariaDB and an in-memory SQLite.
    pub(in crate::control_plane) wal: Option<std::sync::Arc<wal::Wal>>,
    /// On PostgreSQL: a pool of the native driver, for the one read whose rows `Any` decodes too
    /// slowly, the subordinate registry streamed at start-up and on a full reload (see
    /// [`subordinates::for_each`]). Lazy: it connects on that read and its connections close
    /// when idle, so a running service holds none.
    pub(in crate::control_plane) native_pg: Option<sqlx::PgPool>,
    /// The hosted entity whose rows the repositories read and write through this handle
    /// (see [`Db::for_entity`]); deployment-wide tables (users, the replay store, the cluster
    /// log, leadership) ignore it.
    entity: EntityNo,
}

/// What is known of the database's reachability: a circuit breaker for Admin API writes.
///
/// During an outage every request that touches the pool waits its full [`ACQUIRE_TIMEOUT`]
/// before it fails, and writes queue one behind another on the writer lock, so N writes would
/// cost N × 10 s. Once an outage is seen (a connection-class error from a write, or the
/// readiness check finding no answer), the breaker opens: writes answer 503
/// `temporarily_unavailable` at once, and a background probe pings the database every
/// [`PROBE_INTERVAL`] until it answers; a successful readiness check closes it too.
///
/// Saturation is not an outage: a pool that hands out no connection in time (every one busy
/// with slow work, or a flood of requests) and SQLite busy with another writer do not open it.
/// A pool timeout is checked on a connection of the check's own ([`Db::suspect`]), and the
/// readiness check asks the database outside the pool when the pool has nothing to spare.
#[derive(Debug, Default)]
pub struct Breaker {
    open: std::sync::atomic::AtomicBool,
    probing: std::sync::atomic::AtomicBool,
    trips: std::sync::atomic::AtomicU64,
    /// A pool timeout is being checked ([`Db::suspect`]): one check at a time.
    suspecting: std::sync::atomic::AtomicBool,
    /// The last readiness answer and when it was found ([`Db::ping`]); the lock makes
    /// concurrent readiness checks one.
    ready: tokio::sync::Mutex<Option<(tokio::time::Instant, bool)>>,
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
            include_str!("../../../../migrations/sqlite/0001_foundation.sql"),
            include_str!("../../../../migrations/mysql/0001_foundation.sql"),
            include_str!("../../../../migrations/postgres/0001_foundation.sql"),
        ],
    ),
    (
        2,
        "subordinates",
        [
            include_str!("../../../../migrations/sqlite/0002_subordinates.sql"),
            include_str!("../../../../migrations/mysql/0002_subordinates.sql"),
            include_str!("../../../../migrations/postgres/0002_subordinates.sql"),
        ],
    ),
    (
        3,
        "users",
        [
            include_str!("../../../../migrations/sqlite/0003_users.sql"),
            include_str!("../../../../migrations/mysql/0003_users.sql"),
            include_str!("../../../../migrations/postgres/0003_users.sql"),
        ],
    ),
    (
        4,
        "jti",
        [
            include_str!("../../../../migrations/sqlite/0004_jti.sql"),
            include_str!("../../../../migrations/mysql/0004_jti.sql"),
            include_str!("../../../../migrations/postgres/0004_jti.sql"),
        ],
    ),
    (
        5,
        "additional_claims",
        [
            include_str!("../../../../migrations/sqlite/0005_additional_claims.sql"),
            include_str!("../../../../migrations/mysql/0005_additional_claims.sql"),
            include_str!("../../../../migrations/postgres/0005_additional_claims.sql"),
        ],
    ),
    (
        6,
        "trust_marks",
        [
            include_str!("../../../../migrations/sqlite/0006_trust_marks.sql"),
            include_str!("../../../../migrations/mysql/0006_trust_marks.sql"),
            include_str!("../../../../migrations/postgres/0006_trust_marks.sql"),
        ],
    ),
    (
        8,
        "statistics",
        [
            include_str!("../../../../migrations/sqlite/0008_statistics.sql"),
            include_str!("../../../../migrations/mysql/0008_statistics.sql"),
            include_str!("../../../../migrations/postgres/0008_statistics.sql"),
        ],
    ),
    (
        9,
        "anchor_constraints",
        [
            include_str!("../../../../migrations/sqlite/0009_anchor_constraints.sql"),
            include_str!("../../../../migrations/mysql/0009_anchor_constraints.sql"),
            include_str!("../../../../migrations/postgres/0009_anchor_constraints.sql"),
        ],
    ),
    (
        10,
        "entity_collection",
        [
            include_str!("../../../../migrations/sqlite/0010_entity_collection.sql"),
            include_str!("../../../../migrations/mysql/0010_entity_collection.sql"),
            include_str!("../../../../migrations/postgres/0010_entity_collection.sql"),
        ],
    ),
    (
        11,
        "push_freshness",
        [
            include_str!("../../../../migrations/sqlite/0011_push_freshness.sql"),
            include_str!("../../../../migrations/mysql/0011_push_freshness.sql"),
            include_str!("../../../../migrations/postgres/0011_push_freshness.sql"),
        ],
    ),
    (
        12,
        "cluster_changes",
        [
            include_str!("../../../../migrations/sqlite/0012_cluster_changes.sql"),
            include_str!("../../../../migrations/mysql/0012_cluster_changes.sql"),
            include_str!("../../../../migrations/postgres/0012_cluster_changes.sql"),
        ],
    ),
    (
        13,
        "stats_batches",
        [
            include_str!("../../../../migrations/sqlite/0013_stats_batches.sql"),
            include_str!("../../../../migrations/mysql/0013_stats_batches.sql"),
            include_str!("../../../../migrations/postgres/0013_stats_batches.sql"),
        ],
    ),
    (
        14,
        "anchor_trust_mark_issuers",
        [
            include_str!("../../../../migrations/sqlite/0014_anchor_trust_mark_issuers.sql"),
            include_str!("../../../../migrations/mysql/0014_anchor_trust_mark_issuers.sql"),
            include_str!("../../../../migrations/postgres/0014_anchor_trust_mark_issuers.sql"),
        ],
    ),
    (
        15,
        "issued_mark_reuse",
        [
            include_str!("../../../../migrations/sqlite/0015_issued_mark_reuse.sql"),
            include_str!("../../../../migrations/mysql/0015_issued_mark_reuse.sql"),
            include_str!("../../../../migrations/postgres/0015_issued_mark_reuse.sql"),
        ],
    ),
    (
        16,
        "leadership",
        [
            include_str!("../../../../migrations/sqlite/0016_leadership.sql"),
            include_str!("../../../../migrations/mysql/0016_leadership.sql"),
            include_str!("../../../../migrations/postgres/0016_leadership.sql"),
        ],
    ),
    (
        17,
        "hosted_entities",
        [
            include_str!("../../../../migrations/sqlite/0017_hosted_entities.sql"),
            include_str!("../../../../migrations/mysql/0017_hosted_entities.sql"),
            include_str!("../../../../migrations/postgres/0017_hosted_entities.sql"),
        ],
    ),
    (
        18,
        "composite_alg_names",
        [
            include_str!("../../../../migrations/sqlite/0018_composite_alg_names.sql"),
            include_str!("../../../../migrations/mysql/0018_composite_alg_names.sql"),
            include_str!("../../../../migrations/postgres/0018_composite_alg_names.sql"),
        ],
    ),
    (
        19,
        "subordinate_tombstones",
        [
            include_str!("../../../../migrations/sqlite/0019_subordinate_tombstones.sql"),
            include_str!("../../../../migrations/mysql/0019_subordinate_tombstones.sql"),
            include_str!("../../../../migrations/postgres/0019_subordinate_tombstones.sql"),
        ],
    ),
    (
        20,
        "anchor_trust_mark_status",
        [
            include_str!("../../../../migrations/sqlite/0020_anchor_trust_mark_status.sql"),
            include_str!("../../../../migrations/mysql/0020_anchor_trust_mark_status.sql"),
            include_str!("../../../../migrations/postgres/0020_anchor_trust_mark_status.sql"),
        ],
    ),
    (
        21,
        "subordinates_by_entity_and_id",
        [
            include_str!("../../../../migrations/sqlite/0021_subordinates_by_entity_and_id.sql"),
            include_str!("../../../../migrations/mysql/0021_subordinates_by_entity_and_id.sql"),
            include_str!("../../../../migrations/postgres/0021_subordinates_by_entity_and_id.sql"),
        ],
    ),
];

/// Migrations that run outside sqlx's transaction (their text begins `-- no-transaction` and
/// holds its own), each with a table only its committed transaction creates. sqlx records such a
/// migration after the script's `COMMIT`; a process that died between the two would otherwise
/// run it again over the changed schema. [`Db::migrate_schema`] records it instead when the
/// table is there.
const SELF_COMMITTING: &[(i64, &str)] = &[(17, "entities")];

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
        // SQLite: WAL with `synchronous=FULL` on every pooled connection (see [`wal`]); the
        // federation writer gets a connection of its own. WAL was once reverted after a soak
        // answered writes "database is locked" (BENCHMARKS.md, 2026-11-24 06:30): its writes
        // then began deferred and took the write lock on their first write, which SQLite
        // refuses at once when another connection committed since the transaction's first
        // read (no busy wait for a snapshot that is stale). Every write now begins
        // `BEGIN IMMEDIATE` or is a single statement ([`Db::begin`]).
        let mut options = AnyPoolOptions::new()
            .max_connections(max)
            .acquire_timeout(ACQUIRE_TIMEOUT);
        if dialect == Dialect::Sqlite {
            options = options.after_connect(|c, _| {
                Box::pin(async move {
                    sqlx::query("PRAGMA synchronous = FULL")
                        .execute(&mut *c)
                        .await?;
                    sqlx::query(wal::NO_AUTOCHECKPOINT).execute(&mut *c).await?;
                    Ok(())
                })
            });
        }
        let pool = options.connect(url).await?;
        let wal = match dialect {
            Dialect::Sqlite => wal::Wal::open(url, &pool).await?.map(std::sync::Arc::new),
            _ => None,
        };
        let native_pg = match dialect {
            Dialect::Postgres => Some(
                sqlx::postgres::PgPoolOptions::new()
                    .max_connections(max)
                    .min_connections(0)
                    .idle_timeout(NATIVE_IDLE)
                    .acquire_timeout(ACQUIRE_TIMEOUT)
                    .connect_lazy(url)?,
            ),
            _ => None,
        };
        Ok(Self {
            pool,
            dialect,
            breaker: Default::default(),
            wal,
            native_pg,
            entity: EntityNo::DEFAULT,
        })
    }

    /// The same database, scoped to the hosted entity `entity`: every repository reads and
    /// writes that entity's rows only. The pool, the writer's connection and the breaker are
    /// shared.
    pub fn for_entity(&self, entity: EntityNo) -> Self {
        Self {
            entity,
            ..self.clone()
        }
    }

    /// The hosted entity this handle reads and writes.
    pub fn hosted(&self) -> EntityNo {
        self.entity
    }

    /// The hosted entity's number, as the `entity` column stores it (what repositories bind).
    pub fn entity(&self) -> i64 {
        self.entity.get()
    }

    /// Closes the pools (at shutdown): waits for every borrowed connection to come back.
    pub async fn close(&self) {
        if let Some(w) = &self.wal {
            w.writer.close().await;
        }
        if let Some(pg) = &self.native_pg {
            pg.close().await;
        }
        self.pool.close().await;
    }

    /// The pool itself, for tests that check what is stored (this crate's unit tests, and the
    /// integration tests through the `test-access` feature, which only dev-dependencies enable).
    #[cfg(any(test, feature = "test-access"))]
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// The transaction of `pharos config2db`, the offline migration: its process runs no
    /// control plane, so there is no snapshot to publish, and its one transaction is what makes
    /// a failed migration leave the database as it was. Nothing else may call it.
    pub async fn begin_offline_migration(
        &self,
    ) -> std::result::Result<sqlx::Transaction<'static, sqlx::Any>, sqlx::Error> {
        self.begin().await
    }

    /// The transaction of the start-up key seed ([`crate::keys::ensure_signing_key`]): it runs
    /// before there is a snapshot to publish, and the first snapshot is built from what it
    /// stored. Nothing else may call it.
    pub async fn begin_startup_seed(
        &self,
    ) -> std::result::Result<sqlx::Transaction<'static, sqlx::Any>, sqlx::Error> {
        self.begin().await
    }

    /// Connections of the pool: (open, idle), for `/metrics`.
    pub fn pool_connections(&self) -> (u32, usize) {
        (self.pool.size(), self.pool.num_idle())
    }

    /// A transaction for a federation write ([`crate::control_plane::Write`]): on an SQLite
    /// file on the writer's own connection, whose commit is made durable by the group commit
    /// ([`wal`]); elsewhere [`Db::begin`].
    pub(in crate::control_plane) async fn begin_write(
        &self,
    ) -> std::result::Result<sqlx::Transaction<'static, sqlx::Any>, sqlx::Error> {
        match &self.wal {
            Some(w) => w.writer.begin_with("BEGIN IMMEDIATE").await,
            None => self.begin().await,
        }
    }

    /// Opens the breaker when `e` says the database is unreachable (see [`Breaker`]), and
    /// starts the probe that closes it again; a pool timeout is checked first
    /// ([`Db::suspect`]), a busy database is no outage.
    pub fn note(&self, e: &sqlx::Error) {
        if matches!(e, sqlx::Error::PoolTimedOut) {
            self.suspect();
        } else if crate::error::db_connection_lost(e) {
            self.trip();
        }
    }

    /// [`Db::note`] for the control plane's error type.
    pub fn note_error(&self, e: &Error) {
        if let Error::Database(e) = e {
            self.note(e);
        }
    }

    /// A request failed for want of the database (a pool timeout, typically): opens the
    /// breaker only if the database does not answer on a connection of its own, outside the
    /// pool, within [`PING_TIMEOUT`]. A pool that was merely saturated answers, and the breaker
    /// stays closed. One check runs at a time, in the background.
    pub fn suspect(&self) {
        use std::sync::atomic::Ordering;
        let b = &self.breaker;
        if b.is_open() || b.suspecting.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            b.suspecting.store(false, Ordering::Release);
            return;
        };
        let db = self.clone();
        rt.spawn(async move {
            if !db.answers_directly(PING_TIMEOUT).await {
                db.trip();
            }
            db.breaker.suspecting.store(false, Ordering::Release);
        });
    }

    /// A transaction for a write. On SQLite it takes the write lock when it begins (`BEGIN
    /// IMMEDIATE`): a deferred transaction that reads first and then writes cannot wait for a
    /// lock another writer holds (SQLite answers busy at once to avoid a deadlock), while
    /// `BEGIN IMMEDIATE` waits its turn for the busy timeout (5 s, within the request's
    /// limit) and then fails as busy, which is answered 503 with `Retry-After`, not 500.
    pub(in crate::control_plane) async fn begin(
        &self,
    ) -> std::result::Result<sqlx::Transaction<'static, sqlx::Any>, sqlx::Error> {
        match self.dialect {
            Dialect::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await,
            _ => self.pool.begin().await,
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
                let sql = sql[idx];
                Migration::new(
                    *version,
                    Cow::Borrowed(*name),
                    MigrationType::Simple,
                    sql.into_sql_str(),
                    sql.starts_with("-- no-transaction"),
                )
            })
            .collect::<Vec<_>>();
        self.record_committed_scripts(&migrations).await?;
        Migrator::with_migrations(migrations)
            .run(&self.pool)
            .await?;
        Ok(())
    }

    /// Records each migration of [`SELF_COMMITTING`] whose script committed but which sqlx did
    /// not record (the process died in between): its table is there, its row is not.
    async fn record_committed_scripts(&self, migrations: &[Migration]) -> Result<()> {
        for (version, table) in SELF_COMMITTING {
            let Some(m) = migrations.iter().find(|m| m.version == *version) else {
                continue;
            };
            if !m.no_tx
                || !self.has_table(table).await?
                || !self.has_table("_sqlx_migrations").await?
            {
                continue;
            }
            let recorded: Option<i64> = sqlx::query_scalar(
                self.sql("SELECT version FROM _sqlx_migrations WHERE version = ?"),
            )
            .bind(*version)
            .fetch_optional(&self.pool)
            .await?;
            if recorded.is_none() {
                tracing::warn!(
                    version,
                    "migration committed but not recorded (interrupted start); recording it"
                );
                sqlx::query(self.sql(
                    "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
                     VALUES (?, ?, TRUE, ?, -1)",
                ))
                .bind(*version)
                .bind(m.description.to_string())
                .bind(m.checksum.to_vec())
                .execute(&self.pool)
                .await?;
            }
        }
        Ok(())
    }

    /// Whether the SQLite database has a table `name` (the only dialect with self-committing
    /// migrations).
    async fn has_table(&self, name: &str) -> Result<bool> {
        if self.dialect != Dialect::Sqlite {
            return Ok(false);
        }
        let found: Option<String> = sqlx::query_scalar(
            self.sql("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?"),
        )
        .bind(name)
        .fetch_optional(&self.pool)
        .await?;
        Ok(found.is_some())
    }

    /// One-time data moves after the schema migrations, in one transaction, before the first
    /// snapshot is built: the general additional claims leave their JSON array in `settings`
    /// for rows of `additional_claims` (migration 5). Each move is a no-op once done, so a
    /// crash between the schema migration and the move is repaired by the next start.
    pub async fn move_data(&self) -> Result<()> {
        let now = pharos_shared::time::Clock::now(&pharos_shared::time::SystemClock);
        let mut tx = self.begin().await?;
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
    /// The answer also opens or closes the write breaker ([`Breaker`]). Concurrent calls share
    /// one check and an answer is reused for [`READY_CACHE`]: `/readyz` is public, and a flood
    /// of it must not take the connections that writes need.
    pub async fn ping(&self) -> bool {
        let mut last = self.breaker.ready.lock().await;
        if let Some((at, up)) = *last
            && at.elapsed() < READY_CACHE
        {
            return up;
        }
        let up = self.answers().await;
        *last = Some((tokio::time::Instant::now(), up));
        drop(last);
        if up {
            self.breaker.close();
        } else {
            self.trip();
        }
        up
    }

    /// Whether `SELECT 1` answers within [`PING_TIMEOUT`]: on a pooled connection, or, when
    /// the pool has none to spare within half of it (saturated, or unable to connect), on a
    /// connection of its own.
    async fn answers(&self) -> bool {
        let half = PING_TIMEOUT / 2;
        match tokio::time::timeout(half, self.pool.acquire()).await {
            Ok(Ok(mut c)) => {
                let query = sqlx::query(self.sql("SELECT 1")).execute(&mut *c);
                tokio::time::timeout(half, query)
                    .await
                    .is_ok_and(|r| r.is_ok())
            }
            Ok(Err(_)) => false,
            Err(_) => self.answers_directly(half).await,
        }
    }

    /// Whether `SELECT 1` answers within `limit` on a new connection outside the pool (closed
    /// after): the database itself, whatever the pool's connections are busy with.
    async fn answers_directly(&self, limit: std::time::Duration) -> bool {
        use sqlx::{ConnectOptions as _, Connection as _};
        let options = self.pool.connect_options();
        let check = async {
            let mut c = options.connect().await?;
            sqlx::query(self.sql("SELECT 1")).execute(&mut c).await?;
            c.close().await
        };
        tokio::time::timeout(limit, check)
            .await
            .is_ok_and(|r: std::result::Result<(), sqlx::Error>| r.is_ok())
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
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        db.note(&sqlx::Error::Io(refused));
        assert!(db.breaker.is_open());
        assert!(db.refuse_if_down().is_err_and(|e| e.is_unavailable()));
        assert_eq!(db.breaker.trips(), 1);
        // The readiness check (or the probe) finds the database again and closes it.
        assert!(db.ping().await);
        assert!(!db.breaker.is_open());
        assert!(db.refuse_if_down().is_ok());
    }

    /// Saturation is not an outage (issue 31): with every pooled connection taken, a pool
    /// timeout and a flood of readiness checks leave the breaker closed, and the checks share
    /// one answer.
    #[tokio::test]
    async fn a_saturated_pool_is_not_an_outage() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("p.db").display());
        let db = Db::connect(&url, 2).await.unwrap();
        let held = (
            db.pool.acquire().await.unwrap(),
            db.pool.acquire().await.unwrap(),
        );
        db.note(&sqlx::Error::PoolTimedOut);
        // The check of the timeout runs in the background: wait for its end.
        while db
            .breaker
            .suspecting
            .load(std::sync::atomic::Ordering::Acquire)
        {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(!db.breaker.is_open());
        let checks = (0..64).map(|_| db.ping());
        let answers = futures_util::future::join_all(checks).await;
        assert!(answers.iter().all(|up| *up), "{answers:?}");
        assert!(!db.breaker.is_open());
        assert_eq!(db.breaker.trips(), 0);
        drop(held);
        assert!(db.refuse_if_down().is_ok());
    }

    /// Migration 17 commits its own transaction on SQLite; sqlx records it after. A start that
    /// died in between must not run it again over the changed schema: the next start records
    /// it instead.
    #[tokio::test]
    async fn a_self_committed_migration_is_recorded_not_run_again() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("m.db").display());
        let db = Db::connect(&url, 2).await.unwrap();
        db.migrate().await.unwrap();
        sqlx::query("DELETE FROM _sqlx_migrations WHERE version = 17")
            .execute(&db.pool)
            .await
            .unwrap();
        db.migrate().await.unwrap();
        let recorded: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations WHERE version = 17")
                .fetch_one(&db.pool)
                .await
                .unwrap();
        assert_eq!(recorded, 1);
        // Foreign keys are enforced again on the migrating connection's successors.
        let on: i64 = sqlx::query_scalar("PRAGMA foreign_keys")
            .fetch_one(&db.pool)
            .await
            .unwrap();
        assert_eq!(on, 1);
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
