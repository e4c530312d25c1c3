//! The admin console in a real browser (issue 21, acceptance 1, 2 and 4): a real Pharos with
//! statistics on and recorded requests, then `tests/console/console.mjs` drives Debian's
//! headless Chromium through it (playwright-core) with the network closed except for Pharos:
//! sign in, create a subordinate, approve a pending enrollment request, disable an endpoint,
//! read the statistics plots, with axe-core on every page. Screenshots go to
//! `target/console-screenshots/`. Afterwards the changes are checked here through the Admin
//! API and the signed Entity Configuration.
//!
//! Without Chromium (`/usr/bin/chromium`, or `PHAROS_CHROMIUM`), Node.js or the test's
//! `node_modules` the test prints a notice and passes, unless `PHAROS_REQUIRE_BROWSER=1` (set
//! by `.ci/run`), which makes their absence a failure.
//!
//! The file assets themselves (types, ETags, 404s, CSP) are checked without a browser below.

use std::path::PathBuf;
use std::process::Command;

use reqwest::Method;
use serde_json::{Value, json};

use crate::enroll::{ask, relying_party};
use crate::stats::{flush, known_traffic, stats_on};
use crate::support::{Pharos, TestDb, backends, enable, enc};

fn console_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/console")
}

fn chromium() -> PathBuf {
    std::env::var_os("PHAROS_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
}

/// Whether the browser test can run; prints why not, or fails under `PHAROS_REQUIRE_BROWSER=1`.
fn browser_available() -> bool {
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let missing: Vec<String> = [
        (!chromium().exists())
            .then(|| format!("{} (apt-get install chromium)", chromium().display())),
        (!node).then(|| "node (apt-get install nodejs npm)".to_owned()),
        (!console_dir().join("node_modules/playwright-core").exists())
            .then(|| "tests/console/node_modules (npm ci in tests/console)".to_owned()),
    ]
    .into_iter()
    .flatten()
    .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var("PHAROS_REQUIRE_BROWSER").map_or(true, |v| v != "1"),
        "the console browser test is required (PHAROS_REQUIRE_BROWSER=1) but is missing: {}",
        missing.join(", ")
    );
    eprintln!(
        "NOTICE: console browser test skipped; missing: {}",
        missing.join(", ")
    );
    false
}

