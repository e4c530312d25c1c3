//! Our Entity Configuration payload, built from a snapshot.
//!
//! Pure: the data plane signs the result on a cache miss, the Admin API shows it unsigned. Both
//! therefore always agree on what we publish.

use serde_json::{Map, Value, json};

use crate::jose::Algorithm;
use crate::snapshot::Snapshot;

pub use crate::media_types::{ENTITY_STATEMENT_MEDIA_TYPE, ENTITY_STATEMENT_TYP};

/// Claims copied into `federation_entity` from the other entity types when it lacks them and
/// every other type that has the claim agrees on its value.
const INFORMATIONAL_CLAIMS: [&str; 9] = [
    "display_name",
    "description",
    "logo_uri",
    "policy_uri",
    "information_uri",
    "organization_name",
    "organization_uri",
    "contacts",
    "keywords",
];

/// The Entity Configuration claims at time `now`.
pub fn payload(snap: &Snapshot, now: i64) -> Map<String, Value> {
    let ec = &snap.entity_configuration;
    let mut claims = Map::new();
    // Additional claims first, so that the protocol claims below always win.
    let mut crit = Vec::new();
    for c in ec
        .additional_claims
        .iter()
        .filter(|c| !crate::claims::is_reserved(&c.claim))
    {
        claims.insert(c.claim.clone(), c.value.clone());
        if c.crit {
            crit.push(Value::String(c.claim.clone()));
        }
    }
    claims.insert("iss".into(), json!(&*snap.entity_id));
    claims.insert("sub".into(), json!(&*snap.entity_id));
    claims.insert("iat".into(), json!(now));
    claims.insert("exp".into(), json!(expiry(snap, now)));
    claims.insert("jwks".into(), json!({ "keys": snap.keys.published }));
    claims.insert("metadata".into(), Value::Object(metadata(snap)));
    if !ec.authority_hints.is_empty() {
        claims.insert("authority_hints".into(), json!(ec.authority_hints));
    }
    let tm = &snap.trust_marks;
    let held: Vec<Value> = held_marks(snap, now)
        .map(|m| crate::trust_mark_issuer::entry(&m.trust_mark_type, &m.trust_mark, tm.legacy_id))
        .collect();
    if !held.is_empty() {
        claims.insert("trust_marks".into(), Value::Array(held));
    }
    if let Some(v) = tm.issuers_claim() {
        claims.insert("trust_mark_issuers".into(), v);
    }
    if let Some(v) = tm.owners_claim() {
        claims.insert("trust_mark_owners".into(), v);
    }
    if !crit.is_empty() {
        claims.insert("crit".into(), Value::Array(crit));
    }
    claims
}

/// `exp`: now + lifetime, lowered to the latest expiry of our published keys (a configuration
/// must not outlive every key that could verify statements it vouches for) and to the earliest
/// expiry of the trust marks it carries (so that a client never holds a configuration whose
/// marks have expired; the refresher renews them before).
pub fn expiry(snap: &Snapshot, now: i64) -> i64 {
    let mut exp = now + snap.entity_configuration.lifetime.max(1);
    if let Some(k) = snap.keys.latest_expiry() {
        exp = exp.min(k.max(now));
    }
    if let Some(m) = held_marks(snap, now).filter_map(|m| m.exp).min() {
        exp = exp.min(m);
    }
    exp
}

/// The trust marks we hold that are still valid at `now`.
fn held_marks(
    snap: &Snapshot,
    now: i64,
) -> impl Iterator<Item = &crate::trust_mark_issuer::PublishedMark> {
    snap.trust_marks
        .published
        .iter()
        .filter(move |m| m.exp.is_none_or(|e| e > now))
}

/// Stored metadata with `federation_entity` deep-merged with the endpoint registry.
fn metadata(snap: &Snapshot) -> Map<String, Value> {
    let mut metadata = snap.entity_configuration.metadata.clone();
    let mut fe = match metadata.remove("federation_entity") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    copy_informational_claims(&metadata, &mut fe);
    let registry = &snap.registry;
    for entry in registry.by_type.values() {
        let Some(url) = entry.published_url(&snap.entity_id) else {
            continue;
        };
        let key = entry.kind.metadata_key();
        fe.insert(key.into(), Value::String(url));
        if entry.auth_enabled && entry.kind.supports_client_auth() {
            fe.insert(format!("{key}_auth_methods"), json!(["private_key_jwt"]));
        }
    }
    if registry.any_auth_enabled() {
        let algs: Vec<&str> = Algorithm::ALL.iter().map(|a| a.as_str()).collect();
        fe.insert(
            "endpoint_auth_signing_alg_values_supported".into(),
            json!(algs),
        );
    }
    metadata.insert("federation_entity".into(), Value::Object(fe));
    metadata
}

