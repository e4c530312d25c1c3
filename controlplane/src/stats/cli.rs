//! `pharos stats …`: the statistics reports on the command line, read from the configured
//! database (the same queries and JSON bodies as the Admin API), plus `export`, `purge` and
//! `aggregate`. Bad arguments exit with 64 (EX_USAGE) before the database is opened.

use std::io::{IsTerminal as _, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use pharos_shared::config::Settings;
use serde::Serialize;

use super::export::{self, Format};
use super::params::{self, Bound, Query};
use super::query::{Count, Top};
use super::{aggregate, report};
use crate::db::Db;
use crate::leadership::Fence;

/// Exit status for bad arguments (EX_USAGE).
pub const EXIT_USAGE: u8 = 64;

/// `pharos stats` arguments.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// What to show or do.
    #[command(subcommand)]
    pub action: StatsAction,
    /// Start of range (RFC 3339 or YYYY-MM-DD); default 24 hours ago.
    #[arg(long, global = true)]
    pub from: Option<String>,
    /// End of range (RFC 3339 or YYYY-MM-DD, a date meaning its end); default now.
    #[arg(long, global = true)]
    pub to: Option<String>,
    /// Entries of a top list (1–100, default 10).
    #[arg(long, global = true)]
    pub limit: Option<String>,
    /// Time-series bucket: minute, hour (default), day, week, month.
    #[arg(long, global = true)]
    pub interval: Option<String>,
    /// Only this endpoint.
    #[arg(long, global = true)]
    pub endpoint: Option<String>,
    /// Output: table (default; csv for export), json or csv.
    #[arg(long, global = true)]
    pub format: Option<String>,
    /// Write to this file instead of stdout.
    #[arg(long, short = 'o', global = true)]
    pub output: Option<PathBuf>,
}

