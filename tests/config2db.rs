//! `pharos config2db` as an operator runs it: the real binary on the reference example of a
//! lighthouse 0.21 file (tests/vectors/config2db), on every configured database, then
//! `pharos serve` on the rewritten file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use pharos_controlplane::db::{Db, endpoints, entities, trust_anchors};
use serde_json::{Value, json};

use crate::support::{Backend, TestDb, backends};

const EXAMPLE: &str = include_str!("vectors/config2db/config-0.21.yaml");
const EDUGAIN: &str = include_str!("vectors/config2db/edugain-jwks.json");

fn pharos() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pharos"));
    for (k, _) in std::env::vars() {
        if k.starts_with("SVC_") {
            c.env_remove(k);
        }
    }
    c
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The reference file with its machine paths pointed into the test's directory and the
/// database of `db` in its storage section.
fn example_file(db: &TestDb) -> PathBuf {
    let dir = db.dir.path();
    std::fs::create_dir_all(dir.join("keys")).unwrap();
    let jwks = dir.join("edugain-jwks.json");
    std::fs::write(&jwks, EDUGAIN).unwrap();
    let storage = match db.backend {
        Backend::Sqlite => format!(
            "storage:\n  driver: sqlite\n  data_dir: {}\n",
            dir.join("data").display()
        ),
        Backend::Postgres => format!("storage:\n  driver: postgres\n  dsn: {}\n", db.dsn),
        Backend::Mysql => format!("storage:\n  driver: mysql\n  dsn: {}\n", db.dsn),
    };
    let text = EXAMPLE
        .replace("storage:\n  driver: sqlite\n  data_dir: /data\n", &storage)
        .replace("port: 7672", &format!("port: {}", free_port()))
        .replace("/data/keys", &dir.join("keys").display().to_string())
        .replace(
            "/data/resolver",
            &dir.join("resolver").display().to_string(),
        )
        .replace(
            "/etc/lighthouse/edugain-jwks.json",
            &jwks.display().to_string(),
        );
    assert_ne!(text, EXAMPLE);
    let file = dir.join("config.yaml");
    std::fs::write(&file, text).unwrap();
    file
}

/// `--db-*` flags naming `db` explicitly (`--db-dir` as the data directory for SQLite).
fn db_flags(db: &TestDb) -> Vec<String> {
    match db.backend {
        Backend::Sqlite => vec![
            "--db-type".into(),
            "sqlite".into(),
            "--db-dir".into(),
            db.dir.path().join("data").display().to_string(),
        ],
        Backend::Postgres => vec![
            "--db-type".into(),
            "postgres".into(),
            "--db-dsn".into(),
            db.dsn.clone(),
        ],
        Backend::Mysql => vec![
            "--db-type".into(),
            "mysql".into(),
            "--db-dsn".into(),
            db.dsn.clone(),
        ],
    }
}

