//! Key sets as a CPU weapon, and Trust Mark Issuers outside the federation (issue 31).
//!
//! A resolver asked about a leaf whose statements are signed without `kid`, whose key set
//! names two keys alike, or whose key is a 16384-bit RSA key refuses the chain with a cause
//! naming the rule (before the fix each of these verified: every fitting key was tried, and
//! RSA keys of any size were used). A Trust Mark from an issuer the anchor lists but no longer
//! vouches for is dropped from the resolve response unless the anchor's record allows listed
//! issuers on their self-signed configuration; a mark from a chained issuer is kept.
//!
//! One small axum app serves the whole fake federation (`http://127.0.0.1:<port>/<name>`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::{Method, header};
use axum::response::IntoResponse;
use base64::Engine as _;
use pharos_shared::jose::{self, Algorithm, Signer as _, SigningKey};
use pharos_shared::time::{Clock, SystemClock};
use serde_json::{Map, Value, json};
use tokio::net::TcpListener;

use crate::resolve::{enable_resolve, resolve, verified};
use crate::support::{Pharos, TestDb, backends, enc};

const MEDIA_TYPE: &str = "application/entity-statement+jwt";
/// A 16384-bit RSA key (generated once with `openssl genrsa 16384`: generating one per test
/// run would take minutes).
const RSA_16384: &str = include_str!("vectors/rsa-16384.pem");
const MARK_TYPE: &str = "https://marks.example/certified";

/// How an entity signs its Entity Configuration.
#[derive(Clone, Copy, PartialEq)]
enum Hostile {
    None,
    /// No `kid` in the header.
    NoKid,
    /// A second key with the signing key's `kid` listed first in its `jwks`.
    DuplicateKid,
}

#[derive(Clone)]
struct Entity {
    key: Arc<SigningKey>,
    hints: Vec<String>,
    hostile: Hostile,
    extra: Map<String, Value>,
    /// The entities this one issues Subordinate Statements about.
    subordinates: Vec<String>,
}

struct Fed {
    base: String,
    entities: Mutex<HashMap<String, Entity>>,
}

impl Fed {
    fn id(&self, name: &str) -> String {
        format!("{}/{name}", self.base)
    }

    fn set(&self, name: &str, key: SigningKey, hints: &[&str], hostile: Hostile, extra: Value) {
        let e = Entity {
            key: Arc::new(key),
            hints: hints.iter().map(|h| self.id(h)).collect(),
            hostile,
            extra: extra.as_object().cloned().unwrap_or_default(),
            subordinates: Vec::new(),
        };
        self.entities.lock().unwrap().insert(name.to_owned(), e);
    }

    fn vouch(&self, superior: &str, sub: &str) {
        let id = self.id(sub);
        let mut all = self.entities.lock().unwrap();
        all.get_mut(superior).unwrap().subordinates.push(id);
    }

    fn entity(&self, name: &str) -> Option<Entity> {
        self.entities.lock().unwrap().get(name).cloned()
    }

    fn key(&self, name: &str) -> Arc<SigningKey> {
        self.entity(name).unwrap().key
    }

    /// The `jwks` an entity publishes (and its superior repeats about it).
    fn jwks(&self, e: &Entity) -> Value {
        let own = serde_json::to_value(e.key.public_jwk()).unwrap();
        match e.hostile {
            Hostile::DuplicateKid => {
                let other = SigningKey::generate(Algorithm::ES256, 0).unwrap();
                let mut twin = other.public_jwk().clone();
                twin.insert("kid".into(), e.key.kid().into());
                json!({"keys": [twin, own]})
            }
            _ => json!({"keys": [own]}),
        }
    }

