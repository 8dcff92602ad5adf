//! ModernBERT (`ModernBertModel`, and the encoder of its task checkpoints
//! under `model.`): token embeddings and a LayerNorm, then per layer
//! `x += Wo(attention(attn_norm(x)))` (layer 0's `attn_norm` is the
//! identity), `x += mlp(mlp_norm(x))` with `Wi` split into `[input | gate]`
//! and `Wo(gelu(input) * gate)`, and a final LayerNorm. No biases anywhere.
//!
//! Attention alternates: global layers see every key, sliding layers keys
//! within `local_attention / 2` positions, each kind with its own rotary
//! theta (both from [`Rotary`]).

use super::rotary::{self, Heads, Pattern, Positions};
use crate::arch::{ArchConfig, Rotary};
use crate::graph::{attr_int, Graph, Norm};
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
    // The fused form passes each row's length to its attention, and only the
    // sliding layers' band as a bias.
    let lengths = g.is_fused().then(|| g.mask_index());
    // Tables and masks of a kind are written once, and only when a layer uses them.
    let mut global = None;
    let mut local = None;
    // A block's output not yet added to the residual stream `x`.
    let mut pending: Option<String> = None;
    for i in 0..cfg.layers {
        let p = format!("layers.{i}");
        let name = format!("layer.{i}");
        let t = |n: &str, shape: &[usize]| w.get(&format!("{p}.{n}.weight"), shape);
        let sliding = rot.sliding.get(i).copied().unwrap_or(false);
        let (theta, pattern, kind) =
            if sliding { (rot.local_theta, Pattern::Window(rot.window), "sliding") } else { (rot.theta, Pattern::Full, "global") };
        let slot = if sliding { &mut local } else { &mut global };
        let positions = slot
            .get_or_insert_with(|| Positions::new(g, theta, cfg.head_size, cfg.max_positions, pattern, lengths.as_deref(), kind))
            .clone();
        // Layer 0's attention norm is the identity.
        let a = if i == 0 {
            x.clone()
        } else {
            rotary::pre_norm(g, &mut x, pending.take(), Norm::Layer(&t("attn_norm", &[h])?, None), eps, &format!("{name}/attn_norm"))
        };
        let qkv = t("attn.Wqkv", &[3 * h, h])?;
        let (wq, wk, wv) = (rotary::rows(&qkv, 0..h), rotary::rows(&qkv, h..2 * h), rotary::rows(&qkv, 2 * h..3 * h));
        let q = g.linear(&a, &wq, None, &format!("{name}/attention/q"));
        let k = g.linear(&a, &wk, None, &format!("{name}/attention/k"));
        let v = g.linear(&a, &wv, None, &format!("{name}/attention/v"));
        let a = positions.attention(g, &q, &k, &v, heads, &format!("{name}/attention"));
        pending = Some(g.linear(&a, &t("attn.Wo", &[h, h])?, None, &format!("{name}/attention/Wo")));
        let m = rotary::pre_norm(g, &mut x, pending.take(), Norm::Layer(&t("mlp_norm", &[h])?, None), eps, &format!("{name}/mlp_norm"));
        let wi = t("mlp.Wi", &[2 * inter, h])?;
        let (input, gate) = (rotary::rows(&wi, 0..inter), rotary::rows(&wi, inter..2 * inter));
        pending = Some(rotary::gated_mlp(g, &m, &input, &gate, &t("mlp.Wo", &[h, inter])?, None, cfg.act, &format!("{name}/mlp")));
    }
    Ok(rotary::pre_norm(g, &mut x, pending, Norm::Layer(&w.get("final_norm.weight", &[h])?, None), eps, "final_norm"))
}
