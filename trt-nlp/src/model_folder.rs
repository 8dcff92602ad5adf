//! A Hugging Face style model folder: the model file and the files beside it
//! that say how to use it.
//!
//! | file | gives |
//! |---|---|
//! | `model.plan` / `model.engine` / `model.onnx` (or the file named) | the model |
//! | `tokenizer.json` | the tokenizer |
//! | `config.json` | `id2label` (labels), `max_position_embeddings` (longest sequence) |
//! | `1_Pooling/config.json` | sentence-transformers pooling (default: mean) |
//! | `modules.json` | whether sentence-transformers normalises (a `Normalize` module); without the file, embeddings are normalised |
//! | `trt_model.json` | written by the importer ([`trt_hf::Descriptor`]): the graph computes the embedding itself; where texts are cut, prompts, the score activation |
//!
//! A HuggingFace folder that ships `onnx/model.onnx` and no safetensors
//! weights uses that graph as it is, with the folder's conventions (where
//! texts are cut, mean or CLS pooling and normalisation on the host).
//! A HuggingFace folder (`config.json` and safetensors weights, with or
//! without sentence-transformers files, and no model file of ours) is
//! imported first ([`trt_hf::import_cached`]: the ONNX graph written from its
//! weights, into a cache keyed by the folder's content), and the imported
//! folder is what opens. A path that does not exist but reads `org/name` is
//! looked up in the local HuggingFace cache ([`resolve_model`]).

use std::path::{Path, PathBuf};

use std::sync::Arc;

use crate::backend::{self, is_plan, Backend, BackendChoice, BackendOptions};
use crate::{Error, Labels, Pooling, Result};

/// What a model folder holds.
#[derive(Debug, Clone)]
pub struct ModelFolder {
    /// The folder.
    pub dir: PathBuf,
    /// The model file (a plan or an ONNX file).
    pub model: PathBuf,
    /// `tokenizer.json`.
    pub tokenizer: PathBuf,
    /// Class names (`LABEL_i` where `config.json` gives none).
    pub labels: Labels,
    /// How hidden states become one vector per text.
    pub pooling: Pooling,
    /// Whether embeddings are L2-normalised.
    pub normalize: bool,
    /// `max_position_embeddings` from `config.json`, when present.
    pub max_positions: Option<usize>,
    /// What the importer wrote beside an imported model (`trt_model.json`).
    pub imported: Option<trt_hf::Descriptor>,
}

#[derive(serde::Deserialize)]
struct HfConfig {
    max_position_embeddings: Option<usize>,
}

#[derive(serde::Deserialize)]
struct StModule {
    #[serde(rename = "type", default)]
    kind: String,
}

/// Model file names looked for in a folder, in order of preference.
const MODEL_FILES: [&str; 3] = ["model.plan", "model.engine", "model.onnx"];

