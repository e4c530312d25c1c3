//! `signing.kms: pkcs11` against SoftHSM2: Pharos generates its key on the token and signs its
//! Entity Configuration there; the private key never leaves the token.
//!
//! SoftHSM2 reads its configuration (the token directory) from `SOFTHSM2_CONF` when the module
//! is loaded. Setting environment variables in a running test process is unsafe, so the outer
//! test prepares a token in a temporary directory and re-runs this test binary, filtered to the
//! inner test, with `SOFTHSM2_CONF` set for the child only.
//!
//! Without SoftHSM2 the test prints a notice and passes, unless `PHAROS_REQUIRE_SOFTHSM=1` (set
//! by `.ci/run`, which installs it), which turns its absence into a failure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::object::{Attribute, AttributeType, ObjectClass};
use pharos_shared::config::Kms;
use pharos_shared::time::SystemClock;
use reqwest::Method;

use crate::support::{Backend, Pharos, TestDb};

const CHILD: &str = "PHAROS_TEST_PKCS11_CHILD";
const MODULES: [&str; 2] = [
    "/usr/lib/softhsm/libsofthsm2.so",
    "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
];
const LABEL: &str = "pharos-test";
const PIN: &str = "1234";

fn module() -> Option<PathBuf> {
    MODULES.iter().map(PathBuf::from).find(|p| p.exists())
}

fn init_token(dir: &Path) -> PathBuf {
    let tokens = dir.join("tokens");
    std::fs::create_dir_all(&tokens).unwrap();
    let conf = dir.join("softhsm2.conf");
    std::fs::write(
        &conf,
        format!(
            "directories.tokendir = {}\nobjectstore.backend = file\nlog.level = ERROR\n",
            tokens.display()
        ),
    )
    .unwrap();
    let out = Command::new("softhsm2-util")
        .args([
            "--init-token",
            "--free",
            "--label",
            LABEL,
            "--pin",
            PIN,
            "--so-pin",
            "5678",
        ])
        .env("SOFTHSM2_CONF", &conf)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    conf
}

#[test]
fn pkcs11_signs_the_entity_configuration_inside_softhsm2() {
    if std::env::var_os(CHILD).is_some() {
        return; // we are the child; the inner test does the work
    }
    let (Some(_), true) = (
        module(),
        Command::new("softhsm2-util")
            .arg("--version")
            .output()
            .is_ok(),
    ) else {
        assert!(
            std::env::var("PHAROS_REQUIRE_SOFTHSM").map_or(true, |v| v != "1"),
            "softhsm2 is required (PHAROS_REQUIRE_SOFTHSM=1): apt-get install softhsm2"
        );
        println!(
            "NOTICE: softhsm2 is not installed; PKCS#11 test skipped (apt-get install softhsm2)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let conf = init_token(dir.path());
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "pkcs11::inner_pkcs11_round_trip",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .env("SOFTHSM2_CONF", &conf)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn inner_pkcs11_round_trip() {
    if std::env::var_os(CHILD).is_none() {
        return; // run only through the outer test, which sets SOFTHSM2_CONF
    }
    let module = module().unwrap();
    let db = TestDb::new(Backend::Sqlite).await;
    let p = Pharos::start_with(
        &db,
        |s| {
            s.signing.kms = Kms::Pkcs11;
            s.signing.pkcs11.module_path = module.display().to_string();
            s.signing.pkcs11.token_label = LABEL.into();
            s.signing.pkcs11.pin = PIN.into();
            s.signing.pkcs11.label_prefix = "pharos-".into();
        },
        Arc::new(SystemClock),
    )
    .await;
    // Signed on the token, verified with the published key.
    let ec = p.entity_configuration().await;
    assert_eq!(ec.header["alg"], "ES256");
    let kid = ec.header["kid"].as_str().unwrap().to_string();
    let (_, kms) = p.admin(Method::GET, "/kms", None).await;
    assert_eq!(kms["kms"], "pkcs11");

    // The database holds no private key.
    let pool = db.pool().await;
    let pem: Option<String> =
        sqlx::query_scalar(pool.sql("SELECT private_pem FROM signing_keys WHERE kid = ?"))
            .bind(&kid)
            .fetch_one(pool.pool())
            .await
            .unwrap();
    assert!(pem.is_none());

    // Rotation generates the next key on the token too.
    let (s, _) = p.admin(Method::POST, "/kms/rotate", None).await;
    assert_eq!(s, 202);
    let ec2 = p.entity_configuration().await;
    let kid2 = ec2.header["kid"].as_str().unwrap().to_string();
    assert_ne!(kid2, kid);
    p.stop().await;

    // On the token: the private keys are sensitive, never extractable, and their value
    // cannot be read.
    let ctx = Pkcs11::new(&module).unwrap();
    let _ = ctx.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK));
    let slot = ctx
        .get_slots_with_token()
        .unwrap()
        .into_iter()
        .find(|s| ctx.get_token_info(*s).unwrap().label().trim() == LABEL);
    let session = ctx.open_ro_session(slot.unwrap()).unwrap();
    session
        .login(
            cryptoki::session::UserType::User,
            Some(&PIN.to_string().into()),
        )
        .unwrap();
    for k in [&kid, &kid2] {
        let template = [
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::Label(format!("pharos-{k}").into_bytes()),
        ];
        let handle = session
            .find_objects(&template)
            .unwrap()
            .pop()
            .expect("key on the token");
        let attrs = session
            .get_attributes(
                handle,
                &[
                    AttributeType::Sensitive,
                    AttributeType::Extractable,
                    AttributeType::Value,
                ],
            )
            .unwrap();
        assert!(attrs.contains(&Attribute::Sensitive(true)), "{attrs:?}");
        assert!(attrs.contains(&Attribute::Extractable(false)), "{attrs:?}");
        assert!(
            !attrs.iter().any(|a| matches!(a, Attribute::Value(_))),
            "{attrs:?}"
        );
    }
}
