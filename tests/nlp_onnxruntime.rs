//! The text helpers end to end on ONNX Runtime (the reference backend): the
//! embedded default model, classified and embedded from Rust, against the
//! outputs Python onnxruntime wrote when `scripts/setup` made the model.
//! Runs on any machine, CI included (no GPU).

#[path = "nlp_support.rs"]
mod support;

use std::sync::Arc;

use support::{default_model, max_abs_diff, reference, reference_rows, reference_texts};
use trt_nlp::backend::onnxruntime::{OrtBackend, OrtBackendOptions};
use trt_nlp::backend::{Backend, BackendChoice, BackendOptions};
use trt_nlp::{Classifier, Embedder, Error, HelperOptions, ModelFolder, Pooling, TextModel};

fn ort(file: &str, options: &BackendOptions) -> Arc<dyn Backend> {
    Arc::new(OrtBackend::new(default_model(file), options).unwrap())
}

/// FP32 on ONNX Runtime from Rust equals Python's (same library, same graph):
/// within 1e-5.
#[test]
fn fp32_logits_and_embeddings_match_python_onnxruntime() {
    let r = reference();
    let texts = reference_texts(&r);
    let backend = ort("model.onnx", &OrtBackendOptions::default().with_intra_threads(1).into());
    let labels = trt_nlp::Labels::from_config_file(default_model("config.json")).unwrap();
    let c = Classifier::new(backend.clone(), default_model("tokenizer.json"), labels, &HelperOptions::default()).unwrap();
    let got = c.predict(&texts, 2).unwrap();
    let d = max_abs_diff(got.iter().map(|g| g.logits.as_slice()), &reference_rows(&r, "fp32", "logits"));
    println!("fp32 logits: max abs diff vs Python onnxruntime {d:.3e}");
    assert!(d < 1e-5, "{d}");
    for g in &got {
        let p: f32 = g.top.iter().map(|p| p.score).sum();
        assert!((p - 1.0).abs() < 1e-5 && g.top[0].score >= g.top[1].score);
        assert!(g.top[0].label.starts_with("LABEL_"));
    }

    let e = Embedder::new(backend, default_model("tokenizer.json"), Pooling::Mean, true, &HelperOptions::default()).unwrap();
    let emb = e.embed(&texts).unwrap();
    let rows: Vec<&[f32]> = emb.rows().into_iter().map(|r| r.to_slice().unwrap()).collect();
    let d = max_abs_diff(rows, &reference_rows(&r, "fp32", "embeddings"));
    println!("fp32 embeddings: max abs diff vs Python onnxruntime {d:.3e}");
    assert!(d < 1e-5, "{d}");
}

/// The FP16 model (f16 outputs) through the same helpers: within FP16
/// tolerance of Python's FP16 outputs, and close to FP32.
#[test]
fn fp16_model_matches_python_within_fp16_tolerance() {
    let r = reference();
    let texts = reference_texts(&r);
    let backend = ort("model_fp16.onnx", &OrtBackendOptions::default().into());
    let c = Classifier::new(backend.clone(), default_model("tokenizer.json"), Default::default(), &HelperOptions::default()).unwrap();
    let got = c.predict(&texts, 1).unwrap();
    let d16 = max_abs_diff(got.iter().map(|g| g.logits.as_slice()), &reference_rows(&r, "fp16", "logits"));
    let d32 = max_abs_diff(got.iter().map(|g| g.logits.as_slice()), &reference_rows(&r, "fp32", "logits"));
    println!("fp16 logits: max abs diff vs Python fp16 {d16:.3e}, vs fp32 {d32:.3e}");
    assert!(d16 < 1e-3 && d32 < 5e-3, "{d16} {d32}");

    let e = Embedder::new(backend, default_model("tokenizer.json"), Pooling::Mean, true, &HelperOptions::default()).unwrap();
    let emb = e.embed(&texts).unwrap();
    let want = reference_rows(&r, "fp32", "embeddings");
    let min_cos = emb.rows().into_iter().zip(&want).map(|(a, b)| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>()).fold(1f32, f32::min);
    println!("fp16 embeddings: min cosine vs fp32 {min_cos:.6}");
    assert!(min_cos > 0.999, "{min_cos}");
}

