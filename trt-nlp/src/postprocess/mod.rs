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
pub use softmax::softmax;
