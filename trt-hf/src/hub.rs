//! `org/name` in the local HuggingFace cache, offline: the layout
//! `huggingface_hub` writes (`models--org--name/snapshots/<revision>/`,
//! `refs/main` naming the revision), under `$HF_HUB_CACHE`, else
//! `$HF_HOME/hub`, else `~/.cache/huggingface/hub`. Nothing is downloaded.

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// The hub cache folder the environment names.
pub fn cache_dir() -> PathBuf {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("HF_HUB_CACHE")
        .or_else(|| var("HUGGINGFACE_HUB_CACHE"))
        .or_else(|| var("HF_HOME").map(|h| h.join("hub")))
        .or_else(|| var("XDG_CACHE_HOME").map(|c| c.join("huggingface").join("hub")))
        .or_else(|| var("HOME").map(|h| h.join(".cache").join("huggingface").join("hub")))
        .unwrap_or_else(|| PathBuf::from(".cache/huggingface/hub"))
}

/// Whether `id` has the shape of a hub id (`org/name` or `name`), not a path.
pub fn looks_like_id(id: &str) -> bool {
    let parts: Vec<&str> = id.split('/').collect();
    !id.starts_with('.')
        && (1..=2).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) && *p != "." && *p != "..")
}

/// The snapshot folder of `id` (`org/name`, optionally `@revision`) in
/// `cache`: the revision `refs/<revision or main>` names, or a snapshot
/// folder of that name.
pub fn resolve_in(cache: &Path, id: &str) -> Result<PathBuf> {
    let (name, revision) = id.split_once('@').unwrap_or((id, "main"));
    if !looks_like_id(name) || revision.is_empty() || revision.contains(['/', '\\']) || revision.starts_with('.') {
        return Err(Error::Missing { path: PathBuf::from(id), why: "a model id of the form org/name[@revision]".into() });
    }
    let repo = cache.join(format!("models--{}", name.replace('/', "--")));
    if !repo.is_dir() {
        return Err(Error::Missing {
            path: repo,
            why: format!("'{name}' in the local HuggingFace cache (downloads are not made; fetch it with huggingface-cli download {name})"),
        });
    }
    let refs = repo.join("refs").join(revision);
    let snapshot = match std::fs::read_to_string(&refs) {
        Ok(hash) => hash.trim().to_string(),
        Err(_) => revision.to_string(),
    };
    if snapshot.is_empty() || snapshot.contains(['/', '\\']) || snapshot.starts_with('.') {
        return Err(Error::config(&refs, "(file)", "does not name a snapshot"));
    }
    let dir = repo.join("snapshots").join(&snapshot);
    if !dir.is_dir() {
        return Err(Error::Missing { path: dir, why: format!("the snapshot of '{name}' at revision {revision}") });
    }
    Ok(dir)
}

/// [`resolve_in`] the environment's [`cache_dir`].
pub fn resolve(id: &str) -> Result<PathBuf> {
    resolve_in(&cache_dir(), id)
}
