//! The trust marked entities listing endpoint (spec §8.5): the entities holding a valid
//! (unrevoked, unexpired) mark of `trust_mark_type` issued here; with `sub`, only that one.
//! An unknown type is 404 `not_found`, as at the trust mark endpoint.
//!
//! The holders of a type are found in one pass over every issued mark, so they are kept
//! ([`HoldersCache`]): per type we issue (unknown types are refused first, so clients cannot
//! make keys), made once per snapshot generation on the blocking pool when the marks are
//! many, and kept until the first counted mark expires or is revoked as scheduled. A `sub`
//! query looks its subject up in the sorted holders instead of scanning.

use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use pharos_shared::snapshot::Snapshot;

use super::Call;
use super::list::INLINE_LIMIT;
use super::trust_mark::{optional_param, param, spec};
use crate::error::FedError;

/// Upper bound of the cache, in bytes of holder lists (twice: identifiers and body).
const CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// The holders of one trust mark type, as made from one snapshot.
#[derive(Debug)]
pub struct Holders {
    generation: u64,
    /// Kept until then (exclusive): the first counted mark's expiry or scheduled revocation.
    until: i64,
    /// Sorted, distinct.
    ids: Vec<String>,
    /// `ids` as the JSON answer.
    body: Bytes,
}

impl Holders {
    fn make(snap: &Snapshot, trust_mark_type: &str, now: i64) -> Self {
        let (ids, until) = snap.trust_marks.valid_holders(Some(trust_mark_type), now);
        let body = Bytes::from(serde_json::to_vec(&ids).unwrap_or_else(|_| b"[]".to_vec()));
        Self {
            generation: snap.generation,
            until,
            ids: ids.into_iter().map(str::to_owned).collect(),
            body,
        }
    }

    fn serves(&self, generation: u64, now: i64) -> bool {
        self.generation == generation && now < self.until
    }

    /// The answer, for every holder or for `sub` only.
    fn answer(&self, sub: Option<&str>) -> Bytes {
        match sub {
            None => self.body.clone(),
            Some(s) if self.ids.binary_search_by(|id| id.as_str().cmp(s)).is_ok() => {
                Bytes::from(serde_json::to_vec(&[s]).unwrap_or_else(|_| b"[]".to_vec()))
            }
            Some(_) => Bytes::from_static(b"[]"),
        }
    }
}

/// Holders by trust mark type.
#[derive(Debug)]
pub struct HoldersCache(moka::future::Cache<String, Arc<Holders>>);

impl Default for HoldersCache {
    fn default() -> Self {
        Self(
            moka::future::Cache::builder()
                .max_capacity(CACHE_BYTES)
                .weigher(|k: &String, v: &Arc<Holders>| {
                    let ids: usize = v.ids.iter().map(|i| i.len() + 24).sum();
                    u32::try_from(k.len() + ids + v.body.len() + 64).unwrap_or(u32::MAX)
                })
                .build(),
        )
    }
}

/// Answers a listing request.
pub(crate) async fn serve(call: Call<'_>) -> Response {
    let (dp, snap, now) = (call.dp, call.snap.clone(), call.now);
    let params = match call.params().await {
        Ok((p, _)) => p,
        Err(e) => return e.into_response(),
    };
    match holders(&dp.trust_mark_listing_cache, &snap, &params, now).await {
        Ok(body) => crate::jwt_response::json(body),
        Err(e) => e.into_response(),
    }
}

