//! Signing key lifecycle on a manual clock: a full automatic rollover, a client that cached an
//! old Entity Configuration, and immediate rotation with revocation.

use std::sync::Arc;

use pharos_shared::jose::{self, Decoded, Jwks};
use pharos_shared::time::ManualClock;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Pharos, TestDb, backends};

pub const T0: i64 = 1_900_000_000;
pub const H: i64 = 3_600;

/// Pharos on a manual clock, with a historical keys endpoint at `/historical-keys`.
pub async fn start(db: &TestDb) -> (Pharos, Arc<ManualClock>) {
    let clock = ManualClock::new(T0);
    let p = Pharos::start_with(db, |_| {}, clock.clone()).await;
    let (s, v) = p
        .admin(
            Method::POST,
            "/federation-endpoints",
            Some(json!({"type": "historical_keys", "path": "/historical-keys"})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    (p, clock)
}

/// Moves the clock to `at` and runs the control plane's key task once, as its timer would.
pub async fn tick(p: &Pharos, clock: &ManualClock, at: i64) -> Option<i64> {
    clock.set(at);
    let cp = &p.app.as_ref().unwrap().control;
    cp.rotate_keys(at).await.unwrap()
}

pub async fn raw_ec(p: &Pharos) -> String {
    p.get("/.well-known/openid-federation")
        .await
        .text()
        .await
        .unwrap()
}

pub fn kids(ec: &Decoded) -> Vec<String> {
    ec.claims["jwks"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap().to_string())
        .collect()
}

/// The historical keys response, checked for media type, `typ` and signature (with the
/// current Entity Configuration's keys); returns its claims.
pub async fn historical(p: &Pharos) -> Decoded {
    let r = p.get("/historical-keys").await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/jwk-set+jwt");
    let token = r.text().await.unwrap();
    let ec = p.entity_configuration().await;
    let jwks: Jwks = serde_json::from_value(ec.claims["jwks"].clone()).unwrap();
    let d = jose::verify(&token, &jwks).unwrap();
    assert_eq!(d.header["typ"], "jwk-set+jwt");
    assert_eq!(d.claims["iss"], p.entity_id());
    assert!(d.claims["iat"].is_i64());
    d
}

pub fn find<'a>(keys: &'a Value, kid: &str) -> Option<&'a Value> {
    keys.as_array().unwrap().iter().find(|k| k["kid"] == kid)
}

