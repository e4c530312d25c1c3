//! Minimal axum responder: the "practical limit of this stack" reference of `deploy/bench/`.
//!
//! Usage: `bench-responder 127.0.0.1:PORT /path=FILE=CONTENT_TYPE ... [*=DIR=CONTENT_TYPE |
//! ?=FILE=CONTENT_TYPE]`
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
//!
//! `?=FILE=CONTENT_TYPE` answers every other request by its path and query from one table read
//! from `FILE`: records of a line with the path and query, a line with the answer's length in
//! bytes, then the answer; a request for anything else gets `404`. It is the reference of the
//! hosted entities' fetch (`hosted_pairs.sh`): the same statements at the same paths and
//! queries, found with one hash-table lookup, whichever entity they come from.

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
        if path == "*" || path == "?" {
            let fallback = if path == "*" {
                numbered(file, ctype).map(|f| router.fallback(f))
            } else {
                keyed(file, ctype).map(|f| router.fallback(f))
            };
            router = match fallback {
                Ok(with_fallback) => with_fallback,
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
            any(move || std::future::ready(answer(&body, &ctype))),
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

/// `200` with `body` (a cheap clone) as `ctype`: every answer of every form.
fn answer(body: &Bytes, ctype: &HeaderValue) -> Response {
    let mut r: Response = body.clone().into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, ctype.clone());
    r
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
        std::future::ready(answer(&answers[n], &ctype))
    })
}

/// The fallback of `?=FILE=CONTENT_TYPE`: the answer kept for the request's path and query
/// (see the module's documentation), or `404`.
fn keyed(
    file: &str,
    ctype: &str,
) -> Result<impl Fn(Uri) -> std::future::Ready<Response> + Clone + Send + 'static, String> {
    let all = std::fs::read(file).map_err(|e| format!("cannot read {file}: {e}"))?;
    let all = Bytes::from(all);
    let mut answers = std::collections::HashMap::new();
    let mut at = 0;
    while at < all.len() {
        let line = |from: usize| -> Result<(String, usize), String> {
            let end = all[from..]
                .iter()
                .position(|b| *b == b'\n')
                .ok_or_else(|| format!("{file}: a record cut short at byte {from}"))?;
            let text = std::str::from_utf8(&all[from..from + end])
                .map_err(|_| format!("{file}: not UTF-8 at byte {from}"))?;
            Ok((text.to_owned(), from + end + 1))
        };
        let (key, next) = line(at)?;
        let (len, next) = line(next)?;
        let len: usize = len
            .parse()
            .map_err(|_| format!("{file}: bad length {len:?} for {key}"))?;
        let end = next
            .checked_add(len)
            .filter(|end| *end <= all.len())
            .ok_or_else(|| format!("{file}: the answer for {key} is cut short"))?;
        answers.insert(key, all.slice(next..end));
        at = end;
    }
    if answers.is_empty() {
        return Err(format!("no answers in {file}"));
    }
    let ctype = HeaderValue::from_str(ctype).map_err(|_| format!("bad content type {ctype}"))?;
    let answers = std::sync::Arc::new(answers);
    Ok(move |uri: Uri| {
        let key = uri.path_and_query().map_or(uri.path(), |pq| pq.as_str());
        std::future::ready(match answers.get(key) {
            Some(body) => answer(body, &ctype),
            None => axum::http::StatusCode::NOT_FOUND.into_response(),
        })
    })
}