fn config2db(file: &Path, args: &[&str], flags: &[String]) -> Output {
    pharos()
        .arg("config2db")
        .arg("--config")
        .arg(file)
        .args(args)
        .args(flags)
        .output()
        .unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Every migrated row, ids included, with timestamps (so "unchanged" means unchanged).
async fn dump(db: &Db) -> Value {
    let tas = trust_anchors::list(db).await.unwrap();
    let eps = endpoints::list(db).await.unwrap();
    let links = sqlx::query(db.sql(
        "SELECT endpoint_id, trust_anchor_id FROM federation_endpoint_auth_trust_anchors \
         ORDER BY endpoint_id, trust_anchor_id",
    ))
    .fetch_all(db.pool())
    .await
    .unwrap();
    use sqlx::Row;
    json!({
        "trust_anchors": tas.iter().map(|t| json!({
            "id": t.id, "entity_id": t.entity_id, "jwks": t.jwks, "enable_jwks_update": t.enable_jwks_update,
            "key_poll_interval": t.key_poll_interval, "created_at": t.created_at, "updated_at": t.updated_at,
        })).collect::<Vec<_>>(),
        "endpoints": eps.iter().map(|e| json!({
            "id": e.id, "type": e.kind, "path": e.path, "url": e.url, "auth_enabled": e.auth_enabled,
            "config": e.config, "created_at": e.created_at, "updated_at": e.updated_at,
        })).collect::<Vec<_>>(),
        "links": links.iter().map(|r| (r.get::<i64, _>("endpoint_id"), r.get::<i64, _>("trust_anchor_id"))).collect::<Vec<_>>(),
    })
}

async fn schema_exists(db: &TestDb) -> bool {
    if db.backend == Backend::Sqlite && !db.dir.path().join("data/pharos.db").exists() {
        return false;
    }
    let pool = db.pool().await;
    sqlx::query(pool.sql("SELECT 1 FROM trust_anchors"))
        .fetch_all(pool.pool())
        .await
        .is_ok()
}

/// The rows of the reference example (legacy-config.md §2.3/§2.4), with Pharos's two decisions:
/// anchors without keys are polled (issue 18), and "no config" is stored as `{}` (as the Admin
/// API stores it).
fn assert_reference_rows(d: &Value) {
    let tas: Vec<Value> = d["trust_anchors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            json!([
                t["id"],
                t["entity_id"],
                t["jwks"]["keys"][0]["kid"],
                t["enable_jwks_update"],
                t["key_poll_interval"]
            ])
        })
        .collect();
    let mut tas = tas;
    tas.sort_by_key(|t| t[0].as_i64());
    assert_eq!(
        tas,
        [
            json!([1, "https://ta.example.org", "ta-key-1", true, 21600]),
            json!([2, "https://edugain.example.net", "edu-1", false, 0]),
            json!([3, "https://partner-ta.example.com", null, true, 0]),
            json!([4, "https://other-ta.example.com", null, true, 0]),
        ]
    );
    let ta = d["trust_anchors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == 1)
        .unwrap();
    assert_eq!(
        ta["jwks"],
        json!({"keys":[{"alg":"ES256","crv":"P-256","kid":"ta-key-1","kty":"EC","use":"sig",
            "x":"Ure0W1V91LgaygFtwvB7ds4ftt7jI_Er4D7P02Rpq_4","y":"ZrsSCq5AZv-goa8oYxyCeqTktvRnJwQxDg1AjxHhIm0"}]})
    );
    let mut eps: Vec<Value> = d["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            json!([
                e["id"],
                e["type"],
                e["path"],
                e["url"],
                e["auth_enabled"],
                e["config"]
            ])
        })
        .collect();
    eps.sort_by_key(|e| e[0].as_i64());
    let empty = json!({});
    assert_eq!(
        eps,
        [
            json!([1, "fetch", "/fetch", null, false, empty]),
            json!([2, "list", "/list", null, true, empty]),
            json!([3, "resolve", "/resolve", null, true,
                {"allowed_trust_anchors":["https://ta.example.org","https://edugain.example.net"],"grace_period_seconds":5400,
                 "time_elapsed_grace_factor":0.75,"proactive_resolver":{"enabled":true,"concurrency_limit":32,"queue_size":5000,
                 "response_storage_dir": ta_dir(d),"response_storage_store_jwt":true}}]),
            json!([
                4,
                "trust_mark_status",
                "/trustmark/status",
                null,
                false,
                empty
            ]),
            json!([
                5,
                "trust_mark_listing",
                "/trustmark/list",
                null,
                false,
                empty
            ]),
            json!([6, "historical_keys", "/historical-keys", null, false, empty]),
            json!([7, "trust_mark", "/trustmark", null, false, empty]),
            json!([
                8,
                "enroll_request",
                null,
                "https://onboarding.example.org/enroll-request",
                false,
                empty
            ]),
            json!([
                9,
                "trust_mark_request",
                "/trustmark/request",
                null,
                false,
                empty
            ]),
            json!([10, "enroll", "/enroll", null, true,
                {"checker_type":"multiple_or","checker_config":[
                  {"config":{"trust_anchors":["https://ta.example.org"],"trust_mark_type":"https://ta.example.org/tm/member"},"type":"trust_mark"},
                  {"config":{"trust_anchors":["https://other-ta.example.com"]},"type":"trust_path"}]}]),
            json!([11, "entity_collection", "/entity-collection", null, false,
                {"allowed_trust_anchors":["https://ta.example.org","https://edugain.example.net"],"interval_seconds":28800,
                 "concurrency_limit":4,"pagination_limit":512}]),
        ]
    );
    assert_eq!(d["links"], json!([[2, 1], [2, 3], [3, 1], [10, 3]]));
}

