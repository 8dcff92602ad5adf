//! The ONNX Runtime backend on CUDA (IO binding, one stream per session,
//! CUDA graphs per bucket) against the same backend on the CPU.
//!
//! Every test here needs a CUDA GPU and the onnxruntime-gpu library
//! (`ORT_DYLIB_PATH`): they are ignored here, each with its reason, and run on the GPU host with
//! `--include-ignored`. Elsewhere they are skipped with that reason.

#[path = "nlp_support.rs"]
mod support;

use std::sync::Arc;

use support::{default_model, reference, reference_texts};
use trt_nlp::backend::onnxruntime::{OrtBackend, OrtBackendOptions, Provider};
use trt_nlp::backend::Backend;
use trt_nlp::backend::BackendOptions;
use trt_nlp::{Classifier, Embedder, HelperOptions, Pooling};

fn backend(file: &str, provider: Provider, graphs: usize) -> Arc<OrtBackend> {
    let options = OrtBackendOptions::default().with_provider(provider).with_intra_threads(4).with_cuda_graph_max_batch(graphs);
    Arc::new(OrtBackend::new(default_model(file), &options.into()).unwrap())
}

/// Logits and mean-pooled embeddings of `texts`, in batches of `batch`.
fn outputs(b: Arc<OrtBackend>, texts: &[String], batch: usize) -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let c = Classifier::new(b.clone(), default_model("tokenizer.json"), Default::default(), &HelperOptions::default()).unwrap();
    let logits = texts.chunks(batch).flat_map(|t| c.predict(t, 1).unwrap()).map(|g| g.logits).collect();
    let e = Embedder::new(b, default_model("tokenizer.json"), Pooling::Mean, true, &HelperOptions::default()).unwrap();
    let emb = texts.chunks(batch).flat_map(|t| e.embed(t).unwrap().outer_iter().map(|r| r.to_vec()).collect::<Vec<_>>()).collect();
    (logits, emb)
}

fn max_diff(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).flat_map(|(x, y)| x.iter().zip(y).map(|(p, q)| (p - q).abs())).fold(0.0, f32::max)
}

/// Texts of many lengths (the reference texts, repeated with more words).
fn texts() -> Vec<String> {
    let base = reference_texts(&reference());
    (0..40).map(|i| format!("{} {}", base[i % base.len()], "and then some more words ".repeat(i % 7))).collect()
}

#[test]
#[ignore = "needs a CUDA GPU and the onnxruntime-gpu library (ORT_DYLIB_PATH)"]
fn cuda_fp32_matches_the_cpu_within_1e_4() {
    let texts = texts();
    let gpu = backend("model.onnx", Provider::Cuda { device: 0 }, 0);
    assert_eq!((gpu.provider(), gpu.cuda_device()), ("CUDAExecutionProvider", Some(0)));
    let (gl, ge) = outputs(gpu, &texts, 8);
    let (cl, ce) = outputs(backend("model.onnx", Provider::Cpu, 0), &texts, 8);
    let (dl, de) = (max_diff(&gl, &cl), max_diff(&ge, &ce));
    println!("CUDA FP32 vs CPU FP32 over {} texts: logits max abs diff {dl:.3e}, embeddings {de:.3e}", texts.len());
    assert!(dl <= 1e-4 && de <= 1e-4, "{dl} {de}");
}

#[test]
#[ignore = "needs a CUDA GPU and the onnxruntime-gpu library (ORT_DYLIB_PATH)"]
fn cuda_fp16_model_is_within_2e_3_of_fp32() {
    let texts = texts();
    let (hl, he) = outputs(backend("model_fp16.onnx", Provider::Cuda { device: 0 }, 0), &texts, 8);
    let (fl, fe) = outputs(backend("model.onnx", Provider::Cpu, 0), &texts, 8);
    let (dl, de) = (max_diff(&hl, &fl), max_diff(&he, &fe));
    println!("CUDA FP16 vs CPU FP32 over {} texts: logits max abs diff {dl:.3e}, embeddings {de:.3e}", texts.len());
    assert!(dl <= 2e-3 && de <= 2e-3, "{dl} {de}");
}

