//! The element type of every tensor in a graph: what the FP16 converter and
//! the quantizer need to know ("is this input a float?") without running
//! ONNX's full shape inference.
//!
//! Types come from graph inputs, initializers, `value_info` and graph
//! outputs, then flow through the nodes in order with one rule per operator
//! family. Anything the rules cannot tell stays unknown.

use std::collections::HashMap;

use super::proto::{AttributeProto, GraphProto, NodeProto, ValueInfoProto};
use super::tensor::{BOOL, FLOAT, INT32, INT64, UINT8};

/// Tensor name to `TensorProto.DataType` code.
pub type ElemTypes = HashMap<String, i32>;

/// The declared element type of a value.
pub fn declared(v: &ValueInfoProto) -> Option<i32> {
    use super::proto::type_proto::Value;
    match v.r#type.as_ref()?.value.as_ref()? {
        Value::TensorType(t) => t.elem_type,
        _ => None,
    }
}

/// An attribute of a node by name.
pub fn attribute<'n>(node: &'n NodeProto, name: &str) -> Option<&'n AttributeProto> {
    node.attribute.iter().find(|a| a.name.as_deref() == Some(name))
}

/// Infers the element type of every tensor the rules can tell.
pub fn infer(graph: &GraphProto) -> ElemTypes {
    let mut types = ElemTypes::new();
    for v in graph.input.iter().chain(&graph.value_info).chain(&graph.output) {
        if let (Some(name), Some(t)) = (v.name.clone(), declared(v)) {
            types.insert(name, t);
        }
    }
    for t in &graph.initializer {
        if let (Some(name), Some(code)) = (t.name.clone(), t.data_type) {
            types.insert(name, code);
        }
    }
    for node in &graph.node {
        let outs = output_types(node, &types);
        for (name, t) in node.output.iter().zip(outs) {
            if let (false, Some(t)) = (name.is_empty(), t) {
                types.entry(name.clone()).or_insert(t);
            }
        }
    }
    types
}

fn input_type(node: &NodeProto, types: &ElemTypes, i: usize) -> Option<i32> {
    node.input.get(i).filter(|n| !n.is_empty()).and_then(|n| types.get(n).copied())
}

/// The types of a node's outputs, by operator.
fn output_types(node: &NodeProto, types: &ElemTypes) -> Vec<Option<i32>> {
    let op = node.op_type.as_deref().unwrap_or("");
    let n = node.output.len();
    let first_known = || node.input.iter().filter_map(|i| types.get(i).copied()).next();
    let one = |t: Option<i32>| {
        let mut v = vec![t];
        v.resize(n, None);
        v
    };
    let all = |t: Option<i32>| vec![t; n];
    match op {
        "Cast" => one(attribute(node, "to").and_then(|a| a.i).map(|v| v as i32)),
        "CastLike" => one(input_type(node, types, 1)),
        "Constant" => one(attribute(node, "value").and_then(|a| a.t.as_ref()).and_then(|t| t.data_type).or_else(|| {
            // value_float(s) / value_int(s) forms.
            node.attribute.iter().find_map(|a| match a.name.as_deref() {
                Some("value_float" | "value_floats") => Some(FLOAT),
                Some("value_int" | "value_ints") => Some(INT64),
                _ => None,
            })
        })),
        "ConstantOfShape" => one(Some(attribute(node, "value").and_then(|a| a.t.as_ref()).and_then(|t| t.data_type).unwrap_or(FLOAT))),
        "Shape" | "Size" | "ArgMax" | "ArgMin" | "NonZero" | "NonMaxSuppression" => one(Some(INT64)),
        "Equal" | "Less" | "Greater" | "LessOrEqual" | "GreaterOrEqual" | "And" | "Or" | "Xor" | "Not" | "IsNaN" | "IsInf" => {
            one(Some(BOOL))
        }
        "Where" => one(input_type(node, types, 1).or_else(|| input_type(node, types, 2))),
        "QuantizeLinear" => one(input_type(node, types, 2).or(Some(UINT8))),
        "DequantizeLinear" => one(input_type(node, types, 1)),
        "TopK" => vec![input_type(node, types, 0), Some(INT64)],
        // ONNX Runtime's (com.microsoft): the packed tensor, then INT32 token
        // offsets, cumulative lengths and the longest length.
        "RemovePadding" => vec![input_type(node, types, 0), Some(INT32), Some(INT32), Some(INT32)],
        "Unique" => {
            let mut v = vec![input_type(node, types, 0)];
            v.resize(n, Some(INT64));
            v
        }
        "EyeLike" | "RandomNormalLike" | "RandomUniformLike" | "Multinomial" => {
            one(attribute(node, "dtype").and_then(|a| a.i).map(|v| v as i32).or_else(|| input_type(node, types, 0)))
        }
        "RandomNormal" | "RandomUniform" => one(Some(attribute(node, "dtype").and_then(|a| a.i).map(|v| v as i32).unwrap_or(FLOAT))),
        // The data input decides: data movement, elementwise maths, reductions,
        // normalisations, MatMul/Gemm; LayerNormalization's extra outputs (mean,
        // inverse std) follow its stash_type, FLOAT by default.
        "LayerNormalization" => {
            let mut v = vec![input_type(node, types, 0)];
            v.resize(n, Some(attribute(node, "stash_type").and_then(|a| a.i).map(|v| v as i32).unwrap_or(FLOAT)));
            v
        }
        _ => all(input_type(node, types, 0).or_else(first_known)),
    }
}