/// The resolver directory as the test rewrote it (the only machine path in a config).
fn ta_dir(d: &Value) -> Value {
    d["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "resolve")
        .map(|e| e["config"]["proactive_resolver"]["response_storage_dir"].clone())
        .unwrap()
}

/// Starts `pharos serve` on `file` and returns its Entity Configuration's claims.
async fn serve_and_fetch_ec(file: &Path) -> Value {
    let text = std::fs::read_to_string(file).unwrap();
    let port: u16 = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("port: "))
        .and_then(|p| p.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    let log = file.with_extension("log");
    let mut child = pharos()
        .args(["serve", "--config"])
        .arg(file)
        .env("SVC_SERVER_IP_LISTEN", "127.0.0.1")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/.well-known/openid-federation");
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let mut body = None;
    for _ in 0..300 {
        if let Ok(r) = client.get(&url).send().await {
            body = Some(r.text().await.unwrap());
            break;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "pharos serve exited with {status}: {}",
                std::fs::read_to_string(&log).unwrap()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    let body = body.unwrap_or_else(|| {
        panic!(
            "pharos did not come up: {}",
            std::fs::read_to_string(&log).unwrap()
        )
    });
    let decoded = pharos_shared::jose::decode_unverified(&body).unwrap();
    let jwks: pharos_shared::jose::Jwks =
        serde_json::from_value(decoded.claims["jwks"].clone()).unwrap();
    Value::Object(pharos_shared::jose::verify(&body, &jwks).unwrap().claims)
}

/// Acceptance 1-3: the worked example on every database — the preview changes nothing, the
/// migration writes exactly the reference rows, the second run is a no-op, and `pharos serve`
/// on the rewritten file publishes the same endpoint URLs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worked_example_migrates_and_serves_on_every_database() {
    for backend in backends() {
        let db = TestDb::new(backend).await;
        let file = example_file(&db);
        let flags = db_flags(&db);
        let original = std::fs::read(&file).unwrap();

        // A legacy file does not start; the refusal names the keys and the command.
        let out = pharos()
            .args(["serve", "--config"])
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(64), "{backend:?}");
        let (_, err) = text(&out);
        assert!(
            err.contains("endpoints.list.auth_enabled")
                && err.contains("federation_data.trust_anchors"),
            "{err}"
        );
        assert!(
            err.contains(&format!("pharos config2db --config {}", file.display())),
            "{err}"
        );

        // Preview: every row, nothing written, file byte-identical.
        let out = config2db(
            &file,
            &[
                "--only",
                "trust_anchors,endpoints",
                "--dry-run",
                "-v",
                "--update-config",
            ],
            &flags,
        );
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{backend:?}: {stderr}");
        assert!(
            stdout.contains(
                "[DRY-RUN] would add https://ta.example.org (from federation_data.trust_anchors)"
            ),
            "{stdout}"
        );
        assert!(stdout.contains("[DRY-RUN] would add https://other-ta.example.com (from endpoints.enroll.checker.trust_anchors)"), "{stdout}");
        assert!(
            stdout.contains("[DRY-RUN] would add trust_mark_listing at /trustmark/list"),
            "{stdout}"
        );
        assert!(
            stdout.contains(
                "jwks: none in the file: enable_jwks_update is set, so the first poll fetches them"
            ),
            "{stdout}"
        );
        assert!(
            stdout.contains(
                "auth_trust_anchors: [https://ta.example.org, https://partner-ta.example.com]"
            ),
            "{stdout}"
        );
        assert_eq!(
            stdout.matches("[DRY-RUN] would add").count(),
            15,
            "{stdout}"
        );
        assert!(stdout.contains("15 would be changed (dry-run)"), "{stdout}");
        assert_eq!(
            std::fs::read(&file).unwrap(),
            original,
            "{backend:?}: the dry run changed the file"
        );
        assert!(
            !schema_exists(&db).await,
            "{backend:?}: the dry run touched the database"
        );

        // The migration.
        let out = config2db(
            &file,
            &["--only", "trust_anchors,endpoints", "--update-config"],
            &flags,
        );
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{backend:?}: {stderr}");
        assert!(
            stdout.contains("Total: 15 created, 0 updated, 0 skipped, 0 differ, 0 errors"),
            "{stdout}"
        );
        let pool = db.pool().await;
        let after = dump(&pool).await;
        assert_reference_rows(&after);
        let backup = PathBuf::from(format!("{}.bak", file.display()));
        assert_eq!(std::fs::read(&backup).unwrap(), original, "backup copy");
        let rewritten = std::fs::read(&file).unwrap();
        let rewritten_text = String::from_utf8(rewritten.clone()).unwrap();
        assert!(
            !rewritten_text.contains("auth_trust_anchors") && !rewritten_text.contains("jwks_file")
        );
        assert!(
            rewritten_text
                .contains("prefork: false                 # removed in 0.22 (silently ignored)")
        );
        assert!(
            rewritten_text.contains("  endpoint_auth:"),
            "{rewritten_text}"
        );

        // The second run is a no-op: on the original file (the backup) every row is skipped
        // and nothing changes (timestamps included); on the rewritten file there is nothing
        // left to migrate, and it is not rewritten again.
        let out = config2db(&backup, &["--only", "trust_anchors,endpoints"], &flags);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{stderr}");
        assert!(
            stdout.contains("Total: 0 created, 0 updated, 15 skipped, 0 differ, 0 errors"),
            "{stdout}"
        );
        assert_eq!(
            dump(&pool).await,
            after,
            "{backend:?}: the second run changed rows"
        );
        let out = config2db(
            &file,
            &["--only", "trust_anchors,endpoints", "--update-config"],
            &flags,
        );
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{stderr}");
        assert!(stdout.contains("Total: 0 created"), "{stdout}");
        assert_eq!(dump(&pool).await, after);
        assert_eq!(std::fs::read(&file).unwrap(), rewritten);
        assert!(!PathBuf::from(format!("{}.bak.1", file.display())).exists());

        // `pharos serve` on the rewritten file publishes the example's endpoints.
        let ec = serve_and_fetch_ec(&file).await;
        let fe = &ec["metadata"]["federation_entity"];
        let base = "https://ia.example.org";
        for (key, path) in [
            ("federation_fetch_endpoint", "/fetch"),
            ("federation_list_endpoint", "/list"),
            ("federation_resolve_endpoint", "/resolve"),
            ("federation_trust_mark_status_endpoint", "/trustmark/status"),
            ("federation_trust_mark_list_endpoint", "/trustmark/list"),
            ("federation_historical_keys_endpoint", "/historical-keys"),
            ("federation_trust_mark_endpoint", "/trustmark"),
            (
                "federation_trust_mark_request_endpoint",
                "/trustmark/request",
            ),
            ("federation_enroll_endpoint", "/enroll"),
            ("federation_collection_endpoint", "/entity-collection"),
        ] {
            assert_eq!(
                fe[key],
                format!("{base}{path}"),
                "{backend:?}: {key} in {fe}"
            );
        }
        // A url-only (external) endpoint is not published after migration (0.22 behaviour).
        assert!(
            fe.get("federation_enroll_request_endpoint").is_none(),
            "{fe}"
        );
        assert_eq!(
            fe["federation_list_endpoint_auth_methods"],
            json!(["private_key_jwt"])
        );
        assert!(fe.get("federation_fetch_endpoint_auth_methods").is_none());
    }
}

/// Acceptance 4: a failure after the first rows leaves the database as it was (one transaction).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_halfway_leaves_the_database_unchanged() {
    for backend in backends() {
        let db = TestDb::new(backend).await;
        let file = example_file(&db);
        let flags = db_flags(&db);
        // Schema first (an empty legacy file migrates nothing but runs the migrations).
        let empty = db.dir.path().join("empty.yaml");
        std::fs::write(&empty, "entity_id: https://ia.example.org\n").unwrap();
        assert!(config2db(&empty, &[], &flags).status.success());
        let pool = db.pool().await;
        // The second endpoint's insert fails, after the four anchors and the first endpoint.
        let trigger = match backend {
            Backend::Sqlite => vec![
                "CREATE TRIGGER fail_list BEFORE INSERT ON federation_endpoints WHEN NEW.type = 'list' \
                 BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
            ],
            Backend::Postgres => vec![
                "CREATE FUNCTION fail_list() RETURNS trigger AS $$ BEGIN \
                 IF NEW.type = 'list' THEN RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql",
                "CREATE TRIGGER fail_list BEFORE INSERT ON federation_endpoints FOR EACH ROW EXECUTE FUNCTION fail_list()",
            ],
            Backend::Mysql => vec![
                "CREATE TRIGGER fail_list BEFORE INSERT ON federation_endpoints FOR EACH ROW BEGIN \
                 IF NEW.type = 'list' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'injected failure'; END IF; END",
            ],
        };
        for sql in trigger {
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                .execute(pool.pool())
                .await
                .unwrap();
        }
        let before = dump(&pool).await;
        let original = std::fs::read(&file).unwrap();
        let out = config2db(&file, &["--update-config"], &flags);
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(1), "{backend:?}: {stderr}");
        assert!(
            stderr.contains("injected failure") && stderr.contains("nothing was changed"),
            "{stderr}"
        );
        assert_eq!(dump(&pool).await, before, "{backend:?}");
        assert_eq!(before["trust_anchors"], json!([]));
        assert_eq!(
            std::fs::read(&file).unwrap(),
            original,
            "the file is not rewritten after a failure"
        );
    }
}

