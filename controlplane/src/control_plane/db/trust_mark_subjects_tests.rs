//! Revocation of issued instances when a subject loses its standing.

use super::*;

async fn db() -> (Db, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/t.db?mode=rwc", dir.path().display());
    let db = Db::connect(&url, 1).await.unwrap();
    db.migrate().await.unwrap();
    (db, dir)
}

async fn issue(db: &Db, jti: &str, tm_type: &str, sub: &str, revoked_at: Option<i64>) {
    sqlx::query(db.sql(
        "INSERT INTO issued_trust_marks (entity, jti, trust_mark_type, subject, issued_at, expires_at, revoked_at) \
         VALUES (?, ?, ?, ?, 1, NULL, ?)",
    ))
    .bind(db.entity())
    .bind(jti)
    .bind(tm_type)
    .bind(sub)
    .bind(revoked_at)
    .execute(&db.pool)
    .await
    .unwrap();
}

async fn revoked(db: &Db, jti: &str) -> Option<i64> {
    crate::db::trust_marks::issued_one(db, jti)
        .await
        .unwrap()
        .unwrap()
        .revoked_at
}

#[tokio::test]
async fn revoking_touches_only_that_subjects_unrevoked_instances_of_that_type() {
    let (db, _dir) = db().await;
    let (t, other_t) = ("https://tm.example/a", "https://tm.example/b");
    let (leaf, other) = ("https://leaf.example", "https://other.example");
    issue(&db, "j1", t, leaf, None).await;
    issue(&db, "j2", t, leaf, None).await;
    issue(&db, "j3", t, leaf, Some(50)).await;
    issue(&db, "j4", other_t, leaf, None).await;
    issue(&db, "j5", t, other, None).await;
    let mut c = db.pool.acquire().await.unwrap();
    let n = revoke_issued(&db, &mut c, t, leaf, 100).await.unwrap();
    drop(c);
    assert_eq!(n, 2);
    assert_eq!(revoked(&db, "j1").await, Some(100));
    assert_eq!(revoked(&db, "j2").await, Some(100));
    assert_eq!(
        revoked(&db, "j3").await,
        Some(50),
        "an earlier revocation keeps its time"
    );
    assert_eq!(revoked(&db, "j4").await, None, "another type");
    assert_eq!(revoked(&db, "j5").await, None, "another subject");
}
