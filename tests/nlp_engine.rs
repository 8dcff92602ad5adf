//! The engine helpers (Classifier, Embedder). Their engine-independent logic
//! (discovering token inputs, outputs and profile limits from an engine's I/O)
//! runs everywhere; the end-to-end tests need a GPU that TensorRT can execute
//! on and are ignored with the reason (CI has no GPU; TensorRT-RTX refuses the
//! lent H200, compute capability 9.0).

use trt::{DataType, IoMode, IoTensor, ShapeRange};
use trt_nlp::{Error, InputRole, ModelLayout};

#[path = "common/deps.rs"]
mod deps;

fn io(name: &str, mode: IoMode, dtype: DataType, shape: &[i64], profiles: Vec<ShapeRange>) -> IoTensor {
    IoTensor {
        name: name.into(),
        mode,
        dtype,
        shape: shape.to_vec(),
        format: "Row major linear FP32 format (kLINEAR)".into(),
        linear: true,
        vectorized_dim: -1,
        components_per_element: 1,
        is_shape_tensor: false,
        on_host: false,
        profiles,
    }
}

fn minilm_io(dtype: DataType) -> Vec<IoTensor> {
    let p = || vec![ShapeRange::new(&[1, 16], &[8, 128], &[32, 128])];
    vec![
        io("input_ids", IoMode::Input, dtype, &[-1, -1], p()),
        io("attention_mask", IoMode::Input, dtype, &[-1, -1], p()),
        io("token_type_ids", IoMode::Input, dtype, &[-1, -1], p()),
        io("logits", IoMode::Output, DataType::Float, &[-1, 2], vec![]),
        io("last_hidden_state", IoMode::Output, DataType::Half, &[-1, -1, 384], vec![]),
    ]
}

#[test]
fn layout_is_discovered_from_engine_io() {
    for dtype in [DataType::Int32, DataType::Int64] {
        let l = ModelLayout::from_io(&minilm_io(dtype)).unwrap();
        let roles: Vec<_> = l.inputs.iter().map(|i| (i.role, trt::DataType::from(i.dtype))).collect();
        assert_eq!(roles, [(InputRole::InputIds, dtype), (InputRole::AttentionMask, dtype), (InputRole::TokenTypeIds, dtype)]);
        assert_eq!((l.min_batch, l.max_batch, l.min_seq, l.max_seq), (1, 32, 16, 128));
        assert_eq!(l.output_of_rank(2).unwrap().name, "logits");
        assert_eq!(l.output_of_rank(3).unwrap().dtype, trt_nlp::ElementType::F16);
    }
}

#[test]
fn engines_with_only_some_token_inputs_are_accepted() {
    let mut io_list = minilm_io(DataType::Int32);
    io_list.remove(2); // no token_type_ids (e.g. DistilBERT)
    let l = ModelLayout::from_io(&io_list).unwrap();
    assert_eq!(l.inputs.len(), 2);
}

#[test]
fn the_range_every_input_and_profile_accepts_is_used() {
    let mut io_list = minilm_io(DataType::Int32);
    io_list[1].profiles = vec![ShapeRange::new(&[1, 16], &[8, 64], &[16, 64])];
    let l = ModelLayout::from_io(&io_list).unwrap();
    assert_eq!((l.max_batch, l.max_seq), (16, 64));

    // Two profiles (two pooled contexts may use different ones): their intersection.
    let mut two = minilm_io(DataType::Int32);
    for t in two.iter_mut().take(3) {
        t.profiles.push(ShapeRange::new(&[2, 32], &[8, 64], &[64, 256]));
    }
    let l = ModelLayout::from_io(&two).unwrap();
    assert_eq!((l.min_batch, l.max_batch, l.min_seq, l.max_seq), (2, 32, 32, 128));
}

