//! FP32 to FP16 conversion of an ONNX model, with FP32 islands where FP16
//! is unsafe.
//!
//! Policy (measured on the default model; see tests/onnx_fp16.rs):
//! - **Always FP16**: the compute-heavy ops (MatMul, Gemm, Conv, Einsum, ...).
//! - **Always FP32** ([`FP32_OPS`]): normalisations (their statistics), Softmax,
//!   reductions (sums over a row overflow), and Exp/Log/Pow/Sqrt/Reciprocal,
//!   whose inputs or outputs leave FP16's range in practice (a decomposed
//!   LayerNorm's variance, `x^2`, an epsilon of 1e-12 that is 0 in FP16).
//!   Erf stays FP16: it is bounded and its input is a scaled activation.
//! - **Everything else follows its inputs**: FP32 when every input computed by
//!   the graph is FP32 (so `ReduceMean -> Add eps -> Sqrt` stays FP32), FP16
//!   otherwise. Weights and constants do not vote; they are stored in the
//!   precision of their consumers (duplicated when consumers disagree).
//! - Casts are inserted only where precisions meet, one per tensor and
//!   direction. Graph inputs and outputs keep their types unless
//!   [`Fp16Options::keep_io_types`] is off. `Cast(to=FLOAT)` in an FP16
//!   region becomes `Cast(to=FLOAT16)`.
//! - Q/DQ nodes stay FP32 (their scales must be FLOAT before opset 19), and so
//!   does a MatMul/Gemm fed by DequantizeLinear, so TensorRT sees the
//!   INT8 GEMM pattern `DQ -> MatMul` with no Cast between.

use std::collections::{HashMap, HashSet};

use crate::graph::edit::{self, Index, Names};
use crate::graph::proto::{GraphProto, NodeProto};
use crate::graph::tensor::{self, FLOAT, FLOAT16};
use crate::graph::types::{self, ElemTypes};
use crate::graph::Model;
use crate::{Error, Result};

/// Operators kept in FP32 by default.
pub const FP32_OPS: &[&str] = &[
    "LayerNormalization",
    "GroupNormalization",
    "InstanceNormalization",
    "RMSNormalization",
    "Softmax",
    "LogSoftmax",
    "ReduceMean",
    "ReduceSum",
    "ReduceSumSquare",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceProd",
    "CumSum",
    "Exp",
    "Log",
    "Pow",
    "Sqrt",
    "Reciprocal",
    "Range",
    "QuantizeLinear",
    "DequantizeLinear",
];

/// Operators always run in FP16 (the reason to convert).
const FP16_OPS: &[&str] = &[
    "MatMul",
    "Gemm",
    "Conv",
    "ConvTranspose",
    "Einsum",
    // ONNX Runtime's attention operators: their softmax keeps FP32 statistics
    // inside, and on CUDA their fused kernels (flash, memory-efficient, cuDNN) are
    // picked for FP16; FP32 gets the unfused path but on long sequences. A layer's input
    // coming straight from an FP32 LayerNormalization must not make them FP32.
    "Attention",
    "MultiHeadAttention",
    "PackedAttention",
    "PackedMultiHeadAttention",
    "GroupQueryAttention",
];

/// Operators whose float inputs may be of any type: no Cast is inserted before them.
const ANY_INPUT_OPS: &[&str] = &["Cast", "Shape", "Size"];

/// Inputs that the ONNX spec fixes to `tensor(float)` whatever the data type.
fn fixed_fp32_input(op: &str, i: usize) -> bool {
    matches!((op, i), ("Resize", 1 | 2) | ("Upsample", 1))
}

/// Operators with subgraphs, which the converter does not enter.
const SUBGRAPH_OPS: &[&str] = &["If", "Loop", "Scan", "SequenceMap"];

/// What to convert.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Fp16Options {
    /// Keep FP32 graph inputs and outputs, with Casts at the boundary (default true).
    pub keep_io_types: bool,
    /// Operator types kept in FP32 (default [`FP32_OPS`]).
    pub fp32_ops: Vec<String>,
    /// Node names kept in FP32 in addition.
    pub fp32_nodes: Vec<String>,
}

impl Default for Fp16Options {
    fn default() -> Self {
        Fp16Options { keep_io_types: true, fp32_ops: FP32_OPS.iter().map(|s| s.to_string()).collect(), fp32_nodes: Vec::new() }
    }
}