/// `pharos stats` subcommands.
#[derive(Debug, Subcommand)]
pub enum StatsAction {
    /// Totals, errors, latency percentiles, per status and per endpoint.
    Summary,
    /// Top endpoints, user-agents, clients, countries or params.
    Top {
        /// endpoints, user-agents, clients, countries or params.
        what: String,
    },
    /// Requests, errors and average latency per interval.
    Timeseries,
    /// Latency percentiles.
    Latency,
    /// Daily aggregates.
    Daily,
    /// The raw request records (csv or json lines).
    Export,
    /// Deletes records and aggregates past their retention.
    Purge {
        /// Only count what would be deleted.
        #[arg(long)]
        dry_run: bool,
    },
    /// Computes one day's aggregates (default yesterday, UTC).
    Aggregate {
        /// The day, YYYY-MM-DD.
        #[arg(long)]
        date: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Out {
    Table,
    Json,
    Csv,
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("pharos stats: {msg}");
    ExitCode::from(EXIT_USAGE)
}

/// Runs `pharos stats` with `settings` at `now`.
pub fn run(settings: &Settings, args: StatsArgs, now: i64) -> ExitCode {
    let mut pairs = Vec::new();
    for (k, v) in [
        ("from", &args.from),
        ("to", &args.to),
        ("limit", &args.limit),
        ("interval", &args.interval),
        ("endpoint", &args.endpoint),
    ] {
        if let Some(v) = v {
            pairs.push((k.to_string(), v.clone()));
        }
    }
    let q = match params::parse(&pairs, now, &[]) {
        Ok(q) => q,
        Err(e) => return usage(format!("--{e}")),
    };
    let export_format = matches!(args.action, StatsAction::Export);
    let out = match (args.format.as_deref(), export_format) {
        (None, false) | (Some("table"), false) => Out::Table,
        (None, true) | (Some("csv"), _) => Out::Csv,
        (Some("json"), _) => Out::Json,
        (Some("table"), true) => return usage("--format: export writes csv or json"),
        (Some(f), _) => return usage(format!("--format: {f:?} is not table, json or csv")),
    };
    let top = match &args.action {
        StatsAction::Top { what } => match Top::parse(what) {
            Some(t) => Some(t),
            None => {
                return usage(format!(
                    "top: {what:?} is not endpoints, user-agents, clients, countries or params"
                ));
            }
        },
        _ => None,
    };
    let day = match &args.action {
        StatsAction::Aggregate { date: Some(d) } => match params::parse_time(d, Bound::From) {
            Some(t) if params::date(t) == *d => aggregate::day_start(t),
            _ => return usage(format!("--date: {d:?} is not YYYY-MM-DD")),
        },
        _ => aggregate::day_start(now) - 86_400,
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = rt.block_on(async move {
        let db = Db::connect(&settings.storage_url(), 2).await?;
        db.migrate().await?;
        let mut sink = Sink::open(args.output.as_ref())?;
        match args.action {
            StatsAction::Summary => show(&mut sink, out, &report::summary(&db, &q).await?)?,
            StatsAction::Top { .. } => {
                let kind = top.unwrap_or(Top::Endpoints);
                let (body, list) = report::top(&db, &q, kind).await?;
                match out {
                    Out::Json => show(&mut sink, out, &body)?,
                    _ => counts(&mut sink, out, &list)?,
                }
            }
            StatsAction::Timeseries => show(&mut sink, out, &report::timeseries(&db, &q).await?)?,
            StatsAction::Latency => show(&mut sink, out, &report::latency(&db, &q).await?)?,
            StatsAction::Daily => show(&mut sink, out, &report::daily(&db, &q).await?)?,
            StatsAction::Export => {
                let f = if out == Out::Json {
                    Format::Json
                } else {
                    Format::Csv
                };
                export_to(&db, q, f, &mut sink).await?;
            }
            StatsAction::Purge { dry_run } => {
                let r = &settings.stats.retention;
                let (records, aggregates) = if dry_run {
                    let (a, b) = aggregate::purge_bounds(now, r);
                    let (x, y) = crate::db::stats::count_purgeable(&db, a, b).await?;
                    (x.max(0) as u64, y.max(0) as u64)
                } else {
                    aggregate::purge(&db, now, r, &Fence::any_replica()).await?
                };
                let verb = if dry_run { "would delete" } else { "deleted" };
                sink.line(&format!(
                    "{verb} {records} request records and {aggregates} daily aggregate rows"
                ))?;
            }
            StatsAction::Aggregate { .. } => {
                let bar = spinner(&format!("aggregating {}", params::date(day)));
                let rows = aggregate::aggregate_day(&db, day, &Fence::any_replica()).await?;
                if let Some(b) = bar {
                    b.finish_and_clear();
                }
                sink.line(&format!("{}: {rows} aggregate rows", params::date(day)))?;
            }
        }
        sink.flush()?;
        Ok::<_, crate::Error>(())
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pharos stats: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Stdout or the `--output` file.
struct Sink(Box<dyn Write>);

impl Sink {
    fn open(path: Option<&PathBuf>) -> crate::Result<Self> {
        Ok(Self(match path {
            Some(p) => Box::new(std::io::BufWriter::new(std::fs::File::create(p).map_err(
                |source| crate::Error::OutputFile {
                    flag: "--output",
                    path: p.to_path_buf(),
                    source,
                },
            )?)),
            None => Box::new(std::io::BufWriter::new(std::io::stdout())),
        }))
    }

    fn line(&mut self, s: &str) -> crate::Result<()> {
        writeln!(self.0, "{s}").map_err(io)
    }

    fn flush(&mut self) -> crate::Result<()> {
        self.0.flush().map_err(io)
    }
}

fn io(e: std::io::Error) -> crate::Error {
    crate::Error::Internal(format!("cannot write: {e}"))
}

/// A report: JSON as the API returns it; table and CSV flatten it into `key,value` lines
/// (lists become one line per element with its fields).
fn show<T: Serialize>(sink: &mut Sink, out: Out, body: &T) -> crate::Result<()> {
    let v = serde_json::to_value(body).map_err(|e| crate::Error::Internal(e.to_string()))?;
    if out == Out::Json {
        let s =
            serde_json::to_string_pretty(&v).map_err(|e| crate::Error::Internal(e.to_string()))?;
        return sink.line(&s);
    }
    let mut rows = Vec::new();
    flatten("", &v, &mut rows);
    let sep = if out == Out::Csv { "," } else { "  " };
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, val) in rows {
        if out == Out::Csv {
            sink.line(&format!("{k}{sep}{val}"))?;
        } else {
            sink.line(&format!("{k:width$}{sep}{val}"))?;
        }
    }
    Ok(())
}

fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    use serde_json::Value as V;
    // The members of a map keyed by data (`requests_by_endpoint`, `requests_by_status`: an
    // endpoint such as `.well-known/openid-federation`, a status code) are shown in brackets,
    // so each reads as one key, not as more levels of dotted field names.
    let data_keys = prefix
        .rsplit(['.', ']'])
        .next()
        .is_some_and(|last| last.contains("_by_"));
    let key = |k: &str| match (prefix.is_empty(), data_keys) {
        (true, _) => k.to_string(),
        (false, true) => format!("{prefix}[{k}]"),
        (false, false) => format!("{prefix}.{k}"),
    };
    match v {
        V::Object(m) => m.iter().for_each(|(k, v)| flatten(&key(k), v, out)),
        V::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, v)| flatten(&key(&i.to_string()), v, out)),
        V::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

/// A top list: `value  count` columns, or CSV with a header.
fn counts(sink: &mut Sink, out: Out, list: &[Count]) -> crate::Result<()> {
    if out == Out::Csv {
        sink.line("value,count")?;
        for c in list {
            let mut f = String::new();
            super::export::csv_field(&mut f, &c.value);
            sink.line(&format!("{f},{}", c.count))?;
        }
        return Ok(());
    }
    let width = list
        .iter()
        .map(|c| c.value.chars().count())
        .max()
        .unwrap_or(5);
    for c in list {
        sink.line(&format!("{:width$}  {}", c.value, c.count))?;
    }
    Ok(())
}

/// A spinner on stderr when it is a terminal (never in pipes, logs or tests).
fn spinner(msg: &str) -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let b = indicatif::ProgressBar::new_spinner();
    b.set_message(msg.to_string());
    b.enable_steady_tick(std::time::Duration::from_millis(120));
    Some(b)
}

/// Streams the export to the sink, counting records on a progress bar when on a terminal.
async fn export_to(db: &Db, q: Query, f: Format, sink: &mut Sink) -> crate::Result<()> {
    let bar = spinner("exporting");
    let mut rx = export::start(db.clone(), q, f);
    let mut records: u64 = 0;
    while let Some(chunk) = rx.recv().await {
        let chunk = chunk.map_err(|e| crate::Error::Internal(e.to_string()))?;
        sink.0.write_all(&chunk).map_err(io)?;
        if let Some(b) = &bar {
            records += chunk.iter().filter(|c| **c == b'\n').count() as u64;
            b.set_message(format!("exporting: {records} records"));
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_keys_read_as_one_key_each() {
        let v = serde_json::json!({"summary": {"total_requests": 3,
            "requests_by_endpoint": {".well-known/openid-federation": 2, "fetch": 1},
            "requests_by_status": {"200": 3}}});
        let mut rows = Vec::new();
        flatten("", &v, &mut rows);
        let mut keys: Vec<&str> = rows.iter().map(|(k, _)| k.as_str()).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "summary.requests_by_endpoint[.well-known/openid-federation]",
                "summary.requests_by_endpoint[fetch]",
                "summary.requests_by_status[200]",
                "summary.total_requests",
            ]
        );
    }
}
