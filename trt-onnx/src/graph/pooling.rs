//! Sentence pooling inside the graph: a `[batch, dim]` output computed from
//! a `[batch, seq, dim]` hidden-state output and the attention mask, so an
//! executor on a GPU hands back one small row per text instead of every
//! token's states (and the host does no pooling).
//!
//! The nodes compute what sentence-transformers computes, in FLOAT whatever
//! the hidden states' type: mean pooling `sum(h * m) / max(sum(m), 1e-9)`
//! (the masked sum as a batched MatMul of the mask row with the states), or
//! the first token's state, then optionally `x / max(||x||, 1e-12)`. Only
//! operators whose form has been stable since opset 13 are used (`Cast`,
//! `Reshape`, `MatMul`, `ReduceSum` with axes as an input, `Max`, `Div`,
//! `Mul`, `Sqrt`, `Gather`), so a model of opset 13 or later takes it.

use super::edit::{int_attr, node, Index, Names};
use super::proto::tensor_proto::DataType;
use super::proto::{tensor_shape_proto, type_proto, AttributeProto, NodeProto, TensorProto, TensorShapeProto, TypeProto, ValueInfoProto};
use super::tensor::{from_i64, scalar_f32};
use super::Model;
use crate::{Error, Result};

/// How the hidden states become one vector per text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SentencePooling {
    /// The mean over the positions the mask marks.
    Mean,
    /// The first position's state.
    First,
}

/// What [`add_pooled_output`] adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PooledOutput {
    /// The `[batch, seq, dim]` output to pool.
    pub hidden: String,
    /// The `[batch, seq]` attention-mask input (any integer or float type).
    pub mask: String,
    /// Mean or first token.
    pub pooling: SentencePooling,
    /// Whether each row is L2-normalised.
    pub normalize: bool,
    /// The name of the new `[batch, dim]` FLOAT output.
    pub output: String,
}

const OP: &str = "sentence pooling";

