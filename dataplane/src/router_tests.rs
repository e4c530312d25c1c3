//! The public router in process, over snapshots from [`crate::test_support`]: no sockets, no
//! database, the control plane played by a [`SnapshotPublisher`].

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failing unwrap is a failing test

use std::sync::Arc;

use axum::http::{StatusCode, header};
use pharos_shared::endpoint::EndpointType;
use pharos_shared::entity_configuration::ENTITY_STATEMENT_TYP;
use pharos_shared::snapshot::SnapshotPublisher;

use crate::test_support::{
    ENTITY_ID, FETCH_RP, RP, SnapshotBuilder, answer, data_plane, federation, get, request, routed,
};

#[tokio::test]
async fn entity_configuration_has_its_media_type_and_verifies_with_the_snapshot_key() {
    let (dp, publisher) = data_plane(federation().build());
    let a = get(&dp, "/.well-known/openid-federation").await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.content_type(), "application/entity-statement+jwt");
    let ec = a.verified(&publisher.load_full(), ENTITY_STATEMENT_TYP);
    assert_eq!(ec.claims["iss"], ENTITY_ID);
    assert_eq!(ec.claims["sub"], ENTITY_ID);
    let fe = &ec.claims["metadata"]["federation_entity"];
    assert_eq!(
        fe["federation_fetch_endpoint"],
        format!("{ENTITY_ID}/fetch"),
        "the registry's endpoints are published"
    );
}

#[tokio::test]
async fn fetch_signs_a_statement_about_an_active_subordinate() {
    let (dp, publisher) = data_plane(federation().build());
    let a = get(&dp, FETCH_RP).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.content_type(), "application/entity-statement+jwt");
    let st = a.verified(&publisher.load_full(), ENTITY_STATEMENT_TYP);
    assert_eq!(st.claims["iss"], ENTITY_ID);
    assert_eq!(st.claims["sub"], RP);
    assert_eq!(st.claims["source_endpoint"], format!("{ENTITY_ID}/fetch"));
    assert_eq!(
        get(&dp, FETCH_RP).await.body,
        a.body,
        "the cached statement"
    );

    let unknown = get(&dp, "/fetch?sub=https%3A%2F%2Fnobody.example.org").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.json()["error"], "not_found");
    let no_sub = get(&dp, "/fetch").await;
    assert_eq!(no_sub.status, StatusCode::BAD_REQUEST);
    assert_eq!(no_sub.json()["error"], "invalid_request");
}

#[tokio::test]
async fn list_names_the_active_subordinates() {
    let snap = federation().subordinate("https://op.example.org").build();
    let (dp, _publisher) = data_plane(snap);
    let a = get(&dp, "/list").await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.content_type(), "application/json");
    assert_eq!(
        a.json(),
        serde_json::json!(["https://op.example.org", "https://rp.example.org"])
    );
    let none = get(&dp, "/list?entity_type=openid_provider").await;
    assert_eq!(none.json(), serde_json::json!([]));
}

#[tokio::test]
async fn an_unregistered_path_is_404() {
    let (dp, _publisher) = data_plane(federation().build());
    let a = get(&dp, "/resolve?sub=x&trust_anchor=y").await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    assert_eq!(a.content_type(), "application/json");
    assert_eq!(a.json()["error"], "not_found");
}

#[tokio::test]
async fn a_wrong_method_is_405_naming_the_allowed_one() {
    let snap = federation()
        .endpoint(EndpointType::JwksUpdate, "/jwks-update")
        .endpoint_with(EndpointType::Resolve, "/resolve", true)
        .build();
    let (dp, _publisher) = data_plane(snap);
    for (method, uri, allow) in [
        ("POST", FETCH_RP, "GET"),
        ("DELETE", "/list", "GET"),
        ("GET", "/jwks-update", "POST"),
        // With client authentication the parameters travel in a form body.
        ("GET", "/resolve?sub=x&trust_anchor=y", "POST"),
    ] {
        let a = request(&dp, method, uri).await;
        assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED, "{method} {uri}");
        assert_eq!(a.headers[header::ALLOW], allow, "{method} {uri}");
        assert_eq!(a.json()["error"], "method_not_allowed");
    }
}

