//! The checkers end to end through the control plane's [`Env`]: real HTTP services on
//! loopback (a list, a signed list, a deciding service that allows, refuses, fails or hangs)
//! and real programs (acceptance item 2 of issue 15).

use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use pharos_runtime::outbound::HttpFetcher;
use pharos_shared::checks::{Candidate, Checker, Verdict, check};
use pharos_shared::config::Settings;
use pharos_shared::jose::{Algorithm, Jwks, Signer, SigningKey, sign};
use pharos_shared::time::ManualClock;
use serde_json::{Map, Value, json};

use super::Env;
use super::outbound::tests::serve;
use super::process::tests::script;
use crate::control_plane::ControlPlane;
use crate::control_plane::cluster::Subscription;
use crate::db::Db;

const NOW: i64 = 1_800_000_000;
const LEAF: &str = "https://leaf.example";

async fn control_plane(dir: &tempfile::TempDir) -> Arc<ControlPlane> {
    let url = format!("sqlite://{}/t.db?mode=rwc", dir.path().display());
    let db = Db::connect(&url, 4).await.unwrap();
    db.migrate().await.unwrap();
    ControlPlane::start(
        db,
        Arc::new(Settings::default()),
        ManualClock::new(NOW),
        &Subscription::alone(),
    )
    .await
    .unwrap()
}

/// Runs `checker` for the leaf (an EC with relying-party metadata) through a real `Env`.
async fn verdict(cp: &ControlPlane, checker: Value) -> (u16, String, String) {
    let checker = Checker::parse(&checker, "checker").unwrap();
    let fetcher = Arc::new(HttpFetcher::new(&cp.settings.federation));
    let env = Env::new(cp.snapshot(), fetcher, cp.checks.clone(), NOW);
    let claims: Map<String, Value> = json!({"iss": LEAF, "sub": LEAF,
        "metadata": {"openid_relying_party": {}}})
    .as_object()
    .unwrap()
    .clone();
    let types = vec!["openid_relying_party".to_owned()];
    let cand = Candidate {
        entity_id: LEAF,
        entity_types: &types,
        configuration: &claims,
        configuration_jws: "",
        trust_mark_type: None,
    };
    match check(&checker, &cand, &env).await {
        Verdict::Pass => (200, String::new(), String::new()),
        Verdict::Deny(d) => (d.status, d.error, d.error_description),
    }
}

fn key() -> SigningKey {
    SigningKey::generate(Algorithm::ES256, 0).unwrap()
}

fn signed(k: &SigningKey, claims: Value) -> String {
    sign(k, "JWT", claims.as_object().unwrap(), None).unwrap()
}

#[tokio::test]
async fn lists_served_on_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let cp = control_plane(&dir).await;
    let (good, wrong) = (key(), key());
    let jwt_ok = signed(&good, json!({"entities": [LEAF]}));
    let jwt_forged = signed(&wrong, json!({"entities": [LEAF]}));
    let router = Router::new()
        .route("/in", get(|| async { format!("[\"{LEAF}\"]") }))
        .route("/out", get(|| async { "[\"https://other.example\"]" }))
        .route("/403", get(|| async { StatusCode::FORBIDDEN }))
        .route("/500", get(|| async { StatusCode::INTERNAL_SERVER_ERROR }))
        .route("/jwt", get(move || async move { jwt_ok }))
        .route("/forged", get(move || async move { jwt_forged }));
    let base = serve(router).await;
    let list =
        |path: &str| json!({"type": "http_list", "config": {"url": format!("{base}{path}")}});
    assert_eq!(verdict(&cp, list("/in")).await.0, 200);
    assert_eq!(verdict(&cp, list("/out")).await.0, 403);
    assert_eq!(verdict(&cp, list("/403")).await.0, 500);
    assert_eq!(verdict(&cp, list("/500")).await.0, 500);
    let jwks = Jwks {
        keys: vec![good.public_jwk().clone()],
    };
    let signed_list = |path: &str| {
        json!({"type": "http_list_jwt", "config": {"url": format!("{base}{path}"),
            "verification": {"mode": "jwks", "jwks": jwks}}})
    };
    assert_eq!(verdict(&cp, signed_list("/jwt")).await.0, 200);
    let (status, error, why) = verdict(&cp, signed_list("/forged")).await;
    assert_eq!((status, error.as_str()), (500, "server_error"), "{why}");
    assert!(why.contains("does not verify"), "{why}");
}

#[tokio::test]
async fn a_deciding_service_on_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let cp = control_plane(&dir).await;
    let router = Router::new()
        .route(
            "/decide",
            post(|h: HeaderMap, body: String| async move {
                let id = h.get("x-entity-id").and_then(|v| v.to_str().ok());
                let types = h.get("x-entity-types").and_then(|v| v.to_str().ok());
                let ec: Value = serde_json::from_str(&body).unwrap_or_default();
                let ok =
                    id == Some(LEAF) && types == Some("openid_relying_party") && ec["sub"] == LEAF;
                if ok {
                    StatusCode::NO_CONTENT
                } else {
                    StatusCode::BAD_REQUEST
                }
            }),
        )
        .route(
            "/refuse",
            post(|| async { (StatusCode::FORBIDDEN, "not a member") }),
        )
        .route(
            "/fail",
            post(|| async { StatusCode::INTERNAL_SERVER_ERROR }),
        )
        .route(
            "/hang",
            post(|| async {
                tokio::time::sleep(std::time::Duration::from_secs(30)).await;
                StatusCode::OK
            }),
        );
    let base = serve(router).await;
    let http = |path: &str| json!({"type": "http", "config": {"url": format!("{base}{path}"), "timeout": "300ms"}});
    assert_eq!(verdict(&cp, http("/decide")).await.0, 200);
    let refused = verdict(&cp, http("/refuse")).await;
    assert_eq!(refused, (403, "forbidden".into(), "not a member".into()));
    assert_eq!(verdict(&cp, http("/fail")).await.0, 502);
    let (status, error, _) = verdict(&cp, http("/hang")).await;
    assert_eq!((status, error.as_str()), (502, "server_error"));
    let closed = json!({"type": "http", "config": {"url": "http://127.0.0.1:1/"}});
    assert_eq!(verdict(&cp, closed).await.0, 502);
}

#[tokio::test]
async fn programs_decide() {
    let dir = tempfile::tempdir().unwrap();
    let cp = control_plane(&dir).await;
    let cmd = |path: String| json!({"type": "cmd", "config": {"path": path, "timeout": "300ms"}});
    let ok = script(
        &dir,
        "ok.sh",
        r#"[ "$ENTITY_ID" = "https://leaf.example" ] && grep -q openid_relying_party"#,
    );
    assert_eq!(verdict(&cp, cmd(ok)).await.0, 200);
    let no = script(&dir, "no.sh", "echo '  unknown organisation  ' >&2; exit 3");
    let refused = verdict(&cp, cmd(no)).await;
    // What the program said goes to the log, not to the (anonymous) caller.
    assert_eq!(
        refused,
        (
            403,
            "forbidden".into(),
            "the entity check refused the entity".into()
        )
    );
    let slow = script(&dir, "slow.sh", "sleep 30");
    assert_eq!(verdict(&cp, cmd(slow)).await.0, 500);
    let missing = dir.path().join("missing").display().to_string();
    let (status, _, description) = verdict(&cp, cmd(missing)).await;
    assert_eq!(
        (status, description.as_str()),
        (500, "the entity check could not run")
    );
}
