//! Cache behaviour with an injected clock: the grace rule, one background refresh at a time,
//! and one upstream fetch per statement for concurrent cold requests.

use std::collections::HashMap;
use std::sync::Mutex;

use pharos_shared::jose::{Algorithm, Jwks, Signer, SigningKey, sign};
use pharos_shared::time::{Clock, ManualClock};
use serde_json::json;
use tokio::sync::RwLock;

use super::store::{Hit, IDLE, Job, Limits, Store};
use super::*;

const T0: i64 = 1_800_000_000;
const TA: &str = "https://ta.example";
const LEAF: &str = "https://leaf.example";
const FETCH: &str = "https://ta.example/fetch";
const TMI: &str = "https://tmi.example";
const MARK: &str = "https://ta.example/marks/certified";

/// A two-level federation whose statements are signed at fetch time (iat = now, one-hour
/// lifetime), counting fetches per statement; `hold` blocks the upstream while write-locked.
#[derive(Debug)]
struct Upstream {
    ta: SigningKey,
    leaf: SigningKey,
    tmi: SigningKey,
    /// Whether the leaf carries Trust Marks (one valid, one forged, one unadmitted).
    marks: bool,
    clock: Arc<ManualClock>,
    counts: Mutex<HashMap<String, usize>>,
    hold: RwLock<()>,
    /// What the issuer's status endpoint answers: a status, or `None` to hang.
    status: Mutex<Option<&'static str>>,
}

impl Upstream {
    fn new(clock: Arc<ManualClock>) -> Arc<Self> {
        Self::build(clock, false)
    }

    fn build(clock: Arc<ManualClock>, marks: bool) -> Arc<Self> {
        let key = || SigningKey::generate(Algorithm::ES256, 0).unwrap();
        Arc::new(Self {
            ta: key(),
            leaf: key(),
            tmi: key(),
            marks,
            clock,
            counts: Mutex::new(HashMap::new()),
            hold: RwLock::new(()),
            status: Mutex::new(Some("active")),
        })
    }

    fn count(&self, what: &str) -> usize {
        self.counts.lock().unwrap().get(what).copied().unwrap_or(0)
    }

    fn total(&self) -> usize {
        self.counts.lock().unwrap().values().sum()
    }

    fn statement(&self, signer: &SigningKey, mut claims: serde_json::Value) -> String {
        let now = self.clock.now();
        claims["iat"] = now.into();
        claims["exp"] = (now + 3600).into();
        sign(
            signer,
            "entity-statement+jwt",
            claims.as_object().unwrap(),
            None,
        )
        .unwrap()
    }

    /// Trust Marks of the leaf: valid (exp in 10 minutes), signed by the wrong key, and from
    /// an issuer the anchor does not list.
    fn trust_marks(&self) -> serde_json::Value {
        let now = self.clock.now();
        let mark = |k: &SigningKey, iss: &str| {
            let c = json!({"iss": iss, "sub": LEAF, "trust_mark_type": MARK, "iat": now, "exp": now + 600});
            let jwt = sign(k, "trust-mark+jwt", c.as_object().unwrap(), None).unwrap();
            json!({"trust_mark_type": MARK, "trust_mark": jwt})
        };
        json!([
            mark(&self.tmi, TMI),
            mark(&self.leaf, TMI),
            mark(&self.tmi, "https://x.example")
        ])
    }

