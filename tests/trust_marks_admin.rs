//! Admin API of the Trust Mark Issuer (issue 14): types with owner and issuers, global owners
//! and issuers, issuance specs (lifetimes, extra claims, eligibility, delegation checked when
//! stored), subjects with status and extra claims, and the history with its actors, on every
//! database. Refused input leaves nothing stored.

use std::sync::Arc;

use pharos_shared::jose::{Algorithm, Signer, SigningKey, sign};
use pharos_shared::subordinate::SubordinateStatus;
use pharos_shared::time::SystemClock;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Pharos, TestDb, backends, enc};

const T: &str = "https://tm.example/certified";
const OWNER: &str = "https://owner.example";
const ISS1: &str = "https://tmi1.example";
const ISS2: &str = "https://tmi2.example";
const LEAF: &str = "https://leaf.example/a";
const LEAF2: &str = "https://leaf2.example";

/// An admin call with an `X-Actor` header and a raw body.
async fn as_actor(p: &Pharos, m: Method, path: &str, body: &str, actor: &str) -> (u16, Value) {
    let r = p
        .client
        .request(m, p.url(&format!("/api/v1/admin{path}")))
        .header("X-Actor", actor)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let s = r.status().as_u16();
    (s, r.json().await.unwrap_or(Value::Null))
}

fn key() -> SigningKey {
    SigningKey::generate(Algorithm::ES256, 2048).unwrap()
}

