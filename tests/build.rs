//! The build side against the real TensorRT library (TensorRT-RTX builds
//! engines without a GPU, so all of this runs on CI).

mod common;

use common::*;
use trt::{
    Activation, Builder, DataType, ElementWise, Error, HostData, MatrixOp, OnnxParser, Precision, ProfileSpec, Reduce, ShapeRange, Unary,
};

fn bert_profile() -> ProfileSpec {
    ProfileSpec::new().with_all(&BERT_INPUTS, ShapeRange::new(&[1, 16], &[8, 128], &[32, 128]))
}

fn build_default(fp16: bool) -> trt::SerializedEngine {
    let builder = Builder::new().expect("load TensorRT and create a builder");
    let network = OnnxParser::parse_file(&builder, default_model(fp16)).expect("parse the default model");
    let mut config = builder.config().unwrap();
    config.add_profile(bert_profile()).unwrap();
    builder.build(&network, &config).expect("build")
}

#[test]
fn default_model_builds_in_fp32_and_fp16_and_fp16_is_smaller() {
    let fp32 = build_default(false);
    let fp16 = build_default(true);
    println!("plan sizes: fp32 {} bytes, fp16 {} bytes", fp32.len(), fp16.len());
    assert!(fp32.len() > 10_000_000, "an FP32 MiniLM plan holds ~90 MB of weights");
    assert!(
        (fp16.len() as f64) <= 0.6 * fp32.len() as f64,
        "FP16 plan ({}) should be at least 40% smaller than FP32 ({})",
        fp16.len(),
        fp32.len()
    );
}

#[test]
fn parsed_network_reports_inputs_with_dynamic_dims() {
    let builder = Builder::new().unwrap();
    let network = OnnxParser::parse_file(&builder, default_model(false)).unwrap();
    let inputs = network.inputs();
    let names: Vec<_> = inputs.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, BERT_INPUTS);
    for i in &inputs {
        assert_eq!(i.dtype, DataType::Int32);
        assert_eq!(i.dims, vec![-1, -1]);
    }
    let outputs: Vec<_> = network.outputs().into_iter().map(|o| o.name).collect();
    assert_eq!(outputs, ["logits", "last_hidden_state"]);
}

/// One BERT encoder layer (hidden 64, 4 heads) written by hand.
fn encoder_layer(network: &trt::Network<'_>) -> trt::Result<()> {
    const H: i64 = 64;
    const HEADS: i64 = 4;
    const D: i64 = H / HEADS;
    let w = |n: usize, seed: f32| -> Vec<f32> { (0..n).map(|i| ((i as f32 * 0.37 + seed).sin()) * 0.05).collect() };
    let x = network.add_input("hidden", DataType::Float, &[-1, -1, H])?; // [B, S, H]
    let mask = network.add_input("mask", DataType::Float, &[-1, 1, 1, -1])?; // additive, [B,1,1,S]
    let wq = w((H * H) as usize, 0.1);
    let proj = |input: trt::Tensor<'_>, wv: &[f32]| -> trt::Result<_> {
        let wt = network.constant(&[1, H, H], HostData::F32(wv))?;
        let y = network.matmul(input, MatrixOp::None, wt, MatrixOp::None)?;
        let b = network.constant(&[1, 1, H], HostData::F32(&w(H as usize, 0.3)))?;
        network.elementwise(y, b, ElementWise::Sum)
    };
    let heads = |t| -> trt::Result<_> {
        let r = network.reshape(t, &[0, 0, HEADS, D])?;
        network.transpose(r, &[0, 2, 1, 3]) // [B, heads, S, D]
    };
    let q = heads(proj(x, &wq)?)?;
    let k = heads(proj(x, &w((H * H) as usize, 0.2))?)?;
    let v = heads(proj(x, &w((H * H) as usize, 0.4))?)?;
    let scores = network.matmul(q, MatrixOp::None, k, MatrixOp::Transpose)?;
    let scale = network.constant(&[1, 1, 1, 1], HostData::F32(&[1.0 / (D as f32).sqrt()]))?;
    let scores = network.elementwise(scores, scale, ElementWise::Prod)?;
    let scores = network.elementwise(scores, mask, ElementWise::Sum)?;
    let probs = network.softmax(scores, 3)?;
    let ctx = network.matmul(probs, MatrixOp::None, v, MatrixOp::None)?;
    let ctx = network.transpose(ctx, &[0, 2, 1, 3])?;
    let ctx = network.reshape(ctx, &[0, 0, H])?;
    let attn = proj(ctx, &w((H * H) as usize, 0.5))?;
    let res = network.elementwise(attn, x, ElementWise::Sum)?;
    let gamma = network.constant(&[1, 1, H], HostData::F32(&vec![1.0; H as usize]))?;
    let beta = network.constant(&[1, 1, H], HostData::F32(&vec![0.0; H as usize]))?;
    let ln = network.normalization(res, gamma, beta, &[2], 1e-12)?;
    let ff = network.activation(proj(ln, &w((H * H) as usize, 0.6))?, Activation::Gelu)?;
    let out = network.elementwise(proj(ff, &w((H * H) as usize, 0.7))?, ln, ElementWise::Sum)?;
    let out = network.identity(out)?;
    network.mark_output(out, "encoded")?;
    // A pooled, squashed summary exercises reduce and unary too.
    let pooled = network.reduce(out, Reduce::Avg, &[1], false)?;
    let pooled = network.unary(pooled, Unary::Abs)?;
    let pooled = network.cast(pooled, DataType::Float)?;
    network.mark_output(pooled, "pooled")?;
    Ok(())
}

