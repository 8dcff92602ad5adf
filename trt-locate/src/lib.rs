//! Where the `trt-rs` crates look for what they load or compile against: one
//! search order, written once here, for every library and header set.
//!
//! | item | what |
//! |---|---|
//! | [`Tier`] | the order: explicit path, documented variables, loader path, install folders, site-packages |
//! | [`Spec`] / [`Spec::places`] | one concern's folders in each tier, and the list of places to try |
//! | [`tensorrt_library`], [`tensorrt_headers`], [`cuda_headers`], [`onnxruntime_library`] | the concerns (module `concerns`) |
//! | [`Env`] / [`ProcessEnv`] | the environment, a parameter so tests need not touch the process's |
//! | module `python` | pip's site-packages folders |
//!
//! Users: `trt-sys`'s build script (headers; a build script cannot depend on
//! the crate it builds, so this crate has no dependencies and builds first),
//! `trt-rs` (TensorRT libraries) and `trt-onnx` (ONNX Runtime's library).
//!
//! No workspace folder is a default: the setup folder that the workspace's
//! `scripts/setup` fills is searched only when `TRT_DEPS_DIR` names it (the
//! workspace's `.cargo/config.toml` sets it for its own builds, tests and
//! `cargo run`).
//!
//! ```
//! let places = trt_locate::tensorrt_library().places(None, &|name: &str| match name {
//!     "TRT_DEPS_DIR" => Some("/opt/deps".into()),
//!     _ => None,
//! });
//! assert_eq!(places[0].path.as_deref(), Some(std::path::Path::new("/opt/deps/lib/tensorrt_libs")));
//! assert!(places.iter().any(|p| p.tier == trt_locate::Tier::LoaderPath));
//! ```

mod concerns;
mod python;
#[cfg(test)]
mod tests;

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

pub use concerns::{
    cuda_headers, onnxruntime_library, tensorrt_headers, tensorrt_library, DEFAULT_HEADER_SET, HEADER_SET, TENSORRT_WHEEL_DIRS,
};
pub use python::site_packages;

/// The setup folder: what the workspace's `scripts/setup` fills (headers,
/// libraries, models, a Python venv) and prints.
pub const SETUP_DIR: &str = "TRT_DEPS_DIR";

/// The search order: places of a lower tier are tried first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    /// A path handed in by the caller, or the variable naming exactly this
    /// thing's place (`TENSORRT_LIB_DIR`, `ORT_DYLIB_PATH`, ...): when present it
    /// is the only place, so a wrong setting fails instead of quietly finding
    /// another install.
    Explicit,
    /// Folders named by documented environment variables (`CUDA_PATH`, ...),
    /// then those of the setup folder `$TRT_DEPS_DIR`.
    Variable,
    /// The dynamic loader's own search (`LD_LIBRARY_PATH`, the ld.so cache,
    /// rpaths): a bare file name handed to `dlopen`.
    LoaderPath,
    /// Well-known install folders (`/usr/include`, `/opt/tensorrt`, ...).
    Installed,
    /// pip's site-packages folders ([`site_packages`]).
    SitePackages,
}

/// One place to look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// Its tier in the order.
    pub tier: Tier,
    /// The folder, or the file an explicit setting names (`ORT_DYLIB_PATH` may
    /// name either); `None` for [`Tier::LoaderPath`]: the bare file name.
    pub path: Option<PathBuf>,
    /// Where it comes from: the variable's name, or what kind of place it is.
    pub source: &'static str,
}

impl Place {
    /// `file` at this place: the path joined, or the bare name for the loader.
    pub fn file(&self, file: &str) -> PathBuf {
        match &self.path {
            Some(dir) => dir.join(file),
            None => PathBuf::from(file),
        }
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(p) => write!(f, "{} ({})", p.display(), self.source),
            None => f.write_str(self.source),
        }
    }
}

