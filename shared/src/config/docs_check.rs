//! Checks of the operator documentation against the code it describes: every configuration key
//! the documents name exists, and every relative link points at a file of the repository.
//! (`docs/configuration.md` itself is generated, see `reference`.)

use std::path::{Path, PathBuf};

use super::env_names;

/// Keys the documents name on purpose although Pharos does not have them: removed or moved
/// lighthouse keys, described in `docs/migration.md` and `docs/troubleshooting.md`.
const LEGACY: [&str; 7] = [
    "server.prefork",
    "logging.internal.smart.*",
    "signing.key_rotation",
    "signing.automatic_key_rollover",
    "signing.{alg,rsa_key_len,key_rotation,automatic_key_rollover}",
    "storage.backend",
    "signing.{kms,pk_backend,auto_generate_keys,filesystem,pkcs11}",
];

const SECTIONS: [&str; 10] = [
    "server.",
    "storage.",
    "signing.",
    "api.",
    "stats.",
    "logging.",
    "cache.",
    "federation.",
    "cluster.",
    "tracing.",
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// README.md and every Markdown file under docs/, with their text.
fn documents() -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut files = vec![repo().join("README.md")];
    walk(&repo().join("docs"), &mut files);
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            (p, text)
        })
        .collect()
}

/// Backticked spans, e.g. `server.port`.
fn code_spans(text: &str) -> impl Iterator<Item = &str> {
    text.split('`').skip(1).step_by(2)
}

/// Whether `key` (possibly ending in `.*` or with `*` segments) names a key or a group of
/// keys of the configuration.
fn exists(key: &str, paths: &[String]) -> bool {
    let pattern: Vec<&str> = key.trim_end_matches(".*").split('.').collect();
    paths.iter().any(|p| {
        let parts: Vec<&str> = p.split('.').collect();
        parts.len() >= pattern.len()
            && pattern
                .iter()
                .zip(&parts)
                .all(|(want, have)| *want == "*" || want == have)
    })
}

#[test]
fn every_configuration_key_the_documents_name_exists() {
    let paths: Vec<String> = env_names()
        .unwrap_or_else(|e| panic!("{e}"))
        .into_values()
        .collect();
    let mut unknown = Vec::new();
    for (file, text) in documents() {
        if file.ends_with("docs/configuration.md") {
            continue;
        }
        for span in code_spans(&text) {
            let key = span.split([':', ' ']).next().unwrap_or_default();
            let looks_like_key = SECTIONS.iter().any(|s| key.starts_with(s))
                && key
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || "._*0123456789".contains(c));
            if looks_like_key && !LEGACY.contains(&key) && !exists(key, &paths) {
                unknown.push(format!("{}: {key}", file.display()));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "documents name configuration keys that do not exist:\n{}",
        unknown.join("\n")
    );
}

#[test]
fn relative_links_in_the_documents_resolve() {
    let mut broken = Vec::new();
    for (file, text) in documents() {
        let dir = file.parent().unwrap_or(Path::new("."));
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let target = rest.split(')').next().unwrap_or_default();
            let target = target.split('#').next().unwrap_or_default();
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let resolved = dir.join(target);
            let full = normalise(&resolved);
            if !resolved.exists() {
                broken.push(format!("{}: {target} ({full})", file.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "broken relative links:\n{}",
        broken.join("\n")
    );
}

/// `a/b/../c/` → `a/c` (the target may not exist, so no canonicalize).
fn normalise(path: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::CurDir => {}
            other => parts.push(other.as_os_str().to_string_lossy().into_owned()),
        }
    }
    parts.join("/").trim_end_matches('/').to_string()
}

#[test]
fn the_key_matcher_accepts_groups_and_refuses_typos() {
    let paths = vec![
        "api.admin.tls.cert".to_string(),
        "logging.access.dir".into(),
    ];
    assert!(exists("api.admin.tls.*", &paths));
    assert!(exists("api.admin.tls", &paths));
    assert!(exists("logging.*.dir", &paths));
    assert!(!exists("api.admin.tsl.cert", &paths));
}
