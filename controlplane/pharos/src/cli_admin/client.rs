//! The HTTP side of `pharos admin` and `pharos setup`: one Admin API client (reqwest over
//! rustls, Basic authentication, an optional CA file for a TLS admin port) whose failures are
//! sorted into the exit statuses scripts rely on.

use std::path::Path;
use std::time::Duration;

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::Failure;

/// Path prefix of every Admin API route.
const PREFIX: &str = "/api/v1/admin";

/// How long one request may take: an Admin API call is quick, a hung peer must not hang a
/// script for ever.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Where and as whom to call the Admin API.
#[derive(Debug, Clone, Default)]
pub struct Target {
    /// The listener's base URL (`https://fed.example.org`, or the admin port's).
    pub url: String,
    /// Basic credentials, when any.
    pub user: Option<String>,
    /// The password of `user`.
    pub password: Option<String>,
    /// A PEM file of CA certificates trusted for the admin port (in addition to none: when
    /// given, only these are trusted).
    pub ca_file: Option<std::path::PathBuf>,
    /// Bearer token of a fresh instance (`pharos setup --bootstrap-token`), sent only when no
    /// credentials are.
    pub bootstrap_token: Option<String>,
    /// The hosted entity whose resources the calls manage (`--entity`); `None`: the default.
    pub entity: Option<String>,
}

/// A body sent to the Admin API.
#[derive(Debug)]
pub enum Body {
    /// No body.
    None,
    /// A JSON document (`Content-Type: application/json`).
    Json(Value),
    /// A bare word or number (`text/plain`), as status changes take.
    Text(String),
}

/// An Admin API client bound to one [`Target`].
#[derive(Debug)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    target: Target,
}

