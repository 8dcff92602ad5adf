//! One module per architecture family: each says which tensors its
//! checkpoints hold, how its embeddings and classification head are
//! computed; the post-LayerNorm encoder stack the BERT-like families share
//! is here, the blocks of the rotary families in [`rotary`].
//!
//! | module | `model_type` | embeddings and layers | head of `*ForSequenceClassification` |
//! |---|---|---|---|
//! | [`bert`] | `bert`, `electra` | word + absolute position + token type (ELECTRA: projected to the hidden size); post-LN | BERT: pooler (dense, tanh) then linear; ELECTRA: dense, GELU, linear |
//! | [`roberta`] | `roberta`, `xlm-roberta`, `camembert` | positions counted from `padding_idx + 1` over non-pad tokens; post-LN | dense, tanh, linear on `<s>` |
//! | [`distilbert`] | `distilbert` | word + absolute position; post-LN | dense, ReLU, linear on `[CLS]` |
//! | [`mpnet`] | `mpnet` | as RoBERTa, plus a relative-position bias on every layer's scores; post-LN | dense, tanh, linear on `<s>` |
//! | [`modernbert`] | `modernbert` | tokens, LayerNorm; pre-LN, rotary, global and sliding-window attention, gated GELU | not supported |
//! | [`rotary_encoder`] | `nomic_bert`, `gte` (`new`) | word + token type 0, LayerNorm; post-LN, rotary, bidirectional, gated SiLU / GELU | not supported |
//! | [`decoder`] | `qwen3`, `qwen2`, `mistral` | tokens only; pre-RMSNorm, rotary, causal grouped-query attention (sliding-window layers), gated SiLU | not supported (Qwen3's causal LM as a reranker: [`crate::rerank`]) |
//!
//! Every family is written in standard operators (the plain form) and in ONNX
//! Runtime's fused operators; the BERT-like families, NomicBERT and GTE also
//! run their layers packed. What a model cannot have is said by
//! [`fused_form_refused`] and [`packed_form_refused`] (the importer then
//! writes the next form down, with a warning).
//!
//! `*ForTokenClassification` checkpoints of the BERT-like families all put
//! `classifier` on every token's state ([`token_classifier`]); the masked-LM
//! head SPLADE reads is BERT's ([`mlm_head`]).

pub mod bert;
pub mod decoder;
pub mod distilbert;
pub mod modernbert;
pub mod mpnet;
pub mod roberta;
pub mod rotary;
pub mod rotary_encoder;

use crate::arch::{Activation, ArchConfig, Family};
use crate::graph::{AttentionWeights, Graph};
use crate::weights::{Tensor, Weights};
use crate::{Error, Result};

/// The weight names of one post-LayerNorm encoder layer (each a prefix of
/// `.weight` / `.bias`).
pub struct LayerNames {
    /// Query, key, value and output projections.
    pub q: String,
    /// Key.
    pub k: String,
    /// Value.
    pub v: String,
    /// Attention output.
    pub o: String,
    /// LayerNorm after attention.
    pub ln_attention: String,
    /// Feed-forward in.
    pub ffn_in: String,
    /// Feed-forward out.
    pub ffn_out: String,
    /// LayerNorm after the feed-forward.
    pub ln_output: String,
}

/// The token inputs a family's graph takes, in order.
pub fn inputs(cfg: &ArchConfig) -> Vec<&'static str> {
    match cfg.family {
        Family::Bert if cfg.type_vocab_size > 0 => vec!["input_ids", "attention_mask", "token_type_ids"],
        _ => vec!["input_ids", "attention_mask"],
    }
}

/// The weight-name prefixes of the family's task checkpoints.
pub fn prefixes(cfg: &ArchConfig) -> &'static [&'static str] {
    match (cfg.family, cfg.model_type.as_str()) {
        (Family::Bert, "electra") => &["electra."],
        (Family::Bert, _) => &["bert."],
        (Family::Roberta, _) => &["roberta."],
        (Family::DistilBert, _) => &["distilbert."],
        (Family::MpNet, _) => &["mpnet."],
        (Family::NomicBert, _) => &["nomic_bert."],
        (Family::Gte, _) => &["gte.", "new."],
        _ => &["model."],
    }
}

/// The family's name in messages.
pub fn name(cfg: &ArchConfig) -> &'static str {
    match cfg.family {
        Family::Bert => "BERT",
        Family::Roberta => "RoBERTa",
        Family::DistilBert => "DistilBERT",
        Family::MpNet => "MPNet",
        Family::ModernBert => "ModernBERT",
        Family::Qwen3 => "Qwen3",
        Family::Qwen2 => "Qwen2",
        Family::Mistral => "Mistral",
        Family::NomicBert => "NomicBERT",
        Family::Gte => "GTE",
    }
}

