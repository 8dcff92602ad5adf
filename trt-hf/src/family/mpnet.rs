//! MPNet: RoBERTa-style embeddings without token types, and a
//! relative-position bias added to every layer's attention scores. The bias
//! depends only on the two positions, so the bucket of every position pair
//! is computed here once (transformers' `relative_position_bucket`, in the
//! same FP32 arithmetic) and the graph slices the table to the sequence.

use super::LayerNames;
use crate::arch::ArchConfig;
use crate::graph::{attr_int, attr_ints, Graph};
use crate::weights::Weights;
use crate::Result;

/// transformers calls the bucket function with its defaults, whatever the
/// config's bucket count (which only sizes the bias table).
const NUM_BUCKETS: i64 = 32;
const MAX_DISTANCE: i64 = 128;

/// The bucket of `relative = key position - query position`.
pub fn relative_position_bucket(relative: i64) -> i64 {
    let half = NUM_BUCKETS / 2;
    let n = -relative;
    let mut ret = if n < 0 { half } else { 0 };
    let n = n.abs();
    let max_exact = half / 2;
    if n < max_exact {
        return ret + n;
    }
    // FP32 throughout, as torch computes it on float tensors; the cast truncates.
    let ratio = (n as f32 / max_exact as f32).ln() / ((MAX_DISTANCE as f64 / max_exact as f64).ln() as f32);
    let large = max_exact + (ratio * (half - max_exact) as f32) as i64;
    ret += large.min(half - 1);
    ret
}

/// `[1, heads, S, S]`: each layer's additive bias, for `len` (`S`, a
/// 1-element INT64 tensor) up to the position limit rounded up to
/// [`crate::graph::SEQUENCE_ALIGN`] (a graph may pad its sequence to that).
pub fn position_bias(g: &mut Graph, w: &Weights, cfg: &ArchConfig, len: &str) -> Result<String> {
    let table = g.weight(&w.get("encoder.relative_attention_bias.weight", &[cfg.relative_buckets, cfg.heads])?);
    let align = crate::graph::SEQUENCE_ALIGN as usize;
    let l = cfg.position_limit().max(1).div_ceil(align) * align;
    let mut buckets = Vec::with_capacity(l * l);
    for i in 0..l as i64 {
        for j in 0..l as i64 {
            // A bucket past the table (a config with fewer than 32) would read out of bounds: clamp.
            buckets.push(relative_position_bucket(j - i).min(cfg.relative_buckets as i64 - 1) as i32);
        }
    }
    let buckets = g.ints32("encoder/relative_position_buckets", &[l, l], &buckets);
    let b = g.leading(&buckets, len, &[0, 1], "encoder/position_bias/buckets");
    let bias = g.op("Gather", "encoder/position_bias/Gather", &[&table, &b], vec![attr_int("axis", 0)]);
    let bias = g.op("Transpose", "encoder/position_bias/Transpose", &[&bias], vec![attr_ints("perm", &[2, 0, 1])]);
    let axis0 = g.ints("encoder/position_bias/axis0", &[1], &[0]);
    Ok(g.op("Unsqueeze", "encoder/position_bias/Unsqueeze", &[&bias, &axis0], vec![]))
}

/// `encoder.layer.{i}`'s weights.
pub fn layer_names(i: usize) -> LayerNames {
    let p = format!("encoder.layer.{i}");
    LayerNames {
        q: format!("{p}.attention.attn.q"),
        k: format!("{p}.attention.attn.k"),
        v: format!("{p}.attention.attn.v"),
        o: format!("{p}.attention.attn.o"),
        ln_attention: format!("{p}.attention.LayerNorm"),
        ffn_in: format!("{p}.intermediate.dense"),
        ffn_out: format!("{p}.output.dense"),
        ln_output: format!("{p}.output.LayerNorm"),
    }
}
