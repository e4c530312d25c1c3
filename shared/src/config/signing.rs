//! `signing.*`: where the federation signing keys live and which algorithm new keys use.

use serde::{Deserialize, Serialize};

use super::Secret;
use crate::jose::Algorithm;

/// Signing key handling.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SigningSettings {
    /// Where private keys are kept and used.
    pub kms: Kms,
    /// Where public keys (including retired ones for `historical_keys`) are kept.
    pub pk_backend: PkBackend,
    /// Create a key on first start, so a bare `pharos serve` works.
    pub auto_generate_keys: bool,
    /// Algorithm of generated keys; one of [`Algorithm::ALL`] (design decision 7).
    pub alg: Algorithm,
    /// Modulus size of generated RSA keys.
    pub rsa_key_len: u32,
    /// Settings of the filesystem KMS / public-key backend.
    pub filesystem: FilesystemKeys,
    /// Settings of the PKCS#11 KMS.
    pub pkcs11: Pkcs11Settings,
    /// A file holding the key (32 bytes: raw, hex or base64) that encrypts private keys stored
    /// in the database (`kms: db`). Keys stored in plain form are encrypted at the next start.
    /// Empty: private keys are stored as plain PEM, protected by the database's access rules.
    pub db_encryption_key_file: String,
    /// The same key given directly (hex or base64), e.g. from a secret store through
    /// `SVC_SIGNING_DB_ENCRYPTION_KEY`; not together with `db_encryption_key_file`.
    pub db_encryption_key: Secret,
}

impl Default for SigningSettings {
    fn default() -> Self {
        Self {
            kms: Kms::Db,
            pk_backend: PkBackend::Db,
            auto_generate_keys: true,
            alg: Algorithm::ES256,
            rsa_key_len: 2048,
            filesystem: FilesystemKeys::default(),
            pkcs11: Pkcs11Settings::default(),
            db_encryption_key_file: String::new(),
            db_encryption_key: Secret::default(),
        }
    }
}

/// Private-key store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kms {
    /// In the database (default; no extra files to manage).
    Db,
    /// PEM files in `signing.filesystem`.
    Filesystem,
    /// A hardware token through PKCS#11.
    Pkcs11,
}

/// Public-key store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PkBackend {
    /// In the database.
    Db,
    /// JSON files in `signing.filesystem.key_dir`.
    Filesystem,
}

/// File locations for the filesystem KMS.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FilesystemKeys {
    /// Directory of key files.
    pub key_dir: String,
    /// A single key file (alternative to `key_dir`).
    pub key_file: String,
}

/// PKCS#11 token access (lighthouse-compatible key names).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Pkcs11Settings {
    /// Path of the PKCS#11 module (`.so`).
    pub module_path: String,
    /// Token chosen by label.
    pub token_label: String,
    /// Token chosen by serial number.
    pub token_serial: String,
    /// Token chosen by slot number.
    pub token_slot: Option<u64>,
    /// User PIN (secret; redacted by `check-config`).
    pub pin: Secret,
    /// Directory for the token's key metadata.
    pub storage_dir: String,
    /// Session pool size; 0 = library default, otherwise at least 2.
    pub max_sessions: u32,
    /// PKCS#11 user type (`CKU_*` number as text, empty = user).
    pub user_type: String,
    /// Skip `C_Login` (tokens without a PIN).
    pub no_login: bool,
    /// Prefix of the key labels Pharos creates.
    pub label_prefix: String,
    /// Existing key labels to load.
    pub load_labels: Vec<String>,
}

impl SigningSettings {
    /// Records every problem with the signing settings.
    pub(crate) fn check(&self, problems: &mut Vec<String>) {
        if self.alg.is_rsa() && self.rsa_key_len < 2048 {
            problems.push("signing.rsa_key_len must be at least 2048".into());
        }
        let fs = &self.filesystem;
        if self.kms == Kms::Filesystem && fs.key_dir.is_empty() && fs.key_file.is_empty() {
            problems
                .push("signing.kms filesystem needs signing.filesystem.key_dir or key_file".into());
        }
        if self.pk_backend == PkBackend::Filesystem && fs.key_dir.is_empty() {
            problems.push("signing.pk_backend filesystem needs signing.filesystem.key_dir".into());
        }
        if self.kms == Kms::Pkcs11 {
            self.pkcs11.check(problems);
            if !matches!(
                self.alg,
                Algorithm::ES256 | Algorithm::ES384 | Algorithm::ES512
            ) {
                // PKCS#11 3.0 (SoftHSM2 2.6) has no ML-DSA or EdDSA mechanism Pharos can use;
                // the token signs ECDSA only.
                problems.push(format!(
                    "signing.alg {} is not available with signing.kms pkcs11: the token signs \
                     ES256, ES384 or ES512",
                    self.alg
                ));
            }
        }
        if !self.db_encryption_key_file.is_empty() && !self.db_encryption_key.is_empty() {
            problems.push(
                "signing.db_encryption_key_file and signing.db_encryption_key: set one, not both"
                    .into(),
            );
        }
    }
}

impl Pkcs11Settings {
    fn check(&self, problems: &mut Vec<String>) {
        if self.module_path.is_empty() {
            problems.push("signing.pkcs11.module_path is required for kms pkcs11".into());
        }
        if self.token_label.is_empty() && self.token_serial.is_empty() && self.token_slot.is_none()
        {
            problems
                .push("signing.pkcs11 needs one of token_label, token_serial or token_slot".into());
        }
        if self.pin.is_empty() && !self.no_login {
            problems.push("signing.pkcs11.pin is required unless no_login is set".into());
        }
        if self.max_sessions == 1 {
            problems.push("signing.pkcs11.max_sessions must be at least 2 when set".into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(s: &SigningSettings) -> Vec<String> {
        let mut p = Vec::new();
        s.check(&mut p);
        p
    }

    #[test]
    fn defaults_are_valid_and_rsa_moduli_checked() {
        let mut s = SigningSettings::default();
        assert!(problems(&s).is_empty());
        s.alg = Algorithm::PS256;
        s.rsa_key_len = 1024;
        assert_eq!(problems(&s).len(), 1);
    }

    #[test]
    fn pkcs11_requirements() {
        let mut s = SigningSettings {
            kms: Kms::Pkcs11,
            ..SigningSettings::default()
        };
        assert_eq!(problems(&s).len(), 3);
        s.pkcs11.module_path = "/usr/lib/softhsm/libsofthsm2.so".into();
        s.pkcs11.token_slot = Some(0);
        s.pkcs11.no_login = true;
        assert!(problems(&s).is_empty());
        s.alg = Algorithm::MlDsa65;
        assert_eq!(
            problems(&s),
            [
                "signing.alg ML-DSA-65 is not available with signing.kms pkcs11: the token signs \
              ES256, ES384 or ES512"
            ]
        );
    }

    #[test]
    fn filesystem_kms_needs_location() {
        let mut s = SigningSettings {
            kms: Kms::Filesystem,
            ..SigningSettings::default()
        };
        assert_eq!(problems(&s).len(), 1);
        s.filesystem.key_file = "/keys/signing.pem".into();
        assert!(problems(&s).is_empty());
    }
}
