//! Engine execution: the default model's engine run on a GPU and compared with
//! the committed script's onnxruntime references. Every test here is ignored
//! by default: no machine this project has can execute a TensorRT engine (CI
//! has no GPU; TensorRT-RTX refuses the lent H200, compute capability 9.0).
//! On a supported GPU: `cargo test -p trt-rs --test trt_rs -- --include-ignored execution::`.

mod common;

use common::*;
use half::f16;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use trt::cuda::{Device, DeviceBuffer, Element, Event, GraphResource, Stream, StreamGate};
use trt::{
    Bindings, Builder, ContextPool, Engine, Error, ExecutionContext, OnnxParser, OutputCallbacks, ProfileSpec, Reallocation, Runtime,
    ShapeRange,
};

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
        .bind("input_ids", &mut ids)
        .unwrap()
        .bind("attention_mask", &mut mask)
        .unwrap()
        .bind("token_type_ids", &mut types)
        .unwrap()
        .bind("logits", &mut logits)
        .unwrap()
        .bind("last_hidden_state", &mut hidden)
        .unwrap();
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
    r.json["outputs"][variant]["logits"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32))
        .collect()
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
        .bind("input_ids", &mut ids64)
        .unwrap()
        .bind("attention_mask", &mut mask)
        .unwrap()
        .bind("token_type_ids", &mut types)
        .unwrap()
        .bind("logits", &mut logits)
        .unwrap()
        .bind("last_hidden_state", &mut hidden)
        .unwrap();
    let err = context.enqueue(b).err().unwrap();
    assert!(matches!(err, Error::DTypeMismatch { .. }), "{err}");
    let mut ids = DeviceBuffer::<i32>::zeros(16, &stream).unwrap();
    let mut small = DeviceBuffer::<f32>::zeros(3, &stream).unwrap();
    let b = Bindings::new(&stream)
        .bind("input_ids", &mut ids)
        .unwrap()
        .bind("attention_mask", &mut mask)
        .unwrap()
        .bind("token_type_ids", &mut types)
        .unwrap()
        .bind("logits", &mut small)
        .unwrap()
        .bind("last_hidden_state", &mut hidden)
        .unwrap();
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
    let mut io = Io::reference(&r, &s1);
    let mut graph = c.capture_graph(io.bindings(&s1)).unwrap();
    for _ in 0..2 {
        io.logits.fill_zeros(&s1).unwrap();
        graph.launch(&s1, &mut io.resources()).unwrap();
        assert!(max_abs_diff(&io.logits.to_vec(&s1).unwrap(), &expected) < 1e-3);
    }
}

/// Device buffers for every I/O tensor of the default model, for one shape.
struct Io {
    ids: DeviceBuffer<i32>,
    mask: DeviceBuffer<i32>,
    types: DeviceBuffer<i32>,
    logits: DeviceBuffer<f32>,
    hidden: DeviceBuffer<f32>,
}

impl Io {
    fn reference(r: &Reference, stream: &Stream) -> Io {
        Io {
            ids: DeviceBuffer::from_slice(&r.ids, stream).unwrap(),
            mask: DeviceBuffer::from_slice(&r.mask, stream).unwrap(),
            types: DeviceBuffer::from_slice(&r.types, stream).unwrap(),
            logits: DeviceBuffer::zeros(r.batch * 2, stream).unwrap(),
            hidden: DeviceBuffer::zeros(r.batch * r.seq * 384, stream).unwrap(),
        }
    }

    fn zeros(batch: usize, seq: usize, stream: &Stream) -> Io {
        Io {
            ids: DeviceBuffer::zeros(batch * seq, stream).unwrap(),
            mask: DeviceBuffer::zeros(batch * seq, stream).unwrap(),
            types: DeviceBuffer::zeros(batch * seq, stream).unwrap(),
            logits: DeviceBuffer::zeros(batch * 2, stream).unwrap(),
            hidden: DeviceBuffer::zeros(batch * seq * 384, stream).unwrap(),
        }
    }

    fn bindings<'a>(&'a mut self, stream: &'a Stream) -> Bindings<'a> {
        Bindings::with_capacity(stream, 5)
            .bind("input_ids", &mut self.ids)
            .unwrap()
            .bind("attention_mask", &mut self.mask)
            .unwrap()
            .bind("token_type_ids", &mut self.types)
            .unwrap()
            .bind("logits", &mut self.logits)
            .unwrap()
            .bind("last_hidden_state", &mut self.hidden)
            .unwrap()
    }

    fn resources(&mut self) -> [&mut dyn GraphResource; 5] {
        [&mut self.ids, &mut self.mask, &mut self.types, &mut self.logits, &mut self.hidden]
    }
}