/// The encoder's last hidden state, `[B, S, hidden]`.
pub fn encoder(g: &mut Graph, w: &Weights, cfg: &ArchConfig) -> Result<String> {
    let x = match (cfg.family, &cfg.rotary) {
        (Family::ModernBert, Some(rot)) => return modernbert::encoder(g, w, cfg, rot),
        (Family::NomicBert | Family::Gte, Some(rot)) => return rotary_encoder::encoder(g, w, cfg, rot),
        (_, Some(rot)) => return decoder::encoder(g, w, cfg, rot),
        (Family::Roberta, _) => roberta::embeddings(g, w, cfg)?,
        // DistilBERT's are BERT's with no token-type table.
        (Family::Bert | Family::DistilBert, _) => bert::embeddings(g, w, cfg)?,
        (Family::MpNet, _) => roberta::embeddings_without_types(g, w, cfg)?,
        (_, None) => return Err(no_head(w, cfg, "an encoder without rotary settings")),
    };
    let names: fn(usize) -> LayerNames = match cfg.family {
        Family::DistilBert => distilbert::layer_names,
        Family::MpNet => mpnet::layer_names,
        _ => bert::layer_names,
    };
    let len = g.seq_len("input_ids");
    let (x, mask, bias, padded) = match cfg.family {
        Family::MpNet if g.is_packed() => {
            let (x, bias) = aligned_with_bias(g, w, cfg, &x, &len)?;
            (x, g.mask_index(), Some(bias), true)
        }
        Family::MpNet => {
            let mask = if g.is_fused() { g.mask_index() } else { g.mask_bias("attention_mask") };
            (x, mask, Some(mpnet::position_bias(g, w, cfg, &len)?), false)
        }
        _ if g.is_fused() => (x, g.mask_index(), None, false),
        _ => (x, g.mask_bias("attention_mask"), None, false),
    };
    let mut x = if g.is_packed() { g.remove_padding(&x, &mask) } else { x };
    for i in 0..cfg.layers {
        x = post_ln_layer(g, w, cfg, &x, &names(i), &mask, bias.as_deref(), i)?;
    }
    let x = if g.is_packed() { g.restore_padding(&x) } else { x };
    Ok(if padded { g.leading(&x, &len, &[1], "encoder/unpad") } else { x })
}

/// The packed form of an encoder whose attention adds a bias to its scores
/// (MPNet's relative positions): the embeddings `x` padded to a sequence
/// length that is a multiple of [`crate::graph::SEQUENCE_ALIGN`], and the
/// bias for that length. ONNX Runtime's CUDA provider runs a biased
/// PackedAttention in its memory-efficient kernel only at such a length
/// (the offsets' row length); otherwise it writes out every score and runs
/// a separate softmax. Padded positions are past every row's length, so
/// RemovePadding drops them, and the caller slices them off after
/// RestorePadding. (The unpacked fused form needs none of this: its
/// Attention runs in cuDNN's fused kernel at any length, and the shape
/// arithmetic of the padding would put nodes on the CPU, which keeps CUDA
/// graphs from capturing it.)
fn aligned_with_bias(g: &mut Graph, w: &Weights, cfg: &ArchConfig, x: &str, len: &str) -> Result<(String, String)> {
    let padded_len = g.round_up(len, crate::graph::SEQUENCE_ALIGN, "encoder/aligned_length");
    let x = g.pad_sequence(x, len, &padded_len, "encoder/align");
    Ok((x, mpnet::position_bias(g, w, cfg, &padded_len)?))
}

/// Why the fused form ([`crate::Form::Fused`]) cannot be written for this
/// model, if it cannot.
pub fn fused_form_refused(cfg: &ArchConfig) -> Option<String> {
    match cfg.family {
        Family::Qwen3 | Family::Qwen2 | Family::Mistral => decoder::fused_form_refused(cfg),
        _ => None,
    }
}

/// Why the packed form ([`crate::Form::Packed`]) cannot be written for this
/// model, if it cannot (the fused form is written instead).
pub fn packed_form_refused(cfg: &ArchConfig) -> Option<String> {
    match cfg.family {
        Family::ModernBert => Some("its sliding layers' band has no packed attention here".into()),
        Family::Qwen3 | Family::Qwen2 | Family::Mistral => Some("GroupQueryAttention has no packed form".into()),
        _ => None,
    }
}

