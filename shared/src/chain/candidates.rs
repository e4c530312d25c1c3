//! Bottom-up collection of candidate Trust Chains (§10.1): from the subject's Entity
//! Configuration along `authority_hints` to any requested Trust Anchor, bounded in depth,
//! fan-out and number of fetches, and loop-free per path.

use std::collections::HashMap;
use std::future::Future;

use serde_json::{Map, Value};

use super::statement::{authority_hints, is_entity_identifier};
use super::{MAX_AUTHORITY_HINTS, MAX_FETCHES, ResolveRequest, invalid};
use crate::jose;
use crate::media_types::ENTITY_STATEMENT_TYP;
use crate::{Error, Result};

/// How chain collection obtains statements; implemented with an HTTP client by the planes and
/// in memory by the tests, so that the chain logic never opens a socket.
///
/// Implementations return the response body (a compact JWS) and report transport problems,
/// non-200 statuses or a wrong content type as [`crate::Error::Fetch`]. They should not
/// validate the statement: [`super::validate_chain`] does.
pub trait Fetcher: Send + Sync {
    /// The compact JWS served at `<entity_id without trailing "/">/.well-known/openid-federation`.
    fn entity_configuration(&self, entity_id: &str) -> impl Future<Output = Result<String>> + Send;

    /// The compact JWS from `<fetch_endpoint>?sub=<sub>` (`sub` URL-encoded).
    fn subordinate_statement(
        &self,
        fetch_endpoint: &str,
        sub: &str,
    ) -> impl Future<Output = Result<String>> + Send;

    /// The compact JWT from `<trust_mark_endpoint>?trust_mark_type=<type>&sub=<sub>` (§8.6),
    /// served as `application/trust-mark+jwt`: how the control plane obtains the trust marks
    /// it holds. Chain collection never calls it, so fetchers that serve only statements (the
    /// tests' in-memory ones) need not implement it.
    fn trust_mark(
        &self,
        trust_mark_endpoint: &str,
        trust_mark_type: &str,
        sub: &str,
    ) -> impl Future<Output = Result<String>> + Send {
        let _ = (trust_mark_endpoint, trust_mark_type, sub);
        async {
            Err(Error::Fetch(
                "this fetcher does not fetch trust marks".into(),
            ))
        }
    }

    /// The compact JWT a `<trust_mark_status_endpoint>` answers to a POST of `trust_mark`
    /// (§8.4), served as `application/trust-mark-status-response+jwt`: how the control plane
    /// learns that a mark it holds was revoked. Like [`Self::trust_mark`], not needed by chain
    /// collection.
    fn trust_mark_status(
        &self,
        trust_mark_status_endpoint: &str,
        trust_mark: &str,
    ) -> impl Future<Output = Result<String>> + Send {
        let _ = (trust_mark_status_endpoint, trust_mark);
        async {
            Err(Error::Fetch(
                "this fetcher does not ask for trust mark status".into(),
            ))
        }
    }

    /// The body of `<trust_mark_list_endpoint>?trust_mark_type=<type>&sub=<sub>` (§8.5),
    /// served as `application/json`: how the control plane learns that the issuer of a mark
    /// it holds no longer lists it. Like [`Self::trust_mark`], not needed by chain collection.
    fn trust_mark_listing(
        &self,
        trust_mark_list_endpoint: &str,
        trust_mark_type: &str,
        sub: &str,
    ) -> impl Future<Output = Result<String>> + Send {
        let _ = (trust_mark_list_endpoint, trust_mark_type, sub);
        async {
            Err(Error::Fetch(
                "this fetcher does not read trust mark listings".into(),
            ))
        }
    }

    /// Runs `work`, CPU-bound verification (every candidate chain's signatures, which a
    /// hostile federation can multiply), where it does not stall the tasks that fetch:
    /// the planes' fetchers hand it to the async runtime's blocking pool. `None` when the
    /// work could not finish there (it panicked or the runtime is shutting down). The
    /// default runs it in place, for the tests' in-memory fetchers.
    fn run_blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> impl Future<Output = Option<T>> + Send {
        std::future::ready(Some(work()))
    }
}

/// A candidate chain: compact JWSs from the subject's EC to the anchor's EC, plus the index of
/// the requested anchor it reaches. Not yet validated.
pub(crate) struct Candidate {
    pub anchor: usize,
    pub chain: Vec<String>,
}

