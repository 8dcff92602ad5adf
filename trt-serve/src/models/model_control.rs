//! Model-control modes, as Triton's `--model-control-mode`: which models load
//! at start, whether the repository API may load and unload, and whether
//! the repository is polled for changes.
//!
//! | mode | at start | repository `load` / `unload` | changes on disk |
//! |---|---|---|---|
//! | [`Mode::None`] (the `trt serve` default) | every model | refused: 400 / `UNAVAILABLE`, naming the mode | ignored |
//! | [`Mode::Explicit`] | the `--load-model` names (`*`: every model) | allowed (the admin key when one is set) | ignored |
//! | [`Mode::Poll`] | every model | refused, naming the mode | picked up every `--repository-poll-secs` |
//!
//! Loading at start and polling are `repository_sync`'s, over the repository.
//!
//! Polling compares each model's fingerprint (its `config.pbtxt` text and
//! its version folder numbers) with the previous poll's: a new or changed
//! model is loaded (new versions open and warm before the repository's atomic
//! switch, so requests in flight never fail), a model whose
//! folder or config is gone is unloaded (after a drain). A version folder's
//! files are read when the version loads: publish new weights as a new
//! version folder, as Triton advises.
//!
//! Readiness ([`ModelControl::strict_readiness`], Triton's
//! `--strict-readiness`): strict, the server is ready when every model it
//! was asked to load has a ready version; otherwise as soon as it serves.

use std::time::Duration;

use crate::error::{ServeError, ServeResult};

/// The mode (see the module table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Everything loads at start; the repository API cannot change it.
    None,
    /// Only the named models load at start (`*`: all); the API loads and unloads.
    Explicit(Vec<String>),
    /// Everything loads at start; the repository is polled at this interval.
    Poll(Duration),
}

impl Mode {
    /// Triton's name of the mode.
    pub fn name(&self) -> &'static str {
        match self {
            Mode::None => "none",
            Mode::Explicit(_) => "explicit",
            Mode::Poll(_) => "poll",
        }
    }
}

/// How the server's models are controlled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelControl {
    /// The mode.
    pub mode: Mode,
    /// Ready only when every model asked for is ready (else: ready once serving).
    pub strict_readiness: bool,
}

impl Default for ModelControl {
    /// Explicit with nothing named and strict readiness: a library user
    /// loads what it wants and keeps the repository API (`trt serve`'s
    /// default is [`Mode::None`]).
    fn default() -> Self {
        ModelControl { mode: Mode::Explicit(Vec::new()), strict_readiness: true }
    }
}

impl ModelControl {
    /// Whether the repository API may load and unload; the error names the mode.
    pub fn check_api(&self, what: &str) -> ServeResult<()> {
        match self.mode {
            Mode::Explicit(_) => Ok(()),
            _ => Err(ServeError::NotAllowed(format!(
                "{what} is not allowed in model-control mode '{}' (start trt serve with --model-control-mode explicit)",
                self.mode.name()
            ))),
        }
    }
}
