//! The subordinate events endpoint ("OpenID Federation Subordinate Events Endpoint 1.0",
//! draft 01), section by section, on every database: the signed answer verifies with the
//! published keys, its `typ` and media type, exactly the draft's members, the history an
//! administrator's changes make, nothing internal (actor, messages), errors, deletion and a
//! restart.

use crate::fetch_list::{NOW, add};
use crate::support::{Pharos, TestDb, backends, enable, enc, jwk};
use pharos_shared::jose::{self, Jwks};
use pharos_shared::time::ManualClock;
use reqwest::Method;
use serde_json::{Value, json};

/// GET the events of `sub`: status, `Content-Type`, body text.
async fn events_raw(p: &Pharos, sub: &str) -> (u16, String, String) {
    let r = p.get(&format!("/events?sub={}", enc(sub))).await;
    let status = r.status().as_u16();
    let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
    (status, ct, r.text().await.unwrap())
}

/// The verified claims of `sub`'s events statement.
async fn events(p: &Pharos, sub: &str) -> serde_json::Map<String, Value> {
    let (s, ct, body) = events_raw(p, sub).await;
    assert_eq!(s, 200, "{body}");
    // §2.3.1: "the content type `application/entity-events-statement+jwt`".
    assert_eq!(ct, "application/entity-events-statement+jwt");
    let ec = p.entity_configuration().await;
    let keys: Jwks = serde_json::from_value(ec.claims["jwks"].clone()).unwrap();
    let d = jose::verify(&body, &keys).expect("signed with a Federation Entity Key");
    // §2.3.1: "explicitly typed by setting the `typ` header parameter to
    // `entity-events-statement+jwt`".
    assert_eq!(d.header["typ"], "entity-events-statement+jwt");
    assert!(d.header["kid"].is_string());
    d.claims
}

fn list(c: &serde_json::Map<String, Value>) -> Vec<(i64, String)> {
    c["federation_registration_events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["iat"].as_i64().unwrap(),
                e["event"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn subordinate_events_follow_the_draft_section_by_section() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let clock = ManualClock::new(NOW);
        let p = Pharos::start_with(&db, |_| {}, clock.clone()).await;
        enable(&p, "subordinate_events", "/events", json!({})).await;
        // §2.1.1: "published in the `federation_entity` metadata, using the
        // `federation_subordinate_events_endpoint` parameter".
        let ec = p.entity_configuration().await;
        assert_eq!(
            ec.claims["metadata"]["federation_entity"]["federation_subordinate_events_endpoint"],
            format!("{}/events", p.entity_id()),
            "{b:?}"
        );

        let leaf = "https://leaf.example";
        let path = format!("/subordinates/{}", enc(leaf));
        add(&p, leaf, json!({})).await;
        clock.set(NOW + 10);
        let (s, _) = p
            .admin(
                Method::PUT,
                &format!("{path}/jwks"),
                Some(json!({"keys": [jwk("k2", None)]})),
            )
            .await;
        assert_eq!(s, 200);
        clock.set(NOW + 20);
        let (s, v) = p
            .admin(
                Method::PUT,
                &format!("{path}/metadata"),
                Some(json!({"openid_relying_party": {"client_name": "Leaf"}})),
            )
            .await;
        assert_eq!(s, 200, "{v}");
        clock.set(NOW + 30);
        let (s, _) = p
            .admin_raw(Method::PUT, &format!("{path}/status"), Some("inactive"))
            .await;
        assert_eq!(s, 200);
        clock.set(NOW + 40);
        let (s, _) = p
            .admin_raw(Method::PUT, &format!("{path}/status"), Some("active"))
            .await;
        assert_eq!(s, 200);
        clock.set(NOW + 50);
        let (s, _) = p
            .admin_raw(Method::PUT, &format!("{path}/status"), Some("blocked"))
            .await;
        assert_eq!(s, 200);

        // §2.3.2: `iss`, `sub`, `iat`, `exp` (OPTIONAL) and `federation_registration_events`,
        // each event `iat` and `event` (§2.3.2.1), types of §2.3.3.
        let c = events(&p, leaf).await;
        let mut names: Vec<&str> = c.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            ["exp", "federation_registration_events", "iat", "iss", "sub"]
        );
        assert_eq!(
            (&c["iss"], &c["sub"], &c["iat"]),
            (&json!(p.entity_id()), &json!(leaf), &json!(NOW + 50))
        );
        assert_eq!(
            list(&c),
            [
                (NOW, "registration".to_owned()),
                (NOW + 10, "jwks_update".to_owned()),
                (NOW + 20, "metadata_update".to_owned()),
                (NOW + 30, "suspension".to_owned()),
                (NOW + 40, "registration".to_owned()),
                (NOW + 50, "revocation".to_owned()),
            ],
            "{b:?}"
        );
        // Nothing internal leaves: no actor, no message.
        for e in c["federation_registration_events"].as_array().unwrap() {
            let mut keys: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
            keys.sort_unstable();
            assert_eq!(keys, ["event", "iat"], "{e}");
        }

        // Errors (§2.3.1: "use the errors defined in [OpenID.Federation]").
        let (s, ct, body) = events_raw(&p, "https://stranger.example").await;
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            (s, ct.as_str(), v["error"].as_str()),
            (404, "application/json", Some("not_found"))
        );
        add(&p, "https://pending.example", json!({"status": "pending"})).await;
        assert_eq!(events_raw(&p, "https://pending.example").await.0, 404);
        let r = p.get("/events").await;
        assert_eq!(r.status(), 400);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"], "invalid_request");
        assert!(v["error_description"].as_str().unwrap().contains("sub"));

        // A deleted subordinate: registered, then revoked when it was deleted; also after a
        // restart.
        clock.set(NOW + 60);
        let (s, _) = p.admin(Method::DELETE, &path, None).await;
        assert_eq!(s, 204);
        let gone = [
            (NOW, "registration".to_owned()),
            (NOW + 60, "revocation".to_owned()),
        ];
        assert_eq!(list(&events(&p, leaf).await), gone);
        let p = p.restart().await;
        assert_eq!(list(&events(&p, leaf).await), gone, "{b:?}");
        p.stop().await;
    }
}
