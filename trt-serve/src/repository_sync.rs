//! What the model-control mode ([`crate::model_control`]) does to a
//! repository: the models it loads at start, and for [`Mode::Poll`] the
//! poller that loads what changed on disk and unloads what is gone.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{ServeError, ServeResult};
use crate::model_control::{Mode, ModelControl};
use crate::repository::Repository;

/// Loads what the mode loads at start. Failures are logged and listed in
/// the index; a model named with `--load-model` that does not exist is an error.
pub(crate) async fn load_at_start(control: &ModelControl, repository: &Repository) -> ServeResult<()> {
    match &control.mode {
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
pub(crate) fn spawn_poller(control: &ModelControl, repository: Arc<Repository>) {
    let Mode::Poll(interval) = control.mode else { return };
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
