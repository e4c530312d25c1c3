//! Response files of the proactive resolver, so that a restarted resolver answers at once,
//! even with every upstream down.
//!
//! Layout (like lighthouse's, with SHA-256 over a JSON job instead of SHA3 over msgpack):
//! `<dir>/resolve/<percent-encoded anchor>/<hash>.jwt` (the signed response as served),
//! `<hash>.json` (the unsigned claims, signed per request) and `<hash>.job` (what was
//! resolved, to schedule the next refresh after a restart). Files are written to a temporary
//! name and renamed, so a crash never leaves half a response behind.
//!
//! The store is bounded ([`Limits`]: entries and bytes, in memory and so on disk): beyond
//! either bound the least recently requested entries are evicted with their files. An entry
//! nobody has requested for [`IDLE`] is no longer refreshed (see [`Store::sweep`]) and goes
//! once it expires, so jobs that clients made up once are not re-resolved for ever.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::sync::atomic::{AtomicI64, Ordering};

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

/// How long an entry is refreshed without being requested (looked up, or fed again by an
/// entity collection), in seconds.
pub const IDLE: i64 = 24 * 3600;

/// Bounds of the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most entries.
    pub max_entries: usize,
    /// Most bytes of responses, claims and jobs (their text, as on disk).
    pub max_bytes: usize,
}

impl Default for Limits {
    /// 100,000 entries (ten times the default queue) and 256 MiB.
    fn default() -> Self {
        Self {
            max_entries: 100_000,
            max_bytes: 256 * 1024 * 1024,
        }
    }
}

/// One entry with its weight and when it was last requested.
#[derive(Debug)]
struct Slot {
    stored: Stored,
    bytes: usize,
    last_used: AtomicI64,
}

/// The in-memory index: entries by job hash and their total weight.
#[derive(Debug, Default)]
struct Index {
    slots: HashMap<String, Slot>,
    bytes: usize,
}

impl Index {
    /// Inserts or replaces; a replaced entry keeps its `last_used` (a refresh is no request).
    fn insert(&mut self, stem: String, stored: Stored, now: i64) {
        let bytes = weight(&stored);
        let last_used = match self.slots.remove(&stem) {
            Some(old) => {
                self.bytes -= old.bytes;
                old.last_used.load(Ordering::Relaxed)
            }
            None => now,
        };
        self.bytes += bytes;
        let slot = Slot {
            stored,
            bytes,
            last_used: AtomicI64::new(last_used),
        };
        self.slots.insert(stem, slot);
    }

    fn remove(&mut self, stem: &str) -> Option<Job> {
        let slot = self.slots.remove(stem)?;
        self.bytes -= slot.bytes;
        Some(slot.stored.job)
    }

    /// When over `limits`, evicts the least recently requested entries (never `keep`) down to
    /// nine tenths of them, so that eviction's sort runs once per many inserts; returns the
    /// jobs evicted.
    fn evict(&mut self, limits: Limits, keep: Option<&str>) -> Vec<Job> {
        if self.slots.len() <= limits.max_entries && self.bytes <= limits.max_bytes {
            return Vec::new();
        }
        let (entries, bytes) = (limits.max_entries / 10 * 9, limits.max_bytes / 10 * 9);
        let mut order: Vec<(i64, String)> = self
            .slots
            .iter()
            .filter(|(k, _)| Some(k.as_str()) != keep)
            .map(|(k, v)| (v.last_used.load(Ordering::Relaxed), k.clone()))
            .collect();
        order.sort_unstable();
        let mut out = Vec::new();
        for (_, stem) in order {
            if self.slots.len() <= entries && self.bytes <= bytes {
                break;
            }
            out.extend(self.remove(&stem));
        }
        out
    }
}

/// Bytes of an entry: its job, response and claims as text, plus a fixed overhead.
fn weight(s: &Stored) -> usize {
    let job = s.job.sub.len()
        + s.job.trust_anchor.len()
        + s.job.entity_types.iter().map(String::len).sum::<usize>();
    let json = s
        .json
        .as_ref()
        .and_then(|j| serde_json::to_vec(j).ok())
        .map_or(0, |v| v.len());
    job + s.jwt.as_ref().map_or(0, Bytes::len) + json + 128
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
    limits: Limits,
    entries: RwLock<Index>,
}

