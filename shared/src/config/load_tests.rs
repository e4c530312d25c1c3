//! Tests of `load`: the layers, the env-name table, unknown keys and problem collection.

use std::io::Write;

use super::*;
use crate::Error;

fn yaml(text: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::Builder::new()
        .suffix(".yaml")
        .tempfile()
        .unwrap_or_else(|e| panic!("tempfile: {e}"));
    file.write_all(text.as_bytes())
        .unwrap_or_else(|e| panic!("write: {e}"));
    file
}

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn ok(file: Option<&tempfile::NamedTempFile>, pairs: &[(&str, &str)]) -> Loaded {
    load(file.map(|f| f.path()), &env(pairs)).unwrap_or_else(|e| panic!("load failed: {e}"))
}

fn problems(file: Option<&tempfile::NamedTempFile>, pairs: &[(&str, &str)]) -> Vec<String> {
    match load(file.map(|f| f.path()), &env(pairs)) {
        Err(Error::Config(problems)) => problems,
        other => panic!("expected a config error, got {other:?}"),
    }
}

#[test]
fn no_file_no_env_gives_defaults() {
    let loaded = ok(
        None,
        &[
            ("PATH", "/bin"),
            ("SVC_CONFIG_FILE", "x.yaml"),
            ("SVC_TEST_DB", "1"),
        ],
    );
    assert_eq!(loaded.settings, Settings::default());
    assert!(loaded.warnings.is_empty());
}

#[test]
fn file_values_applied() {
    let f = yaml(
        "entity_id: https://ia.example.org\nserver:\n  port: 8443\n  trusted_proxies: [10.0.0.0/8]\n\
         storage:\n  driver: postgres\n  endpoint_auth:\n    jti_cleanup_interval: 30m\n\
         stats:\n  buffer:\n    flush_threshold: 0.5\n",
    );
    let s = ok(Some(&f), &[]).settings;
    assert_eq!(s.entity_id, "https://ia.example.org");
    assert_eq!(s.server.port, 8443);
    assert_eq!(s.server.trusted_proxies, ["10.0.0.0/8"]);
    assert_eq!(s.storage.driver, StorageDriver::Postgres);
    assert_eq!(
        s.storage.endpoint_auth.jti_cleanup_interval,
        Duration::from_secs(1_800)
    );
    assert!((s.stats.buffer.flush_threshold - 0.5).abs() < f64::EPSILON);
    assert_eq!(
        s.server.ip_listen, "0.0.0.0",
        "untouched keys keep defaults"
    );
}

#[test]
fn env_overrides_file() {
    let f = yaml("server:\n  port: 8443\nlogging:\n  internal:\n    level: debug\n");
    let s = ok(
        Some(&f),
        &[("SVC_SERVER_PORT", "9000"), ("SVC_LOG_LEVEL", "warn")],
    )
    .settings;
    assert_eq!(s.server.port, 9000);
    assert_eq!(s.logging.internal.level, "warn");
    let both = [
        ("SVC_LOGGING_INTERNAL_LEVEL", "error"),
        ("SVC_LOG_LEVEL", "warn"),
    ];
    assert_eq!(ok(None, &both).settings.logging.internal.level, "error");
}

#[test]
fn env_keys_with_underscores() {
    let s = ok(
        None,
        &[
            ("SVC_API_ADMIN_USERS_ENABLED", "false"),
            ("SVC_STORAGE_ENDPOINT_AUTH_JTI_BACKEND", "db"),
            ("SVC_API_ADMIN_ACTOR_SOURCE", "header"),
            ("SVC_SERVER_TRUSTED_PROXIES", "10.0.0.0/8, ::1"),
            ("SVC_SIGNING_PKCS11_TOKEN_SLOT", "2"),
        ],
    )
    .settings;
    assert!(!s.api.admin.users_enabled);
    assert_eq!(s.storage.endpoint_auth.jti_backend, JtiBackend::Db);
    assert_eq!(s.api.admin.actor_source, ActorSource::Header);
    assert_eq!(s.server.trusted_proxies, ["10.0.0.0/8", "::1"]);
    assert_eq!(s.signing.pkcs11.token_slot, Some(2));
}

#[test]
fn durations_in_every_form() {
    let f = yaml(
        "server:\n  request_timeout: 90s\n  shutdown_timeout: 3600\n\
         cache:\n  max_lifetime: 7d\nfederation:\n  http_timeout: \"3600\"\n",
    );
    let s = ok(Some(&f), &[("SVC_STATS_BUFFER_FLUSH_INTERVAL", "1h30m")]).settings;
    assert_eq!(s.server.request_timeout, Duration::from_secs(90));
    assert_eq!(s.server.shutdown_timeout, Duration::from_secs(3_600));
    assert_eq!(s.cache.max_lifetime, Duration::from_secs(7 * 86_400));
    assert_eq!(s.federation.http_timeout, Duration::from_secs(3_600));
    assert_eq!(s.stats.buffer.flush_interval, Duration::from_secs(5_400));
}