fn encoder_profile() -> ProfileSpec {
    ProfileSpec::new()
        .with("hidden", ShapeRange::new(&[1, 1, 64], &[4, 32, 64], &[8, 64, 64]))
        .with("mask", ShapeRange::new(&[1, 1, 1, 1], &[4, 1, 1, 32], &[8, 1, 1, 64]))
}

#[test]
fn hand_written_encoder_layer_builds_with_ten_layer_kinds() {
    let builder = Builder::new().unwrap();
    let network = builder.network(true).unwrap();
    encoder_layer(&network).unwrap();
    let kinds: std::collections::BTreeSet<String> = network.layers().iter().map(|l| format!("{:?}", l.kind)).collect();
    println!("layer kinds: {kinds:?}");
    assert!(kinds.len() >= 10, "only {} layer kinds: {kinds:?}", kinds.len());
    let mut config = builder.config().unwrap();
    config.add_profile(encoder_profile()).unwrap();
    let plan = builder.build(&network, &config).unwrap();
    assert!(!plan.is_empty());
}

#[test]
fn fp32_network_converted_to_fp16_by_the_library() {
    let builder = Builder::new().unwrap();
    let fp32 = builder.network(true).unwrap();
    encoder_layer(&fp32).unwrap();
    let fp16 = builder.network(true).unwrap().with_precision(Precision::Fp16);
    encoder_layer(&fp16).unwrap();
    let out = |n: &trt::Network<'_>| n.outputs().into_iter().map(|o| (o.name, o.dtype)).collect::<Vec<_>>();
    assert_eq!(out(&fp32), [("encoded".to_string(), DataType::Float), ("pooled".to_string(), DataType::Float)]);
    assert_eq!(out(&fp16)[0], ("encoded".to_string(), DataType::Half));
    let mut config = builder.config().unwrap();
    config.add_profile(encoder_profile()).unwrap();
    let p32 = builder.build(&fp32, &config).unwrap();
    let mut config = builder.config().unwrap();
    config.add_profile(encoder_profile()).unwrap();
    let p16 = builder.build(&fp16, &config).unwrap();
    println!("encoder plans: fp32 {} bytes, fp16 {} bytes", p32.len(), p16.len());
    assert!(p16.len() < p32.len(), "FP16 weights must shrink the plan");
}

#[test]
fn timing_cache_round_trips_through_a_file_and_is_reused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("timing.cache");
    let builder = Builder::new().unwrap();
    let network = builder.network(true).unwrap();
    encoder_layer(&network).unwrap();

    let mut config = builder.config().unwrap();
    config.add_profile(encoder_profile()).unwrap();
    let cache = config.create_timing_cache(&[]).unwrap();
    config.set_timing_cache(cache, false).unwrap();
    builder.build(&network, &config).unwrap();
    config.timing_cache().unwrap().save(&file).unwrap();
    let first = std::fs::read(&file).unwrap();
    assert!(!first.is_empty());

    // Second build loads the file; the cache it leaves must contain the first one's entries.
    let mut config = builder.config().unwrap();
    config.add_profile(encoder_profile()).unwrap();
    let loaded = config.create_timing_cache(&first).unwrap();
    assert_eq!(loaded.serialize().unwrap(), first, "a loaded cache serializes to the same bytes");
    config.set_timing_cache(loaded, false).unwrap();
    builder.build(&network, &config).unwrap();
    let second = config.timing_cache().unwrap().serialize().unwrap();
    assert!(second.len() >= first.len());
    println!("timing cache: {} bytes after first build, {} after second", first.len(), second.len());
}

