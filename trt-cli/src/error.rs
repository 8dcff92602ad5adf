//! The CLI's error: one readable line, printed as `error: ...` with exit code 1
//! (or another code where a command documents one, e.g. `trt bench --compare`).
//!
//! Library errors (`trt::Error`, `trt_nlp::Error`) already name the file,
//! tensor or call and carry TensorRT's own message; the CLI adds what the user
//! asked for (which command, which file) where the library's message does not
//! say it already. No `Debug` output and no backtrace ever reaches the user.

use std::fmt;
use std::path::Path;

/// A user-facing failure.
#[derive(Debug)]
pub struct CliError(String, u8);

/// Result alias of the CLI.
pub type Result<T, E = CliError> = std::result::Result<T, E>;

impl CliError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        CliError(message.into(), 1)
    }

    /// An error that exits with `code` instead of 1 (a command's documented outcome, not a usage error).
    pub fn with_code(message: impl Into<String>, code: u8) -> Self {
        CliError(message.into(), code)
    }

    /// The process exit code.
    pub fn code(&self) -> u8 {
        self.1
    }

    /// The message on one line (TensorRT messages may hold newlines).
    pub fn one_line(&self) -> String {
        self.0.split(['\n', '\r']).map(str::trim).filter(|s| !s.is_empty()).collect::<Vec<_>>().join(" ")
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(feature = "tensorrt")]
impl From<trt::Error> for CliError {
    fn from(e: trt::Error) -> Self {
        CliError::new(e.to_string())
    }
}

#[cfg(feature = "tensorrt")]
impl From<trt::cuda::Error> for CliError {
    fn from(e: trt::cuda::Error) -> Self {
        CliError::new(e.to_string())
    }
}

impl From<trt_nlp::Error> for CliError {
    fn from(e: trt_nlp::Error) -> Self {
        CliError::new(e.to_string())
    }
}

/// Adds what was being done to an error's message.
pub trait Context<T> {
    /// `what: cause`.
    // Only the TensorRT commands call it so far.
    #[cfg_attr(not(feature = "tensorrt"), allow(dead_code))]
    fn context(self, what: impl FnOnce() -> String) -> Result<T>;
    /// `file: cause`, unless the cause names the file already.
    fn about(self, file: &Path) -> Result<T>;
}

impl<T, E: fmt::Display> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| CliError::new(format!("{}: {e}", what())))
    }

    fn about(self, file: &Path) -> Result<T> {
        self.map_err(|e| naming(file, e))
    }
}

/// `e` as an error that names `file` (prefixed, unless the message names it already).
pub fn naming(file: &Path, e: impl fmt::Display) -> CliError {
    let message = e.to_string();
    let name = file.display().to_string();
    if message.contains(&name) {
        CliError::new(message)
    } else {
        CliError::new(format!("{name}: {message}"))
    }
}