    async fn serve(&self, what: &str) -> Result<String> {
        *self.counts.lock().unwrap().entry(what.into()).or_default() += 1;
        let _open = self.hold.read().await;
        let jwks = |k: &SigningKey| Jwks {
            keys: vec![k.public_jwk().clone()],
        };
        Ok(match what {
            "ta" => self.statement(
                &self.ta,
                json!({"iss": TA, "sub": TA, "jwks": jwks(&self.ta),
                       "trust_mark_issuers": {MARK: [TMI]},
                       "metadata": {"federation_entity": {"federation_fetch_endpoint": FETCH}}}),
            ),
            "tmi" => self.statement(
                &self.tmi,
                json!({"iss": TMI, "sub": TMI, "jwks": jwks(&self.tmi), "authority_hints": [TA],
                       "metadata": {"federation_entity":
                           {"federation_trust_mark_status_endpoint": TMI_STATUS}}}),
            ),
            // The issuer is trusted through its own chain to the anchor.
            "ss-tmi" => self.statement(
                &self.ta,
                json!({"iss": TA, "sub": TMI, "jwks": jwks(&self.tmi)}),
            ),
            "leaf" => {
                let mut c = json!({"iss": LEAF, "sub": LEAF, "jwks": jwks(&self.leaf), "authority_hints": [TA],
                       "metadata": {"openid_relying_party": {"client_name": "leaf"}}});
                if self.marks {
                    c["trust_marks"] = self.trust_marks();
                }
                self.statement(&self.leaf, c)
            }
            _ => self.statement(
                &self.ta,
                json!({"iss": TA, "sub": LEAF, "jwks": jwks(&self.leaf)}),
            ),
        })
    }
}

impl Fetcher for Upstream {
    async fn entity_configuration(&self, entity_id: &str) -> Result<String> {
        let what = match entity_id {
            TA => "ta",
            TMI => "tmi",
            _ => "leaf",
        };
        self.serve(what).await
    }

    async fn subordinate_statement(&self, _endpoint: &str, sub: &str) -> Result<String> {
        self.serve(if sub == TMI { "ss-tmi" } else { "ss" }).await
    }

    /// The issuer's signed answer (§8.4.2), or no answer at all.
    async fn trust_mark_status(&self, endpoint: &str, trust_mark: &str) -> Result<String> {
        assert_eq!(endpoint, TMI_STATUS);
        *self
            .counts
            .lock()
            .unwrap()
            .entry("status".into())
            .or_default() += 1;
        let status = *self.status.lock().unwrap();
        let Some(status) = status else {
            return std::future::pending().await;
        };
        let c = json!({"iss": TMI, "iat": self.clock.now(), "trust_mark": trust_mark, "status": status});
        let typ = "trust-mark-status-response+jwt";
        Ok(sign(&self.tmi, typ, c.as_object().unwrap(), None).unwrap())
    }
}

const TMI_STATUS: &str = "https://tmi.example/status";

/// [`query`] towards an anchor whose record asks Trust Mark status with `check`.
fn checking(check: TrustMarkStatusCheck) -> Query {
    let mut q = query();
    q.anchors[0].trust_mark_status = check;
    q
}

fn query() -> Query {
    Query {
        subject: LEAF.into(),
        anchors: vec![AnchorSpec {
            entity_id: TA.into(),
            jwks: None,
            ..AnchorSpec::default()
        }],
        entity_types: Vec::new(),
        local: Local::default(),
    }
}

