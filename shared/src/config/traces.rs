//! `tracing.*`: OpenTelemetry traces over OTLP (issue 41), off by default.
//!
//! The file's keys are overlaid by the variables every OpenTelemetry SDK reads (`OTEL_*`), so
//! an operator who already sets them for the rest of the stack configures Pharos the same way.
//! [`TracingSettings::export`] is that overlay, pure, so that it is tested without touching the
//! process environment.

use serde::{Deserialize, Serialize};

use super::server::is_ip_or_cidr;

/// Trace export settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TracingSettings {
    /// Export traces. `OTEL_TRACES_EXPORTER=otlp` or an OTLP endpoint variable also turns it on; `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turns it off.
    pub enabled: bool,
    /// The collector: a base URL for `http` (`/v1/traces` is appended), the gRPC address for `grpc`; empty = `http://localhost:4318` or `http://localhost:4317`. `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (taken as is) and `OTEL_EXPORTER_OTLP_ENDPOINT` win.
    pub endpoint: String,
    /// OTLP transport; `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` and `OTEL_EXPORTER_OTLP_PROTOCOL` win.
    pub protocol: OtlpProtocol,
    /// Share of new traces recorded, 0 to 1; a request continuing a trusted peer's trace follows the peer's decision. `OTEL_TRACES_SAMPLER` (`always_on`, `always_off`, `traceidratio`, `parentbased_*`) and `OTEL_TRACES_SAMPLER_ARG` win.
    pub sample_ratio: f64,
    /// `service.name` of the spans; `OTEL_SERVICE_NAME` wins.
    pub service_name: String,
    /// Peers (IPs or CIDRs) whose `traceparent` header is continued; anyone else's is ignored and the request starts a new trace, so strangers can neither force sampling nor join our traces.
    pub trusted_peers: Vec<String>,
}

impl Default for TracingSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            endpoint: String::new(),
            protocol: OtlpProtocol::Http,
            // The OpenTelemetry default (`parentbased_always_on`): whoever turns traces on sees
            // every request until they choose a ratio for their traffic.
            sample_ratio: 1.0,
            service_name: "pharos".into(),
            trusted_peers: Vec::new(),
        }
    }
}

/// How spans reach the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OtlpProtocol {
    /// OTLP/HTTP with protobuf bodies (`http/protobuf`), port 4318 by default.
    #[serde(alias = "http/protobuf")]
    Http,
    /// OTLP/gRPC, port 4317 by default.
    Grpc,
}

/// What the process exports, after the environment has had its say.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceExport {
    /// The full URL spans are sent to (for `http` with `/v1/traces`).
    pub endpoint: String,
    /// The transport.
    pub protocol: OtlpProtocol,
    /// Share of new traces recorded.
    pub sample_ratio: f64,
    /// Whether a sampled or unsampled parent from a trusted peer decides (`parentbased_*`).
    pub parent_based: bool,
    /// `service.name`.
    pub service_name: String,
    /// Peers whose `traceparent` is continued.
    pub trusted_peers: Vec<String>,
}

const HTTP_DEFAULT: &str = "http://localhost:4318";
const GRPC_DEFAULT: &str = "http://localhost:4317";

fn check_ratio(name: &str, ratio: f64) -> Result<f64, String> {
    if (0.0..=1.0).contains(&ratio) {
        Ok(ratio)
    } else {
        Err(format!("{name} must be between 0 and 1, not {ratio}"))
    }
}

impl TracingSettings {
    /// Records every problem with the file's values.
    pub(crate) fn check(&self, problems: &mut Vec<String>) {
        if let Err(e) = check_ratio("tracing.sample_ratio", self.sample_ratio) {
            problems.push(e);
        }
        if !self.endpoint.is_empty() && !is_http_url(&self.endpoint) {
            problems.push(format!(
                "tracing.endpoint: {:?} is not an http(s) URL",
                self.endpoint
            ));
        }
        if self.service_name.is_empty() {
            problems.push("tracing.service_name must not be empty".into());
        }
        for peer in &self.trusted_peers {
            if !is_ip_or_cidr(peer) {
                problems.push(format!(
                    "tracing.trusted_peers: {peer:?} is not an IP or CIDR"
                ));
            }
        }
    }

