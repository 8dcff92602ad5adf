//! RoBERTa, XLM-RoBERTa and CamemBERT: positions are counted over the
//! non-padding tokens and start at `padding_idx + 1` (transformers'
//! `create_position_ids_from_input_ids`), so they depend on the ids, not on
//! where the padding is; no `token_type_ids` input (their tokenizers emit
//! none): the type table's first row is added to every token.

use super::{first_token_head, norm_weights, HeadDense};
use crate::arch::{Activation, ArchConfig};
use crate::graph::{attr_int, Graph};
use crate::weights::Weights;
use crate::Result;

/// `[B, S, hidden]` with the first token type's row added.
pub fn embeddings(g: &mut Graph, w: &Weights, cfg: &ArchConfig) -> Result<String> {
    let x = word_and_position(g, w, cfg)?;
    let types = w.get("embeddings.token_type_embeddings.weight", &[cfg.type_vocab_size.max(1), cfg.hidden])?;
    let first = g.floats("embeddings.token_type_embeddings.row0", &[cfg.hidden], &types.data[..cfg.hidden]);
    let x = g.op("Add", "embeddings/AddTokenType", &[&x, &first], vec![]);
    normalise(g, w, cfg, &x)
}

/// `[B, S, hidden]` without token types (MPNet).
pub fn embeddings_without_types(g: &mut Graph, w: &Weights, cfg: &ArchConfig) -> Result<String> {
    let x = word_and_position(g, w, cfg)?;
    normalise(g, w, cfg, &x)
}

fn normalise(g: &mut Graph, w: &Weights, cfg: &ArchConfig, x: &str) -> Result<String> {
    let (lw, lb) = norm_weights(w, "embeddings.LayerNorm", cfg.hidden)?;
    Ok(g.layer_norm(x, &lw, &lb, cfg.layer_norm_eps, "embeddings/LayerNorm"))
}

fn word_and_position(g: &mut Graph, w: &Weights, cfg: &ArchConfig) -> Result<String> {
    let h = cfg.hidden;
    let word = g.weight(&w.get("embeddings.word_embeddings.weight", &[cfg.vocab_size, h])?);
    let pos = g.weight(&w.get("embeddings.position_embeddings.weight", &[cfg.max_positions, h])?);
    let ids = g.token_input("input_ids");
    g.token_input("attention_mask");
    let x = g.op("Gather", "embeddings/word/Gather", &[&word, &ids], vec![attr_int("axis", 0)]);
    // position = cumsum(ids != pad) * (ids != pad) + pad, in INT32.
    let pad = g.ints32("embeddings/position/padding_idx", &[], &[cfg.pad_token_id as i32]);
    let is_pad = g.op("Equal", "embeddings/position/Equal", &[&ids, &pad], vec![]);
    let real = g.op("Not", "embeddings/position/Not", &[&is_pad], vec![]);
    let real = g.op("Cast", "embeddings/position/Cast", &[&real], vec![attr_int("to", 6)]);
    let axis = g.ints32("embeddings/position/axis", &[], &[1]);
    let count = g.op("CumSum", "embeddings/position/CumSum", &[&real, &axis], vec![]);
    let count = g.op("Mul", "embeddings/position/Mul", &[&count, &real], vec![]);
    let positions = g.op("Add", "embeddings/position/Add", &[&count, &pad], vec![]);
    let p = g.op("Gather", "embeddings/position/Gather", &[&pos, &positions], vec![attr_int("axis", 0)]);
    Ok(g.op("Add", "embeddings/AddPosition", &[&x, &p], vec![]))
}

/// RobertaForSequenceClassification (and MPNet's): dense, tanh, out_proj on `<s>`.
pub fn head(g: &mut Graph, w: &Weights, cfg: &ArchConfig, hidden: &str) -> Result<String> {
    first_token_head(g, w, cfg, hidden, HeadDense::Head("classifier.dense"), Activation::Tanh, "classifier.out_proj")
}
