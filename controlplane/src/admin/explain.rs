//! `GET /explain`: the chain explainer (issue 40). A subject resolved as the resolve endpoint
//! of this entity would resolve it, with every step shown: each statement, signature and
//! constraint, each metadata policy merged, the superior's `metadata` claim, each operator's
//! effect, each Trust Mark kept or dropped, and the failing step in words.
//!
//! The work is the resolver's ([`pharos_shared::chain::explain`] through the process's
//! resolver, its statement cache and outbound bounds); this module checks the query. A chain
//! that does not resolve is an explanation (200 with `failed`), not an error.

use axum::Extension;
use axum::extract::RawQuery;
use pharos_runtime::resolver_caches::ExplainQuery;
use serde_json::Value;

use super::extract::entity_id;
use super::resolver::Handle;
use crate::admin::error::{ApiError, ApiResult};

/// This module's routes, merged by [`crate::admin::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new().routes(routes!(explain))
}

/// At most this many `entity_type` parameters.
const MAX_ENTITY_TYPES: usize = 16;

/// The checked query of `GET /explain`.
#[derive(Debug, PartialEq)]
pub struct Params {
    /// `sub`.
    pub sub: String,
    /// `anchor` (or `trust_anchor`).
    pub anchor: Option<String>,
    /// `entity_type`, repeatable.
    pub entity_types: Vec<String>,
}

/// Reads and checks the query, naming the parameter that is wrong.
pub fn params(raw: Option<&str>) -> ApiResult<Params> {
    let (mut sub, mut anchor, mut entity_types) = (None, None, Vec::new());
    for (k, v) in url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
        let v = v.into_owned();
        match k.as_ref() {
            "sub" if sub.is_none() => sub = Some(v),
            "anchor" | "trust_anchor" if anchor.is_none() => anchor = Some(v),
            "entity_type" => entity_types.push(v),
            "sub" | "anchor" | "trust_anchor" => {
                return Err(ApiError::BadRequest(format!("{k} is given twice")));
            }
            other => {
                return Err(ApiError::BadRequest(format!(
                    "unknown query parameter {other:?} (sub, anchor and entity_type are known)"
                )));
            }
        }
    }
    let sub = sub
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ApiError::BadRequest("sub is required".into()))?;
    entity_id("sub", &sub)?;
    let anchor = anchor.filter(|a| !a.is_empty());
    if let Some(a) = &anchor {
        entity_id("anchor", a)?;
    }
    entity_types.retain(|t| !t.is_empty());
    if entity_types.len() > MAX_ENTITY_TYPES {
        return Err(ApiError::BadRequest(format!(
            "entity_type is given more than {MAX_ENTITY_TYPES} times"
        )));
    }
    let bad = |t: &&String| {
        t.len() > 100
            || !t
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
    };
    if let Some(t) = entity_types.iter().find(bad) {
        return Err(ApiError::BadRequest(format!(
            "entity_type {t:?} is not an Entity Type name (letters, digits, _ - . and at most 100)"
        )));
    }
    Ok(Params {
        sub,
        anchor,
        entity_types,
    })
}

/// Resolves `sub` (towards `anchor`, or every anchor this entity's resolver accepts) and
/// explains every step; a resolution that fails is explained with `failed` naming the step
/// and the rule. The result is not cached.
#[utoipa::path(get, path = "/explain", tag = "resolver",
    params(("sub" = String, Query, description = "The Entity to resolve"),
        ("anchor" = Option<String>, Query, description = "The Trust Anchor (default: every anchor the resolve endpoint accepts)"),
        ("entity_type" = Option<Vec<String>>, Query, description = "Entity Types to keep in the resolved metadata (repeatable)")),
    responses((status = 200, body = Object, description = "The explanation: statements, constraints, policy (merges, superior_metadata, operators with before and after), metadata, trust_marks, failed"),
        (status = 400), (status = 503)))]
pub async fn explain(resolver: Handle, RawQuery(raw): RawQuery) -> ApiResult<axum::Json<Value>> {
    let p = params(raw.as_deref())?;
    let Some(Extension(service)) = resolver else {
        return Err(ApiError::Unavailable(
            "this process serves no resolver".into(),
        ));
    };
    let q = ExplainQuery {
        sub: &p.sub,
        anchor: p.anchor.as_deref(),
        entity_types: &p.entity_types,
    };
    let x = service.explain(q).await;
    serde_json::to_value(&x)
        .map(axum::Json)
        .map_err(|e| ApiError::Internal(format!("explanation: {e}")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn refused(raw: &str) -> String {
        match params(Some(raw)) {
            Err(ApiError::BadRequest(m)) => m,
            other => panic!("{raw}: {other:?}"),
        }
    }

    #[test]
    fn the_query_is_checked_naming_the_parameter() {
        let p = params(Some(
            "sub=https%3A%2F%2Fl.example&anchor=https%3A%2F%2Fta.example&entity_type=openid_relying_party",
        ))
        .unwrap();
        assert_eq!(p.sub, "https://l.example");
        assert_eq!(p.anchor.as_deref(), Some("https://ta.example"));
        assert_eq!(p.entity_types, ["openid_relying_party"]);
        assert!(refused("").contains("sub"));
        assert!(refused("sub=not-a-url").contains("sub"));
        assert!(refused("sub=https%3A%2F%2Fl.example&anchor=ftp%3A%2F%2Fx").contains("anchor"));
        assert!(refused("sub=https%3A%2F%2Fl.example&entity_type=%3Cb%3E").contains("entity_type"));
        assert!(refused("sub=https%3A%2F%2Fl.example&x=1").contains("\"x\""));
    }
}