fn set_shapes(context: &mut ExecutionContext, batch: usize, seq: usize) {
    for name in BERT_INPUTS {
        context.set_input_shape(name, &[batch as i64, seq as i64]).unwrap();
    }
}

const HOLD: Duration = Duration::from_secs(10);
const SETTLE: Duration = Duration::from_millis(50);

/// Device 0, a stream, and a context of `engine` with every input at `[batch, seq]`.
fn context_at(engine: &Engine, batch: usize, seq: usize) -> (Device, Stream, ExecutionContext) {
    let device = Device::new(0).unwrap();
    let stream = Stream::new(&device).unwrap();
    let mut context = ExecutionContext::new(engine).unwrap();
    set_shapes(&mut context, batch, seq);
    (device, stream, context)
}

#[test]
#[ignore = "needs a GPU that TensorRT can execute engines on (TensorRT-RTX: CC 8.0/8.6/8.9/12.x; CI has none, the H200 is 9.0)"]
fn a_graph_replays_the_state_it_was_captured_with_whatever_its_parent_does() {
    // A graph that replayed through the capturing context itself would see
    // the shape change below change the state it depends on
    // (`context.tensor_shape("logits")` would become [1, 2]).
    let r = reference();
    let expected = expected_logits(&r, "fp32");
    let (_device, stream, mut parent) = context_at(&engine(false), r.batch, r.seq);
    let mut io = Io::reference(&r, &stream);
    let mut graph = parent.capture_graph(io.bindings(&stream)).unwrap();
    // Change everything on the parent: shapes, addresses (an enqueue with other buffers).
    set_shapes(&mut parent, 1, 8);
    let mut other = Io::zeros(1, 8, &stream);
    parent.enqueue(other.bindings(&stream)).unwrap().wait().unwrap();
    assert_eq!(parent.tensor_shape("logits").unwrap(), vec![1, 2]);
    assert_eq!(graph.context().tensor_shape("logits").unwrap(), vec![r.batch as i64, 2]);
    io.logits.fill_zeros(&stream).unwrap();
    graph.launch(&stream, &mut io.resources()).unwrap();
    assert!(max_abs_diff(&io.logits.to_vec(&stream).unwrap(), &expected) < 1e-3);
}

fn engine_with_two_profiles() -> Engine {
    let builder = Builder::new().unwrap();
    let network = OnnxParser::parse_file(&builder, default_model(false)).unwrap();
    let mut config = builder.config().unwrap();
    config.add_profile(ProfileSpec::new().with_all(&BERT_INPUTS, ShapeRange::new(&[1, 1], &[8, 128], &[32, 128]))).unwrap();
    config.add_profile(ProfileSpec::new().with_all(&BERT_INPUTS, ShapeRange::new(&[1, 1], &[1, 16], &[4, 16]))).unwrap();
    let plan = builder.build(&network, &config).unwrap();
    Runtime::new().unwrap().deserialize(plan.as_bytes()).expect("deserialize on a supported GPU")
}

#[test]
#[ignore = "needs a GPU that TensorRT can execute engines on (TensorRT-RTX: CC 8.0/8.6/8.9/12.x; CI has none, the H200 is 9.0)"]
fn a_profile_switch_waits_for_the_contexts_last_work() {
    // setOptimizationProfileAsync enqueued on stream b with no ordering
    // against a would let `after` complete while a is held.
    let device = Device::new(0).unwrap();
    let (a, b) = (Stream::new(&device).unwrap(), Stream::new(&device).unwrap());
    let engine = engine_with_two_profiles();
    let mut context = ExecutionContext::new(&engine).unwrap();
    set_shapes(&mut context, 2, 8);
    let mut io = Io::zeros(2, 8, &a);
    a.synchronize().unwrap();
    let gate = StreamGate::close(&a, HOLD).unwrap();
    context.enqueue(io.bindings(&a)).unwrap().release();
    context.set_profile(1, &b).unwrap();
    let after = Event::without_timing(&device).unwrap();
    after.record(&b).unwrap();
    assert!(gate.holds_back(&after, SETTLE).unwrap(), "the profile switch on stream b did not wait for the enqueue on stream a");
    gate.open();
    after.synchronize().unwrap();
    // Shapes must be set again for the new profile.
    let err = context.enqueue(io.bindings(&b)).err().unwrap();
    assert!(matches!(err, Error::MissingInputShapes { .. }), "{err}");
}

/// An output allocator that hands out one preallocated buffer and says when it is dropped.
struct FixedAllocator {
    memory: DeviceBuffer<f32>,
    dropped: Arc<AtomicBool>,
}