/// `--only` subsets, `--db-dir` as a file, and defaulting to the file's own storage settings.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_subsets_and_db_dir_forms() {
    let db = TestDb::new(Backend::Sqlite).await;
    let file = example_file(&db);
    let dbfile = db.dir.path().join("elsewhere/custom.db");
    let flags = vec![
        "--db-type".to_string(),
        "sqlite".into(),
        "--db-dir".into(),
        dbfile.display().to_string(),
    ];
    // Endpoints alone need their auth anchors in the database: refused, nothing written.
    let out = config2db(&file, &["--only", "endpoints"], &flags);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr.contains("endpoints.list: trust anchor(s) not found: [https://ta.example.org, https://partner-ta.example.com]"), "{stderr}");
    // --db-dir naming a file: that file is the database.
    let out = config2db(&file, &["--only", "trust_anchors"], &flags);
    assert!(out.status.success(), "{}", text(&out).1);
    let pool = Db::connect(&format!("sqlite://{}", dbfile.display()), 1)
        .await
        .unwrap();
    assert_eq!(trust_anchors::list(&pool).await.unwrap().len(), 4);
    assert!(endpoints::list(&pool).await.unwrap().is_empty());
    let out = config2db(&file, &["--only", "endpoints"], &flags);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("11 created"), "{stdout}");
    assert_eq!(endpoints::list(&pool).await.unwrap().len(), 11);
    assert!(!db.dir.path().join("data/pharos.db").exists());

    // No flags: the file's storage section (the database `pharos serve` opens).
    let out = config2db(&file, &[], &[]);
    assert!(out.status.success(), "{}", text(&out).1);
    let default = db.pool().await;
    assert_eq!(trust_anchors::list(&default).await.unwrap().len(), 4);
    assert_eq!(endpoints::list(&default).await.unwrap().len(), 11);

    // Bad --only is a usage error.
    let out = config2db(&file, &["--only", "alg"], &flags);
    assert_eq!(out.status.code(), Some(64));
}

