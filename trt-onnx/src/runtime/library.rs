//! Finding and loading `libonnxruntime.so` at run time, as `trt` loads TensorRT.
//!
//! `ort` is built with `load-dynamic`: nothing links against ONNX Runtime, and
//! every `ort` call goes through the library loaded here. `ort` panics when an
//! API is used before a library is loaded, so [`OrtLibrary::load`] is the only
//! way into a [`Session`](super::Session): a missing or unusable library is
//! a typed error that names every path tried, never a panic.
//!
//! Search order (first usable wins), `trt-locate`'s
//! ([`trt_locate::onnxruntime_library`]):
//! 1. `ORT_DYLIB_PATH` (a file, as `ort` itself reads it, or a folder): when
//!    set, it is the only place tried, so a wrong setting fails instead of
//!    quietly loading another library;
//! 2. the setup folder: `$TRT_DEPS_DIR/lib/onnxruntime/`, where the workspace's
//!    `scripts/setup` puts the library from the PyPI `onnxruntime` wheel;
//! 3. the loader path (`libonnxruntime.so.1` / `libonnxruntime.so`, through `dlopen`);
//! 4. the install folders `/opt/onnxruntime` and `/opt/onnxruntime/lib`;
//! 5. pip's site-packages: `onnxruntime/capi/` under `PYTHONPATH`, the active
//!    virtualenv (`VIRTUAL_ENV`), conda, the setup folder's venv, `~/.local`
//!    and the system Python prefixes.
//!
//! The version is read through `OrtGetApiBase()->GetVersionString()` before
//! `ort` sees the file, so a library older than the API this build asks for
//! (1.30, the `api-30` feature) is refused with its version named.

use std::ffi::CStr;
use std::path::{Path, PathBuf};

use once_cell::sync::OnceCell;

use crate::{Error, Result};

/// The minimum ONNX Runtime minor version (the `ort` API level this crate is built for).
pub const MIN_MINOR_VERSION: u32 = ort::MINOR_VERSION;

/// The loaded ONNX Runtime, for the whole process (`ort` allows one library
/// and one environment per process).
#[derive(Debug)]
pub struct OrtLibrary {
    path: PathBuf,
    version: String,
    providers: Vec<String>,
    pub(crate) environment: ort::environment::Environment,
}

static LOADED: OnceCell<OrtLibrary> = OnceCell::new();

impl OrtLibrary {
    /// The process's ONNX Runtime, loaded on first use from the search path
    /// (module docs). Later calls return the same library.
    pub fn load() -> Result<&'static OrtLibrary> {
        LOADED.get_or_try_init(|| {
            let mut tried = Vec::new();
            let mut unusable = None;
            for candidate in candidates() {
                tried.push(candidate.clone());
                match probe(&candidate) {
                    Probe::Missing => continue,
                    Probe::Unusable(reason) => {
                        tracing::warn!("ONNX Runtime at {}: {reason}", candidate.display());
                        unusable.get_or_insert((candidate, reason));
                        continue;
                    }
                    Probe::Usable { path, version } => return Self::init(path, version),
                }
            }
            Err(match unusable {
                // Something was there but could not be used: that is the news.
                Some((path, reason)) => Error::LibraryUnusable { path, reason },
                None => Error::LibraryNotFound { tried },
            })
        })
    }

    /// Load from exactly `path` (no search). Fails if another library is
    /// already loaded in this process.
    pub fn load_from(path: impl AsRef<Path>) -> Result<&'static OrtLibrary> {
        let path = path.as_ref();
        LOADED.get_or_try_init(|| match probe(path) {
            Probe::Missing => Err(Error::LibraryNotFound { tried: vec![path.to_owned()] }),
            Probe::Unusable(reason) => Err(Error::LibraryUnusable { path: path.to_owned(), reason }),
            Probe::Usable { path, version } => Self::init(path, version),
        })?;
        let loaded = LOADED.get().expect("initialised above");
        if loaded.path != path && std::fs::canonicalize(&loaded.path).ok() != std::fs::canonicalize(path).ok() {
            return Err(Error::LibraryUnusable {
                path: path.to_owned(),
                reason: format!("ONNX Runtime is already loaded from {} in this process", loaded.path.display()),
            });
        }
        Ok(loaded)
    }

    fn init(path: PathBuf, version: String) -> Result<Self> {
        ort::init_from(&path).map_err(|e| Error::LibraryUnusable { path: path.clone(), reason: e.to_string() })?;
        let environment = ort::init().with_name("trt-onnx").build().map_err(|e| Error::ort("creating the ONNX Runtime environment", e))?;
        let providers = available_providers().unwrap_or_default();
        tracing::info!("loaded ONNX Runtime {version} from {} (providers: {})", path.display(), providers.join(", "));
        Ok(OrtLibrary { path, version, providers, environment })
    }

    /// The library file that was loaded.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its version string, e.g. `1.31.1`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The execution providers the library was built with, e.g.
    /// `["CPUExecutionProvider"]` for the PyPI CPU wheel.
    pub fn providers(&self) -> &[String] {
        &self.providers
    }

    /// Whether the library was built with `provider` (e.g. `CUDAExecutionProvider`).
    pub fn has_provider(&self, provider: &str) -> bool {
        self.providers.iter().any(|p| p == provider)
    }
}

const FILE_NAMES: [&str; 2] = ["libonnxruntime.so.1", "libonnxruntime.so"];

