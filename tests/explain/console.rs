//! The explainer's console page in Debian's headless Chromium (`tests/console/explain.mjs`),
//! against the three-level federation of [`super`] with hostile text and a `logo_uri` in the
//! leaf's metadata (shown as text, never loaded) and a second leaf whose keys its superior
//! publishes wrongly: each operator's before and after in the table, the failing step in
//! words, axe-core without serious or critical violations, screenshots in
//! `target/console-screenshots/explain/`. Skipped with a notice when the browser, Node.js or
//! the test's `node_modules` are missing, unless `PHAROS_REQUIRE_BROWSER=1` makes that a
//! failure (see [`crate::console::browser_available`]).

use std::path::PathBuf;
use std::sync::Arc;

use pharos_shared::time::SystemClock;
use reqwest::Method;
use serde_json::json;

use super::{Node, RP, federation};
use crate::console::{browser_available, run_script};

#[tokio::test]
async fn the_explainer_page_shows_each_step_as_text_in_a_real_browser() {
    if !browser_available() {
        return;
    }
    let f = federation(Arc::new(SystemClock)).await;
    let hostile = "<img src=x onerror=alert(1)>leaf";
    let rp = json!({"client_name": hostile, "contacts": ["ops@leaf.example"],
        "grant_types": ["authorization_code", "refresh_token", "implicit"],
        "client_registration_types": ["automatic"],
        "logo_uri": "https://evil.example/logo.png"});
    let path = format!("/entity-configuration/metadata/{RP}");
    f.l.admin(Method::PUT, &path, rp).await;

    // A second leaf under I, which I registered with someone else's keys.
    let broken = Node::start(Arc::new(SystemClock)).await;
    let md = json!({"client_name": "broken", "client_registration_types": ["automatic"]});
    broken.admin(Method::PUT, &path, md).await;
    let wrong = f.r.p.entity_configuration().await.claims["jwks"].clone();
    let body = json!({"entity_id": broken.id(), "jwks": wrong});
    f.i.admin(Method::POST, "/subordinates", body).await;
    broken
        .admin(
            Method::POST,
            "/entity-configuration/authority-hints",
            json!({"entity_id": f.i.id()}),
        )
        .await;

    let shots =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/console-screenshots/explain");
    let line = json!({"parameter": "grant_types", "operator": "subset_of",
        "before": ["authorization_code", "refresh_token", "implicit"],
        "after": ["authorization_code", "refresh_token"]});
    let envs = [
        ("PHAROS_URL", f.r.p.url("")),
        ("SUBJECT", f.l.id()),
        ("ANCHOR", f.ta.id()),
        ("HOSTILE_NAME", hostile.to_owned()),
        ("OPERATOR_LINE", line.to_string()),
        ("BROKEN_SUBJECT", broken.id()),
        ("BROKEN_STEP", "the signature of statement 0".to_owned()),
        ("SCREENSHOTS", shots.display().to_string()),
    ];
    let report = run_script("explain.mjs", envs.to_vec()).await;
    assert_eq!(
        report["steps"],
        json!(["page", "resolved", "failed", "dark mode"]),
        "{report}"
    );
    for name in [
        "20-explain-resolved",
        "21-explain-failed",
        "22-explain-failed-dark",
    ] {
        assert!(shots.join(format!("{name}.png")).exists(), "{name}");
    }
}