/// Let spawned background tasks run until `done` holds: yielding first, then (when other
/// workers are starved of CPU by a loaded machine) waiting in 1 ms steps; a hang guard of
/// 10 s, not a timing assertion.
async fn settle(done: impl Fn() -> bool) {
    for _ in 0..10_000 {
        if done() {
            return;
        }
        tokio::task::yield_now().await;
    }
    for _ in 0..10_000 {
        if done() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    panic!("background work did not finish");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_cold_requests_fetch_each_statement_once() {
    let clock = ManualClock::new(T0);
    let up = Upstream::new(clock.clone());
    let resolver = Resolver::new(up.clone());
    let gate = up.hold.write().await;
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let r = resolver.clone();
        tasks.push(tokio::spawn(async move {
            r.resolve(&query(), GraceRule::default(), T0).await
        }));
    }
    settle(|| up.total() >= 1).await;
    drop(gate);
    let first = tasks.pop().unwrap().await.unwrap().unwrap();
    for t in tasks {
        assert!(Arc::ptr_eq(&t.await.unwrap().unwrap(), &first));
    }
    assert_eq!(first.chain.chain.len(), 3);
    assert_eq!(
        first.chain.metadata["openid_relying_party"]["client_name"],
        "leaf"
    );
    assert_eq!(
        (up.count("leaf"), up.count("ta"), up.count("ss")),
        (1, 1, 1)
    );
}

#[tokio::test]
async fn a_statement_is_refreshed_only_after_the_elapsed_fraction_and_only_once() {
    let clock = ManualClock::new(T0);
    let up = Upstream::new(clock.clone());
    let cache = StatementCache::new(up.clone());
    let rule = GraceRule {
        grace_period: 3600,
        elapsed_factor: 0.75,
    };
    let local = Local::default();
    let get = |now: i64| {
        let view = cache.at(rule, now, &local);
        async move { view.entity_configuration(TA).await.unwrap() }
    };
    let original = get(T0).await;
    assert_eq!(get(T0 + 2699).await, original);
    assert_eq!(up.count("ta"), 1, "no refresh before 45 minutes");

    clock.set(T0 + 2700);
    let gate = up.hold.write().await;
    for _ in 0..5 {
        assert_eq!(
            get(T0 + 2700).await,
            original,
            "served from cache meanwhile"
        );
    }
    settle(|| up.count("ta") == 2).await;
    assert_eq!(up.count("ta"), 2, "one background refresh");
    drop(gate);
    settle(|| cache.peek_configuration(TA).is_some_and(|c| c != original)).await;
    assert_eq!(up.count("ta"), 2);

    // Past exp the cached copy is never served: the next request fetches before answering.
    clock.set(T0 + 2700 + 3600);
    let fresh = get(T0 + 2700 + 3600).await;
    assert_ne!(fresh, original);
    assert_eq!(up.count("ta"), 3);
}

#[tokio::test]
async fn resolutions_are_reused_until_their_grace_period() {
    let clock = ManualClock::new(T0);
    let up = Upstream::new(clock.clone());
    let resolver = Resolver::new(up.clone());
    let rule = GraceRule::default();
    let a = resolver.resolve(&query(), rule, T0).await.unwrap();
    let b = resolver.resolve(&query(), rule, T0 + 1000).await.unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(up.total(), 3);
    assert_eq!(a.exp(), T0 + 3600);
}

#[tokio::test]
async fn stored_responses_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let key = SigningKey::generate(Algorithm::ES256, 0).unwrap();
    let claims =
        json!({"iss": "https://r", "sub": LEAF, "iat": T0, "exp": T0 + 60, "metadata": {}});
    let claims = claims.as_object().unwrap().clone();
    let jwt = sign(&key, "resolve-response+jwt", &claims, None).unwrap();
    let job = Job {
        sub: LEAF.into(),
        trust_anchor: TA.into(),
        entity_types: vec![],
    };
    Store::open(dir.path(), true, true, Limits::default(), T0)
        .await
        .put(&job, &jwt, &claims, T0 + 60, T0)
        .await;
    let store = Store::open(dir.path(), true, true, Limits::default(), T0).await;
    assert!(matches!(store.lookup(&job, key.kid(), T0), Some(Hit::Jwt(b)) if b == jwt.as_bytes()));
    let Some(Hit::Json(c)) = store.lookup(&job, "another-kid", T0) else {
        panic!("the JSON form serves a key change");
    };
    assert!(!c.contains_key("iss") && c["trust_anchor"] == TA);
    assert!(store.lookup(&job, key.kid(), T0 + 60).is_none(), "expired");
    let other = Job {
        entity_types: vec!["openid_provider".into()],
        ..job
    };
    assert!(store.lookup(&other, key.kid(), T0).is_none());
}

#[tokio::test]
async fn only_trust_marks_the_anchor_admits_and_that_verify_are_kept() {
    let clock = ManualClock::new(T0);
    let up = Upstream::build(clock.clone(), true);
    let resolver = Resolver::new(up.clone());
    let res = resolver
        .resolve(&query(), GraceRule::default(), T0)
        .await
        .unwrap();
    assert_eq!(res.marks.len(), 1, "{:?}", res.marks);
    assert_eq!(res.marks[0].trust_mark_type, MARK);
    assert_eq!(res.exp(), T0 + 600, "the mark's exp lowers the response's");
    assert_eq!(up.count("tmi"), 1);
}

