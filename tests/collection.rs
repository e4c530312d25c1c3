//! Entity collection (issue 16) over a federation of Pharos instances on loopback: an anchor
//! (also the Trust Mark Issuer), two intermediates and three leaves with UI metadata in two
//! languages and trust marks. Collected on demand and periodically; every filter, claim
//! selection, language tag and paging rule seen through the endpoint.

use std::sync::Arc;
use std::time::Duration;

use pharos_shared::config::Settings;
use pharos_shared::time::{Clock, SystemClock};
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Backend, Pharos, TestDb, backends, enc};

pub const TM_A: &str = "https://marks.example.org/a";
pub const TM_B: &str = "https://marks.example.org/b";

pub async fn ok(p: &Pharos, method: Method, path: &str, body: Value) -> Value {
    let (s, v) = p.admin(method, path, Some(body)).await;
    assert!((200..300).contains(&s), "{path}: {s} {v}");
    v
}

/// The federation; `ta` serves the collection endpoint.
pub struct Fed {
    pub ta: Pharos,
    pub intermediates: Vec<Pharos>,
    pub leaves: Vec<Pharos>,
    pub _dbs: Vec<TestDb>,
}

impl Fed {
    pub fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .intermediates
            .iter()
            .chain(&self.leaves)
            .map(|p| p.entity_id().to_owned())
            .collect();
        ids.sort();
        ids
    }

    pub fn leaf(&self, i: usize) -> String {
        self.leaves[i].entity_id().to_owned()
    }

    pub async fn stop(self) {
        for p in self.intermediates.into_iter().chain(self.leaves) {
            p.stop().await;
        }
        self.ta.stop().await;
    }
}

/// Makes `p` a superior: fetch and list endpoints.
pub async fn superior(p: &Pharos) {
    for (kind, path) in [("fetch", "/fetch"), ("list", "/list")] {
        let cfg = json!({"type": kind, "path": path, "config": {}});
        ok(p, Method::POST, "/federation-endpoints", cfg).await;
    }
}

/// Registers `sub` under `sup` (both sides).
pub async fn add(sup: &Pharos, sub: &Pharos) {
    let jwks = sub.entity_configuration().await.claims["jwks"].clone();
    let body = json!({"entity_id": sub.entity_id(), "jwks": jwks});
    ok(sup, Method::POST, "/subordinates", body).await;
    let hint = json!({"entity_id": sup.entity_id()});
    ok(
        sub,
        Method::POST,
        "/entity-configuration/authority-hints",
        hint,
    )
    .await;
}

/// Leaf metadata: (entity type, claims) pairs.
fn leaf_metadata() -> Vec<Vec<(&'static str, Value)>> {
    vec![
        vec![
            (
                "openid_relying_party",
                json!({"client_name": "Shop", "client_name#it": "Negozio",
                    "logo_uri": "https://shop.example/logo.png",
                    "redirect_uris": ["https://shop.example/cb"]}),
            ),
            (
                "federation_entity",
                json!({"organization_name": "Acme Ltd", "organization_name#de": "Acme GmbH",
                    "contacts": ["ops@acme.example"]}),
            ),
        ],
        vec![(
            "openid_provider",
            json!({"display_name": "Login", "display_name#it": "Accesso",
                "description": "Sign in", "description#it": "Accedi",
                "issuer": "https://login.example"}),
        )],
        vec![
            (
                "openid_relying_party",
                json!({"client_name": "Library", "policy_uri": "https://lib.example/policy"}),
            ),
            (
                "federation_entity",
                json!({"organization_name": "Beta Org", "keywords": ["books", "reading"]}),
            ),
        ],
    ]
}

