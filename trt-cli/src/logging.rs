//! The process's log: every `tracing` event of the libraries (and `log`
//! record of dependencies, bridged by tracing-log) on stderr, filtered by
//! `RUST_LOG`, as text or as JSON lines.
//!
//! | | default when `RUST_LOG` is unset or empty |
//! |---|---|
//! | `trt serve` | `info` (`-vv` debug, `-vvv` trace) |
//! | other commands | nothing (`-v` warn, `-vv` info, `-vvv` debug): their result and their one-line error say it |
//!
//! `RUST_LOG` takes `tracing-subscriber`'s `EnvFilter` directives
//! (`warn,trt_serve=debug`, `trt_serve::request=debug`, ...); a malformed one
//! is a usage error, not silently ignored. TensorRT's own messages come
//! through the `trt` target; `-v` still sets which of them TensorRT produces
//! at all.
//!
//! JSON lines are tracing-subscriber's format with the event's fields at the
//! top level: `{"timestamp", "level", "message", ..., "target", "span",
//! "spans"}`, where `span` is the innermost span (for a server request:
//! `{"name": "request", "request_id": ...}`).

use tracing_subscriber::filter::{EnvFilter, LevelFilter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::error::{CliError, Result};

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// The level shown when `RUST_LOG` says nothing.
pub fn default_level(serve: bool, verbose: u8) -> LevelFilter {
    match (serve, verbose) {
        (true, 0 | 1) => LevelFilter::INFO,
        (true, 2) => LevelFilter::DEBUG,
        (true, _) => LevelFilter::TRACE,
        (false, 0) => LevelFilter::OFF,
        (false, 1) => LevelFilter::WARN,
        (false, 2) => LevelFilter::INFO,
        (false, _) => LevelFilter::DEBUG,
    }
}

/// The filter: `RUST_LOG`'s directives when it has any, else `default`.
pub fn filter(rust_log: Option<&str>, default: LevelFilter) -> Result<EnvFilter> {
    match rust_log.map(str::trim).filter(|s| !s.is_empty()) {
        Some(directives) => EnvFilter::builder()
            .with_default_directive(LevelFilter::ERROR.into())
            .parse(directives)
            .map_err(|e| CliError::with_code(format!("RUST_LOG={directives:?}: {e}"), 2)),
        None => Ok(EnvFilter::default().add_directive(default.into())),
    }
}

/// Keeps the OpenTelemetry exporter (with `--otlp-endpoint`) until the
/// process ends; dropping it flushes the spans still batched.
#[derive(Default)]
pub struct LogGuard {
    #[cfg(feature = "otel")]
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Drop for LogGuard {
    fn drop(&mut self) {
        #[cfg(feature = "otel")]
        if let Some(p) = self.provider.take() {
            let _ = p.shutdown();
        }
    }
}

/// Installs the subscriber for the whole process (once; a second call is a
/// no-op), exporting spans to `otlp` where given (`otel` feature).
pub fn init(format: LogFormat, default: LevelFilter, otlp: Option<&str>) -> Result<LogGuard> {
    let filter = filter(std::env::var("RUST_LOG").ok().as_deref(), default)?;
    let text = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(false);
    match format {
        LogFormat::Text => install(filter, text, otlp),
        LogFormat::Json => install(filter, text.json().flatten_event(true), otlp),
    }
}

type Filtered = tracing_subscriber::layer::Layered<EnvFilter, tracing_subscriber::Registry>;

fn install<L>(filter: EnvFilter, format: L, otlp: Option<&str>) -> Result<LogGuard>
where
    L: tracing_subscriber::Layer<Filtered> + Send + Sync + 'static,
{
    let base = tracing_subscriber::registry().with(filter).with(format);
    #[cfg(feature = "otel")]
    if let Some(endpoint) = otlp {
        let (layer, provider) = otel::layer(endpoint)?;
        // Only a subscriber installed earlier in this process makes it fail; that one stays.
        let _ = base.with(layer).try_init();
        return Ok(LogGuard { provider: Some(provider) });
    }
    #[cfg(not(feature = "otel"))]
    let _ = otlp;
    let _ = base.try_init();
    Ok(LogGuard::default())
}

/// The OTLP/HTTP export of spans (`otel` feature).
#[cfg(feature = "otel")]
mod otel {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::WithExportConfig;
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use tracing_subscriber::registry::LookupSpan;

    use crate::error::{CliError, Result};

    /// The layer that turns spans into OpenTelemetry spans, and its provider
    /// (a batch processor on its own thread, exporting to `endpoint`, e.g.
    /// `http://collector:4318/v1/traces`).
    pub fn layer<S>(endpoint: &str) -> Result<(impl tracing_subscriber::Layer<S>, SdkTracerProvider)>
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(endpoint)
            .build()
            .map_err(|e| CliError::new(format!("--otlp-endpoint {endpoint}: {e}")))?;
        let resource = opentelemetry_sdk::Resource::builder().with_service_name("trt").build();
        let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build();
        let tracer = provider.tracer("trt");
        Ok((tracing_opentelemetry::layer().with_tracer(tracer), provider))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_log_overrides_the_default() {
        let f = filter(None, LevelFilter::INFO).unwrap();
        assert_eq!(f.max_level_hint(), Some(LevelFilter::INFO));
        let f = filter(Some("  "), LevelFilter::WARN).unwrap();
        assert_eq!(f.max_level_hint(), Some(LevelFilter::WARN));
        let f = filter(Some("warn,trt_serve::request=debug"), LevelFilter::INFO).unwrap();
        assert_eq!(f.max_level_hint(), Some(LevelFilter::DEBUG));
        assert!(filter(Some("trt_serve=loud"), LevelFilter::INFO).is_err());
    }
}
