//! Reading a lighthouse 0.20/0.21 configuration file: the trust anchors it mentions (every old
//! location, in the upstream collection order) and the endpoints it configures.
//!
//! Pure: the caller parses the text ([`super::yaml::parse`]); every error names the key and
//! its line and column. Upstream's 0.22 migrator reads per-endpoint `auth_trust_anchors` as
//! strings only, although 0.21 accepted objects only; both forms are read here.

use pharos_shared::config::Duration;
use serde_json::{Map, Value};

use super::yaml::{Node, NodeValue};

/// Endpoint keys of the old `endpoints` section with their type, in the order the rows are
/// created (upstream's fixed order, so the ids match the reference example).
pub const ENDPOINTS: [(&str, &str); 11] = [
    ("fetch", "fetch"),
    ("list", "list"),
    ("resolve", "resolve"),
    ("trust_mark_status", "trust_mark_status"),
    ("trust_mark_list", "trust_mark_listing"),
    ("historical_keys", "historical_keys"),
    ("trust_mark", "trust_mark"),
    ("enroll_request", "enroll_request"),
    ("trust_mark_request", "trust_mark_request"),
    ("enroll", "enroll"),
    ("entity_collection", "entity_collection"),
];

/// The order in which per-endpoint `auth_trust_anchors` are collected (upstream's).
const AUTH_COLLECTION_ORDER: [&str; 11] = [
    "fetch",
    "list",
    "resolve",
    "trust_mark_status",
    "trust_mark_list",
    "trust_mark",
    "historical_keys",
    "enroll",
    "enroll_request",
    "trust_mark_request",
    "entity_collection",
];

/// One mention of a trust anchor somewhere in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Mention {
    /// Entity identifier (exact text; never empty).
    pub entity_id: String,
    /// Inline JWK Set, as written.
    pub jwks: Option<Value>,
    /// `jwks_file` (takes precedence over `jwks`).
    pub jwks_file: Option<String>,
    /// `enable_jwks_update` (migration-only field of the anchor objects).
    pub enable_jwks_update: bool,
    /// `key_poll_interval`, seconds.
    pub key_poll_interval: i64,
    /// The location kind, as the dry run prints it (`endpoints.auth.trust_anchors`).
    pub source: String,
    /// The exact place (`endpoints.auth.trust_anchors[1], line 9`), for conflicts.
    pub place: String,
}

/// One configured endpoint of the old file.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    /// Its key under `endpoints`.
    pub yaml_key: &'static str,
    /// Its type.
    pub kind: &'static str,
    /// Served path (`None` when empty).
    pub path: Option<String>,
    /// Published URL (`None` when empty).
    pub url: Option<String>,
    /// Its own `auth_enabled`.
    pub auth_enabled: bool,
    /// Its own `auth_trust_anchors`, as entity identifiers, deduplicated in order.
    pub auth_trust_anchors: Vec<String>,
    /// The type-specific configuration in the database's JSON form.
    pub config: Value,
}

/// What the old file holds for the two migrated sections.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Legacy {
    /// Every trust anchor mention, in collection order.
    pub mentions: Vec<Mention>,
    /// Configured endpoints (path or url set), in creation order.
    pub endpoints: Vec<Endpoint>,
    /// `endpoints.auth.all_require_auth`.
    pub all_require_auth: bool,
    /// `endpoints.auth.trust_anchors` as identifiers: the auth fallback of 0.21.
    pub auth_fallback: Vec<String>,
}

type Problems = Vec<String>;

fn at(path: &str, n: &Node) -> String {
    format!("{path} ({})", n.pos())
}

fn text(path: &str, n: Option<&Node>, p: &mut Problems) -> Option<String> {
    let n = n?;
    match &n.value {
        NodeValue::Scalar { .. } if n.is_null() => None,
        NodeValue::Scalar { text, .. } => Some(text.clone()).filter(|t| !t.is_empty()),
        _ => {
            p.push(format!("{}: expected text", at(path, n)));
            None
        }
    }
}

fn boolean(path: &str, n: Option<&Node>, p: &mut Problems) -> bool {
    let Some(n) = n else { return false };
    match n.to_json() {
        Value::Bool(b) => b,
        Value::Null => false,
        _ => {
            p.push(format!("{}: expected true or false", at(path, n)));
            false
        }
    }
}

