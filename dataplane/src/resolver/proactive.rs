//! The proactive resolver: resolves (subject, anchor, types) jobs in the background and keeps
//! their signed responses in a [`Store`], so that answers come from memory or disk and are
//! refreshed before they expire.
//!
//! Jobs arrive through [`Proactive::submit`] — from every resolve the endpoint answers live,
//! and later from the entity collection — into a bounded queue (`queue_size`; a full queue
//! drops the job, the next request resubmits it) worked by at most `concurrency_limit` tasks.
//! A ticker resubmits stored entries that have entered their grace period and were requested
//! recently (the store is bounded and evicts, see [`super::store`]), and submits every
//! Entity of each new periodic entity collection (of an anchor this endpoint accepts) once. The tasks end when
//! the [`Proactive`] is dropped (configuration change).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use pharos_shared::Result;
use pharos_shared::chain::{Fetcher, response_claims};
use pharos_shared::endpoint::ProactiveResolver;
use pharos_shared::snapshot::SnapshotReader;
use pharos_shared::time::Clock;
use tokio::sync::{Semaphore, mpsc};

use super::store::{Job, Limits, Store};
use super::{Local, Query, Resolver, admits, anchor_rule, grace_rule, resolve_config};
use pharos_runtime::signing;

/// How often stored entries are checked for due refreshes (real time).
const TICK: Duration = Duration::from_secs(30);
/// How often new entity collections are looked for (real time).
const FEED_TICK: Duration = Duration::from_secs(1);

/// The settings that define one proactive resolver; a change starts a new one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// `response_storage.dir`.
    pub dir: PathBuf,
    /// `response_storage.store_jwt`.
    pub store_jwt: bool,
    /// `response_storage.store_json`.
    pub store_json: bool,
    /// `concurrency_limit`.
    pub concurrency: usize,
    /// `queue_size`.
    pub queue: usize,
}

impl Settings {
    /// From the endpoint configuration, when the proactive resolver is enabled there.
    pub fn from_config(p: &ProactiveResolver) -> Option<Self> {
        let rs = p.response_storage.as_ref().filter(|r| !r.dir.is_empty())?;
        p.enabled.then(|| Self {
            dir: PathBuf::from(&rs.dir),
            store_jwt: rs.store_jwt,
            store_json: rs.store_json,
            concurrency: p.concurrency_limit.max(1) as usize,
            queue: p.queue_size.max(1) as usize,
        })
    }
}

/// What the workers need from the data plane.
#[derive(Debug)]
pub struct Context<F> {
    /// The shared resolver (and its caches).
    pub resolver: Arc<Resolver<F>>,
    /// The current snapshot (endpoint config, pinned anchor keys, our signer).
    pub snapshot: SnapshotReader,
    /// The clock.
    pub clock: Arc<dyn Clock>,
}

impl<F> Clone for Context<F> {
    fn clone(&self) -> Self {
        Self {
            resolver: self.resolver.clone(),
            snapshot: self.snapshot.clone(),
            clock: self.clock.clone(),
        }
    }
}

/// A running proactive resolver.
#[derive(Debug)]
pub struct Proactive {
    /// What it was started with.
    pub settings: Settings,
    /// Its responses.
    pub store: Arc<Store>,
    tx: mpsc::Sender<Job>,
    queued: Arc<Mutex<HashSet<Job>>>,
}

impl Proactive {
    /// Reads the store back, then starts the workers and the ticker.
    pub async fn start<F: Fetcher + 'static>(settings: Settings, ctx: Context<F>) -> Arc<Self> {
        let store = Arc::new(
            Store::open(
                &settings.dir,
                settings.store_jwt,
                settings.store_json,
                Limits::default(),
                ctx.clock.now(),
            )
            .await,
        );
        let (tx, rx) = mpsc::channel(settings.queue);
        let me = Arc::new(Self {
            settings: settings.clone(),
            store: store.clone(),
            tx,
            queued: Arc::new(Mutex::new(HashSet::new())),
        });
        tokio::spawn(work(
            rx,
            settings.concurrency,
            ctx.clone(),
            store,
            me.queued.clone(),
        ));
        tokio::spawn(tick(
            Arc::downgrade(&me),
            ctx.clock.clone(),
            ctx.snapshot.clone(),
        ));
        me
    }

    /// Queue `job` unless it is already queued; false when the queue is full (the job is
    /// dropped: whoever asks next resubmits it). The entity collection feeds this too.
    pub fn submit(&self, job: Job) -> bool {
        let Ok(mut q) = self.queued.lock() else {
            return false;
        };
        if q.contains(&job) {
            return true;
        }
        match self.tx.try_send(job.clone()) {
            Ok(()) => {
                q.insert(job);
                true
            }
            Err(_) => false,
        }
    }
}

