//! `subordinate_events`: the audit trail of each subordinate, written in the same transaction
//! as the change it records and read newest first by the history route.

use pharos_shared::subordinate_events::Recorded;
use sqlx::{AnyConnection, Row};

use super::Db;
use crate::error::Result;

/// One recorded event.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct Event {
    /// When it happened (Unix seconds).
    pub timestamp: i64,
    /// Event type, e.g. `status_updated`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Status of the subordinate after the event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Human-readable detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Who made the change (admin user or header), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
}

/// A new event for subordinate `subordinate_id`.
#[derive(Debug, Clone)]
pub struct NewEvent<'a> {
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
    subordinate_id: i64,
    now: i64,
    e: &NewEvent<'_>,
) -> Result<()> {
    sqlx::query(db.sql(
        "INSERT INTO subordinate_events (subordinate_id, occurred_at, type, status, message, actor) \
         VALUES (?, ?, ?, ?, ?, ?)",
    ))
    .bind(subordinate_id)
    .bind(now)
    .bind(e.kind)
    .bind(e.status)
    .bind(e.message.as_deref())
    .bind(e.actor)
    .execute(&mut *c)
    .await?;
    Ok(())
}

/// Filters of a history query.
#[derive(Debug, Clone, Default)]
pub struct HistoryQuery {
    /// Only this event type.
    pub kind: Option<String>,
    /// Only events at or after this time.
    pub from: Option<i64>,
    /// Only events at or before this time.
    pub to: Option<i64>,
    /// Page size.
    pub limit: i64,
    /// Events to skip.
    pub offset: i64,
}

/// The WHERE clause shared by the count and the page query.
macro_rules! filter {
    () => {
        "subordinate_id = ? AND (? = 1 OR type = ?) AND occurred_at >= ? AND occurred_at <= ?"
    };
}

/// One page of events (newest first) and the total number matching the filters.
pub async fn history(db: &Db, subordinate_id: i64, q: &HistoryQuery) -> Result<(Vec<Event>, i64)> {
    // Absent filters become always-true bounds, so one statement text serves every combination.
    let kind = q.kind.clone().unwrap_or_default();
    let any_kind = i64::from(q.kind.is_none());
    let from = q.from.unwrap_or(i64::MIN);
    let to = q.to.unwrap_or(i64::MAX);
    let count = sqlx::query(db.sql(concat!(
        "SELECT COUNT(*) AS n FROM subordinate_events WHERE ",
        filter!()
    )))
    .bind(subordinate_id)
    .bind(any_kind)
    .bind(&kind)
    .bind(from)
    .bind(to)
    .fetch_one(&db.pool)
    .await?;
    let total: i64 = count.try_get("n")?;
    let rows = sqlx::query(db.sql(concat!(
        "SELECT occurred_at, type, status, message, actor FROM subordinate_events WHERE ",
        filter!(),
        " ORDER BY occurred_at DESC, id DESC LIMIT ? OFFSET ?"
    )))
    .bind(subordinate_id)
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
            Ok(Event {
                timestamp: r.try_get("occurred_at")?,
                kind: r.try_get("type")?,
                status: r.try_get("status")?,
                message: r.try_get("message")?,
                actor: r.try_get("actor")?,
            })
        })
        .collect::<Result<_>>()?;
    Ok((events, total))
}

/// The newest [`PUBLIC_ROWS`] rows of subordinate `subordinate_id` for its public history
/// (time, type and status; never the actor or the message), oldest first.
pub async fn public_rows(db: &Db, subordinate_id: i64) -> Result<Vec<Recorded>> {
    let rows = sqlx::query(db.sql(
        "SELECT occurred_at, type, status FROM subordinate_events WHERE subordinate_id = ? \
         ORDER BY occurred_at DESC, id DESC LIMIT ?",
    ))
    .bind(subordinate_id)
    .bind(PUBLIC_ROWS)
    .fetch_all(&db.pool)
    .await?;
    let mut out = rows
        .iter()
        .map(|r| {
            Ok(Recorded {
                at: r.try_get("occurred_at")?,
                kind: r.try_get("type")?,
                status: r.try_get("status")?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    out.reverse();
    Ok(out)
}

/// Rows one public history reads at most: a subordinate whose keys rotate hourly for a year
/// has fewer; a longer history answers its newest part.
pub const PUBLIC_ROWS: i64 = 10_000;
