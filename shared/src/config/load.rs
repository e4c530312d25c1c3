//! Loading: defaults → YAML file → `SVC_` variables → validation, collecting every problem.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use super::{Settings, legacy, tree};
use crate::{Error, Result};

/// A validated configuration plus the non-fatal findings the caller should log.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The effective settings.
    pub settings: Settings,
    /// Accepted-but-ignored settings and similar notices.
    pub warnings: Vec<String>,
}

/// The table of accepted environment names (`SVC_API_ADMIN_USERS_ENABLED` →
/// `api.admin.users_enabled`), derived from the schema; also what `--help` style output can list.
/// Fails if two keys would share one name. `SVC_LOG_LEVEL` is an extra alias, not listed.
pub fn env_names() -> Result<BTreeMap<String, String>> {
    let defaults = default_tree()?;
    let paths = tree::leaf_paths(&defaults);
    tree::env_table(paths.iter().map(String::as_str)).map_err(Error::Config)
}

/// Loads the configuration from an optional YAML file and the given environment.
///
/// The environment is a parameter (the caller reads it once in `main`) so that tests need no
/// process-wide state. `SVC_CONFIG_FILE` is the caller's business and ignored here, as are the
/// test suite's `SVC_TEST_*` names. Every problem found, in the file, the environment or the
/// combination of values, comes back together in one [`Error::Config`].
pub fn load(file: Option<&Path>, env: &[(String, String)]) -> Result<Loaded> {
    load_with(file, env, false)
}

/// Loads a lighthouse 0.21-style file as [`load`] does, but without its legacy sections
/// (`pharos config2db` reads those itself and needs the rest, e.g. the database settings).
pub fn load_legacy(file: &Path, env: &[(String, String)]) -> Result<Settings> {
    load_with(Some(file), env, true).map(|l| l.settings)
}

fn load_with(file: Option<&Path>, env: &[(String, String)], legacy_ok: bool) -> Result<Loaded> {
    let defaults = default_tree()?;
    let table = env_names()?;
    let mut merged = defaults.clone();
    let mut problems = Vec::new();
    let mut changed = BTreeSet::new();
    let mut warnings = Vec::new();
    let mut legacy_keys = legacy::Found::default();

    if let Some(path) = file {
        match read_yaml(path) {
            Ok(Value::Object(mut map)) => {
                legacy_keys = legacy::take(&mut map);
                tree::merge_file(&mut merged, &map, "", &mut problems, &mut changed);
            }
            Ok(_) => problems.push(format!("{}: expected a mapping at the top", path.display())),
            Err(e) => problems.push(e),
        }
    }
    tree::apply_env(
        &mut merged,
        &defaults,
        &table,
        env,
        &mut problems,
        &mut changed,
        &mut warnings,
    );
    if !legacy_keys.ignored.is_empty() {
        warnings.push(legacy::ignored_warning(&legacy_keys.ignored));
    }
    if let Some(path) = file
        && !legacy_ok
        && !legacy_keys.migrate.is_empty()
    {
        let storage = tree::get(&merged, "storage")
            .cloned()
            .unwrap_or(Value::Null);
        let shown = path.display().to_string();
        problems.insert(0, legacy::refusal(&legacy_keys.migrate, &shown, &storage));
    }

    let settings = match serde_json::from_value::<Settings>(merged.clone()) {
        Ok(settings) => {
            settings.check(&mut problems, &mut warnings);
            if !changed.contains("entity_id") {
                warnings.extend(default_entity_id_elsewhere(&settings));
            }
            Some(settings)
        }
        Err(whole) => {
            diagnose(&defaults, &merged, &changed, &whole, &mut problems);
            None
        }
    };
    match settings {
        Some(settings) if problems.is_empty() => Ok(Loaded { settings, warnings }),
        _ => Err(Error::Config(problems)),
    }
}

/// The default entity identifier names the default port; with another port and no
/// `entity_id` of the operator's, the Entity Configuration and every endpoint URL would point
/// at a port nothing listens on (issue 32). Port 0 (a free port, for tests) is left alone.
fn default_entity_id_elsewhere(settings: &Settings) -> Option<String> {
    let port = settings.server.port;
    let default_port = super::ServerSettings::default().port;
    (port != default_port && port != 0).then(|| {
        format!(
            "server.port is {port} but entity_id is the default {}, so the Entity Configuration \
             and its endpoint URLs name port {default_port}: set entity_id (SVC_ENTITY_ID) to the \
             URL clients reach, e.g. http://127.0.0.1:{port}",
            settings.entity_id
        )
    })
}

fn default_tree() -> Result<Value> {
    serde_json::to_value(Settings::default())
        .map_err(|e| Error::Config(vec![format!("internal: cannot render defaults: {e}")]))
}

/// Parses the file with the `config` crate's YAML reader into a plain JSON tree.
fn read_yaml(path: &Path) -> std::result::Result<Value, String> {
    ::config::Config::builder()
        .add_source(::config::File::from(path).format(::config::FileFormat::Yaml))
        .build()
        .and_then(|c| c.try_deserialize::<Value>())
        .map_err(|e| match e {
            // Its own text ends in " in <file>": the file is named once, in front.
            ::config::ConfigError::FileParse { cause, .. } => {
                format!("{}: {cause}", path.display())
            }
            other => format!("{}: {other}", path.display()),
        })
}

/// serde stops at the first bad value and does not name its key; retrying one changed leaf at
/// a time on top of the defaults finds every bad leaf and names each.
fn diagnose(
    defaults: &Value,
    merged: &Value,
    changed: &BTreeSet<String>,
    whole: &serde_json::Error,
    problems: &mut Vec<String>,
) {
    let before = problems.len();
    for path in changed {
        let mut probe = defaults.clone();
        if let Some(value) = tree::get(merged, path) {
            tree::set(&mut probe, path, value.clone());
        }
        if let Err(e) = serde_json::from_value::<Settings>(probe) {
            problems.push(format!("{path}: {e}"));
        }
    }
    if problems.len() == before {
        problems.push(whole.to_string());
    }
}
