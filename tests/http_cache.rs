//! HTTP caching of federation answers (issue 19, acceptance 3): `Cache-Control: max-age`
//! never reaches past the signed statement's `exp` nor the next planned key change, a strong
//! `ETag` with `If-None-Match` → `304`, and `no-store` for errors, authenticated answers and
//! the Admin API.

use pharos_shared::jose;
use reqwest::Method;
use serde_json::json;

use crate::keys::{H, T0, start, tick};
use crate::support::{Pharos, TestDb, backends, enable, enc, jwk};

/// A GET with an optional `If-None-Match`: status, `Cache-Control`, `ETag`, body.
async fn get(p: &Pharos, path: &str, inm: Option<&str>) -> (u16, String, String, String) {
    let mut r = p.client.get(p.main_url(path));
    if let Some(tag) = inm {
        r = r.header("if-none-match", tag);
    }
    let r = r.send().await.unwrap();
    let h = |n: &str| {
        r.headers()
            .get(n)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default()
    };
    let (cc, etag) = (h("cache-control"), h("etag"));
    (r.status().as_u16(), cc, etag, r.text().await.unwrap())
}

/// The `max-age` of a `public, max-age=N` value.
fn max_age(cc: &str) -> i64 {
    assert!(cc.starts_with("public, max-age="), "{cc}");
    cc["public, max-age=".len()..].parse().unwrap()
}

fn exp_of(token: &str) -> i64 {
    jose::decode_unverified(token).unwrap().claims["exp"]
        .as_i64()
        .unwrap()
}

/// Checks a cacheable answer at `now`: a strong tag, a `304` (no body, same tag and
/// freshness) on a matching `If-None-Match`, also in its weak form and in a list, and a full
/// answer on another tag. Returns (max-age, tag, body).
async fn cacheable(p: &Pharos, path: &str) -> (i64, String, String) {
    let (s, cc, etag, body) = get(p, path, None).await;
    assert_eq!(s, 200, "{path}: {body}");
    assert!(
        etag.starts_with('"') && etag.ends_with('"'),
        "strong: {etag}"
    );
    let age = max_age(&cc);
    let (s, cc2, etag2, body2) = get(p, path, Some(&etag)).await;
    assert_eq!((s, body2.as_str()), (304, ""), "{path}");
    assert_eq!((cc2, &etag2), (cc.clone(), &etag));
    let (s, _, _, _) = get(p, path, Some(&format!("\"x\", W/{etag}"))).await;
    assert_eq!(s, 304, "weak comparison, in a list");
    let (s, _, etag3, body3) = get(p, path, Some("\"something-else\"")).await;
    assert_eq!((s, &etag3, &body3), (200, &etag, &body), "{path}");
    (age, etag, body)
}