#[test]
fn progress_monitor_reports_phases_and_can_cancel() {
    use std::sync::{Arc, Mutex};
    struct Recorder(Arc<Mutex<Vec<String>>>, bool);
    impl trt::ProgressCallbacks for Recorder {
        fn phase_start(&mut self, phase: &str, _parent: &str, steps: i32) {
            self.0.lock().unwrap().push(format!("{phase} ({steps})"));
        }
        fn step_complete(&mut self, _phase: &str, _step: i32) -> bool {
            !self.1
        }
        fn phase_finish(&mut self, _phase: &str) {}
    }
    let builder = Builder::new().unwrap();
    let network = builder.network(true).unwrap();
    encoder_layer(&network).unwrap();

    let phases = Arc::new(Mutex::new(Vec::new()));
    let mut config = builder.config().unwrap();
    config.add_profile(encoder_profile()).unwrap();
    config.set_progress(Box::new(Recorder(phases.clone(), false))).unwrap();
    builder.build(&network, &config).unwrap();
    println!("phases: {:?}", phases.lock().unwrap());
    assert!(!phases.lock().unwrap().is_empty(), "TensorRT reported no phase");

    let mut config = builder.config().unwrap();
    config.add_profile(encoder_profile()).unwrap();
    config.set_progress(Box::new(Recorder(Arc::new(Mutex::new(Vec::new())), true))).unwrap();
    match builder.build(&network, &config) {
        Err(Error::Cancelled) => {}
        other => panic!("expected Cancelled, got {other:?}"),
    }
}

#[test]
fn external_weights_next_to_the_onnx_file_are_found() {
    let builder = Builder::new().unwrap();
    let path = generated("models/test/external_weights.onnx");
    let network = OnnxParser::parse_file(&builder, &path).unwrap();
    let mut config = builder.config().unwrap();
    config.add_profile(ProfileSpec::new().with("x", ShapeRange::new(&[1, 64], &[4, 64], &[8, 64]))).unwrap();
    builder.build(&network, &config).unwrap();
    // From bytes, the base path tells the parser where the .bin lives.
    let bytes = std::fs::read(&path).unwrap();
    OnnxParser::parse_bytes(&builder, &bytes, Some(&path)).unwrap();
}

#[test]
fn engine_cache_hits_rebuilds_on_change_and_never_returns_a_truncated_plan() {
    use trt::{CacheOutcome, EngineCache};
    let models = tempfile::tempdir().unwrap();
    for f in ["external_weights.onnx", "external_weights.bin"] {
        std::fs::copy(generated(&format!("models/test/{f}")), models.path().join(f)).unwrap();
    }
    let onnx = models.path().join("external_weights.onnx");
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = EngineCache::new(cache_dir.path());
    let builder = Builder::new().unwrap();
    let profile = |max: i64| {
        move |c: &mut trt::BuilderConfig<'_>| -> trt::Result<()> {
            c.add_profile(ProfileSpec::new().with("x", ShapeRange::new(&[1, 64], &[4, 64], &[max, 64])))?;
            Ok(())
        }
    };
    let (first, o1) = cache.get_or_build(&builder, &onnx, profile(8)).unwrap();
    let (again, o2) = cache.get_or_build(&builder, &onnx, profile(8)).unwrap();
    assert_eq!((o1, o2), (CacheOutcome::Built, CacheOutcome::Hit));
    assert_eq!(first, again);

    // A different profile is a different engine.
    let (_, o3) = cache.get_or_build(&builder, &onnx, profile(16)).unwrap();
    assert_eq!(o3, CacheOutcome::Built);

    // New weights in the external data file: rebuild.
    let bin = models.path().join("external_weights.bin");
    let mut w = std::fs::read(&bin).unwrap();
    w[0] ^= 1;
    std::fs::write(&bin, &w).unwrap();
    let (_, o4) = cache.get_or_build(&builder, &onnx, profile(8)).unwrap();
    assert_eq!(o4, CacheOutcome::Built);

    // Truncate every cached plan: the cache must rebuild, not return it.
    for e in std::fs::read_dir(cache_dir.path()).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "plan") {
            let bytes = std::fs::read(e.path()).unwrap();
            std::fs::write(e.path(), &bytes[..bytes.len() / 2]).unwrap();
        }
    }
    let (plan, o5) = cache.get_or_build(&builder, &onnx, profile(8)).unwrap();
    assert_eq!(o5, CacheOutcome::Built);
    let (plan2, o6) = cache.get_or_build(&builder, &onnx, profile(8)).unwrap();
    assert_eq!(o6, CacheOutcome::Hit);
    assert_eq!(plan, plan2);
}

