use serde_json::json;

use super::super::*;

#[test]
fn parses_nested_checks_and_names_the_bad_field() {
    let c = Checker::parse(
        &json!({"type": "multiple_or", "config": [
            {"type": "entity_id", "config": {"entity_ids": ["https://a"]}},
            {"type": "multiple_and", "config": [{"type": "none"}]}
        ]}),
        "checker",
    )
    .unwrap();
    assert!(matches!(c, Checker::Any(ref v) if v.len() == 2));
    let e = Checker::parse(
        &json!({"type": "multiple_or", "config": [{"type": "http", "config": {"method": "POST"}}]}),
        "checker",
    )
    .unwrap_err();
    assert!(
        e.contains("checker.config[0].config") && e.contains("url"),
        "{e}"
    );
    let e = Checker::parse(&json!({"type": "nope"}), "checker").unwrap_err();
    assert!(e.contains("checker.type"), "{e}");
}

#[test]
fn accepts_lighthouse_flat_spelling() {
    let c = Checker::parse(
        &json!({"checker_type": "trust_path", "checker_config": {"trust_anchors": ["https://ta"]}}),
        "checker",
    )
    .unwrap();
    assert!(matches!(c, Checker::TrustPath(ref t) if t.trust_anchors == ["https://ta"]));
}
