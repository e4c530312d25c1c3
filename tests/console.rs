//! The admin console in a real browser (issue 21, acceptance 1, 2 and 4): a real Pharos with
//! statistics on and recorded requests, then `tests/console/console.mjs` drives Debian's
//! headless Chromium through it (playwright-core) with the network closed except for Pharos:
//! sign in, create a subordinate and edit its metadata and policy (If-Match refusing a stale
//! edit), approve a pending enrollment request, block a subject (after a confirmation), add an
//! authority hint, schedule and perform a key rotation, disable an endpoint, read the
//! statistics plots, and show a subordinate with hostile metadata as text, with axe-core on
//! every page (issue 40, acceptance 1 and 4). Screenshots go to
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

pub fn console_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/console")
}

pub fn chromium() -> PathBuf {
    std::env::var_os("PHAROS_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
}

/// Whether the browser test can run; prints why not, or fails under `PHAROS_REQUIRE_BROWSER=1`.
pub fn browser_available() -> bool {
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
    let required = |k: &str| std::env::var(k).is_ok_and(|v| v == "1");
    assert!(
        !required("PHAROS_REQUIRE_BROWSER") && !required("PHAROS_REQUIRE_NODE"),
        "the console browser tests are required (PHAROS_REQUIRE_BROWSER=1 or PHAROS_REQUIRE_NODE=1) but miss: {}",
        missing.join(", ")
    );
    eprintln!(
        "NOTICE: console browser test skipped; missing: {}",
        missing.join(", ")
    );
    false
}

/// Runs the browser script `script` of `tests/console` with `envs` (plus `CHROMIUM`) on a
/// blocking thread, so that the Pharos instances of the test keep serving the browser; asserts
/// that it succeeded and that nothing outside Pharos was requested; returns its report.
pub async fn run_script(script: &'static str, mut envs: Vec<(&'static str, String)>) -> Value {
    envs.push(("CHROMIUM", chromium().display().to_string()));
    let out = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(script)
            .current_dir(console_dir())
            .envs(envs)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script}: {stdout}\n{stderr}");
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["blocked"], json!([]), "{report}");
    report
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
        enable(&p, "trust_mark_status", "/trust-mark-status", json!({})).await;
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

        // A subordinate with hostile metadata (shown, never run or loaded), and one to block.
        let hostile = "https://hostile.console.example";
        let long = "x".repeat(6000);
        let probe = p.url("/console/hostile-logo.png");
        let body = json!({"entity_id": hostile,
            "description": format!("<img src=\"{probe}\" onerror=\"window.pwned=true\"><script>window.pwned=true</script>{long}"),
            "jwks": {"keys": [crate::support::jwk("hostile-key", None)]}});
        let (s, v) = p.admin(Method::POST, "/subordinates", Some(body)).await;
        assert_eq!(s, 201, "{v}");
        let metadata = json!({"openid_relying_party": {
            "client_name": format!("<b onmouseover=\"window.pwned=true\">RP</b>{long}"),
            "logo_uri": probe, "policy_uri": "javascript:window.pwned=true",
            "contacts": [format!("<a href=\"javascript:window.pwned=true\">mail</a>{long}")]}});
        let path = format!("/subordinates/{}/metadata", enc(hostile));
        let (s, v) = p.admin(Method::PUT, &path, Some(metadata)).await;
        assert_eq!(s, 200, "{v}");
        let block_me = "https://blocked.console.example";
        let body = json!({"entity_id": block_me,
            "jwks": {"keys": [crate::support::jwk("block-key", None)]}});
        let (s, v) = p.admin(Method::POST, "/subordinates", Some(body)).await;
        assert_eq!(s, 201, "{v}");
        let r = p.get(&format!("/fetch?sub={}", enc(block_me))).await;
        assert_eq!(r.status(), 200, "served before it is blocked");
        let kids_before = kids(&p.entity_configuration().await.claims);
        let new_hint = "https://superior.console.example";
        let new_metadata = json!({"openid_relying_party": {"client_name": "Console RP",
            "grant_types": ["authorization_code", "refresh_token"]}});
        let new_policy = json!({"openid_relying_party": {
            "grant_types": {"subset_of": ["authorization_code"]}}});

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
            ("NEW_METADATA", new_metadata.to_string()),
            ("NEW_POLICY", new_policy.to_string()),
            ("HOSTILE_ENTITY", hostile.to_owned()),
            ("BLOCK_ENTITY", block_me.to_owned()),
            ("NEW_HINT", new_hint.to_owned()),
            ("NEW_OWNER", "https://owner.console.example".to_owned()),
            ("LEAF_URL", leaf.url("")),
            ("SCREENSHOTS", shots.display().to_string()),
        ];
        run_script("console.mjs", envs.to_vec()).await;

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
        // The daily tasks done in the browser, as the federation sees them: the authority
        // hint and the rotated keys in the signed Entity Configuration (verified with its own
        // keys), the metadata and policy in the subordinate's signed statement, and the
        // blocked subject no longer served.
        assert!(
            ec["authority_hints"]
                .as_array()
                .unwrap()
                .contains(&json!(new_hint)),
            "{ec:?}"
        );
        let kids_after = kids(&ec);
        assert!(
            kids_after.iter().any(|k| !kids_before.contains(k)),
            "{kids_before:?} → {kids_after:?}"
        );
        let (_, rotation) = p.admin(Method::GET, "/keys/rotation", None).await;
        assert_eq!(
            (rotation["enabled"].clone(), rotation["interval"].clone()),
            (json!(true), json!(720 * 3600)),
            "{rotation}"
        );
        let statement = fetch_statement(&p, &ec, new_entity).await;
        assert_eq!(statement["metadata"], new_metadata, "{statement:?}");
        assert_eq!(statement["metadata_policy"], new_policy, "{statement:?}");
        let r = p.get(&format!("/fetch?sub={}", enc(block_me))).await;
        assert_eq!(r.status(), 404, "a blocked subject is not served");
        // The trust mark subjects approved and added in the browser obtain their marks, signed
        // with the published keys, and the status endpoint says they are active.
        let keys: pharos_shared::jose::Jwks = serde_json::from_value(ec["jwks"].clone()).unwrap();
        for sub in [tm_subject, tm_new_subject] {
            let q: String = url::form_urlencoded::Serializer::new(String::new())
                .append_pair("sub", sub)
                .append_pair("trust_mark_type", tm_type)
                .finish();
            let r = p.get(&format!("/trust-mark?{q}")).await;
            assert_eq!(r.status(), 200, "{sub}");
            let mark = r.text().await.unwrap();
            let d = pharos_shared::jose::verify(&mark, &keys).unwrap();
            assert_eq!(d.claims["sub"], sub);
            assert_eq!(
                crate::trust_marks_endpoints::status(&p, &mark, &keys).await,
                "active",
                "{sub}"
            );
        }
        let (_, rec) = p
            .admin(
                Method::GET,
                &format!("/subordinates/{}", enc(new_entity)),
                None,
            )
            .await;
        assert_eq!(rec["description"], "edited in the console", "{rec}");
        let path = format!("/entity-configuration/authority-hints/{}", enc(new_hint));
        let (_, h) = p.admin(Method::GET, &path, None).await;
        assert_eq!(h["description"], "our superior", "{h}");
        let (s, owners) = p.admin(Method::GET, "/trust-marks/owners", None).await;
        assert_eq!(s, 200, "{owners}");
        assert_eq!(
            owners[0]["entity_id"], "https://owner.console.example",
            "{owners}"
        );
        let (s, bob) = p.admin(Method::GET, "/users/bob", None).await;
        assert_eq!((s, bob["username"].clone()), (200, json!("bob")), "{bob}");
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
            "03b-confirm-block",
            "04b-subordinate-edit",
            "04c-hostile-metadata",
            "13-entity-configuration",
            "14-keys",
            "15-users",
            "16-key-alarm",
            "17-trust-marks-dark",
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

