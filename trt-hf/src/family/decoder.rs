//! The decoder families used as embedders and rerankers, in one writer:
//! Qwen3, Qwen2 (gte-Qwen2) and Mistral (e5-mistral) (`*Model`, and the
//! decoder inside `*ForCausalLM` under `model.`). Token embeddings, then
//! per layer `x += o(attention(rms(x)))`,
//! `x += down(silu(gate(rms(x))) * up(rms(x)))`, and a final RMSNorm.
//! Attention is causal and grouped-query; sliding layers see only the last
//! `window + 1` positions ([`Rotary`]).
//!
//! | family | q/k/v bias | per-head q/k RMSNorm | sliding layers |
//! |---|---|---|---|
//! | Qwen3 | no | yes (`q_norm`, `k_norm`) | refused by the config reader |
//! | Qwen2 | yes (`o_proj` has none) | no | `layer_types`, or from `max_window_layers` when `use_sliding_window` |
//! | Mistral | no | no | every layer, when `sliding_window` is set |
//!
//! The fused form ([`crate::Form::Fused`]) attends with one
//! GroupQueryAttention a layer (rotation, causality, each row's length and
//! the window inside; Qwen3's per-head norms as SimplifiedLayerNormalization
//! before it) and adds and normalises in SkipSimplifiedLayerNormalization.

use super::rotary::{self, Heads, Pattern, QkNorm};
use crate::arch::{ArchConfig, Family, Rotary};
use crate::graph::{attr_int, Graph, GroupQuery, Norm};
use crate::weights::{Tensor, Weights};
use crate::Result;

