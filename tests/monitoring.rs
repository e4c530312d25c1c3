//! Monitoring as delivered (issue 41): the alert rules (`deploy/prometheus/pharos-alerts.yml`)
//! pass `promtool check rules` and their unit tests (`pharos-alerts.test.yml`), every alert is
//! tested firing and quiet and has its runbook section in `docs/troubleshooting.md`, and every
//! metric an alert or a Grafana panel (`deploy/grafana/pharos.json`) queries is one a running
//! Pharos exports — a renamed metric fails here, not on the night the alert should fire.
//!
//! `promtool` comes with Debian's `prometheus` package; without it those checks print a notice
//! and pass, unless `PHAROS_REQUIRE_PROMTOOL=1` (set by `.ci/run`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use reqwest::Method;
use serde_json::{Value, json};
use yaml_rust2::{Yaml, YamlLoader};

use crate::support::{Backend, Pharos, TestDb, eventually};

const RULES: &str = "deploy/prometheus/pharos-alerts.yml";
const RULE_TESTS: &str = "deploy/prometheus/pharos-alerts.test.yml";
const DASHBOARD: &str = "deploy/grafana/pharos.json";
const RUNBOOKS: &str = "docs/troubleshooting.md";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn yaml(path: &str) -> Yaml {
    YamlLoader::load_from_str(&read(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .remove(0)
}

/// `promtool`, if installed; fails when `PHAROS_REQUIRE_PROMTOOL=1` says it must be.
fn promtool() -> Option<PathBuf> {
    let found = ["promtool", "/usr/bin/promtool"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| Command::new(p).arg("--version").output().is_ok());
    if found.is_none() {
        assert!(
            std::env::var("PHAROS_REQUIRE_PROMTOOL").map_or(true, |v| v != "1"),
            "promtool is required (PHAROS_REQUIRE_PROMTOOL=1): apt-get install prometheus"
        );
        eprintln!("NOTICE: promtool not found; the alert rules are not checked by it");
    }
    found
}

#[test]
fn promtool_accepts_the_rules_and_their_unit_tests_pass() {
    let Some(promtool) = promtool() else { return };
    for args in [["check", "rules", RULES], ["test", "rules", RULE_TESTS]] {
        let out = Command::new(&promtool)
            .args(args)
            .current_dir(repo())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "promtool {}:\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Every alerting rule of the rules file: (alert name, expression, runbook_url).
fn alerts() -> Vec<(String, String, String)> {
    let doc = yaml(RULES);
    let mut all = Vec::new();
    for group in doc["groups"].as_vec().expect("groups") {
        for rule in group["rules"].as_vec().expect("rules") {
            let name = rule["alert"]
                .as_str()
                .expect("only alerting rules")
                .to_owned();
            let expr = rule["expr"].as_str().expect("expr").to_owned();
            let runbook = rule["annotations"]["runbook_url"]
                .as_str()
                .unwrap_or_else(|| panic!("{name}: no runbook_url"))
                .to_owned();
            for key in ["summary", "description"] {
                assert!(
                    rule["annotations"][key]
                        .as_str()
                        .is_some_and(|s| !s.is_empty()),
                    "{name}: no {key}"
                );
            }
            assert!(
                rule["labels"]["severity"].as_str().is_some(),
                "{name}: no severity"
            );
            assert!(rule["for"].as_str().is_some(), "{name}: no `for`");
            all.push((name, expr, runbook));
        }
    }
    assert!(!all.is_empty());
    all
}

#[test]
fn every_alert_is_tested_firing_and_quiet_and_has_a_runbook_section() {
    let tests = yaml(RULE_TESTS);
    let (mut firing, mut quiet) = (BTreeSet::new(), BTreeSet::new());
    for t in tests["tests"].as_vec().expect("tests") {
        for case in t["alert_rule_test"].as_vec().into_iter().flatten() {
            let name = case["alertname"].as_str().expect("alertname").to_owned();
            match case["exp_alerts"].as_vec() {
                Some(v) if !v.is_empty() => firing.insert(name),
                _ => quiet.insert(name),
            };
        }
    }
    let anchors = heading_anchors(&read(RUNBOOKS));
    for (name, _, runbook) in alerts() {
        assert!(
            firing.contains(&name),
            "{name}: no test case in which it fires"
        );
        assert!(
            quiet.contains(&name),
            "{name}: no test case in which it stays quiet"
        );
        let (doc, anchor) = runbook
            .split_once('#')
            .unwrap_or_else(|| panic!("{name}: runbook_url without a section: {runbook}"));
        assert_eq!(doc, RUNBOOKS, "{name}");
        assert!(
            anchors.contains(anchor),
            "{name}: no heading in {RUNBOOKS} for #{anchor}"
        );
    }
}

/// The anchors GitHub gives the headings of a Markdown document: lower case, punctuation other
/// than `-` and `_` dropped, spaces as `-`.
fn heading_anchors(markdown: &str) -> BTreeSet<String> {
    markdown
        .lines()
        .filter_map(|l| {
            l.trim_start_matches('#')
                .strip_prefix(' ')
                .filter(|_| l.starts_with('#'))
        })
        .map(|h| {
            h.trim()
                .to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// The metric names a PromQL expression selects: identifiers that are neither functions,
/// keywords, label names (in matchers `{…}` and in `by`/`without`/`on`/`ignoring`/`group_*`
/// lists), durations (`[5m]`), strings, numbers nor Grafana variables (`$entity`).
fn metric_names(promql: &str) -> BTreeSet<String> {
    const KEYWORDS: [&str; 27] = [
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "and",
        "or",
        "unless",
        "bool",
        "offset",
        "inf",
        "nan",
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
        "limitk",
        "limit_ratio",
    ];
    const LABEL_LISTS: [&str; 6] = [
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
    ];
    let chars: Vec<char> = promql.chars().collect();
    let mut names = BTreeSet::new();
    let mut i = 0;
    // Whether the next parenthesis holds label names (after `by`, `on`, …).
    let mut labels_next = false;
    let skip_to = |from: usize, close: char| {
        chars[from..]
            .iter()
            .position(|c| *c == close)
            .map_or(chars.len(), |p| from + p + 1)
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' || c == '`' {
            i = skip_to(i + 1, c);
        } else if c == '{' {
            i = skip_to(i + 1, '}');
        } else if c == '[' {
            i = skip_to(i + 1, ']');
        } else if c == '(' && labels_next {
            labels_next = false;
            i = skip_to(i + 1, ')');
        } else if c == '$' || c.is_ascii_digit() || c == '.' {
            // A variable, or a number (`0.99`, `1e3`, `12`): the word goes with it.
            i += 1;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == '.')
            {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':')
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let next = chars[i..].iter().find(|c| !c.is_whitespace());
            if LABEL_LISTS.contains(&word.as_str()) {
                labels_next = true;
            } else if next != Some(&'(') && !KEYWORDS.contains(&word.as_str()) {
                names.insert(word);
            }
        } else {
            i += 1;
        }
    }
    names
}

#[test]
fn metric_names_are_found_in_promql_and_nothing_else_is() {
    let found = metric_names(
        r#"sum by (instance, le) (rate(pharos_a_total{status=~"5..", x="y"}[$__rate_interval]))
           / on(instance) group_left(job) pharos_b > 12 * 3600 and pharos_c{entity=~"$entity"} - time() < 1e3
           or histogram_quantile(0.99, sum(rate(pharos_d_bucket[5m])) without (le)) unless bool pharos_e offset 5m"#,
    );
    let want: BTreeSet<String> = [
        "pharos_a_total",
        "pharos_b",
        "pharos_c",
        "pharos_d_bucket",
        "pharos_e",
    ]
    .map(String::from)
    .into();
    assert_eq!(found, want);
}

/// Every name a scrape answers: samples, and the sample names of every family announced by a
/// `# TYPE` line (a counter's `_total`, a histogram's `_bucket`, `_count` and `_sum`), so that
/// families without samples yet count too.
fn exported(scrape: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in scrape.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut words = rest.split_whitespace();
            let (Some(name), Some(kind)) = (words.next(), words.next()) else {
                continue;
            };
            let suffixes: &[&str] = match kind {
                "counter" => &["_total"],
                "histogram" => &["_bucket", "_count", "_sum"],
                _ => &[""],
            };
            names.extend(suffixes.iter().map(|s| format!("{name}{s}")));
        } else if !line.starts_with('#') && !line.is_empty() {
            let end = line.find(['{', ' ']).unwrap_or(line.len());
            names.insert(line[..end].to_owned());
        }
    }
    names
}

/// The PromQL of every panel and template variable of the dashboard.
fn dashboard_queries(dashboard: &Value) -> Vec<String> {
    let mut queries = Vec::new();
    let mut panels: Vec<&Value> = dashboard["panels"].as_array().unwrap().iter().collect();
    while let Some(p) = panels.pop() {
        panels.extend(p["panels"].as_array().into_iter().flatten());
        for t in p["targets"].as_array().into_iter().flatten() {
            queries.push(t["expr"].as_str().expect("a PromQL target").to_owned());
        }
    }
    for v in dashboard["templating"]["list"].as_array().unwrap() {
        if let Some(q) = v["query"]["query"].as_str() {
            // label_values(metric, label): the metric is the first argument.
            let args = q
                .strip_prefix("label_values(")
                .and_then(|a| a.strip_suffix(')'));
            let metric = args
                .and_then(|a| a.split(',').next())
                .expect("label_values(…)");
            queries.push(metric.trim().to_owned());
        }
    }
    queries
}

#[test]
fn the_dashboard_is_importable_with_a_data_source_input_and_an_entity_variable() {
    let d: Value = serde_json::from_str(&read(DASHBOARD)).unwrap();
    assert!(
        d["schemaVersion"].as_i64().is_some_and(|v| v >= 36),
        "schemaVersion"
    );
    assert_eq!(d["__inputs"][0]["name"], "DS_PROMETHEUS");
    assert_eq!(d["__inputs"][0]["pluginId"], "prometheus");
    let vars: Vec<&str> = d["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    assert!(
        vars.contains(&"DS_PROMETHEUS") && vars.contains(&"entity"),
        "{vars:?}"
    );
    let mut panels: Vec<&Value> = d["panels"].as_array().unwrap().iter().collect();
    while let Some(p) = panels.pop() {
        panels.extend(p["panels"].as_array().into_iter().flatten());
        for t in p["targets"].as_array().into_iter().flatten() {
            assert_eq!(t["datasource"]["uid"], "${DS_PROMETHEUS}", "{}", p["title"]);
        }
    }
}

/// A `/metrics` scrape on the Admin API's listener (no admin user exists: loopback may
/// scrape).
async fn scrape(p: &Pharos) -> String {
    let base = p.admin_base.as_deref().unwrap_or(&p.base);
    let r = p
        .client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.text().await.unwrap()
}

/// The value of the sample `series` (name and labels as printed) of a scrape.
fn sample(scrape: &str, series: &str) -> Option<f64> {
    scrape
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test]
async fn every_metric_of_the_alerts_and_the_dashboard_is_exported() {
    let db = TestDb::new(Backend::Sqlite).await;
    let p = Pharos::start(&db).await;
    // One request so that the request families have samples too.
    assert_eq!(p.get("/.well-known/openid-federation").await.status(), 200);
    let text = scrape(&p).await;
    let names = exported(&text);
    let dashboard: Value = serde_json::from_str(&read(DASHBOARD)).unwrap();
    let mut queries: Vec<(String, String)> = alerts()
        .into_iter()
        .map(|(name, expr, _)| (name, expr))
        .collect();
    queries.extend(
        dashboard_queries(&dashboard)
            .into_iter()
            .map(|q| (DASHBOARD.to_owned(), q)),
    );
    for (whose, q) in &queries {
        let used = metric_names(q);
        assert!(!used.is_empty(), "{whose}: no metric in {q}");
        for m in used {
            assert!(
                names.contains(&m),
                "{whose}: {m} is not exported (query {q})\n{text}"
            );
        }
    }
    // Families without samples on a fresh instance are announced all the same, so alerts and
    // panels find them (no TLS here, no failing refresh, no rotation planned).
    for family in [
        "pharos_tls_certificate_expiry_timestamp_seconds gauge",
        "pharos_trust_anchor_refresh_consecutive_failures gauge",
        "pharos_key_rotation_next_timestamp_seconds gauge",
        "pharos_published_keys_expiry_timestamp_seconds gauge",
    ] {
        assert!(
            text.contains(&format!("# TYPE {family}")),
            "{family}\n{text}"
        );
    }
    // A process without clustering leads from its start and never changes leader.
    assert_eq!(sample(&text, "pharos_leader"), Some(1.0));
    assert_eq!(
        sample(&text, r#"pharos_leader_changes_total{change="acquired"}"#),
        Some(0.0)
    );
    assert_eq!(sample(&text, "pharos_replica_behind_seconds"), Some(0.0));
    assert_eq!(
        sample(&text, r#"pharos_command_refusals_total{command="enroll"}"#),
        Some(0.0)
    );
    p.stop().await;
}

#[tokio::test]
async fn key_expiry_and_the_next_key_transition_are_exported_per_entity() {
    let db = TestDb::new(Backend::Sqlite).await;
    let p = Pharos::start(&db).await;
    let edu = format!("{}/edu", p.entity_id());
    let (s, v) = p
        .admin(Method::POST, "/entities", Some(json!({"entity_id": edu})))
        .await;
    assert_eq!(s, 201, "{v}");
    let n = v["id"].as_i64().unwrap();
    // Generated keys never expire until rotation gives them an end.
    let text = scrape(&p).await;
    assert_eq!(
        sample(&text, "pharos_signing_key_expiry_timestamp_seconds"),
        None
    );
    let rotation = json!({"enabled": true, "interval": "48h", "overlap": "2h",
                          "key_announcement_lead_time": "30h"});
    let (s, v) = p.admin(Method::PUT, "/keys/rotation", Some(rotation)).await;
    assert_eq!(s, 200, "{v}");
    let ec = p.entity_configuration().await;
    let exp = ec.claims["jwks"]["keys"][0]["exp"]
        .as_i64()
        .expect("an exp now");
    let text = scrape(&p).await;
    let at = |series: &str| sample(&text, series);
    assert_eq!(
        at("pharos_signing_key_expiry_timestamp_seconds"),
        Some(exp as f64),
        "{text}"
    );
    assert_eq!(
        at("pharos_published_keys_expiry_timestamp_seconds"),
        Some(exp as f64)
    );
    // The hosted entity keeps keys without an end: no sample of its own.
    assert_eq!(
        at(&format!(
            r#"pharos_signing_key_expiry_timestamp_seconds{{entity="{n}"}}"#
        )),
        None
    );
    // The key task plans the successor's announcement: the lead time and the overlap before
    // the current key's end.
    let announce = (exp - 32 * 3600) as f64;
    eventually("the next key transition is exported", || async {
        sample(
            &scrape(&p).await,
            "pharos_key_rotation_next_timestamp_seconds",
        ) == Some(announce)
    })
    .await;
    // Rotation of the hosted entity: its series carry its number.
    let rotation = json!({"enabled": true, "interval": "48h", "overlap": "2h"});
    let (s, v) = p
        .admin(
            Method::PUT,
            &format!("/entities/{n}/keys/rotation"),
            Some(rotation),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let series = format!(r#"pharos_signing_key_expiry_timestamp_seconds{{entity="{n}"}}"#);
    let text = scrape(&p).await;
    assert!(
        sample(&text, &series).is_some_and(|t| t > exp as f64 - 3600.0),
        "{text}"
    );
    p.stop().await;
}

/// A `localhost` certificate issued by `ca` that expires at the start of `year`, written to
/// `dir` as cert.pem / key.pem; its notAfter in Unix seconds.
fn write_leaf_expiring(
    ca: &rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
    dir: &Path,
    year: i32,
) -> i64 {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params.not_after = rcgen::date_time_ymd(year, 1, 1);
    let cert = params.signed_by(&key, ca).unwrap();
    std::fs::write(dir.join("cert.pem"), cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), key.serialize_pem()).unwrap();
    params.not_after.unix_timestamp()
}

#[tokio::test]
async fn the_admin_certificate_s_expiry_is_exported_and_follows_a_reload() {
    let db = TestDb::new(Backend::Sqlite).await;
    let certs = tempfile::tempdir().unwrap();
    let ca = crate::tls::ca("Pharos monitoring test CA");
    let first = write_leaf_expiring(&ca, certs.path(), 2031);
    let dir = certs.path().to_path_buf();
    let p = Pharos::start_separate_admin(
        &db,
        |s| {
            s.api.admin.tls.enabled = true;
            s.api.admin.tls.cert = dir.join("cert.pem").display().to_string();
            s.api.admin.tls.key = dir.join("key.pem").display().to_string();
        },
        crate::tls::client(&ca),
    )
    .await;
    let series = r#"pharos_tls_certificate_expiry_timestamp_seconds{listener="admin"}"#;
    let text = scrape(&p).await;
    assert_eq!(sample(&text, series), Some(first as f64), "{text}");
    // Without TLS on the main port, it has no certificate to report.
    assert!(!text.contains(r#"listener="main""#));

    // A renewed file counts once the listener was told to reload it (as it is served).
    let renewed = write_leaf_expiring(&ca, certs.path(), 2032);
    assert_eq!(sample(&scrape(&p).await, series), Some(first as f64));
    crate::tls::sighup();
    eventually("the renewed certificate's expiry is exported", || async {
        sample(&scrape(&p).await, series) == Some(renewed as f64)
    })
    .await;

    // A botched renewal (a new certificate beside a key that does not load) is not served:
    // the listener keeps the certificate it has, and so does the figure.
    write_leaf_expiring(&ca, certs.path(), 2033);
    std::fs::write(certs.path().join("key.pem"), "not a key").unwrap();
    crate::tls::sighup();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(sample(&scrape(&p).await, series), Some(renewed as f64));
    p.stop().await;
}