/// The `[B, labels]` logits of a `*ForSequenceClassification` checkpoint.
pub fn classifier(g: &mut Graph, w: &Weights, cfg: &ArchConfig, hidden: &str) -> Result<String> {
    match cfg.family {
        Family::Bert if cfg.model_type == "electra" => bert::electra_head(g, w, cfg, hidden),
        Family::Bert => bert::head(g, w, cfg, hidden),
        Family::Roberta | Family::MpNet => roberta::head(g, w, cfg, hidden),
        Family::DistilBert => distilbert::head(g, w, cfg, hidden),
        _ => Err(no_head(w, cfg, "a sequence-classification head")),
    }
}

/// The `[B, S, labels]` logits of a `*ForTokenClassification` checkpoint:
/// `classifier` on every token's state (the same name in every BERT-like family).
pub fn token_classifier(g: &mut Graph, w: &Weights, cfg: &ArchConfig, hidden: &str) -> Result<String> {
    if cfg.rotary.is_some() {
        return Err(no_head(w, cfg, "a token-classification head"));
    }
    let (cw, cb) = head_weights(w, "classifier", cfg.labels.len(), cfg.hidden)?;
    Ok(g.linear(hidden, &cw, Some(&cb), "head/token_classifier"))
}

/// The `[B, S, vocab]` logits of a `*ForMaskedLM` checkpoint (SPLADE's input).
pub fn mlm_head(g: &mut Graph, w: &Weights, cfg: &ArchConfig, hidden: &str) -> Result<String> {
    match cfg.family {
        Family::Bert if cfg.model_type == "bert" => bert::mlm_head(g, w, cfg, hidden),
        _ => Err(Error::Unsupported {
            path: w.path().with_file_name("config.json"),
            what: format!("a masked-LM head of {} ({})", name(cfg), cfg.architecture.as_deref().unwrap_or(&cfg.model_type)),
            supported: vec!["BertForMaskedLM (model_type bert)".into()],
        }),
    }
}

/// The error for a part of a family the importer does not write.
pub(crate) fn unsupported_head(w: &Weights, cfg: &ArchConfig, what: &str) -> Error {
    no_head(w, cfg, what)
}

fn no_head(w: &Weights, cfg: &ArchConfig, what: &str) -> Error {
    Error::Unsupported {
        path: w.path().with_file_name("config.json"),
        what: format!("{what} of {} ({})", name(cfg), cfg.architecture.as_deref().unwrap_or(&cfg.model_type)),
        supported: vec![format!("{}'s encoder with sentence-transformers pooling", name(cfg))],
    }
}