/// What the conversion did.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Fp16Report {
    /// Nodes computing in FP16.
    pub fp16_nodes: usize,
    /// Nodes kept in FP32, by operator type.
    pub fp32_nodes: Vec<(String, usize)>,
    /// Casts inserted.
    pub casts: usize,
    /// Float initializers stored as FP16.
    pub fp16_initializers: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Precision {
    F16,
    F32,
}

impl Precision {
    fn code(self) -> i32 {
        match self {
            Precision::F16 => FLOAT16,
            Precision::F32 => FLOAT,
        }
    }
}

fn op(node: &NodeProto) -> &str {
    node.op_type.as_deref().unwrap_or("")
}

/// Converts an FP32 model to FP16 as the module docs describe.
pub fn convert(model: &Model, options: &Fp16Options) -> Result<(Model, Fp16Report)> {
    let mut out = model.clone();
    let report = convert_graph(out.graph_mut()?, options)?;
    Ok((out, report))
}

/// Whether the graph's weights are mostly FP16 already (a converted model:
/// its FP32 islands still hold a few FLOAT tensors).
pub fn is_fp16_model(graph: &GraphProto) -> bool {
    let count = |code| graph.initializer.iter().filter(|t| t.data_type == Some(code)).count();
    count(FLOAT16) > count(FLOAT)
}

