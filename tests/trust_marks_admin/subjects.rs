//! Subjects of a spec: status, extra claims, deletion, and the history with its actors.

use pharos_shared::subordinate::SubordinateStatus;
use reqwest::Method;
use serde_json::json;

use super::*;
use crate::support::{backends, enc};

#[tokio::test]
async fn subjects_status_claims_and_history_with_actors() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = start(&db).await;
        let (s, spec) = as_actor(
            &p,
            Method::POST,
            "/trust-marks/issuance-spec",
            &json!({"trust_mark_type": T, "lifetime": 3600}).to_string(),
            "root",
        )
        .await;
        assert_eq!(s, 201, "{spec}");
        let subjects = format!("/trust-marks/issuance-spec/{}/subjects", spec["id"]);
        let (s, a) = as_actor(
            &p,
            Method::POST,
            &subjects,
            &json!({"entity_id": LEAF}).to_string(),
            "alice",
        )
        .await;
        assert_eq!(
            (s, a["status"].as_str()),
            (201, Some("active")),
            "{b:?} {a}"
        );
        let (s, _) = p
            .admin(
                Method::POST,
                &subjects,
                Some(json!({"entity_id": LEAF2, "status": "pending"})),
            )
            .await;
        assert_eq!(s, 201);
        for (body, want) in [
            (json!({"entity_id": LEAF}), 409),
            (json!({"status": "active"}), 400),
            (
                json!({"entity_id": "https://x.example", "status": "sleeping"}),
                400,
            ),
            (
                json!({"entity_id": "https://x.example", "additional_claims": {"sub": "y"}}),
                400,
            ),
        ] {
            let (s, v) = p.admin(Method::POST, &subjects, Some(body.clone())).await;
            assert_eq!(
                (s, v["error"].as_str()),
                (want, Some("invalid_request")),
                "{body} → {v}"
            );
        }
        let (_, all) = p.admin(Method::GET, &subjects, None).await;
        assert_eq!(all.as_array().unwrap().len(), 2, "nothing stored: {all}");
        let (_, pending) = p
            .admin(Method::GET, &format!("{subjects}?status=pending"), None)
            .await;
        assert_eq!(pending[0]["entity_id"], LEAF2);
        assert_eq!(pending.as_array().unwrap().len(), 1);
        assert_eq!(
            p.admin(Method::GET, &format!("{subjects}?status=bogus"), None)
                .await
                .0,
            400
        );
        let one = format!("{subjects}/{}", enc(LEAF));
        let (_, by_id) = p
            .admin(Method::GET, &format!("{subjects}/{}", a["id"]), None)
            .await;
        assert_eq!(p.admin(Method::GET, &one, None).await.1, by_id);

        // Extra claims: {} when none, PUT replaces, POST merges, protected claims refused.
        let claims = format!("{one}/additional-claims");
        assert_eq!(p.admin(Method::GET, &claims, None).await.1, json!({}));
        let (s, v) = as_actor(&p, Method::PUT, &claims, r#"{"level":"gold"}"#, "alice").await;
        assert_eq!((s, v), (200, json!({"level": "gold"})));
        let (s, v) = as_actor(&p, Method::POST, &claims, r#"{"x":1}"#, "alice").await;
        assert_eq!((s, v), (200, json!({"level": "gold", "x": 1})));
        assert_eq!(
            p.admin(Method::PUT, &claims, Some(json!({"jti": "j"})))
                .await
                .0,
            400
        );
        assert_eq!(
            p.admin(Method::GET, &claims, None).await.1,
            json!({"level": "gold", "x": 1})
        );

        // Status: raw text or a JSON string; the snapshot follows.
        let status = format!("{one}/status");
        let (s, v) = as_actor(&p, Method::PUT, &status, "blocked", "bob").await;
        assert_eq!((s, v["status"].as_str()), (200, Some("blocked")));
        let snap = p.app.as_ref().unwrap().control.snapshot();
        let sub = &snap.trust_marks.subjects[&(T.to_string(), LEAF.to_string())];
        assert_eq!(sub.status, SubordinateStatus::Blocked);
        assert_eq!(sub.additional_claims["level"], "gold");
        let (s, v) = as_actor(&p, Method::PUT, &status, "\"active\"", "carol").await;
        assert_eq!((s, v["status"].as_str()), (200, Some("active")));
        assert_eq!(
            p.admin_raw(Method::PUT, &status, Some("sleeping")).await.0,
            400
        );
        let (s, v) = p
            .admin(
                Method::PUT,
                &format!("{subjects}/{}", enc(LEAF2)),
                Some(json!({"status": "active", "description": "ok"})),
            )
            .await;
        assert_eq!(
            (s, v["status"].as_str(), v["description"].as_str()),
            (200, Some("active"), Some("ok"))
        );

        // History: newest first, each step with its actor.
        let (s, h) = p.admin(Method::GET, &format!("{one}/history"), None).await;
        assert_eq!(s, 200);
        let steps: Vec<(&str, &str, &str)> = h["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["type"].as_str().unwrap(),
                    e["status"].as_str().unwrap(),
                    e["actor"].as_str().unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(
            steps,
            [
                ("status_updated", "active", "carol"),
                ("status_updated", "blocked", "bob"),
                ("claims_updated", "active", "alice"),
                ("claims_updated", "active", "alice"),
                ("created", "active", "alice"),
            ],
            "{h}"
        );
        assert_eq!(h["pagination"]["total"], 5);
        let (_, h) = p
            .admin(
                Method::GET,
                &format!("/trust-marks/issuance-spec/{}/history", enc(T)),
                None,
            )
            .await;
        let last = h["events"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(
            (last["type"].as_str(), last["actor"].as_str()),
            (Some("spec_created"), Some("root"))
        );
        assert_eq!(h["pagination"]["total"], 8, "{h}");

        // Delete.
        assert_eq!(p.admin(Method::DELETE, &one, None).await.0, 204);
        assert_eq!(p.admin(Method::GET, &one, None).await.0, 404);
        let snap = p.app.as_ref().unwrap().control.snapshot();
        assert!(
            !snap
                .trust_marks
                .subjects
                .contains_key(&(T.to_string(), LEAF.to_string()))
        );
        p.stop().await;
    }
}