#[cfg(trt_rtx)]
#[test]
fn tensorrt_rtx_builds_ahead_of_time_for_chosen_compute_capabilities() {
    let builder = Builder::new().unwrap();
    let network = OnnxParser::parse_file(&builder, generated("models/test/external_weights.onnx")).unwrap();
    let mut config = builder.config().unwrap();
    config.add_profile(ProfileSpec::new().with("x", ShapeRange::new(&[1, 64], &[4, 64], &[8, 64]))).unwrap();
    config.set_compute_capabilities(&[80, 86, 89, 120]).unwrap();
    let plan = builder.build(&network, &config).unwrap();
    assert!(!plan.is_empty());
    assert_eq!(config.settings().compute_capabilities, vec![80, 86, 89, 120]);
    // 90 (Hopper) is not a TensorRT-RTX target: rejected by TensorRT with its message.
    let mut config = builder.config().unwrap();
    let err = config.set_compute_capabilities(&[90]).unwrap_err();
    println!("{err}");
}

#[test]
fn builder_settings_are_recorded_and_invalid_levels_rejected() {
    let builder = Builder::new().unwrap();
    let mut config = builder.config().unwrap();
    config.set_workspace(256 << 20).unwrap().set_optimization_level(2).unwrap();
    assert_eq!(config.workspace().unwrap(), 256 << 20);
    assert_eq!(config.settings().optimization_level, Some(2));
    assert!(matches!(config.set_optimization_level(9), Err(Error::InvalidArgument(_))));
    config.set_hardware_compatibility(trt::HardwareCompatibility::AmperePlus).unwrap();
    config.set_detailed_profiling(true).unwrap();
    assert!(config.settings().detailed_profiling);
}

/// TensorRT 10.x only (weakly typed). Compiled by CI against the 10.16 headers;
/// runs where a TensorRT 10 library is installed.
#[cfg(trt_weakly_typed)]
#[test]
fn weakly_typed_fp16_and_int8_flags_build() {
    struct NoData;
    // SAFETY: returns no address: calibration ends at the first batch.
    unsafe impl trt::Int8Calibrator for NoData {
        fn batch_size(&self) -> i32 {
            1
        }
        fn next_batch(&mut self) -> bool {
            false
        }
        fn input_address(&mut self, _name: &str) -> usize {
            0
        }
        fn read_cache(&mut self) -> Option<Vec<u8>> {
            None
        }
        fn write_cache(&mut self, _data: &[u8]) {}
    }
    let builder = Builder::new().unwrap();
    let network = builder.network(false).unwrap();
    encoder_layer(&network).unwrap();
    assert!(!network.is_strongly_typed());
    let mut config = builder.config().unwrap();
    config.add_profile(encoder_profile()).unwrap();
    config.allow_precision(trt::AllowedPrecision::Fp16).unwrap();
    let fp16 = builder.build(&network, &config).expect("weakly typed FP16 build");
    assert!(!fp16.is_empty());
    // A calibrator with no data: INT8 calibration cannot succeed, and the failure is typed.
    config.set_int8_calibrator(Box::new(NoData)).unwrap();
    assert!(config.settings().flags.contains("Int8"));
    let err = builder.build(&network, &config).unwrap_err();
    assert!(matches!(err, Error::TensorRt { .. }), "{err}");
}

fn small_config<'b>(builder: &'b Builder) -> trt::BuilderConfig<'b> {
    let mut config = builder.config().unwrap();
    config.add_profile(ProfileSpec::new().with("x", ShapeRange::new(&[1, 64], &[4, 64], &[8, 64]))).unwrap();
    config
}

#[test]
fn version_and_hardware_compatible_plans() {
    let builder = Builder::new().unwrap();
    let network = OnnxParser::parse_file(&builder, generated("models/test/external_weights.onnx")).unwrap();

    let mut config = small_config(&builder);
    config.set_hardware_compatibility(trt::HardwareCompatibility::AmperePlus).unwrap();
    builder.build(&network, &config).expect("Ampere+ hardware-compatible plan");

    // Version compatible without the lean runtime embedded.
    let mut config = small_config(&builder);
    config.set_version_compatible(true, true).unwrap();
    let plan = builder.build(&network, &config).expect("version-compatible plan without the lean runtime");
    println!("version compatible, lean runtime excluded: {} bytes", plan.len());
    assert!(config.settings().flags.contains("VersionCompatible"));

    // Embedding the lean runtime needs that library at build time: a typed error naming it when absent.
    let mut config = small_config(&builder);
    config.set_version_compatible(true, false).unwrap();
    match builder.build(&network, &config) {
        Ok(p) => println!("version compatible with lean runtime: {} bytes", p.len()),
        Err(e) => {
            println!("{e}");
            assert!(e.to_string().contains("lean"), "{e}");
        }
    }
}

