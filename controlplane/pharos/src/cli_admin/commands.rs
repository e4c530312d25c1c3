//! The subcommands of `pharos admin` and the Admin API calls each one makes.

use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{Value, json};

use super::client::{Body, Client, seg};
use super::table::{self, Column};
use super::{Failure, seconds};

/// What `pharos admin` can do.
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Subordinates of this entity (a Trust Anchor or an Intermediate).
    #[command(subcommand)]
    Subordinates(SubordinateCmd),
    /// Trust mark types, issuance specs and their subjects.
    #[command(subcommand, name = "trust-marks")]
    TrustMarks(TrustMarkCmd),
    /// Federation endpoints (fetch, list, resolve, trust_mark, …).
    #[command(subcommand)]
    Endpoints(EndpointCmd),
    /// The Trust Anchors this entity trusts (resolve, client authentication).
    #[command(subcommand, name = "trust-anchors")]
    TrustAnchors(TrustAnchorCmd),
    /// This entity's superiors, published as `authority_hints`.
    #[command(subcommand, name = "authority-hints")]
    AuthorityHints(HintCmd),
    /// Metadata of this entity's Entity Configuration.
    #[command(subcommand)]
    Metadata(MetadataCmd),
    /// Signing keys and their rotation.
    #[command(subcommand)]
    Keys(KeyCmd),
    /// Admin users.
    #[command(subcommand)]
    Users(UserCmd),
    /// Trust mark delegations (offline: signed with the owner's key file, no API call).
    #[command(subcommand)]
    Delegation(super::delegation::DelegationCmd),
    /// The resolver's caches.
    #[command(subcommand)]
    Resolver(ResolverCmd),
    /// The federation entities this deployment hosts (`--entity` picks the one the other
    /// commands manage).
    #[command(subcommand)]
    Entities(EntityCmd),
}

/// `pharos admin entities …`
#[derive(Debug, Subcommand)]
pub enum EntityCmd {
    /// Lists the hosted entities (the default one first).
    List,
    /// Hosts a new entity: its keys are generated and it is served where its identifier says.
    Add {
        /// Its entity identifier, e.g. https://fed.example.org/edu.
        entity_id: String,
        /// A name for people.
        #[arg(long, default_value = "")]
        name: String,
    },
    /// Stops hosting an entity (its rows stay in the database).
    Remove {
        /// Its number or entity identifier.
        entity: String,
        /// Its entity identifier again, to confirm.
        #[arg(long)]
        confirm: String,
    },
}

/// `pharos admin resolver …`
#[derive(Debug, Subcommand)]
pub enum ResolverCmd {
    /// Forgets cached statements, resolutions and failures (all, or about one subject), so
    /// the next resolve fetches anew.
    Flush {
        /// Only what concerns this entity identifier.
        #[arg(long)]
        sub: Option<String>,
    },
}

/// `pharos admin subordinates …`
#[derive(Debug, Subcommand)]
pub enum SubordinateCmd {
    /// Lists subordinates.
    List {
        /// Only this status: active, pending, blocked, inactive.
        #[arg(long)]
        status: Option<String>,
    },
    /// Shows one subordinate (entity identifier or numeric id).
    Show {
        /// Entity identifier or numeric id.
        id: String,
    },
    /// Adds a subordinate.
    Add(AddSubordinate),
    /// Blocks a subordinate (its statement is no longer issued).
    Block {
        /// Entity identifier or numeric id.
        id: String,
    },
    /// Approves a subordinate (a pending enrollment request, or a blocked one).
    Approve {
        /// Entity identifier or numeric id.
        id: String,
    },
    /// Removes a subordinate with its history.
    Remove {
        /// Entity identifier or numeric id.
        id: String,
    },
    /// Lists pending enrollment requests.
    Requests,
}