/// A resolution whose chain holds `bytes` bytes of statement text.
fn resolution_of(bytes: usize) -> Arc<Resolution> {
    let chain = ResolvedChain {
        trust_anchor: TA.into(),
        chain: vec!["x".repeat(bytes)],
        metadata: json!({}),
        exp: T0 + 3600,
        subject_claims: serde_json::Map::new(),
        anchor_claims: serde_json::Map::new(),
    };
    Arc::new(Resolution::new(chain, Vec::new(), T0))
}

#[test]
fn resolution_weight_counts_statement_bytes() {
    let small = resolution_of(10).weight();
    let big = resolution_of(100_000).weight();
    assert!(big - small >= 99_990, "{small} {big}");
}

/// Many large resolutions (a client making distinct valid chains) stay within the byte cap:
/// with an entry-count bound alone all twenty would be kept.
#[tokio::test]
async fn resolutions_cache_is_bounded_in_bytes() {
    const CAP: u64 = 1024 * 1024;
    let cache = resolutions_cache(CAP);
    for i in 0..20 {
        cache
            .insert(format!("sub-{i}"), resolution_of(200 * 1024))
            .await;
        cache.run_pending_tasks().await;
    }
    let held: u64 = cache
        .iter()
        .map(|(k, v)| u64::from(v.weight()) + k.len() as u64)
        .sum();
    assert!(held <= CAP, "{held} bytes held, cap {CAP}");
    assert!(cache.entry_count() < 20, "{} entries", cache.entry_count());
    assert!(cache.entry_count() >= 1, "the cache still holds something");
}

fn job(i: usize) -> Job {
    Job {
        sub: format!("https://leaf-{i}.example"),
        trust_anchor: TA.into(),
        entity_types: vec![],
    }
}

/// Stores a response of `pad` bytes for `job(i)` at `now`, valid for an hour.
async fn put_padded(store: &Store, i: usize, pad: usize, now: i64) {
    let claims = json!({"sub": job(i).sub, "exp": now + 3600, "pad": "x".repeat(pad)});
    let claims = claims.as_object().unwrap().clone();
    store
        .put(&job(i), "header.payload.sig", &claims, now + 3600, now)
        .await;
}

fn files_on_disk(dir: &std::path::Path) -> usize {
    let mut n = 0;
    for a in std::fs::read_dir(dir.join("resolve")).unwrap() {
        n += std::fs::read_dir(a.unwrap().path()).unwrap().count();
    }
    n
}

/// Beyond the entry bound the least recently requested entries go, from memory and disk; an
/// entry that was looked up recently stays.
#[tokio::test]
async fn store_evicts_least_recently_requested_beyond_its_entry_bound() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_entries: 10,
        max_bytes: usize::MAX,
    };
    let store = Store::open(dir.path(), false, true, limits, T0).await;
    for i in 0..10 {
        put_padded(&store, i, 10, T0 + i as i64).await;
    }
    assert!(
        store.lookup(&job(0), "kid", T0 + 100).is_some(),
        "requested again"
    );
    for i in 10..40 {
        put_padded(&store, i, 10, T0 + 100 + i as i64).await;
        assert!(store.size().0 <= 10, "{:?} after {i}", store.size());
    }
    assert!(
        store.lookup(&job(1), "kid", T0 + 200).is_none(),
        "oldest gone"
    );
    assert!(
        store.lookup(&job(39), "kid", T0 + 200).is_some(),
        "newest kept"
    );
    assert!(
        files_on_disk(dir.path()) <= 2 * 10,
        "files of evicted entries removed"
    );
    let reopened = Store::open(dir.path(), false, true, limits, T0 + 300).await;
    assert!(reopened.size().0 <= 10);
}

/// Large responses are bounded by bytes too.
#[tokio::test]
async fn store_is_bounded_in_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_entries: usize::MAX,
        max_bytes: 1024 * 1024,
    };
    let store = Store::open(dir.path(), false, true, limits, T0).await;
    for i in 0..20 {
        put_padded(&store, i, 200 * 1024, T0 + i as i64).await;
        let (_, bytes) = store.size();
        assert!(bytes <= 1024 * 1024, "{bytes} bytes after {i}");
    }
    assert!(store.lookup(&job(0), "kid", T0 + 30).is_none());
    assert!(store.lookup(&job(19), "kid", T0 + 30).is_some());
}

