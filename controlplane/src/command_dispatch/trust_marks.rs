//! The Trust Mark Issuer's commands: recording an instance the data plane has signed, storing
//! a trust mark request as a pending subject, and pruning expired instances. Changes go
//! through [`Write`], so the data plane's next request sees them; a command that changes
//! nothing takes no writer lock where the snapshot can tell, and publishes nothing.
//!
//! [`Write`]: crate::control_plane::Write

use std::sync::Arc;
use std::time::Duration;

use pharos_runtime::command::{MarkRequestError, MarkRequestOutcome, RecordMarkError, Refused};
use pharos_shared::chain::Fetcher;
use pharos_shared::trust_mark_issuer::{
    IssuedMark, Renewal, Standing, SubjectStatus, TrustMarks, standing_of,
};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::checks::entity::fetch_configuration;
use crate::control_plane::ControlPlane;
use crate::db::trust_mark_parties::Key;
use crate::db::trust_mark_specs::SpecRow;
use crate::db::trust_mark_subjects::{self as subjects, SubjectRow, SubjectWrite};
use crate::db::trust_marks::eligibility_mode;
use crate::db::{trust_mark_issuance as repo, trust_mark_specs as specs};

/// Records `mark` (actor: the service itself) and publishes it; answers the mark to hand out.
///
/// The subject's standing is read again under the writer lock and must still admit the mark
/// (`checked`: the checker passed it): a subject an administrator blocked after the data
/// plane decided gets nothing. When the subject holds a mark that may be handed out again
/// (another request recorded one meanwhile), that one is answered and nothing is stored.
pub async fn record_issued(
    cp: &ControlPlane,
    mark: &IssuedMark,
    checked: bool,
) -> Result<Arc<str>, RecordMarkError> {
    let Some(signed) = &mark.signed else {
        tracing::error!(jti = %mark.jti, "an issued trust mark without its signed form");
        return Err(RecordMarkError::Internal);
    };
    let renewal = Renewal(cp.settings.federation.trust_mark_renew_after_percent);
    let now = cp.now();
    // Without the lock: the published snapshot already holds one (a burst after the first).
    let snap = cp.snapshot();
    if let Some(spec) = snap.trust_marks.specs.get(&mark.trust_mark_type)
        && let Some(kid) = &signed.kid
        && let Some(held) = snap.trust_marks.reusable(
            &mark.trust_mark_type,
            &mark.subject,
            &signed.content,
            kid,
            spec.cache_ttl,
            now,
        )
        && let Some(s) = &held.signed
    {
        return Ok(s.token.clone());
    }
    let stored = async {
        let mut w = cp.write(None).await;
        // Read under the writer lock: an administrator's decision cannot slip in before the
        // commit, and a mark another request recorded is found.
        let spec = specs::get(&cp.db, Key::Name(&mark.trust_mark_type)).await?;
        let Some(spec) = spec else {
            return Ok(Err(RecordMarkError::NotAdmitted(Standing::NotEntitled)));
        };
        let subject = subjects::get(&cp.db, spec.id, Key::Name(&mark.subject)).await?;
        let stored_standing = standing_of(
            subject
                .as_ref()
                .and_then(|s| SubjectStatus::parse(&s.status)),
        );
        let config = spec
            .spec
            .eligibility_config
            .as_ref()
            .and_then(Value::as_object);
        let mode = eligibility_mode(config.unwrap_or(&Map::new()));
        if !mode.admits(stored_standing, checked) {
            return Ok(Err(RecordMarkError::NotAdmitted(stored_standing)));
        }
        if let Some(held) =
            repo::newest_signed(&cp.db, &mark.trust_mark_type, &mark.subject).await?
        {
            let mut one = TrustMarks {
                renewal,
                ..TrustMarks::default()
            };
            one.put_issued(Arc::new(held));
            if let Some(kid) = &signed.kid
                && let Some(held) = one.reusable(
                    &mark.trust_mark_type,
                    &mark.subject,
                    &signed.content,
                    kid,
                    spec.spec.cache_ttl,
                    now,
                )
                && let Some(s) = &held.signed
            {
                // Nothing changes: the write is dropped, nothing is published.
                return Ok(Ok(s.token.clone()));
            }
        }
        repo::insert_issued(&cp.db, w.tx().await?, mark).await?;
        w.touch_issued_mark(&mark.jti);
        w.commit().await?;
        crate::Result::Ok(Ok(signed.token.clone()))
    };
    stored.await.unwrap_or_else(|e| {
        tracing::error!(error = %e, jti = %mark.jti, "cannot record an issued trust mark");
        if e.is_unavailable() {
            Err(RecordMarkError::Refused(Refused::Unavailable))
        } else {
            Err(RecordMarkError::Internal)
        }
    })
}

/// Stores `sub` as a pending subject of `trust_mark_type` unless the database already decided
/// otherwise, with a `requested` history event by `actor`. A new subject must be an entity:
/// its Entity Configuration is fetched and verified with `fetcher` first, and no more than
/// `federation.trust_mark_pending_max` subjects of one type wait at once.
pub async fn request<F: Fetcher>(
    cp: &ControlPlane,
    fetcher: &F,
    trust_mark_type: &str,
    sub: &str,
    actor: Option<&str>,
) -> Result<MarkRequestOutcome, MarkRequestError> {
    store_request(cp, fetcher, trust_mark_type, sub, actor)
        .await
        .unwrap_or_else(|e| {
            tracing::error!(error = %e, %trust_mark_type, %sub, "cannot store a trust mark request");
            if e.is_unavailable() {
                Err(MarkRequestError::Refused(Refused::Unavailable))
            } else {
                Err(MarkRequestError::Internal)
            }
        })
}

