//! Atomic file writes, shared by plans, timing caches and the engine cache.

use std::io::Write;
use std::path::Path;

use crate::{Error, Result};

/// Write `bytes` to a temporary file next to `path`, flush it to disk, then
/// rename it over `path`: readers see the old file or the whole new one. A
/// writer killed mid-way leaves only its temporary file, which the next write
/// of the same `path` removes (see `remove_stale_temporaries`).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "file".into());
    remove_stale_temporaries(dir, &name);
    // Unique per process and per call: two threads may write the same file.
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(path, e)
    })
}

/// How long a temporary file must have been left untouched before it counts
/// as abandoned: a live writer touches its file continuously until the rename,
/// and on a folder shared between hosts the pid says nothing.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// Removes `.{name}.{pid}.{n}.tmp` files in `dir` that a writer abandoned
/// (killed builds), so that crashes cannot fill a cache folder: the file was
/// not modified for [`STALE_AFTER`] and its pid is not a running process here
/// (where `/proc` cannot tell, the age alone decides).
fn remove_stale_temporaries(dir: &Path, name: &str) {
    let prefix = format!(".{name}.");
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(rest) = file.to_str().and_then(|f| f.strip_prefix(&prefix)).and_then(|r| r.strip_suffix(".tmp")) else {
            continue;
        };
        let Some((pid, n)) = rest.split_once('.') else { continue };
        let (Ok(pid), Ok(_)) = (pid.parse::<u32>(), n.parse::<u64>()) else { continue };
        let age = entry.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok());
        if pid != std::process::id() && !process_alive(pid) && age.is_some_and(|a| a > STALE_AFTER) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Whether process `pid` exists; `false` when this cannot be told (no `/proc`).
fn process_alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_writers_temporary_file_is_removed_by_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("k.plan");
        // A pid that cannot be running (above Linux's pid_max limit of 2^22).
        let dead = dir.path().join(".k.plan.4194305.0.tmp");
        let recent = dir.path().join(".k.plan.4194305.1.tmp");
        let other = dir.path().join(".other.plan.4194305.0.tmp");
        let live = dir.path().join(format!(".k.plan.{}.99.tmp", std::process::id()));
        let old = std::time::SystemTime::now() - 2 * STALE_AFTER;
        for f in [&dead, &recent, &other, &live] {
            std::fs::write(f, b"torn").unwrap();
            if f != &recent {
                std::fs::File::options().write(true).open(f).unwrap().set_modified(old).unwrap();
            }
        }
        write_atomic(&target, b"whole").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"whole");
        assert!(!dead.exists(), "an abandoned temporary file is removed");
        assert!(recent.exists(), "a recently written one may belong to a live writer elsewhere");
        assert!(other.exists(), "another file's temporaries are not ours to remove");
        assert!(live.exists(), "this process's own files stay");
    }
}
