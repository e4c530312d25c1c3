//! Snapshots of every wire format a client parses (issue 37): the Entity Configuration, the
//! subordinate statement, the resolve response, the trust mark and its status response, the
//! list, trust mark list and entity collection pages, historical keys, enrollment, trust mark
//! request and key update answers, the answers to an authenticated client, the error bodies of
//! each endpoint (and of client authentication, the body limits, the rate limits and the Admin
//! API), the headers clients read (CORS too), the Admin API's answers to reads of each kind of
//! resource, and its OpenAPI document byte for byte.
//!
//! They were taken before the restructuring of issue 37 and are its proof of wire stability:
//! a refactoring leaves every snapshot under `tests/snapshots/` unchanged. A difference fails
//! the test (insta never passes a mismatch; with `CI` set, as in `.ci/run`, it writes no
//! `.snap.new` either); a deliberate change of a wire format is reviewed as a snapshot diff
//! (`cargo insta review`, or rename the `.snap.new` file).
//!
//! How an answer is shown ([`Wire`]): the status, its headers (but [`UNSHOWN_HEADERS`]), and
//! its body. A signed body is verified with the published keys and shown decoded (protected
//! header and claims; JWTs inside claims too, as `{"jws": …}`); every JSON text is checked to be
//! exactly the compact serialisation of what is shown, so the parsed form stands for the bytes.
//! What differs from run to run is replaced, each replacement checking the type of what it
//! hides: times by their offset from the tests' stopped clock (`[now+86400]`; the Admin API's
//! record times, which come from the system clock, as `[unix time]`), the port of an Entity ID
//! by `[port]`, a key id by the name of its owner, key coordinates, `jti`s, `ETag`s and request
//! ids by placeholders.

use std::sync::Arc;

use base64::Engine as _;
use insta::internals::Content;
use pharos_shared::jose::{self, Jwk, Jwks};
use pharos_shared::time::{Clock, ManualClock, SystemClock};
use reqwest::{Method, Response};
use serde_json::{Map, Value, json};
use sha2::Digest as _;

use crate::support::{Backend, Pharos, TestDb, enable, enc, jwk};

/// Headers left out of the snapshots: they vary per request and carry nothing of the format
/// (the body's length and framing, the date). `X-Request-Id` is shown redacted.
const UNSHOWN_HEADERS: [&str; 3] = ["content-length", "transfer-encoding", "date"];

/// Entity ID of the single instances (no port to redact).
const TA: &str = "https://ta.example.org";
const LEAF: &str = "https://leaf.example.org";
const TM: &str = "https://marks.example.org/member";

/// How the snapshots of one test show its answers (see the module documentation).
struct Wire {
    /// The instant of the test's clock, which never moves by itself.
    now: i64,
    /// Strings replaced wherever they occur (Entity IDs with ports, key ids, the clock's
    /// instant).
    names: Vec<(String, String)>,
    /// Every key learnt: signed answers must verify with one of them.
    keys: Vec<Jwk>,
}

impl Wire {
    fn new(now: i64) -> Self {
        Self {
            now,
            // The clock's instant in a description (numbers elsewhere are redacted as times).
            names: vec![(now.to_string(), "[now]".to_owned())],
            keys: Vec::new(),
        }
    }

    /// Learns `p` as `who`: the port of its Entity ID is shown as `[port]`, its keys' ids as
    /// `[kid of who]`, and what it signs verifies with its published keys.
    async fn learn(&mut self, p: &Pharos, who: &str) {
        let id = p.entity_id();
        if let Some((host, port)) = id.rsplit_once(':')
            && port.bytes().all(|b| b.is_ascii_digit())
        {
            self.names.push((id.to_owned(), format!("{host}:[port]")));
        }
        let ec = p.entity_configuration().await;
        for k in ec.claims["jwks"]["keys"].as_array().unwrap() {
            let kid = k["kid"].as_str().unwrap();
            if self.keys.iter().any(|known| known["kid"] == kid) {
                continue;
            }
            let n = self
                .names
                .iter()
                .filter(|(_, shown)| shown.starts_with(&format!("[kid of {who}")))
                .count();
            let shown = if n == 0 {
                format!("[kid of {who}]")
            } else {
                format!("[kid of {who} #{}]", n + 1)
            };
            self.names.push((kid.to_owned(), shown));
            self.keys.push(k.as_object().unwrap().clone());
        }
    }

    /// What a client sees of `r` (see the module documentation).
    async fn seen(&self, r: Response) -> Value {
        let status = r.status().as_u16();
        let headers = headers(&r);
        let content_type = headers
            .get("content-type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let text = r.text().await.unwrap();
        let body = if content_type.ends_with("+jwt") {
            self.jws(&text)
        } else if content_type.starts_with("application/json") {
            let mut v = compact_json(text.as_bytes());
            self.nested(&mut v);
            v
        } else if text.is_empty() {
            Value::Null
        } else {
            Value::String(text)
        };
        let mut v = json!({"status": status, "headers": headers, "body": body});
        self.rename(&mut v);
        v
    }

    /// The status and headers of `r`, without its body.
    fn seen_headers(&self, r: &Response) -> Value {
        let mut v = json!({"status": r.status().as_u16(), "headers": headers(r)});
        self.rename(&mut v);
        v
    }

    /// A GET on the main port, as seen.
    async fn get(&self, p: &Pharos, path: &str) -> Value {
        self.seen(p.client.get(p.main_url(path)).send().await.unwrap())
            .await
    }

    /// A form POST on the main port, as seen.
    async fn post(&self, p: &Pharos, path: &str, form: &[(&str, &str)]) -> Value {
        let r = p.client.post(p.main_url(path)).form(form).send().await;
        self.seen(r.unwrap()).await
    }

    /// Several requests' answers, keyed by the request (with `[port]` for ports).
    fn each(&self, answers: Vec<(String, Value)>) -> Value {
        let mut m = Map::new();
        for (request, answer) in answers {
            let mut k = Value::String(request);
            self.rename(&mut k);
            m.insert(k.as_str().unwrap().to_owned(), answer);
        }
        Value::Object(m)
    }

    /// A compact JWS, verified with the learnt keys, as `{"jws": {"header", "claims"}}`.
    fn jws(&self, token: &str) -> Value {
        let keys = Jwks {
            keys: self.keys.clone(),
        };
        let verified = jose::verify(token, &keys)
            .unwrap_or_else(|e| panic!("{e}: a signed answer does not verify: {token}"));
        let (header, mut claims) = decode(token);
        assert_eq!(header, Value::Object(verified.header));
        assert_eq!(claims, Value::Object(verified.claims));
        self.nested(&mut claims);
        json!({"jws": {"header": header, "claims": claims}})
    }

    /// Replaces every string inside `v` that is a JWS with its decoded, verified form.
    fn nested(&self, v: &mut Value) {
        match v {
            // A JWS inside an answer is verified too; one that does not verify (a client's
            // forgery echoed in a status response) is shown as such.
            Value::String(s) if looks_like_jws(s) => {
                let keys = Jwks {
                    keys: self.keys.clone(),
                };
                *v = if jose::verify(s, &keys).is_ok() {
                    self.jws(s)
                } else {
                    let (header, mut claims) = decode(s);
                    self.nested(&mut claims);
                    json!({"unverified_jws": {"header": header, "claims": claims}})
                };
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.nested(x)),
            Value::Object(o) => o.values_mut().for_each(|x| self.nested(x)),
            _ => {}
        }
    }

    /// Applies [`Wire::names`] to every string and object key inside `v`.
    fn rename(&self, v: &mut Value) {
        let rename = |s: &str| {
            let mut s = s.to_owned();
            for (actual, shown) in &self.names {
                s = s.replace(actual.as_str(), shown);
            }
            s
        };
        match v {
            Value::String(s) => *s = rename(s),
            Value::Array(a) => a.iter_mut().for_each(|x| self.rename(x)),
            Value::Object(o) => {
                let renamed: Map<String, Value> = std::mem::take(o)
                    .into_iter()
                    .map(|(k, mut x)| {
                        self.rename(&mut x);
                        (rename(&k), x)
                    })
                    .collect();
                *o = renamed;
            }
            _ => {}
        }
    }

    /// Asserts `v` against snapshot `name`, with the run-dependent values replaced.
    fn snapshot(&self, name: &str, v: &Value) {
        let mut s = settings();
        let now = self.now;
        for field in ["iat", "exp", "nbf", "revoked_at", "last_updated"] {
            s.add_dynamic_redaction(&format!(".**.{field}"), move |c, _| time(&c, now));
        }
        // Record times of the Admin API, read from the system clock (not the test's).
        for field in ["created_at", "updated_at", "timestamp"] {
            s.add_dynamic_redaction(&format!(".**.{field}"), |c, _| record_time(&c));
        }
        s.add_dynamic_redaction(".**.jti", |c, _| {
            let jti = c.as_str().expect("jti is a string");
            assert!(!jti.is_empty());
            "[jti]".to_owned()
        });
        for coordinate in ["x", "y", "n", "e"] {
            s.add_dynamic_redaction(&format!(".**.{coordinate}"), |c, _| base64url(&c));
        }
        s.add_dynamic_redaction(".**[\"x-request-id\"]", |c, _| {
            let id = c.as_str().expect("a request id is a string");
            assert!(!id.is_empty());
            "[request id]".to_owned()
        });
        s.add_dynamic_redaction(".**[\"retry-after\"]", |c, _| {
            let seconds = c.as_str().expect("Retry-After is a string");
            assert!(seconds.parse::<u32>().is_ok(), "{seconds}");
            "[seconds]".to_owned()
        });
        s.add_dynamic_redaction(".**.etag", |c, _| {
            let tag = c.as_str().expect("ETag is a string");
            assert!(tag.trim_start_matches("W/").starts_with('"') && tag.ends_with('"'));
            "[etag]".to_owned()
        });
        s.bind(|| insta::assert_json_snapshot!(name, v));
    }
}

/// The headers of `r` but [`UNSHOWN_HEADERS`], by name (their order carries no meaning); a
/// repeated header as a list.
fn headers(r: &Response) -> Map<String, Value> {
    let mut names: Vec<&str> = r.headers().keys().map(|n| n.as_str()).collect();
    names.sort_unstable();
    names.retain(|n| !UNSHOWN_HEADERS.contains(n));
    let mut headers = Map::new();
    for name in names {
        let values: Vec<Value> = r
            .headers()
            .get_all(name)
            .iter()
            .map(|v| Value::from(v.to_str().unwrap()))
            .collect();
        let shown = match <[Value; 1]>::try_from(values) {
            Ok([one]) => one,
            Err(many) => Value::Array(many),
        };
        headers.insert(name.to_owned(), shown);
    }
    headers
}

/// Where the snapshots are and how they are named (no module prefix: the names say it).
fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("snapshots");
    s.set_prepend_module_to_snapshot(false);
    s.set_omit_expression(true);
    s
}