/// Where a head's first Linear lives.
pub enum HeadDense<'a> {
    /// In the encoder's weights (under the family's prefix: BERT's pooler).
    Encoder(&'a str),
    /// Among the head's own weights.
    Head(&'a str),
}

/// Every family's sequence-classification head: the first token's state
/// through a `[hidden, hidden]` Linear, `act`, and the `[labels, hidden]`
/// Linear called `out`.
pub fn first_token_head(
    g: &mut Graph,
    w: &Weights,
    cfg: &ArchConfig,
    hidden: &str,
    dense: HeadDense<'_>,
    act: Activation,
    out: &str,
) -> Result<String> {
    let h = cfg.hidden;
    let cls = g.token(hidden, 0, "head/cls");
    let (dw, db) = match dense {
        HeadDense::Encoder(name) => linear_weights(w, name, h, h)?,
        HeadDense::Head(name) => head_weights(w, name, h, h)?,
    };
    let x = g.linear(&cls, &dw, Some(&db), "head/dense");
    let x = g.activation(&x, act, "head/dense");
    let (ow, ob) = head_weights(w, out, cfg.labels.len(), h)?;
    Ok(g.linear(&x, &ow, Some(&ob), "head/out"))
}

/// `(weight [rows, cols], bias [rows])` of a Linear under `prefix`.
pub fn linear_weights(w: &Weights, prefix: &str, rows: usize, cols: usize) -> Result<(Tensor, Tensor)> {
    Ok((w.get(&format!("{prefix}.weight"), &[rows, cols])?, w.get(&format!("{prefix}.bias"), &[rows])?))
}

/// The same for a head's Linear, named exactly (no family prefix).
pub fn head_weights(w: &Weights, prefix: &str, rows: usize, cols: usize) -> Result<(Tensor, Tensor)> {
    Ok((w.get_exact(&format!("{prefix}.weight"), &[rows, cols])?, w.get_exact(&format!("{prefix}.bias"), &[rows])?))
}

/// LayerNorm `(weight, bias)` of size `n` under `prefix`.
pub fn norm_weights(w: &Weights, prefix: &str, n: usize) -> Result<(Tensor, Tensor)> {
    Ok((w.get(&format!("{prefix}.weight"), &[n])?, w.get(&format!("{prefix}.bias"), &[n])?))
}

/// One encoder layer: attention, residual, LayerNorm; feed-forward, residual, LayerNorm.
#[allow(clippy::too_many_arguments)]
fn post_ln_layer(
    g: &mut Graph,
    w: &Weights,
    cfg: &ArchConfig,
    x: &str,
    n: &LayerNames,
    mask: &str,
    bias: Option<&str>,
    i: usize,
) -> Result<String> {
    let h = cfg.hidden;
    let aw = AttentionWeights {
        q: linear_weights(w, &n.q, h, h)?,
        k: linear_weights(w, &n.k, h, h)?,
        v: linear_weights(w, &n.v, h, h)?,
        o: linear_weights(w, &n.o, h, h)?,
    };
    let name = format!("layer.{i}");
    if g.is_fused() {
        return fused_post_ln_layer(g, w, cfg, x, n, &aw, mask, bias, &name);
    }
    let a = g.attention(x, &aw, cfg.heads, mask, bias, &format!("{name}/attention"));
    let a = g.op("Add", &format!("{name}/attention/Residual"), &[&a, x], vec![]);
    let (lw, lb) = norm_weights(w, &n.ln_attention, h)?;
    let x = g.layer_norm(&a, &lw, &lb, cfg.layer_norm_eps, &format!("{name}/attention/LayerNorm"));
    let (w1, b1) = linear_weights(w, &n.ffn_in, cfg.intermediate, h)?;
    let f = g.linear(&x, &w1, Some(&b1), &format!("{name}/ffn/in"));
    let f = g.activation(&f, cfg.act, &format!("{name}/ffn/act"));
    let (w2, b2) = linear_weights(w, &n.ffn_out, h, cfg.intermediate)?;
    let f = g.linear(&f, &w2, Some(&b2), &format!("{name}/ffn/out"));
    let f = g.op("Add", &format!("{name}/ffn/Residual"), &[&f, &x], vec![]);
    let (lw, lb) = norm_weights(w, &n.ln_output, h)?;
    Ok(g.layer_norm(&f, &lw, &lb, cfg.layer_norm_eps, &format!("{name}/ffn/LayerNorm")))
}

/// [`post_ln_layer`] in ONNX Runtime's fused operators: one Attention, the
/// output projection's bias, residual and LayerNorm in one
/// SkipLayerNormalization, the feed-forward bias and exact GELU in one
/// BiasGelu (other activations as plain nodes), and a second
/// SkipLayerNormalization. `mask` is the 1-D mask index.
#[allow(clippy::too_many_arguments)]
fn fused_post_ln_layer(
    g: &mut Graph,
    w: &Weights,
    cfg: &ArchConfig,
    x: &str,
    n: &LayerNames,
    aw: &AttentionWeights,
    mask: &str,
    bias: Option<&str>,
    name: &str,
) -> Result<String> {
    let h = cfg.hidden;
    let ctx = g.fused_attention(x, aw, cfg.heads, mask, bias, &format!("{name}/attention"));
    let a = g.matmul_t(&ctx, &aw.o.0, &format!("{name}/attention/output"));
    let (lw, lb) = norm_weights(w, &n.ln_attention, h)?;
    let x = g.skip_layer_norm(&a, x, (&lw, &lb), &aw.o.1, cfg.layer_norm_eps, &format!("{name}/attention"));
    let (w1, b1) = linear_weights(w, &n.ffn_in, cfg.intermediate, h)?;
    let f = match cfg.act {
        crate::arch::Activation::Gelu => {
            let f = g.matmul_t(&x, &w1, &format!("{name}/ffn/in"));
            let b1 = g.weight(&b1);
            g.ms_op("BiasGelu", &format!("{name}/ffn/BiasGelu"), &[&f, &b1], vec![])
        }
        act => {
            let f = g.linear(&x, &w1, Some(&b1), &format!("{name}/ffn/in"));
            g.activation(&f, act, &format!("{name}/ffn/act"))
        }
    };
    let (w2, b2) = linear_weights(w, &n.ffn_out, h, cfg.intermediate)?;
    let f = g.matmul_t(&f, &w2, &format!("{name}/ffn/out"));
    let (lw, lb) = norm_weights(w, &n.ln_output, h)?;
    Ok(g.skip_layer_norm(&f, &x, (&lw, &lb), &b2, cfg.layer_norm_eps, &format!("{name}/ffn")))
}