async fn work<F: Fetcher + 'static>(
    mut rx: mpsc::Receiver<Job>,
    concurrency: usize,
    ctx: Context<F>,
    store: Arc<Store>,
    queued: Arc<Mutex<HashSet<Job>>>,
) {
    let permits = Arc::new(Semaphore::new(concurrency));
    while let Some(job) = rx.recv().await {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let (ctx, store, queued) = (ctx.clone(), store.clone(), queued.clone());
        tokio::spawn(async move {
            if let Err(e) = run(&ctx, &store, &job).await {
                tracing::debug!(error = %e, sub = %job.sub, "proactive resolution failed");
            }
            if let Ok(mut q) = queued.lock() {
                q.remove(&job);
            }
            drop(permit);
        });
    }
}

/// Resolve one job and store the signed response (and/or its claims).
async fn run<F: Fetcher + 'static>(ctx: &Context<F>, store: &Store, job: &Job) -> Result<()> {
    let snap = ctx.snapshot.load_full();
    let now = ctx.clock.now();
    let Some(cfg) = resolve_config(&snap) else {
        return Ok(());
    };
    let q = Query {
        subject: job.sub.clone(),
        anchors: vec![snap.trust_anchors.spec(&job.trust_anchor)],
        entity_types: job.entity_types.clone(),
        local: Local::of(&snap, cfg),
    };
    let res = ctx.resolver.resolve(&q, grace_rule(cfg), now).await?;
    let legacy_id = snap.trust_marks.legacy_id;
    let claims = response_claims(
        &snap.entity_id,
        &res.chain,
        &res.marks,
        now,
        None,
        legacy_id,
    );
    let jwt = signing::sign(
        &snap.keys.signer,
        pharos_shared::chain::RESOLVE_RESPONSE_TYP,
        claims.clone(),
    )
    .await?;
    store.put(job, &jwt, &claims, res.exp(), now).await;
    Ok(())
}

/// Resubmit stored entries whose grace period has begun and that are still requested (every
/// [`TICK`], see [`Store::sweep`]) and feed new entity
/// collections (every [`FEED_TICK`]: a look at each anchor's `last_updated`), until the
/// resolver is dropped.
async fn tick(me: Weak<Proactive>, clock: Arc<dyn Clock>, snapshot: SnapshotReader) {
    let mut interval = tokio::time::interval(FEED_TICK);
    let mut fed = HashMap::new();
    let every = (TICK.as_secs() / FEED_TICK.as_secs()).max(1);
    let mut n: u64 = 0;
    loop {
        interval.tick().await;
        let Some(me) = me.upgrade() else {
            return;
        };
        let snap = snapshot.load_full();
        if n.is_multiple_of(every) {
            let grace = resolve_config(&snap).map_or(3600, |c| grace_rule(c).grace_period);
            for job in me.store.sweep(clock.now(), grace).await {
                me.submit(job);
            }
        }
        n = n.wrapping_add(1);
        feed_collections(&me, &snap, &mut fed, clock.now());
    }
}

/// Submits the Entities of every collection not fed yet (`fed`: anchor → `last_updated` of
/// the collection fed). A collection whose Entities did not all fit into the queue is fed
/// again at the next tick (jobs still queued are not queued twice).
fn feed_collections(
    me: &Proactive,
    snap: &pharos_shared::snapshot::Snapshot,
    fed: &mut HashMap<String, i64>,
    now: i64,
) {
    let rule = resolve_config(snap).map(|c| anchor_rule(snap, c));
    for (ta, c) in &snap.collections.by_anchor {
        if rule.as_ref().is_some_and(|r| !admits(snap, r, ta))
            || fed.get(ta) == Some(&c.last_updated)
        {
            continue;
        }
        let all = c.entities.iter().all(|e| {
            let job = Job {
                sub: e.entity_id.clone(),
                trust_anchor: ta.clone(),
                entity_types: Vec::new(),
            };
            // A collection listing the Entity again counts as asking for it.
            me.store.touch(&job, now);
            me.submit(job)
        });
        if all {
            fed.insert(ta.clone(), c.last_updated);
        }
    }
}
