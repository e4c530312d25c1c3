//! `http`: an operator web service decides. The request carries `X-Entity-ID` and
//! `X-Entity-Types` (comma-joined) and, per `body_mode`, the Entity Configuration's claims or
//! `{"sub", "entity_types"}` as JSON. `2xx` passes; a `4xx` is the service's denial, answered
//! with that status (a `{"error","error_description"}` body is passed on, any other body
//! becomes the description, cut to 500 characters); a `5xx`, a network failure or a timeout
//! is `502 server_error`. Never cached: the service may decide differently each time.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use super::cmd::{MAX_DESCRIPTION, cut};
use super::{BodyMode, Candidate, CheckEnv, Denial, Http, HttpCall, Verdict};

/// An uncached call (the list checks add their `cache_ttl`).
pub(super) fn call(
    method: &str,
    url: &str,
    headers: &BTreeMap<String, String>,
    body: Option<Vec<u8>>,
    timeout: Duration,
) -> HttpCall {
    HttpCall {
        method: method.to_owned(),
        url: url.to_owned(),
        headers: headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        body,
        timeout,
        cache_ttl: None,
    }
}

impl HttpCall {
    /// The same call, answerable from a cache entry younger than `ttl` (none when zero).
    pub fn with_cache(mut self, ttl: Duration) -> Self {
        self.cache_ttl = (!ttl.is_zero()).then_some(ttl);
        self
    }
}

/// Runs an `http` check.
pub(super) async fn check<E: CheckEnv>(c: &Http, cand: &Candidate<'_>, env: &E) -> Verdict {
    let body = match c.body_mode {
        BodyMode::EntityConfiguration => Some(serde_json::to_vec(cand.configuration)),
        BodyMode::EntityId => Some(serde_json::to_vec(
            &json!({"sub": cand.entity_id, "entity_types": cand.entity_types}),
        )),
        BodyMode::None => None,
    }
    .transpose()
    .unwrap_or_default();
    let mut call = call(&c.method, &c.url, &c.headers, body, c.timeout.get());
    call.headers
        .push(("X-Entity-ID".into(), cand.entity_id.to_owned()));
    call.headers
        .push(("X-Entity-Types".into(), cand.entity_types.join(",")));
    match env.http(call).await {
        Ok(a) if (200..300).contains(&a.status) => Verdict::Pass,
        Ok(a) if (400..500).contains(&a.status) => Verdict::Deny(denial(a.status, &a.body)),
        Ok(a) => bad_gateway(format!(
            "the entity check service answered HTTP {}",
            a.status
        )),
        Err(e) => bad_gateway(format!("the entity check service failed: {e}")),
    }
}

/// The service's `4xx` as our answer.
fn denial(status: u16, body: &[u8]) -> Denial {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    if let Some(error) = parsed.as_ref().and_then(|v| v.get("error")?.as_str()) {
        let description = parsed
            .as_ref()
            .and_then(|v| v.get("error_description")?.as_str())
            .unwrap_or_default();
        return Denial::new(status, &cut(error, 64), cut(description, MAX_DESCRIPTION));
    }
    let text = String::from_utf8_lossy(body);
    let text = cut(text.trim(), MAX_DESCRIPTION);
    let error = if status == 403 {
        "forbidden"
    } else {
        "invalid_request"
    };
    let description = if text.is_empty() {
        "entity check failed".to_owned()
    } else {
        text
    };
    Denial::new(status, error, description)
}

fn bad_gateway(why: String) -> Verdict {
    Verdict::Deny(Denial::new(502, "server_error", why))
}