/// Starts the federation; `configure` adjusts the anchor's settings. Leaf 0 holds marks A
/// and B, leaf 1 mark A, leaf 2 none; leaves 0 and 1 are under intermediate 0, leaf 2 under
/// intermediate 1.
pub async fn build(
    b: Backend,
    configure: impl FnOnce(&mut Settings),
    clock: Arc<dyn Clock>,
) -> Fed {
    let mut dbs = Vec::new();
    for _ in 0..6 {
        dbs.push(TestDb::new(b).await);
    }
    let ta = Pharos::start_with(&dbs[0], configure, clock).await;
    let mut intermediates = Vec::new();
    for db in &dbs[1..3] {
        intermediates.push(Pharos::start(db).await);
    }
    let mut leaves = Vec::new();
    for db in &dbs[3..6] {
        leaves.push(Pharos::start(db).await);
    }
    let ta_id = ta.entity_id().to_owned();
    superior(&ta).await;
    let tm = json!({"type": "trust_mark", "path": "/trust-mark", "config": {}});
    ok(&ta, Method::POST, "/federation-endpoints", tm).await;
    for t in [TM_A, TM_B] {
        let ty = json!({"trust_mark_type": t, "trust_mark_issuers": [{"issuer": ta_id}]});
        ok(&ta, Method::POST, "/trust-marks/types", ty).await;
        let spec = json!({"trust_mark_type": t, "lifetime": "1h"});
        ok(&ta, Method::POST, "/trust-marks/issuance-spec", spec).await;
    }
    for i in &intermediates {
        superior(i).await;
        add(&ta, i).await;
    }
    let marks: [&[&str]; 3] = [&[TM_A, TM_B], &[TM_A], &[]];
    for (n, (leaf, md)) in leaves.iter().zip(leaf_metadata()).enumerate() {
        for (kind, claims) in md {
            let path = format!("/entity-configuration/metadata/{kind}");
            ok(leaf, Method::PUT, &path, claims).await;
        }
        add(&intermediates[usize::from(n == 2)], leaf).await;
        for t in marks[n] {
            let path = format!("/trust-marks/issuance-spec/{}/subjects", enc(t));
            ok(
                &ta,
                Method::POST,
                &path,
                json!({"entity_id": leaf.entity_id()}),
            )
            .await;
            let held = json!({"trust_mark_type": t, "trust_mark_issuer": ta_id,
                "refresh_grace_period": 600, "refresh_rate_limit": 1});
            ok(
                leaf,
                Method::POST,
                "/entity-configuration/trust-marks",
                held,
            )
            .await;
        }
        if !marks[n].is_empty() {
            let refreshers = leaf.app.as_ref().unwrap().refreshers.clone();
            let mut held = 0;
            for _ in 0..200 {
                refreshers.tick(SystemClock.now()).await;
                let ec = leaf.entity_configuration().await.claims;
                held = ec
                    .get("trust_marks")
                    .and_then(|m| m.as_array())
                    .map_or(0, Vec::len);
                if held == marks[n].len() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert_eq!(held, marks[n].len(), "leaf {n} holds its marks");
        }
    }
    Fed {
        ta,
        intermediates,
        leaves,
        _dbs: dbs,
    }
}

/// Adds (or replaces) the anchor's entity_collection endpoint.
pub async fn set_collection(p: &Pharos, config: Value) {
    let (s, _) = p
        .admin(Method::GET, "/federation-endpoints/entity_collection", None)
        .await;
    let body = json!({"type": "entity_collection", "path": "/collection", "config": config});
    if s == 404 {
        ok(p, Method::POST, "/federation-endpoints", body).await;
    } else {
        ok(
            p,
            Method::PUT,
            "/federation-endpoints/entity_collection",
            body,
        )
        .await;
    }
}

/// `GET /collection?<query>`: status and JSON body (content type checked on success).
pub async fn collection(p: &Pharos, query: &str) -> (u16, Value) {
    let r = p.get(&format!("/collection?{query}")).await;
    let status = r.status().as_u16();
    if status == 200 {
        assert_eq!(r.headers()["content-type"], "application/json");
    }
    (status, r.json().await.unwrap())
}

pub fn ids_of(body: &Value) -> Vec<String> {
    body["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["entity_id"].as_str().unwrap().to_owned())
        .collect()
}

/// Waits (bounded) until the periodic collection answers with a `last_updated` for which
/// `accept` holds; returns that body.
pub async fn wait_for(p: &Pharos, query: &str, accept: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..600 {
        let (s, v) = collection(p, query).await;
        if s == 200 && accept(&v) {
            return v;
        }
        assert!(s == 200 || s == 503, "{s} {v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the collection never became as expected");
}

fn q(pairs: &[(&str, &str)]) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

#[tokio::test]
async fn a_pharos_federation_is_collected_filtered_trimmed_and_paged() {
    for b in backends() {
        let fed = build(b, |_| {}, Arc::new(SystemClock)).await;
        let ta = &fed.ta;
        set_collection(ta, json!({})).await;

        // On demand, everything: every Entity under the anchor once, in order, not the anchor.
        let (s, all) = collection(ta, "").await;
        assert_eq!(s, 200, "{b:?} {all}");
        assert_eq!(ids_of(&all), fed.ids(), "{b:?}");
        assert!(all["last_updated"].is_i64(), "{all}");
        assert!(all.get("next").is_none());
        let find = |id: &str| {
            all["entities"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["entity_id"] == id)
                .unwrap()
                .clone()
        };
        let shop = find(&fed.leaf(0));
        assert_eq!(
            shop["entity_types"],
            json!(["federation_entity", "openid_relying_party"])
        );
        assert_eq!(
            shop["ui_infos"]["openid_relying_party"],
            json!({"display_name": "Shop", "display_name#it": "Negozio",
                "logo_uri": "https://shop.example/logo.png"})
        );
        assert_eq!(
            shop["ui_infos"]["federation_entity"]["organization_name#de"],
            "Acme GmbH"
        );
        let marks: Vec<_> = shop["trust_marks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["trust_mark_type"].as_str().unwrap())
            .collect();
        assert_eq!(marks.len(), 2, "{shop}");
        assert!(marks.contains(&TM_A) && marks.contains(&TM_B));
        // The marks are the anchor's, verifiable with its keys.
        let ta_keys: pharos_shared::jose::Jwks =
            serde_json::from_value(ta.entity_configuration().await.claims["jwks"].clone()).unwrap();
        let jwt = shop["trust_marks"][0]["trust_mark"].as_str().unwrap();
        let mark = pharos_shared::jose::verify(jwt, &ta_keys).unwrap();
        assert_eq!(mark.claims["sub"], fed.leaf(0));
        let login = find(&fed.leaf(1));
        assert_eq!(
            login["ui_infos"]["openid_provider"]["description#it"],
            "Accedi"
        );

        // entity_type: any of.
        let (_, v) = collection(ta, &q(&[("entity_type", "openid_provider")])).await;
        assert_eq!(ids_of(&v), [fed.leaf(1)]);
        let both = q(&[
            ("entity_type", "openid_provider"),
            ("entity_type", "openid_relying_party"),
        ]);
        let (_, v) = collection(ta, &both).await;
        let mut want = vec![fed.leaf(0), fed.leaf(1), fed.leaf(2)];
        want.sort();
        assert_eq!(ids_of(&v), want);
        // UI infos only of the asked types (and federation_entity).
        let (_, v) = collection(ta, &q(&[("entity_type", "federation_entity")])).await;
        assert_eq!(ids_of(&v), fed.ids(), "every Pharos is a federation entity");
        let e = v["entities"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["entity_id"] == fed.leaf(0))
            .unwrap();
        assert!(e["ui_infos"].get("openid_relying_party").is_none(), "{e}");

        // trust_mark_type: all of.
        let (_, v) = collection(ta, &q(&[("trust_mark_type", TM_A)])).await;
        let mut want = vec![fed.leaf(0), fed.leaf(1)];
        want.sort();
        assert_eq!(ids_of(&v), want);
        let (_, v) = collection(
            ta,
            &q(&[("trust_mark_type", TM_A), ("trust_mark_type", TM_B)]),
        )
        .await;
        assert_eq!(ids_of(&v), [fed.leaf(0)]);

        // query: display and organization names, any language, any case.
        for (text, want) in [
            ("NEGOZIO", fed.leaf(0)),
            ("acme gmbh", fed.leaf(0)),
            ("accesso", fed.leaf(1)),
            ("beta org", fed.leaf(2)),
        ] {
            let (_, v) = collection(ta, &q(&[("query", text)])).await;
            assert_eq!(ids_of(&v), std::slice::from_ref(&want), "{text}");
        }

        // entity_claims: only what is asked (entity_id always).
        let (_, v) = collection(ta, &q(&[("entity_claims", "entity_types")])).await;
        for e in v["entities"].as_array().unwrap() {
            let mut keys: Vec<_> = e.as_object().unwrap().keys().cloned().collect();
            keys.sort();
            assert_eq!(keys, ["entity_id", "entity_types"], "{e}");
        }
        let (_, v) = collection(
            ta,
            &q(&[("entity_claims", "trust_marks"), ("trust_mark_type", TM_B)]),
        )
        .await;
        assert_eq!(v["entities"][0]["trust_marks"].as_array().unwrap().len(), 2);
        assert!(v["entities"][0].get("ui_infos").is_none());

        // ui_claims and language_tag.
        let (_, v) = collection(
            ta,
            &q(&[
                ("ui_claims", "display_name"),
                ("entity_type", "openid_provider"),
            ]),
        )
        .await;
        assert_eq!(
            v["entities"][0]["ui_infos"]["openid_provider"],
            json!({"display_name": "Login", "display_name#it": "Accesso"}),
            "description dropped: {v}"
        );
        let (_, v) = collection(ta, &q(&[("language_tag", "de"), ("query", "acme")])).await;
        assert_eq!(
            v["entities"][0]["ui_infos"]["openid_relying_party"],
            json!({"display_name": "Shop", "logo_uri": "https://shop.example/logo.png"}),
            "Italian variants dropped, untagged kept"
        );
        assert_eq!(
            v["entities"][0]["ui_infos"]["federation_entity"]["organization_name#de"],
            "Acme GmbH"
        );
        let (_, v) = collection(ta, &q(&[("language_tag", "it"), ("query", "acme")])).await;
        assert!(
            v["entities"][0]["ui_infos"]["federation_entity"]
                .get("organization_name#de")
                .is_none()
        );
        assert_eq!(
            v["entities"][0]["ui_infos"]["openid_relying_party"]["display_name#it"],
            "Negozio"
        );

        // Refusals.
        for (query, status, code) in [
            (
                q(&[("entity_claims", "metadata")]),
                400,
                "unsupported_claim",
            ),
            (q(&[("ui_claims", "client_name")]), 400, "unsupported_claim"),
            (q(&[("limit", "2")]), 400, "unsupported_parameter"),
            (
                q(&[("from_entity_id", &fed.leaf(0))]),
                400,
                "unsupported_parameter",
            ),
            (q(&[("from", &fed.leaf(0))]), 400, "unsupported_parameter"),
        ] {
            let (s, v) = collection(ta, &query).await;
            assert_eq!(
                (s, v["error"].as_str()),
                (status, Some(code)),
                "{query}: {v}"
            );
        }

        // On demand, an anchor that cannot be fetched is not a trust anchor to collect for.
        let (s, v) = collection(ta, &q(&[("trust_anchor", "http://127.0.0.1:1")])).await;
        assert_eq!(
            (s, v["error"].as_str()),
            (404, Some("invalid_trust_anchor")),
            "{v}"
        );

        // Only allowed anchors; paging on.
        let foreign = fed.leaf(2);
        set_collection(
            ta,
            json!({"allowed_trust_anchors": [ta.entity_id()], "pagination_limit": 2}),
        )
        .await;
        let (s, v) = collection(ta, &q(&[("trust_anchor", &foreign)])).await;
        assert_eq!(
            (s, v["error"].as_str()),
            (404, Some("invalid_trust_anchor")),
            "{v}"
        );
        let mut got = Vec::new();
        let mut next: Option<String> = None;
        loop {
            let query = match &next {
                Some(n) => q(&[("from", n)]),
                None => String::new(),
            };
            let (s, v) = collection(ta, &query).await;
            assert_eq!(s, 200, "{v}");
            let page = ids_of(&v);
            assert!(page.len() <= 2);
            got.extend(page);
            assert!(v.get("next_entity_id").is_none());
            match v["next"].as_str() {
                Some(n) => next = Some(n.to_owned()),
                None => break,
            }
        }
        assert_eq!(got, fed.ids());
        let (_, v) = collection(ta, &q(&[("limit", "1"), ("from_entity_id", &fed.ids()[1])])).await;
        assert_eq!(ids_of(&v), [fed.ids()[1].clone()]);
        assert_eq!(
            v["next_entity_id"],
            fed.ids()[2].as_str(),
            "draft 00 alias: {v}"
        );
        assert_eq!(v["next"], fed.ids()[2].as_str());
        let (s, v) = collection(ta, &q(&[("from", "https://nobody.example")])).await;
        assert_eq!(
            (s, v["error"].as_str()),
            (404, Some("page_not_found")),
            "{v}"
        );

        fed.stop().await;
    }
}

/// A loopback peer that counts the connections it gets and answers each `404`.
pub async fn counting_peer() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let id = format!("http://{}", listener.local_addr().unwrap());
    let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c = count.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                let _ = sock
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    )
                    .await;
            });
        }
    });
    (id, count)
}

