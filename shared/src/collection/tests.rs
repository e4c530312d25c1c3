//! Extraction, filters, claim and language trimming, and paging (a property test over random
//! collections: every Entity once, in order, no page above the limit).

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::extract::entity_info;
use super::query::{CollectionQuery, QueryError, language_matches, select};
use super::{CollectedMark, Collection, EntityInfo};

fn params(q: &str) -> Vec<(String, String)> {
    url::form_urlencoded::parse(q.as_bytes())
        .into_owned()
        .collect()
}

fn parse(q: &str, paging: bool) -> Result<CollectionQuery, QueryError> {
    CollectionQuery::parse(&params(q), paging)
}

fn leaf(id: &str, meta: Value, marks: &[&str]) -> Arc<EntityInfo> {
    let claims = json!({"metadata": meta});
    let marks = marks
        .iter()
        .map(|t| CollectedMark {
            trust_mark_type: (*t).into(),
            trust_mark: format!("jwt-{t}"),
        })
        .collect();
    Arc::new(entity_info(id, claims.as_object().unwrap(), marks))
}

fn sample() -> Collection {
    let rp = leaf(
        "https://rp.example",
        json!({
            "openid_relying_party": {"client_name": "Shop", "client_name#it": "Negozio",
                "logo_uri": "https://rp/logo", "redirect_uris": ["https://rp/cb"]},
            "federation_entity": {"organization_name": "Acme Ltd", "organization_name#de": "Acme GmbH",
                "contacts": ["ops@acme"], "keywords": "not an array"}
        }),
        &["https://tm/a"],
    );
    let op = leaf(
        "https://op.example",
        json!({
            "openid_provider": {"display_name": "Login", "display_name#it": "Accesso",
                "display_name#de-CH": "Anmeldung", "description": "Sign in"},
            "federation_entity": {"organization_name": "Beta"}
        }),
        &["https://tm/a", "https://tm/b"],
    );
    let bare = leaf(
        "https://bare.example",
        json!({"federation_entity": {}}),
        &[],
    );
    Collection::new("https://ta".into(), 7, vec![rp, op, bare])
}

fn ids(v: &[Value]) -> Vec<&str> {
    v.iter().map(|e| e["entity_id"].as_str().unwrap()).collect()
}

#[test]
fn extraction_keeps_ui_claims_languages_and_falls_back_to_client_name() {
    let c = sample();
    let rp = &c.entities[2];
    assert_eq!(rp.entity_id, "https://rp.example");
    assert_eq!(
        rp.entity_types,
        vec!["federation_entity", "openid_relying_party"]
    );
    let ui = &rp.ui_infos["openid_relying_party"];
    assert_eq!(ui["display_name"], "Shop");
    assert_eq!(ui["display_name#it"], "Negozio");
    assert_eq!(ui["logo_uri"], "https://rp/logo");
    assert!(ui.get("redirect_uris").is_none(), "not a UI claim");
    let fe = &rp.ui_infos["federation_entity"];
    assert_eq!(fe["organization_name#de"], "Acme GmbH");
    assert_eq!(fe["contacts"], json!(["ops@acme"]));
    assert!(
        fe.get("keywords").is_none(),
        "wrongly typed values are dropped"
    );
    assert!(c.entities[0].ui_infos.is_empty(), "no UI claims, no entry");
}

#[test]
fn collections_are_sorted_and_deduplicated() {
    let a = leaf("https://b", json!({}), &[]);
    let b = leaf("https://a", json!({}), &[]);
    let c = Collection::new("ta".into(), 1, vec![a.clone(), b, a]);
    let got: Vec<_> = c.entities.iter().map(|e| e.entity_id.as_str()).collect();
    assert_eq!(got, ["https://a", "https://b"]);
}

#[test]
fn entity_type_is_any_of_and_trims_ui_infos_to_the_asked_types() {
    let c = sample();
    let q = parse(
        "entity_type=openid_provider&entity_type=openid_relying_party",
        false,
    )
    .unwrap();
    let p = select(&c, &q, None).unwrap();
    assert_eq!(
        ids(&p.entities),
        ["https://op.example", "https://rp.example"]
    );
    let q = parse("entity_type=openid_provider", false).unwrap();
    let p = select(&c, &q, None).unwrap();
    assert_eq!(ids(&p.entities), ["https://op.example"]);
    let infos = p.entities[0]["ui_infos"].as_object().unwrap();
    let mut kinds: Vec<_> = infos.keys().collect();
    kinds.sort();
    assert_eq!(kinds, ["federation_entity", "openid_provider"]);
}

