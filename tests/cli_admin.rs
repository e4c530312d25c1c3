//! `pharos admin`, the real binary against real Pharos instances on loopback: a three-level
//! federation built with nothing but its commands and resolved through, and the failures a
//! script must be able to tell apart (exit 1 refused, 64 usage, 69 unreachable), each one line.

use reqwest::Method;
use serde_json::{Value, json};

use crate::resolve::{resolve, verified};
use crate::support::{Backend, Pharos, TestDb, backends, enc};

/// What one `pharos` run printed and returned.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts success and returns stdout.
    pub fn ok(self) -> String {
        assert_eq!(self.code, Some(0), "{self:?}");
        self.stdout
    }

    /// Asserts exit status `code` with one line on stderr and nothing on stdout; the line.
    pub fn fails(self, code: i32) -> String {
        assert_eq!(self.code, Some(code), "{self:?}");
        assert_eq!(self.stdout, "", "{self:?}");
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "one line expected: {self:?}");
        lines[0].to_owned()
    }
}

/// Runs the `pharos` binary with `args` and the environment `env`, nothing inherited from the
/// developer's `SVC_*` / `PHAROS_*` variables. Asynchronous, so the in-process instances it
/// talks to keep being served meanwhile.
pub async fn pharos(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_pharos"));
    for (k, _) in std::env::vars() {
        if k.starts_with("SVC_") || k.starts_with("PHAROS_") {
            c.env_remove(k);
        }
    }
    c.args(args).envs(env.iter().copied());
    c.stdin(std::process::Stdio::null());
    let out = c.output().await.unwrap();
    Run {
        code: out.status.code(),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// `pharos admin` against `p` (no credentials).
pub async fn admin(p: &Pharos, args: &[&str]) -> Run {
    admin_as(p, None, args).await
}

/// `pharos admin` against `p` with Basic credentials from the environment.
pub async fn admin_as(p: &Pharos, auth: Option<(&str, &str)>, args: &[&str]) -> Run {
    let mut env = vec![("PHAROS_ADMIN_URL", p.base.as_str())];
    if let Some((u, pw)) = auth {
        env.push(("PHAROS_ADMIN_USER", u));
        env.push(("PHAROS_ADMIN_PASSWORD", pw));
    }
    let mut all = vec!["admin"];
    all.extend_from_slice(args);
    pharos(&all, &env).await
}

const TA_AUTH: (&str, &str) = ("ops", "correct horse battery staple");

#[tokio::test]
async fn a_three_level_federation_built_with_pharos_admin_resolves() {
    for b in backends() {
        let dbs = [
            TestDb::new(b).await,
            TestDb::new(b).await,
            TestDb::new(b).await,
            TestDb::new(Backend::Sqlite).await,
        ];
        let ta = Pharos::start(&dbs[0]).await;
        let i = Pharos::start(&dbs[1]).await;
        let l = Pharos::start(&dbs[2]).await;
        let r = Pharos::start(&dbs[3]).await;
        let (ta_id, i_id, l_id) = (ta.entity_id(), i.entity_id(), l.entity_id());

        // The anchor gets an admin user first; from then on it needs the credentials.
        let out = admin(
            &ta,
            &["users", "add", TA_AUTH.0, "--new-password", TA_AUTH.1],
        )
        .await
        .ok();
        assert_eq!(out, format!("added user {}\n", TA_AUTH.0));
        let ta_admin = |args: &'static [&'static str]| admin_as(&ta, Some(TA_AUTH), args);
        ta_admin(&["endpoints", "enable", "fetch"]).await.ok();
        ta_admin(&["endpoints", "enable", "list"]).await.ok();
        admin(&i, &["endpoints", "enable", "fetch"]).await.ok();
        admin(&i, &["endpoints", "enable", "list"]).await.ok();
        let rp = r#"{"client_name":"leaf","client_registration_types":["automatic"]}"#;
        admin(&l, &["metadata", "set", "openid_relying_party", rp])
            .await
            .ok();

        // Superiors register their subordinates' keys; subordinates name their superiors.
        admin_as(
            &ta,
            Some(TA_AUTH),
            &["subordinates", "add", i_id, "--fetch-jwks"],
        )
        .await
        .ok();
        admin(&i, &["authority-hints", "add", ta_id]).await.ok();
        admin(&i, &["subordinates", "add", l_id, "--fetch-jwks"])
            .await
            .ok();
        admin(&l, &["authority-hints", "add", i_id]).await.ok();

        // The resolver trusts the anchor's keys and resolves to it.
        admin(&r, &["trust-anchors", "add", ta_id, "--fetch-jwks"])
            .await
            .ok();
        let cfg = json!({ "allowed_trust_anchors": [ta_id] }).to_string();
        admin(
            &r,
            &["endpoints", "enable", "resolve", "--endpoint-config", &cfg],
        )
        .await
        .ok();

        // What the operator sees: tables by default, the API's JSON with --json.
        let table = ta_admin(&["subordinates", "list"]).await.ok();
        let rows: Vec<&str> = table.lines().collect();
        assert_eq!(rows.len(), 2, "{table}");
        assert!(
            rows[0].starts_with("ID") && rows[0].contains("ENTITY_ID"),
            "{table}"
        );
        assert!(
            rows[1].contains(i_id) && rows[1].contains("active"),
            "{table}"
        );
        let json: Value =
            serde_json::from_str(&admin(&i, &["--json", "subordinates", "list"]).await.ok())
                .unwrap();
        assert_eq!(json[0]["entity_id"], l_id, "{json}");
        let anchors: Value =
            serde_json::from_str(&admin(&r, &["trust-anchors", "list", "--json"]).await.ok())
                .unwrap();
        let published = ta.entity_configuration().await.claims["jwks"].clone();
        assert_eq!(
            anchors[0]["jwks"], published,
            "the anchor's own keys are pinned"
        );

        let (s, body) = resolve(&r, l_id, &[ta_id], &[]).await;
        assert_eq!(s, 200, "{b:?} {body}");
        let c = verified(&r, &body).await;
        assert_eq!(c["sub"], l_id);
        assert_eq!(c["trust_chain"].as_array().unwrap().len(), 4);
        assert_eq!(c["metadata"]["openid_relying_party"]["client_name"], "leaf");

        // Blocking the intermediate at the anchor breaks the chain for a fresh resolver.
        let out = ta_admin_block(&ta, i_id).await;
        assert_eq!(out, format!("blocked subordinate {i_id}\n"));
        let s = ta.get(&format!("/fetch?sub={}", enc(i_id))).await.status();
        assert_eq!(s, 404, "{b:?}: a blocked subordinate has no statement");
    }
}

async fn ta_admin_block(ta: &Pharos, id: &str) -> String {
    admin_as(ta, Some(TA_AUTH), &["subordinates", "block", id])
        .await
        .ok()
}

#[tokio::test]
async fn failures_print_one_line_and_the_documented_status() {
    let db = TestDb::new(Backend::Sqlite).await;
    let mut p = Pharos::start(&db).await;
    admin(
        &p,
        &["users", "add", "root", "--new-password", "right-password"],
    )
    .await
    .ok();

    // Wrong password: the API refuses, exit 1, its description.
    let line = admin_as(&p, Some(("root", "wrong")), &["subordinates", "list"])
        .await
        .fails(1);
    assert_eq!(line, "error: invalid credentials (HTTP 401)");
    // No credentials at all once a user exists.
    let line = admin(&p, &["endpoints", "list"]).await.fails(1);
    assert!(line.contains("HTTP 401"), "{line}");

    // A refusal of the input, with the API's error_description.
    let auth = Some(("root", "right-password"));
    let line = admin_as(
        &p,
        auth,
        &[
            "subordinates",
            "add",
            "https://x.example",
            "--jwks",
            r#"{"keys":[]}"#,
        ],
    )
    .await
    .fails(1);
    assert_eq!(
        line,
        "error: status cannot be active without keys (HTTP 400)"
    );
    let line = admin_as(
        &p,
        auth,
        &["subordinates", "show", "https://nobody.example"],
    )
    .await
    .fails(1);
    assert!(line.contains("HTTP 404"), "{line}");

    // Unreachable: a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let run = pharos(&["admin", "--url", &url, "users", "list"], &[]).await;
    let line = run.fails(69);
    assert!(
        line.starts_with(&format!("error: cannot reach {url}: ")),
        "{line}"
    );

    // Invalid arguments: clap's and ours alike, exit 64, before any request.
    for args in [
        &["subordinates", "add"][..],
        &["subordinates", "frobnicate"],
        &["keys", "rotation", "--interval", "soon"],
        &[
            "endpoints",
            "enable",
            "fetch",
            "--endpoint-config",
            "{not json",
        ],
        &[
            "subordinates",
            "add",
            "https://x.example",
            "--jwks",
            "@/nonexistent/jwks.json",
        ],
    ] {
        let line = admin_as(&p, auth, args).await.fails(64);
        assert!(line.starts_with("error: "), "{args:?}: {line}");
    }
    let line = pharos(&["admin", "users", "list"], &[]).await.fails(64);
    assert!(line.contains("PHAROS_ADMIN_URL"), "{line}");
    let line = pharos(&["admin", "--url", "ftp://x", "users", "list"], &[])
        .await
        .fails(64);
    assert!(line.contains("http://"), "{line}");

    // Nothing of that changed anything.
    p.login("root", "right-password");
    let (s, v) = p.admin(Method::GET, "/subordinates", None).await;
    assert_eq!((s, v), (200, json!([])));
}

#[tokio::test]
async fn the_client_file_and_a_delegation_from_an_owner_key_file() {
    let db = TestDb::new(Backend::Sqlite).await;
    let p = Pharos::start(&db).await;
    admin(
        &p,
        &["users", "add", "root", "--new-password", "pw-from-file"],
    )
    .await
    .ok();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("admin.yaml");
    std::fs::write(
        &file,
        format!("url: {}\nuser: root\npassword: pw-from-file\n", p.base),
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let out = pharos(&["admin", "--admin-config", f, "users", "list"], &[])
        .await
        .ok();
    assert!(out.lines().nth(1).unwrap().starts_with("root"), "{out}");
    // A flag beats the file.
    let run = pharos(
        &[
            "admin",
            "--admin-config",
            f,
            "--password",
            "x",
            "users",
            "list",
        ],
        &[],
    )
    .await;
    run.fails(1);

    // The owner signs offline; the issuer stores the token with its spec, and the API checks
    // it against the owner's keys.
    let owner = pharos_shared::jose::SigningKey::generate(pharos_shared::jose::Algorithm::ES256, 0)
        .unwrap();
    let key = dir.path().join("owner.pem");
    std::fs::write(&key, owner.private_pem()).unwrap();
    let tm = "https://marks.example.org/gold";
    let owner_id = "https://owner.example.org";
    let token = pharos(
        &[
            "admin",
            "delegation",
            "create",
            "--owner",
            owner_id,
            "--issuer",
            p.entity_id(),
            "--trust-mark-type",
            tm,
            "--key",
            key.to_str().unwrap(),
            "--lifetime",
            "30d",
        ],
        &[],
    )
    .await
    .ok();
    let token = token.trim();
    let d = pharos_shared::jose::decode_unverified(token).unwrap();
    assert_eq!(d.header["typ"], "trust-mark-delegation+jwt");
    assert_eq!(d.claims["sub"], p.entity_id());

    let mut p = p;
    p.login("root", "pw-from-file");
    let owner_jwks = json!({"keys": [pharos_shared::jose::Signer::public_jwk(&owner)]});
    let ty = json!({"trust_mark_type": tm,
        "trust_mark_owner": {"entity_id": owner_id, "jwks": owner_jwks}});
    let (s, v) = p.admin(Method::POST, "/trust-marks/types", Some(ty)).await;
    assert_eq!(s, 201, "{v}");
    let spec = json!({"trust_mark_type": tm, "lifetime": 600, "delegation_jwt": token});
    let (s, v) = p
        .admin(Method::POST, "/trust-marks/issuance-spec", Some(spec))
        .await;
    assert_eq!(s, 201, "the API accepts the delegation: {v}");
    let specs = admin_as(
        &p,
        Some(("root", "pw-from-file")),
        &["trust-marks", "specs"],
    )
    .await
    .ok();
    assert!(specs.contains(tm), "{specs}");
    // A key file that is no key: usage, one line, no secret echoed.
    std::fs::write(&key, "not a key at all").unwrap();
    let line = pharos(
        &[
            "admin",
            "delegation",
            "create",
            "--owner",
            owner_id,
            "--issuer",
            "https://i.example",
            "--trust-mark-type",
            tm,
            "--key",
            key.to_str().unwrap(),
        ],
        &[],
    )
    .await
    .fails(64);
    assert!(!line.contains("not a key at all"), "{line}");
}

/// A TLS admin port: trusted through `--ca-file` only; without it the certificate is unknown
/// and the command stops with exit 69 (no answer was had).
#[tokio::test]
async fn a_tls_admin_port_is_reached_with_its_ca_file() {
    let db = TestDb::new(Backend::Sqlite).await;
    let certs = tempfile::tempdir().unwrap();
    let ca = crate::tls::ca("Pharos admin CA");
    crate::tls::write_leaf(&ca, certs.path());
    let ca_file = certs.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let dir = certs.path().to_path_buf();
    let p = Pharos::start_separate_admin(
        &db,
        |s| {
            s.api.admin.tls.enabled = true;
            s.api.admin.tls.cert = dir.join("cert.pem").display().to_string();
            s.api.admin.tls.key = dir.join("key.pem").display().to_string();
        },
        reqwest::Client::new(),
    )
    .await;
    let url = p.admin_base.clone().unwrap();
    let ca_path = ca_file.to_str().unwrap();
    let out = pharos(
        &[
            "admin",
            "--url",
            &url,
            "--ca-file",
            ca_path,
            "endpoints",
            "enable",
            "fetch",
        ],
        &[],
    )
    .await
    .ok();
    assert_eq!(out, "fetch served at /fetch\n");
    let line = pharos(&["admin", "--url", &url, "endpoints", "list"], &[])
        .await
        .fails(69);
    assert!(line.contains(&url), "{line}");
    let line = pharos(
        &[
            "admin",
            "--url",
            &url,
            "--ca-file",
            "/nonexistent/ca.pem",
            "endpoints",
            "list",
        ],
        &[],
    )
    .await
    .fails(64);
    assert!(line.contains("--ca-file"), "{line}");
}

/// The commands an operator runs day to day, each checked against what the API then holds.
#[tokio::test]
async fn keys_endpoints_requests_and_approvals_through_pharos_admin() {
    let db = TestDb::new(Backend::Sqlite).await;
    let p = Pharos::start(&db).await;

    // Key rotation policy: durations as seconds or with units; an immediate rotation.
    let v: Value = serde_json::from_str(
        &admin(
            &p,
            &[
                "--json",
                "keys",
                "rotation",
                "--enabled",
                "true",
                "--interval",
                "30d",
                "--overlap",
                "3600",
            ],
        )
        .await
        .ok(),
    )
    .unwrap();
    assert_eq!(v["enabled"], true, "{v}");
    assert_eq!(v["interval"], 30 * 86_400, "{v}");
    assert_eq!(v["overlap"], 3600, "{v}");
    let before = p.entity_configuration().await.claims["jwks"]["keys"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(admin(&p, &["keys", "rotate"]).await.ok(), "keys rotated\n");
    let keys: Value =
        serde_json::from_str(&admin(&p, &["keys", "list", "--json"]).await.ok()).unwrap();
    let listed = keys.get("keys").unwrap_or(&keys).as_array().unwrap();
    assert!(listed.len() > before, "{keys}");

    // What `keys list --json` prints is what `--jwks @file` takes (docs/cli.md).
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rp-jwks.json");
    std::fs::write(&file, keys.to_string()).unwrap();
    let at_file = format!("@{}", file.display());
    admin(
        &p,
        &[
            "subordinates",
            "add",
            "https://listed.example.org",
            "--jwks",
            &at_file,
        ],
    )
    .await
    .ok();
    let (s, sub) = p
        .admin(
            Method::GET,
            "/subordinates/https%3A%2F%2Flisted.example.org",
            None,
        )
        .await;
    assert_eq!(s, 200, "{sub}");
    assert_eq!(
        sub["jwks"]["keys"].as_array().map(Vec::len),
        Some(listed.len()),
        "{sub}"
    );
    admin(
        &p,
        &["subordinates", "remove", "https://listed.example.org"],
    )
    .await
    .ok();

    // Endpoints: enable, disable (kept, no path), enable again at another path.
    admin(&p, &["endpoints", "enable", "list"]).await.ok();
    assert_eq!(p.get("/list").await.status(), 200);
    assert_eq!(
        admin(&p, &["endpoints", "disable", "list"]).await.ok(),
        "list disabled\n"
    );
    let (_, rec) = p
        .admin(Method::GET, "/federation-endpoints/list", None)
        .await;
    assert_eq!(rec["path"], Value::Null, "{rec}");
    admin(&p, &["endpoints", "enable", "list", "--path", "/entities"])
        .await
        .ok();
    assert_eq!(p.get("/entities").await.status(), 200);

    // A pending subordinate (an enrollment request) is listed and approved.
    let jwks = json!({"keys": [crate::support::jwk("k1", None)]}).to_string();
    admin(
        &p,
        &[
            "subordinates",
            "add",
            "https://rp.example.org",
            "--status",
            "pending",
            "--jwks",
            &jwks,
        ],
    )
    .await
    .ok();
    let requests = admin(&p, &["subordinates", "requests"]).await.ok();
    assert!(requests.contains("https://rp.example.org"), "{requests}");
    admin(&p, &["subordinates", "approve", "https://rp.example.org"])
        .await
        .ok();
    let (_, sub) = p
        .admin(
            Method::GET,
            &format!("/subordinates/{}", enc("https://rp.example.org")),
            None,
        )
        .await;
    assert_eq!(sub["status"], "active", "{sub}");
    assert_eq!(
        admin(&p, &["subordinates", "requests"])
            .await
            .ok()
            .lines()
            .count(),
        1
    );

    // A pending trust mark request is listed and approved; blocking it is seen too.
    let tm = "https://marks.example.org/silver";
    let (s, v) = p
        .admin(
            Method::POST,
            "/trust-marks/issuance-spec",
            Some(json!({"trust_mark_type": tm, "lifetime": 600})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let subjects = format!("/trust-marks/issuance-spec/{}/subjects", enc(tm));
    let body = json!({"entity_id": "https://rp.example.org", "status": "pending"});
    let (s, v) = p.admin(Method::POST, &subjects, Some(body)).await;
    assert_eq!(s, 201, "{v}");
    let pending = admin(&p, &["trust-marks", "requests", tm]).await.ok();
    assert!(
        pending.contains("https://rp.example.org") && pending.contains("pending"),
        "{pending}"
    );
    admin(
        &p,
        &["trust-marks", "approve", tm, "https://rp.example.org"],
    )
    .await
    .ok();
    let (_, list) = p.admin(Method::GET, &subjects, None).await;
    assert_eq!(list[0]["status"], "active", "{list}");
    admin(&p, &["trust-marks", "block", tm, "https://rp.example.org"])
        .await
        .ok();
    let (_, list) = p.admin(Method::GET, &subjects, None).await;
    assert_eq!(list[0]["status"], "blocked", "{list}");

    // Removal.
    admin(&p, &["subordinates", "remove", "https://rp.example.org"])
        .await
        .ok();
    let (_, all) = p.admin(Method::GET, "/subordinates", None).await;
    assert_eq!(all, json!([]));
}
