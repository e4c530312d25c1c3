//! The extended subordinate listing endpoint ("OpenID Federation Extended Subordinate Listing
//! 1.0", Implementer's Draft 1), section by section, on every database: what a client sees
//! (statuses, media types, member names, signatures that verify with the published keys),
//! paging across changes, time filters with departures, and a restart.

use crate::fetch_list::{NOW, add};
use crate::support::{Pharos, TestDb, backends, enable, enc};
use pharos_shared::jose::{self, Jwks};
use pharos_shared::time::ManualClock;
use reqwest::Method;
use serde_json::{Value, json};

/// GET `path`: status, `Content-Type`, body.
async fn get(p: &Pharos, path: &str) -> (u16, String, Value) {
    let r = p.get(path).await;
    let status = r.status().as_u16();
    let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
    (status, ct, r.json().await.unwrap_or(Value::Null))
}

/// The entries' `id`s of every page of `query`, following `next`.
async fn walk(p: &Pharos, query: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let from = next
            .map(|n| format!("&from={}", enc(&n)))
            .unwrap_or_default();
        let (s, _, v) = get(p, &format!("/list_extended?{query}{from}")).await;
        assert_eq!(s, 200, "{v}");
        for e in v["immediate_subordinate_entities"].as_array().unwrap() {
            ids.push(e["id"].as_str().unwrap().to_owned());
        }
        match v.get("next").and_then(Value::as_str) {
            Some(n) => next = Some(n.to_owned()),
            None => return ids,
        }
    }
}

fn names(v: &Value) -> Vec<&str> {
    let mut n: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    n.sort_unstable();
    n
}

