//! `pharos config2db`: moves the trust anchors and endpoints of a lighthouse 0.20/0.21
//! configuration file into the database, with a preview (`--dry-run -v`), in one transaction,
//! idempotently, and optionally rewrites the file without the migrated keys.
//!
//! The steps are modules of their own: [`yaml`] reads the file keeping positions, [`legacy`]
//! extracts the old settings, [`plan`] turns them into rows, [`apply`] compares and writes,
//! [`rewrite`] edits the file.

pub mod apply;
pub mod legacy;
pub mod plan;
pub mod rewrite;
pub mod yaml;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use pharos_shared::config::StorageDriver;

use apply::{Change, Decision};
use pharos_controlplane::db::{Db, endpoints as ep_repo, entities, trust_anchors as ta_repo};
use pharos_shared::hosted::EntityNo;
use plan::{Plan, Sections};

/// Exit status for bad arguments (EX_USAGE), as the rest of the binary uses.
const EXIT_USAGE: u8 = 64;

/// Command-line flags of `pharos config2db`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Database engine; default: the file's `storage.driver`.
    #[arg(long, value_parser = ["sqlite", "mysql", "postgres"])]
    pub db_type: Option<String>,
    /// SQLite: the data directory (`storage.data_dir`, holding `pharos.db`) or the database
    /// file itself; default: the file's `storage.data_dir`.
    #[arg(long)]
    pub db_dir: Option<PathBuf>,
    /// MySQL/PostgreSQL connection string; default: the file's `storage` settings.
    #[arg(long)]
    pub db_dsn: Option<String>,
    /// Sections to migrate, a comma list of `trust_anchors`, `endpoints`; default: all.
    #[arg(long)]
    pub only: Option<String>,
    /// Remove the migrated keys from the file afterwards (a backup copy is kept).
    #[arg(long)]
    pub update_config: bool,
    /// Overwrite rows that exist with other values.
    #[arg(long)]
    pub force: bool,
    /// Show what would change; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print every row with its values.
    #[arg(short, long)]
    pub verbose: bool,
    /// The hosted entity to migrate into: its number, or its Entity Identifier; default: the
    /// database's default entity. It must exist (`pharos admin entities add`, or `POST
    /// /api/v1/admin/entities`), so its placement is checked and its keys are made as for
    /// any hosted entity.
    #[arg(long)]
    pub entity: Option<String>,
}

/// Where the database is, decided from the flags and the file.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A server DSN.
    Server(String),
}

impl Target {
    fn url(&self, read_only: bool) -> String {
        match self {
            Self::Sqlite(file) => {
                let mode = if read_only { "ro" } else { "rwc" };
                format!("sqlite://{}?mode={mode}", file.display())
            }
            Self::Server(dsn) => dsn.clone(),
        }
    }
}

/// `--db-dir`: an existing directory, or a path not ending in a database file name, is the data
/// directory (`pharos.db` inside, as `pharos serve` opens it); anything else is the file.
pub fn sqlite_file(dir: &Path) -> PathBuf {
    let is_file_name = dir
        .extension()
        .is_some_and(|e| e == "db" || e == "sqlite" || e == "sqlite3");
    if dir.is_dir() || (!dir.is_file() && !is_file_name) {
        dir.join("pharos.db")
    } else {
        dir.to_path_buf()
    }
}

fn target(
    args: &Args,
    loaded: &Result<pharos_shared::config::Settings, String>,
) -> Result<Target, String> {
    let file_storage = loaded.as_ref().ok();
    let driver = match args.db_type.as_deref() {
        Some("sqlite") => StorageDriver::Sqlite,
        Some("mysql") => StorageDriver::Mysql,
        Some("postgres") => StorageDriver::Postgres,
        _ if args.db_dsn.is_some() && args.db_dir.is_none() => {
            return Err("--db-type is required with --db-dsn".into());
        }
        _ if args.db_dir.is_some() => StorageDriver::Sqlite,
        _ => match file_storage {
            Some(s) => s.storage.driver,
            None => {
                let why = loaded.as_ref().err().cloned().unwrap_or_default();
                return Err(format!(
                    "--db-type is required: the file's storage settings do not load ({why})"
                ));
            }
        },
    };
    match driver {
        StorageDriver::Sqlite => {
            let dir = match (&args.db_dir, file_storage) {
                (Some(d), _) => d.clone(),
                (None, Some(s))
                    if args.db_type.is_none() || s.storage.driver == StorageDriver::Sqlite =>
                {
                    PathBuf::from(&s.storage.data_dir)
                }
                _ => return Err("--db-dir is required for sqlite".into()),
            };
            Ok(Target::Sqlite(sqlite_file(&dir)))
        }
        StorageDriver::Mysql | StorageDriver::Postgres => match (&args.db_dsn, file_storage) {
            (Some(dsn), _) => Ok(Target::Server(dsn.clone())),
            (None, Some(s)) if s.storage.driver == driver => Ok(Target::Server(s.storage_url())),
            _ => Err(format!(
                "--db-dsn is required for {}",
                args.db_type.as_deref().unwrap_or("this database")
            )),
        },
    }
}

