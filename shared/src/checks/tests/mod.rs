//! Checker tests over an in-memory [`CheckEnv`]: the federation is real signed statements
//! served from memory (`chain::tests::Fed`), operator services and programs are canned
//! answers that record what they were asked. The control plane's real HTTP client and
//! process runner are tested in `pharos_controlplane::checks`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod chain_tests;
mod parse_tests;
mod remote_tests;
mod simple_tests;

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{Map, Value};

use super::*;
use crate::chain::Fetcher;
use crate::chain::tests::{Fed, MemFetcher, NOW};
use crate::jose;

/// An environment whose network, repository and programs are in memory.
#[derive(Default)]
pub struct MemEnv {
    pub fed: Fed,
    pub anchors: HashMap<String, AnchorSpec>,
    pub standings: HashMap<(String, String), Standing>,
    /// Answers by URL; a missing URL is a network failure.
    pub http: HashMap<String, Result<HttpAnswer, String>>,
    pub http_calls: Mutex<Vec<HttpCall>>,
    pub program: Option<ProcessOutcome>,
    pub runs: Mutex<Vec<ProcessCall>>,
}

impl CheckEnv for MemEnv {
    type Fetcher = MemFetcher;

    fn fetcher(&self) -> &MemFetcher {
        &self.fed.fetcher
    }

    fn now(&self) -> i64 {
        NOW
    }

    fn anchor(&self, entity_id: &str) -> Option<AnchorSpec> {
        self.anchors.get(entity_id).cloned()
    }

    fn standing(&self, trust_mark_type: &str, sub: &str) -> Standing {
        let key = (trust_mark_type.to_owned(), sub.to_owned());
        self.standings
            .get(&key)
            .copied()
            .unwrap_or(Standing::NotEntitled)
    }

    async fn http(&self, call: HttpCall) -> Result<HttpAnswer, String> {
        let answer = self
            .http
            .get(&call.url)
            .cloned()
            .unwrap_or_else(|| Err(format!("{}: connection refused", call.url)));
        self.http_calls.lock().unwrap().push(call);
        answer
    }

    async fn run(&self, call: ProcessCall) -> ProcessOutcome {
        self.runs.lock().unwrap().push(call);
        self.program
            .clone()
            .unwrap_or(ProcessOutcome::CannotStart("no program".into()))
    }
}

impl MemEnv {
    /// Puts `entity_id` into the trust anchor repository (keys pinned or not).
    pub fn repository_anchor(&mut self, entity_id: &str, pinned: bool) {
        let spec = self.fed.anchor(entity_id, pinned);
        self.anchors.insert(entity_id.to_owned(), spec);
    }

    /// A `200` answer with `body` at `url`.
    pub fn serve(&mut self, url: &str, status: u16, body: &[u8]) {
        let answer = HttpAnswer {
            status,
            content_type: None,
            body: body.to_vec(),
        };
        self.http.insert(url.to_owned(), Ok(answer));
    }

    /// Runs `checker` (parsed from JSON) for the entity whose EC the federation serves.
    pub async fn check(&self, checker: Value, entity_id: &str) -> Verdict {
        self.check_as(checker, entity_id, None).await
    }

    /// As [`MemEnv::check`], for trust mark eligibility of `tm_type`.
    pub async fn check_as(
        &self,
        checker: Value,
        entity_id: &str,
        tm_type: Option<&str>,
    ) -> Verdict {
        let checker = Checker::parse(&checker, "checker").unwrap();
        let jws = self
            .fed
            .fetcher
            .entity_configuration(entity_id)
            .await
            .unwrap();
        let claims = jose::decode_unverified(&jws).unwrap().claims;
        let types = entity_types(&claims);
        let cand = Candidate {
            entity_id,
            entity_types: &types,
            configuration: &claims,
            configuration_jws: &jws,
            trust_mark_type: tm_type,
        };
        check(&checker, &cand, self).await
    }
}

fn entity_types(claims: &Map<String, Value>) -> Vec<String> {
    claims
        .get("metadata")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}
