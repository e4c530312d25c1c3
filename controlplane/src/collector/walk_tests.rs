//! The walk over in-memory federations: loops and duplicates, the Entity bound, members that
//! fail, an anchor that does not verify with its pinned keys.

use std::collections::HashMap;

use pharos_shared::Error;
use pharos_shared::interop::Interop;
use pharos_shared::jose::{Algorithm, Signer, SigningKey};
use serde_json::{Value, json};

use super::*;

const NOW: i64 = 1_700_000_000;

struct Fake {
    key: SigningKey,
    ecs: HashMap<String, String>,
    lists: HashMap<String, Vec<String>>,
    statements: HashMap<String, String>,
    /// Bytes served.
    served: std::sync::atomic::AtomicUsize,
    /// Each answer waits this long.
    delay: Duration,
}

impl Fake {
    fn new() -> Self {
        Self {
            key: SigningKey::generate(Algorithm::ES256, 0).unwrap(),
            ecs: HashMap::new(),
            lists: HashMap::new(),
            statements: HashMap::new(),
            served: Default::default(),
            delay: Duration::ZERO,
        }
    }

    fn sign(&self, claims: Value) -> String {
        jose::sign(
            &self.key,
            "entity-statement+jwt",
            claims.as_object().unwrap(),
            None,
        )
        .unwrap()
    }

    /// An Entity; with `subs`, it lists them at `<id>/list` and vouches for each at
    /// `<id>/fetch`.
    fn entity(&mut self, id: &str, subs: Option<Vec<&str>>) {
        let vouched = subs.clone().unwrap_or_default();
        self.lister(id, subs, vouched);
    }

    /// An Entity listing `subs` and vouching (with a Subordinate Statement) only for
    /// `vouched`.
    fn lister(&mut self, id: &str, subs: Option<Vec<&str>>, vouched: Vec<&str>) {
        let mut fe = json!({"organization_name": id});
        if let Some(subs) = subs {
            fe["federation_list_endpoint"] = json!(format!("{id}/list"));
            fe["federation_fetch_endpoint"] = json!(format!("{id}/fetch"));
            self.lists.insert(
                format!("{id}/list"),
                subs.into_iter().map(String::from).collect(),
            );
        }
        for sub in vouched {
            let ss = self.sign(json!({"iss": id, "sub": sub, "iat": NOW, "exp": NOW + 60,
                "jwks": {"keys": [self.key.public_jwk()]}}));
            let url = pharos_runtime::outbound::fetch_url(&format!("{id}/fetch"), sub).unwrap();
            self.statements.insert(url, ss);
        }
        let ec = self.sign(json!({"iss": id, "sub": id, "iat": NOW, "exp": NOW + 60,
            "jwks": {"keys": [self.key.public_jwk()]}, "metadata": {"federation_entity": fe}}));
        self.ecs.insert(id.to_owned(), ec);
    }

    async fn answer(&self, body: Option<&String>, what: &str) -> pharos_shared::Result<String> {
        tokio::time::sleep(self.delay).await;
        let body = body.ok_or_else(|| Error::Fetch(format!("{what}: 404")))?;
        self.served
            .fetch_add(body.len(), std::sync::atomic::Ordering::Relaxed);
        Ok(body.clone())
    }
}

impl pharos_shared::chain::Fetcher for Fake {
    async fn entity_configuration(&self, entity_id: &str) -> pharos_shared::Result<String> {
        self.answer(self.ecs.get(entity_id), entity_id).await
    }

    async fn subordinate_statement(&self, ep: &str, sub: &str) -> pharos_shared::Result<String> {
        Err(Error::Fetch(format!("{ep}?sub={sub}: 404")))
    }
}

impl Source for Fake {
    async fn list(&self, url: &str) -> pharos_shared::Result<String> {
        let l = self
            .lists
            .get(url)
            .map(|l| serde_json::to_string(l).unwrap());
        self.answer(l.as_ref(), url).await
    }

    async fn statement(&self, url: &str) -> pharos_shared::Result<String> {
        self.answer(self.statements.get(url), url).await
    }
}