async fn holders(
    cache: &HoldersCache,
    snap: &Arc<Snapshot>,
    params: &[(String, String)],
    now: i64,
) -> Result<Bytes, FedError> {
    let tm_type = param(params, "trust_mark_type")?;
    let sub = optional_param(params, "sub")?;
    spec(snap, tm_type)?;
    let generation = snap.generation;
    // One computation per type at a time; a newer generation's holders replace older ones.
    let entry = cache
        .0
        .entry_by_ref(tm_type)
        .and_try_compute_with(|existing| async {
            use moka::ops::compute::Op;
            if existing.is_some_and(|e| {
                let h = e.value();
                h.generation > generation || h.serves(generation, now)
            }) {
                return Ok::<_, tokio::task::JoinError>(Op::Nop);
            }
            Ok(Op::Put(Arc::new(make(snap, tm_type, now).await?)))
        })
        .await
        .map_err(FedError::server_error)?;
    match entry.into_entry() {
        Some(e) if e.value().serves(generation, now) => Ok(e.value().answer(sub)),
        // A request holding an older snapshot answers from its own.
        _ => Ok(make(snap, tm_type, now)
            .await
            .map_err(FedError::server_error)?
            .answer(sub)),
    }
}

/// [`Holders::make`], on the blocking pool when the issued marks are many.
async fn make(
    snap: &Arc<Snapshot>,
    tm_type: &str,
    now: i64,
) -> Result<Holders, tokio::task::JoinError> {
    if snap.trust_marks.issued.len() <= INLINE_LIMIT {
        return Ok(Holders::make(snap, tm_type, now));
    }
    let (snap, tm_type) = (snap.clone(), tm_type.to_owned());
    tokio::task::spawn_blocking(move || Holders::make(&snap, &tm_type, now)).await
}

#[cfg(test)]
mod tests {
    use pharos_shared::trust_mark_issuer::IssuedMark;

    use super::*;
    use crate::test_support::SnapshotBuilder;

    const TM: &str = "https://tm.example";

    fn marked(jti: &str, sub: &str, exp: Option<i64>) -> IssuedMark {
        IssuedMark {
            jti: jti.into(),
            trust_mark_type: TM.into(),
            subject: sub.into(),
            issued_at: 0,
            expires_at: exp,
            revoked_at: None,
            signed: None,
        }
    }

    fn p(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[tokio::test]
    async fn holders_are_made_once_per_type_and_kept_until_a_counted_mark_expires() {
        let cache = HoldersCache::default();
        let snap = Arc::new(
            SnapshotBuilder::new()
                .mark_spec(TM, |_| {})
                .issued_mark(marked("1", "https://b.example", Some(100)))
                .issued_mark(marked("2", "https://a.example", None))
                .build(),
        );
        let text = |b: Bytes| String::from_utf8(b.to_vec()).unwrap();
        let all = r#"["https://a.example","https://b.example"]"#;
        let ask = |extra: &[(&str, &str)], now| {
            let mut q = p(&[("trust_mark_type", TM)]);
            q.extend(p(extra));
            let (cache, snap) = (&cache, snap.clone());
            async move { holders(cache, &snap, &q, now).await }
        };
        assert_eq!(text(ask(&[("junk", "1")], 50).await.unwrap()), all);
        assert_eq!(text(ask(&[], 50).await.unwrap()), all);
        let b = ask(&[("sub", "https://b.example")], 50).await.unwrap();
        assert_eq!(text(b), r#"["https://b.example"]"#);
        let nobody = ask(&[("sub", "https://c.example")], 50).await.unwrap();
        assert_eq!(text(nobody), "[]");
        cache.0.run_pending_tasks().await;
        assert_eq!(
            cache.0.entry_count(),
            1,
            "one entry per type, whatever else was asked"
        );
        // Past b's expiry the kept list is made again.
        assert_eq!(
            text(ask(&[], 100).await.unwrap()),
            r#"["https://a.example"]"#
        );
        // An unknown type is 404 and makes no entry.
        let q = p(&[("trust_mark_type", "https://other.example")]);
        let e = holders(&cache, &snap, &q, 50).await.unwrap_err();
        assert_eq!(e.status, axum::http::StatusCode::NOT_FOUND);
        cache.0.run_pending_tasks().await;
        assert_eq!(cache.0.entry_count(), 1);
    }
}
