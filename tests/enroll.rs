//! The enroll endpoint between real Pharos instances (issue 15): a leaf, a member of the
//! anchor's federation, enrolls at an intermediate whose `trust_path` check asks for a chain
//! to the anchor, and then resolves through it (acceptance 1); and what an enrollment answers
//! for every stored status (acceptance 5). Helpers shared with `enroll_request.rs` and
//! `enroll_refusals.rs`.

use crate::fetch_list::{enable, status_of};
use crate::interop::{node_available, node_resolve};
use crate::resolve::{enable_resolve, resolve, verified};
use crate::support::{Backend, Pharos, TestDb, backends, enc};
use pharos_shared::jose::{self, Jwks};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::Row;

/// An enrollment answer: status, content type, body.
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    pub body: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// `(status, error)` of an error answer.
    pub fn error(&self) -> (u16, String) {
        let code = self.json()["error"].as_str().unwrap_or_default().to_owned();
        (self.status, code)
    }
}

/// GET `path?sub=..&entity_type=..` (the endpoints take POST only with client
/// authentication, as every federation endpoint).
pub async fn ask(p: &Pharos, path: &str, sub: &str, types: &[&str]) -> Answer {
    let mut form = vec![("sub", sub)];
    form.extend(types.iter().map(|t| ("entity_type", *t)));
    let url = url::Url::parse_with_params(&p.main_url(path), &form).unwrap();
    let r = p.client.get(url).send().await.unwrap();
    let status = r.status().as_u16();
    let content_type = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    Answer {
        status,
        content_type,
        body: r.text().await.unwrap(),
    }
}

/// Verifies a `201` enrollment answer with `sup`'s published keys: a subordinate statement
/// by `sup` about `sub`; returns its claims.
pub async fn statement(sup: &Pharos, a: &Answer, sub: &str) -> serde_json::Map<String, Value> {
    assert_eq!(a.status, 201, "{}", a.body);
    assert_eq!(a.content_type, "application/entity-statement+jwt");
    let keys: Jwks =
        serde_json::from_value(sup.entity_configuration().await.claims["jwks"].clone()).unwrap();
    let d = jose::verify(&a.body, &keys).unwrap();
    jose::check_typ(&d, "entity-statement+jwt").unwrap();
    assert_eq!(d.claims["iss"], sup.entity_id());
    assert_eq!(d.claims["sub"], sub);
    d.claims
}

/// `(entity_id, status)` of every subordinate row, read from the database itself.
pub async fn rows(db: &TestDb) -> Vec<(String, String)> {
    let d = db.pool().await;
    let r = sqlx::query("SELECT entity_id, status FROM subordinates ORDER BY entity_id")
        .fetch_all(d.pool())
        .await
        .unwrap();
    r.iter()
        .map(|r| (r.get::<String, _>(0), r.get::<String, _>(1)))
        .collect()
}

/// How many subordinate history events the database holds.
pub async fn event_count(db: &TestDb) -> i64 {
    let d = db.pool().await;
    sqlx::query("SELECT COUNT(*) FROM subordinate_events")
        .fetch_one(d.pool())
        .await
        .unwrap()
        .get::<i64, _>(0)
}

