//! Response files of the proactive resolver, so that a restarted resolver answers at once,
//! even with every upstream down.
//!
//! Layout (like lighthouse's, with SHA-256 over a JSON job instead of SHA3 over msgpack):
//! `<dir>/resolve/<percent-encoded anchor>/<hash>.jwt` (the signed response as served),
//! `<hash>.json` (the unsigned claims, signed per request) and `<hash>.job` (what was
//! resolved, to schedule the next refresh after a restart). Files are written to a temporary
//! name and renamed, so a crash never leaves half a response behind.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use bytes::Bytes;
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use pharos_shared::jose;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// One proactive resolution: a subject, one anchor, a set of Entity Types (sorted).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Job {
    /// The subject.
    pub sub: String,
    /// The anchor.
    pub trust_anchor: String,
    /// Requested Entity Types, sorted and deduplicated; empty = all.
    pub entity_types: Vec<String>,
}

impl Job {
    /// File name stem: hex SHA-256 of the job's JSON.
    pub fn hash(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        Sha256::digest(&json)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// What the store holds for one job.
#[derive(Clone, Debug)]
pub struct Stored {
    /// The job, to re-run it.
    pub job: Job,
    /// The signed response, when `store_jwt`.
    pub jwt: Option<Bytes>,
    /// The unsigned claims (no `iss`, `iat`, `aud`), when `store_json`.
    pub json: Option<Map<String, Value>>,
    /// The response's `exp`.
    pub exp: i64,
}

/// A stored answer for a request.
#[derive(Debug)]
pub enum Hit {
    /// Serve these bytes as they are.
    Jwt(Bytes),
    /// Sign these claims (adding `iss` and `iat`) and serve them.
    Json(Map<String, Value>),
}

/// The files and their in-memory index.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    store_jwt: bool,
    store_json: bool,
    entries: RwLock<HashMap<String, Stored>>,
}

impl Store {
    /// Opens `dir` and reads back every stored response (unreadable files are skipped).
    pub async fn open(dir: &Path, store_jwt: bool, store_json: bool) -> Self {
        let store = Self {
            dir: dir.join("resolve"),
            store_jwt,
            store_json,
            entries: RwLock::new(HashMap::new()),
        };
        let loaded = store.load().await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, dir = %store.dir.display(), "cannot read stored resolve responses");
            HashMap::new()
        });
        tracing::info!(count = loaded.len(), "stored resolve responses loaded");
        if let Ok(mut m) = store.entries.write() {
            *m = loaded;
        }
        store
    }

    async fn load(&self) -> std::io::Result<HashMap<String, Stored>> {
        let mut out = HashMap::new();
        let mut anchors = match tokio::fs::read_dir(&self.dir).await {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(e),
        };
        while let Some(a) = anchors.next_entry().await? {
            let mut files = tokio::fs::read_dir(a.path()).await?;
            while let Some(f) = files.next_entry().await? {
                let path = f.path();
                if path.extension().is_some_and(|e| e == "job")
                    && let Some(s) = read_one(&path).await
                {
                    out.insert(s.job.hash(), s);
                }
            }
        }
        Ok(out)
    }

    /// The stored answer for `job`, if it is still valid at `now`. A JWT signed with another
    /// key than `kid` (ours changed) is not served; the JSON form is, being signed anew.
    pub fn lookup(&self, job: &Job, kid: &str, now: i64) -> Option<Hit> {
        let m = self.entries.read().ok()?;
        let s = m
            .get(&job.hash())
            .filter(|s| s.exp > now && s.job == *job)?;
        if let Some(jwt) = &s.jwt {
            let same_key = std::str::from_utf8(jwt)
                .ok()
                .and_then(|t| jose::decode_unverified(t).ok())
                .is_some_and(|d| d.header.get("kid").and_then(Value::as_str) == Some(kid));
            if same_key {
                return Some(Hit::Jwt(jwt.clone()));
            }
        }
        s.json.clone().map(Hit::Json)
    }

    /// Every stored entry (for rescheduling).
    pub fn all(&self) -> Vec<Stored> {
        self.entries
            .read()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Writes the files of one result and indexes it.
    pub async fn put(&self, job: &Job, jwt: &str, claims: &Map<String, Value>, exp: i64) {
        let dir = self
            .dir
            .join(utf8_percent_encode(&job.trust_anchor, NON_ALPHANUMERIC).to_string());
        let stem = job.hash();
        let mut json = claims.clone();
        for c in ["iss", "iat", "aud"] {
            json.remove(c);
        }
        json.insert("trust_anchor".into(), job.trust_anchor.clone().into());
        let stored = Stored {
            job: job.clone(),
            jwt: self.store_jwt.then(|| Bytes::from(jwt.to_owned())),
            json: self.store_json.then_some(json),
            exp,
        };
        let written = async {
            tokio::fs::create_dir_all(&dir).await?;
            if let Some(j) = &stored.jwt {
                write_atomic(&dir.join(format!("{stem}.jwt")), j).await?;
            }
            if let Some(j) = &stored.json {
                write_atomic(&dir.join(format!("{stem}.json")), &serde_json::to_vec(j)?).await?;
            }
            write_atomic(&dir.join(format!("{stem}.job")), &serde_json::to_vec(job)?).await
        };
        if let Err(e) = written.await {
            tracing::warn!(error = %e, dir = %dir.display(), "cannot store resolve response");
        }
        if let Ok(mut m) = self.entries.write() {
            m.insert(stem, stored);
        }
    }
}

async fn write_atomic(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    tokio::fs::write(&tmp, data).await?;
    tokio::fs::rename(&tmp, path).await
}

/// Reads `<stem>.job` and whichever of `<stem>.jwt` / `<stem>.json` exist.
async fn read_one(job_path: &Path) -> Option<Stored> {
    let job: Job = serde_json::from_slice(&tokio::fs::read(job_path).await.ok()?).ok()?;
    let jwt = tokio::fs::read(job_path.with_extension("jwt"))
        .await
        .ok()
        .map(Bytes::from);
    let json: Option<Map<String, Value>> = tokio::fs::read(job_path.with_extension("json"))
        .await
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let exp_of_jwt = jwt.as_ref().and_then(|j| {
        let d = jose::decode_unverified(std::str::from_utf8(j).ok()?).ok()?;
        d.claims.get("exp")?.as_i64()
    });
    let exp = exp_of_jwt.or_else(|| json.as_ref()?.get("exp")?.as_i64())?;
    Some(Stored {
        job,
        jwt,
        json,
        exp,
    })
}
