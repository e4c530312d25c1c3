//! `http_list`, `http_list_jwt`, `cmd` and `http` with canned answers: what is sent, and how
//! each answer becomes a verdict.

use serde_json::{Value, json};

use super::MemEnv;
use crate::chain::tests::{NOW, id, superior_metadata};
use crate::checks::{Denial, ProcessOutcome, Verdict};
use crate::jose::sign;

const LIST: &str = "https://lists.example/allowed";

fn env_with_leaf() -> (MemEnv, String) {
    let mut env = MemEnv::default();
    let leaf = id("leaf");
    env.fed.leaf(&leaf, &[&id("ia")]);
    (env, leaf)
}

fn verdict(v: Verdict) -> (u16, String) {
    match v {
        Verdict::Pass => (200, String::new()),
        Verdict::Deny(Denial { status, error, .. }) => (status, error),
    }
}

fn pass() -> (u16, String) {
    (200, String::new())
}

fn denial(status: u16, error: &str) -> (u16, String) {
    (status, error.to_owned())
}

#[tokio::test]
async fn http_list_passes_listed_entities_and_fails_on_a_bad_list() {
    let (mut env, leaf) = env_with_leaf();
    let c = json!({"type": "http_list", "config": {"url": LIST, "cache_ttl": "5m",
        "headers": {"Authorization": "Bearer t"}}});
    env.serve(LIST, 200, json!([leaf]).to_string().as_bytes());
    assert_eq!(verdict(env.check(c.clone(), &leaf).await), pass());
    let sent = env.http_calls.lock().unwrap()[0].clone();
    assert_eq!(sent.method, "GET");
    assert_eq!(sent.cache_ttl, Some(std::time::Duration::from_secs(300)));
    assert!(
        sent.headers
            .contains(&("Authorization".into(), "Bearer t".into()))
    );
    env.serve(LIST, 200, json!([id("other")]).to_string().as_bytes());
    assert_eq!(
        verdict(env.check(c.clone(), &leaf).await),
        denial(403, "forbidden")
    );
    for (status, body) in [
        (500, "[]"),
        (200, "{\"not\": \"a list\"}"),
        (200, "nonsense"),
    ] {
        env.serve(LIST, status, body.as_bytes());
        let got = verdict(env.check(c.clone(), &leaf).await);
        assert_eq!(got, denial(500, "server_error"), "{status} {body}");
    }
    env.http.clear();
    assert_eq!(
        verdict(env.check(c, &leaf).await),
        denial(500, "server_error")
    );
}

fn signed_list(env: &mut MemEnv, signer: &str, claims: Value) -> Vec<u8> {
    let key = env.fed.key(signer);
    sign(key, "JWT", claims.as_object().unwrap(), None)
        .unwrap()
        .into_bytes()
}

#[tokio::test]
async fn http_list_jwt_with_keys_verifies_the_signature() {
    let (mut env, leaf) = env_with_leaf();
    let lists = id("lists");
    let c = json!({"type": "http_list_jwt", "config": {"url": LIST, "list_claim": "members",
        "verification": {"mode": "jwks", "jwks": env.fed.jwks(&lists)}}});
    let good = signed_list(&mut env, &lists, json!({"iss": lists, "members": [leaf]}));
    env.serve(LIST, 200, &good);
    assert_eq!(verdict(env.check(c.clone(), &leaf).await), pass());
    let absent = signed_list(&mut env, &lists, json!({"iss": lists, "members": []}));
    env.serve(LIST, 200, &absent);
    assert_eq!(
        verdict(env.check(c.clone(), &leaf).await),
        denial(403, "forbidden")
    );
    // Bad signature (another key), expired, missing claim: the list is not usable.
    let forged = signed_list(
        &mut env,
        &id("mallory"),
        json!({"iss": lists, "members": [leaf]}),
    );
    let expired = signed_list(
        &mut env,
        &lists,
        json!({"iss": lists, "members": [leaf], "exp": NOW - 1}),
    );
    let unnamed = signed_list(&mut env, &lists, json!({"iss": lists, "entities": [leaf]}));
    for (what, body) in [
        ("forged", forged),
        ("expired", expired),
        ("no claim", unnamed),
    ] {
        env.serve(LIST, 200, &body);
        let got = verdict(env.check(c.clone(), &leaf).await);
        assert_eq!(got, denial(500, "server_error"), "{what}");
    }
}

