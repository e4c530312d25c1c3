//! The layering machinery: the default settings as a JSON tree are the schema. File values and
//! `SVC_` variables are checked against it (unknown keys, env-name table) and coerced into the
//! default leaf's shape before serde sees them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Number, Value};

use super::legacy::RENAMED_ENV;
use super::storage::LEGACY_BACKEND;

/// Keys the interface says to drop silently (removed in lighthouse 0.22); subtrees included.
const IGNORED_KEYS: [&str; 2] = ["server.prefork", "logging.internal.smart"];

/// Dotted paths of every leaf; objects are branches, everything else (lists too) is a leaf.
pub(crate) fn leaf_paths(tree: &Value) -> Vec<String> {
    fn walk(node: &Value, prefix: &str, out: &mut Vec<String>) {
        match node {
            Value::Object(map) => {
                for (key, child) in map {
                    walk(child, &join(prefix, key), out);
                }
            }
            _ => out.push(prefix.to_string()),
        }
    }
    let mut out = Vec::new();
    walk(tree, "", &mut out);
    out
}

/// `SVC_` + UPPER(path with `.` → `_`) → path, or every ambiguous name.
///
/// The `_` in key names makes splitting env names impossible, so the names are derived from the
/// schema instead; two paths that map to the same name would make one unreachable.
pub(crate) fn env_table<'a>(
    paths: impl IntoIterator<Item = &'a str>,
) -> Result<BTreeMap<String, String>, Vec<String>> {
    let mut table = BTreeMap::new();
    let mut collisions = Vec::new();
    for path in paths {
        let name = format!("SVC_{}", path.replace('.', "_").to_ascii_uppercase());
        if let Some(previous) = table.insert(name.clone(), path.to_string()) {
            collisions.push(format!(
                "environment variable {name} would name both {previous} and {path}"
            ));
        }
    }
    if collisions.is_empty() {
        Ok(table)
    } else {
        Err(collisions)
    }
}

/// The value at a dotted path.
pub(crate) fn get<'v>(tree: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(tree, |node, key| node.get(key))
}

/// Replaces the value at an existing dotted path.
pub(crate) fn set(tree: &mut Value, path: &str, value: Value) {
    if let Some(slot) = path
        .split('.')
        .try_fold(tree, |node, key| node.get_mut(key))
    {
        *slot = value;
    }
}

/// Merges a parsed YAML mapping into `tree`, recording unknown keys and bad leaves in
/// `problems` and each set leaf in `changed`.
pub(crate) fn merge_file(
    tree: &mut Value,
    file: &Map<String, Value>,
    prefix: &str,
    problems: &mut Vec<String>,
    changed: &mut BTreeSet<String>,
) {
    // In key order, so that the problems of one file read the same on every run.
    let mut entries: Vec<(&String, &Value)> = file.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    for (key, value) in entries {
        let path = join(prefix, key);
        if IGNORED_KEYS.contains(&path.as_str()) {
            continue;
        }
        if path == "storage.backend" {
            problems.push(LEGACY_BACKEND.into());
            continue;
        }
        let Some(slot) = tree.as_object_mut().and_then(|m| m.get_mut(key)) else {
            let siblings = tree.as_object().into_iter().flat_map(|m| m.keys());
            let near = crate::suggest::closest(key, siblings.map(String::as_str));
            problems.push(unknown_key(&path, near.map(|k| join(prefix, k))));
            continue;
        };
        match (slot.is_object(), value) {
            (_, Value::Null) => {}
            (true, Value::Object(children)) => merge_file(slot, children, &path, problems, changed),
            (true, other) => problems.push(format!("{path}: expected a mapping, got {other}")),
            (false, leaf) => match coerce(slot, leaf.clone()) {
                Ok(v) => {
                    *slot = v;
                    changed.insert(path);
                }
                Err(e) => problems.push(format!("{path}: {e}")),
            },
        }
    }
}

fn unknown_key(path: &str, near: Option<String>) -> String {
    // The lighthouse 0.21 sections (`federation_data`, `endpoints`, …) never get here:
    // `legacy::take` recognises them first.
    match near {
        Some(near) => format!("unknown configuration key: {path} (did you mean {near}?)"),
        None => format!("unknown configuration key: {path}"),
    }
}

