//! `users`: Admin API accounts for HTTP Basic authentication.
//!
//! Users do not feed the snapshot, so writes go straight to the pool; the authentication
//! middleware reads this table on every admin request, which is what makes creating the first
//! user lock the API at once and deleting the last one reopen it.

use pharos_shared::hosted::{EntityNo, Role};
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

/// Inserts a user and returns its id; a taken username is a conflict.
pub async fn insert(db: &Db, c: &mut AnyConnection, u: &UserRow) -> Result<i64> {
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
    let id: i64 = sqlx::query_scalar(db.sql("SELECT id FROM users WHERE username = ?"))
        .bind(&u.username)
        .fetch_one(&mut *c)
        .await?;
    Ok(id)
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

/// The hosted entities user `id` is limited to, each with the user's role there, by entity;
/// empty for an administrator of the whole deployment.
pub async fn scope(db: &Db, id: i64) -> Result<Vec<(EntityNo, Role)>> {
    let rows = sqlx::query(
        db.sql("SELECT entity, role FROM user_entity_roles WHERE user_id = ? ORDER BY entity"),
    )
    .bind(id)
    .fetch_all(&db.pool)
    .await?;
    rows.iter()
        .map(|r| {
            let entity: i64 = r.try_get("entity")?;
            let role: String = r.try_get("role")?;
            // Only `set_scope` writes these, from parsed values: anything else is a damaged row.
            match (EntityNo::new(entity), Role::parse(&role)) {
                (Some(e), Some(r)) => Ok((e, r)),
                _ => Err(Error::Internal(format!(
                    "user_entity_roles: entity {entity}, role {role:?}"
                ))),
            }
        })
        .collect()
}

/// Limits user `id` to `scope` (each entity with the user's role there); empty makes it an
/// administrator of the whole deployment.
pub async fn set_scope(
    db: &Db,
    c: &mut AnyConnection,
    id: i64,
    scope: &[(EntityNo, Role)],
) -> Result<()> {
    sqlx::query(db.sql("DELETE FROM user_entity_roles WHERE user_id = ?"))
        .bind(id)
        .execute(&mut *c)
        .await?;
    for (entity, role) in scope {
        sqlx::query(
            db.sql("INSERT INTO user_entity_roles (user_id, entity, role) VALUES (?, ?, ?)"),
        )
        .bind(id)
        .bind(entity.get())
        .bind(role.as_str())
        .execute(&mut *c)
        .await?;
    }
    Ok(())
}