/// The environment a search reads. Any `Fn(&str) -> Option<OsString>` is one,
/// so a test passes a closure instead of setting process variables (which
/// would race with other tests); [`ProcessEnv`] reads the process's.
pub trait Env {
    /// The variable's value; empty values count as unset.
    fn var(&self, name: &str) -> Option<OsString>;
}

impl<F: Fn(&str) -> Option<OsString>> Env for F {
    fn var(&self, name: &str) -> Option<OsString> {
        self(name)
    }
}

/// The process's environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<OsString> {
        std::env::var_os(name)
    }
}

/// A variable's value if set and not empty.
pub(crate) fn get(env: &dyn Env, name: &str) -> Option<OsString> {
    env.var(name).filter(|v| !v.is_empty())
}

/// An environment variable naming a folder, and the part below it to search
/// (`TENSORRT_ROOT` + `include`); `sub` is empty when the value is the place itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Var {
    pub name: &'static str,
    pub sub: &'static str,
}

impl Var {
    fn place(&self, tier: Tier, env: &dyn Env) -> Option<Place> {
        let value = PathBuf::from(get(env, self.name)?);
        let path = if self.sub.is_empty() { value } else { value.join(self.sub) };
        Some(Place { tier, path: Some(path), source: self.name })
    }
}

/// One concern's places in each tier. Built by the concern functions
/// ([`tensorrt_library`], ...); [`Spec::places`] applies the order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// Variables naming exactly this thing's place, by priority: the first one
    /// set is the only place searched.
    pub explicit: &'static [Var],
    /// Other documented variables naming folders to search, in order.
    pub variables: &'static [Var],
    /// Folders inside the setup folder `$TRT_DEPS_DIR`, in order.
    pub setup: Vec<String>,
    /// Whether the dynamic loader's own search applies (libraries, not headers).
    pub loader_path: bool,
    /// Well-known install folders, in order.
    pub installed: &'static [&'static str],
    /// Folders inside each site-packages folder, in order (empty: none searched).
    pub site_packages: &'static [&'static str],
}

impl Spec {
    /// Every place to try, in the order of [`Tier`]. `explicit` (a path the
    /// caller was handed) is the only place when given; so is the first set
    /// variable of [`Spec::explicit`]. Nothing here checks that a place exists:
    /// the caller looks for its files there and names the places in its error.
    pub fn places(&self, explicit: Option<&Path>, env: &dyn Env) -> Vec<Place> {
        if let Some(path) = explicit {
            return vec![Place { tier: Tier::Explicit, path: Some(path.to_owned()), source: "the path given" }];
        }
        if let Some(place) = self.explicit.iter().find_map(|v| v.place(Tier::Explicit, env)) {
            return vec![place];
        }
        let mut out: Vec<Place> = self.variables.iter().filter_map(|v| v.place(Tier::Variable, env)).collect();
        if let Some(setup) = get(env, SETUP_DIR).map(PathBuf::from) {
            out.extend(self.setup.iter().map(|sub| Place { tier: Tier::Variable, path: Some(setup.join(sub)), source: SETUP_DIR }));
        }
        if self.loader_path {
            out.push(Place { tier: Tier::LoaderPath, path: None, source: "the dynamic loader's path" });
        }
        out.extend(self.installed.iter().map(|d| Place { tier: Tier::Installed, path: Some(PathBuf::from(d)), source: "install folder" }));
        if !self.site_packages.is_empty() {
            for site in site_packages(env) {
                out.extend(self.site_packages.iter().map(|sub| Place {
                    tier: Tier::SitePackages,
                    path: Some(site.join(sub)),
                    source: "site-packages",
                }));
            }
        }
        out
    }

    /// Every variable [`Spec::places`] may read, for a build script's
    /// `cargo:rerun-if-env-changed`.
    pub fn variables_read(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = self.explicit.iter().chain(self.variables).map(|v| v.name).collect();
        out.push(SETUP_DIR);
        if !self.site_packages.is_empty() {
            out.extend(python::VARIABLES);
        }
        out
    }
}
