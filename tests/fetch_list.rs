//! The fetch and list endpoints, end to end: statements verify with our Entity Configuration's
//! keys, carry exactly the expected claims, and follow Admin API changes on the next request.

use crate::support::{Pharos, TestDb, backends, enc};
pub use crate::support::{enable, jwk};
use pharos_shared::jose::{self, Jwks};
use pharos_shared::time::ManualClock;
use reqwest::Method;
use serde_json::{Value, json};

pub const NOW: i64 = 1_900_000_000;

/// Adds a subordinate through the Admin API.
pub async fn add(p: &Pharos, entity: &str, body: Value) -> Value {
    let mut b = json!({"entity_id": entity, "jwks": {"keys": [jwk("k1", None)]}});
    b.as_object_mut()
        .unwrap()
        .extend(body.as_object().unwrap().clone());
    let (s, v) = p.admin(Method::POST, "/subordinates", Some(b)).await;
    assert_eq!(s, 201, "{v}");
    v
}

/// Fetches and verifies a statement with our Entity Configuration's keys.
pub async fn fetch(p: &Pharos, sub: &str) -> Value {
    let r = p.get(&format!("/fetch?sub={}", enc(sub))).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["content-type"],
        "application/entity-statement+jwt"
    );
    let token = r.text().await.unwrap();
    let ec = p.entity_configuration().await;
    let keys: Jwks = serde_json::from_value(ec.claims["jwks"].clone()).unwrap();
    let d = jose::verify(&token, &keys).unwrap();
    assert_eq!(d.header["typ"], "entity-statement+jwt");
    Value::Object(d.claims)
}

pub async fn status_of(p: &Pharos, path: &str) -> (u16, Value) {
    let r = p.get(path).await;
    let s = r.status().as_u16();
    (s, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn fetch_issues_verifiable_statements_with_exactly_the_expected_claims() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let clock = ManualClock::new(NOW);
        let p = Pharos::start_with(&db, |_| {}, clock.clone()).await;
        enable(&p, "fetch", "/fetch", json!({"statement_lifetime": 3600})).await;
        let leaf = "https://leaf.example.org";
        let keys = json!({"keys": [jwk("now", Some(NOW)), jwk("past", Some(NOW - 1)),
            jwk("none", None), jwk("zero", Some(0)), jwk("later", Some(NOW + 600))]});
        add(&p, leaf, json!({"jwks": keys})).await;

        let c = fetch(&p, leaf).await;
        let mut names: Vec<&str> = c.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        names.sort();
        assert_eq!(
            names,
            ["exp", "iat", "iss", "jwks", "source_endpoint", "sub"],
            "{b:?}"
        );
        assert_eq!(c["iss"], p.entity_id());
        assert_eq!(c["sub"], leaf);
        assert_eq!(c["iat"], NOW);
        assert_eq!(c["source_endpoint"], format!("{}/fetch", p.entity_id()));
        let kids: Vec<&str> = c["jwks"]["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kid"].as_str().unwrap())
            .collect();
        assert_eq!(kids, ["now", "none", "zero", "later"]);
        assert_eq!(c["exp"], NOW + 600, "capped at the latest key exp");
        // The stored set keeps every key.
        let (_, stored) = p
            .admin(
                Method::GET,
                &format!("/subordinates/{}/jwks", enc(leaf)),
                None,
            )
            .await;
        assert_eq!(stored["keys"].as_array().unwrap().len(), 5);

        // Without key expiry the endpoint's lifetime applies; the general setting overrides it.
        let keys = json!({"keys": [jwk("none", None)]});
        let (s, _) = p
            .admin(
                Method::PUT,
                &format!("/subordinates/{}/jwks", enc(leaf)),
                Some(keys),
            )
            .await;
        assert_eq!(s, 200);
        assert_eq!(fetch(&p, leaf).await["exp"], NOW + 3600);
        let (s, _) = p
            .admin_raw(Method::PUT, "/subordinates/lifetime", Some("120"))
            .await;
        assert_eq!(s, 200);
        assert_eq!(fetch(&p, leaf).await["exp"], NOW + 120);

        // All keys expired: still issued, with an empty jwks.
        let keys = json!({"keys": [jwk("old", Some(NOW - 10))]});
        p.admin(
            Method::PUT,
            &format!("/subordinates/{}/jwks", enc(leaf)),
            Some(keys),
        )
        .await;
        let c = fetch(&p, leaf).await;
        assert_eq!(c["jwks"], json!({"keys": []}));
        assert_eq!(c["exp"], NOW + 120);

        // A cached statement drops a key once time passes its exp.
        let keys = json!({"keys": [jwk("a", Some(NOW + 5)), jwk("b", None)]});
        p.admin(
            Method::PUT,
            &format!("/subordinates/{}/jwks", enc(leaf)),
            Some(keys),
        )
        .await;
        assert_eq!(
            fetch(&p, leaf).await["jwks"]["keys"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        clock.advance(5);
        assert_eq!(
            fetch(&p, leaf).await["jwks"]["keys"]
                .as_array()
                .unwrap()
                .len(),
            2,
            "exp == now kept"
        );
        clock.advance(1);
        assert_eq!(
            fetch(&p, leaf).await["jwks"]["keys"]
                .as_array()
                .unwrap()
                .len(),
            1,
            "exp < now dropped"
        );
        p.stop().await;
    }
}

#[tokio::test]
async fn fetch_errors_and_status_changes_take_effect_at_once() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        enable(&p, "fetch", "/fetch", json!({})).await;
        let leaf = "https://leaf.example.org";
        add(&p, leaf, json!({})).await;
        assert_eq!(fetch(&p, leaf).await["sub"], leaf);

        let (s, e) = status_of(&p, "/fetch").await;
        assert_eq!(
            (s, e["error"].as_str()),
            (400, Some("invalid_request")),
            "{b:?}"
        );
        let (s, e) = status_of(&p, &format!("/fetch?sub={}", enc(p.entity_id()))).await;
        assert_eq!((s, e["error"].as_str()), (400, Some("invalid_request")));
        let (s, e) = status_of(&p, "/fetch?sub=https%3A%2F%2Funknown.example").await;
        assert_eq!((s, e["error"].as_str()), (404, Some("not_found")));

        for status in ["pending", "blocked", "inactive"] {
            let (s, _) = p
                .admin_raw(
                    Method::PUT,
                    &format!("/subordinates/{}/status", enc(leaf)),
                    Some(status),
                )
                .await;
            assert_eq!(s, 200);
            let (s, e) = status_of(&p, &format!("/fetch?sub={}", enc(leaf))).await;
            assert_eq!(
                (s, e["error"].as_str()),
                (404, Some("not_found")),
                "{status}"
            );
        }
        p.admin_raw(
            Method::PUT,
            &format!("/subordinates/{}/status", enc(leaf)),
            Some("active"),
        )
        .await;
        assert_eq!(fetch(&p, leaf).await["sub"], leaf);
        p.stop().await;
    }
}