/// Entries nobody asked for in [`IDLE`] are not resubmitted and go once expired; requested
/// ones keep being refreshed.
#[tokio::test]
async fn store_stops_refreshing_entries_nobody_requests() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), false, true, Limits::default(), T0).await;
    put_padded(&store, 1, 10, T0).await;
    put_padded(&store, 2, 10, T0).await;
    let grace = 600;
    // Both due within grace of exp; only within IDLE of their last request.
    let mut due = store.sweep(T0 + 3600 - grace, grace).await;
    due.sort_by(|a, b| a.sub.cmp(&b.sub));
    assert_eq!(due, vec![job(1), job(2)]);

    // Refreshed many times over two days; only job 1 is requested meanwhile.
    let later = T0 + 2 * IDLE;
    for now in (T0 + 3600..later).step_by(3600) {
        put_padded(&store, 2, 10, now).await;
        put_padded(&store, 1, 10, now).await;
        store.touch(&job(1), now);
    }
    put_padded(&store, 2, 10, later).await;
    put_padded(&store, 1, 10, later).await;
    store.touch(&job(1), later);
    let due = store.sweep(later + 3600 - grace, grace).await;
    assert_eq!(due, vec![job(1)], "the idle entry is not refreshed");
    assert_eq!(store.size().0, 2, "still served until it expires");
    let due = store.sweep(later + 3600, grace).await;
    assert_eq!(due, vec![job(1)]);
    assert_eq!(store.size().0, 1, "the idle, expired entry is gone");
    assert!(store.lookup(&job(2), "kid", later).is_none());
    assert_eq!(files_on_disk(dir.path()), 2, "job 1's .json and .job only");
}

/// Statements we issued (here: as the anchor) are not served across snapshot generations,
/// and neither are resolutions that used them; remote statements keep their lifetimes.
#[tokio::test]
async fn our_own_statements_follow_the_snapshot_generation() {
    let clock = ManualClock::new(T0);
    let up = Upstream::new(clock.clone());
    let resolver = Resolver::new(up.clone());
    let mut q = query();
    q.local = Local {
        entity_id: TA.into(),
        generation: 1,
        error_ttl: 0,
    };
    let rule = GraceRule::default();
    let first = resolver.resolve(&q, rule, T0).await.unwrap();
    let again = resolver.resolve(&q, rule, T0 + 1).await.unwrap();
    assert!(Arc::ptr_eq(&first, &again), "same generation: reused");
    q.local.generation = 2;
    let next = resolver.resolve(&q, rule, T0 + 2).await.unwrap();
    assert!(
        !Arc::ptr_eq(&first, &next),
        "another generation: resolved anew"
    );
    assert_eq!(
        (up.count("leaf"), up.count("ta"), up.count("ss")),
        (1, 2, 2),
        "ours fetched anew, the leaf's kept"
    );
}

/// A failure is answered from the cache for `error_ttl` seconds of the injected clock (and not
/// past a new snapshot generation); then it is resolved again with fresh statements.
#[tokio::test]
async fn failures_are_cached_briefly_and_then_retried_afresh() {
    let clock = ManualClock::new(T0);
    let up = Upstream::new(clock.clone());
    let resolver = Resolver::new(up.clone());
    let mut q = query();
    q.anchors[0].entity_id = "https://elsewhere.example".into();
    q.local.error_ttl = 5;
    let rule = GraceRule::default();
    assert!(resolver.resolve(&q, rule, T0).await.is_err());
    assert_eq!(up.count("leaf"), 1);
    assert!(resolver.resolve(&q, rule, T0 + 4).await.is_err());
    assert_eq!(up.count("leaf"), 1, "the failure came from the cache");
    assert!(resolver.resolve(&q, rule, T0 + 5).await.is_err());
    assert_eq!(
        up.count("leaf"),
        2,
        "after its lifetime: resolved again, the cached statement fetched anew"
    );
    q.local.generation = 1;
    assert!(resolver.resolve(&q, rule, T0 + 6).await.is_err());
    assert_eq!(
        up.count("leaf"),
        3,
        "a new snapshot does not see the old failure"
    );
    // A flush for the subject forgets the failure and the statement.
    resolver.flush(Some(LEAF)).await;
    assert!(resolver.resolve(&q, rule, T0 + 7).await.is_err());
    assert_eq!(up.count("leaf"), 4, "flushed: fetched anew");
}

