//! DistilBERT: word and absolute position embeddings (no token types), its
//! own layer names, and a ReLU pre-classifier.

use super::{first_token_head, norm_weights, HeadDense, LayerNames};
use crate::arch::{Activation, ArchConfig};
use crate::graph::{attr_int, Graph};
use crate::weights::Weights;
use crate::Result;

/// `[B, S, hidden]`.
pub fn embeddings(g: &mut Graph, w: &Weights, cfg: &ArchConfig) -> Result<String> {
    let h = cfg.hidden;
    let word = g.weight(&w.get("embeddings.word_embeddings.weight", &[cfg.vocab_size, h])?);
    let pos = g.weight(&w.get("embeddings.position_embeddings.weight", &[cfg.max_positions, h])?);
    let ids = g.token_input("input_ids");
    g.token_input("attention_mask");
    let x = g.op("Gather", "embeddings/word/Gather", &[&word, &ids], vec![attr_int("axis", 0)]);
    let len = g.seq_len(&ids);
    let p = g.leading(&pos, &len, &[0], "embeddings/position");
    let x = g.op("Add", "embeddings/AddPosition", &[&x, &p], vec![]);
    let (lw, lb) = norm_weights(w, "embeddings.LayerNorm", h)?;
    Ok(g.layer_norm(&x, &lw, &lb, cfg.layer_norm_eps, "embeddings/LayerNorm"))
}

/// `transformer.layer.{i}`'s weights.
pub fn layer_names(i: usize) -> LayerNames {
    let p = format!("transformer.layer.{i}");
    LayerNames {
        q: format!("{p}.attention.q_lin"),
        k: format!("{p}.attention.k_lin"),
        v: format!("{p}.attention.v_lin"),
        o: format!("{p}.attention.out_lin"),
        ln_attention: format!("{p}.sa_layer_norm"),
        ffn_in: format!("{p}.ffn.lin1"),
        ffn_out: format!("{p}.ffn.lin2"),
        ln_output: format!("{p}.output_layer_norm"),
    }
}

/// DistilBertForSequenceClassification: pre_classifier, ReLU, classifier on `[CLS]`.
pub fn head(g: &mut Graph, w: &Weights, cfg: &ArchConfig, hidden: &str) -> Result<String> {
    first_token_head(g, w, cfg, hidden, HeadDense::Head("pre_classifier"), Activation::Relu, "classifier")
}
