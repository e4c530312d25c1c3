//! OpenTelemetry traces across a federation (issue 41): three `pharos serve` processes (a trust
//! anchor, an intermediate and a resolver) export to a loopback OTLP/HTTP receiver that decodes
//! the protobuf bodies with the published OTLP definitions. One resolve must be one trace: the
//! resolver's request span, its outbound fetches, and the anchor's and intermediate's request
//! spans joined to those fetches by the W3C `traceparent` header. A `traceparent` from a peer
//! that is not trusted must not be continued.

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message as _;
use serde_json::{Value, json};

use crate::support::enc;

/// One exported span, as the receiver decoded it.
#[derive(Debug, Clone)]
struct Exported {
    service: String,
    name: String,
    kind: i32,
    trace_id: Vec<u8>,
    span_id: Vec<u8>,
    parent: Vec<u8>,
    attributes: HashMap<String, String>,
}

fn text(kv: &[KeyValue]) -> HashMap<String, String> {
    kv.iter()
        .filter_map(|a| {
            let v = match a.value.as_ref()?.value.as_ref()? {
                AnyValue::StringValue(s) => s.clone(),
                AnyValue::IntValue(i) => i.to_string(),
                AnyValue::BoolValue(b) => b.to_string(),
                other => format!("{other:?}"),
            };
            Some((a.key.clone(), v))
        })
        .collect()
}

/// Keeps the spans of one export request.
fn keep(req: ExportTraceServiceRequest, kept: &Mutex<Vec<Exported>>) {
    let mut out = kept.lock().unwrap();
    for rs in req.resource_spans {
        let resource = rs.resource.map(|r| text(&r.attributes)).unwrap_or_default();
        let service = resource.get("service.name").cloned().unwrap_or_default();
        for s in rs.scope_spans.into_iter().flat_map(|ss| ss.spans) {
            out.push(Exported {
                service: service.clone(),
                name: s.name,
                kind: s.kind,
                trace_id: s.trace_id,
                span_id: s.span_id,
                parent: s.parent_span_id,
                attributes: text(&s.attributes),
            });
        }
    }
}

type Kept = Arc<Mutex<Vec<Exported>>>;

/// A loopback OTLP/HTTP receiver (`POST /v1/traces`, protobuf) keeping every span it is sent.
async fn receiver() -> (String, Kept) {
    let spans: Kept = Arc::default();
    let kept = spans.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: Bytes| {
            let kept = kept.clone();
            async move {
                match ExportTraceServiceRequest::decode(body) {
                    Ok(req) => {
                        keep(req, &kept);
                        // An empty ExportTraceServiceResponse.
                        (axum::http::StatusCode::OK, Vec::new())
                    }
                    Err(_) => (axum::http::StatusCode::BAD_REQUEST, Vec::new()),
                }
            }
        }),
    );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app).await });
    (url, spans)
}

/// The OTLP/gRPC trace service of [`grpc_receiver`].
struct GrpcReceiver(Kept);

#[tonic::async_trait]
impl TraceService for GrpcReceiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        keep(request.into_inner(), &self.0);
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

/// A loopback OTLP/gRPC receiver (tonic's server with the published service definition).
async fn grpc_receiver() -> (String, Kept) {
    let spans: Kept = Arc::default();
    let port = free_port();
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    let service = TraceServiceServer::new(GrpcReceiver(spans.clone()));
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve(addr),
    );
    (format!("http://127.0.0.1:{port}"), spans)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One `pharos serve` process exporting traces.
struct Node {
    child: Child,
    id: String,
    log: std::path::PathBuf,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

impl Node {
    /// Starts `name` with `vars` (its trace settings) on a free port; returns once ready.
    async fn start(dir: &std::path::Path, name: &str, vars: &[(&str, String)]) -> Self {
        let port = free_port();
        let log = dir.join(format!("{name}.log"));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_pharos"));
        for (k, _) in std::env::vars() {
            if k.starts_with("SVC_") || k.starts_with("OTEL_") || k == "RUST_LOG" {
                cmd.env_remove(k);
            }
        }
        cmd.arg("serve")
            .env("SVC_ENTITY_ID", format!("http://127.0.0.1:{port}"))
            .env("SVC_SERVER_IP_LISTEN", "127.0.0.1")
            .env("SVC_SERVER_PORT", port.to_string())
            .env("SVC_STORAGE_DATA_DIR", dir.join(name))
            .env("SVC_FEDERATION_BLOCK_PRIVATE_ADDRESSES", "false")
            // Export batches every 100 ms instead of every 5 s.
            .env("OTEL_BSP_SCHEDULE_DELAY", "100");
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let child = cmd
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let node = Self {
            child,
            id: format!("http://127.0.0.1:{port}"),
            log,
        };
        for _ in 0..600 {
            let ready = http().get(format!("{}/readyz", node.id)).send().await;
            if ready.is_ok_and(|r| r.status() == 200) {
                return node;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "{name} never became ready:\n{}",
            std::fs::read_to_string(&node.log).unwrap_or_default()
        );
    }

    /// An Admin API call (no admin user exists, so loopback may call it); must succeed.
    async fn admin(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let r = http()
            .request(method, format!("{}/api/v1/admin{path}", self.id))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = r.status();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "{path}: {status} {v}");
        v
    }

