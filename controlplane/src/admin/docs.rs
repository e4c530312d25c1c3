//! The Admin API's OpenAPI document and its browsable page, served without authentication (as
//! the reference service does) so that operators and tools can discover the API before they
//! have credentials.
//!
//! The page is a small self-contained HTML file that renders `openapi.json` in the browser: no
//! CDN, no bundled Swagger UI, so it works on an isolated network.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;

use super::PREFIX;

/// Path of the browsable documentation page (as the interface specifies).
pub const DOCS_PATH: &str = "/admin/api/v1/docs";

const PAGE: &str = include_str!("docs.html");

fn fixed(body: Bytes, content_type: &'static str) -> Response {
    let mut r = body.into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// `openapi.json`, `openapi.yaml` and `docs` under [`PREFIX`], and the page at [`DOCS_PATH`].
pub fn router(doc: &utoipa::openapi::OpenApi) -> Router {
    let json = Bytes::from(doc.to_pretty_json().unwrap_or_else(|e| {
        tracing::error!(error = %e, "cannot render the OpenAPI document as JSON");
        "{}".into()
    }));
    let yaml = Bytes::from(doc.to_yaml().unwrap_or_else(|e| {
        tracing::error!(error = %e, "cannot render the OpenAPI document as YAML");
        "{}\n".into()
    }));
    let page = || async {
        fixed(
            Bytes::from_static(PAGE.as_bytes()),
            "text/html; charset=utf-8",
        )
    };
    Router::new()
        .route(
            &format!("{PREFIX}/openapi.json"),
            get(move || async move { fixed(json, "application/json") }),
        )
        .route(
            &format!("{PREFIX}/openapi.yaml"),
            get(move || async move { fixed(yaml, "application/yaml") }),
        )
        .route(DOCS_PATH, get(page))
        .route(&format!("{PREFIX}/docs"), get(page))
}