#[tokio::test]
async fn a_published_snapshot_changes_the_next_answer() {
    let (dp, publisher) = data_plane(federation().build());
    let newcomer = "/fetch?sub=https%3A%2F%2Fnew.example.org";
    assert_eq!(get(&dp, newcomer).await.status, StatusCode::NOT_FOUND);
    assert_eq!(get(&dp, "/historical").await.status, StatusCode::NOT_FOUND);
    let ec_before = get(&dp, "/.well-known/openid-federation").await.body;

    publish(
        &publisher,
        federation()
            .subordinate("https://new.example.org")
            .endpoint(EndpointType::HistoricalKeys, "/historical")
            .generation(2),
    );

    let a = get(&dp, newcomer).await;
    assert_eq!(a.status, StatusCode::OK);
    let st = a.verified(&publisher.load_full(), ENTITY_STATEMENT_TYP);
    assert_eq!(st.claims["sub"], "https://new.example.org");
    assert_eq!(
        get(&dp, "/list").await.json(),
        serde_json::json!(["https://new.example.org", "https://rp.example.org"])
    );
    let hk = get(&dp, "/historical").await;
    assert_eq!(hk.status, StatusCode::OK);
    assert_eq!(hk.content_type(), "application/jwk-set+jwt");
    let ec = get(&dp, "/.well-known/openid-federation").await;
    assert_ne!(ec.body, ec_before, "signed again for the new generation");
    let ec = ec.verified(&publisher.load_full(), ENTITY_STATEMENT_TYP);
    assert!(
        ec.claims["metadata"]["federation_entity"]
            .get("federation_historical_keys_endpoint")
            .is_some()
    );
}

fn publish(publisher: &SnapshotPublisher, next: SnapshotBuilder) {
    publisher.publish(Arc::new(next.build()));
}

/// The ready answers given before routing (`crate::front`) are the router's answers: same
/// status, headers and body for the Entity Configuration and a cached fetch, a `304` on a
/// matching tag; a path under a foreign prefix goes to the router even when an endpoint is
/// registered there.
#[tokio::test]
async fn ready_answers_are_the_routers_answers() {
    use axum::body::Body;
    use axum::extract::Request;
    use tower::ServiceExt as _;

    let (dp, _publisher) = data_plane(federation().build());
    for path in ["/.well-known/openid-federation", FETCH_RP] {
        let first = routed(&dp, path).await; // signs and caches
        let ready = get(&dp, path).await;
        let mut again = routed(&dp, path).await;
        assert_eq!(ready.status, StatusCode::OK, "{path}");
        assert_eq!(ready.body, first.body, "{path}");
        // axum's router states the length; hyper states it from the body's exact size
        // otherwise, so on the wire both carry it.
        again.headers.remove(header::CONTENT_LENGTH);
        assert_eq!(ready.headers, again.headers, "{path}");
        assert!(ready.headers.contains_key(header::ETAG), "{path}");
        let cc = ready.headers[header::CACHE_CONTROL].to_str().unwrap();
        assert!(cc.starts_with("public, max-age="), "{path}: {cc}");
        let tag = ready.headers[header::ETAG].clone();
        let req = Request::get(path)
            .header(header::IF_NONE_MATCH, tag)
            .body(Body::empty())
            .unwrap();
        let front =
            crate::front::Front::with_ready_answers(crate::router(dp.clone()), dp.clone(), &[]);
        let not_modified = answer(front.oneshot(req).await.unwrap()).await;
        assert_eq!(not_modified.status, StatusCode::NOT_MODIFIED, "{path}");
        assert!(not_modified.body.is_empty());
        assert_eq!(not_modified.headers[header::CACHE_CONTROL], cc);
    }
    // A path under a foreign prefix is the router's even when a ready answer exists; others
    // are answered before the router.
    let marked = || {
        crate::router(dp.clone()).layer(axum::middleware::map_response(
            |mut r: axum::response::Response| async move {
                r.headers_mut()
                    .insert("x-routed", axum::http::HeaderValue::from_static("1"));
                r
            },
        ))
    };
    for (foreign, routed) in [(&["/fe"][..], true), (&["/list"][..], false)] {
        let front = crate::front::Front::with_ready_answers(marked(), dp.clone(), foreign);
        let req = Request::get(FETCH_RP).body(Body::empty()).unwrap();
        let a = answer(front.oneshot(req).await.unwrap()).await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(a.headers.contains_key("x-routed"), routed, "{foreign:?}");
    }
}

/// A fetch about our own identifier is refused (ask the Entity Configuration), also when that
/// identifier is listed among the subordinates, on the ready path as on the router's; the
/// other subordinates are served from the ready path.
#[tokio::test]
async fn a_fetch_about_ourselves_is_refused_even_when_we_are_listed() {
    let own = format!(
        "/fetch?sub={}",
        ENTITY_ID.replace(':', "%3A").replace('/', "%2F")
    );
    for listed in [false, true] {
        let snap = match listed {
            true => federation().subordinate(ENTITY_ID),
            false => federation(),
        };
        let (dp, _publisher) = data_plane(snap.build());
        assert_eq!(dp.snapshot_ref().ready().unwrap().own_id_listed(), listed);
        for _ in 0..2 {
            for a in [get(&dp, &own).await, routed(&dp, &own).await] {
                assert_eq!(a.status, StatusCode::BAD_REQUEST, "listed: {listed}");
                assert_eq!(a.json()["error"], "invalid_request", "listed: {listed}");
            }
        }
        routed(&dp, FETCH_RP).await; // signs
        let ready = get(&dp, FETCH_RP).await;
        assert_eq!(ready.status, StatusCode::OK, "listed: {listed}");
        assert_eq!(dp.caches.get(crate::cache_counters::Cache::Fetch).0, 1);
    }
}

