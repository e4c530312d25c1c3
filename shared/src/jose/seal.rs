//! Private keys sealed for storage at rest (`signing.db_encryption_key_file` or
//! `signing.db_encryption_key`): a copy of the database, a backup or a replica's disk then
//! gives no signing key without the key held apart from it.
//!
//! A sealed key is a compact JWE (RFC 7516, `alg: dir`, `enc: A256GCM`): a standard,
//! authenticated format that josekit already implements. Its protected header — covered by the
//! authentication tag — names the signing key it holds (`pharos_kid`), so a sealed key copied
//! onto another row does not open there, and the encryption key (`kid`: a digest of it), so a
//! wrong key is reported as such rather than as a garbled key.

use josekit::jwe::{self, Dir, JweHeader};
use sha2::Digest;

use crate::{Error, Result};

/// Header member naming the signing key a sealed key holds.
const HOLDS: &str = "pharos_kid";

/// The database encryption key.
pub struct Sealer {
    key: [u8; 32],
    id: String,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer").field("id", &self.id).finish()
    }
}

impl Sealer {
    /// 32 bytes, given raw, as 64 hex digits or in base64 (standard or URL-safe, padded or
    /// not); surrounding whitespace is ignored (files end with a newline).
    pub fn parse(material: &[u8]) -> std::result::Result<Self, String> {
        use base64::Engine;
        let key: Vec<u8> = if material.len() == 32 {
            material.to_vec()
        } else {
            let text = std::str::from_utf8(material)
                .map_err(|_| "not 32 raw bytes, hex or base64".to_string())?
                .trim();
            let hex = (text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()))
                .then(|| {
                    (0..32)
                        .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16))
                        .collect::<std::result::Result<Vec<u8>, _>>()
                        .ok()
                })
                .flatten();
            let b64 = || {
                let t = text.trim_end_matches('=');
                base64::engine::general_purpose::STANDARD_NO_PAD
                    .decode(t)
                    .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(t))
                    .ok()
            };
            hex.or_else(b64)
                .ok_or_else(|| "not 32 raw bytes, hex or base64".to_string())?
        };
        let key: [u8; 32] = key
            .try_into()
            .map_err(|k: Vec<u8>| format!("{} bytes, need 32 (256 bits)", k.len()))?;
        let digest = sha2::Sha256::digest(key);
        let id = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
        Ok(Self { key, id })
    }

    /// A short, non-secret name of this key (in errors and logs).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// `pem`, the private key of signing key `kid`, sealed.
    pub fn seal(&self, kid: &str, pem: &str) -> Result<String> {
        let mut header = JweHeader::new();
        header.set_content_encryption("A256GCM");
        header.set_key_id(&self.id);
        header
            .set_claim(HOLDS, Some(kid.into()))
            .map_err(|e| Error::Key(format!("sealing key {kid}: {e}")))?;
        let encrypter = Dir
            .encrypter_from_bytes(self.key)
            .map_err(|e| Error::Key(format!("sealing key {kid}: {e}")))?;
        jwe::serialize_compact(pem.as_bytes(), &header, &encrypter)
            .map_err(|e| Error::Key(format!("sealing key {kid}: {e}")))
    }

    /// The private key of signing key `kid` from its sealed form.
    pub fn open(&self, kid: &str, sealed: &str) -> Result<String> {
        let refuse = |why: String| {
            Error::Key(format!(
                "the private key of {kid} does not open with the configured \
                 database encryption key {}: {why}",
                self.id
            ))
        };
        let decrypter = Dir
            .decrypter_from_bytes(self.key)
            .map_err(|e| refuse(e.to_string()))?;
        let (payload, header) = jwe::deserialize_compact(sealed, &decrypter).map_err(|_| {
            let sealed_with = sealed_key_id(sealed).unwrap_or_else(|| "?".into());
            refuse(format!("it was sealed with key {sealed_with}"))
        })?;
        if header.claims_set().get(HOLDS).and_then(|v| v.as_str()) != Some(kid) {
            return Err(refuse("it was sealed for another key".into()));
        }
        String::from_utf8(payload).map_err(|_| refuse("not a PEM".into()))
    }
}

/// Whether a stored private key is sealed (a compact JWE) rather than a plain PEM.
pub fn is_sealed(stored: &str) -> bool {
    !stored.trim_start().starts_with("-----BEGIN") && stored.split('.').count() == 5
}

/// The `kid` of a sealed key's header (which database key sealed it), without opening it.
fn sealed_key_id(sealed: &str) -> Option<String> {
    use base64::Engine;
    let header = sealed.split('.').next()?;
    let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header)
        .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&json).ok()?;
    v.get("kid")?.as_str().map(str::to_owned)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const PEM: &str = "-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\n";

    #[test]
    fn key_material_forms() {
        let hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
        let a = Sealer::parse(format!("{hex}\n").as_bytes()).unwrap();
        let b = Sealer::parse(b"ABEiM0RVZneImaq7zN3u/wARIjNEVWZ3iJmqu8zd7v8=\n").unwrap();
        assert_eq!(a.key, b.key);
        assert_eq!(a.id(), b.id());
        assert!(Sealer::parse(&[7u8; 32]).is_ok());
        assert!(
            Sealer::parse(b"c2hvcnQ")
                .unwrap_err()
                .contains("5 bytes, need 32")
        );
        assert!(
            Sealer::parse(b"short!")
                .unwrap_err()
                .contains("not 32 raw bytes")
        );
        assert!(Sealer::parse(&[0xffu8; 40]).is_err());
    }

    #[test]
    fn sealed_keys_open_only_with_their_key_and_for_their_kid() {
        let s = Sealer::parse(&[1u8; 32]).unwrap();
        let sealed = s.seal("k1", PEM).unwrap();
        assert!(is_sealed(&sealed) && !is_sealed(PEM));
        assert!(!sealed.contains("PRIVATE"));
        assert_eq!(s.open("k1", &sealed).unwrap(), PEM);
        let e = s.open("k2", &sealed).unwrap_err().to_string();
        assert!(e.contains("sealed for another key"), "{e}");
        let other = Sealer::parse(&[2u8; 32]).unwrap();
        let e = other.open("k1", &sealed).unwrap_err().to_string();
        assert!(e.contains(&format!("sealed with key {}", s.id())), "{e}");
        // Two seals of one key differ (fresh IV each time).
        assert_ne!(sealed, s.seal("k1", PEM).unwrap());
    }
}