fn jwks(k: &SigningKey) -> Value {
    json!({"keys": [k.public_jwk()]})
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

async fn start(db: &TestDb) -> Pharos {
    Pharos::start_with(db, |s| s.server.body_limit = 8192, Arc::new(SystemClock)).await
}

async fn create_type(p: &Pharos, body: Value) -> Value {
    let (s, v) = p
        .admin(Method::POST, "/trust-marks/types", Some(body))
        .await;
    assert_eq!(s, 201, "{v}");
    v
}

#[tokio::test]
async fn types_owners_and_issuers_and_the_entity_configuration() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = start(&db).await;
        let owner_key = key();
        let t = create_type(
            &p,
            json!({"trust_mark_type": T, "description": "certified",
                "trust_mark_owner": {"entity_id": OWNER, "jwks": jwks(&owner_key)},
                "trust_mark_issuers": [{"issuer": ISS1}, {"issuer": ISS2}, {"issuer": ISS1}]}),
        )
        .await;
        assert_eq!(t["owner"]["entity_id"], OWNER, "{b:?}");
        assert_eq!(t["issuers"].as_array().unwrap().len(), 2);
        let id = t["id"].as_i64().unwrap();

        // Refusals: duplicate, missing or numeric type, private owner key, bad issuer.
        let cases = [
            (json!({"trust_mark_type": T}), 409),
            (json!({"description": "x"}), 400),
            (json!({"trust_mark_type": "17"}), 400),
            (
                json!({"trust_mark_type": "https://t2", "trust_mark_owner": {"entity_id": OWNER,
                    "jwks": {"keys": [{"kty": "EC", "kid": "p", "d": "secret"}]}}}),
                400,
            ),
            (
                json!({"trust_mark_type": "https://t2", "trust_mark_issuers": [{"issuer": "not a url"}]}),
                400,
            ),
            (
                json!({"trust_mark_type": "https://t2", "trust_mark_owner": {"owner_id": 999}}),
                400,
            ),
        ];
        for (body, want) in cases {
            let (s, v) = p
                .admin(Method::POST, "/trust-marks/types", Some(body.clone()))
                .await;
            assert_eq!(
                (s, v["error"].as_str()),
                (want, Some("invalid_request")),
                "{body} → {v}"
            );
        }
        let (_, all) = p.admin(Method::GET, "/trust-marks/types", None).await;
        assert_eq!(all.as_array().unwrap().len(), 1, "nothing stored: {all}");

        // By id and by URL-encoded type.
        let (s, by_id) = p
            .admin(Method::GET, &format!("/trust-marks/types/{id}"), None)
            .await;
        assert_eq!(s, 200);
        let (_, by_name) = p
            .admin(Method::GET, &format!("/trust-marks/types/{}", enc(T)), None)
            .await;
        assert_eq!(by_id, by_name);

        // Published in the signed Entity Configuration.
        let ec = p.entity_configuration().await.claims;
        assert_eq!(ec["trust_mark_issuers"][T], json!([ISS1, ISS2]), "{b:?}");
        assert_eq!(ec["trust_mark_owners"][T]["sub"], OWNER);
        assert_eq!(ec["trust_mark_owners"][T]["jwks"], jwks(&owner_key));

        // Issuers of the type.
        let base = format!("/trust-marks/types/{}", enc(T));
        let (s, v) = p
            .admin(
                Method::POST,
                &format!("{base}/issuers"),
                Some(json!({"issuer": "https://tmi3.example"})),
            )
            .await;
        assert_eq!((s, v.as_array().unwrap().len()), (201, 3));
        let (s, _) = p
            .admin(
                Method::DELETE,
                &format!("{base}/issuers/{}", enc(ISS1)),
                None,
            )
            .await;
        assert_eq!(s, 204);
        let (_, v) = p.admin(Method::GET, &format!("{base}/issuers"), None).await;
        assert_eq!(v.as_array().unwrap().len(), 2);
        let (s, v) = p
            .admin(
                Method::PUT,
                &format!("{base}/issuers"),
                Some(json!([{"issuer": ISS1}])),
            )
            .await;
        assert_eq!((s, v[0]["issuer"].as_str()), (200, Some(ISS1)));
        let ec = p.entity_configuration().await.claims;
        assert_eq!(ec["trust_mark_issuers"][T], json!([ISS1]));

        // Owner of the type.
        let (s, o) = p.admin(Method::GET, &format!("{base}/owner"), None).await;
        assert_eq!((s, o["entity_id"].as_str()), (200, Some(OWNER)));
        let owner_id = o["id"].as_i64().unwrap();
        assert_eq!(
            p.admin(Method::DELETE, &format!("{base}/owner"), None)
                .await
                .0,
            204
        );
        assert_eq!(
            p.admin(Method::GET, &format!("{base}/owner"), None).await.0,
            404
        );
        assert!(
            p.entity_configuration()
                .await
                .claims
                .get("trust_mark_owners")
                .is_none()
        );
        let (s, _) = p
            .admin(
                Method::PUT,
                &format!("{base}/owner"),
                Some(json!({"owner_id": owner_id})),
            )
            .await;
        assert_eq!(s, 200);

        // Global owners.
        let (_, owners) = p.admin(Method::GET, "/trust-marks/owners", None).await;
        assert_eq!(owners[0]["types"][0]["trust_mark_type"], T, "{owners}");
        let k2 = key();
        let (s, o2) = p
            .admin(
                Method::POST,
                "/trust-marks/owners",
                Some(json!({"entity_id": "https://owner2.example", "jwks": jwks(&k2)})),
            )
            .await;
        assert_eq!(s, 201, "{o2}");
        let dup = json!({"entity_id": "https://owner2.example", "jwks": jwks(&k2)});
        assert_eq!(
            p.admin(Method::POST, "/trust-marks/owners", Some(dup))
                .await
                .0,
            409
        );
        let o2id = o2["id"].as_i64().unwrap();
        let (s, v) = p
            .admin_raw(
                Method::POST,
                &format!("/trust-marks/owners/{o2id}/types"),
                Some(&id.to_string()),
            )
            .await;
        assert_eq!((s, v[0]["trust_mark_type"].as_str()), (201, Some(T)));
        let (_, v) = p
            .admin(
                Method::GET,
                &format!("/trust-marks/owners/{}/types", enc(OWNER)),
                None,
            )
            .await;
        assert_eq!(v, json!([]));
        let ec = p.entity_configuration().await.claims;
        assert_eq!(ec["trust_mark_owners"][T]["sub"], "https://owner2.example");
        let (s, _) = p
            .admin(
                Method::DELETE,
                &format!("/trust-marks/owners/{o2id}/types/{}", enc(T)),
                None,
            )
            .await;
        assert_eq!(s, 204);
        assert_eq!(
            p.admin(Method::DELETE, &format!("/trust-marks/owners/{o2id}"), None)
                .await
                .0,
            204
        );
        assert_eq!(
            p.admin(Method::GET, &format!("/trust-marks/owners/{o2id}"), None)
                .await
                .0,
            404
        );

        // Global issuers.
        let (_, issuers) = p.admin(Method::GET, "/trust-marks/issuers", None).await;
        assert_eq!(issuers.as_array().unwrap().len(), 3, "{issuers}");
        let (s, v) = p
            .admin(
                Method::PUT,
                &format!("/trust-marks/issuers/{}/types", enc(ISS2)),
                Some(json!([T])),
            )
            .await;
        assert_eq!((s, v[0]["id"].as_i64()), (200, Some(id)));
        let (_, v) = p.admin(Method::GET, &format!("{base}/issuers"), None).await;
        assert_eq!(v.as_array().unwrap().len(), 2);
        assert_eq!(
            p.admin(
                Method::DELETE,
                &format!("/trust-marks/issuers/{}", enc(ISS1)),
                None
            )
            .await
            .0,
            204
        );
        let ec = p.entity_configuration().await.claims;
        assert_eq!(ec["trust_mark_issuers"][T], json!([ISS2]));

        // Deleting the type.
        assert_eq!(p.admin(Method::DELETE, &base, None).await.0, 204);
        assert_eq!(p.admin(Method::GET, &base, None).await.0, 404);
        assert!(
            p.entity_configuration()
                .await
                .claims
                .get("trust_mark_issuers")
                .is_none()
        );
        p.stop().await;
    }
}