/// Batches are cut at the backend's largest batch; results do not depend on
/// the cut (padding to the longest text of each batch changes nothing).
#[test]
fn batches_split_at_max_batch_give_the_same_results() {
    let r = reference();
    let texts = reference_texts(&r);
    let small = ort("model.onnx", &BackendOptions::default().with_max_batch(2));
    assert_eq!(small.layout().max_batch, 2);
    let e = Embedder::new(small, default_model("tokenizer.json"), Pooling::Mean, true, &HelperOptions::default()).unwrap();
    let emb = e.embed(&texts).unwrap();
    let rows: Vec<&[f32]> = emb.rows().into_iter().map(|r| r.to_slice().unwrap()).collect();
    let d = max_abs_diff(rows, &reference_rows(&r, "fp32", "embeddings"));
    assert!(d < 1e-5, "{d}");
    // One text alone equals its row of the batch.
    let one = e.embed(&texts[3..4]).unwrap();
    let d = max_abs_diff([one.row(0).to_slice().unwrap()], &reference_rows(&r, "fp32", "embeddings")[3..4]);
    assert!(d < 1e-5, "{d}");
    assert_eq!(e.embed::<&str>(&[]).unwrap().shape(), [0, 0]);
}

/// From a model folder, backend auto: on a machine where TensorRT cannot
/// execute (no CUDA driver here; CC 9.0 on the GPU host) it is ONNX Runtime.
#[test]
fn a_model_folder_opens_with_backend_auto() {
    let dir = default_model("model.onnx").parent().unwrap().to_owned();
    let folder = ModelFolder::open(&dir).unwrap();
    assert_eq!(folder.model.file_name().unwrap(), "model.onnx");
    assert_eq!(folder.max_positions, Some(512));
    assert_eq!(folder.labels.name(1), "LABEL_1");
    let c = Classifier::open(&dir, BackendChoice::Auto, &BackendOptions::default(), &HelperOptions::default()).unwrap();
    if !trt_cuda::driver_available() {
        assert_eq!(c.backend().name(), "onnxruntime");
    }
    println!("backend auto chose {}", c.backend().name());
    let got = c.classify(&["This is a test."], 2).unwrap();
    assert_eq!(got[0].len(), 2);
    let e =
        Embedder::open(default_model("model_fp16.onnx"), BackendChoice::OnnxRuntime, &BackendOptions::default(), &HelperOptions::default())
            .unwrap();
    assert_eq!(e.embed(&["a", "b"]).unwrap().shape(), [2, 384]);
}

/// The text model from a model folder: raw and pooled outputs selected by
/// name in one run, equal to Python onnxruntime's and to its own `embed`
/// and `classify`; run in batches of 2 (the backend's largest), the rows
/// come back in the caller's order with hidden states padded to the longest.
#[test]
fn a_text_model_runs_raw_and_pooled_outputs_selected_by_name() {
    let r = reference();
    let texts = reference_texts(&r);
    let dir = default_model("model.onnx").parent().unwrap().to_owned();
    let options = BackendOptions::default().with_max_batch(2);
    let model = TextModel::open_with(&dir, BackendChoice::OnnxRuntime, &options, &HelperOptions::default()).unwrap();
    assert_eq!(model.max_batch(), 2);
    assert_eq!(model.labels().name(0), "LABEL_0");
    let selection = model.select(&["logits", "embedding", "last_hidden_state"]).unwrap();
    let out = model.run(&texts, &selection).unwrap();
    let names: Vec<&str> = out.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["logits", "embedding", "last_hidden_state"]);
    let rows = |name: &str| {
        let t = out.get(name).unwrap();
        (0..t.rows()).map(|i| t.row(i).unwrap().to_vec()).collect::<Vec<_>>()
    };
    let d = max_abs_diff(rows("logits").iter().map(Vec::as_slice), &reference_rows(&r, "fp32", "logits"));
    let d = d.max(max_abs_diff(rows("embedding").iter().map(Vec::as_slice), &reference_rows(&r, "fp32", "embeddings")));
    println!("TextModel::run vs Python onnxruntime: max abs diff {d:.3e}");
    assert!(d < 1e-5, "{d}");
    let hidden = out.get("last_hidden_state").unwrap();
    assert_eq!((hidden.shape[0], hidden.shape[2]), (texts.len(), 384));
    assert!(out.compute > std::time::Duration::ZERO);

    let embedded = model.embed(&texts).unwrap();
    let d = max_abs_diff(embedded.rows().into_iter().map(|r| r.to_slice().unwrap()), &rows("embedding"));
    assert!(d < 1e-5, "{d}");
    let classified = model.classify(&texts, 1).unwrap();
    let d = max_abs_diff(classified.iter().map(|c| c.logits.as_slice()), &rows("logits"));
    assert!(d < 1e-5, "{d}");

    let e = model.select(&["nope"]).unwrap_err();
    assert!(matches!(&e, Error::NoSuchOutput { name, available } if name == "nope" && available.iter().any(|a| a == "logits")), "{e}");
    assert!(model.run::<&str>(&[], &selection).is_err());
}

