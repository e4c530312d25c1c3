//! Minimal axum responder: the "practical limit of this stack" reference of `deploy/bench/`.
//!
//! Usage: `bench-responder 127.0.0.1:PORT /path=FILE=CONTENT_TYPE ... [*=DIR=CONTENT_TYPE]`
//!
//! Every `/path` answers `200` with the bytes of `FILE` (read once at start, served from memory
//! as a cheap `Bytes` clone) and the given content type, whatever the query string. No
//! middleware, default tokio multi-thread runtime, HTTP/1.1 with keep-alive — what the same
//! stack does when it has nothing to compute.
//!
//! `*=DIR=CONTENT_TYPE` answers every other path from the files `DIR/0`, `DIR/1`, … (read up to
//! the first missing number): a path that starts with `/e` and a number `n` gets file `n`, any
//! other gets file `0`, through the same handler. It is the reference of the hosted entities'
//! benchmark (`hosted_pairs.sh`): one answer reused against many different ones, with nothing
//! else different, shows what serving distinct bytes costs this stack on this host.

use std::process::ExitCode;

use axum::Router;
use axum::http::{HeaderValue, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use bytes::Bytes;

fn usage(msg: &str) -> ExitCode {
    eprintln!("{msg}\nusage: bench-responder ADDR /path=FILE=CONTENT_TYPE ...");
    ExitCode::from(64)
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(addr) = args.next() else {
        return usage("missing ADDR");
    };
    let mut router = Router::new();
    for spec in args {
        let mut parts = spec.splitn(3, '=');
        let (Some(path), Some(file), Some(ctype)) = (parts.next(), parts.next(), parts.next())
        else {
            return usage(&format!("bad route {spec}"));
        };
        if path == "*" {
            router = match numbered(file, ctype) {
                Ok(fallback) => router.fallback(fallback),
                Err(e) => return usage(&e),
            };
            continue;
        }
        let body = match std::fs::read(file) {
            Ok(b) => Bytes::from(b),
            Err(e) => return usage(&format!("cannot read {file}: {e}")),
        };
        let Ok(ctype) = HeaderValue::from_str(ctype) else {
            return usage(&format!("bad content type {ctype}"));
        };
        router = router.route(
            path,
            // Any method: the POST-only trust_mark_status endpoint is compared against it too.
            any(move || {
                let (body, ctype) = (body.clone(), ctype.clone());
                async move {
                    let mut r: Response = body.into_response();
                    r.headers_mut().insert(header::CONTENT_TYPE, ctype);
                    r
                }
            }),
        );
    }
    let listener = match tokio::net::TcpListener::bind(&addr).await {
        Ok(l) => l,
        Err(e) => return usage(&format!("cannot bind {addr}: {e}")),
    };
    match axum::serve(listener, router).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("server error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The fallback of `*=DIR=CONTENT_TYPE`: the answer numbered in the path (see the module's
/// documentation), from the files `DIR/0`, `DIR/1`, ….
fn numbered(
    dir: &str,
    ctype: &str,
) -> Result<impl Fn(Uri) -> std::future::Ready<Response> + Clone + Send + 'static, String> {
    let mut answers = Vec::new();
    while let Ok(b) = std::fs::read(format!("{dir}/{}", answers.len())) {
        answers.push(Bytes::from(b));
    }
    if answers.is_empty() {
        return Err(format!("no file {dir}/0"));
    }
    let ctype = HeaderValue::from_str(ctype).map_err(|_| format!("bad content type {ctype}"))?;
    let answers = std::sync::Arc::new(answers);
    Ok(move |uri: Uri| {
        let n = uri
            .path()
            .strip_prefix("/e")
            .and_then(|rest| rest.split('/').next())
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n < answers.len())
            .unwrap_or(0);
        let mut r: Response = answers[n].clone().into_response();
        r.headers_mut().insert(header::CONTENT_TYPE, ctype.clone());
        std::future::ready(r)
    })
}
