//! `trust_mark_events`: the history of each trust mark type and of each of its subjects,
//! written in the same transaction as the change it records (through
//! `Write::trust_mark_event`) and read newest first by the history routes.

use sqlx::{AnyConnection, Row};

use super::Db;
use super::subordinate_events::HistoryQuery;
use crate::error::Result;

/// One recorded event.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct TrustMarkEvent {
    /// When it happened (Unix seconds).
    pub timestamp: i64,
    /// Event type, e.g. `status_updated`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The subject (entity identifier) it concerns; absent for events of the type or spec.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Status of the subject after the event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Human-readable detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Who made the change (admin user or header, or the requesting entity), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
}

/// A new event.
#[derive(Debug, Clone)]
pub struct NewTrustMarkEvent<'a> {
    /// The trust mark type.
    pub trust_mark_type: &'a str,
    /// The subject, for events of one subject.
    pub subject: Option<&'a str>,
    /// Event type.
    pub kind: &'a str,
    /// Status after the event.
    pub status: Option<&'a str>,
    /// Detail.
    pub message: Option<String>,
    /// Actor.
    pub actor: Option<&'a str>,
}

/// Records an event inside the caller's transaction.
pub async fn record(
    db: &Db,
    c: &mut AnyConnection,
    now: i64,
    e: &NewTrustMarkEvent<'_>,
) -> Result<()> {
    sqlx::query(db.sql(
        "INSERT INTO trust_mark_events (entity, trust_mark_type, subject, occurred_at, type, status, message, actor) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    ))
    .bind(db.entity())
    .bind(e.trust_mark_type)
    .bind(e.subject)
    .bind(now)
    .bind(e.kind)
    .bind(e.status)
    .bind(e.message.as_deref())
    .bind(e.actor)
    .execute(&mut *c)
    .await?;
    Ok(())
}

/// The WHERE clause shared by the count and the page query; `(? = 1 OR subject = ?)` selects
/// one subject's events or, with 1, every event of the type.
macro_rules! filter {
    () => {
        "entity = ? AND trust_mark_type = ? AND (? = 1 OR subject = ?) AND (? = 1 OR type = ?) \
         AND occurred_at >= ? AND occurred_at <= ?"
    };
}

/// One page of events of `trust_mark_type` (only `subject`'s with `Some`), newest first, and
/// the total number matching the filters.
pub async fn history(
    db: &Db,
    trust_mark_type: &str,
    subject: Option<&str>,
    q: &HistoryQuery,
) -> Result<(Vec<TrustMarkEvent>, i64)> {
    // Absent filters become always-true bounds, so one statement text serves every combination.
    let any_subject = i64::from(subject.is_none());
    let subject = subject.unwrap_or_default();
    let kind = q.kind.clone().unwrap_or_default();
    let any_kind = i64::from(q.kind.is_none());
    let from = q.from.unwrap_or(i64::MIN);
    let to = q.to.unwrap_or(i64::MAX);
    let count = sqlx::query(db.sql(concat!(
        "SELECT COUNT(*) AS n FROM trust_mark_events WHERE ",
        filter!()
    )))
    .bind(db.entity())
    .bind(trust_mark_type)
    .bind(any_subject)
    .bind(subject)
    .bind(any_kind)
    .bind(&kind)
    .bind(from)
    .bind(to)
    .fetch_one(&db.pool)
    .await?;
    let total: i64 = count.try_get("n")?;
    let rows = sqlx::query(db.sql(concat!(
        "SELECT occurred_at, type, subject, status, message, actor FROM trust_mark_events WHERE ",
        filter!(),
        " ORDER BY occurred_at DESC, id DESC LIMIT ? OFFSET ?"
    )))
    .bind(db.entity())
    .bind(trust_mark_type)
    .bind(any_subject)
    .bind(subject)
    .bind(any_kind)
    .bind(&kind)
    .bind(from)
    .bind(to)
    .bind(q.limit)
    .bind(q.offset)
    .fetch_all(&db.pool)
    .await?;
    let events = rows
        .iter()
        .map(|r| {
            Ok(TrustMarkEvent {
                timestamp: r.try_get("occurred_at")?,
                kind: r.try_get("type")?,
                subject: r.try_get("subject")?,
                status: r.try_get("status")?,
                message: r.try_get("message")?,
                actor: r.try_get("actor")?,
            })
        })
        .collect::<Result<_>>()?;
    Ok((events, total))
}
