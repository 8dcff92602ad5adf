//! The post-LayerNorm encoders with rotary positions and a gated
//! feed-forward: NomicBERT (`nomic_bert`) and GTE (`gte`; the hub's
//! Alibaba-NLP `new`). Word embeddings plus token type 0's row (texts go in
//! alone, so every token's type is 0), a LayerNorm, then per layer
//! `x = ln1(x + o(attention(x)))`, `x = ln2(x + down(act(gate(x)) * up(x)))`;
//! attention is bidirectional, every head rotated with one theta.
//!
//! The weights are read under the names the checkpoints hold (the hub's,
//! which transformers 5 also writes on save, converting on load):
//!
//! | part | NomicBERT | GTE |
//! |---|---|---|
//! | embedding LayerNorm | `emb_ln` | `embeddings.LayerNorm` |
//! | layer | `encoder.layers.{i}` | `encoder.layer.{i}` |
//! | fused q, k, v | `attn.Wqkv` (no bias) | `attention.qkv_proj` (bias) |
//! | output | `attn.out_proj` (no bias) | `attention.o_proj` (bias) |
//! | feed-forward | `mlp.fc11` (up), `mlp.fc12` (gate), `mlp.fc2` (down); no biases | `mlp.up_gate_proj` (`[up; gate]`), `mlp.down_proj` (bias) |
//! | LayerNorms | `norm1`, `norm2` | `attn_ln`, `mlp_ln` |

use super::rotary::{self, Heads, Pattern, Positions};
use super::{linear_weights, norm_weights};
use crate::arch::{ArchConfig, Family, Rotary};
use crate::graph::{attr_int, Graph, Norm};
use crate::weights::{Tensor, Weights};
use crate::Result;

/// `[B, S, hidden]`: the last layer's output.
pub fn encoder(g: &mut Graph, w: &Weights, cfg: &ArchConfig, rot: &Rotary) -> Result<String> {
    let (h, inter, eps) = (cfg.hidden, cfg.intermediate, cfg.layer_norm_eps);
    let qkv_rows = cfg.heads * cfg.head_size;
    let gte = cfg.family == Family::Gte;
    let word = g.weight(&w.get("embeddings.word_embeddings.weight", &[cfg.vocab_size, h])?);
    let ids = g.token_input("input_ids");
    g.token_input("attention_mask");
    let mut x = g.op("Gather", "embeddings/word/Gather", &[&word, &ids], vec![attr_int("axis", 0)]);
    if cfg.type_vocab_size > 0 {
        let types = w.get("embeddings.token_type_embeddings.weight", &[cfg.type_vocab_size, h])?;
        let type0 = g.weight(&rotary::rows(&types, 0..1));
        x = g.op("Add", "embeddings/AddTokenType0", &[&x, &type0], vec![]);
    }
    let (lw, lb) = norm_weights(w, if gte { "embeddings.LayerNorm" } else { "emb_ln" }, h)?;
    let mut x = g.layer_norm(&x, &lw, &lb, eps, "embeddings/LayerNorm");
    let heads = Heads { heads: cfg.heads, kv_heads: cfg.heads, head_dim: cfg.head_size };
    let lengths = g.is_fused().then(|| g.mask_index());
    // Packed, the layers run on the real tokens only, `[tokens, hidden]`.
    let positions = match lengths {
        Some(lengths) if g.is_packed() => {
            x = g.remove_padding(&x, &lengths);
            Positions::packed(g, rot.theta, cfg.head_size, cfg.max_positions, &x)
        }
        lengths => Positions::new(g, rot.theta, cfg.head_size, cfg.max_positions, Pattern::Full, lengths.as_deref(), "global"),
    };
    for i in 0..cfg.layers {
        let name = format!("layer.{i}");
        let p = if gte { format!("encoder.layer.{i}") } else { format!("encoder.layers.{i}") };
        let t = |n: &str, shape: &[usize]| w.get(&format!("{p}.{n}.weight"), shape);
        let bias = |n: &str, rows: usize| -> Result<Option<Tensor>> {
            if gte {
                w.get(&format!("{p}.{n}.bias"), &[rows]).map(Some)
            } else {
                Ok(None)
            }
        };
        let qkv_name = if gte { "attention.qkv_proj" } else { "attn.Wqkv" };
        let qkv = t(qkv_name, &[3 * qkv_rows, h])?;
        let qkv_b = bias(qkv_name, 3 * qkv_rows)?;
        let part = |k: usize| (k * qkv_rows)..((k + 1) * qkv_rows);
        let [q, k, v] = [0, 1, 2].map(|j| {
            let b = qkv_b.as_ref().map(|b| rotary::rows(b, part(j)));
            g.linear(&x, &rotary::rows(&qkv, part(j)), b.as_ref(), &format!("{name}/attention/{}", ["q", "k", "v"][j]))
        });
        let a = positions.attention(g, &q, &k, &v, heads, &format!("{name}/attention"));
        let o_name = if gte { "attention.o_proj" } else { "attn.out_proj" };
        let a = g.linear(&a, &t(o_name, &[h, qkv_rows])?, None, &format!("{name}/attention/o"));
        let (lw, lb) = norm_weights(w, &format!("{p}.{}", if gte { "attn_ln" } else { "norm1" }), h)?;
        x = post_norm(g, &a, bias(o_name, h)?.as_ref(), &x, (&lw, &lb), eps, &format!("{name}/attention"));
        let (up, gate) = if gte {
            let both = t("mlp.up_gate_proj", &[2 * inter, h])?;
            (rotary::rows(&both, 0..inter), rotary::rows(&both, inter..2 * inter))
        } else {
            (t("mlp.fc11", &[inter, h])?, t("mlp.fc12", &[inter, h])?)
        };
        let (down, down_b) = if gte {
            let (dw, db) = linear_weights(w, &format!("{p}.mlp.down_proj"), h, inter)?;
            (dw, Some(db))
        } else {
            (t("mlp.fc2", &[h, inter])?, None)
        };
        let m = rotary::gated_mlp(g, &x, &gate, &up, &down, None, cfg.act, &format!("{name}/mlp"));
        let (lw, lb) = norm_weights(w, &format!("{p}.{}", if gte { "mlp_ln" } else { "norm2" }), h)?;
        x = post_norm(g, &m, down_b.as_ref(), &x, (&lw, &lb), eps, &format!("{name}/mlp"));
    }
    Ok(if g.is_packed() { g.restore_padding(&x) } else { x })
}

/// `LayerNorm(x + delta + bias)`: one SkipLayerNormalization node in the
/// fused form; the bias, the residual Add and the LayerNorm otherwise.
fn post_norm(g: &mut Graph, delta: &str, bias: Option<&Tensor>, x: &str, ln: (&Tensor, &Tensor), eps: f32, name: &str) -> String {
    if g.is_fused() {
        return g.skip_norm(delta, x, Norm::Layer(ln.0, Some(ln.1)), bias, eps, false, name).0;
    }
    let delta = match bias {
        Some(b) => {
            let b = g.weight(b);
            g.op("Add", &format!("{name}/Bias"), &[delta, &b], vec![])
        }
        None => delta.to_string(),
    };
    let a = g.op("Add", &format!("{name}/Residual"), &[x, &delta], vec![]);
    g.layer_norm(&a, ln.0, ln.1, eps, &format!("{name}/LayerNorm"))
}