    fn configuration(&self, name: &str) -> Option<String> {
        let e = self.entity(name)?;
        let id = self.id(name);
        let now = SystemClock.now();
        let mut claims = json!({"iss": id, "sub": id, "iat": now, "exp": now + 3600,
            "jwks": self.jwks(&e),
            "metadata": {"federation_entity": {
                "federation_fetch_endpoint": format!("{id}/fetch")}}});
        if !e.hints.is_empty() {
            claims["authority_hints"] = json!(e.hints);
        }
        let mut claims = claims.as_object().unwrap().clone();
        claims.extend(e.extra.clone());
        Some(match e.hostile {
            Hostile::NoKid => {
                let header = json!({"alg": e.key.alg().as_str(), "typ": "entity-statement+jwt"});
                let b64 = |v: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
                let input = format!(
                    "{}.{}",
                    b64(&serde_json::to_vec(&header).unwrap()),
                    b64(&serde_json::to_vec(&claims).unwrap())
                );
                let sig = e.key.sign_bytes(input.as_bytes()).unwrap();
                format!("{input}.{}", b64(&sig))
            }
            _ => jose::sign(&*e.key, "entity-statement+jwt", &claims, None).unwrap(),
        })
    }

    fn statement(&self, name: &str, sub: &str) -> Option<String> {
        let e = self.entity(name)?;
        if !e.subordinates.iter().any(|s| s == sub) {
            return None;
        }
        let s = self.entity(sub.strip_prefix(&format!("{}/", self.base))?)?;
        let now = SystemClock.now();
        let claims = json!({"iss": self.id(name), "sub": sub, "iat": now, "exp": now + 3600,
            "jwks": self.jwks(&s)});
        jose::sign(&*e.key, "entity-statement+jwt", claims.as_object()?, None).ok()
    }

    /// A Trust Mark of [`MARK_TYPE`] for `sub` issued by `issuer`.
    fn mark(&self, issuer: &str, sub: &str) -> Value {
        let claims = json!({"iss": self.id(issuer), "sub": self.id(sub),
            "trust_mark_type": MARK_TYPE, "iat": SystemClock.now() - 5});
        let jwt = jose::sign(
            &*self.key(issuer),
            "trust-mark+jwt",
            claims.as_object().unwrap(),
            None,
        )
        .unwrap();
        json!({"trust_mark_type": MARK_TYPE, "trust_mark": jwt})
    }
}

async fn serve_configuration(
    State(f): State<Arc<Fed>>,
    Path(name): Path<String>,
) -> axum::response::Response {
    match f.configuration(&name) {
        Some(jws) => ([(header::CONTENT_TYPE, MEDIA_TYPE)], jws).into_response(),
        None => axum::http::StatusCode::NOT_FOUND.into_response(),
    }
}

