//! A post-quantum federation (issue 35, acceptance 1): a trust anchor signing with ML-DSA-65, an
//! intermediate with ML-DSA-44 and a leaf with ML-DSA-87, resolved by a Pharos resolver signing
//! with ML-DSA-65. Every signature Pharos makes (Entity Configurations, subordinate statements,
//! the resolve response, a trust mark and its status, the historical keys) is verified by an
//! independent implementation, `dilithium-py` (pure Python FIPS 204, in
//! `tests/interop_py/ml_dsa.py`); and statements that implementation signs are accepted by the
//! resolver when signed with the key the intermediate registered, refused when signed with a key
//! Pharos has never seen.
//!
//! `.ci/run` installs `dilithium-py` with pip; without it the test prints a notice and passes,
//! unless `PHAROS_REQUIRE_PYTHON_INTEROP=1` (set by `.ci/run`) turns its absence into a failure.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use pharos_shared::jose::{self, Algorithm, Jwks};
use pharos_shared::time::SystemClock;
use reqwest::Method;
use serde_json::{Value, json};

use crate::fetch_list::enable;
use crate::resolve::{enable_resolve, error_code, resolve, verified};
use crate::support::{Pharos, TestDb, backends, enc};
use crate::trust_marks_endpoints::{TM, query, seed, status};

/// Whether `python3` can import `dilithium_py`; prints the skip notice when it cannot, and fails
/// instead when `PHAROS_REQUIRE_PYTHON_INTEROP=1`.
fn dilithium_available() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import dilithium_py.ml_dsa"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("PHAROS_REQUIRE_PYTHON_INTEROP").map_or(true, |v| v != "1"),
            "python3 with dilithium-py is required (PHAROS_REQUIRE_PYTHON_INTEROP=1): \
             python3 -m pip install dilithium-py"
        );
        eprintln!("NOTICE: python3 dilithium-py not found; the ML-DSA interop test is skipped");
    }
    ok
}