/// A duration in seconds: a number or unit text (`90m`, `2w6d`).
fn seconds(path: &str, n: Option<&Node>, p: &mut Problems) -> u64 {
    let Some(n) = n else { return 0 };
    let parsed = match n.to_json() {
        Value::Null => return 0,
        Value::Number(x) => Duration::parse(&x.to_string()),
        Value::String(s) => Duration::parse(&s),
        other => Err(format!("expected a duration, got {other}")),
    };
    match parsed {
        Ok(d) => d.get().as_secs(),
        Err(e) => {
            p.push(format!("{}: {e}", at(path, n)));
            0
        }
    }
}

fn number(path: &str, n: Option<&Node>, p: &mut Problems) -> Option<Value> {
    let n = n?;
    match n.to_json() {
        Value::Null => None,
        v @ Value::Number(_) => Some(v),
        _ => {
            p.push(format!("{}: expected a number", at(path, n)));
            None
        }
    }
}

fn mapping<'n>(path: &str, n: Option<&'n Node>, p: &mut Problems) -> Option<&'n Node> {
    let n = n?;
    match &n.value {
        NodeValue::Map(_) => Some(n),
        _ if n.is_null() => None,
        _ => {
            p.push(format!("{}: expected a mapping", at(path, n)));
            None
        }
    }
}

fn items<'n>(path: &str, n: Option<&'n Node>, p: &mut Problems) -> &'n [Node] {
    match n {
        Some(Node {
            value: NodeValue::Seq(items),
            ..
        }) => items,
        Some(n) if !n.is_null() => {
            p.push(format!("{}: expected a list", at(path, n)));
            &[]
        }
        _ => &[],
    }
}

/// An anchor given as an object (`{entity_id, jwks, jwks_file, …}`) or as its identifier.
fn mention(source: &str, i: usize, n: &Node, p: &mut Problems) -> Option<Mention> {
    let place = format!("{source}[{i}], {}", n.pos());
    let path = format!("{source}[{i}]");
    let mut m = Mention {
        entity_id: String::new(),
        jwks: None,
        jwks_file: None,
        enable_jwks_update: false,
        key_poll_interval: 0,
        source: source.to_string(),
        place,
    };
    match &n.value {
        NodeValue::Scalar { .. } => m.entity_id = text(&path, Some(n), p)?,
        NodeValue::Map(_) => {
            m.entity_id = text(&format!("{path}.entity_id"), n.get("entity_id"), p)?;
            m.jwks = match n.get("jwks") {
                None => None,
                Some(j) if j.is_null() => None,
                Some(j) => match j.to_json() {
                    Value::String(s) => match serde_json::from_str(&s) {
                        Ok(v) => Some(v),
                        Err(e) => {
                            p.push(format!("{}: not a JWK Set: {e}", at(&path, j)));
                            None
                        }
                    },
                    v => Some(v),
                },
            };
            m.jwks_file = text(&format!("{path}.jwks_file"), n.get("jwks_file"), p);
            m.enable_jwks_update = boolean(
                &format!("{path}.enable_jwks_update"),
                n.get("enable_jwks_update"),
                p,
            );
            let poll = seconds(
                &format!("{path}.key_poll_interval"),
                n.get("key_poll_interval"),
                p,
            );
            m.key_poll_interval = i64::try_from(poll).unwrap_or(i64::MAX);
        }
        NodeValue::Seq(_) => {
            p.push(format!("{}: expected an anchor", at(&path, n)));
            return None;
        }
    }
    Some(m)
}

fn mentions(source: &str, list: Option<&Node>, p: &mut Problems) -> Vec<Mention> {
    items(source, list, p)
        .iter()
        .enumerate()
        .filter_map(|(i, n)| mention(source, i, n, p))
        .collect()
}

fn ids(ms: &[Mention]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in ms {
        if !out.contains(&m.entity_id) {
            out.push(m.entity_id.clone());
        }
    }
    out
}

