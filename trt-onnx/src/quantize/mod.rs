//! INT8 post-training quantization with explicit Q/DQ, the form TensorRT
//! 10+, 11 and TensorRT-RTX build from.
//!
//! | module | what |
//! |---|---|
//! | [`calibrate`] | histograms of |x| and the minmax / entropy / percentile calibrators |
//! | [`qdq`] | which MatMuls are quantized and where Q/DQ nodes go |
//! | [`smooth`] | SmoothQuant: per-channel scales moving activation outliers into the weights |
//! | [`cache`] | the scales in TensorRT's calibration-cache text format |
//!
//! [`quantize`] runs the whole job: the FP32 model on ONNX Runtime over the
//! calibration batches with the needed tensors exposed as outputs, optional
//! smoothing (then a second pass over the smoothed tensors), Q/DQ on every
//! eligible weighted MatMul (symmetric per-tensor activations, per-channel
//! symmetric weights, zero points 0: what TensorRT accepts), the rest of the
//! graph in FP16, and, with an accuracy target, a sensitivity search that
//! leaves the most damaging layers in float until the held-out batches meet it.

pub mod cache;
pub mod calibrate;
pub mod qdq;
pub mod smooth;

use std::collections::HashMap;

use crate::compare::{self, Accumulator, Metrics};
use crate::dataset::{self, Batch};
use crate::fp16::{self, Fp16Options};
use crate::graph::{types, Model};
use crate::runtime::{Session, SessionOptions};
use crate::{Error, Result};
use calibrate::{Calibrator, Histogram};
use qdq::Layer;

/// Fewest calibration rows accepted: fewer cannot estimate a range.
pub const MIN_CALIBRATION_ROWS: usize = 8;

/// What the float part of a quantized model computes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum FloatPrecision {
    /// FP16 weights and compute, FP32 islands ([`crate::fp16`]).
    #[default]
    Fp16,
    /// FP32 everywhere outside the INT8 layers.
    Fp32,
}

/// Settings of [`quantize`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct QuantizeOptions {
    /// Activation range calibrator.
    pub calibrator: Calibrator,
    /// SmoothQuant migration strength alpha (0..1), or `None` for no smoothing.
    pub smooth_alpha: Option<f32>,
    /// Layers (node names; `*` matches any run of characters) never quantized.
    pub exclude: Vec<String>,
    /// MatMuls with an input or output width under this stay float (ModelOpt skips < 16).
    pub min_width: usize,
    /// Precision of everything that is not INT8.
    pub float: FloatPrecision,
    /// Smallest mean-pooled embedding cosine (or row cosine) on held-out batches.
    pub target_cosine: Option<f64>,
    /// Smallest argmax agreement on held-out batches (classifier logits).
    pub target_agreement: Option<f64>,
    /// ONNX Runtime settings for calibration and evaluation.
    pub session: SessionOptions,
}

impl Default for QuantizeOptions {
    fn default() -> Self {
        QuantizeOptions {
            calibrator: Calibrator::MinMax,
            smooth_alpha: Some(0.85),
            exclude: Vec::new(),
            min_width: 16,
            float: FloatPrecision::Fp16,
            target_cosine: None,
            target_agreement: None,
            session: SessionOptions::default(),
        }
    }
}

/// Accuracy of a candidate on the held-out batches.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// Layers left in float.
    pub float_layers: usize,
    /// Per output of the model.
    pub outputs: Vec<(String, Metrics)>,
}

impl Evaluation {
    /// The cosine the target applies to: the smallest pooled-embedding cosine
    /// if some output has one, else the smallest row cosine of all outputs.
    pub fn cosine_min(&self) -> f64 {
        self.worst(|m| m.embedding_cosine.map(|e| e.0), |m| m.cosine_min)
    }

    /// The mean cosine matching [`Evaluation::cosine_min`].
    pub fn cosine_mean(&self) -> f64 {
        self.worst(|m| m.embedding_cosine.map(|e| e.1), |m| m.cosine_mean)
    }

