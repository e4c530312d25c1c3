//! `pharos admin delegation create`: a trust mark delegation JWT (OpenID Federation §7.2.1,
//! `typ` `trust-mark-delegation+jwt`), signed offline with the trust mark owner's key file.
//!
//! The owner's key never goes near the service: the operator signs on the owner's machine and
//! stores the token with an issuance spec (`delegation_jwt`).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use pharos_shared::jose::{self, Algorithm};
use pharos_shared::time::{Clock as _, SystemClock};
use pharos_shared::trust_mark::DELEGATION_TYP;
use serde_json::{Map, Value, json};

use super::Failure;

/// `pharos admin delegation …`
#[derive(Debug, Subcommand)]
pub enum DelegationCmd {
    /// Prints a delegation JWT signed with the owner's key.
    Create(CreateArgs),
}

/// `pharos admin delegation create`
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The trust mark owner's entity identifier (`iss`).
    #[arg(long)]
    pub owner: String,
    /// The issuer the owner delegates to (`sub`).
    #[arg(long)]
    pub issuer: String,
    /// The trust mark type delegated.
    #[arg(long)]
    pub trust_mark_type: String,
    /// The owner's private key: a PKCS#8 PEM or a private JWK (its `kid` is kept).
    #[arg(long)]
    pub key: PathBuf,
    /// Signing algorithm (default: from the JWK's `alg`, else from the key type and curve).
    #[arg(long)]
    pub alg: Option<String>,
    /// Validity (e.g. 365d); `0` for a delegation without `exp`.
    #[arg(long, default_value = "365d")]
    pub lifetime: String,
    /// URL of a human-readable description of the delegation (`ref`).
    #[arg(long = "ref")]
    pub reference: Option<String>,
}

/// Runs the command; the token (or `{"delegation_jwt": …}` with `--json`) on success.
pub fn run(cmd: &DelegationCmd, json_out: bool) -> Result<String, Failure> {
    let DelegationCmd::Create(a) = cmd;
    let token = create(a, SystemClock.now())?;
    Ok(if json_out {
        format!("{}\n", json!({ "delegation_jwt": token }))
    } else {
        format!("{token}\n")
    })
}

/// The delegation claims: `iss` owner, `sub` issuer, `trust_mark_type`, `iat`, `exp` unless
/// the lifetime is 0, `ref` when given.
pub fn claims(a: &CreateArgs, now: i64) -> Result<Map<String, Value>, Failure> {
    for (name, v) in [
        ("--owner", &a.owner),
        ("--issuer", &a.issuer),
        ("--trust-mark-type", &a.trust_mark_type),
    ] {
        if v.trim().is_empty() {
            return Err(Failure::Usage(format!("{name} must not be empty")));
        }
    }
    let lifetime = super::seconds("--lifetime", &a.lifetime)?;
    let mut c = Map::new();
    c.insert("iss".into(), json!(a.owner));
    c.insert("sub".into(), json!(a.issuer));
    c.insert("trust_mark_type".into(), json!(a.trust_mark_type));
    c.insert("iat".into(), json!(now));
    if lifetime > 0 {
        let exp = i64::try_from(lifetime)
            .ok()
            .and_then(|l| now.checked_add(l))
            .ok_or_else(|| Failure::Usage("--lifetime is too long".into()))?;
        c.insert("exp".into(), json!(exp));
    }
    if let Some(r) = &a.reference {
        c.insert("ref".into(), json!(r));
    }
    Ok(c)
}

/// Signs the delegation with the key file.
pub fn create(a: &CreateArgs, now: i64) -> Result<String, Failure> {
    let claims = claims(a, now)?;
    let alg = match &a.alg {
        Some(s) => Some(
            s.parse::<Algorithm>()
                .map_err(|e| Failure::Usage(format!("--alg: {e}")))?,
        ),
        None => None,
    };
    let text = std::fs::read_to_string(&a.key)
        .map_err(|e| Failure::Usage(format!("cannot read --key {}: {e}", a.key.display())))?;
    let key = jose::load_private_key(&text, alg)
        .map_err(|e| Failure::Usage(format!("--key {}: {e}", a.key.display())))?;
    jose::sign(&key, DELEGATION_TYP, &claims, None)
        .map_err(|e| Failure::Usage(format!("cannot sign: {e}")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pharos_shared::jose::{Jwks, Signer as _, SigningKey};

    fn args(key: PathBuf) -> CreateArgs {
        CreateArgs {
            owner: "https://owner.example".into(),
            issuer: "https://issuer.example".into(),
            trust_mark_type: "https://marks.example/gold".into(),
            key,
            alg: None,
            lifetime: "1h".into(),
            reference: None,
        }
    }

    #[test]
    fn a_delegation_verifies_under_the_rule_issuers_apply() {
        let dir = tempfile::tempdir().unwrap();
        let owner = SigningKey::generate(Algorithm::ES256, 0).unwrap();
        let path = dir.path().join("owner.pem");
        std::fs::write(&path, owner.private_pem()).unwrap();
        let a = args(path);
        let now = 1_800_000_000;
        let token = create(&a, now).unwrap();
        let jwks = Jwks {
            keys: vec![owner.public_jwk().clone()],
        };
        pharos_shared::trust_mark::check_delegation_for_issuer(
            &token,
            &a.owner,
            &jwks,
            &a.issuer,
            &a.trust_mark_type,
            now + 10,
        )
        .unwrap();
        let d = jose::decode_unverified(&token).unwrap();
        assert_eq!(d.claims["exp"], now + 3600);
    }

    #[test]
    fn a_missing_key_file_is_a_usage_error() {
        let a = args(PathBuf::from("/nonexistent/owner.pem"));
        assert!(matches!(create(&a, 0), Err(Failure::Usage(_))));
    }

    #[test]
    fn lifetime_zero_means_no_exp() {
        let mut a = args(PathBuf::from("x"));
        a.lifetime = "0".into();
        let c = claims(&a, 5).unwrap();
        assert!(!c.contains_key("exp"));
        assert_eq!(c["iat"], 5);
    }
}
