//! Issue 32, acceptance 3: random JWKs and metadata through the checks the Admin API bodies
//! run before anything is stored (the checks [`super::check_all`] runs for the fuzz target):
//! nothing malformed is ever accepted, and nothing well-formed within the documented bounds is
//! refused. Well-formed keys are real public keys (generated once per run) with varied `kid`s
//! and optional members; well-formed metadata is generated from the specifications' type table
//! (`pharos_shared::metadata_types`). Malformed ones are the same with one defect.

use std::sync::LazyLock;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use pharos_shared::config::AcceptSettings;
use pharos_shared::jose::{Algorithm, Jwk, Signer, SigningKey};
use pharos_shared::metadata_types::{COMMON, ENTITY_TYPES, ParamType};
use pharos_shared::policy::WriteRules;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::check_all;
use crate::admin::documents::{self, Doc};
use crate::admin::subordinates::crud::CreateInput;

/// One real public key per key family and curve Pharos parses.
static KEYS: LazyLock<Vec<Jwk>> = LazyLock::new(|| {
    [
        Algorithm::ES256,
        Algorithm::ES384,
        Algorithm::ES512,
        Algorithm::ES256K,
        Algorithm::Ed25519,
        Algorithm::Ed448,
        Algorithm::RS256,
    ]
    .into_iter()
    .filter_map(|alg| SigningKey::generate(alg, 2048).ok())
    .map(|k| k.public_jwk().clone())
    .collect()
});

fn kid() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_-]{1,24}"
}

/// A real public key with a varied `kid` and optional members.
fn good_key() -> impl Strategy<Value = Jwk> {
    (
        0..KEYS.len(),
        kid(),
        any::<bool>(),
        any::<bool>(),
        prop::option::of("[a-z]{1,8}"),
    )
        .prop_map(|(i, kid, keep_use, keep_alg, extra)| {
            let mut k = KEYS[i].clone();
            k.insert("kid".into(), kid.into());
            if !keep_use {
                k.remove("use");
            }
            if !keep_alg {
                k.remove("alg");
            }
            if let Some(name) = extra {
                // Members nobody defined are kept (e.g. `iat`/`exp` of historical keys); private
                // member names are not generated here.
                k.insert(format!("x_{name}"), json!(name));
            }
            k
        })
}

/// A set of good keys with distinct `kid`s.
fn good_set() -> impl Strategy<Value = Vec<Jwk>> {
    prop::collection::vec(good_key(), 1..4).prop_map(|keys| {
        keys.into_iter()
            .enumerate()
            .map(|(i, mut k)| {
                let kid = format!("{i}-{}", k["kid"].as_str().unwrap_or_default());
                k.insert("kid".into(), kid.into());
                k
            })
            .collect()
    })
}

/// The byte string of `member`, decoded.
fn decoded(k: &Jwk, member: &str) -> Vec<u8> {
    k.get(member)
        .and_then(Value::as_str)
        .and_then(|s| URL_SAFE_NO_PAD.decode(s).ok())
        .unwrap_or_default()
}

/// One defect that makes a key malformed, applied to a good key.
fn break_key(mut k: Jwk, defect: u8, noise: String) -> Jwk {
    let kty = k
        .get("kty")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let coordinate = if kty == "RSA" { "n" } else { "x" };
    match defect % 9 {
        0 => {
            k.remove("kty");
        }
        1 => {
            k.remove("kid");
        }
        2 => {
            k.remove(coordinate);
        }
        3 => {
            // Not base64url.
            k.insert(coordinate.into(), format!("{noise} !!").into());
        }
        4 => {
            // The wrong size: a few bytes short.
            let b = decoded(&k, coordinate);
            let short = &b[..b.len().saturating_sub(1 + noise.len() % 8)];
            k.insert(coordinate.into(), URL_SAFE_NO_PAD.encode(short).into());
        }
        5 => {
            k.insert("d".into(), "AAAA".into());
        }
        6 => {
            k.insert("kty".into(), format!("Q{noise}").into());
        }
        7 => match kty.as_str() {
            // Off the curve: flip the lowest bit of y.
            "EC" => {
                let mut y = decoded(&k, "y");
                if let Some(b) = y.last_mut() {
                    *b ^= 1;
                }
                k.insert("y".into(), URL_SAFE_NO_PAD.encode(y).into());
            }
            // An even exponent.
            "RSA" => {
                k.insert("e".into(), "AQAA".into());
            }
            _ => {
                k.insert("crv".into(), format!("{noise}25519").into());
            }
        },
        _ => {
            k.insert("kid".into(), json!(noise.len()));
        }
    }
    k
}

fn create_body(keys: &[Jwk]) -> Vec<u8> {
    json!({"entity_id": "https://leaf.example", "jwks": {"keys": keys}})
        .to_string()
        .into_bytes()
}

fn create_check(body: &[u8]) -> bool {
    serde_json::from_slice::<CreateInput>(body)
        .map(|b| {
            b.check("https://pharos.example", &AcceptSettings::default())
                .is_ok()
        })
        .unwrap_or(false)
}

