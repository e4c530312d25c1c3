//! The worked example of the legacy-config reference (tests/vectors/config2db) and the rules
//! around it.

use serde_json::json;

use super::*;
use crate::config2db::{legacy, yaml};

const EXAMPLE: &str = include_str!("../../../../tests/vectors/config2db/config-0.21.yaml");
const EDUGAIN: &str = include_str!("../../../../tests/vectors/config2db/edugain-jwks.json");

fn read(path: &str) -> Result<String, String> {
    if path == "/etc/lighthouse/edugain-jwks.json" {
        Ok(EDUGAIN.to_string())
    } else {
        Err("No such file or directory".into())
    }
}

fn plan_of(text: &str, sections: Sections) -> Result<Plan, Vec<String>> {
    let doc = yaml::parse(text).map_err(|e| vec![e.to_string()])?;
    let l = legacy::read(&doc)?;
    plan(&l, sections, &read, &[])
}

#[test]
fn the_worked_example_gives_the_reference_rows() {
    let p = plan_of(EXAMPLE, Sections::ALL).unwrap();
    let anchors: Vec<_> = p
        .anchors
        .iter()
        .map(|a| {
            (
                a.entity_id.as_str(),
                a.jwks.as_ref().map(|j| j.keys[0]["kid"].clone()),
                a.enable_jwks_update,
                a.key_poll_interval,
                a.source.as_str(),
            )
        })
        .collect();
    assert_eq!(
        anchors,
        [
            (
                "https://ta.example.org",
                Some(json!("ta-key-1")),
                true,
                21600,
                "federation_data.trust_anchors"
            ),
            (
                "https://edugain.example.net",
                Some(json!("edu-1")),
                false,
                0,
                "federation_data.trust_anchors"
            ),
            // Without keys: polled so that the first poll seeds them (issue 18).
            (
                "https://partner-ta.example.com",
                None,
                true,
                0,
                "endpoints.auth.trust_anchors"
            ),
            (
                "https://other-ta.example.com",
                None,
                true,
                0,
                "endpoints.enroll.checker.trust_anchors"
            ),
        ]
    );
    let kinds: Vec<_> = p.endpoints.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "fetch",
            "list",
            "resolve",
            "trust_mark_status",
            "trust_mark_listing",
            "historical_keys",
            "trust_mark",
            "enroll_request",
            "trust_mark_request",
            "enroll",
            "entity_collection"
        ]
    );
    let by = |k: &str| p.endpoints.iter().find(|e| e.kind == k).unwrap();
    assert_eq!(by("fetch").path.as_deref(), Some("/fetch"));
    assert_eq!(by("fetch").config, json!({}));
    assert!(by("list").auth_enabled);
    assert_eq!(
        by("list").auth_trust_anchors,
        ["https://ta.example.org", "https://partner-ta.example.com"]
    );
    assert_eq!(by("resolve").auth_trust_anchors, ["https://ta.example.org"]);
    assert_eq!(
        by("resolve").config,
        json!({"allowed_trust_anchors":["https://ta.example.org","https://edugain.example.net"],
               "grace_period_seconds":5400,"time_elapsed_grace_factor":0.75,
               "proactive_resolver":{"enabled":true,"concurrency_limit":32,"queue_size":5000,
                                     "response_storage_dir":"/data/resolver","response_storage_store_jwt":true}})
    );
    let er = by("enroll_request");
    assert_eq!(
        (er.path.as_deref(), er.url.as_deref()),
        (None, Some("https://onboarding.example.org/enroll-request"))
    );
    assert_eq!(
        by("enroll").auth_trust_anchors,
        ["https://partner-ta.example.com"]
    );
    assert_eq!(
        by("enroll").config,
        json!({"checker_type":"multiple_or","checker_config":[
            {"config":{"trust_anchors":["https://ta.example.org"],"trust_mark_type":"https://ta.example.org/tm/member"},"type":"trust_mark"},
            {"config":{"trust_anchors":["https://other-ta.example.com"]},"type":"trust_path"}]})
    );
    assert_eq!(
        by("entity_collection").config,
        json!({"allowed_trust_anchors":["https://ta.example.org","https://edugain.example.net"],
               "interval_seconds":28800,"concurrency_limit":4,"pagination_limit":512})
    );
    for e in [
        "fetch",
        "trust_mark_status",
        "trust_mark_listing",
        "historical_keys",
        "trust_mark",
        "enroll_request",
        "trust_mark_request",
        "entity_collection",
    ] {
        assert!(!by(e).auth_enabled, "{e}");
        assert!(by(e).auth_trust_anchors.is_empty(), "{e}");
    }
}