/// Keys of an entity given on the command line: a file or JSON, or fetched.
#[derive(Debug, Args)]
pub struct KeysArg {
    /// The entity's federation keys: a JWK Set, one JWK or a list of JWKs (what `keys list
    /// --json` prints), as JSON or `@file`.
    #[arg(long, conflicts_with = "fetch_jwks")]
    pub jwks: Option<String>,
    /// Take the keys from the entity's own Entity Configuration (trust on first use: compare
    /// them with what the entity's operator tells you).
    #[arg(long)]
    pub fetch_jwks: bool,
}

/// `pharos admin subordinates add`
#[derive(Debug, Args)]
pub struct AddSubordinate {
    /// The subordinate's entity identifier.
    pub entity_id: String,
    /// Its keys.
    #[command(flatten)]
    pub keys: KeysArg,
    /// Initial status (default active; active needs keys).
    #[arg(long)]
    pub status: Option<String>,
    /// Registered entity types (repeatable).
    #[arg(long = "entity-type")]
    pub entity_types: Vec<String>,
    /// Free text.
    #[arg(long)]
    pub description: Option<String>,
    /// Poll the subordinate's keys from its Entity Configuration.
    #[arg(long)]
    pub jwks_update: bool,
}

/// `pharos admin trust-marks …`
#[derive(Debug, Subcommand)]
pub enum TrustMarkCmd {
    /// Lists trust mark types (with owner and issuers).
    Types,
    /// Lists issuance specs (the types this entity issues).
    Specs,
    /// Lists the subjects of an issuance spec.
    Subjects {
        /// Trust mark type (or the spec's numeric id).
        trust_mark_type: String,
        /// Only this status: active, pending, blocked, inactive.
        #[arg(long)]
        status: Option<String>,
    },
    /// Approves a subject (a pending request, or a blocked subject).
    Approve {
        /// Trust mark type (or the spec's numeric id).
        trust_mark_type: String,
        /// The subject's entity identifier (or numeric id).
        subject: String,
    },
    /// Blocks a subject and revokes every mark issued to it.
    Block {
        /// Trust mark type (or the spec's numeric id).
        trust_mark_type: String,
        /// The subject's entity identifier (or numeric id).
        subject: String,
    },
    /// Lists pending trust mark requests of a spec.
    Requests {
        /// Trust mark type (or the spec's numeric id).
        trust_mark_type: String,
    },
}

/// `pharos admin endpoints …`
#[derive(Debug, Subcommand)]
pub enum EndpointCmd {
    /// Lists the configured endpoints.
    List,
    /// Shows one endpoint.
    Show {
        /// Endpoint type (fetch, list, resolve, trust_mark, …).
        r#type: String,
    },
    /// Enables an endpoint (creates it, or serves it again at a path).
    Enable {
        /// Endpoint type (fetch, list, resolve, trust_mark, …).
        r#type: String,
        /// Served path (default `/` and the type with `-` for `_`, e.g. `/trust-mark`).
        #[arg(long)]
        path: Option<String>,
        /// Type-specific configuration, JSON or `@file` (kept when omitted).
        #[arg(long)]
        endpoint_config: Option<String>,
        /// Require client authentication (private_key_jwt).
        #[arg(long)]
        auth: bool,
    },
    /// Disables an endpoint (its record and configuration are kept).
    Disable {
        /// Endpoint type.
        r#type: String,
    },
}

/// `pharos admin trust-anchors …`
#[derive(Debug, Subcommand)]
pub enum TrustAnchorCmd {
    /// Lists trusted Trust Anchors.
    List,
    /// Adds a Trust Anchor with its keys.
    Add {
        /// The anchor's entity identifier.
        entity_id: String,
        /// Its keys.
        #[command(flatten)]
        keys: KeysArg,
        /// Poll the anchor's keys from its Entity Configuration.
        #[arg(long)]
        jwks_update: bool,
    },
    /// Removes a Trust Anchor.
    Remove {
        /// The anchor's entity identifier.
        entity_id: String,
    },
}

