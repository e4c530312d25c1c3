//! Many federation entities in one deployment (issue 38): entities created through the Admin
//! API are served where their identifiers say, sign with keys of their own, are managed under
//! `/entities/{entity}/…` exactly as the default entity is under the unprefixed paths, survive
//! a restart, and leave the public port when deleted — on SQLite, PostgreSQL and MariaDB.

use pharos_shared::jose::{self, Jwks};
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Pharos, TestDb, backends, enc, jwk};

/// Fetches and verifies the Entity Configuration served at `path` with the keys it publishes;
/// its claims and the kids of those keys.
async fn configuration_at(p: &Pharos, path: &str) -> (Value, Vec<String>) {
    let r = p.get(path).await;
    assert_eq!(r.status(), 200, "{path}");
    assert_eq!(
        r.headers()["content-type"],
        "application/entity-statement+jwt"
    );
    let token = r.text().await.unwrap();
    let unverified = jose::decode_unverified(&token).unwrap();
    let keys: Jwks = serde_json::from_value(unverified.claims["jwks"].clone()).unwrap();
    let verified = jose::verify(&token, &keys).unwrap();
    assert_eq!(verified.header["typ"], "entity-statement+jwt");
    let kids = keys
        .keys
        .iter()
        .filter_map(|k| k.get("kid").and_then(Value::as_str).map(str::to_owned))
        .collect();
    (Value::Object(verified.claims), kids)
}

