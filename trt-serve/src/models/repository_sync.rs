//! What the model-control mode ([`crate::models::model_control`]) does to a
//! repository: the models it loads at start, and for [`Mode::Poll`] the
//! poller that loads what changed on disk and unloads what is gone.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{ServeError, ServeResult};
use crate::models::model_control::{Mode, ModelControl};
use crate::models::repository::Repository;

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

/// Polls `repository` until `stopped` turns true, when the mode is
/// [`Mode::Poll`]; the task's handle, to await before the repository is
/// unloaded (a poll in progress finishes first, so no load races the unload).
pub(crate) fn spawn_poller(
    control: &ModelControl,
    repository: Arc<Repository>,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) -> Option<tokio::task::JoinHandle<()>> {
    let Mode::Poll(interval) = control.mode else { return None };
    Some(tokio::spawn(async move {
        let mut seen = fingerprints(&repository);
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        // Bounded by the server's life: the stop signal ends it between polls.
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stopped.wait_for(|&s| s) => return,
            }
            seen = poll_once(&repository, seen).await;
        }
    }))
}

/// What polling compares: the config text, and each version folder's files
/// (path, length, modification time; symlinks followed).
type Fingerprint = (String, BTreeMap<u64, Vec<FileStamp>>);

type FileStamp = (std::path::PathBuf, u64, Option<std::time::SystemTime>);

/// Most files and folder levels read per version folder: a version holds a
/// model file or a few; a huge tree is not walked without bound.
const MAX_FILES: usize = 4096;
const MAX_DEPTH: usize = 8;

fn stamps(dir: &std::path::Path) -> Vec<FileStamp> {
    let mut out = Vec::new();
    let mut pending = vec![(dir.to_path_buf(), 0)];
    while let Some((d, depth)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let path = e.path();
            let Ok(meta) = std::fs::metadata(&path) else { continue };
            if meta.is_dir() {
                if depth + 1 < MAX_DEPTH {
                    pending.push((path, depth + 1));
                }
            } else if out.len() < MAX_FILES {
                out.push((path, meta.len(), meta.modified().ok()));
            }
        }
    }
    out.sort();
    out
}

fn fingerprints(repository: &Repository) -> BTreeMap<String, Fingerprint> {
    repository
        .model_names_on_disk()
        .into_iter()
        .filter_map(|name| {
            let dir = repository.root().join(&name);
            let text = std::fs::read_to_string(dir.join("config.pbtxt")).ok()?;
            let versions =
                crate::models::repository::read_versions(&dir).into_iter().map(|v| (v, stamps(&dir.join(v.to_string())))).collect();
            Some((name, (text, versions)))
        })
        .collect()
}

/// One poll: loads what is new or changed since `seen` (a changed config or
/// set of versions reloads the model; changed files reopen those versions),
/// unloads what is gone; the fingerprints now.
async fn poll_once(repository: &Repository, seen: BTreeMap<String, Fingerprint>) -> BTreeMap<String, Fingerprint> {
    let now = fingerprints(repository);
    for (name, fp) in &now {
        let before = seen.get(name);
        if before == Some(fp) {
            continue;
        }
        let result = match before {
            Some((text, old)) if *text == fp.0 && old.keys().eq(fp.1.keys()) => {
                let changed: Vec<u64> = fp.1.iter().filter(|(v, files)| old.get(v) != Some(files)).map(|(v, _)| *v).collect();
                tracing::info!("model '{name}': files of version(s) {changed:?} changed on disk; reopening them");
                repository.reload(name, &changed).await
            }
            _ => {
                tracing::info!("model '{name}': changed on disk; loading");
                repository.load(name).await
            }
        };
        if let Err(e) = result {
            tracing::error!("{e}");
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
