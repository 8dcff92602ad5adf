//! `trt compare --layers`: every intermediate tensor both sides produce,
//! read on one batch, compared in the reference's topological order; the
//! first beyond the gate is where the two sides part (polygraphy's
//! `--onnx-outputs mark all` / `--trt-outputs mark all`).
//!
//! | step | ONNX side | TensorRT side |
//! |---|---|---|
//! | which tensors | node outputs of float type (`trt_onnx::graph::edit::intermediate_float_tensors`) | layer outputs that are float activations ([`trt::Network::layer_outputs`]) |
//! | matched | by name, in the ONNX graph's order ([`matched`]) | (the parser names layer outputs after the ONNX values) |
//! | read | the names added as graph outputs, one ONNX Runtime session (`trt_onnx::dataset::run_exposing`) | the names marked as network outputs, an engine rebuilt from the ONNX with the plan's settings (`compare_plan`) |
//!
//! A tensor whose shapes differ on the two sides (TensorRT may keep a
//! reshaped layout) is listed as skipped, not compared.

use std::collections::HashSet;

use trt_onnx::compare;
use trt_onnx::dataset::{self, Batch, Outputs};
use trt_onnx::graph::{edit, Model};
use trt_onnx::runtime::SessionOptions;

use super::compare_report::{Figures, Gate, Layers, Skipped};
use crate::error::{CliError, Result};

fn err(e: impl std::fmt::Display) -> CliError {
    CliError::new(e.to_string())
}

/// Every float tensor a node of `model` produces, in topological order.
pub fn onnx_float_tensors(model: &Model) -> Vec<String> {
    edit::intermediate_float_tensors(model.graph())
}

/// The names of `reference` (in its order) that `other` also has.
pub fn matched(reference: &[String], other: &[String]) -> Vec<String> {
    let other: HashSet<&str> = other.iter().map(String::as_str).collect();
    let mut seen = HashSet::new();
    reference.iter().filter(|n| other.contains(n.as_str()) && seen.insert(n.as_str())).cloned().collect()
}

/// `model` run on `batch` on ONNX Runtime with `names` added as graph outputs:
/// their values, in the order of `names`.
pub fn onnx_values(model: &Model, names: &[String], batch: &Batch, options: &SessionOptions) -> Result<Outputs> {
    dataset::run_exposing(model, names, batch, options).map_err(err)
}

/// Compares `checked` against `reference` tensor by tensor, in the order of
/// `names`; the first beyond `gate` (see [`Gate::layer_violation`]) is the
/// first divergence.
pub fn compare_all(names: &[String], reference: &Outputs, checked: &Outputs, gate: &Gate, rebuild: Option<String>) -> Result<Layers> {
    let find = |o: &'_ Outputs, n: &str| o.iter().find(|(m, _)| m == n).map(|(_, a)| a.clone());
    let mut tensors = Vec::new();
    let mut skipped = Vec::new();
    for name in names {
        let (Some(x), Some(y)) = (find(reference, name), find(checked, name)) else {
            skipped.push(Skipped { name: name.clone(), reason: "not produced by both sides".into() });
            continue;
        };
        if x.shape() != y.shape() {
            skipped.push(Skipped { name: name.clone(), reason: format!("shapes differ: {:?} and {:?}", x.shape(), y.shape()) });
            continue;
        }
        let m = compare::compare(name, &x, &y, None).map_err(err)?;
        tensors.push(Figures::new(name, x.shape(), &m, gate.layer_violation(&m)));
    }
    let first_divergence = tensors.iter().find(|f| f.violation.is_some()).cloned();
    Ok(Layers { gate: gate.describe(true), tensorrt_rebuild: rebuild, matched: names.len(), first_divergence, tensors, skipped })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matched_keeps_the_reference_order_and_drops_repeats() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(matched(&s(&["a", "b", "c", "b"]), &s(&["c", "b", "z"])), s(&["b", "c"]));
        assert!(matched(&s(&["a"]), &[]).is_empty());
    }

    #[test]
    fn a_shape_mismatch_is_skipped_and_the_first_divergence_is_in_order() {
        let a = |v: Vec<f32>, shape: &[usize]| ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(shape), v).unwrap();
        let names: Vec<String> = ["x", "y", "z", "w"].iter().map(|s| s.to_string()).collect();
        let reference: Outputs = vec![
            ("x".into(), a(vec![1.0, 2.0], &[1, 2])),
            ("y".into(), a(vec![1.0, 2.0], &[1, 2])),
            ("z".into(), a(vec![1.0, 0.0], &[1, 2])),
            ("w".into(), a(vec![1.0, 0.0], &[1, 2])),
        ];
        let checked: Outputs = vec![
            ("x".into(), a(vec![1.0, 2.0], &[1, 2])),
            ("y".into(), a(vec![1.0, 2.0], &[2, 1])),
            ("z".into(), a(vec![0.0, 1.0], &[1, 2])),
            ("w".into(), a(vec![0.0, 1.0], &[1, 2])),
        ];
        let layers = compare_all(&names, &reference, &checked, &Gate::default(), None).unwrap();
        assert_eq!(layers.matched, 4);
        assert_eq!(layers.tensors.len(), 3);
        assert_eq!(layers.skipped[0].name, "y");
        assert_eq!(layers.first_divergence.unwrap().name, "z");
    }
}