// SAFETY: hands out a live allocation of its own, at least `size` bytes or 0.
unsafe impl OutputCallbacks for FixedAllocator {
    fn reallocate(&mut self, _name: &str, request: Reallocation) -> usize {
        if request.size as usize <= self.memory.size_in_bytes() {
            self.memory.address() as usize
        } else {
            0
        }
    }
    fn notify_shape(&mut self, _name: &str, _dims: &[i64]) {}
}

impl Drop for FixedAllocator {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
    }
}

fn fixed_allocator(stream: &Stream, elements: usize) -> (Box<FixedAllocator>, Arc<AtomicBool>) {
    let dropped = Arc::new(AtomicBool::new(false));
    (Box::new(FixedAllocator { memory: DeviceBuffer::zeros(elements, stream).unwrap(), dropped: dropped.clone() }), dropped)
}

#[test]
#[ignore = "needs a GPU that TensorRT can execute engines on (TensorRT-RTX: CC 8.0/8.6/8.9/12.x; CI has none, the H200 is 9.0)"]
fn a_replaced_output_allocator_lives_until_the_work_completes() {
    // The output is both preallocated and given an allocator; dropping the
    // old allocator inside set_output_allocator would free memory that
    // queued work still writes.
    let (_device, stream, mut context) = context_at(&engine(false), 2, 8);
    let (first, first_dropped) = fixed_allocator(&stream, 64);
    context.set_output_allocator("logits", first).unwrap();
    let mut io = Io::zeros(2, 8, &stream);
    stream.synchronize().unwrap();
    let gate = StreamGate::close(&stream, HOLD).unwrap();
    context.enqueue(io.bindings(&stream)).unwrap().release();
    let (second, second_dropped) = fixed_allocator(&stream, 64);
    context.set_output_allocator("logits", second).unwrap();
    std::thread::sleep(SETTLE);
    assert!(!first_dropped.load(Ordering::SeqCst), "the replaced allocator was dropped under queued work");
    assert_eq!(context.retired_allocators(), 1);
    gate.open();
    stream.synchronize().unwrap();
    context.enqueue(io.bindings(&stream)).unwrap().wait().unwrap(); // collects finished retirements
    assert!(first_dropped.load(Ordering::SeqCst));
    assert_eq!(context.retired_allocators(), 0);
    drop(context);
    assert!(second_dropped.load(Ordering::SeqCst));
}

#[test]
#[ignore = "needs a GPU that TensorRT can execute engines on (TensorRT-RTX: CC 8.0/8.6/8.9/12.x; CI has none, the H200 is 9.0)"]
fn capture_is_refused_for_a_context_with_an_output_allocator() {
    // A capture that went ahead would freeze the allocator's address into
    // the graph, so a later reallocation would be written past.
    let (_device, stream, mut context) = context_at(&engine(false), 2, 8);
    let (allocator, _) = fixed_allocator(&stream, 64);
    context.set_output_allocator("logits", allocator).unwrap();
    let mut io = Io::zeros(2, 8, &stream);
    let before = context.calls();
    let err = context.capture_graph(io.bindings(&stream)).unwrap_err();
    assert!(matches!(err, Error::NotCapturable(_)), "{err}");
    assert!(err.to_string().contains("logits"), "{err}");
    assert_eq!(context.calls(), before, "refused before any TensorRT call");
}

#[test]
#[ignore = "needs two GPUs that TensorRT can execute engines on (TensorRT-RTX: CC 8.0/8.6/8.9/12.x)"]
fn contexts_are_created_and_destroyed_on_the_engines_gpu() {
    // The context's activation memory must go to the engine's device, not
    // to whichever device is current (device 0 here).
    assert!(trt::cuda::device_count().unwrap() >= 2, "this test needs two GPUs");
    let (d0, d1) = (Device::new(0).unwrap(), Device::new(1).unwrap());
    let builder = Builder::new().unwrap();
    let network = OnnxParser::parse_file(&builder, default_model(false)).unwrap();
    let mut config = builder.config().unwrap();
    config.add_profile(ProfileSpec::new().with_all(&BERT_INPUTS, ShapeRange::new(&[1, 1], &[8, 128], &[32, 128]))).unwrap();
    let plan = builder.build(&network, &config).unwrap();
    let engine = Runtime::new().unwrap().deserialize_on(plan.as_bytes(), &d1).unwrap();
    let needed = engine.device_memory_size().unwrap();
    let _current = Stream::new(&d0).unwrap(); // makes device 0 current on this thread
    let (free0, free1) = (d0.free_memory().unwrap(), d1.free_memory().unwrap());
    let context = ExecutionContext::new(&engine).unwrap();
    let (used0, used1) = (free0.saturating_sub(d0.free_memory().unwrap()), free1.saturating_sub(d1.free_memory().unwrap()));
    println!("activation memory {needed} bytes; used on GPU 0: {used0}, on GPU 1: {used1}");
    assert!(used1 >= needed, "the context's memory did not go to the engine's GPU");
    assert!(used0 < needed, "the context's memory went to the current GPU");
    let _current = Stream::new(&d0).unwrap();
    drop(context);
    assert!(d1.free_memory().unwrap() >= free1.saturating_sub(needed / 2), "destroying the context did not free GPU 1's memory");
}