    /// The smallest `embedding` figure over outputs that have one, else the smallest `row` figure.
    fn worst(&self, embedding: impl Fn(&Metrics) -> Option<f64>, row: impl Fn(&Metrics) -> f64) -> f64 {
        let emb: Vec<f64> = self.outputs.iter().filter_map(|(_, m)| embedding(m)).collect();
        if emb.is_empty() {
            self.outputs.iter().map(|(_, m)| row(m)).fold(1.0, f64::min)
        } else {
            emb.into_iter().fold(1.0, f64::min)
        }
    }

    /// The smallest argmax agreement over rank-2 outputs.
    pub fn agreement(&self) -> Option<f64> {
        self.outputs.iter().filter_map(|(_, m)| m.argmax_agreement).reduce(f64::min)
    }
}

/// What [`quantize`] did.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct QuantizeReport {
    /// Every weighted MatMul, with whether it runs in INT8.
    pub layers: Vec<(Layer, bool)>,
    /// Why each float layer is float ("excluded", "width 2 < 16", "sensitivity").
    pub float_reasons: Vec<(String, String)>,
    /// Share of weighted-MatMul FLOPs (as measured on the calibration batches) in INT8.
    pub int8_flops_share: f64,
    /// Activation scales (tensor name, amax) of the quantized tensors, as the Q/DQ model names them.
    pub amax: Vec<(String, f32)>,
    /// The same calibrator's amax of the original model's MatMul inputs (no
    /// smoothing: the TensorRT 10 implicit path builds the unmodified model),
    /// for [`cache::calibration_cache`].
    pub original_amax: Vec<(String, f32)>,
    /// Held-out accuracy of the returned model (when held-out batches were given).
    pub evaluation: Option<Evaluation>,
    /// Every candidate evaluated during the sensitivity search, in order.
    pub search: Vec<Evaluation>,
    /// Per layer: the held-out mean cosine with only that layer in INT8.
    pub sensitivity: Vec<(String, f64)>,
}

/// Whether `name` matches `pattern` (`*` = any run of characters).
pub fn matches(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let mut rest = name;
    for (i, p) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(p) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(p);
        } else {
            match rest.find(p) {
                Some(k) => rest = &rest[k + p.len()..],
                None => return false,
            }
        }
    }
    true
}

fn session(model: &Model, options: &SessionOptions) -> Result<Session> {
    Session::from_bytes(&model.to_bytes()?, options)
}

/// Per-activation statistics from one calibration pass.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Histogram of |x|.
    pub histogram: Histogram,
    /// Largest |x| per channel (last axis).
    pub channel_max: Vec<f32>,
    /// Rows (elements / channels) seen, summed over batches.
    pub rows: usize,
}

/// Runs `model` over `batches` with `tensors` exposed and collects their statistics.
pub fn collect_stats(model: &Model, tensors: &[String], batches: &[Batch], options: &SessionOptions) -> Result<HashMap<String, Stats>> {
    let mut probe = model.clone();
    let types = types::infer(probe.graph());
    crate::graph::edit::expose(probe.graph_mut()?, tensors, &types)?;
    let mut s = session(&probe, options)?;
    let names: Vec<&str> = tensors.iter().map(String::as_str).collect();
    let mut stats: HashMap<String, Stats> = HashMap::new();
    for batch in batches {
        for (name, a) in dataset::run(&mut s, batch, Some(&names))? {
            let st = stats.entry(name).or_default();
            let width = a.shape().last().copied().unwrap_or(1).max(1);
            if st.channel_max.len() != width {
                st.channel_max = vec![0.0; width];
            }
            let values = a.as_slice().map(<[f32]>::to_vec).unwrap_or_else(|| a.iter().copied().collect());
            for row in values.chunks(width) {
                for (m, v) in st.channel_max.iter_mut().zip(row) {
                    if v.is_finite() {
                        *m = m.max(v.abs());
                    }
                }
            }
            st.rows += values.len() / width;
            st.histogram.add(&values);
        }
    }
    Ok(stats)
}