#[tokio::test]
async fn issuance_specs_by_id_and_type_with_refusals_that_store_nothing() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = start(&db).await;
        let specs = "/trust-marks/issuance-spec";
        let (s, a) = p
            .admin(
                Method::POST,
                specs,
                Some(json!({"trust_mark_type": T, "lifetime": "24h"})),
            )
            .await;
        assert_eq!((s, a["lifetime"].as_i64()), (201, Some(86400)), "{b:?} {a}");
        let t2 = "https://tm.example/other";
        let (s, v) = p
            .admin(
                Method::POST,
                specs,
                Some(json!({"trust_mark_type": t2, "lifetime": 86400})),
            )
            .await;
        assert_eq!((s, v["lifetime"].as_i64()), (201, Some(86400)));
        let id = a["id"].as_i64().unwrap();
        let (_, by_id) = p.admin(Method::GET, &format!("{specs}/{id}"), None).await;
        let (_, by_type) = p
            .admin(Method::GET, &format!("{specs}/{}", enc(T)), None)
            .await;
        assert_eq!(by_id, by_type);

        let t3 = "https://tm.example/third";
        let cases = [
            (json!({"trust_mark_type": T}), 409, ""),
            (json!({"lifetime": 60}), 400, "trust_mark_type"),
            (
                json!({"trust_mark_type": t3, "lifetime": "soon"}),
                400,
                "lifetime",
            ),
            (
                json!({"trust_mark_type": t3, "additional_claims": {"iss": "x"}}),
                400,
                "\"iss\"",
            ),
            (
                json!({"trust_mark_type": t3, "eligibility_config": {"mode": "magic"}}),
                400,
                "eligibility_config.mode",
            ),
            (
                json!({"trust_mark_type": t3, "eligibility_config": {"mode": "check_only", "checker": 5}}),
                400,
                "checker",
            ),
            (
                json!({"trust_mark_type": t3, "ref": "not a url"}),
                400,
                "ref",
            ),
            (
                json!({"trust_mark_type": t3, "colour": "red"}),
                400,
                "colour",
            ),
        ];
        for (body, want, says) in cases {
            let (s, v) = p.admin(Method::POST, specs, Some(body.clone())).await;
            assert_eq!(
                (s, v["error"].as_str()),
                (want, Some("invalid_request")),
                "{body} → {v}"
            );
            let d = v["error_description"].as_str().unwrap();
            assert!(d.contains(says), "{body} → {d}");
        }
        let big = json!({"trust_mark_type": t3, "description": "x".repeat(10_000)}).to_string();
        let (s, v) = p.admin_raw(Method::POST, specs, Some(&big)).await;
        assert_eq!((s, v["error"].as_str()), (413, Some("invalid_request")));
        assert_eq!(
            p.admin(Method::GET, &format!("{specs}/{}", enc(t3)), None)
                .await
                .0,
            404
        );
        let (_, all) = p.admin(Method::GET, specs, None).await;
        assert_eq!(all.as_array().unwrap().len(), 2, "nothing stored: {all}");

        // PUT replaces, PATCH merges; a refused PATCH changes nothing.
        let put = json!({"trust_mark_type": T, "lifetime": "7d", "ref": "https://ref.example/x",
            "additional_claims": {"level": "high"},
            "eligibility_config": {"mode": "db_or_check", "checker": {"type": "none"}}, "cache_ttl": "5m"});
        let (s, v) = p
            .admin(Method::PUT, &format!("{specs}/{id}"), Some(put))
            .await;
        assert_eq!(
            (s, v["lifetime"].as_i64(), v["cache_ttl"].as_i64()),
            (200, Some(604_800), Some(300)),
            "{v}"
        );
        assert_eq!(v["eligibility_config"]["mode"], "db_or_check");
        let (s, v) = p
            .admin(
                Method::PATCH,
                &format!("{specs}/{}", enc(T)),
                Some(json!({"description": "patched", "ref": null})),
            )
            .await;
        assert_eq!((s, v["lifetime"].as_i64()), (200, Some(604_800)), "{v}");
        assert_eq!(
            (v["description"].as_str(), &v["ref"]),
            (Some("patched"), &Value::Null)
        );
        let before = p.admin(Method::GET, &format!("{specs}/{id}"), None).await.1;
        for bad in [
            json!({"lifetime": "bad"}),
            json!({"additional_claims": {"exp": 1}}),
            json!({"trust_mark_type": t2}),
        ] {
            let (s, _) = p
                .admin(Method::PATCH, &format!("{specs}/{id}"), Some(bad.clone()))
                .await;
            assert!(s == 400 || s == 409, "{bad} → {s}");
        }
        assert_eq!(
            p.admin(Method::GET, &format!("{specs}/{id}"), None).await.1,
            before
        );

        // The snapshot the data plane issues from.
        let snap = p.app.as_ref().unwrap().control.snapshot();
        let spec = &snap.trust_marks.specs[T];
        assert_eq!((spec.lifetime, spec.cache_ttl), (Some(604_800), 300));
        assert_eq!(spec.additional_claims["level"], "high");

        assert_eq!(
            p.admin(Method::DELETE, &format!("{specs}/{}", enc(t2)), None)
                .await
                .0,
            204
        );
        assert_eq!(
            p.admin(Method::GET, &format!("{specs}/{}", enc(t2)), None)
                .await
                .0,
            404
        );
        assert!(
            !p.app
                .as_ref()
                .unwrap()
                .control
                .snapshot()
                .trust_marks
                .specs
                .contains_key(t2)
        );
        p.stop().await;
    }
}