#[tokio::test]
async fn statements_follow_general_settings_and_per_subordinate_overrides() {
    for b in backends() {
        let db = TestDb::new(b).await;
        // `x_regex` is a non-standard operator the operator accepts (Pharos does not implement
        // it, so it cannot be critical: which operators a statement lists as critical is
        // `subordinate_statement_tests::metadata_policy_crit_lists_only_used_operators`).
        let p = Pharos::start_with(
            &db,
            |s| s.federation.accept.policy_operators = vec!["x_regex".into()],
            std::sync::Arc::new(pharos_shared::time::SystemClock),
        )
        .await;
        enable(&p, "fetch", "/fetch", json!({})).await;
        let (a, z) = ("https://a.example.org", "https://z.example.org");
        add(&p, a, json!({})).await;
        add(&p, z, json!({})).await;
        let general = json!({"openid_relying_party": {"contacts": {"add": ["ops@ta.example"]},
            "scope": {"x_regex": "^openid"}}});
        let (s, _) = p
            .admin(
                Method::PUT,
                "/subordinates/metadata-policies",
                Some(general.clone()),
            )
            .await;
        assert_eq!(s, 200);
        let (s, _) = p
            .admin(
                Method::PUT,
                "/subordinates/metadata-policy-crit",
                Some(json!(["x_regex", "x_unused"])),
            )
            .await;
        assert_eq!(
            s, 400,
            "an operator Pharos does not implement is never critical"
        );
        p.admin(
            Method::PUT,
            "/subordinates/constraints",
            Some(json!({"max_path_length": 2})),
        )
        .await;
        p.admin(
            Method::POST,
            "/subordinates/additional-claims",
            Some(json!({"claim": "x_fed", "value": "g", "crit": true})),
        )
        .await;
        // a gets its own policy, constraints and claims; z uses the general ones.
        let own = json!({"openid_relying_party": {"contacts": {"add": ["a@a.example"]}}});
        let (s, _) = p
            .admin(
                Method::PUT,
                &format!("/subordinates/{}/metadata-policies", enc(a)),
                Some(own.clone()),
            )
            .await;
        assert_eq!(s, 200);
        p.admin(
            Method::PUT,
            &format!("/subordinates/{}/constraints/max-path-length", enc(a)),
            Some(json!(0)),
        )
        .await;
        p.admin(
            Method::POST,
            &format!("/subordinates/{}/additional-claims", enc(a)),
            Some(json!({"claim": "x_own", "value": 1})),
        )
        .await;
        p.admin(
            Method::PUT,
            &format!(
                "/subordinates/{}/metadata/openid_relying_party/client_name",
                enc(a)
            ),
            Some(json!("A")),
        )
        .await;

        let ca = fetch(&p, a).await;
        assert_eq!(ca["metadata_policy"], own, "{b:?}");
        assert!(
            ca.get("metadata_policy_crit").is_none(),
            "no critical operator used"
        );
        assert_eq!(ca["constraints"], json!({"max_path_length": 0}));
        assert_eq!(ca["x_own"], 1);
        assert!(ca.get("x_fed").is_none() && ca.get("crit").is_none());
        assert_eq!(
            ca["metadata"],
            json!({"openid_relying_party": {"client_name": "A"}})
        );
        let cz = fetch(&p, z).await;
        assert_eq!(cz["metadata_policy"], general);
        assert!(cz.get("metadata_policy_crit").is_none());
        assert_eq!(cz["constraints"], json!({"max_path_length": 2}));
        assert_eq!(
            (cz["x_fed"].clone(), cz["crit"].clone()),
            (json!("g"), json!(["x_fed"]))
        );
        assert!(cz.get("metadata").is_none());

        // A general change reaches every subordinate without an override on the next request.
        p.admin(
            Method::PUT,
            "/subordinates/constraints/max-path-length",
            Some(json!(5)),
        )
        .await;
        assert_eq!(
            fetch(&p, z).await["constraints"],
            json!({"max_path_length": 5})
        );
        assert_eq!(
            fetch(&p, a).await["constraints"],
            json!({"max_path_length": 0})
        );
        // The unsigned preview agrees with the signed statement (minus source_endpoint).
        let (s, preview) = p
            .admin(
                Method::GET,
                &format!("/subordinates/{}/statement", enc(z)),
                None,
            )
            .await;
        assert_eq!(s, 200);
        assert!(preview.get("source_endpoint").is_none());
        assert_eq!(preview["metadata_policy"], general);
        p.stop().await;
    }
}

