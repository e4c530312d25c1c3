//! `cmd`: an operator program decides. It gets the Entity Configuration's claims as JSON on
//! standard input and `ENTITY_ID`, `ENTITY_TYPES` (comma-joined) plus the configured `env` in
//! its environment; exit 0 passes. Any other exit is the entity's denial (`403 forbidden`
//! with the program's standard error, trimmed and cut); a program that cannot start or does
//! not end in time is our failure (`500 server_error`).

use super::{Candidate, CheckEnv, Cmd, Denial, ProcessCall, ProcessOutcome, Verdict};

/// Denial descriptions taken from a program's standard error are cut to this many characters.
pub const MAX_DESCRIPTION: usize = 500;

/// Runs a `cmd` check.
pub(super) async fn check<E: CheckEnv>(c: &Cmd, cand: &Candidate<'_>, env: &E) -> Verdict {
    let mut vars = vec![
        ("ENTITY_ID".to_owned(), cand.entity_id.to_owned()),
        ("ENTITY_TYPES".to_owned(), cand.entity_types.join(",")),
    ];
    vars.extend(c.env.iter().filter_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        Some((k.to_owned(), v.to_owned()))
    }));
    let call = ProcessCall {
        path: c.path.clone(),
        args: c.args.clone(),
        env: vars,
        stdin: serde_json::to_vec(cand.configuration).unwrap_or_default(),
        timeout: c.timeout.get(),
    };
    match env.run(call).await {
        ProcessOutcome::Exited { code: Some(0), .. } => Verdict::Pass,
        ProcessOutcome::Exited { stderr, .. } => {
            let said = cut(stderr.trim(), MAX_DESCRIPTION);
            let why = if said.is_empty() {
                "entity check failed".to_owned()
            } else {
                said
            };
            Verdict::Deny(Denial::forbidden(why))
        }
        ProcessOutcome::TimedOut => Verdict::Deny(Denial::new(
            500,
            "server_error",
            "the entity check did not finish in time",
        )),
        ProcessOutcome::CannotStart(e) => Verdict::Deny(Denial::new(
            500,
            "server_error",
            format!("the entity check could not run: {e}"),
        )),
    }
}

/// At most `max` characters of `s` (never splitting a character).
pub(super) fn cut(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}
