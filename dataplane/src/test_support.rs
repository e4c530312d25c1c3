//! Snapshots for in-process tests of the data plane: a key set, a registry with endpoints and
//! some subordinates, without a database or a control plane. Tests play the control plane's
//! part with a [`SnapshotPublisher`].

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failing unwrap is a failing test

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pharos_shared::endpoint::{EndpointConfig, EndpointType};
use pharos_shared::jose::{Algorithm, Jwk, Jwks, Signer, SigningKey};
use pharos_shared::snapshot::{
    EcSettings, EndpointEntry, KeySet, Registry, Snapshot, SnapshotPublisher, TrustAnchors,
};
use pharos_shared::subordinate::{
    StatementSlot, StoredJwks, Subordinate, SubordinateStatus, Subordinates,
};
use pharos_shared::time::ManualClock;
use pharos_shared::trust_mark_issuer::{
    EligibilityMode, IssuanceSpec, IssuedMark, Subject, SubjectStatus, TrustMarks,
};
use serde_json::{Map, Value};

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use bytes::Bytes;
use pharos_shared::jose::{self, Decoded};
use tower::ServiceExt as _;

use crate::DataPlane;

/// A subordinate of [`federation`].
pub const RP: &str = "https://rp.example.org";
/// The fetch request for [`RP`].
pub const FETCH_RP: &str = "/fetch?sub=https%3A%2F%2Frp.example.org";
/// Our entity identifier in test snapshots.
pub const ENTITY_ID: &str = "https://ta.example.org";
/// The clock of test data planes, Unix seconds.
pub const NOW: i64 = 1_800_000_000;

/// A signer that counts its signatures and, like a hardware token, asks to run off the async
/// workers.
#[derive(Debug)]
pub struct CountingSigner {
    key: SigningKey,
    signatures: AtomicUsize,
}

impl CountingSigner {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            key: SigningKey::generate(Algorithm::ES256, 0).unwrap(),
            signatures: AtomicUsize::new(0),
        })
    }

    /// Signatures made so far.
    pub fn count(&self) -> usize {
        self.signatures.load(Ordering::SeqCst)
    }
}

impl Signer for CountingSigner {
    fn alg(&self) -> Algorithm {
        self.key.alg()
    }
    fn kid(&self) -> &str {
        self.key.kid()
    }
    fn public_jwk(&self) -> &Jwk {
        self.key.public_jwk()
    }
    fn sign_bytes(&self, signing_input: &[u8]) -> pharos_shared::Result<Vec<u8>> {
        self.signatures.fetch_add(1, Ordering::SeqCst);
        self.key.sign_bytes(signing_input)
    }
    fn is_blocking(&self) -> bool {
        true
    }
}

/// Builds a [`Snapshot`] piece by piece.
#[derive(Debug)]
pub struct SnapshotBuilder {
    generation: u64,
    signer: Arc<dyn Signer>,
    endpoints: Vec<EndpointEntry>,
    subordinates: Vec<Arc<Subordinate>>,
    trust_marks: TrustMarks,
}

impl SnapshotBuilder {
    /// Generation 1, an ES256 key, no endpoints, no subordinates.
    pub fn new() -> Self {
        Self {
            generation: 1,
            signer: Arc::new(SigningKey::generate(Algorithm::ES256, 0).unwrap()),
            endpoints: Vec::new(),
            subordinates: Vec::new(),
            // As configured by default (`federation.trust_mark_legacy_id`).
            trust_marks: TrustMarks {
                legacy_id: true,
                ..TrustMarks::default()
            },
        }
    }

    /// An issuance spec of `trust_mark_type` (db_only, no cache) shaped by `f`.
    pub fn mark_spec(mut self, trust_mark_type: &str, f: impl FnOnce(&mut IssuanceSpec)) -> Self {
        let mut spec = IssuanceSpec {
            id: i64::try_from(self.trust_marks.specs.len()).unwrap() + 1,
            trust_mark_type: trust_mark_type.into(),
            lifetime: None,
            ref_uri: None,
            logo_uri: None,
            delegation_jwt: None,
            additional_claims: Map::new(),
            eligibility: EligibilityMode::DbOnly,
            checker: None,
            check_cache_ttl: 0,
            cache_ttl: 0,
            version: 1,
        };
        f(&mut spec);
        self.trust_marks
            .specs
            .insert(trust_mark_type.into(), Arc::new(spec));
        self
    }

    /// Subject `entity_id` of `trust_mark_type` with `status`, extra claims and `version`.
    pub fn mark_subject(
        mut self,
        trust_mark_type: &str,
        entity_id: &str,
        status: SubjectStatus,
        claims: Value,
        version: u64,
    ) -> Self {
        let subject = Subject {
            id: i64::try_from(self.trust_marks.subjects.len()).unwrap() + 1,
            entity_id: entity_id.into(),
            status,
            additional_claims: claims.as_object().cloned().unwrap_or_default(),
            version,
        };
        let key = (trust_mark_type.to_owned(), entity_id.to_owned());
        self.trust_marks.subjects.insert(key, Arc::new(subject));
        self
    }

    /// An instance issued earlier.
    pub fn issued_mark(mut self, mark: IssuedMark) -> Self {
        let jti: Arc<str> = Arc::from(mark.jti.as_str());
        self.trust_marks.issued.insert(jti, Arc::new(mark));
        self
    }

