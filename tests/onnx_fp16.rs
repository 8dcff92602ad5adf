//! FP16 conversion of the default model, checked on ONNX Runtime against
//! FP32 and against the Python-made FP16 model. Runs anywhere (CPU).

#[path = "onnx_support.rs"]
mod support;

use support::{default_model, reference_batch};
use trt_onnx::dataset;
use trt_onnx::fp16::{self, Fp16Options};
use trt_onnx::graph::{tensor, types, Model};
use trt_onnx::runtime::{Session, SessionOptions};
use trt_onnx::Error;

fn outputs(m: &Model) -> Vec<(String, ndarray::ArrayD<f32>)> {
    let mut s = Session::from_bytes(&m.to_bytes().unwrap(), &SessionOptions { intra_threads: 1, ..Default::default() }).unwrap();
    dataset::run(&mut s, &reference_batch(), Some(&["logits", "last_hidden_state"])).unwrap()
}

fn max_diff(a: &ndarray::ArrayD<f32>, b: &ndarray::ArrayD<f32>) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs() as f64).fold(0.0, f64::max)
}

#[test]
fn converted_default_model_is_within_2e_3_of_fp32_and_no_worse_than_python() {
    let m = Model::load(default_model("model.onnx")).unwrap();
    let (c, report) = fp16::convert(&m, &Fp16Options::default()).unwrap();
    println!("{report:?}");
    let fp32 = outputs(&m);
    let ours = outputs(&c);
    let d = max_diff(&fp32[0].1, &ours[0].1);
    let python = support::python_fp16_logit_diff();
    println!("max |logits - fp32|: converted {d:.3e}, Python's model_fp16.onnx {python:.3e}");
    assert!(d <= 2e-3, "{d}");
    assert!(d <= python, "{d} > {python}");
    // Graph I/O keep their FP32 types; the weights are FP16; LayerNorm and Softmax stay FP32.
    let t = types::infer(c.graph());
    assert_eq!(t["logits"], tensor::FLOAT);
    assert!(c
        .graph()
        .initializer
        .iter()
        .filter(|i| i.name.as_deref().is_some_and(|n| n.ends_with(".weight") && !n.contains("LayerNorm")))
        .all(|i| i.data_type == Some(tensor::FLOAT16)));
    let fp32_ops: Vec<&str> = report.fp32_nodes.iter().map(|(op, _)| op.as_str()).collect();
    assert!(fp32_ops.contains(&"LayerNormalization") && fp32_ops.contains(&"Softmax"), "{fp32_ops:?}");
    assert!(report.fp16_nodes > 150, "{}", report.fp16_nodes);
    // Half the bytes.
    let (a, b) = (m.to_bytes().unwrap().len(), c.to_bytes().unwrap().len());
    assert!(b * 10 < a * 6, "{a} -> {b}");
}

#[test]
fn fp16_io_and_extra_fp32_ops_are_honoured() {
    let m = Model::load(default_model("model.onnx")).unwrap();
    let mut o = Fp16Options::default();
    o.keep_io_types = false;
    o.fp32_ops.push("Erf".into());
    let (c, report) = fp16::convert(&m, &o).unwrap();
    assert!(report.fp32_nodes.iter().any(|(op, n)| op == "Erf" && *n == 6), "{:?}", report.fp32_nodes);
    let out = outputs(&c);
    let fp32 = outputs(&m);
    let d = max_diff(&fp32[0].1, &out[0].1);
    println!("FP16 outputs, Erf in FP32: max |logits - fp32| {d:.3e}");
    assert!(d <= 2e-3, "{d}");
    assert_eq!(types::infer(c.graph())["logits"], tensor::FLOAT16);
}

#[test]
fn an_fp16_model_is_refused() {
    let m = Model::load(default_model("model_fp16.onnx")).unwrap();
    let Err(e) = fp16::convert(&m, &Fp16Options::default()) else { panic!("an FP16 model was converted again") };
    assert!(matches!(&e, Error::Unsupported { problem, .. } if problem.contains("already FP16")), "{e}");
}
