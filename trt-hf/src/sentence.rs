//! The sentence-transformers modules after the Transformer, inside the
//! graph: pooling (every mode, concatenated in sentence-transformers'
//! order), Dense layers, L2 normalisation. All of it stays FP32 in an FP16
//! model (a sum over hundreds of tokens and a norm are where FP16 loses
//! digits), so the embedding is what sentence-transformers computes up to
//! the encoder's own rounding.

use std::path::Path;

use crate::graph::{attr_int, Graph};
use crate::st::{Act, Dense, Module, PoolingMode, Splade};
use crate::weights::Weights;
use crate::{Error, Result};

/// The modules applied to `hidden` (`[B, S, H]`) under the mask input;
/// returns the `[B, D]` embedding and `D`. `max_positions` sizes the
/// position table weighted-mean pooling slices.
pub fn apply(g: &mut Graph, hidden: &str, dim: usize, modules: &[Module], max_positions: usize, config: &Path) -> Result<(String, usize)> {
    g.begin_fp32();
    let result = apply_modules(g, hidden, dim, modules, max_positions, config);
    g.end_fp32();
    result
}

fn apply_modules(
    g: &mut Graph,
    hidden: &str,
    dim: usize,
    modules: &[Module],
    max_positions: usize,
    config: &Path,
) -> Result<(String, usize)> {
    let mut x: Option<(String, usize)> = None;
    for m in modules {
        x = Some(match (m, x) {
            (Module::Pooling { modes, .. }, None) => pool(g, hidden, dim, modes, max_positions),
            (Module::Pooling { .. }, Some(_)) => {
                return Err(Error::config(config, "modules", "a second Pooling module"));
            }
            (_, None) => return Err(Error::config(config, "modules", "a Dense or Normalize module before any Pooling")),
            (Module::Dense(d), Some((v, n))) => (dense(g, &v, n, d)?, d.out_features),
            (Module::Normalize, Some((v, n))) => (normalize(g, &v), n),
            (Module::Splade(_), _) => return Err(Error::config(config, "modules", "SpladePooling among the modules of a dense embedding")),
        });
    }
    // No Pooling module: sentence-transformers' default for a plain transformer is mean pooling.
    Ok(match x {
        Some(x) => x,
        None => pool(g, hidden, dim, &[PoolingMode::Mean], max_positions),
    })
}

