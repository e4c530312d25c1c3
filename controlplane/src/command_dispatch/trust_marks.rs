//! The Trust Mark Issuer's commands: recording an instance the data plane has signed, and
//! storing a trust mark request as a pending subject. Both go through [`Write`], so the data
//! plane's next request sees the change.
//!
//! [`Write`]: crate::control_plane::Write

use pharos_dataplane::command::{MarkRequestError, MarkRequestOutcome, RecordMarkError, Refused};
use pharos_shared::trust_mark_issuer::{IssuedMark, SubjectStatus};

use crate::control_plane::ControlPlane;
use crate::db::trust_mark_parties::Key;
use crate::db::trust_mark_subjects::{self as subjects, SubjectWrite};
use crate::db::{trust_mark_issuance as repo, trust_mark_specs as specs};

/// Records `mark` (actor: the service itself) and publishes it.
pub async fn record_issued(cp: &ControlPlane, mark: &IssuedMark) -> Result<(), RecordMarkError> {
    let stored = async {
        let mut w = cp.write(None).await;
        repo::insert_issued(&cp.db, w.tx().await?, mark).await?;
        w.touch_issued_mark(&mark.jti);
        w.commit().await
    };
    stored.await.map_err(|e| {
        tracing::error!(error = %e, jti = %mark.jti, "cannot record an issued trust mark");
        if e.is_unavailable() {
            RecordMarkError::Refused(Refused::Unavailable)
        } else {
            RecordMarkError::Internal
        }
    })
}

/// Stores `sub` as a pending subject of `trust_mark_type` unless the database already decided
/// otherwise, with a `requested` history event by `actor`.
pub async fn request(
    cp: &ControlPlane,
    trust_mark_type: &str,
    sub: &str,
    actor: Option<&str>,
) -> Result<MarkRequestOutcome, MarkRequestError> {
    store_request(cp, trust_mark_type, sub, actor)
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

/// The outer `Result` is a database failure, the inner one the answer.
async fn store_request(
    cp: &ControlPlane,
    trust_mark_type: &str,
    sub: &str,
    actor: Option<&str>,
) -> crate::Result<Result<MarkRequestOutcome, MarkRequestError>> {
    let mut w = cp.write(actor).await;
    // Read under the writer lock: an administrator's decision cannot slip in before the commit.
    let Some(spec) = specs::get(&cp.db, Key::Name(trust_mark_type)).await? else {
        return Ok(Err(MarkRequestError::UnknownType));
    };
    let now = cp.now();
    let pending = SubjectStatus::Pending.as_str();
    let stored = subjects::get(&cp.db, spec.id, Key::Name(sub)).await?;
    match stored
        .as_ref()
        .map(|r| (r, SubjectStatus::parse(&r.status)))
    {
        Some((_, Some(SubjectStatus::Active))) => {
            return Ok(Ok(MarkRequestOutcome::AlreadyEntitled));
        }
        Some((_, Some(SubjectStatus::Blocked))) => return Ok(Err(MarkRequestError::Blocked)),
        Some((_, Some(SubjectStatus::Pending))) => return Ok(Ok(MarkRequestOutcome::Pending)),
        // Inactive (or a hand-edited unknown word): the request starts over.
        Some((r, _)) => {
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
    w.touch(crate::control_plane::Section::TrustMarks);
    w.commit().await?;
    Ok(Ok(MarkRequestOutcome::Pending))
}
