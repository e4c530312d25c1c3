//! The operator documentation is a test (issue 32): every shell block of `docs/roles/*.md`,
//! `docs/cli.md` and the README's "Using it" is run by bash against real instances, so a wrong
//! name, path or body in the documents fails here.
//!
//! The conventions the documents keep:
//! - A fenced block whose info string starts with `sh`, `bash` or `shell` is run; one that cannot
//!   run on purpose says `sh illustrative` (rare: none of the documents here has one). Other info
//!   strings (`json`, `yaml`) are not shell.
//! - Host names stand for the instances the test starts: `https://ta.example.org` the trust
//!   anchor, `ia.` the intermediate, `rp.` the leaf, `marks.` the trust mark issuer (a
//!   subordinate of the anchor) and `resolver.`, written plainly or percent-encoded
//!   (`https%3A%2F%2Fta.example.org`). `127.0.0.1:7672` and `127.0.0.1:7673` are the main and
//!   the Admin API port of the instance a block is run for; `/var/lib/pharos` is a scratch
//!   directory, except in `SVC_STORAGE_DATA_DIR=/var/lib/pharos`, which names the instance's
//!   own data directory (its SQLite database).
//! - Blocks run in the order of [`ROLES`] (and the other plans) with `set -euo pipefail`; on the
//!   `PATH` are the build's `pharos` and a `curl` that fails on an HTTP error status, so a
//!   request the service refuses fails its block. What a block defines (variables, functions)
//!   carries over to the next block run for the same instance: one operator's shell per host.
//!
//! Tools: bash, curl, jq and openssl; without them the test is skipped with a notice, and fails
//! under `PHAROS_REQUIRE_DOCS_TOOLS=1` (set by `.ci/run`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use reqwest::Method;
use serde_json::Value;

use crate::support::{Backend, Pharos, TestDb, enable};

/// The documents whose every shell block must be run, and the part of each that counts.
const COVERED: [(&str, Option<&str>); 10] = [
    ("docs/roles/README.md", None),
    ("docs/roles/anchor.md", None),
    ("docs/roles/intermediate.md", None),
    ("docs/roles/leaf.md", None),
    ("docs/roles/trust-mark-issuer.md", None),
    ("docs/roles/enrollment.md", None),
    ("docs/roles/resolver.md", None),
    ("docs/cli.md", None),
    ("README.md", Some("## Using it")),
    ("docs/deployment.md", Some("## Backups")),
];

/// One step of a plan: these blocks of `doc`, in this order, for host `on`.
struct Step {
    on: &'static str,
    doc: &'static str,
    blocks: &'static [usize],
}

const fn step(on: &'static str, doc: &'static str, blocks: &'static [usize]) -> Step {
    Step { on, doc, blocks }
}

const COMMON: &str = "docs/roles/README.md";
const ANCHOR: &str = "docs/roles/anchor.md";
const INTERMEDIATE: &str = "docs/roles/intermediate.md";
const LEAF: &str = "docs/roles/leaf.md";
const ISSUER: &str = "docs/roles/trust-mark-issuer.md";
const ENROLLMENT: &str = "docs/roles/enrollment.md";
const RESOLVER: &str = "docs/roles/resolver.md";

/// The role guides, as operators of five hosts would follow them: each host's first steps, then
/// the federation from the leaf up, the issuer joining and the resolver last.
const ROLES: &[Step] = &[
    step("ta", COMMON, &[0, 1, 2]),
    step("ia", COMMON, &[0, 1, 2]),
    step("rp", COMMON, &[0, 1, 2]),
    step("marks", COMMON, &[0, 1, 2]),
    step("resolver", COMMON, &[0, 1, 2]),
    // The leaf describes itself and names the intermediate.
    step("rp", LEAF, &[0, 1]),
    // The intermediate registers the leaf and names the anchor.
    step("ia", INTERMEDIATE, &[0, 1]),
    // The anchor registers the intermediate, sets policies, collects entities.
    step("ta", ANCHOR, &[0, 1, 2, 3, 4]),
    // The anchor opens enrollment; the intermediate enrolls (already registered: 201 again).
    step("ta", ENROLLMENT, &[0]),
    step("ia", INTERMEDIATE, &[2]),
    // The trust mark issuer, separate from the anchor: endpoints, its superior, recognition.
    step("marks", ISSUER, &[0, 1, 2]),
    step("ta", ISSUER, &[0, 3]),
    // Enrollment at the anchor: the issuer asks, the anchor's operator approves.
    step("ta", ENROLLMENT, &[1, 2]),
    // The issuer entitles the leaf, which holds the mark.
    step("marks", ISSUER, &[4, 5]),
    step("rp", LEAF, &[2]),
    // The resolver pins the anchor and resolves; the intermediate checks its chain.
    step("resolver", RESOLVER, &[0, 1, 2, 3, 4, 5]),
    step("ia", INTERMEDIATE, &[3]),
    step("ta", COMMON, &[3]),
];

