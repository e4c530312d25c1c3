//! Trust Mark status during resolution: for chains to an anchor whose record says
//! `trust_mark_status: fail_closed` or `fail_open`, each admitted Trust Mark's issuer is asked
//! at its `federation_trust_mark_status_endpoint` (§8.4: a POST of `trust_mark`, answered by a
//! signed `trust-mark-status-response+jwt`, verified with the keys the issuer's chain gave),
//! and only `active` marks are returned. lighthouse 0.22 lists this as not done.
//!
//! Bounds: the marks of one resolution are asked concurrently, each within [`TIMEOUT`], so a
//! hanging issuer costs one resolution at most that long (the resolution and its failure are
//! then cached like any other: the resolve endpoint's other answers do not wait). Answers are
//! kept per mark for [`STATUS_TTL`] (a failure to ask for [`FAILURE_TTL`]), in a cache bounded
//! in bytes; a resolution that asked is recomputed after [`STATUS_TTL`], so a mark its issuer
//! revoked leaves the resolve answer within one cache lifetime.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use moka::future::Cache;
use pharos_shared::chain::{Fetcher, TrustMarkStatusCheck};
use pharos_shared::trust_mark::VerifiedTrustMark;
use pharos_shared::trust_mark_holder::status_of;
use pharos_shared::trust_mark_issuer_keys::IssuerKeys;

/// How long an issuer's answer is trusted, seconds: the longest a revoked mark stays in
/// resolve answers.
pub const STATUS_TTL: i64 = 300;

/// How long a failure to ask is remembered, seconds (so a hanging issuer is not asked by
/// every resolution).
pub const FAILURE_TTL: i64 = 30;

/// The longest one status request may take.
pub const TIMEOUT: Duration = Duration::from_secs(3);

/// Upper bound of the cache, in bytes of keys (the marks) and answers.
const CACHE_BYTES: u64 = 16 * 1024 * 1024;

/// What the issuer said about a mark, or why it could not be asked, until when.
#[derive(Debug, Clone)]
struct Known {
    answer: Result<String, String>,
    until: i64,
}

/// Issuers' answers by Trust Mark (the compact JWT).
#[derive(Debug)]
pub struct StatusCache(Cache<String, Arc<Known>>);

impl Default for StatusCache {
    fn default() -> Self {
        Self(
            Cache::builder()
                .max_capacity(CACHE_BYTES)
                .time_to_live(Duration::from_secs(
                    u64::try_from(STATUS_TTL).unwrap_or(300),
                ))
                .weigher(|k: &String, _: &Arc<Known>| {
                    u32::try_from(k.len() + 128).unwrap_or(u32::MAX)
                })
                .build(),
        )
    }
}

impl StatusCache {
    /// The marks of `marks` that `check` keeps at `now`, asking their issuers through
    /// `upstream` (all at once). `check` is not [`TrustMarkStatusCheck::Off`].
    pub async fn keep<F: Fetcher>(
        &self,
        upstream: &F,
        check: TrustMarkStatusCheck,
        subject: &str,
        marks: Vec<(VerifiedTrustMark, Arc<IssuerKeys>)>,
        now: i64,
    ) -> Vec<VerifiedTrustMark> {
        let asked = join_all(
            marks
                .iter()
                .map(|(m, issuer)| self.status(upstream, issuer, &m.trust_mark, now)),
        )
        .await;
        marks
            .into_iter()
            .zip(asked)
            .filter_map(|((mark, issuer), answer)| {
                let keep = decide(check, &answer);
                if !keep {
                    match &answer {
                        Ok(status) => tracing::info!(%subject, issuer = %issuer.issuer,
                            trust_mark_type = %mark.trust_mark_type, %status,
                            "trust mark left out of the resolve answer: its issuer says so"),
                        Err(reason) => tracing::warn!(%subject, issuer = %issuer.issuer,
                            trust_mark_type = %mark.trust_mark_type, %reason,
                            "trust mark left out of the resolve answer: its status is unknown (fail_closed)"),
                    }
                }
                keep.then_some(mark)
            })
            .collect()
    }

    /// The issuer's status of `trust_mark`, cached.
    async fn status<F: Fetcher>(
        &self,
        upstream: &F,
        issuer: &IssuerKeys,
        trust_mark: &str,
        now: i64,
    ) -> Result<String, String> {
        if let Some(k) = self.0.get(trust_mark).await
            && now < k.until
        {
            return k.answer.clone();
        }
        let answer = ask(upstream, issuer, trust_mark).await;
        let ttl = if answer.is_ok() {
            STATUS_TTL
        } else {
            FAILURE_TTL
        };
        let known = Known {
            answer: answer.clone(),
            until: now.saturating_add(ttl),
        };
        self.0.insert(trust_mark.to_owned(), Arc::new(known)).await;
        answer
    }
}

/// Whether a mark with `answer` stays: `active` always; another status never; an unknown one
/// only when failing open.
fn decide(check: TrustMarkStatusCheck, answer: &Result<String, String>) -> bool {
    match answer {
        Ok(status) => status == "active",
        Err(_) => check == TrustMarkStatusCheck::FailOpen,
    }
}

/// One status request, within [`TIMEOUT`], its answer verified with the issuer's keys.
async fn ask<F: Fetcher>(
    upstream: &F,
    issuer: &IssuerKeys,
    trust_mark: &str,
) -> Result<String, String> {
    let endpoint = issuer.status_endpoint.as_deref().ok_or_else(|| {
        format!(
            "{} publishes no federation_trust_mark_status_endpoint",
            issuer.issuer
        )
    })?;
    let response = tokio::time::timeout(TIMEOUT, upstream.trust_mark_status(endpoint, trust_mark))
        .await
        .map_err(|_| format!("{endpoint} did not answer within {} s", TIMEOUT.as_secs()))?
        .map_err(|e| format!("{endpoint}: {e}"))?;
    status_of(&response, trust_mark, &issuer.issuer, &issuer.keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_active_marks_stay_and_unknown_ones_as_configured() {
        let active = Ok("active".to_owned());
        let unknown = Err("timed out".to_owned());
        for status in ["revoked", "expired", "invalid", "suspended"] {
            let answer = Ok(status.to_owned());
            assert!(!decide(TrustMarkStatusCheck::FailOpen, &answer), "{status}");
        }
        assert!(decide(TrustMarkStatusCheck::FailClosed, &active));
        assert!(!decide(TrustMarkStatusCheck::FailClosed, &unknown));
        assert!(decide(TrustMarkStatusCheck::FailOpen, &unknown));
    }
}