/// Adds `spec.output` to `model`'s outputs (the hidden output stays one).
/// Fails, naming the reason, when the model's opset is below 13, the hidden
/// output or mask input is missing or not of the ranks pooling needs, or the
/// output name is taken.
pub fn add_pooled_output(model: &mut Model, spec: &PooledOutput) -> Result<()> {
    let unsupported = |problem: String| Error::Unsupported { operation: OP, problem };
    let opset = model.opset().unwrap_or(0);
    if opset < 13 {
        return Err(unsupported(format!("the model's opset is {opset}; pooling in the graph needs 13 or later")));
    }
    let graph = model.graph_mut()?;
    let ix = Index::new(graph);
    if ix.outputs.contains(&spec.output) || ix.producer.contains_key(&spec.output) {
        return Err(unsupported(format!("the model already has a tensor named '{}'", spec.output)));
    }
    let hidden = graph.output.iter().find(|o| o.name.as_deref() == Some(spec.hidden.as_str()));
    let hidden = hidden.ok_or_else(|| unsupported(format!("the model has no output '{}'", spec.hidden)))?;
    let (hidden_type, hidden_dims) = tensor_type(hidden)
        .filter(|(_, dims)| dims.len() == 3)
        .ok_or_else(|| unsupported(format!("output '{}' is not a [batch, seq, dim] tensor", spec.hidden)))?;
    let mask = graph.input.iter().find(|i| i.name.as_deref() == Some(spec.mask.as_str()));
    let mask = mask.ok_or_else(|| unsupported(format!("the model has no input '{}'", spec.mask)))?;
    if tensor_type(mask).is_none_or(|(_, dims)| dims.len() != 2) {
        return Err(unsupported(format!("input '{}' is not a [batch, seq] tensor", spec.mask)));
    }

    let float = DataType::Float as i32;
    let mut b = Builder { names: Names::new(graph), base: format!("{}/", spec.output), nodes: Vec::new(), inits: Vec::new() };
    let to_float = || vec![int_attr("to", i64::from(float))];
    let states = if hidden_type == float { spec.hidden.clone() } else { b.op("Cast", "states_f32", vec![spec.hidden.clone()], to_float()) };
    let axis_1 = b.int64("axis_1", &[1], false);
    let pooled = match spec.pooling {
        SentencePooling::Mean => {
            let m = b.op("Cast", "mask_f32", vec![spec.mask.clone()], to_float());
            let row_shape = b.int64("shape_b_1_s", &[0, 1, -1], false);
            let flat_shape = b.int64("shape_b_d", &[0, -1], false);
            let m_row = b.op("Reshape", "mask_row", vec![m.clone(), row_shape], vec![]);
            let sum3 = b.op("MatMul", "masked_sum_b_1_d", vec![m_row, states], vec![]);
            let sum = b.op("Reshape", "masked_sum", vec![sum3, flat_shape], vec![]);
            let count = b.op("ReduceSum", "count", vec![m, axis_1.clone()], vec![int_attr("keepdims", 1)]);
            let eps = b.float("eps_count", 1e-9);
            let count = b.op("Max", "count_at_least_eps", vec![count, eps], vec![]);
            b.op("Div", "mean", vec![sum, count], vec![])
        }
        SentencePooling::First => {
            let zero = b.int64("position_0", &[0], true);
            b.op("Gather", "first", vec![states, zero], vec![int_attr("axis", 1)])
        }
    };
    let result = if spec.normalize {
        let sq = b.op("Mul", "squares", vec![pooled.clone(), pooled.clone()], vec![]);
        let ss = b.op("ReduceSum", "sum_of_squares", vec![sq, axis_1], vec![int_attr("keepdims", 1)]);
        let norm = b.op("Sqrt", "norm", vec![ss], vec![]);
        let eps = b.float("eps_norm", 1e-12);
        let norm = b.op("Max", "norm_at_least_eps", vec![norm, eps], vec![]);
        b.op("Div", "normalized", vec![pooled, norm], vec![])
    } else {
        pooled
    };
    // The last node writes the new output under its public name.
    let last = b.nodes.iter_mut().rev().find(|n| n.output.first() == Some(&result));
    let last = last.ok_or_else(|| Error::Graph("sentence pooling made no node".into()))?;
    last.output = vec![spec.output.clone()];
    graph.node.extend(b.nodes);
    graph.initializer.extend(b.inits);
    let dims = vec![hidden_dims[0].clone(), hidden_dims[2].clone()];
    graph.output.push(ValueInfoProto {
        name: Some(spec.output.clone()),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: Some(float),
                shape: Some(TensorShapeProto { dim: dims }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    });
    Ok(())
}

/// The nodes and initializers being added, named under `base` (fresh names).
struct Builder {
    names: Names,
    base: String,
    nodes: Vec<NodeProto>,
    inits: Vec<TensorProto>,
}

impl Builder {
    /// A node of `op` over `inputs`; returns its one output.
    fn op(&mut self, op: &str, what: &str, inputs: Vec<String>, attrs: Vec<AttributeProto>) -> String {
        let out = self.names.fresh(&format!("{}{what}", self.base));
        self.nodes.push(node(op, out.clone(), inputs, out.clone(), attrs));
        out
    }

    /// An INT64 initializer: a 1-D tensor of `values`, or a scalar of the first.
    fn int64(&mut self, what: &str, values: &[i64], scalar: bool) -> String {
        let name = self.names.fresh(&format!("{}{what}", self.base));
        let a = if scalar { ndarray::arr0(values[0]).into_dyn() } else { ndarray::Array1::from(values.to_vec()).into_dyn() };
        self.inits.push(from_i64(&name, &a));
        name
    }

    /// A scalar FLOAT initializer.
    fn float(&mut self, what: &str, v: f32) -> String {
        let name = self.names.fresh(&format!("{}{what}", self.base));
        self.inits.push(scalar_f32(&name, v));
        name
    }
}

/// The element type and dimensions of a tensor value.
fn tensor_type(v: &ValueInfoProto) -> Option<(i32, Vec<tensor_shape_proto::Dimension>)> {
    match v.r#type.as_ref()?.value.as_ref()? {
        type_proto::Value::TensorType(t) => Some((t.elem_type?, t.shape.as_ref()?.dim.clone())),
        _ => None,
    }
}