    /// Our signing key.
    pub fn signer(mut self, signer: Arc<dyn Signer>) -> Self {
        self.signer = signer;
        self
    }

    /// The generation the snapshot carries (and its key generation).
    pub fn generation(mut self, generation: u64) -> Self {
        self.generation = generation;
        self
    }

    /// An endpoint of type `kind` with its default configuration at `path`.
    pub fn endpoint(self, kind: EndpointType, path: &str) -> Self {
        self.endpoint_with(kind, path, false)
    }

    /// As [`Self::endpoint`], with client authentication on or off.
    pub fn endpoint_with(mut self, kind: EndpointType, path: &str, auth_enabled: bool) -> Self {
        self.endpoints.push(EndpointEntry {
            kind,
            path: Some(path.to_owned()),
            url: None,
            auth_enabled,
            auth_trust_anchors: Vec::new(),
            config: EndpointConfig::parse(kind, &Value::Null).unwrap(),
        });
        self
    }

    /// An active subordinate `entity_id` with one fresh EC key, registered as
    /// `openid_relying_party`.
    pub fn subordinate(mut self, entity_id: &str) -> Self {
        let key = SigningKey::generate(Algorithm::ES256, 0).unwrap();
        let version = u64::try_from(self.subordinates.len()).unwrap() + 1;
        self.subordinates.push(Arc::new(Subordinate {
            id: i64::try_from(version).unwrap(),
            entity_id: entity_id.into(),
            status: SubordinateStatus::Active,
            registered_entity_types: ["openid_relying_party".into()].into(),
            jwks: StoredJwks::new(&Jwks {
                keys: vec![key.public_jwk().clone()],
            }),
            metadata: None,
            metadata_policy: None,
            constraints: None,
            additional_claims: Vec::new(),
            registered: 0,
            updated: 0,
            version,
            statement: StatementSlot::default(),
        }));
        self
    }

    pub fn build(self) -> Snapshot {
        let published = vec![self.signer.public_jwk().clone()];
        Snapshot {
            ready: Default::default(),
            generation: self.generation,
            entity_id: ENTITY_ID.into(),
            registry: Arc::new(Registry::new(self.endpoints, Vec::new())),
            entity_configuration: Arc::new(EcSettings::default()),
            trust_anchors: Arc::new(TrustAnchors::default()),
            keys: Arc::new(KeySet {
                signer: self.signer,
                published,
                historical: Vec::new(),
            }),
            subordinates: Arc::new(Subordinates::new(self.subordinates, Arc::default(), 1)),
            trust_marks: Arc::new(self.trust_marks),
            collections: Default::default(),
            statements_generation: self.generation,
        }
    }
}

/// The snapshot after `snap` with its keys and registry changed (as a key rotation or an
/// endpoint edit publishes it): every cached statement is stale.
pub fn invalidated(snap: &Snapshot) -> Snapshot {
    let mut next = snap.clone();
    next.generation += 1;
    next.statements_generation = next.generation;
    next
}

/// A data plane over `first` at [`NOW`], and the publisher that replaces its snapshot.
pub fn data_plane(first: Snapshot) -> (Arc<DataPlane>, SnapshotPublisher) {
    let publisher = SnapshotPublisher::new(first);
    let dp = DataPlane::new(publisher.reader(), ManualClock::new(NOW));
    (dp, publisher)
}

/// Fetch and list at `/fetch` and `/list`, one subordinate ([`RP`]).
pub fn federation() -> SnapshotBuilder {
    SnapshotBuilder::new()
        .endpoint(EndpointType::Fetch, "/fetch")
        .endpoint(EndpointType::List, "/list")
        .subordinate(RP)
}

/// A response as a test reads it.
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Answer {
    pub fn content_type(&self) -> &str {
        self.headers[header::CONTENT_TYPE].to_str().unwrap()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    /// The body as a JWS of `typ` that verifies with the published keys of `snap`.
    pub fn verified(&self, snap: &Snapshot, typ: &str) -> Decoded {
        let token = std::str::from_utf8(&self.body).unwrap();
        let decoded = jose::verify(token, &snap.keys.jwks()).unwrap();
        assert_eq!(decoded.header["typ"], typ);
        decoded
    }
}

/// `method uri` through the public port's entry (ready answers first, then the router), in
/// process.
pub async fn request(dp: &Arc<DataPlane>, method: &str, uri: &str) -> Answer {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::empty())
        .unwrap();
    let front = crate::front::Front::with_ready_answers(crate::router(dp.clone()), dp.clone(), &[]);
    answer(front.oneshot(req).await.unwrap()).await
}

/// `GET uri` through the router alone (no ready answers in front of it).
pub async fn routed(dp: &Arc<DataPlane>, uri: &str) -> Answer {
    let req = Request::get(uri).body(Body::empty()).unwrap();
    answer(crate::router(dp.clone()).oneshot(req).await.unwrap()).await
}

/// A response as a test reads it.
pub async fn answer(resp: axum::response::Response) -> Answer {
    let (parts, body) = resp.into_parts();
    Answer {
        status: parts.status,
        headers: parts.headers,
        body: axum::body::to_bytes(body, usize::MAX).await.unwrap(),
    }
}

/// `GET uri` through the public router.
pub async fn get(dp: &Arc<DataPlane>, uri: &str) -> Answer {
    request(dp, "GET", uri).await
}
