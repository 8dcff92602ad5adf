//! The model repository over a loader test double (versions run on
//! `ScriptedBackendDouble`, a scheduling test double from
//! tests/batching_doubles.rs; no model runs): version switch and memory
//! release after the last request, unload that drains, a failed reload that
//! keeps serving, invalid configs failing only their model with the field
//! named, model names that cannot leave the repository, and a model placed
//! on two device instances (one broken) with its per-GPU metrics.

mod common;
#[path = "batching_doubles.rs"]
mod doubles;

use std::path::Path;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use doubles::{double_layout, ScriptedBackendDouble};
use trt_nlp::backend::{DeviceInstance, LeastLoaded};
use trt_nlp::{Head, TextModel, TokenizerPipeline};
use trt_serve::config::ModelConfig;
use trt_serve::test_support::metrics::Metrics;
use trt_serve::test_support::repository::{Repository, VersionLoader};
use trt_serve::test_support::service::Service;
use trt_serve::Limits;
use trt_serve::{ServeError, ServeResult};

/// Loader test double: every version runs on an open ScriptedBackendDouble.
struct DoubleLoader;

impl VersionLoader for DoubleLoader {
    fn load(&self, _config: &ModelConfig, _model_dir: &Path, version_dir: &Path) -> ServeResult<TextModel> {
        if version_dir.join("broken").exists() {
            return Err(ServeError::Unavailable("this version is broken (test double)".into()));
        }
        let backend = Arc::new(ScriptedBackendDouble::new(double_layout(1, 4, 64), 1));
        backend.open();
        let pipeline = TokenizerPipeline::builder(64).from_file(common::generated("models/minilm/tokenizer.json")).unwrap();
        Ok(TextModel::new(backend, pipeline, Head::default()))
    }
}

const CONFIG: &str = "platform: \"onnxruntime_onnx\" max_batch_size: 4\n\
    input [ { name: \"text\" data_type: TYPE_STRING dims: [ 1 ] } ]\n\
    output [ { name: \"logits\" data_type: TYPE_FP32 dims: [ 2 ] } ]\n";

fn add(root: &Path, name: &str, config: &str, versions: &[u64]) {
    std::fs::create_dir_all(root.join(name)).unwrap();
    std::fs::write(root.join(name).join("config.pbtxt"), config).unwrap();
    for v in versions {
        std::fs::create_dir_all(root.join(name).join(v.to_string())).unwrap();
    }
}

