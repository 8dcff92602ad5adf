//! Loading TensorRT at run time.
//!
//! Only the exported `extern "C"` factory and version functions are resolved
//! (everything else is reached through the objects they return), so the crate
//! builds and links without TensorRT installed. A loaded library is never
//! unloaded: TensorRT objects and the shim's logger may be used until exit.
//!
//! Each library file is looked for in `trt-locate`'s order
//! ([`trt_locate::tensorrt_library`]): `TENSORRT_LIB_DIR` (when set, the only
//! folder tried), the setup folder's wheel folders (`$TRT_DEPS_DIR/lib/tensorrt_*libs`),
//! the dynamic loader's own path (`LD_LIBRARY_PATH`, ldconfig), the install folders
//! `/usr/local/tensorrt/lib` and `/opt/tensorrt/lib`, then the site-packages folders
//! that pip-installed TensorRT uses (`tensorrt_libs`, `tensorrt_rtx_libs`,
//! `tensorrt_lean_libs`) under `PYTHONPATH`, `VIRTUAL_ENV`, `CONDA_PREFIX`,
//! `~/.local` and the system Python prefixes. No workspace folder is a default.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use once_cell::sync::OnceCell;

use crate::logger;
use crate::{Error, Flavor, Result, Version};

/// Which TensorRT library to load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LibraryKind {
    /// The full library: builder, runtime and ONNX parser
    /// (`libnvinfer` + `libnvonnxparser`, or `libtensorrt_rtx` + `libtensorrt_onnxparser_rtx`).
    Full,
    /// The lean runtime (`libnvinfer_lean`): deserializes and runs
    /// version-compatible plans only; no builder, no parser. TensorRT 10.x/11.x only.
    LeanRuntime,
}

/// The version of the headers `trt` was compiled against.
pub const fn header_version() -> Version {
    Version {
        flavor: if trt_sys::HEADER_IS_RTX { Flavor::TensorRtRtx } else { Flavor::TensorRt },
        major: trt_sys::HEADER_MAJOR,
        minor: trt_sys::HEADER_MINOR,
        patch: trt_sys::HEADER_PATCH,
    }
}

/// Library file names for the headers' flavor and major version.
fn file_names(kind: LibraryKind) -> Result<(String, Option<String>)> {
    let v = header_version();
    match (v.flavor, kind) {
        (Flavor::TensorRtRtx, LibraryKind::Full) => {
            Ok((format!("libtensorrt_rtx.so.{}", v.major), Some(format!("libtensorrt_onnxparser_rtx.so.{}", v.major))))
        }
        (Flavor::TensorRtRtx, LibraryKind::LeanRuntime) => Err(Error::Unsupported { feature: "the lean runtime", version: v.to_string() }),
        (Flavor::TensorRt, LibraryKind::Full) => {
            Ok((format!("libnvinfer.so.{}", v.major), Some(format!("libnvonnxparser.so.{}", v.major))))
        }
        (Flavor::TensorRt, LibraryKind::LeanRuntime) => Ok((format!("libnvinfer_lean.so.{}", v.major), None)),
    }
}

/// Every place a library file is looked for, in order.
fn search_path() -> Vec<trt_locate::Place> {
    trt_locate::tensorrt_library().places(None, &trt_locate::ProcessEnv)
}

/// Open `file` from the first place that has it. Returns the library and where it came from.
fn open(file: &str) -> Result<(&'static libloading::Library, PathBuf)> {
    let mut tried = Vec::new();
    let mut reasons = Vec::new();
    let places = search_path();
    for place in &places {
        let candidate = place.file(file);
        if place.path.is_some() && !candidate.is_file() {
            continue; // nothing there: not worth a dlopen
        }
        // SAFETY: loading runs the library's initialisers; TensorRT's are
        // side-effect free apart from static registration.
        match unsafe { libloading::Library::new(&candidate) } {
            Ok(lib) => {
                // Never unloaded: see the module docs.
                let lib: &'static libloading::Library = Box::leak(Box::new(lib));
                return Ok((lib, candidate));
            }
            Err(e) => {
                tried.push(match &place.path {
                    Some(_) => candidate,
                    None => PathBuf::from(format!("{file} (dynamic loader path)")),
                });
                reasons.push(e.to_string());
            }
        }
    }
    if tried.is_empty() {
        tried.push(PathBuf::from(format!("{file} (dynamic loader path)")));
        reasons.push("not found".into());
    }
    let places = places.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ");
    reasons.push(format!("also looked in: {places}"));
    Err(Error::LibraryNotFound { library: file.to_owned(), tried, reasons })
}

fn open_path(path: &Path) -> Result<(&'static libloading::Library, PathBuf)> {
    // SAFETY: as in `open`.
    match unsafe { libloading::Library::new(path) } {
        Ok(lib) => Ok((Box::leak(Box::new(lib)), path.to_owned())),
        Err(e) => Err(Error::LibraryNotFound {
            library: path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            tried: vec![path.to_owned()],
            reasons: vec![e.to_string()],
        }),
    }
}