/// What collection found: candidates in discovery order, and why other paths ended.
pub(crate) struct Collected {
    pub candidates: Vec<Candidate>,
    pub failures: Vec<String>,
}

/// A partial path: the Entities from the subject up to `ids.last()`, the statements so far
/// (subject EC, then one Subordinate Statement per step), and the current Entity's EC.
struct Path {
    ids: Vec<String>,
    chain: Vec<String>,
    ec_jws: String,
    ec: Map<String, Value>,
}

/// A fetched Entity Configuration: the compact JWS and its (unverified) claims.
type Configuration = (String, Map<String, Value>);

/// Fetching with a budget and a per-resolution cache, so that no statement is fetched twice
/// (§10.1 loop prevention) and no more than [`MAX_FETCHES`] requests are made.
struct Collector<'a, F> {
    fetcher: &'a F,
    fetches: usize,
    ecs: HashMap<String, Option<Configuration>>,
    failures: Vec<String>,
    exhausted: bool,
}

impl<F: Fetcher> Collector<'_, F> {
    /// Take one fetch from the budget; false (remembering why) when it is spent.
    fn spend(&mut self) -> bool {
        if self.fetches >= MAX_FETCHES {
            self.exhausted = true;
            return false;
        }
        self.fetches += 1;
        true
    }

    /// The Entity Configuration of `id`, decoded and sanity-checked (typ, iss == sub == id)
    /// but not verified: Intermediates' ECs only tell where to fetch, the anchor's is
    /// verified with the chain.
    async fn configuration(&mut self, id: &str) -> Result<Configuration> {
        if let Some(cached) = self.ecs.get(id) {
            return cached
                .clone()
                .ok_or_else(|| Error::Fetch(format!("{id}: Entity Configuration unusable")));
        }
        // An identifier that breaks the rules (§1.2: https, a host, no query or fragment) is
        // never fetched: statements are attacker-controlled, and fetching whatever they name
        // would make the resolver a scanner of other people's URLs.
        check_identifier(id)?;
        if !self.spend() {
            return Err(Error::Fetch("fetch budget exhausted".into()));
        }
        let result = self.fetch_configuration(id).await;
        self.ecs
            .insert(id.to_owned(), result.as_ref().ok().cloned());
        result
    }

    async fn fetch_configuration(&self, id: &str) -> Result<Configuration> {
        let jws = self.fetcher.entity_configuration(id).await?;
        let decoded = jose::decode_unverified(&jws)?;
        jose::check_typ(&decoded, ENTITY_STATEMENT_TYP)?;
        let claims = decoded.claims;
        let (iss, sub) = (claims.get("iss"), claims.get("sub"));
        if iss.and_then(Value::as_str) != Some(id) || sub.and_then(Value::as_str) != Some(id) {
            return Err(Error::Fetch(format!(
                "{id}: the Entity Configuration is not self-issued by {id}"
            )));
        }
        Ok((jws, claims))
    }

    /// The Subordinate Statement about `sub` from the fetch endpoint of `superior`.
    ///
    /// The endpoint is taken only from an Entity Configuration that verifies with its own
    /// `jwks` and only when it is an `https` URL (`http` on loopback) without a fragment: an
    /// unsigned or garbled statement must not steer the resolver to an arbitrary URL.
    async fn statement(&mut self, superior: &Configuration, sub: &str) -> Result<String> {
        let (jws, claims) = superior;
        let endpoint = claims
            .get("metadata")
            .and_then(|m| m.get("federation_entity"))
            .and_then(|m| m.get("federation_fetch_endpoint"))
            .and_then(Value::as_str)
            .ok_or_else(|| Error::Fetch("no federation_fetch_endpoint".into()))?;
        check_endpoint(endpoint)?;
        self_signed(jws, claims)?;
        if !self.spend() {
            return Err(Error::Fetch("fetch budget exhausted".into()));
        }
        self.fetcher.subordinate_statement(endpoint, sub).await
    }
}

/// Refuses an identifier that is not an Entity Identifier, before anything is fetched.
fn check_identifier(id: &str) -> Result<()> {
    match url::Url::parse(id) {
        Ok(u) if is_entity_identifier(&u) => Ok(()),
        _ => Err(invalid(format!(
            "{id:?} is not a valid Entity Identifier, not fetched"
        ))),
    }
}

