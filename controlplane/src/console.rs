//! The admin console: a few static files (HTML, JavaScript modules, CSS) under `/console/`,
//! compiled into the binary so that it works on an isolated network and needs nothing else to
//! run.
//!
//! The console is a client of the Admin API: the pages hold no data, and every value they show
//! or change goes through `/api/v1/admin` with the operator's Basic credentials (a login form,
//! not the browser's own dialog). So the files themselves are served without authentication, as
//! the API documentation page is, and everything behind them is as protected as the API.
//!
//! The files answer with a strict Content Security Policy (scripts, styles and requests from
//! this origin only, no inline code, no framing) and an `ETag` derived from their content, so a
//! browser revalidates cheaply and never runs a stale script after an upgrade.

use std::sync::LazyLock;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use sha2::{Digest, Sha256};

/// Where the console lives.
pub const PREFIX: &str = "/console";

/// The policy of every console response: nothing but this origin, no inline code.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
     connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

/// One embedded file.
struct Asset {
    name: &'static str,
    body: &'static [u8],
    content_type: &'static str,
}

macro_rules! asset {
    ($name:literal, $type:expr) => {
        Asset {
            name: $name,
            body: include_bytes!(concat!("../console/", $name)),
            content_type: $type,
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the console; anything else under `/console/` is a 404.
const ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("console.css", "text/css; charset=utf-8"),
    asset!("app.js", JS),
    asset!("api.js", JS),
    asset!("dom.js", JS),
    asset!("plots.js", JS),
    asset!("overview.js", JS),
    asset!("subordinates.js", JS),
    asset!("anchors.js", JS),
    asset!("trustmarks.js", JS),
    asset!("endpoints.js", JS),
    asset!("editor.js", JS),
    asset!("entity.js", JS),
    asset!("keys.js", JS),
    asset!("map.js", JS),
    asset!("schema.js", JS),
    asset!("collection.js", JS),
    asset!("deployment.js", JS),
    asset!("operations.js", JS),
    asset!("stats.js", JS),
    asset!("explain.js", JS),
    asset!("favicon.svg", "image/svg+xml"),
];

/// Strong ETags (a content hash), computed once.
static ETAGS: LazyLock<Vec<HeaderValue>> = LazyLock::new(|| {
    ASSETS
        .iter()
        .map(|a| {
            let digest = Sha256::digest(a.body);
            let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
            HeaderValue::from_str(&format!("\"{hex}\""))
                .unwrap_or(HeaderValue::from_static("\"0\""))
        })
        .collect()
});

/// The response for `name` given the request's `If-None-Match` (`None`: no such file).
fn serve(name: &str, if_none_match: Option<&str>) -> Option<Response> {
    let i = ASSETS.iter().position(|a| a.name == name)?;
    let asset = &ASSETS[i];
    let etag = ETAGS[i].clone();
    let fresh = if_none_match.is_some_and(|v| {
        v.split(',')
            .any(|t| t.trim().trim_start_matches("W/") == etag.to_str().unwrap_or(""))
    });
    let mut r = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        asset.body.into_response()
    };
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    h.insert(header::ETAG, etag);
    // Revalidate every time: a 304 costs little, and a new release is picked up at once.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    Some(r)
}

fn answer(name: &str, headers: &HeaderMap) -> Response {
    let inm = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok());
    serve(name, inm).unwrap_or_else(|| {
        let missing = format!("no console file {name:?}");
        pharos_runtime::error_body::json_error(StatusCode::NOT_FOUND, "not_found", &missing)
    })
}

/// `/console` (redirected to `/console/`), `/console/` (the page) and `/console/{file}`.
pub fn router() -> Router {
    Router::new()
        .route(
            PREFIX,
            get(|| async { Redirect::permanent(&format!("{PREFIX}/")) }),
        )
        .route(
            &format!("{PREFIX}/"),
            get(|headers: HeaderMap| async move { answer("index.html", &headers) }),
        )
        .route(
            &format!("{PREFIX}/{{*file}}"),
            get(|Path(file): Path<String>, headers: HeaderMap| async move {
                answer(&file, &headers)
            }),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_has_its_type_and_unknown_names_are_absent() {
        let r = serve("app.js", None).unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()[header::CONTENT_TYPE], JS);
        assert!(
            r.headers()[header::CONTENT_SECURITY_POLICY]
                .to_str()
                .unwrap()
                .contains("script-src 'self'")
        );
        assert!(serve("nope.js", None).is_none());
        assert!(serve("../Cargo.toml", None).is_none());
        assert!(serve("", None).is_none());
    }

    #[test]
    fn a_matching_etag_is_answered_304_and_a_stale_one_200() {
        let r = serve("console.css", None).unwrap();
        let etag = r.headers()[header::ETAG].to_str().unwrap().to_owned();
        let again = serve("console.css", Some(&etag)).unwrap();
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(
            serve("console.css", Some("\"old\"")).unwrap().status(),
            StatusCode::OK
        );
        assert_ne!(ETAGS[0], ETAGS[1], "different files have different ETags");
    }

    #[test]
    fn html_loads_no_inline_script_or_style() {
        // The CSP forbids inline code: every script and style must be a file of its own.
        for a in ASSETS.iter().filter(|a| a.name.ends_with(".html")) {
            let text = std::str::from_utf8(a.body).unwrap();
            assert!(!text.contains("<script>"), "{}", a.name);
            assert!(!text.contains("style="), "{}", a.name);
            assert!(!text.contains("<style"), "{}", a.name);
            assert!(!text.contains("onclick"), "{}", a.name);
        }
    }
}
