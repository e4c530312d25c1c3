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
use pharos_shared::config::{CommaList, CorsSettings};
use tower_http::cors::{AllowHeaders, AllowMethods, AllowOrigin, CorsLayer, ExposeHeaders};

use pharos_controlplane::error::{Error, Result};

/// Each item of `list` parsed, or an error naming `{name}.{field}` and the item.
fn parsed<T>(
    name: &str,
    field: &str,
    list: &CommaList,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Vec<T>> {
    list.items()
        .iter()
        .map(|s| {
            parse(s).ok_or_else(|| Error::Internal(format!("{name}.{field}: {s:?} is not valid")))
        })
        .collect()
}

/// The CORS layer for the settings at `name` (`server.cors` or `api.admin.cors`, for error
/// messages), or `None` when CORS is disabled.
pub fn layer(name: &str, c: &CorsSettings) -> Result<Option<CorsLayer>> {
    if !c.enabled {
        return Ok(None);
    }
    let creds = c.allow_credentials;
    let origin = if c.allow_origins.is_star() {
        if creds {
            return Err(Error::Internal(format!(
                "{name}.allow_origins \"*\" cannot be combined with {name}.allow_credentials: it would \
                 let every web site act with the operator's credentials; list the allowed origins"
            )));
        }
        AllowOrigin::any()
    } else {
        AllowOrigin::list(parsed(name, "allow_origins", &c.allow_origins, |s| {
            HeaderValue::from_str(s).ok()
        })?)
    };
    let methods = if c.allow_methods.is_star() {
        if creds {
            AllowMethods::mirror_request()
        } else {
            AllowMethods::any()
        }
    } else {
        AllowMethods::list(parsed(name, "allow_methods", &c.allow_methods, |s| {
            Method::from_bytes(s.to_ascii_uppercase().as_bytes()).ok()
        })?)
    };
    let headers = if c.allow_headers.is_star() {
        if creds {
            AllowHeaders::mirror_request()
        } else {
            AllowHeaders::any()
        }
    } else {
        AllowHeaders::list(parsed(name, "allow_headers", &c.allow_headers, |s| {
            HeaderName::from_bytes(s.as_bytes()).ok()
        })?)
    };
    let expose = if c.expose_headers.is_star() {
        if creds {
            return Err(Error::Internal(format!(
                "{name}.expose_headers \"*\" cannot be combined with {name}.allow_credentials: list the headers"
            )));
        }
        ExposeHeaders::any()
    } else {
        ExposeHeaders::list(parsed(name, "expose_headers", &c.expose_headers, |s| {
            HeaderName::from_bytes(s.as_bytes()).ok()
        })?)
    };
    let mut layer = CorsLayer::new()
        .allow_origin(origin)
        .allow_methods(methods)
        .allow_headers(headers)
        .expose_headers(expose)
        .allow_credentials(creds);
    if c.max_age > 0 {
        layer = layer.max_age(Duration::from_secs(c.max_age));
    }
    Ok(Some(layer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_with_credentials_are_refused() {
        let mut c = CorsSettings {
            enabled: true,
            ..CorsSettings::admin()
        };
        // The defaults: any origin, with credentials.
        let e = layer("api.admin.cors", &c).unwrap_err().to_string();
        assert!(e.contains("api.admin.cors.allow_origins"), "{e}");
        c.allow_origins = "https://console.example".into();
        assert!(layer("api.admin.cors", &c).unwrap().is_some());
        c.expose_headers = "*".into();
        let e = layer("api.admin.cors", &c).unwrap_err().to_string();
        assert!(e.contains("api.admin.cors.expose_headers"), "{e}");
        c.expose_headers = CommaList::default();
        c.allow_origins = "https://a.example, bad\nvalue".into();
        assert!(layer("api.admin.cors", &c).is_err());
    }
}
