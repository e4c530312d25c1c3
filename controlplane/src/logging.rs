//! Process logging from `logging.internal.*`.

use pharos_shared::config::{LogFormat, Settings};
use tracing_subscriber::EnvFilter;

/// Installs the global subscriber: level from `logging.internal.level` (overridable with
/// `RUST_LOG`), console or JSON on stderr.
pub fn init(settings: &Settings) {
    let internal = &settings.logging.internal;
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(internal.level.to_lowercase()));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match internal.stderr_format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Console => builder.try_init(),
    };
}
