//! The configuration reference (`docs/configuration.md`), generated from the configuration
//! types themselves so that it cannot drift from them.
//!
//! The key tree, the environment names and the defaults come from the same machinery `load`
//! uses (the default settings as a JSON tree, `tree::env_table`); the types, allowed values and
//! descriptions come from the `///` comments and field types in this directory's sources,
//! embedded with `include_str!` (rustfmt keeps them one field per line, which is all the small
//! reader below relies on; the test fails if a leaf is missed).
//!
//! Regenerate after changing a key or its comment:
//! `PHAROS_UPDATE_DOCS=1 cargo test -p pharos-shared config_reference`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use super::Settings;
use crate::jose::Algorithm;

/// The sources whose structs and enums make up `Settings`.
const SOURCES: [&str; 10] = [
    include_str!("mod.rs"),
    include_str!("cluster.rs"),
    include_str!("server.rs"),
    include_str!("admin.rs"),
    include_str!("storage.rs"),
    include_str!("signing.rs"),
    include_str!("stats.rs"),
    include_str!("traces.rs"),
    include_str!("duration.rs"),
    include_str!("../interop.rs"),
];

/// One `pub name: Type` of a struct with its doc comment.
#[derive(Debug, Clone)]
struct Field {
    name: String,
    ty: String,
    doc: String,
}

/// One enum variant as written in configuration, with its doc comment.
#[derive(Debug, Clone)]
struct Variant {
    value: String,
    doc: String,
}

/// One documented key.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    path: String,
    ty: String,
    default: String,
    doc: String,
}

#[derive(Default)]
struct Types {
    structs: BTreeMap<String, Vec<Field>>,
    enums: BTreeMap<String, Vec<Variant>>,
}

/// Reads every `pub struct` / `pub enum` with named fields or unit variants.
fn parse(sources: &[&str]) -> Types {
    let mut types = Types::default();
    for source in sources {
        let mut doc = Vec::<String>::new();
        let mut rename = String::new();
        let mut current: Option<(bool, String)> = None; // (is_enum, name)
        for line in source.lines() {
            let t = line.trim();
            if let Some(text) = t.strip_prefix("///") {
                doc.push(text.trim().to_string());
            } else if let Some(rule) = t
                .strip_prefix("#[serde(rename_all = \"")
                .and_then(|r| r.split('"').next())
            {
                rename = rule.to_string();
            } else if t.starts_with("#[") || t.starts_with("//") {
                // Attributes and plain comments sit between a doc comment and its item.
            } else if let Some(name) = item_name(t, "pub struct ") {
                types.structs.insert(name.clone(), Vec::new());
                current = Some((false, name));
                doc.clear();
            } else if let Some(name) = item_name(t, "pub enum ") {
                types.enums.insert(name.clone(), Vec::new());
                current = Some((true, name));
                doc.clear();
            } else if t == "}" && line.starts_with('}') {
                current = None;
                rename.clear();
                doc.clear();
            } else if let Some((is_enum, name)) = &current {
                let text = doc.join(" ");
                doc.clear();
                if *is_enum {
                    if let Some(v) = t.strip_suffix(',').filter(|v| is_ident(v)) {
                        let value = renamed(v, &rename);
                        if let Some(list) = types.enums.get_mut(name) {
                            list.push(Variant { value, doc: text });
                        }
                    }
                } else if let Some((field, ty)) =
                    t.strip_prefix("pub ").and_then(|f| f.split_once(": "))
                {
                    let ty = ty.trim_end_matches(',').to_string();
                    if let Some(list) = types.structs.get_mut(name) {
                        list.push(Field {
                            name: field.to_string(),
                            ty,
                            doc: text,
                        });
                    }
                }
            } else {
                doc.clear();
            }
        }
    }
    types
}

fn item_name(line: &str, prefix: &str) -> Option<String> {
    let rest = line.strip_prefix(prefix)?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    rest[name.len()..]
        .trim_start()
        .starts_with('{')
        .then_some(name)
}