/// `pharos admin authority-hints …`
#[derive(Debug, Subcommand)]
pub enum HintCmd {
    /// Lists authority hints.
    List,
    /// Adds a superior.
    Add {
        /// The superior's entity identifier.
        entity_id: String,
    },
    /// Removes a superior.
    Remove {
        /// The superior's entity identifier.
        entity_id: String,
    },
}

/// `pharos admin metadata …`
#[derive(Debug, Subcommand)]
pub enum MetadataCmd {
    /// Shows the metadata (all entity types, or one).
    Show {
        /// Entity type, e.g. federation_entity.
        entity_type: Option<String>,
    },
    /// Replaces the metadata of one entity type.
    Set {
        /// Entity type, e.g. federation_entity or openid_relying_party.
        entity_type: String,
        /// The metadata object, JSON or `@file`.
        metadata: String,
    },
}

/// `pharos admin keys …`
#[derive(Debug, Subcommand)]
pub enum KeyCmd {
    /// Lists the published signing keys.
    List,
    /// Rotates every signing key now.
    Rotate {
        /// Revoke the old keys instead of letting them expire.
        #[arg(long)]
        revoke: bool,
        /// Revocation reason: unspecified, compromised, superseded.
        #[arg(long, requires = "revoke")]
        reason: Option<String>,
    },
    /// Shows the rotation policy, or changes the fields given.
    Rotation {
        /// Rotate automatically.
        #[arg(long)]
        enabled: Option<bool>,
        /// Rotation interval (seconds, or a duration such as 30d).
        #[arg(long)]
        interval: Option<String>,
        /// How long an old key stays published (seconds, or a duration such as 7d).
        #[arg(long)]
        overlap: Option<String>,
    },
}

/// `pharos admin users …`
#[derive(Debug, Subcommand)]
pub enum UserCmd {
    /// Lists admin users.
    List,
    /// Adds an admin user.
    Add {
        /// User name.
        username: String,
        /// The new user's password (prefer PHAROS_NEW_PASSWORD: arguments are visible to
        /// other users of the machine).
        #[arg(long, env = "PHAROS_NEW_PASSWORD", hide_env_values = true)]
        new_password: String,
        /// Display name.
        #[arg(long)]
        display_name: Option<String>,
    },
    /// Removes an admin user.
    Remove {
        /// User name.
        username: String,
    },
}

const SUBORDINATE_COLUMNS: &[Column] = &[
    ("ID", "id"),
    ("ENTITY_ID", "entity_id"),
    ("STATUS", "status"),
    ("TYPES", "registered_entity_types"),
    ("DESCRIPTION", "description"),
];
const SUBJECT_COLUMNS: &[Column] = &[
    ("ID", "id"),
    ("ENTITY_ID", "entity_id"),
    ("STATUS", "status"),
    ("DESCRIPTION", "description"),
];
const ENTITY_COLUMNS: &[Column] = &[
    ("ID", "id"),
    ("ENTITY_ID", "entity_id"),
    ("NAME", "display_name"),
    ("DEFAULT", "default"),
];

const ANCHOR_COLUMNS: &[Column] = &[
    ("ENTITY_ID", "entity_id"),
    ("JWKS_UPDATE", "enable_jwks_update"),
    ("KEY_POLL_INTERVAL", "key_poll_interval"),
];

