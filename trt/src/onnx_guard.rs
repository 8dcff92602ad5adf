//! What TensorRT's ONNX parser cannot be given: checks on the model's bytes
//! before they reach it.
//!
//! TensorRT-RTX 1.7.1's parser dereferences a null pointer (SIGSEGV, the whole
//! process dies) on a node without outputs, a model the ONNX checker accepts
//! in some forms (found by the `onnx_parse` fuzz target; reproducers:
//! `fuzz/seeds/onnx_parse/regress_*.onnx`). Such a node computes nothing, so it is
//! refused here with a typed error naming it. The check walks the protobuf
//! wire format of `ModelProto.graph` and of every subgraph in node attributes,
//! skipping everything else (initializer data included) by length, so it costs
//! a fraction of a millisecond even on large models. Bytes that are not valid
//! protobuf are left to the parser, which reports them itself.

/// A node without outputs: its index in its graph, its name and operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeWithoutOutputs {
    pub index: i32,
    pub name: String,
    pub operator: String,
}

// Field numbers of onnx.proto.
const MODEL_GRAPH: u64 = 7;
const GRAPH_NODE: u64 = 1;
const NODE_OUTPUT: u64 = 2;
const NODE_NAME: u64 = 3;
const NODE_OP_TYPE: u64 = 4;
const NODE_ATTRIBUTE: u64 = 5;
const ATTRIBUTE_G: u64 = 6;
const ATTRIBUTE_GRAPHS: u64 = 11;
/// Subgraphs nested deeper than this are not checked (protobuf itself stops at 100).
const MAX_DEPTH: usize = 32;

/// The first node (in the main graph or any subgraph) that has no output.
pub(crate) fn find_node_without_outputs(model: &[u8]) -> Option<NodeWithoutOutputs> {
    let mut found = None;
    for_each_field(model, |field, value| {
        if let (MODEL_GRAPH, Value::Bytes(graph)) = (field, value) {
            found = found.take().or_else(|| check_graph(graph, 0));
        }
    });
    found
}

fn check_graph(graph: &[u8], depth: usize) -> Option<NodeWithoutOutputs> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut found = None;
    let mut index = 0i32;
    for_each_field(graph, |field, value| {
        if let (GRAPH_NODE, Value::Bytes(node)) = (field, value) {
            if found.is_none() {
                found = check_node(node, index, depth);
            }
            index = index.saturating_add(1);
        }
    });
    found
}

fn check_node(node: &[u8], index: i32, depth: usize) -> Option<NodeWithoutOutputs> {
    let (mut outputs, mut name, mut operator, mut nested) = (0usize, String::new(), String::new(), None);
    for_each_field(node, |field, value| match (field, value) {
        (NODE_OUTPUT, Value::Bytes(_)) => outputs += 1,
        (NODE_NAME, Value::Bytes(b)) => name = String::from_utf8_lossy(b).into_owned(),
        (NODE_OP_TYPE, Value::Bytes(b)) => operator = String::from_utf8_lossy(b).into_owned(),
        (NODE_ATTRIBUTE, Value::Bytes(attribute)) if nested.is_none() => {
            for_each_field(attribute, |f, v| {
                if let (ATTRIBUTE_G | ATTRIBUTE_GRAPHS, Value::Bytes(g)) = (f, v) {
                    nested = nested.take().or_else(|| check_graph(g, depth + 1));
                }
            });
        }
        _ => {}
    });
    if outputs == 0 {
        return Some(NodeWithoutOutputs { index, name, operator });
    }
    nested
}

enum Value<'a> {
    Bytes(&'a [u8]),
    Other,
}

/// Calls `f` for each top-level field of the message `buf`; stops quietly at
/// the first malformed byte (the parser then reports the damage).
fn for_each_field<'a>(mut buf: &'a [u8], mut f: impl FnMut(u64, Value<'a>)) {
    while !buf.is_empty() {
        let Some(key) = varint(&mut buf) else { return };
        let (field, wire) = (key >> 3, key & 7);
        let value = match wire {
            0 => match varint(&mut buf) {
                Some(_) => Value::Other,
                None => return,
            },
            1 | 5 => {
                let n = if wire == 1 { 8 } else { 4 };
                let Some(rest) = buf.get(n..) else { return };
                buf = rest;
                Value::Other
            }
            2 => {
                let Some(len) = varint(&mut buf).and_then(|l| usize::try_from(l).ok()) else { return };
                let Some(bytes) = buf.get(..len) else { return };
                buf = &buf[len..];
                Value::Bytes(bytes)
            }
            _ => return, // groups (3, 4) are not used by onnx.proto; 6, 7 are invalid
        };
        f(field, value);
    }
}

fn varint(buf: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..10 {
        let (&b, rest) = buf.split_first()?;
        *buf = rest;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn len_field(field: u64, bytes: &[u8]) -> Vec<u8> {
        let mut v = vec![((field << 3) | 2) as u8, bytes.len() as u8];
        v.extend_from_slice(bytes);
        v
    }

    fn node(outputs: &[&str], op: &str, attribute: Option<Vec<u8>>) -> Vec<u8> {
        let mut n = len_field(1, b"a");
        for o in outputs {
            n.extend(len_field(2, o.as_bytes()));
        }
        n.extend(len_field(4, op.as_bytes()));
        if let Some(a) = attribute {
            n.extend(len_field(5, &a));
        }
        n
    }

    fn model(nodes: &[Vec<u8>]) -> Vec<u8> {
        let mut g = Vec::new();
        for n in nodes {
            g.extend(len_field(1, n));
        }
        let mut m = vec![0x08, 0x08]; // ir_version 8
        m.extend(len_field(7, &g));
        m
    }

    #[test]
    fn a_node_without_outputs_is_found_by_index_and_operator() {
        let m = model(&[node(&["y"], "Relu", None), node(&[], "Add", None)]);
        assert_eq!(find_node_without_outputs(&m), Some(NodeWithoutOutputs { index: 1, name: String::new(), operator: "Add".into() }));
        assert_eq!(find_node_without_outputs(&model(&[node(&["y"], "Add", None)])), None);
    }

    #[test]
    fn subgraphs_in_attributes_are_checked_and_garbage_is_left_to_the_parser() {
        let mut sub = Vec::new();
        sub.extend(len_field(1, &node(&[], "Identity", None)));
        let attribute = len_field(6, &sub);
        let m = model(&[node(&["y"], "If", Some(attribute))]);
        assert_eq!(find_node_without_outputs(&m).map(|n| n.operator), Some("Identity".into()));
        for junk in [&b""[..], b"\xff\xff\xff", b"\x3a\x7f\x00", b"\x0a"] {
            assert_eq!(find_node_without_outputs(junk), None);
        }
    }
}