/// `docs/cli.md`'s federation (hosts serving the Admin API on their main port) and its offline
/// delegation.
const CLI: &[Step] = &[step("ta", "docs/cli.md", &[0, 1, 2])];

/// `pharos setup` on a fresh instance.
const SETUP: &[Step] = &[step("ta", "docs/cli.md", &[3])];

/// The README's "Using it" on a fresh default instance.
const README: &[Step] = &[step("default", "README.md", &[0])];

/// `docs/deployment.md`'s `pharos backup` of a running instance (the restore and the server
/// databases' dump tools are `sh illustrative`: `tests/backup_restore.rs` runs those steps).
const BACKUPS: &[Step] = &[step("default", "docs/deployment.md", &[0])];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The shell blocks of a document (of the section starting at `section` when given, up to the
/// next heading of the same level), with their info strings.
fn shell_blocks(doc: &str, section: Option<&str>) -> Vec<String> {
    let text = std::fs::read_to_string(repo().join(doc)).unwrap();
    let text = match section {
        Some(heading) => {
            let start = text.find(heading).expect("section heading");
            let rest = &text[start + heading.len()..];
            let end = rest.find("\n## ").unwrap_or(rest.len());
            rest[..end].to_owned()
        }
        None => text,
    };
    let mut blocks = Vec::new();
    // The open block: its info string, its fence's indentation and its lines so far.
    let mut open: Option<(String, usize, Vec<String>)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let fence = trimmed.strip_prefix("```");
        if let Some((info, at, body)) = open.as_mut() {
            if fence == Some("") {
                let mut words = info.split_whitespace();
                let shell = matches!(words.next(), Some("sh" | "bash" | "shell"));
                if shell && words.next() != Some("illustrative") {
                    blocks.push(body.join("\n"));
                }
                open = None;
            } else {
                let cut = line.len().min(*at);
                let strip = line[..cut].trim().is_empty();
                body.push(if strip { &line[cut..] } else { line }.to_owned());
            }
        } else if let Some(info) = fence {
            open = Some((info.trim().to_owned(), indent, Vec::new()));
        }
    }
    assert!(open.is_none(), "{doc}: an unclosed code block");
    blocks
}

#[test]
fn the_plans_run_every_shell_block_of_the_covered_documents_once() {
    let mut run: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for s in ROLES
        .iter()
        .chain(CLI)
        .chain(SETUP)
        .chain(README)
        .chain(BACKUPS)
    {
        run.entry(s.doc).or_default().extend(s.blocks);
    }
    for (doc, section) in COVERED {
        let n = shell_blocks(doc, section).len();
        let mut ran = run.remove(doc).unwrap_or_default();
        // The first steps are each host's: counted once.
        ran.sort_unstable();
        ran.dedup();
        let all: Vec<usize> = (0..n).collect();
        assert_eq!(ran, all, "{doc}: shell blocks run by the plans vs. present");
    }
    assert!(run.is_empty(), "plans name documents not covered: {run:?}");
}

/// Whether bash, curl, jq and openssl are here; prints why not, or fails when required.
fn tools_available() -> bool {
    let missing: Vec<&str> = ["bash", "curl", "jq", "openssl"]
        .into_iter()
        .filter(|t| which(t).is_none())
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var("PHAROS_REQUIRE_DOCS_TOOLS").is_err(),
        "the documentation test is required (PHAROS_REQUIRE_DOCS_TOOLS=1) but lacks {missing:?}"
    );
    eprintln!("NOTICE: documentation commands not run; missing {missing:?}");
    false
}

fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// One instance of a world.
struct Host {
    pharos: Pharos,
    /// `127.0.0.1:port` of the main port.
    main: String,
    /// `127.0.0.1:port` of the Admin API.
    admin: String,
    _db: TestDb,
}

/// Instances named as in the documents, and the shell they are operated from.
struct World {
    hosts: BTreeMap<&'static str, Host>,
    dir: tempfile::TempDir,
}

