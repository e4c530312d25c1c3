//! Whether our superiors publish our keys (issue 40, the key calendar's alarm):
//! `GET /entity-configuration/superiors` fetches each authority hint's statement about us,
//! verifies it with the superior's own keys and compares its `jwks` with ours — in step after
//! registration, stale and missing after a rotation that revoked the old key (the superior
//! still publishes it and not the new one), unreachable for a superior that does not answer.

use reqwest::Method;
use serde_json::{Value, json};

use crate::enroll::names_superior;
use crate::support::{Pharos, TestDb, backends, enable};

async fn superiors(p: &Pharos) -> Vec<Value> {
    let (s, v) = p
        .admin(Method::GET, "/entity-configuration/superiors", None)
        .await;
    assert_eq!(s, 200, "{v}");
    v.as_array().unwrap().clone()
}

fn kids(p: &serde_json::Map<String, Value>) -> Vec<String> {
    p["jwks"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_rotation_shows_a_superior_still_publishing_the_dropped_key() {
    for b in backends() {
        let (db_ta, db_leaf) = (TestDb::new(b).await, TestDb::new(b).await);
        let ta = Pharos::start(&db_ta).await;
        let leaf = Pharos::start(&db_leaf).await;
        enable(&ta, "fetch", "/fetch", json!({})).await;
        names_superior(&leaf, &ta).await;
        let before = kids(&leaf.entity_configuration().await.claims);
        let body = json!({"entity_id": leaf.entity_id(),
            "jwks": leaf.entity_configuration().await.claims["jwks"].clone()});
        let (s, v) = ta.admin(Method::POST, "/subordinates", Some(body)).await;
        assert_eq!(s, 201, "{v}");

        let list = superiors(&leaf).await;
        assert_eq!(list.len(), 1, "{list:?}");
        assert_eq!(list[0]["superior"], ta.entity_id());
        assert_eq!(list[0]["agreement"], "in_step", "{list:?}");
        assert_eq!(list[0]["published"], json!(before));

        // The leaf rotates and revokes the old key; the anchor still publishes it.
        let (s, v) = leaf
            .admin(
                Method::POST,
                "/kms/rotate?revoke=true&reason=superseded",
                None,
            )
            .await;
        assert_eq!(s, 202, "{v}");
        let after = kids(&leaf.entity_configuration().await.claims);
        assert!(
            before.iter().all(|k| !after.contains(k)),
            "{before:?} → {after:?}"
        );
        let list = superiors(&leaf).await;
        assert_eq!(list[0]["agreement"], "stale_and_missing", "{list:?}");
        assert_eq!(list[0]["stale"], json!(before));
        assert_eq!(list[0]["missing"], json!(after));

        // The anchor takes the new keys: in step again.
        let path = format!(
            "/subordinates/{}/jwks",
            crate::support::enc(leaf.entity_id())
        );
        let jwks = leaf.entity_configuration().await.claims["jwks"].clone();
        let (s, v) = ta.admin(Method::PUT, &path, Some(jwks)).await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(superiors(&leaf).await[0]["agreement"], "in_step");

        // A superior that does not answer is named with the reason; the others still are.
        let (s, v) = leaf
            .admin(
                Method::POST,
                "/entity-configuration/authority-hints",
                Some(json!({"entity_id": "http://127.0.0.1:9/nobody"})),
            )
            .await;
        assert_eq!(s, 201, "{v}");
        let list = superiors(&leaf).await;
        let nobody = list
            .iter()
            .find(|s| s["superior"] == "http://127.0.0.1:9/nobody")
            .unwrap();
        assert_eq!(nobody["agreement"], "unreachable", "{list:?}");
        assert!(
            nobody["error"]
                .as_str()
                .unwrap()
                .contains("Entity Configuration"),
            "{nobody}"
        );
        assert!(list.iter().any(|s| s["agreement"] == "in_step"), "{list:?}");
        leaf.stop().await;
        ta.stop().await;
    }
}