#[tokio::test]
async fn http_list_jwt_by_trust_anchor_takes_the_issuers_keys_from_its_chain() {
    let (mut env, leaf) = env_with_leaf();
    let (ta, lists) = (id("ta"), id("lists"));
    env.fed.superior(&ta, &[]);
    env.fed.superior(&lists, &[&ta]);
    env.fed.subordinate(&ta, &lists, json!({}));
    let c = json!({"type": "http_list_jwt", "config": {"url": LIST,
        "verification": {"mode": "trust_anchor", "trust_anchors": [ta]}}});
    let good = signed_list(&mut env, &lists, json!({"iss": lists, "entities": [leaf]}));
    env.serve(LIST, 200, &good);
    // The anchor is not in the repository yet.
    assert_eq!(
        verdict(env.check(c.clone(), &leaf).await),
        denial(500, "server_error")
    );
    env.repository_anchor(&ta, false);
    assert_eq!(verdict(env.check(c.clone(), &leaf).await), pass());
    // Signed by someone claiming to be the issuer.
    let forged = signed_list(
        &mut env,
        &id("mallory"),
        json!({"iss": lists, "entities": [leaf]}),
    );
    env.serve(LIST, 200, &forged);
    assert_eq!(
        verdict(env.check(c.clone(), &leaf).await),
        denial(500, "server_error")
    );
    // An issuer without a chain to the anchor.
    let stranger = id("stranger");
    env.fed
        .entity(&stranger, &[], superior_metadata(&stranger), json!({}));
    let orphan = signed_list(
        &mut env,
        &stranger,
        json!({"iss": stranger, "entities": [leaf]}),
    );
    env.serve(LIST, 200, &orphan);
    assert_eq!(
        verdict(env.check(c, &leaf).await),
        denial(500, "server_error")
    );
}

#[tokio::test]
async fn cmd_passes_on_exit_zero_and_reports_failures() {
    let (mut env, leaf) = env_with_leaf();
    let c = json!({"type": "cmd", "config": {"path": "/opt/check", "args": ["-v"],
        "env": ["MODE=strict"], "timeout": "2s"}});
    env.program = Some(ProcessOutcome::Exited {
        code: Some(0),
        stderr: String::new(),
    });
    assert_eq!(verdict(env.check(c.clone(), &leaf).await), pass());
    let run = env.runs.lock().unwrap()[0].clone();
    assert_eq!(
        (run.path.as_str(), run.args.as_slice()),
        ("/opt/check", &["-v".to_owned()][..])
    );
    assert!(run.env.contains(&("ENTITY_ID".into(), leaf.clone())));
    assert!(
        run.env
            .contains(&("ENTITY_TYPES".into(), "openid_relying_party".into()))
    );
    assert!(run.env.contains(&("MODE".into(), "strict".into())));
    let stdin: Value = serde_json::from_slice(&run.stdin).unwrap();
    assert_eq!(stdin["sub"], leaf.as_str());
    assert_eq!(run.timeout, std::time::Duration::from_secs(2));

    // The caller may be anyone: what the program said, or why it could not start, goes to the
    // log, never into the answer (issue 31).
    env.program = Some(ProcessOutcome::Exited {
        code: Some(3),
        stderr: "  connecting to postgres://checker:hunter2@db.internal failed  ".into(),
    });
    let Verdict::Deny(d) = env.check(c.clone(), &leaf).await else {
        panic!("must fail")
    };
    assert_eq!((d.status, d.error.as_str()), (403, "forbidden"));
    assert_eq!(d.error_description, "the entity check refused the entity");
    env.program = Some(ProcessOutcome::Exited {
        code: None,
        stderr: " \n".into(),
    });
    let Verdict::Deny(d) = env.check(c.clone(), &leaf).await else {
        panic!("must fail")
    };
    assert_eq!(d.error_description, "the entity check refused the entity");
    env.program = Some(ProcessOutcome::TimedOut);
    assert_eq!(
        verdict(env.check(c.clone(), &leaf).await),
        denial(500, "server_error")
    );
    env.program = Some(ProcessOutcome::CannotStart(
        "/opt/secret-dir/check: No such file or directory".into(),
    ));
    let Verdict::Deny(d) = env.check(c, &leaf).await else {
        panic!("must fail")
    };
    assert_eq!((d.status, d.error.as_str()), (500, "server_error"));
    assert_eq!(d.error_description, "the entity check could not run");
}

