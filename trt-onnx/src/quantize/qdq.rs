//! Where Q/DQ nodes go: both inputs of each quantized weighted MatMul/Gemm,
//! the pattern TensorRT fuses into an INT8 GEMM.
//!
//! - Activation: `QuantizeLinear -> DequantizeLinear` per tensor, scale
//!   amax/127, INT8 zero point 0; one pair per tensor, shared by every
//!   quantized MatMul reading it (Q, K and V read one LayerNorm output).
//! - Weight: stored as an INT8 initializer (per output channel, scale
//!   max|w|/127, zero point 0) behind a `DequantizeLinear` with `axis`; the FP32
//!   original is dropped once nothing else reads it.
//! - Never on Softmax, LayerNorm, GELU or data movement: only MatMul/Gemm
//!   inputs are touched. The attention MatMuls (activation x activation) are
//!   not weighted and stay float; residual Adds are left float too: their
//!   inputs carry the post-LayerNorm outliers (up to about 28 against a
//!   median of 0.33 on the default model), which one per-tensor INT8 scale
//!   cannot hold without losing the small values.

use std::collections::HashMap;

use ndarray::{ArrayD, Axis};

use super::calibrate::weight_scales;
use crate::graph::edit::{self, Index, Names};
use crate::graph::proto::{GraphProto, NodeProto};
use crate::graph::{tensor, types, Model};
use crate::{Error, Result};

/// A MatMul or Gemm with a constant weight: a candidate for INT8.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// The node's name (its first output's name when it has none).
    pub name: String,
    /// Operator: MatMul or Gemm.
    pub op: String,
    /// The activation input (tensor name).
    pub activation: String,
    /// The weight initializer.
    pub weight: String,
    /// Input width (reduction dimension).
    pub k: usize,
    /// Output width.
    pub n: usize,
    /// The weight's output-channel axis (1 for MatMul `[K, N]`, 0 for Gemm with transB).
    pub channel_axis: usize,
}

fn node_name(n: &NodeProto) -> String {
    n.name.clone().filter(|s| !s.is_empty()).unwrap_or_else(|| n.output.first().cloned().unwrap_or_default())
}

/// Every weighted MatMul/Gemm of the graph, in node order.
pub fn weighted_matmuls(graph: &GraphProto) -> Vec<Layer> {
    let ix = Index::new(graph);
    let types = types::infer(graph);
    let mut out = Vec::new();
    for n in &graph.node {
        let op = n.op_type.as_deref().unwrap_or("");
        if !matches!(op, "MatMul" | "Gemm") || n.input.len() < 2 {
            continue;
        }
        let (x, w) = (&n.input[0], &n.input[1]);
        let Some(wt) = ix.initializer(graph, w) else {
            continue;
        };
        if ix.initializer.contains_key(x)
            || wt.data_type != Some(tensor::FLOAT)
            || wt.dims.len() != 2
            || types.get(x) != Some(&tensor::FLOAT)
        {
            continue;
        }
        let trans_b = op == "Gemm" && types::attribute(n, "transB").and_then(|a| a.i) == Some(1);
        let trans_a = op == "Gemm" && types::attribute(n, "transA").and_then(|a| a.i) == Some(1);
        if trans_a {
            continue;
        }
        let (d0, d1) = (wt.dims[0] as usize, wt.dims[1] as usize);
        let (k, n_out, axis) = if trans_b { (d1, d0, 0) } else { (d0, d1, 1) };
        out.push(Layer { name: node_name(n), op: op.into(), activation: x.clone(), weight: w.clone(), k, n: n_out, channel_axis: axis });
    }
    out
}

/// Symmetric INT8 values of `w` with per-channel `scales` along `axis`.
pub fn quantize_weight(w: &ArrayD<f32>, axis: usize, scales: &[f32]) -> ArrayD<i8> {
    let mut q = ArrayD::<i8>::zeros(w.raw_dim());
    for (c, (src, mut dst)) in w.axis_iter(Axis(axis)).zip(q.axis_iter_mut(Axis(axis))).enumerate() {
        let s = scales[c];
        for (d, v) in dst.iter_mut().zip(src.iter()) {
            *d = (v / s).round().clamp(-127.0, 127.0) as i8;
        }
    }
    q
}