impl Client {
    /// Builds the client; a bad URL or CA file is a usage error.
    pub fn new(target: Target) -> Result<Self, Failure> {
        let parsed = url::Url::parse(&target.url)
            .map_err(|e| Failure::Usage(format!("invalid --url {:?}: {e}", target.url)))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(Failure::Usage(format!(
                "invalid --url {:?}: use http:// or https://",
                target.url
            )));
        }
        let mut b = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(Duration::from_secs(10))
            .no_proxy()
            .user_agent(concat!("pharos-admin/", env!("CARGO_PKG_VERSION")));
        if let Some(path) = &target.ca_file {
            b = b.tls_certs_only(read_cas(path)?);
        }
        let http = b
            .build()
            .map_err(|e| Failure::Usage(format!("cannot set up the HTTP client: {e}")))?;
        Ok(Self {
            http,
            base: target.url.trim_end_matches('/').to_owned(),
            target,
        })
    }

    /// The base URL this client talks to.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Whether Basic credentials are set.
    pub fn has_credentials(&self) -> bool {
        self.target.user.is_some()
    }

    /// Uses these credentials from now on.
    pub fn login(&mut self, user: &str, password: &str) {
        self.target.user = Some(user.to_owned());
        self.target.password = Some(password.to_owned());
    }

    /// Where `path` (relative to the Admin API) is for the target's entity: under
    /// `/entities/{entity}` when one is named, except the deployment's own resources.
    fn api_path(&self, path: &str) -> String {
        let first = path
            .trim_start_matches('/')
            .split(['/', '?'])
            .next()
            .unwrap_or("");
        match &self.target.entity {
            Some(e) if !matches!(first, "users" | "entities") => {
                format!("{PREFIX}/entities/{}{path}", seg(e))
            }
            _ => format!("{PREFIX}{path}"),
        }
    }

    /// `GET` under the Admin API prefix.
    pub async fn get(&self, path: &str) -> Result<Value, Failure> {
        self.call(Method::GET, path, Body::None).await
    }

    /// A call under the Admin API prefix; the parsed JSON answer (`Null` when empty), or the
    /// API's refusal as [`Failure::Refused`].
    pub async fn call(&self, method: Method, path: &str, body: Body) -> Result<Value, Failure> {
        let (status, v) = self.raw(method, &self.api_path(path), body).await?;
        if status.is_success() {
            Ok(v)
        } else {
            Err(refusal(status, &v))
        }
    }

    /// `GET` under the Admin API prefix with the resource's `ETag`, for a command that changes
    /// what it read: it sends the tag back as `If-Match` ([`Client::call_if_match`]), so an
    /// edit made meanwhile by someone else is refused (412) instead of overwritten.
    pub async fn get_tagged(&self, path: &str) -> Result<(Value, Option<String>), Failure> {
        let (status, v, tag) = self
            .exchange(Method::GET, &self.api_path(path), Body::None, None)
            .await?;
        if status.is_success() {
            Ok((v, tag))
        } else {
            Err(refusal(status, &v))
        }
    }

    /// [`Client::call`] with `If-Match: tag` (none when `tag` is `None`).
    pub async fn call_if_match(
        &self,
        method: Method,
        path: &str,
        body: Body,
        tag: Option<&str>,
    ) -> Result<Value, Failure> {
        let (status, v, _) = self
            .exchange(method, &self.api_path(path), body, tag)
            .await?;
        if status.is_success() {
            Ok(v)
        } else {
            Err(refusal(status, &v))
        }
    }

    /// A call of any path on the same base URL (e.g. the federation endpoints); the status and
    /// the parsed body (a JSON value, or the text as a string).
    pub async fn raw(
        &self,
        method: Method,
        path: &str,
        body: Body,
    ) -> Result<(StatusCode, Value), Failure> {
        let (status, v, _) = self.exchange(method, path, body, None).await?;
        Ok((status, v))
    }

    /// One request: the status, the parsed body and the `ETag`.
    async fn exchange(
        &self,
        method: Method,
        path: &str,
        body: Body,
        if_match: Option<&str>,
    ) -> Result<(StatusCode, Value, Option<String>), Failure> {
        let url = format!("{}{path}", self.base);
        let mut r = self.http.request(method, &url);
        if let Some(t) = if_match {
            r = r.header(reqwest::header::IF_MATCH, t);
        }
        match (&self.target.user, &self.target.bootstrap_token) {
            (Some(u), _) => r = r.basic_auth(u, self.target.password.as_deref()),
            (None, Some(t)) => r = r.bearer_auth(t),
            (None, None) => {}
        }
        r = match body {
            Body::None => r,
            Body::Json(v) => r
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(v.to_string()),
            Body::Text(t) => r
                .header(reqwest::header::CONTENT_TYPE, "text/plain")
                .body(t),
        };
        let resp = r.send().await.map_err(|e| unreachable(&self.base, &e))?;
        let status = resp.status();
        let tag = resp
            .headers()
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let text = resp.text().await.map_err(|e| unreachable(&self.base, &e))?;
        let v = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Ok((status, v, tag))
    }
}

/// The keys in `entity_id`'s own Entity Configuration, checked against its signature (a
/// self-signed statement that does not verify with its own keys is refused): trust on first use,
/// as `--fetch-jwks` says.
pub async fn entity_jwks(c: &Client, entity_id: &str) -> Result<Value, Failure> {
    let url = format!(
        "{}/.well-known/openid-federation",
        entity_id.trim_end_matches('/')
    );
    let resp = c
        .http
        .get(&url)
        .send()
        .await
        .map_err(|e| unreachable(entity_id, &e))?;
    let status = resp.status();
    let token = resp.text().await.map_err(|e| unreachable(entity_id, &e))?;
    if !status.is_success() {
        return Err(Failure::Refused {
            status: status.as_u16(),
            message: format!("{url} answered {status}"),
        });
    }
    let bad = |m: String| Failure::Refused {
        status: status.as_u16(),
        message: one_line(&format!("the Entity Configuration at {url} {m}")),
    };
    let unverified = pharos_shared::jose::decode_unverified(token.trim())
        .map_err(|e| bad(format!("is not a JWT: {e}")))?;
    let jwks: pharos_shared::jose::Jwks = serde_json::from_value(unverified.claims["jwks"].clone())
        .map_err(|e| bad(format!("has no usable jwks: {e}")))?;
    pharos_shared::jose::verify(token.trim(), &jwks)
        .map_err(|e| bad(format!("does not verify with its own keys: {e}")))?;
    serde_json::to_value(&jwks).map_err(|e| bad(e.to_string()))
}

