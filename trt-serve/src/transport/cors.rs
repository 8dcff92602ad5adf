//! CORS for browser clients (`--cors-allow-origin`, repeatable; `*`: any
//! origin), tower-http's layer around the whole HTTP router, outside the
//! API-key check so that preflight requests (which carry no key) are
//! answered. Allowed: GET, POST, OPTIONS; the request headers a KServe or
//! TEI client sends (`Content-Type`, `Authorization`,
//! `Inference-Header-Content-Length`); the last is exposed on responses
//! so a browser can split a binary response.

use axum::http::{header, HeaderName, HeaderValue, Method};
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::error::{ServeError, ServeResult};

const INFERENCE_HEADER: HeaderName = HeaderName::from_static("inference-header-content-length");

/// Checks each origin (`*`, or `scheme://host[:port]`).
pub fn check(origins: &[String]) -> ServeResult<()> {
    for o in origins.iter().filter(|o| o.as_str() != "*") {
        let ok = (o.starts_with("http://") || o.starts_with("https://")) && !o.ends_with('/') && HeaderValue::from_str(o).is_ok();
        if !ok {
            return Err(ServeError::invalid(format!("--cors-allow-origin {o:?}: an origin is '*' or scheme://host[:port], no path")));
        }
    }
    Ok(())
}

/// The layer for `origins` (checked by [`check`]); `None` when there are none.
pub fn layer(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST, Method::OPTIONS])
            .allow_headers([header::CONTENT_TYPE, header::AUTHORIZATION, INFERENCE_HEADER])
            .expose_headers([INFERENCE_HEADER]),
    )
}