#[test]
#[ignore = "needs a CUDA GPU and the onnxruntime-gpu library (ORT_DYLIB_PATH)"]
fn bound_buffers_keep_their_addresses_and_nothing_is_rebound_or_allocated_after_warm_up() {
    let texts = texts();
    let gpu = backend("model.onnx", Provider::Cuda { device: 0 }, 0);
    let device = trt_cuda::Device::new(0).unwrap();
    let (warm, _) = outputs(gpu.clone(), &texts, 8);
    let before = gpu.bindings();
    let free_before = device.free_memory().unwrap();
    for _ in 0..5 {
        let (again, _) = outputs(gpu.clone(), &texts, 8);
        assert_eq!(max_diff(&again, &warm), 0.0, "the same batches give the same logits");
    }
    let after = gpu.bindings();
    let free_after = device.free_memory().unwrap();
    let addresses = |b: &[(Vec<trt_nlp::backend::onnxruntime::BoundTensor>, u64, u64)]| {
        let mut v: Vec<(String, bool, u64)> =
            b.iter().flat_map(|(t, _, _)| t.iter().map(|t| (t.name.clone(), t.output, t.address))).collect();
        v.sort();
        v
    };
    println!("bound: {:?}", addresses(&after));
    let counts = |b: &[(Vec<trt_nlp::backend::onnxruntime::BoundTensor>, u64, u64)]| b.iter().map(|b| (b.1, b.2)).collect::<Vec<_>>();
    println!(
        "(bind calls, values made) before/after the 5 repeats: {:?} / {:?}; device free memory {} -> {} bytes",
        counts(&before),
        counts(&after),
        free_before,
        free_after
    );
    assert_eq!(addresses(&before), addresses(&after), "device buffers moved");
    assert!(!after.is_empty() && after.iter().all(|(t, _, _)| t.len() == 5), "3 inputs and 2 outputs bound per session");
    // Shapes seen in warm-up reuse their values: bind calls only, nothing made.
    assert_eq!(before.iter().map(|b| b.2).collect::<Vec<_>>(), after.iter().map(|b| b.2).collect::<Vec<_>>(), "values made after warm-up");
    assert_eq!(free_before, free_after, "device memory was allocated after warm-up");
}

#[test]
#[ignore = "needs a CUDA GPU and the onnxruntime-gpu library (ORT_DYLIB_PATH)"]
fn cuda_graphs_replay_the_bucket_of_each_batch() {
    let texts = texts();
    let plain = backend("model.onnx", Provider::Cuda { device: 0 }, 0);
    let graphs = backend("model.onnx", Provider::Cuda { device: 0 }, 32);
    assert_eq!(graphs.capabilities().sequence_multiple, 8);
    // Batches of 1, 3, 5 and 8 rows (buckets 1, 4, 8, 8) at several lengths, twice:
    // the second pass replays graphs captured in the first.
    for batch in [1, 3, 5, 8, 3, 1] {
        let (pl, pe) = outputs(plain.clone(), &texts, batch);
        let (gl, ge) = outputs(graphs.clone(), &texts, batch);
        let (dl, de) = (max_diff(&gl, &pl), max_diff(&ge, &pe));
        println!("batch {batch}: CUDA graphs vs plain CUDA: logits {dl:.3e}, embeddings {de:.3e}");
        assert!(dl <= 1e-4 && de <= 1e-4, "batch {batch}: {dl} {de}");
    }
    let bound = graphs.bindings();
    let shapes: Vec<Vec<usize>> = bound[0].0.iter().filter(|t| !t.output).map(|t| t.shape.clone()).collect();
    assert!(shapes.iter().all(|s| s[0].is_power_of_two() && s[1] % 8 == 0), "bucket shapes: {shapes:?}");
}

#[test]
#[ignore = "needs a CUDA GPU and the onnxruntime-gpu library (ORT_DYLIB_PATH)"]
fn row_buckets_pad_batches_to_their_bucket_and_change_no_output() {
    let texts = texts();
    let plain = backend("model.onnx", Provider::Cuda { device: 0 }, 0);
    let options =
        OrtBackendOptions::default().with_provider(Provider::Cuda { device: 0 }).with_intra_threads(4).with_cuda_row_buckets(true);
    let bucketed = Arc::new(OrtBackend::new(default_model("model.onnx"), &options.into()).unwrap());
    assert_eq!(bucketed.capabilities().sequence_multiple, 8);
    // 11, 13 and 17 rows run as 16, 16 and 32 (the largest batch is 32).
    for batch in [11, 13, 17] {
        let (pl, pe) = outputs(plain.clone(), &texts, batch);
        let (bl, be) = outputs(bucketed.clone(), &texts, batch);
        let (dl, de) = (max_diff(&bl, &pl), max_diff(&be, &pe));
        println!("batch {batch}: row buckets vs plain CUDA: logits {dl:.3e}, embeddings {de:.3e}");
        assert!(dl <= 1e-4 && de <= 1e-4, "batch {batch}: {dl} {de}");
    }
    let bound = bucketed.bindings();
    let shapes: Vec<Vec<usize>> = bound[0].0.iter().filter(|t| !t.output).map(|t| t.shape.clone()).collect();
    assert!(shapes.iter().all(|s| s[0].is_power_of_two() && s[1] % 8 == 0), "bucket shapes: {shapes:?}");
}