fn copy_informational_claims(metadata: &Map<String, Value>, fe: &mut Map<String, Value>) {
    for claim in INFORMATIONAL_CLAIMS {
        if fe.contains_key(claim) {
            continue;
        }
        let mut values = metadata
            .values()
            .filter_map(|m| m.as_object())
            .filter_map(|m| m.get(claim));
        if let Some(first) = values.next()
            && values.all(|v| v == first)
        {
            fe.insert(claim.into(), first.clone());
        }
    }
}

#[cfg(test)]
#[allow(clippy::field_reassign_with_default)]
mod tests {
    use super::*;
    use crate::claims::AdditionalClaim;
    use crate::endpoint::{EndpointConfig, EndpointType, FetchConfig};
    use crate::jose::SigningKey;
    use crate::snapshot::*;
    use std::sync::Arc;

    fn snap(entries: Vec<EndpointEntry>) -> Snapshot {
        let key = SigningKey::generate(Algorithm::ES256, 2048).unwrap();
        let published = vec![key.public_jwk().clone()];
        Snapshot {
            ready: Default::default(),
            generation: 1,
            entity_id: "https://pharos.example".into(),
            registry: Arc::new(Registry::new(entries, vec![])),
            entity_configuration: Arc::new(EcSettings::default()),
            trust_anchors: Arc::default(),
            keys: Arc::new(KeySet {
                signer: Arc::new(key),
                published,
                historical: Vec::new(),
            }),
            subordinates: Arc::default(),
            trust_marks: Default::default(),
            collections: Default::default(),
            statements_generation: 1,
        }
    }

    fn fetch(path: Option<&str>, auth: bool) -> EndpointEntry {
        EndpointEntry {
            kind: EndpointType::Fetch,
            path: path.map(String::from),
            url: None,
            auth_enabled: auth,
            auth_trust_anchors: vec![],
            config: EndpointConfig::Fetch(FetchConfig::default()),
        }
    }

    use crate::jose::Signer as _;

    #[test]
    fn held_trust_marks_are_published_and_bound_exp() {
        use crate::trust_mark_issuer::{PublishedMark, TrustMarkType, TrustMarks};
        let mut s = snap(vec![]);
        let mut tm = TrustMarks::default();
        let mark = |t: &str, exp| PublishedMark {
            trust_mark_type: t.into(),
            trust_mark: format!("jwt-{t}"),
            exp,
        };
        tm.published = vec![mark("a", Some(5_000)), mark("b", None), mark("c", Some(50))];
        tm.types.insert(
            "a".into(),
            TrustMarkType {
                owner: None,
                issuers: vec!["https://tmi.example".into()],
            },
        );
        s.trust_marks = Arc::new(tm);
        let p = payload(&s, 100);
        // The expired mark "c" is left out; the earliest remaining exp bounds ours.
        assert_eq!(
            p["trust_marks"],
            serde_json::json!([
                {"trust_mark_type": "a", "trust_mark": "jwt-a"},
                {"trust_mark_type": "b", "trust_mark": "jwt-b"}
            ])
        );
        assert_eq!(p["exp"], 5_000);
        assert_eq!(
            p["trust_mark_issuers"],
            serde_json::json!({"a": ["https://tmi.example"]})
        );
        assert!(p.get("trust_mark_owners").is_none());
    }

    #[test]
    fn publishes_enabled_endpoints_only() {
        let p = payload(&snap(vec![fetch(Some("/fetch"), false)]), 100);
        assert_eq!(
            p["metadata"]["federation_entity"]["federation_fetch_endpoint"],
            "https://pharos.example/fetch"
        );
        assert_eq!(p["exp"], 100 + 86_400);
        assert!(p.get("authority_hints").is_none());
        let p = payload(&snap(vec![fetch(None, false)]), 100);
        assert!(
            p["metadata"]["federation_entity"]
                .get("federation_fetch_endpoint")
                .is_none()
        );
    }