fn pool(g: &mut Graph, hidden: &str, dim: usize, modes: &[PoolingMode], max_positions: usize) -> (String, usize) {
    let mask = g.op("Cast", "pooling/mask/Cast", &["attention_mask"], vec![attr_int("to", 1)]);
    let axis1 = g.ints("pooling/axis1", &[1], &[1]);
    let axis2 = g.ints("pooling/axis2", &[1], &[2]);
    let mask3 = g.op("Unsqueeze", "pooling/mask/Unsqueeze", &[&mask, &axis2], vec![]);
    let eps = g.scalar(1e-9);
    // sum(h * m) and max(sum(m), 1e-9), shared by mean and mean_sqrt_len.
    let mut sums: Option<(String, String)> = None;
    let mut masked_sum = |g: &mut Graph| -> (String, String) {
        if let Some(s) = &sums {
            return s.clone();
        }
        let hm = g.op("Mul", "pooling/mean/Mul", &[hidden, &mask3], vec![]);
        let sum = g.op("ReduceSum", "pooling/mean/Sum", &[&hm, &axis1], vec![attr_int("keepdims", 0)]);
        let count = g.op("ReduceSum", "pooling/mean/Count", &[&mask, &axis1], vec![attr_int("keepdims", 1)]);
        let count = g.op("Max", "pooling/mean/Clamp", &[&count, &eps], vec![]);
        sums = Some((sum.clone(), count.clone()));
        (sum, count)
    };
    let mut parts = Vec::new();
    for &mode in modes {
        let part = match mode {
            PoolingMode::Cls => g.token(hidden, 0, "pooling/cls"),
            PoolingMode::Max => {
                let zero = g.scalar(0.0);
                let padded = g.op("Equal", "pooling/max/Equal", &[&mask3, &zero], vec![]);
                let low = g.scalar(-1e9);
                let h = g.op("Where", "pooling/max/Where", &[&padded, &low, hidden], vec![]);
                g.op("ReduceMax", "pooling/max/ReduceMax", &[&h], vec![attr_ints_axes(&[1]), attr_int("keepdims", 0)])
            }
            PoolingMode::Mean => {
                let (sum, count) = masked_sum(g);
                g.op("Div", "pooling/mean/Div", &[&sum, &count], vec![])
            }
            PoolingMode::MeanSqrtLen => {
                let (sum, count) = masked_sum(g);
                let root = g.op("Sqrt", "pooling/mean_sqrt_len/Sqrt", &[&count], vec![]);
                g.op("Div", "pooling/mean_sqrt_len/Div", &[&sum, &root], vec![])
            }
            PoolingMode::WeightedMean => {
                // Weights 1, 2, ..., S by column, times the mask.
                let table: Vec<f32> = (1..=max_positions).map(|p| p as f32).collect();
                let table = g.floats("pooling/weightedmean/positions", &[max_positions], &table);
                let len = g.seq_len("attention_mask");
                let weights = g.leading(&table, &len, &[0], "pooling/weightedmean/weights");
                let wm = g.op("Mul", "pooling/weightedmean/MaskWeights", &[&mask, &weights], vec![]);
                let wm3 = g.op("Unsqueeze", "pooling/weightedmean/Unsqueeze", &[&wm, &axis2], vec![]);
                let hw = g.op("Mul", "pooling/weightedmean/Mul", &[hidden, &wm3], vec![]);
                let sum = g.op("ReduceSum", "pooling/weightedmean/Sum", &[&hw, &axis1], vec![attr_int("keepdims", 0)]);
                let total = g.op("ReduceSum", "pooling/weightedmean/Total", &[&wm, &axis1], vec![attr_int("keepdims", 1)]);
                let total = g.op("Max", "pooling/weightedmean/Clamp", &[&total, &eps], vec![]);
                g.op("Div", "pooling/weightedmean/Div", &[&sum, &total], vec![])
            }
            PoolingMode::LastToken => last_token(g, hidden, max_positions),
        };
        parts.push(part);
    }
    let n = parts.len();
    let out = if n == 1 {
        parts.remove(0)
    } else {
        let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
        g.op("Concat", "pooling/Concat", &refs, vec![attr_int("axis", 1)])
    };
    (out, dim * n)
}

/// `[B, H]`: the state of each row's last attended position (what
/// `lasttoken` pooling takes, and where a decoder's next-token logits are
/// read): the max over positions 0..S-1 of position * mask, picked by a
/// one-hot row (exact: every other token is multiplied by 0).
pub fn last_token(g: &mut Graph, hidden: &str, max_positions: usize) -> String {
    let mask = g.op("Cast", "lasttoken/mask/Cast", &["attention_mask"], vec![attr_int("to", 1)]);
    let table: Vec<f32> = (0..max_positions).map(|p| p as f32).collect();
    let table = g.floats("lasttoken/positions", &[max_positions], &table);
    let len = g.seq_len("attention_mask");
    let positions = g.leading(&table, &len, &[0], "lasttoken/positions");
    let pm = g.op("Mul", "lasttoken/Mul", &[&mask, &positions], vec![]);
    let last = g.op("ReduceMax", "lasttoken/ReduceMax", &[&pm], vec![attr_ints_axes(&[1]), attr_int("keepdims", 1)]);
    let hit = g.op("Equal", "lasttoken/Equal", &[&positions, &last], vec![]);
    let onehot = g.op("Cast", "lasttoken/Cast", &[&hit], vec![attr_int("to", 1)]);
    let axis2 = g.ints("lasttoken/axis2", &[1], &[2]);
    let onehot3 = g.op("Unsqueeze", "lasttoken/Unsqueeze", &[&onehot, &axis2], vec![]);
    let h = g.op("Mul", "lasttoken/Pick", &[hidden, &onehot3], vec![]);
    let axis1 = g.ints("lasttoken/axis1", &[1], &[1]);
    g.op("ReduceSum", "lasttoken/Sum", &[&h, &axis1], vec![attr_int("keepdims", 0)])
}

