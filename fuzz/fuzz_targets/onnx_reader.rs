//! ONNX bytes into trt-onnx's own graph reader (`trt_onnx::graph::Model::from_bytes`,
//! what the FP16 converter, the quantizer and `trt compare --layers` read
//! models with), then the read-only steps those tools take next: element
//! types (`types::infer`), the producer/consumer index, the topological sort,
//! exposing every intermediate tensor, the initializers' values, the FP16
//! conversion, and encoding the model again.
//!
//! What must hold: no panic on any bytes; a typed `trt_onnx::Error`
//! otherwise. On success: the topological order is a permutation of the
//! nodes in which every produced input comes from an earlier node; exposed
//! tensors are outputs afterwards; an initializer's values match its dims;
//! encoding is stable (decode(encode(m)) encodes to the same bytes).
#![no_main]

use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use trt_onnx::graph::{edit, tensor, types, Model};
use trt_onnx::Error;

/// Only the errors that belong to reading and editing a graph, each naming its problem.
fn typed(e: &Error) {
    assert!(
        matches!(e, Error::Decode { .. } | Error::ExternalData { .. } | Error::Graph(_) | Error::Tensor { .. } | Error::Unsupported { .. }),
        "unexpected error kind: {e:?}"
    );
    assert!(!e.to_string().is_empty(), "empty error message: {e:?}");
}

/// The element count of dims: `None` for a negative dimension or a count past usize; 0 with a zero dimension.
fn elements(dims: &[i64]) -> Option<usize> {
    let dims: Vec<usize> = dims.iter().map(|&d| usize::try_from(d).ok()).collect::<Option<_>>()?;
    if dims.contains(&0) {
        return Some(0);
    }
    dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

fuzz_target!(|data: &[u8]| {
    let model = match Model::from_bytes(data.to_vec()) {
        Ok(m) => m,
        Err(e) => return typed(&e),
    };
    let graph = model.graph();
    let _ = model.opset();
    let kinds = types::infer(graph);
    let index = edit::Index::new(graph);
    for node in &graph.node {
        for input in &node.input {
            let _ = (index.consumers_of(input), index.initializer(graph, input));
        }
    }
    let mut names = edit::Names::new(graph);
    let fresh = names.fresh("x");
    assert!(names.fresh(&fresh) != fresh, "a fresh name is handed out once");

    // The topological sort keeps every node once, producers first.
    let mut sorted = graph.clone();
    match edit::topological_sort(&mut sorted) {
        Ok(()) => {
            assert_eq!(sorted.node.len(), graph.node.len());
            let producers: HashSet<&str> =
                graph.node.iter().flat_map(|n| n.output.iter().map(String::as_str)).filter(|o| !o.is_empty()).collect();
            let mut made: HashSet<&str> = HashSet::new();
            for node in &sorted.node {
                for input in node.input.iter().filter(|i| !i.is_empty()) {
                    // A node may read its own output only in a self-loop, which the sort leaves in place.
                    let own = node.output.iter().any(|o| o == input);
                    assert!(
                        !producers.contains(input.as_str()) || made.contains(input.as_str()) || own,
                        "'{input}' read before it is produced"
                    );
                }
                made.extend(node.output.iter().map(String::as_str));
            }
        }
        Err(e) => typed(&e),
    }

    // What `trt compare --layers` does: every intermediate tensor becomes an output.
    let mut exposed = graph.clone();
    let all = edit::intermediate_tensors(graph);
    match edit::expose(&mut exposed, &all, &kinds) {
        Ok(()) => {
            let outs: HashSet<&str> = exposed.output.iter().filter_map(|v| v.name.as_deref()).collect();
            assert!(all.iter().all(|t| outs.contains(t.as_str())), "an exposed tensor is not an output");
        }
        Err(e) => typed(&e),
    }

    // The initializers' values, as the quantizer and the FP16 converter read them.
    for t in &graph.initializer {
        let code = t.data_type.unwrap_or(0);
        let values = if tensor::is_float(code) { tensor::to_f32(t).map(|a| a.len()) } else { tensor::to_i64(t).map(|a| a.len()) };
        match values {
            Ok(n) => assert_eq!(Some(n), elements(&t.dims), "values of '{:?}' do not fill dims {:?}", t.name, t.dims),
            Err(e) => typed(&e),
        }
        assert_eq!(tensor::numel(t).and_then(|n| usize::try_from(n).ok()), elements(&t.dims).filter(|&n| i64::try_from(n).is_ok()));
    }

    match trt_onnx::fp16::convert(&model, &trt_onnx::fp16::Fp16Options::default()) {
        Ok((converted, _report)) => {
            let _ = converted.to_bytes();
        }
        Err(e) => typed(&e),
    }

    // Encoding is stable: what the tools write reads back to the same bytes.
    if let Ok(bytes) = model.to_bytes() {
        let again = Model::from_bytes(bytes.clone()).expect("an encoded model decodes");
        assert_eq!(again.to_bytes().expect("encodes"), bytes, "encode(decode(encode(m))) differs");
    }
});
