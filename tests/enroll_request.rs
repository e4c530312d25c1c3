//! The enroll_request endpoint (issue 15, acceptance 3): a request stores the entity pending;
//! an administrator approves it (listed and fetchable afterwards) or declines it (blocked or
//! deleted: not listed, fetch 404), and the history names who did each step.

use crate::client_auth::{assertion, call, claims, each, signer};
use crate::enroll::{ask, history, names_superior, relying_party, rows, set_status};
use crate::fetch_list::{enable, fetch, status_of};
use crate::support::{Pharos, TestDb, backends, enc};
use reqwest::Method;
use serde_json::json;

/// The list endpoint's entity identifiers.
async fn listed(sup: &Pharos) -> Vec<String> {
    let (s, v) = status_of(sup, "/list").await;
    assert_eq!(s, 200, "{v}");
    serde_json::from_value(v).unwrap()
}

#[tokio::test]
async fn requests_wait_for_an_administrator_who_approves_or_declines() {
    for b in backends() {
        let (db_s, db_a, db_d) = (
            TestDb::new(b).await,
            TestDb::new(b).await,
            TestDb::new(b).await,
        );
        let mut sup = Pharos::start(&db_s).await;
        let (approved, declined) = (Pharos::start(&db_a).await, Pharos::start(&db_d).await);
        relying_party(&approved).await;
        for e in [&approved, &declined] {
            names_superior(e, &sup).await;
        }
        enable(&sup, "fetch", "/fetch", json!({})).await;
        enable(&sup, "list", "/list", json!({})).await;
        enable(&sup, "enroll_request", "/enroll-request", json!({})).await;
        let user = json!({"username": "alice", "password": "correct horse"});
        let (s, v) = sup.admin(Method::POST, "/users", Some(user)).await;
        assert_eq!(s, 201, "{v}");
        sup.login("alice", "correct horse");
        let (a_id, d_id) = (approved.entity_id(), declined.entity_id());
        let fetch_path = |id: &str| format!("/fetch?sub={}", enc(id));

        // Requested: pending with the entity's own keys and types; neither listed nor served.
        for id in [a_id, d_id] {
            let a = ask(&sup, "/enroll-request", id, &[]).await;
            assert_eq!((a.status, a.body.as_str()), (202, ""), "{b:?}");
        }
        let (s, rec) = sup
            .admin(Method::GET, &format!("/subordinates/{}", enc(a_id)), None)
            .await;
        assert_eq!(s, 200);
        assert_eq!(rec["status"], "pending");
        assert_eq!(
            rec["jwks"]["keys"],
            approved.entity_configuration().await.claims["jwks"]["keys"]
        );
        assert_eq!(
            rec["registered_entity_types"],
            json!(["federation_entity", "openid_relying_party"])
        );
        let mut expected = vec![
            (a_id.to_owned(), "pending".to_owned()),
            (d_id.to_owned(), "pending".to_owned()),
        ];
        expected.sort();
        assert_eq!(rows(&db_s).await, expected);
        assert!(listed(&sup).await.is_empty());
        assert_eq!(status_of(&sup, &fetch_path(a_id)).await.0, 404);
        // Asking again changes nothing.
        assert_eq!(ask(&sup, "/enroll-request", a_id, &[]).await.status, 202);

        // Approved: listed and fetchable; a further request is answered 204.
        set_status(&sup, a_id, "active").await;
        assert_eq!(listed(&sup).await, [a_id]);
        let st = fetch(&sup, a_id).await;
        assert_eq!(st["sub"], a_id);
        assert_eq!(ask(&sup, "/enroll-request", a_id, &[]).await.status, 204);
        let steps = history(&sup, a_id).await;
        assert_eq!(
            steps,
            [
                (
                    "created".into(),
                    "enroll_request endpoint".into(),
                    "pending".into()
                ),
                ("status_updated".into(), "alice".into(), "active".into()),
            ],
            "{b:?}"
        );

        // Declined by blocking: not listed, not served, and refused when asking again.
        set_status(&sup, d_id, "blocked").await;
        assert_eq!(listed(&sup).await, [a_id]);
        assert_eq!(status_of(&sup, &fetch_path(d_id)).await.0, 404);
        let again = ask(&sup, "/enroll-request", d_id, &[]).await;
        assert_eq!(again.error(), (403, "invalid_request".into()));
        let steps = history(&sup, d_id).await;
        assert_eq!(steps.len(), 2, "{steps:?}");
        assert_eq!(
            steps[1],
            ("status_updated".into(), "alice".into(), "blocked".into())
        );
        // Declined by deleting: gone, still not served; a new request starts over.
        let (s, _) = sup
            .admin(
                Method::DELETE,
                &format!("/subordinates/{}", enc(d_id)),
                None,
            )
            .await;
        assert_eq!(s, 204);
        assert_eq!(status_of(&sup, &fetch_path(d_id)).await.0, 404);
        assert_eq!(rows(&db_s).await, [(a_id.to_owned(), "active".to_owned())]);
        assert_eq!(ask(&sup, "/enroll-request", d_id, &[]).await.status, 202);
    }
}

#[tokio::test]
async fn an_authenticated_client_is_the_requester_in_the_history() {
    each(async |f, server| {
        let ta = f.ta.entity_id().to_owned();
        names_superior(&f.client, server).await;
        for (kind, path) in [("enroll_request", "/enroll-request"), ("enroll", "/enroll")] {
            let body = json!({"type": kind, "path": path, "auth_enabled": true,
                "auth_trust_anchors": [ta], "config": {}});
            let (s, v) = server
                .admin(Method::POST, "/federation-endpoints", Some(body))
                .await;
            assert_eq!(s, 201, "{v}");
        }
        let me = f.client.entity_id();
        let key = signer(&f.client);
        let auth = || assertion(&*key, &claims(me, server.entity_id(), |_| {}));
        let (s, body) = call(server, "/enroll-request", &auth(), &[("sub", me)]).await;
        assert_eq!((s, body.as_str()), (202, ""));
        set_status(server, me, "active").await;
        let (s, body) = call(server, "/enroll", &auth(), &[("sub", me)]).await;
        assert_eq!(s, 201, "{body}");
        let steps = history(server, me).await;
        assert_eq!(
            steps,
            [
                ("created".into(), me.to_owned(), "pending".into()),
                ("status_updated".into(), String::new(), "active".into()),
            ]
        );
        // Without an assertion the endpoint does not answer.
        let (s, _) = call(server, "/enroll", "", &[("sub", me)]).await;
        assert_eq!(s, 400);
    })
    .await;
}