#[test]
fn unknown_file_key_is_named() {
    let f = yaml("server:\n  prots: 80\n");
    assert_eq!(
        problems(Some(&f), &[]),
        ["unknown configuration key: server.prots (did you mean server.port?)"]
    );
}

#[test]
fn unknown_file_keys_are_listed_in_a_stable_order() {
    let f = yaml("server:\n  prots: 1\n  ipp: x\nstorag: 1\napi:\n  admn: 1\n");
    let want = [
        "unknown configuration key: api.admn (did you mean api.admin?)",
        "unknown configuration key: server.ipp",
        "unknown configuration key: server.prots (did you mean server.port?)",
        "unknown configuration key: storag (did you mean storage?)",
    ];
    for _ in 0..5 {
        assert_eq!(problems(Some(&f), &[]), want);
    }
}

#[test]
fn unknown_env_var_is_named() {
    let p = problems(None, &[("SVC_SERVER_PROTS", "80")]);
    assert_eq!(
        p,
        ["unknown environment variable: SVC_SERVER_PROTS (did you mean SVC_SERVER_PORT?)"]
    );
}

#[test]
fn all_problems_reported_together() {
    let f = yaml("server:\n  port: not-a-port\nbogus: 1\nstorage:\n  driver: oracle\n");
    let p = problems(Some(&f), &[("SVC_API_ADMIN_ENABLED", "maybe")]);
    assert_eq!(p.len(), 4, "{p:?}");
    assert!(p.iter().any(|m| m == "unknown configuration key: bogus"));
    assert!(
        p.iter()
            .any(|m| m.starts_with("SVC_API_ADMIN_ENABLED: expected a boolean"))
    );
    assert!(p.iter().any(|m| m.starts_with("server.port:")));
    assert!(
        p.iter()
            .any(|m| m.starts_with("storage.driver:") && m.contains("oracle"))
    );
}

#[test]
fn combination_problems_reported_together() {
    let f = yaml("signing:\n  kms: filesystem\napi:\n  admin:\n    tls:\n      enabled: true\n");
    let p = problems(Some(&f), &[]);
    assert_eq!(p.len(), 3, "{p:?}");
}

#[test]
fn removed_keys_ignored_silently() {
    let f = yaml(
        "server:\n  prefork: true\nlogging:\n  internal:\n    smart:\n      enabled: true\n      dir: /x\n",
    );
    let loaded = ok(Some(&f), &[("SVC_SERVER_PREFORK", "true")]);
    assert_eq!(loaded.settings, Settings::default());
    assert!(loaded.warnings.is_empty());
}

#[test]
fn legacy_storage_backend_rejected() {
    let f = yaml("storage:\n  backend: badger\n");
    let expected = "storage.backend is no longer supported; migrate with `pharos config2db`";
    assert_eq!(problems(Some(&f), &[]), [expected]);
    assert_eq!(
        problems(None, &[("SVC_STORAGE_BACKEND", "json")]),
        [expected]
    );
}

#[test]
fn redis_settings_warn() {
    let loaded = ok(None, &[("SVC_CACHE_REDIS_ADDR", "redis:6379")]);
    assert_eq!(
        loaded.warnings,
        ["cache.redis_addr ignored: Pharos caches in process"]
    );
}

#[test]
fn env_name_table_has_no_collisions_and_covers_keys() {
    let table = env_names().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        table.get("SVC_API_ADMIN_USERS_ENABLED").map(String::as_str),
        Some("api.admin.users_enabled")
    );
    assert_eq!(
        table
            .get("SVC_STORAGE_ENDPOINT_AUTH_JTI_BACKEND")
            .map(String::as_str),
        Some("storage.endpoint_auth.jti_backend")
    );
    assert!(
        table.contains_key("SVC_SIGNING_PKCS11_TOKEN_SLOT"),
        "None-valued leaves included"
    );
    // One name per leaf of the key tree (update when a key is added).
    assert_eq!(table.len(), 144);
}

