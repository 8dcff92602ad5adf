//! Intermediate tensors of a network as extra outputs: what a layer-by-layer
//! comparison against another executor reads (polygraphy's
//! `--trt-outputs mark all`).
//!
//! | call | what |
//! |---|---|
//! | [`Network::layer_outputs`] | every tensor a layer produces, in layer order |
//! | [`Network::mark_outputs`] | named layer outputs become network outputs, under their own names |
//!
//! The ONNX parser adds layers in the model's node order (topological) and
//! names each layer's output tensors after the ONNX values they compute, so
//! these names can be matched against an ONNX graph's. Marking a tensor as an
//! output keeps TensorRT from fusing it away: the engine built that way can
//! differ numerically from one built without the marks, which is the price
//! every layer-wise comparison pays.

use std::collections::{HashMap, HashSet};
use std::ptr::NonNull;

use trt_sys::ffi;

use super::{Network, TensorInfo};
use crate::call::call;
use crate::{Error, Result};

/// A tensor one layer produces.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LayerOutput {
    /// The producing layer's name.
    pub layer: String,
    /// The tensor.
    pub tensor: TensorInfo,
}

impl LayerOutput {
    /// Whether it can be read back as activations: a float tensor
    /// (FP32, FP16, BF16) that is not a shape tensor.
    pub fn is_float_activation(&self) -> bool {
        self.tensor.dtype.is_float() && !self.tensor.is_shape_tensor
    }
}

impl Network<'_> {
    /// The output tensors of every layer, in layer order (for a parsed ONNX
    /// model: the model's node order), each named as TensorRT names it.
    /// Tensors already marked as network outputs are included.
    pub fn layer_outputs(&self) -> Vec<LayerOutput> {
        self.layer_tensors().into_iter().filter_map(|(layer, raw)| Some(LayerOutput { layer, tensor: self.info(raw.as_ptr())? })).collect()
    }

    /// (layer name, output tensor) for every output of every layer, in layer order.
    fn layer_tensors(&self) -> Vec<(String, NonNull<ffi::ITensor>)> {
        let mut out = Vec::new();
        let n = ffi::network_nb_layers(self.get()).unwrap_or(0);
        for i in 0..n {
            let Some(layer) = ffi::network_layer(self.get(), i).ok().and_then(NonNull::new) else { continue };
            // SAFETY: layers live as long as the network, which `self` borrows.
            let layer = unsafe { layer.as_ref() };
            let name = ffi::layer_name(layer).unwrap_or_default();
            for j in 0..ffi::layer_nb_outputs(layer).unwrap_or(0) {
                if let Some(raw) = ffi::layer_output(layer, j).ok().and_then(NonNull::new) {
                    out.push((name.clone(), raw));
                }
            }
        }
        out
    }

    /// Marks the named layer outputs as network outputs, keeping their names,
    /// and returns how many were marked (names already outputs are skipped).
    ///
    /// Every name must be a float activation some layer produces
    /// ([`LayerOutput::is_float_activation`]): an unknown name is
    /// [`Error::UnknownTensor`], a shape or integer tensor
    /// [`Error::InvalidArgument`], both before anything is marked.
    pub fn mark_outputs<S: AsRef<str>>(&self, names: &[S]) -> Result<usize> {
        let outputs: HashSet<String> = self.outputs().into_iter().map(|o| o.name).collect();
        let mut by_name = HashMap::new();
        for (_, raw) in self.layer_tensors() {
            by_name.entry(self.tensor(raw).name()).or_insert(raw);
        }
        let mut chosen = Vec::new();
        let mut seen = HashSet::new();
        for name in names {
            let name = name.as_ref();
            if outputs.contains(name) || !seen.insert(name) {
                continue;
            }
            let raw = *by_name.get(name).ok_or_else(|| Error::UnknownTensor { name: name.to_owned(), context: "layer outputs" })?;
            let t = self.tensor(raw);
            let dtype = t.dtype()?;
            if !dtype.is_float() || t.is_shape_tensor() {
                return Err(Error::InvalidArgument(format!(
                    "tensor '{name}' ({dtype}{}) cannot be compared as activations: only float tensors that are not shape tensors are marked",
                    if t.is_shape_tensor() { ", a shape tensor" } else { "" }
                )));
            }
            chosen.push(t);
        }
        for t in &chosen {
            let pinned = self.own(*t)?;
            call("markOutput", || ffi::network_mark_output(self.pin(), pinned))?;
        }
        Ok(chosen.len())
    }
}