/// A `federation_fetch_endpoint` worth requesting: `https` (`http` only on a loopback host,
/// as for identifiers), with a host and without a fragment (§5.1.1); a query is allowed.
fn check_endpoint(endpoint: &str) -> Result<()> {
    let ok = url::Url::parse(endpoint).is_ok_and(|mut u| {
        let fragment = u.fragment().is_some();
        u.set_query(None);
        !fragment && is_entity_identifier(&u)
    });
    if ok {
        Ok(())
    } else {
        Err(invalid(format!(
            "federation_fetch_endpoint {endpoint:?} is not an https URL without fragment, not fetched"
        )))
    }
}

/// The superior's Entity Configuration verifies with the `jwks` it carries. This does not make
/// it trusted (the chain does that), but an endpoint read from a statement nobody signed is
/// not followed.
fn self_signed(jws: &str, claims: &Map<String, Value>) -> Result<()> {
    let jwks = claims
        .get("jwks")
        .cloned()
        .ok_or_else(|| invalid("Entity Configuration without jwks"))
        .and_then(|v| {
            serde_json::from_value::<jose::Jwks>(v)
                .map_err(|e| invalid(format!("Entity Configuration jwks: {e}")))
        })?;
    jose::verify(jws, &jwks).map(|_| ()).map_err(|e| {
        invalid(format!(
            "Entity Configuration does not verify with its own jwks: {e}"
        ))
    })
}

/// Fetch the subject's EC (a failure there is returned: the subject cannot be found), then
/// walk up depth-first. A path ends when it reaches a requested anchor (never continuing
/// past it), exceeds `max_depth` Subordinate Statements, or would revisit an Entity.
pub(crate) async fn collect<F: Fetcher>(
    fetcher: &F,
    req: &ResolveRequest<'_>,
) -> Result<Collected> {
    let mut c = Collector {
        fetcher,
        fetches: 0,
        ecs: HashMap::new(),
        failures: Vec::new(),
        exhausted: false,
    };
    let (ec_jws, ec) = c.configuration(req.subject).await.map_err(|e| match e {
        Error::Fetch(_) => e,
        other => invalid(format!("{}: Entity Configuration: {other}", req.subject)),
    })?;
    let mut stack = vec![Path {
        ids: vec![req.subject.to_owned()],
        chain: vec![ec_jws.clone()],
        ec_jws,
        ec,
    }];
    let mut candidates = Vec::new();
    while let Some(path) = stack.pop() {
        let current = path.ids.last().map(String::as_str).unwrap_or_default();
        if let Some(anchor) = req.anchors.iter().position(|a| a.entity_id == current) {
            let mut chain = path.chain;
            if path.ids.len() > 1 {
                chain.push(path.ec_jws);
            }
            candidates.push(Candidate { anchor, chain });
            continue;
        }
        let hints = authority_hints(&path.ec);
        if hints.is_empty() {
            c.failures.push(format!("{current} has no authority_hints"));
            continue;
        }
        if path.ids.len() > req.max_depth {
            c.failures.push(format!(
                "path via {current} exceeds {} levels",
                req.max_depth
            ));
            continue;
        }
        if hints.len() > MAX_AUTHORITY_HINTS {
            c.failures.push(format!(
                "{current}: only the first {MAX_AUTHORITY_HINTS} of {} authority_hints followed",
                hints.len()
            ));
        }
        let mut children = Vec::new();
        for hint in hints.into_iter().take(MAX_AUTHORITY_HINTS) {
            if path.ids.iter().any(|id| id == hint) {
                c.failures.push(format!("loop: {current} -> {hint}"));
                continue;
            }
            let step = async {
                let sup = c.configuration(hint).await?;
                let ss = c.statement(&sup, current).await?;
                Ok::<_, Error>((sup.0, sup.1, ss))
            };
            match step.await {
                Ok((ec_jws, ec, ss)) => {
                    let mut ids = path.ids.clone();
                    ids.push(hint.to_owned());
                    let mut chain = path.chain.clone();
                    chain.push(ss);
                    children.push(Path {
                        ids,
                        chain,
                        ec_jws,
                        ec,
                    });
                }
                Err(e) => c.failures.push(format!("{current} -> {hint}: {e}")),
            }
        }
        stack.extend(children.into_iter().rev());
    }
    if c.exhausted {
        // First, so that the summary of an `invalid_trust_chain` error always shows it.
        let note = format!("fetch budget of {MAX_FETCHES} exhausted, some paths not explored");
        c.failures.insert(0, note);
    }
    Ok(Collected {
        candidates,
        failures: c.failures,
    })
}
