//! The `pharos` binary: the README's run command and `check-config`.

use std::process::{Command, Stdio};
use std::time::Duration;

fn pharos() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pharos"));
    // Start from a clean environment so that the developer's SVC_* variables do not leak in.
    for (k, _) in std::env::vars() {
        if k.starts_with("SVC_") {
            c.env_remove(k);
        }
    }
    c
}

#[test]
fn check_config_prints_effective_config_with_secrets_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.yaml");
    std::fs::write(
        &file,
        "entity_id: https://pharos.example.org\nstorage:\n  driver: postgres\n  dsn: postgres://app:s3cret@db/pharos\nserver:\n  prefork: true\n",
    )
    .unwrap();
    let out = pharos()
        .args(["check-config", "--config"])
        .arg(&file)
        .env("SVC_SERVER_PORT", "8443")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("s3cret"), "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["entity_id"], "https://pharos.example.org");
    assert_eq!(v["server"]["port"], 8443);
    assert_eq!(v["storage"]["driver"], "postgres");
}

#[test]
fn configuration_errors_are_reported_together_with_exit_64() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.yaml");
    std::fs::write(&file, "server:\n  prots: 1\nstorage:\n  driver: oracle\n").unwrap();
    let out = pharos()
        .args(["serve", "--config"])
        .arg(&file)
        .env("SVC_API_ADMIN_NOPE", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("server.prots"), "{err}");
    assert!(err.contains("SVC_API_ADMIN_NOPE"), "{err}");
}

/// A TLS certificate that is not there stops `serve` before it creates the database or a
/// signing key (it used to fail after both), as a configuration error naming the file.
#[test]
fn serve_checks_the_files_it_names_before_touching_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.yaml");
    std::fs::write(
        &file,
        "entity_id: https://pharos.example.org\nserver:\n  port: 0\n  tls:\n    enabled: true\n    cert: /nonexistent/tls.crt\n    key: /nonexistent/tls.key\n",
    )
    .unwrap();
    let out = pharos()
        .args(["serve", "--config"])
        .arg(&file)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("server.tls.cert: cannot read /nonexistent/tls.crt"),
        "{err}"
    );
    assert!(!dir.path().join("data").exists(), "nothing created");
}

/// A port other than the default without an `entity_id` leaves the default identifier (and
/// every endpoint URL) on port 7672: `check-config` says so, naming both.
#[test]
fn a_port_without_an_entity_id_is_a_warning_naming_both() {
    let out = pharos()
        .arg("check-config")
        .env("SVC_SERVER_PORT", "17001")
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning: ") && err.contains("17001") && err.contains("http://127.0.0.1:7672"),
        "{err}"
    );
    let out = pharos()
        .arg("check-config")
        .env("SVC_SERVER_PORT", "17001")
        .env("SVC_ENTITY_ID", "http://127.0.0.1:17001")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