#[test]
#[ignore = "needs a CUDA GPU and the onnxruntime-gpu library (ORT_DYLIB_PATH)"]
fn the_fused_fp16_model_on_cuda_is_within_2e_3_of_fp32() {
    // ONNX Runtime's fused attention with a token-count mask, on the GPU's own kernels.
    let texts = texts();
    let (fl, fe) = outputs(backend("model_fp16_fused.onnx", Provider::Cuda { device: 0 }, 0), &texts, 8);
    let (cl, ce) = outputs(backend("model.onnx", Provider::Cpu, 0), &texts, 8);
    let (dl, de) = (max_diff(&fl, &cl), max_diff(&fe, &ce));
    println!("fused FP16 on CUDA vs FP32 on the CPU over {} texts: logits max abs diff {dl:.3e}, embeddings {de:.3e}", texts.len());
    assert!(dl <= 2e-3 && de <= 2e-3, "{dl} {de}");
}

#[test]
#[ignore = "needs a CUDA GPU and the onnxruntime-gpu library (ORT_DYLIB_PATH)"]
fn a_batch_past_the_memory_limit_fails_alone_and_the_session_keeps_serving() {
    // 1 GiB holds the weights and a short batch; 256 rows of 512 tokens need
    // several GiB of attention scores alone.
    let options = BackendOptions::default()
        .with_max_batch(256)
        .with_max_seq(512)
        .with_onnxruntime(OrtBackendOptions::default().with_provider(Provider::Cuda { device: 0 }).with_cuda_memory_limit(Some(1 << 30)));
    let gpu: Arc<OrtBackend> = Arc::new(OrtBackend::new(default_model("model.onnx"), &options).unwrap());
    let e = Embedder::new(gpu, default_model("tokenizer.json"), Pooling::Mean, true, &HelperOptions::default()).unwrap();
    let short = texts();
    let first = e.embed(&short[..4]).unwrap();
    let long = vec!["many words in a row ".repeat(200); 256];
    let err = e.embed(&long).expect_err("a batch past the session's memory limit fails");
    println!("a 256 x 512 batch under a 1 GiB limit: {err}");
    assert!(matches!(err, trt_nlp::Error::Onnx(trt_onnx::Error::OutOfDeviceMemory { .. })), "typed as out of device memory: {err:?}");
    let again = e.embed(&short[..4]).unwrap();
    let diff = first.iter().zip(again.iter()).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    assert!(diff <= 1e-6, "the session serves the same answers after the failed batch ({diff})");
}

#[test]
#[ignore = "needs a CUDA GPU and the onnxruntime-gpu library (ORT_DYLIB_PATH)"]
fn a_session_whose_weights_pass_the_memory_limit_is_out_of_device_memory() {
    // The default model's FP32 weights are ~90 MB; 16 MiB cannot hold them.
    let options = OrtBackendOptions::default().with_provider(Provider::Cuda { device: 0 }).with_cuda_memory_limit(Some(16 << 20));
    let err = OrtBackend::new(default_model("model.onnx"), &options.into()).expect_err("the weights do not fit 16 MiB");
    println!("a session under a 16 MiB limit: {err}");
    assert!(matches!(err, trt_nlp::Error::Onnx(trt_onnx::Error::OutOfDeviceMemory { .. })), "typed as out of device memory: {err:?}");
}

#[test]
#[ignore = "needs a CUDA GPU and the onnxruntime-gpu library (ORT_DYLIB_PATH)"]
fn embeddings_pooled_in_the_graph_on_cuda_match_host_pooling_on_the_cpu() {
    use trt_nlp::backend::onnxruntime::GraphPooling;
    let texts = texts();
    let tok = default_model("tokenizer.json");
    let cpu = Embedder::new(backend("model.onnx", Provider::Cpu, 0), &tok, Pooling::Mean, true, &HelperOptions::default()).unwrap();
    let want = cpu.embed(&texts).unwrap();
    for graphs in [0, 8] {
        let ort = OrtBackendOptions::default()
            .with_provider(Provider::Cuda { device: 0 })
            .with_cuda_graph_max_batch(graphs)
            .with_graph_pooling(Some(GraphPooling::new(Pooling::Mean, true)));
        let options = BackendOptions::from(ort).with_max_batch(8).with_max_seq(128).with_instances(2);
        let gpu: Arc<OrtBackend> = Arc::new(OrtBackend::new(default_model("model.onnx"), &options).unwrap());
        assert!(gpu.layout().outputs.iter().any(|o| o.is_pooled()), "the pooled output was added on CUDA");
        let e = Embedder::new(gpu, &tok, Pooling::Mean, true, &HelperOptions::default()).unwrap();
        let got = e.embed(&texts).unwrap();
        let d = got.iter().zip(want.iter()).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
        println!("pooled in the graph on CUDA (graphs up to {graphs}) vs host pooling on the CPU: max abs diff {d:.3e}");
        assert!(d < 1e-4, "{d}");
    }
}
