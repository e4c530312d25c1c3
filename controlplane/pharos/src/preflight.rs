//! The files the configuration names, read and parsed before anything is written: the TLS
//! certificates and keys (`server.tls`, `api.admin.tls`), a static signing key
//! (`signing.filesystem.key_file`) and the database encryption key
//! (`signing.db_encryption_key_file`).
//!
//! `pharos check-config` reports what this finds, and `pharos serve` stops on it before it
//! creates the database or generates a signing key: a path typed wrong must not leave a half
//! set-up instance behind (issue 32).

use std::path::Path;

use pharos_shared::config::{Kms, Settings};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Every problem with the files the configuration names, each naming its setting and file.
pub fn problems(settings: &Settings) -> Vec<String> {
    let mut found = Vec::new();
    let tls = &settings.server.tls;
    if tls.enabled {
        check_tls("server.tls", &tls.cert, &tls.key, &mut found);
    }
    let admin = &settings.api.admin;
    if admin.enabled && admin.tls.enabled {
        check_tls("api.admin.tls", &admin.tls.cert, &admin.tls.key, &mut found);
    }
    let signing = &settings.signing;
    if signing.kms == Kms::Filesystem && !signing.filesystem.key_file.is_empty() {
        let path = Path::new(&signing.filesystem.key_file);
        if let Err(e) = pharos_controlplane::keys::kms::read_pem_key(path, signing.alg) {
            found.push(format!("signing.filesystem.key_file: {e}"));
        }
    }
    if let Err(e) = pharos_controlplane::keys::sealing::from_settings(signing) {
        found.push(e.to_string());
    }
    found
}

/// The certificate chain and key parse and belong together (what the listener will load).
fn check_tls(scope: &str, cert: &str, key: &str, found: &mut Vec<String>) {
    let certs = match read(scope, "cert", cert, found) {
        Some(pem) => match CertificateDer::pem_slice_iter(&pem).collect::<Result<Vec<_>, _>>() {
            Ok(c) if !c.is_empty() => Some(c),
            Ok(_) => {
                found.push(format!("{scope}.cert: {cert} holds no PEM certificate"));
                None
            }
            Err(e) => {
                found.push(format!(
                    "{scope}.cert: {cert} is not a PEM certificate chain: {e}"
                ));
                None
            }
        },
        None => None,
    };
    let private = match read(scope, "key", key, found) {
        Some(pem) => match PrivateKeyDer::from_pem_slice(&pem) {
            Ok(k) => Some(k),
            Err(e) => {
                found.push(format!("{scope}.key: {key} is not a PEM private key: {e}"));
                None
            }
        },
        None => None,
    };
    if let (Some(certs), Some(private)) = (certs, private) {
        crate::http::tls::install_crypto_provider();
        if let Err(e) = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(certs, private)
        {
            found.push(format!("{scope}: {cert} / {key} cannot be used: {e}"));
        }
    }
}

fn read(scope: &str, member: &str, path: &str, found: &mut Vec<String>) -> Option<Vec<u8>> {
    match std::fs::read(path) {
        Ok(b) => Some(b),
        Err(e) => {
            found.push(format!("{scope}.{member}: cannot read {path}: {e}"));
            None
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn with_tls(cert: &str, key: &str) -> Settings {
        let mut s = Settings::default();
        s.server.tls.enabled = true;
        s.server.tls.cert = cert.into();
        s.server.tls.key = key.into();
        s
    }

    #[test]
    fn missing_and_unparsable_files_are_named_with_their_setting() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.pem").display().to_string();
        let p = problems(&with_tls(&missing, &missing));
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].starts_with("server.tls.cert: cannot read"), "{p:?}");
        assert!(p[1].starts_with("server.tls.key: cannot read"), "{p:?}");

        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not pem").unwrap();
        let junk = junk.display().to_string();
        let p = problems(&with_tls(&junk, &junk));
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].contains("holds no PEM certificate"), "{p:?}");
        assert!(p[1].contains("is not a PEM private key"), "{p:?}");

        let mut s = Settings::default();
        s.signing.db_encryption_key_file = missing.clone();
        let p = problems(&s);
        assert!(
            p.len() == 1 && p[0].starts_with("signing.db_encryption_key_file"),
            "{p:?}"
        );

        let mut s = Settings::default();
        s.signing.kms = Kms::Filesystem;
        s.signing.filesystem.key_file = junk;
        let p = problems(&s);
        assert!(
            p.len() == 1 && p[0].starts_with("signing.filesystem.key_file"),
            "{p:?}"
        );
    }

    #[test]
    fn the_defaults_name_no_files() {
        assert!(problems(&Settings::default()).is_empty());
    }
}