/// Runs the FP32 reference over `batches` and keeps every float output.
pub fn reference_outputs(model: &Model, batches: &[Batch], options: &SessionOptions) -> Result<Vec<dataset::Outputs>> {
    let mut s = session(model, options)?;
    batches.iter().map(|b| dataset::run(&mut s, b, None)).collect()
}

/// Accuracy of `candidate` against reference outputs on `batches`.
pub fn evaluate(
    candidate: &Model,
    batches: &[Batch],
    reference: &[dataset::Outputs],
    options: &SessionOptions,
) -> Result<Vec<(String, Metrics)>> {
    let mut s = session(candidate, options)?;
    let mut acc: Vec<(String, Accumulator)> = Vec::new();
    for (batch, want) in batches.iter().zip(reference) {
        let got = dataset::run(&mut s, batch, None)?;
        for (name, a) in want {
            let Some((_, b)) = got.iter().find(|(n, _)| n == name) else {
                continue;
            };
            let m = compare::compare(name, a, b, batch.mask2())?;
            match acc.iter_mut().find(|(n, _)| n == name) {
                Some((_, x)) => x.add(&m, batch.rows()),
                None => {
                    let mut x = Accumulator::default();
                    x.add(&m, batch.rows());
                    acc.push((name.clone(), x));
                }
            }
        }
    }
    Ok(acc.into_iter().map(|(n, a)| (n, a.total())).collect())
}

fn check_model(model: &Model) -> Result<()> {
    let graph = model.graph();
    if let Some(n) = graph.node.iter().find(|n| {
        matches!(
            n.op_type.as_deref(),
            Some(
                "QuantizeLinear"
                    | "DequantizeLinear"
                    | "QLinearMatMul"
                    | "MatMulInteger"
                    | "QLinearConv"
                    | "ConvInteger"
                    | "DynamicQuantizeLinear"
            )
        )
    }) {
        return Err(Error::Unsupported {
            operation: "quantization",
            problem: format!(
                "the model is already quantized (node '{}' is {})",
                n.name.clone().unwrap_or_default(),
                n.op_type.clone().unwrap_or_default()
            ),
        });
    }
    let t = types::infer(graph);
    if fp16::is_fp16_model(graph) || !t.values().any(|&c| c == crate::graph::tensor::FLOAT) {
        return Err(Error::Unsupported {
            operation: "quantization",
            problem: "the model has no FP32 tensors (quantize the FP32 model, not an FP16 or integer one)".into(),
        });
    }
    Ok(())
}

/// Builds the finished model: Q/DQ on `int8` layers, then the float part in the asked precision.
pub fn build(model: &Model, layers: &[Layer], int8: &[bool], amax: &HashMap<String, f32>, float: FloatPrecision) -> Result<Model> {
    let mut m = model.clone();
    qdq::insert(&mut m, layers, int8, amax)?;
    match float {
        FloatPrecision::Fp32 => Ok(m),
        FloatPrecision::Fp16 => Ok(fp16::convert(&m, &Fp16Options::default())?.0),
    }
}