#[test]
fn trust_mark_type_is_all_of() {
    let c = sample();
    let q = parse("trust_mark_type=https://tm/a", false).unwrap();
    assert_eq!(
        ids(&select(&c, &q, None).unwrap().entities),
        ["https://op.example", "https://rp.example"]
    );
    let q = parse(
        "trust_mark_type=https://tm/a&trust_mark_type=https://tm/b",
        false,
    )
    .unwrap();
    assert_eq!(
        ids(&select(&c, &q, None).unwrap().entities),
        ["https://op.example"]
    );
}

#[test]
fn query_matches_display_and_organization_names_in_any_language_ignoring_case() {
    let c = sample();
    for (text, want) in [
        ("negozio", vec!["https://rp.example"]),
        ("ACME gmbh", vec!["https://rp.example"]),
        ("anmeld", vec!["https://op.example"]),
        ("beta", vec!["https://op.example"]),
        ("sign in", vec![]),
    ] {
        let q = CollectionQuery::parse(&[("query".into(), text.into())], false).unwrap();
        assert_eq!(ids(&select(&c, &q, None).unwrap().entities), want, "{text}");
    }
}

#[test]
fn entity_claims_and_ui_claims_select_members() {
    let c = sample();
    let q = parse("entity_claims=entity_types", false).unwrap();
    let p = select(&c, &q, None).unwrap();
    let op = p.entities[1].as_object().unwrap();
    let mut keys: Vec<_> = op.keys().collect();
    keys.sort();
    assert_eq!(keys, ["entity_id", "entity_types"]);
    let q = parse("entity_claims=trust_marks", false).unwrap();
    let p = select(&c, &q, None).unwrap();
    assert_eq!(
        p.entities[1]["trust_marks"][1]["trust_mark_type"],
        "https://tm/b"
    );
    assert!(p.entities[1].get("entity_types").is_none());
    let q = parse("ui_claims=display_name", false).unwrap();
    let p = select(&c, &q, None).unwrap();
    assert_eq!(
        p.entities[1]["ui_infos"],
        json!({"openid_provider": {"display_name": "Login", "display_name#it": "Accesso",
            "display_name#de-CH": "Anmeldung"}})
    );
}

#[test]
fn language_tags_keep_untagged_and_matching_variants() {
    let c = sample();
    let q = parse("language_tag=de&ui_claims=display_name", false).unwrap();
    let p = select(&c, &q, None).unwrap();
    assert_eq!(
        p.entities[1]["ui_infos"]["openid_provider"],
        json!({"display_name": "Login", "display_name#de-CH": "Anmeldung"})
    );
    assert!(language_matches("de", "DE-ch"));
    assert!(!language_matches("de", "den"));
    assert!(language_matches("*", "it"));
    assert!(!language_matches("de-ch", "de"));
}

#[test]
fn unknown_claims_and_paging_without_pagination_are_refused() {
    assert!(matches!(
        parse("entity_claims=metadata", true),
        Err(QueryError::UnsupportedClaim(_))
    ));
    assert!(matches!(
        parse("ui_claims=client_name", true),
        Err(QueryError::UnsupportedClaim(_))
    ));
    for p in ["limit=2", "from=https://a", "from_entity_id=https://a"] {
        assert!(
            matches!(parse(p, false), Err(QueryError::UnsupportedParameter(_))),
            "{p}"
        );
    }
    for p in [
        "limit=0",
        "limit=x",
        "limit=1&limit=2",
        "trust_anchor=a&trust_anchor=b",
    ] {
        assert!(
            matches!(parse(p, true), Err(QueryError::InvalidRequest(_))),
            "{p}"
        );
    }
    assert!(parse("unknown=1", false).is_ok());
}

#[test]
fn paging_follows_next_and_refuses_unknown_pointers() {
    let c = sample();
    let q = parse("limit=5", true).unwrap();
    let p = select(&c, &q, Some(2)).unwrap();
    assert_eq!(
        ids(&p.entities),
        ["https://bare.example", "https://op.example"]
    );
    assert_eq!(p.next.as_deref(), Some("https://rp.example"));
    let q = parse("from_entity_id=https://rp.example", true).unwrap();
    assert!(q.legacy_pointer);
    let p = select(&c, &q, Some(2)).unwrap();
    assert_eq!(ids(&p.entities), ["https://rp.example"]);
    assert_eq!(p.next, None);
    let q = parse("from=https://nope.example", true).unwrap();
    assert!(matches!(
        select(&c, &q, Some(2)),
        Err(QueryError::PageNotFound(_))
    ));
}