/// Runs the command; `config` is the global `--config`.
pub fn run(config: Option<&Path>, args: &Args, env: &[(String, String)]) -> ExitCode {
    let Some(config) = config else {
        eprintln!("config2db: --config is required");
        return ExitCode::from(EXIT_USAGE);
    };
    let sections = match Sections::parse(args.only.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("config2db: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let text = match std::fs::read_to_string(config) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("config2db: {}: {e}", config.display());
            return ExitCode::FAILURE;
        }
    };
    let doc = match yaml::parse(&text) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("config2db: {}: {e}", config.display());
            return ExitCode::FAILURE;
        }
    };
    let read = |p: &str| std::fs::read_to_string(p).map_err(|e| e.to_string());
    let settings = pharos_shared::config::load_legacy(config, env).map_err(|e| e.to_string());
    let accepted_kty = settings
        .as_ref()
        .map(|s| s.federation.accept.key_types.clone())
        .unwrap_or_default();
    let planned = legacy::read(&doc).and_then(|l| plan::plan(&l, sections, &read, &accepted_kty));
    let plan = match planned {
        Ok(p) => p,
        Err(problems) => {
            for p in problems {
                eprintln!("config2db: {}: {p}", config.display());
            }
            return ExitCode::FAILURE;
        }
    };
    let target = match target(args, &settings) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("config2db: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("config2db: cannot start runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let decisions = match rt.block_on(migrate(&target, &plan, args)) {
        Ok(d) => d,
        Err(problems) => {
            for p in problems {
                eprintln!("config2db: {p}");
            }
            eprintln!("config2db: nothing was changed");
            return ExitCode::FAILURE;
        }
    };
    print_report(&plan, &decisions, args);
    if args.update_config && !args.dry_run {
        let keep_anchors = decisions
            .iter()
            .any(|d| d.section == "trust_anchors" && matches!(d.change, Change::Differs(_)));
        let keep_endpoints = decisions
            .iter()
            .any(|d| d.section == "endpoints" && matches!(d.change, Change::Differs(_)));
        let remove = Sections {
            trust_anchors: sections.trust_anchors && !keep_anchors,
            endpoints: sections.endpoints && !keep_endpoints,
        };
        match rewrite::rewrite_file(config, &text, &doc, remove) {
            Ok(Some(backup)) => println!(
                "\n{} rewritten without the migrated keys (backup: {})",
                config.display(),
                backup.display()
            ),
            Ok(None) => {}
            Err(e) => {
                eprintln!(
                    "config2db: the database is migrated, but the file was not rewritten: {e}"
                );
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

fn now() -> i64 {
    use pharos_shared::time::Clock as _;
    pharos_shared::time::SystemClock.now()
}

/// `db` scoped to the entity `--entity` names (the default entity without it); an entity the
/// database does not host is an error naming how to create it.
async fn scoped(db: Db, entity: Option<&str>) -> Result<Db, Vec<String>> {
    let Some(named) = entity else {
        return Ok(db);
    };
    let one = |e: pharos_controlplane::Error| vec![e.to_string()];
    let row = match named.parse::<i64>().ok().and_then(EntityNo::new) {
        Some(no) => entities::get(&db, no).await.map_err(one)?,
        None => entities::find(&db, named).await.map_err(one)?,
    };
    match row {
        Some(row) => Ok(db.for_entity(row.id)),
        None => Err(vec![format!(
            "--entity {named}: this database hosts no such entity; create it first \
             (pharos admin entities add ENTITY_ID, or POST /api/v1/admin/entities)"
        )]),
    }
}

/// Connects (migrating first, as `pharos serve` does), decides, and writes unless dry-run. A dry
/// run neither creates nor migrates the database: a missing one reads as empty.
async fn migrate(target: &Target, plan: &Plan, args: &Args) -> Result<Vec<Decision>, Vec<String>> {
    let one = |e: pharos_controlplane::Error| vec![e.to_string()];
    let entity = args.entity.as_deref();
    let (anchors, endpoints, db) = if args.dry_run {
        let missing = matches!(target, Target::Sqlite(f) if !f.exists());
        let db = if missing {
            if let Some(named) = entity {
                return Err(vec![format!(
                    "--entity {named}: the database does not exist yet, so it hosts no such entity"
                )]);
            }
            None
        } else {
            let db = Db::connect(&target.url(true), 1).await.map_err(one)?;
            Some(scoped(db, entity).await?)
        };
        let (a, e) = match &db {
            // A database without our schema yet has no rows either.
            Some(db) => (
                ta_repo::list(db).await.unwrap_or_default(),
                ep_repo::list(db).await.unwrap_or_default(),
            ),
            None => (Vec::new(), Vec::new()),
        };
        (a, e, None)
    } else {
        if let Target::Sqlite(file) = target
            && let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir).map_err(|e| vec![format!("{}: {e}", dir.display())])?;
        }
        let db = Db::connect(&target.url(false), 2).await.map_err(one)?;
        db.migrate().await.map_err(one)?;
        let db = scoped(db, entity).await?;
        let a = ta_repo::list(&db).await.map_err(one)?;
        let e = ep_repo::list(&db).await.map_err(one)?;
        (a, e, Some(db))
    };
    let decisions = apply::decide(plan, &anchors, &endpoints, args.force)?;
    if let Some(db) = db {
        apply::execute(&db, plan, &decisions, now())
            .await
            .map_err(one)?;
    }
    Ok(decisions)
}

/// Prints the report; a closed stdout (`| head`) is not an error of the migration.
fn print_report(plan: &Plan, decisions: &[Decision], args: &Args) {
    let text = report(plan, decisions, args);
    let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
}

/// The summary (upstream's layout), and with `-v` every row's values.
pub fn report(plan: &Plan, decisions: &[Decision], args: &Args) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    macro_rules! println {
        ($($t:tt)*) => {{
            let _ = writeln!(out, $($t)*);
        }};
    }
    let (mut created, mut updated, mut skipped, mut differ) = (0, 0, 0, 0);
    println!("=== Migration Summary ===\n");
    let (anchor_ds, endpoint_ds) = decisions.split_at(plan.anchors.len());
    for (a, d) in plan.anchors.iter().zip(anchor_ds) {
        let line = match (&d.change, args.dry_run) {
            (Change::Create, true) => {
                format!("[DRY-RUN] would add {} (from {})", a.entity_id, a.source)
            }
            (Change::Update(f), true) => {
                format!("[DRY-RUN] would update {} ({})", a.entity_id, f.join(", "))
            }
            (Change::Create, false) => format!("[CREATED] {}", a.entity_id),
            (Change::Update(f), false) => format!("[UPDATED] {} ({})", a.entity_id, f.join(", ")),
            (Change::Same, _) => format!("[SKIPPED] {} already exists", a.entity_id),
            (Change::Differs(f), _) => format!(
                "[DIFFERS] {} exists with another {} (left alone; use --force to overwrite)",
                a.entity_id,
                f.join(", ")
            ),
        };
        println!("  {:<20} {line}", "trust_anchors");
        if args.verbose
            && matches!(
                d.change,
                Change::Create | Change::Update(_) | Change::Differs(_)
            )
        {
            let keys = match &a.jwks {
                Some(j) => serde_json::to_string(j).unwrap_or_default(),
                None => {
                    "none in the file: enable_jwks_update is set, so the first poll fetches them"
                        .into()
                }
            };
            println!("  {:<20}     entity_id: {}", "", a.entity_id);
            println!("  {:<20}     jwks: {keys}", "");
            println!(
                "  {:<20}     enable_jwks_update: {}",
                "", a.enable_jwks_update
            );
            println!(
                "  {:<20}     key_poll_interval: {}",
                "", a.key_poll_interval
            );
        }
        count(
            &d.change,
            &mut created,
            &mut updated,
            &mut skipped,
            &mut differ,
        );
    }
    for (e, d) in plan.endpoints.iter().zip(endpoint_ds) {
        let path = e.path.as_deref().unwrap_or("");
        let line = match (&d.change, args.dry_run) {
            (Change::Create, true) => format!("[DRY-RUN] would add {} at {path}", e.kind),
            (Change::Update(f), true) => {
                format!("[DRY-RUN] would update {} ({})", e.kind, f.join(", "))
            }
            (Change::Create, false) => format!("[CREATED] {}", e.kind),
            (Change::Update(f), false) => format!("[UPDATED] {} ({})", e.kind, f.join(", ")),
            (Change::Same, _) => format!("[SKIPPED] {} already exists", e.kind),
            (Change::Differs(f), _) => format!(
                "[DIFFERS] {} exists with another {} (left alone; use --force to overwrite)",
                e.kind,
                f.join(", ")
            ),
        };
        println!("  {:<20} {line}", "endpoints");
        if e.path.is_none() && matches!(d.change, Change::Create | Change::Update(_)) {
            println!(
                "  {:<20}     note: {} has a url only; an endpoint is served and published only with a path (as in 0.22)",
                "", e.kind
            );
        }
        if args.verbose
            && matches!(
                d.change,
                Change::Create | Change::Update(_) | Change::Differs(_)
            )
        {
            println!("  {:<20}     type: {}", "", e.kind);
            println!(
                "  {:<20}     path: {}",
                "",
                e.path.as_deref().unwrap_or("NULL")
            );
            println!(
                "  {:<20}     url: {}",
                "",
                e.url.as_deref().unwrap_or("NULL")
            );
            println!("  {:<20}     auth_enabled: {}", "", e.auth_enabled);
            println!("  {:<20}     config: {}", "", e.config);
            println!(
                "  {:<20}     auth_trust_anchors: [{}]",
                "",
                e.auth_trust_anchors.join(", ")
            );
        }
        count(
            &d.change,
            &mut created,
            &mut updated,
            &mut skipped,
            &mut differ,
        );
    }
    if plan.endpoints.is_empty() && plan.anchors.is_empty() {
        println!("  [SKIPPED] no trust anchors or endpoints found in the file");
    }
    println!(
        "\nTotal: {created} created, {updated} updated, {skipped} skipped, {differ} differ, 0 errors"
    );
    if args.dry_run {
        println!("       {} would be changed (dry-run)", created + updated);
    }
    out
}

fn count(c: &Change, created: &mut u32, updated: &mut u32, skipped: &mut u32, differ: &mut u32) {
    match c {
        Change::Create => *created += 1,
        Change::Update(_) => *updated += 1,
        Change::Same => *skipped += 1,
        Change::Differs(_) => *differ += 1,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn args(flags: &[&str]) -> Args {
        Cli::try_parse_from(std::iter::once("config2db").chain(flags.iter().copied()))
            .unwrap()
            .args
    }

    #[test]
    fn db_dir_is_the_data_directory_or_the_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(sqlite_file(dir.path()), dir.path().join("pharos.db"));
        let new_dir = dir.path().join("data");
        assert_eq!(sqlite_file(&new_dir), new_dir.join("pharos.db"));
        let file = dir.path().join("lighthouse.db");
        assert_eq!(sqlite_file(&file), file);
    }

    #[test]
    fn flags_win_over_the_file_and_gaps_are_named() {
        let mut s = pharos_shared::config::Settings::default();
        s.storage.data_dir = "/srv/data".into();
        let file = Ok(s);
        assert_eq!(
            target(&args(&[]), &file).unwrap(),
            Target::Sqlite(PathBuf::from("/srv/data/pharos.db"))
        );
        assert_eq!(
            target(
                &args(&["--db-type", "postgres", "--db-dsn", "postgres://h/x"]),
                &file
            )
            .unwrap(),
            Target::Server("postgres://h/x".into())
        );
        let e = target(&args(&["--db-type", "mysql"]), &file).unwrap_err();
        assert_eq!(e, "--db-dsn is required for mysql");
        let e = target(&args(&["--db-dsn", "postgres://h/x"]), &file).unwrap_err();
        assert_eq!(e, "--db-type is required with --db-dsn");
        let broken = Err("signing.alg: bad".to_string());
        let e = target(&args(&[]), &broken).unwrap_err();
        assert!(e.contains("signing.alg: bad"), "{e}");
        assert_eq!(
            target(&args(&["--db-dir", "/x/y.db"]), &broken).unwrap(),
            Target::Sqlite(PathBuf::from("/x/y.db"))
        );
    }
}
