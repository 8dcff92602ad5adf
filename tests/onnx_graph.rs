//! ONNX graph I/O: the default model round-trips unchanged (inline and with
//! external data), bad files give typed errors. Runs anywhere (no ONNX Runtime).

#[path = "onnx_support.rs"]
mod support;

use support::default_model;
use trt_onnx::graph::{edit, types, Model, WeightStorage};
use trt_onnx::Error;

#[test]
fn default_model_round_trips_inline_and_with_external_data() {
    let m = Model::load(default_model("model.onnx")).unwrap();
    assert_eq!(m.opset(), Some(17));
    let dir = tempfile::tempdir().unwrap();

    let inline = dir.path().join("inline.onnx");
    m.save(&inline, &WeightStorage::Inline).unwrap();
    let back = Model::load(&inline).unwrap();
    assert_eq!(back.proto, m.proto, "inline round trip changed the model");
    // Byte-identical to the file Python's onnx wrote: nothing was dropped or reordered.
    assert_eq!(std::fs::read(&inline).unwrap(), std::fs::read(default_model("model.onnx")).unwrap());

    let ext = dir.path().join("ext.onnx");
    m.save(&ext, &WeightStorage::External("ext.onnx.data".into())).unwrap();
    let small = std::fs::metadata(&ext).unwrap().len();
    let data = std::fs::metadata(dir.path().join("ext.onnx.data")).unwrap().len();
    println!("external: model {small} bytes, data {data} bytes");
    assert!(small < 1_000_000 && data > 80_000_000, "{small} {data}");
    let back = Model::load(&ext).unwrap();
    assert_eq!(back.proto, m.proto, "external-data round trip changed the model");

    if let Some(py) = support::python() {
        // The onnx package reads our external-data layout and its checker accepts it.
        let out = std::process::Command::new(py)
            .args(["-c", "import onnx,sys; m=onnx.load(sys.argv[1]); onnx.checker.check_model(sys.argv[1], full_check=True); print(len(m.graph.initializer))"])
            .arg(&ext)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), m.graph().initializer.len().to_string());
    }
}

#[test]
fn truncated_and_foreign_files_are_decode_errors() {
    let bytes = std::fs::read(default_model("model.onnx")).unwrap();
    let e = Model::from_bytes(bytes[..bytes.len() / 2].to_vec()).unwrap_err();
    assert!(matches!(e, Error::Decode { .. }), "{e}");
    let e = Model::from_bytes(b"not a model at all".to_vec()).unwrap_err();
    assert!(matches!(e, Error::Decode { .. }), "{e}");
    let e = Model::load("/nonexistent/model.onnx").unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
}

#[test]
fn external_data_must_stay_inside_the_model_folder_and_be_whole() {
    let m = Model::load(default_model("model.onnx")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ext = dir.path().join("m.onnx");
    m.save(&ext, &WeightStorage::External("m.data".into())).unwrap();
    // Bytes cannot carry external data: there is no folder to read it from.
    let e = Model::from_bytes(std::fs::read(&ext).unwrap()).unwrap_err();
    assert!(matches!(e, Error::ExternalData { .. }), "{e}");
    // A location outside the model's folder (same length, so the protobuf stays valid).
    let patched = replace(&std::fs::read(&ext).unwrap(), b"m.data", b"../x.d");
    std::fs::write(&ext, patched).unwrap();
    let e = Model::load(&ext).unwrap_err();
    assert!(matches!(&e, Error::ExternalData { problem, .. } if problem.contains("inside")), "{e}");
    // A data file shorter than the offsets say.
    m.save(&ext, &WeightStorage::External("m.data".into())).unwrap();
    std::fs::write(dir.path().join("m.data"), b"short").unwrap();
    let e = Model::load(&ext).unwrap_err();
    assert!(matches!(&e, Error::ExternalData { problem, .. } if problem.contains("bytes")), "{e}");
    assert!(WeightStorage::default() == WeightStorage::Auto);
}

fn replace(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    out
}

#[test]
fn element_types_are_inferred_for_every_tensor_of_the_default_model() {
    let m = Model::load(default_model("model.onnx")).unwrap();
    let t = types::infer(m.graph());
    let produced = edit::intermediate_tensors(m.graph());
    let unknown: Vec<&String> = produced.iter().filter(|n| !t.contains_key(*n)).collect();
    assert!(unknown.is_empty(), "{unknown:?}");
    assert_eq!(t["embeddings/position/Shape_out"], trt_onnx::graph::tensor::INT64);
    assert_eq!(t["mask/Cast_out"], trt_onnx::graph::tensor::FLOAT);
    // Exposing a tensor adds it as an output; an unknown name is an error.
    let mut g = m.graph().clone();
    edit::expose(&mut g, &["mask/Cast_out".to_string()], &t).unwrap();
    assert_eq!(g.output.len(), m.graph().output.len() + 1);
    assert!(matches!(edit::expose(&mut g, &["nope".to_string()], &t), Err(Error::Graph(_))));
}

/// Found by the `onnx_reader` fuzz target: dims whose product passes usize
/// (or whose byte size does) panicked with an overflow in debug builds and
/// wrapped in release; they are a typed tensor error now, and a zero
/// dimension still makes an empty tensor.
#[test]
fn initializer_dims_past_memory_are_a_tensor_error_not_an_overflow() {
    use trt_onnx::graph::proto::TensorProto;
    use trt_onnx::graph::tensor;
    let t = |code, dims: Vec<i64>| TensorProto {
        name: Some("huge".into()),
        data_type: Some(code),
        dims,
        raw_data: Some(vec![0u8; 8].into()),
        ..Default::default()
    };
    for (code, dims) in [(tensor::INT8, vec![1 << 40, 1 << 40]), (tensor::FLOAT, vec![1 << 62])] {
        let huge = t(code, dims.clone());
        let e = if tensor::is_float(code) { tensor::to_f32(&huge).map(|_| ()) } else { tensor::to_i64(&huge).map(|_| ()) };
        assert!(matches!(e, Err(Error::Tensor { ref tensor, .. }) if tensor == "huge"), "{dims:?}: {e:?}");
    }
    assert_eq!(tensor::numel(&t(tensor::INT8, vec![1 << 40, 1 << 40])), None);
    assert_eq!(tensor::numel(&t(tensor::INT8, vec![-1, 2])), None);
    assert_eq!(tensor::numel(&t(tensor::INT8, vec![2, 3])), Some(6));
    // A zero dimension makes the tensor empty even after dims whose product passes i64
    // (the fuzzer's second finding: 10 x 4 x ... x 128946418 x 15 x 0).
    assert_eq!(tensor::numel(&t(tensor::FLOAT, vec![1 << 40, 1 << 40, 0])), Some(0));
    let empty = TensorProto { raw_data: None, ..t(tensor::FLOAT, vec![1 << 20, 0]) };
    assert_eq!(tensor::to_f32(&empty).unwrap().shape(), [1 << 20, 0]);
}