#[tokio::test]
async fn max_age_stops_at_exp_and_at_the_next_key_change_and_304_on_a_matching_tag() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let (p, clock) = start(&db).await; // historical keys at /historical-keys
        let (s, _) = p
            .admin_raw(Method::PUT, "/entity-configuration/lifetime", Some("3600"))
            .await;
        assert_eq!(s, 200);
        let (s, v) = p
            .admin(
                Method::PUT,
                "/keys/rotation",
                Some(json!({"enabled": true, "interval": "48h", "overlap": "2h",
                            "key_announcement_lead_time": "6h"})),
            )
            .await;
        assert_eq!(s, 200, "{b:?} {v}");
        enable(&p, "fetch", "/fetch", json!({"statement_lifetime": 4 * H})).await;
        enable(&p, "list", "/list", json!({})).await;
        let leaf = "https://leaf.example.org";
        let short = "https://short.example.org";
        for (e, keys) in [
            (leaf, json!({"keys": [jwk("k", None)]})),
            // This subordinate's only key expires in 10 minutes: so does its statement.
            (short, json!({"keys": [jwk("s", Some(T0 + 600))]})),
        ] {
            let (s, v) = p
                .admin(
                    Method::POST,
                    "/subordinates",
                    Some(json!({"entity_id": e, "jwks": keys})),
                )
                .await;
            assert_eq!(s, 201, "{v}");
        }
        let switch = T0 + 48 * H; // the successor key starts signing then

        // Entity Configuration: fresh until it is re-signed, a minute before its exp.
        let ec = "/.well-known/openid-federation";
        let (age, tag0, body) = cacheable(&p, ec).await;
        assert_eq!(exp_of(&body), T0 + 3_600, "{b:?}");
        assert_eq!(age, 3_600 - 60, "{b:?}");

        // Fetch: the statement's exp bounds it (the first answer is signed, the second cached:
        // same tag).
        let fetch = format!("/fetch?sub={}", enc(leaf));
        let (age, tag, body) = cacheable(&p, &fetch).await;
        assert_eq!(exp_of(&body), T0 + 4 * H);
        assert_eq!(age, 4 * H - 60, "{b:?}");
        assert_eq!(cacheable(&p, &fetch).await.1, tag);
        let (age, _, body) = cacheable(&p, &format!("/fetch?sub={}", enc(short))).await;
        assert_eq!(exp_of(&body), T0 + 600);
        assert!(age < 600, "{age}");

        // Historical keys: re-signed hourly.
        let (age, _, _) = cacheable(&p, "/historical-keys").await;
        assert_eq!(age, H);

        // Ten minutes before the planned switch of signing keys nothing may be cached past
        // it, though the statements' exp is later.
        tick(&p, &clock, switch - 6 * H).await; // the successor is announced
        tick(&p, &clock, switch - 600).await;
        let (age, tag1, body) = cacheable(&p, ec).await;
        assert!(exp_of(&body) > switch);
        assert_eq!(age, 600, "{b:?}: the rotation plan bounds max-age");
        assert_ne!(tag1, tag0, "a new statement, a new tag");
        let (s, _, _, _) = get(&p, ec, Some(&tag0)).await;
        assert_eq!(s, 200, "an old tag gets the new statement");
        let (age, _, body) = cacheable(&p, &fetch).await;
        assert!(exp_of(&body) > switch);
        assert_eq!(age, 600, "{b:?}");
        let (age, _, _) = cacheable(&p, "/historical-keys").await;
        assert_eq!(age, 600, "{b:?}");

        // The list has no exp: a cache keeps it only with revalidation.
        let (s, cc, etag, body) = get(&p, "/list", None).await;
        assert_eq!((s, cc.as_str()), (200, "no-cache"));
        assert!(body.contains(leaf));
        let (s, _, _, body) = get(&p, "/list", Some(&etag)).await;
        assert_eq!((s, body.as_str()), (304, ""));
        let (s, v) = p
            .admin(
                Method::DELETE,
                &format!("/subordinates/{}", enc(short)),
                None,
            )
            .await;
        assert!((200..300).contains(&s), "{v}");
        let (s, _, etag2, _) = get(&p, "/list", Some(&etag)).await;
        assert_eq!(s, 200, "changed list");
        assert_ne!(etag2, etag);

        // Errors and the Admin API are never stored.
        for path in [
            "/fetch?sub=https%3A%2F%2Fnobody.example",
            "/fetch",
            "/nowhere",
        ] {
            let (s, cc, etag, _) = get(&p, path, None).await;
            assert!(s >= 400, "{path}");
            assert_eq!((cc.as_str(), etag.as_str()), ("no-store", ""), "{path}");
        }
        let r = p.get("/api/v1/admin/subordinates").await;
        assert_eq!(r.headers()["cache-control"], "no-store");
        p.stop().await;
    }
}

#[tokio::test]
async fn authenticated_answers_are_not_stored() {
    use crate::client_auth::{assertion, claims, each, signer};
    each(async |f, s| {
        for path in ["/list", "/historical-keys"] {
            let c = claims(f.client.entity_id(), s.entity_id(), |_| {});
            let a = assertion(signer(&f.client).as_ref(), &c);
            let r = s
                .client
                .post(s.main_url(path))
                .form(&[
                    (
                        "client_assertion_type",
                        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                    ),
                    ("client_assertion", a.as_str()),
                ])
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200, "{path}");
            assert_eq!(r.headers()["cache-control"], "no-store", "{path}");
        }
        // Without client authentication: refused, and the refusal is not stored either.
        let r = s
            .client
            .post(s.main_url("/list"))
            .form(&[("x", "y")])
            .send()
            .await
            .unwrap();
        assert!(r.status().is_client_error());
        assert_eq!(r.headers()["cache-control"], "no-store");
    })
    .await;
}
