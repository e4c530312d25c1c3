//! The chain explainer (issue 40) over a real three-level federation of Pharos instances on
//! loopback (trust anchor → intermediate → leaf, with a metadata policy at each level and the
//! intermediate's `metadata` claim), asked of a separate resolver: through the Admin API
//! (`GET /explain`) each operator's effect ends in what the resolve endpoint returns, and for
//! each broken chain (an expired intermediate statement, a subordinate key mismatch, a `value`
//! conflict) the explanation names the failing step; the same through `pharos explain`. The
//! console page is checked in a browser from here too ([`console`]).

use std::sync::Arc;

use crate::cli_admin::pharos;
use crate::resolve::{enable_resolve, resolve, verified};
use crate::support::{Backend, Pharos, TestDb, enc, eventually};
use pharos_shared::time::{Clock, ManualClock, SystemClock};
use reqwest::Method;
use serde_json::{Value, json};

mod console;

pub const RP: &str = "openid_relying_party";

/// One Pharos with its own database.
pub struct Node {
    pub p: Pharos,
    _db: TestDb,
}

impl Node {
    pub async fn start(clock: Arc<dyn Clock>) -> Self {
        let db = TestDb::new(Backend::Sqlite).await;
        let p = Pharos::start_with(&db, |_| {}, clock).await;
        Self { p, _db: db }
    }

    pub fn id(&self) -> String {
        self.p.entity_id().to_owned()
    }

    pub async fn admin(&self, method: Method, path: &str, body: Value) -> Value {
        let (s, v) = self.p.admin(method, path, Some(body)).await;
        assert!((200..300).contains(&s), "{path}: {s} {v}");
        v
    }

    async fn put_sub(&self, sub: &Node, doc: &str, body: Value) {
        let path = format!("/subordinates/{}/{doc}", enc(&sub.id()));
        self.admin(Method::PUT, &path, body).await;
    }

    async fn superior(&self, lifetime: u64) {
        let cfg =
            json!({"type": "fetch", "path": "/fetch", "config": {"statement_lifetime": lifetime}});
        self.admin(Method::POST, "/federation-endpoints", cfg).await;
    }

    async fn add(&self, sub: &Node) {
        let jwks = sub.p.entity_configuration().await.claims["jwks"].clone();
        let body = json!({"entity_id": sub.id(), "jwks": jwks});
        self.admin(Method::POST, "/subordinates", body).await;
    }

    async fn hint(&self, sup: &Node) {
        let body = json!({"entity_id": sup.id()});
        self.admin(Method::POST, "/entity-configuration/authority-hints", body)
            .await;
    }
}

/// TA → I → L, and a resolver R for TA. L is an RP; the TA's policy on I restricts
/// `grant_types` and adds a contact; I's policy on L requires `authorization_code` and
/// defaults `application_type`; I's statement about L carries `client_uri` in its `metadata`.
pub struct Fed {
    pub ta: Node,
    pub i: Node,
    pub l: Node,
    pub r: Node,
}

pub async fn federation(ta_clock: Arc<dyn Clock>) -> Fed {
    let now: Arc<dyn Clock> = Arc::new(SystemClock);
    let (ta, i, l, r) = (
        Node::start(ta_clock).await,
        Node::start(now.clone()).await,
        Node::start(now.clone()).await,
        Node::start(now).await,
    );
    ta.superior(3600).await;
    i.superior(3600).await;
    let rp = json!({"client_name": "leaf", "contacts": ["ops@leaf.example"],
        "grant_types": ["authorization_code", "refresh_token", "implicit"],
        "client_registration_types": ["automatic"]});
    let path = format!("/entity-configuration/metadata/{RP}");
    l.admin(Method::PUT, &path, rp).await;
    ta.add(&i).await;
    i.hint(&ta).await;
    i.add(&l).await;
    l.hint(&i).await;
    let ta_policy = json!({RP: {
        "grant_types": {"subset_of": ["authorization_code", "refresh_token"]},
        "contacts": {"add": ["fed@ta.example"]}}});
    ta.put_sub(&i, "metadata-policies", ta_policy).await;
    let i_policy = json!({RP: {
        "grant_types": {"superset_of": ["authorization_code"]},
        "application_type": {"default": "web"}}});
    i.put_sub(&l, "metadata-policies", i_policy).await;
    i.put_sub(
        &l,
        &format!("metadata/{RP}"),
        json!({"client_uri": "https://i.example/leaf"}),
    )
    .await;
    enable_resolve(&r.p, json!({"allowed_trust_anchors": [ta.id()]})).await;
    Fed { ta, i, l, r }
}

