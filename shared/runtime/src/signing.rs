//! Signing from the request path without stalling it.
//!
//! A tokio worker that waits for a signature waits with every request queued behind it. An EC
//! or EdDSA signature (tens of microseconds) is cheaper than handing it to another thread and
//! is made inline; signers that say they block ([`Signer::is_blocking`]: RSA, a PKCS#11 token)
//! sign on tokio's blocking pool, so a burst of re-signing after a key change queues there
//! and not on the workers that answer cached requests.

use std::sync::Arc;

use pharos_shared::jose::{self, Signer};
use pharos_shared::{Error, Result};
use serde_json::{Map, Value};

/// A compact JWS of `claims` with header `typ`, signed by `signer`; see the module doc for
/// where the signature is computed.
pub async fn sign(
    signer: &Arc<dyn Signer>,
    typ: &'static str,
    claims: Map<String, Value>,
) -> Result<String> {
    if !signer.is_blocking() {
        return jose::sign(signer.as_ref(), typ, &claims, None);
    }
    let signer = signer.clone();
    tokio::task::spawn_blocking(move || jose::sign(signer.as_ref(), typ, &claims, None))
        .await
        .map_err(|e| Error::Jws(format!("the signing task did not finish: {e}")))?
}