#[test]
fn only_selects_sections() {
    let p = plan_of(EXAMPLE, Sections::parse(Some("endpoints")).unwrap()).unwrap();
    assert!(p.anchors.is_empty());
    assert_eq!(p.endpoints.len(), 11);
    let p = plan_of(EXAMPLE, Sections::parse(Some("trust_anchors")).unwrap()).unwrap();
    assert_eq!(p.anchors.len(), 4);
    assert!(p.endpoints.is_empty());
    assert!(Sections::parse(Some("alg")).unwrap_err().contains("alg"));
    assert!(Sections::parse(Some(",")).is_err());
}

#[test]
fn all_require_auth_enables_every_endpoint() {
    let p = plan_of(
        "endpoints:\n  auth:\n    all_require_auth: true\n    trust_anchors: [{entity_id: https://a.example}]\n  fetch: {path: /f}\n  list:\n    path: /l\n    auth_trust_anchors: [https://b.example]\n",
        Sections::ALL,
    )
    .unwrap();
    assert!(p.endpoints.iter().all(|e| e.auth_enabled));
    assert_eq!(p.endpoints[0].auth_trust_anchors, ["https://a.example"]);
    assert_eq!(p.endpoints[1].auth_trust_anchors, ["https://b.example"]);
    assert_eq!(p.anchors.len(), 2);
}

#[test]
fn conflicting_keys_name_both_places() {
    let text = "federation_data:\n  trust_anchors:\n    - entity_id: https://ta.example\n      jwks: {keys: [{kty: EC, kid: a, crv: P-256, x: Azb_yUfxrNMRsM5IQOUDfhtLkFuT-7NTA_aR9iQVkAw, y: C_F5w0v0DEoSjH4EfXxwbflNaEFEPgVumbWGQk01AYo}]}\n\
                endpoints:\n  auth:\n    trust_anchors:\n      - entity_id: https://ta.example\n        jwks: {keys: [{kty: EC, kid: b, crv: P-256, x: Azb_yUfxrNMRsM5IQOUDfhtLkFuT-7NTA_aR9iQVkAw, y: C_F5w0v0DEoSjH4EfXxwbflNaEFEPgVumbWGQk01AYo}]}\n";
    let e = plan_of(text, Sections::ALL).unwrap_err();
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].contains("https://ta.example"), "{}", e[0]);
    assert!(
        e[0].contains("federation_data.trust_anchors[0], line 3"),
        "{}",
        e[0]
    );
    assert!(
        e[0].contains("endpoints.auth.trust_anchors[0], line 8"),
        "{}",
        e[0]
    );
    // The endpoints alone do not look at keys.
    assert!(plan_of(text, Sections::parse(Some("endpoints")).unwrap()).is_ok());
}

#[test]
fn bad_values_are_named_with_their_position() {
    let e = plan_of(
        "endpoints:\n  list:\n    path: /l\n    auth_enabled: maybe\n",
        Sections::ALL,
    )
    .unwrap_err();
    assert_eq!(
        e,
        ["endpoints.list.auth_enabled (line 4, column 19): expected true or false"]
    );
    let e = plan_of(
        "endpoints:\n  list: {path: l}\n  fetch: {path: /l}\n  resolve: {path: /l}\n",
        Sections::ALL,
    )
    .unwrap_err();
    assert!(
        e[0].starts_with("endpoints.list.path: path must start with '/'"),
        "{e:?}"
    );
    assert!(e[1].contains("also the path of endpoints.fetch"), "{e:?}");
    let e = plan_of(
        "federation_data:\n  trust_anchors:\n    - entity_id: https://x\n      jwks_file: /nope.json\n",
        Sections::ALL,
    )
    .unwrap_err();
    assert!(e[0].contains("jwks_file /nope.json"), "{e:?}");
    let e = plan_of(
        "endpoints:\n  resolve:\n    path: /r\n    time_elapsed_grace_factor: 3\n",
        Sections::ALL,
    )
    .unwrap_err();
    assert!(e[0].contains("time_elapsed_grace_factor"), "{e:?}");
}

#[test]
fn a_section_of_the_wrong_shape_is_reported_once() {
    let e = plan_of("endpoints:\n  resolve: [a]\n", Sections::ALL).unwrap_err();
    assert_eq!(
        e,
        ["endpoints.resolve (line 2, column 12): expected a mapping"]
    );
}

#[test]
fn an_empty_or_unrelated_file_plans_nothing() {
    assert_eq!(plan_of("", Sections::ALL).unwrap(), Plan::default());
    assert_eq!(
        plan_of("server: {port: 1}\nendpoints:\n  list: {}\n", Sections::ALL).unwrap(),
        Plan::default()
    );
}

#[test]
fn malformed_keys_are_refused_naming_the_member() {
    let text = "federation_data:\n  trust_anchors:\n    - entity_id: https://ta.example\n      jwks: {keys: [{kty: EC, kid: a, crv: P-256, x: AA, y: AA}]}\n";
    let e = plan_of(text, Sections::ALL).unwrap_err();
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].ends_with("jwks.keys[0].x: 1 bytes, P-256 needs 32"),
        "{}",
        e[0]
    );
}