#[tokio::test]
async fn an_operator_runs_the_federation_from_the_console_in_a_real_browser() {
    if !browser_available() {
        return;
    }
    for b in backends() {
        let (db, db_leaf) = (TestDb::new(b).await, TestDb::new(b).await);
        let mut p = Pharos::start_with(
            &db,
            stats_on(&db),
            std::sync::Arc::new(pharos_shared::time::SystemClock),
        )
        .await;
        let leaf = Pharos::start(&db_leaf).await;
        relying_party(&leaf).await;
        crate::enroll::names_superior(&leaf, &p).await;
        enable(&p, "fetch", "/fetch", json!({})).await;
        enable(&p, "list", "/list", json!({})).await;
        enable(&p, "enroll_request", "/enroll-request", json!({})).await;
        enable(&p, "trust_mark", "/trust-mark", json!({})).await;
        // A pending enrollment request, as an entity makes it.
        let a = ask(&p, "/enroll-request", leaf.entity_id(), &[]).await;
        assert_eq!(a.status, 202, "{}", a.body);
        // A pending trust mark request.
        let (tm_type, tm_subject) = ("https://tm.console.example/member", "https://rp.tm.example");
        for (path, body) in [
            ("/trust-marks/types", json!({"trust_mark_type": tm_type})),
            (
                "/trust-marks/issuance-spec",
                json!({"trust_mark_type": tm_type}),
            ),
            (
                "/trust-marks/issuance-spec/1/subjects",
                json!({"entity_id": tm_subject, "status": "pending"}),
            ),
        ] {
            let (s, v) = p.admin(Method::POST, path, Some(body)).await;
            assert_eq!(s, 201, "{path}: {v}");
        }
        let user = json!({"username": "alice", "password": "correct horse"});
        let (s, v) = p.admin(Method::POST, "/users", Some(user)).await;
        assert_eq!(s, 201, "{v}");
        p.login("alice", "correct horse");
        // Requests of known shape, recorded: the statistics page must draw exactly them.
        known_traffic(&p).await;
        flush(&p).await;
        let (s, summary) = p.admin(Method::GET, "/stats/summary", None).await;
        assert_eq!(s, 200, "{summary}");
        let total = summary["summary"]["total_requests"].as_i64().unwrap();
        assert!(total >= 6, "{summary}");

        // A hosted entity with a subordinate of its own, for the entity switcher.
        let hosted = format!("{}/test", p.entity_id());
        let body = json!({"entity_id": hosted, "display_name": "Test federation"});
        let (s, v) = p.admin(Method::POST, "/entities", Some(body)).await;
        assert_eq!(s, 201, "{v}");
        let hosted_sub = "https://rp.hosted.example";
        let body = json!({"entity_id": hosted_sub,
            "jwks": {"keys": [crate::support::jwk("hosted-key", None)]}});
        let path = format!("/entities/{}/subordinates", v["id"]);
        let (s, v) = p.admin(Method::POST, &path, Some(body)).await;
        assert_eq!(s, 201, "{v}");

        let new_entity = "https://rp.console.example";
        let tm_new_subject = "https://op.tm.example";
        let new_anchor = "https://ta.console.example";
        let new_jwks = json!({"keys": [crate::support::jwk("console-key", None)]});
        let shots = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/console-screenshots")
            .join(format!("{b:?}").to_lowercase());
        let expect = json!({"total": total, "endpoint": ".well-known/openid-federation",
            "endpoint_count": 3, "user_agent": "alpha/1", "country": "GB"});
        let envs = [
            ("PHAROS_URL", p.url("")),
            ("PHAROS_MAIN_URL", p.main_url("")),
            ("ENTITY_ID", p.entity_id().to_owned()),
            ("PHAROS_USER", "alice".to_owned()),
            ("PHAROS_PASSWORD", "correct horse".to_owned()),
            ("PENDING_ENTITY", leaf.entity_id().to_owned()),
            ("NEW_ENTITY", new_entity.to_owned()),
            ("HOSTED_ENTITY", hosted.clone()),
            ("HOSTED_SUB", hosted_sub.to_owned()),
            ("NEW_JWKS", new_jwks.to_string()),
            ("NEW_ANCHOR", new_anchor.to_owned()),
            ("DISABLE_ENDPOINT", "list".to_owned()),
            ("TM_TYPE", tm_type.to_owned()),
            ("TM_SUBJECT", tm_subject.to_owned()),
            ("TM_NEW_SUBJECT", tm_new_subject.to_owned()),
            ("ROLE", "Trust anchor and trust mark issuer".to_owned()),
            ("EXPECT", expect.to_string()),
            ("SCREENSHOTS", shots.display().to_string()),
            ("CHROMIUM", chromium().display().to_string()),
        ];
        // On a blocking thread, so that both Pharos instances keep serving the browser.
        let out = tokio::task::spawn_blocking(move || {
            Command::new("node")
                .arg("console.mjs")
                .current_dir(console_dir())
                .envs(envs)
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{b:?}: {stdout}\n{stderr}");
        let report: Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(report["ok"], true, "{report}");
        assert_eq!(report["blocked"], json!([]), "{report}");

        // What the browser did is what the API and the signed Entity Configuration say.
        let (s, rec) = p
            .admin(
                Method::GET,
                &format!("/subordinates/{}", enc(new_entity)),
                None,
            )
            .await;
        assert_eq!(s, 200, "{rec}");
        assert_eq!(rec["status"], "active");
        assert_eq!(rec["jwks"], new_jwks);
        let (_, rec) = p
            .admin(
                Method::GET,
                &format!("/subordinates/{}", enc(leaf.entity_id())),
                None,
            )
            .await;
        assert_eq!(rec["status"], "active", "{rec}");
        let (s, ta) = p
            .admin(
                Method::GET,
                &format!("/trust-anchors/{}", enc(new_anchor)),
                None,
            )
            .await;
        assert_eq!(s, 200, "{ta}");
        assert_eq!(ta["jwks"], new_jwks);
        let path = format!("/trust-marks/issuance-spec/1/subjects/{}", enc(tm_subject));
        let (_, subject) = p.admin(Method::GET, &path, None).await;
        assert_eq!(subject["status"], "active", "{subject}");
        let path = format!(
            "/trust-marks/issuance-spec/1/subjects/{}",
            enc(tm_new_subject)
        );
        let (_, subject) = p.admin(Method::GET, &path, None).await;
        assert_eq!(subject["status"], "active", "{subject}");
        let (_, ep) = p
            .admin(Method::GET, "/federation-endpoints/list", None)
            .await;
        assert_eq!(ep["path"], Value::Null, "{ep}");
        let ec = p.entity_configuration().await.claims;
        let fe = &ec["metadata"]["federation_entity"];
        assert!(fe.get("federation_list_endpoint").is_none(), "{ec:?}");
        assert!(fe.get("federation_fetch_endpoint").is_some(), "{ec:?}");
        for name in [
            "01-login",
            "02-overview",
            "03-subordinates",
            "04-subordinate-detail",
            "05-trust-anchors",
            "06-trust-marks",
            "07-endpoints",
            "09-statistics",
            "10-subordinates-hosted",
            "11-statistics-dark",
        ] {
            assert!(shots.join(format!("{name}.png")).exists(), "{name}");
        }
        leaf.stop().await;
        p.stop().await;
    }
}

#[tokio::test]
async fn console_files_are_served_with_types_etags_and_a_strict_policy() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let p = Pharos::start(&db).await;
    let get = |path: &str| p.client.get(p.url(path));
    let r = get("/console/").send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/html; charset=utf-8");
    let csp = r.headers()["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"));
    let html = r.text().await.unwrap();
    assert!(
        html.contains("<script type=\"module\" src=\"app.js\">"),
        "{html}"
    );

    let r = get("/console/app.js").send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    let etag = r.headers()["etag"].clone();
    let again = get("/console/app.js")
        .header("if-none-match", etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    let css = get("/console/console.css").send().await.unwrap();
    assert_eq!(css.headers()["content-type"], "text/css; charset=utf-8");

    let missing = get("/console/missing.js").send().await.unwrap();
    assert_eq!(missing.status(), 404);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["error"], "not_found");
    let r = p.client.get(p.url("/console")).send().await.unwrap();
    assert_eq!(r.url().path(), "/console/", "redirected to the page");
    p.stop().await;
}

