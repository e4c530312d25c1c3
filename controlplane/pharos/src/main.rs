//! The `pharos` binary: the composition root's command line.

// Unit tests measure real time and sleep on purpose (clippy.toml bans both elsewhere).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use pharos::app::App;
use pharos::traces::Traces;
use pharos_shared::config::{self, Settings};
use pharos_shared::time::SystemClock;

/// Exit status for configuration errors and bad arguments (EX_USAGE).
const EXIT_CONFIG: u8 = 64;

#[derive(Parser)]
#[command(name = "pharos", version, about = "OpenID Federation entity service")]
struct Cli {
    /// Configuration file (YAML); also `SVC_CONFIG_FILE`.
    #[arg(long, short = 'c', global = true, env = "SVC_CONFIG_FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the service (the default).
    Serve,
    /// Print the effective configuration with secrets redacted, or the problems found.
    CheckConfig,
    /// Write a consistent copy of the embedded SQLite database to a new file (mode 0600) while
    /// the service runs; PostgreSQL and MariaDB are backed up with pg_dump / mariadb-dump.
    Backup(pharos_controlplane::backup::BackupArgs),
    /// Request statistics from the configured database.
    Stats(pharos_controlplane::stats::cli::StatsArgs),
    /// Move the trust anchors and endpoints of a lighthouse 0.20/0.21 file into the database.
    Config2db(pharos::config2db::Args),
    /// Admin API client: subordinates, trust marks, endpoints, keys, users, … of a running
    /// Pharos (exit status 0 ok, 1 refused by the API, 64 usage, 69 unreachable).
    Admin(pharos::cli_admin::AdminArgs),
    /// Explain how a running Pharos resolves an entity, step by step (its Admin API's
    /// `/explain`; exit status 0 resolved, 2 does not resolve, else as `admin`).
    Explain(pharos::explain::ExplainArgs),
    /// First-run wizard: role, endpoints and first admin user of a running Pharos.
    Setup(pharos::setup::SetupArgs),
    /// Metadata policy tools for operators.
    Policy {
        #[command(subcommand)]
        action: PolicyCommand,
    },
}

#[derive(Subcommand)]
enum PolicyCommand {
    /// Read `{"policies":[superior,…,immediate],"metadata":{…}}` on stdin; print the merged
    /// policy and the resolved metadata, or exit 1 with `{"error","error_description"}`.
    Resolve,
}

