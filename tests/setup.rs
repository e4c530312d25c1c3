//! `pharos setup`, the real binary driven by flags alone against a fresh Pharos: it yields a
//! working Trust Anchor (fetch and list served and advertised, metadata set) guarded by the
//! admin user it created; without a needed answer it stops with exit 64 before writing.

use reqwest::Method;
use serde_json::json;

use crate::cli_admin::{admin_as, pharos};
use crate::support::{Pharos, TestDb, backends, enc};

#[tokio::test]
async fn the_wizard_non_interactive_makes_a_working_trust_anchor() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let mut p = Pharos::start(&db).await;
        let leaf = TestDb::new(b).await;
        let leaf = Pharos::start(&leaf).await;
        let out = pharos(
            &[
                "setup",
                "--url",
                &p.base,
                "--non-interactive",
                "--role",
                "anchor",
                "--entity-id",
                p.entity_id(),
                "--organization-name",
                "Example Federation",
                "--contact",
                "ops@example.org",
                "--admin-user",
                "root",
            ],
            &[("PHAROS_SETUP_ADMIN_PASSWORD", "a long admin password")],
        )
        .await
        .ok();
        assert!(out.contains("as a trust anchor"), "{out}");
        assert!(out.contains(&format!("{}/fetch", p.entity_id())), "{out}");
        assert!(out.contains("admin user: root"), "{out}");

        // The Admin API is closed to anyone without the new user's password…
        let (s, _) = p.admin(Method::GET, "/users", None).await;
        assert_eq!(s, 401, "{b:?}");
        p.login("root", "a long admin password");
        let (s, users) = p.admin(Method::GET, "/users", None).await;
        assert_eq!(s, 200);
        assert_eq!(users[0]["username"], "root");

        // …and the Entity Configuration advertises the endpoints and the organisation.
        let ec = p.entity_configuration().await;
        let fe = &ec.claims["metadata"]["federation_entity"];
        assert_eq!(fe["organization_name"], "Example Federation");
        assert_eq!(fe["contacts"], json!(["ops@example.org"]));
        let fetch = fe["federation_fetch_endpoint"].as_str().unwrap().to_owned();
        let list = fe["federation_list_endpoint"].as_str().unwrap().to_owned();
        assert_eq!(fetch, format!("{}/fetch", p.entity_id()));

        // A subordinate added with `pharos admin` is listed and fetched, signed by the anchor.
        let auth = Some(("root", "a long admin password"));
        admin_as(
            &p,
            auth,
            &["subordinates", "add", leaf.entity_id(), "--fetch-jwks"],
        )
        .await
        .ok();
        let r = p.client.get(&list).send().await.unwrap();
        assert_eq!(r.status(), 200);
        let listed: serde_json::Value = r.json().await.unwrap();
        assert_eq!(listed, json!([leaf.entity_id()]));
        let r = p
            .client
            .get(format!("{fetch}?sub={}", enc(leaf.entity_id())))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let token = r.text().await.unwrap();
        let keys: pharos_shared::jose::Jwks =
            serde_json::from_value(ec.claims["jwks"].clone()).unwrap();
        let st = pharos_shared::jose::verify(&token, &keys).unwrap();
        assert_eq!(st.claims["iss"], p.entity_id());
        assert_eq!(st.claims["sub"], leaf.entity_id());

        // A re-run with the same answers changes nothing and succeeds.
        pharos(
            &[
                "setup",
                "--url",
                &p.base,
                "--non-interactive",
                "--role",
                "anchor",
                "--admin-user",
                "root",
                "--admin-password",
                "a long admin password",
            ],
            &[],
        )
        .await
        .ok();
    }
}

#[tokio::test]
async fn the_wizard_refuses_missing_answers_and_a_wrong_instance_before_writing() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let p = Pharos::start(&db).await;
    let line = pharos(
        &[
            "setup",
            "--url",
            &p.base,
            "--non-interactive",
            "--role",
            "anchor",
        ],
        &[],
    )
    .await
    .fails(64);
    assert!(line.contains("--admin-user"), "{line}");
    let line = pharos(
        &[
            "setup",
            "--url",
            &p.base,
            "--non-interactive",
            "--role",
            "anchor",
            "--entity-id",
            "https://other.example.org",
            "--admin-user",
            "root",
            "--admin-password",
            "a long admin password",
        ],
        &[],
    )
    .await
    .fails(64);
    assert!(line.contains("https://other.example.org"), "{line}");
    let line = pharos(&["setup", "--url", &p.base, "--role", "ruler"], &[])
        .await
        .fails(64);
    assert!(line.contains("ruler"), "{line}");
    // Nothing was written: no user, no endpoint.
    let (s, v) = p.admin(Method::GET, "/federation-endpoints", None).await;
    assert_eq!((s, v), (200, json!([])));
}

/// From another host the wizard needs the bootstrap token from the service's log: without it
/// the API's refusal is reported (exit 1) and nothing is created; with it the first user is.
#[tokio::test]
async fn a_remote_first_run_needs_the_bootstrap_token() {
    let Some(ip) = crate::support::non_loopback_address() else {
        eprintln!("SKIP: this machine has no non-loopback address");
        return;
    };
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let mut p = Pharos::start_on_all_interfaces(&db, |_| {}).await;
    let port = p.settings.server.port;
    let url = format!("http://{ip}:{port}");
    let args = [
        "setup",
        "--url",
        &url,
        "--non-interactive",
        "--role",
        "leaf",
        "--admin-user",
        "root",
        "--admin-password",
        "remote first run",
    ];
    let line = pharos(&args, &[]).await.fails(1);
    assert!(line.contains("bootstrap"), "{line}");
    let (_, users) = p.admin(Method::GET, "/users", None).await;
    assert_eq!(users, json!([]));

    let token = p
        .app
        .as_ref()
        .unwrap()
        .admin_bootstrap
        .token()
        .unwrap()
        .to_owned();
    let out = pharos(&args, &[("PHAROS_BOOTSTRAP_TOKEN", token.as_str())])
        .await
        .ok();
    assert!(out.contains("admin user: root"), "{out}");
    p.login("root", "remote first run");
    let (s, users) = p.admin(Method::GET, "/users", None).await;
    assert_eq!(s, 200);
    assert_eq!(users[0]["username"], "root");
}