impl World {
    /// Starts `names`, with the Admin API on a port of its own when `separate_admin`.
    async fn start(names: &[&'static str], separate_admin: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        for d in ["bin", "work", "state", "scratch"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_pharos"), bin.join("pharos")).unwrap();
        let curl = which("curl").unwrap();
        let wrapper = format!(
            "#!/bin/sh\nexec {} --fail-with-body --silent --show-error --max-time 60 \"$@\"\n",
            curl.display()
        );
        std::fs::write(bin.join("curl"), wrapper).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(bin.join("curl"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut hosts = BTreeMap::new();
        for name in names {
            let db = TestDb::new(Backend::Sqlite).await;
            let pharos = if separate_admin {
                let client = reqwest::Client::builder().no_proxy().build().unwrap();
                Pharos::start_separate_admin(&db, |_| {}, client).await
            } else {
                Pharos::start(&db).await
            };
            let main = format!("127.0.0.1:{}", pharos.settings.server.port);
            let admin = match pharos.settings.api.admin.port {
                0 => main.clone(),
                port => format!("127.0.0.1:{port}"),
            };
            hosts.insert(
                *name,
                Host {
                    pharos,
                    main,
                    admin,
                    _db: db,
                },
            );
        }
        Self { hosts, dir }
    }

    fn host(&self, name: &str) -> &Host {
        &self.hosts[name]
    }

    /// The block as run for `on`: host names, ports and paths replaced by this world's.
    fn substitute(&self, block: &str, on: &str) -> String {
        let here = self.host(on);
        let scratch = self.dir.path().join("scratch");
        let data = here._db.dir.path().join("data");
        let mut s = block
            .replace(
                "SVC_STORAGE_DATA_DIR=/var/lib/pharos ",
                &format!("SVC_STORAGE_DATA_DIR={} ", data.display()),
            )
            .replace("127.0.0.1:7672", &here.main)
            .replace("127.0.0.1:7673", &here.admin)
            .replace("/var/lib/pharos", &scratch.display().to_string());
        for (name, host) in &self.hosts {
            let url = format!("http://{}", host.main);
            let encoded = url.replace(':', "%3A").replace('/', "%2F");
            s = s
                .replace(&format!("https://{name}.example.org"), &url)
                .replace(&format!("https%3A%2F%2F{name}.example.org"), &encoded);
        }
        s
    }

    /// Runs the plan's steps; panics with the block, its output and the step on a failure.
    async fn run(&self, plan: &[Step]) {
        for s in plan {
            let section = COVERED.iter().find(|(d, _)| *d == s.doc).and_then(|c| c.1);
            let blocks = shell_blocks(s.doc, section);
            for &i in s.blocks {
                let script = self.substitute(&blocks[i], s.on);
                self.run_block(s.on, &format!("{} block {i}", s.doc), &script)
                    .await;
            }
        }
    }

    async fn run_block(&self, on: &str, what: &str, block: &str) {
        let state = self.dir.path().join("state").join(on);
        let script = format!(
            r#"set -euo pipefail
__pharos_base=" $(compgen -v | tr '\n' ' ') "
if [ -f "$PHAROS_DOCS_STATE" ]; then source "$PHAROS_DOCS_STATE"; fi
set -x
{block}
set +x
{{
  for __v in $(compgen -v); do
    case "$__pharos_base" in *" $__v "*) continue;; esac
    case "$__v" in __pharos_base|__v|PHAROS_DOCS_STATE) continue;; esac
    declare -p "$__v"
  done
  declare -f
}} > "$PHAROS_DOCS_STATE.new"
mv "$PHAROS_DOCS_STATE.new" "$PHAROS_DOCS_STATE"
"#
        );
        let mut c = tokio::process::Command::new("bash");
        for (k, _) in std::env::vars() {
            if k.starts_with("SVC_") || k.starts_with("PHAROS_") {
                c.env_remove(k);
            }
        }
        let path = std::env::var("PATH").unwrap_or_default();
        let bin = self.dir.path().join("bin");
        c.env("PATH", format!("{}:{path}", bin.display()))
            .env("PHAROS_DOCS_STATE", &state)
            .current_dir(self.dir.path().join("work"))
            .arg("-c")
            .arg(&script)
            .stdin(std::process::Stdio::null());
        let out = tokio::time::timeout(std::time::Duration::from_secs(120), c.output())
            .await
            .unwrap_or_else(|_| panic!("{what} on {on}: no end within 120 s:\n{block}"))
            .unwrap();
        assert!(
            out.status.success(),
            "{what} on {on} failed ({}):\n--- block\n{block}\n--- stdout\n{}\n--- stderr\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Decodes a JWT's claims without verifying (the blocks verified what they fetched).
fn claims(jwt: &str) -> Value {
    Value::Object(pharos_shared::jose::decode_unverified(jwt).unwrap().claims)
}

#[tokio::test]
async fn the_role_guides_build_a_federation_that_resolves() {
    if !tools_available() {
        return;
    }
    let w = World::start(&["ta", "ia", "rp", "marks", "resolver"], true).await;
    w.run(ROLES).await;

    // What the guides built is a federation: the resolver resolves the leaf through the
    // intermediate to the anchor, with the anchor's policy applied.
    let (ta, rp) = (w.host("ta"), w.host("rp"));
    let url = format!(
        "/resolve?sub={}&trust_anchor={}",
        crate::support::enc(rp.pharos.entity_id()),
        crate::support::enc(ta.pharos.entity_id())
    );
    let r = w.host("resolver").pharos.get(&url).await;
    assert_eq!(r.status(), 200);
    let resolved = claims(&r.text().await.unwrap());
    let contacts = &resolved["metadata"]["openid_relying_party"]["contacts"];
    assert!(
        contacts
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c == "federation@example.org")),
        "{resolved}"
    );
    // The leaf holds the separate issuer's mark (its refresher obtains it in the background).
    let mut held = Value::Null;
    for _ in 0..100 {
        held = rp.pharos.entity_configuration().await.claims["trust_marks"].clone();
        if held.is_array() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let mark = claims(held[0]["trust_mark"].as_str().unwrap_or_default());
    assert_eq!(
        mark["iss"].as_str(),
        Some(w.host("marks").pharos.entity_id()),
        "{held}"
    );
    // The issuer became the anchor's subordinate through enrollment and the approval.
    let marks_id = crate::support::enc(w.host("marks").pharos.entity_id());
    let mut anchor = clone_handle(&ta.pharos);
    anchor.login("admin", "a long passphrase");
    let (s, sub) = anchor
        .admin(Method::GET, &format!("/subordinates/{marks_id}"), None)
        .await;
    assert_eq!((s, sub["status"].as_str()), (200, Some("active")), "{sub}");
}

/// A second handle on a running instance (the same ports and client; no app of its own).
fn clone_handle(p: &Pharos) -> Pharos {
    Pharos {
        app: None,
        base: p.base.clone(),
        admin_base: p.admin_base.clone(),
        auth: None,
        settings: p.settings.clone(),
        client: p.client.clone(),
        clock: p.clock.clone(),
    }
}

#[tokio::test]
async fn the_cli_guide_builds_a_federation_with_pharos_admin() {
    if !tools_available() {
        return;
    }
    let w = World::start(&["ta", "ia", "rp", "resolver"], false).await;
    w.run(CLI).await;
    let mut resolver = clone_handle(&w.host("resolver").pharos);
    resolver.login("ops", "resolver ops passphrase");
    let (s, anchors) = resolver.admin(Method::GET, "/trust-anchors", None).await;
    assert_eq!(s, 200, "{anchors}");
    assert_eq!(
        anchors[0]["entity_id"].as_str(),
        Some(w.host("ta").pharos.entity_id()),
        "{anchors}"
    );
    assert!(
        w.dir.path().join("work/owner-key.pem").exists(),
        "the delegation example made its key"
    );
}

#[tokio::test]
async fn the_setup_example_sets_up_a_fresh_instance() {
    if !tools_available() {
        return;
    }
    let w = World::start(&["ta"], false).await;
    w.run(SETUP).await;
    let mut ta = clone_handle(&w.host("ta").pharos);
    ta.login("ops", "setup ops passphrase");
    let (s, endpoints) = ta.admin(Method::GET, "/federation-endpoints", None).await;
    assert_eq!(s, 200, "{endpoints}");
    let text = endpoints.to_string();
    assert!(
        text.contains("\"fetch\"") && text.contains("\"list\""),
        "{text}"
    );
}

#[tokio::test]
async fn the_readme_example_enables_fetch() {
    if !tools_available() {
        return;
    }
    let w = World::start(&["default"], false).await;
    w.run(README).await;
    let ec = w.host("default").pharos.entity_configuration().await.claims;
    assert!(
        ec["metadata"]["federation_entity"]["federation_fetch_endpoint"].is_string(),
        "{ec:?}"
    );
}

#[tokio::test]
async fn the_backup_example_copies_the_running_database() {
    if !tools_available() {
        return;
    }
    let w = World::start(&["default"], false).await;
    enable(
        &w.host("default").pharos,
        "fetch",
        "/fetch",
        serde_json::json!({}),
    )
    .await;
    w.run(BACKUPS).await;
    let dir = w.dir.path().join("scratch/backups");
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // The copy is a database holding what the instance stored.
    sqlx::any::install_default_drivers();
    let url = format!("sqlite://{}", files[0].display());
    let copy = pharos_controlplane::db::Db::connect(&url, 1).await.unwrap();
    let types: Vec<String> = sqlx::query_scalar("SELECT type FROM federation_endpoints")
        .fetch_all(copy.pool())
        .await
        .unwrap();
    assert_eq!(types, ["fetch"]);
    copy.pool().close().await;
}
