//! ModernBERT (`ModernBertModel`, and the encoder of its task checkpoints
//! under `model.`): token embeddings and a LayerNorm, then per layer
//! `x += Wo(attention(attn_norm(x)))` (layer 0's `attn_norm` is the
//! identity), `x += mlp(mlp_norm(x))` with `Wi` split into `[input | gate]`
//! and `Wo(gelu(input) * gate)`, and a final LayerNorm. No biases anywhere.
//!
//! Attention alternates: global layers see every key, sliding layers keys
//! within `local_attention / 2` positions, each kind with its own rotary
//! theta (both from [`Rotary`]).

use super::rotary::{self, Heads, Pattern};
use crate::arch::{ArchConfig, Rotary};
use crate::graph::{attr_int, Graph};
use crate::weights::Weights;
use crate::Result;

/// `[B, S, hidden]`: the final LayerNorm's output.
pub fn encoder(g: &mut Graph, w: &Weights, cfg: &ArchConfig, rot: &Rotary) -> Result<String> {
    let (h, inter, eps) = (cfg.hidden, cfg.intermediate, cfg.layer_norm_eps);
    let embed = g.weight(&w.get("embeddings.tok_embeddings.weight", &[cfg.vocab_size, h])?);
    let ids = g.token_input("input_ids");
    g.token_input("attention_mask");
    let x = g.op("Gather", "embeddings/tok_embeddings/Gather", &[&embed, &ids], vec![attr_int("axis", 0)]);
    let mut x = rotary::layer_norm_no_bias(g, &x, &w.get("embeddings.norm.weight", &[h])?, eps, "embeddings/norm");
    let heads = Heads { heads: cfg.heads, kv_heads: cfg.heads, head_dim: cfg.head_size };
    // Tables and masks of a kind are written once, and only when a layer uses them.
    let mut global = None;
    let mut local = None;
    for i in 0..cfg.layers {
        let p = format!("layers.{i}");
        let name = format!("layer.{i}");
        let t = |n: &str, shape: &[usize]| w.get(&format!("{p}.{n}.weight"), shape);
        let sliding = rot.sliding.get(i).copied().unwrap_or(false);
        let (rope, bias) = if sliding {
            local.get_or_insert_with(|| {
                let rope = rotary::rope(g, rot.local_theta, cfg.head_size, cfg.max_positions, "rope/sliding");
                (rope, rotary::attention_bias(g, Pattern::Window(rot.window), cfg.max_positions, "sliding_mask"))
            })
        } else {
            global.get_or_insert_with(|| {
                let rope = rotary::rope(g, rot.theta, cfg.head_size, cfg.max_positions, "rope/global");
                (rope, rotary::attention_bias(g, Pattern::Full, cfg.max_positions, "global_mask"))
            })
        }
        .clone();
        let a =
            if i == 0 { x.clone() } else { rotary::layer_norm_no_bias(g, &x, &t("attn_norm", &[h])?, eps, &format!("{name}/attn_norm")) };
        let qkv = t("attn.Wqkv", &[3 * h, h])?;
        let (wq, wk, wv) = (rotary::rows(&qkv, 0..h), rotary::rows(&qkv, h..2 * h), rotary::rows(&qkv, 2 * h..3 * h));
        let q = g.linear(&a, &wq, None, &format!("{name}/attention/q"));
        let k = g.linear(&a, &wk, None, &format!("{name}/attention/k"));
        let v = g.linear(&a, &wv, None, &format!("{name}/attention/v"));
        let a = rotary::attention(g, &q, &k, &v, heads, None, &rope, &bias, &format!("{name}/attention"));
        let a = g.linear(&a, &t("attn.Wo", &[h, h])?, None, &format!("{name}/attention/Wo"));
        x = g.op("Add", &format!("{name}/attention/Residual"), &[&x, &a], vec![]);
        let m = rotary::layer_norm_no_bias(g, &x, &t("mlp_norm", &[h])?, eps, &format!("{name}/mlp_norm"));
        let wi = t("mlp.Wi", &[2 * inter, h])?;
        let (input, gate) = (rotary::rows(&wi, 0..inter), rotary::rows(&wi, inter..2 * inter));
        let m = rotary::gated_mlp(g, &m, &input, &gate, &t("mlp.Wo", &[h, inter])?, None, cfg.act, &format!("{name}/mlp"));
        x = g.op("Add", &format!("{name}/mlp/Residual"), &[&x, &m], vec![]);
    }
    Ok(rotary::layer_norm_no_bias(g, &x, &w.get("final_norm.weight", &[h])?, eps, "final_norm"))
}