#[tokio::test]
async fn a_revoked_mark_leaves_the_answer_within_one_status_lifetime() {
    let clock = ManualClock::new(T0);
    let up = Upstream::build(clock.clone(), true);
    let resolver = Resolver::new(up.clone());
    let q = checking(TrustMarkStatusCheck::FailClosed);
    let marks = |r: &Resolution| r.marks.len();
    let r = resolver
        .resolve(&q, GraceRule::default(), T0)
        .await
        .unwrap();
    assert_eq!(
        (marks(&r), up.count("status")),
        (1, 1),
        "active: kept, asked once"
    );
    *up.status.lock().unwrap() = Some("revoked");
    let now = T0 + mark_status::STATUS_TTL - 1;
    let r = resolver
        .resolve(&q, GraceRule::default(), now)
        .await
        .unwrap();
    assert_eq!(
        (marks(&r), up.count("status")),
        (1, 1),
        "within the lifetime: the kept answer"
    );
    let now = T0 + mark_status::STATUS_TTL;
    let r = resolver
        .resolve(&q, GraceRule::default(), now)
        .await
        .unwrap();
    assert_eq!(
        (marks(&r), up.count("status")),
        (0, 2),
        "asked again, and left out"
    );
    // Without the check the same mark is returned: only its signature and exp decide.
    let off = resolver
        .resolve(&query(), GraceRule::default(), now)
        .await
        .unwrap();
    assert_eq!((marks(&off), up.count("status")), (1, 2));
}

#[tokio::test(start_paused = true)]
async fn an_issuer_that_does_not_answer_costs_the_timeout_once_and_fails_as_configured() {
    let clock = ManualClock::new(T0);
    let up = Upstream::build(clock.clone(), true);
    *up.status.lock().unwrap() = None;
    let resolver = Resolver::new(up.clone());
    let log = Captured::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    tracing::callsite::rebuild_interest_cache();
    let started = tokio::time::Instant::now();
    let closed = resolver
        .resolve(
            &checking(TrustMarkStatusCheck::FailClosed),
            GraceRule::default(),
            T0,
        )
        .await
        .unwrap();
    assert_eq!(
        closed.marks.len(),
        0,
        "fail_closed: an unknown status drops the mark"
    );
    assert_eq!(
        started.elapsed(),
        mark_status::TIMEOUT,
        "bounded by the timeout"
    );
    let logged = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    assert!(
        logged.contains("WARN")
            && logged.contains("fail_closed")
            && logged.contains("did not answer within 3 s"),
        "the reason is in the log: {logged}"
    );
    // The failure is remembered: the other mode decides without asking (or waiting) again.
    let started = tokio::time::Instant::now();
    let open = resolver
        .resolve(
            &checking(TrustMarkStatusCheck::FailOpen),
            GraceRule::default(),
            T0,
        )
        .await
        .unwrap();
    assert_eq!(
        open.marks.len(),
        1,
        "fail_open: an unknown status keeps the mark"
    );
    assert_eq!(started.elapsed(), std::time::Duration::ZERO);
    assert_eq!(up.count("status"), 1);
    // After the failure's lifetime the issuer is asked again.
    let later = T0 + mark_status::FAILURE_TTL;
    *up.status.lock().unwrap() = Some("active");
    let r = resolver
        .resolve(
            &checking(TrustMarkStatusCheck::FailClosed),
            GraceRule::default(),
            later + mark_status::STATUS_TTL,
        )
        .await
        .unwrap();
    assert_eq!((r.marks.len(), up.count("status")), (1, 2));
}

/// A log sink the tests read back.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