fn convert_graph(graph: &mut GraphProto, options: &Fp16Options) -> Result<Fp16Report> {
    let types = types::infer(graph);
    let is_f32 = |name: &str| types.get(name) == Some(&FLOAT);
    if is_fp16_model(graph) || !types.values().any(|&t| t == FLOAT) {
        let problem = if types.values().any(|&t| t == FLOAT16) {
            "the model has no FP32 tensors: it is already FP16"
        } else {
            "the model has no FP32 tensors to convert"
        };
        return Err(Error::Unsupported { operation: "FP16 conversion", problem: problem.into() });
    }
    if let Some(n) = graph.node.iter().find(|n| SUBGRAPH_OPS.contains(&op(n))) {
        return Err(Error::Unsupported {
            operation: "FP16 conversion",
            problem: format!("node '{}' ({}) has subgraphs, which are not converted", n.name.clone().unwrap_or_default(), op(n)),
        });
    }
    edit::topological_sort(graph)?;
    let ix = Index::new(graph);
    let fp32_ops: HashSet<&str> = options.fp32_ops.iter().map(String::as_str).collect();
    let fp32_nodes: HashSet<&str> = options.fp32_nodes.iter().map(String::as_str).collect();
    let float_in = |n: &NodeProto| n.input.iter().any(|i| is_f32(i));
    let float_out = |n: &NodeProto| n.output.iter().any(|o| is_f32(o));

    // 1. Each node's precision, in topological order. Constant nodes wait for step 2.
    let input_precision = if options.keep_io_types { Precision::F32 } else { Precision::F16 };
    let mut available: HashMap<String, Precision> = graph
        .input
        .iter()
        .filter_map(|v| v.name.clone())
        .filter(|n| is_f32(n) && !ix.initializer.contains_key(n))
        .map(|n| (n, input_precision))
        .collect();
    let mut prec: Vec<Option<Precision>> = vec![None; graph.node.len()];
    for (i, node) in graph.node.iter().enumerate() {
        if !(float_in(node) || float_out(node)) || op(node) == "Constant" {
            continue;
        }
        let p = if fp32_ops.contains(op(node)) || fp32_nodes.contains(node.name.as_deref().unwrap_or("")) {
            Precision::F32
        } else if FP16_OPS.contains(&op(node)) {
            let dq_fed = node.input.iter().any(|x| ix.producer.get(x).is_some_and(|&p| op(&graph.node[p]) == "DequantizeLinear"));
            if dq_fed {
                Precision::F32
            } else {
                Precision::F16
            }
        } else {
            // Votes of computed float inputs; graph inputs vote FP16 (compute wants it).
            let votes: Vec<Precision> = node
                .input
                .iter()
                .filter(|x| is_f32(x) && !ix.initializer.contains_key(*x))
                .filter_map(|x| match ix.producer.get(x) {
                    Some(&p) if op(&graph.node[p]) == "Constant" => None,
                    Some(_) => available.get(x).copied(),
                    None => Some(Precision::F16),
                })
                .collect();
            if !votes.is_empty() && votes.iter().all(|&v| v == Precision::F32) {
                Precision::F32
            } else {
                Precision::F16
            }
        };
        prec[i] = Some(p);
        for o in node.output.iter().filter(|o| is_f32(o)) {
            available.insert(o.clone(), p);
        }
    }

    // 2. Constants and initializers take the precision their consumers want.
    let wanted = |name: &str, prec: &[Option<Precision>]| -> HashSet<Precision> {
        ix.consumers_of(name)
            .iter()
            .filter_map(|&c| {
                // A Cast reads the stored value as is: keep it exact.
                if ANY_INPUT_OPS.contains(&op(&graph.node[c])) {
                    return (op(&graph.node[c]) == "Cast").then_some(Precision::F32);
                }
                let fixed = graph.node[c].input.iter().enumerate().any(|(k, x)| x == name && fixed_fp32_input(op(&graph.node[c]), k));
                if fixed {
                    Some(Precision::F32)
                } else {
                    prec[c]
                }
            })
            .collect()
    };
    for (i, node) in graph.node.iter().enumerate() {
        if op(node) == "Constant" && float_out(node) {
            let w = wanted(&node.output[0], &prec);
            let p = if w.contains(&Precision::F16) { Precision::F16 } else { Precision::F32 };
            prec[i] = Some(p);
            available.insert(node.output[0].clone(), p);
        }
    }

    // 3. Rewrite: node types and attributes, inputs cast where precisions differ.
    let mut names = Names::new(graph);
    let mut report = Fp16Report::default();
    let mut casts: HashMap<(String, Precision), String> = HashMap::new();
    let mut new_nodes: Vec<NodeProto> = Vec::new();
    let mut new_inits = Vec::new();
    let mut converted_inits: HashMap<String, String> = HashMap::new();
    let mut fp32_counts: HashMap<String, usize> = HashMap::new();
    let init_wants: HashMap<String, HashSet<Precision>> =
        ix.initializer.keys().filter(|n| is_f32(n)).map(|n| (n.clone(), wanted(n, &prec))).collect();
    // Initializers wanted only in FP16 are converted in place.
    for t in graph.initializer.iter_mut() {
        let name = t.name.clone().unwrap_or_default();
        if init_wants.get(&name).is_some_and(|w| w.len() == 1 && w.contains(&Precision::F16)) {
            *t = tensor::from_f32_as_f16(&name, &tensor::to_f32(t)?);
            converted_inits.insert(name.clone(), name);
            report.fp16_initializers += 1;
        }
    }
    let init_by_name: HashMap<String, usize> = ix.initializer.clone();
    for (i, node) in graph.node.iter_mut().enumerate() {
        let Some(p) = prec[i] else { continue };
        let node_op = node.op_type.clone().unwrap_or_default();
        if p == Precision::F16 {
            report.fp16_nodes += 1;
        } else {
            *fp32_counts.entry(node_op.clone()).or_default() += 1;
        }
        if node_op == "Cast" {
            if let Some(a) = node.attribute.iter_mut().find(|a| a.name.as_deref() == Some("to")) {
                if a.i == Some(FLOAT as i64) {
                    a.i = Some(p.code() as i64);
                }
            }
        }
        if p == Precision::F16 && matches!(node_op.as_str(), "Constant" | "ConstantOfShape") {
            for a in node.attribute.iter_mut().filter(|a| a.name.as_deref() == Some("value")) {
                if let Some(t) = a.t.as_mut().filter(|t| t.data_type == Some(FLOAT)) {
                    *t = tensor::from_f32_as_f16(t.name.as_deref().unwrap_or(""), &tensor::to_f32(t)?);
                }
            }
            if node.attribute.iter().any(|a| matches!(a.name.as_deref(), Some("value_float" | "value_floats"))) {
                return Err(Error::Unsupported {
                    operation: "FP16 conversion",
                    problem: format!(
                        "Constant '{}' uses value_float(s); only tensor values are converted",
                        node.name.clone().unwrap_or_default()
                    ),
                });
            }
        }
        if ANY_INPUT_OPS.contains(&node_op.as_str()) {
            continue;
        }
        for (k, input) in node.input.iter_mut().enumerate() {
            if !is_f32(input) {
                continue;
            }
            let want = if fixed_fp32_input(&node_op, k) { Precision::F32 } else { p };
            if let Some(&ti) = init_by_name.get(input.as_str()) {
                let in_place = converted_inits.get(input.as_str()) == Some(input);
                match (want, in_place) {
                    (Precision::F16, false) => {
                        // Consumers disagree: an FP16 copy beside the FP32 original.
                        let copy = match converted_inits.get(input.as_str()) {
                            Some(c) => c.clone(),
                            None => {
                                let c = names.fresh(&format!("{input}_fp16"));
                                new_inits.push(tensor::from_f32_as_f16(&c, &tensor::to_f32(&graph.initializer[ti])?));
                                report.fp16_initializers += 1;
                                converted_inits.insert(input.clone(), c.clone());
                                c
                            }
                        };
                        *input = copy;
                    }
                    (Precision::F32, true) => {
                        return Err(Error::Graph(format!("initializer '{input}' is wanted in FP32 after it was converted")));
                    }
                    _ => {}
                }
                continue;
            }
            let have = available.get(input.as_str()).copied().unwrap_or(Precision::F32);
            if have != want {
                let key = (input.clone(), want);
                let cast = match casts.get(&key) {
                    Some(c) => c.clone(),
                    None => {
                        let suffix = if want == Precision::F16 { "fp16" } else { "fp32" };
                        let c = names.fresh(&format!("{input}_{suffix}"));
                        let n = names.fresh(&format!("{input}/Cast_{suffix}"));
                        new_nodes.push(edit::node(
                            "Cast",
                            n,
                            vec![input.clone()],
                            c.clone(),
                            vec![edit::int_attr("to", want.code() as i64)],
                        ));
                        casts.insert(key, c.clone());
                        c
                    }
                };
                *input = cast;
            }
        }
    }
    // In-place converted initializers that are also listed as graph inputs (old IR).
    for v in graph.input.iter_mut() {
        if v.name.as_ref().is_some_and(|n| converted_inits.get(n) == Some(n)) {
            set_elem_type(v, FLOAT16);
        }
    }
    graph.initializer.extend(new_inits);
    report.casts = new_nodes.len();

    // 4. Graph I/O types, value_info.
    if !options.keep_io_types {
        for v in graph.input.iter_mut().filter(|v| v.name.as_deref().is_some_and(&is_f32)) {
            set_elem_type(v, FLOAT16);
        }
    }
    let renames = finish_outputs(graph, &available, options.keep_io_types, &mut names, &mut new_nodes, &types)?;
    report.casts = new_nodes.len();
    for v in graph.value_info.iter_mut() {
        let Some(name) = v.name.clone() else { continue };
        if let Some(new) = renames.get(&name) {
            v.name = Some(new.clone());
        }
        if is_f32(&name) && available.get(&name) == Some(&Precision::F16) {
            set_elem_type(v, FLOAT16);
        }
    }
    graph.node.extend(new_nodes);
    edit::topological_sort(graph)?;
    let mut counts: Vec<(String, usize)> = fp32_counts.into_iter().collect();
    counts.sort();
    report.fp32_nodes = counts;
    Ok(report)
}