#[test]
fn storage_url_from_loaded_parts() {
    let f = yaml(
        "storage:\n  driver: mysql\n  user: fed\n  password: s3cr:t\n  host: db\n  db: pharos\n",
    );
    let s = ok(Some(&f), &[]).settings;
    assert_eq!(s.storage_url(), "mysql://fed:s3cr%3At@db:3306/pharos");
    let s = ok(
        None,
        &[
            ("SVC_STORAGE_DRIVER", "postgres"),
            ("SVC_STORAGE_DSN", "postgres://x@y/z"),
        ],
    )
    .settings;
    assert_eq!(s.storage_url(), "postgres://x@y/z");
    assert_eq!(
        ok(None, &[]).settings.storage_url(),
        "sqlite://./data/pharos.db?mode=rwc"
    );
}

#[test]
fn check_config_output_round_trips_and_hides_secrets() {
    let f = yaml("storage:\n  password: hunter2\nsigning:\n  pkcs11:\n    pin: 9999\n");
    let s = ok(Some(&f), &[]).settings;
    assert_eq!(
        s.signing.pkcs11.pin.expose(),
        "9999",
        "numeric YAML scalar read as text"
    );
    let shown = s.redacted().to_string();
    assert!(
        !shown.contains("hunter2") && !shown.contains("9999"),
        "{shown}"
    );
    let plain = serde_json::to_value(&s).unwrap_or_default();
    assert_eq!(serde_json::from_value::<Settings>(plain).ok(), Some(s));
}

#[test]
fn refresh_concurrency_is_read_and_must_be_positive() {
    assert_eq!(ok(None, &[]).settings.federation.refresh_concurrency, 16);
    let s = ok(None, &[("SVC_FEDERATION_REFRESH_CONCURRENCY", "4")]).settings;
    assert_eq!(s.federation.refresh_concurrency, 4);
    let p = problems(None, &[("SVC_FEDERATION_REFRESH_CONCURRENCY", "0")]);
    assert!(p.iter().any(|m| m.contains("refresh_concurrency")), "{p:?}");
}

#[test]
fn trust_mark_legacy_id_defaults_on_and_can_be_turned_off() {
    assert!(ok(None, &[]).settings.federation.trust_mark_legacy_id);
    assert!(
        env_names()
            .unwrap()
            .contains_key("SVC_FEDERATION_TRUST_MARK_LEGACY_ID")
    );
    let s = ok(None, &[("SVC_FEDERATION_TRUST_MARK_LEGACY_ID", "false")]).settings;
    assert!(!s.federation.trust_mark_legacy_id);
}

#[test]
fn interop_settings_default_to_apply_and_interop_and_refuse_unknown_values() {
    use crate::interop::{AnchorEcConstraints, Interop, Profile};
    let s = ok(None, &[]).settings;
    assert_eq!(
        s.federation.anchor_ec_constraints,
        AnchorEcConstraints::Apply
    );
    assert_eq!(s.federation.profile, Profile::Interop);
    assert_eq!(s.federation.interop(None), Interop::default());
    let f = yaml("federation:\n  anchor_ec_constraints: ignore\n  profile: strict\n");
    let s = ok(Some(&f), &[]).settings;
    assert_eq!(
        s.federation.anchor_ec_constraints,
        AnchorEcConstraints::Ignore
    );
    assert_eq!(s.federation.interop(None), Interop::STRICT);
    let s = ok(None, &[("SVC_FEDERATION_ANCHOR_EC_CONSTRAINTS", "refuse")]).settings;
    assert_eq!(
        s.federation
            .interop(Some(AnchorEcConstraints::Apply))
            .anchor_ec_constraints,
        AnchorEcConstraints::Apply,
        "the trust anchor record's override wins"
    );
    for (name, value) in [
        ("SVC_FEDERATION_ANCHOR_EC_CONSTRAINTS", "maybe"),
        ("SVC_FEDERATION_PROFILE", "lax"),
    ] {
        let p = problems(None, &[(name, value)]);
        assert!(p.iter().any(|m| m.contains(value)), "{name}: {p:?}");
    }
}

#[test]
fn a_lighthouse_021_file_is_refused_with_the_keys_and_the_command() {
    let f = yaml(
        "entity_id: https://ia.example.org\nserver:\n  prefork: true\nstorage:\n  data_dir: /srv/pharos data\n\
         federation_data:\n  authority_hints: [https://ta.example.org]\n  trust_anchors:\n    - entity_id: https://ta.example.org\n\
         endpoints:\n  auth:\n    jti_backend: db\n  fetch:\n    path: /fetch\n    statement_lifetime: 1w\n  list: {}\n",
    );
    let p = problems(Some(&f), &[]);
    assert_eq!(p.len(), 1, "{p:?}");
    let path = f.path().display().to_string();
    assert!(
        p[0].contains("endpoints.auth.jti_backend, endpoints.fetch.path, federation_data.trust_anchors now live in the database"),
        "{}",
        p[0]
    );
    assert!(
        p[0].ends_with(&format!(
            "pharos config2db --config {path} --db-type sqlite --db-dir '/srv/pharos data' --update-config"
        )),
        "{}",
        p[0]
    );
    // Keys without effect since 0.20 are not listed as keys to migrate.
    assert!(!p[0].contains("authority_hints") && !p[0].contains("statement_lifetime"));
}