/// Every file to try, in order (module docs).
fn candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for place in trt_locate::onnxruntime_library().places(None, &trt_locate::ProcessEnv) {
        match &place.path {
            // Bare names: dlopen searches LD_LIBRARY_PATH, the ld.so cache and rpaths.
            None => out.extend(FILE_NAMES.iter().map(PathBuf::from)),
            // ORT_DYLIB_PATH may name the file itself.
            Some(p) if place.tier == trt_locate::Tier::Explicit && !p.is_dir() => out.push(p.clone()),
            Some(dir) => out.extend(files_in(dir)),
        }
    }
    out
}

/// Library files in `dir`: the two usual names, then any versioned
/// `libonnxruntime.so.1.N.M` (what the wheel ships), newest name last.
fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = FILE_NAMES.iter().map(|n| dir.join(n)).filter(|p| p.exists()).collect();
    if let Ok(entries) = std::fs::read_dir(dir) {
        let mut versioned: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("libonnxruntime.so.1.") && !FILE_NAMES.contains(&n))
            })
            .collect();
        versioned.sort();
        out.extend(versioned);
    }
    if out.is_empty() {
        // Named in the error's list of places tried.
        out.push(dir.join(FILE_NAMES[1]));
    }
    out
}

enum Probe {
    Missing,
    Unusable(String),
    Usable { path: PathBuf, version: String },
}

/// Open `path`, check it is ONNX Runtime of a usable version. The handle is
/// dropped again (dlclose only lowers the count `ort` raises right after).
fn probe(path: &Path) -> Probe {
    // A bare file name goes to dlopen's own search; a path must exist.
    if path.components().count() > 1 && !path.exists() {
        return Probe::Missing;
    }
    // SAFETY: loading runs the library's initialisers; ONNX Runtime's are
    // benign. A file that is not a shared library is refused by dlopen.
    let lib = match unsafe { libloading::Library::new(path) } {
        Ok(lib) => lib,
        Err(e) if path.components().count() == 1 => {
            tracing::debug!("{}: {e}", path.display());
            return Probe::Missing;
        }
        Err(e) => return Probe::Unusable(format!("cannot be loaded: {e}")),
    };
    type GetApiBase = unsafe extern "C" fn() -> *const ort::sys::OrtApiBase;
    // SAFETY: the symbol's C signature is ONNX Runtime's `OrtGetApiBase`.
    let get: libloading::Symbol<'_, GetApiBase> = match unsafe { lib.get(b"OrtGetApiBase\0") } {
        Ok(f) => f,
        Err(_) => return Probe::Unusable("not ONNX Runtime: no OrtGetApiBase symbol".into()),
    };
    // SAFETY: OrtGetApiBase takes no argument and returns a static table or null.
    let base = unsafe { get() };
    if base.is_null() {
        return Probe::Unusable("OrtGetApiBase returned null".into());
    }
    // SAFETY: `base` is non-null and points at the library's static OrtApiBase;
    // GetVersionString returns a static NUL-terminated string.
    let version = unsafe {
        let s = ((*base).GetVersionString)();
        if s.is_null() {
            return Probe::Unusable("no version string".into());
        }
        CStr::from_ptr(s).to_string_lossy().into_owned()
    };
    match check_version(&version) {
        Ok(()) => Probe::Usable { path: path.to_owned(), version },
        Err(reason) => Probe::Unusable(reason),
    }
}

/// Whether a library of `version` serves the API this crate is built for
/// (1.x with x >= [`MIN_MINOR_VERSION`]).
fn check_version(version: &str) -> std::result::Result<(), String> {
    let mut parts = version.split('.');
    let (major, minor) = (parts.next(), parts.next().and_then(|m| m.parse::<u32>().ok()));
    match (major, minor) {
        (Some("1"), Some(m)) if m >= MIN_MINOR_VERSION => Ok(()),
        _ => Err(format!("version {version:?}; this build needs ONNX Runtime 1.{MIN_MINOR_VERSION} or newer")),
    }
}

fn available_providers() -> Result<Vec<String>> {
    let mut out = Vec::new();
    for name in ["CUDAExecutionProvider", "CPUExecutionProvider"] {
        if is_available(name)? {
            out.push(name.to_owned());
        }
    }
    Ok(out)
}

fn is_available(name: &str) -> Result<bool> {
    use ort::ep::ExecutionProvider;
    let r = match name {
        "CUDAExecutionProvider" => ort::ep::CUDA::is_available(),
        _ => ort::ep::CPU::is_available(),
    };
    r.map_err(|e| Error::ort("listing execution providers", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_older_than_the_api_or_malformed_are_refused() {
        assert!(check_version(&format!("1.{MIN_MINOR_VERSION}.0")).is_ok());
        assert!(check_version("1.31.1").is_ok());
        let old = check_version(&format!("1.{}.2", MIN_MINOR_VERSION - 1)).unwrap_err();
        assert!(old.contains("needs ONNX Runtime 1.30 or newer"), "{old}");
        for bad in ["", "garbage", "2.1.0", "1.x.0", "1"] {
            assert!(check_version(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_explicit_path_that_is_missing_is_named() {
        match probe(Path::new("/nonexistent/libonnxruntime.so.1")) {
            Probe::Missing => {}
            _ => panic!("a missing file must be Missing"),
        }
    }
}
