//! Every Admin API request body, parsed and checked as its route does before it touches the
//! database: the entry point of the `admin_bodies` fuzz target (`shared/fuzz`), which feeds
//! arbitrary bytes to [`check_all`]. The checks called here are the ones the handlers call
//! (methods on the body types, or the shared helpers), so a crash found through this module is
//! a crash of the route.
//!
//! A route that refuses a body answers 4xx; nothing here may panic, loop or allocate without
//! bound on any input.

use pharos_shared::config::AcceptSettings;
use pharos_shared::endpoint::EndpointType;
use pharos_shared::jose::{Jwk, Jwks};
use pharos_shared::policy::WriteRules;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::admin::claims::{ClaimInput, check_list};
use crate::admin::documents::{self, Doc};
use crate::admin::endpoints::{EndpointInput, parse_type};
use crate::admin::entity_configuration::hints::HintInput;
use crate::admin::entity_configuration::trust_marks::HeldInput;
use crate::admin::error::ApiResult;
use crate::admin::extract::{entity_id, integer};
use crate::admin::trust_anchors::{TrustAnchorInput, validate, validate_jwks};
use crate::admin::trust_marks::inputs::{IssuerInput, OwnerInput};
use crate::admin::trust_marks::issuers::IssuerBody;
use crate::admin::trust_marks::owners::OwnerBody;
use crate::admin::trust_marks::spec_input::{SpecInput, claims_object};
use crate::admin::trust_marks::subjects::{self, SubjectInput};
use crate::admin::trust_marks::type_key;
use crate::admin::trust_marks::types::TypeInput;
use crate::admin::users::{NewUser, UserUpdate};
use crate::admin::{api_keys, subordinates};

/// Our entity identifier in the checks that compare a body with it.
const US: &str = "https://pharos.example";

/// A fixed clock for the checks that need one.
const NOW: i64 = 1_700_000_000;

/// The JSON body extractor's parse ([`crate::admin::extract::Json`] uses `serde_json` alike).
fn parse<T: DeserializeOwned>(data: &[u8]) -> Option<T> {
    serde_json::from_slice(data).ok()
}