#[tokio::test]
async fn fetch_keeps_the_often_fetched_statements_when_the_budget_is_full() {
    use crate::stats_jobs::{add_scraper, scrape};
    const BUDGET: u64 = 4_500;
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let mut p = Pharos::start_with(
        &db,
        |s| s.cache.statements_max_bytes = BUDGET,
        std::sync::Arc::new(pharos_shared::time::SystemClock),
    )
    .await;
    add_scraper(&mut p).await;
    enable(&p, "fetch", "/fetch", json!({})).await;
    let hot = "https://hot.example.org";
    add(&p, hot, json!({})).await;
    let cold: Vec<String> = (0..25)
        .map(|i| format!("https://cold-{i:02}.example.org"))
        .collect();
    for c in &cold {
        add(&p, c, json!({})).await;
    }
    let get = async |sub: &str| {
        let r = p.get(&format!("/fetch?sub={}", enc(sub))).await;
        assert_eq!(r.status(), 200, "{sub}");
        r.text().await.unwrap()
    };
    // How many statements the budget holds.
    get(&cold[0]).await;
    let one = scrape(&p).await["pharos_statement_cache_bytes{}"];
    let fit = (BUDGET as f64 / one).floor() as usize;
    assert!((3..10).contains(&fit), "{one} bytes a statement");
    // The budget fills (and overflows) before the hot subject is first asked for: first come,
    // first kept would never keep it.
    for c in &cold[1..fit + 2] {
        get(c).await;
    }
    let first = get(hot).await;
    for c in &cold[fit + 2..] {
        get(c).await;
        assert_eq!(get(hot).await, first, "the hot statement was signed again");
    }
    let m = scrape(&p).await;
    let hot_fetches = 1 + cold.len() - (fit + 2);
    assert_eq!(
        m["pharos_cache_requests_total{cache=fetch,result=miss}"],
        (cold.len() + 1) as f64,
        "every subject signed once: {m:?}"
    );
    assert_eq!(
        m["pharos_cache_requests_total{cache=fetch,result=hit}"],
        (hot_fetches - 1) as f64,
        "{m:?}"
    );
    // Every subject kept once, `fit` (or one more: the hot statement is a little shorter)
    // still held.
    let evicted = m["pharos_statement_cache_evictions_total{}"];
    assert!(
        ((cold.len() - fit) as f64..=(cold.len() + 1 - fit) as f64).contains(&evicted),
        "{m:?}"
    );
    assert!(m["pharos_statement_cache_bytes{}"] <= BUDGET as f64);
    p.stop().await;
}