impl Store {
    /// Opens `dir` and reads back every stored response (unreadable files are skipped), each
    /// counted as requested at `now`; beyond `limits`, entries are evicted (files removed).
    pub async fn open(
        dir: &Path,
        store_jwt: bool,
        store_json: bool,
        limits: Limits,
        now: i64,
    ) -> Self {
        let store = Self {
            dir: dir.join("resolve"),
            store_jwt,
            store_json,
            limits,
            entries: RwLock::new(Index::default()),
        };
        let loaded = store.load().await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, dir = %store.dir.display(), "cannot read stored resolve responses");
            HashMap::new()
        });
        tracing::info!(count = loaded.len(), "stored resolve responses loaded");
        let evicted = match store.entries.write() {
            Ok(mut m) => {
                for (stem, s) in loaded {
                    m.insert(stem, s, now);
                }
                m.evict(limits, None)
            }
            Err(_) => Vec::new(),
        };
        store.delete(&evicted).await;
        store
    }

    /// How many entries and bytes the store holds.
    pub fn size(&self) -> (usize, usize) {
        self.entries
            .read()
            .map(|m| (m.slots.len(), m.bytes))
            .unwrap_or_default()
    }

    /// Notes that `job` is wanted at `now` (so it keeps being refreshed).
    pub fn touch(&self, job: &Job, now: i64) {
        if let Ok(m) = self.entries.read()
            && let Some(slot) = m.slots.get(&job.hash())
        {
            slot.last_used.fetch_max(now, Ordering::Relaxed);
        }
    }

    /// The jobs to resubmit at `now`: entries within `grace` of their `exp` that were requested
    /// in the last [`IDLE`] seconds. Entries past their `exp` and idle are removed with their
    /// files; idle entries not yet expired are still served but no longer refreshed.
    pub async fn sweep(&self, now: i64, grace: i64) -> Vec<Job> {
        let (due, gone) = match self.entries.write() {
            Ok(mut m) => {
                let mut due = Vec::new();
                let mut stale = Vec::new();
                for (stem, slot) in &m.slots {
                    let idle = now - slot.last_used.load(Ordering::Relaxed) > IDLE;
                    if idle && now >= slot.stored.exp {
                        stale.push(stem.clone());
                    } else if !idle && now >= slot.stored.exp - grace {
                        due.push(slot.stored.job.clone());
                    }
                }
                let gone: Vec<Job> = stale.iter().filter_map(|s| m.remove(s)).collect();
                (due, gone)
            }
            Err(_) => (Vec::new(), Vec::new()),
        };
        self.delete(&gone).await;
        due
    }

    /// The files of `job`.
    fn files(&self, job: &Job) -> (PathBuf, [PathBuf; 3]) {
        let dir = self
            .dir
            .join(utf8_percent_encode(&job.trust_anchor, NON_ALPHANUMERIC).to_string());
        let stem = job.hash();
        let files = ["jwt", "json", "job"].map(|ext| dir.join(format!("{stem}.{ext}")));
        (dir, files)
    }

    /// Removes the files of `jobs` (missing files are fine).
    async fn delete(&self, jobs: &[Job]) {
        for job in jobs {
            for f in self.files(job).1 {
                if let Err(e) = tokio::fs::remove_file(&f).await
                    && e.kind() != std::io::ErrorKind::NotFound
                {
                    tracing::warn!(error = %e, file = %f.display(), "cannot remove evicted resolve response");
                }
            }
        }
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
        let slot = m.slots.get(&job.hash()).filter(|s| s.stored.job == *job)?;
        slot.last_used.fetch_max(now, Ordering::Relaxed);
        let s = Some(&slot.stored).filter(|s| s.exp > now)?;
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

    /// Writes the files of one result and indexes it (a new entry counts as requested at
    /// `now`); evicts the least recently requested entries when over the limits.
    pub async fn put(&self, job: &Job, jwt: &str, claims: &Map<String, Value>, exp: i64, now: i64) {
        let (dir, _) = self.files(job);
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
        let evicted = match self.entries.write() {
            Ok(mut m) => {
                m.insert(stem.clone(), stored, now);
                m.evict(self.limits, Some(&stem))
            }
            Err(_) => Vec::new(),
        };
        self.delete(&evicted).await;
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