/// What to print: a list under columns, one record, or a line of text.
enum Shown {
    List(Value, &'static [Column]),
    Record(Value),
    Done(Value, String),
}

/// Runs `cmd` against `c`; the text to print on success.
pub async fn run(c: &Client, cmd: AdminCommand, json: bool) -> Result<String, Failure> {
    let shown = match cmd {
        AdminCommand::Subordinates(s) => subordinates(c, s).await?,
        AdminCommand::TrustMarks(t) => trust_marks(c, t).await?,
        AdminCommand::Endpoints(e) => endpoints(c, e).await?,
        AdminCommand::TrustAnchors(t) => trust_anchors(c, t).await?,
        AdminCommand::AuthorityHints(h) => hints(c, h).await?,
        AdminCommand::Metadata(m) => metadata(c, m).await?,
        AdminCommand::Keys(k) => keys(c, k).await?,
        AdminCommand::Users(u) => users(c, u).await?,
        AdminCommand::Entities(e) => entities(c, e).await?,
        AdminCommand::Resolver(ResolverCmd::Flush { sub }) => {
            let body = match &sub {
                Some(s) => json!({ "sub": s }),
                None => json!({}),
            };
            let v = c
                .call(Method::POST, "/resolver/flush", Body::Json(body))
                .await?;
            let what = sub.map_or("everything".to_owned(), |s| format!("what concerns {s}"));
            Shown::Done(v, format!("resolver cache flushed: {what}"))
        }
        AdminCommand::Delegation(_) => {
            return Err(Failure::Usage("delegation runs offline".into()));
        }
    };
    Ok(render(shown, json))
}

fn render(shown: Shown, json: bool) -> String {
    match (shown, json) {
        (Shown::List(v, _) | Shown::Record(v) | Shown::Done(v, _), true) => {
            if v.is_null() {
                String::new()
            } else {
                format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default())
            }
        }
        (Shown::List(v, cols), false) => {
            let rows = v.as_array().cloned().unwrap_or_default();
            table::render(&rows, cols)
        }
        (Shown::Record(v), false) => table::record(&v),
        (Shown::Done(_, line), false) => format!("{line}\n"),
    }
}

async fn subordinates(c: &Client, cmd: SubordinateCmd) -> Result<Shown, Failure> {
    Ok(match cmd {
        SubordinateCmd::List { status } => {
            let q = status
                .map(|s| format!("?status={}", seg(&s)))
                .unwrap_or_default();
            Shown::List(
                c.get(&format!("/subordinates{q}")).await?,
                SUBORDINATE_COLUMNS,
            )
        }
        SubordinateCmd::Requests => Shown::List(
            c.get("/subordinates?status=pending").await?,
            SUBORDINATE_COLUMNS,
        ),
        SubordinateCmd::Show { id } => {
            Shown::Record(c.get(&format!("/subordinates/{}", seg(&id))).await?)
        }
        SubordinateCmd::Add(a) => {
            let mut body = json!({"entity_id": a.entity_id, "enable_jwks_update": a.jwks_update});
            if let Some(j) = keys_of(c, &a.entity_id, &a.keys).await? {
                body["jwks"] = j;
            }
            if let Some(s) = a.status {
                body["status"] = json!(s);
            }
            if !a.entity_types.is_empty() {
                body["registered_entity_types"] = json!(a.entity_types);
            }
            if let Some(d) = a.description {
                body["description"] = json!(d);
            }
            let v = c
                .call(Method::POST, "/subordinates", Body::Json(body))
                .await?;
            let line = format!("added subordinate {}", a.entity_id);
            Shown::Done(v, line)
        }
        SubordinateCmd::Block { id } => status(c, &id, "blocked", "blocked").await?,
        SubordinateCmd::Approve { id } => status(c, &id, "active", "approved").await?,
        SubordinateCmd::Remove { id } => {
            let v = c
                .call(
                    Method::DELETE,
                    &format!("/subordinates/{}", seg(&id)),
                    Body::None,
                )
                .await?;
            Shown::Done(v, format!("removed subordinate {id}"))
        }
    })
}

async fn status(c: &Client, id: &str, status: &str, verb: &str) -> Result<Shown, Failure> {
    let path = format!("/subordinates/{}/status", seg(id));
    let v = c
        .call(Method::PUT, &path, Body::Text(status.into()))
        .await?;
    Ok(Shown::Done(v, format!("{verb} subordinate {id}")))
}

