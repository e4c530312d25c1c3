//! Tests of the metadata parameter types.

use serde_json::json;

use super::*;

fn check(v: Value, allowed: &[String]) -> Result<(), String> {
    check_metadata(v.as_object().unwrap(), allowed)
}

/// A value of each type.
fn sample(ty: ParamType) -> Value {
    match ty {
        Str => json!("text"),
        Uri => json!("https://x.example/p"),
        Bool => json!(true),
        Number => json!(3600),
        Object => json!({"a": 1}),
        Strs => json!(["a", "b"]),
        Uris => json!(["https://x.example/cb", "com.example.app:/cb"]),
        Objects => json!([{"name": "x"}]),
        Jwks => json!({"keys": [{"kty": "EC"}]}),
    }
}

#[test]
fn the_issue_s_careless_metadata_is_refused_naming_the_parameter() {
    assert_eq!(
        check(
            json!({"openid_relying_party": {"redirect_uris": "https://x"}}),
            &[]
        )
        .unwrap_err(),
        "metadata.openid_relying_party.redirect_uris: must be an array of URI strings"
    );
    assert_eq!(
        check(
            json!({"federation_entity": {"contacts": "ops@example.org"}}),
            &[]
        )
        .unwrap_err(),
        "metadata.federation_entity.contacts: must be an array of strings"
    );
    let e = check(json!({"openid_relying_partyy": {}}), &[]).unwrap_err();
    assert!(
        e.starts_with("metadata.openid_relying_partyy: \"openid_relying_partyy\" is not an entity type of the specifications (did you mean \"openid_relying_party\"?)"),
        "{e}"
    );
    assert_eq!(
        check(json!({"openid_provider": []}), &[]).unwrap_err(),
        "metadata.openid_provider: must be a JSON object"
    );
}

#[test]
fn every_typed_parameter_takes_its_type_and_refuses_others() {
    for (t, tables) in ENTITY_TYPES {
        for (p, ty) in tables.iter().copied().chain([COMMON]).flatten() {
            assert_eq!(param_type(t, p), Some(*ty), "{t}.{p}");
            assert!(
                check(json!({ *t: { *p: sample(*ty) } }), &[]).is_ok(),
                "{t}.{p}"
            );
            for wrong in [
                json!(null),
                json!(1.5),
                json!("not a uri"),
                json!([1]),
                json!({}),
            ] {
                if ty.accepts(&wrong) {
                    continue;
                }
                let e = check(json!({ *t: { *p: wrong } }), &[]).unwrap_err();
                assert!(e.starts_with(&format!("metadata.{t}.{p}: must be ")), "{e}");
            }
        }
    }
}

#[test]
fn unknown_parameters_stay_allowed_and_allowed_types_are_not_checked() {
    assert!(
        check(
            json!({"openid_provider": {"x_custom": 1, "issuer": "https://op.example"}}),
            &[]
        )
        .is_ok()
    );
    let allowed = ["x_wallet".to_owned()];
    assert!(check(json!({"x_wallet": {"contacts": 1}}), &allowed).is_ok());
    assert!(check(json!({"x_wallet": {}}), &[]).is_err());
}

#[test]
fn uris_need_a_scheme() {
    for bad in ["", "relative/path", "//host/p", "x y"] {
        assert!(!Uri.accepts(&json!(bad)), "{bad}");
    }
    for good in [
        "https://a.example",
        "http://127.0.0.1:1/x",
        "urn:ietf:x",
        "com.app:/cb",
    ] {
        assert!(Uri.accepts(&json!(good)), "{good}");
    }
}

#[test]
fn wallet_entity_types_have_their_parameters_and_the_issuer_profile_rule() {
    assert!(
        check(
            json!({"openid_wallet_provider": {"vp_formats_supported": "jwt"}}),
            &[]
        )
        .is_err()
    );
    assert!(
        check(
            json!({"openid_wallet_provider": {"vp_formats_supported": {"dc+sd-jwt": {}},
                "client_id_prefixes_supported": ["openid_federation"],
                "authorization_endpoint": "https://w.example/authorize"}}),
            &[]
        )
        .is_ok()
    );
    assert!(
        check(
            json!({"openid_credential_verifier": {"request_uris": "x"}}),
            &[]
        )
        .is_err()
    );
    let id = "https://issuer.example";
    let md = |v: Value| v.as_object().unwrap().clone();
    assert_eq!(
        check_wallet_profile(id, &md(json!({"openid_provider": {}}))),
        Ok(())
    );
    assert_eq!(
        check_wallet_profile(
            id,
            &md(json!({"openid_credential_issuer": {"credential_issuer": id}}))
        ),
        Ok(())
    );
    for bad in [
        json!({"openid_credential_issuer": {"credential_issuer": "https://other.example"}}),
        json!({"openid_credential_issuer": {"credential_issuer": "https://ISSUER.example"}}),
        json!({"openid_credential_issuer": {}}),
    ] {
        let e = check_wallet_profile(id, &md(bad)).unwrap_err();
        assert!(
            e.contains("credential_issuer") && e.contains("§6.2.1"),
            "{e}"
        );
    }
    assert!(
        check_wallet_profile(
            "http://issuer.example",
            &md(json!(
                {"openid_credential_issuer": {"credential_issuer": "http://issuer.example"}}
            ))
        )
        .is_err()
    );
}