fn anchor(id: &str) -> AnchorSpec {
    AnchorSpec {
        entity_id: id.into(),
        jwks: None,
        interop: Interop::default(),
        ..AnchorSpec::default()
    }
}

fn limits(max_entities: usize) -> Limits {
    Limits {
        max_entities,
        max_fetches: 1_000,
        max_bytes: 100_000_000,
        deadline: Duration::from_secs(600),
        parallel: 4,
        fetch_timeout: Duration::from_secs(5),
    }
}

fn ids(w: &Walked) -> Vec<&str> {
    let mut ids: Vec<_> = w.entities.iter().map(|e| e.entity_id.as_str()).collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn loops_and_duplicates_are_walked_once_and_failures_skipped() {
    let mut f = Fake::new();
    f.entity(
        "https://ta",
        Some(vec!["https://i", "https://i", "https://gone"]),
    );
    f.entity(
        "https://i",
        Some(vec!["https://ta", "https://i", "https://l"]),
    );
    f.entity("https://l", None);
    let w = walk(&f, &anchor("https://ta"), &limits(100), NOW)
        .await
        .unwrap();
    assert_eq!(
        ids(&w),
        ["https://i", "https://l"],
        "the anchor is not listed"
    );
    assert_eq!(w.skipped, 1, "the member without a configuration");
    // Each member remembers who listed it (the federation map draws the tree from it).
    let mut superiors: Vec<_> = w
        .entities
        .iter()
        .map(|e| (e.entity_id.as_str(), e.superior.as_deref()))
        .collect();
    superiors.sort();
    assert_eq!(
        superiors,
        [
            ("https://i", Some("https://ta")),
            ("https://l", Some("https://i"))
        ]
    );
}

#[tokio::test]
async fn the_entity_bound_stops_the_walk() {
    let mut f = Fake::new();
    let subs: Vec<String> = (0..50).map(|i| format!("https://e{i:02}")).collect();
    f.entity(
        "https://ta",
        Some(subs.iter().map(String::as_str).collect()),
    );
    for s in &subs {
        f.entity(s, None);
    }
    let w = walk(&f, &anchor("https://ta"), &limits(10), NOW)
        .await
        .unwrap();
    assert_eq!(w.entities.len(), 10);
    assert_eq!(w.stopped, Some(Bound::Entities));
}

#[tokio::test]
async fn listed_strangers_nobody_vouched_for_are_not_collected_nor_fetched() {
    let mut f = Fake::new();
    f.entity("https://ta", Some(vec!["https://i"]));
    // i lists l (its subordinate) and s, a stranger it has no statement for.
    f.lister(
        "https://i",
        Some(vec!["https://l", "https://s"]),
        vec!["https://l"],
    );
    f.entity("https://l", None);
    f.entity("https://s", None);
    // j is listed by the anchor but publishes no fetch endpoint: no vouching possible.
    let w = walk(&f, &anchor("https://ta"), &limits(100), NOW)
        .await
        .unwrap();
    assert_eq!(ids(&w), ["https://i", "https://l"]);
    assert_eq!(w.skipped, 1);
    // A statement signed with another key does not vouch either.
    let mut f = Fake::new();
    f.entity("https://ta", Some(vec!["https://i"]));
    let other = SigningKey::generate(Algorithm::ES256, 0).unwrap();
    let forged = jose::sign(
        &other,
        "entity-statement+jwt",
        json!({"iss": "https://ta", "sub": "https://i", "iat": NOW, "exp": NOW + 60,
            "jwks": {"keys": [f.key.public_jwk()]}})
        .as_object()
        .unwrap(),
        None,
    )
    .unwrap();
    let url = pharos_runtime::outbound::fetch_url("https://ta/fetch", "https://i").unwrap();
    f.statements.insert(url, forged);
    f.entity("https://i", None);
    let w = walk(&f, &anchor("https://ta"), &limits(100), NOW)
        .await
        .unwrap();
    assert!(w.entities.is_empty(), "{:?}", ids(&w));
}

#[tokio::test]
async fn the_byte_budget_stops_the_walk_and_keeps_what_it_verified() {
    let mut f = Fake::new();
    let subs: Vec<String> = (0..50).map(|i| format!("https://e{i:02}")).collect();
    f.entity(
        "https://ta",
        Some(subs.iter().map(String::as_str).collect()),
    );
    for s in &subs {
        f.entity(s, None);
    }
    let mut l = limits(1_000);
    l.parallel = 1;
    l.max_bytes = 8_000;
    let w = walk(&f, &anchor("https://ta"), &l, NOW).await.unwrap();
    assert_eq!(w.stopped, Some(Bound::Bytes));
    assert!(
        !w.entities.is_empty() && w.entities.len() < 50,
        "{}",
        w.entities.len()
    );
    // No fetch starts once the budget is spent: at most one document past it.
    let served = f.served.load(std::sync::atomic::Ordering::Relaxed) as u64;
    assert_eq!(served, w.bytes);
    assert!(served < l.max_bytes + 2_000, "{served}");
}

#[tokio::test(start_paused = true)]
async fn the_deadline_stops_the_walk_and_keeps_what_it_verified() {
    let mut f = Fake::new();
    let subs: Vec<String> = (0..20).map(|i| format!("https://e{i:02}")).collect();
    f.entity(
        "https://ta",
        Some(subs.iter().map(String::as_str).collect()),
    );
    for s in &subs {
        f.entity(s, None);
    }
    f.delay = Duration::from_secs(1);
    let mut l = limits(1_000);
    l.parallel = 1;
    l.deadline = Duration::from_millis(9_500);
    let w = walk(&f, &anchor("https://ta"), &l, NOW).await.unwrap();
    assert_eq!(w.stopped, Some(Bound::Deadline));
    // One second per document: the anchor's configuration and listing, then two documents
    // per Entity; the fourth Entity's configuration is cut off by the deadline.
    assert_eq!(w.entities.len(), 3);
}

#[tokio::test]
async fn an_anchor_that_fails_its_pinned_keys_fails_the_walk() {
    let mut f = Fake::new();
    f.entity("https://ta", Some(vec![]));
    let other = SigningKey::generate(Algorithm::ES256, 0).unwrap();
    let mut a = anchor("https://ta");
    a.jwks = Some(pharos_shared::jose::Jwks {
        keys: vec![other.public_jwk().clone()],
    });
    assert!(walk(&f, &a, &limits(10), NOW).await.is_err());
    assert!(
        walk(&f, &anchor("https://nobody"), &limits(10), NOW)
            .await
            .is_err()
    );
}

/// Log lines written while the guard lives (current-thread runtime: same thread).
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn skipped_members_and_listings_are_logged() {
    let mut f = Fake::new();
    f.entity("https://ta", Some(vec!["https://gone", "https://i"]));
    // i publishes a listing that answers 404.
    let mut claims = json!({"iss": "https://i", "sub": "https://i", "iat": NOW, "exp": NOW + 60,
        "jwks": {"keys": [f.key.public_jwk()]},
        "metadata": {"federation_entity": {"federation_list_endpoint": "https://i/list"}}});
    let jws = jose::sign(
        &f.key,
        "entity-statement+jwt",
        claims.as_object_mut().unwrap(),
        None,
    )
    .unwrap();
    f.ecs.insert("https://i".into(), jws);
    let out = Captured::default();
    let writer = out.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    // Another test's thread may be registering these callsites as "nobody listens" while this
    // one sets its subscriber. A first walk makes sure every callsite is registered; then they
    // are asked again, and the walk that counts runs.
    walk(&f, &anchor("https://ta"), &limits(100), NOW)
        .await
        .unwrap();
    tracing::callsite::rebuild_interest_cache();
    out.0.lock().unwrap().clear();
    let w = walk(&f, &anchor("https://ta"), &limits(100), NOW)
        .await
        .unwrap();
    assert_eq!(ids(&w), ["https://i"]);
    let log = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    assert!(
        log.contains("member skipped") && log.contains("https://gone"),
        "{log}"
    );
    assert!(
        log.contains("listing skipped") && log.contains("https://i/list"),
        "{log}"
    );
}