#[tokio::test]
async fn full_rollover_announces_switches_and_retires_on_schedule() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let (p, clock) = start(&db).await;
        let l = H; // EC lifetime
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
        let lead = 6 * H;

        let ec0 = p.entity_configuration().await;
        let k0 = ec0.header["kid"].as_str().unwrap().to_string();
        assert_eq!(kids(&ec0), vec![k0.clone()], "{b:?}");
        // The current key now has an end: its successor takes over at T0 + 48h.
        let switch = T0 + 48 * H;
        assert_eq!(ec0.claims["jwks"]["keys"][0]["exp"], switch + 2 * H);

        // Nothing happens before the announcement instant.
        assert_eq!(tick(&p, &clock, T0 + H).await, Some(switch - lead));
        assert_eq!(kids(&p.entity_configuration().await), vec![k0.clone()]);

        // Announcement: the next key is published, the old one still signs.
        let announced = switch - lead;
        tick(&p, &clock, announced).await;
        let ec = p.entity_configuration().await;
        assert_eq!(ec.header["kid"], k0);
        let k1 = kids(&ec)
            .into_iter()
            .find(|k| *k != k0)
            .expect("next key announced");
        let next = find(&ec.claims["jwks"]["keys"], &k1).unwrap();
        assert_eq!(next["nbf"], switch);
        assert!(switch - announced >= lead && lead >= l);

        // A client caches the configuration shortly before the switch.
        tick(&p, &clock, switch - 60).await;
        let cached = raw_ec(&p).await;
        let cached_claims = jose::decode_unverified(&cached).unwrap().claims;
        let cached_jwks: Jwks = serde_json::from_value(cached_claims["jwks"].clone()).unwrap();
        assert_eq!(jose::decode_unverified(&cached).unwrap().header["kid"], k0);

        // The switch: every signed response now uses the new key, at the planned instant.
        tick(&p, &clock, switch).await;
        let ec = p.entity_configuration().await;
        assert_eq!(ec.header["kid"], k1, "{b:?}");
        assert_eq!(historical(&p).await.header["kid"], k1);
        assert!(
            kids(&ec).contains(&k0),
            "old key still verifies during the overlap"
        );

        // Acceptance 4: during the overlap the client's cached (old) configuration still
        // validates what is signed now, and the new configuration validates the old token.
        tick(&p, &clock, switch + H).await;
        let during = raw_ec(&p).await;
        let d = jose::verify(&during, &cached_jwks).unwrap();
        assert_eq!(d.header["kid"], k1);
        let hist = p.get("/historical-keys").await.text().await.unwrap();
        jose::verify(&hist, &cached_jwks).unwrap();
        let now_jwks: Jwks = serde_json::from_value(ec.claims["jwks"].clone()).unwrap();
        jose::verify(&cached, &now_jwks).unwrap();

        // End of the overlap: the old key leaves the jwks and is listed as historical.
        tick(&p, &clock, switch + 2 * H).await;
        let ec = p.entity_configuration().await;
        assert_eq!(kids(&ec), vec![k1.clone()], "{b:?}");
        let h = historical(&p).await;
        let old = find(&h.claims["keys"], &k0).expect("old key is historical");
        assert_eq!(old["exp"], switch + 2 * H);
        assert!(old["iat"].is_i64());
        assert!(old.get("revoked").is_none());
        assert!(old.get("d").is_none());
        p.stop().await;
    }
}

#[tokio::test]
async fn immediate_rotation_with_revocation_never_uses_the_old_key_again() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let (p, clock) = start(&db).await;
        let k0 = p.entity_configuration().await.header["kid"]
            .as_str()
            .unwrap()
            .to_string();
        let (s, _) = p
            .admin(Method::POST, "/kms/rotate?revoke=true&reason=bogus", None)
            .await;
        assert_eq!(s, 400);

        clock.set(T0 + 10);
        let (s, v) = p
            .admin(
                Method::POST,
                "/kms/rotate?revoke=true&reason=compromised",
                None,
            )
            .await;
        assert_eq!(s, 202, "{b:?} {v}");
        let ec = p.entity_configuration().await;
        let k1 = ec.header["kid"].as_str().unwrap().to_string();
        assert_ne!(k1, k0);
        assert!(!kids(&ec).contains(&k0), "revoked key is not published");

        let h = historical(&p).await;
        assert_eq!(h.header["kid"], k1);
        let old = find(&h.claims["keys"], &k0).expect("revoked key is historical");
        assert_eq!(
            old["revoked"],
            json!({"revoked_at": T0 + 10, "reason": "compromised"})
        );
        assert_eq!(old["exp"], T0 + 10);

        // Later, nothing is ever signed with it again.
        for at in [T0 + 100, T0 + 90_000, T0 + 900_000] {
            tick(&p, &clock, at).await;
            assert_ne!(p.entity_configuration().await.header["kid"], k0);
            assert_ne!(historical(&p).await.header["kid"], k0);
        }

        // Without revocation the old key keeps verifying for the overlap (default 1 h).
        let at = T0 + 1_000_000;
        clock.set(at);
        let (s, _) = p.admin(Method::POST, "/kms/rotate", None).await;
        assert_eq!(s, 202);
        let ec = p.entity_configuration().await;
        let k2 = ec.header["kid"].as_str().unwrap().to_string();
        assert_ne!(k2, k1);
        let prev = find(&ec.claims["jwks"]["keys"], &k1).expect("still published");
        assert_eq!(prev["exp"], at + H);
        tick(&p, &clock, at + H).await;
        let h = historical(&p).await;
        assert!(
            find(&h.claims["keys"], &k1)
                .unwrap()
                .get("revoked")
                .is_none()
        );
        p.stop().await;
    }
}
