//! `--update-config`: deletes the migrated keys from the file's text, line by line, so that the
//! comments, blank lines and layout of everything else stay as they were; a mapping left empty
//! by the deletions goes too, and `endpoints.auth.jti_*` move to `storage.endpoint_auth`
//! (their 0.22 place, where `pharos serve` reads them). The result is parsed again and must
//! equal the old document minus what was removed; otherwise nothing is written.

use std::path::{Path, PathBuf};

use super::legacy::ENDPOINTS;
use super::plan::Sections;
use super::yaml::{self, Node, NodeValue};

/// Per-endpoint keys that belong to the endpoints section.
const ENDPOINT_FIELDS: [&str; 13] = [
    "path",
    "url",
    "auth_enabled",
    "auth_trust_anchors",
    "allowed_trust_anchors",
    "use_entity_collection_allowed_trust_anchors",
    "grace_period",
    "time_elapsed_grace_factor",
    "proactive_resolver",
    "interval",
    "concurrency_limit",
    "pagination_limit",
    "checker",
];

const JTI_KEYS: [&str; 2] = ["jti_backend", "jti_cleanup_interval"];

/// Dotted paths of the keys the selected sections remove (only those present in `doc`).
pub fn migrated_keys(doc: &Node, s: Sections) -> Vec<String> {
    let mut out = Vec::new();
    if s.trust_anchors {
        out.push("federation_data.trust_anchors".to_string());
        out.push("endpoints.auth.trust_anchors".to_string());
    }
    if s.endpoints {
        out.push("endpoints.auth.all_require_auth".into());
        out.push("endpoints.auth.trust_anchors".into());
        for key in JTI_KEYS {
            out.push(format!("endpoints.auth.{key}"));
        }
        for (ep, _) in ENDPOINTS {
            for f in ENDPOINT_FIELDS {
                out.push(format!("endpoints.{ep}.{f}"));
            }
        }
    }
    out.sort();
    out.dedup();
    out.retain(|p| doc.at(p).is_some());
    out
}