    #[test]
    fn auth_enabled_adds_methods_and_algs() {
        let p = payload(&snap(vec![fetch(Some("/fetch"), true)]), 1);
        let fe = &p["metadata"]["federation_entity"];
        assert_eq!(
            fe["federation_fetch_endpoint_auth_methods"],
            json!(["private_key_jwt"])
        );
        assert!(
            fe["endpoint_auth_signing_alg_values_supported"]
                .as_array()
                .unwrap()
                .contains(&json!("ES256"))
        );
    }

    #[test]
    fn registry_wins_and_informational_claims_copied() {
        let mut s = snap(vec![fetch(Some("/fetch"), false)]);
        let mut ec = EcSettings::default();
        ec.metadata = json!({
            "federation_entity": {"federation_fetch_endpoint": "https://stale"},
            "openid_provider": {"organization_name": "Org", "contacts": ["a@b"]},
            "openid_relying_party": {"organization_name": "Org", "contacts": ["x@y"]}
        })
        .as_object()
        .unwrap()
        .clone();
        ec.additional_claims = vec![
            AdditionalClaim {
                claim: "iss".into(),
                value: json!("evil"),
                crit: false,
            },
            AdditionalClaim {
                claim: "x_policy".into(),
                value: json!(1),
                crit: true,
            },
            // Reserved, so only a hand-edited database holds it: never published.
            AdditionalClaim {
                claim: "trust_marks".into(),
                value: json!(["forged"]),
                crit: false,
            },
        ];
        s.entity_configuration = Arc::new(ec);
        let p = payload(&s, 1);
        let fe = &p["metadata"]["federation_entity"];
        assert_eq!(
            fe["federation_fetch_endpoint"],
            "https://pharos.example/fetch"
        );
        assert_eq!(fe["organization_name"], "Org");
        assert!(
            fe.get("contacts").is_none(),
            "inconsistent values are not copied"
        );
        assert_eq!(p["iss"], "https://pharos.example");
        assert_eq!(p["crit"], json!(["x_policy"]));
        assert!(p.get("trust_marks").is_none());
    }

    #[test]
    fn exp_capped_by_latest_key_expiry() {
        let mut s = snap(vec![]);
        let key = SigningKey::generate(Algorithm::ES256, 2048).unwrap();
        let mut a = key.public_jwk().clone();
        a.insert("exp".into(), json!(500));
        let mut b = a.clone();
        b.insert("exp".into(), json!(700));
        s.keys = Arc::new(KeySet {
            signer: Arc::new(key),
            published: vec![a.clone(), b],
            historical: Vec::new(),
        });
        assert_eq!(expiry(&s, 100), 700);
        let mut no_exp = a.clone();
        no_exp.remove("exp");
        let k = SigningKey::generate(Algorithm::ES256, 2048).unwrap();
        s.keys = Arc::new(KeySet {
            signer: Arc::new(k),
            published: vec![a, no_exp],
            historical: Vec::new(),
        });
        assert_eq!(expiry(&s, 100), 100 + 86_400);
    }
}

#[cfg(test)]
mod key_change_tests {
    use std::sync::Arc;

    use crate::jose::{Algorithm, Signer, SigningKey};
    use crate::snapshot::KeySet;
    use serde_json::json;

    #[test]
    fn next_key_change_is_the_next_nbf_or_exp() {
        let key = SigningKey::generate(Algorithm::ES256, 2048).unwrap();
        let public = key.public_jwk().clone();
        let signer: Arc<dyn Signer> = Arc::new(key);
        let jwk = |nbf: i64, exp: Option<i64>| {
            let mut k = public.clone();
            k.insert("nbf".into(), json!(nbf));
            if let Some(e) = exp {
                k.insert("exp".into(), json!(e));
            }
            k
        };
        let set = |published| KeySet {
            signer: signer.clone(),
            published,
            historical: Vec::new(),
        };
        // The current key signs since 0 and ends at 900; its successor takes over at 600.
        let keys = set(vec![jwk(0, Some(900)), jwk(600, None)]);
        assert_eq!(keys.next_change(100), Some(600), "successor starts signing");
        assert_eq!(keys.next_change(600), Some(900), "current key expires");
        assert_eq!(keys.next_change(900), None, "nothing planned");
        assert_eq!(set(vec![jwk(0, None)]).next_change(5), None);
    }
}