/// Acceptance 3: different values in the database are reported and kept unless `--force`; a
/// conflicting anchor names both places; a malformed file names line and column.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conflicts_force_and_malformed_files() {
    let db = TestDb::new(Backend::Sqlite).await;
    let file = example_file(&db);
    let flags = db_flags(&db);
    assert!(config2db(&file, &[], &flags).status.success());
    let pool = db.pool().await;
    sqlx::query(pool.sql("UPDATE federation_endpoints SET path = '/moved' WHERE type = 'fetch'"))
        .execute(pool.pool())
        .await
        .unwrap();
    let out = config2db(&file, &["--update-config"], &flags);
    let (stdout, _) = text(&out);
    assert!(out.status.success());
    assert!(
        stdout.contains(
            "[DIFFERS] fetch exists with another path (left alone; use --force to overwrite)"
        ),
        "{stdout}"
    );
    assert_eq!(
        endpoints::get(&pool, "fetch")
            .await
            .unwrap()
            .unwrap()
            .path
            .as_deref(),
        Some("/moved")
    );
    // The endpoint keys stay in the file while a row differs.
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("path: /fetch")
    );
    let out = config2db(&file, &["--force"], &flags);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("[UPDATED] fetch (path)"), "{stdout}");
    assert_eq!(
        endpoints::get(&pool, "fetch")
            .await
            .unwrap()
            .unwrap()
            .path
            .as_deref(),
        Some("/fetch")
    );

    let conflict = db.dir.path().join("conflict.yaml");
    std::fs::write(
        &conflict,
        "federation_data:\n  trust_anchors:\n    - entity_id: https://x.example\n      jwks: {keys: [{kty: EC, kid: a, crv: P-256, x: Azb_yUfxrNMRsM5IQOUDfhtLkFuT-7NTA_aR9iQVkAw, y: C_F5w0v0DEoSjH4EfXxwbflNaEFEPgVumbWGQk01AYo}]}\n\
         endpoints:\n  auth:\n    trust_anchors:\n      - entity_id: https://x.example\n        jwks: {keys: [{kty: EC, kid: b, crv: P-256, x: Azb_yUfxrNMRsM5IQOUDfhtLkFuT-7NTA_aR9iQVkAw, y: C_F5w0v0DEoSjH4EfXxwbflNaEFEPgVumbWGQk01AYo}]}\n",
    )
    .unwrap();
    let out = config2db(&conflict, &[], &flags);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr.contains("conflicting JWKS for trust anchor https://x.example: federation_data.trust_anchors[0], line 3, column 7 and endpoints.auth.trust_anchors[0], line 8, column 9"), "{stderr}");
    assert!(
        trust_anchors::get(&pool, "https://x.example")
            .await
            .unwrap()
            .is_none()
    );

    let bad = db.dir.path().join("bad.yaml");
    std::fs::write(&bad, "endpoints:\n  fetch:\n    path: /fetch\n   list: [\n").unwrap();
    let out = config2db(&bad, &[], &flags);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr.contains("bad.yaml: line 4, column"), "{stderr}");
}

