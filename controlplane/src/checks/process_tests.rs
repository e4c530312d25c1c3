//! The program runner with real programs: `#!/bin/sh` scripts written into a temp dir.

use std::time::Duration;

use pharos_shared::checks::{ProcessCall, ProcessOutcome};

use super::{OUTPUT_LIMIT, run};

/// Writes an executable `#!/bin/sh` script with `body` and returns its path.
pub(crate) fn script(dir: &tempfile::TempDir, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.path().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

fn call(path: String) -> ProcessCall {
    ProcessCall {
        path,
        args: vec!["one two".into()],
        env: vec![("ENTITY_ID".into(), "https://leaf.example".into())],
        inherit: Vec::new(),
        stdin: br#"{"sub":"https://leaf.example"}"#.to_vec(),
        timeout: Duration::from_secs(10),
    }
}

#[tokio::test]
async fn the_program_gets_arguments_environment_and_input() {
    let dir = tempfile::tempdir().unwrap();
    // Succeeds only if everything arrived as sent (the argument unsplit: no shell).
    let s = script(
        &dir,
        "ok.sh",
        r#"[ "$#" = 1 ] && [ "$1" = "one two" ] || exit 10
[ "$ENTITY_ID" = "https://leaf.example" ] || exit 11
[ "$(cat)" = '{"sub":"https://leaf.example"}' ] || exit 12
exit 0"#,
    );
    let got = run(call(s)).await;
    assert_eq!(
        got,
        ProcessOutcome::Exited {
            code: Some(0),
            stderr: String::new()
        }
    );
}

#[tokio::test]
async fn exit_codes_stderr_timeouts_and_missing_programs() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(&dir, "no.sh", "echo 'not in the federation' >&2\nexit 3");
    let ProcessOutcome::Exited { code, stderr } = run(call(s)).await else {
        panic!("must exit")
    };
    assert_eq!(
        (code, stderr.as_str()),
        (Some(3), "not in the federation\n")
    );

    let s = script(&dir, "slow.sh", "sleep 30");
    let mut c = call(s);
    c.timeout = Duration::from_millis(300);
    assert_eq!(run(c).await, ProcessOutcome::TimedOut);

    let missing = dir.path().join("absent").display().to_string();
    assert!(matches!(
        run(call(missing)).await,
        ProcessOutcome::CannotStart(_)
    ));
}

#[tokio::test]
async fn output_is_cut_and_unread_input_is_no_error() {
    let dir = tempfile::tempdir().unwrap();
    // 200 KiB on each stream, input never read.
    let s = script(
        &dir,
        "loud.sh",
        "head -c 204800 /dev/zero | tr '\\0' e >&2\nhead -c 204800 /dev/zero\nexit 1",
    );
    let mut c = call(s);
    c.stdin = vec![b'x'; 1 << 20];
    let ProcessOutcome::Exited { code, stderr } = run(c).await else {
        panic!("must exit")
    };
    assert_eq!(code, Some(1));
    assert_eq!(stderr.len(), OUTPUT_LIMIT);
    assert!(stderr.bytes().all(|b| b == b'e'));
}

/// Pharos's environment holds secrets (database DSNs with passwords): a program sees only the
/// allowed variables, the ones its configuration names, and the ones it sets (issue 31). The
/// secret must be in this process's environment, which a test may not change (`set_var` is
/// unsafe, and unsafe code is forbidden): the test runs itself again with it set.
#[tokio::test]
async fn the_program_sees_no_secret_of_the_service() {
    const SECRET: &str = "PHAROS_TEST_SECRET_DSN";
    if std::env::var_os(SECRET).is_none() {
        let me = std::env::current_exe().unwrap();
        let out = tokio::process::Command::new(me)
            .args([
                "checks::process::tests::the_program_sees_no_secret_of_the_service",
                "--exact",
                "--nocapture",
            ])
            .env(SECRET, "postgres://u:hunter2@db/x")
            .env("PHAROS_TEST_NAMED", "passed-through")
            .output()
            .await
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{said}");
        assert!(said.contains("1 passed"), "{said}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = script(&dir, "env.sh", "env >&2\nexit 1");
    let mut c = call(s);
    c.inherit = vec!["PHAROS_TEST_NAMED".into(), "PHAROS_TEST_UNSET".into()];
    let ProcessOutcome::Exited { stderr, .. } = run(c).await else {
        panic!("must exit")
    };
    assert!(!stderr.contains("hunter2"), "{stderr}");
    assert!(!stderr.contains(SECRET), "{stderr}");
    assert!(
        stderr.contains("PHAROS_TEST_NAMED=passed-through"),
        "{stderr}"
    );
    assert!(
        stderr.contains("ENTITY_ID=https://leaf.example"),
        "{stderr}"
    );
    assert!(!stderr.contains("PHAROS_TEST_UNSET"), "{stderr}");
    if std::env::var_os("PATH").is_some() {
        assert!(stderr.contains("PATH="), "{stderr}");
    }
}
