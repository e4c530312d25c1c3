//! What an entity's Entity Configuration must be to be checked at all: served, self-issued by
//! the requested `sub`, self-signed, typed and current.

use std::collections::HashMap;

use pharos_shared::chain::Fetcher;
use pharos_shared::entity_configuration::ENTITY_STATEMENT_TYP;
use pharos_shared::jose::{Algorithm, Jwks, Signer, SigningKey, sign};
use serde_json::{Value, json};

use super::*;

const NOW: i64 = 1_800_000_000;
const LEAF: &str = "https://leaf.example";

#[derive(Default)]
struct Served(HashMap<String, String>);

impl Fetcher for Served {
    async fn entity_configuration(&self, id: &str) -> pharos_shared::Result<String> {
        self.0
            .get(id)
            .cloned()
            .ok_or_else(|| pharos_shared::Error::Fetch(format!("{id} unreachable")))
    }

    async fn subordinate_statement(&self, _: &str, _: &str) -> pharos_shared::Result<String> {
        Err(pharos_shared::Error::Fetch("not used".into()))
    }
}

fn key() -> SigningKey {
    SigningKey::generate(Algorithm::ES256, 0).unwrap()
}

fn ec(signer: &SigningKey, published: &SigningKey, typ: &str, claims: Value) -> String {
    let mut c = claims;
    c["jwks"] = serde_json::to_value(Jwks {
        keys: vec![published.public_jwk().clone()],
    })
    .unwrap();
    sign(signer, typ, c.as_object().unwrap(), None).unwrap()
}

fn claims(iss: &str) -> Value {
    json!({"iss": iss, "sub": iss, "iat": NOW - 10, "exp": NOW + 600,
        "metadata": {"openid_relying_party": {}, "federation_entity": {}}})
}

fn serving(jws: String) -> Served {
    Served(HashMap::from([(LEAF.to_owned(), jws)]))
}

#[tokio::test]
async fn a_self_signed_configuration_is_accepted_with_its_types() {
    let k = key();
    let f = serving(ec(&k, &k, ENTITY_STATEMENT_TYP, claims(LEAF)));
    let got = fetch_configuration(&f, LEAF, NOW).await.unwrap();
    assert_eq!(got.claims["sub"], LEAF);
    assert_eq!(
        got.entity_types,
        ["openid_relying_party", "federation_entity"]
    );
    assert!(got.jwks().is_some());
    assert_eq!(got.jws, f.0[LEAF]);
}

#[tokio::test]
async fn bad_configurations_are_refused_with_a_reason() {
    let (k, other) = (key(), key());
    let mut expired = claims(LEAF);
    expired["exp"] = (NOW - 1).into();
    let cases = [
        (
            "not signed by its own keys",
            ec(&other, &k, ENTITY_STATEMENT_TYP, claims(LEAF)),
        ),
        (
            "another entity's",
            ec(&k, &k, ENTITY_STATEMENT_TYP, claims("https://x.example")),
        ),
        ("wrong typ", ec(&k, &k, "JWT", claims(LEAF))),
        ("expired", ec(&k, &k, ENTITY_STATEMENT_TYP, expired)),
        ("garbage", "not.a.jws".to_owned()),
    ];
    for (what, jws) in cases {
        let e = fetch_configuration(&serving(jws), LEAF, NOW)
            .await
            .expect_err(what);
        assert!(e.contains(LEAF), "{what}: {e}");
    }
    let e = fetch_configuration(&Served::default(), LEAF, NOW)
        .await
        .unwrap_err();
    assert!(e.contains("cannot obtain"), "{e}");
}
