//! Running a [`Checker`] against a [`Candidate`].

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use super::{Candidate, CheckEnv, Checker, Denial, Verdict};
use crate::trust_mark_issuer::Standing;

/// Runs `checker` for `candidate`. Never fails: a check that cannot be carried out (a service
/// down, a program that cannot start) is a [`Denial`] with a 5xx status.
pub fn check<'a, E: CheckEnv>(
    checker: &'a Checker,
    candidate: &'a Candidate<'a>,
    env: &'a E,
) -> Pin<Box<dyn Future<Output = Verdict> + Send + 'a>> {
    // Boxed because `multiple_and` / `multiple_or` recurse.
    Box::pin(async move {
        match checker {
            Checker::None => Verdict::Pass,
            Checker::EntityId(c) => {
                if c.entity_ids.iter().any(|id| id == candidate.entity_id) {
                    Verdict::Pass
                } else {
                    Verdict::Deny(Denial::new(
                        400,
                        "invalid_request",
                        "this entity is not allowed",
                    ))
                }
            }
            Checker::AuthorityHints(c) => {
                let named = candidate
                    .configuration
                    .get("authority_hints")
                    .and_then(Value::as_array)
                    .is_some_and(|hints| hints.iter().any(|h| h.as_str() == Some(&c.entity_id)));
                if named {
                    Verdict::Pass
                } else {
                    Verdict::Deny(Denial::new(
                        400,
                        "invalid_request",
                        format!("authority_hints does not name {}", c.entity_id),
                    ))
                }
            }
            Checker::All(checks) => {
                for c in checks {
                    if let Verdict::Deny(d) = check(c, candidate, env).await {
                        return Verdict::Deny(d);
                    }
                }
                Verdict::Pass
            }
            Checker::Any(checks) => {
                for c in checks {
                    if check(c, candidate, env).await == Verdict::Pass {
                        return Verdict::Pass;
                    }
                }
                Verdict::Deny(Denial::forbidden("no enrollment check passed"))
            }
            Checker::DbList => {
                let Some(tm_type) = candidate.trust_mark_type else {
                    return Verdict::Deny(Denial::new(
                        500,
                        "server_error",
                        "db_list checks trust mark eligibility only",
                    ));
                };
                match env.standing(tm_type, candidate.entity_id) {
                    Standing::Entitled => Verdict::Pass,
                    Standing::Blocked => {
                        Verdict::Deny(Denial::forbidden("subject cannot obtain this trust mark"))
                    }
                    Standing::Pending => Verdict::Deny(Denial::new(
                        202,
                        "pending",
                        "the request is waiting for an administrator",
                    )),
                    Standing::NotEntitled => Verdict::Deny(Denial::new(
                        404,
                        "not_found",
                        "subject is not entitled to this trust mark",
                    )),
                }
            }
            Checker::TrustPath(c) => super::trust_path::check(c, candidate, env).await,
            Checker::TrustMark(c) => super::trust_mark::check(c, candidate, env).await,
            Checker::HttpList(c) => super::http_list::check_plain(c, candidate, env).await,
            Checker::HttpListJwt(c) => super::http_list::check_jwt(c, candidate, env).await,
            Checker::Cmd(c) => super::cmd::check(c, candidate, env).await,
            Checker::Http(c) => super::http::check(c, candidate, env).await,
        }
    })
}
