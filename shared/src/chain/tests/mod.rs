//! Tests of chain collection, validation and choice, over in-memory federations built from
//! real signed statements, and over the signed chain of the spec (§4.3).
//!
//! This file holds the test federation builder: Entities with real ES256 keys, signed Entity
//! Configurations and Subordinate Statements, served by an in-memory [`Fetcher`].

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod explain_tests;
mod interop_tests;
mod reject_tests;
mod resolve_tests;
mod vector_tests;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use crate::chain::{
    AnchorSpec, DEFAULT_MAX_DEPTH, Fetcher, ResolveRequest, ResolvedChain, resolve,
};
use crate::jose::{Algorithm, Jwks, Signer, SigningKey, sign};
use crate::{Error, Result};

/// The fixed clock of the tests.
pub const NOW: i64 = 1_800_000_000;

/// Serves the statements a [`Fed`] has published and counts every request.
#[derive(Default)]
pub struct MemFetcher {
    ecs: HashMap<String, String>,
    statements: HashMap<(String, String), String>,
    pub fetches: AtomicUsize,
}

impl Fetcher for MemFetcher {
    async fn entity_configuration(&self, entity_id: &str) -> Result<String> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        self.ecs
            .get(entity_id)
            .cloned()
            .ok_or_else(|| Error::Fetch(format!("404 for {entity_id}")))
    }

    async fn subordinate_statement(&self, fetch_endpoint: &str, sub: &str) -> Result<String> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        self.statements
            .get(&(fetch_endpoint.to_owned(), sub.to_owned()))
            .cloned()
            .ok_or_else(|| Error::Fetch(format!("404 for {fetch_endpoint}?sub={sub}")))
    }
}

/// A federation under construction.
#[derive(Default)]
pub struct Fed {
    keys: HashMap<String, SigningKey>,
    pub fetcher: MemFetcher,
}

/// `https://<name>.example`, to keep the tests short.
pub fn id(name: &str) -> String {
    format!("https://{name}.example")
}

/// The fetch endpoint every superior in these tests publishes.
pub fn fetch_endpoint(entity: &str) -> String {
    format!("{entity}/fetch")
}

/// Metadata of a superior: `federation_entity` with its fetch endpoint.
pub fn superior_metadata(entity: &str) -> Value {
    json!({"federation_entity": {"federation_fetch_endpoint": fetch_endpoint(entity)}})
}

/// Merge `extra`'s members into `base` (an object), replacing same-named ones.
fn overlay(mut base: Value, extra: Value) -> Value {
    if let (Some(b), Value::Object(e)) = (base.as_object_mut(), extra) {
        b.extend(e);
    }
    base
}

impl Fed {
    /// The key of `entity`, generated on first use.
    pub fn key(&mut self, entity: &str) -> &SigningKey {
        self.keys
            .entry(entity.to_owned())
            .or_insert_with(|| SigningKey::generate(Algorithm::ES256, 0).unwrap())
    }

    /// The public JWK Set of `entity`.
    pub fn jwks(&mut self, entity: &str) -> Jwks {
        Jwks {
            keys: vec![self.key(entity).public_jwk().clone()],
        }
    }

    /// Sign `claims` as an entity statement with `signer`'s key.
    pub fn sign_as(&mut self, signer: &str, claims: &Value) -> String {
        let key = self.key(signer);
        sign(
            key,
            "entity-statement+jwt",
            claims.as_object().unwrap(),
            None,
        )
        .unwrap()
    }

    /// Default claims of a statement by `iss` about `sub`, valid around [`NOW`].
    pub fn claims(&mut self, iss: &str, sub: &str) -> Value {
        json!({"iss": iss, "sub": sub, "iat": NOW - 10, "exp": NOW + 3600, "jwks": self.jwks(sub)})
    }

    /// Publish the Entity Configuration of `entity`; `extra` members replace the defaults.
    pub fn entity(&mut self, entity: &str, hints: &[&str], metadata: Value, extra: Value) {
        let mut claims = self.claims(entity, entity);
        claims["metadata"] = metadata;
        if !hints.is_empty() {
            claims["authority_hints"] = json!(hints);
        }
        let claims = overlay(claims, extra);
        let jws = self.sign_as(entity, &claims);
        self.fetcher.ecs.insert(entity.to_owned(), jws);
    }

    /// Publish a Trust Anchor (or an Intermediate, with `hints`) that has a fetch endpoint.
    pub fn superior(&mut self, entity: &str, hints: &[&str]) {
        self.entity(entity, hints, superior_metadata(entity), json!({}));
    }

    /// Publish a relying-party leaf with some metadata.
    pub fn leaf(&mut self, entity: &str, hints: &[&str]) {
        let md = json!({"openid_relying_party": {
            "client_name": "leaf",
            "grant_types": ["authorization_code", "implicit"],
        }});
        self.entity(entity, hints, md, json!({}));
    }

    /// Publish the Subordinate Statement of `sup` about `sub`; `extra` replaces defaults.
    pub fn subordinate(&mut self, sup: &str, sub: &str, extra: Value) {
        let claims = overlay(self.claims(sup, sub), extra);
        let jws = self.sign_as(sup, &claims);
        self.publish_statement(sup, sub, jws);
    }

    /// Serve `jws` as what `sup`'s fetch endpoint says about `sub`.
    pub fn publish_statement(&mut self, sup: &str, sub: &str, jws: String) {
        self.fetcher
            .statements
            .insert((fetch_endpoint(sup), sub.to_owned()), jws);
    }

    /// An anchor the caller accepts, with its keys pinned or not.
    pub fn anchor(&mut self, entity: &str, pinned: bool) -> AnchorSpec {
        AnchorSpec {
            entity_id: entity.to_owned(),
            jwks: pinned.then(|| self.jwks(entity)),
            ..AnchorSpec::default()
        }
    }

    /// Resolve `subject` to `anchors` at [`NOW`] with the default depth and no type filter.
    pub async fn resolve(&self, subject: &str, anchors: &[AnchorSpec]) -> Result<ResolvedChain> {
        self.resolve_types(subject, anchors, &[]).await
    }

    /// Like [`Fed::resolve`], restricted to `entity_types`.
    pub async fn resolve_types(
        &self,
        subject: &str,
        anchors: &[AnchorSpec],
        entity_types: &[String],
    ) -> Result<ResolvedChain> {
        let req = ResolveRequest {
            subject,
            anchors,
            entity_types,
            now: NOW,
            max_depth: DEFAULT_MAX_DEPTH,
        };
        resolve(&self.fetcher, &req).await
    }

    /// How many fetches have been made so far.
    pub fn fetches(&self) -> usize {
        self.fetcher.fetches.load(Ordering::SeqCst)
    }
}

/// The message of an `InvalidTrustChain` error, failing the test on anything else.
pub fn chain_error<T: std::fmt::Debug>(r: Result<T>) -> String {
    match r {
        Err(Error::InvalidTrustChain(m)) => m,
        other => panic!("expected InvalidTrustChain, got {other:?}"),
    }
}