async fn trust_marks(c: &Client, cmd: TrustMarkCmd) -> Result<Shown, Failure> {
    let subjects = |t: &str| format!("/trust-marks/issuance-spec/{}/subjects", seg(t));
    Ok(match cmd {
        TrustMarkCmd::Types => {
            let mut v = c.get("/trust-marks/types").await?;
            // The owner and issuers as flat cells.
            if let Some(rows) = v.as_array_mut() {
                for r in rows.iter_mut() {
                    let owner = r["owner"]["entity_id"].clone();
                    let issuers: Vec<Value> = r["issuers"]
                        .as_array()
                        .map(|a| a.iter().map(|i| i["issuer"].clone()).collect())
                        .unwrap_or_default();
                    r["owner_entity_id"] = owner;
                    r["issuer_ids"] = json!(issuers);
                }
            }
            Shown::List(
                v,
                &[
                    ("ID", "id"),
                    ("TRUST_MARK_TYPE", "trust_mark_type"),
                    ("OWNER", "owner_entity_id"),
                    ("ISSUERS", "issuer_ids"),
                ],
            )
        }
        TrustMarkCmd::Specs => Shown::List(
            c.get("/trust-marks/issuance-spec").await?,
            &[
                ("ID", "id"),
                ("TRUST_MARK_TYPE", "trust_mark_type"),
                ("LIFETIME", "lifetime"),
                ("DESCRIPTION", "description"),
            ],
        ),
        TrustMarkCmd::Subjects {
            trust_mark_type,
            status,
        } => {
            let q = status
                .map(|s| format!("?status={}", seg(&s)))
                .unwrap_or_default();
            let path = format!("{}{q}", subjects(&trust_mark_type));
            Shown::List(c.get(&path).await?, SUBJECT_COLUMNS)
        }
        TrustMarkCmd::Requests { trust_mark_type } => {
            let path = format!("{}?status=pending", subjects(&trust_mark_type));
            Shown::List(c.get(&path).await?, SUBJECT_COLUMNS)
        }
        TrustMarkCmd::Approve {
            trust_mark_type,
            subject,
        } => {
            let path = format!("{}/{}/status", subjects(&trust_mark_type), seg(&subject));
            let v = c
                .call(Method::PUT, &path, Body::Text("active".into()))
                .await?;
            Shown::Done(v, format!("approved {subject} for {trust_mark_type}"))
        }
        TrustMarkCmd::Block {
            trust_mark_type,
            subject,
        } => {
            let path = format!("{}/{}/status", subjects(&trust_mark_type), seg(&subject));
            let v = c
                .call(Method::PUT, &path, Body::Text("blocked".into()))
                .await?;
            Shown::Done(v, format!("blocked {subject} for {trust_mark_type}"))
        }
    })
}

/// The default path of an endpoint type: `trust_mark_status` is served at
/// `/trust-mark-status`.
pub fn default_path(kind: &str) -> String {
    format!("/{}", kind.replace('_', "-"))
}

