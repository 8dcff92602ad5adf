//! `trt serve`'s placement of a model's instances on GPUs (`instance_group`
//! `KIND_GPU` and its `gpus`), through the server's loader and the real ONNX
//! Runtime CUDA backend: one device instance per listed GPU behind the
//! least-loaded dispatcher, each labelled with its GPU's UUID (the per-GPU
//! metrics' `gpu_uuid`), outputs equal to the CPU's, and a GPU past the last
//! one a load error naming it.
//!
//! Every test here needs a CUDA GPU and the onnxruntime-gpu library
//! (`ORT_DYLIB_PATH`): they are ignored here, each with its reason, and run
//! on the GPU host with `--include-ignored`. A machine with one GPU places
//! two device instances on it by listing it twice (`gpus: [ 0, 0 ]`); what
//! two GPUs would measure (one batch per GPU at once) needs a host with two.

mod common;
// The process helpers there serve the client tests; this file uses the repository layout only.
#[allow(dead_code)]
#[path = "common/serve.rs"]
mod serve;

use std::sync::Arc;
use std::time::Duration;

use trt_nlp::backend::onnxruntime::cuda_device_count;
use trt_nlp::batching::{BatchingConfig, Request, Scheduler};
use trt_nlp::TextModel;
use trt_serve::config::ModelConfig;
use trt_serve::test_support::metrics::{instance_text, GpuWork};
use trt_serve::test_support::repository::VersionLoader;
use trt_serve::NlpLoader;
use trt_serve::{ServeError, ServeResult};

const NEEDS: &str = "needs a CUDA GPU and the onnxruntime-gpu library (ORT_DYLIB_PATH)";

/// The default model, served with `instance_group [ groups ]`, opened by the
/// server's loader (the repository folder lives as long as the model).
fn load(groups: &str) -> (tempfile::TempDir, ServeResult<TextModel>) {
    let minilm = serve::minilm(&common::deps());
    let repo = tempfile::tempdir().unwrap();
    let text = serve::text_config("onnxruntime_onnx", 8, &[("embedding", "384")], &format!("instance_group [ {groups} ]"));
    serve::add_model(repo.path(), "m", &text, &minilm, ("model.onnx", None));
    let config = ModelConfig::parse(&text, "m").unwrap();
    let model = NlpLoader::default().load(&config, &repo.path().join("m"), &repo.path().join("m").join("1"));
    (repo, model)
}

fn texts() -> Vec<String> {
    (0..12).map(|i| format!("sentence number {i} on a GPU {}", "with more words ".repeat(i % 4))).collect()
}

