//! `users`: Admin API accounts for HTTP Basic authentication.
//!
//! Users do not feed the snapshot, so writes go straight to the pool; the authentication
//! middleware reads this table on every admin request, which is what makes creating the first
//! user lock the API at once and deleting the last one reopen it.

use sqlx::{AnyConnection, Row};

use super::{Db, flag};
use crate::error::{Error, Result};

/// A user row, including the password hash (never leave the control plane with it).
#[derive(Debug, Clone, PartialEq)]
pub struct UserRow {
    /// Database id.
    pub id: i64,
    /// Login name.
    pub username: String,
    /// argon2id PHC string.
    pub password_hash: String,
    /// Free-text name shown to operators.
    pub display_name: String,
    /// Refused at login.
    pub disabled: bool,
    /// Creation time (Unix seconds).
    pub created_at: i64,
    /// Last update (Unix seconds).
    pub updated_at: i64,
}

/// The user query with a literal tail (`db.sql` wants a `&'static str`).
macro_rules! select {
    ($tail:literal) => {
        concat!(
            "SELECT id, username, password_hash, display_name, disabled, created_at, updated_at \
             FROM users",
            $tail
        )
    };
}

fn from_row(r: &sqlx::any::AnyRow) -> Result<UserRow> {
    Ok(UserRow {
        id: r.try_get("id")?,
        username: r.try_get("username")?,
        password_hash: r.try_get("password_hash")?,
        display_name: r.try_get("display_name")?,
        disabled: r.try_get::<i64, _>("disabled")? != 0,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// Every user, ordered by username.
pub async fn list(db: &Db) -> Result<Vec<UserRow>> {
    let rows = sqlx::query(db.sql(select!(" ORDER BY username")))
        .fetch_all(&db.pool)
        .await?;
    rows.iter().map(from_row).collect()
}

/// One user by username.
pub async fn get(db: &Db, username: &str) -> Result<Option<UserRow>> {
    let row = sqlx::query(db.sql(select!(" WHERE username = ?")))
        .bind(username)
        .fetch_optional(&db.pool)
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// Whether any user exists (the bootstrap rule: none → the Admin API is open).
pub async fn any(db: &Db) -> Result<bool> {
    let row = sqlx::query(db.sql("SELECT id FROM users LIMIT 1"))
        .fetch_optional(&db.pool)
        .await?;
    Ok(row.is_some())
}

/// Inserts a user; a taken username is a conflict.
pub async fn insert(db: &Db, c: &mut AnyConnection, u: &UserRow) -> Result<()> {
    sqlx::query(db.sql(
        "INSERT INTO users (username, password_hash, display_name, disabled, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?)",
    ))
    .bind(&u.username)
    .bind(&u.password_hash)
    .bind(&u.display_name)
    .bind(flag(u.disabled))
    .bind(u.created_at)
    .bind(u.updated_at)
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "user"))?;
    Ok(())
}

/// Stores every mutable field of user `u.id`.
pub async fn update(db: &Db, c: &mut AnyConnection, u: &UserRow) -> Result<()> {
    sqlx::query(db.sql(
        "UPDATE users SET password_hash = ?, display_name = ?, disabled = ?, updated_at = ? \
         WHERE id = ?",
    ))
    .bind(&u.password_hash)
    .bind(&u.display_name)
    .bind(flag(u.disabled))
    .bind(u.updated_at)
    .bind(u.id)
    .execute(&mut *c)
    .await?;
    Ok(())
}

/// Replaces the hash of user `id` only if it is still `old` (a login re-hash must not overwrite
/// a password that an operator changed in the meantime). A single compare-and-set statement
/// outside the writer lock: logins must not queue behind admin writes, and the condition
/// makes it safe against any concurrent change.
pub async fn rehash(db: &Db, id: i64, old: &str, new: &str) -> Result<()> {
    sqlx::query(db.sql("UPDATE users SET password_hash = ? WHERE id = ? AND password_hash = ?"))
        .bind(new)
        .bind(id)
        .bind(old)
        .execute(&db.pool)
        .await?;
    Ok(())
}

/// Deletes user `id`.
pub async fn delete(db: &Db, c: &mut AnyConnection, id: i64) -> Result<()> {
    sqlx::query(db.sql("DELETE FROM users WHERE id = ?"))
        .bind(id)
        .execute(&mut *c)
        .await?;
    Ok(())
}