proptest! {
    #[test]
    fn paging_returns_every_selected_entity_once_in_order(
        names in proptest::collection::vec("[a-z]{1,6}", 0..80),
        typed in proptest::collection::vec(any::<bool>(), 80),
        max in 1usize..12,
        limit in proptest::option::of(1usize..20),
        filter in any::<bool>(),
    ) {
        let entities: Vec<_> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let kind = if typed[i] { "openid_provider" } else { "openid_relying_party" };
                leaf(&format!("https://{n}.example"), json!({kind: {"display_name": n}}), &[])
            })
            .collect();
        let c = Collection::new("ta".into(), 1, entities);
        let mut base = String::new();
        if let Some(l) = limit {
            base.push_str(&format!("limit={l}&"));
        }
        if filter {
            base.push_str("entity_type=openid_provider&");
        }
        let mut want: Vec<String> = c
            .entities
            .iter()
            .filter(|e| !filter || e.entity_types.iter().any(|t| t == "openid_provider"))
            .map(|e| e.entity_id.clone())
            .collect();
        want.dedup();
        let mut got = Vec::new();
        let mut from: Option<String> = None;
        loop {
            let mut qs = base.clone();
            if let Some(f) = &from {
                qs.push_str(&url::form_urlencoded::Serializer::new(String::new())
                    .append_pair("from", f).finish());
            }
            let q = parse(&qs, true).unwrap();
            let page = select(&c, &q, Some(max)).unwrap();
            prop_assert!(page.entities.len() <= max.min(limit.unwrap_or(max)));
            prop_assert!(page.next.is_none() || !page.entities.is_empty());
            got.extend(ids(&page.entities).into_iter().map(String::from));
            match page.next {
                Some(n) => from = Some(n),
                None => break,
            }
        }
        prop_assert_eq!(got, want);
    }
}

#[test]
fn equivalent_requests_parse_to_one_query_and_repeated_values_are_bounded() {
    let a = parse(
        "entity_type=b&entity_type=a&junk=1&language_tag=de&language_tag=en&entity_type=a",
        false,
    )
    .unwrap();
    let b = parse(
        "language_tag=en&entity_type=a&language_tag=de&entity_type=b&other=x",
        false,
    )
    .unwrap();
    assert_eq!(a, b);
    assert_eq!(a.entity_types, ["a", "b"]);
    let many = |name: &str, n: usize| vec![format!("{name}=x"); n].join("&");
    for name in ["entity_type", "trust_mark_type", "language_tag"] {
        assert!(parse(&many(name, 16), false).is_ok());
        match parse(&many(name, 17), false) {
            Err(QueryError::InvalidRequest(d)) => assert!(d.contains(name), "{d}"),
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn a_credential_issuers_display_array_gives_its_ui_claims_per_language() {
    let issuer = leaf(
        "https://issuer.example",
        json!({
            "federation_entity": {"organization_name": "Issuer Org"},
            "openid_credential_issuer": {
                "credential_issuer": "https://issuer.example",
                "display": [
                    {"name": "PID Issuer", "locale": "en", "logo": {"uri": "https://i/en.png"}},
                    {"name": "PID-Aussteller", "locale": "de", "description": "Amtlich"},
                    {"name": "Issuer", "logo": {"uri": 7}},
                    "not an object"
                ]
            },
            "openid_credential_verifier": {"client_name": "Verifier", "display_name": "Own"}
        }),
        &[],
    );
    assert_eq!(
        issuer.entity_types,
        [
            "federation_entity",
            "openid_credential_issuer",
            "openid_credential_verifier"
        ]
    );
    assert_eq!(
        issuer.ui_infos["openid_credential_issuer"],
        json!({
            "display_name#en": "PID Issuer",
            "logo_uri#en": "https://i/en.png",
            "display_name#de": "PID-Aussteller",
            "description#de": "Amtlich",
            "display_name": "Issuer"
        })
    );
    // The metadata's own display_name wins over client_name.
    assert_eq!(
        issuer.ui_infos["openid_credential_verifier"],
        json!({"display_name": "Own"})
    );
}