fn load(path: Option<&PathBuf>) -> Result<(Settings, Vec<String>), ExitCode> {
    let env: Vec<(String, String)> = std::env::vars().collect();
    match config::load(path.map(|p| p.as_path()), &env) {
        Ok(l) => Ok((l.settings, l.warnings)),
        Err(e) => {
            eprintln!("{e}");
            Err(ExitCode::from(EXIT_CONFIG))
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // Help and version are not errors; bad arguments exit with EX_USAGE.
            if !e.use_stderr() {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            usage_error(&e);
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    // Offline tools and Admin API clients need no configuration: a broken config file must
    // not stop a preview, and a client runs on any machine. The migration reads a legacy
    // file, which `config::load` refuses by design.
    let cli = match cli.command {
        Some(Command::Policy { action }) => {
            return match action {
                PolicyCommand::Resolve => policy_resolve(),
            };
        }
        Some(Command::Admin(args)) => return pharos::cli_admin::run(args),
        Some(Command::Explain(args)) => return pharos::explain::run(args),
        Some(Command::Setup(args)) => return pharos::setup::run(args),
        Some(Command::Config2db(args)) => {
            let env: Vec<(String, String)> = std::env::vars().collect();
            return pharos::config2db::run(cli.config.as_deref(), &args, &env);
        }
        command => Cli { command, ..cli },
    };
    let (settings, warnings) = match load(cli.config.as_ref()) {
        Ok(s) => s,
        Err(code) => return code,
    };
    match cli.command.unwrap_or(Command::Serve) {
        Command::CheckConfig => {
            for w in &warnings {
                eprintln!("warning: {w}");
            }
            let missing = pharos::preflight::problems(&settings);
            if !missing.is_empty() {
                eprintln!("{}", pharos_shared::Error::Config(missing));
                return ExitCode::from(EXIT_CONFIG);
            }
            match serde_json::to_string_pretty(&settings.redacted()) {
                Ok(s) => {
                    println!("{s}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("cannot render configuration: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Serve => serve(settings, warnings),
        Command::Stats(args) => {
            for w in &warnings {
                eprintln!("warning: {w}");
            }
            let now = pharos_shared::time::Clock::now(&SystemClock);
            pharos_controlplane::stats::cli::run(&settings, args, now)
        }
        Command::Backup(args) => {
            for w in &warnings {
                eprintln!("warning: {w}");
            }
            pharos_controlplane::backup::run(&settings, args)
        }
        Command::Policy { .. }
        | Command::Config2db(_)
        | Command::Admin(_)
        | Command::Explain(_)
        | Command::Setup(_) => ExitCode::SUCCESS,
    }
}

/// Prints a bad command line as one line (scripts log one line per failure), with a pointer
/// to `--help`; a missing subcommand shows the help it would have asked for.
fn usage_error(e: &clap::Error) {
    use clap::error::ErrorKind;
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let _ = e.print();
        return;
    }
    // The message is the first paragraph (a list of missing arguments continues it); the
    // usage block after it is what `--help` shows in full.
    let text = e.render().to_string();
    let message: Vec<&str> = text
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    eprintln!("{}{} (see --help)", message.join(" "), did_you_mean(e));
}

/// clap's suggestions for a mistyped subcommand, flag or value (its "tip" paragraph, which the
/// one-line form above leaves out), as `; did you mean 'x'?`.
fn did_you_mean(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let suggestions: Vec<String> = [
        ContextKind::SuggestedSubcommand,
        ContextKind::SuggestedArg,
        ContextKind::SuggestedValue,
    ]
    .into_iter()
    .filter_map(|k| e.get(k))
    .flat_map(|v| match v {
        ContextValue::String(s) => vec![s.clone()],
        ContextValue::Strings(v) => v.clone(),
        _ => Vec::new(),
    })
    .map(|s| format!("'{s}'"))
    .collect();
    if suggestions.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", suggestions.join(" or "))
    }
}

/// `pharos policy resolve`: the output of [`pharos_shared::policy::preview`] as JSON on
/// stdout; on failure the federation error object on stdout and exit status 1.
fn policy_resolve() -> ExitCode {
    use pharos_shared::Error;
    let mut input = String::new();
    if let Err(e) = std::io::Read::read_to_string(&mut std::io::stdin(), &mut input) {
        eprintln!("cannot read stdin: {e}");
        return ExitCode::FAILURE;
    }
    let failed = |code: &str, msg: String| {
        let v = serde_json::json!({"error": code, "error_description": msg});
        (v, ExitCode::FAILURE)
    };
    let (out, code) = match serde_json::from_str::<serde_json::Value>(&input) {
        // Not a policy problem: the input never got as far as being read as one.
        Err(e) => failed("invalid_request", format!("the input is not JSON: {e}")),
        Ok(v) => match pharos_shared::policy::preview(&v) {
            Ok(v) => (v, ExitCode::SUCCESS),
            Err(Error::InvalidMetadata(m)) => failed("invalid_metadata", m),
            Err(Error::InvalidPolicy(m)) => failed("invalid_policy", m),
            Err(other) => failed("invalid_policy", other.to_string()),
        },
    };
    match serde_json::to_string_pretty(&out) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("cannot render the result: {e}"),
    }
    code
}

fn serve(settings: Settings, warnings: Vec<String>) -> ExitCode {
    // Before logging (which may create a log file) and before the database: a file named in
    // the configuration that cannot be read is a configuration error, reported like one.
    let missing = pharos::preflight::problems(&settings);
    if !missing.is_empty() {
        eprintln!("{}", pharos_shared::Error::Config(missing));
        return ExitCode::from(EXIT_CONFIG);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Inside the runtime: the gRPC exporter's channel spawns its worker on it.
    let traces = match pharos::traces::wanted(&settings).and_then(|wanted| {
        let _in_runtime = rt.enter();
        wanted.as_ref().map(Traces::start).transpose()
    }) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    // Held until the end of `serve` so that buffered file output is flushed on exit.
    let _log_guards = match pharos::logging::init(&settings, traces.as_ref()) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    for w in &warnings {
        tracing::warn!("{w}");
    }
    let code = rt.block_on(async move {
        let signalled = tokio_util::sync::CancellationToken::new();
        let on_signal = signalled.clone();
        tokio::spawn(async move {
            shutdown_signal().await;
            tracing::info!("shutting down");
            on_signal.cancel();
        });
        let listeners = match pharos::startup::wait_for_database(&settings, &signalled).await {
            Ok(l) => l,
            Err(_) if signalled.is_cancelled() => return ExitCode::SUCCESS,
            Err(e) => {
                tracing::error!(error = %e, "pharos could not start");
                return ExitCode::FAILURE;
            }
        };
        let app = match App::start(settings, Arc::new(SystemClock), listeners).await {
            Ok(app) => app,
            Err(e) => {
                tracing::error!(error = %e, "pharos could not start");
                return ExitCode::FAILURE;
            }
        };
        let stop = app.shutdown_token();
        tokio::spawn(async move {
            signalled.cancelled().await;
            stop.cancel();
        });
        app.run_until_stopped().await;
        ExitCode::SUCCESS
    });
    if let Some(t) = traces {
        // The runtime is still there for the gRPC channel; this thread may block.
        let _in_runtime = rt.enter();
        t.shutdown();
    }
    code
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}