/// Runs `ml_dsa.py` with one request (on a blocking thread: Pharos keeps serving meanwhile).
async fn python(request: Value) -> Value {
    tokio::task::spawn_blocking(move || {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop_py");
        let mut child = Command::new("python3")
            .arg("ml_dsa.py")
            .current_dir(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        serde_json::to_writer(child.stdin.take().unwrap(), &request).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    })
    .await
    .unwrap()
}

/// A Pharos signing with `alg`, with its database.
struct Node {
    p: Pharos,
    _db: TestDb,
}

impl Node {
    async fn start(b: crate::support::Backend, alg: Algorithm) -> Self {
        let db = TestDb::new(b).await;
        let p = Pharos::start_with(&db, |s| s.signing.alg = alg, Arc::new(SystemClock)).await;
        Self { p, _db: db }
    }

    fn id(&self) -> String {
        self.p.entity_id().to_owned()
    }

    async fn admin(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let (s, v) = self.p.admin(method, path, body).await;
        assert!((200..300).contains(&s), "{path}: {s} {v}");
        v
    }

    /// Our Entity Configuration as served, and its `jwks`.
    async fn ec(&self) -> (String, Value) {
        let text = self
            .p
            .get("/.well-known/openid-federation")
            .await
            .text()
            .await
            .unwrap();
        let jwks = jose::decode_unverified(&text).unwrap().claims["jwks"].clone();
        (text, jwks)
    }

    async fn fetch(&self, sub: &str) -> String {
        let r = self.p.get(&format!("/fetch?sub={}", enc(sub))).await;
        assert_eq!(r.status(), 200);
        r.text().await.unwrap()
    }
}

/// Serves the statements the independent implementation signed: path → compact JWS.
type Served = Arc<Mutex<HashMap<String, String>>>;

async fn serve(State(docs): State<Served>, uri: Uri) -> Response {
    match docs.lock().unwrap().get(uri.path()) {
        Some(jws) => (
            [(header::CONTENT_TYPE, "application/entity-statement+jwt")],
            jws.clone(),
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[tokio::test]
async fn an_ml_dsa_federation_verifies_with_an_independent_implementation() {
    if !dilithium_available() {
        return;
    }
    for b in backends() {
        let ta = Node::start(b, Algorithm::MlDsa65).await;
        let ia = Node::start(b, Algorithm::MlDsa44).await;
        let leaf = Node::start(b, Algorithm::MlDsa87).await;
        let resolver = Node::start(b, Algorithm::MlDsa65).await;
        for n in [&ta, &ia] {
            let cfg = json!({"type": "fetch", "path": "/fetch"});
            n.admin(Method::POST, "/federation-endpoints", Some(cfg))
                .await;
        }
        for (sup, sub) in [(&ta, &ia), (&ia, &leaf)] {
            let (_, jwks) = sub.ec().await;
            let body = json!({"entity_id": sub.id(), "jwks": jwks});
            sup.admin(Method::POST, "/subordinates", Some(body)).await;
            let hint = json!({"entity_id": sup.id()});
            sub.admin(
                Method::POST,
                "/entity-configuration/authority-hints",
                Some(hint),
            )
            .await;
        }
        let rp = json!({"client_name": "pq leaf"});
        leaf.admin(
            Method::PUT,
            "/entity-configuration/metadata/openid_relying_party",
            Some(rp),
        )
        .await;
        enable_resolve(&resolver.p, json!({"allowed_trust_anchors": [ta.id()]})).await;
        enable(&ta.p, "trust_mark", "/trust-mark", json!({})).await;
        enable(&ta.p, "trust_mark_status", "/trust-mark-status", json!({})).await;
        enable(&ta.p, "historical_keys", "/historical-keys", json!({})).await;
        seed(&ta.p, TM, 3600, &leaf.id()).await;

        // What Pharos signed, each with the key set that must verify it and the alg it names.
        let (ta_ec, ta_jwks) = ta.ec().await;
        let (ia_ec, ia_jwks) = ia.ec().await;
        let (leaf_ec, leaf_jwks) = leaf.ec().await;
        let (_, resolver_jwks) = resolver.ec().await;
        let (s, resolved) = resolve(&resolver.p, &leaf.id(), &[&ta.id()], &[]).await;
        assert_eq!(s, 200, "{b:?} {resolved}");
        let claims = verified(&resolver.p, &resolved).await;
        assert_eq!(
            claims["metadata"]["openid_relying_party"]["client_name"],
            "pq leaf"
        );
        assert_eq!(claims["trust_chain"].as_array().unwrap().len(), 4);
        let r =
            ta.p.get(&format!("/trust-mark?{}", query(&leaf.id())))
                .await;
        assert_eq!(r.status(), 200);
        let mark = r.text().await.unwrap();
        let ta_keys: Jwks = serde_json::from_value(ta_jwks.clone()).unwrap();
        assert_eq!(status(&ta.p, &mark, &ta_keys).await, "active");
        let status_response =
            ta.p.client
                .post(ta.p.main_url("/trust-mark-status"))
                .form(&[("trust_mark", mark.as_str())])
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
        // A rotation that revokes the ML-DSA-65 key moves it to the historical keys at once,
        // signed by its successor.
        let old_kid = ta_jwks["keys"][0]["kid"].clone();
        ta.admin(
            Method::POST,
            "/kms/rotate?revoke=true&reason=superseded",
            None,
        )
        .await;
        let (_, ta_jwks_after) = ta.ec().await;
        let historical = ta.p.get("/historical-keys").await.text().await.unwrap();
        let listed = jose::decode_unverified(&historical).unwrap().claims["keys"].clone();
        assert!(
            listed
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k["kid"] == old_kid && k["alg"] == "ML-DSA-65"),
            "{listed}"
        );

        let signed = [
            ("anchor EC", &ta_ec, &ta_jwks, "ML-DSA-65"),
            ("intermediate EC", &ia_ec, &ia_jwks, "ML-DSA-44"),
            ("leaf EC", &leaf_ec, &leaf_jwks, "ML-DSA-87"),
            (
                "anchor's statement",
                &ta.fetch(&ia.id()).await,
                &ta_jwks_after,
                "ML-DSA-65",
            ),
            (
                "intermediate's statement",
                &ia.fetch(&leaf.id()).await,
                &ia_jwks,
                "ML-DSA-44",
            ),
            ("resolve response", &resolved, &resolver_jwks, "ML-DSA-65"),
            ("trust mark", &mark, &ta_jwks, "ML-DSA-65"),
            ("trust mark status", &status_response, &ta_jwks, "ML-DSA-65"),
            ("historical keys", &historical, &ta_jwks_after, "ML-DSA-65"),
        ];
        let request: Vec<Value> = signed
            .iter()
            .map(|(_, jws, jwks, _)| json!({"jws": jws, "jwks": jwks}))
            .collect();
        let answer = python(json!({"verify": request})).await;
        for ((what, _, _, alg), v) in signed.iter().zip(answer["verified"].as_array().unwrap()) {
            assert_eq!(v["ok"], true, "{b:?} {what}: {v}");
            assert_eq!(v["alg"], *alg, "{b:?} {what}");
        }

        // Statements the independent implementation signs: a leaf whose key the intermediate
        // registered resolves; one signing with a key Pharos never saw does not.
        let docs: Served = Arc::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let app = axum::Router::new().fallback(serve).with_state(docs.clone());
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let (known, unseen) = (b64(&[7; 32]), b64(&[9; 32]));
        let keys = python(json!({"keys": [
            {"alg": "ML-DSA-44", "seed": known},
            {"alg": "ML-DSA-44", "seed": unseen},
        ]}))
        .await;
        let (known_jwk, unseen_jwk) = (&keys["keys"][0], &keys["keys"][1]);
        let now = chrono_now();
        let mut sign = Vec::new();
        for (name, seed, jwk) in [("good", &known, known_jwk), ("forged", &unseen, unseen_jwk)] {
            let id = format!("{base}/{name}");
            let claims = json!({"iss": id, "sub": id, "iat": now, "exp": now + 3600,
                "jwks": {"keys": [jwk]}, "authority_hints": [ia.id()],
                "metadata": {"openid_relying_party": {"client_name": name}}});
            sign.push(
                json!({"alg": "ML-DSA-44", "seed": seed, "typ": "entity-statement+jwt",
                "claims": claims}),
            );
            // The intermediate registers both under the key it was given: the known one.
            let body = json!({"entity_id": id, "jwks": {"keys": [known_jwk]}});
            ia.admin(Method::POST, "/subordinates", Some(body)).await;
        }
        let statements = python(json!({"sign": sign})).await;
        for (i, name) in ["good", "forged"].iter().enumerate() {
            let jws = statements["signed"][i].as_str().unwrap().to_owned();
            docs.lock()
                .unwrap()
                .insert(format!("/{name}/.well-known/openid-federation"), jws);
        }
        let (s, body) = resolve(&resolver.p, &format!("{base}/good"), &[&ta.id()], &[]).await;
        assert_eq!(s, 200, "{b:?} {body}");
        let c = verified(&resolver.p, &body).await;
        assert_eq!(c["metadata"]["openid_relying_party"]["client_name"], "good");
        let (s, body) = resolve(&resolver.p, &format!("{base}/forged"), &[&ta.id()], &[]).await;
        assert_ne!(
            s, 200,
            "{b:?}: a statement signed with an unseen key was accepted: {body}"
        );
        assert_eq!(error_code(&body), "invalid_trust_chain", "{b:?} {body}");
        server.abort();
        for n in [ta, ia, leaf, resolver] {
            n.p.stop().await;
        }
    }
}

/// Issue 35, acceptance 2: a Pharos signing with each composite of
/// draft-ietf-jose-pq-composite-sigs-03 (key generated, stored in each database, loaded back to
/// sign) publishes an Entity Configuration and a subordinate statement that the independent
/// implementation (dilithium-py with pyca `cryptography` for the classic half) verifies.
#[tokio::test]
async fn composite_signatures_verify_with_an_independent_implementation() {
    if !dilithium_available() {
        return;
    }
    let composites = Algorithm::COMPOSITES;
    for b in backends() {
        let mut request = Vec::new();
        for alg in composites {
            let n = Node::start(b, alg).await;
            let cfg = json!({"type": "fetch", "path": "/fetch"});
            n.admin(Method::POST, "/federation-endpoints", Some(cfg))
                .await;
            let body = json!({"entity_id": "https://leaf.example.org",
                "jwks": {"keys": [crate::support::jwk("k1", None)]}});
            n.admin(Method::POST, "/subordinates", Some(body)).await;
            let (ec, jwks) = n.ec().await;
            assert_eq!(
                jose::decode_unverified(&ec).unwrap().header["alg"],
                alg.as_str()
            );
            let statement = n.fetch("https://leaf.example.org").await;
            // Pharos's own verifier agrees, with the published keys.
            let keys: Jwks = serde_json::from_value(jwks.clone()).unwrap();
            jose::verify(&statement, &keys).unwrap();
            request.push(json!({"jws": ec, "jwks": jwks}));
            request.push(json!({"jws": statement, "jwks": jwks}));
            // Restarted, it signs with the stored key (read back from the database).
            let p = n.p.restart().await;
            let again = p
                .get("/.well-known/openid-federation")
                .await
                .text()
                .await
                .unwrap();
            let kid = |t: &str| jose::decode_unverified(t).unwrap().header["kid"].clone();
            assert_eq!(kid(&again), kid(&ec), "{b:?} {alg}");
            request.push(json!({"jws": again, "jwks": jwks}));
            p.stop().await;
        }
        let answer = python(json!({"verify": request})).await;
        for (i, v) in answer["verified"].as_array().unwrap().iter().enumerate() {
            assert_eq!(v["ok"], true, "{b:?} {}: {v}", composites[i / 3]);
            assert_eq!(v["alg"], composites[i / 3].as_str());
        }
    }
}

fn chrono_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}
