//! Engine execution: the default model's engine run on a GPU and compared with
//! the committed script's onnxruntime references. Every test here is ignored
//! by default: no machine this project has can execute a TensorRT engine (CI
//! has no GPU; TensorRT-RTX refuses the lent H200, compute capability 9.0).
//! On a supported GPU: `cargo test -p trt --test execution -- --include-ignored`.

mod common;

use common::*;
use half::f16;
use serde_json::Value;
use trt::cuda::{Device, DeviceBuffer, Element, Stream};
use trt::{Bindings, Builder, ContextPool, Engine, Error, ExecutionContext, OnnxParser, ProfileSpec, Runtime, ShapeRange};

struct Reference {
    batch: usize,
    seq: usize,
    ids: Vec<i32>,
    mask: Vec<i32>,
    types: Vec<i32>,
    json: Value,
}

fn reference() -> Reference {
    let json: Value = serde_json::from_slice(&std::fs::read(generated("models/minilm/reference.json")).unwrap()).unwrap();
    let rows = |k: &str| -> Vec<Vec<i32>> {
        json[k].as_array().unwrap().iter().map(|r| r.as_array().unwrap().iter().map(|v| v.as_i64().unwrap() as i32).collect()).collect()
    };
    let (ids, mask, types) = (rows("input_ids"), rows("attention_mask"), rows("token_type_ids"));
    Reference { batch: ids.len(), seq: ids[0].len(), ids: ids.concat(), mask: mask.concat(), types: types.concat(), json }
}

fn engine(fp16: bool) -> Engine {
    let builder = Builder::new().unwrap();
    let network = OnnxParser::parse_file(&builder, default_model(fp16)).unwrap();
    let mut config = builder.config().unwrap();
    config.add_profile(ProfileSpec::new().with_all(&BERT_INPUTS, ShapeRange::new(&[1, 1], &[8, 128], &[32, 128]))).unwrap();
    let plan = builder.build(&network, &config).unwrap();
    Runtime::new().unwrap().deserialize(plan.as_bytes()).expect("deserialize on a supported GPU")
}

/// Run the reference batch with outputs of element type `T`; returns logits as f32.
fn run_typed<T: Element>(context: &mut ExecutionContext, stream: &Stream, r: &Reference, to_f32: fn(T) -> f32) -> Vec<f32> {
    let shape = [r.batch as i64, r.seq as i64];
    for name in BERT_INPUTS {
        context.set_input_shape(name, &shape).unwrap();
    }
    let mut ids = DeviceBuffer::from_slice(&r.ids, stream).unwrap();
    let mut mask = DeviceBuffer::from_slice(&r.mask, stream).unwrap();
    let mut types = DeviceBuffer::from_slice(&r.types, stream).unwrap();
    let mut logits = DeviceBuffer::<T>::zeros(r.batch * 2, stream).unwrap();
    let mut hidden = DeviceBuffer::<T>::zeros(r.batch * r.seq * 384, stream).unwrap();
    let b = Bindings::new(stream)
        .bind("input_ids", &mut ids).unwrap()
        .bind("attention_mask", &mut mask).unwrap()
        .bind("token_type_ids", &mut types).unwrap()
        .bind("logits", &mut logits).unwrap()
        .bind("last_hidden_state", &mut hidden).unwrap();
    context.enqueue(b).unwrap().wait().unwrap();
    logits.to_vec(stream).unwrap().into_iter().map(to_f32).collect()
}

fn run_logits(context: &mut ExecutionContext, stream: &Stream, r: &Reference, fp16: bool) -> Vec<f32> {
    if fp16 {
        run_typed::<f16>(context, stream, r, f16::to_f32)
    } else {
        run_typed::<f32>(context, stream, r, |x| x)
    }
}

fn expected_logits(r: &Reference, variant: &str) -> Vec<f32> {
    r.json["outputs"][variant]["logits"].as_array().unwrap().iter().flat_map(|row| row.as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32)).collect()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

/// Logits of the FP32 or FP16 engine against onnxruntime's FP32 reference.
fn check_against_reference(fp16: bool, tolerance: f32) {
    let r = reference();
    let device = Device::new(0).unwrap();
    let stream = Stream::new(&device).unwrap();
    let engine = engine(fp16);
    let mut context = ExecutionContext::new(&engine).unwrap();
    let got = run_logits(&mut context, &stream, &r, fp16);
    let diff = max_abs_diff(&got, &expected_logits(&r, "fp32"));
    println!("{} logits max abs diff vs onnxruntime fp32: {diff}", if fp16 { "fp16" } else { "fp32" });
    assert!(diff < tolerance, "{diff}");
}

#[test]
#[ignore = "needs a GPU that TensorRT can execute engines on (TensorRT-RTX: CC 8.0/8.6/8.9/12.x; CI has none, the H200 is 9.0)"]
fn fp32_engine_matches_onnxruntime() {
    check_against_reference(false, 1e-3);
}

#[test]
#[ignore = "needs a GPU that TensorRT can execute engines on (TensorRT-RTX: CC 8.0/8.6/8.9/12.x; CI has none, the H200 is 9.0)"]
fn fp16_engine_matches_onnxruntime_within_fp16_tolerance() {
    // The model script measured 1.2e-3 (onnxruntime) and 1.7e-3 (full FP16 emulation).
    check_against_reference(true, 1e-2);
}

