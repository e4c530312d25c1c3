//! What `pharos serve` writes to its logs (issue 3, acceptance 6): JSON lines that parse, an
//! access line per request with its request id, an audit line per admin write naming the actor,
//! and never a password — checked on the real binary's stderr and log file.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

const PASSWORD: &str = "Sup3r-Secret-Pa55word";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

#[tokio::test]
async fn json_logs_parse_and_never_contain_the_password() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let stderr_path = dir.path().join("stderr.log");
    let log_dir = dir.path().join("logs");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pharos"));
    for (k, _) in std::env::vars() {
        if k.starts_with("SVC_") || k == "RUST_LOG" {
            cmd.env_remove(k);
        }
    }
    let mut child = cmd
        .arg("serve")
        .env("SVC_ENTITY_ID", format!("http://127.0.0.1:{port}"))
        .env("SVC_SERVER_IP_LISTEN", "127.0.0.1")
        .env("SVC_SERVER_PORT", port.to_string())
        .env("SVC_STORAGE_DATA_DIR", dir.path().join("data"))
        .env("SVC_LOGGING_INTERNAL_LEVEL", "debug")
        .env("SVC_LOGGING_INTERNAL_STDERR_FORMAT", "json")
        .env("SVC_LOGGING_INTERNAL_DIR", &log_dir)
        .env("SVC_LOGGING_ACCESS_STDERR", "true")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();

    let base = format!("http://127.0.0.1:{port}");
    let c = reqwest::Client::builder().no_proxy().build().unwrap();
    let mut up = false;
    for _ in 0..100 {
        if c.get(format!("{base}/healthz")).send().await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        up,
        "pharos did not start: {}",
        std::fs::read_to_string(&stderr_path).unwrap()
    );

    let users = format!("{base}/api/v1/admin/users");
    let r = c
        .post(&users)
        .header("content-type", "application/json")
        .body(format!(r#"{{"username":"ops","password":"{PASSWORD}"}}"#))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let r = c
        .get(&users)
        .basic_auth("ops", Some(PASSWORD))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let request_id = r.headers()["x-request-id"].to_str().unwrap().to_string();
    let r = c
        .get(&users)
        .basic_auth("ops", Some("wrong"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = c
        .put(format!("{users}/ops"))
        .basic_auth("ops", Some(PASSWORD))
        .header("content-type", "application/json")
        .body(format!(r#"{{"password":"{PASSWORD}-2"}}"#))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    // Graceful stop on SIGTERM.
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(exit.success(), "exit status {exit:?}");

    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    let file = std::fs::read_to_string(log_dir.join("pharos.log")).unwrap();
    for (name, text) in [("stderr", &stderr), ("pharos.log", &file)] {
        assert!(!text.contains(PASSWORD), "password in {name}:\n{text}");
        assert!(
            !text.contains("b3BzOlN1cDNy"),
            "Basic credentials in {name}"
        );
        assert!(!text.contains("$argon2id$"), "password hash in {name}");
    }
    let lines = json_lines(&stderr);
    assert!(json_lines(&file).len() > 1, "file log is empty");
    let access: Vec<&Value> = lines
        .iter()
        .filter(|l| l["target"] == "pharos::access")
        .collect();
    assert!(
        access
            .iter()
            .any(|l| l["fields"]["request_id"] == request_id.as_str()
                && l["fields"]["path"] == "/api/v1/admin/users"
                && l["fields"]["status"] == 200),
        "no access line for {request_id}:\n{stderr}"
    );
    assert!(
        lines.iter().any(|l| l["target"] == "pharos::audit"
            && l["fields"]["actor"] == "ops"
            && l["fields"]["entity"] == "1"
            && l["fields"]["method"] == "PUT"),
        "no audit line naming the actor and the entity:\n{stderr}"
    );
    assert!(
        !file.contains("pharos::access"),
        "access lines leaked into the internal log"
    );
}
