//! Models over named tensors, no tokenizer: the client sends the tensors
//! (token ids it computed itself, images, features) and gets the model's
//! outputs back as they are, in their own element types.
//!
//! | item | what it is |
//! |---|---|
//! | [`Tensor`], [`TensorData`] | an owned tensor of any [`ElementType`]: little-endian bytes in and out, stacking along the batch axis, rows cut back out |
//! | [`TensorSpec`] | a model input or output as the model file declares it (name, type, shape with -1 where dynamic) |
//! | [`TensorBackend`] | the seam to an executor: named tensors in, named tensors out; one implementation per runtime |
//! | `onnxruntime` (the `onnxruntime` feature) | ONNX Runtime: a pool of sessions |
//! | `tensorrt` (the `tensorrt` feature) | TensorRT: a pool of execution contexts, device buffers sized per batch |
//! | [`open`] | the backend for a model file and a runtime |
//!
//! The text path ([`crate::Backend`]) stays separate: it lets the tokenizer
//! write into the backend's buffers, where a tensor request arrives already
//! made and is handed over as it is.

mod data;
#[cfg(feature = "onnxruntime")]
pub mod onnxruntime;
#[cfg(feature = "tensorrt")]
pub mod tensorrt;

use std::path::Path;
use std::sync::Arc;

pub use data::{Tensor, TensorData};

use crate::backend::BackendOptions;
use crate::{ElementType, Error, Result};

/// A model input or output as the model declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorSpec {
    /// Name in the model.
    pub name: String,
    /// Element type.
    pub element: ElementType,
    /// Dimensions, -1 where dynamic (the batch axis first where the model batches).
    pub shape: Vec<i64>,
}

impl TensorSpec {
    /// Whether `shape` fits: same rank, every fixed dimension equal.
    pub fn fits(&self, shape: &[usize]) -> bool {
        shape.len() == self.shape.len() && self.shape.iter().zip(shape).all(|(&d, &s)| d < 0 || d as usize == s)
    }
}

/// A tensor-model executor.
///
/// `Send + Sync`; `run` may be called from many threads at once: each call
/// takes one of the [`instances`](TensorBackend::instances) and blocks while
/// none is free.
pub trait TensorBackend: Send + Sync + std::fmt::Debug {
    /// Which executor this is (`"onnxruntime"`, `"tensorrt"`).
    fn name(&self) -> &str;

    /// The model's inputs, in the model's order.
    fn inputs(&self) -> &[TensorSpec];

    /// The model's outputs, in the model's order.
    fn outputs(&self) -> &[TensorSpec];

    /// How many runs can go on at once.
    fn instances(&self) -> usize;

    /// Largest batch (axis 0) the executor takes where it fixes one
    /// (a TensorRT profile's maximum); `None`: any.
    fn max_batch(&self) -> Option<usize> {
        None
    }

    /// Runs the model on `inputs` (every input once, types and shapes as
    /// [`inputs`](TensorBackend::inputs) declare) and returns the outputs
    /// named in `outputs`, in that order.
    fn run(&self, inputs: &[(&str, &Tensor)], outputs: &[&str]) -> Result<Vec<Tensor>>;
}

/// Checks `inputs` against `specs` (each given once, each known, type and
/// shape fitting) so every executor refuses a wrong tensor the same way,
/// naming it.
// Used by the runtimes; a build with neither has none.
#[cfg_attr(not(any(feature = "tensorrt", feature = "onnxruntime")), allow(dead_code))]
pub(crate) fn check_inputs(specs: &[TensorSpec], inputs: &[(&str, &Tensor)]) -> Result<()> {
    for (i, (name, t)) in inputs.iter().enumerate() {
        let bad = |problem: String| Error::Tensor { tensor: (*name).to_owned(), problem };
        if inputs[..i].iter().any(|(n, _)| n == name) {
            return Err(bad("given twice".into()));
        }
        let Some(spec) = specs.iter().find(|s| s.name == *name) else {
            let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
            return Err(bad(format!("the model has no such input (inputs: {})", names.join(", "))));
        };
        if spec.element != t.element() {
            return Err(bad(format!("the model takes {:?}, got {:?}", spec.element, t.element())));
        }
        if !spec.fits(t.shape()) {
            return Err(bad(format!("the model takes shape {:?} (-1: any), got {:?}", spec.shape, t.shape())));
        }
    }
    if let Some(missing) = specs.iter().find(|s| !inputs.iter().any(|(n, _)| *n == s.name)) {
        return Err(Error::Tensor { tensor: missing.name.clone(), problem: "required input not given".into() });
    }
    Ok(())
}