/// What the stored subject row (`None`: none) answers a request without storing anything.
fn answered(status: Option<SubjectStatus>) -> Option<Result<MarkRequestOutcome, MarkRequestError>> {
    match status {
        Some(SubjectStatus::Active) => Some(Ok(MarkRequestOutcome::AlreadyEntitled)),
        Some(SubjectStatus::Blocked) => Some(Err(MarkRequestError::Blocked)),
        Some(SubjectStatus::Pending) => Some(Ok(MarkRequestOutcome::Pending)),
        // Inactive, none (or a hand-edited unknown word): the request is stored.
        _ => None,
    }
}

/// The outer `Result` is a database failure, the inner one the answer.
/// Whether a request for `sub` may be stored as pending: the spec and the subject's row when
/// so, else the answer (unknown type, a decided subject, a full queue). Asked once without the
/// lock (cheap refusals) and again under it (the decision that counts).
async fn admissible(
    cp: &ControlPlane,
    trust_mark_type: &str,
    sub: &str,
) -> crate::Result<
    Result<(SpecRow, Option<SubjectRow>), Result<MarkRequestOutcome, MarkRequestError>>,
> {
    let max = cp.settings.federation.trust_mark_pending_max;
    let Some(spec) = specs::get(&cp.db, Key::Name(trust_mark_type)).await? else {
        return Ok(Err(Err(MarkRequestError::UnknownType)));
    };
    let stored = subjects::get(&cp.db, spec.id, Key::Name(sub)).await?;
    if let Some(answer) = answered(
        stored
            .as_ref()
            .and_then(|r| SubjectStatus::parse(&r.status)),
    ) {
        return Ok(Err(answer));
    }
    if subjects::count_pending(&cp.db, spec.id).await? >= u64::from(max) {
        return Ok(Err(Err(MarkRequestError::Full { max })));
    }
    Ok(Ok((spec, stored)))
}

async fn store_request<F: Fetcher>(
    cp: &ControlPlane,
    fetcher: &F,
    trust_mark_type: &str,
    sub: &str,
    actor: Option<&str>,
) -> crate::Result<Result<MarkRequestOutcome, MarkRequestError>> {
    // Without the lock first: a full queue or a decided subject costs no fetch and no lock.
    if let Err(answer) = admissible(cp, trust_mark_type, sub).await? {
        return Ok(answer);
    }
    // Only an entity may ask: its own configuration, verified, before anything is stored.
    if let Err(e) = fetch_configuration(fetcher, sub, cp.now()).await {
        return Ok(Err(MarkRequestError::Configuration(e)));
    }
    let mut w = cp.write(actor).await;
    // Read again under the writer lock: an administrator's decision cannot slip in before the
    // commit, and concurrent requests cannot overfill the queue.
    let (spec, stored) = match admissible(cp, trust_mark_type, sub).await? {
        Ok(found) => found,
        Err(answer) => return Ok(answer),
    };
    let now = cp.now();
    let pending = SubjectStatus::Pending.as_str();
    match &stored {
        // Inactive (or a hand-edited unknown word): the request starts over.
        Some(r) => {
            let back = SubjectWrite {
                status: pending,
                additional_claims: &r.additional_claims,
                description: &r.description,
            };
            subjects::update(&cp.db, w.tx().await?, r.id, &back, now).await?;
        }
        None => {
            let new = SubjectWrite {
                status: pending,
                additional_claims: &Default::default(),
                description: "requested at the trust_mark_request endpoint",
            };
            subjects::insert(&cp.db, w.tx().await?, spec.id, sub, &new, now).await?;
        }
    }
    w.trust_mark_event(trust_mark_type, Some(sub), Some(pending), "requested", None)
        .await?;
    // This subject alone: the other subjects and the specs keep their versions (and the
    // caches keyed by them).
    w.touch_mark_subject(trust_mark_type, sub);
    w.commit().await?;
    Ok(Ok(MarkRequestOutcome::Pending))
}

/// How often expired issued marks are pruned.
pub const PRUNE_EVERY: Duration = Duration::from_secs(600);

/// Deletes the issued marks expired at the control plane's `now` from the database and the
/// snapshot, a batch per write; returns how many. Leader-run ([`spawn_prune`]).
pub async fn prune_expired(cp: &ControlPlane) -> crate::Result<usize> {
    // A deposed leader's prune is refused (see `crate::leadership::Fence`).
    let fence = cp.fence();
    let mut total = 0;
    loop {
        let now = cp.now();
        // Without the lock: nothing expired, nothing locked.
        if repo::expired(&cp.db, now).await?.is_empty() {
            return Ok(total);
        }
        let mut w = cp.write(None).await;
        let batch = repo::expired(&cp.db, now).await?;
        let full = batch.len() as i64 >= repo::PRUNE_BATCH;
        let mut deleted = 0;
        for jti in &batch {
            if repo::delete_expired(&cp.db, w.tx().await?, jti, now).await? > 0 {
                w.touch_issued_mark(jti);
                deleted += 1;
            }
        }
        fence.check(w.tx().await?).await?;
        w.commit().await?;
        total += deleted;
        if !full || deleted == 0 {
            return Ok(total);
        }
    }
}

/// Prunes expired issued marks every `interval` until `stop` (started by the leader only).
pub fn spawn_prune(
    cp: Arc<ControlPlane>,
    interval: Duration,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    super::spawn_periodic_cleanup(
        cp,
        interval,
        stop,
        "expired issued trust marks",
        |cp| async move {
            prune_expired(&cp)
                .await
                .map(|n| u64::try_from(n).unwrap_or(u64::MAX))
        },
    )
}