/// Quantizes `model`: see the module docs. `calibration` sets the ranges;
/// `holdout` (may be empty without targets) measures the result.
pub fn quantize(model: &Model, calibration: &[Batch], holdout: &[Batch], options: &QuantizeOptions) -> Result<(Model, QuantizeReport)> {
    check_model(model)?;
    let rows: usize = calibration.iter().map(Batch::rows).sum();
    if rows < MIN_CALIBRATION_ROWS {
        return Err(Error::Calibration(format!("{rows} calibration rows; at least {MIN_CALIBRATION_ROWS} are needed")));
    }
    let wants_target = options.target_cosine.is_some() || options.target_agreement.is_some();
    if wants_target && holdout.is_empty() {
        return Err(Error::Calibration("an accuracy target needs held-out batches to measure it on".into()));
    }
    let all_layers = qdq::weighted_matmuls(model.graph());
    if all_layers.is_empty() {
        return Err(Error::Unsupported {
            operation: "quantization",
            problem: "the model has no MatMul or Gemm with a constant weight to quantize".into(),
        });
    }
    let mut float_reasons = Vec::new();
    let mut eligible = vec![true; all_layers.len()];
    for (i, l) in all_layers.iter().enumerate() {
        if let Some(p) = options.exclude.iter().find(|p| matches(p, &l.name)) {
            eligible[i] = false;
            float_reasons.push((l.name.clone(), format!("excluded by '{p}'")));
        } else if l.k < options.min_width || l.n < options.min_width {
            eligible[i] = false;
            float_reasons.push((l.name.clone(), format!("width {}x{} under {}", l.k, l.n, options.min_width)));
        }
    }
    if !eligible.iter().any(|&e| e) {
        return Err(Error::Unsupported { operation: "quantization", problem: "every weighted MatMul is excluded or too narrow".into() });
    }

    // Pass 1: every weighted MatMul's activation (FLOP counts need the narrow ones too).
    let mut acts: Vec<String> = all_layers.iter().map(|l| l.activation.clone()).collect();
    acts.dedup();
    let acts: Vec<String> = acts.into_iter().fold(Vec::new(), |mut v, a| {
        if !v.contains(&a) {
            v.push(a);
        }
        v
    });
    let stats1 = collect_stats(model, &acts, calibration, &options.session)?;
    let mut original_amax: Vec<(String, f32)> = Vec::new();
    for (l, _) in all_layers.iter().zip(&eligible).filter(|(_, e)| **e) {
        if let (Some(st), false) = (stats1.get(&l.activation), original_amax.iter().any(|(n, _)| *n == l.activation)) {
            original_amax.push((l.activation.clone(), st.histogram.amax(options.calibrator) as f32));
        }
    }

    // Smoothing, then pass 2 over the smoothed tensors.
    let (base, layers, stats) = match options.smooth_alpha {
        Some(alpha) => {
            let chosen: Vec<&Layer> = all_layers.iter().zip(&eligible).filter(|(_, e)| **e).map(|(l, _)| l).collect();
            let (smoothed, layers) =
                smooth::apply(model, &all_layers, &chosen.iter().map(|l| l.name.clone()).collect::<Vec<_>>(), &stats1, alpha)?;
            let mut acts2: Vec<String> = Vec::new();
            for l in &layers {
                if !acts2.contains(&l.activation) {
                    acts2.push(l.activation.clone());
                }
            }
            let stats2 = collect_stats(&smoothed, &acts2, calibration, &options.session)?;
            (smoothed, layers, stats2)
        }
        None => (model.clone(), all_layers.clone(), stats1),
    };
    let mut amax: HashMap<String, f32> = HashMap::new();
    for (l, e) in layers.iter().zip(&eligible) {
        if *e {
            let st = stats
                .get(&l.activation)
                .ok_or_else(|| Error::Calibration(format!("tensor '{}' was not seen during calibration", l.activation)))?;
            let a = st.histogram.amax(options.calibrator) as f32;
            amax.insert(l.activation.clone(), if a > 0.0 { a } else { 1e-6 });
        }
    }
    // FLOPs per layer: 2 * rows * K * N, rows measured on the calibration batches.
    let flops: Vec<f64> =
        layers.iter().map(|l| 2.0 * stats.get(&l.activation).map(|s| s.rows).unwrap_or(0) as f64 * l.k as f64 * l.n as f64).collect();

    let mut int8 = eligible.clone();
    let mut evaluation = None;
    let mut search = Vec::new();
    let mut sensitivity = Vec::new();
    if !holdout.is_empty() {
        let reference = reference_outputs(model, holdout, &options.session)?;
        let eval = |int8: &[bool]| -> Result<Evaluation> {
            let m = build(&base, &layers, int8, &amax, options.float)?;
            Ok(Evaluation {
                float_layers: int8.iter().filter(|q| !**q).count(),
                outputs: evaluate(&m, holdout, &reference, &options.session)?,
            })
        };
        let meets = |e: &Evaluation| {
            options.target_cosine.is_none_or(|t| e.cosine_min() >= t)
                && options.target_agreement.is_none_or(|t| e.agreement().is_none_or(|a| a >= t))
        };
        let full = eval(&int8)?;
        let met = meets(&full);
        search.push(full.clone());
        evaluation = Some(full);
        if wants_target && !met {
            // Sensitivity: each eligible layer alone in INT8, the rest FP32.
            let mut ranked: Vec<(usize, f64)> = Vec::new();
            for (i, _) in layers.iter().enumerate().filter(|(i, _)| eligible[*i]) {
                let mut only = vec![false; layers.len()];
                only[i] = true;
                let m = build(&base, &layers, &only, &amax, FloatPrecision::Fp32)?;
                let e = Evaluation { float_layers: 0, outputs: evaluate(&m, holdout, &reference, &options.session)? };
                let score = e.cosine_mean().min(e.agreement().unwrap_or(1.0));
                sensitivity.push((layers[i].name.clone(), score));
                ranked.push((i, score));
            }
            ranked.sort_by(|a, b| a.1.total_cmp(&b.1));
            // Fewest most-damaging layers in float that meet the target: binary
            // search on the count (accuracy grows with it, checked at the end).
            let with_float = |k: usize| {
                let mut q = eligible.clone();
                for (i, _) in ranked.iter().take(k) {
                    q[*i] = false;
                }
                q
            };
            let (mut lo, mut hi) = (1usize, ranked.len());
            let mut best: Option<(usize, Evaluation)> = None;
            while lo <= hi {
                let mid = (lo + hi) / 2;
                let e = eval(&with_float(mid))?;
                search.push(e.clone());
                if meets(&e) {
                    best = Some((mid, e));
                    if mid == 0 {
                        break;
                    }
                    hi = mid - 1;
                } else {
                    lo = mid + 1;
                }
            }
            match best {
                Some((k, e)) => {
                    int8 = with_float(k);
                    for (i, _) in ranked.iter().take(k) {
                        float_reasons.push((layers[*i].name.clone(), "sensitivity".into()));
                    }
                    evaluation = Some(e);
                }
                None => {
                    return Err(Error::Accuracy(format!(
                        "even with every quantized layer in float the held-out figures miss the target (cosine min {:.5})",
                        search.last().map(|e| e.cosine_min()).unwrap_or(0.0)
                    )))
                }
            }
        }
    }
    let out = build(&base, &layers, &int8, &amax, options.float)?;
    let total: f64 = flops.iter().sum();
    let in_int8: f64 = flops.iter().zip(&int8).filter(|(_, q)| **q).map(|(f, _)| f).sum();
    let mut used: Vec<(String, f32)> = layers
        .iter()
        .zip(&int8)
        .filter(|(_, q)| **q)
        .filter_map(|(l, _)| amax.get(&l.activation).map(|a| (l.activation.clone(), *a)))
        .collect();
    used.sort_by(|a, b| a.0.cmp(&b.0));
    used.dedup_by(|a, b| a.0 == b.0);
    let report = QuantizeReport {
        layers: layers.into_iter().zip(int8).collect(),
        float_reasons,
        int8_flops_share: if total > 0.0 { in_int8 / total } else { 0.0 },
        amax: used,
        original_amax,
        evaluation,
        search,
        sensitivity,
    };
    Ok((out, report))
}
