//! What the server tells its operators: metrics and traces.
//!
//! | module | what it does |
//! |---|---|
//! | `metrics` | Prometheus metrics under Triton's names, per version and per route |
//! | `gpu_metrics` | NVML readings (utilization, memory, power) where the driver installed it |
//! | `request_span` | one `tracing` span per HTTP and gRPC request, with its `x-request-id` |
//! | `traceparent` | W3C Trace Context's `traceparent` header, parsed strictly |

pub mod gpu_metrics;
pub mod metrics;
pub mod request_span;
pub mod traceparent;
