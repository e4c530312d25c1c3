//! Parsing and validation of issuance spec bodies.

use super::*;

fn input(v: Value) -> ApiResult<SpecWrite> {
    serde_json::from_value::<SpecInput>(v).unwrap().into_write()
}

#[test]
fn lifetimes_are_seconds_or_duration_strings() {
    let t = "https://tm.example/a";
    assert_eq!(
        input(json!({"trust_mark_type": t, "lifetime": 86400}))
            .unwrap()
            .lifetime,
        86400
    );
    assert_eq!(
        input(json!({"trust_mark_type": t, "lifetime": "24h"}))
            .unwrap()
            .lifetime,
        86400
    );
    assert_eq!(
        input(json!({"trust_mark_type": t, "lifetime": "7d"}))
            .unwrap()
            .lifetime,
        604_800
    );
    assert_eq!(input(json!({"trust_mark_type": t})).unwrap().lifetime, 0);
    for bad in [json!("soon"), json!(-5), json!([1])] {
        let e = input(json!({"trust_mark_type": t, "lifetime": bad})).unwrap_err();
        assert!(e.to_string().starts_with("lifetime"), "{e}");
    }
}

#[test]
fn protected_claims_unknown_modes_and_shapeless_checkers_are_refused() {
    let t = "https://tm.example/a";
    let e = input(json!({"trust_mark_type": t, "additional_claims": {"sub": "x"}})).unwrap_err();
    assert!(e.to_string().contains("\"sub\""), "{e}");
    let e =
        input(json!({"trust_mark_type": t, "eligibility_config": {"mode": "magic"}})).unwrap_err();
    assert!(e.to_string().contains("eligibility_config.mode"), "{e}");
    let e = input(json!({"trust_mark_type": t, "eligibility_config": {"mode": "check_only", "checker": {"config": {}}}}))
        .unwrap_err();
    assert!(e.to_string().contains("checker"), "{e}");
    let ok = input(json!({"trust_mark_type": t, "eligibility_config":
        {"mode": "db_or_check", "checker": {"type": "none"}, "check_cache_ttl": "1m"}}))
    .unwrap();
    assert_eq!(
        ok.eligibility_config,
        Some(json!({"mode": "db_or_check", "checker": {"type": "none"}, "check_cache_ttl": 60}))
    );
    let flat = input(json!({"trust_mark_type": t, "eligibility_config":
        {"mode": "check_only", "checker_type": "none", "checker_config": {"a": 1}}}))
    .unwrap();
    assert_eq!(
        flat.eligibility_config.unwrap()["checker"],
        json!({"type": "none", "config": {"a": 1}})
    );
    // The checker is parsed as it will run: the message names the bad field.
    for (checker, field) in [
        (
            json!({"type": "http", "config": {}}),
            "eligibility_config.checker.config",
        ),
        (json!({"type": "magic"}), "eligibility_config.checker.type"),
        (
            json!({"type": "multiple_and", "config": [{"type": "none"}, {"type": "cmd", "config": {"path": ""}}]}),
            "eligibility_config.checker.config[1].config.path",
        ),
    ] {
        let e = input(json!({"trust_mark_type": t, "eligibility_config":
            {"mode": "check_only", "checker": checker}}))
        .unwrap_err();
        assert!(matches!(e, ApiError::BadRequest(_)), "{e}");
        assert!(e.to_string().contains(field), "{field}: {e}");
    }
    assert!(input(json!({"lifetime": 5})).is_err(), "type required");
    assert!(
        input(json!({"trust_mark_type": "42"})).is_err(),
        "numeric type"
    );
}
