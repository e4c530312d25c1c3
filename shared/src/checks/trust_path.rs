//! `trust_path`: the entity has a valid Trust Chain to one of the configured trust anchors.
//!
//! Anchors are looked up in the trust anchor repository when the check runs (an identifier
//! the repository does not hold does not count), so an operator who removes an anchor or
//! pins new keys changes every check at once. The subject being one of the anchors passes
//! when its own Entity Configuration verifies as that anchor (pinned keys when stored).

use super::{Candidate, CheckEnv, Denial, TrustPath, Verdict};
use crate::chain::{self, AnchorSpec, DEFAULT_MAX_DEPTH, ResolveRequest};

/// The anchors of `ids` that the repository holds, in the configured order.
pub(super) fn repository_anchors<E: CheckEnv>(ids: &[String], env: &E) -> Vec<AnchorSpec> {
    ids.iter().filter_map(|id| env.anchor(id)).collect()
}

/// Runs a `trust_path` check.
pub(super) async fn check<E: CheckEnv>(c: &TrustPath, cand: &Candidate<'_>, env: &E) -> Verdict {
    let anchors = repository_anchors(&c.trust_anchors, env);
    if anchors.is_empty() {
        return deny("none of the configured trust anchors is in the trust anchor repository");
    }
    if let Some(me) = anchors.iter().find(|a| a.entity_id == cand.entity_id) {
        let own = [cand.configuration_jws.to_owned()];
        return match chain::validate_chain(&own, me, env.now()) {
            Ok(_) => Verdict::Pass,
            Err(e) => deny(format!("the entity is a trust anchor but {e}")),
        };
    }
    let req = ResolveRequest {
        subject: cand.entity_id,
        anchors: &anchors,
        entity_types: &[],
        now: env.now(),
        max_depth: DEFAULT_MAX_DEPTH,
    };
    match chain::resolve(env.fetcher(), &req).await {
        Ok(_) => Verdict::Pass,
        Err(e) => deny(format!("no valid trust chain to a configured anchor: {e}")),
    }
}

fn deny(why: impl Into<String>) -> Verdict {
    Verdict::Deny(Denial::forbidden(why))
}
