//! The private-key backends behind one face: generate a key, and get a [`Signer`] for a stored
//! key. Which backend is used is static configuration (`signing.kms`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pharos_shared::config::{Kms as KmsKind, Settings};
use pharos_shared::jose::{Algorithm, Jwk, Signer, SigningKey, thumbprint};

use super::pkcs11::{Token, TokenSigner};
use crate::db::keys::KeyRow;
use crate::error::{Error, Result};
use pharos_shared::jose::seal::{Sealer, is_sealed};

/// A freshly generated key, ready to be recorded.
#[derive(Debug)]
pub struct Generated {
    /// Key id (RFC 7638 thumbprint).
    pub kid: String,
    /// Public JWK with `kid`, `use`, `alg`.
    pub public_jwk: Jwk,
    /// PKCS#8 PEM when the private key is kept in the database.
    pub private_pem: Option<String>,
}

/// The configured key store.
#[derive(Debug)]
pub struct Kms {
    kind: KmsKind,
    key_dir: PathBuf,
    key_file: Option<PathBuf>,
    token: Option<Arc<Token>>,
    /// Encrypts private keys stored in the database, when configured.
    sealer: Option<Sealer>,
}

impl Kms {
    /// Opens the configured backend (for PKCS#11: loads the module and logs in).
    pub fn open(cfg: &Settings) -> Result<Self> {
        let fs = &cfg.signing.filesystem;
        let token = match cfg.signing.kms {
            KmsKind::Pkcs11 => Some(Token::open(&cfg.signing.pkcs11)?),
            _ => None,
        };
        Ok(Self {
            kind: cfg.signing.kms,
            key_dir: PathBuf::from(&fs.key_dir),
            key_file: (cfg.signing.kms == KmsKind::Filesystem && !fs.key_file.is_empty())
                .then(|| PathBuf::from(&fs.key_file)),
            token,
            sealer: super::sealing::from_settings(&cfg.signing)?,
        })
    }

    /// Name of the backend as the Admin API shows it.
    pub fn name(&self) -> &'static str {
        match self.kind {
            KmsKind::Db => "db",
            KmsKind::Filesystem => "filesystem",
            KmsKind::Pkcs11 => "pkcs11",
        }
    }

    /// A single static key file: no rotation and no algorithm change are possible.
    pub fn static_key(&self) -> Option<&Path> {
        self.key_file.as_deref()
    }

    /// Refuses operations that would need a new key when the key is static.
    pub fn require_dynamic(&self) -> Result<()> {
        match self.static_key() {
            Some(_) => Err(Error::StaticKey),
            None => Ok(()),
        }
    }

    /// Generates a key for `alg` in the backend.
    pub fn generate(&self, alg: Algorithm, rsa_bits: u32) -> Result<Generated> {
        self.require_dynamic()?;
        if let Some(token) = &self.token {
            let (kid, public_jwk) = token.generate(alg)?;
            return Ok(Generated {
                kid,
                public_jwk,
                private_pem: None,
            });
        }
        let key = SigningKey::generate(alg, rsa_bits)?;
        let private_pem = match self.kind {
            KmsKind::Filesystem => {
                write_pem(&self.key_dir, key.kid(), key.private_pem())?;
                None
            }
            _ => Some(self.stored_form(key.kid(), key.private_pem())?),
        };
        Ok(Generated {
            kid: key.kid().to_string(),
            public_jwk: key.public_jwk().clone(),
            private_pem,
        })
    }

    /// How a private key is stored in the database: sealed when a database encryption key is
    /// configured, else the PEM itself.
    pub fn stored_form(&self, kid: &str, pem: &str) -> Result<String> {
        match &self.sealer {
            Some(s) => Ok(s.seal(kid, pem)?),
            None => Ok(pem.to_owned()),
        }
    }

    /// The PEM of a stored private key; a sealed one needs the key it was sealed with.
    pub fn open_stored(&self, kid: &str, stored: &str) -> Result<String> {
        if !is_sealed(stored) {
            return Ok(stored.to_owned());
        }
        match &self.sealer {
            Some(s) => Ok(s.open(kid, stored)?),
            None => Err(Error::Internal(format!(
                "the private key of {kid} is encrypted at rest; configure the key it was \
                 encrypted with (signing.db_encryption_key_file or signing.db_encryption_key)"
            ))),
        }
    }

    /// Whether private keys stored in the database are to be sealed.
    pub fn seals(&self) -> bool {
        self.sealer.is_some()
    }

    /// The static key file's key, for recording at first start.
    pub fn read_static(&self, alg: Algorithm) -> Result<Option<SigningKey>> {
        self.static_key().map(|p| read_pem_key(p, alg)).transpose()
    }

    /// A signer for a stored key of ours. The private key must make the stored public key
    /// (for ML-DSA: the seed must reproduce `pub`), else it is refused: signing with a key
    /// other than the one published would make every statement unverifiable.
    pub fn signer(&self, row: &KeyRow) -> Result<Arc<dyn Signer>> {
        let alg: Algorithm = row.alg.parse()?;
        if let Some(stored) = &row.private_pem {
            let pem = self.open_stored(&row.kid, stored)?;
            return Ok(Arc::new(published(row, SigningKey::from_pem(alg, &pem)?)?));
        }
        if let Some(token) = &self.token {
            let s = TokenSigner::new(token.clone(), alg, &row.kid, row.public_jwk.clone())?;
            return Ok(Arc::new(s));
        }
        let path = match self.static_key() {
            Some(p) => p.to_path_buf(),
            None => self.key_dir.join(format!("{}.pem", row.kid)),
        };
        if self.kind != KmsKind::Filesystem {
            return Err(Error::Internal(format!(
                "private key of {} is not available",
                row.kid
            )));
        }
        Ok(Arc::new(published(row, read_pem_key(&path, alg)?)?))
    }
}

