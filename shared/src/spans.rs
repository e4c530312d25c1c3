//! The tracing target of the spans exported as OpenTelemetry traces (issue 41).
//!
//! Spans with this target (requests, outbound fetches, write transactions, signatures) go to
//! the trace exporter only: the log outputs filter the target out, so turning traces on does
//! not change a log line. With traces off no output wants the target, tracing caches that
//! per call site, and creating such a span costs one load and a branch; that is why the
//! request path may create them unconditionally.

/// Target of every span the trace exporter receives. Not a module path: targets filter by
/// prefix, and a module's own log lines must not fall under it.
pub const TARGET: &str = "pharos_spans";
