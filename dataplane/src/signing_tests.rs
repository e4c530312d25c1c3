//! The data plane's signing through the router: off the async workers when the signer blocks,
//! and once for a burst of first requests.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failing unwrap is a failing test

use std::sync::Arc;

use axum::http::StatusCode;
use pharos_shared::endpoint::EndpointType;
use pharos_shared::entity_configuration::ENTITY_STATEMENT_TYP;
use pharos_shared::jose;
use pharos_shared::snapshot::Snapshot;

use crate::test_support::{CountingSigner, FETCH_RP, RP, data_plane, federation, get, invalidated};

#[tokio::test]
async fn concurrent_first_fetches_of_one_subject_sign_once() {
    const BURST: usize = 16;
    let signer = CountingSigner::new();
    let (dp, publisher) = data_plane(federation().signer(signer.clone()).build());
    assert_eq!(get(&dp, FETCH_RP).await.status, StatusCode::OK);
    assert_eq!(signer.count(), 1);

    // A key or registry change: every cached statement is stale at once.
    publisher.publish(Arc::new(invalidated(&publisher.load_full())));
    // On this single-threaded runtime every request runs until it waits: the first on its
    // signature (a blocking signer signs on another thread), the others on the first.
    let mut burst = tokio::task::JoinSet::new();
    for _ in 0..BURST {
        let dp = dp.clone();
        burst.spawn(async move { get(&dp, FETCH_RP).await });
    }
    let answers = burst.join_all().await;
    assert_eq!(signer.count(), 2, "one signature for the whole burst");
    let snap = publisher.load_full();
    for a in &answers {
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(
            a.body, answers[0].body,
            "every caller got the one statement"
        );
    }
    answers[0].verified(&snap, ENTITY_STATEMENT_TYP);
    assert_eq!(dp.fetch_flights.callers(&flight_key(&snap)), 0);
}

fn flight_key(snap: &Snapshot) -> (Arc<str>, u64, u64, u64) {
    let sub = snap.subordinates.get(RP).unwrap();
    (
        sub.entity_id.clone(),
        sub.version,
        snap.subordinates.general_version,
        snap.statements_generation,
    )
}

#[tokio::test]
async fn blocking_signers_sign_on_another_thread() {
    #[derive(Debug)]
    struct ThreadSigner {
        inner: Arc<CountingSigner>,
        threads: std::sync::Mutex<Vec<std::thread::ThreadId>>,
    }
    impl jose::Signer for ThreadSigner {
        fn alg(&self) -> jose::Algorithm {
            self.inner.alg()
        }
        fn kid(&self) -> &str {
            self.inner.kid()
        }
        fn public_jwk(&self) -> &jose::Jwk {
            self.inner.public_jwk()
        }
        fn sign_bytes(&self, input: &[u8]) -> pharos_shared::Result<Vec<u8>> {
            self.threads
                .lock()
                .unwrap()
                .push(std::thread::current().id());
            self.inner.sign_bytes(input)
        }
        fn is_blocking(&self) -> bool {
            self.inner.is_blocking()
        }
    }
    let signer = Arc::new(ThreadSigner {
        inner: CountingSigner::new(),
        threads: std::sync::Mutex::new(Vec::new()),
    });
    let snap = federation()
        .endpoint(EndpointType::HistoricalKeys, "/historical")
        .signer(signer.clone())
        .build();
    let (dp, _publisher) = data_plane(snap);
    for uri in ["/.well-known/openid-federation", FETCH_RP, "/historical"] {
        assert_eq!(get(&dp, uri).await.status, StatusCode::OK, "{uri}");
    }
    let threads = signer.threads.lock().unwrap();
    assert_eq!(threads.len(), 3);
    // The test's runtime is single-threaded: the async work runs on this thread.
    let here = std::thread::current().id();
    assert!(threads.iter().all(|t| *t != here), "signed off the runtime");
}
