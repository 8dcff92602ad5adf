//! One error type for the crate. Every variant names the file and the field
//! or tensor it is about, so a user can tell which part of a model folder is
//! at fault without reading code.

use std::path::PathBuf;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong reading a model folder or writing its graph.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },

    /// A file the folder must hold is not there.
    #[error("{}: missing ({why})", path.display())]
    Missing {
        /// Where it was looked for.
        path: PathBuf,
        /// What it is needed for.
        why: String,
    },

    /// A JSON file is not valid JSON, or a field has the wrong type or value.
    #[error("{}: {field}: {problem}", path.display())]
    Config {
        /// The file.
        path: PathBuf,
        /// The field (`hidden_size`, `pooling_mode`), or `(file)` for the whole file.
        field: String,
        /// What is wrong with it.
        problem: String,
    },

    /// A `.safetensors` file is truncated, or its header lies about the data.
    #[error("{}: not a valid safetensors file: {problem}", path.display())]
    Safetensors {
        /// The file.
        path: PathBuf,
        /// What the reader found.
        problem: String,
    },

    /// A tensor the architecture needs is not in the weights.
    #[error("{}: no tensor '{tensor}' (the {family} architecture needs it)", path.display())]
    MissingTensor {
        /// The weights file (or the index of a sharded checkpoint).
        path: PathBuf,
        /// The tensor's name, as looked for.
        tensor: String,
        /// The architecture family.
        family: &'static str,
    },

    /// A tensor has another shape or element type than the config implies.
    #[error("{}: tensor '{tensor}': {problem}", path.display())]
    Tensor {
        /// The weights file.
        path: PathBuf,
        /// The tensor's name.
        tensor: String,
        /// Expected against found.
        problem: String,
    },

    /// The folder's `model_type`, architecture or a setting of it is not supported.
    #[error("{}: {what} is not supported; supported: {}", path.display(), supported.join(", "))]
    Unsupported {
        /// The file that names it.
        path: PathBuf,
        /// What (`model_type 'gpt2'`, `hidden_act 'swish'`, `pooling mode 'x'`).
        what: String,
        /// What is supported instead.
        supported: Vec<String>,
    },

    /// The graph tools refused the graph (a defect here, not in the folder).
    #[error("writing the ONNX graph: {0}")]
    Graph(#[from] trt_onnx::Error),
}

impl Error {
    /// A [`Error::Config`] for `field` of `path`.
    pub(crate) fn config(path: &std::path::Path, field: impl Into<String>, problem: impl Into<String>) -> Self {
        Error::Config { path: path.to_owned(), field: field.into(), problem: problem.into() }
    }

    /// An [`Error::Io`] for `path`.
    pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Self + '_ {
        move |source| Error::Io { path: path.to_owned(), source }
    }
}