    async fn jwks(&self) -> Value {
        let token = http()
            .get(format!("{}/.well-known/openid-federation", self.id))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        pharos_shared::jose::decode_unverified(&token)
            .unwrap()
            .claims["jwks"]
            .clone()
    }
}

/// The spans of `service`.
fn of<'a>(spans: &'a [Exported], service: &str) -> Vec<&'a Exported> {
    spans.iter().filter(|s| s.service == service).collect()
}

#[tokio::test]
async fn one_resolve_is_one_trace_across_the_resolver_the_intermediate_and_the_anchor() {
    let dir = tempfile::tempdir().unwrap();
    let (otlp, spans) = receiver().await;
    // Each node is configured a different supported way: the OTEL_* variables alone, the
    // configuration keys, and both (the variables win).
    let anchor = Node::start(
        dir.path(),
        "anchor",
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.clone()),
            ("OTEL_SERVICE_NAME", "anchor".into()),
            ("SVC_TRACING_TRUSTED_PEERS", "127.0.0.1".into()),
        ],
    )
    .await;
    let intermediate = Node::start(
        dir.path(),
        "intermediate",
        &[
            ("SVC_TRACING_ENABLED", "true".into()),
            ("SVC_TRACING_ENDPOINT", otlp.clone()),
            ("SVC_TRACING_SERVICE_NAME", "intermediate".into()),
            ("SVC_TRACING_TRUSTED_PEERS", "127.0.0.0/8".into()),
        ],
    )
    .await;
    // The resolver trusts nobody: the test client's `traceparent` must be ignored.
    let resolver = Node::start(
        dir.path(),
        "resolver",
        &[
            ("SVC_TRACING_ENABLED", "true".into()),
            ("SVC_TRACING_ENDPOINT", "http://127.0.0.1:9".into()),
            ("SVC_TRACING_SAMPLE_RATIO", "0.5".into()),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                format!("{otlp}/v1/traces"),
            ),
            ("OTEL_TRACES_SAMPLER", "parentbased_always_on".into()),
            ("OTEL_SERVICE_NAME", "resolver".into()),
        ],
    )
    .await;
    use reqwest::Method;
    let fetch = json!({"type": "fetch", "path": "/fetch", "config": {}});
    anchor
        .admin(Method::POST, "/federation-endpoints", fetch)
        .await;
    let sub = json!({"entity_id": intermediate.id, "jwks": intermediate.jwks().await});
    anchor.admin(Method::POST, "/subordinates", sub).await;
    let hint = json!({"entity_id": anchor.id});
    intermediate
        .admin(Method::POST, "/entity-configuration/authority-hints", hint)
        .await;
    let resolve = json!({"type": "resolve", "path": "/resolve",
        "config": {"allowed_trust_anchors": [anchor.id]}});
    resolver
        .admin(Method::POST, "/federation-endpoints", resolve)
        .await;

    // A stranger's trace: sampled, so a resolver that continued it would show its id.
    let stranger = "0af7651916cd43dd8448eb211c80319c";
    let url = format!(
        "{}/resolve?sub={}&trust_anchor={}",
        resolver.id,
        enc(&intermediate.id),
        enc(&anchor.id)
    );
    let r = http()
        .get(&url)
        .header("traceparent", format!("00-{stranger}-b7ad6b7169203331-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let token = r.text().await.unwrap();
    let keys: pharos_shared::jose::Jwks = serde_json::from_value(resolver.jwks().await).unwrap();
    let claims = pharos_shared::jose::verify(&token, &keys).unwrap().claims;
    assert_eq!(claims["sub"], intermediate.id.as_str());
    assert_eq!(claims["trust_chain"].as_array().unwrap().len(), 3);

    // The resolver's span of that request, once exported; then its whole trace.
    let mut trace = Vec::new();
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let all = spans.lock().unwrap().clone();
        let Some(root) = all.iter().find(|s| {
            s.service == "resolver"
                && s.kind == SpanKind::Server as i32
                && s.attributes.get("url.path").map(String::as_str) == Some("/resolve")
        }) else {
            continue;
        };
        trace = all
            .iter()
            .filter(|s| s.trace_id == root.trace_id)
            .cloned()
            .collect();
        // Done when both peers' request spans have arrived.
        if of(&trace, "anchor")
            .iter()
            .any(|s| s.kind == SpanKind::Server as i32)
            && of(&trace, "intermediate")
                .iter()
                .any(|s| s.kind == SpanKind::Server as i32)
        {
            break;
        }
    }
    let summary = |t: &[Exported]| {
        t.iter()
            .map(|s| {
                format!(
                    "{} {} {:?}",
                    s.service,
                    s.name,
                    s.attributes.get("url.path")
                )
            })
            .collect::<Vec<_>>()
    };
    let root = trace
        .iter()
        .find(|s| s.service == "resolver" && s.kind == SpanKind::Server as i32)
        .unwrap_or_else(|| panic!("no resolver request span: {:?}", summary(&trace)));
    assert!(root.parent.is_empty(), "the stranger's trace was continued");
    assert_ne!(hex(&root.trace_id), stranger);
    assert_eq!(root.name, "GET /resolve");
    assert_eq!(root.attributes["http.response.status_code"], "200");
    assert_eq!(root.attributes["pharos.listener"], "public");

    // The resolver's fetches are children of its request span (directly or through the
    // spans between), and each peer's request span is the child of one of those fetches.
    let by_id: HashMap<&[u8], &Exported> =
        trace.iter().map(|s| (s.span_id.as_slice(), s)).collect();
    let under_root = |s: &Exported| {
        let mut at = s;
        for _ in 0..32 {
            if at.span_id == root.span_id {
                return true;
            }
            match by_id.get(at.parent.as_slice()) {
                Some(p) => at = p,
                None => return false,
            }
        }
        false
    };
    let fetches: Vec<&Exported> = of(&trace, "resolver")
        .into_iter()
        .filter(|s| s.kind == SpanKind::Client as i32)
        .collect();
    assert!(fetches.len() >= 3, "{:?}", summary(&trace));
    for f in &fetches {
        assert!(
            under_root(f),
            "fetch {:?} is not under the request",
            f.attributes
        );
        assert!(f.attributes["url.full"].starts_with("http://127.0.0.1:"));
    }
    for peer in ["anchor", "intermediate"] {
        let served: Vec<&Exported> = of(&trace, peer)
            .into_iter()
            .filter(|s| s.kind == SpanKind::Server as i32)
            .collect();
        assert!(!served.is_empty(), "{peer}: {:?}", summary(&trace));
        for s in served {
            let parent = by_id
                .get(s.parent.as_slice())
                .unwrap_or_else(|| panic!("{peer}'s span has no parent in the trace"));
            assert_eq!(
                (parent.service.as_str(), parent.kind),
                ("resolver", SpanKind::Client as i32),
                "{peer}'s request span must continue the resolver's fetch"
            );
            assert_eq!(
                parent.attributes["url.full"].split('?').next().unwrap(),
                format!(
                    "{}{}",
                    anchor_or(&anchor, &intermediate, peer),
                    s.attributes["url.path"]
                ),
            );
        }
    }
    // The anchor answered the intermediate's Subordinate Statement there.
    assert!(
        of(&trace, "anchor")
            .iter()
            .any(|s| s.attributes.get("url.path").map(String::as_str) == Some("/fetch")),
        "{:?}",
        summary(&trace)
    );

    // Signatures made while answering are spans of that answer.
    assert!(
        trace
            .iter()
            .any(|s| s.name == "sign" && by_id.contains_key(s.parent.as_slice())),
        "{:?}",
        summary(&trace)
    );

    // An Admin API write: a request span with the write transaction and its commit inside.
    anchor
        .admin(
            Method::POST,
            "/entity-configuration/authority-hints",
            json!({"entity_id": "https://ta2.example"}),
        )
        .await;
    let mut found = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let all = spans.lock().unwrap().clone();
        let anchor_spans = of(&all, "anchor");
        let parent_of = |s: &Exported| anchor_spans.iter().find(|p| p.span_id == s.parent).copied();
        // request → db.write → db.commit
        found = anchor_spans.iter().any(|commit| {
            let Some(write) = parent_of(commit).filter(|_| commit.name == "db.commit") else {
                return false;
            };
            let Some(request) = parent_of(write) else {
                return false;
            };
            write.name == "db.write"
                && write.attributes["db.system.name"] == "sqlite"
                && request.name == "POST /api/v1/admin/entity-configuration/authority-hints"
                && request.attributes["http.response.status_code"] == "201"
        });
        if found {
            break;
        }
    }
    assert!(found, "no write transaction span from the anchor");
    drop((anchor, intermediate, resolver));
}