/// Converts a checker config: every `trust_anchors` list at any depth becomes a list of entity
/// identifiers, and its anchors are recorded as mentions.
fn checker_config(n: &Node, path: &str, out: &mut Vec<Mention>, p: &mut Problems) -> Value {
    match &n.value {
        NodeValue::Map(entries) => {
            let mut m = Map::new();
            for (k, v) in entries {
                let child = format!("{path}.{}", k.name);
                if k.name == "trust_anchors" {
                    let found = mentions("endpoints.enroll.checker.trust_anchors", Some(v), p);
                    m.insert(
                        k.name.clone(),
                        Value::Array(ids(&found).into_iter().map(Value::String).collect()),
                    );
                    out.extend(found);
                } else {
                    m.insert(k.name.clone(), checker_config(v, &child, out, p));
                }
            }
            Value::Object(m)
        }
        NodeValue::Seq(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| checker_config(v, &format!("{path}[{i}]"), out, p))
                .collect(),
        ),
        NodeValue::Scalar { .. } => n.to_json(),
    }
}

fn resolve_config(ep: &Node, p: &mut Problems) -> Value {
    let path = |k: &str| format!("endpoints.resolve.{k}");
    let mut c = Map::new();
    let allowed = ids(&mentions(
        "endpoints.resolve.allowed_trust_anchors",
        ep.get("allowed_trust_anchors"),
        p,
    ));
    if !allowed.is_empty() {
        c.insert("allowed_trust_anchors".into(), allowed.into());
    }
    let k = "use_entity_collection_allowed_trust_anchors";
    if boolean(&path(k), ep.get(k), p) {
        c.insert(k.into(), true.into());
    }
    let grace = seconds(&path("grace_period"), ep.get("grace_period"), p);
    if grace > 0 {
        c.insert("grace_period_seconds".into(), grace.into());
    }
    let k = "time_elapsed_grace_factor";
    if let Some(f) = number(&path(k), ep.get(k), p).filter(|f| f.as_f64() != Some(0.0)) {
        c.insert(k.into(), f);
    }
    let mut pr = Map::new();
    let node = mapping(&path("proactive_resolver"), ep.get("proactive_resolver"), p);
    let pp = |k: &str| format!("endpoints.resolve.proactive_resolver.{k}");
    let get = |k: &str| node.and_then(|n| n.get(k));
    pr.insert(
        "enabled".into(),
        boolean(&pp("enabled"), get("enabled"), p).into(),
    );
    for k in ["concurrency_limit", "queue_size"] {
        if let Some(v) = number(&pp(k), get(k), p).filter(|v| v.as_f64() != Some(0.0)) {
            pr.insert(k.into(), v);
        }
    }
    let storage = mapping(&pp("response_storage"), get("response_storage"), p);
    let sp = |k: &str| format!("endpoints.resolve.proactive_resolver.response_storage.{k}");
    let sget = |k: &str| storage.and_then(|n| n.get(k));
    if let Some(dir) = text(&sp("dir"), sget("dir"), p) {
        pr.insert("response_storage_dir".into(), dir.into());
    }
    for k in ["store_json", "store_jwt"] {
        if boolean(&sp(k), sget(k), p) {
            pr.insert(format!("response_storage_{k}"), true.into());
        }
    }
    c.insert("proactive_resolver".into(), Value::Object(pr));
    Value::Object(c)
}

fn collection_config(ep: &Node, p: &mut Problems) -> Value {
    let path = |k: &str| format!("endpoints.entity_collection.{k}");
    let mut c = Map::new();
    let allowed = ids(&mentions(
        "endpoints.entity_collection.allowed_trust_anchors",
        ep.get("allowed_trust_anchors"),
        p,
    ));
    if !allowed.is_empty() {
        c.insert("allowed_trust_anchors".into(), allowed.into());
    }
    let interval = seconds(&path("interval"), ep.get("interval"), p);
    if interval > 0 {
        c.insert("interval_seconds".into(), interval.into());
    }
    for k in ["concurrency_limit", "pagination_limit"] {
        if let Some(v) = number(&path(k), ep.get(k), p).filter(|v| v.as_f64() != Some(0.0)) {
            c.insert(k.into(), v);
        }
    }
    Value::Object(c)
}