/// Many threads share one classifier (a pool of two sessions).
#[test]
fn many_threads_share_one_classifier() {
    let r = reference();
    let texts = reference_texts(&r);
    let want = reference_rows(&r, "fp32", "logits");
    let backend = ort(
        "model.onnx",
        &BackendOptions::default().with_instances(2).with_onnxruntime(OrtBackendOptions::default().with_intra_threads(1)),
    );
    let c = Classifier::new(backend, default_model("tokenizer.json"), Default::default(), &HelperOptions::default()).unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let (c, texts, want) = (&c, &texts, &want);
            s.spawn(move || {
                let i = t % texts.len();
                let got = c.predict(&texts[i..i + 1], 1).unwrap();
                let d = max_abs_diff([got[0].logits.as_slice()], &want[i..i + 1]);
                assert!(d < 1e-5, "thread {t}: {d}");
            });
        }
    });
}

/// Bad input is a typed error naming what was wrong; nothing panics.
#[test]
fn bad_models_and_texts_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    // A truncated ONNX file.
    let bytes = std::fs::read(default_model("model.onnx")).unwrap();
    let cut = dir.path().join("cut.onnx");
    std::fs::write(&cut, &bytes[..bytes.len() / 3]).unwrap();
    let e = OrtBackend::new(&cut, &BackendOptions::default()).unwrap_err();
    assert!(matches!(e, Error::Onnx(_)) && e.to_string().contains("cut.onnx"), "{e}");
    // Random bytes.
    let junk = dir.path().join("junk.onnx");
    std::fs::write(&junk, b"definitely not a protobuf \x00\xff\x13").unwrap();
    assert!(OrtBackend::new(&junk, &BackendOptions::default()).is_err());
    // A missing file.
    let e = OrtBackend::new(dir.path().join("nope.onnx"), &BackendOptions::default()).unwrap_err();
    assert!(e.to_string().contains("nope.onnx"), "{e}");
    // A folder without a model, a model without a tokenizer beside it.
    assert!(ModelFolder::open(dir.path()).unwrap_err().to_string().contains("no model file"));
    let lone = dir.path().join("model.onnx");
    std::fs::copy(default_model("model.onnx"), &lone).unwrap();
    assert!(ModelFolder::open(&lone).unwrap_err().to_string().contains("tokenizer.json"));
    // A plan asked of ONNX Runtime.
    let e = trt_nlp::backend::open(&dir.path().join("m.plan"), BackendChoice::OnnxRuntime, &BackendOptions::default()).unwrap_err();
    assert!(e.to_string().contains("plan"), "{e}");
    // Over-long texts: truncated by default, refused when asked, with the text's index.
    let backend = ort("model.onnx", &BackendOptions::default().with_max_seq(64));
    let long = "word ".repeat(5000);
    let c = Classifier::new(backend.clone(), default_model("tokenizer.json"), Default::default(), &HelperOptions::default()).unwrap();
    assert_eq!(c.classify(&[long.as_str()], 1).unwrap().len(), 1);
    let strict = HelperOptions::default().with_reject_long_texts(true);
    let c = Classifier::new(backend.clone(), default_model("tokenizer.json"), Default::default(), &strict).unwrap();
    let e = c.classify(&["fine", long.as_str()], 1).unwrap_err();
    assert!(matches!(e, Error::TooLong { index: 1, .. }), "{e}");
    // A model whose input is not a token tensor (the external-weights test model takes 'x').
    let other = support::deps_dir().join("models/test/external_weights.onnx");
    let e = OrtBackend::new(&other, &BackendOptions::default()).unwrap_err();
    assert!(matches!(&e, Error::UnsupportedModel { reason } if reason.contains("'x' is not a token tensor")), "{e}");
}

