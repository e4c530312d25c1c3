//! A delegated trust mark issued by Pharos validates per §7.3 (digest §6.3) with the issuer's
//! published keys and the owner's keys as an anchor names them in `trust_mark_owners`; an
//! anchor naming other owner keys, or none, refuses it.

use pharos_shared::jose::{self, Jwks, sign};
use pharos_shared::trust_mark;
use reqwest::Method;
use serde_json::{Map, Value, json};

use crate::fetch_list::enable;
use crate::support::{TestDb, backends, enc};
use crate::trust_marks_admin::{create_type, jwks, key, now, start};

const TM: &str = "https://marks.example.org/delegated";
const OWNER: &str = "https://owner.example.org";
const LEAF: &str = "https://leaf.example.org";

fn anchor(issuer: &str, owner_keys: Option<Value>) -> Map<String, Value> {
    let mut a = json!({"trust_mark_issuers": {TM: [issuer]}});
    if let Some(k) = owner_keys {
        a["trust_mark_owners"] = json!({TM: {"sub": OWNER, "jwks": k}});
    }
    a.as_object().unwrap().clone()
}

#[tokio::test]
async fn a_delegated_mark_verifies_against_the_owner_keys_the_anchor_names() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = start(&db).await;
        let me = p.entity_id().to_owned();
        let (owner, stranger) = (key(), key());
        let owned = json!({"trust_mark_type": TM,
            "trust_mark_owner": {"entity_id": OWNER, "jwks": jwks(&owner)}});
        create_type(&p, owned).await;
        let claims = json!({"iss": OWNER, "sub": me, "trust_mark_type": TM,
            "iat": now() - 10, "exp": now() + 3600});
        let delegation = sign(
            &owner,
            "trust-mark-delegation+jwt",
            claims.as_object().unwrap(),
            None,
        )
        .unwrap();
        let spec = json!({"trust_mark_type": TM, "lifetime": 600, "delegation_jwt": delegation});
        let (s, v) = p
            .admin(Method::POST, "/trust-marks/issuance-spec", Some(spec))
            .await;
        assert_eq!(s, 201, "{b:?}: {v}");
        let subjects = format!("/trust-marks/issuance-spec/{}/subjects", enc(TM));
        let (s, _) = p
            .admin(Method::POST, &subjects, Some(json!({"entity_id": LEAF})))
            .await;
        assert_eq!(s, 201);
        enable(&p, "trust_mark", "/trust-mark", json!({})).await;

        let q = format!("sub={}&trust_mark_type={}", enc(LEAF), enc(TM));
        let r = p.get(&format!("/trust-mark?{q}")).await;
        assert_eq!(r.status(), 200, "{b:?}");
        let mark = r.text().await.unwrap();
        let keys: Jwks =
            serde_json::from_value(p.entity_configuration().await.claims["jwks"].clone()).unwrap();
        let claims = jose::verify(&mark, &keys).unwrap().claims;
        assert_eq!(claims["delegation"], json!(delegation), "carried as issued");
        let entry = json!({"trust_mark_type": TM, "trust_mark": mark});

        // §7.3 with the owner's keys as the anchor names them: valid.
        let ok = trust_mark::verify(
            &entry,
            LEAF,
            &anchor(&me, Some(jwks(&owner))),
            &keys,
            now(),
            false,
        );
        assert!(ok.is_ok(), "{b:?}: {ok:?}");
        // Another owner key: the delegation does not verify.
        let bad = anchor(&me, Some(jwks(&stranger)));
        assert!(trust_mark::verify(&entry, LEAF, &bad, &keys, now(), false).is_err());
        // No owner named by the anchor: a delegation it cannot check is refused too.
        assert!(trust_mark::verify(&entry, LEAF, &anchor(&me, None), &keys, now(), false).is_err());
        // Another subject, or the issuer's keys replaced: refused.
        let other_sub = trust_mark::verify(
            &entry,
            "https://x.example",
            &anchor(&me, Some(jwks(&owner))),
            &keys,
            now(),
            false,
        );
        assert!(other_sub.is_err());
        let wrong_keys: Jwks = serde_json::from_value(jwks(&stranger)).unwrap();
        let forged = trust_mark::verify(
            &entry,
            LEAF,
            &anchor(&me, Some(jwks(&owner))),
            &wrong_keys,
            now(),
            false,
        );
        assert!(forged.is_err());
        p.stop().await;
    }
}
