//! trt-serve's dispatch over a scheduling test double (no model runs): the
//! direct path and the dynamic-batching path bound what waits (503 at once
//! past the bound), enforce queue timeouts while the model is busy, and the
//! batching path serves Triton's priority 1 before priority 2.
//!
//! The backend is `ScriptedBackendDouble` (tests/batching_doubles.rs): a
//! test double whose batches wait at a gate the test opens.

mod common;
#[path = "batching_doubles.rs"]
mod doubles;

use std::sync::Arc;
use std::time::Duration;

use doubles::{double_layout, ScriptedBackendDouble};
use trt_nlp::{Head, TextModel, TokenizerPipeline};
use trt_serve::config::ModelConfig;
use trt_serve::test_support::dispatch::Dispatcher;
use trt_serve::test_support::text_model::ConfiguredModel;
use trt_serve::Limits;
use trt_serve::ServeError;

fn dispatcher(extra: &str, limits: &Limits) -> (Arc<ScriptedBackendDouble>, Dispatcher) {
    let backend = Arc::new(ScriptedBackendDouble::new(double_layout(1, 4, 64), 1));
    let config = ModelConfig::parse(
        &format!(
            "platform: \"onnxruntime_onnx\" max_batch_size: 4\n\
             input [ {{ name: \"text\" data_type: TYPE_STRING dims: [ 1 ] }} ]\n\
             output [ {{ name: \"logits\" data_type: TYPE_FP32 dims: [ 2 ] }}, {{ name: \"embedding\" data_type: TYPE_FP32 dims: [ 2 ] }} ]\n{extra}"
        ),
        "double",
    )
    .unwrap();
    let tokenizer = common::generated("models/minilm/tokenizer.json");
    let pipeline = TokenizerPipeline::builder(64).from_file(tokenizer).unwrap();
    let model = ConfiguredModel::new(&config, TextModel::new(backend.clone(), pipeline, Head::default())).unwrap();
    (backend, Dispatcher::new(Arc::new(model), &config, limits, "model 'double' version 1".into()).unwrap())
}

fn text(s: &str) -> Vec<String> {
    vec![s.to_string()]
}

/// Waits (at most 10 s) until `n` requests are inside the dispatcher, then
/// a little longer for the last one to reach its queue.
async fn wait_pending(d: &Dispatcher, n: usize) {
    bounded(async {
        while d.pending() < n {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    tokio::time::sleep(Duration::from_millis(20)).await;
}

async fn bounded<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f).await.expect("finished within 20 s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_path_refuses_past_its_bound_and_times_out_while_busy() {
    let limits = Limits { max_queue: 1, ..Limits::default() };
    let (backend, d) = dispatcher("", &limits);
    let d = Arc::new(d);
    let first = tokio::spawn({
        let d = d.clone();
        async move { d.run(text("first"), 0, None).await }
    });
    backend.wait_started(1);
    // One may wait (max_queue 1); it asks for a 50 ms queue timeout.
    let waiting = tokio::spawn({
        let d = d.clone();
        async move { d.run(text("second"), 0, Some(50_000)).await }
    });
    wait_pending(&d, 2).await;
    let refused = d.run(text("third"), 0, None).await.unwrap_err();
    assert!(matches!(&refused, ServeError::Unavailable(m) if m.contains("overloaded")), "{refused}");
    // The model stays busy: the waiting request times out at its deadline.
    let timed_out = bounded(waiting).await.unwrap().unwrap_err();
    assert!(matches!(&timed_out, ServeError::Unavailable(m) if m.contains("timed out")), "{timed_out}");
    backend.open();
    let ran = bounded(first).await.unwrap().unwrap();
    assert_eq!(
        ran.tensors.iter().map(|t| (t.name.as_str(), t.shape.clone())).collect::<Vec<_>>(),
        [("logits", vec![1, 2]), ("embedding", vec![1, 2])]
    );
    assert_eq!(backend.ran().len(), 1, "the timed-out request was not computed");
    assert_eq!(d.pending(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batching_path_refuses_past_its_queue_and_serves_priority_one_first() {
    let batching = "dynamic_batching { priority_levels: 2 default_priority_level: 2 max_queue_delay_microseconds: 0 \
                    default_queue_policy { max_queue_size: 2 } }";
    // max_queue_size counts requests; with max_batch_size 4 the scheduler holds 8 rows.
    let (backend, d) = dispatcher(batching, &Limits::default());
    let d = Arc::new(d);
    let spawn = |s: &'static str, priority: u64| {
        let d = d.clone();
        tokio::spawn(async move { d.run(vec![s.to_string(); 4], priority, None).await })
    };
    let first = spawn("first", 0);
    backend.wait_started(1);
    let low = spawn("low", 2);
    wait_pending(&d, 2).await;
    let high = spawn("high", 1);
    wait_pending(&d, 3).await;
    let refused = d.run(vec!["over".to_string(); 4], 0, None).await.unwrap_err();
    assert!(matches!(&refused, ServeError::Unavailable(m) if m.contains("overloaded")), "{refused}");
    backend.allow(2); // `first`, then the next batch the scheduler cuts
    bounded(first).await.unwrap().unwrap();
    bounded(high).await.unwrap().unwrap();
    assert!(!low.is_finished(), "priority 2 ran before priority 1");
    backend.open();
    let ran = bounded(low).await.unwrap().unwrap();
    assert_eq!(ran.tensors[0].shape, [4, 2]);
    assert_eq!(backend.ran().len(), 3);
}