/// The refusal's command is exact: running it as printed migrates, and the service starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_printed_command_migrates_and_the_service_starts() {
    let db = TestDb::new(Backend::Sqlite).await;
    let file = example_file(&db);
    let out = pharos()
        .args(["serve", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    let (_, err) = text(&out);
    let command = err
        .lines()
        .find_map(|l| l.trim().strip_prefix("pharos config2db "))
        .unwrap_or_else(|| panic!("{err}"));
    let args: Vec<&str> = command.split_whitespace().collect();
    let out = pharos().arg("config2db").args(&args).output().unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    let out = pharos()
        .args(["check-config", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("ignored: endpoints.fetch.statement_lifetime"),
        "{stderr}"
    );
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["storage"]["endpoint_auth"]["jti_backend"], "db");
    assert_eq!(v["storage"]["endpoint_auth"]["jti_cleanup_interval"], "30m");
}

/// Issue 38: a lighthouse file migrated into a hosted entity. An entity the database does not
/// host is refused, naming how to create it; the file's anchors and endpoints become the
/// entity's rows (by identifier, then by number: the second run changes nothing), and the
/// default entity's stay as they were.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lighthouse_file_becomes_a_hosted_entity() {
    const EDU: &str = "https://fed.example.org/edu";
    for backend in backends() {
        let db = TestDb::new(backend).await;
        let file = example_file(&db);
        let flags = db_flags(&db);

        let out = config2db(&file, &["--entity", EDU], &flags);
        let (_, err) = text(&out);
        assert!(!out.status.success(), "{backend:?}: {err}");
        assert!(
            err.contains(&format!(
                "--entity {EDU}: this database hosts no such entity"
            )) && err.contains("pharos admin entities add"),
            "{err}"
        );
        let pool = db.pool().await;
        assert_eq!(dump(&pool).await["trust_anchors"], json!([]), "{backend:?}");

        // The entity, as `POST /entities` stores it (its keys are made when it is served).
        let mut tx = pool.begin_offline_migration().await.unwrap();
        let edu = entities::insert(&pool, &mut tx, EDU, "Education", 1)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        assert_ne!(edu.get(), 1);

        let out = config2db(&file, &["--entity", EDU], &flags);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{backend:?}: {stderr}");
        assert!(
            stdout.contains("Total: 15 created, 0 updated, 0 skipped, 0 differ, 0 errors"),
            "{stdout}"
        );
        assert_reference_rows(&dump(&pool.for_entity(edu)).await);
        let default = dump(&pool).await;
        assert_eq!(default["trust_anchors"], json!([]), "{backend:?}");
        assert_eq!(default["endpoints"], json!([]), "{backend:?}");

        let out = config2db(&file, &["--entity", &edu.get().to_string()], &flags);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{backend:?}: {stderr}");
        assert!(
            stdout.contains("Total: 0 created, 0 updated, 15 skipped, 0 differ, 0 errors"),
            "{stdout}"
        );
    }
}