/// The cross-encoder of scripts/make_cross_encoder.py: pair logits and the
/// rerank order from Rust equal Python tokenizers + onnxruntime's.
#[test]
fn cross_encoder_scores_pairs_and_reranks_like_python() {
    let dir = support::deps_dir().join("models/cross-encoder");
    assert!(dir.join("model.onnx").exists(), "{} is missing: run scripts/setup", dir.display());
    let c = Classifier::open(&dir, BackendChoice::OnnxRuntime, &BackendOptions::default(), &HelperOptions::default()).unwrap();
    let query = "What is Deep Learning?";
    let texts =
        ["Deep Learning is a branch of machine learning.", "The stock market fell sharply.", "", "日本語のテキスト", &"long ".repeat(600)];
    let code = r#"
import json, sys
import numpy as np, onnxruntime as ort, tokenizers
req = json.load(sys.stdin)
tok = tokenizers.Tokenizer.from_file(req["dir"] + "/tokenizer.json")
tok.no_padding(); tok.enable_truncation(512)
s = ort.InferenceSession(req["dir"] + "/model.onnx", providers=["CPUExecutionProvider"])
out = []
for t in req["texts"]:
    e = tok.encode(req["query"], t)
    f = {k: np.array([v], dtype=np.int32) for k, v in (("input_ids", e.ids), ("attention_mask", e.attention_mask), ("token_type_ids", e.type_ids))}
    out.append(float(s.run(["logits"], f)[0][0][0]))
json.dump(out, sys.stdout)
"#;
    let want = support::run_python(&["-c".as_ref(), code.as_ref()], &serde_json::json!({"dir": dir, "query": query, "texts": texts}));
    let want: Vec<f32> = want.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
    let pairs: Vec<(&str, &str)> = texts.iter().map(|t| (query, *t)).collect();
    let got = c.score_pairs(&pairs, trt_nlp::PairTruncation::LongestFirst).unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g.len(), 1, "one logit");
        assert!((g[0] - w).abs() < 1e-5, "pair {i}: {} vs Python {w}", g[0]);
    }
    let ranked = c.rerank(query, &texts, true).unwrap();
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by(|&a, &b| want[b].total_cmp(&want[a]));
    assert_eq!(ranked.iter().map(|r| r.index).collect::<Vec<_>>(), order);
    let sig = c.rerank(query, &texts, false).unwrap();
    assert!(sig.iter().all(|r| (r.score - 1.0 / (1.0 + (-want[r.index]).exp())).abs() < 1e-5));
}

/// Sentence embeddings pooled inside the graph (the output a GPU backend
/// adds so one row per text crosses back) equal pooling on the host, for
/// mean and first-token pooling, normalised or not; the added output is not
/// one of the model's own (raw selections, logits) and serves only the
/// pooling it was built for. Several sessions embed in parallel the same.
#[test]
fn sentence_embeddings_pooled_in_the_graph_equal_host_pooling() {
    use trt_nlp::backend::onnxruntime::{GraphPooling, GRAPH_POOLED_OUTPUT};
    use trt_nlp::{Selection, Source, EMBEDDING};
    let r = reference();
    let texts = reference_texts(&r);
    let host = ort("model.onnx", &OrtBackendOptions::default().with_intra_threads(1).into());
    for (pooling, normalize) in [(Pooling::Mean, true), (Pooling::Mean, false), (Pooling::Cls, true)] {
        let graph_pooling = Some(GraphPooling::new(pooling, normalize).with_on_cpu(true));
        let in_graph = ort(
            "model.onnx",
            &BackendOptions::default()
                .with_instances(2)
                .with_onnxruntime(OrtBackendOptions::default().with_intra_threads(1).with_graph_pooling(graph_pooling)),
        );
        let layout = in_graph.layout();
        let added = layout.outputs.iter().find(|o| o.name == GRAPH_POOLED_OUTPUT).expect("the pooled output is in the layout");
        assert_eq!(added.rank, 2);
        assert!(added.is_pooled());
        let hidden = layout.output_of_rank(3).expect("the hidden states").name.clone();
        assert_eq!(layout.pooled_output(&hidden, pooling, normalize), Some(added), "pooled as asked");
        assert!(!Selection::raw(layout).names().any(|n| n == GRAPH_POOLED_OUTPUT), "not a raw output of the model");
        assert_eq!(layout.output_of_rank(2).map(|o| o.name.as_str()), Some("logits"));
        let selection = Selection::embedding(layout, pooling, normalize).unwrap();
        assert_eq!(selection.outputs()[0].source, Source::Raw(GRAPH_POOLED_OUTPUT.into()));
        let other = Selection::by_names(layout, &[EMBEDDING], pooling, !normalize).unwrap();
        assert!(matches!(other.outputs()[0].source, Source::Pooled(_)), "another pooling pools on the host");

        let tok = default_model("tokenizer.json");
        let want = Embedder::new(host.clone(), &tok, pooling, normalize, &HelperOptions::default()).unwrap().embed(&texts).unwrap();
        let got = Embedder::new(in_graph, &tok, pooling, normalize, &HelperOptions::default()).unwrap().embed(&texts).unwrap();
        assert_eq!(got.dim(), want.dim());
        let d = got.iter().zip(want.iter()).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
        println!("{pooling:?} normalize {normalize}: in the graph vs on the host, {} texts, max abs diff {d:.3e}", texts.len());
        assert!(d < 1e-5, "{d}");
    }
}
