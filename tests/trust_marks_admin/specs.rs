//! Issuance specs: by id and by type, lifetimes, refusals that store nothing, and the
//! delegation checked against the type's owner when stored.

use pharos_shared::jose::{SigningKey, sign};
use reqwest::Method;
use serde_json::{Value, json};

use super::*;
use crate::support::{backends, enc};

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