fn is_ident(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// A variant's name under serde's `rename_all` (the rules this crate uses).
fn renamed(variant: &str, rule: &str) -> String {
    match rule {
        "lowercase" => variant.to_lowercase(),
        "snake_case" => {
            let mut out = String::new();
            for (i, c) in variant.chars().enumerate() {
                if c.is_uppercase() && i > 0 {
                    out.push('_');
                }
                out.extend(c.to_lowercase());
            }
            out
        }
        _ => variant.to_string(),
    }
}

/// Every leaf under `Settings`, in declaration order.
fn rows(types: &Types, defaults: &Value) -> Vec<Row> {
    fn walk(types: &Types, defaults: &Value, name: &str, prefix: &str, out: &mut Vec<Row>) {
        for field in types.structs.get(name).into_iter().flatten() {
            let path = if prefix.is_empty() {
                field.name.clone()
            } else {
                format!("{prefix}.{}", field.name)
            };
            if types.structs.contains_key(&field.ty) {
                walk(types, defaults, &field.ty, &path, out);
                continue;
            }
            let mut doc = clean(&field.doc);
            if let Some(variants) = types.enums.get(&field.ty) {
                let values: Vec<String> = variants
                    .iter()
                    .map(|v| format!("`{}`: {}", v.value, clean(&v.doc)))
                    .collect();
                doc = format!("{doc}<br>{}", values.join("<br>"));
            }
            out.push(Row {
                ty: type_name(&field.ty, types),
                default: super::tree::get(defaults, &path).map_or_else(String::new, show),
                path,
                doc,
            });
        }
    }
    let mut out = Vec::new();
    walk(types, defaults, "Settings", "", &mut out);
    out
}

/// Doc comment text for a table cell: intra-doc links become code, pipes are escaped.
fn clean(doc: &str) -> String {
    doc.replace(
        "[`Algorithm::ALL`]",
        &format!("`{}`", Algorithm::names("`, `")),
    )
    .replace("[`", "`")
    .replace("`]", "`")
    .replace('|', "\\|")
}

fn type_name(ty: &str, types: &Types) -> String {
    match ty {
        "String" | "Algorithm" => "string".into(),
        "bool" => "boolean".into(),
        "u16" => "integer (0–65535)".into(),
        "u32" | "u64" => "integer ≥ 0".into(),
        "f64" => "number".into(),
        "Duration" => "duration".into(),
        "Vec<String>" => "list of strings".into(),
        "CommaList" => "comma-separated list".into(),
        "Secret" => "string (secret)".into(),
        "Option<u64>" => "integer ≥ 0, optional".into(),
        other => match types.enums.get(other) {
            Some(variants) => variants
                .iter()
                .map(|v| format!("`{}`", v.value))
                .collect::<Vec<_>>()
                .join(" \\| "),
            None => format!("?{other}"),
        },
    }
}

fn show(value: &Value) -> String {
    match value {
        Value::String(s) if s.is_empty() => "empty".into(),
        Value::String(s) => format!("`{s}`"),
        Value::Null => "unset".into(),
        Value::Array(items) if items.is_empty() => "empty".into(),
        other => format!("`{other}`"),
    }
}

const INTRO: &str = "# Configuration reference

<!-- Generated from shared/src/config by the test `config_reference_is_current`; do not edit.
     Regenerate: PHAROS_UPDATE_DOCS=1 cargo test -p pharos-shared config_reference -->

Pharos reads built-in defaults, then an optional YAML file (`--config FILE`, `-c FILE` or
`SVC_CONFIG_FILE`), then `SVC_` environment variables, and checks the result before it binds any
port. Neither a file nor a variable is required: the defaults run a single node on SQLite under
`./data`. Everything else (endpoints, trust anchors, subordinates, metadata, trust marks, key
rotation, admin users) lives in the database and is changed through the Admin API.

- **Environment names** are `SVC_` plus the key path in upper case with `.` replaced by `_`
  (`api.admin.users_enabled` → `SVC_API_ADMIN_USERS_ENABLED`). `SVC_LOG_LEVEL` is an alias of
  `SVC_LOGGING_INTERNAL_LEVEL` (the specific name wins). Lists take comma-separated text
  (`SVC_SERVER_TRUSTED_PROXIES=10.0.0.0/8,::1`), booleans `true/false/1/0/yes/no/on/off`.
- **Durations** take seconds (`3600`, `1.5`) or unit strings (`90s`, `1h30m`, `7d`, `2w`,
  `5 minutes`; units `ns us ms s m h d w y` or their names, d = 24 h, w = 7 d, y = 365 d).
- **Unknown keys and variables stop start-up** (exit status 64), naming each; every problem is
  reported at once. Removed lighthouse keys `server.prefork` and `logging.internal.smart.*` are
  ignored silently; `endpoints`, `federation_data`, `signing.key_rotation`,
  `signing.automatic_key_rollover` and `storage.backend` moved to the database (see
  [migration.md](migration.md)).
- `pharos check-config [--config FILE]` prints the effective configuration as JSON with secrets
  (`storage.password`, the DSN's password, `cache.password`, `signing.pkcs11.pin`) shown as `***`,
  or the problems found.
";

/// The whole document.
fn render() -> Result<String, String> {
    let defaults = serde_json::to_value(Settings::default()).map_err(|e| e.to_string())?;
    let types = parse(&SOURCES);
    let rows = rows(&types, &defaults);
    let mut out = String::from(INTRO);
    let mut section = String::new();
    for row in &rows {
        let top = row.path.split('.').next().unwrap_or_default();
        let group = if row.path.contains('.') { top } else { "" };
        if group != section || out.len() == INTRO.len() {
            section = group.to_string();
            let title = if group.is_empty() { "Top level" } else { group };
            let about = types
                .structs
                .get("Settings")
                .and_then(|f| f.iter().find(|f| f.name == group))
                .map_or_else(String::new, |f| format!("{}\n\n", clean(&f.doc)));
            let _ = write!(
                out,
                "\n## {title}\n\n{about}| Key / environment variable | Type | Default | Description |\n|---|---|---|---|\n"
            );
        }
        let env = format!("SVC_{}", row.path.replace('.', "_").to_ascii_uppercase());
        let _ = writeln!(
            out,
            "| `{}`<br>`{env}` | {} | {} | {} |",
            row.path, row.ty, row.default, row.doc
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/configuration.md");

    #[test]
    fn every_leaf_is_documented_once() {
        let defaults = serde_json::to_value(Settings::default()).unwrap_or_default();
        let documented: Vec<String> = rows(&parse(&SOURCES), &defaults)
            .into_iter()
            .map(|r| {
                assert!(!r.doc.trim().is_empty(), "{} has no doc comment", r.path);
                assert!(!r.ty.starts_with('?'), "{}: unknown type {}", r.path, r.ty);
                r.path
            })
            .collect();
        let mut leaves = super::super::tree::leaf_paths(&defaults);
        let mut sorted = documented.clone();
        leaves.sort();
        sorted.sort();
        assert_eq!(sorted, leaves, "the reader missed or invented keys");
    }

    #[test]
    fn enum_values_are_the_serialised_names() {
        let types = parse(&SOURCES);
        let values = |name: &str| -> Vec<String> {
            types.enums[name].iter().map(|v| v.value.clone()).collect()
        };
        assert_eq!(values("ActorSource"), ["basic_auth", "header"]);
        assert_eq!(values("StorageDriver"), ["sqlite", "mysql", "postgres"]);
        assert_eq!(values("AnchorEcConstraints"), ["apply", "ignore", "refuse"]);
    }

    /// Fails when `docs/configuration.md` differs from what the types say; regenerates it with
    /// `PHAROS_UPDATE_DOCS=1`.
    #[test]
    fn config_reference_is_current() {
        let fresh = render().unwrap_or_else(|e| panic!("{e}"));
        if std::env::var_os("PHAROS_UPDATE_DOCS").is_some() {
            std::fs::write(DOC, &fresh).unwrap_or_else(|e| panic!("write {DOC}: {e}"));
            return;
        }
        let committed = std::fs::read_to_string(DOC).unwrap_or_default();
        assert!(
            committed == fresh,
            "docs/configuration.md is out of date with shared/src/config; regenerate it with\n  \
             PHAROS_UPDATE_DOCS=1 cargo test -p pharos-shared config_reference\nand commit it"
        );
    }
}
