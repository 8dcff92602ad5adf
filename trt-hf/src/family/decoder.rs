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

use super::rotary::{self, Heads, Pattern, QkNorm};
use crate::arch::{ArchConfig, Family, Rotary};
use crate::graph::{attr_int, Graph};
use crate::weights::Weights;
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
    let rope = rotary::rope(g, rot.theta, d, cfg.max_positions, "rope");
    // Each mask is written once, and only when a layer uses it.
    let (mut causal, mut sliding) = (None, None);
    let heads = Heads { heads: cfg.heads, kv_heads: cfg.kv_heads, head_dim: d };
    let eps = cfg.layer_norm_eps;
    for i in 0..cfg.layers {
        let p = format!("layers.{i}");
        let name = format!("layer.{i}");
        let t = |n: &str, shape: &[usize]| w.get(&format!("{p}.{n}.weight"), shape);
        let b = |n: &str, rows: usize| if qkv_bias { w.get(&format!("{p}.{n}.bias"), &[rows]).map(Some) } else { Ok(None) };
        let bias = if rot.sliding.get(i).copied().unwrap_or(false) {
            sliding.get_or_insert_with(|| rotary::attention_bias(g, Pattern::CausalWindow(rot.window), cfg.max_positions, "sliding_mask"))
        } else {
            causal.get_or_insert_with(|| rotary::attention_bias(g, Pattern::Causal, cfg.max_positions, "causal_mask"))
        }
        .clone();
        let a = rotary::rms_norm(g, &x, &t("input_layernorm", &[h])?, eps, &format!("{name}/input_layernorm"));
        let q =
            g.linear(&a, &t("self_attn.q_proj", &[q_rows, h])?, b("self_attn.q_proj", q_rows)?.as_ref(), &format!("{name}/attention/q"));
        let k =
            g.linear(&a, &t("self_attn.k_proj", &[kv_rows, h])?, b("self_attn.k_proj", kv_rows)?.as_ref(), &format!("{name}/attention/k"));
        let v =
            g.linear(&a, &t("self_attn.v_proj", &[kv_rows, h])?, b("self_attn.v_proj", kv_rows)?.as_ref(), &format!("{name}/attention/v"));
        let norms = if qk_norm { Some((t("self_attn.q_norm", &[d])?, t("self_attn.k_norm", &[d])?)) } else { None };
        let norm = norms.as_ref().map(|(q, k)| QkNorm { q, k, eps });
        let a = rotary::attention(g, &q, &k, &v, heads, norm, &rope, &bias, &format!("{name}/attention"));
        let a = g.linear(&a, &t("self_attn.o_proj", &[h, q_rows])?, None, &format!("{name}/attention/o"));
        x = g.op("Add", &format!("{name}/attention/Residual"), &[&x, &a], vec![]);
        let m = rotary::rms_norm(g, &x, &t("post_attention_layernorm", &[h])?, eps, &format!("{name}/post_attention_layernorm"));
        let (gate, up) = (t("mlp.gate_proj", &[cfg.intermediate, h])?, t("mlp.up_proj", &[cfg.intermediate, h])?);
        let m = rotary::gated_mlp(g, &m, &gate, &up, &t("mlp.down_proj", &[h, cfg.intermediate])?, None, cfg.act, &format!("{name}/mlp"));
        x = g.op("Add", &format!("{name}/mlp/Residual"), &[&x, &m], vec![]);
    }
    Ok(rotary::rms_norm(g, &x, &w.get("norm.weight", &[h])?, eps, "norm"))
}