fn symbol(lib: &'static libloading::Library, path: &Path, name: &'static str) -> Result<usize> {
    let cname = format!("{name}\0");
    // SAFETY: only the address is taken; the type is fixed by the shim's call site.
    match unsafe { lib.get::<*const ()>(cname.as_bytes()) } {
        Ok(sym) => Ok(*sym as usize),
        Err(e) => Err(Error::MissingSymbol { path: path.to_owned(), symbol: name, reason: e.to_string() }),
    }
}

/// A loaded TensorRT library (and its ONNX parser, for the full kind).
#[derive(Debug)]
pub struct Library {
    kind: LibraryKind,
    path: PathBuf,
    version: Version,
    builder_factory: Option<usize>,
    runtime_factory: usize,
    parser: Option<(PathBuf, usize)>,
    // The lean runtime has no refitter.
    refitter_factory: Option<usize>,
}

impl Library {
    /// The full library for the headers `trt` was built with, loaded once per process.
    pub fn load() -> Result<Arc<Library>> {
        static FULL: OnceCell<Arc<Library>> = OnceCell::new();
        FULL.get_or_try_init(|| Library::load_kind(LibraryKind::Full).map(Arc::new)).cloned()
    }

    /// The lean runtime (TensorRT 10.x/11.x), loaded once per process.
    pub fn load_lean() -> Result<Arc<Library>> {
        static LEAN: OnceCell<Arc<Library>> = OnceCell::new();
        LEAN.get_or_try_init(|| Library::load_kind(LibraryKind::LeanRuntime).map(Arc::new)).cloned()
    }

    /// Load a specific library file of `kind` (its ONNX parser, for the full
    /// kind, is searched as usual). Not cached: each call loads (the loader
    /// shares an already loaded file).
    pub fn load_from(kind: LibraryKind, path: impl AsRef<Path>) -> Result<Library> {
        Library::load_kind_from(kind, Some(path.as_ref()))
    }

    fn load_kind(kind: LibraryKind) -> Result<Library> {
        Library::load_kind_from(kind, None)
    }

    fn load_kind_from(kind: LibraryKind, explicit: Option<&Path>) -> Result<Library> {
        logger::install();
        let (main, parser) = file_names(kind)?;
        let (lib, path) = match explicit {
            Some(p) => open_path(p)?,
            None => open(&main)?,
        };
        let get_version = symbol(lib, &path, "getInferLibVersion")?;
        // SAFETY: `int32_t getInferLibVersion() noexcept` in every TensorRT flavor.
        let encoded = unsafe { std::mem::transmute::<usize, extern "C" fn() -> i32>(get_version)() };
        let expected = header_version();
        let version = Version::from_encoded(expected.flavor, encoded);
        // Same major, and a library at least as new as the headers: the shim
        // calls methods the headers declare, which an older library may lack.
        if version.major != expected.major || version.minor < expected.minor {
            return Err(Error::LibraryVersionMismatch { path, found: version, expected });
        }
        let builder_factory = match kind {
            LibraryKind::Full => Some(symbol(lib, &path, "createInferBuilder_INTERNAL")?),
            LibraryKind::LeanRuntime => None,
        };
        let runtime_factory = symbol(lib, &path, "createInferRuntime_INTERNAL")?;
        let parser = match parser {
            Some(file) => {
                let (plib, ppath) = open(&file)?;
                let factory = symbol(plib, &ppath, "createNvOnnxParser_INTERNAL")?;
                Some((ppath, factory))
            }
            None => None,
        };
        let refitter_factory = symbol(lib, &path, "createInferRefitter_INTERNAL").ok();
        tracing::info!(target: "trt", "loaded {version} from {}", path.display());
        Ok(Library { kind, path, version, builder_factory, runtime_factory, parser, refitter_factory })
    }

    /// Which library this is.
    pub fn kind(&self) -> LibraryKind {
        self.kind
    }

    /// Where it was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The version the library reports (`getInferLibVersion()`).
    pub fn version(&self) -> Version {
        self.version
    }

    /// Where the ONNX parser library was loaded from, if this kind has one.
    pub fn parser_path(&self) -> Option<&Path> {
        self.parser.as_ref().map(|(p, _)| p.as_path())
    }

    pub(crate) fn builder_factory(&self) -> Result<usize> {
        self.builder_factory.ok_or(Error::Unsupported { feature: "the builder", version: self.describe_kind() })
    }

    pub(crate) fn runtime_factory(&self) -> usize {
        self.runtime_factory
    }

    pub(crate) fn parser_factory(&self) -> Result<usize> {
        self.parser.as_ref().map(|(_, f)| *f).ok_or(Error::Unsupported { feature: "the ONNX parser", version: self.describe_kind() })
    }

    pub(crate) fn refitter_factory(&self) -> Result<usize> {
        self.refitter_factory.ok_or(Error::Unsupported { feature: "the refitter", version: self.describe_kind() })
    }

    fn describe_kind(&self) -> String {
        match self.kind {
            LibraryKind::Full => self.version.to_string(),
            LibraryKind::LeanRuntime => format!("the {} lean runtime", self.version),
        }
    }
}