/// Issue 31: a stranger's anchor is refused before anything is fetched; an anchor in the
/// trust anchor repository, or any anchor once the endpoint says `allow_any_trust_anchor`,
/// is walked.
#[tokio::test]
async fn a_strangers_anchor_is_refused_without_a_fetch_unless_configured() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        set_collection(&p, json!({})).await;
        let (stranger, fetched) = counting_peer().await;
        let query = q(&[("trust_anchor", &stranger)]);
        let (s, v) = collection(&p, &query).await;
        assert_eq!(
            (s, v["error"].as_str()),
            (404, Some("invalid_trust_anchor")),
            "{b:?} {v}"
        );
        let d = v["error_description"].as_str().unwrap();
        assert!(d.contains("trust anchor repository"), "{d}");
        assert_eq!(fetched.load(std::sync::atomic::Ordering::SeqCst), 0);

        // Opened explicitly: walked (the peer is asked, and answers nothing usable).
        set_collection(&p, json!({"allow_any_trust_anchor": true})).await;
        let (s, v) = collection(&p, &query).await;
        assert_eq!(s, 404, "{v}");
        assert!(fetched.load(std::sync::atomic::Ordering::SeqCst) > 0);

        // Closed again, the anchor in the repository: walked.
        let (repo_anchor, asked) = counting_peer().await;
        set_collection(&p, json!({})).await;
        let (s, v) = p
            .admin(
                Method::POST,
                "/trust-anchors",
                Some(json!({"entity_id": repo_anchor, "jwks": {"keys": [crate::support::jwk("k1", None)]}})),
            )
            .await;
        assert_eq!(s, 201, "{v}");
        let (s, v) = collection(&p, &q(&[("trust_anchor", &repo_anchor)])).await;
        assert_eq!(s, 404, "{v}");
        assert!(asked.load(std::sync::atomic::Ordering::SeqCst) > 0);
        p.stop().await;
    }
}