/// `[B, S, hidden]`: the final RMSNorm's output.
pub fn encoder(g: &mut Graph, w: &Weights, cfg: &ArchConfig, rot: &Rotary) -> Result<String> {
    let (h, d) = (cfg.hidden, cfg.head_size);
    let (q_rows, kv_rows) = (cfg.heads * d, cfg.kv_heads * d);
    let (qkv_bias, qk_norm) = (cfg.family == Family::Qwen2, cfg.family == Family::Qwen3);
    let embed = g.weight(&w.get("embed_tokens.weight", &[cfg.vocab_size, h])?);
    let ids = g.token_input("input_ids");
    g.token_input("attention_mask");
    let mut x = g.op("Gather", "embed_tokens/Gather", &[&embed, &ids], vec![attr_int("axis", 0)]);
    // The fused form rotates inside its GroupQueryAttention nodes, and
    // applies causality, padding and the window there too.
    let rotation = if g.is_fused() {
        Rotation::Cache(rotary::cache(g, rot.theta, d, cfg.max_positions, "rope"))
    } else {
        Rotation::Tables(rotary::rope(g, rot.theta, d, cfg.max_positions, "rope"))
    };
    // Each mask is written once, and only when a layer uses it.
    let (mut causal, mut sliding) = (None, None);
    let heads = Heads { heads: cfg.heads, kv_heads: cfg.kv_heads, head_dim: d };
    let eps = cfg.layer_norm_eps;
    // A block's output not yet added to the residual stream `x`.
    let mut pending: Option<String> = None;
    for i in 0..cfg.layers {
        let p = format!("layers.{i}");
        let name = format!("layer.{i}");
        let t = |n: &str, shape: &[usize]| w.get(&format!("{p}.{n}.weight"), shape);
        let b = |n: &str, rows: usize| if qkv_bias { w.get(&format!("{p}.{n}.bias"), &[rows]).map(Some) } else { Ok(None) };
        let slides = rot.sliding.get(i).copied().unwrap_or(false);
        let a =
            rotary::pre_norm(g, &mut x, pending.take(), Norm::Rms(&t("input_layernorm", &[h])?), eps, &format!("{name}/input_layernorm"));
        let q =
            g.linear(&a, &t("self_attn.q_proj", &[q_rows, h])?, b("self_attn.q_proj", q_rows)?.as_ref(), &format!("{name}/attention/q"));
        let k =
            g.linear(&a, &t("self_attn.k_proj", &[kv_rows, h])?, b("self_attn.k_proj", kv_rows)?.as_ref(), &format!("{name}/attention/k"));
        let v =
            g.linear(&a, &t("self_attn.v_proj", &[kv_rows, h])?, b("self_attn.v_proj", kv_rows)?.as_ref(), &format!("{name}/attention/v"));
        let norms = if qk_norm { Some((t("self_attn.q_norm", &[d])?, t("self_attn.k_norm", &[d])?)) } else { None };
        let a = match &rotation {
            Rotation::Tables(rope) => {
                let bias = if slides {
                    sliding.get_or_insert_with(|| {
                        rotary::attention_bias(g, Pattern::CausalWindow(rot.window), cfg.max_positions, "sliding_mask")
                    })
                } else {
                    causal.get_or_insert_with(|| rotary::attention_bias(g, Pattern::Causal, cfg.max_positions, "causal_mask"))
                }
                .clone();
                let norm = norms.as_ref().map(|(q, k)| QkNorm { q, k, eps });
                rotary::attention(g, &q, &k, &v, heads, norm, rope, &bias, &format!("{name}/attention"))
            }
            Rotation::Cache(cache) => {
                let (q, k) = match &norms {
                    Some((qn, kn)) => (
                        per_head_norm(g, &q, qn, d, eps, &format!("{name}/attention/q_norm")),
                        per_head_norm(g, &k, kn, d, eps, &format!("{name}/attention/k_norm")),
                    ),
                    None => (q, k),
                };
                let attend = GroupQuery { heads: cfg.heads, kv_heads: cfg.kv_heads, window: slides.then_some(rot.window), rotary: cache };
                g.group_query_attention(&q, &k, &v, attend, &format!("{name}/attention"))
            }
        };
        pending = Some(g.linear(&a, &t("self_attn.o_proj", &[h, q_rows])?, None, &format!("{name}/attention/o")));
        let m = rotary::pre_norm(
            g,
            &mut x,
            pending.take(),
            Norm::Rms(&t("post_attention_layernorm", &[h])?),
            eps,
            &format!("{name}/post_attention_layernorm"),
        );
        let (gate, up) = (t("mlp.gate_proj", &[cfg.intermediate, h])?, t("mlp.up_proj", &[cfg.intermediate, h])?);
        pending =
            Some(rotary::gated_mlp(g, &m, &gate, &up, &t("mlp.down_proj", &[h, cfg.intermediate])?, None, cfg.act, &format!("{name}/mlp")));
    }
    Ok(rotary::pre_norm(g, &mut x, pending, Norm::Rms(&w.get("norm.weight", &[h])?), eps, "norm"))
}

/// How the decoder rotates Q and K.
enum Rotation {
    /// In standard operators, with [`rotary::rope`]'s tables.
    Tables(rotary::Rope),
    /// Inside GroupQueryAttention, with [`rotary::cache`].
    Cache(crate::graph::RotaryCache),
}

/// Qwen3's RMSNorm of each head of `x` (`[B, S, heads * head_dim]`) as one
/// SimplifiedLayerNormalization over `[B, S, heads, head_dim]`.
fn per_head_norm(g: &mut Graph, x: &str, w: &Tensor, d: usize, eps: f32, name: &str) -> String {
    let (split, merge) =
        (g.ints(&format!("{name}/split"), &[4], &[0, 0, -1, d as i64]), g.ints(&format!("{name}/merge"), &[3], &[0, 0, -1]));
    let y = g.op("Reshape", &format!("{name}/Split"), &[x, &split], vec![]);
    let y = g.simplified_layer_norm(&y, w, eps, name);
    g.op("Reshape", &format!("{name}/Merge"), &[&y, &merge], vec![])
}

/// Why the fused form cannot be written for this decoder, if it cannot:
/// ONNX Runtime's GroupQueryAttention takes heads of a multiple of 16.
pub fn fused_form_refused(cfg: &ArchConfig) -> Option<String> {
    (!cfg.head_size.is_multiple_of(16))
        .then(|| format!("GroupQueryAttention needs a head size that is a multiple of 16, and this model's is {}", cfg.head_size))
}