/// `GET /explain` on `r`: status and body.
pub async fn explain(r: &Pharos, sub: &str, anchor: &str) -> (u16, Value) {
    let q = format!("/explain?sub={}&anchor={}", enc(sub), enc(anchor));
    r.admin(Method::GET, &q, None).await
}

/// `pharos explain SUB --anchor TA` against `r`, with `extra` arguments.
async fn cli(r: &Pharos, sub: &str, anchor: &str, extra: &[&str]) -> crate::cli_admin::Run {
    let mut args = vec!["explain", sub, "--anchor", anchor];
    args.extend_from_slice(extra);
    pharos(&args, &[("PHAROS_ADMIN_URL", r.base.as_str())]).await
}

/// Forgets what `r`'s resolver cached, so the next explanation fetches anew.
async fn flush(r: &Node) {
    r.admin(Method::POST, "/resolver/flush", json!({})).await;
}

/// The explanation of `l` once its failing step contains `step` (the statements change a
/// moment after the Admin API call that changed them).
async fn failing_at(f: &Fed, step: &str) -> Value {
    let found = std::sync::Mutex::new(Value::Null);
    eventually(&format!("explanation failing at {step}"), || async {
        flush(&f.r).await;
        let (s, x) = explain(&f.r.p, &f.l.id(), &f.ta.id()).await;
        assert_eq!(s, 200, "{x}");
        let hit = x["failed"]["step"]
            .as_str()
            .is_some_and(|s| s.contains(step));
        *found.lock().unwrap() = x;
        hit
    })
    .await;
    found.into_inner().unwrap()
}

/// Each operator line of `pharos explain` for a parameter: `before → after`.
fn operator_line(s: &Value) -> String {
    format!(
        "  metadata.{}.{}  {} {}: {} → {}",
        s["entity_type"].as_str().unwrap(),
        s["parameter"].as_str().unwrap(),
        s["operator"].as_str().unwrap(),
        s["operand"],
        if s["before"].is_null() {
            "absent".into()
        } else {
            s["before"].to_string()
        },
        if s["after"].is_null() {
            "absent".into()
        } else {
            s["after"].to_string()
        },
    )
}