#[tokio::test]
async fn the_extended_listing_follows_the_draft_section_by_section() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let clock = ManualClock::new(NOW);
        let p = Pharos::start_with(&db, |_| {}, clock.clone()).await;
        enable(&p, "fetch", "/fetch", json!({})).await;
        enable(
            &p,
            "extended_list",
            "/list_extended",
            json!({"max_page_size": 2}),
        )
        .await;

        // §4.1: "published in the `federation_entity` metadata, using the
        // `federation_extended_list_endpoint` parameter".
        let ec = p.entity_configuration().await;
        assert_eq!(
            ec.claims["metadata"]["federation_entity"]["federation_extended_list_endpoint"],
            format!("{}/list_extended", p.entity_id()),
            "{b:?}"
        );
        let keys: Jwks = serde_json::from_value(ec.claims["jwks"].clone()).unwrap();

        for (i, (id, types)) in [
            ("https://a.example", "openid_relying_party"),
            ("https://b.example", "openid_provider"),
            ("https://c.example", "openid_relying_party"),
        ]
        .into_iter()
        .enumerate()
        {
            clock.set(NOW + 10 * i64::try_from(i).unwrap());
            add(&p, id, json!({"registered_entity_types": [types]})).await;
        }
        clock.set(NOW + 100);

        // §3.3: "A successful response MUST use an HTTP status code 200 with the content type
        // `application/json`"; `immediate_subordinate_entities` REQUIRED, `next` "mandatory
        // when additional results are available".
        let (s, ct, v) = get(&p, "/list_extended").await;
        assert_eq!((s, ct.as_str()), (200, "application/json"), "{v}");
        assert_eq!(names(&v), ["immediate_subordinate_entities", "next"]);
        let first = v["immediate_subordinate_entities"].as_array().unwrap();
        assert_eq!(first.len(), 2, "max_page_size caps the page");
        // Table 4: `id` REQUIRED; without `claims` the entry carries its
        // `subordinate_statement`, "as issued by the Entity that exposes" the endpoint.
        assert_eq!(names(&first[0]), ["id", "subordinate_statement"]);
        assert_eq!(first[0]["id"], "https://a.example");
        let stmt = jose::verify(first[0]["subordinate_statement"].as_str().unwrap(), &keys)
            .expect("the statement verifies with the published keys");
        assert_eq!(stmt.header["typ"], "entity-statement+jwt");
        assert_eq!(stmt.claims["sub"], "https://a.example");
        assert_eq!(stmt.claims["iss"], p.entity_id());
        // The same statement the fetch endpoint serves.
        let fetched = p
            .get("/fetch?sub=https%3A%2F%2Fa.example")
            .await
            .text()
            .await;
        assert_eq!(first[0]["subordinate_statement"], fetched.unwrap());

        // §3.2 `from`: "the subset of the overall ordered response starting from the entry
        // represented by this opaque index inclusive".
        assert_eq!(
            walk(&p, "").await,
            [
                "https://a.example",
                "https://b.example",
                "https://c.example"
            ]
        );
        assert_eq!(walk(&p, "limit=1").await.len(), 3);
        // `limit`: "SHOULD NOT be greater than the value of this parameter"; above the
        // server's upper limit the upper limit holds.
        let (_, _, v) = get(&p, "/list_extended?limit=1").await;
        assert_eq!(
            v["immediate_subordinate_entities"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        let (_, _, v) = get(&p, "/list_extended?limit=50").await;
        assert_eq!(
            v["immediate_subordinate_entities"]
                .as_array()
                .unwrap()
                .len(),
            2
        );

        // Base list filters (§3.2: "accepts all parameters defined in the
        // `federation_list_endpoint`").
        assert_eq!(
            walk(&p, "entity_type=openid_relying_party").await,
            ["https://a.example", "https://c.example"]
        );
        assert!(walk(&p, "trust_marked=true").await.is_empty());

        // `claims`: "each returned Immediate Subordinate Entity MUST include the requested
        // claims for a Subordinate Statement, if available"; `subordinate_statement` "MUST NOT
        // be returned if the `claims` parameter is present but the array does not contain"
        // it.
        let (_, _, v) = get(&p, "/list_extended?claims=jwks,sub,no_such_claim&limit=1").await;
        let e = &v["immediate_subordinate_entities"][0];
        assert_eq!(names(e), ["id", "jwks", "sub"]);
        assert_eq!(e["jwks"], stmt.claims["jwks"]);
        // `audit_timestamps=true`: "the response MUST include the above mentioned audit
        // timestamp attributes".
        let (_, _, v) = get(&p, "/list_extended?audit_timestamps=true&claims=sub").await;
        let e = &v["immediate_subordinate_entities"][1];
        assert_eq!(names(e), ["id", "registered", "sub", "updated"]);
        assert_eq!(
            (e["registered"].as_i64(), e["updated"].as_i64()),
            (Some(NOW + 10), Some(NOW + 10))
        );

        // Paging across changes (§3.1): pages already read stay as they were, changes ahead
        // of the cursor show.
        let (_, _, page1) = get(&p, "/list_extended?claims=sub").await;
        let next = page1["next"].as_str().unwrap().to_owned();
        add(&p, "https://bb.example", json!({})).await;
        let (s, _, page2) = get(
            &p,
            &format!("/list_extended?claims=sub&from={}", enc(&next)),
        )
        .await;
        assert_eq!(s, 200);
        let ids: Vec<&str> = page2["immediate_subordinate_entities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["https://bb.example", "https://c.example"]);

        // Time filters (§3.2 `updated_after`/`updated_before`, "at or after"/"at or before"),
        // with departures: a deleted and a blocked subordinate are reported with `revoked`.
        clock.set(NOW + 200);
        let (s, _) = p
            .admin(
                Method::DELETE,
                "/subordinates/https%3A%2F%2Fa.example",
                None,
            )
            .await;
        assert_eq!(s, 204);
        clock.set(NOW + 210);
        let (s, _) = p
            .admin_raw(
                Method::PUT,
                "/subordinates/https%3A%2F%2Fb.example/status",
                Some("blocked"),
            )
            .await;
        assert_eq!(s, 200);
        clock.set(NOW + 220);
        let (s, _) = p
            .admin(
                Method::PUT,
                "/subordinates/https%3A%2F%2Fc.example/jwks",
                Some(json!({"keys": [crate::support::jwk("k2", None)]})),
            )
            .await;
        assert_eq!(s, 200);
        let (s, _, v) = get(
            &p,
            &format!("/list_extended?updated_after={}&claims=sub", NOW + 200),
        )
        .await;
        assert_eq!(s, 200, "{v}");
        let entries = v["immediate_subordinate_entities"].as_array().unwrap();
        assert_eq!(entries.len(), 2, "{v}");
        assert_eq!(
            entries[0],
            json!({"id": "https://a.example", "registered": NOW, "revoked": NOW + 200})
        );
        assert_eq!(
            entries[1],
            json!({"id": "https://b.example", "registered": NOW + 10, "revoked": NOW + 210})
        );
        let rest = walk(&p, &format!("updated_after={}&claims=sub", NOW + 200)).await;
        assert_eq!(
            rest,
            [
                "https://a.example",
                "https://b.example",
                "https://c.example"
            ]
        );
        assert_eq!(
            walk(
                &p,
                &format!("updated_after={}&updated_before={}", NOW + 205, NOW + 215)
            )
            .await,
            ["https://b.example"]
        );
        // Registering the identifier again ends its departure.
        add(&p, "https://a.example", json!({})).await;
        let back = walk(&p, &format!("updated_after={}&claims=sub", NOW + 200)).await;
        assert_eq!(
            back,
            [
                "https://b.example",
                "https://a.example",
                "https://c.example"
            ]
        );

        // A change of the general statement settings changes every statement: every active
        // subordinate counts as updated then.
        clock.set(NOW + 300);
        let (s, _) = p
            .admin_raw(Method::PUT, "/subordinates/lifetime", Some("3600"))
            .await;
        assert_eq!(s, 200);
        let (_, _, v) = get(
            &p,
            &format!("/list_extended?updated_after={}&claims=sub", NOW + 300),
        )
        .await;
        let updated: Vec<i64> = v["immediate_subordinate_entities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["updated"].as_i64().unwrap())
            .collect();
        assert_eq!(updated, [NOW + 300, NOW + 300], "{v}");
        assert_eq!(
            walk(&p, &format!("updated_after={}", NOW + 300)).await,
            [
                "https://bb.example",
                "https://a.example",
                "https://c.example"
            ],
            "every active subordinate (in the order of their own changes), none of the departed"
        );

        // Errors: §3.2 "If the provided value is unknown to the server, the HTTP status code
        // 404 MUST be used with the content type `application/json` with the error code
        // `page_not_found`"; malformed values are `invalid_request`, naming the parameter.
        let (s, ct, v) = get(&p, "/list_extended?from=not-a-cursor-we-made").await;
        assert_eq!(
            (s, ct.as_str(), v["error"].as_str()),
            (404, "application/json", Some("page_not_found"))
        );
        assert!(v["error_description"].is_string());
        for (q, named) in [
            ("limit=0", "limit"),
            ("updated_after=tomorrow", "updated_after"),
            ("audit_timestamps=maybe", "audit_timestamps"),
            ("trust_marked=yes", "trust_marked"),
        ] {
            let (s, ct, v) = get(&p, &format!("/list_extended?{q}")).await;
            assert_eq!(
                (s, ct.as_str(), v["error"].as_str()),
                (400, "application/json", Some("invalid_request")),
                "{q}"
            );
            assert!(
                v["error_description"].as_str().unwrap().contains(named),
                "{q}: {v}"
            );
        }

        // Departures and times survive a restart (they are stored, not remembered).
        let p = p.restart().await;
        let again = walk(
            &p,
            &format!("updated_after={}&updated_before={}", NOW + 205, NOW + 215),
        )
        .await;
        assert_eq!(again, ["https://b.example"], "{b:?}");
        let (_, _, v) = get(
            &p,
            &format!(
                "/list_extended?updated_after={}&updated_before={}&claims=sub",
                NOW + 195,
                NOW + 205
            ),
        )
        .await;
        assert_eq!(
            v["immediate_subordinate_entities"],
            json!([]),
            "a re-registered id is no longer a departure"
        );
        p.stop().await;
    }
}

#[tokio::test]
async fn max_page_size_is_validated() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let p = Pharos::start(&db).await;
    for bad in [
        json!({"max_page_size": 0}),
        json!({"max_page_size": 10001}),
        json!({"page": 5}),
    ] {
        let body = json!({"type": "extended_list", "path": "/x", "config": bad});
        let (s, v) = p
            .admin(Method::POST, "/federation-endpoints", Some(body))
            .await;
        assert_eq!(s, 400, "{v}");
    }
    let body = json!({"type": "extended_list", "path": "/x", "config": {"max_page_size": 10000}});
    let (s, v) = p
        .admin(Method::POST, "/federation-endpoints", Some(body))
        .await;
    assert_eq!(s, 201, "{v}");
    p.stop().await;
}
