//! The deployment kit in `deploy/`: every example configuration passes the real
//! `pharos check-config`, and the systemd unit passes `systemd-analyze verify`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `pharos` with none of the developer's `SVC_*` variables, so only the file speaks.
fn pharos() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pharos"));
    for (k, _) in std::env::vars() {
        if k.starts_with("SVC_") {
            c.env_remove(k);
        }
    }
    c
}

fn example_configs() -> Vec<PathBuf> {
    let dir = repo().join("deploy/config");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_example_configuration_passes_check_config() {
    let files = example_configs();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for role in [
        "all-in-one.yaml",
        "anchor.yaml",
        "intermediate.yaml",
        "resolver.yaml",
        "trust-mark-issuer.yaml",
    ] {
        assert!(names.iter().any(|n| n == role), "{role} missing: {names:?}");
    }
    for file in &files {
        assert_eq!(
            file.extension().and_then(|e| e.to_str()),
            Some("yaml"),
            "{}: only YAML configurations belong in deploy/config",
            file.display()
        );
        let creds = tempfile::tempdir().unwrap();
        let file = &with_credentials(file, creds.path());
        let out = pharos()
            .args(["check-config", "--config"])
            .arg(file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{} is refused by pharos check-config:\n{stderr}",
            file.display()
        );
        assert!(
            stderr.trim().is_empty(),
            "{}: warnings from check-config:\n{stderr}",
            file.display()
        );
        let effective: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let entity_id = effective["entity_id"].as_str().unwrap_or_default();
        assert!(
            entity_id.starts_with("https://") && entity_id.ends_with(".example.org"),
            "{}: the file's entity_id was not applied: {entity_id}",
            file.display()
        );
    }
}

/// Where the examples expect systemd's credentials (TLS certificates and keys).
const CREDENTIALS: &str = "/run/credentials/pharos.service/";

/// `file` as it runs on a host that has its credentials: a copy in `dir` whose credential
/// paths point into `dir`, which holds a self-signed certificate and key under each name the
/// file uses (`check-config` reads and parses them).
fn with_credentials(file: &Path, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(file).unwrap();
    if !text.contains(CREDENTIALS) {
        return file.to_path_buf();
    }
    let cert = rcgen::generate_simple_self_signed(vec!["pharos.example.org".into()]).unwrap();
    for name in ["tls", "admin-tls"] {
        std::fs::write(dir.join(format!("{name}.crt")), cert.cert.pem()).unwrap();
        std::fs::write(
            dir.join(format!("{name}.key")),
            cert.signing_key.serialize_pem(),
        )
        .unwrap();
    }
    let copy = dir.join(file.file_name().unwrap());
    let here = format!("{}/", dir.display());
    std::fs::write(&copy, text.replace(CREDENTIALS, &here)).unwrap();
    copy
}

/// The TLS files a configuration names must exist and parse: `check-config` says which do not
/// (exit 64) instead of passing a configuration `serve` cannot start with (issue 32).
#[test]
fn check_config_refuses_missing_or_broken_tls_files() {
    let file = repo().join("deploy/config/all-in-one.yaml");
    let out = pharos()
        .args(["check-config", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("server.tls.cert: cannot read /run/credentials/pharos.service/tls.crt"),
        "{err}"
    );
    assert!(err.contains("api.admin.tls.key"), "{err}");

    // A certificate whose key is another certificate's: named too.
    let dir = tempfile::tempdir().unwrap();
    let copy = with_credentials(&file, dir.path());
    let other = rcgen::generate_simple_self_signed(vec!["other.example.org".into()]).unwrap();
    std::fs::write(
        dir.path().join("tls.key"),
        other.signing_key.serialize_pem(),
    )
    .unwrap();
    std::fs::write(dir.path().join("admin-tls.crt"), "not a certificate").unwrap();
    let out = pharos()
        .args(["check-config", "--config"])
        .arg(&copy)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("server.tls: "), "{err}");
    assert!(err.contains("api.admin.tls.cert: "), "{err}");
}

/// `check-config` really refuses a broken file, so the test above can fail.
#[test]
fn check_config_refuses_a_misspelt_key() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(repo().join("deploy/config/anchor.yaml")).unwrap();
    let broken = dir.path().join("anchor.yaml");
    std::fs::write(&broken, text.replace("trusted_proxies", "trusted_proxys")).unwrap();
    let out = pharos()
        .args(["check-config", "--config"])
        .arg(&broken)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("server.trusted_proxys"), "{err}");
}

/// `systemd-analyze verify` on the unit, with `ExecStart` pointing at the binary just built
/// (verify insists that the executable exists). Skipped where systemd-analyze is missing.
#[test]
fn systemd_unit_verifies() {
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: systemd-analyze is not installed");
        return;
    }
    let unit = std::fs::read_to_string(repo().join("deploy/systemd/pharos.service")).unwrap();
    for needed in [
        "ProtectSystem=strict",
        "NoNewPrivileges=yes",
        "DynamicUser=yes",
        "StateDirectory=pharos",
    ] {
        assert!(unit.contains(needed), "unit lacks {needed}");
    }
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("pharos.service");
    let unit = unit
        .replace("/usr/local/bin/pharos", env!("CARGO_BIN_EXE_pharos"))
        .replace("#LoadCredential=", "LoadCredential=");
    std::fs::write(&copy, unit).unwrap();
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&copy)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "systemd-analyze verify failed:\n{err}"
    );
    // Unknown keys and bad values are only warnings for systemd; they are errors here.
    assert!(
        err.trim().is_empty(),
        "systemd-analyze verify warns:\n{err}"
    );
}