/// The README's run command: no configuration file, embedded SQLite, generated keys.
#[test]
fn runs_on_the_embedded_default_without_a_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = pharos()
        .arg("serve")
        .current_dir(dir.path())
        .env("SVC_SERVER_PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/.well-known/openid-federation");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let body = rt.block_on(async {
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        for _ in 0..100 {
            if let Ok(r) = client.get(&url).send().await {
                assert_eq!(
                    r.headers()["content-type"],
                    "application/entity-statement+jwt"
                );
                return r.text().await.unwrap();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("pharos did not come up");
    });
    let _ = child.kill();
    let _ = child.wait();
    let decoded = pharos_shared::jose::decode_unverified(&body).unwrap();
    let jwks: pharos_shared::jose::Jwks =
        serde_json::from_value(decoded.claims["jwks"].clone()).unwrap();
    let v = pharos_shared::jose::verify(&body, &jwks).unwrap();
    assert_eq!(
        v.claims["iss"], "http://127.0.0.1:7672",
        "default entity identifier"
    );
    assert!(
        dir.path().join("data/pharos.db").exists(),
        "embedded SQLite under ./data"
    );
}

/// Runs `pharos policy resolve` with `input` on stdin; returns exit code and parsed stdout.
fn policy_resolve(input: &str) -> (Option<i32>, serde_json::Value) {
    use std::io::Write as _;
    let mut child = pharos()
        .args(["policy", "resolve"])
        .env("SVC_CONFIG_FILE", "/nonexistent/pharos.yaml")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap();
    (out.status.code(), v)
}

#[test]
fn policy_resolve_previews_merged_policy_and_metadata() {
    let (code, v) = policy_resolve(
        r#"{"policies": [{"openid_relying_party": {"scope": {"subset_of": ["openid", "email", "profile"]}}},
                         {"openid_relying_party": {"scope": {"default": ["openid"]}}}],
            "metadata": {"openid_relying_party": {"scope": "openid phone email"}}}"#,
    );
    assert_eq!(code, Some(0), "{v}");
    // `scope` is a space-separated string; subset_of keeps the order of the metadata.
    assert_eq!(
        v["metadata"]["openid_relying_party"]["scope"],
        "openid email"
    );
    assert!(v["merged_policy"]["openid_relying_party"]["scope"]["subset_of"].is_array());

    let (code, v) =
        policy_resolve(r#"{"policies": [{"client_name": {"essential": true}}], "metadata": {}}"#);
    assert_eq!(code, Some(1));
    assert_eq!(v["error"], "invalid_metadata", "{v}");

    let (code, v) = policy_resolve(
        r#"{"policies": [{"x": {"value": "a"}}, {"x": {"value": "b"}}], "metadata": {}}"#,
    );
    assert_eq!(code, Some(1));
    assert_eq!(v["error"], "invalid_policy", "{v}");
    // `except` (an extension Pharos implements): merged as a union, excepted values leave the
    // array; a single excepted value is non-compliant metadata.
    let (code, v) = policy_resolve(
        r#"{"policies": [{"grant_types": {"except": ["implicit"]}}, {"grant_types": {"except": ["password"]}}],
            "metadata": {"grant_types": ["authorization_code", "implicit", "password"]}}"#,
    );
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(
        v["metadata"]["grant_types"],
        serde_json::json!(["authorization_code"])
    );
    assert_eq!(
        v["merged_policy"]["grant_types"]["except"],
        serde_json::json!(["implicit", "password"])
    );
    let (code, v) = policy_resolve(
        r#"{"policies": [{"token_endpoint_auth_method": {"except": ["none"]}}],
            "metadata": {"token_endpoint_auth_method": "none"}}"#,
    );
    assert_eq!(code, Some(1));
    assert_eq!(v["error"], "invalid_metadata", "{v}");
    // Input that is not JSON is not a policy problem, and the message says what it is.
    let (code, v) = policy_resolve("not json");
    assert_eq!(
        (code, v["error"].as_str()),
        (Some(1), Some("invalid_request"))
    );
    let description = v["error_description"].as_str().unwrap_or_default();
    assert!(description.starts_with("the input is not JSON"), "{v}");
}

/// Runs `pharos` with `args`; exit code and stderr.
fn pharos_stderr(args: &[&str]) -> (Option<i32>, String) {
    let out = pharos().args(args).output().unwrap();
    (out.status.code(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn a_mistyped_subcommand_or_flag_gets_a_suggestion_on_its_one_line() {
    for (args, want) in [
        (&["admn"][..], "did you mean 'admin'?"),
        (
            &["admin", "subordinate", "list"],
            "did you mean 'subordinates'?",
        ),
        (&["admin", "subordinates", "lst"], "did you mean 'list'?"),
        (&["check-confg"], "did you mean 'check-config'?"),
    ] {
        let (code, stderr) = pharos_stderr(args);
        assert_eq!(code, Some(64), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}
