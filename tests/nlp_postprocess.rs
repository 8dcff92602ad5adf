//! Post-processing (softmax, top-k, pooling, L2 norm) against NumPy.
//!
//! Runs on the CPU (no GPU). Needs `scripts/setup`: the `.deps/venv` Python
//! with numpy computes the references, and `.deps/minilm` provides real config
//! files; fails, saying so, when they are missing.

#[path = "nlp_support.rs"]
mod support;

use half::f16;
use ndarray::{array, Array2, Array3, ArrayView2, ArrayView3};
use serde_json::{json, Value};
use trt_nlp::{cls_pool, l2_normalize, mean_pool, softmax, top_k, Error, Labels, Pooling};

/// NumPy references, in float32, the sentence-transformers / PyTorch way.
const NUMPY_REFERENCE: &str = r#"
import json, sys
import numpy as np
req = json.load(sys.stdin)
logits = np.array(req["logits"], dtype=np.float32)
hidden = np.array(req["hidden"], dtype=np.float32)
mask = np.array(req["mask"], dtype=np.float32)
e = np.exp(logits - logits.max(axis=1, keepdims=True))
probs = e / e.sum(axis=1, keepdims=True)
topk = np.argsort(-probs, axis=1, kind="stable")[:, : req["k"]]
m = mask[:, :, None]
mean = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
def l2(x):
    return x / np.clip(np.linalg.norm(x, axis=1, keepdims=True), 1e-12, None)
json.dump({"probs": probs.tolist(), "topk": topk.tolist(), "mean": mean.tolist(),
           "mean_l2": l2(mean).tolist(), "cls_l2": l2(hidden[:, 0, :]).tolist()}, sys.stdout)
"#;

