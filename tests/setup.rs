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

/// Every role of the wizard runs to the end against a real instance (the trust mark issuer's
/// used to stop half-way on an endpoint type that does not exist), and the instance then
/// serves what the role promises.
#[tokio::test]
async fn every_role_runs_to_the_end() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let anchor = Pharos::start(&db).await;
    let ta = anchor.entity_id().to_owned();
    let roles: [(&str, &[&str], &[&str]); 4] = [
        (
            "intermediate",
            &["fetch", "list"],
            &["--authority-hint", &ta],
        ),
        ("leaf", &[], &["--authority-hint", &ta]),
        ("resolver", &["resolve"], &["--trust-anchor", &ta]),
        (
            "trust-mark-issuer",
            &["trust_mark", "trust_mark_status", "trust_mark_listing"],
            &["--authority-hint", &ta],
        ),
    ];
    for (role, endpoints, extra) in roles {
        let db = TestDb::new(crate::support::Backend::Sqlite).await;
        let mut p = Pharos::start(&db).await;
        let mut args = vec![
            "setup",
            "--url",
            &p.base,
            "--non-interactive",
            "--role",
            role,
            "--organization-name",
            "Example",
            "--admin-user",
            "root",
            "--admin-password",
            "a long admin password",
        ];
        args.extend_from_slice(extra);
        let out = pharos(&args, &[]).await.ok();
        assert!(out.contains("admin user: root"), "{role}: {out}");
        p.login("root", "a long admin password");
        let (s, list) = p.admin(Method::GET, "/federation-endpoints", None).await;
        assert_eq!(s, 200, "{role}: {list}");
        let mut served: Vec<&str> = list
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| !e["path"].is_null())
            .filter_map(|e| e["type"].as_str())
            .collect();
        served.sort_unstable();
        let mut want = endpoints.to_vec();
        want.sort_unstable();
        assert_eq!(served, want, "{role}");
        let ec = p.entity_configuration().await;
        assert_eq!(
            ec.claims["metadata"]["federation_entity"]["organization_name"], "Example",
            "{role}"
        );
        if role == "resolver" {
            let (s, tas) = p.admin(Method::GET, "/trust-anchors", None).await;
            assert_eq!(s, 200);
            assert_eq!(tas[0]["entity_id"], ta.as_str(), "{tas}");
        } else {
            assert_eq!(ec.claims["authority_hints"], json!([ta]), "{role}");
        }
    }
}

/// A write that fails after others succeeded (here: the path the fetch endpoint wants is
/// taken) names what was already set up and how to go on; the same command then finishes.
#[tokio::test]
async fn a_failure_half_way_says_what_was_done_and_a_rerun_finishes() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let mut p = Pharos::start(&db).await;
    let (s, v) = p
        .admin(
            Method::POST,
            "/federation-endpoints",
            Some(json!({"type": "list", "path": "/fetch"})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let base = p.base.clone();
    let args = [
        "setup",
        "--url",
        &base,
        "--non-interactive",
        "--role",
        "anchor",
        "--organization-name",
        "Example Federation",
        "--admin-user",
        "root",
        "--admin-password",
        "a long admin password",
    ];
    let line = pharos(&args, &[]).await.fails(1);
    assert!(
        line.contains("already set up: admin user root, federation_entity metadata;"),
        "{line}"
    );
    assert!(line.contains("run the same command again"), "{line}");
    assert!(!line.contains("endpoint fetch"), "{line}");

    // The operator frees the path; the same command does the rest.
    p.login("root", "a long admin password");
    let (s, v) = p
        .admin(
            Method::PUT,
            "/federation-endpoints/list",
            Some(json!({"type": "list", "path": "/entities"})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let out = pharos(&args, &[]).await.ok();
    assert!(out.contains("as a trust anchor"), "{out}");
    let fe = &p.entity_configuration().await.claims["metadata"]["federation_entity"];
    assert!(fe["federation_fetch_endpoint"].is_string(), "{fe}");
    assert_eq!(fe["organization_name"], "Example Federation");
}

/// Issue 38: one run sets up several entities of one deployment: the configured one, and
/// each `--host ENTITY_ID=ROLE` created as a hosted entity with its role's endpoints served at
/// its own path; a second run with the same answers changes nothing and succeeds.
#[tokio::test]
async fn the_wizard_sets_up_several_hosted_entities_at_once() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let mut p = Pharos::start(&db).await;
    let (edu, marks) = (
        format!("{}/edu", p.entity_id()),
        format!("{}/marks", p.entity_id()),
    );
    let args = [
        "setup",
        "--url",
        &p.base,
        "--non-interactive",
        "--role",
        "anchor",
        "--organization-name",
        "Example Federation",
        "--admin-user",
        "root",
        "--host",
        &format!("{edu}=intermediate"),
        "--host",
        &format!("{marks}=trust-mark-issuer"),
    ];
    let env = [("PHAROS_SETUP_ADMIN_PASSWORD", "a long admin password")];
    let out = pharos(&args, &env).await.ok();
    assert!(
        out.contains(&format!("hosting {edu} as an intermediate")),
        "{out}"
    );
    assert!(out.contains(&format!("{edu}/fetch")), "{out}");
    assert!(
        out.contains(&format!("hosting {marks} as a trust mark issuer")),
        "{out}"
    );
    // Again: everything exists, nothing fails.
    pharos(&args, &env).await.ok();

    p.login("root", "a long admin password");
    let (s, list) = p.admin(Method::GET, "/entities", None).await;
    assert_eq!(s, 200);
    assert_eq!(list.as_array().map(Vec::len), Some(3), "{list}");
    let r = p.get("/edu/.well-known/openid-federation").await;
    assert_eq!(r.status(), 200);
    let ec = pharos_shared::jose::decode_unverified(&r.text().await.unwrap()).unwrap();
    let fe = &ec.claims["metadata"]["federation_entity"];
    assert_eq!(
        fe["federation_fetch_endpoint"],
        format!("{edu}/fetch"),
        "{fe}"
    );
    assert_eq!(fe["organization_name"], "Example Federation", "{fe}");
    let (s, eps) = p
        .admin(
            Method::GET,
            &format!("/entities/{}/federation-endpoints", enc(&marks)),
            None,
        )
        .await;
    assert_eq!(s, 200);
    assert!(eps.to_string().contains("trust_mark_status"), "{eps}");
    // An answer of the wrong shape is refused before anything is written.
    let line = pharos(
        &[
            "setup",
            "--url",
            &p.base,
            "--non-interactive",
            "--role",
            "anchor",
            "--user",
            "root",
            "--password",
            "a long admin password",
            "--host",
            "https://x.example/a",
        ],
        &[],
    )
    .await
    .fails(64);
    assert!(line.contains("ENTITY_ID=ROLE"), "{line}");
    p.stop().await;
}
