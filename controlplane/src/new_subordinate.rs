//! Creating a subordinate: the one sequence the Admin API's `POST /subordinates` and the
//! enroll and enroll_request endpoints share, so a subordinate is the same row, entity types,
//! history and publication whoever created it.
//!
//! Both callers hold the writer lock ([`Write`]) from [`taken`] to the commit: the reads that
//! decide a create happen under it, so two concurrent creates of one entity cannot both pass.

use pharos_shared::jose::Jwks;

use crate::Result;
use crate::control_plane::{ControlPlane, Write};
use crate::db::subordinates::{self as repo, BasicWrite, SubKey, SubordinateRow};

/// A subordinate about to be stored, its input already checked.
#[derive(Debug)]
pub struct NewSubordinate<'a> {
    /// The entity identifier, as the statement's `sub` will carry it.
    pub entity_id: &'a str,
    /// Description, status and key polling.
    pub basic: BasicWrite,
    /// Its keys, if known (a pending subordinate may have none yet).
    pub jwks: &'a Option<Jwks>,
    /// The entity types it is registered for.
    pub entity_types: &'a [String],
}

/// The stored subordinate that `entity` would collide with: itself, or another spelling with
/// the same Entity Configuration URL ([`same_configuration`]).
pub async fn taken(cp: &ControlPlane, entity: &str) -> Result<Option<SubordinateRow>> {
    for spelling in std::iter::once(entity.to_owned()).chain(same_configuration(entity)) {
        if let Some(row) = repo::get(&cp.db, SubKey::EntityId(&spelling)).await? {
            return Ok(Some(row));
        }
    }
    Ok(None)
}

/// Stores `new` in `w`'s transaction with its entity types and a `created` event saying
/// `message`, and marks it for publication; the caller commits. Returns the row's id.
pub async fn insert(
    cp: &ControlPlane,
    w: &mut Write<'_>,
    new: &NewSubordinate<'_>,
    message: &str,
) -> Result<i64> {
    let now = cp.now();
    let tx = w.tx().await?;
    let id = repo::insert(&cp.db, tx, new.entity_id, &new.basic, new.jwks, now).await?;
    repo::set_types(&cp.db, tx, id, new.entity_types).await?;
    w.subordinate_event(id, new.basic.status, "created", Some(message.to_owned()))
        .await?;
    w.touch_subordinate(new.entity_id);
    Ok(id)
}

/// The other spellings of `entity` with the same Entity Configuration URL: the specification
/// removes a terminating `/` before appending `/.well-known/openid-federation`, so
/// `https://x.example` and `https://x.example/` name one configuration, whose `sub` only one
/// of them can match.
pub fn same_configuration(entity: &str) -> Vec<String> {
    let base = entity.trim_end_matches('/');
    [base.to_owned(), format!("{base}/")]
        .into_iter()
        .filter(|e| e != entity)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminating_slash_names_the_same_configuration() {
        assert_eq!(
            same_configuration("https://x.example"),
            ["https://x.example/"]
        );
        assert_eq!(
            same_configuration("https://x.example/"),
            ["https://x.example"]
        );
    }
}
