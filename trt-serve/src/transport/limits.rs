//! Bounds checked at the edge, before a request costs memory or a queue slot.
//! Each one answers 4xx naming the limit ([`crate::error::ServeError::TooLarge`]);
//! a request that would wait behind too many others answers 503 at once.

use std::time::Duration;

/// The server's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest HTTP body or gRPC message, in bytes.
    pub max_body_bytes: usize,
    /// Most elements in one tensor.
    pub max_tensor_elements: usize,
    /// Longest text (bytes of one BYTES element) a text model takes.
    pub max_text_bytes: usize,
    /// Most requests waiting per model version, when its config sets no `max_queue_size`.
    pub max_queue: usize,
    /// How long an unload or a version switch waits for requests in flight.
    pub drain_timeout: Duration,
    /// Longest time one inference request may take from admission to its
    /// answer (503 past it); `None`: no bound beyond the schedule policy's
    /// queue timeout.
    pub infer_timeout: Option<Duration>,
    /// Cut TEI and OpenAI inputs past the model's length where the request
    /// does not say (TEI's `--auto-truncate`; what sentence-transformers
    /// always does); otherwise they are refused (413) unless the request
    /// sets `truncate: true`.
    pub auto_truncate: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 16 << 20,
            max_tensor_elements: 1 << 20,
            max_text_bytes: 64 << 10,
            max_queue: 1024,
            drain_timeout: Duration::from_secs(30),
            infer_timeout: Some(Duration::from_secs(60)),
            auto_truncate: false,
        }
    }
}
