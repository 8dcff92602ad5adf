//! Turning engine outputs into answers, on the CPU: class probabilities and
//! top-k labels for classifiers, pooled and normalised sentence embeddings.
//!
//! Everything works on `ndarray` views of f32, f16 or bf16 data (what an
//! engine writes) and computes in f32.

mod element;
mod labels;
mod pooling;
mod softmax;

pub use element::{FloatElement, MaskElement};
pub use labels::{top_k, Labels, Prediction};
pub use pooling::{cls_pool, l2_normalize, mean_pool, Pooling};
pub use softmax::{scores, softmax};

/// Read and parse a JSON configuration file (`config.json`,
/// `1_Pooling/config.json`); errors name the file.
pub(crate) fn read_json_config<T: serde::de::DeserializeOwned>(path: &std::path::Path) -> crate::Result<T> {
    let text = std::fs::read_to_string(path).map_err(|source| crate::Error::Io { path: path.to_owned(), source })?;
    parse_json_config(&text, path)
}

/// Parse JSON configuration text that came from `path` (for the error).
pub(crate) fn parse_json_config<T: serde::de::DeserializeOwned>(text: &str, path: &std::path::Path) -> crate::Result<T> {
    serde_json::from_str(text).map_err(|source| crate::Error::Config { path: path.to_owned(), source })
}
