//! `http_list` and `http_list_jwt`: the entity must be named in an allow-list an operator's
//! service publishes, as a JSON array of entity identifiers or as a claim of a signed JWT.
//!
//! The list is fetched through [`CheckEnv::http`] with the configured `cache_ttl`, so a burst
//! of checks costs one fetch. A list that cannot be obtained, parsed or verified is the
//! service's failure (`500 server_error`: the entity cannot do anything about it); an entity
//! missing from a good list is `403 forbidden`.
//!
//! The JWT form is verified with the configured keys (`jwks` mode) or, in `trust_anchor`
//! mode, with the keys of its `iss` taken from the issuer's Entity Configuration at the head
//! of a valid Trust Chain to one of the configured anchors (from the repository).

use serde_json::{Map, Value};

use super::trust_path::repository_anchors;
use super::{
    Candidate, CheckEnv, Denial, HttpCall, HttpList, HttpListJwt, ListVerification, Verdict,
};
use crate::chain::{self, DEFAULT_MAX_DEPTH, ResolveRequest};
use crate::jose::{self, Jwks};

/// Runs an `http_list` check.
pub(super) async fn check_plain<E: CheckEnv>(
    c: &HttpList,
    cand: &Candidate<'_>,
    env: &E,
) -> Verdict {
    let call = super::http::call(&c.method, &c.url, &c.headers, None, c.timeout.get());
    let list = match fetch(env, call.with_cache(c.cache_ttl.get())).await {
        Ok(body) => serde_json::from_slice::<Value>(&body)
            .map_err(|e| format!("the list is not JSON: {e}"))
            .and_then(|v| entity_ids(&v)),
        Err(e) => Err(e),
    };
    decide(list, &c.url, cand.entity_id)
}

/// Runs an `http_list_jwt` check.
pub(super) async fn check_jwt<E: CheckEnv>(
    c: &HttpListJwt,
    cand: &Candidate<'_>,
    env: &E,
) -> Verdict {
    let call = super::http::call(&c.method, &c.url, &c.headers, None, c.timeout.get());
    let list = match fetch(env, call.with_cache(c.cache_ttl.get())).await {
        Ok(body) => verified_claims(&body, &c.verification, env)
            .await
            .and_then(|claims| match claims.get(&c.list_claim) {
                Some(v) => entity_ids(v),
                None => Err(format!("the list JWT has no claim {}", c.list_claim)),
            }),
        Err(e) => Err(e),
    };
    decide(list, &c.url, cand.entity_id)
}

/// The body of a `200` answer, or why there is none.
async fn fetch<E: CheckEnv>(env: &E, call: HttpCall) -> Result<Vec<u8>, String> {
    let answer = env.http(call).await?;
    if answer.status != 200 {
        return Err(format!("the list service answered HTTP {}", answer.status));
    }
    Ok(answer.body)
}

/// The strings of a JSON array.
fn entity_ids(v: &Value) -> Result<Vec<String>, String> {
    let arr = v.as_array().ok_or("the list is not a JSON array")?;
    Ok(arr
        .iter()
        .filter_map(|e| e.as_str().map(str::to_owned))
        .collect())
}

fn decide(list: Result<Vec<String>, String>, url: &str, entity_id: &str) -> Verdict {
    match list {
        Ok(ids) if ids.iter().any(|id| id == entity_id) => Verdict::Pass,
        Ok(_) => Verdict::Deny(Denial::forbidden("the entity is not in the allow-list")),
        Err(e) => Verdict::Deny(Denial::new(
            500,
            "server_error",
            format!("cannot check the allow-list at {url}: {e}"),
        )),
    }
}

/// The claims of the list JWT in `body`, once its signature and lifetime check out.
async fn verified_claims<E: CheckEnv>(
    body: &[u8],
    how: &ListVerification,
    env: &E,
) -> Result<Map<String, Value>, String> {
    let jwt = std::str::from_utf8(body)
        .map_err(|_| "the list JWT is not text".to_owned())?
        .trim();
    let keys = match how {
        ListVerification::Jwks { jwks } => jwks.clone(),
        ListVerification::TrustAnchor { trust_anchors } => {
            issuer_keys(jwt, trust_anchors, env).await?
        }
    };
    let decoded =
        jose::verify(jwt, &keys).map_err(|e| format!("the list JWT does not verify: {e}"))?;
    let exp = decoded.claims.get("exp").map(Value::as_i64);
    match exp {
        Some(None) => Err("the list JWT's exp is not a number".into()),
        Some(Some(exp)) if exp <= env.now() => Err("the list JWT has expired".into()),
        _ => Ok(decoded.claims),
    }
}

/// `iss`'s keys from its Entity Configuration, taken from a valid chain to one of `anchors`.
async fn issuer_keys<E: CheckEnv>(jwt: &str, anchors: &[String], env: &E) -> Result<Jwks, String> {
    let unverified = jose::decode_unverified(jwt).map_err(|e| format!("the list JWT: {e}"))?;
    let iss = unverified
        .claims
        .get("iss")
        .and_then(Value::as_str)
        .ok_or("the list JWT has no iss")?;
    let anchors = repository_anchors(anchors, env);
    if anchors.is_empty() {
        return Err("none of the configured trust anchors is in the repository".into());
    }
    let req = ResolveRequest {
        subject: iss,
        anchors: &anchors,
        entity_types: &[],
        now: env.now(),
        max_depth: DEFAULT_MAX_DEPTH,
    };
    let chain = chain::resolve(env.fetcher(), &req)
        .await
        .map_err(|e| format!("the list issuer {iss} has no valid trust chain: {e}"))?;
    chain
        .subject_claims
        .get("jwks")
        .cloned()
        .and_then(|j| serde_json::from_value(j).ok())
        .ok_or_else(|| format!("the list issuer {iss} publishes no jwks"))
}