/// The port's front, hosting entity 2 at `https://fed.example.org/edu` with the front
/// `hosted` (its route counted in `metrics`, when given) beside a default entity.
fn hosting_edu(
    hosted: crate::front::Front,
    metrics: Option<&crate::stats::metrics::RequestMetrics>,
) -> crate::front::Front {
    hosting("https://fed.example.org/edu", hosted, metrics)
}

/// The default entity's front, hosting `hosted` as entity 2 identified by `entity_id`.
fn hosting(
    entity_id: &str,
    hosted: crate::front::Front,
    metrics: Option<&crate::stats::metrics::RequestMetrics>,
) -> crate::front::Front {
    use pharos_shared::client_ip::TrustedProxies;
    use pharos_shared::hosted::EntityNo;

    let route =
        crate::hosts::HostedRoute::new(EntityNo::new(2).unwrap(), entity_id, hosted).unwrap();
    let route = match metrics {
        Some(m) => route.counted_in(m),
        None => route,
    };
    let hosts = crate::hosts::Hosts::new(TrustedProxies::default(), &[]);
    hosts.update(|t| t.with(route.clone()));
    let (default_dp, _default) = data_plane(federation().build());
    crate::front::Front::with_ready_answers(crate::router(default_dp.clone()), default_dp, &[])
        .hosting(hosts)
}

/// Publishes a snapshot whose fetch endpoint is at `/f2`; `FETCH_RP` at that path.
fn move_fetch_to_f2(publisher: &SnapshotPublisher) -> String {
    publish(
        publisher,
        SnapshotBuilder::new()
            .generation(2)
            .endpoint(EndpointType::Fetch, "/f2")
            .subordinate(RP),
    );
    FETCH_RP.replace("/fetch", "/f2")
}

/// A hosted entity's kept answers (its Entity Configuration and cached fetches) count in the
/// series their route found on their first request: that of the request's whole path, under
/// the entity's number, in the port's metrics only. A path the route did not keep (the fetch
/// moved) is looked up as any other.
#[tokio::test]
async fn a_hosted_entitys_kept_answers_count_in_their_routes_series() {
    use axum::body::Body;
    use axum::extract::Request;
    use pharos_shared::hosted::EntityNo;
    use prometheus_client::registry::Registry;
    use tower::Service as _;

    use crate::hosts::ServedBy as _;
    use crate::stats::metrics::RequestMetrics;

    let metrics = RequestMetrics::default();
    let (dp, publisher) = data_plane(federation().build());
    let hosted = crate::front::Front::with_ready_answers(crate::router(dp.clone()), dp, &[]);
    let front = hosting_edu(hosted, Some(&metrics));
    let ask = |path: String| {
        let mut front = front.clone();
        async move {
            let req = Request::get(path)
                .header(header::HOST, "fed.example.org")
                .body(Body::empty())
                .unwrap();
            let answer = front.call(req);
            let served = answer.served_by();
            (served, answer.await.unwrap().status())
        }
    };
    let ec = "/edu/.well-known/openid-federation".to_owned();
    let fetch = format!("/edu{FETCH_RP}");
    for path in [&ec, &fetch] {
        // The first signs, through the router; the next is kept.
        let (first, status) = ask(path.clone()).await;
        assert_eq!(status, StatusCode::OK);
        assert!(first.series.is_none(), "{path}: routed");
        let (kept, status) = ask(path.clone()).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(kept.entity, EntityNo::new(2));
        let series = kept
            .series
            .unwrap_or_else(|| panic!("{path}: a kept series"));
        assert!(metrics.observe_known(series, 200, 0.0));
        assert!(
            !RequestMetrics::default().observe_known(series, 200, 0.0),
            "another's series is not counted"
        );
        // The same series on every kept answer.
        let (again, _) = ask(path.clone()).await;
        assert!(
            again
                .series
                .is_some_and(|s| metrics.observe_known(s, 200, 0.0))
        );
    }
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for label in ["edu/.well-known/openid-federation", "edu/fetch"] {
        let line = format!(
            r#"pharos_http_requests_total{{endpoint="{label}",status="200",entity="2"}} 2"#
        );
        assert!(text.contains(&line), "{line} in\n{text}");
    }

    // The fetch moves: its new path is kept, but not its series (looked up when counted).
    let moved = format!("/edu{}", move_fetch_to_f2(&publisher));
    assert_eq!(ask(moved.clone()).await.1, StatusCode::OK);
    let (kept, status) = ask(moved).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(kept.entity, EntityNo::new(2));
    assert!(kept.series.is_none());
}

