//! The batching scheduler end to end on ONNX Runtime with the embedded
//! default model (all-MiniLM-L6-v2 with a 2-label head): many threads and
//! many async tasks at once, every row's outputs equal to an unbatched call
//! of the same text within float tolerance (padding invariance). Runs on any
//! machine, CI included (no GPU); needs `scripts/setup`.

#[path = "block_on.rs"]
mod block_on;
#[path = "nlp_support.rs"]
mod support;

use std::sync::Arc;
use std::time::Duration;

use ndarray::{ArrayD, Axis, Slice};
use support::default_model;
use trt_nlp::backend::onnxruntime::{OrtBackend, OrtBackendOptions};
use trt_nlp::backend::{Backend, BackendOptions};
use trt_nlp::batching::{BatchingConfig, Handle, Request, Response, Scheduler};
use trt_nlp::{Embedder, EncodedBatch, Head, HelperOptions, Pooling, Selection, TextModel, TokenizerPipeline};

const TOLERANCE: f32 = 1e-4;

fn texts() -> Vec<String> {
    let mut t = support::reference_texts(&support::reference());
    let words = ["batching", "keeps", "the", "accelerator", "busy", "while", "short", "texts", "wait", "briefly"];
    t.extend((0..40).map(|i| {
        let n = 1 + (i * 7) % 45;
        (0..n).map(|j| words[(i + j) % words.len()]).collect::<Vec<_>>().join(" ")
    }));
    t
}

/// Each text alone (batch 1) straight on the backend: `(logits, last_hidden_state [len, 384])`.
fn unbatched(backend: &dyn Backend, pipeline: &TokenizerPipeline, text: &str) -> (ArrayD<f32>, ArrayD<f32>) {
    let mut out = None;
    backend
        .run(&mut |batch: &mut EncodedBatch<'_>| pipeline.encode_into(&[text], batch), &mut |layout, outputs| {
            let len = layout.lengths[0];
            let logits = outputs.get("logits")?.to_f32().index_axis_move(Axis(0), 0);
            let hidden = outputs.get("last_hidden_state")?.to_f32().index_axis_move(Axis(0), 0);
            out = Some((logits, hidden.slice_axis(Axis(0), Slice::from(..len)).to_owned()));
            Ok(())
        })
        .unwrap();
    out.unwrap()
}

fn max_diff(a: &ArrayD<f32>, b: &ArrayD<f32>) -> f32 {
    assert_eq!(a.shape(), b.shape());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

fn check(response: &Response, expected: &(ArrayD<f32>, ArrayD<f32>)) -> f32 {
    let r = &response.rows()[0];
    let d = max_diff(r.output("logits").unwrap(), &expected.0).max(max_diff(r.output("last_hidden_state").unwrap(), &expected.1));
    assert!(d < TOLERANCE, "batched outputs differ from unbatched by {d}");
    d
}

#[test]
fn many_threads_and_async_tasks_get_the_outputs_of_unbatched_calls() {
    let backend: Arc<dyn Backend> = Arc::new(
        OrtBackend::new(
            default_model("model.onnx"),
            &BackendOptions::default().with_instances(2).with_onnxruntime(OrtBackendOptions::default().with_intra_threads(1)),
        )
        .unwrap(),
    );
    let pipeline = Arc::new(HelperOptions::default().with_threads(Some(1)).pipeline(&default_model("tokenizer.json"), &*backend).unwrap());
    let texts = texts();
    let expected: Vec<_> = texts.iter().map(|t| unbatched(&*backend, &pipeline, t)).collect();

    let mut config = BatchingConfig::default();
    config.max_batch_size = 16;
    config.max_queue_delay = Duration::from_millis(20);
    let scheduler = Scheduler::new(backend.clone(), pipeline.clone(), config).unwrap();
    let mut worst = 0f32;
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (s, texts, expected) = (&scheduler, &texts, &expected);
                scope.spawn(move || {
                    let mut worst = 0f32;
                    for i in (t..texts.len()).step_by(4) {
                        let r = s.submit(Request::text(texts[i].clone())).unwrap().wait().unwrap();
                        worst = worst.max(check(&r, &expected[i]));
                    }
                    worst
                })
            })
            .collect();
        let handles: Vec<Handle> = texts.iter().map(|t| scheduler.submit(Request::text(t.clone())).unwrap()).collect();
        for (i, r) in block_on::block_on_all(handles, Duration::from_secs(60)).into_iter().enumerate() {
            worst = worst.max(check(&r.unwrap(), &expected[i]));
        }
        for t in threads {
            worst = worst.max(t.join().unwrap());
        }
    });
    let m = scheduler.metrics();
    println!(
        "batched vs unbatched: max abs diff {worst:.2e} over {} rows in {} batches (mean {:.1} rows), padding efficiency {:.3}",
        m.inferences,
        m.executions,
        m.mean_batch_size().unwrap(),
        m.padding_efficiency().unwrap()
    );
    assert_eq!(m.succeeded as usize, 2 * texts.len());
    assert!(m.executions < m.inferences, "no two requests shared a batch");

    // A caller can pool a row itself: mean pooling over its `length` positions equals the Embedder's.
    let embedder = Embedder::with_pipeline(
        backend,
        TokenizerPipeline::builder(pipeline.max_len()).threads(1).from_file(default_model("tokenizer.json")).unwrap(),
        Pooling::Mean,
        false,
    )
    .unwrap();
    let direct = embedder.embed(&texts[..3]).unwrap();
    let r = scheduler.submit(Request::texts(texts[..3].to_vec())).unwrap().wait().unwrap();
    for (i, row) in r.rows().iter().enumerate() {
        let hidden = row.output("last_hidden_state").unwrap();
        assert_eq!(hidden.shape()[0], row.length);
        let pooled = hidden.mean_axis(Axis(0)).unwrap();
        let d = pooled.iter().zip(direct.row(i)).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(d < TOLERANCE, "mean pooling of row {i} differs from the Embedder's by {d}");
    }
}