fn anchor_or<'a>(anchor: &'a Node, intermediate: &'a Node, peer: &str) -> &'a str {
    if peer == "anchor" {
        &anchor.id
    } else {
        &intermediate.id
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[tokio::test]
async fn spans_are_exported_over_otlp_grpc_and_queued_ones_are_sent_at_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let (otlp, spans) = grpc_receiver().await;
    let node = Node::start(
        dir.path(),
        "grpc",
        &[
            ("SVC_TRACING_ENABLED", "true".into()),
            ("SVC_TRACING_PROTOCOL", "grpc".into()),
            ("SVC_TRACING_ENDPOINT", otlp),
            ("SVC_TRACING_SERVICE_NAME", "over-grpc".into()),
            // Nothing is sent on schedule: only the shutdown can deliver the spans.
            ("OTEL_BSP_SCHEDULE_DELAY", "3600000".into()),
        ],
    )
    .await;
    let r = http()
        .get(format!("{}/.well-known/openid-federation", node.id))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let ok = Command::new("kill")
        .args(["-TERM", &node.child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -TERM failed");
    let mut found = false;
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        found = spans.lock().unwrap().iter().any(|s| {
            s.service == "over-grpc"
                && s.name == "GET /.well-known/openid-federation"
                && s.attributes
                    .get("http.response.status_code")
                    .map(String::as_str)
                    == Some("200")
        });
        if found {
            break;
        }
    }
    let log = std::fs::read_to_string(&node.log).unwrap_or_default();
    assert!(found, "no span arrived over gRPC:\n{log}");
}

#[tokio::test]
async fn an_unsampled_request_makes_no_span_and_a_trusted_peers_decision_stands() {
    let dir = tempfile::tempdir().unwrap();
    let (otlp, spans) = receiver().await;
    // No new trace is sampled here; a trusted caller's sampled trace is continued.
    let node = Node::start(
        dir.path(),
        "ratio-zero",
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", otlp),
            ("OTEL_SERVICE_NAME", "ratio-zero".into()),
            ("SVC_TRACING_SAMPLE_RATIO", "0".into()),
            ("SVC_TRACING_TRUSTED_PEERS", "127.0.0.1".into()),
        ],
    )
    .await;
    let ec = format!("{}/.well-known/openid-federation", node.id);
    // Unsampled: a new trace, and a trusted caller's trace whose flags say "not sampled". The
    // Admin API write signs a new Entity Configuration and commits: none of it may turn up
    // as a trace of its own either.
    assert_eq!(http().get(&ec).send().await.unwrap().status(), 200);
    let not_sampled = "00-1bf7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
    let r = http()
        .get(&ec)
        .header("traceparent", not_sampled)
        .send()
        .await;
    assert_eq!(r.unwrap().status(), 200);
    node.admin(
        reqwest::Method::POST,
        "/entity-configuration/authority-hints",
        json!({"entity_id": "https://ta.example"}),
    )
    .await;
    assert_eq!(http().get(&ec).send().await.unwrap().status(), 200);
    // Sampled by the trusted caller: exported, after everything above had ended.
    let sampled = "2af7651916cd43dd8448eb211c80319c";
    let r = http()
        .get(&ec)
        .header("traceparent", format!("00-{sampled}-b7ad6b7169203331-01"))
        .send()
        .await;
    assert_eq!(r.unwrap().status(), 200);
    let mut exported = Vec::new();
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        exported = of(&spans.lock().unwrap(), "ratio-zero")
            .into_iter()
            .cloned()
            .collect();
        if exported.iter().any(|s| hex(&s.trace_id) == sampled) {
            break;
        }
    }
    let names: Vec<(String, String)> = exported
        .iter()
        .map(|s| (hex(&s.trace_id), s.name.clone()))
        .collect();
    assert!(
        exported.iter().all(|s| hex(&s.trace_id) == sampled) && !exported.is_empty(),
        "only the trusted caller's sampled trace is exported: {names:?}"
    );
    assert_eq!(exported[0].name, "GET /.well-known/openid-federation");
}