/// Inserts Q/DQ for the layers marked in `int8`, with activation ranges `amax`.
pub fn insert(model: &mut Model, layers: &[Layer], int8: &[bool], amax: &HashMap<String, f32>) -> Result<()> {
    let graph = model.graph_mut()?;
    let mut names = Names::new(graph);
    let ix = Index::new(graph);
    let mut new_nodes = Vec::new();
    let mut new_inits = Vec::new();
    let mut act_dq: HashMap<String, String> = HashMap::new();
    let zero = names.fresh("qdq/zero_point_int8");
    new_inits.push(tensor::from_i8(&zero, &ArrayD::<i8>::zeros(ndarray::IxDyn(&[]))));
    let node_at: HashMap<String, usize> = graph.node.iter().enumerate().map(|(i, n)| (node_name(n), i)).collect();
    let mut rewires: Vec<(usize, String, String)> = Vec::new();
    for (layer, _) in layers.iter().zip(int8).filter(|(_, q)| **q) {
        let &at = node_at.get(&layer.name).ok_or_else(|| Error::Graph(format!("no node named '{}'", layer.name)))?;
        let a = *amax.get(&layer.activation).ok_or_else(|| Error::Calibration(format!("no range for tensor '{}'", layer.activation)))?;
        let dq = match act_dq.get(&layer.activation) {
            Some(d) => d.clone(),
            None => {
                let base = &layer.activation;
                let scale = names.fresh(&format!("{base}/scale"));
                new_inits.push(tensor::scalar_f32(&scale, a / 127.0));
                let q = names.fresh(&format!("{base}_quantized"));
                let d = names.fresh(&format!("{base}_dequantized"));
                let qn = names.fresh(&format!("{base}/QuantizeLinear"));
                let dn = names.fresh(&format!("{base}/DequantizeLinear"));
                new_nodes.push(edit::node("QuantizeLinear", qn, vec![base.clone(), scale.clone(), zero.clone()], q.clone(), vec![]));
                new_nodes.push(edit::node("DequantizeLinear", dn, vec![q, scale, zero.clone()], d.clone(), vec![]));
                act_dq.insert(base.clone(), d.clone());
                d
            }
        };
        rewires.push((at, layer.activation.clone(), dq));
        // The weight, per output channel.
        let wt =
            ix.initializer(graph, &layer.weight).ok_or_else(|| Error::Graph(format!("weight '{}' is not an initializer", layer.weight)))?;
        let w = tensor::to_f32(wt)?;
        let scales = weight_scales(&w, layer.channel_axis);
        let wq = quantize_weight(&w, layer.channel_axis, &scales);
        let base = &layer.weight;
        let qname = names.fresh(&format!("{base}_int8"));
        let sname = names.fresh(&format!("{base}/scale"));
        let zname = names.fresh(&format!("{base}/zero_point"));
        let dname = names.fresh(&format!("{base}_dequantized"));
        let nname = names.fresh(&format!("{base}/DequantizeLinear"));
        new_inits.push(tensor::from_i8(&qname, &wq));
        new_inits.push(tensor::from_f32(
            &sname,
            &ArrayD::from_shape_vec(ndarray::IxDyn(&[scales.len()]), scales.clone()).map_err(|e| Error::Graph(e.to_string()))?,
        ));
        new_inits.push(tensor::from_i8(&zname, &ArrayD::<i8>::zeros(ndarray::IxDyn(&[scales.len()]))));
        new_nodes.push(edit::node(
            "DequantizeLinear",
            nname,
            vec![qname, sname, zname],
            dname.clone(),
            vec![edit::int_attr("axis", layer.channel_axis as i64)],
        ));
        rewires.push((at, layer.weight.clone(), dname));
    }
    for (at, from, to) in rewires {
        for input in graph.node[at].input.iter_mut().take(2) {
            if *input == from {
                *input = to.clone();
            }
        }
    }
    graph.node.extend(new_nodes);
    graph.initializer.extend(new_inits);
    drop_unused_initializers(graph);
    edit::topological_sort(graph)
}

/// Removes initializers no node reads (weights replaced by their INT8 copies).
pub fn drop_unused_initializers(graph: &mut GraphProto) {
    // Subgraphs may read outer initializers by name: keep everything then.
    if graph.node.iter().any(|n| n.attribute.iter().any(|a| a.g.is_some() || !a.graphs.is_empty())) {
        return;
    }
    let ix = Index::new(graph);
    let inputs: std::collections::HashSet<String> = graph.input.iter().filter_map(|v| v.name.clone()).collect();
    graph.initializer.retain(|t| {
        let n = t.name.clone().unwrap_or_default();
        !ix.consumers_of(&n).is_empty() || ix.outputs.contains(&n) || inputs.contains(&n)
    });
}
