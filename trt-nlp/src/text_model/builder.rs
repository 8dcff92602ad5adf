//! [`TextModelBuilder`]: what is optional when opening a [`TextModel`]
//! (backend, precision of an import, device, batching limits, threads),
//! each with the default a newcomer wants.

use std::path::PathBuf;

use crate::backend::{BackendChoice, BackendOptions};
use crate::{HelperOptions, ModelFolder, Result, TextModel};

/// Opens a [`TextModel`] with settings beyond the defaults; from
/// [`TextModel::builder`].
///
/// ```no_run
/// use trt_nlp::{Precision, TextModel};
///
/// # fn main() -> trt_nlp::Result<()> {
/// let model = TextModel::builder("sentence-transformers/all-MiniLM-L6-v2") // the local HF cache
///     .precision(Precision::Fp16) // imported in FP16 (for a GPU)
///     .cuda(0)
///     .max_batch(64)
///     .build()?;
/// let v = model.embed(&["a text"])?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct TextModelBuilder {
    model: PathBuf,
    tokenizer: Option<PathBuf>,
    choice: BackendChoice,
    backend: BackendOptions,
    helper: HelperOptions,
    import: trt_hf::ImportOptions,
}

impl TextModelBuilder {
    pub(super) fn new(model: PathBuf) -> Self {
        TextModelBuilder {
            model,
            tokenizer: None,
            choice: BackendChoice::Auto,
            backend: BackendOptions::default(),
            helper: HelperOptions::default(),
            import: trt_hf::ImportOptions::default(),
        }
    }

    /// Which executor runs the model (default [`BackendChoice::Auto`]:
    /// TensorRT where it is built and can execute here, else ONNX Runtime).
    pub fn backend(mut self, choice: BackendChoice) -> Self {
        self.choice = choice;
        self
    }

    /// The precision a HuggingFace folder is imported in (default FP32).
    pub fn precision(mut self, precision: trt_hf::Precision) -> Self {
        self.import = self.import.with_precision(precision);
        self
    }

    /// The operators a HuggingFace folder is imported in (default
    /// [`Form::Plain`](trt_hf::Form::Plain); [`Form::Fused`](trt_hf::Form::Fused)
    /// for ONNX Runtime on CUDA).
    pub fn form(mut self, form: trt_hf::Form) -> Self {
        self.import = self.import.with_form(form);
        self
    }

    /// ONNX Runtime on the CPU only (default: CUDA where the library, a
    /// driver and a GPU are there, else the CPU).
    #[cfg(feature = "onnxruntime")]
    pub fn cpu(mut self) -> Self {
        self.backend.onnxruntime.provider = trt_onnx::runtime::Provider::Cpu;
        self
    }

    /// The GPU of this index (ONNX Runtime's CUDA provider, TensorRT's
    /// device); any reason it cannot run there is an error.
    pub fn cuda(mut self, device: u32) -> Self {
        #[cfg(feature = "onnxruntime")]
        {
            self.backend.onnxruntime.provider = trt_onnx::runtime::Provider::Cuda { device };
        }
        self.backend.tensorrt_device = device as usize;
        self
    }

    /// Batches that run at once (sessions or execution contexts; default 1).
    pub fn instances(mut self, n: usize) -> Self {
        self.backend.instances = n.max(1);
        self
    }

    /// The largest batch run at once (default 32).
    pub fn max_batch(mut self, n: usize) -> Self {
        self.backend.max_batch = n.max(1);
        self
    }

    /// Tokenizer threads (default: one per core, at most 8).
    pub fn threads(mut self, n: usize) -> Self {
        self.helper.threads = Some(n.max(1));
        self
    }

    /// A `tokenizer.json` instead of the folder's.
    pub fn tokenizer(mut self, path: impl Into<PathBuf>) -> Self {
        self.tokenizer = Some(path.into());
        self
    }

    /// Every backend setting at once (replaces what the calls above set).
    pub fn backend_options(mut self, options: BackendOptions) -> Self {
        self.backend = options;
        self
    }

    /// Every tokenizer setting at once.
    pub fn tokenizer_options(mut self, options: HelperOptions) -> Self {
        self.helper = options;
        self
    }

    /// Opens the model.
    /// ```
    /// use trt_nlp::{Error, TextModel};
    ///
    /// # fn main() -> trt_nlp::Result<()> {
    /// # // A small random-weight model (tests/data/hf/, made by scripts/make_hf_fixtures*.py).
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/bert-hub");
    /// let model = TextModel::builder(path).cpu().instances(2).threads(1).build()?;
    /// assert_eq!(model.instances(), 2);
    /// // What cannot be opened is a typed error naming what is missing.
    /// let e = TextModel::builder(std::env::temp_dir().join("no-such-model-folder")).build().unwrap_err();
    /// assert!(matches!(e, Error::Io { .. }), "{e}");
    /// # Ok(())
    /// # }
    /// ```
    pub fn build(self) -> Result<TextModel> {
        let folder = ModelFolder::open_imported(&self.model, self.tokenizer, &self.import)?;
        TextModel::from_folder(&folder, self.choice, &self.backend, &self.helper)
    }
}