impl ModelFolder {
    /// Opens `path`: a folder (its model file is found by name), or a model
    /// file (its folder holds the rest). Missing files are named in the error.
    /// ```
    /// # fn main() -> trt_nlp::Result<()> {
    /// # // A small random-weight model (tests/data/hf/, made by scripts/make_hf_fixtures*.py).
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/bert-cls3");
    /// let folder = trt_nlp::ModelFolder::open(path)?;
    /// assert!(folder.model.ends_with("model.onnx") && folder.tokenizer.ends_with("tokenizer.json"));
    /// assert_eq!(folder.labels.len(), 3); // config.json's id2label
    /// assert!(trt_nlp::ModelFolder::open("no/such/folder").is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, None)
    }

    /// [`open`](Self::open), with a tokenizer given rather than looked for.
    pub fn open_with(path: impl AsRef<Path>, tokenizer: Option<PathBuf>) -> Result<Self> {
        Self::open_imported(path, tokenizer, &trt_hf::ImportOptions::default())
    }

    /// [`open_with`](Self::open_with), importing a HuggingFace folder with
    /// `options` (its precision).
    pub fn open_imported(path: impl AsRef<Path>, tokenizer: Option<PathBuf>, options: &trt_hf::ImportOptions) -> Result<Self> {
        let path = path.as_ref();
        let path = &match resolve_model(&path.to_string_lossy()) {
            Ok(p) => p,
            Err(_) => path.to_owned(),
        };
        if path.is_dir() && ships_onnx_only(path) {
            return Self::shipped_onnx(path, tokenizer);
        }
        if path.is_dir() && trt_hf::is_hf_folder(path) {
            let imported = trt_hf::import_cached(path, &trt_hf::default_cache(), options)?;
            return Self::open_imported(imported, tokenizer, options);
        }
        let meta = std::fs::metadata(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
        let (dir, model) = if meta.is_dir() {
            let model = MODEL_FILES.iter().map(|f| path.join(f)).find(|p| p.is_file()).ok_or_else(|| Error::MissingFile {
                path: path.to_owned(),
                what: format!("holds no model file (looked for {})", MODEL_FILES.join(", ")),
            })?;
            (path.to_owned(), model)
        } else {
            let dir = path.parent().map(Path::to_owned).unwrap_or_else(|| PathBuf::from("."));
            (dir, path.to_owned())
        };
        Self::with_model(dir, model, tokenizer)
    }

    /// A HuggingFace folder that ships its graph (`onnx/model.onnx`, as
    /// many hub repositories do) and no safetensors weights: the graph is
    /// used as it is, with the folder's conventions read as the importer
    /// reads them (where texts are cut, sentence-transformers' pooling and
    /// normalisation, done on the host: mean or CLS pooling only, no Dense).
    fn shipped_onnx(dir: &Path, tokenizer: Option<PathBuf>) -> Result<Self> {
        let hf = trt_hf::HfFolder::open(dir)?;
        let mut folder = Self::with_model(dir.to_owned(), dir.join("onnx").join("model.onnx"), tokenizer.or(Some(hf.tokenizer.clone())))?;
        let unsupported = |what: &str| {
            Error::unsupported(format!(
                "{}: {what} needs the graph written from the weights (model.safetensors); onnx/model.onnx is used with mean or CLS pooling alone",
                dir.display()
            ))
        };
        folder.pooling = match hf.sentence.pooling().map(|(modes, _)| modes) {
            None | Some([trt_hf::st::PoolingMode::Mean]) => Pooling::Mean,
            Some([trt_hf::st::PoolingMode::Cls]) => Pooling::Cls,
            Some(modes) => return Err(unsupported(&format!("pooling {:?}", modes.iter().map(|m| m.name()).collect::<Vec<_>>()))),
        };
        if hf.sentence.modules.iter().any(|m| matches!(m, trt_hf::st::Module::Dense(_))) {
            return Err(unsupported("a Dense module"));
        }
        folder.normalize = hf.sentence.modules.iter().any(|m| matches!(m, trt_hf::st::Module::Normalize));
        folder.max_positions = Some(hf.max_seq_length());
        Ok(folder)
    }

    /// The files of `dir` for the model file `model`; `tokenizer`, when
    /// given, instead of the folder's `tokenizer.json`.
    pub fn with_model(dir: PathBuf, model: PathBuf, tokenizer: Option<PathBuf>) -> Result<Self> {
        let tokenizer = tokenizer.unwrap_or_else(|| dir.join("tokenizer.json"));
        if !tokenizer.is_file() {
            return Err(Error::MissingFile {
                path: tokenizer,
                what: "missing: a tokenizer.json beside the model, or one given (--tokenizer)".into(),
            });
        }
        let config = dir.join("config.json");
        let (labels, max_positions) = if config.is_file() {
            let c: HfConfig = crate::postprocess::read_json_config(&config)?;
            (Labels::from_config_file(&config)?, c.max_position_embeddings)
        } else {
            (Labels::default(), None)
        };
        if let Some(d) = trt_hf::Descriptor::read(&dir)? {
            let labels = if d.labels.is_empty() { labels } else { Labels::from_names(d.labels.iter().cloned()) };
            let max_positions = Some(d.max_seq_length);
            let normalize = d.normalize;
            return Ok(ModelFolder { dir, model, tokenizer, labels, pooling: Pooling::Mean, normalize, max_positions, imported: Some(d) });
        }
        let pooling_config = dir.join("1_Pooling").join("config.json");
        let pooling = if pooling_config.is_file() { Pooling::from_config_file(&pooling_config)? } else { Pooling::Mean };
        let modules = dir.join("modules.json");
        let normalize = if modules.is_file() {
            let m: Vec<StModule> = crate::postprocess::read_json_config(&modules)?;
            m.iter().any(|m| m.kind.ends_with(".Normalize"))
        } else {
            true
        };
        Ok(ModelFolder { dir, model, tokenizer, labels, pooling, normalize, max_positions, imported: None })
    }

    /// Whether the model file is a TensorRT plan (by its extension).
    pub fn is_plan(&self) -> bool {
        is_plan(&self.model)
    }

    /// The backend for the folder's model ([`backend::open`]); the longest
    /// sequence is capped at `max_position_embeddings` where `config.json`
    /// gives it, and ONNX Runtime on CUDA pools sentence embeddings inside
    /// the graph as the folder's pooling says, unless `options` say otherwise
    /// ([`OrtBackendOptions::graph_pooling`](crate::backend::onnxruntime::OrtBackendOptions::graph_pooling)).
    pub fn backend(&self, choice: BackendChoice, options: &BackendOptions) -> Result<Arc<dyn Backend>> {
        let mut options = options.clone();
        match (&self.imported, self.max_positions) {
            // An import says where the model cuts texts (sentence-transformers' length).
            (Some(d), _) => options.max_seq = d.max_seq_length,
            (None, Some(p)) => options.max_seq = options.max_seq.min(p),
            (None, None) => {}
        }
        // An imported graph computes its embedding itself.
        #[cfg(feature = "onnxruntime")]
        if options.onnxruntime.graph_pooling.is_none() && self.imported.is_none() {
            options.onnxruntime.graph_pooling =
                Some(crate::backend::onnxruntime::GraphPooling { pooling: self.pooling, normalize: self.normalize, on_cpu: false });
        }
        backend::open(&self.model, choice, &options)
    }
}

