//! Files and variables written for lighthouse 0.20/0.21: the settings that moved into the
//! database are recognised by name, so that `pharos serve` refuses such a file with the list of
//! keys and the exact `pharos config2db` command, and the settings 0.21 itself ignored are
//! ignored again (with a warning) instead of being reported as unknown.

use serde_json::{Map, Value};

/// Keys the 0.20/0.21 runtime already ignored (read only by upstream's migrator, for database
/// settings that Pharos manages through the Admin API).
const DEAD: [&str; 2] = [
    "endpoints.fetch.statement_lifetime",
    "endpoints.trust_mark.trust_mark_specs",
];

/// Old environment names with their replacement; the value is not applied (the interface says
/// they must be renamed by hand), but the operator is told.
pub(crate) const RENAMED_ENV: [(&str, &str); 2] = [
    (
        "SVC_ENDPOINTS_AUTH_JTI_BACKEND",
        "SVC_STORAGE_ENDPOINT_AUTH_JTI_BACKEND",
    ),
    (
        "SVC_ENDPOINTS_AUTH_JTI_CLEANUP_INTERVAL",
        "SVC_STORAGE_ENDPOINT_AUTH_JTI_CLEANUP_INTERVAL",
    ),
];

/// The legacy keys found in a file.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Found {
    /// Keys with effect that `pharos config2db` moves (to the database, or the JTI keys to
    /// `storage.endpoint_auth`).
    pub migrate: Vec<String>,
    /// Keys without effect since 0.20.
    pub ignored: Vec<String>,
}

fn set(v: &Value) -> bool {
    !v.is_null()
}

/// Takes the legacy sections out of the top-level mapping `file` and classifies their keys
/// (each list sorted: the YAML reader does not keep the file's order).
pub(crate) fn take(file: &mut Map<String, Value>) -> Found {
    let mut f = classify(file);
    f.migrate.sort();
    f.ignored.sort();
    f
}

fn classify(file: &mut Map<String, Value>) -> Found {
    let mut f = Found::default();
    if let Some(fd) = file.remove("federation_data") {
        match fd {
            Value::Object(m) => {
                for (k, _) in m.iter().filter(|(_, v)| set(v)) {
                    let path = format!("federation_data.{k}");
                    if k == "trust_anchors" {
                        f.migrate.push(path);
                    } else {
                        f.ignored.push(path);
                    }
                }
            }
            Value::Null => {}
            _ => f.ignored.push("federation_data".into()),
        }
    }
    if let Some(Value::Object(signing)) = file.get_mut("signing") {
        for k in ["key_rotation", "automatic_key_rollover"] {
            if signing.remove(k).is_some_and(|v| set(&v)) {
                f.ignored.push(format!("signing.{k}"));
            }
        }
    }
    if let Some(eps) = file.remove("endpoints") {
        let Value::Object(eps) = eps else {
            if set(&eps) {
                f.migrate.push("endpoints".into());
            }
            return f;
        };
        for (ep, v) in eps.iter().filter(|(_, v)| set(v)) {
            let Value::Object(fields) = v else {
                f.migrate.push(format!("endpoints.{ep}"));
                continue;
            };
            for (k, _) in fields.iter().filter(|(_, v)| set(v)) {
                let path = format!("endpoints.{ep}.{k}");
                if DEAD.contains(&path.as_str()) {
                    f.ignored.push(path);
                } else {
                    f.migrate.push(path);
                }
            }
        }
    }
    f
}

/// The refusal for a file with keys to migrate: the keys and the exact command.
pub(crate) fn refusal(keys: &[String], file: &str, storage: &Value) -> String {
    let driver = storage
        .get("driver")
        .and_then(Value::as_str)
        .unwrap_or("sqlite");
    let db = match driver {
        "sqlite" => {
            let dir = storage
                .get("data_dir")
                .and_then(Value::as_str)
                .unwrap_or("./data");
            format!("--db-type sqlite --db-dir {}", quote(dir))
        }
        // The DSN (with its password) is not printed: config2db reads it from the same file.
        other => format!("--db-type {other}"),
    };
    format!(
        "this configuration file is written for lighthouse 0.21 or earlier: {} now live in the \
         database (endpoints, trust anchors) or under storage.endpoint_auth (the JTI settings). \
         Migrate them, and remove them from the file, with:\n    pharos config2db --config {} {db} --update-config",
        keys.join(", "),
        quote(file)
    )
}

/// Quotes a path for a POSIX shell when it needs it.
fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:=@,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The warning for keys without effect.
pub(crate) fn ignored_warning(keys: &[String]) -> String {
    format!(
        "ignored: {} had no effect since lighthouse 0.20; these settings are managed through the \
         Admin API",
        keys.join(", ")
    )
}