#[test]
fn rows_are_padded_to_the_profile_minimum_sequence() {
    let tokenizer = deps::deps_dir().join("minilm/tokenizer.json");
    let pipeline = trt_nlp::TokenizerPipeline::builder(128).min_len(16).threads(1).from_file(&tokenizer).unwrap();
    let [ids, mask, types] = trt_nlp::InputSpec::bert(trt_nlp::ElementType::I32).unwrap();
    let n = pipeline.buffer_len(1);
    let (mut a, mut b, mut c) = (vec![0i32; n], vec![0i32; n], vec![0i32; n]);
    let mut batch = trt_nlp::EncodedBatch::new().with(ids, &mut a).unwrap().with(mask, &mut b).unwrap().with(types, &mut c).unwrap();
    let layout = pipeline.encode_into(&["hi"], &mut batch).unwrap();
    assert_eq!(layout.shape(), [1, 16]);
    assert_eq!(layout.lengths, [3]);
    assert_eq!(&b[..16], &[1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert!(trt_nlp::TokenizerPipeline::builder(8).min_len(9).from_file(&tokenizer).is_err());
}

#[test]
fn unusable_engines_are_typed_errors_naming_the_tensor() {
    let mut bad_name = minilm_io(DataType::Int32);
    bad_name[0].name = "pixel_values".into();
    let e = ModelLayout::from_io(&bad_name).unwrap_err();
    assert!(matches!(&e, Error::UnsupportedModel { reason } if reason.contains("pixel_values")), "{e}");

    let mut float_ids = minilm_io(DataType::Int32);
    float_ids[0].dtype = DataType::Float;
    assert!(ModelLayout::from_io(&float_ids).is_err());

    let mut int_output = minilm_io(DataType::Int32);
    int_output[3].dtype = DataType::Int32;
    let e = ModelLayout::from_io(&int_output).unwrap_err();
    assert!(e.to_string().contains("logits"), "{e}");

    let mut no_profile = minilm_io(DataType::Int32);
    no_profile[2].profiles.clear();
    let e = ModelLayout::from_io(&no_profile).unwrap_err();
    assert!(e.to_string().contains("token_type_ids") && e.to_string().contains("no optimization profile"), "{e}");

    let mut empty_range = minilm_io(DataType::Int32);
    empty_range[0].profiles = vec![ShapeRange::new(&[], &[], &[])];
    assert!(ModelLayout::from_io(&empty_range).is_err(), "a rank-0 range must not panic");

    let mut disjoint = minilm_io(DataType::Int32);
    disjoint[0].profiles.push(ShapeRange::new(&[64, 16], &[64, 64], &[128, 128]));
    let e = ModelLayout::from_io(&disjoint).unwrap_err();
    assert!(e.to_string().contains("in common"), "{e}");

    let mut rank3 = minilm_io(DataType::Int32);
    rank3[0].shape = vec![-1, -1, 1];
    assert!(ModelLayout::from_io(&rank3).is_err());
}

mod gpu {
    use std::path::PathBuf;

    use serde_json::Value;
    use std::sync::Arc;
    use trt::cuda::Device;
    use trt::{Builder, OnnxParser, ProfileSpec, Runtime, ShapeRange};

    use trt_nlp::backend::tensorrt::TensorRtBackend;
    use trt_nlp::{Classifier, Embedder, HelperOptions, Labels, Pooling};

    fn backend(device: &Device) -> Arc<dyn trt_nlp::Backend> {
        Arc::new(TensorRtBackend::new(&engine(), device, 2).unwrap())
    }

    fn minilm(file: &str) -> PathBuf {
        super::deps::deps_dir().join("models/minilm").join(file)
    }

    fn engine() -> trt::Engine {
        let builder = Builder::new().unwrap();
        let network = OnnxParser::parse_file(&builder, minilm("model.onnx")).unwrap();
        let mut config = builder.config().unwrap();
        config
            .add_profile(
                ProfileSpec::new()
                    .with_all(&["input_ids", "attention_mask", "token_type_ids"], ShapeRange::new(&[2, 16], &[4, 128], &[4, 128])),
            )
            .unwrap();
        let plan = builder.build(&network, &config).unwrap();
        Runtime::new().unwrap().deserialize(plan.as_bytes()).unwrap()
    }

    fn reference() -> Value {
        serde_json::from_slice(&std::fs::read(minilm("reference.json")).unwrap()).unwrap()
    }

    fn texts(r: &Value) -> Vec<String> {
        r["texts"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_owned()).collect()
    }

    #[test]
    #[ignore = "needs a GPU that TensorRT can execute engines on (TensorRT-RTX: CC 8.0/8.6/8.9/12.x; CI has none, the H200 is 9.0)"]
    fn classifier_matches_onnxruntime_and_splits_batches() {
        let r = reference();
        let texts = texts(&r);
        assert!(texts.len() > 4, "the profile's max batch (4) must force a split");
        let device = Device::new(0).unwrap();
        let labels = Labels::from_config_file(minilm("config.json")).unwrap();
        let c = Classifier::new(backend(&device), minilm("tokenizer.json"), labels, &HelperOptions::default()).unwrap();
        let got = c.classify(&texts, 2).unwrap();
        assert_eq!(got.len(), texts.len());
        for (i, row) in r["outputs"]["fp32"]["logits"].as_array().unwrap().iter().enumerate() {
            let l: Vec<f32> = row.as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32).collect();
            let m = l[0].max(l[1]);
            let p1 = (l[1] - m).exp() / ((l[0] - m).exp() + (l[1] - m).exp());
            let best = &got[i][0];
            let p = if best.index == 1 { best.score } else { 1.0 - best.score };
            assert!((p - p1).abs() < 1e-3, "text {i}: {p} vs {p1}");
        }
        assert!(c.classify::<&str>(&[], 1).unwrap().is_empty());
        let long = "word ".repeat(5000);
        assert_eq!(c.classify(&[long.as_str()], 1).unwrap().len(), 1, "long texts are truncated");
    }

    #[test]
    #[ignore = "needs a GPU that TensorRT can execute engines on (TensorRT-RTX: CC 8.0/8.6/8.9/12.x; CI has none, the H200 is 9.0)"]
    fn embedder_matches_onnxruntime() {
        let r = reference();
        let texts = texts(&r);
        let device = Device::new(0).unwrap();
        let e = Embedder::new(backend(&device), minilm("tokenizer.json"), Pooling::Mean, true, &HelperOptions::default()).unwrap();
        let got = e.embed(&texts).unwrap();
        for (i, row) in r["outputs"]["fp32"]["embeddings"].as_array().unwrap().iter().enumerate() {
            let want: Vec<f32> = row.as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32).collect();
            let cos: f32 = want.iter().zip(got.row(i)).map(|(a, b)| a * b).sum();
            assert!(cos > 0.9999, "text {i}: cosine {cos}");
        }
    }
}