    /// The export these settings and the `OTEL_*` variables (read through `env`) ask for;
    /// `None` when traces are off. An unusable variable is an error naming it, as a bad key of
    /// the file is: a typo must not silently leave an operator without traces.
    pub fn export(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<TraceExport>, String> {
        let var = |name: &str| {
            env(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let signal_endpoint = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
        let base_endpoint = var("OTEL_EXPORTER_OTLP_ENDPOINT");
        let enabled = match var("OTEL_TRACES_EXPORTER").as_deref() {
            Some("none") => false,
            Some("otlp") => true,
            Some(other) => {
                return Err(format!(
                    "OTEL_TRACES_EXPORTER: {other:?} is not supported (otlp or none)"
                ));
            }
            None => self.enabled || signal_endpoint.is_some() || base_endpoint.is_some(),
        };
        if !enabled {
            return Ok(None);
        }
        let protocol = match var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"))
            .as_deref()
        {
            None => self.protocol,
            Some("http/protobuf") => OtlpProtocol::Http,
            Some("grpc") => OtlpProtocol::Grpc,
            Some(other) => {
                return Err(format!(
                    "OTEL_EXPORTER_OTLP_PROTOCOL: {other:?} is not supported (http/protobuf or grpc)"
                ));
            }
        };
        let with_path = |base: &str| match protocol {
            OtlpProtocol::Http => format!("{}/v1/traces", base.trim_end_matches('/')),
            OtlpProtocol::Grpc => base.to_owned(),
        };
        let endpoint = match (signal_endpoint, base_endpoint) {
            (Some(url), _) => url,
            (None, Some(base)) => with_path(&base),
            (None, None) if !self.endpoint.is_empty() => with_path(&self.endpoint),
            (None, None) => with_path(match protocol {
                OtlpProtocol::Http => HTTP_DEFAULT,
                OtlpProtocol::Grpc => GRPC_DEFAULT,
            }),
        };
        if !is_http_url(&endpoint) {
            return Err(format!(
                "the OTLP endpoint {endpoint:?} is not an http(s) URL"
            ));
        }
        let arg = var("OTEL_TRACES_SAMPLER_ARG");
        let ratio_arg = || match &arg {
            None => Ok(1.0),
            Some(a) => a
                .parse::<f64>()
                .map_err(|_| format!("OTEL_TRACES_SAMPLER_ARG: {a:?} is not a number"))
                .and_then(|r| check_ratio("OTEL_TRACES_SAMPLER_ARG", r)),
        };
        let (sample_ratio, parent_based) = match var("OTEL_TRACES_SAMPLER").as_deref() {
            None => (self.sample_ratio, true),
            Some("always_on") => (1.0, false),
            Some("always_off") => (0.0, false),
            Some("traceidratio") => (ratio_arg()?, false),
            Some("parentbased_always_on") => (1.0, true),
            Some("parentbased_always_off") => (0.0, true),
            Some("parentbased_traceidratio") => (ratio_arg()?, true),
            Some(other) => {
                return Err(format!("OTEL_TRACES_SAMPLER: {other:?} is not supported"));
            }
        };
        Ok(Some(TraceExport {
            endpoint,
            protocol,
            sample_ratio,
            parent_based,
            service_name: var("OTEL_SERVICE_NAME").unwrap_or_else(|| self.service_name.clone()),
            trusted_peers: self.trusted_peers.clone(),
        }))
    }
}

fn is_http_url(s: &str) -> bool {
    url::Url::parse(s).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn export(s: &TracingSettings, vars: &[(&str, &str)]) -> Result<Option<TraceExport>, String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        s.export(|name| vars.get(name).cloned())
    }

    #[test]
    fn off_unless_the_file_or_the_environment_turns_it_on() {
        let off = TracingSettings::default();
        assert_eq!(export(&off, &[]).unwrap(), None);
        let on = export(&off, &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")])
            .unwrap()
            .unwrap();
        assert_eq!(on.endpoint, "http://c:4318/v1/traces");
        assert!(on.parent_based && on.sample_ratio == 1.0);
        let file_on = TracingSettings {
            enabled: true,
            ..TracingSettings::default()
        };
        assert_eq!(
            export(&file_on, &[]).unwrap().unwrap().endpoint,
            "http://localhost:4318/v1/traces"
        );
        for (k, v) in [
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ] {
            assert_eq!(export(&file_on, &[(k, v)]).unwrap(), None, "{k}");
        }
        assert!(
            export(&off, &[("OTEL_TRACES_EXPORTER", "otlp")])
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn the_environment_wins_over_the_file() {
        let file = TracingSettings {
            enabled: true,
            endpoint: "http://file:4318".into(),
            sample_ratio: 0.5,
            service_name: "anchor".into(),
            ..TracingSettings::default()
        };
        let e = export(&file, &[]).unwrap().unwrap();
        assert_eq!(
            (e.endpoint.as_str(), e.sample_ratio, e.service_name.as_str()),
            ("http://file:4318/v1/traces", 0.5, "anchor")
        );
        let e = export(
            &file,
            &[
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://env:9/custom"),
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://ignored:1"),
                ("OTEL_TRACES_SAMPLER", "traceidratio"),
                ("OTEL_TRACES_SAMPLER_ARG", "0.01"),
                ("OTEL_SERVICE_NAME", "resolver"),
            ],
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            e.endpoint, "http://env:9/custom",
            "the signal's URL is taken as is"
        );
        assert_eq!((e.sample_ratio, e.parent_based), (0.01, false));
        assert_eq!(e.service_name, "resolver");
        let grpc = export(&file, &[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")])
            .unwrap()
            .unwrap();
        assert_eq!(
            (grpc.protocol, grpc.endpoint.as_str()),
            (OtlpProtocol::Grpc, "http://file:4318")
        );
        let grpc_default = TracingSettings {
            enabled: true,
            protocol: OtlpProtocol::Grpc,
            ..TracingSettings::default()
        };
        assert_eq!(
            export(&grpc_default, &[]).unwrap().unwrap().endpoint,
            "http://localhost:4317"
        );
    }

    #[test]
    fn bad_variables_and_keys_are_named() {
        let on = TracingSettings {
            enabled: true,
            ..TracingSettings::default()
        };
        for (k, v) in [
            ("OTEL_TRACES_EXPORTER", "jaeger"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_TRACES_SAMPLER", "xray"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"),
        ] {
            let e = export(&on, &[(k, v)]).unwrap_err();
            assert!(e.contains(k) || e.contains("endpoint"), "{k}: {e}");
        }
        let e = export(
            &on,
            &[
                ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
                ("OTEL_TRACES_SAMPLER_ARG", "2"),
            ],
        )
        .unwrap_err();
        assert!(e.contains("OTEL_TRACES_SAMPLER_ARG"), "{e}");
        let mut problems = Vec::new();
        TracingSettings {
            sample_ratio: -0.1,
            endpoint: "collector".into(),
            service_name: String::new(),
            trusted_peers: vec!["10.0.0.0/8".into(), "nope".into()],
            ..TracingSettings::default()
        }
        .check(&mut problems);
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(
            problems.iter().any(|p| p.contains("\"nope\"")),
            "{problems:?}"
        );
    }
}