/// ReduceMax takes its axes as an attribute until opset 18.
pub(crate) fn attr_ints_axes(axes: &[i64]) -> trt_onnx::graph::proto::AttributeProto {
    crate::graph::attr_ints("axes", axes)
}

fn dense(g: &mut Graph, x: &str, n: usize, d: &Dense) -> Result<String> {
    let config = d.dir.join("config.json");
    if d.in_features != n {
        return Err(Error::config(&config, "in_features", format!("{} but the module before it gives {n}", d.in_features)));
    }
    let w = Weights::open(&d.dir)?;
    let weight = w.get_exact("linear.weight", &[d.out_features, d.in_features])?;
    let bias = if d.bias { Some(w.get_exact("linear.bias", &[d.out_features])?) } else { None };
    let y = g.linear(x, &weight, bias.as_ref(), "dense");
    Ok(match d.activation {
        Act::Identity => y,
        Act::Tanh => g.activation(&y, crate::arch::Activation::Tanh, "dense"),
        Act::Relu => g.activation(&y, crate::arch::Activation::Relu, "dense"),
        Act::Gelu => g.activation(&y, crate::arch::Activation::Gelu, "dense"),
        Act::Silu => g.activation(&y, crate::arch::Activation::Silu, "dense"),
        Act::Sigmoid => g.op("Sigmoid", "dense/Sigmoid", &[&y], vec![]),
    })
}

/// SPLADE's `[B, vocab]` vector from masked-LM logits `[B, S, vocab]`:
/// `log1p(relu(logits))` (twice `log1p` for `log1p_relu`), padded positions
/// zeroed, then the max (or sum) over positions; all FP32. `log1p(x)` is
/// written `log(1 + x)`: the same to within FP32's rounding of `1 + x`
/// (absolute error below 1e-7 at the values relu leaves).
pub fn splade(g: &mut Graph, logits: &str, s: Splade) -> String {
    g.in_fp32(|g| {
        let one = g.scalar(1.0);
        let mut v = g.op("Relu", "splade/Relu", &[logits], vec![]);
        for pass in 0..if s.log1p_twice { 2 } else { 1 } {
            let p = g.op("Add", &format!("splade/log1p{pass}/Add"), &[&v, &one], vec![]);
            v = g.op("Log", &format!("splade/log1p{pass}/Log"), &[&p], vec![]);
        }
        let mask = g.op("Cast", "splade/mask/Cast", &["attention_mask"], vec![attr_int("to", 1)]);
        let axis2 = g.ints("splade/axis2", &[1], &[2]);
        let mask = g.op("Unsqueeze", "splade/mask/Unsqueeze", &[&mask, &axis2], vec![]);
        let v = g.op("Mul", "splade/Mask", &[&v, &mask], vec![]);
        if s.max {
            g.op("ReduceMax", "splade/ReduceMax", &[&v], vec![attr_ints_axes(&[1]), attr_int("keepdims", 0)])
        } else {
            let axis1 = g.ints("splade/axis1", &[1], &[1]);
            g.op("ReduceSum", "splade/ReduceSum", &[&v, &axis1], vec![attr_int("keepdims", 0)])
        }
    })
}

/// `x / max(||x||, 1e-12)` per row, as `torch.nn.functional.normalize`.
pub fn normalize(g: &mut Graph, x: &str) -> String {
    let axis1 = g.ints("normalize/axis1", &[1], &[1]);
    let sq = g.op("Mul", "normalize/Square", &[x, x], vec![]);
    let ss = g.op("ReduceSum", "normalize/Sum", &[&sq, &axis1], vec![attr_int("keepdims", 1)]);
    let norm = g.op("Sqrt", "normalize/Sqrt", &[&ss], vec![]);
    let eps = g.scalar(1e-12);
    let norm = g.op("Max", "normalize/Clamp", &[&norm, &eps], vec![]);
    g.op("Div", "normalize/Div", &[x, &norm], vec![])
}
