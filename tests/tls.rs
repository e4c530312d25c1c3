//! TLS listeners: the separate admin port with certificate reload on SIGHUP (issue 3,
//! acceptance 3), and the main port (`server.tls`) with its plain-HTTP redirect.

use std::path::Path;
use std::time::Duration;

use crate::support::{Backend, Pharos, TestDb};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};

pub(crate) fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

/// A `localhost` server certificate issued by `ca`, written to `dir` as cert.pem / key.pem.
pub(crate) fn write_leaf(ca: &CertifiedIssuer<'static, KeyPair>, dir: &Path) {
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&key, ca)
        .unwrap();
    std::fs::write(dir.join("cert.pem"), cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), key.serialize_pem()).unwrap();
}

/// A client that trusts only `ca` and opens a new connection per request (so each request
/// performs a handshake and sees the certificate currently served).
pub(crate) fn client(ca: &CertifiedIssuer<'static, KeyPair>) -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(0)
        .tls_certs_only([reqwest::Certificate::from_pem(ca.pem().as_bytes()).unwrap()])
        .build()
        .unwrap()
}

pub(crate) fn sighup() {
    let status = std::process::Command::new("kill")
        .args(["-HUP", &std::process::id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

async fn reaches(c: &reqwest::Client, url: &str) -> bool {
    c.get(url).send().await.is_ok_and(|r| r.status() == 200)
}

#[tokio::test]
async fn tls_admin_port_serves_admin_only_and_reloads_its_certificate_on_sighup() {
    let db = TestDb::new(Backend::Sqlite).await;
    let certs = tempfile::tempdir().unwrap();
    let ca1 = ca("Pharos test CA 1");
    write_leaf(&ca1, certs.path());
    let dir = certs.path().to_path_buf();
    let p = Pharos::start_separate_admin(
        &db,
        |s| {
            s.api.admin.tls.enabled = true;
            s.api.admin.tls.cert = dir.join("cert.pem").display().to_string();
            s.api.admin.tls.key = dir.join("key.pem").display().to_string();
        },
        client(&ca1),
    )
    .await;
    let admin_url = p.url("/api/v1/admin/trust-anchors");
    assert!(admin_url.starts_with("https://localhost:"), "{admin_url}");
    let r = p.client.get(&admin_url).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap(), "[]");
    assert!(reaches(&p.client, &p.url("/api/v1/admin/openapi.json")).await);
    // Plain HTTP on the TLS port fails; the main port does not serve the Admin API.
    let plain = reqwest::Client::builder().no_proxy().build().unwrap();
    let http_url = admin_url.replace("https://", "http://");
    assert!(!reaches(&plain, &http_url).await);
    for path in [
        "/api/v1/admin/trust-anchors",
        "/api/v1/admin/openapi.json",
        "/admin/api/v1/docs",
    ] {
        let r = plain.get(p.main_url(path)).send().await.unwrap();
        assert_eq!(r.status(), 404, "{path} on the main port");
    }
    assert!(reaches(&plain, &p.main_url("/.well-known/openid-federation")).await);
    // Unknown admin path on the admin port: JSON 404.
    let r = p
        .client
        .get(p.url("/api/v1/admin/nope"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);

    // Broken files + SIGHUP: the old certificate stays in use.
    std::fs::write(certs.path().join("cert.pem"), "not a certificate").unwrap();
    sighup();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        reaches(&p.client, &admin_url).await,
        "old certificate dropped"
    );

    // A new certificate from another CA + SIGHUP: picked up without a restart.
    let ca2 = ca("Pharos test CA 2");
    write_leaf(&ca2, certs.path());
    sighup();
    let new_client = client(&ca2);
    let mut switched = false;
    for _ in 0..50 {
        if reaches(&new_client, &admin_url).await {
            switched = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(switched, "new certificate not served after SIGHUP");
    assert!(
        !reaches(&p.client, &admin_url).await,
        "old CA still accepted"
    );
    p.stop().await;
}

#[tokio::test]
async fn main_port_serves_https_and_plain_http_is_redirected() {
    use pharos::app::{App, Listeners};
    use pharos_shared::config::Settings;
    use pharos_shared::time::SystemClock;
    use std::sync::Arc;

    let db = TestDb::new(Backend::Sqlite).await;
    let certs = tempfile::tempdir().unwrap();
    let ca1 = ca("Pharos test CA main");
    write_leaf(&ca1, certs.path());
    let main = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let redirect = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (port, rport) = (
        main.local_addr().unwrap().port(),
        redirect.local_addr().unwrap().port(),
    );
    let mut s = Settings::default();
    s.entity_id = format!("https://localhost:{port}");
    s.server.ip_listen = "127.0.0.1".into();
    s.server.port = port;
    s.server.tls.enabled = true;
    s.server.tls.redirect_http = true;
    s.server.tls.cert = certs.path().join("cert.pem").display().to_string();
    s.server.tls.key = certs.path().join("key.pem").display().to_string();
    db.configure(&mut s);
    let listeners = Listeners {
        main: Some(main),
        admin: None,
        redirect: Some(redirect),
    };
    let app = App::start(s, Arc::new(SystemClock), listeners)
        .await
        .unwrap();

    let r = client(&ca1)
        .get(format!(
            "https://localhost:{port}/.well-known/openid-federation"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["content-type"],
        "application/entity-statement+jwt"
    );
    let plain = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let http_main = format!("http://localhost:{port}/.well-known/openid-federation");
    assert!(
        plain.get(&http_main).send().await.is_err(),
        "plain HTTP on the TLS port"
    );
    let r = plain
        .get(format!(
            "http://localhost:{rport}/fetch?sub=https%3A%2F%2Fa"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 308);
    assert_eq!(
        r.headers()["location"],
        format!("https://localhost:{port}/fetch?sub=https%3A%2F%2Fa").as_str()
    );
    app.shutdown().await;
}