/// An entity whose names are too long for the table's slot is answered from its route's own
/// copy of its kept Entity Configuration, counted in its series as one the slot answers.
#[tokio::test]
async fn a_hosted_entity_too_long_for_a_slot_keeps_its_entity_configuration_too() {
    use axum::body::Body;
    use axum::extract::Request;
    use pharos_shared::hosted::EntityNo;
    use tower::Service as _;

    use crate::hosts::ServedBy as _;
    use crate::stats::metrics::RequestMetrics;

    let host = format!("{}.example.org", "h".repeat(40));
    let metrics = RequestMetrics::default();
    let (dp, _publisher) = data_plane(federation().build());
    let hosted = crate::front::Front::with_ready_answers(crate::router(dp.clone()), dp, &[]);
    let front = hosting(&format!("https://{host}/edu"), hosted, Some(&metrics));
    let mut served = Vec::new();
    for _ in 0..3 {
        let req = Request::get("/edu/.well-known/openid-federation")
            .header(header::HOST, host.as_str())
            .body(Body::empty())
            .unwrap();
        let answer = front.clone().call(req);
        let by = answer.served_by();
        assert_eq!(answer.await.unwrap().status(), StatusCode::OK);
        assert_eq!(by.entity, EntityNo::new(2));
        served.push(by.series);
    }
    // The first signs, through the router; the next are kept, in one series of these metrics.
    assert!(served[0].is_none());
    for series in &served[1..] {
        assert!(series.is_some_and(|s| metrics.observe_known(s, 200, 0.0)));
    }
}

/// A hosted entity's cached fetch is answered from its route (the snapshot at its
/// publication point), as its router would answer it: the first request goes to its router
/// and signs, the next ones are answered before routing with the same status, headers and
/// body, a matching tag gets `304`, and a new snapshot that moves the endpoint is followed at
/// once.
#[tokio::test]
async fn a_hosted_entitys_cached_fetch_is_its_routers_answer() {
    use axum::body::Body;
    use axum::extract::Request;
    use tower::ServiceExt as _;

    let (dp, publisher) = data_plane(federation().build());
    let marked = crate::router(dp.clone()).layer(axum::middleware::map_response(
        |mut r: axum::response::Response| async move {
            r.headers_mut()
                .insert("x-routed", axum::http::HeaderValue::from_static("1"));
            r
        },
    ));
    let hosted = crate::front::Front::with_ready_answers(marked, dp.clone(), &[]);
    let front = hosting_edu(hosted, None);
    let ask = |path: String, tag: Option<axum::http::HeaderValue>| {
        let front = front.clone();
        async move {
            let mut req = Request::get(path).header(header::HOST, "fed.example.org");
            if let Some(tag) = tag {
                req = req.header(header::IF_NONE_MATCH, tag);
            }
            answer(
                front
                    .oneshot(req.body(Body::empty()).unwrap())
                    .await
                    .unwrap(),
            )
            .await
        }
    };
    let at_edu = |path: &str| format!("/edu{path}");

    let first = ask(at_edu(FETCH_RP), None).await;
    assert_eq!(first.status, StatusCode::OK);
    assert!(first.headers.contains_key("x-routed"), "the first signs");
    let mut routed_headers = first.headers.clone();
    routed_headers.remove("x-routed");
    routed_headers.remove(header::CONTENT_LENGTH);
    let ready = ask(at_edu(FETCH_RP), None).await;
    assert_eq!(ready.status, StatusCode::OK);
    assert!(
        !ready.headers.contains_key("x-routed"),
        "answered before routing"
    );
    assert_eq!(ready.body, first.body);
    assert_eq!(ready.headers, routed_headers);
    let tag = ready.headers[header::ETAG].clone();
    let not_modified = ask(at_edu(FETCH_RP), Some(tag)).await;
    assert_eq!(not_modified.status, StatusCode::NOT_MODIFIED);
    assert!(!not_modified.headers.contains_key("x-routed"));

    // The endpoint moves: the old path is the router's 404 at once, the new one serves.
    let new_path = move_fetch_to_f2(&publisher);
    assert_eq!(ask(at_edu(&new_path), None).await.status, StatusCode::OK);
    let again = ask(at_edu(&new_path), None).await;
    assert_eq!(again.status, StatusCode::OK);
    assert!(!again.headers.contains_key("x-routed"));
    // With the statement signed, the old path is still no fetch endpoint.
    let gone = ask(at_edu(FETCH_RP), None).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    assert!(gone.headers.contains_key("x-routed"));
}