/// Adds the mappings that the removal of `paths` leaves empty (up to the top).
fn with_emptied_parents(doc: &Node, paths: &[String]) -> Vec<String> {
    let mut removed: Vec<String> = paths.to_vec();
    loop {
        let mut grew = false;
        let parents: Vec<String> = removed
            .iter()
            .filter_map(|p| p.rsplit_once('.').map(|(parent, _)| parent.to_string()))
            .collect();
        for parent in parents {
            if removed.contains(&parent) {
                continue;
            }
            let Some(n) = doc.at(&parent) else { continue };
            let all_gone = n
                .entries()
                .iter()
                .all(|(k, _)| removed.contains(&format!("{parent}.{}", k.name)));
            if matches!(n.value, NodeValue::Map(_)) && all_gone {
                removed.push(parent);
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    // A removed key's children go with it.
    let all = removed.clone();
    removed.retain(|p| {
        !all.iter()
            .any(|q| q != p && p.starts_with(&format!("{q}.")))
    });
    removed.sort();
    removed
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

fn is_content(line: &str) -> bool {
    let t = line.trim_start();
    !t.is_empty() && !t.starts_with('#')
}

/// The 0-based line range `[start, end)` of the key at 1-based `line`, column `col`: the key's
/// line and every following line indented deeper (comments too), or a `- ` item at the key's
/// own indentation; trailing blank and comment lines are left to what follows.
fn block(lines: &[&str], line: usize, col: usize) -> Result<(usize, usize), String> {
    let start = line.saturating_sub(1);
    let key_indent = col.saturating_sub(1);
    let Some(first) = lines.get(start) else {
        return Err(format!("line {line} is past the end of the file"));
    };
    if indent(first) != key_indent {
        return Err(format!(
            "the key at line {line}, column {col} is inside a flow mapping; edit it by hand"
        ));
    }
    let mut end = start + 1;
    let mut last = start + 1;
    while end < lines.len() {
        let l = lines[end];
        if is_content(l) {
            let i = indent(l);
            if i < key_indent || (i == key_indent && !l.trim_start().starts_with('-')) {
                break;
            }
            last = end + 1;
        } else if !l.trim().is_empty() && indent(l) > key_indent {
            last = end + 1;
        }
        end += 1;
    }
    Ok((start, last))
}

fn scalar_text(n: &Node) -> Option<String> {
    match &n.value {
        NodeValue::Scalar { text, plain: true } => Some(text.clone()),
        NodeValue::Scalar { text, plain: false } => serde_json::to_string(text).ok(),
        _ => None,
    }
}

/// The text with `paths` (and the mappings they empty) removed and the JTI keys moved.
pub fn rewrite(text: &str, doc: &Node, paths: &[String]) -> Result<String, String> {
    let remove = with_emptied_parents(doc, paths);
    let lines: Vec<&str> = text.lines().collect();
    let mut drop = vec![false; lines.len()];
    for p in &remove {
        let (parent, key) = p.rsplit_once('.').unwrap_or(("", p.as_str()));
        let holder = if parent.is_empty() {
            Some(doc)
        } else {
            doc.at(parent)
        };
        let Some((k, _)) = holder.and_then(|h| h.entry(key)) else {
            continue;
        };
        let (s, e) = block(&lines, k.line, k.col)?;
        drop[s..e].iter_mut().for_each(|d| *d = true);
    }
    // The JTI keys that leave endpoints.auth, to be added under storage.endpoint_auth.
    let mut moved = Vec::new();
    for key in JTI_KEYS {
        let old = format!("endpoints.auth.{key}");
        let gone = remove
            .iter()
            .any(|r| old == *r || old.starts_with(&format!("{r}.")));
        if gone
            && let Some(v) = doc.at(&old)
            && doc.at(&format!("storage.endpoint_auth.{key}")).is_none()
        {
            let value = scalar_text(v).ok_or_else(|| format!("{old} must be a scalar"))?;
            moved.push(format!("{key}: {value}"));
        }
    }
    let mut insert_at: Option<(usize, Vec<String>)> = None;
    let mut append: Vec<String> = Vec::new();
    if !moved.is_empty() {
        let comment = "# moved from endpoints.auth by pharos config2db".to_string();
        match (doc.entry("storage"), doc.at("storage.endpoint_auth")) {
            (Some(_), Some(ea)) => {
                let (k, _) = doc
                    .at("storage")
                    .and_then(|s| s.entry("endpoint_auth"))
                    .ok_or("storage.endpoint_auth")?;
                let (_, end) = block(&lines, k.line, k.col)?;
                let child = ea.entries().first().map_or(k.col + 1, |(c, _)| c.col - 1);
                let pad = " ".repeat(child);
                let mut add = vec![format!("{pad}{comment}")];
                add.extend(moved.iter().map(|m| format!("{pad}{m}")));
                insert_at = Some((end, add));
            }
            (Some((k, s)), None) if matches!(s.value, NodeValue::Map(_)) => {
                let (_, end) = block(&lines, k.line, k.col)?;
                let child = s.entries().first().map_or(k.col + 1, |(c, _)| c.col - 1);
                let pad = " ".repeat(child);
                let mut add = vec![format!("{pad}endpoint_auth:  {comment}")];
                add.extend(moved.iter().map(|m| format!("{pad}  {m}")));
                insert_at = Some((end, add));
            }
            (Some(_), None) if doc.get("storage").is_some_and(|s| !s.is_null()) => {
                return Err(
                    "storage is not a block mapping; move endpoints.auth.jti_* by hand".into(),
                );
            }
            _ => {
                append.push(format!("storage:  {comment}"));
                append.push("  endpoint_auth:".into());
                append.extend(moved.iter().map(|m| format!("    {m}")));
            }
        }
    }
    let mut out: Vec<String> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if let Some((at, add)) = &insert_at
            && *at == i
        {
            out.extend(add.iter().cloned());
        }
        if !drop[i] {
            out.push((*l).to_string());
        }
    }
    if let Some((at, add)) = &insert_at
        && *at >= lines.len()
    {
        out.extend(add.iter().cloned());
    }
    out.extend(append);
    let mut new = out.join("\n");
    if text.ends_with('\n') || !new.is_empty() {
        new.push('\n');
    }
    verify(doc, &new, &remove)?;
    Ok(new)
}

/// The rewritten text must parse to the old document without the removed keys (the JTI keys
/// under their new name): a layout the line editor misread never reaches the disk.
fn verify(doc: &Node, new: &str, removed: &[String]) -> Result<(), String> {
    let after = yaml::parse(new).map_err(|e| format!("the rewritten file would not parse: {e}"))?;
    let mut want = doc.to_json();
    let mut jti = serde_json::Map::new();
    for key in JTI_KEYS {
        if let Some(v) = want.pointer(&format!("/endpoints/auth/{key}")) {
            jti.insert(key.to_string(), v.clone());
        }
    }
    for p in removed {
        let (parent, key) = p.rsplit_once('.').unwrap_or(("", p.as_str()));
        let ptr = if parent.is_empty() {
            String::new()
        } else {
            format!("/{}", parent.replace('.', "/"))
        };
        if let Some(m) = want.pointer_mut(&ptr).and_then(|v| v.as_object_mut()) {
            m.remove(key);
        }
    }
    let jti_still_there = want.pointer("/endpoints/auth/jti_backend").is_some()
        || want
            .pointer("/endpoints/auth/jti_cleanup_interval")
            .is_some();
    if !jti_still_there && !jti.is_empty() {
        let root = want.as_object_mut().ok_or("the file is not a mapping")?;
        let storage = root
            .entry("storage")
            .or_insert_with(|| serde_json::json!({}));
        if storage.is_null() {
            *storage = serde_json::json!({});
        }
        let ea = storage
            .as_object_mut()
            .ok_or("storage is not a mapping")?
            .entry("endpoint_auth")
            .or_insert_with(|| serde_json::json!({}));
        if let Some(ea) = ea.as_object_mut() {
            for (k, v) in jti {
                ea.entry(k).or_insert(v);
            }
        }
    }
    if after.to_json() == want {
        Ok(())
    } else {
        Err("the line editor could not rewrite this layout safely; remove the migrated keys by hand".into())
    }
}

/// Rewrites `path` (whose text and parse are given) without the keys of `sections`, after
/// copying it to a backup; `None` when there is nothing to remove.
pub fn rewrite_file(
    path: &Path,
    text: &str,
    doc: &Node,
    sections: Sections,
) -> Result<Option<PathBuf>, String> {
    let keys = migrated_keys(doc, sections);
    if keys.is_empty() {
        return Ok(None);
    }
    let new = rewrite(text, doc, &keys)?;
    let mut backup = PathBuf::from(format!("{}.bak", path.display()));
    let mut n = 1;
    while backup.exists() {
        backup = PathBuf::from(format!("{}.bak.{n}", path.display()));
        n += 1;
    }
    std::fs::copy(path, &backup).map_err(|e| format!("backup {}: {e}", backup.display()))?;
    std::fs::write(path, new).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Some(backup))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const EXAMPLE: &str = include_str!("../../../../tests/vectors/config2db/config-0.21.yaml");

    fn run(text: &str, s: Sections) -> String {
        let doc = yaml::parse(text).unwrap();
        rewrite(text, &doc, &migrated_keys(&doc, s)).unwrap()
    }

    #[test]
    fn the_example_keeps_everything_but_the_migrated_keys() {
        let new = run(EXAMPLE, Sections::ALL);
        let doc = yaml::parse(&new).unwrap();
        assert!(doc.at("federation_data.trust_anchors").is_none());
        assert!(doc.at("federation_data.authority_hints").is_some());
        assert_eq!(
            doc.at("storage.endpoint_auth").unwrap().to_json(),
            serde_json::json!({"jti_backend": "db", "jti_cleanup_interval": "30m"})
        );
        let eps = doc.get("endpoints").unwrap().to_json();
        assert_eq!(
            eps,
            serde_json::json!({"fetch": {"statement_lifetime": "1w"},
                "trust_mark": {"trust_mark_specs": doc.at("endpoints.trust_mark.trust_mark_specs").unwrap().to_json()}})
        );
        // Comments of kept keys survive; the removed ones' go with them.
        assert!(
            new.contains("prefork: false                 # removed in 0.22 (silently ignored)")
        );
        assert!(new.contains("statement_lifetime: 1w       # -> section statement_lifetime"));
        assert!(!new.contains("jwks_file"));
        assert!(!new.contains("/entity-collection"));
    }

    #[test]
    fn only_trust_anchors_leaves_the_endpoints() {
        let new = run(
            EXAMPLE,
            Sections {
                trust_anchors: true,
                endpoints: false,
            },
        );
        let doc = yaml::parse(&new).unwrap();
        assert!(doc.at("federation_data.trust_anchors").is_none());
        assert!(doc.at("endpoints.auth.trust_anchors").is_none());
        assert!(doc.at("endpoints.auth.jti_backend").is_some());
        assert!(doc.at("endpoints.list.path").is_some());
    }

    #[test]
    fn jti_keys_join_an_existing_endpoint_auth() {
        let text = "storage:\n  endpoint_auth:\n    max_assertion_lifetime: 5m\n  driver: sqlite\nendpoints:\n  auth:\n    jti_backend: db\n  fetch:\n    path: /f\n";
        let new = run(text, Sections::ALL);
        let doc = yaml::parse(&new).unwrap();
        assert_eq!(
            doc.get("storage").unwrap().to_json(),
            serde_json::json!({"endpoint_auth": {"max_assertion_lifetime": "5m", "jti_backend": "db"}, "driver": "sqlite"})
        );
        assert!(doc.get("endpoints").is_none(), "{new}");
    }

    #[test]
    fn nothing_to_remove_is_no_change() {
        let doc = yaml::parse("server: {port: 1}\n").unwrap();
        assert!(migrated_keys(&doc, Sections::ALL).is_empty());
    }
}
