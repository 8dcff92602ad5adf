//! DistilBERT: BERT's embeddings without token types (its config has no
//! type table, so [`super::bert::embeddings`] writes them), its own layer
//! names, and a ReLU pre-classifier.

use super::{first_token_head, HeadDense, LayerNames};
use crate::arch::{Activation, ArchConfig};
use crate::graph::Graph;
use crate::weights::Weights;
use crate::Result;

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
