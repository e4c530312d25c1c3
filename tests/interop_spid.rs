//! Interoperability with SPID/CIE-style federations (issue 23, `docs/interop.md`): an
//! independent library, Python's `cryptojwt` (the JOSE library of spid-cie-oidc), signs a
//! federation shaped as spid-cie-oidc-django publishes one — an anchor with
//! `constraints.max_path_length` in its own Entity Configuration and `trust_marks_issuers`, an
//! intermediate, leaves with Trust Marks of earlier drafts (`id`, `trust_mark_id`),
//! Subordinate Statements carrying `trust_marks` — and a loopback server here serves it; real
//! Pharos instances resolve it.
//!
//! `tests/interop_py/spid_federation.py` builds the statements. `.ci/run` installs `cryptojwt`
//! with pip; without it the tests print a notice and pass, unless
//! `PHAROS_REQUIRE_PYTHON_INTEROP=1` (set by `.ci/run`) turns its absence into a failure.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use pharos_shared::interop::{AnchorEcConstraints, Profile};
use reqwest::Method;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::resolve::{enable_resolve, error_code, resolve, verified};
use crate::support::{Pharos, TestDb, backends, enc};

/// Whether `python3` can import `cryptojwt`; prints the skip notice when it cannot, and fails
/// the test instead when `PHAROS_REQUIRE_PYTHON_INTEROP=1`.
pub(crate) fn cryptojwt_available() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import cryptojwt"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("PHAROS_REQUIRE_PYTHON_INTEROP").map_or(true, |v| v != "1"),
            "python3 with cryptojwt is required (PHAROS_REQUIRE_PYTHON_INTEROP=1): \
             python3 -m pip install cryptojwt"
        );
        eprintln!("NOTICE: python3 cryptojwt not found; the SPID-style interop tests are skipped");
    }
    ok
}

/// One federation as the Python script printed it.
pub(crate) struct Federation {
    entities: HashMap<String, String>,
    ta_jwks: Value,
    pub(crate) marks: HashMap<String, String>,
    pub(crate) types: HashMap<String, String>,
    /// The leaves' own Entity Configuration claims (unverified), for the expected metadata.
    leaf_metadata: HashMap<String, Value>,
}

impl Federation {
    pub(crate) fn id(&self, name: &str) -> &str {
        &self.entities[name]
    }
}

/// What the loopback server serves: (path, `sub` query parameter) → compact JWS.
type Documents = HashMap<(String, Option<String>), String>;

