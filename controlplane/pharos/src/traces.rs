//! OTLP trace export (issue 41): the OpenTelemetry SDK's tracer provider behind a tracing
//! layer that receives only the spans of target [`pharos_runtime::telemetry::TARGET`].
//!
//! Off by default (`tracing.*`, `OTEL_*`, see [`TracingSettings::export`]). When on, spans are
//! batched on the SDK's own thread (its queue is bounded: a collector that cannot keep up
//! loses spans, never memory or request time) and sent over OTLP/HTTP with protobuf bodies or
//! OTLP/gRPC. New traces are sampled by ratio and a request that continues a trusted peer's
//! trace (`tracing.trusted_peers`) follows the peer's decision; a request's decision is made
//! before its span exists (see `pharos_runtime::telemetry`), so an unsampled request costs no
//! span at all. The exporter also reads the standard variables it knows
//! itself (`OTEL_EXPORTER_OTLP_HEADERS`, `…_TIMEOUT`, `…_COMPRESSION`, `OTEL_BSP_*`,
//! `OTEL_RESOURCE_ATTRIBUTES`).

use opentelemetry::Context;
use opentelemetry::KeyValue;
use opentelemetry::trace::{Link, SpanKind, TraceId};
use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SamplingResult, SdkTracerProvider, ShouldSample};
use pharos_runtime::telemetry;
use pharos_shared::client_ip::TrustedProxies;
use pharos_shared::config::{OtlpProtocol, Settings, TraceExport};
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::{Layer, Registry};

/// The sampler: requests are decided before their span is made (`telemetry::server_span`)
/// and arrive marked when sampled; a span inside this process follows its parent (a sampled
/// request's fetches are sampled, whatever the configured sampler would say of their trace
/// id); every other root (a background job's write or fetch) and every span continuing a
/// trusted peer's trace is decided by `0`, the configured sampler.
#[derive(Debug, Clone)]
struct Decided(Sampler);

impl ShouldSample for Decided {
    fn should_sample(
        &self,
        parent: Option<&Context>,
        trace_id: TraceId,
        name: &str,
        kind: &SpanKind,
        attributes: &[KeyValue],
        links: &[Link],
    ) -> SamplingResult {
        let local_parent = parent
            .map(|cx| cx.span().span_context().clone())
            .filter(|sc| sc.is_valid() && !sc.is_remote());
        let marked = || {
            attributes
                .iter()
                .any(|kv| kv.key.as_str() == telemetry::SAMPLED_HERE)
        };
        let sampler = match local_parent {
            Some(sc) if sc.is_sampled() => &Sampler::AlwaysOn,
            Some(_) => &Sampler::AlwaysOff,
            None if marked() => &Sampler::AlwaysOn,
            None => &self.0,
        };
        sampler.should_sample(parent, trace_id, name, kind, attributes, links)
    }
}

/// The running exporter; [`Traces::shutdown`] sends what is still queued.
#[derive(Debug)]
pub struct Traces {
    provider: SdkTracerProvider,
}

/// What the process's environment says about traces, with `settings`.
pub fn wanted(settings: &Settings) -> Result<Option<TraceExport>, String> {
    settings.tracing.export(|name| std::env::var(name).ok())
}

impl Traces {
    /// Starts exporting as `export` says and makes the process continue W3C trace context from
    /// its trusted peers. Must run inside the Tokio runtime (the gRPC channel's worker is
    /// spawned on it).
    pub fn start(export: &TraceExport) -> Result<Self, String> {
        let exporter = match export.protocol {
            OtlpProtocol::Http => SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(export.endpoint.as_str())
                .build(),
            OtlpProtocol::Grpc => SpanExporter::builder()
                .with_tonic()
                .with_endpoint(export.endpoint.as_str())
                .build(),
        }
        .map_err(|e| format!("tracing: cannot export to {}: {e}", export.endpoint))?;
        let ratio = Sampler::TraceIdRatioBased(export.sample_ratio);
        let sampler = Decided(if export.parent_based {
            Sampler::ParentBased(Box::new(ratio))
        } else {
            ratio
        });
        let resource = Resource::builder()
            .with_service_name(export.service_name.clone())
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build();
        let provider = SdkTracerProvider::builder()
            .with_sampler(sampler)
            .with_resource(resource)
            .with_batch_exporter(exporter)
            .build();
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        telemetry::configure(
            TrustedProxies::parse(&export.trusted_peers),
            export.sample_ratio,
            export.parent_based,
        );
        Ok(Self { provider })
    }

    /// The layer that turns our spans into OpenTelemetry spans. Thread, source location and
    /// busy/idle timings are left out: they cost work on every span enter and say nothing an
    /// operator reads in a federation trace.
    pub fn layer(&self) -> Box<dyn Layer<Registry> + Send + Sync> {
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("pharos"))
            .with_tracked_inactivity(false)
            .with_threads(false)
            .with_location(false)
            .with_target(false)
            .with_filter(Targets::new().with_target(telemetry::TARGET, Level::INFO))
            .boxed()
    }

    /// Sends the queued spans and stops the exporter; blocks, so call it off the async
    /// workers.
    pub fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!(error = %e, "tracing: the last spans could not be sent");
        }
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceState};
    use opentelemetry_sdk::trace::SamplingDecision;

    use super::*;

    fn decide(sampler: &Decided, parent: Option<(bool, bool)>, marked: bool) -> bool {
        let cx = parent.map(|(sampled, remote)| {
            let flags = if sampled {
                TraceFlags::SAMPLED
            } else {
                TraceFlags::default()
            };
            let sc = SpanContext::new(
                TraceId::from(7),
                SpanId::from(9),
                flags,
                remote,
                TraceState::default(),
            );
            Context::new().with_remote_span_context(sc)
        });
        let attributes = if marked {
            vec![KeyValue::new(telemetry::SAMPLED_HERE, true)]
        } else {
            Vec::new()
        };
        let r = sampler.should_sample(
            cx.as_ref(),
            TraceId::from(u128::MAX),
            "span",
            &SpanKind::Internal,
            &attributes,
            &[],
        );
        r.decision == SamplingDecision::RecordAndSample
    }

    #[test]
    fn requests_decided_here_and_spans_inside_them_follow_their_decision() {
        // `traceidratio` at 0 (not parent-based): only what was decided here is sampled.
        let never = Decided(Sampler::TraceIdRatioBased(0.0));
        assert!(decide(&never, None, true), "a request sampled here");
        assert!(!decide(&never, None, false), "a background root");
        assert!(
            decide(&never, Some((true, false)), false),
            "inside a sampled request"
        );
        assert!(
            !decide(&never, Some((true, true)), false),
            "a peer's, not parent-based"
        );
        let always = Decided(Sampler::TraceIdRatioBased(1.0));
        assert!(
            !decide(&always, Some((false, false)), false),
            "inside an unsampled span"
        );
        // Parent-based at 0: a trusted peer's decision stands.
        let parent_based = Decided(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            0.0,
        ))));
        assert!(decide(&parent_based, Some((true, true)), false));
        assert!(!decide(&parent_based, Some((false, true)), false));
    }
}