async fn endpoints(c: &Client, cmd: EndpointCmd) -> Result<Shown, Failure> {
    const COLUMNS: &[Column] = &[
        ("TYPE", "type"),
        ("PATH", "path"),
        ("AUTH", "auth_enabled"),
        ("CONFIG", "config"),
    ];
    Ok(match cmd {
        EndpointCmd::List => Shown::List(c.get("/federation-endpoints").await?, COLUMNS),
        EndpointCmd::Show { r#type } => Shown::Record(
            c.get(&format!("/federation-endpoints/{}", seg(&r#type)))
                .await?,
        ),
        EndpointCmd::Enable {
            r#type,
            path,
            endpoint_config,
            auth,
        } => {
            let config = endpoint_config
                .map(|s| json_arg("--endpoint-config", &s))
                .transpose()?;
            let path = path.unwrap_or_else(|| default_path(&r#type));
            let v = enable_endpoint(c, &r#type, &path, config, auth).await?;
            Shown::Done(v, format!("{} served at {path}", r#type))
        }
        EndpointCmd::Disable { r#type } => {
            let one = format!("/federation-endpoints/{}", seg(&r#type));
            let (mut rec, tag) = c.get_tagged(&one).await?;
            rec["path"] = Value::Null;
            strip_anchor_records(&mut rec);
            let v = c
                .call_if_match(Method::PUT, &one, Body::Json(rec), tag.as_deref())
                .await?;
            Shown::Done(v, format!("{} disabled", r#type))
        }
    })
}

/// Creates endpoint `kind` at `path`, or, when it exists, serves it there (keeping its
/// configuration unless `config` is given). Shared with `pharos setup`.
pub async fn enable_endpoint(
    c: &Client,
    kind: &str,
    path: &str,
    config: Option<Value>,
    auth: bool,
) -> Result<Value, Failure> {
    let one = format!("/federation-endpoints/{}", seg(kind));
    match c.get_tagged(&one).await {
        Ok((mut rec, tag)) => {
            rec["path"] = json!(path);
            if let Some(cfg) = config {
                rec["config"] = cfg;
            }
            if auth {
                rec["auth_enabled"] = json!(true);
            }
            strip_anchor_records(&mut rec);
            c.call_if_match(Method::PUT, &one, Body::Json(rec), tag.as_deref())
                .await
        }
        Err(Failure::Refused { status: 404, .. }) => {
            let mut body = json!({"type": kind, "path": path, "auth_enabled": auth});
            if let Some(cfg) = config {
                body["config"] = cfg;
            }
            c.call(Method::POST, "/federation-endpoints", Body::Json(body))
                .await
        }
        Err(e) => Err(e),
    }
}

/// A GET record PUT back: its trust anchors as entity identifiers (the API accepts both, but
/// identifiers are what it documents).
fn strip_anchor_records(rec: &mut Value) {
    if let Some(a) = rec
        .get_mut("auth_trust_anchors")
        .and_then(Value::as_array_mut)
    {
        for t in a.iter_mut() {
            if let Some(id) = t.get("entity_id").cloned() {
                *t = id;
            }
        }
    }
}

async fn entities(c: &Client, cmd: EntityCmd) -> Result<Shown, Failure> {
    Ok(match cmd {
        EntityCmd::List => Shown::List(c.get("/entities").await?, ENTITY_COLUMNS),
        EntityCmd::Add { entity_id, name } => {
            let body = json!({"entity_id": entity_id, "display_name": name});
            let v = c.call(Method::POST, "/entities", Body::Json(body)).await?;
            let n = v["id"].clone();
            Shown::Done(v, format!("hosting {entity_id} as entity {n}"))
        }
        EntityCmd::Remove { entity, confirm } => {
            let path = format!("/entities/{}?confirm={}", seg(&entity), seg(&confirm));
            let v = c.call(Method::DELETE, &path, Body::None).await?;
            Shown::Done(v, format!("no longer hosting {entity}"))
        }
    })
}

async fn trust_anchors(c: &Client, cmd: TrustAnchorCmd) -> Result<Shown, Failure> {
    Ok(match cmd {
        TrustAnchorCmd::List => Shown::List(c.get("/trust-anchors").await?, ANCHOR_COLUMNS),
        TrustAnchorCmd::Add {
            entity_id,
            keys,
            jwks_update,
        } => {
            let mut body = json!({"entity_id": entity_id, "enable_jwks_update": jwks_update});
            if let Some(j) = keys_of(c, &entity_id, &keys).await? {
                body["jwks"] = j;
            }
            let v = c
                .call(Method::POST, "/trust-anchors", Body::Json(body))
                .await?;
            Shown::Done(v, format!("added trust anchor {entity_id}"))
        }
        TrustAnchorCmd::Remove { entity_id } => {
            let path = format!("/trust-anchors/{}", seg(&entity_id));
            let v = c.call(Method::DELETE, &path, Body::None).await?;
            Shown::Done(v, format!("removed trust anchor {entity_id}"))
        }
    })
}

async fn hints(c: &Client, cmd: HintCmd) -> Result<Shown, Failure> {
    const HINTS: &str = "/entity-configuration/authority-hints";
    Ok(match cmd {
        HintCmd::List => Shown::List(
            c.get(HINTS).await?,
            &[("ID", "id"), ("ENTITY_ID", "entity_id")],
        ),
        HintCmd::Add { entity_id } => {
            let body = json!({ "entity_id": entity_id });
            let v = c.call(Method::POST, HINTS, Body::Json(body)).await?;
            Shown::Done(v, format!("added authority hint {entity_id}"))
        }
        HintCmd::Remove { entity_id } => {
            let path = format!("{HINTS}/{}", seg(&entity_id));
            let v = c.call(Method::DELETE, &path, Body::None).await?;
            Shown::Done(v, format!("removed authority hint {entity_id}"))
        }
    })
}

async fn metadata(c: &Client, cmd: MetadataCmd) -> Result<Shown, Failure> {
    const META: &str = "/entity-configuration/metadata";
    Ok(match cmd {
        MetadataCmd::Show { entity_type: None } => Shown::Record(c.get(META).await?),
        MetadataCmd::Show {
            entity_type: Some(t),
        } => Shown::Record(c.get(&format!("{META}/{}", seg(&t))).await?),
        MetadataCmd::Set {
            entity_type,
            metadata,
        } => {
            let doc = json_arg("metadata", &metadata)?;
            let path = format!("{META}/{}", seg(&entity_type));
            let v = c.call(Method::PUT, &path, Body::Json(doc)).await?;
            Shown::Done(v, format!("{entity_type} metadata set"))
        }
    })
}

async fn keys(c: &Client, cmd: KeyCmd) -> Result<Shown, Failure> {
    Ok(match cmd {
        KeyCmd::List => {
            // A JWK Set, or (the lighthouse shape) the bare list of keys.
            let v = c.get("/entity-configuration/jwks").await?;
            let list = v.get("keys").cloned().unwrap_or(v);
            Shown::List(
                list,
                &[
                    ("KID", "kid"),
                    ("KTY", "kty"),
                    ("ALG", "alg"),
                    ("NBF", "nbf"),
                    ("EXP", "exp"),
                ],
            )
        }
        KeyCmd::Rotate { revoke, reason } => {
            let mut q = String::new();
            if revoke {
                q = "?revoke=true".into();
                if let Some(r) = reason {
                    q.push_str(&format!("&reason={}", seg(&r)));
                }
            }
            let v = c
                .call(Method::POST, &format!("/kms/rotate{q}"), Body::None)
                .await?;
            Shown::Done(v, "keys rotated".into())
        }
        KeyCmd::Rotation {
            enabled,
            interval,
            overlap,
        } => {
            let mut body = serde_json::Map::new();
            if let Some(e) = enabled {
                body.insert("enabled".into(), json!(e));
            }
            if let Some(i) = interval {
                body.insert("interval".into(), json!(seconds("--interval", &i)?));
            }
            if let Some(o) = overlap {
                body.insert("overlap".into(), json!(seconds("--overlap", &o)?));
            }
            if body.is_empty() {
                Shown::Record(c.get("/keys/rotation").await?)
            } else {
                let v = c
                    .call(
                        Method::PATCH,
                        "/keys/rotation",
                        Body::Json(Value::Object(body)),
                    )
                    .await?;
                Shown::Record(v)
            }
        }
    })
}

async fn users(c: &Client, cmd: UserCmd) -> Result<Shown, Failure> {
    Ok(match cmd {
        UserCmd::List => Shown::List(
            c.get("/users").await?,
            &[
                ("USERNAME", "username"),
                ("DISPLAY_NAME", "display_name"),
                ("DISABLED", "disabled"),
            ],
        ),
        UserCmd::Add {
            username,
            new_password,
            display_name,
        } => {
            let mut body = json!({"username": username, "password": new_password});
            if let Some(d) = display_name {
                body["display_name"] = json!(d);
            }
            let v = c.call(Method::POST, "/users", Body::Json(body)).await?;
            Shown::Done(v, format!("added user {username}"))
        }
        UserCmd::Remove { username } => {
            let path = format!("/users/{}", seg(&username));
            let v = c.call(Method::DELETE, &path, Body::None).await?;
            Shown::Done(v, format!("removed user {username}"))
        }
    })
}

/// The keys a `--jwks`/`--fetch-jwks` pair names; `None` when neither is given.
async fn keys_of(c: &Client, entity_id: &str, k: &KeysArg) -> Result<Option<Value>, Failure> {
    if let Some(s) = &k.jwks {
        return jwk_set(json_arg("--jwks", s)?).map(Some);
    }
    if k.fetch_jwks {
        return Ok(Some(super::client::entity_jwks(c, entity_id).await?));
    }
    Ok(None)
}

/// The JWK Set a `--jwks` value stands for: a JWK Set as it is, one JWK or a list of JWKs
/// (the shape `keys list --json` prints, so one entity's listing can be handed to its
/// superior as it is) wrapped into one.
fn jwk_set(v: Value) -> Result<Value, Failure> {
    match v {
        Value::Object(ref o) if o.contains_key("keys") => Ok(v),
        Value::Object(ref o) if o.contains_key("kty") => Ok(json!({ "keys": [v] })),
        Value::Array(ref a) if a.iter().all(|k| k.get("kty").is_some()) => Ok(json!({ "keys": v })),
        _ => Err(Failure::Usage(
            "--jwks is neither a JWK Set, a JWK nor a list of JWKs".into(),
        )),
    }
}

/// A JSON argument given inline or as `@file`.
pub fn json_arg(name: &str, s: &str) -> Result<Value, Failure> {
    let text = match s.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| Failure::Usage(format!("cannot read {name} file {path}: {e}")))?,
        None => s.to_owned(),
    };
    serde_json::from_str(&text)
        .map_err(|e| Failure::Usage(format!("{name} is not valid JSON: {e}")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn jwks_take_a_set_a_key_or_the_list_keys_list_prints() {
        let k = json!({"kty": "EC", "kid": "a"});
        let set = json!({"keys": [k.clone()]});
        assert_eq!(jwk_set(set.clone()).ok(), Some(set.clone()));
        assert_eq!(jwk_set(k.clone()).ok(), Some(set.clone()));
        assert_eq!(jwk_set(json!([k])).ok(), Some(set));
        assert!(matches!(jwk_set(json!([1])), Err(Failure::Usage(_))));
        assert!(matches!(jwk_set(json!("x")), Err(Failure::Usage(_))));
    }

    #[test]
    fn default_paths_use_dashes() {
        assert_eq!(default_path("trust_mark_status"), "/trust-mark-status");
        assert_eq!(default_path("fetch"), "/fetch");
    }

    #[test]
    fn json_arguments_must_parse() {
        assert_eq!(json_arg("--config", "{\"a\":1}").unwrap()["a"], 1);
        assert!(matches!(json_arg("--config", "{a"), Err(Failure::Usage(_))));
    }

    #[test]
    fn json_output_is_the_api_answer_and_nothing_for_no_content() {
        let v = json!([{"entity_id": "x"}]);
        let out = render(Shown::List(v.clone(), SUBORDINATE_COLUMNS), true);
        assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), v);
        assert_eq!(render(Shown::Done(Value::Null, "ok".into()), true), "");
        assert_eq!(render(Shown::Done(Value::Null, "ok".into()), false), "ok\n");
    }
}