#[tokio::test]
async fn cmd_env_entries_set_or_name_variables_to_pass_through() {
    let (mut env, leaf) = env_with_leaf();
    let c = json!({"type": "cmd", "config": {"path": "/opt/check",
        "env": ["MODE=strict", "CHECKER_TOKEN", "EMPTY="]}});
    env.program = Some(ProcessOutcome::Exited {
        code: Some(0),
        stderr: String::new(),
    });
    assert_eq!(verdict(env.check(c, &leaf).await), pass());
    let run = env.runs.lock().unwrap()[0].clone();
    assert!(run.env.contains(&("MODE".into(), "strict".into())));
    assert!(run.env.contains(&("EMPTY".into(), String::new())));
    assert_eq!(run.inherit, vec!["CHECKER_TOKEN".to_owned()]);
}

#[tokio::test]
async fn http_sends_the_entity_and_maps_the_answer() {
    let (mut env, leaf) = env_with_leaf();
    let svc = "https://svc.example/check";
    let c = |mode: &str| json!({"type": "http", "config": {"url": svc, "body_mode": mode}});
    env.serve(svc, 204, b"");
    assert_eq!(verdict(env.check(c("entity_id"), &leaf).await), pass());
    let sent = env.http_calls.lock().unwrap()[0].clone();
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.cache_ttl, None);
    assert!(sent.headers.contains(&("X-Entity-ID".into(), leaf.clone())));
    assert!(
        sent.headers
            .contains(&("X-Entity-Types".into(), "openid_relying_party".into()))
    );
    let body: Value = serde_json::from_slice(sent.body.as_deref().unwrap()).unwrap();
    assert_eq!(
        body,
        json!({"sub": leaf, "entity_types": ["openid_relying_party"]})
    );
    env.check(c("entity_configuration"), &leaf).await;
    env.check(c("none"), &leaf).await;
    let calls = env.http_calls.lock().unwrap().clone();
    let ec: Value = serde_json::from_slice(calls[1].body.as_deref().unwrap()).unwrap();
    assert_eq!(ec["iss"], leaf.as_str());
    assert_eq!(calls[2].body, None);

    env.serve(svc, 403, b"not a member");
    let Verdict::Deny(d) = env.check(c("none"), &leaf).await else {
        panic!("must fail")
    };
    assert_eq!((d.status, d.error.as_str()), (403, "forbidden"));
    assert_eq!(d.error_description, "not a member");
    env.serve(
        svc,
        429,
        br#"{"error": "slow_down", "error_description": "later"}"#,
    );
    let Verdict::Deny(d) = env.check(c("none"), &leaf).await else {
        panic!("must fail")
    };
    assert_eq!(
        (d.status, d.error.as_str(), d.error_description.as_str()),
        (429, "slow_down", "later")
    );
    env.serve(svc, 503, b"down");
    assert_eq!(
        verdict(env.check(c("none"), &leaf).await),
        denial(502, "server_error")
    );
    env.http.clear();
    assert_eq!(
        verdict(env.check(c("none"), &leaf).await),
        denial(502, "server_error")
    );
}