async fn serve_fetch(
    State(f): State<Arc<Fed>>,
    Path(name): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> axum::response::Response {
    let sub = q.get("sub").cloned().unwrap_or_default();
    match f.statement(&name, &sub) {
        Some(jws) => ([(header::CONTENT_TYPE, MEDIA_TYPE)], jws).into_response(),
        None => axum::http::StatusCode::NOT_FOUND.into_response(),
    }
}

async fn fed() -> Arc<Fed> {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let f = Arc::new(Fed {
        base: format!("http://{}", listener.local_addr().unwrap()),
        entities: Mutex::new(HashMap::new()),
    });
    let app = axum::Router::new()
        .route(
            "/{name}/.well-known/openid-federation",
            axum::routing::get(serve_configuration),
        )
        .route("/{name}/fetch", axum::routing::get(serve_fetch))
        .with_state(f.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    f
}

fn es256() -> SigningKey {
    SigningKey::generate(Algorithm::ES256, 0).unwrap()
}

/// Puts `anchor` in `p`'s trust anchor repository with its keys pinned.
async fn add_anchor(p: &Pharos, f: &Fed, anchor: &str, self_signed_issuers: bool) {
    let jwks = json!({"keys": [f.key(anchor).public_jwk()]});
    let body = json!({"entity_id": f.id(anchor), "jwks": jwks,
        "trust_mark_issuer_self_signed": self_signed_issuers});
    let (s, rec) = p.admin(Method::POST, "/trust-anchors", Some(body)).await;
    assert_eq!(s, 201, "{rec}");
    assert_eq!(rec["trust_mark_issuer_self_signed"], self_signed_issuers);
}

#[tokio::test]
async fn hostile_key_sets_are_refused_by_resolve() {
    let rsa = SigningKey::from_pem(Algorithm::RS256, RSA_16384).unwrap();
    let f = fed().await;
    f.set("ta", es256(), &[], Hostile::None, json!({}));
    f.set("no-kid", es256(), &["ta"], Hostile::NoKid, json!({}));
    f.set("twins", es256(), &["ta"], Hostile::DuplicateKid, json!({}));
    f.set("huge", rsa, &["ta"], Hostile::None, json!({}));
    f.set("fine", es256(), &["ta"], Hostile::None, json!({}));
    for leaf in ["no-kid", "twins", "huge", "fine"] {
        f.vouch("ta", leaf);
    }
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        enable_resolve(&p, json!({})).await;
        add_anchor(&p, &f, "ta", false).await;
        let ta = f.id("ta");
        let (s, body) = resolve(&p, &f.id("fine"), &[&ta], &[]).await;
        assert_eq!(s, 200, "{b:?} {body}");
        for (leaf, cause) in [
            // Chain statements were already refused without kid or with twin kids (§3.2 step
            // 11, the statement checks): kept as guards; the RSA bound is new.
            ("no-kid", "no non-empty kid"),
            ("twins", "appears twice in jwks"),
            ("huge", "RSA modulus of 16384 bits is outside 2048..=8192"),
        ] {
            let (s, body) = resolve(&p, &f.id(leaf), &[&ta], &[]).await;
            assert!((400..500).contains(&s), "{b:?} {leaf}: {s} {body}");
            assert!(body.contains(cause), "{b:?} {leaf}: {cause} in {body}");
        }
        p.stop().await;
    }
}

/// The Trust Mark issuers of a resolve response's `trust_marks`.
fn mark_issuers(claims: &Map<String, Value>) -> Vec<String> {
    let mut out: Vec<String> = claims
        .get("trust_marks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|m| {
            let jwt = m["trust_mark"].as_str().unwrap();
            let c = jose::decode_unverified(jwt).unwrap().claims;
            c["iss"].as_str().unwrap().to_owned()
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn marks_of_issuers_without_a_chain_to_the_anchor_are_dropped_unless_the_anchor_allows() {
    let f = fed().await;
    let (chained, gone) = (f.id("chained"), f.id("gone"));
    f.set(
        "ta",
        es256(),
        &[],
        Hostile::None,
        json!({"trust_mark_issuers": {MARK_TYPE: [chained, gone]}}),
    );
    f.set("chained", es256(), &["ta"], Hostile::None, json!({}));
    // Removed from the federation: still names the anchor, the anchor no longer vouches.
    f.set("gone", es256(), &["ta"], Hostile::None, json!({}));
    let marks = json!([f.mark("chained", "leaf"), f.mark("gone", "leaf")]);
    f.set(
        "leaf",
        es256(),
        &["ta"],
        Hostile::None,
        json!({"trust_marks": marks}),
    );
    f.vouch("ta", "chained");
    f.vouch("ta", "leaf");
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        enable_resolve(&p, json!({})).await;
        add_anchor(&p, &f, "ta", false).await;
        let ta = f.id("ta");
        let (s, body) = resolve(&p, &f.id("leaf"), &[&ta], &[]).await;
        assert_eq!(s, 200, "{b:?} {body}");
        let claims = verified(&p, &body).await;
        assert_eq!(mark_issuers(&claims), vec![chained.clone()], "{b:?}");
        // The anchor's record allows listed issuers on their own word: both kept. (Another
        // `entity_type` filter, so that no cached answer is reused.)
        let body = json!({"jwks": {"keys": [f.key("ta").public_jwk()]},
            "trust_mark_issuer_self_signed": true});
        let path = format!("/trust-anchors/{}", enc(&ta));
        let (s, rec) = p.admin(Method::PUT, &path, Some(body)).await;
        assert_eq!(s, 200, "{rec}");
        let types = ["openid_relying_party"];
        let (s, body) = resolve(&p, &f.id("leaf"), &[&ta], &types).await;
        assert_eq!(s, 200, "{b:?} {body}");
        let claims = verified(&p, &body).await;
        let mut both = vec![chained.clone(), gone.clone()];
        both.sort();
        assert_eq!(mark_issuers(&claims), both, "{b:?}");
        p.stop().await;
    }
}
