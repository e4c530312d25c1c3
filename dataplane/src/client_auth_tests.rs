use serde_json::json;

use super::*;

const US: &str = "https://op.example";
const C: &str = "https://client.example";

fn check(v: Value) -> Result<Checked, FedError> {
    check_claims(v.as_object().unwrap(), US, 1_000, 300)
}

fn base() -> Value {
    json!({"iss": C, "sub": C, "aud": US, "exp": 1_100, "iat": 1_000, "jti": "j1"})
}

fn with(k: &str, v: Value) -> Value {
    let mut b = base();
    b[k] = v;
    b
}

fn without(k: &str) -> Value {
    let mut b = base();
    b.as_object_mut().unwrap().remove(k);
    b
}

fn status(r: Result<Checked, FedError>) -> u16 {
    r.unwrap_err().status.as_u16()
}

#[test]
fn valid_claims_pass() {
    let c = check(base()).unwrap();
    assert_eq!((c.client.as_str(), c.jti.as_str(), c.exp), (C, "j1", 1_100));
    assert!(check(with("aud", json!([US]))).is_ok());
    assert!(check(without("iat")).is_ok());
    assert!(check(with("iat", json!(1_005))).is_ok());
}

#[test]
fn audience_must_be_exactly_us() {
    assert_eq!(
        status(check(with("aud", json!("https://other.example")))),
        401
    );
    assert_eq!(
        status(check(with("aud", json!([US, "https://other.example"])))),
        401
    );
    assert_eq!(status(check(with("aud", json!([])))), 401);
    assert_eq!(status(check(without("aud"))), 400);
}

#[test]
fn lifetime_and_identity_rules() {
    assert_eq!(status(check(with("exp", json!(999)))), 401);
    assert_eq!(status(check(without("exp"))), 400);
    assert_eq!(status(check(with("iat", json!(1_006)))), 401);
    assert_eq!(status(check(without("jti"))), 400);
    // Longer-lived than allowed (counted from iat, or from now without it), or not yet valid.
    assert!(check(with("exp", json!(1_300))).is_ok());
    assert_eq!(status(check(with("exp", json!(1_301)))), 401);
    let mut long = without("iat");
    long["exp"] = json!(1_301);
    assert_eq!(status(check(long)), 401);
    assert_eq!(status(check(with("nbf", json!(1_006)))), 401);
    assert!(check(with("nbf", json!(1_000))).is_ok());
    assert_eq!(status(check(with("nbf", json!("soon")))), 400);
    assert_eq!(status(check(with("sub", json!("https://x.example")))), 401);
    assert_eq!(status(check(without("iss"))), 400);
}
