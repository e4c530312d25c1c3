//! A federation on three loopback addresses: a leaf's Entity Configuration holding a trust
//! mark, the resolve response, the entity collection pages and trust mark requests.

use pharos_shared::time::Clock;
use reqwest::Method;
use serde_json::json;

use super::harness::*;
use crate::support::{enable, enc};

/// A federation on three loopback addresses (anchor, intermediate, leaf holding the anchor's
/// trust mark): the leaf's Entity Configuration, the resolve response, the entity collection
/// pages, and their errors.
#[tokio::test]
async fn federation() {
    let clock = stopped_clock();
    let (_dbs, [ta, ia, leaf]) = on_three_loopbacks(&clock).await;
    let ta_id = ta.entity_id().to_owned();
    let mut w = Wire::new(clock.now());
    w.learn(&ta, "ta").await;
    w.learn(&ia, "intermediate").await;
    w.learn(&leaf, "leaf").await;

    for (kind, path) in [
        ("fetch", "/fetch"),
        ("list", "/list"),
        ("trust_mark", "/trust-mark"),
        ("trust_mark_status", "/trust-mark-status"),
        ("trust_mark_request", "/trust-mark-request"),
    ] {
        enable(&ta, kind, path, json!({})).await;
    }
    enable(
        &ta,
        "resolve",
        "/resolve",
        json!({"allowed_trust_anchors": [ta_id]}),
    )
    .await;
    enable(
        &ta,
        "entity_collection",
        "/collection",
        json!({"allowed_trust_anchors": [ta_id], "pagination_limit": 10}),
    )
    .await;
    for (kind, path) in [("fetch", "/fetch"), ("list", "/list")] {
        enable(&ia, kind, path, json!({})).await;
    }
    ok(
        &leaf,
        Method::PUT,
        "/entity-configuration/metadata/openid_relying_party",
        json!({"client_name": "Shop", "client_name#it": "Negozio",
               "logo_uri": "https://shop.example/logo.png",
               "redirect_uris": ["https://shop.example/cb"]}),
    )
    .await;
    ok(
        &leaf,
        Method::PUT,
        "/entity-configuration/metadata/federation_entity",
        json!({"organization_name": "Acme Ltd", "organization_name#de": "Acme GmbH"}),
    )
    .await;
    for (sup, sub) in [(&ta, &ia), (&ia, &leaf)] {
        let jwks = sub.entity_configuration().await.claims["jwks"].clone();
        let body = json!({"entity_id": sub.entity_id(), "jwks": jwks});
        ok(sup, Method::POST, "/subordinates", body).await;
        let hint = json!({"entity_id": sup.entity_id()});
        ok(
            sub,
            Method::POST,
            "/entity-configuration/authority-hints",
            hint,
        )
        .await;
    }
    let tm_type = json!({"trust_mark_type": TM, "trust_mark_issuers": [{"issuer": ta_id}]});
    ok(&ta, Method::POST, "/trust-marks/types", tm_type).await;
    let spec = json!({"trust_mark_type": TM, "lifetime": "24h"});
    ok(&ta, Method::POST, "/trust-marks/issuance-spec", spec).await;
    let subjects = format!("/trust-marks/issuance-spec/{}/subjects", enc(TM));
    let body = json!({"entity_id": leaf.entity_id()});
    ok(&ta, Method::POST, &subjects, body).await;
    let held = json!({"trust_mark_type": TM, "trust_mark_issuer": ta_id,
        "refresh_grace_period": 600, "refresh_rate_limit": 3600});
    ok(
        &leaf,
        Method::POST,
        "/entity-configuration/trust-marks",
        held,
    )
    .await;
    let refreshers = leaf.app.as_ref().unwrap().refreshers.clone();
    crate::support::eventually("the leaf holds its mark", || async {
        refreshers.tick(clock.now()).await;
        leaf.entity_configuration()
            .await
            .claims
            .contains_key("trust_marks")
    })
    .await;

    let ec = w.each(vec![(
        "GET leaf /.well-known/openid-federation".into(),
        w.get(&leaf, "/.well-known/openid-federation").await,
    )]);
    w.snapshot("entity_configuration_leaf", &ec);

    let l_id = leaf.entity_id().to_owned();
    let resolve = |sub: &str, anchor: &str, extra: &str| {
        format!(
            "/resolve?sub={}&trust_anchor={}{extra}",
            enc(sub),
            enc(anchor)
        )
    };
    let answers = w.each(vec![
        (
            format!("GET /resolve?sub={l_id}&trust_anchor={ta_id}"),
            w.get(&ta, &resolve(&l_id, &ta_id, "")).await,
        ),
        (
            format!("GET /resolve?sub={l_id}&trust_anchor={ta_id}&entity_type=federation_entity"),
            w.get(
                &ta,
                &resolve(&l_id, &ta_id, "&entity_type=federation_entity"),
            )
            .await,
        ),
    ]);
    w.snapshot("resolve_response", &answers);
    let errors = w.each(vec![
        (
            format!("GET /resolve?trust_anchor={ta_id}"),
            w.get(&ta, &format!("/resolve?trust_anchor={}", enc(&ta_id)))
                .await,
        ),
        (
            format!("GET /resolve?sub={l_id}"),
            w.get(&ta, &format!("/resolve?sub={}", enc(&l_id))).await,
        ),
        (
            format!("GET /resolve?sub={l_id}&trust_anchor=https://other.example.org"),
            w.get(&ta, &resolve(&l_id, "https://other.example.org", ""))
                .await,
        ),
        (
            format!("GET /resolve?sub=http://127.0.0.1:9&trust_anchor={ta_id} (unreachable)"),
            w.get(&ta, &resolve("http://127.0.0.1:9", &ta_id, "")).await,
        ),
        (
            format!("POST /resolve sub={l_id}&trust_anchor={ta_id}"),
            w.post(&ta, "/resolve", &[("sub", &l_id), ("trust_anchor", &ta_id)])
                .await,
        ),
    ]);
    w.snapshot("resolve_errors", &errors);

    let mut answers = Vec::new();
    for (request, q) in [
        ("GET /collection".to_owned(), String::new()),
        (
            "GET /collection?entity_type=openid_relying_party".into(),
            "entity_type=openid_relying_party".into(),
        ),
        ("GET /collection?limit=1".into(), "limit=1".into()),
        (
            format!("GET /collection?limit=1&from={l_id}"),
            format!("limit=1&from={}", enc(&l_id)),
        ),
        (
            "GET /collection?entity_claims=entity_types&entity_claims=ui_infos&language_tag=de"
                .into(),
            "entity_claims=entity_types&entity_claims=ui_infos&language_tag=de".into(),
        ),
    ] {
        answers.push((request, w.get(&ta, &format!("/collection?{q}")).await));
    }
    w.snapshot("entity_collection", &w.each(answers));
    let mut errors = Vec::new();
    for q in [
        "trust_anchor=https%3A%2F%2Fother.example.org",
        "limit=0",
        "from=https%3A%2F%2Fnobody.example.org&limit=1",
        "entity_claims=nonsense",
        "trust_anchor=",
    ] {
        errors.push((
            format!(
                "GET /collection?{}",
                q.replace("%3A", ":").replace("%2F", "/")
            ),
            w.get(&ta, &format!("/collection?{q}")).await,
        ));
    }
    w.snapshot("entity_collection_errors", &w.each(errors));

    // Trust mark requests: a new subject (pending), asking again, a subject already entitled,
    // and the endpoint's errors.
    let i_id = ia.entity_id().to_owned();
    let request = |sub: &str, tm: &str| {
        let q: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("sub", sub)
            .append_pair("trust_mark_type", tm)
            .finish();
        format!("/trust-mark-request?{q}")
    };
    let mut answers = Vec::new();
    for (request, path) in [
        (
            format!("GET /trust-mark-request?sub={i_id}&trust_mark_type={TM} (new)"),
            request(&i_id, TM),
        ),
        (
            format!("GET /trust-mark-request?sub={i_id}&trust_mark_type={TM} (pending)"),
            request(&i_id, TM),
        ),
        (
            format!("GET /trust-mark-request?sub={l_id}&trust_mark_type={TM} (entitled)"),
            request(&l_id, TM),
        ),
        (
            format!("GET /trust-mark-request?trust_mark_type={TM}"),
            format!("/trust-mark-request?trust_mark_type={}", enc(TM)),
        ),
        (
            format!(
                "GET /trust-mark-request?sub={i_id}&trust_mark_type=https://unknown.example.org/tm"
            ),
            request(&i_id, "https://unknown.example.org/tm"),
        ),
    ] {
        answers.push((request, w.get(&ta, &path).await));
    }
    w.snapshot("trust_mark_request", &w.each(answers));
    for p in [leaf, ia, ta] {
        p.stop().await;
    }
}
