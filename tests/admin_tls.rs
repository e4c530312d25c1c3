//! Separate admin port over TLS, certificate reload on SIGHUP (issue 3, acceptance 3).

use std::path::Path;
use std::time::Duration;

use crate::support::{Backend, Pharos, TestDb};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

/// A `localhost` server certificate issued by `ca`, written to `dir` as cert.pem / key.pem.
fn write_leaf(ca: &CertifiedIssuer<'static, KeyPair>, dir: &Path) {
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
fn client(ca: &CertifiedIssuer<'static, KeyPair>) -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(0)
        .tls_certs_only([reqwest::Certificate::from_pem(ca.pem().as_bytes()).unwrap()])
        .build()
        .unwrap()
}

fn sighup() {
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
