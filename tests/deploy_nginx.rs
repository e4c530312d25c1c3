//! `deploy/nginx/pharos.conf` in front of a real Pharos: the public name serves the federation
//! over TLS and refuses the Admin API, plain HTTP redirects, and a request that came through
//! the admin proxy is not "local" for the first-user bootstrap (so the documentation's advice
//! to create the first user on the host holds).
//!
//! Needs nginx; without it the test prints a notice and passes, unless
//! `PHAROS_REQUIRE_NGINX=1` (set by `.ci/run`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::support::{Backend, Pharos, TestDb};
use crate::tls::{ca, client, write_leaf};

fn nginx() -> Option<PathBuf> {
    let found = ["nginx", "/usr/sbin/nginx"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| Command::new(p).arg("-v").output().is_ok());
    if found.is_none() {
        assert!(
            std::env::var("PHAROS_REQUIRE_NGINX").map_or(true, |v| v != "1"),
            "nginx is required (PHAROS_REQUIRE_NGINX=1): apt-get install nginx-light"
        );
        eprintln!("NOTICE: nginx not found; the nginx front-end test is skipped");
    }
    found
}

/// `N` distinct free ports. The listeners are held until all are bound: a port released at
/// once may be handed out again by the next bind, and nginx given the same port for its
/// plain and its TLS listener refuses to start ("no ssl_certificate is defined").
fn free_ports<const N: usize>() -> [u16; N] {
    let held: [std::net::TcpListener; N] =
        std::array::from_fn(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap());
    held.map(|l| l.local_addr().unwrap().port())
}

/// Replaces `from` by `to` in `text`, insisting that `from` is there: a change of the example
/// must show up here instead of silently testing something else.
fn swap(text: String, from: &str, to: &str) -> String {
    assert!(
        text.contains(from),
        "deploy/nginx/pharos.conf lacks {from:?}"
    );
    text.replace(from, to)
}

/// The example with ports, addresses and file paths of this test; the admin listener admits
/// loopback (instead of the management network) so the test can reach it.
fn adapted(main: u16, admin: u16, ports: [u16; 3], dir: &Path) -> String {
    let [http, https, internal] = ports;
    let d = dir.display();
    let conf = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/nginx/pharos.conf"),
    )
    .unwrap();
    let mut conf = swap(
        conf,
        "server 127.0.0.1:7672;",
        &format!("server 127.0.0.1:{main};"),
    );
    conf = swap(
        conf,
        "server 127.0.0.1:7673;",
        &format!("server 127.0.0.1:{admin};"),
    );
    conf = swap(conf, "listen 80;", &format!("listen 127.0.0.1:{http};"));
    conf = swap(conf, "listen [::]:80;", "");
    conf = swap(
        conf,
        "listen 443 ssl http2;",
        &format!("listen 127.0.0.1:{https} ssl http2;"),
    );
    conf = swap(conf, "listen [::]:443 ssl http2;", "");
    conf = swap(
        conf,
        "listen 10.0.0.5:8443 ssl http2;",
        &format!("listen 127.0.0.1:{internal} ssl http2;"),
    );
    conf = swap(conf, "allow 10.0.0.0/8;", "allow 127.0.0.1;");
    conf = swap(conf, "root /var/www/acme;", &format!("root {d};"));
    for path in [
        "/etc/letsencrypt/live/ta.example.org/fullchain.pem",
        "/etc/pharos/tls/admin-fullchain.pem",
    ] {
        conf = swap(conf, path, &format!("{d}/cert.pem"));
    }
    for path in [
        "/etc/letsencrypt/live/ta.example.org/privkey.pem",
        "/etc/pharos/tls/admin-privkey.pem",
    ] {
        conf = swap(conf, path, &format!("{d}/key.pem"));
    }
    conf
}

/// nginx in the foreground, one process, everything under `dir`.
fn start_nginx(bin: &Path, dir: &Path, site: &str) -> Child {
    std::fs::write(dir.join("pharos.conf"), site).unwrap();
    let d = dir.display();
    let main = format!(
        "pid {d}/nginx.pid;\nerror_log stderr;\nevents {{}}\nhttp {{\n  access_log off;\n  \
         client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  \
         fastcgi_temp_path {d}/fcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n  \
         include {d}/pharos.conf;\n}}\n"
    );
    std::fs::write(dir.join("nginx.conf"), main).unwrap();
    Command::new(bin)
        .arg("-c")
        .arg(dir.join("nginx.conf"))
        .arg("-p")
        .arg(dir)
        .args(["-g", "daemon off; master_process off;"])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn nginx_example_terminates_tls_hides_the_admin_api_and_is_not_local() {
    let Some(bin) = nginx() else { return };
    let db = TestDb::new(Backend::Sqlite).await;
    let p = Pharos::start_separate_admin(
        &db,
        |s| s.server.trusted_proxies = vec!["127.0.0.1".into(), "::1".into()],
        reqwest::Client::builder().no_proxy().build().unwrap(),
    )
    .await;
    let main = p.settings.server.port;
    let admin = p.settings.api.admin.port;

    let dir = tempfile::tempdir().unwrap();
    let authority = ca("nginx test CA");
    write_leaf(&authority, dir.path());
    let ports = free_ports::<3>();
    let site = adapted(main, admin, ports, dir.path());
    let mut nginx = Kill(start_nginx(&bin, dir.path(), &site));
    let [http, https, internal] = ports;

    let c = client(&authority);
    let public = |path: &str| format!("https://localhost:{https}{path}");
    let mut up = false;
    for _ in 0..100 {
        if let Some(status) = nginx.0.try_wait().unwrap() {
            panic!("nginx exited: {status}");
        }
        if c.get(public("/healthz")).send().await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(up, "nginx did not come up");

    // The federation through TLS, unchanged.
    let r = c
        .get(public("/.well-known/openid-federation"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["content-type"],
        "application/entity-statement+jwt"
    );
    let direct = p.get("/.well-known/openid-federation").await.text().await;
    assert_eq!(r.text().await.unwrap(), direct.unwrap());

    // The Admin API and the metrics are not on the public name.
    for path in ["/api/v1/admin/entity-configuration", "/metrics"] {
        let r = c.get(public(path)).send().await.unwrap();
        assert_eq!(r.status(), 404, "{path}");
        // nginx's own page: refused in front, whatever port the Admin API is on behind.
        let body = r.text().await.unwrap();
        assert!(
            body.contains("<center>nginx"),
            "{path} reached Pharos: {body}"
        );
    }

    // Plain HTTP redirects to HTTPS.
    let no_redirects = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = no_redirects
        .get(format!(
            "http://localhost:{http}/.well-known/openid-federation"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 308);
    assert_eq!(
        r.headers()["location"],
        "https://localhost/.well-known/openid-federation"
    );

    // Before the first user: through the admin proxy the request is not local (401) …
    let users = format!("https://localhost:{internal}/api/v1/admin/users");
    let r = c.get(&users).send().await.unwrap();
    assert_eq!(r.status(), 401, "{:?}", r.text().await);
    // … while the same request on the host itself is admitted.
    let r = p
        .client
        .get(format!("http://127.0.0.1:{admin}/api/v1/admin/users"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}