/// Applies `SVC_` variables; `defaults` supplies the leaf shapes, `table` the names.
pub(crate) fn apply_env(
    tree: &mut Value,
    defaults: &Value,
    table: &BTreeMap<String, String>,
    env: &[(String, String)],
    problems: &mut Vec<String>,
    changed: &mut BTreeSet<String>,
    warnings: &mut Vec<String>,
) {
    // path → (priority, name, value): the specific name beats the `SVC_LOG_LEVEL` alias.
    let mut chosen: BTreeMap<&str, (u8, &str, &str)> = BTreeMap::new();
    for (name, value) in env {
        let Some(rest) = name.strip_prefix("SVC_") else {
            continue;
        };
        if name == "SVC_CONFIG_FILE"
            || rest.starts_with("TEST_")
            || name == "SVC_SERVER_PREFORK"
            || rest.starts_with("LOGGING_INTERNAL_SMART_")
        {
            continue;
        }
        if let Some((_, new)) = RENAMED_ENV.iter().find(|(old, _)| old == name) {
            warnings.push(format!(
                "{name} is ignored: it was renamed to {new} in 0.22 (set that name instead)"
            ));
            continue;
        }
        if name == "SVC_STORAGE_BACKEND" {
            problems.push(LEGACY_BACKEND.into());
            continue;
        }
        let (path, priority) = if name == "SVC_LOG_LEVEL" {
            ("logging.internal.level", 0)
        } else if let Some(path) = table.get(name) {
            (path.as_str(), 1)
        } else {
            let near = crate::suggest::closest(name, table.keys().map(String::as_str));
            problems.push(match near {
                Some(near) => {
                    format!("unknown environment variable: {name} (did you mean {near}?)")
                }
                None => format!("unknown environment variable: {name}"),
            });
            continue;
        };
        if chosen.get(path).is_none_or(|(p, _, _)| *p <= priority) {
            chosen.insert(path, (priority, name, value));
        }
    }
    for (path, (_, name, value)) in chosen {
        let shape = get(defaults, path).unwrap_or(&Value::Null);
        match coerce(shape, Value::String(value.to_string())) {
            Ok(v) => {
                set(tree, path, v);
                changed.insert(path.to_string());
            }
            Err(e) => problems.push(format!("{name}: {e}")),
        }
    }
}

/// Brings a scalar into the default leaf's shape: text to bool/number, comma text to a list,
/// numbers to text. Whatever else does not fit is left for serde to reject with the key's path.
pub(crate) fn coerce(shape: &Value, value: Value) -> Result<Value, String> {
    Ok(match (shape, value) {
        (Value::Bool(_), Value::String(s)) => Value::Bool(parse_bool(&s)?),
        (Value::Number(n), Value::String(s)) => parse_number(&s, n.is_f64())?,
        (Value::Array(_), Value::String(s)) => Value::Array(
            s.split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(|item| Value::String(item.to_string()))
                .collect(),
        ),
        (Value::String(_), v @ (Value::Number(_) | Value::Bool(_))) => Value::String(v.to_string()),
        (Value::Null, Value::String(s)) if s.trim().is_empty() => Value::Null,
        (Value::Null, Value::String(s)) => parse_number(&s, false).unwrap_or(Value::String(s)),
        (_, v) => v,
    })
}

fn parse_bool(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "t" | "1" | "yes" | "on" => Ok(true),
        "false" | "f" | "0" | "no" | "off" => Ok(false),
        _ => Err(format!("expected a boolean, got {text:?}")),
    }
}

fn parse_number(text: &str, float: bool) -> Result<Value, String> {
    let t = text.trim();
    let parsed = if float {
        t.parse::<f64>().ok().and_then(Number::from_f64)
    } else if let Ok(u) = t.parse::<u64>() {
        Some(Number::from(u))
    } else {
        t.parse::<i64>().ok().map(Number::from)
    };
    parsed
        .map(Value::Number)
        .ok_or_else(|| format!("expected a number, got {text:?}"))
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn collisions_are_reported() {
        let err = env_table(["a.b_c", "a_b.c", "x.y"])
            .err()
            .unwrap_or_default();
        assert_eq!(err.len(), 1);
        assert!(
            err[0].contains("SVC_A_B_C") && err[0].contains("a.b_c") && err[0].contains("a_b.c")
        );
    }

    #[test]
    fn coercion_follows_the_default_shape() {
        assert_eq!(coerce(&json!(true), json!("off")), Ok(json!(false)));
        assert_eq!(coerce(&json!(7), json!("8080")), Ok(json!(8080)));
        assert_eq!(coerce(&json!(0.8), json!("0.5")), Ok(json!(0.5)));
        assert_eq!(
            coerce(&json!([]), json!("a, b,,c")),
            Ok(json!(["a", "b", "c"]))
        );
        assert_eq!(coerce(&json!(""), json!(1234)), Ok(json!("1234")));
        assert_eq!(coerce(&Value::Null, json!("3")), Ok(json!(3)));
        assert!(coerce(&json!(7), json!("eighty")).is_err());
        assert!(coerce(&json!(false), json!("maybe")).is_err());
    }

    #[test]
    fn leaf_paths_treat_lists_as_leaves() {
        let paths = leaf_paths(&json!({"a": {"b": 1, "c": [1, 2]}, "d": null}));
        assert_eq!(paths, ["a.b", "a.c", "d"]);
    }
}