#[test]
#[ignore = "needs a GPU that TensorRT can execute engines on (TensorRT-RTX: CC 8.0/8.6/8.9/12.x; CI has none, the H200 is 9.0)"]
fn every_profile_has_its_formats_and_missing_shapes_are_named() {
    // Items 6 and 7: formats per profile; inferShapes names what is missing.
    let device = Device::new(0).unwrap();
    let stream = Stream::new(&device).unwrap();
    let engine = engine_with_two_profiles();
    for t in engine.io_tensors() {
        for p in 0..engine.num_profiles() {
            let f = engine.io_format(&t.name, p).unwrap();
            println!("{} profile {p}: {}", t.name, f.description);
        }
        assert_eq!(engine.io_format(&t.name, 0).unwrap().linear, t.linear);
    }
    let mut context = ExecutionContext::new(&engine).unwrap();
    context.set_input_shape("input_ids", &[2, 8]).unwrap();
    let mut io = Io::zeros(2, 8, &stream);
    match context.enqueue(io.bindings(&stream)).err().unwrap() {
        Error::MissingInputShapes { inputs } => assert_eq!(inputs, vec!["attention_mask", "token_type_ids"]),
        other => panic!("{other}"),
    }
}

#[test]
#[ignore = "needs a GPU that TensorRT can execute engines on (TensorRT-RTX: CC 8.0/8.6/8.9/12.x; CI has none, the H200 is 9.0)"]
fn a_steady_batch_costs_one_enqueue_and_one_allocation() {
    // The same shapes through the same buffers make no
    // setInputShape, setTensorAddress, getTensorShape or inferShapes call, and
    // allocate only the bindings' vector.
    let (_device, stream, mut context) = context_at(&engine(false), 2, 8);
    let mut io = Io::zeros(2, 8, &stream);
    context.enqueue(io.bindings(&stream)).unwrap().wait().unwrap();
    let first = context.calls();
    println!("first batch: {first:?}");
    let allocations = counting::allocations(|| {
        set_shapes(&mut context, 2, 8);
        context.enqueue(io.bindings(&stream)).unwrap().release();
        let _ = context.current_shape("logits").unwrap();
    });
    stream.synchronize().unwrap();
    let steady = context.calls();
    println!("steady batch: {steady:?}, {allocations} heap allocation(s)");
    assert_eq!(steady.enqueue, first.enqueue + 1);
    assert_eq!(steady.total(), first.total() + 1, "only enqueueV3: {first:?} -> {steady:?}");
    assert_eq!(allocations, 1, "only the bindings' vector");
    // A new shape: 3 setInputShape, 1 inferShapes, 2 getTensorShape (outputs), 5 setTensorAddress at most.
    let mut bigger = Io::zeros(4, 16, &stream);
    set_shapes(&mut context, 4, 16);
    context.enqueue(bigger.bindings(&stream)).unwrap().wait().unwrap();
    let changed = context.calls();
    println!("new shape: {changed:?}");
    assert_eq!(changed.set_input_shape - steady.set_input_shape, 3);
    assert_eq!(changed.infer_shapes - steady.infer_shapes, 1);
    assert_eq!(changed.tensor_shape - steady.tensor_shape, 2);
}

/// A global allocator that counts allocations made by the calling thread.
mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    struct Counting;
    thread_local! { static COUNT: Cell<u64> = const { Cell::new(0) }; }

    // SAFETY: forwards to the system allocator; only counts.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let _ = COUNT.try_with(|c| c.set(c.get() + 1));
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            let _ = COUNT.try_with(|c| c.set(c.get() + 1));
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    #[global_allocator]
    static GLOBAL: Counting = Counting;

    /// Heap allocations (and reallocations) `f` made on this thread.
    pub fn allocations(f: impl FnOnce()) -> u64 {
        let before = COUNT.with(Cell::get);
        f();
        COUNT.with(Cell::get) - before
    }
}