/// Parses `data` as every Admin API body type and runs each route's checks on what parses;
/// the number of (type, check) pairs that accepted the input. Never panics.
pub fn check_all(data: &[u8]) -> usize {
    let mut ok = 0usize;
    let mut count = |r: ApiResult<()>| ok += usize::from(r.is_ok());
    // `federation.accept` as configured by default: nothing beyond the specifications.
    let accept = AcceptSettings::default();
    let rules = WriteRules::default();

    // Hosted entities.
    if let Some(b) = parse::<crate::admin::entities::EntityInput>(data) {
        count(b.check().map(drop));
    }
    if let Some(b) = parse::<crate::admin::entities::EntityUpdate>(data) {
        count(b.check());
    }

    // Subordinates.
    if let Some(b) = parse::<subordinates::crud::CreateInput>(data) {
        count(b.check(US, &accept).map(drop));
    }
    if let Some(b) = parse::<subordinates::crud::UpdateInput>(data) {
        count(b.check(&accept));
    }
    if let Some(b) = parse::<Jwks>(data) {
        count(validate_jwks(&b, &[]));
    }
    if let Some(b) = parse::<Jwk>(data) {
        count(validate_jwks(&Jwks { keys: vec![b] }, &[]));
    }
    if let Some(b) = parse::<Vec<String>>(data) {
        count(subordinates::general::check_crit(&b));
    }
    // Additional claims (Entity Configuration, subordinate and general scopes).
    if let Some(b) = parse::<ClaimInput>(data) {
        count(b.name().map(drop));
    }
    if let Some(b) = parse::<Vec<ClaimInput>>(data) {
        count(check_list(&b));
    }
    // Documents: metadata, metadata policy, constraints.
    if let Some(b) = parse::<Value>(data) {
        for doc in [Doc::Metadata, Doc::Policy, Doc::Constraints] {
            count(documents::check(doc, &b, &rules));
        }
        count(claims_object("additional_claims", Some(b)).map(drop));
    }
    // Trust anchors.
    if let Some(b) = parse::<TrustAnchorInput>(data) {
        count(b.check_new(&[]).map(drop));
        count(validate(&b, US, &[]));
    }
    // Entity Configuration: authority hints, held trust marks, keys.
    if let Some(b) = parse::<HintInput>(data) {
        count(b.check_new(US).map(drop));
    }
    if let Some(b) = parse::<HeldInput>(data) {
        count(b.plan(US, NOW, None).map(drop));
    }
    if let Some(b) = parse::<api_keys::NewKey>(data) {
        count(b.into_row(NOW).map(drop));
    }
    if let Some(b) = parse::<api_keys::RotateKey>(data) {
        count(b.new_row(NOW).map(drop));
    }
    if parse::<api_keys::ExpUpdate>(data).is_some() {
        count(Ok(()));
    }
    // Federation endpoints, for every type.
    for kind in EndpointType::ALL {
        if let Some(b) = parse::<EndpointInput>(data) {
            count(b.check(kind).map(drop));
        }
    }
    // The resolver's caches.
    if let Some(b) = parse::<crate::admin::resolver::FlushInput>(data) {
        count(b.check().map(drop));
    }
    // Users.
    if let Some(b) = parse::<NewUser>(data) {
        count(b.check().map(drop));
    }
    if let Some(b) = parse::<UserUpdate>(data) {
        count(b.check("admin"));
    }
    // Trust marks: types, owners, issuers, issuance specs, subjects.
    if let Some(b) = parse::<TypeInput>(data) {
        count(b.validate(&[]));
    }
    if let Some(b) = parse::<OwnerInput>(data) {
        count(b.validate(&[]));
    }
    if let Some(b) = parse::<Vec<IssuerInput>>(data) {
        count(b.iter().try_for_each(IssuerInput::validate));
    }
    if let Some(b) = parse::<IssuerInput>(data) {
        count(b.validate());
    }
    if let Some(b) = parse::<IssuerBody>(data) {
        count(b.validate());
    }
    if let Some(b) = parse::<OwnerBody>(data) {
        count(b.validate(&[]));
    }
    if let Some(b) = parse::<Vec<Value>>(data) {
        count(b.iter().try_for_each(|t| type_key(t).map(drop)));
    }
    if let Some(b) = parse::<SpecInput>(data) {
        count(b.into_write().map(drop));
    }
    if let Some(patch) = parse::<Map<String, Value>>(data) {
        // PATCH lays the members over the stored spec, then checks the whole.
        let mut base = Map::new();
        base.insert("trust_mark_type".into(), Value::from("https://t.example"));
        base.extend(patch);
        if let Ok(b) = serde_json::from_value::<SpecInput>(Value::Object(base)) {
            count(b.into_write().map(drop));
        }
    }
    if let Some(b) = parse::<SubjectInput>(data) {
        count(b.check_new().map(drop));
    }
    // Plain-text bodies: integers, status words, identifiers.
    if let Ok(text) = std::str::from_utf8(data) {
        let t = text.trim();
        count(integer(t).map(drop));
        count(subordinates::crud::parse_status(t).map(drop));
        count(subjects::parse_status(t.trim_matches('"')).map(drop));
        count(subordinates::general::check_operator(t));
        count(entity_id("entity_id", t));
        count(parse_type(t).map(drop));
    }
    ok
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "body_checks_prop_tests.rs"]
mod prop_tests;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::check_all;

    #[test]
    fn valid_bodies_are_accepted_and_garbage_is_not() {
        let sub = br#"{"entity_id":"https://sub.example","status":"pending"}"#;
        assert!(check_all(sub) > 0);
        assert_eq!(check_all(b"\xff\xfe{"), 0);
    }
}
