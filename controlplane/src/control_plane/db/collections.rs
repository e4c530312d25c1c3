//! `entity_collections` and `collected_entities`: the periodic entity collector's last
//! collection per Trust Anchor, kept so that a restart serves it at once. One row per Entity,
//! so a run that finds a steady federation rewrites only the Entities that changed.

use std::collections::HashMap;
use std::sync::Arc;

use pharos_shared::collection::{Collection, EntityInfo};
use sqlx::{AnyConnection, AssertSqlSafe, Row, SqlSafeStr};

use super::{Db, Dialect, numbered_placeholders};
use crate::error::{Error, Result};

/// Rows per multi-row INSERT (four parameters each; well under every dialect's limit).
const INSERT_BATCH: usize = 200;

fn parse(anchor: &str, text: &str) -> Option<Arc<EntityInfo>> {
    match serde_json::from_str::<EntityInfo>(text) {
        Ok(e) => Some(Arc::new(e)),
        Err(e) => {
            // Only this module writes the column; a damaged row costs one Entity, not the rest.
            tracing::warn!(trust_anchor = %anchor, error = %e, "skipping unreadable collected entity");
            None
        }
    }
}

/// Every stored collection.
pub async fn load_all(db: &Db) -> Result<Vec<Collection>> {
    let heads = sqlx::query(
        db.sql("SELECT trust_anchor, last_updated FROM entity_collections WHERE entity = ?"),
    )
    .bind(db.entity())
    .fetch_all(&db.pool)
    .await?;
    let mut entities: HashMap<String, Vec<Arc<EntityInfo>>> = HashMap::new();
    let rows =
        sqlx::query(db.sql("SELECT trust_anchor, info FROM collected_entities WHERE entity = ?"))
            .bind(db.entity())
            .fetch_all(&db.pool)
            .await?;
    for r in rows {
        let anchor: String = r.try_get("trust_anchor")?;
        let info: String = r.try_get("info")?;
        if let Some(e) = parse(&anchor, &info) {
            entities.entry(anchor).or_default().push(e);
        }
    }
    heads
        .iter()
        .map(|h| {
            let anchor: String = h.try_get("trust_anchor")?;
            let last_updated: i64 = h.try_get("last_updated")?;
            let list = entities.remove(&anchor).unwrap_or_default();
            Ok(Collection::new(anchor, last_updated, list))
        })
        .collect()
}

/// The stored collection of `trust_anchor`, if any.
pub async fn load_one(db: &Db, trust_anchor: &str) -> Result<Option<Collection>> {
    let head = sqlx::query(
        db.sql("SELECT last_updated FROM entity_collections WHERE entity = ? AND trust_anchor = ?"),
    )
    .bind(db.entity())
    .bind(trust_anchor)
    .fetch_optional(&db.pool)
    .await?;
    let Some(head) = head else { return Ok(None) };
    let last_updated: i64 = head.try_get("last_updated")?;
    let rows = sqlx::query(
        db.sql("SELECT info FROM collected_entities WHERE entity = ? AND trust_anchor = ?"),
    )
    .bind(db.entity())
    .bind(trust_anchor)
    .fetch_all(&db.pool)
    .await?;
    let mut list = Vec::with_capacity(rows.len());
    for r in rows {
        let info: String = r.try_get("info")?;
        list.extend(parse(trust_anchor, &info));
    }
    Ok(Some(Collection::new(
        trust_anchor.to_owned(),
        last_updated,
        list,
    )))
}

/// Stores a new run of `trust_anchor`'s collection as a change of the stored one: `removed`
/// Entities are deleted, `upserted` ones (new or changed) replace their row, and the run's
/// time is recorded.
pub async fn save(
    db: &Db,
    c: &mut AnyConnection,
    trust_anchor: &str,
    last_updated: i64,
    removed: &[&str],
    upserted: &[&EntityInfo],
) -> Result<()> {
    let updated = sqlx::query(db.sql(
        "UPDATE entity_collections SET last_updated = ? WHERE entity = ? AND trust_anchor = ?",
    ))
    .bind(last_updated)
    .bind(db.entity())
    .bind(trust_anchor)
    .execute(&mut *c)
    .await?;
    if updated.rows_affected() == 0 {
        sqlx::query(db.sql(
            "INSERT INTO entity_collections (entity, trust_anchor, last_updated) VALUES (?, ?, ?)",
        ))
        .bind(db.entity())
        .bind(trust_anchor)
        .bind(last_updated)
        .execute(&mut *c)
        .await
        .map_err(|e| Error::from_db(e, "entity collection"))?;
    }
    let gone = removed
        .iter()
        .copied()
        .chain(upserted.iter().map(|e| e.entity_id.as_str()));
    for entity_id in gone {
        sqlx::query(
            db.sql("DELETE FROM collected_entities WHERE entity = ? AND trust_anchor = ? AND entity_id = ?"),
        )
        .bind(db.entity())
        .bind(trust_anchor)
        .bind(entity_id)
        .execute(&mut *c)
        .await?;
    }
    for batch in upserted.chunks(INSERT_BATCH) {
        let mut sql = String::from(
            "INSERT INTO collected_entities (entity, trust_anchor, entity_id, info) VALUES ",
        );
        let row = "(?, ?, ?, ?)";
        sql.push_str(&vec![row; batch.len()].join(", "));
        if db.dialect == Dialect::Postgres {
            sql = numbered_placeholders(&sql);
        }
        let mut q = sqlx::query(AssertSqlSafe(sql).into_sql_str());
        for e in batch {
            let info = serde_json::to_string(e).map_err(|e| Error::Internal(e.to_string()))?;
            q = q
                .bind(db.entity())
                .bind(trust_anchor.to_owned())
                .bind(e.entity_id.clone())
                .bind(info);
        }
        q.execute(&mut *c).await?;
    }
    Ok(())
}
