//! The database encryption key of the configuration (`signing.db_encryption_key_file` or
//! `signing.db_encryption_key`), read once at start; sealing itself is
//! [`pharos_shared::jose::seal`].

use pharos_shared::config::SigningSettings;
use pharos_shared::jose::seal::Sealer;

use crate::error::{Error, Result};

/// The configured key, if any: read from the file, or taken from the setting.
pub fn from_settings(s: &SigningSettings) -> Result<Option<Sealer>> {
    let bad = |what: &str, e: String| Error::Internal(format!("{what}: {e}"));
    if !s.db_encryption_key_file.is_empty() {
        let path = &s.db_encryption_key_file;
        let raw = std::fs::read(path)
            .map_err(|e| bad("signing.db_encryption_key_file", format!("{path}: {e}")))?;
        return Sealer::parse(&raw)
            .map(Some)
            .map_err(|e| bad("signing.db_encryption_key_file", format!("{path}: {e}")));
    }
    if !s.db_encryption_key.is_empty() {
        return Sealer::parse(s.db_encryption_key.expose().as_bytes())
            .map(Some)
            .map_err(|e| bad("signing.db_encryption_key", e));
    }
    Ok(None)
}