#[tokio::test]
async fn the_explainer_shows_each_operator_ending_in_what_resolve_returns() {
    let f = federation(Arc::new(SystemClock)).await;
    let (ta, i, l) = (f.ta.id(), f.i.id(), f.l.id());
    let (s, body) = resolve(&f.r.p, &l, &[&ta], &[]).await;
    assert_eq!(s, 200, "{body}");
    let resolved = verified(&f.r.p, &body).await["metadata"].clone();

    let (s, x) = explain(&f.r.p, &l, &ta).await;
    assert_eq!(s, 200, "{x}");
    assert!(x["failed"].is_null(), "{x:#}");
    assert_eq!(x["metadata"], resolved, "the explained result is resolve's");
    assert_eq!(x["trust_anchor"], ta.as_str());

    // Each statement: issuer, subject, signing key, expiry, verified signature.
    let st = x["statements"].as_array().unwrap();
    let pairs: Vec<(&str, &str)> = st
        .iter()
        .map(|s| (s["iss"].as_str().unwrap(), s["sub"].as_str().unwrap()))
        .collect();
    assert_eq!(
        pairs,
        [(&*l, &*l), (&*i, &*l), (&*ta, &*i), (&*ta, &*ta)],
        "subject first"
    );
    for s in st {
        assert!(s["kid"].is_string() && s["exp"].is_i64(), "{s}");
        assert!(
            s["signature"].as_str().unwrap().starts_with("verified"),
            "{s}"
        );
    }
    // Merged level by level from the anchor's statement; I's metadata claim before policy.
    let p = &x["policy"];
    let levels: Vec<i64> = p["merges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["statement"].as_i64().unwrap())
        .collect();
    assert_eq!(levels, [2, 1]);
    let combined = &p["merges"][1]["combined"][RP];
    assert_eq!(
        combined["grant_types"]["superset_of"],
        json!(["authorization_code"])
    );
    assert_eq!(combined["contacts"]["add"], json!(["fed@ta.example"]));
    assert_eq!(
        p["superior_metadata"]["claim"][RP]["client_uri"],
        "https://i.example/leaf"
    );
    assert_eq!(
        p["before_policy"][RP]["client_uri"],
        "https://i.example/leaf"
    );

    // Every operator: its before is the previous step's after (or the value before the
    // policy), and the last step of each parameter is what resolve returned.
    let ops = p["operators"].as_array().unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for (n, s) in ops.iter().enumerate() {
        let param = s["parameter"].as_str().unwrap();
        let earlier = ops[..n].iter().rfind(|o| o["parameter"] == param);
        let before = earlier.map_or(&p["before_policy"][RP][param], |o| &o["after"]);
        assert_eq!(&s["before"], before, "{s}");
        if ops[n + 1..].iter().all(|o| o["parameter"] != param) {
            assert_eq!(s["after"], resolved[RP][param], "{s}");
            seen.insert(param.to_owned());
        }
    }
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        ["application_type", "contacts", "grant_types"]
    );
    let step = |param: &str, op: &str| {
        ops.iter()
            .find(|o| o["parameter"] == param && o["operator"] == op)
            .unwrap_or_else(|| panic!("{param} {op}: {x:#}"))
            .clone()
    };
    let subset = step("grant_types", "subset_of");
    assert_eq!(
        subset["before"],
        json!(["authorization_code", "refresh_token", "implicit"])
    );
    assert_eq!(
        subset["after"],
        json!(["authorization_code", "refresh_token"])
    );
    let default = step("application_type", "default");
    assert_eq!(
        (default["before"].clone(), default["after"].clone()),
        (Value::Null, json!("web"))
    );

    // The same in words, and as JSON, from `pharos explain`.
    let out = cli(&f.r.p, &l, &ta, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    for s in ops {
        assert!(
            out.stdout.contains(&operator_line(s)),
            "{}\n{}",
            operator_line(s),
            out.stdout
        );
    }
    assert!(out.stdout.contains(
        "  metadata.openid_relying_party.grant_types  subset_of [\"authorization_code\",\"refresh_token\"]: [\"authorization_code\",\"refresh_token\",\"implicit\"] → [\"authorization_code\",\"refresh_token\"]"
    ), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("The Immediate Superior's metadata claim, applied before the policy")
    );
    assert!(
        out.stdout
            .contains(&format!("Result: resolved towards {ta}")),
        "{}",
        out.stdout
    );
    let out = cli(&f.r.p, &l, &ta, &["--json"]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let j: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(j["metadata"], resolved);
    assert_eq!(j["policy"]["operators"], p["operators"]);

    // Bad input is a 400 naming the parameter; a viewer may read explanations.
    let (s, v) =
        f.r.p
            .admin(Method::GET, "/explain?sub=nonsense", None)
            .await;
    assert_eq!(
        (s, v["error"].as_str()),
        (400, Some("invalid_request")),
        "{v}"
    );
    assert!(
        v["error_description"].as_str().unwrap().contains("sub"),
        "{v}"
    );
    let (s, v) = f.r.p.admin(Method::GET, "/explain", None).await;
    assert_eq!(s, 400, "{v}");
    let out = cli(&f.r.p, "not a url", &ta, &[]).await;
    assert_eq!(out.code, Some(1), "{out:?}");

    // An anchor the resolver does not accept is the failing step, before any fetch.
    let (s, x) = explain(&f.r.p, &l, &i).await;
    assert_eq!(s, 200, "{x}");
    assert!(
        x["failed"]["step"]
            .as_str()
            .unwrap()
            .contains("Trust Anchors"),
        "{x}"
    );
    assert!(x["failed"]["message"].as_str().unwrap().contains(&i), "{x}");
}

#[tokio::test]
async fn a_broken_chain_names_the_failing_step() {
    let f = federation(Arc::new(SystemClock)).await;
    let (ta, i, l) = (f.ta.id(), f.i.id(), f.l.id());

    // A subordinate key mismatch: I publishes someone else's keys for L, so L's Entity
    // Configuration does not verify with the keys of the statement above it.
    let other = f.r.p.entity_configuration().await.claims["jwks"].clone();
    let path = format!("/subordinates/{}/jwks", enc(&l));
    f.i.admin(Method::PUT, &path, other).await;
    let x = failing_at(&f, "the signature of statement 0").await;
    let failed = &x["failed"];
    assert!(
        failed["step"]
            .as_str()
            .unwrap()
            .contains(&format!("Entity Configuration of {l}")),
        "{x}"
    );
    assert!(
        failed["rule"]
            .as_str()
            .unwrap()
            .contains("keys of the statement above"),
        "{x}"
    );
    assert!(x["metadata"].is_null());
    let out = cli(&f.r.p, &l, &ta, &[]).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stdout.contains("Result: DOES NOT RESOLVE"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(&format!(
            "failing step: the signature of statement 0, the Entity Configuration of {l}"
        )),
        "{}",
        out.stdout
    );
    let real = f.l.p.entity_configuration().await.claims["jwks"].clone();
    f.i.admin(Method::PUT, &path, real).await;

    // A `value` conflict: the anchor and the intermediate each fix client_name differently.
    let value = |v: &str| json!({RP: {"client_name": {"value": v}}});
    f.ta.put_sub(&f.i, "metadata-policies", value("TA name"))
        .await;
    f.i.put_sub(&f.l, "metadata-policies", value("I name"))
        .await;
    let step = format!(
        "merging the metadata policy of statement 1, the Subordinate Statement of {i} about {l}"
    );
    let x = failing_at(&f, &step).await;
    assert!(
        x["failed"]["message"]
            .as_str()
            .unwrap()
            .contains("values differ"),
        "{x}"
    );
    assert!(
        x["failed"]["rule"].as_str().unwrap().contains("conflict"),
        "{x}"
    );
    assert_eq!(x["policy"]["merges"][0]["combined"], value("TA name"));
    assert!(x["policy"]["merges"][1]["combined"].is_null(), "{x}");
    let out = cli(&f.r.p, &l, &ta, &[]).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stdout.contains(&format!("failing step: {step}")),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("combined: FAILED"), "{}", out.stdout);
    let out = cli(&f.r.p, &l, &ta, &["--json"]).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    let j: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(
        j["failed"]["step"].as_str().unwrap().starts_with(&step),
        "{j}"
    );
}

#[tokio::test]
async fn an_expired_intermediate_statement_is_the_failing_step() {
    // The anchor's clock runs two hours behind: its one-hour statement about I has expired.
    let f = federation(ManualClock::new(SystemClock.now() - 7200)).await;
    let (ta, i, l) = (f.ta.id(), f.i.id(), f.l.id());
    let (s, x) = explain(&f.r.p, &l, &ta).await;
    assert_eq!(s, 200, "{x}");
    let step = format!("statement 2, the Subordinate Statement of {ta} about {i}");
    assert_eq!(x["failed"]["step"], step.as_str(), "{x:#}");
    assert!(
        x["failed"]["message"]
            .as_str()
            .unwrap()
            .contains("in the past"),
        "{x}"
    );
    assert!(
        x["failed"]["rule"]
            .as_str()
            .unwrap()
            .contains("not expired"),
        "{x}"
    );
    let st = &x["statements"][2];
    assert!(st["exp"].as_i64().unwrap() < SystemClock.now(), "{st}");
    assert!(st["problem"].is_string(), "{st}");
    let out = cli(&f.r.p, &l, &ta, &[]).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stdout.contains(&format!("failing step: {step}")),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("refused: ES[2]: exp"), "{}", out.stdout);
    assert!(out.stdout.contains("not reached"), "{}", out.stdout);
}