fn two_profile_plan() -> trt::SerializedEngine {
    let builder = Builder::new().unwrap();
    let network = OnnxParser::parse_file(&builder, generated("models/test/external_weights.onnx")).unwrap();
    let mut config = builder.config().unwrap();
    assert_eq!(config.num_profiles_in_tensorrt().unwrap(), 0);
    config.add_profile(ProfileSpec::new().with("x", ShapeRange::new(&[1, 64], &[1, 64], &[4, 64]))).unwrap();
    config.add_profile(ProfileSpec::new().with("x", ShapeRange::new(&[4, 64], &[16, 64], &[32, 64]))).unwrap();
    // TensorRT itself holds both, not only our record of them.
    assert_eq!(config.num_profiles_in_tensorrt().unwrap(), 2);
    assert_eq!(config.profiles().len(), 2);
    builder.build(&network, &config).expect("build with two profiles")
}

#[test]
fn two_optimization_profiles_reach_the_builder_config_and_build() {
    let plan = two_profile_plan();
    assert!(!plan.is_empty());
}

#[test]
#[ignore = "deserializing a plan needs a GPU the loaded TensorRT can execute engines on (TensorRT-RTX: compute capability 8.0/8.6/8.9/12.x; the lent H200 is 9.0 and CI has no GPU)"]
fn two_optimization_profiles_round_trip_through_the_plan() {
    let engine = trt::Runtime::new().unwrap().deserialize(two_profile_plan().as_bytes()).expect("deserialize on a supported GPU");
    assert_eq!(engine.num_profiles(), 2);
    let x = engine.io_tensor("x").unwrap();
    assert_eq!(x.profiles[0], ShapeRange::new(&[1, 64], &[1, 64], &[4, 64]));
    assert_eq!(x.profiles[1], ShapeRange::new(&[4, 64], &[16, 64], &[32, 64]));
}

#[test]
fn intermediate_tensors_marked_as_outputs_keep_their_onnx_names_and_build() {
    let builder = Builder::new().unwrap();
    let network = OnnxParser::parse_file(&builder, default_model(false)).unwrap();
    let layers = network.layer_outputs();
    let floats: Vec<String> = layers.iter().filter(|l| l.is_float_activation()).map(|l| l.tensor.name.clone()).collect();
    println!("{} layer outputs, {} float activations", layers.len(), floats.len());
    // The parser names a layer's outputs after the ONNX values (the names the ONNX side exposes).
    for onnx_name in ["embeddings/word/Gather_out", "encoder.layer.0.attention.output.LayerNorm/LayerNormalization_out"] {
        assert!(floats.iter().any(|n| n == onnx_name), "{onnx_name} among {:?}", &floats[..floats.len().min(20)]);
    }
    // In node order: the embedding lookup comes before the first encoder layer's LayerNorm.
    let pos = |n: &str| floats.iter().position(|f| f == n).unwrap();
    assert!(pos("embeddings/word/Gather_out") < pos("encoder.layer.0.attention.output.LayerNorm/LayerNormalization_out"));

    // Bad names are refused before anything is marked.
    let err = network.mark_outputs(&["embeddings/word/Gather_out", "no such tensor"]).unwrap_err();
    assert!(matches!(&err, Error::UnknownTensor { name, .. } if name == "no such tensor"), "{err}");
    if let Some(int) = layers.iter().find(|l| !l.tensor.dtype.is_float()) {
        let err = network.mark_outputs(&[int.tensor.name.as_str()]).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)) && err.to_string().contains(&int.tensor.name), "{err}");
    }
    assert_eq!(network.outputs().len(), 2, "a refused call marks nothing");

    let marked = network.mark_outputs(&floats).unwrap();
    let outputs = network.outputs();
    assert_eq!(outputs.len(), 2 + marked, "every marked tensor is an output");
    assert!(marked + 2 >= floats.len(), "only the two model outputs were already outputs: {marked} of {}", floats.len());
    assert_eq!(network.mark_outputs(&floats).unwrap(), 0, "marking again adds nothing");
    for name in ["logits", "last_hidden_state", "embeddings/word/Gather_out"] {
        assert!(outputs.iter().any(|o| o.name == name), "{name}");
    }
    let mut config = builder.config().unwrap();
    config.add_profile(bert_profile()).unwrap();
    let plan = builder.build(&network, &config).expect("an engine with every float activation as an output builds");
    println!("plan with {} outputs: {} bytes", outputs.len(), plan.len());
    assert!(plan.len() > 10_000_000);
}
