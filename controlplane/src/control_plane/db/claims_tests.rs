//! The start-up move of the general claims out of `settings`.

use super::*;

async fn db_with_legacy(array: &str) -> (Db, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/t.db?mode=rwc", dir.path().display());
    let db = Db::connect(&url, 1).await.unwrap();
    db.migrate().await.unwrap();
    sqlx::query(db.sql("INSERT INTO settings (entity, scope, name, value) VALUES (?, ?, ?, ?)"))
        .bind(db.entity())
        .bind(LEGACY_GENERAL.0)
        .bind(LEGACY_GENERAL.1)
        .bind(array.to_string())
        .execute(&db.pool)
        .await
        .unwrap();
    (db, dir)
}

/// A hand-edited array (an element that is not a claim, a name given twice) does not stop
/// start-up; the move keeps what it can, in order, and runs once.
#[tokio::test]
async fn the_general_claims_move_keeps_what_it_can_and_runs_once() {
    let (db, _dir) = db_with_legacy(
        r#"[{"id":1,"claim":"x_a","value":1},{"nonsense":true},{"id":3,"claim":"x_a","value":2},{"id":4,"claim":"x_b","value":[],"crit":true}]"#,
    )
    .await;
    db.move_data().await.unwrap();
    let rows = list(&db, Scope::SubordinateGeneral).await.unwrap();
    let got: Vec<_> = rows
        .iter()
        .map(|r| (r.claim.as_str(), r.value.clone(), r.crit))
        .collect();
    assert_eq!(
        got,
        [
            ("x_a", Value::from(1), false),
            ("x_b", Value::Array(vec![]), true)
        ]
    );
    assert_eq!(
        settings::get(&db, LEGACY_GENERAL.0, LEGACY_GENERAL.1)
            .await
            .unwrap(),
        None
    );
    db.move_data().await.unwrap();
    assert_eq!(list(&db, Scope::SubordinateGeneral).await.unwrap(), rows);
    assert!(
        list(&db, Scope::EntityConfiguration)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_legacy_value_that_is_not_an_array_is_dropped() {
    let (db, _dir) = db_with_legacy(r#"{"claim":"x"}"#).await;
    db.move_data().await.unwrap();
    assert!(
        list(&db, Scope::SubordinateGeneral)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        settings::get(&db, LEGACY_GENERAL.0, LEGACY_GENERAL.1)
            .await
            .unwrap(),
        None
    );
}