/// Which runtime runs a tensor model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TensorRuntime {
    /// ONNX Runtime over an ONNX file (the `onnxruntime` feature).
    #[cfg(feature = "onnxruntime")]
    OnnxRuntime,
    /// TensorRT over a serialized plan (the `tensorrt` feature).
    #[cfg(feature = "tensorrt")]
    TensorRt,
}

/// The tensor backend for `model` on `runtime`: `options.instances` ONNX
/// Runtime sessions with `options.onnxruntime`'s threads and provider, or as
/// many TensorRT contexts on `options.tensorrt_device`.
/// ```
/// use trt_nlp::backend::BackendOptions;
/// use trt_nlp::tensor::{self, TensorRuntime};
/// use trt_nlp::ModelFolder;
///
/// # fn main() -> trt_nlp::Result<()> {
/// # // A small random-weight model (tests/data/hf/, made by scripts/make_hf_fixtures*.py).
/// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/bert-hub");
/// let onnx = ModelFolder::open(path)?.model;
/// let model = tensor::open(&onnx, TensorRuntime::OnnxRuntime, &BackendOptions::default())?;
/// assert!(model.inputs().iter().any(|t| t.name == "input_ids"));
/// # Ok(())
/// # }
/// ```
pub fn open(model: &Path, runtime: TensorRuntime, options: &BackendOptions) -> Result<Arc<dyn TensorBackend>> {
    // With neither feature `TensorRuntime` has no value: nothing to open.
    #[cfg(not(any(feature = "tensorrt", feature = "onnxruntime")))]
    let _ = (model, options);
    match runtime {
        #[cfg(feature = "onnxruntime")]
        TensorRuntime::OnnxRuntime => Ok(Arc::new(onnxruntime::OrtTensorBackend::new(model, options)?)),
        #[cfg(feature = "tensorrt")]
        TensorRuntime::TensorRt => {
            Ok(Arc::new(tensorrt::TensorRtTensorBackend::open(model, options.tensorrt_device, options.instances.max(1))?))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_checked_by_name_type_and_shape() {
        let specs = [TensorSpec { name: "ids".into(), element: ElementType::I64, shape: vec![-1, 4] }];
        let ok = Tensor::new("ids", vec![2, 4], TensorData::I64(vec![0; 8])).unwrap();
        assert!(check_inputs(&specs, &[("ids", &ok)]).is_ok());
        let msg = |inputs: &[(&str, &Tensor)]| check_inputs(&specs, inputs).unwrap_err().to_string();
        let narrow = Tensor::new("ids", vec![2, 3], TensorData::I64(vec![0; 6])).unwrap();
        assert!(msg(&[("ids", &narrow)]).contains("shape [-1, 4]"));
        let typed = Tensor::new("ids", vec![2, 4], TensorData::I32(vec![0; 8])).unwrap();
        assert!(msg(&[("ids", &typed)]).contains("takes I64, got I32"));
        assert!(msg(&[("ids", &ok), ("ids", &ok)]).contains("given twice"));
        assert!(msg(&[("x", &ok)]).contains("no such input (inputs: ids)"));
        assert!(msg(&[]).contains("'ids'"));
    }
}