#[test]
#[ignore = "needs a GPU that TensorRT can execute engines on (TensorRT-RTX: CC 8.0/8.6/8.9/12.x; CI has none, the H200 is 9.0)"]
fn shapes_outside_the_profile_and_wrong_dtypes_are_typed_errors() {
    let device = Device::new(0).unwrap();
    let stream = Stream::new(&device).unwrap();
    let engine = engine(false);
    let io: Vec<_> = engine.io_tensors().iter().map(|t| (t.name.clone(), t.dtype, t.shape.clone())).collect();
    println!("{io:?}");
    let mut context = ExecutionContext::new(&engine).unwrap();
    let err = context.set_input_shape("input_ids", &[64, 128]).unwrap_err();
    assert!(matches!(err, Error::ShapeMismatch { .. }), "{err}");
    let err = context.set_input_shape("input_ids", &[4, 129]).unwrap_err();
    assert!(matches!(err, Error::ShapeMismatch { .. }), "{err}");
    for name in BERT_INPUTS {
        context.set_input_shape(name, &[2, 8]).unwrap();
    }
    assert_eq!(context.tensor_shape("logits").unwrap(), vec![2, 2]);
    assert_eq!(context.tensor_shape("last_hidden_state").unwrap(), vec![2, 8, 384]);
    let mut ids64 = DeviceBuffer::<i64>::zeros(16, &stream).unwrap();
    let mut mask = DeviceBuffer::<i32>::zeros(16, &stream).unwrap();
    let mut types = DeviceBuffer::<i32>::zeros(16, &stream).unwrap();
    let mut logits = DeviceBuffer::<f32>::zeros(4, &stream).unwrap();
    let mut hidden = DeviceBuffer::<f32>::zeros(2 * 8 * 384, &stream).unwrap();
    let b = Bindings::new(&stream)
        .bind("input_ids", &mut ids64).unwrap()
        .bind("attention_mask", &mut mask).unwrap()
        .bind("token_type_ids", &mut types).unwrap()
        .bind("logits", &mut logits).unwrap()
        .bind("last_hidden_state", &mut hidden).unwrap();
    let err = context.enqueue(b).err().unwrap();
    assert!(matches!(err, Error::DTypeMismatch { .. }), "{err}");
    let mut ids = DeviceBuffer::<i32>::zeros(16, &stream).unwrap();
    let mut small = DeviceBuffer::<f32>::zeros(3, &stream).unwrap();
    let b = Bindings::new(&stream)
        .bind("input_ids", &mut ids).unwrap()
        .bind("attention_mask", &mut mask).unwrap()
        .bind("token_type_ids", &mut types).unwrap()
        .bind("logits", &mut small).unwrap()
        .bind("last_hidden_state", &mut hidden).unwrap();
    let err = context.enqueue(b).err().unwrap();
    assert!(matches!(err, Error::ShapeMismatch { .. }), "{err}");
}

#[test]
#[ignore = "needs a GPU that TensorRT can execute engines on (TensorRT-RTX: CC 8.0/8.6/8.9/12.x; CI has none, the H200 is 9.0)"]
fn context_pool_serves_many_threads() {
    let r = reference();
    let device = Device::new(0).unwrap();
    let engine = engine(false);
    let pool = ContextPool::new(&engine, &device, 3).unwrap();
    let expected = expected_logits(&r, "fp32");
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..4 {
                    let mut c = pool.checkout();
                    let c = &mut *c;
                    let got = run_logits(&mut c.context, &c.stream, &r, false);
                    assert!(max_abs_diff(&got, &expected) < 1e-3);
                }
            });
        }
    });
}

#[test]
#[ignore = "needs a GPU that TensorRT can execute engines on (TensorRT-RTX: CC 8.0/8.6/8.9/12.x; CI has none, the H200 is 9.0)"]
fn shared_memory_contexts_graph_replay_and_inspector() {
    use trt::SharedDeviceMemory;
    let r = reference();
    let expected = expected_logits(&r, "fp32");
    let device = Device::new(0).unwrap();
    let (s1, s2) = (Stream::new(&device).unwrap(), Stream::new(&device).unwrap());
    let engine = engine(false);
    println!("inspector: {}", &engine.layer_info_json().unwrap()[..200.min(engine.layer_info_json().unwrap().len())]);
    let memory = SharedDeviceMemory::for_engine(&engine, &s1).unwrap();
    let mut a = ExecutionContext::with_shared_memory(&engine, &memory).unwrap();
    let mut b = ExecutionContext::with_shared_memory(&engine, &memory).unwrap();
    for _ in 0..3 {
        assert!(max_abs_diff(&run_logits(&mut a, &s1, &r, false), &expected) < 1e-3);
        assert!(max_abs_diff(&run_logits(&mut b, &s2, &r, false), &expected) < 1e-3);
    }

    // Graph: capture once for the reference shape, replay twice.
    let mut c = ExecutionContext::new(&engine).unwrap();
    for name in BERT_INPUTS {
        c.set_input_shape(name, &[r.batch as i64, r.seq as i64]).unwrap();
    }
    let mut ids = DeviceBuffer::from_slice(&r.ids, &s1).unwrap();
    let mut mask = DeviceBuffer::from_slice(&r.mask, &s1).unwrap();
    let mut types = DeviceBuffer::from_slice(&r.types, &s1).unwrap();
    let mut logits = DeviceBuffer::<f32>::zeros(r.batch * 2, &s1).unwrap();
    let mut hidden = DeviceBuffer::<f32>::zeros(r.batch * r.seq * 384, &s1).unwrap();
    let mut graph = c
        .capture_graph(
            &device,
            &[("input_ids", &ids), ("attention_mask", &mask), ("token_type_ids", &types), ("logits", &logits), ("last_hidden_state", &hidden)],
        )
        .unwrap();
    for _ in 0..2 {
        logits.fill_zeros(&s1).unwrap();
        c.launch_graph(&mut graph, &s1, &mut [&mut ids, &mut mask, &mut types, &mut logits, &mut hidden]).unwrap();
        assert!(max_abs_diff(&logits.to_vec(&s1).unwrap(), &expected) < 1e-3);
    }
}