/// Issue 31: an Entity whose own configuration lists strangers (here: another federation's
/// listing) does not bring them into the anchor's collection: a member needs its lister's
/// Subordinate Statement.
#[tokio::test]
async fn members_nobody_vouched_for_are_not_collected() {
    for b in backends() {
        let mut dbs = Vec::new();
        for _ in 0..4 {
            dbs.push(TestDb::new(b).await);
        }
        let ta = Pharos::start(&dbs[0]).await;
        let rogue = Pharos::start(&dbs[1]).await;
        let other = Pharos::start(&dbs[2]).await;
        let stranger = Pharos::start(&dbs[3]).await;
        superior(&ta).await;
        add(&ta, &rogue).await;
        superior(&other).await;
        add(&other, &stranger).await;
        // The rogue member vouches through its own fetch endpoint, but publishes the other
        // federation's listing as its own.
        let fetch = json!({"type": "fetch", "path": "/fetch", "config": {}});
        ok(&rogue, Method::POST, "/federation-endpoints", fetch).await;
        let list =
            json!({"type": "list", "path": "/list", "url": other.main_url("/list"), "config": {}});
        ok(&rogue, Method::POST, "/federation-endpoints", list).await;
        let md = rogue.entity_configuration().await.claims["metadata"]["federation_entity"].clone();
        assert_eq!(
            md["federation_list_endpoint"],
            other.main_url("/list"),
            "{md}"
        );
        set_collection(&ta, json!({})).await;

        let (s, v) = collection(&ta, "").await;
        assert_eq!(s, 200, "{b:?} {v}");
        assert_eq!(
            ids_of(&v),
            [rogue.entity_id()],
            "{b:?}: the stranger is left out"
        );
        for p in [rogue, other, stranger] {
            p.stop().await;
        }
        ta.stop().await;
    }
}