/// `(type, actor, status)` of `sub`'s history at `sup`, oldest first.
pub async fn history(sup: &Pharos, sub: &str) -> Vec<(String, String, String)> {
    let path = format!("/subordinates/{}/history", enc(sub));
    let (s, h) = sup.admin(Method::GET, &path, None).await;
    assert_eq!(s, 200, "{h}");
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let mut events: Vec<_> = h["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (s(&e["type"]), s(&e["actor"]), s(&e["status"])))
        .collect();
    events.reverse();
    events
}

/// Sets `sub`'s status at `sup` through the Admin API (approve / decline).
pub async fn set_status(sup: &Pharos, sub: &str, status: &str) {
    let path = format!("/subordinates/{}/status", enc(sub));
    let (s, v) = sup.admin_raw(Method::PUT, &path, Some(status)).await;
    assert_eq!(s, 200, "{v}");
}

/// Gives `p` openid_relying_party metadata (its types: federation_entity and that).
pub async fn relying_party(p: &Pharos) {
    let rp = json!({"client_name": "leaf", "client_registration_types": ["automatic"]});
    let (s, v) = p
        .admin(
            Method::PUT,
            "/entity-configuration/metadata/openid_relying_party",
            Some(rp),
        )
        .await;
    assert!((200..300).contains(&s), "{v}");
}

/// Makes `sub` name `sup` in its `authority_hints` (enrollment requires it).
pub async fn names_superior(sub: &Pharos, sup: &Pharos) {
    let hint = json!({"entity_id": sup.entity_id()});
    admin_ok(
        sub,
        Method::POST,
        "/entity-configuration/authority-hints",
        hint,
    )
    .await;
}

/// Registers `sub` at `sup` as an active subordinate with its published keys.
async fn register(sup: &Pharos, sub: &Pharos) {
    let keys = sub.entity_configuration().await.claims["jwks"].clone();
    let body = json!({"entity_id": sub.entity_id(), "jwks": keys});
    admin_ok(sup, Method::POST, "/subordinates", body).await;
}

async fn admin_ok(p: &Pharos, method: Method, path: &str, body: Value) {
    let (s, v) = p.admin(method, path, Some(body)).await;
    assert!((200..300).contains(&s), "{path}: {s} {v}");
}

#[tokio::test]
async fn a_leaf_enrolls_with_a_trust_path_check_and_resolves_through_the_intermediate() {
    for b in backends() {
        let (db_a, db_i, db_l) = (
            TestDb::new(b).await,
            TestDb::new(b).await,
            TestDb::new(b).await,
        );
        let (ta, i, l) = (
            Pharos::start(&db_a).await,
            Pharos::start(&db_i).await,
            Pharos::start(&db_l).await,
        );
        let (ta_id, i_id, l_id) = (ta.entity_id(), i.entity_id(), l.entity_id());
        // The anchor: fetch endpoint, I as its subordinate.
        enable(&ta, "fetch", "/fetch", json!({})).await;
        register(&ta, &i).await;
        // The intermediate: under the anchor, which is in its trust anchor repository, and
        // enrolling whoever has a trust chain to it.
        let hint = json!({"entity_id": ta_id});
        admin_ok(
            &i,
            Method::POST,
            "/entity-configuration/authority-hints",
            hint,
        )
        .await;
        let ta_keys = ta.entity_configuration().await.claims["jwks"].clone();
        let anchor = json!({"entity_id": ta_id, "jwks": ta_keys});
        admin_ok(&i, Method::POST, "/trust-anchors", anchor).await;
        enable(&i, "fetch", "/fetch", json!({})).await;
        let check =
            json!({"checker": {"type": "trust_path", "config": {"trust_anchors": [ta_id]}}});
        enable(&i, "enroll", "/enroll", check).await;
        // The leaf is a member of the anchor's federation (registered there directly) and
        // names both as superiors: trust_path asks for a chain that exists before the
        // enrollment, and the one through the intermediate exists only after it.
        relying_party(&l).await;
        register(&ta, &l).await;
        for sup in [ta_id, i_id] {
            let hint = json!({"entity_id": sup});
            admin_ok(
                &l,
                Method::POST,
                "/entity-configuration/authority-hints",
                hint,
            )
            .await;
        }

        // An entity without a chain to the anchor is denied, and nothing is stored.
        let (db_x, db_s) = (TestDb::new(b).await, TestDb::new(Backend::Sqlite).await);
        let stranger = Pharos::start(&db_x).await;
        names_superior(&stranger, &i).await;
        let a = ask(&i, "/enroll", stranger.entity_id(), &[]).await;
        assert_eq!(a.error(), (403, "forbidden".into()), "{b:?} {}", a.body);
        assert!(rows(&db_i).await.is_empty());

        let a = ask(&i, "/enroll", l_id, &[]).await;
        let st = statement(&i, &a, l_id).await;
        let leaf_keys = l.entity_configuration().await.claims["jwks"].clone();
        assert_eq!(st["jwks"], leaf_keys);
        assert_eq!(rows(&db_i).await, [(l_id.to_owned(), "active".to_owned())]);
        let (s, sub) = i
            .admin(Method::GET, &format!("/subordinates/{}", enc(l_id)), None)
            .await;
        assert_eq!(s, 200);
        assert_eq!(
            sub["registered_entity_types"],
            json!(["federation_entity", "openid_relying_party"])
        );
        assert_eq!(
            status_of(&i, &format!("/fetch?sub={}", enc(l_id))).await.0,
            200
        );

        // The leaf now lives under the intermediate only.
        let (s, v) = ta
            .admin(
                Method::DELETE,
                &format!("/subordinates/{}", enc(l_id)),
                None,
            )
            .await;
        assert_eq!(s, 204, "{v}");
        let path = format!("/entity-configuration/authority-hints/{}", enc(ta_id));
        let (s, v) = l.admin(Method::DELETE, &path, None).await;
        assert_eq!(s, 204, "{v}");

        // A Pharos resolver finds leaf → intermediate → anchor.
        let r = Pharos::start(&db_s).await;
        enable_resolve(&r, json!({"allowed_trust_anchors": [ta_id]})).await;
        let (s, body) = resolve(&r, l_id, &[ta_id], &[]).await;
        assert_eq!(s, 200, "{b:?} {body}");
        let c = verified(&r, &body).await;
        let chain: Vec<Value> = c["trust_chain"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| Value::Object(jose::decode_unverified(j.as_str().unwrap()).unwrap().claims))
            .collect();
        let hops: Vec<(&str, &str)> = chain
            .iter()
            .map(|c| (c["iss"].as_str().unwrap(), c["sub"].as_str().unwrap()))
            .collect();
        assert_eq!(
            hops,
            [(l_id, l_id), (i_id, l_id), (ta_id, i_id), (ta_id, ta_id)]
        );
        assert_eq!(c["metadata"]["openid_relying_party"]["client_name"], "leaf");

        // An independent client validates the same chain.
        if b == Backend::Sqlite && node_available() {
            let v = node_resolve(l_id, ta_id).await;
            assert_eq!(v["chains"], 1, "{v}");
            // Its chain holds L, I→L, TA→I (without the anchor's EC).
            assert_eq!(v["lengths"][0], 3, "{v}");
            assert_eq!(v["metadata"]["openid_relying_party"]["client_name"], "leaf");
        }
    }
}

#[tokio::test]
async fn every_stored_status_gets_its_answer() {
    for b in backends() {
        let (db_s, db_l) = (TestDb::new(b).await, TestDb::new(b).await);
        let (sup, leaf) = (Pharos::start(&db_s).await, Pharos::start(&db_l).await);
        enable(&sup, "fetch", "/fetch", json!({})).await;
        enable(&sup, "enroll", "/enroll", json!({})).await;
        enable(&sup, "enroll_request", "/enroll-request", json!({})).await;
        let id = leaf.entity_id();
        relying_party(&leaf).await;
        names_superior(&leaf, &sup).await;

        // New, with the types given: enrolled with them.
        let a = ask(&sup, "/enroll", id, &["openid_relying_party"]).await;
        let first = statement(&sup, &a, id).await;
        let (_, rec) = sup
            .admin(Method::GET, &format!("/subordinates/{}", enc(id)), None)
            .await;
        assert_eq!(
            rec["registered_entity_types"],
            json!(["openid_relying_party"])
        );
        assert_eq!(rec["status"], "active", "{b:?}");

        // Active: a statement again, the one the fetch endpoint serves; enroll_request: 204.
        let a = ask(&sup, "/enroll", id, &[]).await;
        let again = statement(&sup, &a, id).await;
        assert_eq!(again["jwks"], first["jwks"]);
        let fetched = crate::fetch_list::fetch(&sup, id).await;
        assert_eq!(Value::Object(again), fetched);
        assert_eq!(ask(&sup, "/enroll-request", id, &[]).await.status, 204);

        // Pending: 202 with the reason; enroll_request: 202 without a body.
        set_status(&sup, id, "pending").await;
        let a = ask(&sup, "/enroll", id, &[]).await;
        assert_eq!(a.error(), (202, "invalid_request".into()));
        assert_eq!(
            a.json()["error_description"],
            "the enrollment needs to be approved by an administrator"
        );
        let a = ask(&sup, "/enroll-request", id, &[]).await;
        assert_eq!((a.status, a.body.as_str()), (202, ""));

        // Blocked: 403 at both.
        set_status(&sup, id, "blocked").await;
        for path in ["/enroll", "/enroll-request"] {
            let a = ask(&sup, path, id, &[]).await;
            assert_eq!(a.error(), (403, "invalid_request".into()), "{path}");
        }

        // Inactive: an administrator's decision, which enrollment does not change (lighthouse
        // answers 500 here, reference §13 item 12; Pharos before issue 31 reactivated it).
        set_status(&sup, id, "inactive").await;
        let events = event_count(&db_s).await;
        for path in ["/enroll", "/enroll-request"] {
            let a = ask(&sup, path, id, &[]).await;
            assert_eq!(a.error(), (403, "invalid_request".into()), "{path}");
            let d = a.json()["error_description"].as_str().unwrap().to_owned();
            assert!(d.contains("inactive") && d.contains("administrator"), "{d}");
        }
        assert_eq!(rows(&db_s).await, [(id.to_owned(), "inactive".to_owned())]);
        assert_eq!(event_count(&db_s).await, events);
        set_status(&sup, id, "pending").await;

        // Still there after a restart.
        let sup = sup.restart().await;
        let a = ask(&sup, "/enroll", id, &[]).await;
        assert_eq!(a.status, 202);
    }
}

/// Issue 31: enrollment needs the entity's word (its `authority_hints` name us), takes only
/// the types its metadata declares, and never changes what an administrator set: status,
/// keys and types of an existing subordinate.
#[tokio::test]
async fn enrollment_needs_the_entitys_word_and_never_overrides_an_administrator() {
    for b in backends() {
        let (db_s, db_l, db_x) = (
            TestDb::new(b).await,
            TestDb::new(b).await,
            TestDb::new(b).await,
        );
        let sup = Pharos::start(&db_s).await;
        let (leaf, stranger) = (Pharos::start(&db_l).await, Pharos::start(&db_x).await);
        enable(&sup, "fetch", "/fetch", json!({})).await;
        enable(&sup, "enroll", "/enroll", json!({})).await;
        enable(&sup, "enroll_request", "/enroll-request", json!({})).await;
        relying_party(&leaf).await;
        relying_party(&stranger).await;
        names_superior(&leaf, &sup).await;

        // Not naming us as a superior: refused, nothing stored.
        for path in ["/enroll", "/enroll-request"] {
            let a = ask(&sup, path, stranger.entity_id(), &[]).await;
            assert_eq!(a.error(), (400, "invalid_request".into()), "{b:?} {path}");
            let d = a.json()["error_description"].as_str().unwrap().to_owned();
            assert!(d.contains("authority_hints"), "{d}");
        }
        // A type its metadata does not declare: refused, naming it.
        let a = ask(&sup, "/enroll", leaf.entity_id(), &["openid_provider"]).await;
        assert_eq!(a.error(), (400, "invalid_request".into()), "{}", a.body);
        assert!(a.body.contains("openid_provider"), "{}", a.body);
        assert!(rows(&db_s).await.is_empty(), "{b:?}");
        assert_eq!(event_count(&db_s).await, 0);

        // An administrator registered the leaf with keys and types of their own, inactive.
        let id = leaf.entity_id();
        let admin_keys = json!({"keys": [crate::support::jwk("set-by-admin", None)]});
        let body = json!({"entity_id": id, "jwks": admin_keys, "status": "inactive",
            "registered_entity_types": ["openid_provider"]});
        admin_ok(&sup, Method::POST, "/subordinates", body).await;
        let record = || async {
            let (_, rec) = sup
                .admin(Method::GET, &format!("/subordinates/{}", enc(id)), None)
                .await;
            (
                rec["status"].clone(),
                rec["jwks"].clone(),
                rec["registered_entity_types"].clone(),
            )
        };
        let set = record().await;
        assert_eq!(set.0, "inactive");
        for path in ["/enroll", "/enroll-request"] {
            let a = ask(&sup, path, id, &[]).await;
            assert_eq!(a.error(), (403, "invalid_request".into()), "{b:?} {path}");
        }
        assert_eq!(
            record().await,
            set,
            "{b:?}: inactive, keys and types unchanged"
        );
        // Made active by the administrator: enrollment answers with the administrator's keys.
        set_status(&sup, id, "active").await;
        let a = ask(&sup, "/enroll", id, &["openid_relying_party"]).await;
        let st = statement(&sup, &a, id).await;
        assert_eq!(st["jwks"], admin_keys);
        let now = record().await;
        assert_eq!((&now.1, &now.2), (&set.1, &set.2), "{b:?}");
        sup.stop().await;
    }
}
