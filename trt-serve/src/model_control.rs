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
//! Polling compares each model's fingerprint (its `config.pbtxt` text and
//! its version folder numbers) with the previous poll's: a new or changed
//! model is loaded (new versions open and warm before the atomic switch of
//! [`crate::repository`], so requests in flight never fail), a model whose
//! folder or config is gone is unloaded (after a drain). A version folder's
//! files are read when the version loads: publish new weights as a new
//! version folder, as Triton advises.
//!
//! Readiness ([`ModelControl::strict_readiness`], Triton's
//! `--strict-readiness`): strict, the server is ready when every model it
//! was asked to load has a ready version; otherwise as soon as it serves.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{ServeError, ServeResult};
use crate::repository::Repository;

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

    /// Loads what the mode loads at start. Failures are logged and listed in
    /// the index; a model named with `--load-model` that does not exist is an error.
    pub async fn load_at_start(&self, repository: &Repository) -> ServeResult<()> {
        match &self.mode {
            Mode::None | Mode::Poll(_) => repository.load_all().await,
            Mode::Explicit(names) if names.iter().any(|n| n == "*") => repository.load_all().await,
            Mode::Explicit(names) => {
                for name in names {
                    match repository.load(name).await {
                        Err(e @ ServeError::NotFound(_)) => return Err(ServeError::NotFound(format!("--load-model {name}: {e}"))),
                        Err(e) => tracing::error!("{e}"),
                        Ok(()) => {}
                    }
                }
            }
        }
        Ok(())
    }

    /// Polls `repository` until the process ends, when the mode is [`Mode::Poll`].
    pub fn spawn_poller(&self, repository: Arc<Repository>) {
        let Mode::Poll(interval) = self.mode else { return };
        tokio::spawn(async move {
            let mut seen = fingerprints(&repository);
            let mut tick = tokio::time::interval(interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                seen = poll_once(&repository, seen).await;
            }
        });
    }
}

/// What polling compares: the config text and the version folder numbers.
type Fingerprint = (String, Vec<u64>);

fn fingerprints(repository: &Repository) -> BTreeMap<String, Fingerprint> {
    repository
        .model_names_on_disk()
        .into_iter()
        .filter_map(|name| {
            let dir = repository.root().join(&name);
            let text = std::fs::read_to_string(dir.join("config.pbtxt")).ok()?;
            let mut versions = crate::repository::read_versions(&dir);
            versions.sort_unstable();
            Some((name, (text, versions)))
        })
        .collect()
}

/// One poll: loads what is new or changed since `seen`, unloads what is gone;
/// the fingerprints now.
async fn poll_once(repository: &Repository, seen: BTreeMap<String, Fingerprint>) -> BTreeMap<String, Fingerprint> {
    let now = fingerprints(repository);
    for (name, fp) in &now {
        if seen.get(name) != Some(fp) {
            tracing::info!("model '{name}': changed on disk; loading");
            if let Err(e) = repository.load(name).await {
                tracing::error!("{e}");
            }
        }
    }
    for name in seen.keys().filter(|n| !now.contains_key(*n)) {
        tracing::info!("model '{name}': gone from the repository; unloading");
        if let Err(e) = repository.unload(name).await {
            tracing::error!("{e}");
        }
    }
    now
}
