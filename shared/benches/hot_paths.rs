//! Criterion benchmarks of the hot pure paths: statement signing per algorithm, metadata policy
//! merge + apply, JWKS filtering and the subordinate statement builder, and the snapshot update
//! at 100,000 subordinates. Run with `cargo bench -p pharos-shared`; they are not part of the
//! test run and assert nothing about time.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use pharos_shared::endpoint::{EndpointConfig, EndpointType, FetchConfig};
use pharos_shared::entity_configuration::ENTITY_STATEMENT_TYP;
use pharos_shared::jose::{self, Algorithm, Jwk, Jwks, Signer as _, SigningKey};
use pharos_shared::policy::{apply_metadata_policy, merge_metadata_policy};
use pharos_shared::snapshot::{EndpointEntry, KeySet, Registry, Snapshot};
use pharos_shared::subordinate::{Subordinate, SubordinateStatus, Subordinates};
use pharos_shared::subordinate_statement::{payload, published_keys};
use serde_json::{Map, Value, json};

const NOW: i64 = 1_800_000_000;

fn ec_key(kid: &str, exp: Option<i64>) -> Jwk {
    let mut k = json!({"kty": "EC", "crv": "P-256", "kid": kid,
        "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
        "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"})
    .as_object()
    .unwrap()
    .clone();
    if let Some(e) = exp {
        k.insert("exp".into(), json!(e));
    }
    k
}

fn subordinate(i: usize, keys: Vec<Jwk>) -> Subordinate {
    Subordinate {
        id: i64::try_from(i).unwrap(),
        entity_id: format!("https://sub{i:06}.example.org").into(),
        status: SubordinateStatus::Active,
        registered_entity_types: ["openid_relying_party".into()].into(),
        jwks: Jwks { keys }.into(),
        metadata: None,
        metadata_policy: Some(Box::new(
            json!({"openid_relying_party": {"contacts": {"add": ["ops@ta.example"]}}}),
        )),
        constraints: None,
        additional_claims: vec![],
        registered: 0,
        updated: 0,
        version: 1,
        statement: Default::default(),
    }
}

/// A typical subordinate statement payload (what the fetch endpoint signs).
fn statement_claims() -> Map<String, Value> {
    json!({
        "iss": "https://ta.example.org", "sub": "https://sub000042.example.org",
        "iat": NOW, "exp": NOW + 86_400,
        "jwks": {"keys": [ec_key("k42", None)]},
        "metadata_policy": {"openid_relying_party": {"contacts": {"add": ["ops@ta.example"]}}},
        "source_endpoint": "https://ta.example.org/fetch"
    })
    .as_object()
    .unwrap()
    .clone()
}

fn signing(c: &mut Criterion) {
    let claims = statement_claims();
    let mut g = c.benchmark_group("sign_statement");
    for &alg in Algorithm::ALL {
        let key = SigningKey::generate(alg, 2048).unwrap();
        g.bench_function(alg.as_str(), |b| {
            b.iter(|| jose::sign(&key, ENTITY_STATEMENT_TYP, black_box(&claims), None).unwrap());
        });
    }
    g.finish();
}

fn policy(c: &mut Criterion) {
    let superior = json!({"openid_relying_party": {
        "grant_types": {"subset_of": ["authorization_code", "refresh_token", "implicit"]},
        "token_endpoint_auth_method": {"one_of": ["private_key_jwt", "self_signed_tls_client_auth"],
                                       "default": "private_key_jwt"},
        "contacts": {"add": ["fed-ops@ta.example"]},
        "id_token_signed_response_alg": {"one_of": ["ES256", "RS256"], "essential": true}
    }});
    let subordinate = json!({"openid_relying_party": {
        "grant_types": {"subset_of": ["authorization_code", "refresh_token"]},
        "contacts": {"add": ["ops@im.example"]},
        "scope": {"superset_of": ["openid"], "default": "openid email"}
    }});
    let metadata = json!({"openid_relying_party": {
        "client_name": "leaf", "grant_types": ["authorization_code", "implicit"],
        "contacts": ["rp@leaf.example"], "id_token_signed_response_alg": "ES256",
        "redirect_uris": ["https://leaf.example/cb"], "scope": "openid email profile"
    }});
    c.bench_function("policy_merge_and_apply", |b| {
        b.iter(|| {
            let merged =
                merge_metadata_policy(black_box(&superior), black_box(&subordinate)).unwrap();
            apply_metadata_policy(&merged, black_box(&metadata)).unwrap()
        });
    });
}

fn snapshot_with(subs: Subordinates) -> Snapshot {
    let k = SigningKey::generate(Algorithm::ES256, 2048).unwrap();
    let published = vec![k.public_jwk().clone()];
    let fetch = EndpointEntry {
        kind: EndpointType::Fetch,
        path: Some("/fetch".into()),
        url: None,
        auth_enabled: false,
        auth_trust_anchors: vec![],
        config: EndpointConfig::Fetch(FetchConfig {
            statement_lifetime: 86_400,
        }),
    };
    Snapshot {
        ready: Default::default(),
        generation: 1,
        entity_id: "https://ta.example.org".into(),
        registry: Arc::new(Registry::new(vec![fetch], vec![])),
        entity_configuration: Arc::default(),
        trust_anchors: Arc::default(),
        keys: Arc::new(KeySet {
            signer: Arc::new(k),
            published,
            historical: vec![],
        }),
        subordinates: Arc::new(subs),
        trust_marks: Default::default(),
        collections: Default::default(),
        statements_generation: 1,
    }
}

fn jwks_filtering(c: &mut Criterion) {
    // Four keys, two of them expired: the builder publishes the other two.
    let keys = vec![
        ec_key("old1", Some(NOW - 10)),
        ec_key("cur", None),
        ec_key("old2", Some(NOW - 1)),
        ec_key("next", Some(NOW + 3600)),
    ];
    let sub = subordinate(42, keys);
    let snap = snapshot_with(Subordinates::new([], Arc::default(), 0));
    c.bench_function("jwks_filter_published_keys", |b| {
        b.iter(|| published_keys(black_box(&sub), NOW));
    });
    c.bench_function("subordinate_statement_payload", |b| {
        b.iter(|| {
            payload(
                &snap,
                black_box(&sub),
                NOW,
                Some("https://ta.example.org/fetch"),
            )
        });
    });
}

fn snapshot_update(c: &mut Criterion) {
    const N: usize = 100_000;
    let subs = Subordinates::new(
        (1..=N).map(|i| Arc::new(subordinate(i, vec![ec_key(&format!("k{i}"), None)]))),
        Arc::default(),
        1,
    );
    let changed = Arc::new(Subordinate {
        version: 2,
        ..subordinate(4242, vec![])
    });
    let id = changed.entity_id.clone();
    c.bench_function("snapshot_update_100k_with", |b| {
        b.iter_batched(
            || changed.clone(),
            |s| subs.with(&id, Some(s)),
            BatchSize::SmallInput,
        );
    });
    c.bench_function("snapshot_lookup_100k_get", |b| {
        b.iter(|| {
            subs.get(black_box("https://sub077777.example.org"))
                .is_some()
        });
    });
}

criterion_group!(benches, signing, policy, jwks_filtering, snapshot_update);
criterion_main!(benches);