/// A time, shown as its offset from the test's clock (it must be an integer).
fn time(c: &Content, now: i64) -> String {
    let t = c
        .as_i64()
        .unwrap_or_else(|| panic!("a time must be an integer: {c:?}"));
    match t - now {
        0 => "[now]".to_owned(),
        d => format!("[now{d:+}]"),
    }
}

/// A record's time, which is the system clock's: Unix seconds, or an RFC 3339 UTC string.
fn record_time(c: &Content) -> String {
    if c.as_i64().is_some() {
        return "[unix time]".to_owned();
    }
    let s = c
        .as_str()
        .unwrap_or_else(|| panic!("a time is an integer or a string: {c:?}"));
    assert!(
        s.len() == 20 && s.ends_with('Z') && s.as_bytes()[10] == b'T',
        "{s}"
    );
    "[RFC 3339 time]".to_owned()
}

/// Key material: a non-empty base64url string.
fn base64url(c: &Content) -> String {
    let s = c.as_str().expect("key material is a string");
    assert!(
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
        "{s}"
    );
    "[base64url]".to_owned()
}

/// Parses a JSON text that must be exactly the compact serialisation of its value (so that
/// the value shown in a snapshot stands for the bytes, member order included).
fn compact_json(bytes: &[u8]) -> Value {
    let v: Value = serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(bytes)));
    assert_eq!(
        serde_json::to_string(&v).unwrap(),
        String::from_utf8_lossy(bytes),
        "not compact JSON"
    );
    v
}

/// The protected header and the claims of a compact JWS (not verified), each checked to be
/// compact JSON.
fn decode(token: &str) -> (Value, Value) {
    let mut parts = token.split('.');
    let mut part = || {
        let b = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(parts.next().unwrap())
            .unwrap();
        compact_json(&b)
    };
    (part(), part())
}

fn looks_like_jws(s: &str) -> bool {
    let mut parts = s.split('.');
    let header = parts.next().unwrap_or("");
    parts.count() == 2
        && base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(header)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .is_some_and(|h| h.get("alg").is_some())
}

/// A stopped clock at the current time (real times, so that nothing that reads the system
/// clock disagrees with it).
fn stopped_clock() -> Arc<ManualClock> {
    ManualClock::new(SystemClock.now())
}

/// One instance with a fixed Entity ID (nothing in its answers depends on the port).
async fn start_fixed(db: &TestDb, entity_id: &str, clock: &Arc<ManualClock>) -> Pharos {
    let id = entity_id.to_owned();
    Pharos::start_with(db, move |s| s.entity_id = id, clock.clone()).await
}

async fn ok(p: &Pharos, method: Method, path: &str, body: Value) -> Value {
    let (s, v) = p.admin(method, path, Some(body)).await;
    assert!((200..300).contains(&s), "{path}: {s} {v}");
    v
}

#[tokio::test]
async fn entity_configuration() {
    let db = TestDb::new(Backend::Sqlite).await;
    let clock = stopped_clock();
    let p = start_fixed(&db, TA, &clock).await;
    let mut w = Wire::new(clock.now());
    w.learn(&p, "ta").await;
    let fresh = w.get(&p, "/.well-known/openid-federation").await;
    w.snapshot("entity_configuration", &fresh);

    ok(
        &p,
        Method::PUT,
        "/entity-configuration/metadata/federation_entity",
        json!({"organization_name": "Pharos Test", "homepage_uri": "https://example.org",
               "contacts": ["ops@example.org"]}),
    )
    .await;
    ok(
        &p,
        Method::PUT,
        "/entity-configuration/metadata/openid_relying_party",
        json!({"client_name": "Shop", "redirect_uris": ["https://shop.example/cb"]}),
    )
    .await;
    ok(
        &p,
        Method::POST,
        "/entity-configuration/authority-hints",
        json!({"entity_id": "https://superior.example.org"}),
    )
    .await;
    ok(
        &p,
        Method::POST,
        "/entity-configuration/additional-claims",
        json!({"claim": "x_note", "value": {"a": 1}, "crit": true}),
    )
    .await;
    let (s, _) = p
        .admin_raw(Method::PUT, "/entity-configuration/lifetime", Some("3600"))
        .await;
    assert_eq!(s, 200);
    for (kind, path) in [
        ("fetch", "/fetch"),
        ("list", "/list"),
        ("resolve", "/resolve"),
        ("trust_mark", "/trust-mark"),
        ("trust_mark_status", "/trust-mark-status"),
        ("trust_mark_listing", "/trust-mark-listing"),
        ("historical_keys", "/historical-keys"),
    ] {
        enable(&p, kind, path, json!({})).await;
    }
    let edited = w.get(&p, "/.well-known/openid-federation").await;
    let etag = edited["headers"]["etag"].as_str().unwrap().to_owned();
    let r = p
        .client
        .get(p.main_url("/.well-known/openid-federation"))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    let revalidated = w.seen(r).await;
    let answers = w.each(vec![
        ("GET /.well-known/openid-federation".into(), edited),
        (
            "GET /.well-known/openid-federation with If-None-Match".into(),
            revalidated,
        ),
        (
            "POST /.well-known/openid-federation".into(),
            w.post(&p, "/.well-known/openid-federation", &[]).await,
        ),
        (
            "GET /no-such-endpoint".into(),
            w.get(&p, "/no-such-endpoint").await,
        ),
    ]);
    w.snapshot("entity_configuration_edited", &answers);
    p.stop().await;
}

