//! Issue 32, "validation at the boundary": careless keys, metadata, policies, identifiers and
//! passwords are refused by the Admin API with a 400 (or 409) naming the field, and nothing is
//! stored.

use crate::support::{Pharos, TestDb, backends, enc, jwk};
use reqwest::Method;
use serde_json::{Value, json};

/// Asserts a refusal with `status` whose description starts with `starts`.
fn refused((s, v): (u16, Value), status: u16, starts: &str) {
    assert_eq!(s, status, "{v}");
    let d = v["error_description"].as_str().unwrap_or_default();
    assert!(
        d.starts_with(starts),
        "{d:?} does not start with {starts:?}"
    );
}

/// `jwk("k1")` with `member` replaced.
fn key_with(member: &str, value: &str) -> Value {
    let mut k = jwk("k1", None);
    k[member] = json!(value);
    k
}

#[tokio::test]
async fn malformed_keys_are_refused_naming_the_member_and_nothing_is_stored() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let cases = [
            (
                json!({"kty": "FOO", "kid": "a"}),
                "jwks.keys[0].kty: \"FOO\" is not a key type",
            ),
            (
                json!({"kty": "EC", "kid": "a"}),
                "jwks.keys[0].crv: missing",
            ),
            (
                key_with("x", "not base64 !!"),
                "jwks.keys[0].x: not base64url",
            ),
            (
                key_with("x", "AAAA"),
                "jwks.keys[0].x: 3 bytes, P-256 needs 32",
            ),
            (
                key_with("y", "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a4"),
                "jwks.keys[0]: the point (x, y) is not on P-256",
            ),
        ];
        for (key, want) in &cases {
            let body = json!({"entity_id": "https://leaf.example", "jwks": {"keys": [key]}});
            refused(
                p.admin(Method::POST, "/subordinates", Some(body)).await,
                400,
                want,
            );
            let body = json!({"entity_id": "https://ta.example", "jwks": {"keys": [key]}});
            refused(
                p.admin(Method::POST, "/trust-anchors", Some(body)).await,
                400,
                want,
            );
        }
        assert_eq!(
            p.admin(Method::GET, "/subordinates", None).await.1,
            json!([])
        );
        assert_eq!(
            p.admin(Method::GET, "/trust-anchors", None).await.1,
            json!([])
        );

        // A stored subordinate's keys: replaced or added one by one, alike.
        let body =
            json!({"entity_id": "https://leaf.example", "jwks": {"keys": [jwk("k1", None)]}});
        assert_eq!(
            p.admin(Method::POST, "/subordinates", Some(body)).await.0,
            201
        );
        let path = format!("/subordinates/{}/jwks", enc("https://leaf.example"));
        let bad = key_with("x", "AAAA");
        refused(
            p.admin(Method::PUT, &path, Some(json!({"keys": [bad.clone()]})))
                .await,
            400,
            "jwks.keys[0].x: ",
        );
        let mut second = bad;
        second["kid"] = json!("k2");
        refused(
            p.admin(Method::POST, &path, Some(second)).await,
            400,
            "jwks.keys[0].x: ",
        );
        let (_, keys) = p.admin(Method::GET, &path, None).await;
        assert_eq!(keys, json!({"keys": [jwk("k1", None)]}));
        p.stop().await;
    }
}

#[tokio::test]
async fn a_key_type_pharos_does_not_know_is_stored_only_when_accepted() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let p = Pharos::start_with(
        &db,
        |s| s.federation.accept.key_types = vec!["XYZ".into(), "AKP".into()],
        std::sync::Arc::new(pharos_shared::time::SystemClock),
    )
    .await;
    let other = json!({"kty": "XYZ", "kid": "pq", "alg": "XYZ-1", "pub": "AAAA"});
    let body =
        json!({"entity_id": "https://leaf.example", "jwks": {"keys": [jwk("k1", None), other]}});
    assert_eq!(
        p.admin(Method::POST, "/subordinates", Some(body)).await.0,
        201
    );
    // A type Pharos parses (AKP, ML-DSA) is parsed even when listed: a malformed key is refused.
    let akp = json!({"kty": "AKP", "kid": "pq", "alg": "ML-DSA-44", "pub": "AAAA"});
    let body = json!({"entity_id": "https://third.example", "jwks": {"keys": [akp]}});
    refused(
        p.admin(Method::POST, "/subordinates", Some(body)).await,
        400,
        "jwks.keys[0].pub: 3 bytes, ML-DSA-44 needs 1312",
    );
    // Private members stay refused whatever the type.
    let body = json!({"entity_id": "https://other.example",
        "jwks": {"keys": [{"kty": "XYZ", "kid": "pq", "priv": "AAAA"}]}});
    refused(
        p.admin(Method::POST, "/subordinates", Some(body)).await,
        400,
        "jwks.keys[0].priv: a private key member",
    );
    p.stop().await;
}

