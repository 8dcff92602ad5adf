//! TensorRT's log, routed to `tracing` (or a logger of your own), and the
//! per-call capture of errors that makes error values self-explanatory.
//!
//! TensorRT keeps one logger per process, so this is process-wide: the shim owns
//! one C++ `ILogger` and one `IErrorRecorder`, both forwarding here. Every call
//! into TensorRT that can fail runs inside a capture, which collects, on the
//! calling thread, the errors TensorRT reported during that call. Messages from
//! TensorRT's own worker threads still reach the logger but cannot be tied to a
//! call.

use std::cell::RefCell;
use std::sync::RwLock;

use crate::{ErrorCode, TrtMessage};

/// Severity of a TensorRT log message (`ILogger::Severity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// An internal error; TensorRT may be unusable afterwards.
    InternalError = 0,
    /// An application error.
    Error = 1,
    /// A warning.
    Warning = 2,
    /// Information.
    Info = 3,
    /// Verbose messages with debugging information.
    Verbose = 4,
}

impl Severity {
    fn from_raw(raw: i32) -> Severity {
        match raw {
            0 => Severity::InternalError,
            1 => Severity::Error,
            2 => Severity::Warning,
            3 => Severity::Info,
            _ => Severity::Verbose,
        }
    }

    /// The `tracing` level this severity maps to.
    pub fn log_level(self) -> tracing::Level {
        match self {
            Severity::InternalError | Severity::Error => tracing::Level::ERROR,
            Severity::Warning => tracing::Level::WARN,
            Severity::Info => tracing::Level::INFO,
            Severity::Verbose => tracing::Level::DEBUG,
        }
    }
}

/// Receives TensorRT's log messages. Must be cheap and must not call TensorRT.
pub trait Logger: Send + Sync {
    /// One message.
    fn log(&self, severity: Severity, message: &str);
}

/// The default logger: messages become `tracing` events under target `trt`
/// (and `log` records where no `tracing` subscriber is installed: tracing's
/// `log` feature).
struct TracingLogger;

impl Logger for TracingLogger {
    fn log(&self, severity: Severity, message: &str) {
        // tracing's macros take the level as a constant: one arm per level.
        match severity.log_level() {
            tracing::Level::ERROR => tracing::error!(target: "trt", "{message}"),
            tracing::Level::WARN => tracing::warn!(target: "trt", "{message}"),
            tracing::Level::INFO => tracing::info!(target: "trt", "{message}"),
            _ => tracing::debug!(target: "trt", "{message}"),
        }
    }
}

static LOGGER: RwLock<Option<Box<dyn Logger>>> = RwLock::new(None);

/// Replace the default logger (which forwards to `tracing`).
pub fn set_logger(logger: Box<dyn Logger>) {
    *LOGGER.write().unwrap_or_else(|e| e.into_inner()) = Some(logger);
}

/// Drop messages less severe than `threshold` inside the shim, before they cost
/// a string conversion. The default is [`Severity::Info`]. Errors always pass
/// (they are attached to the failing call), so a threshold above `Error` only
/// keeps them away from your logger by your own filtering.
pub fn set_log_threshold(threshold: Severity) {
    trt_sys::ffi::set_log_threshold(threshold as i32);
}

thread_local! {
    static CAPTURE: RefCell<Vec<Vec<TrtMessage>>> = const { RefCell::new(Vec::new()) };
}

fn push_captured(message: TrtMessage) {
    CAPTURE.with(|c| {
        if let Some(top) = c.borrow_mut().last_mut() {
            top.push(message);
        }
    });
}

fn on_log(raw: i32, message: &str) {
    let severity = Severity::from_raw(raw);
    if severity <= Severity::Error {
        push_captured(TrtMessage { code: None, text: message.to_owned() });
    }
    let guard = LOGGER.read().unwrap_or_else(|e| e.into_inner());
    match guard.as_ref() {
        Some(logger) => logger.log(severity, message),
        None => TracingLogger.log(severity, message),
    }
}

fn on_error(code: i32, description: &str) {
    push_captured(TrtMessage { code: Some(ErrorCode::from_raw(code)), text: description.to_owned() });
}

/// Connect the shim's logger and error recorder to this module (idempotent).
pub(crate) fn install() {
    trt_sys::callbacks::set_log_hook(on_log);
    trt_sys::callbacks::set_error_hook(on_error);
}

/// Run `f` and return, with its result, the errors TensorRT reported on this
/// thread while it ran. Nested captures each see only their own messages.
pub(crate) fn capture<R>(f: impl FnOnce() -> R) -> (R, Vec<TrtMessage>) {
    CAPTURE.with(|c| c.borrow_mut().push(Vec::new()));
    // A guard pops the frame even if `f` unwinds.
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            CAPTURE.with(|c| {
                c.borrow_mut().pop();
            });
        }
    }
    let pop = Pop;
    let r = f();
    let messages = CAPTURE.with(|c| c.borrow_mut().last_mut().map(std::mem::take).unwrap_or_default());
    drop(pop);
    (r, dedup(messages))
}

/// The recorder and the logger often report the same error twice; keep the coded one.
fn dedup(mut messages: Vec<TrtMessage>) -> Vec<TrtMessage> {
    let coded: Vec<String> = messages.iter().filter(|m| m.code.is_some()).map(|m| m.text.clone()).collect();
    messages.retain(|m| m.code.is_some() || !coded.iter().any(|c| m.text.contains(c.as_str()) || c.contains(&m.text)));
    messages
}

impl ErrorCode {
    /// Map the recorder's raw code through the header-checked enum of trt-sys.
    pub(crate) fn from_raw(raw: i32) -> ErrorCode {
        use trt_sys::ffi::ErrorCode as Sys;
        match (Sys { repr: raw }) {
            Sys::kSUCCESS => ErrorCode::Success,
            Sys::kUNSPECIFIED_ERROR => ErrorCode::Unspecified,
            Sys::kINTERNAL_ERROR => ErrorCode::Internal,
            Sys::kINVALID_ARGUMENT => ErrorCode::InvalidArgument,
            Sys::kINVALID_CONFIG => ErrorCode::InvalidConfig,
            Sys::kFAILED_ALLOCATION => ErrorCode::FailedAllocation,
            Sys::kFAILED_INITIALIZATION => ErrorCode::FailedInitialization,
            Sys::kFAILED_EXECUTION => ErrorCode::FailedExecution,
            Sys::kFAILED_COMPUTATION => ErrorCode::FailedComputation,
            Sys::kINVALID_STATE => ErrorCode::InvalidState,
            Sys::kUNSUPPORTED_STATE => ErrorCode::UnsupportedState,
            _ => ErrorCode::Other(raw),
        }
    }
}
