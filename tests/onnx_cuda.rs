//! ONNX Runtime sessions on the CUDA provider (`trt_onnx::runtime`).
//!
//! The tests that run everywhere check the typed errors and the CPU
//! fall-back of `Provider::Auto` on a library without CUDA (the CPU wheel
//! that `scripts/setup` installs); where the loaded library has CUDA they
//! say so and check the opposite. Tests marked `#[ignore = "needs a CUDA
//! GPU ..."]` run on the GPU host with `--include-ignored`, with
//! `ORT_DYLIB_PATH` set to the onnxruntime-gpu wheel's library.

#[path = "onnx_support.rs"]
mod support;

use ndarray::ArrayD;
use support::{default_model, reference_batch};
use trt_onnx::runtime::{cuda_device_count, InputTensor, OrtLibrary, OutputTensor, Provider, Session, SessionOptions};
use trt_onnx::Error;

fn options(provider: Provider) -> SessionOptions {
    SessionOptions { provider, intra_threads: 2, ..SessionOptions::default() }
}

fn has_cuda() -> bool {
    OrtLibrary::load().unwrap().has_provider("CUDAExecutionProvider")
}

#[test]
fn providers_parse_from_their_names_and_print_back() {
    for (text, p) in [
        ("auto", Provider::Auto),
        ("cpu", Provider::Cpu),
        ("cuda:0", Provider::Cuda { device: 0 }),
        ("cuda:3", Provider::Cuda { device: 3 }),
    ] {
        assert_eq!(text.parse::<Provider>().unwrap(), p);
        assert_eq!(p.to_string(), text);
    }
    assert_eq!("cuda".parse::<Provider>().unwrap(), Provider::Cuda { device: 0 });
    for bad in ["gpu", "cuda:", "cuda:x", "cuda:-1", ""] {
        let e = bad.parse::<Provider>().unwrap_err();
        assert!(e.to_string().contains("auto, cpu, cuda or cuda:N"), "{bad}: {e}");
    }
}

#[test]
fn cuda_on_a_library_without_it_is_an_error_naming_the_library_and_auto_falls_back_to_the_cpu() {
    if has_cuda() {
        println!("skipped: the loaded ONNX Runtime has the CUDA provider (the GPU tests cover it)");
        return;
    }
    let library = OrtLibrary::load().unwrap().path().to_owned();
    match Session::from_file(default_model("model.onnx"), &options(Provider::Cuda { device: 0 })) {
        Err(Error::ProviderLibrary { provider, library: named, reason }) => {
            assert_eq!(provider, "CUDAExecutionProvider");
            assert_eq!(named, library);
            assert!(reason.contains("CPUExecutionProvider only") && reason.contains("onnxruntime-gpu"), "{reason}");
        }
        other => panic!("expected a ProviderLibrary error, got {other:?}"),
    }
    let auto = Session::from_file(default_model("model.onnx"), &options(Provider::Auto)).unwrap();
    assert_eq!((auto.provider(), auto.cuda_device()), ("CPUExecutionProvider", None));
}

#[test]
fn the_driver_probe_is_a_typed_answer_and_never_panics() {
    match cuda_device_count() {
        Ok(n) => println!("the CUDA driver reports {n} device(s)"),
        Err(Error::CudaDriver { reason }) => assert!(!reason.is_empty()),
        Err(e) => panic!("unexpected {e}"),
    }
}

fn run_reference(session: &mut Session) -> Vec<(String, ArrayD<f32>)> {
    let batch = reference_batch();
    // The default model takes i32 token tensors; the reference batch holds i64.
    let typed: Vec<(String, ArrayD<i32>)> = batch.inputs.iter().map(|(n, a)| (n.clone(), a.mapv(|v| v as i32))).collect();
    let inputs: Vec<(&str, InputTensor<'_>)> = typed.iter().map(|(n, a)| (n.as_str(), InputTensor::I32(a.view()))).collect();
    session.run(&inputs, None).unwrap().into_iter().map(|(n, t): (String, OutputTensor)| (n, t.to_f32().unwrap())).collect()
}

fn max_abs_diff(a: &ArrayD<f32>, b: &ArrayD<f32>) -> f32 {
    assert_eq!(a.shape(), b.shape());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
#[ignore = "needs a CUDA GPU and the onnxruntime-gpu library (ORT_DYLIB_PATH)"]
fn cuda_sessions_run_on_the_device_asked_for_and_match_the_cpu_within_1e_4_of_each_outputs_scale() {
    assert!(has_cuda(), "ORT_DYLIB_PATH must name the onnxruntime-gpu library");
    let mut gpu = Session::from_file(default_model("model.onnx"), &options(Provider::Cuda { device: 0 })).unwrap();
    assert_eq!((gpu.provider(), gpu.cuda_device()), ("CUDAExecutionProvider", Some(0)));
    let mut cpu = Session::from_file(default_model("model.onnx"), &options(Provider::Cpu)).unwrap();
    let (g, c) = (run_reference(&mut gpu), run_reference(&mut cpu));
    // Summation order differs between the two providers, so an FP32 output
    // differs in its last bits relative to its own magnitude: raw hidden
    // states reach several units, logits and pooled embeddings stay near 1.
    for ((name, a), (_, b)) in g.iter().zip(&c) {
        let d = max_abs_diff(a, b);
        let scale = b.iter().fold(1f32, |m, v| m.max(v.abs()));
        println!("{name}: CUDA vs CPU FP32 max abs diff {d:.3e}, largest |value| {scale:.3}");
        assert!(d <= 1e-4 * scale, "{name}: {d} (scale {scale})");
    }
    let auto = Session::from_file(default_model("model.onnx"), &options(Provider::Auto)).unwrap();
    assert_eq!(auto.cuda_device(), Some(0));
}

#[test]
#[ignore = "needs a CUDA GPU and the onnxruntime-gpu library (ORT_DYLIB_PATH)"]
fn a_device_index_past_the_last_gpu_is_no_such_device() {
    let count = cuda_device_count().unwrap();
    match Session::from_file(default_model("model.onnx"), &options(Provider::Cuda { device: count as u32 + 7 })) {
        Err(Error::NoSuchDevice { device, count: c }) => assert_eq!((device, c), (count as u32 + 7, count)),
        other => panic!("expected NoSuchDevice, got {other:?}"),
    }
}