#[tokio::test]
async fn a_delegation_is_checked_against_the_types_owner_when_stored() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = start(&db).await;
        let (owner, other) = (key(), key());
        create_type(&p, json!({"trust_mark_type": T, "trust_mark_owner": {"entity_id": OWNER, "jwks": jwks(&owner)}})).await;
        let me = p.entity_id().to_string();
        let claims = |f: &dyn Fn(&mut Value)| {
            let mut c = json!({"iss": OWNER, "sub": me, "trust_mark_type": T, "iat": now() - 10, "exp": now() + 3600});
            f(&mut c);
            c
        };
        let d = |k: &SigningKey, typ: &str, c: Value| {
            sign(k, typ, c.as_object().unwrap(), None).unwrap()
        };
        const TYP: &str = "trust-mark-delegation+jwt";
        let specs = "/trust-marks/issuance-spec";

        let unowned = json!({"trust_mark_type": "https://tm.example/free", "delegation_jwt": d(&owner, TYP, claims(&|_| {}))});
        let (s, v) = p.admin(Method::POST, specs, Some(unowned)).await;
        assert_eq!(s, 400);
        assert!(
            v["error_description"]
                .as_str()
                .unwrap()
                .contains("the type has no owner"),
            "{v}"
        );

        let cases = [
            (d(&owner, "jwt", claims(&|_| {})), "typ"),
            (d(&other, TYP, claims(&|_| {})), "not signed by the owner"),
            (
                d(
                    &owner,
                    TYP,
                    claims(&|c| c["sub"] = json!("https://else.example")),
                ),
                "another issuer",
            ),
            (
                d(&owner, TYP, claims(&|c| c["exp"] = json!(now() - 60))),
                "expired",
            ),
            (
                d(
                    &owner,
                    TYP,
                    claims(&|c| c["trust_mark_type"] = json!("https://tm.example/x")),
                ),
                "another trust_mark_type",
            ),
        ];
        for (jwt, says) in cases {
            let (s, v) = p
                .admin(
                    Method::POST,
                    specs,
                    Some(json!({"trust_mark_type": T, "delegation_jwt": jwt})),
                )
                .await;
            assert_eq!(
                (s, v["error"].as_str()),
                (400, Some("invalid_request")),
                "{says}: {v}"
            );
            let desc = v["error_description"].as_str().unwrap();
            assert!(
                desc.starts_with("delegation_jwt") && desc.contains(says),
                "{says}: {desc}"
            );
            assert_eq!(
                p.admin(Method::GET, &format!("{specs}/{}", enc(T)), None)
                    .await
                    .0,
                404,
                "{says}"
            );
        }

        let good = d(&owner, TYP, claims(&|_| {}));
        let (s, v) = p
            .admin(
                Method::POST,
                specs,
                Some(json!({"trust_mark_type": T, "lifetime": 600, "delegation_jwt": good})),
            )
            .await;
        assert_eq!(
            (s, v["delegation_jwt"].as_str()),
            (201, Some(good.as_str())),
            "{v}"
        );
        let snap = p.app.as_ref().unwrap().control.snapshot();
        assert_eq!(
            snap.trust_marks.specs[T].delegation_jwt.as_deref(),
            Some(good.as_str())
        );
        let forged = d(&other, TYP, claims(&|_| {}));
        let (s, _) = p
            .admin(
                Method::PATCH,
                &format!("{specs}/{}", enc(T)),
                Some(json!({"delegation_jwt": forged})),
            )
            .await;
        assert_eq!(s, 400);
        let (_, v) = p
            .admin(Method::GET, &format!("{specs}/{}", enc(T)), None)
            .await;
        assert_eq!(
            v["delegation_jwt"].as_str(),
            Some(good.as_str()),
            "unchanged"
        );
        p.stop().await;
    }
}

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