#[tokio::test]
async fn careless_metadata_is_refused_naming_the_parameter_and_nothing_is_stored() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let rp = "/entity-configuration/metadata/openid_relying_party";
        assert_eq!(
            p.admin(Method::PUT, rp, Some(json!({"client_name": "RP"})))
                .await
                .0,
            200
        );
        refused(
            p.admin(Method::PUT, rp, Some(json!({"redirect_uris": "https://x"})))
                .await,
            400,
            "metadata.openid_relying_party.redirect_uris: must be an array of URI strings",
        );
        refused(
            p.admin(
                Method::PUT,
                &format!("{rp}/contacts"),
                Some(json!("ops@example.org")),
            )
            .await,
            400,
            "metadata.openid_relying_party.contacts: must be an array of strings",
        );
        refused(
            p.admin(
                Method::PUT,
                "/entity-configuration/metadata/openid_relying_partyy",
                Some(json!({})),
            )
            .await,
            400,
            "metadata.openid_relying_partyy: \"openid_relying_partyy\" is not an entity type",
        );
        // The RP's metadata is as it was (the string did not replace it).
        assert_eq!(
            p.admin(Method::GET, rp, None).await.1,
            json!({"client_name": "RP"})
        );

        // A subordinate's metadata, through the same engine.
        let body =
            json!({"entity_id": "https://leaf.example", "jwks": {"keys": [jwk("k1", None)]}});
        assert_eq!(
            p.admin(Method::POST, "/subordinates", Some(body)).await.0,
            201
        );
        let path = format!(
            "/subordinates/{}/metadata/openid_relying_party/redirect_uris",
            enc("https://leaf.example")
        );
        refused(
            p.admin(Method::PUT, &path, Some(json!("https://x"))).await,
            400,
            "metadata.openid_relying_party.redirect_uris: ",
        );
        assert_eq!(p.admin(Method::GET, &path, None).await.0, 404);
        assert_eq!(
            p.admin(Method::PUT, &path, Some(json!(["https://rp.example/cb"])))
                .await
                .0,
            201
        );
        p.stop().await;
    }
}

#[tokio::test]
async fn policies_are_checked_as_the_resolver_would_before_they_are_stored() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let general = "/subordinates/metadata-policies";
        refused(
            p.admin(
                Method::PUT,
                general,
                Some(json!({"openid_relying_party": {"contacts": {"frobnicate": ["x"]}}})),
            )
            .await,
            400,
            "metadata_policy.openid_relying_party.contacts.frobnicate: Pharos does not implement \
             the operator \"frobnicate\"",
        );
        refused(
            p.admin(
                Method::PUT,
                general,
                Some(json!({"openid_relying_party": {"client_name": {"value": "a", "one_of": ["b"]}}})),
            )
            .await,
            400,
            "metadata_policy: ",
        );
        refused(
            p.admin(
                Method::PUT,
                "/subordinates/metadata-policy-crit",
                Some(json!(["frobnicate"])),
            )
            .await,
            400,
            "metadata_policy_crit: \"frobnicate\" is not a non-standard operator Pharos implements",
        );
        assert_eq!(p.admin(Method::GET, general, None).await.1, json!({}));
        p.stop().await;
    }
}

#[tokio::test]
async fn the_except_operator_is_stored_checked_and_may_be_critical() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let p = Pharos::start(&db).await;
    let general = "/subordinates/metadata-policies";
    let policy = json!({"openid_provider": {"id_token_signing_alg_values_supported": {
        "subset_of": ["RS256", "ES256"], "except": ["RS256"]}}});
    let (s, v) = p.admin(Method::PUT, general, Some(policy.clone())).await;
    assert_eq!(s, 200, "{v}");
    // A value the same policy excepts could never be met.
    refused(
        p.admin(
            Method::PUT,
            general,
            Some(json!({"oauth_client": {"token_endpoint_auth_method": {
                "value": "client_secret_basic", "except": ["client_secret_basic"]}}})),
        )
        .await,
        400,
        "metadata_policy: oauth_client.token_endpoint_auth_method: the value",
    );
    assert_eq!(p.admin(Method::GET, general, None).await.1, policy);
    let crit = "/subordinates/metadata-policy-crit";
    let (s, v) = p.admin(Method::PUT, crit, Some(json!(["except"]))).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(p.admin(Method::GET, crit, None).await.1, json!(["except"]));
    p.stop().await;
}

