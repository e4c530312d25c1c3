//! `pharos admin`: a command-line client of the public Admin API, so that operators manage a
//! running Pharos without writing curl by hand (lighthouse ships `lhcli` for this).
//!
//! It holds no privilege of its own: every command is one or a few Admin API calls with the
//! operator's credentials. Exit statuses are a contract for scripts: 0 done, 1 the API refused
//! (its `error_description` printed on one line), 64 bad usage (clap's errors included), 69 the
//! URL cannot be reached.

pub mod client;
pub mod commands;
pub mod delegation;
pub mod table;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use client::{Client, Target};

/// Exit status: the Admin API refused the request.
pub const EXIT_REFUSED: u8 = 1;
/// Exit status: bad arguments or local input (EX_USAGE).
pub const EXIT_USAGE: u8 = 64;
/// Exit status: the Admin API could not be reached (EX_UNAVAILABLE).
pub const EXIT_UNAVAILABLE: u8 = 69;

/// Why a command did not succeed; each kind has its own exit status.
#[derive(Debug)]
pub enum Failure {
    /// Bad arguments or unreadable local input (exit 64).
    Usage(String),
    /// The API answered with an error (exit 1).
    Refused {
        /// HTTP status of the answer.
        status: u16,
        /// The API's `error_description`, one line.
        message: String,
    },
    /// No answer: connection refused, DNS, TLS, timeout (exit 69).
    Unreachable(String),
}

impl Failure {
    /// Prints the one-line message on stderr and returns the exit status.
    pub fn report(&self) -> ExitCode {
        match self {
            Failure::Usage(m) => {
                eprintln!("error: {m}");
                ExitCode::from(EXIT_USAGE)
            }
            Failure::Refused { status, message } => {
                eprintln!("error: {message} (HTTP {status})");
                ExitCode::from(EXIT_REFUSED)
            }
            Failure::Unreachable(m) => {
                eprintln!("error: {m}");
                ExitCode::from(EXIT_UNAVAILABLE)
            }
        }
    }
}

/// How to reach the Admin API: flags, else environment, else the client file.
#[derive(Debug, Args, Clone, Default)]
pub struct Connection {
    /// Base URL of the listener serving the Admin API (the main port, or the admin port).
    #[arg(long, env = "PHAROS_ADMIN_URL", global = true)]
    pub url: Option<String>,
    /// Admin user name (HTTP Basic).
    #[arg(long, env = "PHAROS_ADMIN_USER", global = true)]
    pub user: Option<String>,
    /// Admin password (prefer the environment variable: arguments are visible to other users).
    #[arg(
        long,
        env = "PHAROS_ADMIN_PASSWORD",
        global = true,
        hide_env_values = true
    )]
    pub password: Option<String>,
    /// PEM file of the CA certificates to trust for a TLS admin port (only these are trusted).
    #[arg(long, env = "PHAROS_ADMIN_CA_FILE", global = true)]
    pub ca_file: Option<PathBuf>,
    /// Client file (YAML or JSON) with `url`, `user`, `password`, `ca_file`; flags and
    /// environment variables take precedence.
    #[arg(long, env = "PHAROS_ADMIN_CONFIG", global = true)]
    pub admin_config: Option<PathBuf>,
    /// The hosted entity to manage (its number, or its entity identifier); absent: the
    /// entity configured in `entity_id`. Users and hosted entities belong to the deployment
    /// and ignore it.
    #[arg(long, env = "PHAROS_ADMIN_ENTITY", global = true)]
    pub entity: Option<String>,
}

/// The members of a client file (`--admin-config`).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientFile {
    url: Option<String>,
    user: Option<String>,
    password: Option<String>,
    ca_file: Option<PathBuf>,
}

impl Connection {
    /// The target these settings name; no URL at all is a usage error.
    pub fn target(&self) -> Result<Target, Failure> {
        let file = match &self.admin_config {
            Some(p) => read_client_file(p)?,
            None => ClientFile::default(),
        };
        let url = self.url.clone().or(file.url).ok_or_else(|| {
            Failure::Usage(
                "no Admin API URL: give --url, PHAROS_ADMIN_URL or --admin-config".into(),
            )
        })?;
        Ok(Target {
            url,
            user: self.user.clone().or(file.user),
            password: self.password.clone().or(file.password),
            ca_file: self.ca_file.clone().or(file.ca_file),
            bootstrap_token: None,
            entity: self.entity.clone(),
        })
    }
}

fn read_client_file(path: &std::path::Path) -> Result<ClientFile, Failure> {
    let bad = |e: String| Failure::Usage(format!("client file {}: {e}", path.display()));
    if !path.is_file() {
        return Err(bad("no such file".into()));
    }
    config::Config::builder()
        .add_source(config::File::from(path))
        .build()
        .and_then(|c| c.try_deserialize::<ClientFile>())
        .map_err(|e| bad(client::one_line(&e.to_string())))
}

/// `pharos admin` arguments.
#[derive(Debug, Args)]
pub struct AdminArgs {
    /// Where and as whom.
    #[command(flatten)]
    pub connection: Connection,
    /// Print the API's JSON instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    /// The command.
    #[command(subcommand)]
    pub command: commands::AdminCommand,
}

/// The single-threaded runtime of the commands that talk to an Admin API (`admin`, `setup`,
/// `explain`); `None` (after saying why) when it cannot start.
pub fn runtime() -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| eprintln!("error: cannot start runtime: {e}"))
        .ok()
}

/// Runs one `pharos admin` command and returns its exit status.
pub fn run(args: AdminArgs) -> ExitCode {
    let Some(rt) = crate::cli_admin::runtime() else {
        return ExitCode::FAILURE;
    };
    let result = rt.block_on(async {
        // Offline commands need no API at all.
        if let commands::AdminCommand::Delegation(d) = &args.command {
            return delegation::run(d, args.json);
        }
        let client = Client::new(args.connection.target()?)?;
        commands::run(&client, args.command, args.json).await
    });
    match result {
        Ok(out) => {
            print!("{out}");
            ExitCode::SUCCESS
        }
        Err(f) => f.report(),
    }
}

/// Seconds given bare or as a duration (`30d`, `12h`).
pub fn seconds(name: &str, s: &str) -> Result<u64, Failure> {
    if let Ok(n) = s.parse::<u64>() {
        return Ok(n);
    }
    humantime::parse_duration(s)
        .map(|d| d.as_secs())
        .map_err(|_| {
            Failure::Usage(format!(
                "{name} {s:?}: expected seconds or a duration such as 12h or 30d"
            ))
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_seconds() {
        assert_eq!(seconds("x", "3600").unwrap(), 3600);
        assert_eq!(seconds("x", "1d").unwrap(), 86_400);
        assert!(matches!(seconds("x", "soon"), Err(Failure::Usage(_))));
    }
}
