//! CORS from `server.cors.*` (main port) and `api.admin.cors.*` (Admin API).
//!
//! `allow_origins: "*"` together with `allow_credentials: true` is refused at start-up, with a
//! message naming the option: browsers reject the literal combination, and the usual
//! workaround (echoing whatever origin asks) would let every web site an operator visits use
//! the operator's credentials. The admin defaults have both, so enabling admin CORS means
//! listing the origins of the consoles that may call it. With credentials, `*` for methods and
//! headers means "echo the request's"; `expose_headers: "*"` has no such equivalent and is
//! refused like the origins.

use std::time::Duration;

use axum::http::{HeaderName, HeaderValue, Method};
use pharos_shared::config::{AdminCors, CorsSettings};
use tower_http::cors::{AllowHeaders, AllowMethods, AllowOrigin, CorsLayer, ExposeHeaders};

use pharos_controlplane::error::{Error, Result};

/// The CORS options common to both listeners.
#[derive(Debug, Clone)]
pub struct CorsSpec {
    /// Configuration prefix, for error messages (`server.cors` or `api.admin.cors`).
    pub name: &'static str,
    /// Add CORS headers at all.
    pub enabled: bool,
    /// Comma-separated origins or `*`.
    pub allow_origins: String,
    /// Comma-separated methods or `*`.
    pub allow_methods: String,
    /// Comma-separated request headers or `*`.
    pub allow_headers: String,
    /// Send `Access-Control-Allow-Credentials: true`.
    pub allow_credentials: bool,
    /// Comma-separated exposed response headers or `*`.
    pub expose_headers: String,
    /// Preflight cache seconds (0 = header omitted).
    pub max_age: u64,
}

impl From<&CorsSettings> for CorsSpec {
    fn from(c: &CorsSettings) -> Self {
        Self {
            name: "server.cors",
            enabled: c.enabled,
            allow_origins: c.allow_origins.clone(),
            allow_methods: c.allow_methods.clone(),
            allow_headers: c.allow_headers.clone(),
            allow_credentials: c.allow_credentials,
            expose_headers: c.expose_headers.clone(),
            max_age: c.max_age,
        }
    }
}

impl From<&AdminCors> for CorsSpec {
    fn from(c: &AdminCors) -> Self {
        Self {
            name: "api.admin.cors",
            enabled: c.enabled,
            allow_origins: c.allow_origins.clone(),
            allow_methods: c.allow_methods.clone(),
            allow_headers: c.allow_headers.clone(),
            allow_credentials: c.allow_credentials,
            expose_headers: c.expose_headers.clone(),
            max_age: c.max_age,
        }
    }
}

fn items(list: &str) -> Vec<&str> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

fn is_star(list: &str) -> bool {
    items(list) == ["*"]
}

fn parsed<T>(
    spec: &CorsSpec,
    field: &str,
    list: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Vec<T>> {
    items(list)
        .into_iter()
        .map(|s| {
            parse(s).ok_or_else(|| {
                Error::Internal(format!("{}.{field}: {s:?} is not valid", spec.name))
            })
        })
        .collect()
}

/// The CORS layer for `spec`, or `None` when CORS is disabled.
pub fn layer(spec: &CorsSpec) -> Result<Option<CorsLayer>> {
    if !spec.enabled {
        return Ok(None);
    }
    let creds = spec.allow_credentials;
    let origin = if is_star(&spec.allow_origins) {
        if creds {
            return Err(Error::Internal(format!(
                "{0}.allow_origins \"*\" cannot be combined with {0}.allow_credentials: it would \
                 let every web site act with the operator's credentials; list the allowed origins",
                spec.name
            )));
        }
        AllowOrigin::any()
    } else {
        AllowOrigin::list(parsed(spec, "allow_origins", &spec.allow_origins, |s| {
            HeaderValue::from_str(s).ok()
        })?)
    };
    let methods = if is_star(&spec.allow_methods) {
        if creds {
            AllowMethods::mirror_request()
        } else {
            AllowMethods::any()
        }
    } else {
        AllowMethods::list(parsed(spec, "allow_methods", &spec.allow_methods, |s| {
            Method::from_bytes(s.to_ascii_uppercase().as_bytes()).ok()
        })?)
    };
    let headers = if is_star(&spec.allow_headers) {
        if creds {
            AllowHeaders::mirror_request()
        } else {
            AllowHeaders::any()
        }
    } else {
        AllowHeaders::list(parsed(spec, "allow_headers", &spec.allow_headers, |s| {
            HeaderName::from_bytes(s.as_bytes()).ok()
        })?)
    };
    let expose = if is_star(&spec.expose_headers) {
        if creds {
            return Err(Error::Internal(format!(
                "{0}.expose_headers \"*\" cannot be combined with {0}.allow_credentials: list the headers",
                spec.name
            )));
        }
        ExposeHeaders::any()
    } else {
        ExposeHeaders::list(parsed(spec, "expose_headers", &spec.expose_headers, |s| {
            HeaderName::from_bytes(s.as_bytes()).ok()
        })?)
    };
    let mut layer = CorsLayer::new()
        .allow_origin(origin)
        .allow_methods(methods)
        .allow_headers(headers)
        .expose_headers(expose)
        .allow_credentials(creds);
    if spec.max_age > 0 {
        layer = layer.max_age(Duration::from_secs(spec.max_age));
    }
    Ok(Some(layer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_with_credentials_are_refused() {
        let mut c = AdminCors {
            enabled: true,
            ..AdminCors::default()
        };
        // The defaults: any origin, with credentials.
        let e = layer(&(&c).into()).unwrap_err().to_string();
        assert!(e.contains("api.admin.cors.allow_origins"), "{e}");
        c.allow_origins = "https://console.example".into();
        assert!(layer(&(&c).into()).unwrap().is_some());
        c.expose_headers = "*".into();
        let e = layer(&(&c).into()).unwrap_err().to_string();
        assert!(e.contains("api.admin.cors.expose_headers"), "{e}");
        c.expose_headers = String::new();
        c.allow_origins = "https://a.example, bad\nvalue".into();
        assert!(layer(&(&c).into()).is_err());
    }
}