fn repository(root: &Path, drain: Duration) -> Repository {
    Repository::new(root, Limits { drain_timeout: drain, ..Limits::default() }, Arc::new(DoubleLoader)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_switch_keeps_requests_on_their_version_and_frees_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    add(dir.path(), "m", CONFIG, &[1]);
    let repo = repository(dir.path(), Duration::from_millis(300));
    repo.load_all().await;
    let in_flight = repo.resolve("m", None).unwrap();
    assert_eq!(in_flight.version, 1);
    let v1: Weak<_> = Arc::downgrade(&in_flight);

    std::fs::create_dir_all(dir.path().join("m/2")).unwrap();
    let started = Instant::now();
    repo.load("m").await.unwrap();
    // The load waited (bounded) for the request holding version 1, then returned.
    assert!(started.elapsed() >= Duration::from_millis(300), "the switch did not drain");
    assert_eq!(repo.resolve("m", None).unwrap().version, 2, "new requests go to version 2");
    assert!(matches!(repo.resolve("m", Some("1")), Err(ServeError::NotFound(_))));
    // The request in flight still runs on version 1, whose memory lives until it is done.
    let ran = in_flight.text().unwrap().run(vec!["still on one".into()], 0, None).await.unwrap();
    assert_eq!(ran.tensors[0].shape, [1, 2]);
    assert!(v1.upgrade().is_some());
    drop(in_flight);
    assert!(v1.upgrade().is_none(), "version 1 was not released after its last request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unload_refuses_new_requests_and_waits_for_those_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    add(dir.path(), "m", CONFIG, &[1]);
    let repo = Arc::new(repository(dir.path(), Duration::from_secs(10)));
    repo.load_all().await;
    let in_flight = repo.resolve("m", None).unwrap();
    let unload = tokio::spawn({
        let repo = repo.clone();
        async move { repo.unload("m").await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!unload.is_finished(), "unload returned with a request in flight");
    let refused = repo.resolve("m", None).unwrap_err();
    assert!(matches!(&refused, ServeError::Unavailable(m) if m.contains("unloaded")), "{refused}");
    drop(in_flight);
    tokio::time::timeout(Duration::from_secs(10), unload).await.unwrap().unwrap().unwrap();
    let index = repo.index(false);
    assert_eq!((index[0].state, index[0].reason.as_str()), ("UNAVAILABLE", "unloaded"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_configs_and_versions_fail_alone_and_a_failed_reload_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    add(root, "good", CONFIG, &[1]);
    add(root, "bad", &CONFIG.replace("max_batch_size: 4", "max_batch_size: -1"), &[1]);
    add(root, "mixed", &format!("{CONFIG}version_policy: {{ all {{ }} }}"), &[1, 2]);
    std::fs::write(root.join("mixed/2/broken"), "").unwrap();
    let repo = repository(root, Duration::from_secs(1));
    repo.load_all().await;
    assert_eq!(repo.resolve("good", None).unwrap().version, 1);
    let bad = repo.resolve("bad", None).unwrap_err().to_string();
    assert!(bad.contains("config.pbtxt line 1: max_batch_size"), "{bad}");
    // One broken version leaves the other serving, and the index says why.
    assert_eq!(repo.resolve("mixed", None).unwrap().version, 1);
    let rows: Vec<_> = repo.index(false).into_iter().map(|e| (e.name, e.version, e.state, e.reason)).collect();
    assert!(rows.contains(&("mixed".into(), "2".into(), "UNAVAILABLE", "this version is broken (test double)".into())), "{rows:?}");
    assert!(rows.iter().any(|r| r.0 == "bad" && r.2 == "UNAVAILABLE" && r.3.contains("max_batch_size")), "{rows:?}");
    // A reload with a broken config fails and leaves version 1 of `good` in place.
    std::fs::write(root.join("good/config.pbtxt"), "platform: \"nope\"").unwrap();
    let e = repo.load("good").await.unwrap_err();
    assert!(e.to_string().contains("platform: 'nope' is not served"), "{e}");
    assert_eq!(repo.resolve("good", None).unwrap().version, 1);
    assert!(!repo.all_ready(), "'bad' has no ready version, so the server is not ready");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_names_cannot_leave_the_repository() {
    let outside = tempfile::tempdir().unwrap();
    add(outside.path(), "secret", CONFIG, &[1]);
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("link")).unwrap();
    let repo = repository(dir.path(), Duration::from_secs(1));
    for name in ["../secret", "..", ".", "", "a/b", "a\\b", "x\0y"] {
        let e = repo.load(name).await.unwrap_err();
        assert!(matches!(e, ServeError::InvalidArgument(_)), "{name:?}: {e}");
    }
    let e = repo.load("link").await.unwrap_err();
    assert!(e.to_string().contains("does not resolve to a folder inside the repository"), "{e}");
    assert!(matches!(repo.load("absent").await, Err(ServeError::NotFound(_))));
}

/// Loader test double for placement: every version runs on two open
/// ScriptedBackendDoubles behind trt-nlp's LeastLoaded, labelled as two
/// GPUs; the test breaks one after the load (a GPU that fails).
#[derive(Default)]
struct TwoGpuDoubleLoader {
    doubles: std::sync::Mutex<Vec<Arc<ScriptedBackendDouble>>>,
}

impl VersionLoader for TwoGpuDoubleLoader {
    fn load(&self, _config: &ModelConfig, _model_dir: &Path, _version_dir: &Path) -> ServeResult<TextModel> {
        let mut doubles = self.doubles.lock().unwrap();
        let members = (0..2)
            .map(|i| {
                let backend = Arc::new(ScriptedBackendDouble::new(double_layout(1, 4, 64), 1));
                backend.open();
                doubles.push(backend.clone());
                DeviceInstance { backend, gpu_uuid: Some(format!("GPU-double-{i}")) }
            })
            .collect();
        let pipeline = TokenizerPipeline::builder(64).from_file(common::generated("models/minilm/tokenizer.json")).unwrap();
        Ok(TextModel::new(Arc::new(LeastLoaded::new(members).unwrap()), pipeline, Head::default()))
    }
}

/// The value of the sample `name{gpu_uuid="uuid",model="m",version="1"}` in `text`.
fn per_gpu(text: &str, name: &str, uuid: &str) -> u64 {
    let prefix = format!("{name}{{gpu_uuid=\"{uuid}\",model=\"m\",version=\"1\"}} ");
    let line = text.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("no {prefix} in {text}"));
    line[prefix.len()..].parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_gpu_fails_only_its_batches_and_metrics_count_work_per_gpu_uuid() {
    let dir = tempfile::tempdir().unwrap();
    add(dir.path(), "m", &format!("{CONFIG}instance_group [ {{ count: 1 }} ]\n"), &[1]);
    let loader = Arc::new(TwoGpuDoubleLoader::default());
    let repo = Arc::new(Repository::new(dir.path(), Limits::default(), loader.clone()).unwrap());
    repo.load_all().await;
    // The warm-up ran each of its three shapes on each device instance.
    let doubles = loader.doubles.lock().unwrap().clone();
    let warm: Vec<Vec<usize>> = doubles.iter().map(|d| d.ran().iter().map(|b| b.tags.len()).collect()).collect();
    assert_eq!(warm, [vec![1, 4, 1], vec![1, 4, 1]]);
    doubles[1].fail_every_batch(true);
    let service = Service { repository: repo.clone(), metrics: Arc::new(Metrics::new()) };
    let v = repo.resolve("m", None).unwrap();
    let text = v.text().unwrap();
    // One at a time: GPU 0, then GPU 1 (its turn; it fails), then GPU 0 only while it has room.
    text.run(vec!["first".into()], 0, None).await.unwrap();
    let e = text.run(vec!["second".into()], 0, None).await.unwrap_err();
    assert!(e.to_string().contains("fails every batch"), "{e}");
    for t in ["third", "fourth", "fifth"] {
        text.run(vec![t.into()], 0, None).await.unwrap();
    }
    let m = service.metrics_text();
    // Counted from the load on: three warm-up batches (6 rows) on each, then the requests.
    assert_eq!(per_gpu(&m, "trt_serve_instance_exec_count", "GPU-double-0"), 3 + 4);
    assert_eq!(per_gpu(&m, "trt_serve_instance_inference_count", "GPU-double-0"), 6 + 4);
    assert_eq!(per_gpu(&m, "trt_serve_instance_failure_count", "GPU-double-0"), 0);
    assert_eq!(per_gpu(&m, "trt_serve_instance_exec_count", "GPU-double-1"), 3 + 1);
    assert_eq!(per_gpu(&m, "trt_serve_instance_inference_count", "GPU-double-1"), 6);
    assert_eq!(per_gpu(&m, "trt_serve_instance_failure_count", "GPU-double-1"), 1);
    assert_eq!(per_gpu(&m, "trt_serve_instance_pending_batch_count", "GPU-double-1"), 0);
    assert!(m.contains("# TYPE trt_serve_instance_exec_count counter"), "{m}");
}