#[tokio::test]
async fn an_operator_accepts_a_non_standard_policy_operator_explicitly() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let p = Pharos::start_with(
        &db,
        |s| s.federation.accept.policy_operators = vec!["regexp".into()],
        std::sync::Arc::new(pharos_shared::time::SystemClock),
    )
    .await;
    let policy = json!({"openid_relying_party": {"client_name": {"regexp": "^A"}}});
    let (s, v) = p
        .admin(Method::PUT, "/subordinates/metadata-policies", Some(policy))
        .await;
    assert_eq!(s, 200, "{v}");
    // Accepted is not implemented: it can still not be critical.
    refused(
        p.admin(
            Method::PUT,
            "/subordinates/metadata-policy-crit",
            Some(json!(["regexp"])),
        )
        .await,
        400,
        "metadata_policy_crit: ",
    );
    p.stop().await;
}

#[tokio::test]
async fn a_second_post_of_an_override_is_a_conflict_not_a_silent_replacement() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let body =
            json!({"entity_id": "https://leaf.example", "jwks": {"keys": [jwk("k1", None)]}});
        assert_eq!(
            p.admin(Method::POST, "/subordinates", Some(body)).await.0,
            201
        );
        let path = format!(
            "/subordinates/{}/metadata-policies",
            enc("https://leaf.example")
        );
        assert_eq!(p.admin(Method::POST, &path, None).await.0, 201);
        let own = json!({"openid_relying_party": {"contacts": {"add": ["a@leaf.example"]}}});
        assert_eq!(p.admin(Method::PUT, &path, Some(own.clone())).await.0, 200);
        refused(
            p.admin(Method::POST, &path, None).await,
            409,
            "the subordinate already has its own metadata_policy",
        );
        assert_eq!(p.admin(Method::GET, &path, None).await.1, own);
        p.stop().await;
    }
}

#[tokio::test]
async fn identifiers_with_one_entity_configuration_url_are_one_subordinate() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let add = |id: &str| json!({"entity_id": id, "jwks": {"keys": [jwk("k1", None)]}});
        assert_eq!(
            p.admin(
                Method::POST,
                "/subordinates",
                Some(add("http://127.0.0.1:17020"))
            )
            .await
            .0,
            201
        );
        refused(
            p.admin(
                Method::POST,
                "/subordinates",
                Some(add("http://127.0.0.1:17020/")),
            )
            .await,
            409,
            "subordinate \"http://127.0.0.1:17020\" already exists with the same Entity \
             Configuration URL",
        );
        assert_eq!(
            p.admin(
                Method::POST,
                "/subordinates",
                Some(add("https://x.example/a/"))
            )
            .await
            .0,
            201
        );
        refused(
            p.admin(
                Method::POST,
                "/subordinates",
                Some(add("https://x.example/a")),
            )
            .await,
            409,
            "subordinate \"https://x.example/a/\" already exists",
        );
        let (_, all) = p.admin(Method::GET, "/subordinates", None).await;
        assert_eq!(all.as_array().map(Vec::len), Some(2), "{all}");
        p.stop().await;
    }
}

#[tokio::test]
async fn weak_passwords_are_refused_for_new_users_and_changes() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let mut p = Pharos::start(&db).await;
    refused(
        p.admin(
            Method::POST,
            "/users",
            Some(json!({"username": "a", "password": "1"})),
        )
        .await,
        400,
        "password: at least 12 characters",
    );
    refused(
        p.admin(
            Method::POST,
            "/users",
            Some(json!({"username": "a", "password": "Password1234"})),
        )
        .await,
        400,
        "password: one of the most common passwords",
    );
    assert_eq!(p.admin(Method::GET, "/users", None).await.1, json!([]));
    let user = json!({"username": "alice", "password": "a long passphrase"});
    assert_eq!(p.admin(Method::POST, "/users", Some(user)).await.0, 201);
    p.login("alice", "a long passphrase");
    refused(
        p.admin(
            Method::PUT,
            "/users/alice",
            Some(json!({"password": "short"})),
        )
        .await,
        400,
        "password: at least 12 characters",
    );
    // The old password still works.
    assert_eq!(p.admin(Method::GET, "/users/alice", None).await.0, 200);
    p.stop().await;
}
