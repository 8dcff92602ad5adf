//! BERT and ELECTRA: word, absolute position and token-type embeddings,
//! LayerNorm; ELECTRA projects its (smaller) embeddings to the hidden size.

use super::{first_token_head, head_weights, linear_weights, norm_weights, HeadDense, LayerNames};
use crate::arch::{Activation, ArchConfig};
use crate::graph::{attr_int, Graph};
use crate::weights::Weights;
use crate::Result;

/// `[B, S, hidden]`: the embeddings, normalised (and projected for ELECTRA).
pub fn embeddings(g: &mut Graph, w: &Weights, cfg: &ArchConfig) -> Result<String> {
    let e = cfg.embedding_size;
    let word = g.weight(&w.get("embeddings.word_embeddings.weight", &[cfg.vocab_size, e])?);
    let pos = g.weight(&w.get("embeddings.position_embeddings.weight", &[cfg.max_positions, e])?);
    let ids = g.token_input("input_ids");
    g.token_input("attention_mask");
    let x = g.op("Gather", "embeddings/word/Gather", &[&word, &ids], vec![attr_int("axis", 0)]);
    // Positions 0..S-1: the table's first S rows, broadcast over the batch.
    let len = g.seq_len(&ids);
    let p = g.leading(&pos, &len, &[0], "embeddings/position");
    let mut x = g.op("Add", "embeddings/AddPosition", &[&x, &p], vec![]);
    if cfg.type_vocab_size > 0 {
        let types = g.weight(&w.get("embeddings.token_type_embeddings.weight", &[cfg.type_vocab_size, e])?);
        let tt = g.token_input("token_type_ids");
        let t = g.op("Gather", "embeddings/token_type/Gather", &[&types, &tt], vec![attr_int("axis", 0)]);
        x = g.op("Add", "embeddings/AddTokenType", &[&x, &t], vec![]);
    }
    let (lw, lb) = norm_weights(w, "embeddings.LayerNorm", e)?;
    let x = g.layer_norm(&x, &lw, &lb, cfg.layer_norm_eps, "embeddings/LayerNorm");
    if e != cfg.hidden {
        let (pw, pb) = linear_weights(w, "embeddings_project", cfg.hidden, e)?;
        return Ok(g.linear(&x, &pw, Some(&pb), "embeddings/project"));
    }
    Ok(x)
}

/// `encoder.layer.{i}`'s weights (BERT, ELECTRA and the RoBERTa family share them).
pub fn layer_names(i: usize) -> LayerNames {
    let p = format!("encoder.layer.{i}");
    LayerNames {
        q: format!("{p}.attention.self.query"),
        k: format!("{p}.attention.self.key"),
        v: format!("{p}.attention.self.value"),
        o: format!("{p}.attention.output.dense"),
        ln_attention: format!("{p}.attention.output.LayerNorm"),
        ffn_in: format!("{p}.intermediate.dense"),
        ffn_out: format!("{p}.output.dense"),
        ln_output: format!("{p}.output.LayerNorm"),
    }
}

/// BertForSequenceClassification: the pooler (dense, tanh) on `[CLS]`, then the classifier.
pub fn head(g: &mut Graph, w: &Weights, cfg: &ArchConfig, hidden: &str) -> Result<String> {
    first_token_head(g, w, cfg, hidden, HeadDense::Encoder("pooler.dense"), Activation::Tanh, "classifier")
}

/// ElectraForSequenceClassification: dense, GELU, out_proj on `[CLS]`.
pub fn electra_head(g: &mut Graph, w: &Weights, cfg: &ArchConfig, hidden: &str) -> Result<String> {
    first_token_head(g, w, cfg, hidden, HeadDense::Head("classifier.dense"), Activation::Gelu, "classifier.out_proj")
}

/// BertForMaskedLM's head: `[B, S, vocab]` logits from
/// `cls.predictions.transform` (dense, the config's activation, LayerNorm)
/// and the decoder, whose weight is tied to the word embeddings unless the
/// checkpoint stores `cls.predictions.decoder.weight`.
pub fn mlm_head(g: &mut Graph, w: &Weights, cfg: &ArchConfig, hidden: &str) -> Result<String> {
    let h = cfg.hidden;
    let (dw, db) = head_weights(w, "cls.predictions.transform.dense", h, h)?;
    let x = g.linear(hidden, &dw, Some(&db), "mlm/transform/dense");
    let x = g.activation(&x, cfg.act, "mlm/transform");
    let (lw, lb) =
        (w.get_exact("cls.predictions.transform.LayerNorm.weight", &[h])?, w.get_exact("cls.predictions.transform.LayerNorm.bias", &[h])?);
    let x = g.layer_norm(&x, &lw, &lb, cfg.layer_norm_eps, "mlm/transform/LayerNorm");
    let decoder = match w.has_exact("cls.predictions.decoder.weight") {
        true => w.get_exact("cls.predictions.decoder.weight", &[cfg.vocab_size, h])?,
        false => w.get("embeddings.word_embeddings.weight", &[cfg.vocab_size, h])?,
    };
    let bias = match w.has_exact("cls.predictions.bias") {
        true => w.get_exact("cls.predictions.bias", &[cfg.vocab_size])?,
        false => w.get_exact("cls.predictions.decoder.bias", &[cfg.vocab_size])?,
    };
    Ok(g.linear(&x, &decoder, Some(&bias), "mlm/decoder"))
}
