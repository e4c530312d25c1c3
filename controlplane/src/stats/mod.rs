//! Request statistics, control-plane side: the flusher that drains the data plane's ring into
//! the database, the daily aggregation and purge, the queries of the Admin API and the CLI, and
//! the streamed export.
//!
//! Statistics are not snapshot state and never go through `Write` or the command channel: the
//! data plane pushes records into a lock-free ring ([`pharos_runtime::stats_ring::Ring`]), and the
//! flusher writes them as batches ([`batch`]: one row per drained batch) on the pool's own
//! connections.

pub mod aggregate;
pub mod cli;
pub mod export;
pub mod flush;
pub mod geo;
pub mod params;
pub mod query;
pub mod report;
pub mod tally;

use std::sync::Arc;

use pharos_runtime::stats_ring::Ring;
use pharos_shared::config::Settings;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::control_plane::ControlPlane;
use crate::db::Db;
use crate::error::Result;

/// The statistics parts of a running Pharos.
#[derive(Debug)]
pub struct Statistics {
    /// The buffer the data plane fills (`None` while `stats.enabled` is off).
    pub ring: Option<Arc<Ring>>,
    /// The daily job (tests call its `tick` with their own clock).
    pub aggregator: Option<Arc<aggregate::Aggregator>>,
    flusher: Option<Arc<flush::Flusher>>,
}

impl Statistics {
    /// Opens what `stats.*` asks for (the GeoIP database is a start-up error when unreadable).
    pub fn new(settings: &Settings, db: Db) -> Result<Self> {
        let s = &settings.stats;
        if !s.enabled {
            return Ok(Self {
                ring: None,
                aggregator: None,
                flusher: None,
            });
        }
        let geo = if s.capture.geo_ip.enabled {
            Some(Arc::new(geo::Geo::open(&s.capture.geo_ip.database_path)?))
        } else {
            None
        };
        let ring = Ring::new(s.buffer.size as usize, s.buffer.flush_threshold);
        Ok(Self {
            ring: Some(ring.clone()),
            aggregator: Some(aggregate::Aggregator::new(db.clone(), s.retention.clone())),
            flusher: Some(flush::Flusher::new(db, ring, geo)),
        })
    }

    /// Writes everything buffered now; returns the records written.
    pub async fn flush(&self) -> u64 {
        match &self.flusher {
            Some(f) => f.flush().await,
            None => 0,
        }
    }

    /// Starts the daily job (stopped by `stop`) and the flusher (stopped by `flush_stop`,
    /// which the app cancels only after the listeners have drained, so the final flush sees
    /// every request's record).
    pub fn spawn(
        &self,
        cp: &Arc<ControlPlane>,
        stop: &CancellationToken,
        flush_stop: &CancellationToken,
        leadership: &Arc<crate::leadership::Leadership>,
    ) -> (Vec<JoinHandle<()>>, Option<JoinHandle<()>>) {
        let (Some(flusher), Some(agg)) = (&self.flusher, &self.aggregator) else {
            return (Vec::new(), None);
        };
        let every = cp.settings.stats.buffer.flush_interval.into();
        let flusher = flusher.spawn(every, flush_stop.clone());
        // Every replica flushes its own records; aggregation and purge run on the leader.
        let (agg, cp) = (agg.clone(), cp.clone());
        let daily = leadership.supervise(stop.clone(), move |t| agg.spawn(cp.clone(), t));
        (vec![daily], Some(flusher))
    }
}