#[test]
fn keys_without_effect_since_020_are_ignored_with_a_warning() {
    let f = yaml(
        "federation_data:\n  authority_hints: [https://ta.example.org]\nsigning:\n  key_rotation:\n    enabled: true\n\
         endpoints:\n  fetch:\n    statement_lifetime: 1w\n  list: {}\nlogging:\n  internal:\n    smart:\n      enabled: true\n",
    );
    let l = ok(Some(&f), &[]);
    assert_eq!(
        l.warnings,
        [
            "ignored: endpoints.fetch.statement_lifetime, federation_data.authority_hints, signing.key_rotation had no effect since lighthouse 0.20; these settings are managed through the Admin API"
        ]
    );
    // The migration's loader takes the rest of a file that `load` refuses.
    let f = yaml(
        "storage:\n  driver: postgres\n  dsn: postgres://db/x\nendpoints:\n  list:\n    path: /list\n",
    );
    assert!(load(Some(f.path()), &[]).is_err());
    let s = load_legacy(f.path(), &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.storage.driver, StorageDriver::Postgres);
}

#[test]
fn old_jti_variables_warn_with_their_new_names_and_change_nothing() {
    let l = ok(
        None,
        &[
            ("SVC_ENDPOINTS_AUTH_JTI_BACKEND", "db"),
            ("SVC_ENDPOINTS_AUTH_JTI_CLEANUP_INTERVAL", "5m"),
        ],
    );
    assert_eq!(l.settings, Settings::default());
    assert_eq!(l.warnings.len(), 2, "{:?}", l.warnings);
    assert!(l.warnings[0].contains("SVC_ENDPOINTS_AUTH_JTI_BACKEND is ignored: it was renamed to SVC_STORAGE_ENDPOINT_AUTH_JTI_BACKEND"));
    assert!(l.warnings[1].contains("SVC_STORAGE_ENDPOINT_AUTH_JTI_CLEANUP_INTERVAL"));
}

#[test]
fn cluster_is_refused_on_sqlite_and_with_the_cache_replay_store() {
    let p = problems(None, &[("SVC_CLUSTER_ENABLED", "true")]);
    assert_eq!(p.len(), 2, "{p:?}");
    assert!(
        p.iter()
            .any(|m| m.contains("storage.driver postgres or mysql"))
    );
    assert!(p.iter().any(|m| m.contains("jti_backend: db")));
    let f = yaml(
        "cluster:\n  enabled: true\n  instance_id: a\n  poll_interval: 500ms\n  leader_lease: 5s\n\
         storage:\n  driver: postgres\n  dsn: postgres://x@y/z\n  endpoint_auth:\n    jti_backend: db\n",
    );
    let c = ok(Some(&f), &[]).settings.cluster;
    assert!(c.enabled);
    assert_eq!(c.instance_id, "a");
    assert_eq!(c.poll_interval.get(), std::time::Duration::from_millis(500));
    assert_eq!(c.leader_lease.get().as_secs(), 5);
    let d = ClusterSettings::default();
    assert_eq!(
        (
            d.poll_interval.get().as_millis(),
            d.leader_lease.get().as_secs()
        ),
        (50, 10)
    );
}

#[test]
fn another_port_without_an_entity_id_warns_naming_both() {
    let l = ok(None, &[("SVC_SERVER_PORT", "17001")]);
    assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
    assert!(
        l.warnings[0].contains("server.port is 17001"),
        "{:?}",
        l.warnings
    );
    assert!(
        l.warnings[0].contains("http://127.0.0.1:7672"),
        "{:?}",
        l.warnings
    );
    let l = ok(
        None,
        &[
            ("SVC_SERVER_PORT", "17001"),
            ("SVC_ENTITY_ID", "https://ia.example.org"),
        ],
    );
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert!(ok(None, &[("SVC_SERVER_PORT", "0")]).warnings.is_empty());
}

#[test]
fn a_yaml_syntax_error_names_the_file_once() {
    let f = yaml("server:\n  port: [1\n");
    let p = problems(Some(&f), &[]);
    let name = f.path().file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].starts_with(&f.path().display().to_string()), "{p:?}");
    assert_eq!(p[0].matches(&name).count(), 1, "{p:?}");
}