#[tokio::test]
async fn a_hosted_entity_is_served_where_its_identifier_says_with_keys_of_its_own() {
    for backend in backends() {
        let db = TestDb::new(backend).await;
        let p = Pharos::start(&db).await;
        let edu = format!("{}/edu", p.entity_id());

        let (s, v) = p
            .admin(
                Method::POST,
                "/entities",
                Some(json!({"entity_id": edu, "display_name": "Education"})),
            )
            .await;
        assert_eq!(s, 201, "{backend:?}: {v}");
        assert_eq!(v["entity_id"], edu.as_str());
        assert_eq!(v["default"], false);
        let n = v["id"].as_i64().unwrap();
        assert!(n > 1, "{v}");

        let (s, list) = p.admin(Method::GET, "/entities", None).await;
        assert_eq!(s, 200);
        assert_eq!(list[0]["default"], true, "{list}");
        assert_eq!(list[0]["entity_id"], p.entity_id());
        assert_eq!(list[1]["entity_id"], edu.as_str(), "{list}");
        let (s, one) = p
            .admin(Method::GET, &format!("/entities/{}", enc(&edu)), None)
            .await;
        assert_eq!((s, &one["id"]), (200, &json!(n)), "{one}");

        // Served at its path, signed with keys no other entity has.
        let (ours, our_kids) = configuration_at(&p, "/.well-known/openid-federation").await;
        let (theirs, their_kids) = configuration_at(&p, "/edu/.well-known/openid-federation").await;
        assert_eq!(ours["iss"], p.entity_id());
        assert_eq!(theirs["iss"], edu.as_str());
        assert_eq!(theirs["sub"], edu.as_str());
        assert!(!their_kids.is_empty());
        assert!(
            their_kids.iter().all(|k| !our_kids.contains(k)),
            "{backend:?}: shared keys {our_kids:?} {their_kids:?}"
        );

        // Managed under /entities/{n}/…: its endpoints and subordinates are its own.
        let body = json!({"type": "fetch", "path": "/fetch", "config": {}});
        let (s, v) = p
            .admin(
                Method::POST,
                &format!("/entities/{n}/federation-endpoints"),
                Some(body),
            )
            .await;
        assert_eq!(s, 201, "{backend:?}: {v}");
        let leaf = "https://leaf.edu.example";
        let body = json!({"entity_id": leaf, "jwks": {"keys": [jwk("leaf-1", None)]}});
        let (s, v) = p
            .admin(
                Method::POST,
                &format!("/entities/{n}/subordinates"),
                Some(body),
            )
            .await;
        assert_eq!(s, 201, "{backend:?}: {v}");
        let (s, subs) = p
            .admin(
                Method::GET,
                &format!("/entities/{}/subordinates", enc(&edu)),
                None,
            )
            .await;
        assert_eq!(s, 200);
        assert!(subs.to_string().contains(leaf), "{subs}");
        let (s, subs) = p.admin(Method::GET, "/subordinates", None).await;
        assert_eq!(s, 200);
        assert!(!subs.to_string().contains(leaf), "{backend:?}: {subs}");

        // Its fetch answers with a statement it signed about its subordinate; the default
        // entity has no such endpoint.
        let r = p.get(&format!("/edu/fetch?sub={}", enc(leaf))).await;
        assert_eq!(r.status(), 200, "{backend:?}");
        let token = r.text().await.unwrap();
        let their_keys: Jwks = serde_json::from_value(theirs["jwks"].clone()).unwrap();
        let statement = jose::verify(&token, &their_keys).unwrap();
        assert_eq!(statement.claims["iss"], edu.as_str());
        assert_eq!(statement.claims["sub"], leaf);
        assert_eq!(
            p.get(&format!("/fetch?sub={}", enc(leaf))).await.status(),
            404
        );
        // Its Entity Configuration now lists the endpoint at its own path.
        let (theirs, _) = configuration_at(&p, "/edu/.well-known/openid-federation").await;
        assert_eq!(
            theirs["metadata"]["federation_entity"]["federation_fetch_endpoint"],
            format!("{edu}/fetch"),
            "{theirs}"
        );

        // The deployment's own resources are not per entity.
        let (s, _) = p
            .admin(Method::GET, &format!("/entities/{n}/entities"), None)
            .await;
        assert_eq!(s, 404);
        let (s, _) = p
            .admin(Method::GET, "/entities/99/subordinates", None)
            .await;
        assert_eq!(s, 404);

        // Everything survives a restart.
        let p = p.restart().await;
        let (again, kids_again) = configuration_at(&p, "/edu/.well-known/openid-federation").await;
        assert_eq!(again["iss"], edu.as_str());
        assert_eq!(
            kids_again, their_kids,
            "{backend:?}: its keys survive a restart"
        );
        let r = p.get(&format!("/edu/fetch?sub={}", enc(leaf))).await;
        assert_eq!(r.status(), 200, "{backend:?}");

        // Deleting needs the identifier repeated; then it leaves the public port.
        let (s, v) = p
            .admin(Method::DELETE, &format!("/entities/{n}"), None)
            .await;
        assert_eq!(s, 400, "{v}");
        assert!(v["error_description"].as_str().unwrap().contains("confirm"));
        let (s, v) = p.delete_entity(n, &edu).await;
        assert_eq!(s, 204, "{backend:?}: {v}");
        assert_eq!(
            p.get("/edu/.well-known/openid-federation").await.status(),
            404
        );
        let (s, _) = p
            .admin(Method::GET, &format!("/entities/{n}/subordinates"), None)
            .await;
        assert_eq!(s, 404);
        let (s, list) = p.admin(Method::GET, "/entities", None).await;
        assert_eq!((s, list.as_array().map(Vec::len)), (200, Some(1)), "{list}");
        // The default entity cannot be deleted.
        let (s, _) = p
            .admin(
                Method::DELETE,
                &format!("/entities/1?confirm={}", enc(p.entity_id())),
                None,
            )
            .await;
        assert_eq!(s, 409);
        p.stop().await;
    }
}

#[tokio::test]
async fn entities_that_would_collide_on_the_public_port_are_refused_naming_the_other() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let p = Pharos::start(&db).await;
    crate::support::enable(&p, "fetch", "/fetch", json!({})).await;
    let base = p.entity_id().to_owned();
    let create = |id: String| {
        let p = &p;
        async move {
            p.admin(Method::POST, "/entities", Some(json!({"entity_id": id})))
                .await
        }
    };
    let (s, _) = create(format!("{base}/edu")).await;
    assert_eq!(s, 201);
    for (id, names) in [
        (format!("{base}/edu"), "already exists"),
        (format!("{base}/edu/test"), "/edu"),
        (format!("{base}/fetch"), "/fetch"),
        (format!("{base}/api"), "reserved"),
        (base.clone(), "already exists"),
    ] {
        let (s, v) = create(id.clone()).await;
        assert_eq!(s, 409, "{id}: {v}");
        let why = v["error_description"].as_str().unwrap();
        assert!(why.contains(names), "{id}: {why}");
    }
    let (s, v) = create("https://x.example/a?b=c".into()).await;
    assert_eq!(s, 400, "{v}");
    let (s, v) = p
        .admin(
            Method::POST,
            "/entities",
            Some(json!({"display_name": "x"})),
        )
        .await;
    assert_eq!(s, 400, "{v}");
    assert!(
        v["error_description"]
            .as_str()
            .unwrap()
            .contains("entity_id")
    );
    // Nothing was stored by the refusals.
    let (_, list) = p.admin(Method::GET, "/entities", None).await;
    assert_eq!(list.as_array().map(Vec::len), Some(2), "{list}");
    // Nor may the default entity put an endpoint where the hosted one is served.
    let body = json!({"type": "list", "path": "/edu/list", "config": {}});
    let (s, v) = p
        .admin(Method::POST, "/federation-endpoints", Some(body))
        .await;
    assert_eq!(s, 409, "{v}");
    assert!(
        v["error_description"].as_str().unwrap().contains("/edu"),
        "{v}"
    );
    let body = json!({"type": "fetch", "path": "/edu", "config": {}});
    let (s, v) = p
        .admin(Method::PUT, "/federation-endpoints/fetch", Some(body))
        .await;
    assert_eq!(s, 409, "{v}");
    p.stop().await;
}

