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

#[test]
fn requests_that_could_not_be_sent_are_refused_when_configured() {
    let http = |config: serde_json::Value| {
        Checker::parse(&json!({"type": "http", "config": config}), "checker")
    };
    let url = "https://svc.example/check";
    assert!(http(json!({"url": url, "method": "PUT", "headers": {"X-Key": "v"}})).is_ok());
    for (config, field) in [
        (
            json!({"url": url, "method": "GE T"}),
            "checker.config.method",
        ),
        (
            json!({"url": url, "headers": {"Bad Name": "v"}}),
            "checker.config.headers",
        ),
        (
            json!({"url": url, "headers": {"X-Key": "line\nbreak"}}),
            "checker.config.headers.X-Key",
        ),
        (json!({"url": url, "timeout": 0}), "checker.config.timeout"),
        (json!({"url": "file:///etc/passwd"}), "checker.config.url"),
    ] {
        let e = http(config.clone()).unwrap_err();
        assert!(e.contains(field), "{config}: {e}");
    }
    let e = Checker::parse(
        &json!({"type": "cmd", "config": {"path": "/bin/true", "timeout": "0s"}}),
        "checker",
    )
    .unwrap_err();
    assert!(e.contains("checker.config.timeout"), "{e}");
}