/// Runs the script for one federation under `base`/`prefix`; adds its statements to `docs`.
/// `leaf_hint`: a further superior the leaves name in their `authority_hints`.
async fn generate(
    base: &str,
    prefix: &str,
    max_path_length: u32,
    docs: &mut Documents,
    leaf_hint: Option<&str>,
) -> Federation {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop_py");
    let mut args = vec![
        "spid_federation.py".to_owned(),
        base.to_owned(),
        prefix.to_owned(),
        max_path_length.to_string(),
    ];
    args.extend(leaf_hint.map(str::to_owned));
    let out = tokio::task::spawn_blocking(move || {
        Command::new("python3")
            .args(&args)
            .current_dir(&script)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "spid_federation.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let strings =
        |k: &str| -> HashMap<String, String> { serde_json::from_value(v[k].clone()).unwrap() };
    let entities = strings("entities");
    let mut leaf_metadata = HashMap::new();
    for d in v["documents"].as_array().unwrap() {
        let (path, sub, jws) = (
            d[0].as_str().unwrap().to_owned(),
            d[1].as_str().map(str::to_owned),
            d[2].as_str().unwrap().to_owned(),
        );
        if sub.is_none() {
            let claims = pharos_shared::jose::decode_unverified(&jws).unwrap().claims;
            let name = entities
                .iter()
                .find(|(_, id)| claims["sub"] == id.as_str())
                .map(|(n, _)| n.clone())
                .unwrap();
            leaf_metadata.insert(name, claims["metadata"].clone());
        }
        docs.insert((path, sub), jws);
    }
    Federation {
        entities,
        ta_jwks: v["ta_jwks"].clone(),
        marks: strings("marks"),
        types: strings("types"),
        leaf_metadata,
    }
}

async fn serve_document(
    State(docs): State<Arc<Documents>>,
    uri: Uri,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    // A listing is the subjects of the superior's statements (the entity collection walks it).
    if let Some(base) = uri.path().strip_suffix("/list") {
        let fetch = format!("{base}/fetch");
        let mut subs: Vec<&String> = docs
            .keys()
            .filter(|(path, _)| *path == fetch)
            .filter_map(|(_, sub)| sub.as_ref())
            .collect();
        subs.sort();
        let body = serde_json::to_string(&subs).unwrap();
        return ([(header::CONTENT_TYPE, "application/json")], body).into_response();
    }
    let key = (uri.path().to_owned(), q.get("sub").cloned());
    match docs.get(&key) {
        Some(jws) => (
            [(header::CONTENT_TYPE, "application/entity-statement+jwt")],
            jws.clone(),
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// Two SPID-style federations on one loopback server: `mpl1` (the anchor allows one
/// intermediate, as SPID anchors do) and `mpl0` (it allows none).
pub(crate) async fn federations() -> (Federation, Federation, tokio::task::JoinHandle<()>) {
    federations_naming(None).await
}

/// [`federations`] whose leaves also name `leaf_hint` as a superior (enrollment requires it).
async fn federations_naming(
    leaf_hint: Option<&str>,
) -> (Federation, Federation, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut docs = Documents::new();
    let one = generate(&base, "mpl1", 1, &mut docs, leaf_hint).await;
    let zero = generate(&base, "mpl0", 0, &mut docs, leaf_hint).await;
    let app = Router::new()
        .fallback(serve_document)
        .with_state(Arc::new(docs));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (one, zero, task)
}

/// The leaf's metadata after the chain's policies (spid-cie-oidc's default policy and the
/// intermediate's): `grant_types` reduced by `subset_of`, the intermediate's contact added.
fn expected_metadata(fed: &Federation, leaf: &str) -> Value {
    let mut md = fed.leaf_metadata[leaf].clone();
    let rp = &mut md["openid_relying_party"];
    rp["grant_types"] = json!(["refresh_token", "authorization_code"]);
    let own = rp["contacts"][0].clone();
    rp["contacts"] = json!([own, "tech@ia.interop.example"]);
    md
}

/// The resolve response's `trust_marks`: the mark under the type the anchor admits it as,
/// named `trust_mark_type` (and `id`, `federation.trust_mark_legacy_id` being on by default).
fn expected_marks(fed: &Federation, leaf: &str, kind: &str) -> Value {
    let t = &fed.types[kind];
    json!([{"trust_mark_type": t, "trust_mark": fed.marks[leaf], "id": t}])
}

/// Resolves `leaf` of `fed` to its anchor: status, error code (empty on 200) and body.
async fn status(r: &Pharos, fed: &Federation, leaf: &str) -> (u16, String, String) {
    let (s, body) = resolve(r, fed.id(leaf), &[fed.id("ta")], &[]).await;
    let code = if s == 200 {
        String::new()
    } else {
        error_code(&body)
    };
    (s, code, body)
}

/// Replaces the anchor's record with its pinned keys and `anchor_ec_constraints: rule`.
async fn set(r: &Pharos, fed: &Federation, rule: Value) -> (u16, Value) {
    let ta = fed.id("ta");
    let body = json!({"entity_id": ta, "jwks": fed.ta_jwks, "anchor_ec_constraints": rule});
    r.admin(
        Method::PUT,
        &format!("/trust-anchors/{}", enc(ta)),
        Some(body),
    )
    .await
}

#[tokio::test]
async fn spid_style_leaves_resolve_with_their_draft_era_trust_marks() {
    if !cryptojwt_available() {
        return;
    }
    let (fed, _, server) = federations().await;
    let ta = fed.id("ta").to_owned();
    for b in backends() {
        let db = TestDb::new(b).await;
        let r = Pharos::start(&db).await;
        enable_resolve(&r, json!({"allowed_trust_anchors": [ta]})).await;
        for (leaf, kind, chain_len) in [
            ("leaf-old", "public", 4),
            ("leaf-2025", "private", 4),
            ("leaf-direct", "public", 3),
        ] {
            let (s, body) = resolve(&r, fed.id(leaf), &[&ta], &[]).await;
            assert_eq!(s, 200, "{b:?} {leaf}: {body}");
            let c = verified(&r, &body).await;
            assert_eq!(c["sub"], fed.id(leaf));
            assert_eq!(
                c["trust_chain"].as_array().unwrap().len(),
                chain_len,
                "{leaf}"
            );
            assert_eq!(c["metadata"], expected_metadata(&fed, leaf), "{b:?} {leaf}");
            // leaf-direct also carries a mark from an issuer the anchor does not list.
            assert_eq!(
                c["trust_marks"],
                expected_marks(&fed, leaf, kind),
                "{b:?} {leaf}"
            );
        }
        r.stop().await;
    }
    server.abort();
}

#[tokio::test]
async fn anchor_ec_constraints_apply_ignore_refuse_and_the_strict_profile() {
    if !cryptojwt_available() {
        return;
    }
    let (_, fed, server) = federations().await;
    let ta = fed.id("ta").to_owned();
    let path = format!("/trust-anchors/{}", enc(&ta));
    for b in backends() {
        let db = TestDb::new(b).await;
        let mut r = Pharos::start(&db).await;
        enable_resolve(&r, json!({"allowed_trust_anchors": [ta]})).await;
        let (s, rec) = r
            .admin(
                Method::POST,
                "/trust-anchors",
                Some(json!({"entity_id": ta, "jwks": fed.ta_jwks})),
            )
            .await;
        assert_eq!(s, 201, "{rec}");
        assert_eq!(rec["anchor_ec_constraints"], Value::Null);

        // apply (the default): max_path_length 0 forbids the intermediate, not a direct leaf.
        let (s, code, body) = status(&r, &fed, "leaf-old").await;
        assert_eq!(
            (s, code.as_str()),
            (400, "invalid_trust_chain"),
            "{b:?} {body}"
        );
        assert!(body.contains("max_path_length 0"), "{body}");
        assert_eq!(status(&r, &fed, "leaf-direct").await.0, 200, "{b:?}");

        // ignore (the anchor's override): the chain through the intermediate is accepted.
        let (s, rec) = set(&r, &fed, json!("ignore")).await;
        assert_eq!(
            (s, &rec["anchor_ec_constraints"]),
            (200, &json!("ignore")),
            "{rec}"
        );
        let (s, _, body) = status(&r, &fed, "leaf-old").await;
        assert_eq!(s, 200, "{b:?} {body}");
        assert_eq!(
            verified(&r, &body).await["trust_chain"]
                .as_array()
                .unwrap()
                .len(),
            4
        );

        // refuse: every chain to the anchor is refused, the anchor's own included.
        assert_eq!(set(&r, &fed, json!("refuse")).await.0, 200);
        for leaf in ["leaf-old", "leaf-direct", "ta"] {
            let (s, code, body) = status(&r, &fed, leaf).await;
            assert_eq!(
                (s, code.as_str()),
                (400, "invalid_trust_chain"),
                "{b:?} {leaf}: {body}"
            );
        }

        // A value that is not a rule: 400, nothing changed.
        let (s, err) = set(&r, &fed, json!("lenient")).await;
        assert_eq!(
            (s, &err["error"]),
            (400, &json!("invalid_request")),
            "{err}"
        );
        let (_, rec) = r.admin(Method::GET, &path, None).await;
        assert_eq!(rec["anchor_ec_constraints"], "refuse");

        // The override survives a restart; `federation.profile: strict` refuses whatever it says.
        assert_eq!(set(&r, &fed, json!("ignore")).await.0, 200);
        r.settings.federation.profile = Profile::Strict;
        r = r.restart().await;
        let (_, rec) = r.admin(Method::GET, &path, None).await;
        assert_eq!(rec["anchor_ec_constraints"], "ignore", "{b:?}");
        for leaf in ["leaf-old", "leaf-direct"] {
            let (s, code, body) = status(&r, &fed, leaf).await;
            assert_eq!(
                (s, code.as_str()),
                (400, "invalid_trust_chain"),
                "{b:?} {leaf}: {body}"
            );
        }

        // Back to the interop profile with `federation.anchor_ec_constraints: refuse`: the
        // record's override (ignore) wins; once cleared, the setting decides.
        r.settings.federation.profile = Profile::Interop;
        r.settings.federation.anchor_ec_constraints = AnchorEcConstraints::Refuse;
        r = r.restart().await;
        assert_eq!(status(&r, &fed, "leaf-old").await.0, 200, "{b:?}");
        let (s, rec) = set(&r, &fed, Value::Null).await;
        assert_eq!(
            (s, &rec["anchor_ec_constraints"]),
            (200, &Value::Null),
            "{rec}"
        );
        let (s, code, body) = status(&r, &fed, "leaf-direct").await;
        assert_eq!(
            (s, code.as_str()),
            (400, "invalid_trust_chain"),
            "{b:?} {body}"
        );
        r.stop().await;
    }
    server.abort();
}

/// Issue 23 acceptance 2: the enrollment `trust_path` checker applies the same anchor rules as
/// resolve (its anchors come from `anchor_spec`): with `max_path_length: 0` in the anchor's
/// Entity Configuration, a leaf behind the intermediate is refused under `apply` and enrolled
/// under `ignore`; a leaf directly under the anchor is enrolled either way.
#[tokio::test]
async fn the_trust_path_checker_follows_the_anchor_rules() {
    if !cryptojwt_available() {
        return;
    }
    for b in backends() {
        let db = TestDb::new(b).await;
        let r = Pharos::start(&db).await;
        // The leaves name r as a superior: enrollment requires it (issue 31).
        let (_, fed, server) = federations_naming(Some(r.entity_id())).await;
        let ta = fed.id("ta").to_owned();
        let (s, rec) = r
            .admin(
                Method::POST,
                "/trust-anchors",
                Some(json!({"entity_id": ta, "jwks": fed.ta_jwks})),
            )
            .await;
        assert_eq!(s, 201, "{rec}");
        let check = json!({"checker": {"type": "trust_path", "config": {"trust_anchors": [ta]}}});
        crate::support::enable(&r, "enroll", "/enroll", check).await;
        let enroll = |leaf: &str| {
            let url = format!("/enroll?sub={}", enc(fed.id(leaf)));
            let r = &r;
            async move {
                let resp = r.get(&url).await;
                let s = resp.status().as_u16();
                (s, resp.text().await.unwrap())
            }
        };
        let (s, body) = enroll("leaf-old").await;
        assert_eq!(
            s, 403,
            "{b:?} apply must refuse the chain through the intermediate: {body}"
        );
        let (s, body) = enroll("leaf-direct").await;
        assert_eq!(s, 201, "{b:?} {body}");
        assert_eq!(set(&r, &fed, json!("ignore")).await.0, 200);
        let (s, body) = enroll("leaf-old").await;
        assert_eq!(s, 201, "{b:?} ignore accepts it: {body}");
        r.stop().await;
        server.abort();
    }
}
