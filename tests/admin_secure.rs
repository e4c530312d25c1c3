//! A fresh instance does not hand its Admin API to strangers (issue 22): bootstrap only from
//! loopback or with the start-up token, cross-site writes refused, failed logins limited, the
//! authenticated user is the audit actor, security headers on both ports.

use std::net::IpAddr;

use crate::support::{Backend, Pharos, TestDb, backends, non_loopback_address};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// `path` of `p`'s admin API reached through `ip` (a non-loopback address of this machine).
fn via(p: &Pharos, ip: IpAddr, path: &str) -> String {
    let port = p.settings.server.port;
    format!("http://{ip}:{port}/api/v1/admin{path}")
}

/// Creates the admin user `alice` with password `right`.
async fn add_alice(p: &Pharos) {
    let body = json!({"username": "alice", "password": "right passphrase"});
    let (s, v) = p.admin(Method::POST, "/users", Some(body)).await;
    assert_eq!(s, 201, "{v}");
}

async fn users(p: &Pharos) -> usize {
    let db = p.app.as_ref().unwrap().control.db.clone();
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM users")
        .fetch_one(db.pool())
        .await
        .unwrap();
    n as usize
}

#[tokio::test]
async fn without_users_only_loopback_or_the_bootstrap_token_may_use_the_admin_api() {
    let Some(ip) = non_loopback_address() else {
        eprintln!("SKIP: this machine has no non-loopback address");
        return;
    };
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start_on_all_interfaces(&db, |_| {}).await;
        let body = json!({"username": "mallory", "password": "owned passphrase"}).to_string();
        let post = |url: String, token: Option<String>| {
            let mut r = p
                .client
                .post(url)
                .header("content-type", "application/json")
                .body(body.clone());
            if let Some(t) = token {
                r = r.bearer_auth(t);
            }
            r.send()
        };
        // Another host (a non-loopback peer): refused, nothing stored.
        let r = post(via(&p, ip, "/users"), None).await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{b:?}");
        let err: Value = r.json().await.unwrap();
        assert_eq!(err["error"], "invalid_client");
        assert!(
            err["error_description"]
                .as_str()
                .unwrap()
                .contains("bootstrap token")
        );
        let r = p
            .client
            .get(via(&p, ip, "/trust-anchors"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(users(&p).await, 0);
        // A wrong token does not help.
        let r = post(via(&p, ip, "/users"), Some("guess".into()))
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        // A reverse proxy on this host connects from loopback for anyone: not local.
        let r = p
            .client
            .post(p.url("/api/v1/admin/users"))
            .header("content-type", "application/json")
            .header("x-forwarded-for", "203.0.113.5")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{b:?}");
        assert_eq!(users(&p).await, 0);
        // Loopback may read.
        assert_eq!(p.admin(Method::GET, "/trust-anchors", None).await.0, 200);
        // The token from the log lets a remote operator create the first user.
        let token = p
            .app
            .as_ref()
            .unwrap()
            .admin_bootstrap
            .token()
            .unwrap()
            .to_owned();
        let r = post(via(&p, ip, "/users"), Some(token.clone()))
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::CREATED, "{b:?}");
        assert_eq!(users(&p).await, 1);
        // From then on Basic credentials are needed, and the token is spent.
        let r = p
            .client
            .get(via(&p, ip, "/trust-anchors"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        let body: Value = r.json().await.unwrap();
        let said = body["error_description"].as_str().unwrap_or_default();
        assert!(said.contains("bootstrap token is spent"), "{body}");
        let r = p
            .client
            .get(via(&p, ip, "/trust-anchors"))
            .basic_auth("mallory", Some("owned passphrase"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert!(p.app.as_ref().unwrap().admin_bootstrap.token().is_none());
        p.stop().await;
    }
}

/// DNS rebinding (issue 31): a web page whose name was rebound to 127.0.0.1 (or that reaches
/// the port through an operator's `ssh -L`) connects from loopback but is sent with its own
/// `Host`; a page of a local origin sends `Origin`. Neither may create the first admin without
/// the token; a script on the machine (curl) may.
#[tokio::test]
async fn a_web_page_on_loopback_cannot_create_the_first_admin() {
    let db = TestDb::new(Backend::Sqlite).await;
    let p = Pharos::start(&db).await;
    let port = p.settings.server.port;
    let token = p
        .app
        .as_ref()
        .unwrap()
        .admin_bootstrap
        .token()
        .unwrap()
        .to_owned();
    let create = |name: &str, host: Option<String>, origin: Option<&str>, bearer: bool| {
        let mut r = p
            .client
            .post(p.url("/api/v1/admin/users"))
            .header("content-type", "application/json")
            .body(json!({"username": name, "password": "first admin passphrase"}).to_string());
        if let Some(h) = host {
            r = r.header("host", h);
        }
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        if bearer {
            r = r.bearer_auth(&token);
        }
        r.send()
    };
    // Rebound: loopback peer, the attacker's name in Host (and the page's same origin).
    let evil = format!("evil.example:{port}");
    let evil_origin = format!("http://evil.example:{port}");
    let r = create("mallory", Some(evil.clone()), None, false)
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = create("mallory", Some(evil.clone()), Some(&evil_origin), false)
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    // Reads too: the page could otherwise read the configuration.
    let r = p
        .client
        .get(p.url("/api/v1/admin/trust-anchors"))
        .header("host", evil.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    // A page of a local origin (another port of this machine): its browser says so.
    let local_page = "http://localhost:3000";
    let r = create("mallory", None, Some(local_page), false)
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN, "cross-origin write");
    let same = format!("http://127.0.0.1:{port}");
    let r = create("mallory", None, Some(&same), false).await.unwrap();
    assert_eq!(
        r.status(),
        StatusCode::UNAUTHORIZED,
        "a page needs the token"
    );
    let err: Value = r.json().await.unwrap();
    assert!(
        err["error_description"]
            .as_str()
            .unwrap()
            .contains("bootstrap token"),
        "{err}"
    );
    assert_eq!(users(&p).await, 0);
    // A script on this machine: no Origin, Host a loopback literal or localhost.
    let r = p
        .client
        .get(p.url("/api/v1/admin/trust-anchors"))
        .header("host", format!("localhost:{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = p
        .client
        .get(p.url("/api/v1/admin/trust-anchors"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    // The token admits the page (an operator's browser with the token from the log).
    let r = create("alice", Some(evil), Some(&evil_origin), true)
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    assert_eq!(users(&p).await, 1);
    p.stop().await;
}

/// A script on the machine (curl: loopback, `Host: 127.0.0.1:port`, no `Origin`) still creates
/// the first admin without the token.
#[tokio::test]
async fn a_script_on_the_machine_creates_the_first_admin() {
    let db = TestDb::new(Backend::Sqlite).await;
    let p = Pharos::start(&db).await;
    let r = p
        .client
        .post(p.url("/api/v1/admin/users"))
        .header("content-type", "application/json")
        .body(json!({"username": "alice", "password": "first admin passphrase"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    assert_eq!(users(&p).await, 1);
    p.stop().await;
}

#[tokio::test]
async fn cross_site_writes_are_refused_and_json_must_say_so() {
    let db = TestDb::new(Backend::Sqlite).await;
    let p = Pharos::start(&db).await;
    let url = p.url("/api/v1/admin/users");
    let body = json!({"username": "eve", "password": "eve passphrase"}).to_string();
    // What a page can send without a preflight: text/plain.
    let r = p
        .client
        .post(&url)
        .header("content-type", "text/plain")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let r = p.client.post(&url).body(body.clone()).send().await.unwrap();
    assert_eq!(
        r.status(),
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "no content type"
    );
    // A page of another origin, even with the right type.
    let r = p
        .client
        .post(&url)
        .header("content-type", "application/json")
        .header("origin", "https://evil.example")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let err: Value = r.json().await.unwrap();
    assert_eq!(err["error"], "invalid_request");
    let db_users = {
        let db = p.app.as_ref().unwrap().control.db.clone();
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM users")
            .fetch_one(db.pool())
            .await
            .unwrap()
    };
    assert_eq!(db_users, 0);
    // The API's own origin (its console) may write; before the first user a page needs the
    // bootstrap token too, also from loopback (see
    // `a_web_page_on_loopback_cannot_create_the_first_admin`).
    let own = p.base.clone();
    let token = p.app.as_ref().unwrap().admin_bootstrap.token().unwrap();
    let r = p
        .client
        .post(&url)
        .header("content-type", "application/json")
        .header("origin", own)
        .bearer_auth(token)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    p.stop().await;
}

#[tokio::test]
async fn failed_logins_are_limited_per_client_and_the_user_is_the_actor() {
    let Some(ip) = non_loopback_address() else {
        eprintln!("SKIP: this machine has no non-loopback address");
        return;
    };
    let db = TestDb::new(Backend::Sqlite).await;
    let mut p = Pharos::start_on_all_interfaces(&db, |_| {}).await;
    add_alice(&p).await;
    let get =
        |url: String, pw: &'static str| p.client.get(url).basic_auth("alice", Some(pw)).send();
    for _ in 0..4 {
        let r = get(via(&p, ip, "/trust-anchors"), "wrong").await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    }
    // Another client is not affected.
    let r = get(p.url("/api/v1/admin/trust-anchors"), "right passphrase")
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);

    // The audit actor is the authenticated user, whatever the actor header claims.
    p.login("alice", "right passphrase");
    let r = p
        .client
        .post(p.url("/api/v1/admin/subordinates"))
        .basic_auth("alice", Some("right passphrase"))
        .header("content-type", "application/json")
        .header("x-actor", "bob")
        .body(json!({"entity_id": "https://leaf.example.org", "jwks": {"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED, "{:?}", r.text().await);
    let (s, hist) = p.admin(Method::GET, "/subordinates/1/history", None).await;
    assert_eq!(s, 200, "{hist}");
    let actors: Vec<&str> = hist["events"]
        .as_array()
        .or(hist.as_array())
        .unwrap()
        .iter()
        .filter_map(|e| e["actor"].as_str())
        .collect();
    assert!(
        !actors.is_empty() && actors.iter().all(|a| *a == "alice"),
        "{hist}"
    );
    p.stop().await;
}

/// Failed logins slow down one (client, user name) with a growing delay instead of locking
/// out the client: another user of the same address logs in at once, and the right password
/// of the guessed user logs in after the delay (issue 32: ten failures used to lock every
/// operator behind one NAT out, right password included). Behind a trusted reverse proxy the
/// limit counts the forwarded client; from an untrusted peer the header is ignored (no
/// spoofed escape).
#[tokio::test]
async fn failed_login_limit_counts_the_client_a_trusted_proxy_forwards() {
    use pharos_shared::time::ManualClock;
    let db = TestDb::new(Backend::Sqlite).await;
    let clock = ManualClock::new(1_900_000_000);
    let mut p = Pharos::start_with(
        &db,
        |s| s.server.trusted_proxies = vec!["127.0.0.1".into()],
        clock.clone(),
    )
    .await;
    add_alice(&p).await;
    p.login("alice", "right passphrase");
    let body = json!({"username": "bob", "password": "bob's right passphrase"});
    let (s, v) = p.admin(Method::POST, "/users", Some(body)).await;
    assert_eq!(s, 201, "{v}");
    let get = |client: &'static str, user: &'static str, pw: &'static str| {
        p.client
            .get(p.url("/api/v1/admin/trust-anchors"))
            .basic_auth(user, Some(pw))
            .header("x-forwarded-for", client)
            .send()
    };
    for _ in 0..4 {
        let r = get("203.0.113.5", "alice", "wrong").await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    }
    // Alice from that client waits, right password or not, before it is checked…
    let r = get("203.0.113.5", "alice", "right passphrase")
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(r.headers()["retry-after"], "1");
    // …while Bob from the same client, and Alice from another client, log in at once.
    let r = get("203.0.113.5", "bob", "bob's right passphrase")
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = get("203.0.113.6", "alice", "right passphrase")
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    // After the delay Alice's right password logs in.
    clock.advance(1);
    let r = get("203.0.113.5", "alice", "right passphrase")
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    p.stop().await;

    // The same proxy untrusted: every forwarded address is the proxy itself, one bucket.
    let db = TestDb::new(Backend::Sqlite).await;
    let p = Pharos::start_with(&db, |_| {}, ManualClock::new(1_900_000_000)).await;
    add_alice(&p).await;
    for i in 0..4 {
        let client = format!("203.0.113.{i}");
        let r = p
            .client
            .get(p.url("/api/v1/admin/trust-anchors"))
            .basic_auth("alice", Some("wrong"))
            .header("x-forwarded-for", client)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    }
    let r = p
        .client
        .get(p.url("/api/v1/admin/trust-anchors"))
        .basic_auth("alice", Some("right passphrase"))
        .header("x-forwarded-for", "198.51.100.1")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn both_ports_send_security_headers_and_admin_answers_are_not_stored() {
    let db = TestDb::new(Backend::Sqlite).await;
    let p = Pharos::start(&db).await;
    for path in [
        "/.well-known/openid-federation",
        "/api/v1/admin/trust-anchors",
        "/nope",
    ] {
        let r = p.client.get(p.url(path)).send().await.unwrap();
        let h = r.headers();
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(h["x-frame-options"], "DENY", "{path}");
        assert_eq!(h["referrer-policy"], "no-referrer", "{path}");
    }
    let r = p.get("/api/v1/admin/trust-anchors").await;
    assert_eq!(r.headers()["cache-control"], "no-store");
    p.stop().await;
}

#[tokio::test]
async fn a_symmetric_key_is_a_bad_request_not_a_server_error() {
    let db = TestDb::new(Backend::Sqlite).await;
    let p = Pharos::start(&db).await;
    for key in [
        json!({"kty": "oct"}),
        json!({"kty": "oct", "kid": "s"}),
        json!({"kty": "EC", "kid": "e"}),
    ] {
        let (s, v) = p
            .admin(
                Method::POST,
                "/entity-configuration/keys",
                Some(json!({"key": key})),
            )
            .await;
        assert_eq!(s, 400, "{key} → {v}");
        assert_eq!(v["error"], "invalid_request");
    }
    p.stop().await;
}

#[tokio::test]
async fn admin_cors_with_credentials_and_any_origin_refuses_to_start() {
    let db = TestDb::new(Backend::Sqlite).await;
    let mut s = pharos_shared::config::Settings::default();
    db.configure(&mut s);
    s.server.ip_listen = "127.0.0.1".into();
    s.api.admin.cors.enabled = true; // defaults: allow_origins "*", allow_credentials true
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let e = pharos::app::App::start(
        s,
        std::sync::Arc::new(pharos_shared::time::SystemClock),
        pharos::app::Listeners {
            main: Some(l),
            ..Default::default()
        },
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(e.contains("api.admin.cors.allow_origins"), "{e}");
}

#[tokio::test]
async fn plain_http_entity_identifiers_are_refused_except_on_loopback() {
    let db = TestDb::new(Backend::Sqlite).await;
    let p = Pharos::start(&db).await;
    let jwks = json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]});
    let (s, v) = p
        .admin(
            Method::POST,
            "/trust-anchors",
            Some(json!({"entity_id": "http://ta.example.org", "jwks": jwks})),
        )
        .await;
    assert_eq!(s, 400, "{v}");
    assert!(
        v["error_description"].as_str().unwrap().contains("https"),
        "{v}"
    );
    let (s, v) = p
        .admin(
            Method::POST,
            "/trust-anchors",
            Some(json!({"entity_id": "http://127.0.0.1:9", "jwks": jwks})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    p.stop().await;
}

/// Files holding secrets are the service's alone from the moment they exist: the data
/// directory 0700, the SQLite database (private keys with the default backend) 0600, and with
/// the filesystem backend its key directory 0700 and each PEM 0600.
#[cfg(unix)]
#[tokio::test]
async fn secrets_on_disk_are_created_private() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let db = TestDb::new(Backend::Sqlite).await;
    let keys = db.dir.path().join("keys");
    let keys_in = keys.display().to_string();
    let p = Pharos::start_with(
        &db,
        move |s| {
            s.signing.kms = pharos_shared::config::Kms::Filesystem;
            s.signing.filesystem.key_dir = keys_in;
        },
        std::sync::Arc::new(pharos_shared::time::SystemClock),
    )
    .await;
    // The Entity Configuration is signed with a key that lives in key_dir.
    let ec = p.entity_configuration().await;
    let kid = ec.header["kid"].as_str().unwrap().to_owned();
    let data = std::path::Path::new(&p.settings.storage.data_dir);
    assert_eq!(mode(data), 0o700);
    assert_eq!(mode(&data.join("pharos.db")), 0o600);
    assert_eq!(mode(&keys), 0o700);
    assert_eq!(mode(&keys.join(format!("{kid}.pem"))), 0o600);
    p.stop().await;
}

/// With `signing.db_encryption_key_file`, private keys in the database are sealed: keys stored
/// in plain form before are sealed at the next start, the service signs with the same key, and
/// it refuses to start without the key or with another one, naming the signing key.
#[tokio::test]
async fn private_keys_in_the_database_are_encrypted_at_rest() {
    async fn stored(db: &TestDb) -> Vec<(String, String)> {
        let pool = db.pool().await;
        sqlx::query_as::<_, (String, String)>(
            "SELECT kid, private_pem FROM signing_keys WHERE private_pem IS NOT NULL",
        )
        .fetch_all(pool.pool())
        .await
        .unwrap()
    }
    async fn start_fails(settings: &pharos_shared::config::Settings) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let r = pharos::app::App::start(
            settings.clone(),
            std::sync::Arc::new(pharos_shared::time::SystemClock),
            pharos::app::Listeners {
                main: Some(listener),
                admin: None,
                redirect: None,
            },
        )
        .await;
        match r {
            Ok(_) => panic!("started with a wrong database encryption key"),
            Err(e) => e.to_string(),
        }
    }
    for b in backends() {
        let db = TestDb::new(b).await;
        let key_file = db.dir.path().join("db.key");
        std::fs::write(&key_file, format!("{}\n", "ab".repeat(32))).unwrap();
        // First start without a key: the generated key is stored as plain PEM.
        let p = Pharos::start(&db).await;
        let kid = p.entity_configuration().await.header["kid"].clone();
        let rows = stored(&db).await;
        assert_eq!(rows.len(), 1);
        assert!(rows[0].1.contains("PRIVATE KEY"));
        let mut settings = p.settings.clone();
        p.stop().await;

        // With the key: sealed at start, same signing key, nothing readable left.
        settings.signing.db_encryption_key_file = key_file.display().to_string();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        settings.server.port = port;
        settings.entity_id = format!("http://127.0.0.1:{port}");
        let p = Pharos::start_with(
            &db,
            {
                let s = settings.clone();
                move |t| *t = s
            },
            std::sync::Arc::new(pharos_shared::time::SystemClock),
        )
        .await;
        let ec = p.entity_configuration().await;
        assert_eq!(ec.header["kid"], kid);
        let rows = stored(&db).await;
        assert_eq!(rows.len(), 1);
        assert!(!rows[0].1.contains("PRIVATE KEY"), "{}", rows[0].1);
        assert_eq!(rows[0].1.split('.').count(), 5, "a compact JWE");
        // A key generated now (rotation) is stored sealed as well.
        let (s, body) = p.admin(Method::POST, "/kms/rotate", None).await;
        assert_eq!(s, 202, "{body}");
        let settings = p.settings.clone();
        p.stop().await;
        let rows = stored(&db).await;
        assert_eq!(rows.len(), 2);
        for (kid, pem) in rows {
            assert!(!pem.contains("PRIVATE KEY"), "{kid} stored in plain form");
        }

        // Without the key, or with another one: start-up refuses, naming the key.
        let mut without = settings.clone();
        without.signing.db_encryption_key_file = String::new();
        let e = start_fails(&without).await;
        assert!(e.contains("encrypted at rest"), "{e}");
        let mut other = settings.clone();
        other.signing.db_encryption_key_file = String::new();
        other.signing.db_encryption_key = "cd".repeat(32).into();
        let e = start_fails(&other).await;
        assert!(e.contains("does not open with the configured"), "{e}");
    }
}
