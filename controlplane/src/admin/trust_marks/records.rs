//! How the trust mark resources look in answers (lighthouse's field names), and the reads
//! that assemble them.

use pharos_shared::jose::Jwks;
use serde::Serialize;
use utoipa::ToSchema;

use crate::admin::error::ApiResult;
use crate::control_plane::ControlPlane;
use crate::db::trust_mark_parties::{self as parties, IssuerRow, Key, OwnerRow};
use crate::db::trust_mark_types::{self as types_repo, TypeRow};

/// A type named in an owner's or issuer's `types`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TypeRef {
    /// Database id.
    pub id: i64,
    /// The type identifier.
    pub trust_mark_type: String,
}

impl From<&TypeRow> for TypeRef {
    fn from(t: &TypeRow) -> Self {
        Self {
            id: t.id,
            trust_mark_type: t.trust_mark_type.clone(),
        }
    }
}

/// A trust mark owner.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OwnerRecord {
    /// Database id.
    pub id: i64,
    /// Creation time (Unix seconds).
    pub created_at: i64,
    /// Last update (Unix seconds).
    pub updated_at: i64,
    /// Entity identifier.
    pub entity_id: String,
    /// Keys its delegations are signed with.
    #[schema(value_type = Object)]
    pub jwks: Jwks,
    /// Free text.
    pub description: String,
}

impl From<OwnerRow> for OwnerRecord {
    fn from(o: OwnerRow) -> Self {
        Self {
            id: o.id,
            created_at: o.created_at,
            updated_at: o.updated_at,
            entity_id: o.entity_id,
            jwks: o.jwks,
            description: o.description,
        }
    }
}

/// A trust mark issuer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct IssuerRecord {
    /// Database id.
    pub id: i64,
    /// Creation time (Unix seconds).
    pub created_at: i64,
    /// Last update (Unix seconds).
    pub updated_at: i64,
    /// Entity identifier.
    pub issuer: String,
    /// Free text.
    pub description: String,
}

impl From<IssuerRow> for IssuerRecord {
    fn from(i: IssuerRow) -> Self {
        Self {
            id: i.id,
            created_at: i.created_at,
            updated_at: i.updated_at,
            issuer: i.issuer,
            description: i.description,
        }
    }
}

/// A global owner with the types it owns.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OwnerWithTypes {
    /// The owner.
    #[serde(flatten)]
    pub owner: OwnerRecord,
    /// The types it owns.
    pub types: Vec<TypeRef>,
}

/// A global issuer with the types it is recognised for.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct IssuerWithTypes {
    /// The issuer.
    #[serde(flatten)]
    pub issuer: IssuerRecord,
    /// The types it is recognised for.
    pub types: Vec<TypeRef>,
}

/// A trust mark type with its owner and issuers.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TypeRecord {
    /// Database id.
    pub id: i64,
    /// Creation time (Unix seconds).
    pub created_at: i64,
    /// Last update (Unix seconds).
    pub updated_at: i64,
    /// The type identifier.
    pub trust_mark_type: String,
    /// Its owner's id, if it has one.
    pub owner_id: Option<i64>,
    /// Its owner, if it has one.
    pub owner: Option<OwnerRecord>,
    /// Free text.
    pub description: String,
    /// The issuers recognised for it.
    pub issuers: Vec<IssuerRecord>,
}

/// The record of type `t`.
pub async fn type_record(cp: &ControlPlane, t: TypeRow) -> ApiResult<TypeRecord> {
    let owner = match t.owner_id {
        Some(id) => parties::owner(&cp.db, Key::Id(id)).await?.map(Into::into),
        None => None,
    };
    let issuers = parties::issuers_of_type(&cp.db, t.id).await?;
    Ok(TypeRecord {
        id: t.id,
        created_at: t.created_at,
        updated_at: t.updated_at,
        trust_mark_type: t.trust_mark_type,
        owner_id: t.owner_id,
        owner,
        description: t.description,
        issuers: issuers.into_iter().map(Into::into).collect(),
    })
}

/// The issuers of type `type_id`.
pub async fn issuers_of(cp: &ControlPlane, type_id: i64) -> ApiResult<Vec<IssuerRecord>> {
    let rows = parties::issuers_of_type(&cp.db, type_id).await?;
    Ok(rows.into_iter().map(Into::into).collect())
}

/// Owner `o` with its types.
pub async fn owner_with_types(cp: &ControlPlane, o: OwnerRow) -> ApiResult<OwnerWithTypes> {
    let types = types_repo::of_owner(&cp.db, o.id).await?;
    Ok(OwnerWithTypes {
        owner: o.into(),
        types: types.iter().map(Into::into).collect(),
    })
}

/// Issuer `i` with its types.
pub async fn issuer_with_types(cp: &ControlPlane, i: IssuerRow) -> ApiResult<IssuerWithTypes> {
    let types = types_repo::of_issuer(&cp.db, i.id).await?;
    Ok(IssuerWithTypes {
        issuer: i.into(),
        types: types.iter().map(Into::into).collect(),
    })
}
