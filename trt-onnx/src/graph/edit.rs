//! Graph edits shared by the converters: who produces and who consumes a
//! tensor, fresh names, restoring topological order after nodes were
//! inserted, and exposing intermediate tensors as graph outputs.

use std::collections::{HashMap, HashSet};

use super::proto::{type_proto, GraphProto, NodeProto, TensorProto, TypeProto, ValueInfoProto};
use super::types::ElemTypes;
use crate::{Error, Result};

/// Where each tensor comes from and goes to, by node index.
#[derive(Debug, Default)]
pub struct Index {
    /// Tensor name to the node producing it.
    pub producer: HashMap<String, usize>,
    /// Tensor name to the nodes consuming it (a node may appear twice).
    pub consumers: HashMap<String, Vec<usize>>,
    /// Initializer name to its position in `graph.initializer`.
    pub initializer: HashMap<String, usize>,
    /// Names of the graph's outputs.
    pub outputs: HashSet<String>,
}

impl Index {
    /// Builds the index of a graph.
    pub fn new(graph: &GraphProto) -> Index {
        let mut ix = Index::default();
        for (i, node) in graph.node.iter().enumerate() {
            for o in node.output.iter().filter(|o| !o.is_empty()) {
                ix.producer.insert(o.clone(), i);
            }
            for input in node.input.iter().filter(|n| !n.is_empty()) {
                ix.consumers.entry(input.clone()).or_default().push(i);
            }
        }
        for (i, t) in graph.initializer.iter().enumerate() {
            if let Some(n) = &t.name {
                ix.initializer.insert(n.clone(), i);
            }
        }
        ix.outputs = graph.output.iter().filter_map(|v| v.name.clone()).collect();
        ix
    }

    /// The initializer named `name`, if the tensor is one.
    pub fn initializer<'g>(&self, graph: &'g GraphProto, name: &str) -> Option<&'g TensorProto> {
        self.initializer.get(name).map(|&i| &graph.initializer[i])
    }

    /// The nodes consuming a tensor (empty for none).
    pub fn consumers_of(&self, name: &str) -> &[usize] {
        self.consumers.get(name).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// Hands out tensor and node names not yet used in the graph.
#[derive(Debug)]
pub struct Names {
    used: HashSet<String>,
}

impl Names {
    /// Every name already used by the graph's tensors and nodes.
    pub fn new(graph: &GraphProto) -> Names {
        let mut used = HashSet::new();
        for n in &graph.node {
            used.extend(n.name.clone());
            used.extend(n.input.iter().chain(&n.output).cloned());
        }
        used.extend(graph.initializer.iter().filter_map(|t| t.name.clone()));
        used.extend(graph.input.iter().chain(&graph.output).chain(&graph.value_info).filter_map(|v| v.name.clone()));
        Names { used }
    }

    /// `base`, or `base_2`, `base_3`, ... whichever is free; reserved from now on.
    pub fn fresh(&mut self, base: &str) -> String {
        let mut name = base.to_string();
        let mut k = 2;
        while self.used.contains(&name) {
            name = format!("{base}_{k}");
            k += 1;
        }
        self.used.insert(name.clone());
        name
    }
}

/// A single-input, single-output node.
pub fn node(op: &str, name: String, inputs: Vec<String>, output: String, attrs: Vec<super::proto::AttributeProto>) -> NodeProto {
    NodeProto {
        op_type: Some(op.to_string()),
        name: Some(name),
        input: inputs,
        output: vec![output],
        attribute: attrs,
        ..Default::default()
    }
}

/// An INT attribute.
pub fn int_attr(name: &str, v: i64) -> super::proto::AttributeProto {
    super::proto::AttributeProto {
        name: Some(name.into()),
        r#type: Some(super::proto::attribute_proto::AttributeType::Int as i32),
        i: Some(v),
        ..Default::default()
    }
}

/// Reorders the nodes so that every tensor is produced before it is used,
/// keeping the existing order wherever it already is valid (a stable
/// Kahn's algorithm). Fails on a cycle.
pub fn topological_sort(graph: &mut GraphProto) -> Result<()> {
    let ix = Index::new(graph);
    let n = graph.node.len();
    let mut pending = vec![0usize; n];
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, node) in graph.node.iter().enumerate() {
        let mut seen = HashSet::new();
        for input in node.input.iter().filter(|s| !s.is_empty()) {
            if let Some(&p) = ix.producer.get(input) {
                if p != i && seen.insert(p) {
                    pending[i] += 1;
                    users[p].push(i);
                }
            }
        }
    }
    // A min-heap on the original position keeps the order stable.
    let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> =
        (0..n).filter(|&i| pending[i] == 0).map(std::cmp::Reverse).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(std::cmp::Reverse(i)) = ready.pop() {
        order.push(i);
        for &u in &users[i] {
            pending[u] -= 1;
            if pending[u] == 0 {
                ready.push(std::cmp::Reverse(u));
            }
        }
    }
    if order.len() != n {
        let stuck = (0..n).find(|&i| pending[i] > 0).map(|i| graph.node[i].name.clone().unwrap_or_default());
        return Err(Error::Graph(format!("the nodes form a cycle (through '{}')", stuck.unwrap_or_default())));
    }
    let mut old: Vec<Option<NodeProto>> = std::mem::take(&mut graph.node).into_iter().map(Some).collect();
    graph.node = order.into_iter().filter_map(|i| old[i].take()).collect();
    Ok(())
}

/// A tensor value with an element type and unknown shape.
pub fn value_info(name: &str, elem_type: i32) -> ValueInfoProto {
    ValueInfoProto {
        name: Some(name.to_string()),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor { elem_type: Some(elem_type), shape: None })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Adds the named intermediate tensors as graph outputs (what calibration
/// and `trt compare --layers` read); names already outputs are skipped.
/// A name no node produces is an error.
pub fn expose(graph: &mut GraphProto, names: &[String], types: &ElemTypes) -> Result<()> {
    let ix = Index::new(graph);
    for name in names {
        if ix.outputs.contains(name) {
            continue;
        }
        if !ix.producer.contains_key(name) {
            return Err(Error::Graph(format!("no node produces tensor '{name}'")));
        }
        let t = types.get(name).copied().ok_or_else(|| Error::Graph(format!("the element type of tensor '{name}' is unknown")))?;
        graph.output.push(value_info(name, t));
    }
    Ok(())
}

/// Every tensor produced by a node, in topological order (the candidates
/// for `--layers`).
pub fn intermediate_tensors(graph: &GraphProto) -> Vec<String> {
    graph.node.iter().flat_map(|n| n.output.iter().filter(|o| !o.is_empty()).cloned()).collect()
}

/// The float tensors among [`intermediate_tensors`] (by [`super::types::infer`]),
/// in topological order: what a layer-by-layer comparison reads.
pub fn intermediate_float_tensors(graph: &GraphProto) -> Vec<String> {
    let types = super::types::infer(graph);
    intermediate_tensors(graph).into_iter().filter(|n| types.get(n).is_some_and(|c| super::tensor::is_float(*c))).collect()
}