/// `key` when its public key is the one `row` publishes (same RFC 7638 thumbprint members).
fn published(row: &KeyRow, key: SigningKey) -> Result<SigningKey> {
    let same = match (thumbprint(key.public_jwk()), thumbprint(&row.public_jwk)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same {
        Ok(key)
    } else {
        Err(Error::Internal(format!(
            "the private key stored for {} does not make its published public key; refusing \
             to sign with it",
            row.kid
        )))
    }
}

fn write_pem(dir: &Path, kid: &str, pem: &str) -> Result<()> {
    crate::private_files::create_dir(dir)
        .map_err(|e| Error::Internal(format!("cannot create key_dir {}: {e}", dir.display())))?;
    let path = dir.join(format!("{kid}.pem"));
    crate::private_files::write_new(&path, pem.as_bytes())
        .map_err(|e| Error::Internal(format!("cannot write {}: {e}", path.display())))
}

/// The signing key in the PEM file at `path` for `alg`; `pharos check-config` reads the
/// configured key files with it before anything touches the database.
pub fn read_pem_key(path: &Path, alg: Algorithm) -> Result<SigningKey> {
    let pem = std::fs::read_to_string(path)
        .map_err(|e| Error::Internal(format!("cannot read {}: {e}", path.display())))?;
    Ok(SigningKey::from_pem(alg, &pem)?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing unwrap is a failing test
mod tests {
    use super::*;

    /// A database-stored key whose private part does not make the published public key (a
    /// seed that does not reproduce `pub`, or rows mixed up) is refused, never used.
    #[test]
    fn a_stored_key_must_make_its_published_public_key() {
        let kms = Kms::open(&Settings::default()).unwrap();
        for alg in [Algorithm::MlDsa44, Algorithm::ES256] {
            let g = kms.generate(alg, 2048).unwrap();
            let mut row = super::super::new_row(g, alg, 0, 0, None);
            assert!(kms.signer(&row).is_ok(), "{alg}");
            let other = kms.generate(alg, 2048).unwrap();
            row.public_jwk = other.public_jwk;
            let e = kms.signer(&row).unwrap_err().to_string();
            assert!(
                e.contains("does not make its published public key"),
                "{alg}: {e}"
            );
        }
    }
    /// Keys in `signing.filesystem.key_dir` (`<kid>.pem`) are read back for every kind:
    /// PKCS#8 for ML-DSA (RFC 9881 seed form), the private AKP JWK for a composite.
    #[test]
    fn filesystem_keys_of_ml_dsa_and_composites_are_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = Settings::default();
        settings.signing.kms = KmsKind::Filesystem;
        settings.signing.filesystem.key_dir = dir.path().display().to_string();
        let kms = Kms::open(&settings).unwrap();
        for alg in [
            Algorithm::MlDsa87,
            Algorithm::MlDsa65Es256,
            Algorithm::MlDsa87Ed448,
        ] {
            let g = kms.generate(alg, 2048).unwrap();
            assert!(
                g.private_pem.is_none(),
                "the private key is in the file, not the row"
            );
            let file = std::fs::read_to_string(dir.path().join(format!("{}.pem", g.kid))).unwrap();
            assert_eq!(
                file.starts_with("-----BEGIN PRIVATE KEY-----"),
                alg == Algorithm::MlDsa87
            );
            let row = super::super::new_row(g, alg, 0, 0, None);
            let signer = kms.signer(&row).unwrap();
            assert_eq!((signer.alg(), signer.kid()), (alg, row.kid.as_str()));
        }
    }
}