/** The key ids of a signed document's `jwks`. */
fn kids(claims: &serde_json::Map<String, Value>) -> Vec<String> {
    claims["jwks"]["keys"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|k| k["kid"].as_str().map(str::to_owned))
        .collect()
}

/** The Subordinate Statement about `sub` from the fetch endpoint, verified with the keys the
 * issuer's Entity Configuration `ec` publishes. */
async fn fetch_statement(
    p: &Pharos,
    ec: &serde_json::Map<String, Value>,
    sub: &str,
) -> serde_json::Map<String, Value> {
    let r = p.get(&format!("/fetch?sub={}", enc(sub))).await;
    assert_eq!(r.status(), 200);
    let token = r.text().await.unwrap();
    let jwks: pharos_shared::jose::Jwks = serde_json::from_value(ec["jwks"].clone()).unwrap();
    pharos_shared::jose::verify(&token, &jwks).unwrap().claims
}

/// The first JSON value after `marker` in `src` (the lists of `operations.js`).
fn json_after(src: &str, marker: &str) -> Value {
    let at = src
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} not found"))
        + marker.len();
    serde_json::Deserializer::from_str(src[at..].trim_start())
        .into_iter::<Value>()
        .next()
        .unwrap()
        .unwrap()
}

/// The property names of a JSON request body's schema (`$ref`s followed).
fn body_properties(doc: &Value, op: &Value) -> Vec<String> {
    let mut s = &op["requestBody"]["content"]["application/json"]["schema"];
    while let Some(r) = s["$ref"].as_str() {
        s = &doc["components"]["schemas"][r.rsplit('/').next().unwrap()];
    }
    let mut names: Vec<String> = s["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// Issue 40: "everything the Admin API can change, the console can change", held against the
/// OpenAPI document. `controlplane/console/operations.js` lists every write the console makes
/// (its `api()` refuses any other); each documented write must be there, under a document the
/// console edits whole (a declared `PUT` on the same path or one above it), or excused with a
/// reason. A hand-written form's field list must be the request schema's properties, so a
/// field added to the API fails here until the form has it (generated forms follow by
/// themselves).
#[tokio::test]
async fn every_admin_api_write_is_in_the_console_or_excused() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let p = Pharos::start(&db).await;
    let doc: Value = p
        .get("/api/v1/admin/openapi.json")
        .await
        .json()
        .await
        .unwrap();
    p.stop().await;
    let src = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../console/operations.js"),
    )
    .unwrap();
    let declared = json_after(&src, "\nconst OPERATIONS =");
    let excused = json_after(&src, "\nexport const NOT_IN_CONSOLE =");
    let excused = excused.as_object().unwrap();
    let operation = |op: &str| -> Option<Value> {
        let (method, path) = op.split_once(' ').unwrap();
        doc["paths"][path].get(method.to_lowercase()).cloned()
    };
    let mut ops: Vec<String> = Vec::new();
    for entry in declared.as_array().unwrap() {
        let (op, fields) = match entry {
            Value::String(s) => (s.clone(), None),
            Value::Array(a) => (a[0].as_str().unwrap().to_owned(), Some(&a[1])),
            other => panic!("unexpected entry {other}"),
        };
        let documented =
            operation(&op).unwrap_or_else(|| panic!("{op} is declared but not in the document"));
        if let Some(fields) = fields {
            let mut listed: Vec<String> = serde_json::from_value(fields.clone()).unwrap();
            listed.sort();
            assert_eq!(
                listed,
                body_properties(&doc, &documented),
                "{op}: the form's fields against the schema"
            );
        }
        ops.push(op);
    }
    for op in excused.keys() {
        assert!(
            operation(op).is_some(),
            "{op} is excused but not in the document"
        );
        assert!(!ops.contains(op), "{op} is both declared and excused");
    }
    let documents: Vec<&str> = ops.iter().filter_map(|o| o.strip_prefix("PUT ")).collect();
    let mut missing = Vec::new();
    let mut writes = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        if path.starts_with("/entities/{entity}/") {
            continue; // the same operations in a hosted entity: the console's entity switcher
        }
        for method in ["post", "put", "patch", "delete"] {
            if item.get(method).is_none() {
                continue;
            }
            writes += 1;
            let op = format!("{} {path}", method.to_uppercase());
            let under_document = documents
                .iter()
                .any(|d| path == d || path.starts_with(&format!("{d}/")));
            if !ops.contains(&op) && !under_document && !excused.contains_key(&op) {
                missing.push(op);
            }
        }
    }
    assert!(writes > 100, "the document lists the writes: {writes}");
    assert!(
        missing.is_empty(),
        "Admin API writes the console cannot make: {missing:#?}"
    );
}
