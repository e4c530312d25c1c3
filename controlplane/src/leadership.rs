//! Leadership among replicas (issue 19): work that must run once per federation entity (key
//! rotation and key-state transitions, the key refreshers, entity collection, statistics
//! aggregation and purge, JTI cleanup) runs only on the replica holding a database lock.
//!
//! The lock is a PostgreSQL session advisory lock (MariaDB: `GET_LOCK`) held on a dedicated
//! connection: when the leader dies, its session ends, the database releases the lock, and
//! another replica's next attempt takes it. Attempts (and, while leading, checks that the
//! connection is alive) run every quarter of `cluster.leader_lease`, so a replica takes over
//! within the lease. Without `cluster.enabled` the process always leads. Every replica serves
//! every endpoint and accepts Admin API writes whatever its role.

use std::sync::Arc;
use std::time::Duration;

use pharos_shared::config::{Settings, StorageDriver};
use sqlx::Connection as _;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// PostgreSQL advisory lock key (advisory locks are scoped to the database).
const PG_LOCK_KEY: i64 = 0x7068_6172_6f73_4c44; // "pharosLD"

/// Whether this process leads, and the campaign that keeps it so.
#[derive(Debug)]
pub struct Leadership {
    leading: watch::Sender<bool>,
}

impl Leadership {
    /// A process that always leads (no clustering).
    pub fn solo() -> Arc<Self> {
        Arc::new(Self {
            leading: watch::Sender::new(true),
        })
    }

    /// Whether this process runs the once-per-federation work now.
    pub fn is_leader(&self) -> bool {
        *self.leading.borrow()
    }

    /// Leadership for `settings`: solo without clustering, else a campaign task (returned)
    /// that takes and keeps the database lock until `stop`.
    pub fn start(
        settings: &Settings,
        stop: CancellationToken,
    ) -> (Arc<Self>, Option<JoinHandle<()>>) {
        if !settings.cluster.enabled || settings.storage.driver == StorageDriver::Sqlite {
            return (Self::solo(), None);
        }
        let me = Arc::new(Self {
            leading: watch::Sender::new(false),
        });
        let every = (settings.cluster.leader_lease.get() / 4).max(Duration::from_millis(200));
        let url = settings.storage_url();
        let driver = settings.storage.driver;
        let instance = settings.cluster.instance_id.clone();
        let task = {
            let me = me.clone();
            tokio::spawn(async move { me.campaign(driver, url, instance, every, stop).await })
        };
        (me, Some(task))
    }

    async fn campaign(
        &self,
        driver: StorageDriver,
        url: String,
        instance: String,
        every: Duration,
        stop: CancellationToken,
    ) {
        let mut lock: Option<LockConn> = None;
        loop {
            let holding = match lock.as_mut() {
                None => match LockConn::connect(driver, &url).await {
                    Ok(mut c) => {
                        let won = c.try_lock().await.unwrap_or(false);
                        lock = Some(c);
                        won
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "leadership: cannot reach the database");
                        false
                    }
                },
                Some(c) if self.is_leader() => c.alive().await,
                Some(c) => match c.try_lock().await {
                    Ok(won) => won,
                    Err(_) => {
                        lock = None;
                        false
                    }
                },
            };
            if !holding && self.is_leader() {
                // The session (and so the lock) may be gone: never assume it is still held.
                lock = None;
            }
            if holding != self.is_leader() {
                tracing::info!(instance = %instance, leader = holding, "leadership changed");
                self.leading.send_replace(holding);
            }
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = stop.cancelled() => break,
            }
        }
        self.leading.send_replace(false);
        if let Some(c) = lock {
            c.close().await;
        }
    }

    /// Runs a background job only while this process leads: `start` is called with a token
    /// that is cancelled when leadership is lost (or at `stop`), and again on regaining it.
    pub fn supervise<F>(self: &Arc<Self>, stop: CancellationToken, start: F) -> JoinHandle<()>
    where
        F: Fn(CancellationToken) -> JoinHandle<()> + Send + Sync + 'static,
    {
        let mut rx = self.leading.subscribe();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    r = rx.wait_for(|l| *l) => if r.is_err() { return },
                    _ = stop.cancelled() => return,
                }
                let job_stop = stop.child_token();
                let job = start(job_stop.clone());
                tokio::select! {
                    _ = rx.wait_for(|l| !*l) => {}
                    _ = stop.cancelled() => {}
                }
                job_stop.cancel();
                let _ = job.await;
            }
        })
    }
}

/// The dedicated connection holding the lock.
enum LockConn {
    Pg(sqlx::PgConnection),
    My(sqlx::MySqlConnection),
}

impl LockConn {
    async fn connect(driver: StorageDriver, url: &str) -> Result<Self, sqlx::Error> {
        Ok(match driver {
            StorageDriver::Mysql => Self::My(sqlx::MySqlConnection::connect(url).await?),
            _ => Self::Pg(sqlx::PgConnection::connect(url).await?),
        })
    }

    /// Takes the lock if it is free (or already ours).
    async fn try_lock(&mut self) -> Result<bool, sqlx::Error> {
        match self {
            Self::Pg(c) => {
                let (won,): (bool,) = sqlx::query_as("SELECT pg_try_advisory_lock($1)")
                    .bind(PG_LOCK_KEY)
                    .fetch_one(c)
                    .await?;
                Ok(won)
            }
            Self::My(c) => {
                // GET_LOCK names are server-wide: the database name keeps deployments apart.
                let (won,): (Option<i64>,) =
                    sqlx::query_as("SELECT GET_LOCK(CONCAT('pharos_leader_', DATABASE()), 0)")
                        .fetch_one(c)
                        .await?;
                Ok(won == Some(1))
            }
        }
    }

    /// Whether the session holding the lock is still there.
    async fn alive(&mut self) -> bool {
        match self {
            Self::Pg(c) => c.ping().await.is_ok(),
            Self::My(c) => c.ping().await.is_ok(),
        }
    }

    async fn close(self) {
        let _ = match self {
            Self::Pg(c) => c.close().await,
            Self::My(c) => c.close().await,
        };
    }
}