/// FP16 graph outputs: kept FP32 behind a Cast (the producer's tensor is
/// renamed `<name>_fp16`), or retyped FP16. Returns the renames.
fn finish_outputs(
    graph: &mut GraphProto,
    available: &HashMap<String, Precision>,
    keep_io_types: bool,
    names: &mut Names,
    new_nodes: &mut Vec<NodeProto>,
    types: &ElemTypes,
) -> Result<HashMap<String, String>> {
    let mut renames = HashMap::new();
    let fp16_outputs: Vec<String> = graph
        .output
        .iter()
        .filter_map(|v| v.name.clone())
        .filter(|n| types.get(n) == Some(&FLOAT) && available.get(n) == Some(&Precision::F16))
        .collect();
    for name in fp16_outputs {
        if !keep_io_types {
            for v in graph.output.iter_mut().filter(|v| v.name.as_deref() == Some(&name)) {
                set_elem_type(v, FLOAT16);
            }
            continue;
        }
        let inner = names.fresh(&format!("{name}_fp16"));
        for n in graph.node.iter_mut().chain(new_nodes.iter_mut()) {
            for t in n.input.iter_mut().chain(n.output.iter_mut()) {
                if *t == name {
                    *t = inner.clone();
                }
            }
        }
        let cast_name = names.fresh(&format!("{name}/Cast_fp32"));
        new_nodes.push(edit::node("Cast", cast_name, vec![inner.clone()], name.clone(), vec![edit::int_attr("to", FLOAT as i64)]));
        renames.insert(name, inner);
    }
    Ok(renames)
}

fn set_elem_type(v: &mut crate::graph::proto::ValueInfoProto, code: i32) {
    use crate::graph::proto::type_proto::Value;
    if let Some(Value::TensorType(t)) = v.r#type.as_mut().and_then(|t| t.value.as_mut()) {
        t.elem_type = Some(code);
    }
}
