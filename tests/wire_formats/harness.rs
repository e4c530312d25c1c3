//! How the wire format snapshots show an answer (see the module documentation of
//! [`super`]): [`Wire`] verifies, decodes and redacts; the instance helpers start what the
//! snapshots ask.

use std::sync::Arc;

use base64::Engine as _;
use insta::internals::Content;
use pharos_shared::jose::{self, Jwk, Jwks};
use pharos_shared::time::{Clock, ManualClock, SystemClock};
use reqwest::{Method, Response};
use serde_json::{Map, Value, json};

use crate::support::{Pharos, TestDb};

/// Headers left out of the snapshots: they vary per request and carry nothing of the format
/// (the body's length and framing, the date). `X-Request-Id` is shown redacted.
pub(super) const UNSHOWN_HEADERS: [&str; 3] = ["content-length", "transfer-encoding", "date"];

/// Entity ID of the single instances (no port to redact).
pub(super) const TA: &str = "https://ta.example.org";

pub(super) const LEAF: &str = "https://leaf.example.org";

pub(super) const TM: &str = "https://marks.example.org/member";

/// How the snapshots of one test show its answers (see the module documentation).
pub(super) struct Wire {
    /// The instant of the test's clock, which never moves by itself.
    now: i64,
    /// Strings replaced wherever they occur (Entity IDs with ports, key ids, the clock's
    /// instant).
    names: Vec<(String, String)>,
    /// Every key learnt: signed answers must verify with one of them.
    keys: Vec<Jwk>,
}

impl Wire {
    pub(super) fn new(now: i64) -> Self {
        Self {
            now,
            // The clock's instant in a description (numbers elsewhere are redacted as times).
            names: vec![(now.to_string(), "[now]".to_owned())],
            keys: Vec::new(),
        }
    }

    /// Learns `p` as `who`: the port of its Entity ID is shown as `[port]`, its keys' ids as
    /// `[kid of who]`, and what it signs verifies with its published keys.
    pub(super) async fn learn(&mut self, p: &Pharos, who: &str) {
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
    pub(super) async fn seen(&self, r: Response) -> Value {
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
    pub(super) fn seen_headers(&self, r: &Response) -> Value {
        let mut v = json!({"status": r.status().as_u16(), "headers": headers(r)});
        self.rename(&mut v);
        v
    }

    /// A GET on the main port, as seen.
    pub(super) async fn get(&self, p: &Pharos, path: &str) -> Value {
        self.seen(p.client.get(p.main_url(path)).send().await.unwrap())
            .await
    }

    /// A form POST on the main port, as seen.
    pub(super) async fn post(&self, p: &Pharos, path: &str, form: &[(&str, &str)]) -> Value {
        let r = p.client.post(p.main_url(path)).form(form).send().await;
        self.seen(r.unwrap()).await
    }

    /// Several requests' answers, keyed by the request (with `[port]` for ports).
    pub(super) fn each(&self, answers: Vec<(String, Value)>) -> Value {
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
    pub(super) fn snapshot(&self, name: &str, v: &Value) {
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
pub(super) fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("../snapshots");
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
pub(super) fn stopped_clock() -> Arc<ManualClock> {
    ManualClock::new(SystemClock.now())
}

/// Three instances on SQLite at 127.0.0.1, .2 and .3 (their entity ids then sort in this
/// order whatever their ports), on one stopped clock. The databases live as long as the
/// instances that use them.
pub(super) async fn on_three_loopbacks(clock: &Arc<ManualClock>) -> ([TestDb; 3], [Pharos; 3]) {
    let b = crate::support::Backend::Sqlite;
    let dbs = [
        TestDb::new(b).await,
        TestDb::new(b).await,
        TestDb::new(b).await,
    ];
    let at = |db, ip| Pharos::start_at(db, ip, |_| {}, clock.clone() as Arc<dyn Clock>);
    let first = at(&dbs[0], "127.0.0.1").await;
    let second = at(&dbs[1], "127.0.0.2").await;
    let third = at(&dbs[2], "127.0.0.3").await;
    (dbs, [first, second, third])
}

/// One instance with a fixed Entity ID (nothing in its answers depends on the port).
pub(super) async fn start_fixed(db: &TestDb, entity_id: &str, clock: &Arc<ManualClock>) -> Pharos {
    let id = entity_id.to_owned();
    Pharos::start_with(db, move |s| s.entity_id = id, clock.clone()).await
}

pub(super) async fn ok(p: &Pharos, method: Method, path: &str, body: Value) -> Value {
    let (s, v) = p.admin(method, path, Some(body)).await;
    assert!((200..300).contains(&s), "{path}: {s} {v}");
    v
}

/// One Admin API request as seen: `headers` are sent as given (`If-Match`, `Content-Type`).
pub(super) async fn admin_call(
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