/// Deterministic pseudo-random values in [-scale, scale).
fn values(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

struct Case {
    logits: Array2<f32>,
    hidden: Array3<f32>,
    mask: Array2<i64>,
}

/// 4 texts, 7 classes (with a tie and large logits), seq 6, dim 5; text 3 has no token.
fn case() -> Case {
    let mut logits = Array2::from_shape_vec((4, 7), values(28, 1, 8.0)).unwrap();
    logits.row_mut(1).fill(0.25); // all tied
    logits[[2, 3]] = 500.0; // would overflow exp without the max shift
    let hidden = Array3::from_shape_vec((4, 6, 5), values(120, 2, 3.0)).unwrap();
    let mask = array![[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]];
    Case { logits, hidden, mask }
}

fn numpy(case: &Case, k: usize) -> Value {
    let to_json = |v: ArrayView2<'_, f32>| v.rows().into_iter().map(|r| r.to_vec()).collect::<Vec<_>>();
    let hidden: Vec<_> = case.hidden.outer_iter().map(to_json).collect();
    let mask: Vec<Vec<i64>> = case.mask.rows().into_iter().map(|r| r.to_vec()).collect();
    let request = json!({"logits": to_json(case.logits.view()), "hidden": hidden, "mask": mask, "k": k});
    support::run_python(&["-c".as_ref(), NUMPY_REFERENCE.as_ref()], &request)
}

fn assert_close(got: ArrayView2<'_, f32>, want: &Value, tol: f32, what: &str) {
    let want: Vec<Vec<f32>> = serde_json::from_value(want.clone()).unwrap();
    assert_eq!(got.nrows(), want.len(), "{what}: rows");
    for (i, (g, w)) in got.rows().into_iter().zip(&want).enumerate() {
        assert_eq!(g.len(), w.len(), "{what}: row {i} length");
        for (j, (a, b)) in g.iter().zip(w).enumerate() {
            assert!((a - b).abs() <= tol * (1.0 + b.abs()), "{what}[{i}][{j}]: {a} vs numpy {b}");
        }
    }
}

fn to_f16_2(a: &Array2<f32>) -> Array2<f16> {
    a.mapv(f16::from_f32)
}

fn to_f16_3(a: &Array3<f32>) -> Array3<f16> {
    a.mapv(f16::from_f32)
}

#[test]
fn f32_matches_numpy() {
    let c = case();
    let want = numpy(&c, 3);
    let probs = softmax(c.logits.view());
    assert_close(probs.view(), &want["probs"], 1e-6, "softmax");
    assert!(probs.rows().into_iter().all(|r| (r.sum() - 1.0).abs() < 1e-5));

    let top = top_k(probs.view(), 3, &Labels::default());
    let idx: Vec<Vec<usize>> = top.iter().map(|r| r.iter().map(|p| p.index).collect()).collect();
    let want_idx: Vec<Vec<usize>> = serde_json::from_value(want["topk"].clone()).unwrap();
    assert_eq!(idx, want_idx, "top-k order, ties to the lower index");
    assert_eq!(top[2][0].label, "LABEL_3");
    assert_eq!(top[2][0].score, probs[[2, 3]]);

    let mut mean = mean_pool(c.hidden.view(), c.mask.view()).unwrap();
    assert_close(mean.view(), &want["mean"], 1e-5, "mean pool");
    l2_normalize(mean.view_mut());
    assert_close(mean.view(), &want["mean_l2"], 1e-5, "mean pool + l2");

    let mut cls = cls_pool(c.hidden.view()).unwrap();
    l2_normalize(cls.view_mut());
    assert_close(cls.view(), &want["cls_l2"], 1e-5, "cls pool + l2");
}

#[test]
fn f16_inputs_match_numpy_on_the_same_values() {
    let c = case();
    // Round to f16 first, then compare with NumPy on exactly those values.
    let logits16 = to_f16_2(&c.logits);
    let hidden16 = to_f16_3(&c.hidden);
    let rounded = Case { logits: logits16.mapv(f16::to_f32), hidden: hidden16.mapv(f16::to_f32), mask: c.mask.clone() };
    let want = numpy(&rounded, 7);
    assert_close(softmax(logits16.view()).view(), &want["probs"], 1e-6, "f16 softmax");
    let mut mean = Pooling::Mean.pool(hidden16.view(), c.mask.view()).unwrap();
    assert_close(mean.view(), &want["mean"], 1e-5, "f16 mean pool");
    l2_normalize(mean.view_mut());
    assert_close(mean.view(), &want["mean_l2"], 1e-5, "f16 mean pool + l2");
    let top = top_k(logits16.view(), 7, &Labels::default());
    assert!(top.iter().all(|r| r.len() == 7));
}

#[test]
fn zero_length_rows_give_zero_vectors_not_nan() {
    let c = case();
    let mut mean = mean_pool(c.hidden.view(), c.mask.view()).unwrap();
    l2_normalize(mean.view_mut());
    assert!(mean.iter().all(|x| x.is_finite()));
    assert!(mean.row(3).iter().all(|&x| x == 0.0));
}

#[test]
fn hand_computed_values() {
    let p = softmax(array![[0.0f32, 0.0, 0.0, 0.0], [1000.0, 0.0, -1000.0, f32::NEG_INFINITY]].view());
    assert_eq!(p.row(0).to_vec(), vec![0.25; 4]);
    assert_eq!(p.row(1).to_vec(), vec![1.0, 0.0, 0.0, 0.0]);

    let hidden = array![[[2.0f32, 4.0], [4.0, 8.0], [100.0, 100.0]]];
    assert_eq!(mean_pool(hidden.view(), array![[1i32, 1, 0]].view()).unwrap(), array![[3.0f32, 6.0]]);
    assert_eq!(mean_pool(hidden.view(), array![[true, false, false]].view()).unwrap(), array![[2.0f32, 4.0]]);
    assert_eq!(Pooling::Cls.pool(hidden.view(), array![[0u8, 0, 0]].view()).unwrap(), array![[2.0f32, 4.0]]);

    // k larger than the classes, and k = 0.
    let top = top_k(array![[0.2f32, 0.8]].view(), 5, &Labels::from_names(["no", "yes"]));
    assert_eq!(top[0].iter().map(|p| p.label.as_str()).collect::<Vec<_>>(), ["yes", "no"]);
    assert!(top_k(array![[0.2f32, 0.8]].view(), 0, &Labels::default())[0].is_empty());
}

#[test]
fn shape_mismatches_are_errors() {
    let hidden = Array3::<f32>::zeros((2, 3, 4));
    let mask = Array2::<i64>::ones((2, 4));
    let err = mean_pool(hidden.view(), mask.view()).unwrap_err();
    assert!(matches!(&err, Error::Shape { expected, got, .. } if *expected == [2, 3] && *got == [2, 4]), "{err}");
    assert!(Pooling::Cls.pool(hidden.view(), mask.view()).is_err());
    let empty: ArrayView3<'_, f32> = ArrayView3::from_shape((2, 0, 4), &[]).unwrap();
    assert!(matches!(cls_pool(empty), Err(Error::Shape { .. })));
    // An empty batch is fine.
    let none: ArrayView3<'_, f32> = ArrayView3::from_shape((0, 3, 4), &[]).unwrap();
    assert_eq!(mean_pool(none, Array2::<i32>::zeros((0, 3)).view()).unwrap().dim(), (0, 4));
}

#[test]
fn labels_and_pooling_from_model_files() {
    // all-MiniLM-L6-v2's config.json has no id2label: transformers' LABEL_i.
    let labels = Labels::from_config_file(support::minilm_file("config.json")).unwrap();
    assert!(labels.is_empty());
    assert_eq!(labels.name(1), "LABEL_1");
    assert_eq!(Pooling::from_config_file(support::minilm_file("1_Pooling/config.json")).unwrap(), Pooling::Mean);

    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.json");
    std::fs::write(&cfg, r#"{"id2label": {"0": "anger", "2": "joy"}, "num_labels": 3}"#).unwrap();
    let labels = Labels::from_config_file(&cfg).unwrap();
    assert_eq!((labels.name(0), labels.name(1), labels.name(2)), ("anger".into(), "LABEL_1".into(), "joy".into()));

    std::fs::write(&cfg, r#"{"id2label": {"zero": "x"}}"#).unwrap();
    assert!(matches!(Labels::from_config_file(&cfg), Err(Error::Config { path, .. }) if path == cfg));
    assert!(matches!(Labels::from_config_file(dir.path().join("missing.json")), Err(Error::Io { .. })));

    let pooling = dir.path().join("pooling.json");
    std::fs::write(&pooling, r#"{"pooling_mode_cls_token": true}"#).unwrap();
    assert_eq!(Pooling::from_config_file(&pooling).unwrap(), Pooling::Cls);
    std::fs::write(&pooling, r#"{"pooling_mode_max_tokens": true}"#).unwrap();
    assert!(matches!(Pooling::from_config_file(&pooling), Err(Error::UnsupportedModel { .. })));
}