/// The paths and methods of the Admin API, from its OpenAPI document (without the
/// `/entities/{entity}/…` copies of the per-entity ones).
async fn documented_routes(p: &Pharos) -> Vec<(String, Method)> {
    let doc: Value = p
        .get("/api/v1/admin/openapi.json")
        .await
        .json()
        .await
        .unwrap();
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        // The per-entity copies are what the test builds from the paths they repeat.
        if path.starts_with("/entities/{entity}/") {
            continue;
        }
        for (m, method) in [
            ("get", Method::GET),
            ("post", Method::POST),
            ("put", Method::PUT),
            ("patch", Method::PATCH),
            ("delete", Method::DELETE),
        ] {
            if item.get(m).is_some() {
                out.push((path.clone(), method));
            }
        }
    }
    out
}

/// `path` with every `{parameter}` replaced by a value that names nothing.
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|s| {
            if s.starts_with('{') {
                "nothing-here"
            } else {
                s
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Acceptance 3 of issue 38: an entity-scoped operator creates subordinates in its entity and
/// gets 403 on its keys and users and 404 on another entity; a viewer reads and does not
/// write; the entity's admin manages its entity's users and no one else; and, route by route
/// through the whole OpenAPI document, each role gets what the role table says — on SQLite,
/// PostgreSQL and MariaDB.
#[tokio::test]
async fn entity_scoped_users_reach_what_their_role_allows_and_nothing_else() {
    for backend in backends() {
        let db = TestDb::new(backend).await;
        let mut p = Pharos::start(&db).await;
        let root = json!({"username": "root", "password": "a long passphrase for root"});
        assert_eq!(p.admin(Method::POST, "/users", Some(root)).await.0, 201);
        p.login("root", "a long passphrase for root");
        let mut numbers = Vec::new();
        for path in ["edu", "research"] {
            let id = format!("{}/{path}", p.entity_id());
            let (s, v) = p
                .admin(Method::POST, "/entities", Some(json!({"entity_id": id})))
                .await;
            assert_eq!(s, 201, "{backend:?}: {v}");
            numbers.push(v["id"].as_i64().unwrap());
        }
        let (edu, research) = (numbers[0], numbers[1]);
        for (user, role) in [("op", "operator"), ("view", "viewer"), ("boss", "admin")] {
            let body = json!({"username": user, "password": format!("a long passphrase for {user}"),
                "entities": [{"entity": edu, "role": role}]});
            let (s, v) = p.admin(Method::POST, "/users", Some(body)).await;
            assert_eq!(s, 201, "{backend:?}: {v}");
            assert_eq!(v["entities"], json!([{"entity": edu, "role": role}]));
        }
        // A scope naming no hosted entity, or an unknown role, is refused naming the field.
        let body = json!({"username": "x", "password": "a long passphrase for x",
            "entities": [{"entity": 99, "role": "viewer"}]});
        let (s, v) = p.admin(Method::POST, "/users", Some(body)).await;
        assert_eq!(s, 400, "{v}");
        assert!(
            v["error_description"]
                .as_str()
                .unwrap()
                .contains("entities[0].entity")
        );
        let body = json!({"username": "x", "password": "a long passphrase for x",
            "entities": [{"entity": edu, "role": "owner"}]});
        let (s, v) = p.admin(Method::POST, "/users", Some(body)).await;
        assert_eq!(s, 400, "{v}");
        assert!(
            v["error_description"]
                .as_str()
                .unwrap()
                .contains("entities[0].role")
        );

        // The last administrator of the deployment stays while scoped users remain.
        let (s, v) = p.admin(Method::DELETE, "/users/root", None).await;
        assert_eq!(s, 409, "{backend:?}: {v}");
        let (s, v) = p
            .admin(Method::PUT, "/users/root", Some(json!({"disabled": true})))
            .await;
        assert_eq!(s, 409, "{backend:?}: {v}");
        let (s, v) = p
            .admin(
                Method::PUT,
                "/users/root",
                Some(json!({"entities": [{"entity": edu, "role": "admin"}]})),
            )
            .await;
        assert_eq!(s, 409, "{backend:?}: {v}");

        // The operator.
        p.login("op", "a long passphrase for op");
        let leaf = json!({"entity_id": "https://leaf.edu.example",
            "jwks": {"keys": [jwk("leaf-1", None)]}});
        let (s, v) = p
            .admin(
                Method::POST,
                &format!("/entities/{edu}/subordinates"),
                Some(leaf),
            )
            .await;
        assert_eq!(s, 201, "{backend:?}: {v}");
        let (s, _) = p
            .admin(Method::POST, &format!("/entities/{edu}/kms/rotate"), None)
            .await;
        assert_eq!(s, 403, "{backend:?}: its keys");
        assert_eq!(p.admin(Method::GET, "/users", None).await.0, 403);
        let new_user = json!({"username": "y", "password": "a long passphrase for y"});
        assert_eq!(p.admin(Method::POST, "/users", Some(new_user)).await.0, 403);
        let (s, _) = p
            .admin(
                Method::GET,
                &format!("/entities/{research}/subordinates"),
                None,
            )
            .await;
        assert_eq!(s, 404, "{backend:?}: another entity");
        assert_eq!(p.admin(Method::GET, "/subordinates", None).await.0, 404);
        let (s, list) = p.admin(Method::GET, "/entities", None).await;
        assert_eq!(s, 200);
        assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
        assert_eq!(list[0]["id"], edu);
        assert_eq!(p.admin(Method::GET, "/entities/1", None).await.0, 404);
        let (s, _) = p
            .admin(
                Method::POST,
                "/entities",
                Some(json!({"entity_id": "https://z.example/z"})),
            )
            .await;
        assert_eq!(s, 403);
        let metrics = p
            .client
            .get(p.url("/metrics"))
            .basic_auth("op", Some("a long passphrase for op"))
            .send()
            .await
            .unwrap();
        assert_eq!(
            metrics.status(),
            403,
            "{backend:?}: /metrics is the deployment's"
        );

        // The viewer reads what the operator made, and changes nothing.
        p.login("view", "a long passphrase for view");
        let (s, subs) = p
            .admin(Method::GET, &format!("/entities/{edu}/subordinates"), None)
            .await;
        assert_eq!(s, 200);
        assert!(subs.to_string().contains("leaf.edu.example"), "{subs}");
        let other = json!({"entity_id": "https://other.edu.example",
            "jwks": {"keys": [jwk("other-1", None)]}});
        let (s, _) = p
            .admin(
                Method::POST,
                &format!("/entities/{edu}/subordinates"),
                Some(other),
            )
            .await;
        assert_eq!(s, 403);
        let (s, _) = p
            .admin(
                Method::DELETE,
                &format!(
                    "/entities/{edu}/subordinates/{}",
                    enc("https://leaf.edu.example")
                ),
                None,
            )
            .await;
        assert_eq!(s, 403);

        // The entity's admin manages the users of its entity, and only those.
        p.login("boss", "a long passphrase for boss");
        let (s, list) = p.admin(Method::GET, "/users", None).await;
        assert_eq!(s, 200, "{backend:?}: {list}");
        let mut names: Vec<&str> = list
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|u| u["username"].as_str())
            .collect();
        names.sort_unstable();
        assert_eq!(names, ["boss", "op", "view"], "{backend:?}: not root");
        assert_eq!(p.admin(Method::GET, "/users/root", None).await.0, 404);
        assert_eq!(p.admin(Method::DELETE, "/users/root", None).await.0, 404);
        let helper = |entity: i64| {
            json!({"username": "helper", "password": "a long passphrase for helper",
                "entities": [{"entity": entity, "role": "viewer"}]})
        };
        let (s, v) = p
            .admin(Method::POST, "/users", Some(helper(research)))
            .await;
        assert_eq!(
            s, 403,
            "{backend:?}: a role in an entity it does not administer: {v}"
        );
        let unscoped = json!({"username": "helper", "password": "a long passphrase for helper"});
        let (s, v) = p.admin(Method::POST, "/users", Some(unscoped)).await;
        assert_eq!(
            s, 403,
            "{backend:?}: an administrator of the deployment: {v}"
        );
        let (s, v) = p.admin(Method::POST, "/users", Some(helper(edu))).await;
        assert_eq!(s, 201, "{backend:?}: {v}");
        let (s, v) = p
            .admin(
                Method::PUT,
                "/users/helper",
                Some(json!({"entities": [{"entity": research, "role": "viewer"}]})),
            )
            .await;
        assert_eq!(s, 403, "{backend:?}: moving it out of reach: {v}");
        let (s, v) = p
            .admin(
                Method::PUT,
                "/users/helper",
                Some(json!({"entities": [{"entity": edu, "role": "operator"}]})),
            )
            .await;
        assert_eq!(s, 200, "{backend:?}: {v}");
        assert_eq!(v["entities"], json!([{"entity": edu, "role": "operator"}]));
        p.login("helper", "a long passphrase for helper");
        assert_eq!(
            p.admin(Method::GET, &format!("/entities/{edu}/subordinates"), None)
                .await
                .0,
            200,
            "{backend:?}: the new user works"
        );
        p.login("boss", "a long passphrase for boss");
        assert_eq!(p.admin(Method::DELETE, "/users/helper", None).await.0, 204);

        // Route by route.
        let registry =
            |path: &str| path.starts_with("/subordinates") || path.starts_with("/trust-marks");
        let deployment = |path: &str| path.starts_with("/users") || path.starts_with("/entities");
        for (user, role) in [("view", "viewer"), ("op", "operator"), ("boss", "admin")] {
            p.login(user, &format!("a long passphrase for {user}"));
            for (path, method) in documented_routes(&p).await {
                let write = method != Method::GET;
                let at = concrete(&path);
                let mine = if deployment(&path) {
                    at.clone()
                } else {
                    format!("/entities/{edu}{at}")
                };
                let (s, v) = p.admin_raw(method.clone(), &mine, None).await;
                let forbidden = if path.starts_with("/users") {
                    // An entity's admin manages its entities' users (the others are 404).
                    role != "admin"
                } else if deployment(&path) {
                    write
                } else {
                    write
                        && match role {
                            "viewer" => true,
                            "operator" => !registry(&path),
                            _ => false,
                        }
                };
                if forbidden {
                    assert_eq!(s, 403, "{backend:?} {role} {method} {mine}: {v}");
                } else {
                    assert!(
                        s != 403 && s != 401 && s < 500,
                        "{backend:?} {role} {method} {mine}: {s} {v}"
                    );
                }
                if !deployment(&path) {
                    let theirs = format!("/entities/{research}{at}");
                    let (s, v) = p.admin_raw(method.clone(), &theirs, None).await;
                    assert_eq!(s, 404, "{backend:?} {role} {method} {theirs}: {v}");
                }
            }
        }
        p.stop().await;
    }
}

/// A 2xx admin call; its body.
async fn ok(p: &Pharos, method: Method, path: &str, body: Value) -> Value {
    let (s, v) = p.admin(method, path, Some(body)).await;
    assert!((200..300).contains(&s), "{path}: {s} {v}");
    v
}

/// The verified Entity Configuration of hosted entity `id` (served by `p` at its path).
async fn configuration_of(p: &Pharos, id: &str) -> Value {
    let path = url::Url::parse(id).unwrap().path().to_owned();
    configuration_at(p, &format!("{path}/.well-known/openid-federation"))
        .await
        .0
}

/// Acceptance 1 of issue 38: one process hosts a trust anchor, an intermediate, a trust mark
/// issuer and two leaves as five entities under one host, set up only through the Admin API.
/// The anchor resolves the leaves through the intermediate; every statement verifies with the
/// signing entity's own published keys (no key shared between entities); the mark the hosted
/// issuer issued is in the resolve answer; an independent client resolves the same chains.
#[tokio::test]
async fn five_hosted_entities_form_a_federation_in_one_process() {
    let db = TestDb::new(backends()[0]).await;
    let p = Pharos::start(&db).await;
    federation_of_five([&p, &p, &p, &p, &p]).await;
    p.stop().await;
}

/// Acceptance 2 of issue 38: the same federation split across two processes (the anchor and
/// the issuer in one, the intermediate and the leaves in the other) resolves the same.
#[tokio::test]
async fn five_hosted_entities_in_two_processes_form_the_same_federation() {
    let (db_a, db_b) = (
        TestDb::new(backends()[0]).await,
        TestDb::new(backends()[0]).await,
    );
    let a = Pharos::start(&db_a).await;
    let b = Pharos::start(&db_b).await;
    federation_of_five([&a, &b, &a, &b, &b]).await;
    a.stop().await;
    b.stop().await;
}

/// Builds the federation of a trust anchor, an intermediate, a trust mark issuer and two
/// leaves, each a hosted entity of the process given for it (in that order), only through the
/// Admin API, and checks what acceptance 1 asks.
async fn federation_of_five(hosts: [&Pharos; 5]) {
    const TM: &str = "https://marks.example.org/member";
    let names = ["ta", "ia", "tmi", "leaf1", "leaf2"];
    let mut n = std::collections::HashMap::new();
    for (name, p) in names.iter().zip(hosts) {
        let id = format!("{}/{name}", p.entity_id());
        let v = ok(p, Method::POST, "/entities", json!({"entity_id": id})).await;
        n.insert(*name, (v["id"].as_i64().unwrap(), id, p));
    }
    let on = |name: &str| n[name].2;
    let at = |name: &str, path: &str| format!("/entities/{}{path}", n[name].0);
    let id = |name: &str| n[name].1.clone();
    let keys_of = |claims: &Value| claims["jwks"].clone();

    // The anchor: fetch and resolve, the intermediate and the issuer below it, the mark type.
    let fetch = json!({"type": "fetch", "path": "/fetch", "config": {}});
    for name in ["ta", "ia"] {
        ok(
            on(name),
            Method::POST,
            &at(name, "/federation-endpoints"),
            fetch.clone(),
        )
        .await;
    }
    let resolve = json!({"type": "resolve", "path": "/resolve",
        "config": {"allowed_trust_anchors": [id("ta")]}});
    ok(
        on("ta"),
        Method::POST,
        &at("ta", "/federation-endpoints"),
        resolve,
    )
    .await;
    for name in ["ia", "tmi"] {
        let ec = configuration_of(on(name), &id(name)).await;
        let sub = json!({"entity_id": id(name), "jwks": keys_of(&ec)});
        ok(on("ta"), Method::POST, &at("ta", "/subordinates"), sub).await;
        let hint = json!({"entity_id": id("ta")});
        ok(
            on(name),
            Method::POST,
            &at(name, "/entity-configuration/authority-hints"),
            hint,
        )
        .await;
    }
    let tm_type = json!({"trust_mark_type": TM, "trust_mark_issuers": [{"issuer": id("tmi")}]});
    ok(
        on("ta"),
        Method::POST,
        &at("ta", "/trust-marks/types"),
        tm_type,
    )
    .await;

    // The issuer: a trust_mark endpoint, leaf1 entitled.
    let tm = json!({"type": "trust_mark", "path": "/trust-mark", "config": {}});
    ok(
        on("tmi"),
        Method::POST,
        &at("tmi", "/federation-endpoints"),
        tm,
    )
    .await;
    let spec = json!({"trust_mark_type": TM, "lifetime": "1h"});
    ok(
        on("tmi"),
        Method::POST,
        &at("tmi", "/trust-marks/issuance-spec"),
        spec,
    )
    .await;
    let subjects = at(
        "tmi",
        &format!("/trust-marks/issuance-spec/{}/subjects", enc(TM)),
    );
    ok(
        on("tmi"),
        Method::POST,
        &subjects,
        json!({"entity_id": id("leaf1")}),
    )
    .await;

    // The leaves under the intermediate; leaf1 holds the issuer's mark.
    for name in ["leaf1", "leaf2"] {
        let ec = configuration_of(on(name), &id(name)).await;
        let sub = json!({"entity_id": id(name), "jwks": keys_of(&ec)});
        ok(on("ia"), Method::POST, &at("ia", "/subordinates"), sub).await;
        let hint = json!({"entity_id": id("ia")});
        ok(
            on(name),
            Method::POST,
            &at(name, "/entity-configuration/authority-hints"),
            hint,
        )
        .await;
    }
    let held = json!({"trust_mark_type": TM, "trust_mark_issuer": id("tmi"),
        "refresh_grace_period": 600, "refresh_rate_limit": 1});
    ok(
        on("leaf1"),
        Method::POST,
        &at("leaf1", "/entity-configuration/trust-marks"),
        held,
    )
    .await;
    let leaf1 = id("leaf1");
    crate::support::eventually("leaf1 publishes the mark it obtained", || {
        let (p, leaf1) = (on("leaf1"), &leaf1);
        async move { configuration_of(p, leaf1).await["trust_marks"].is_array() }
    })
    .await;

    // No key is shared between the entities.
    let mut seen = std::collections::HashSet::new();
    for name in ["ta", "ia", "tmi", "leaf1", "leaf2"] {
        let ec = configuration_of(on(name), &id(name)).await;
        assert_eq!(ec["iss"], id(name));
        for k in ec["jwks"]["keys"].as_array().unwrap() {
            assert!(seen.insert(k["kid"].to_string()), "{name} shares key {k}");
        }
    }

    // The anchor resolves both leaves through the intermediate; each statement of the chain
    // verifies with the keys its signer publishes.
    let ta_keys: Jwks =
        serde_json::from_value(configuration_of(on("ta"), &id("ta")).await["jwks"].clone())
            .unwrap();
    let tmi_keys: Jwks =
        serde_json::from_value(configuration_of(on("tmi"), &id("tmi")).await["jwks"].clone())
            .unwrap();
    for leaf in ["leaf1", "leaf2"] {
        let q = format!("sub={}&trust_anchor={}", enc(&id(leaf)), enc(&id("ta")));
        let r = on("ta").get(&format!("/ta/resolve?{q}")).await;
        assert_eq!(r.status(), 200, "{leaf}");
        assert_eq!(
            r.headers()["content-type"],
            "application/resolve-response+jwt"
        );
        let answer = jose::verify(&r.text().await.unwrap(), &ta_keys).unwrap();
        assert_eq!(answer.header["typ"], "resolve-response+jwt");
        assert_eq!(answer.claims["iss"], id("ta"));
        assert_eq!(answer.claims["sub"], id(leaf));
        let chain = answer.claims["trust_chain"].as_array().unwrap();
        // The leaf's configuration, the intermediate's statement about it, the anchor's
        // about the intermediate, the anchor's configuration.
        assert_eq!(chain.len(), 4, "{leaf}");
        let signers = [leaf, "ia", "ta", "ta"];
        for (jwt, signer) in chain.iter().zip(signers) {
            let ec = configuration_of(on(signer), &id(signer)).await;
            let keys: Jwks = serde_json::from_value(ec["jwks"].clone()).unwrap();
            let d = jose::verify(jwt.as_str().unwrap(), &keys).unwrap();
            assert_eq!(d.claims["iss"], id(signer), "{leaf}");
        }
        let marks = &answer
            .claims
            .get("trust_marks")
            .cloned()
            .unwrap_or(Value::Null);
        if leaf == "leaf1" {
            assert_eq!(marks.as_array().map(Vec::len), Some(1), "{marks}");
            let mark = jose::verify(marks[0]["trust_mark"].as_str().unwrap(), &tmi_keys).unwrap();
            assert_eq!(mark.header["typ"], "trust-mark+jwt");
            assert_eq!(mark.claims["iss"], id("tmi"));
            assert_eq!(mark.claims["sub"], id("leaf1"));
            assert_eq!(marks[0]["trust_mark_type"], TM);
        } else {
            assert!(marks.as_array().is_none_or(Vec::is_empty), "{marks}");
        }
    }

    // An independent client resolves the same chains from the same process.
    if crate::interop::node_available() {
        for leaf in ["leaf1", "leaf2"] {
            let v = crate::interop::node_resolve(&id(leaf), &id("ta")).await;
            assert_eq!(v["chains"], 1, "{v}");
            // The client counts the statements below the anchor's configuration.
            assert_eq!(v["lengths"][0], 3, "{v}");
        }
        let v = crate::interop::node_resolve(&id("leaf1"), &id("ta")).await;
        assert_eq!(v["trust_marks"][0]["id"], TM, "{v}");
    }
}