#[tokio::test]
async fn a_script_gets_no_basic_challenge_so_the_console_form_stays_in_charge() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let mut p = Pharos::start(&db).await;
    let user = json!({"username": "alice", "password": "correct horse"});
    assert_eq!(p.admin(Method::POST, "/users", Some(user)).await.0, 201);
    p.login("alice", "wrong");
    let url = p.url("/api/v1/admin/kms");
    let plain = p
        .client
        .get(&url)
        .basic_auth("alice", Some("wrong"))
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), 401);
    assert!(plain.headers().contains_key("www-authenticate"));
    let script = p
        .client
        .get(&url)
        .basic_auth("alice", Some("wrong"))
        .header("x-requested-with", "XMLHttpRequest")
        .send()
        .await
        .unwrap();
    assert_eq!(script.status(), 401);
    assert!(!script.headers().contains_key("www-authenticate"));
    let body: Value = script.json().await.unwrap();
    assert_eq!(body["error_description"], "invalid credentials");
    p.stop().await;
}

#[tokio::test]
async fn the_console_lives_on_the_admin_port_when_the_api_has_its_own() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let plain = reqwest::Client::builder().no_proxy().build().unwrap();
    let p = Pharos::start_separate_admin(&db, |_| {}, plain.clone()).await;
    let admin = format!("{}/console/", p.admin_base.as_deref().unwrap());
    let r = plain.get(&admin).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().contains("Pharos console"));
    let main = plain.get(p.main_url("/console/")).send().await.unwrap();
    assert_eq!(main.status(), 404, "not on the public port");
    p.stop().await;
}
