//! Member edits inside a JSON document, addressed by a path of object keys.

use serde_json::{Map, Value};

use crate::admin::error::{ApiError, ApiResult};

/// Sets `root[path] = value`, creating intermediate objects; returns whether the member is new.
pub fn set_path(root: &mut Map<String, Value>, path: &[&str], value: Value) -> ApiResult<bool> {
    let Some((last, parents)) = path.split_last() else {
        return Err(ApiError::BadRequest("empty path".into()));
    };
    let mut cur = root;
    for p in parents {
        let next = cur
            .entry(p.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !next.is_object() {
            *next = Value::Object(Map::new());
        }
        cur = match next {
            Value::Object(m) => m,
            _ => return Err(ApiError::Internal("unreachable: not an object".into())),
        };
    }
    Ok(cur.insert(last.to_string(), value).is_none())
}

/// Removes `root[path]` and, with `prune`, any parents left empty; returns whether it existed.
pub fn remove_path(root: &mut Map<String, Value>, path: &[&str], prune: bool) -> bool {
    match path {
        [] => false,
        [last] => root.remove(*last).is_some(),
        [first, rest @ ..] => {
            let Some(Value::Object(child)) = root.get_mut(*first) else {
                return false;
            };
            let removed = remove_path(child, rest, prune);
            if prune && removed && child.is_empty() {
                root.remove(*first);
            }
            removed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn path_edits() {
        let mut m = Map::new();
        assert!(set_path(&mut m, &["rp", "contacts", "add"], json!(["a"])).unwrap());
        assert!(!set_path(&mut m, &["rp", "contacts", "add"], json!(["b"])).unwrap());
        assert_eq!(
            Value::Object(m.clone()),
            json!({"rp": {"contacts": {"add": ["b"]}}})
        );
        assert!(!remove_path(&mut m, &["rp", "scope"], true));
        let mut kept = m.clone();
        assert!(remove_path(&mut m, &["rp", "contacts", "add"], true));
        assert!(m.is_empty(), "empty parents are pruned");
        assert!(remove_path(&mut kept, &["rp", "contacts", "add"], false));
        assert_eq!(
            Value::Object(kept),
            json!({"rp": {"contacts": {}}}),
            "or kept"
        );
    }
}