fn max_diff(a: &ndarray::Array2<f32>, b: &ndarray::Array2<f32>) -> f32 {
    assert_eq!(a.shape(), b.shape());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

fn uuids(model: &TextModel) -> Vec<String> {
    model.backend().device_instances().into_iter().map(|m| m.gpu_uuid.expect("a GPU member has a UUID")).collect()
}

#[test]
#[ignore = "needs a CUDA GPU and the onnxruntime-gpu library (ORT_DYLIB_PATH)"]
fn kind_gpu_on_gpu_0_serves_and_matches_the_cpu() {
    let (_repo, gpu) = load("{ count: 1 kind: KIND_GPU gpus: [ 0 ] }");
    let gpu = gpu.unwrap_or_else(|e| panic!("{NEEDS}: {e}"));
    let (_repo_cpu, cpu) = load("{ count: 1 kind: KIND_CPU }");
    let cpu = cpu.unwrap();
    let texts = texts();
    let (g, c) = (gpu.embed(&texts[..4]).unwrap(), cpu.embed(&texts[..4]).unwrap());
    let d = max_diff(&g, &c);
    println!("KIND_GPU gpus [0] vs KIND_CPU, 4 texts: embeddings max abs diff {d:.3e}; GPU {:?}", uuids(&gpu));
    assert!(d <= 1e-4, "{d}");
    let members = gpu.backend().device_instances();
    assert_eq!(members.len(), 1);
    assert!(members[0].gpu_uuid.as_deref().is_some_and(|u| u.starts_with("GPU-")), "{members:?}");
    assert_eq!((members[0].batches, members[0].failures), (1, 0));
    assert!(cpu.backend().device_instances().is_empty(), "KIND_CPU is not placed on a GPU");
    // The per-GPU metrics: one series, under the GPU's UUID; none for the CPU model.
    let text = instance_text(&[
        ("gpu".into(), "1".into(), GpuWork::per_gpu(&members)),
        ("cpu".into(), "1".into(), GpuWork::per_gpu(&cpu.backend().device_instances())),
    ]);
    let uuid = members[0].gpu_uuid.clone().unwrap();
    assert!(text.contains(&format!("trt_serve_instance_exec_count{{gpu_uuid=\"{uuid}\",model=\"gpu\",version=\"1\"}} 1\n")), "{text}");
    assert!(!text.contains("model=\"cpu\""), "{text}");
}

#[test]
#[ignore = "needs a CUDA GPU and the onnxruntime-gpu library (ORT_DYLIB_PATH)"]
fn gpu_0_listed_twice_is_two_device_instances_and_batches_go_to_both() {
    let (_repo, model) = load("{ count: 1 kind: KIND_GPU gpus: [ 0, 0 ] }");
    let model = model.unwrap_or_else(|e| panic!("{NEEDS}: {e}"));
    assert_eq!((model.instances(), model.backend().capabilities().devices), (2, 2));
    let u = uuids(&model);
    assert_eq!(u[0], u[1], "both on GPU 0");
    // One at a time: every member idle at each choice, so they take turns.
    let texts = texts();
    for chunk in texts.chunks(3) {
        model.embed(chunk).unwrap();
    }
    let members = model.backend().device_instances();
    assert_eq!(members.iter().map(|m| (m.batches, m.rows, m.failures)).collect::<Vec<_>>(), [(2, 6, 0), (2, 6, 0)], "{members:?}");
    let work = GpuWork::per_gpu(&members);
    assert_eq!((work.len(), work[0].executions, work[0].inferences), (1, 4, 12), "one GPU's series adds up its instances");
    // Many callers through one batcher: every request served, the work spread over both.
    let mut config = BatchingConfig::default();
    config.max_batch_size = 8;
    let scheduler = Arc::new(Scheduler::for_model(&model, config).unwrap());
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let (s, texts) = (scheduler.clone(), texts.clone());
            std::thread::spawn(move || {
                for i in 0..16 {
                    let mut h = s.submit(Request::text(texts[(t + i) % texts.len()].clone())).unwrap();
                    h.wait_timeout(Duration::from_secs(60)).expect("served within 60 s").unwrap();
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let m = scheduler.metrics();
    let members = model.backend().device_instances();
    println!(
        "gpus [0, 0] under 8 callers: {} requests in {} batches; per member (batches, rows): {:?}",
        m.succeeded,
        m.executions,
        members.iter().map(|m| (m.batches - 2, m.rows - 6)).collect::<Vec<_>>()
    );
    assert_eq!(m.succeeded, 128);
    assert_eq!(members.iter().map(|m| m.batches - 2).sum::<u64>(), m.executions);
    assert!(members.iter().all(|m| m.failures == 0));
}

#[test]
#[ignore = "needs a CUDA GPU and the onnxruntime-gpu library (ORT_DYLIB_PATH)"]
fn kind_gpu_without_gpus_places_count_instances_on_every_visible_gpu() {
    let visible = cuda_device_count().unwrap_or_else(|e| panic!("{NEEDS}: {e}"));
    let (_repo, model) = load("{ count: 2 kind: KIND_GPU }");
    let model = model.unwrap();
    let members = model.backend().device_instances();
    assert_eq!(members.len(), visible);
    assert!(members.iter().all(|m| m.instances == 2), "{members:?}");
    assert_eq!(model.instances(), 2 * visible);
    model.embed(&texts()).unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU and the onnxruntime-gpu library (ORT_DYLIB_PATH)"]
fn a_gpu_past_the_last_one_is_a_load_error_naming_it() {
    let visible = cuda_device_count().unwrap_or_else(|e| panic!("{NEEDS}: {e}"));
    let (_repo, model) = load(&format!("{{ count: 1 kind: KIND_GPU gpus: [ 0, {visible} ] }}"));
    let e = model.unwrap_err();
    assert!(matches!(e, ServeError::InvalidArgument(_)), "{e:?}");
    assert!(e.to_string().contains(&format!("lists GPU {visible}, but this machine has {visible} GPU")), "{e}");
}
