//! `cmd`: an operator program decides. It gets the Entity Configuration's claims as JSON on
//! standard input and `ENTITY_ID`, `ENTITY_TYPES` (comma-joined) plus the configured `env` in
//! an otherwise cleared environment ([`super::PROGRAM_ENV_ALLOWED`]); exit 0 passes. Any other
//! exit is the entity's denial (`403 forbidden`); a program that cannot start or does not end
//! in time is our failure (`500 server_error`). The caller, who may be anyone, gets a generic
//! description only: the program's standard error and a failed start's cause (paths, an
//! operator's diagnostics) go to the log.

use super::{Candidate, CheckEnv, Cmd, Denial, ProcessCall, ProcessOutcome, Verdict};

/// Descriptions an operator's service gives (`http` checks) are cut to this many characters,
/// and so is a program's standard error in the log line of its denial.
pub const MAX_DESCRIPTION: usize = 500;

/// Runs a `cmd` check.
pub(super) async fn check<E: CheckEnv>(c: &Cmd, cand: &Candidate<'_>, env: &E) -> Verdict {
    let mut vars = vec![
        ("ENTITY_ID".to_owned(), cand.entity_id.to_owned()),
        ("ENTITY_TYPES".to_owned(), cand.entity_types.join(",")),
    ];
    let mut inherit = Vec::new();
    for kv in &c.env {
        match kv.split_once('=') {
            Some((k, v)) => vars.push((k.to_owned(), v.to_owned())),
            None => inherit.push(kv.clone()),
        }
    }
    let call = ProcessCall {
        path: c.path.clone(),
        args: c.args.clone(),
        env: vars,
        inherit,
        stdin: serde_json::to_vec(cand.configuration).unwrap_or_default(),
        timeout: c.timeout.get(),
    };
    match env.run(call).await {
        ProcessOutcome::Exited { code: Some(0), .. } => Verdict::Pass,
        ProcessOutcome::Exited { code, stderr } => {
            tracing::info!(
                program = %c.path,
                entity = %cand.entity_id,
                ?code,
                stderr = %cut(stderr.trim(), MAX_DESCRIPTION),
                "entity check program denied the entity"
            );
            Verdict::Deny(Denial::forbidden("the entity check refused the entity"))
        }
        ProcessOutcome::TimedOut => {
            tracing::warn!(program = %c.path, entity = %cand.entity_id, timeout = ?c.timeout.get(),
                "entity check program did not finish in time");
            Verdict::Deny(Denial::new(
                500,
                "server_error",
                "the entity check did not finish in time",
            ))
        }
        ProcessOutcome::CannotStart(e) => {
            tracing::error!(program = %c.path, error = %e, "entity check program could not run");
            Verdict::Deny(Denial::new(
                500,
                "server_error",
                "the entity check could not run",
            ))
        }
    }
}

/// At most `max` characters of `s` (never splitting a character).
pub(super) fn cut(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}