/// A value of type `ty`.
fn value_of(ty: ParamType) -> BoxedStrategy<Value> {
    let uri = "[a-z]{1,10}".prop_map(|h| format!("https://{h}.example/p"));
    match ty {
        ParamType::Str => "[ -~]{0,16}".prop_map(Value::from).boxed(),
        ParamType::Uri => uri.prop_map(Value::from).boxed(),
        ParamType::Bool => any::<bool>().prop_map(Value::from).boxed(),
        ParamType::Number => any::<i32>().prop_map(Value::from).boxed(),
        ParamType::Object => prop::collection::btree_map("[a-z]{1,6}", any::<u8>(), 0..3)
            .prop_map(|m| json!(m))
            .boxed(),
        ParamType::Strs => prop::collection::vec("[ -~]{0,8}", 0..3)
            .prop_map(|v| json!(v))
            .boxed(),
        ParamType::Uris => prop::collection::vec(uri, 0..3)
            .prop_map(|v| json!(v))
            .boxed(),
        ParamType::Objects => prop::collection::vec(Just(json!({"name": "n"})), 0..3)
            .prop_map(|v| json!(v))
            .boxed(),
        ParamType::Jwks => good_set().prop_map(|k| json!({ "keys": k })).boxed(),
    }
}

/// The typed parameters of entity type number `i`.
fn params_of(i: usize) -> Vec<(&'static str, ParamType)> {
    ENTITY_TYPES[i]
        .1
        .iter()
        .copied()
        .chain([COMMON])
        .flatten()
        .copied()
        .collect()
}

/// Metadata of one entity type: some typed parameters with values of their type, and some
/// parameters nobody defined with any value.
fn good_metadata() -> impl Strategy<Value = (usize, Map<String, Value>)> {
    (0..ENTITY_TYPES.len())
        .prop_flat_map(|i| {
            let params = params_of(i);
            let n = params.len();
            (
                Just(i),
                prop::collection::vec(
                    (0..n).prop_flat_map(move |j| {
                        let (name, ty) = params_of(i)[j];
                        (Just(name.to_owned()), value_of(ty))
                    }),
                    0..6,
                ),
                prop::collection::vec(("x_[a-z]{1,8}", any::<i64>().prop_map(Value::from)), 0..3),
            )
        })
        .prop_map(|(i, typed, extra)| {
            let mut m: Map<String, Value> = typed.into_iter().collect();
            m.extend(extra);
            (i, m)
        })
}

/// A value no parameter of type `ty` accepts.
fn wrong_value(ty: ParamType, pick: u8) -> Value {
    let candidates = [
        json!(null),
        json!(1.5),
        json!("not a uri"),
        json!([1]),
        json!({}),
        json!(true),
    ];
    let wrong: Vec<&Value> = candidates.iter().filter(|v| !ty.accepts(v)).collect();
    wrong[usize::from(pick) % wrong.len()].clone()
}

fn metadata_check(v: &Value) -> bool {
    documents::check(Doc::Metadata, v, &WriteRules::default()).is_ok()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn well_formed_key_sets_are_accepted(keys in good_set()) {
        let body = create_body(&keys);
        prop_assert!(create_check(&body), "{}", String::from_utf8_lossy(&body));
        prop_assert!(check_all(&body) > 0);
    }

    #[test]
    fn a_key_with_one_defect_is_never_accepted(
        keys in good_set(),
        which in any::<prop::sample::Index>(),
        defect in any::<u8>(),
        noise in "[a-z]{0,6}",
    ) {
        let mut keys = keys;
        let i = which.index(keys.len());
        keys[i] = break_key(keys[i].clone(), defect, noise);
        let body = create_body(&keys);
        prop_assert!(!create_check(&body), "accepted: {}", String::from_utf8_lossy(&body));
        let set = json!({"keys": keys}).to_string();
        prop_assert!(
            serde_json::from_str::<pharos_shared::jose::Jwks>(&set)
                .map(|j| super::validate_jwks(&j, &[]).is_err())
                .unwrap_or(true)
        );
    }

    #[test]
    fn well_formed_metadata_is_accepted((i, m) in good_metadata()) {
        let doc = json!({ ENTITY_TYPES[i].0: m });
        prop_assert!(metadata_check(&doc), "{doc}");
    }

    #[test]
    fn metadata_with_one_wrongly_typed_parameter_is_never_accepted(
        (i, m) in good_metadata(),
        j in any::<prop::sample::Index>(),
        pick in any::<u8>(),
    ) {
        let params = params_of(i);
        let (name, ty) = params[j.index(params.len())];
        let mut m = m;
        m.insert(name.into(), wrong_value(ty, pick));
        let doc = json!({ ENTITY_TYPES[i].0: m });
        prop_assert!(!metadata_check(&doc), "{doc}");
    }

    #[test]
    fn an_entity_type_outside_the_specifications_is_never_accepted(t in "[a-z_]{1,30}") {
        prop_assume!(!ENTITY_TYPES.iter().any(|(n, _)| *n == t));
        let doc = json!({ t: {} });
        prop_assert!(!metadata_check(&doc), "{doc}");
    }
}