/// A request that selects pooled outputs gets pooled rows back from the
/// workers (no hidden states leave the scheduler), equal to the text
/// model's own `embed` and `classify`; requests without a selection in the
/// same batches still get every raw output. A selection made for another
/// model is refused at submit, typed.
#[test]
fn a_request_that_selects_pooled_outputs_gets_pooled_rows() {
    let backend: Arc<dyn Backend> = Arc::new(
        OrtBackend::new(
            default_model("model.onnx"),
            &BackendOptions::default().with_instances(2).with_onnxruntime(OrtBackendOptions::default().with_intra_threads(1)),
        )
        .unwrap(),
    );
    let pipeline = HelperOptions::default().with_threads(Some(1)).pipeline(&default_model("tokenizer.json"), &*backend).unwrap();
    let model = TextModel::new(backend.clone(), pipeline, Head::default());
    let texts = texts();
    let embeddings = model.embed(&texts).unwrap();
    let classes = model.classify(&texts, 1).unwrap();

    let mut config = BatchingConfig::default();
    config.max_batch_size = 16;
    config.max_queue_delay = Duration::from_millis(20);
    let scheduler = Scheduler::for_model(&model, config).unwrap();
    let pooled = Arc::new(model.select(&["embedding", "logits"]).unwrap());
    let handles: Vec<(Handle, Handle)> = texts
        .chunks(3)
        .map(|chunk| {
            let selected = scheduler.submit(Request::texts(chunk.to_vec()).select(pooled.clone())).unwrap();
            let raw = scheduler.submit(Request::texts(chunk.to_vec())).unwrap();
            (selected, raw)
        })
        .collect();
    let mut worst = 0f32;
    for (c, (selected, raw)) in handles.into_iter().enumerate() {
        let selected = selected.wait().unwrap();
        for (k, row) in selected.rows().iter().enumerate() {
            let i = c * 3 + k;
            let names: Vec<&str> = row.outputs.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(names, ["embedding", "logits"]);
            let e = row.output("embedding").unwrap();
            assert_eq!(e.shape(), [384]);
            let d = e.iter().zip(embeddings.row(i)).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
            let l = row.output("logits").unwrap();
            let d = l.iter().zip(&classes[i].logits).map(|(a, b)| (a - b).abs()).fold(d, f32::max);
            assert!(d < TOLERANCE, "row {i}: pooled rows differ from the text model's by {d}");
            worst = worst.max(d);
        }
        let stacked = selected.stacked().unwrap();
        assert_eq!(stacked[0].shape, [selected.rows().len(), 384]);
        assert_eq!(stacked[1].shape, [selected.rows().len(), 2]);
        let raw = raw.wait().unwrap();
        assert!(raw.rows()[0].output("last_hidden_state").is_some() && raw.rows()[0].output("embedding").is_none());
    }
    println!("pooled rows from the scheduler vs TextModel::embed/classify: max abs diff {worst:.2e}");

    let mut other = backend.layout().clone();
    other.outputs[0].name = "not_this_model".into();
    let foreign = Arc::new(Selection::raw(&other));
    let e = scheduler.submit(Request::text("x").select(foreign)).unwrap_err();
    assert!(matches!(e, trt_nlp::batching::SubmitError::Invalid(_)), "{e:?}");
    scheduler.shutdown();
}
