//! The spans exported as OpenTelemetry traces (issue 41): their tracing target, and the
//! marker that keeps an unsampled request from making any.
//!
//! Spans with [`TARGET`] (requests, outbound fetches, write transactions, signatures) go to
//! the trace exporter only: the log outputs filter the target out, so turning traces on does
//! not change a log line. With traces off no output wants the target, tracing caches that
//! per call site, and creating such a span costs one load and a branch.
//!
//! With traces on, a tracing span costs allocations whether or not its trace is sampled. So a
//! request whose trace is not sampled is decided so before any span is made
//! (`pharos_runtime::telemetry`), and while it is being served the thread is marked
//! [`Unsampled`]: [`span!`](crate::trace_span) then makes no span, which also keeps the
//! request's fetches, writes and signatures from turning up as traces of their own.

use std::cell::Cell;

/// Target of every span the trace exporter receives. Not a module path: targets filter by
/// prefix, and a module's own log lines must not fall under it.
pub const TARGET: &str = "pharos_spans";

thread_local! {
    static UNSAMPLED: Cell<bool> = const { Cell::new(false) };
}

/// Whether the work running on this thread belongs to a request whose trace is not sampled.
pub fn unsampled() -> bool {
    UNSAMPLED.with(Cell::get)
}

/// Marks this thread as serving an unsampled request until dropped (then as before). Held
/// around each poll of such a request's future, as a span is entered.
#[derive(Debug)]
pub struct Unsampled {
    before: bool,
}

impl Unsampled {
    /// Marks the thread.
    pub fn enter() -> Self {
        Self {
            before: UNSAMPLED.with(|u| u.replace(true)),
        }
    }
}

impl Drop for Unsampled {
    fn drop(&mut self) {
        UNSAMPLED.with(|u| u.set(self.before));
    }
}

/// An INFO span with [`TARGET`] (arguments as `tracing::info_span!`'s after the target), or a
/// disabled span inside an unsampled request.
#[macro_export]
macro_rules! trace_span {
    ($($arg:tt)*) => {
        if $crate::spans::unsampled() {
            ::tracing::Span::none()
        } else {
            ::tracing::info_span!(target: $crate::spans::TARGET, $($arg)*)
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_nests_and_is_undone() {
        assert!(!unsampled());
        {
            let _outer = Unsampled::enter();
            assert!(unsampled());
            {
                let _inner = Unsampled::enter();
            }
            assert!(unsampled(), "an inner mark restores the outer one");
        }
        assert!(!unsampled());
    }
}