/// Whether `dir` is a HuggingFace folder that ships `onnx/model.onnx` and
/// no weights to write a graph from (nor a model file of this project).
fn ships_onnx_only(dir: &Path) -> bool {
    let weights = ["model.safetensors", "model.safetensors.index.json"].iter().any(|f| dir.join(f).is_file());
    let own = MODEL_FILES.iter().any(|f| dir.join(f).is_file());
    !weights && !own && dir.join("onnx").join("model.onnx").is_file() && dir.join("config.json").is_file()
}

/// Where `model` is: the path itself when it exists, else, when it reads
/// `org/name[@revision]`, its snapshot in the local HuggingFace cache
/// ([`trt_hf::hub`]; nothing is downloaded). The error names both places.
/// ```
/// # fn main() -> trt_nlp::Result<()> {
/// # // A small random-weight model (tests/data/hf/, made by scripts/make_hf_fixtures*.py).
/// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/bert-hub");
/// assert_eq!(trt_nlp::resolve_model(path)?, std::path::Path::new(path)); // a path that exists is itself
/// // `org/name` is looked up in the local HuggingFace cache; nothing is downloaded.
/// assert!(trt_nlp::resolve_model("no-such-org/no-such-model").is_err());
/// # Ok(())
/// # }
/// ```
pub fn resolve_model(model: &str) -> Result<PathBuf> {
    let path = Path::new(model);
    if path.exists() {
        return Ok(path.to_owned());
    }
    if trt_hf::hub::looks_like_id(model.split('@').next().unwrap_or(model)) {
        return Ok(trt_hf::hub::resolve(model)?);
    }
    Err(Error::Io { path: path.to_owned(), source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or folder") })
}