/// Reads the two migrated sections of a parsed legacy file; all problems come back together.
pub fn read(doc: &Node) -> Result<Legacy, Problems> {
    let mut p = Problems::new();
    let mut l = Legacy::default();
    let fd = mapping("federation_data", doc.get("federation_data"), &mut p);
    let eps = mapping("endpoints", doc.get("endpoints"), &mut p);
    let auth = eps.and_then(|e| mapping("endpoints.auth", e.get("auth"), &mut p));

    // 1 and 2: the anchor objects of federation_data and endpoints.auth.
    l.mentions.extend(mentions(
        "federation_data.trust_anchors",
        fd.and_then(|f| f.get("trust_anchors")),
        &mut p,
    ));
    let auth_tas = mentions(
        "endpoints.auth.trust_anchors",
        auth.and_then(|a| a.get("trust_anchors")),
        &mut p,
    );
    l.auth_fallback = ids(&auth_tas);
    l.mentions.extend(auth_tas);
    l.all_require_auth = boolean(
        "endpoints.auth.all_require_auth",
        auth.and_then(|a| a.get("all_require_auth")),
        &mut p,
    );

    let ep_node = |key: &str, p: &mut Problems| {
        eps.and_then(|e| mapping(&format!("endpoints.{key}"), e.get(key), p))
    };
    // 3: per-endpoint auth lists, in upstream's order.
    let mut own_auth: Vec<(&str, Vec<String>)> = Vec::new();
    for key in AUTH_COLLECTION_ORDER {
        let source = format!("endpoints.{key}.auth_trust_anchors");
        let found = mentions(
            &source,
            ep_node(key, &mut p).and_then(|n| n.get("auth_trust_anchors")),
            &mut p,
        );
        own_auth.push((key, ids(&found)));
        l.mentions.extend(found);
    }
    // 4 and 5: the allowed lists.
    for key in ["resolve", "entity_collection"] {
        let source = format!("endpoints.{key}.allowed_trust_anchors");
        let list = ep_node(key, &mut p).and_then(|n| n.get("allowed_trust_anchors"));
        l.mentions.extend(mentions(&source, list, &mut p));
    }
    // 6: the enroll checker (its trust_anchors at any depth), converted to identifiers.
    let mut enroll_checker = None;
    if let Some(checker) = ep_node("enroll", &mut p)
        .and_then(|n| mapping("endpoints.enroll.checker", n.get("checker"), &mut p))
    {
        let kind = text("endpoints.enroll.checker.type", checker.get("type"), &mut p);
        let mut found = Vec::new();
        let config = checker
            .get("config")
            .map(|c| checker_config(c, "endpoints.enroll.checker.config", &mut found, &mut p))
            .unwrap_or(Value::Null);
        l.mentions.extend(found);
        if let Some(kind) = kind {
            let mut c = Map::new();
            c.insert("checker_type".into(), kind.into());
            if !config.is_null() {
                c.insert("checker_config".into(), config);
            }
            enroll_checker = Some(Value::Object(c));
        } else {
            p.push(format!(
                "{}: a checker needs a type",
                at("endpoints.enroll.checker", checker)
            ));
        }
    }

    for (key, kind) in ENDPOINTS {
        let Some(n) = ep_node(key, &mut p) else {
            continue;
        };
        let path = text(&format!("endpoints.{key}.path"), n.get("path"), &mut p);
        let url = text(&format!("endpoints.{key}.url"), n.get("url"), &mut p);
        if path.is_none() && url.is_none() {
            continue;
        }
        let config = match key {
            "resolve" => resolve_config(n, &mut p),
            "entity_collection" => collection_config(n, &mut p),
            "enroll" => enroll_checker.clone().unwrap_or(Value::Object(Map::new())),
            _ => Value::Object(Map::new()),
        };
        l.endpoints.push(Endpoint {
            yaml_key: key,
            kind,
            path,
            url,
            auth_enabled: boolean(
                &format!("endpoints.{key}.auth_enabled"),
                n.get("auth_enabled"),
                &mut p,
            ),
            auth_trust_anchors: own_auth
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, ids)| ids.clone())
                .unwrap_or_default(),
            config,
        });
    }
    if p.is_empty() {
        Ok(l)
    } else {
        // A section that is not a mapping is looked at by several steps; say it once.
        let mut seen = std::collections::HashSet::new();
        p.retain(|m| seen.insert(m.clone()));
        Err(p)
    }
}
