//! The control plane's end of the command channel (see `pharos_shared::command`): one task
//! receives commands from the data plane and runs each in a task of its own, so a slow fetch
//! for one trigger never delays another request's command. The commit-then-publish order is
//! the handlers' own (they use the writer lock and `refresh*`).

use std::sync::Arc;
use std::time::Duration;

use pharos_shared::chain::Fetcher;
use pharos_shared::command::{Command, CommandError};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::db;
use crate::refresh::Refreshers;
use crate::state::ControlPlane;

/// Receives commands until `stop` is cancelled or every sender is gone.
pub fn spawn<F: Fetcher + 'static>(
    refreshers: Arc<Refreshers<F>>,
    mut rx: mpsc::Receiver<Command>,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let cmd = tokio::select! {
                c = rx.recv() => c,
                _ = stop.cancelled() => None,
            };
            let Some(cmd) = cmd else { break };
            let r = refreshers.clone();
            tokio::spawn(async move { handle(&r, cmd).await });
        }
    })
}

/// Runs one command and sends its reply (a caller that stopped waiting is not an error).
pub async fn handle<F: Fetcher + 'static>(r: &Refreshers<F>, cmd: Command) {
    let cp = r.control();
    let now = cp.now();
    match cmd {
        Command::JwksUpdateTrigger { sub, actor, reply } => {
            let _ = reply.send(r.trigger(&sub, actor.as_deref(), now).await);
        }
        Command::JwksUpdate { token, reply } => {
            let _ = reply.send(cp.push_jwks(&token, now).await);
        }
        Command::RecordJti {
            jti,
            expires_at,
            reply,
        } => {
            let result = db::jti::record(&cp.db, &jti, expires_at, now)
                .await
                .map_err(|e| {
                    tracing::error!(error = %e, "cannot record a client assertion jti");
                    CommandError::server_error()
                });
            let _ = reply.send(result);
        }
    }
}

/// Deletes expired `jti` records every `interval` (db replay store only).
pub fn spawn_jti_cleanup(
    cp: Arc<ControlPlane>,
    interval: Duration,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(interval.max(Duration::from_secs(1)));
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                _ = stop.cancelled() => break,
            }
            match db::jti::cleanup(&cp.db, cp.now()).await {
                Ok(n) if n > 0 => tracing::debug!(deleted = n, "expired jti records deleted"),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "jti cleanup failed"),
            }
        }
    })
}
