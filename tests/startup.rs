//! Start-up while the database is unreachable (issue 22, failing parts): the real binary keeps
//! retrying with a clear log, answers `/healthz` 200 and `/readyz` 503 meanwhile (other paths:
//! 503 in the specification's error format), and serves normally once the database appears —
//! without a restart.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::{Backend, TestDb};

/// A free loopback port (bound, then released for the process under test to take).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Forwards every connection on `port` to `target` (the database) from now on.
async fn proxy(port: u16, target: String) {
    let l = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = l.accept().await {
            let target = target.clone();
            tokio::spawn(async move {
                if let Ok(mut out) = tokio::net::TcpStream::connect(target).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut out).await;
                }
            });
        }
    });
}

async fn status(client: &reqwest::Client, url: &str) -> Option<(u16, String, String)> {
    let r = client.get(url).send().await.ok()?;
    let ct = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let s = r.status().as_u16();
    Some((s, ct, r.text().await.unwrap_or_default()))
}

#[tokio::test]
async fn an_unreachable_database_at_start_is_waited_for() {
    if std::env::var("SVC_TEST_POSTGRES_DSN").is_err() {
        eprintln!("SKIP: SVC_TEST_POSTGRES_DSN is not set");
        return;
    }
    let db = TestDb::new(Backend::Postgres).await;
    let url = url::Url::parse(&db.dsn).unwrap();
    let target = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap_or(5432));
    let proxy_port = free_port();
    let mut via_proxy = url.clone();
    via_proxy.set_host(Some("127.0.0.1")).unwrap();
    via_proxy.set_port(Some(proxy_port)).unwrap();
    let port = free_port();
    let log = db.dir.path().join("stderr.log");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pharos"));
    for (k, _) in std::env::vars() {
        if k.starts_with("SVC_") {
            cmd.env_remove(k);
        }
    }
    let mut child = cmd
        .arg("serve")
        .env("SVC_STORAGE_DRIVER", "postgres")
        .env("SVC_STORAGE_DSN", via_proxy.as_str())
        .env("SVC_SERVER_IP_LISTEN", "127.0.0.1")
        .env("SVC_SERVER_PORT", port.to_string())
        .env("SVC_ENTITY_ID", format!("http://127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let base = format!("http://127.0.0.1:{port}");
    // Waiting: alive, not ready, everything else a 503 in the spec's error format.
    let alive = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            if let Some((200, _, _)) = status(&client, &format!("{base}/healthz")).await {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(alive.is_ok(), "never answered /healthz");
    let (s, _, _) = status(&client, &format!("{base}/readyz")).await.unwrap();
    assert_eq!(s, 503);
    let (s, ct, body) = status(&client, &format!("{base}/.well-known/openid-federation"))
        .await
        .unwrap();
    assert_eq!((s, ct.as_str()), (503, "application/json"), "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"], "temporarily_unavailable");

    // The database appears: ready without a restart, and the Entity Configuration is served.
    proxy(proxy_port, target).await;
    let ready = tokio::time::timeout(Duration::from_secs(90), async {
        loop {
            if let Some((200, _, _)) = status(&client, &format!("{base}/readyz")).await {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    assert!(ready.is_ok(), "never became ready");
    let (s, ct, _) = status(&client, &format!("{base}/.well-known/openid-federation"))
        .await
        .unwrap();
    assert_eq!((s, ct.as_str()), (200, "application/entity-statement+jwt"));
    let pid = child.id().to_string();
    let _ = Command::new("kill").args(["-TERM", &pid]).status();
    // Waited for off the test's runtime: the proxy above runs on it, and a shutdown that
    // still talks to the database needs it (a blocking wait here once held both for ever).
    let stopped = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || child.wait()),
    )
    .await;
    if stopped.is_err() {
        let _ = Command::new("kill").args(["-KILL", &pid]).status();
    }
    assert!(
        stopped.is_ok(),
        "pharos did not stop within 60 s of SIGTERM"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("database unreachable"), "{text}");
}