#[tokio::test]
async fn openapi_document() {
    let db = TestDb::new(Backend::Sqlite).await;
    let p = Pharos::start(&db).await;
    for (path, name) in [
        ("/api/v1/admin/openapi.json", "openapi_json"),
        ("/api/v1/admin/openapi.yaml", "openapi_yaml"),
    ] {
        let r = p.get(path).await;
        assert_eq!(r.status(), 200);
        let content_type = r.headers()["content-type"].to_str().unwrap().to_owned();
        let bytes = r.bytes().await.unwrap();
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        let digest = sha2::Sha256::digest(&bytes);
        let doc = format!(
            "content-type: {content_type}\nbytes: {}\nsha256: {}\n\n{text}",
            bytes.len(),
            digest
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        // The JSON document in full (pretty-printed as served, so a change reads as a diff); the
        // YAML one, made from the same document, by size and digest.
        let doc = if name == "openapi_json" {
            doc
        } else {
            doc.replace(&format!("\n\n{text}"), "")
        };
        settings().bind(|| insta::assert_snapshot!(name, doc));
    }
    p.stop().await;
}

/// The subordinate statement of a subordinate with keys, metadata, a metadata policy and
/// constraints, and the fetch endpoint's errors.
#[tokio::test]
async fn subordinate_statement() {
    let db = TestDb::new(Backend::Sqlite).await;
    let clock = stopped_clock();
    let p = start_fixed(&db, TA, &clock).await;
    let mut w = Wire::new(clock.now());
    w.learn(&p, "ta").await;
    enable(&p, "fetch", "/fetch", json!({})).await;
    let keys = json!({"keys": [jwk("leaf-1", None), jwk("leaf-2", Some(clock.now() + 600))]});
    let body = json!({"entity_id": LEAF, "jwks": keys,
        "registered_entity_types": ["openid_relying_party"]});
    ok(&p, Method::POST, "/subordinates", body).await;
    let sub = format!("/subordinates/{}", enc(LEAF));
    ok(
        &p,
        Method::PUT,
        &format!("{sub}/metadata/openid_relying_party"),
        json!({"client_name": "Shop", "contacts": ["ops@shop.example"]}),
    )
    .await;
    ok(
        &p,
        Method::PUT,
        &format!("{sub}/metadata-policies"),
        json!({"openid_relying_party": {"scope": {"subset_of": ["openid", "email"]},
               "contacts": {"add": ["fed@ta.example.org"]}}}),
    )
    .await;
    ok(
        &p,
        Method::PUT,
        &format!("{sub}/constraints"),
        json!({"max_path_length": 1}),
    )
    .await;
    ok(
        &p,
        Method::POST,
        "/subordinates",
        json!({"entity_id": "https://plain.example.org",
               "jwks": {"keys": [jwk("plain-1", None)]}}),
    )
    .await;
    ok(
        &p,
        Method::POST,
        "/subordinates",
        json!({"entity_id": "https://pending.example.org", "status": "pending",
               "jwks": {"keys": [jwk("pending-1", None)]}}),
    )
    .await;
    let answers = w.each(vec![
        (
            format!("GET /fetch?sub={LEAF}"),
            w.get(&p, &format!("/fetch?sub={}", enc(LEAF))).await,
        ),
        (
            "GET /fetch?sub=https://plain.example.org".into(),
            w.get(&p, "/fetch?sub=https%3A%2F%2Fplain.example.org")
                .await,
        ),
    ]);
    w.snapshot("subordinate_statement", &answers);

    let errors = w.each(vec![
        ("GET /fetch".into(), w.get(&p, "/fetch").await),
        (
            format!("GET /fetch?sub={TA} (itself)"),
            w.get(&p, &format!("/fetch?sub={}", enc(TA))).await,
        ),
        (
            "GET /fetch?sub=https://unknown.example.org".into(),
            w.get(&p, "/fetch?sub=https%3A%2F%2Funknown.example.org")
                .await,
        ),
        (
            "GET /fetch?sub=https://pending.example.org".into(),
            w.get(&p, "/fetch?sub=https%3A%2F%2Fpending.example.org")
                .await,
        ),
        (
            format!("POST /fetch sub={LEAF}"),
            w.post(&p, "/fetch", &[("sub", LEAF)]).await,
        ),
    ]);
    w.snapshot("subordinate_statement_errors", &errors);
    p.stop().await;
}

/// The list endpoint: unfiltered, filtered, and its errors.
#[tokio::test]
async fn subordinate_listing() {
    let db = TestDb::new(Backend::Sqlite).await;
    let clock = stopped_clock();
    let p = start_fixed(&db, TA, &clock).await;
    let w = Wire::new(clock.now());
    enable(&p, "list", "/list", json!({})).await;
    let empty = w.get(&p, "/list").await;
    for (id, extra) in [
        (
            "https://op.example.org",
            json!({"registered_entity_types": ["openid_provider"]}),
        ),
        (
            "https://rp.example.org",
            json!({"registered_entity_types": ["openid_relying_party"]}),
        ),
        (
            "https://ia.example.org",
            json!({"registered_entity_types": ["federation_entity"]}),
        ),
        (
            "https://pending.example.org",
            json!({"status": "pending", "registered_entity_types": ["openid_provider"]}),
        ),
    ] {
        let mut body = json!({"entity_id": id, "jwks": {"keys": [jwk("k1", None)]}});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        ok(&p, Method::POST, "/subordinates", body).await;
    }
    ok(
        &p,
        Method::PUT,
        "/subordinates/https%3A%2F%2Fia.example.org/metadata/federation_entity",
        json!({"federation_list_endpoint": "https://ia.example.org/list"}),
    )
    .await;
    let mut answers = vec![("GET /list (no subordinates)".to_owned(), empty)];
    for q in [
        "/list",
        "/list?entity_type=openid_provider",
        "/list?entity_type=openid_provider&entity_type=openid_relying_party",
        "/list?intermediate=true",
        "/list?trust_marked=true",
        "/list?trust_marked=maybe",
        "/list?intermediate=1",
    ] {
        answers.push((format!("GET {q}"), w.get(&p, q).await));
    }
    answers.push(("POST /list".into(), w.post(&p, "/list", &[]).await));
    w.snapshot("subordinate_listing", &w.each(answers));
    p.stop().await;
}

/// The trust mark, trust mark status and trust mark list endpoints, and their errors.
#[tokio::test]
async fn trust_marks() {
    let db = TestDb::new(Backend::Sqlite).await;
    let clock = stopped_clock();
    let p = start_fixed(&db, TA, &clock).await;
    let mut w = Wire::new(clock.now());
    w.learn(&p, "ta").await;
    for (kind, path) in [
        ("trust_mark", "/trust-mark"),
        ("trust_mark_status", "/trust-mark-status"),
        ("trust_mark_listing", "/trust-mark-listing"),
        ("list", "/list"),
    ] {
        enable(&p, kind, path, json!({})).await;
    }
    let spec = json!({"trust_mark_type": TM, "lifetime": 3600,
        "additional_claims": {"level": 2}});
    ok(&p, Method::POST, "/trust-marks/issuance-spec", spec).await;
    let subjects = format!("/trust-marks/issuance-spec/{}/subjects", enc(TM));
    for (subject, status) in [
        (LEAF, "active"),
        ("https://other.example.org", "active"),
        ("https://pending.example.org", "pending"),
        ("https://blocked.example.org", "blocked"),
    ] {
        let body = json!({"entity_id": subject, "status": status});
        ok(&p, Method::POST, &subjects, body).await;
    }
    let ask = |sub: &str, tm: &str| {
        let q: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("sub", sub)
            .append_pair("trust_mark_type", tm)
            .finish();
        format!("/trust-mark?{q}")
    };
    let r = p.get(&ask(LEAF, TM)).await;
    assert_eq!(r.status(), 200);
    let mark = r.text().await.unwrap();
    let r = p.get(&ask("https://other.example.org", TM)).await;
    assert_eq!(r.status(), 200);
    let other = r.text().await.unwrap();

    let issued = w.each(vec![(
        format!("GET /trust-mark?sub={LEAF}&trust_mark_type={TM}"),
        w.get(&p, &ask(LEAF, TM)).await,
    )]);
    w.snapshot("trust_mark", &issued);

    let mut errors = Vec::new();
    for (request, path) in [
        (
            format!("GET /trust-mark?sub={LEAF}"),
            format!("/trust-mark?sub={}", enc(LEAF)),
        ),
        (
            format!("GET /trust-mark?trust_mark_type={TM}"),
            format!("/trust-mark?trust_mark_type={}", enc(TM)),
        ),
        (
            format!("GET /trust-mark?sub={LEAF}&trust_mark_type=https://unknown.example.org/tm"),
            ask(LEAF, "https://unknown.example.org/tm"),
        ),
        (
            format!("GET /trust-mark?sub=https://stranger.example.org&trust_mark_type={TM}"),
            ask("https://stranger.example.org", TM),
        ),
        (
            format!("GET /trust-mark?sub=https://pending.example.org&trust_mark_type={TM}"),
            ask("https://pending.example.org", TM),
        ),
        (
            format!("GET /trust-mark?sub=https://blocked.example.org&trust_mark_type={TM}"),
            ask("https://blocked.example.org", TM),
        ),
    ] {
        errors.push((request, w.get(&p, &path).await));
    }
    errors.push((
        "POST /trust-mark".into(),
        w.post(&p, "/trust-mark", &[("sub", LEAF), ("trust_mark_type", TM)])
            .await,
    ));
    w.snapshot("trust_mark_errors", &w.each(errors));

    // Status: active, then revoked (the subject blocked), and the endpoint's errors.
    let active = w
        .post(&p, "/trust-mark-status", &[("trust_mark", &mark)])
        .await;
    let path = format!("{subjects}/{}/status", enc("https://other.example.org"));
    let (s, v) = p.admin_raw(Method::PUT, &path, Some("blocked")).await;
    assert_eq!(s, 200, "{v}");
    let revoked = w
        .post(&p, "/trust-mark-status", &[("trust_mark", &other)])
        .await;
    w.snapshot(
        "trust_mark_status",
        &w.each(vec![
            ("POST /trust-mark-status (an active mark)".into(), active),
            ("POST /trust-mark-status (a revoked mark)".into(), revoked),
        ]),
    );
    let foreign = {
        let mut parts: Vec<&str> = mark.split('.').collect();
        parts[2] = "AAAA";
        parts.join(".")
    };
    let errors = w.each(vec![
        (
            "POST /trust-mark-status (no trust_mark)".into(),
            w.post(&p, "/trust-mark-status", &[]).await,
        ),
        (
            "POST /trust-mark-status trust_mark=not-a-jwt".into(),
            w.post(&p, "/trust-mark-status", &[("trust_mark", "not-a-jwt")])
                .await,
        ),
        (
            "POST /trust-mark-status (a mark with a bad signature)".into(),
            w.post(&p, "/trust-mark-status", &[("trust_mark", &foreign)])
                .await,
        ),
        (
            "GET /trust-mark-status".into(),
            w.get(&p, "/trust-mark-status").await,
        ),
    ]);
    w.snapshot("trust_mark_status_errors", &errors);

    // The trust mark list (holders of a type) and the list endpoint's trust mark filters.
    let listing = |q: &str| format!("/trust-mark-listing?{q}");
    let tm = format!("trust_mark_type={}", enc(TM));
    let mut answers = Vec::new();
    for (request, path) in [
        (
            format!("GET /trust-mark-listing?trust_mark_type={TM}"),
            listing(&tm),
        ),
        (
            format!("GET /trust-mark-listing?trust_mark_type={TM}&sub={LEAF}"),
            listing(&format!("{tm}&sub={}", enc(LEAF))),
        ),
        (
            format!(
                "GET /trust-mark-listing?trust_mark_type={TM}&sub=https://stranger.example.org"
            ),
            listing(&format!("{tm}&sub={}", enc("https://stranger.example.org"))),
        ),
        ("GET /trust-mark-listing".into(), listing("")),
        (
            "GET /trust-mark-listing?trust_mark_type=https://unknown.example.org/tm".into(),
            listing("trust_mark_type=https%3A%2F%2Funknown.example.org%2Ftm"),
        ),
        (
            "GET /list?trust_marked=true".into(),
            "/list?trust_marked=true".into(),
        ),
        (
            format!("GET /list?trust_mark_type={TM}"),
            format!("/list?{tm}"),
        ),
    ] {
        answers.push((request, w.get(&p, &path).await));
    }
    w.snapshot("trust_mark_list", &w.each(answers));
    p.stop().await;
}

/// Historical keys after a rotation that revoked the first key and one that retired the
/// second at the end of its overlap.
#[tokio::test]
async fn historical_keys() {
    let db = TestDb::new(Backend::Sqlite).await;
    let clock = stopped_clock();
    let p = start_fixed(&db, TA, &clock).await;
    let mut w = Wire::new(clock.now());
    w.learn(&p, "ta").await;
    enable(&p, "historical_keys", "/historical-keys", json!({})).await;
    let none = w.get(&p, "/historical-keys").await;

    clock.advance(10);
    let (s, v) = p
        .admin(
            Method::POST,
            "/kms/rotate?revoke=true&reason=compromised",
            None,
        )
        .await;
    assert_eq!(s, 202, "{v}");
    w.learn(&p, "ta").await;
    clock.advance(100);
    let (s, v) = p.admin(Method::POST, "/kms/rotate", None).await;
    assert_eq!(s, 202, "{v}");
    w.learn(&p, "ta").await;
    let at = clock.now() + 3_600;
    clock.set(at);
    p.app
        .as_ref()
        .unwrap()
        .control
        .rotate_keys(at)
        .await
        .unwrap();
    let answers = w.each(vec![
        ("GET /historical-keys (none yet)".into(), none),
        (
            "GET /historical-keys (one revoked, one retired)".into(),
            w.get(&p, "/historical-keys").await,
        ),
        (
            "POST /historical-keys".into(),
            w.post(&p, "/historical-keys", &[]).await,
        ),
    ]);
    w.snapshot("historical_keys", &answers);
    p.stop().await;
}

/// A federation on three loopback addresses (anchor, intermediate, leaf holding the anchor's
/// trust mark): the leaf's Entity Configuration, the resolve response, the entity collection
/// pages, and their errors.
#[tokio::test]
async fn federation() {
    let b = Backend::Sqlite;
    let (db_ta, db_i, db_l) = (
        TestDb::new(b).await,
        TestDb::new(b).await,
        TestDb::new(b).await,
    );
    let clock = stopped_clock();
    let dyn_clock = || clock.clone() as Arc<dyn Clock>;
    let ta = Pharos::start_at(&db_ta, "127.0.0.1", |_| {}, dyn_clock()).await;
    let ia = Pharos::start_at(&db_i, "127.0.0.2", |_| {}, dyn_clock()).await;
    let leaf = Pharos::start_at(&db_l, "127.0.0.3", |_| {}, dyn_clock()).await;
    let ta_id = ta.entity_id().to_owned();
    let mut w = Wire::new(clock.now());
    w.learn(&ta, "ta").await;
    w.learn(&ia, "intermediate").await;
    w.learn(&leaf, "leaf").await;

    for (kind, path) in [
        ("fetch", "/fetch"),
        ("list", "/list"),
        ("trust_mark", "/trust-mark"),
        ("trust_mark_status", "/trust-mark-status"),
        ("trust_mark_request", "/trust-mark-request"),
    ] {
        enable(&ta, kind, path, json!({})).await;
    }
    enable(
        &ta,
        "resolve",
        "/resolve",
        json!({"allowed_trust_anchors": [ta_id]}),
    )
    .await;
    enable(
        &ta,
        "entity_collection",
        "/collection",
        json!({"allowed_trust_anchors": [ta_id], "pagination_limit": 10}),
    )
    .await;
    for (kind, path) in [("fetch", "/fetch"), ("list", "/list")] {
        enable(&ia, kind, path, json!({})).await;
    }
    ok(
        &leaf,
        Method::PUT,
        "/entity-configuration/metadata/openid_relying_party",
        json!({"client_name": "Shop", "client_name#it": "Negozio",
               "logo_uri": "https://shop.example/logo.png",
               "redirect_uris": ["https://shop.example/cb"]}),
    )
    .await;
    ok(
        &leaf,
        Method::PUT,
        "/entity-configuration/metadata/federation_entity",
        json!({"organization_name": "Acme Ltd", "organization_name#de": "Acme GmbH"}),
    )
    .await;
    for (sup, sub) in [(&ta, &ia), (&ia, &leaf)] {
        let jwks = sub.entity_configuration().await.claims["jwks"].clone();
        let body = json!({"entity_id": sub.entity_id(), "jwks": jwks});
        ok(sup, Method::POST, "/subordinates", body).await;
        let hint = json!({"entity_id": sup.entity_id()});
        ok(
            sub,
            Method::POST,
            "/entity-configuration/authority-hints",
            hint,
        )
        .await;
    }
    let tm_type = json!({"trust_mark_type": TM, "trust_mark_issuers": [{"issuer": ta_id}]});
    ok(&ta, Method::POST, "/trust-marks/types", tm_type).await;
    let spec = json!({"trust_mark_type": TM, "lifetime": "24h"});
    ok(&ta, Method::POST, "/trust-marks/issuance-spec", spec).await;
    let subjects = format!("/trust-marks/issuance-spec/{}/subjects", enc(TM));
    let body = json!({"entity_id": leaf.entity_id()});
    ok(&ta, Method::POST, &subjects, body).await;
    let held = json!({"trust_mark_type": TM, "trust_mark_issuer": ta_id,
        "refresh_grace_period": 600, "refresh_rate_limit": 3600});
    ok(
        &leaf,
        Method::POST,
        "/entity-configuration/trust-marks",
        held,
    )
    .await;
    let refreshers = leaf.app.as_ref().unwrap().refreshers.clone();
    crate::support::eventually("the leaf holds its mark", || async {
        refreshers.tick(clock.now()).await;
        leaf.entity_configuration()
            .await
            .claims
            .contains_key("trust_marks")
    })
    .await;

    let ec = w.each(vec![(
        "GET leaf /.well-known/openid-federation".into(),
        w.get(&leaf, "/.well-known/openid-federation").await,
    )]);
    w.snapshot("entity_configuration_leaf", &ec);

    let l_id = leaf.entity_id().to_owned();
    let resolve = |sub: &str, anchor: &str, extra: &str| {
        format!(
            "/resolve?sub={}&trust_anchor={}{extra}",
            enc(sub),
            enc(anchor)
        )
    };
    let answers = w.each(vec![
        (
            format!("GET /resolve?sub={l_id}&trust_anchor={ta_id}"),
            w.get(&ta, &resolve(&l_id, &ta_id, "")).await,
        ),
        (
            format!("GET /resolve?sub={l_id}&trust_anchor={ta_id}&entity_type=federation_entity"),
            w.get(
                &ta,
                &resolve(&l_id, &ta_id, "&entity_type=federation_entity"),
            )
            .await,
        ),
    ]);
    w.snapshot("resolve_response", &answers);
    let errors = w.each(vec![
        (
            format!("GET /resolve?trust_anchor={ta_id}"),
            w.get(&ta, &format!("/resolve?trust_anchor={}", enc(&ta_id)))
                .await,
        ),
        (
            format!("GET /resolve?sub={l_id}"),
            w.get(&ta, &format!("/resolve?sub={}", enc(&l_id))).await,
        ),
        (
            format!("GET /resolve?sub={l_id}&trust_anchor=https://other.example.org"),
            w.get(&ta, &resolve(&l_id, "https://other.example.org", ""))
                .await,
        ),
        (
            format!("GET /resolve?sub=http://127.0.0.1:9&trust_anchor={ta_id} (unreachable)"),
            w.get(&ta, &resolve("http://127.0.0.1:9", &ta_id, "")).await,
        ),
        (
            format!("POST /resolve sub={l_id}&trust_anchor={ta_id}"),
            w.post(&ta, "/resolve", &[("sub", &l_id), ("trust_anchor", &ta_id)])
                .await,
        ),
    ]);
    w.snapshot("resolve_errors", &errors);

    let mut answers = Vec::new();
    for (request, q) in [
        ("GET /collection".to_owned(), String::new()),
        (
            "GET /collection?entity_type=openid_relying_party".into(),
            "entity_type=openid_relying_party".into(),
        ),
        ("GET /collection?limit=1".into(), "limit=1".into()),
        (
            format!("GET /collection?limit=1&from={l_id}"),
            format!("limit=1&from={}", enc(&l_id)),
        ),
        (
            "GET /collection?entity_claims=entity_types&entity_claims=ui_infos&language_tag=de"
                .into(),
            "entity_claims=entity_types&entity_claims=ui_infos&language_tag=de".into(),
        ),
    ] {
        answers.push((request, w.get(&ta, &format!("/collection?{q}")).await));
    }
    w.snapshot("entity_collection", &w.each(answers));
    let mut errors = Vec::new();
    for q in [
        "trust_anchor=https%3A%2F%2Fother.example.org",
        "limit=0",
        "from=https%3A%2F%2Fnobody.example.org&limit=1",
        "entity_claims=nonsense",
        "trust_anchor=",
    ] {
        errors.push((
            format!(
                "GET /collection?{}",
                q.replace("%3A", ":").replace("%2F", "/")
            ),
            w.get(&ta, &format!("/collection?{q}")).await,
        ));
    }
    w.snapshot("entity_collection_errors", &w.each(errors));

    // Trust mark requests: a new subject (pending), asking again, a subject already entitled,
    // and the endpoint's errors.
    let i_id = ia.entity_id().to_owned();
    let request = |sub: &str, tm: &str| {
        let q: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("sub", sub)
            .append_pair("trust_mark_type", tm)
            .finish();
        format!("/trust-mark-request?{q}")
    };
    let mut answers = Vec::new();
    for (request, path) in [
        (
            format!("GET /trust-mark-request?sub={i_id}&trust_mark_type={TM} (new)"),
            request(&i_id, TM),
        ),
        (
            format!("GET /trust-mark-request?sub={i_id}&trust_mark_type={TM} (pending)"),
            request(&i_id, TM),
        ),
        (
            format!("GET /trust-mark-request?sub={l_id}&trust_mark_type={TM} (entitled)"),
            request(&l_id, TM),
        ),
        (
            format!("GET /trust-mark-request?trust_mark_type={TM}"),
            format!("/trust-mark-request?trust_mark_type={}", enc(TM)),
        ),
        (
            format!(
                "GET /trust-mark-request?sub={i_id}&trust_mark_type=https://unknown.example.org/tm"
            ),
            request(&i_id, "https://unknown.example.org/tm"),
        ),
    ] {
        answers.push((request, w.get(&ta, &path).await));
    }
    w.snapshot("trust_mark_request", &w.each(answers));
    for p in [leaf, ia, ta] {
        p.stop().await;
    }
}

/// Answers to an authenticated client (`private_key_jwt`), which carry its Entity ID as `aud`
/// and are not cached, and the refusals of client authentication: a trust anchor, a client
/// under it and a server whose endpoints require authentication, on three loopback addresses.
#[tokio::test]
async fn authenticated_answers() {
    let b = Backend::Sqlite;
    let (db_ta, db_c, db_s) = (
        TestDb::new(b).await,
        TestDb::new(b).await,
        TestDb::new(b).await,
    );
    let clock = stopped_clock();
    let dyn_clock = || clock.clone() as Arc<dyn Clock>;
    let ta = Pharos::start_at(&db_ta, "127.0.0.1", |_| {}, dyn_clock()).await;
    let client = Pharos::start_at(&db_c, "127.0.0.2", |_| {}, dyn_clock()).await;
    let server = Pharos::start_at(&db_s, "127.0.0.3", |_| {}, dyn_clock()).await;
    let mut w = Wire::new(clock.now());
    w.learn(&ta, "ta").await;
    w.learn(&client, "client").await;
    w.learn(&server, "server").await;
    let (ta_id, c_id, s_id) = (
        ta.entity_id().to_owned(),
        client.entity_id().to_owned(),
        server.entity_id().to_owned(),
    );

    enable(&ta, "fetch", "/fetch", json!({})).await;
    let jwks = client.entity_configuration().await.claims["jwks"].clone();
    let body = json!({"entity_id": c_id, "jwks": jwks});
    ok(&ta, Method::POST, "/subordinates", body).await;
    let hint = json!({"entity_id": ta_id});
    ok(
        &client,
        Method::POST,
        "/entity-configuration/authority-hints",
        hint,
    )
    .await;
    let jwks = ta.entity_configuration().await.claims["jwks"].clone();
    let anchor = json!({"entity_id": ta_id, "jwks": jwks});
    ok(&server, Method::POST, "/trust-anchors", anchor).await;
    for (kind, path) in [
        ("list", "/list"),
        ("fetch", "/fetch"),
        ("historical_keys", "/historical-keys"),
        ("resolve", "/resolve"),
    ] {
        let body = json!({"type": kind, "path": path, "auth_enabled": true,
            "auth_trust_anchors": [ta_id], "config": {}});
        ok(&server, Method::POST, "/federation-endpoints", body).await;
    }
    let body = json!({"entity_id": LEAF, "jwks": {"keys": [jwk("leaf-1", None)]}});
    ok(&server, Method::POST, "/subordinates", body).await;

    let signer = crate::client_auth::signer(&client);
    let next = std::sync::atomic::AtomicU32::new(0);
    let assertion = |f: &dyn Fn(&mut Value)| {
        let n = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut c = json!({"iss": c_id, "sub": c_id, "aud": s_id, "iat": clock.now(),
            "exp": clock.now() + 60, "jti": format!("wire-{n}")});
        f(&mut c);
        crate::client_auth::assertion(signer.as_ref(), &c)
    };
    const TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
    let call = async |path: &str, assertion: &str, params: &[(&str, &str)]| {
        let mut form = vec![
            ("client_assertion_type", TYPE),
            ("client_assertion", assertion),
        ];
        form.extend_from_slice(params);
        w.post(&server, path, &form).await
    };

    let answers = w.each(vec![
        (
            format!("POST /fetch sub={LEAF}"),
            call("/fetch", &assertion(&|_| {}), &[("sub", LEAF)]).await,
        ),
        (
            format!("POST /resolve sub={ta_id}&trust_anchor={ta_id}"),
            call(
                "/resolve",
                &assertion(&|_| {}),
                &[("sub", &ta_id), ("trust_anchor", &ta_id)],
            )
            .await,
        ),
        (
            "POST /list".into(),
            call("/list", &assertion(&|_| {}), &[]).await,
        ),
        (
            "POST /historical-keys".into(),
            call("/historical-keys", &assertion(&|_| {}), &[]).await,
        ),
    ]);
    w.snapshot("authenticated_answers", &answers);

    let replayed = assertion(&|_| {});
    call("/list", &replayed, &[]).await;
    let errors = w.each(vec![
        (
            "POST /list (no client assertion)".into(),
            w.post(&server, "/list", &[]).await,
        ),
        ("GET /list".into(), w.get(&server, "/list").await),
        (
            "POST /list (assertion for another audience)".into(),
            call(
                "/list",
                &assertion(&|c| c["aud"] = json!("https://elsewhere.example.org")),
                &[],
            )
            .await,
        ),
        (
            "POST /list (expired assertion)".into(),
            call(
                "/list",
                &assertion(&|c| c["exp"] = json!(clock.now() - 10)),
                &[],
            )
            .await,
        ),
        (
            "POST /list (replayed assertion)".into(),
            call("/list", &replayed, &[]).await,
        ),
        (
            "POST /list (client outside the federation)".into(),
            call(
                "/list",
                &assertion(&|c| {
                    c["iss"] = json!("https://stranger.example.org");
                    c["sub"] = json!("https://stranger.example.org");
                }),
                &[],
            )
            .await,
        ),
    ]);
    w.snapshot("authenticated_errors", &errors);
    for p in [server, client, ta] {
        p.stop().await;
    }
}

/// The refusals every endpoint shares: a body over `server.body_limit`, a form over the form
/// limit, and a client over its rate (`429` with `Retry-After`).
#[tokio::test]
async fn limits() {
    let db = TestDb::new(Backend::Sqlite).await;
    let clock = stopped_clock();
    let p = Pharos::start_with(
        &db,
        |s| {
            s.entity_id = TA.to_owned();
            s.server.rate_limits.enabled = true;
            s.server.rate_limits.trust_mark = pharos_shared::config::RateLimit::new(1, 1, 0);
        },
        clock.clone(),
    )
    .await;
    let w = Wire::new(clock.now());
    enable(&p, "trust_mark_status", "/trust-mark-status", json!({})).await;
    enable(&p, "trust_mark", "/trust-mark", json!({})).await;
    let oversized = |size: usize| {
        p.client
            .post(p.main_url("/trust-mark-status"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("trust_mark={}", "a".repeat(size)))
            .send()
    };
    let mut answers = vec![
        (
            "POST /trust-mark-status (2 MiB body)".to_owned(),
            w.seen(oversized(2 << 20).await.unwrap()).await,
        ),
        (
            "POST /trust-mark-status (100 KiB form)".to_owned(),
            w.seen(oversized(100 << 10).await.unwrap()).await,
        ),
    ];
    let ask =
        "/trust-mark?sub=https%3A%2F%2Fleaf.example.org&trust_mark_type=https%3A%2F%2Fno.example";
    let mut refused = None;
    for _ in 0..5 {
        let r = p.client.get(p.main_url(ask)).send().await.unwrap();
        if r.status() == 429 {
            refused = Some(w.seen(r).await);
            break;
        }
    }
    // The limiter's wait runs on the real clock: the description's number is redacted as
    // `Retry-After` is.
    let mut refused = refused.expect("the rate limit refuses");
    let d = refused["body"]["error_description"].as_str().unwrap();
    let (text, wait) = d.rsplit_once("retry in ").unwrap();
    let seconds = wait.strip_suffix(" s").unwrap();
    assert!(seconds.parse::<u32>().is_ok(), "{d}");
    refused["body"]["error_description"] = format!("{text}retry in [seconds] s").into();
    answers.push(("GET /trust-mark (over the client's rate)".into(), refused));
    w.snapshot("limits", &w.each(answers));
    p.stop().await;
}

/// One Admin API request as seen: `headers` are sent as given (`If-Match`, `Content-Type`).
async fn admin_call(
    w: &Wire,
    p: &Pharos,
    method: Method,
    path: &str,
    body: Option<&str>,
    headers: &[(&str, &str)],
    auth: Option<(&str, &str)>,
) -> Value {
    let mut r = p
        .client
        .request(method, p.url(&format!("/api/v1/admin{path}")));
    for (name, value) in headers {
        r = r.header(*name, *value);
    }
    if let Some((user, password)) = auth {
        r = r.basic_auth(user, Some(password));
    }
    if let Some(b) = body {
        r = r.body(b.to_owned());
    }
    w.seen(r.send().await.unwrap()).await
}

/// The Admin API's error bodies (the same `{"error","error_description"}` shape) for a few
/// representative failures: not found, malformed and invalid bodies, conflicts, optimistic
/// concurrency (`412`, `428`), an unrouted path and method, and authentication.
#[tokio::test]
async fn admin_api_errors() {
    let db = TestDb::new(Backend::Sqlite).await;
    let clock = stopped_clock();
    let p = Pharos::start_with(
        &db,
        |s| {
            s.entity_id = TA.to_owned();
            s.api.admin.require_if_match = true;
        },
        clock.clone(),
    )
    .await;
    let w = Wire::new(clock.now());
    let json_type = [("content-type", "application/json")];
    let leaf = json!({"entity_id": LEAF, "jwks": {"keys": [jwk("k1", None)]}}).to_string();
    let created = admin_call(
        &w,
        &p,
        Method::POST,
        "/subordinates",
        Some(&leaf),
        &json_type,
        None,
    )
    .await;
    assert_eq!(created["status"], 201, "{created}");
    let metadata = format!("/subordinates/{}/metadata", enc(LEAF));
    let mut bad_key = jwk("k1", None);
    bad_key["x"] = json!("AAAA");
    let bad_key = json!({"entity_id": "https://other.example.org", "jwks": {"keys": [bad_key]}});
    let doc = json!({"openid_relying_party": {"client_name": "Shop"}}).to_string();
    let stale = [
        ("content-type", "application/json"),
        ("if-match", "\"stale\""),
    ];
    let mut answers = Vec::new();
    for (request, method, path, body, headers) in [
        (
            "GET /subordinates/https://nobody.example.org",
            Method::GET,
            "/subordinates/https%3A%2F%2Fnobody.example.org".to_owned(),
            None,
            &json_type[..],
        ),
        (
            "POST /subordinates (malformed JSON)",
            Method::POST,
            "/subordinates".into(),
            Some("{".to_owned()),
            &json_type[..],
        ),
        (
            "POST /subordinates (a key off the curve)",
            Method::POST,
            "/subordinates".into(),
            Some(bad_key.to_string()),
            &json_type[..],
        ),
        (
            "POST /subordinates (an existing one)",
            Method::POST,
            "/subordinates".into(),
            Some(leaf.clone()),
            &json_type[..],
        ),
        (
            "POST /subordinates (text/plain)",
            Method::POST,
            "/subordinates".into(),
            Some(leaf.clone()),
            &[("content-type", "text/plain")][..],
        ),
        (
            "PUT /subordinates/https://leaf.example.org/metadata (stale If-Match)",
            Method::PUT,
            metadata.clone(),
            Some(doc.clone()),
            &stale[..],
        ),
        (
            "PUT /subordinates/https://leaf.example.org/metadata (no If-Match)",
            Method::PUT,
            metadata.clone(),
            Some(doc.clone()),
            &json_type[..],
        ),
        (
            "GET /no-such-route",
            Method::GET,
            "/no-such-route".into(),
            None,
            &[][..],
        ),
        (
            "DELETE /openapi.json",
            Method::DELETE,
            "/openapi.json".into(),
            None,
            &[][..],
        ),
    ] {
        let seen = admin_call(&w, &p, method, &path, body.as_deref(), headers, None).await;
        answers.push((request.to_owned(), seen));
    }

    // The first user locks the API: unauthenticated and wrong credentials are refused.
    let user = json!({"username": "alice", "password": "correct horse"}).to_string();
    let made = admin_call(
        &w,
        &p,
        Method::POST,
        "/users",
        Some(&user),
        &json_type,
        None,
    )
    .await;
    assert_eq!(made["status"], 201, "{made}");
    answers.push((
        "GET /subordinates (no credentials)".into(),
        admin_call(&w, &p, Method::GET, "/subordinates", None, &[], None).await,
    ));
    answers.push((
        "GET /subordinates (wrong password)".into(),
        admin_call(
            &w,
            &p,
            Method::GET,
            "/subordinates",
            None,
            &[],
            Some(("alice", "wrong")),
        )
        .await,
    ));
    w.snapshot("admin_api_errors", &w.each(answers));
    p.stop().await;
}

/// The enroll and enroll_request endpoints: the statement an enrollment answers with, and what
/// each stored status and a refused entity get; a superior and two entities on three loopback
/// addresses.
#[tokio::test]
async fn enrollment() {
    let b = Backend::Sqlite;
    let (db_s, db_l, db_x) = (
        TestDb::new(b).await,
        TestDb::new(b).await,
        TestDb::new(b).await,
    );
    let clock = stopped_clock();
    let dyn_clock = || clock.clone() as Arc<dyn Clock>;
    let sup = Pharos::start_at(&db_s, "127.0.0.1", |_| {}, dyn_clock()).await;
    let leaf = Pharos::start_at(&db_l, "127.0.0.2", |_| {}, dyn_clock()).await;
    let stranger = Pharos::start_at(&db_x, "127.0.0.3", |_| {}, dyn_clock()).await;
    let mut w = Wire::new(clock.now());
    w.learn(&sup, "superior").await;
    w.learn(&leaf, "leaf").await;
    w.learn(&stranger, "stranger").await;
    enable(&sup, "fetch", "/fetch", json!({})).await;
    enable(&sup, "enroll", "/enroll", json!({})).await;
    enable(&sup, "enroll_request", "/enroll-request", json!({})).await;
    for p in [&leaf, &stranger] {
        let rp = json!({"client_name": "leaf", "client_registration_types": ["automatic"]});
        ok(
            p,
            Method::PUT,
            "/entity-configuration/metadata/openid_relying_party",
            rp,
        )
        .await;
    }
    let hint = json!({"entity_id": sup.entity_id()});
    ok(
        &leaf,
        Method::POST,
        "/entity-configuration/authority-hints",
        hint,
    )
    .await;
    let (l_id, x_id) = (leaf.entity_id().to_owned(), stranger.entity_id().to_owned());
    let ask = |path: &str, sub: &str, types: &[&str]| {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        q.append_pair("sub", sub);
        for t in types {
            q.append_pair("entity_type", t);
        }
        format!("{path}?{}", q.finish())
    };
    let set_status = async |status: &str| {
        let path = format!("/subordinates/{}/status", enc(&l_id));
        let (s, v) = sup.admin_raw(Method::PUT, &path, Some(status)).await;
        assert_eq!(s, 200, "{v}");
    };

    // Asked before the leaf is enrolled (later its stored status answers first).
    let undeclared = w
        .get(&sup, &ask("/enroll", &l_id, &["openid_provider"]))
        .await;
    let mut answers = vec![(
        format!("GET /enroll?sub={l_id}&entity_type=openid_relying_party (new)"),
        w.get(&sup, &ask("/enroll", &l_id, &["openid_relying_party"]))
            .await,
    )];
    answers.push((
        format!("GET /enroll-request?sub={l_id} (active)"),
        w.get(&sup, &ask("/enroll-request", &l_id, &[])).await,
    ));
    set_status("pending").await;
    for path in ["/enroll", "/enroll-request"] {
        answers.push((
            format!("GET {path}?sub={l_id} (pending)"),
            w.get(&sup, &ask(path, &l_id, &[])).await,
        ));
    }
    set_status("blocked").await;
    for path in ["/enroll", "/enroll-request"] {
        answers.push((
            format!("GET {path}?sub={l_id} (blocked)"),
            w.get(&sup, &ask(path, &l_id, &[])).await,
        ));
    }
    set_status("inactive").await;
    answers.push((
        format!("GET /enroll?sub={l_id} (inactive)"),
        w.get(&sup, &ask("/enroll", &l_id, &[])).await,
    ));
    w.snapshot("enrollment", &w.each(answers));

    let errors = w.each(vec![
        ("GET /enroll".into(), w.get(&sup, "/enroll").await),
        (
            format!("GET /enroll?sub={x_id} (not naming the superior)"),
            w.get(&sup, &ask("/enroll", &x_id, &[])).await,
        ),
        (
            format!("GET /enroll-request?sub={x_id} (not naming the superior)"),
            w.get(&sup, &ask("/enroll-request", &x_id, &[])).await,
        ),
        (
            format!("GET /enroll?sub={l_id}&entity_type=openid_provider (undeclared type)"),
            undeclared,
        ),
        (
            "GET /enroll?sub=http://127.0.0.1:9 (unreachable)".into(),
            w.get(&sup, &ask("/enroll", "http://127.0.0.1:9", &[]))
                .await,
        ),
    ]);
    w.snapshot("enrollment_errors", &errors);
    for p in [stranger, leaf, sup] {
        p.stop().await;
    }
}

/// CORS as browsers see it, on the main port (`server.cors`) and the admin port
/// (`api.admin.cors`): preflights from an allowed and another origin, and the headers of
/// actual answers, successful and refused.
#[tokio::test]
async fn cors() {
    let db = TestDb::new(Backend::Sqlite).await;
    let clock = stopped_clock();
    let plain = reqwest::Client::builder().no_proxy().build().unwrap();
    let p = Pharos::start_separate_admin(
        &db,
        |s| {
            s.entity_id = TA.to_owned();
            s.server.cors.enabled = true;
            s.server.cors.allow_origins = "https://rp.example".into();
            s.server.cors.allow_methods = "GET,POST".into();
            s.server.cors.expose_headers = "ETag".into();
            s.server.cors.max_age = 600;
            s.api.admin.cors.enabled = true;
            s.api.admin.cors.allow_origins = "https://ui.example".into();
            s.api.admin.cors.expose_headers = "X-Request-ID,ETag".into();
        },
        plain.clone(),
    )
    .await;
    let w = Wire::new(clock.now());
    let preflight = async |url: String, origin: &str, method: &str, headers: &str| {
        let mut r = plain
            .request(Method::OPTIONS, url)
            .header("origin", origin)
            .header("access-control-request-method", method);
        if !headers.is_empty() {
            r = r.header("access-control-request-headers", headers);
        }
        w.seen(r.send().await.unwrap()).await
    };
    // Status and headers only: the bodies are the other snapshots' (and this instance's
    // clock is the system's, its signed answers' times not fixed).
    let from = async |method: Method, url: String, origin: &str| {
        let r = plain.request(method, url).header("origin", origin).send();
        w.seen_headers(&r.await.unwrap())
    };
    let ec = p.main_url("/.well-known/openid-federation");
    let mut answers = vec![
        (
            "OPTIONS /.well-known/openid-federation (preflight from https://rp.example)".to_owned(),
            preflight(ec.clone(), "https://rp.example", "GET", "if-none-match").await,
        ),
        (
            "OPTIONS /.well-known/openid-federation (preflight from https://evil.example)".into(),
            preflight(ec.clone(), "https://evil.example", "GET", "").await,
        ),
        (
            "GET /.well-known/openid-federation (from https://rp.example)".into(),
            from(Method::GET, ec.clone(), "https://rp.example").await,
        ),
        (
            "GET /no-such-endpoint (from https://rp.example)".into(),
            from(
                Method::GET,
                p.main_url("/no-such-endpoint"),
                "https://rp.example",
            )
            .await,
        ),
    ];
    let (s, v) = p
        .admin(
            Method::POST,
            "/users",
            Some(json!({"username": "u", "password": "u passphrase"})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let anchors = p.url("/api/v1/admin/trust-anchors");
    answers.extend([
        (
            "admin OPTIONS /api/v1/admin/trust-anchors (preflight from https://ui.example)".into(),
            preflight(
                anchors.clone(),
                "https://ui.example",
                "PUT",
                "authorization,content-type",
            )
            .await,
        ),
        (
            "admin OPTIONS /api/v1/admin/trust-anchors (preflight from https://evil.example)"
                .into(),
            preflight(anchors.clone(), "https://evil.example", "PUT", "").await,
        ),
        (
            "admin GET /api/v1/admin/trust-anchors (from https://ui.example, no credentials)"
                .into(),
            from(Method::GET, anchors.clone(), "https://ui.example").await,
        ),
    ]);
    let openapi = from(
        Method::GET,
        p.url("/api/v1/admin/openapi.json"),
        "https://ui.example",
    )
    .await;
    answers.push((
        "admin GET /api/v1/admin/openapi.json (from https://ui.example)".into(),
        openapi,
    ));
    w.snapshot("cors", &w.each(answers));
    p.stop().await;
}

/// The jwks_update_trigger and jwks_update endpoints (Pharos extensions): the trigger's answer
/// before and after the subordinate rotated its keys, a signed push, and their refusals; a
/// superior and its subordinate on two loopback addresses.
#[tokio::test]
async fn key_updates() {
    let b = Backend::Sqlite;
    let (db_s, db_l) = (TestDb::new(b).await, TestDb::new(b).await);
    let clock = stopped_clock();
    let dyn_clock = || clock.clone() as Arc<dyn Clock>;
    let sup = Pharos::start_at(&db_s, "127.0.0.1", |_| {}, dyn_clock()).await;
    let leaf = Pharos::start_at(&db_l, "127.0.0.2", |_| {}, dyn_clock()).await;
    let mut w = Wire::new(clock.now());
    w.learn(&sup, "superior").await;
    w.learn(&leaf, "leaf").await;
    enable(&sup, "fetch", "/fetch", json!({})).await;
    enable(&sup, "jwks_update_trigger", "/jwks-trigger", json!({})).await;
    enable(&sup, "jwks_update", "/jwks-update", json!({})).await;
    let l_id = leaf.entity_id().to_owned();
    let jwks = leaf.entity_configuration().await.claims["jwks"].clone();
    let body = json!({"entity_id": l_id, "jwks": jwks});
    ok(&sup, Method::POST, "/subordinates", body).await;

    let trigger = async |w: &Wire, body: Value| {
        let r = sup.client.post(sup.main_url("/jwks-trigger")).json(&body);
        w.seen(r.send().await.unwrap()).await
    };
    let push = async |w: &Wire, content_type: &str, body: String| {
        let r = sup
            .client
            .post(sup.main_url("/jwks-update"))
            .header("content-type", content_type)
            .body(body);
        w.seen(r.send().await.unwrap()).await
    };
    let ct = "application/jwk-set+jwt";
    let mut answers = vec![(
        format!("POST /jwks-trigger {{\"sub\": \"{l_id}\"}} (keys unchanged)"),
        trigger(&w, json!({"sub": l_id})).await,
    )];
    // The leaf announces its next key (published, not yet signing): the trigger picks it up.
    let policy = json!({"enabled": true, "interval": 7200, "overlap": 3600});
    ok(&leaf, Method::PUT, "/kms/rotation", policy).await;
    let cp = &leaf.app.as_ref().unwrap().control;
    cp.rotate_keys(cp.now()).await.unwrap();
    w.learn(&leaf, "leaf").await;
    answers.push((
        format!("POST /jwks-trigger {{\"sub\": \"{l_id}\"}} (next key announced)"),
        trigger(&w, json!({"sub": l_id})).await,
    ));
    // Then rotates at once: its new keys are pushed, signed by a key the superior stores.
    let old = crate::client_auth::signer(&leaf);
    let (s, v) = leaf.admin(Method::POST, "/kms/rotate", None).await;
    assert_eq!(s, 202, "{v}");
    w.learn(&leaf, "leaf").await;
    let keys = leaf.entity_configuration().await.claims["jwks"]["keys"].clone();
    let now = clock.now();
    let claims = json!({"iss": l_id, "sub": l_id, "iat": now, "exp": now + 60, "keys": keys});
    let signed = |claims: &Value| {
        jose::sign(
            old.as_ref(),
            "jwk-set+jwt",
            claims.as_object().unwrap(),
            None,
        )
        .unwrap()
    };
    let accepted = signed(&claims);
    answers.push((
        "POST /jwks-update (signed by a stored key)".into(),
        push(&w, ct, accepted.clone()).await,
    ));
    w.snapshot("key_updates", &w.each(answers));

    let stranger = json!({"iss": "https://x.example.org", "sub": "https://x.example.org",
        "iat": now, "keys": keys});
    // Rotated at once again: its configuration is signed by a key the superior does not know.
    let (s, v) = leaf.admin(Method::POST, "/kms/rotate", None).await;
    assert_eq!(s, 202, "{v}");
    w.learn(&leaf, "leaf").await;
    let errors = w.each(vec![
        (
            format!("POST /jwks-trigger {{\"sub\": \"{l_id}\"}} (signed by an unknown key)"),
            trigger(&w, json!({"sub": l_id})).await,
        ),
        ("POST /jwks-trigger {}".into(), trigger(&w, json!({})).await),
        (
            "POST /jwks-trigger {\"sub\": \"https://x.example.org\"}".into(),
            trigger(&w, json!({"sub": "https://x.example.org"})).await,
        ),
        (
            "POST /jwks-update (Content-Type application/jwt)".into(),
            push(&w, "application/jwt", accepted.clone()).await,
        ),
        (
            "POST /jwks-update (empty body)".into(),
            push(&w, ct, String::new()).await,
        ),
        (
            "POST /jwks-update (a replay)".into(),
            push(&w, ct, accepted).await,
        ),
        (
            "POST /jwks-update (an unknown subordinate)".into(),
            push(&w, ct, signed(&stranger)).await,
        ),
        ("GET /jwks-update".into(), w.get(&sup, "/jwks-update").await),
    ]);
    w.snapshot("key_updates_errors", &errors);
    for p in [leaf, sup] {
        p.stop().await;
    }
}

/// The Admin API's answers to reads of each kind of resource (what the console and `pharos
/// admin` parse), on an instance with one of each, and the body of a creation.
#[tokio::test]
async fn admin_api_reads() {
    let db = TestDb::new(Backend::Sqlite).await;
    let clock = stopped_clock();
    let p = start_fixed(&db, TA, &clock).await;
    let mut w = Wire::new(clock.now());
    w.learn(&p, "ta").await;
    let json_type = [("content-type", "application/json")];
    let leaf = json!({"entity_id": LEAF, "jwks": {"keys": [jwk("k1", None)]},
        "registered_entity_types": ["openid_relying_party"]})
    .to_string();
    let created = admin_call(
        &w,
        &p,
        Method::POST,
        "/subordinates",
        Some(&leaf),
        &json_type,
        None,
    )
    .await;
    let sub = format!("/subordinates/{}", enc(LEAF));
    ok(
        &p,
        Method::PUT,
        &format!("{sub}/metadata/openid_relying_party"),
        json!({"client_name": "Shop"}),
    )
    .await;
    ok(
        &p,
        Method::PUT,
        &format!("{sub}/constraints"),
        json!({"max_path_length": 1}),
    )
    .await;
    ok(
        &p,
        Method::POST,
        "/entity-configuration/authority-hints",
        json!({"entity_id": "https://superior.example.org"}),
    )
    .await;
    ok(
        &p,
        Method::POST,
        "/entity-configuration/additional-claims",
        json!({"claim": "x_note", "value": {"a": 1}, "crit": true}),
    )
    .await;
    enable(&p, "fetch", "/fetch", json!({"statement_lifetime": 3600})).await;
    ok(
        &p,
        Method::POST,
        "/trust-anchors",
        json!({"entity_id": "https://anchor.example.org", "jwks": {"keys": [jwk("a1", None)]}}),
    )
    .await;
    ok(
        &p,
        Method::POST,
        "/trust-marks/types",
        json!({"trust_mark_type": TM, "trust_mark_issuers": [{"issuer": TA}]}),
    )
    .await;
    ok(
        &p,
        Method::POST,
        "/trust-marks/issuance-spec",
        json!({"trust_mark_type": TM, "lifetime": 3600, "additional_claims": {"level": 2}}),
    )
    .await;
    let subjects = format!("/trust-marks/issuance-spec/{}/subjects", enc(TM));
    ok(
        &p,
        Method::POST,
        &subjects,
        json!({"entity_id": LEAF, "status": "active"}),
    )
    .await;
    let mut answers = vec![("POST /subordinates".to_owned(), created)];
    for path in [
        "/subordinates".to_owned(),
        sub.clone(),
        format!("{sub}/statement"),
        format!("{sub}/jwks"),
        format!("{sub}/history"),
        "/entity-configuration".into(),
        "/entity-configuration/keys".into(),
        "/entity-configuration/lifetime".into(),
        "/entity-configuration/authority-hints".into(),
        "/entity-configuration/additional-claims".into(),
        "/federation-endpoints".into(),
        "/trust-anchors".into(),
        "/trust-marks/types".into(),
        "/trust-marks/issuance-spec".into(),
        subjects.clone(),
        "/kms".into(),
    ] {
        let shown = percent_encoding::percent_decode_str(&path).decode_utf8_lossy();
        answers.push((
            format!("GET {shown}"),
            admin_call(&w, &p, Method::GET, &path, None, &[], None).await,
        ));
    }
    let user = json!({"username": "alice", "password": "correct horse",
        "display_name": "Alice"})
    .to_string();
    answers.push((
        "POST /users".into(),
        admin_call(
            &w,
            &p,
            Method::POST,
            "/users",
            Some(&user),
            &json_type,
            None,
        )
        .await,
    ));
    answers.push((
        "GET /users".into(),
        admin_call(
            &w,
            &p,
            Method::GET,
            "/users",
            None,
            &[],
            Some(("alice", "correct horse")),
        )
        .await,
    ));
    w.snapshot("admin_api_reads", &w.each(answers));
    p.stop().await;
}
