//! Running an operator program for a `cmd` check: directly (no shell, so nothing in the
//! entity's data is ever interpreted), its standard input the Entity Configuration's claims,
//! written and then closed; standard output and error read concurrently (so a chatty program
//! cannot block on a full pipe) and kept up to [`OUTPUT_LIMIT`] each; killed when its timeout
//! passes or when the check is dropped.
//!
//! Its environment is cleared first: Pharos's own holds database DSNs with passwords and
//! other secrets, and a checker is often a script that logs or forwards what it has. It gets
//! [`PROGRAM_ENV_ALLOWED`], the variables its configuration names, and those it sets.

use std::process::Stdio;

use pharos_shared::checks::{PROGRAM_ENV_ALLOWED, ProcessCall, ProcessOutcome};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

/// Bytes of standard output or error kept per run; the rest is read and dropped.
pub const OUTPUT_LIMIT: usize = 64 * 1024;

/// Runs `call` (see the module documentation).
pub async fn run(call: ProcessCall) -> ProcessOutcome {
    let passed = PROGRAM_ENV_ALLOWED
        .iter()
        .copied()
        .chain(call.inherit.iter().map(String::as_str))
        .filter_map(|k| std::env::var_os(k).map(|v| (k, v)));
    let mut child = match Command::new(&call.path)
        .args(&call.args)
        .env_clear()
        .envs(passed)
        .envs(call.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return ProcessOutcome::CannotStart(format!("{}: {e}", call.path)),
    };
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let input = call.stdin;
    let finished = async {
        let write = async {
            if let Some(mut pipe) = stdin {
                // A program that does not read its input may close it early: not an error.
                let _ = pipe.write_all(&input).await;
                let _ = pipe.shutdown().await;
            }
        };
        let (_, _, err, status) =
            tokio::join!(write, limited(stdout), limited(stderr), child.wait());
        (status, err)
    };
    match tokio::time::timeout(call.timeout, finished).await {
        Ok((Ok(status), stderr)) => ProcessOutcome::Exited {
            code: status.code(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        },
        Ok((Err(e), _)) => ProcessOutcome::CannotStart(format!("{}: {e}", call.path)),
        // `child` is dropped on return: kill_on_drop ends the program.
        Err(_) => ProcessOutcome::TimedOut,
    }
}

/// Reads `pipe` to its end, keeping the first [`OUTPUT_LIMIT`] bytes.
async fn limited(pipe: Option<impl AsyncRead + Unpin>) -> Vec<u8> {
    let Some(mut pipe) = pipe else {
        return Vec::new();
    };
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return kept,
            Ok(n) => {
                let room = OUTPUT_LIMIT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
#[path = "process_tests.rs"]
pub(crate) mod tests;
