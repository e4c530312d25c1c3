//! Process logging from `logging.*`: the internal log (stderr and/or `pharos.log`) and the
//! access log (stderr and/or `access.log`), each destination with its own format.
//!
//! Access lines are tracing events with target [`ACCESS_TARGET`]; per-layer filters send them
//! only to the access outputs and keep them out of the internal log. Files are written by a
//! background thread (tracing-appender); the returned guards flush it and must live as long as
//! the process logs. Nothing logs request bodies or headers, so passwords and tokens sent to
//! the Admin API cannot reach a log.

use std::io::IsTerminal;

use pharos_runtime::telemetry::TARGET as TRACE_TARGET;
use pharos_shared::config::{LogFormat, Settings};
use tracing::Dispatch;
use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::filter::{EnvFilter, LevelFilter, Targets};
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::{Layer, Registry};

pub use crate::http::layers::ACCESS_TARGET;
use crate::traces::Traces;

/// A layer of the process's subscriber.
pub type Boxed = Box<dyn Layer<Registry> + Send + Sync>;

/// Keeps the file writers' background threads alive; dropping it flushes them.
#[derive(Debug, Default)]
pub struct Guards(Vec<WorkerGuard>);

fn output(format: LogFormat, ansi: bool, writer: BoxMakeWriter) -> Boxed {
    let base = tracing_subscriber::fmt::layer().with_writer(writer);
    match format {
        LogFormat::Json => base.json().with_ansi(false).boxed(),
        LogFormat::Console => base.with_ansi(ansi).boxed(),
    }
}

fn internal_filter(level: &str) -> EnvFilter {
    let mut filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(level.to_ascii_lowercase()));
    // Access lines have their own outputs, trace spans theirs (the exporter).
    for target in [ACCESS_TARGET, TRACE_TARGET] {
        if let Ok(off) = format!("{target}=off").parse() {
            filter = filter.add_directive(off);
        }
    }
    filter
}

fn access_filter() -> Targets {
    Targets::new().with_target(ACCESS_TARGET, LevelFilter::INFO)
}

fn file(dir: &str, name: &str, guards: &mut Guards) -> Result<BoxMakeWriter, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create log directory {dir}: {e}"))?;
    let (writer, guard) =
        tracing_appender::non_blocking(tracing_appender::rolling::never(dir, name));
    guards.0.push(guard);
    Ok(BoxMakeWriter::new(writer))
}

/// Builds the subscriber for `settings`, writing stderr output to `stderr` (tests pass a buffer),
/// with the trace exporter's layer when traces are on.
pub fn dispatch(
    settings: &Settings,
    stderr: impl Fn() -> BoxMakeWriter,
    ansi: bool,
    traces: Option<Boxed>,
) -> Result<(Dispatch, Guards), String> {
    let log = &settings.logging;
    let mut guards = Guards::default();
    let mut layers: Vec<Boxed> = traces.into_iter().collect();
    let internal = &log.internal;
    if internal.stderr {
        layers.push(
            output(internal.stderr_format, ansi, stderr())
                .with_filter(internal_filter(&internal.level))
                .boxed(),
        );
    }
    if !internal.dir.is_empty() {
        let w = file(&internal.dir, "pharos.log", &mut guards)?;
        layers.push(
            output(internal.dir_format, false, w)
                .with_filter(internal_filter(&internal.level))
                .boxed(),
        );
    }
    if log.access.stderr {
        layers.push(
            output(internal.stderr_format, ansi, stderr())
                .with_filter(access_filter())
                .boxed(),
        );
    }
    if !log.access.dir.is_empty() {
        let w = file(&log.access.dir, "access.log", &mut guards)?;
        layers.push(
            output(internal.dir_format, false, w)
                .with_filter(access_filter())
                .boxed(),
        );
    }
    let subscriber = Registry::default().with(layers);
    Ok((Dispatch::new(subscriber), guards))
}

/// Installs the global subscriber for the process (`pharos serve`), with `traces`' layer
/// when traces are exported; keep the guards.
pub fn init(settings: &Settings, traces: Option<&Traces>) -> Result<Guards, String> {
    let ansi = std::io::stderr().is_terminal();
    let stderr = || BoxMakeWriter::new(std::io::stderr);
    let (dispatch, guards) = dispatch(settings, stderr, ansi, traces.map(Traces::layer))?;
    tracing::dispatcher::set_global_default(dispatch)
        .map_err(|e| format!("cannot install the logger: {e}"))?;
    Ok(guards)
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn json_stderr_and_files_are_independent_and_access_lines_are_routed() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Settings::default();
        s.logging.internal.stderr_format = LogFormat::Json;
        s.logging.internal.dir = dir.path().join("internal").display().to_string();
        s.logging.internal.dir_format = LogFormat::Console;
        s.logging.access.dir = dir.path().join("access").display().to_string();
        let buf = Buf::default();
        let b = buf.clone();
        let make = move || {
            let b = b.clone();
            BoxMakeWriter::new(move || b.clone())
        };
        let (d, guards) = dispatch(&s, make, false, None).unwrap();
        tracing::dispatcher::with_default(&d, || {
            tracing::info!(answer = 42, "internal line");
            tracing::debug!("hidden at info");
            tracing::info!(target: ACCESS_TARGET, status = 200, "request");
        });
        drop(guards);
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 1, "{text}");
        assert_eq!(lines[0]["fields"]["answer"], 42);
        let internal = std::fs::read_to_string(dir.path().join("internal/pharos.log")).unwrap();
        assert!(
            internal.contains("internal line") && !internal.contains('{'),
            "{internal}"
        );
        assert!(!internal.contains("request"), "{internal}");
        let access = std::fs::read_to_string(dir.path().join("access/access.log")).unwrap();
        assert!(
            access.contains("status=200") && !access.contains("internal"),
            "{access}"
        );
    }

    #[test]
    fn trace_spans_reach_the_exporter_only_and_leave_log_lines_as_they_were() {
        let s = Settings::default();
        let (logs, spans) = (Buf::default(), Buf::default());
        let b = logs.clone();
        let make = move || {
            let b = b.clone();
            BoxMakeWriter::new(move || b.clone())
        };
        // Stands in for the exporter's layer: the same filter, written to a buffer.
        let sp = spans.clone();
        let exporter = tracing_subscriber::fmt::layer()
            .with_writer(move || sp.clone())
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
            .with_filter(Targets::new().with_target(TRACE_TARGET, tracing::Level::INFO))
            .boxed();
        let (d, _guards) = dispatch(&s, make, false, Some(exporter)).unwrap();
        tracing::dispatcher::with_default(&d, || {
            let span = tracing::info_span!(target: TRACE_TARGET, "sign", jws.typ = "x");
            let _in = span.enter();
            tracing::info!("inside a traced span");
        });
        let logs = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
        assert!(logs.contains("inside a traced span"), "{logs}");
        assert!(!logs.contains("sign") && !logs.contains("jws"), "{logs}");
        let spans = String::from_utf8(spans.0.lock().unwrap().clone()).unwrap();
        assert!(spans.contains("sign") && spans.contains("close"), "{spans}");
        assert!(!spans.contains("inside a traced span"), "{spans}");
    }
}