/// Percent-encodes an entity identifier (or any value) as one path segment.
pub fn seg(s: &str) -> String {
    utf8_percent_encode(s, NON_ALPHANUMERIC).to_string()
}

fn read_cas(path: &Path) -> Result<Vec<reqwest::Certificate>, Failure> {
    let pem = std::fs::read(path)
        .map_err(|e| Failure::Usage(format!("cannot read --ca-file {}: {e}", path.display())))?;
    let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
        Failure::Usage(format!(
            "--ca-file {} holds no PEM certificate: {e}",
            path.display()
        ))
    })?;
    if certs.is_empty() {
        return Err(Failure::Usage(format!(
            "--ca-file {} holds no PEM certificate",
            path.display()
        )));
    }
    Ok(certs)
}

/// The API's refusal: its `error_description` (or `error`, or the status) on one line.
pub fn refusal(status: StatusCode, v: &Value) -> Failure {
    let text = match (v.get("error_description"), v.get("error")) {
        (Some(Value::String(d)), _) if !d.is_empty() => d.clone(),
        (_, Some(Value::String(e))) => e.clone(),
        _ => match v {
            Value::String(s) if !s.trim().is_empty() => s.trim().to_owned(),
            _ => status
                .canonical_reason()
                .unwrap_or("request refused")
                .to_owned(),
        },
    };
    // The main port's dispatcher answers Admin API paths it does not serve like any unknown
    // path: when the Admin API has a port of its own, that is where --url must point.
    let hint = if status == StatusCode::NOT_FOUND
        && text.starts_with(&format!("no endpoint registered for path {PREFIX}"))
    {
        " (this URL serves no Admin API: it may be on its own port, api.admin.port; point --url \
         or PHAROS_ADMIN_URL at that port)"
    } else {
        ""
    };
    Failure::Refused {
        status: status.as_u16(),
        message: one_line(&format!("{text}{hint}")),
    }
}

/// A transport failure: the URL and the innermost cause, without reqwest's nesting.
fn unreachable(base: &str, e: &reqwest::Error) -> Failure {
    let mut cause: &dyn std::error::Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    let what = if e.is_timeout() {
        "timed out".to_owned()
    } else {
        cause.to_string()
    };
    Failure::Unreachable(one_line(&format!("cannot reach {base}: {what}")))
}

/// Collapses whitespace runs (newlines included), so a message is one line.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_refusal_is_the_description_on_one_line() {
        let v = json!({"error": "invalid_request", "error_description": "bad\n  thing"});
        match refusal(StatusCode::BAD_REQUEST, &v) {
            Failure::Refused { status, message } => {
                assert_eq!(status, 400);
                assert_eq!(message, "bad thing");
            }
            other => panic!("{other:?}"),
        }
        match refusal(StatusCode::UNAUTHORIZED, &Value::Null) {
            Failure::Refused { message, .. } => assert_eq!(message, "Unauthorized"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_main_port_refusing_admin_paths_points_at_the_admin_port() {
        let v = json!({"error": "not_found",
            "error_description": "no endpoint registered for path /api/v1/admin/subordinates"});
        match refusal(StatusCode::NOT_FOUND, &v) {
            Failure::Refused { status, message } => {
                assert_eq!(status, 404);
                assert!(message.contains("api.admin.port"), "{message}");
                assert!(!message.contains('\n'), "{message}");
            }
            other => panic!("{other:?}"),
        }
        // A 404 of the Admin API itself (an unknown subordinate) gets no such hint.
        let v = json!({"error": "not_found", "error_description": "subordinate not found"});
        match refusal(StatusCode::NOT_FOUND, &v) {
            Failure::Refused { message, .. } => assert_eq!(message, "subordinate not found"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn entity_identifiers_are_one_path_segment() {
        assert_eq!(seg("https://a.example/x"), "https%3A%2F%2Fa%2Eexample%2Fx");
    }

    #[test]
    fn urls_other_than_http_are_usage_errors() {
        let t = Target {
            url: "ftp://x".into(),
            ..Target::default()
        };
        assert!(matches!(Client::new(t), Err(Failure::Usage(_))));
    }
}
