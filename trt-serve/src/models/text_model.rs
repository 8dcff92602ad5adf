//! A model config bound to trt-nlp's [`TextModel`]: the server keeps the
//! protocol side (the text input, the outputs the config declares and their
//! dims); tokenizing, running, pooling and cutting rows are trt-nlp's.
//!
//! What the config declares decides what is exposed: every `output` entry
//! names a model output, except `embedding`, which trt-nlp computes from the
//! model's `[batch, seq, hidden]` output with the model folder's pooling
//! (mean by default), L2-normalised where the folder says so
//! ([`trt_nlp::Selection::by_names`]).
//!
//! A token classifier's config may also declare `entities` (TYPE_STRING,
//! dims `[1]`, beside its `logits`): each text's entities as one JSON
//! string, grouped by the config parameter `aggregation_strategy` (`none`,
//! `simple` (the default), `first`, `max`, `average`: transformers'
//! strategies; module `token_classification` computes them).

use std::sync::Arc;

use trt_nlp::ner::Aggregation;
use trt_nlp::{Labels, Selection, TextModel};

use crate::config::ModelConfig;
use crate::error::{ServeError, ServeResult};
use crate::protocols::kserve::DataType;

/// A text model and the outputs its config exposes.
#[derive(Debug)]
pub struct ConfiguredModel {
    model: Arc<TextModel>,
    outputs: Arc<Selection>,
    entities: Option<Aggregation>,
}

/// The output a token classifier's config may declare for its entities.
pub const ENTITIES: &str = trt_hf::ENTITIES_OUTPUT;

/// The config parameter that picks the entities' aggregation strategy.
pub const AGGREGATION: &str = "aggregation_strategy";

/// The `entities` output `config` declares, with its aggregation strategy,
/// or `None`; refused unless `model` classifies tokens and `logits` is declared too.
fn entities_of(config: &ModelConfig, model: &TextModel) -> ServeResult<Option<Aggregation>> {
    let Some(o) = config.outputs.iter().find(|o| o.name == ENTITIES) else { return Ok(None) };
    let why = |m: String| Err(ServeError::invalid(format!("model '{}': output '{ENTITIES}': {m}", config.name)));
    if o.data_type != DataType::Bytes || o.dims != [1] {
        return why("declare it { data_type: TYPE_STRING dims: [ 1 ] }".into());
    }
    if !model.layout().model_outputs().any(|m| m.name == "logits" && m.rank == 3) {
        return why("the model has no [batch, sequence, labels] logits: it does not classify tokens".into());
    }
    if !config.outputs.iter().any(|o| o.name == "logits") {
        return why("declare the 'logits' output beside it (the entities are computed from them)".into());
    }
    match config.parameters.iter().find(|(k, _)| k == AGGREGATION) {
        None => Ok(Some(Aggregation::Simple)),
        Some((_, v)) => match Aggregation::named(v) {
            Some(a) => Ok(Some(a)),
            None => why(format!("parameter {AGGREGATION} '{v}' is none of none, simple, first, max, average")),
        },
    }
}

/// The text input's name in a config: the one `TYPE_STRING` input with `dims: [1]`.
pub fn text_input(config: &ModelConfig) -> ServeResult<&str> {
    match config.inputs.as_slice() {
        [t] if t.data_type == DataType::Bytes && t.dims == [1] => Ok(&t.name),
        _ => Err(ServeError::invalid(format!(
            "model '{}' is not a text model: a text model's config declares one input \
             {{ name: \"text\" data_type: TYPE_STRING dims: [ 1 ] }}",
            config.name
        ))),
    }
}

/// Whether `config` describes a text model (else a tensor model: `tensor_model`).
pub fn is_text_model(config: &ModelConfig) -> bool {
    text_input(config).is_ok()
}

impl ConfiguredModel {
    /// `model`, exposing the outputs `config` declares: each TYPE_FP32, each
    /// a model output of the declared rank, or the pooled [`trt_nlp::EMBEDDING`].
    pub fn new(config: &ModelConfig, model: TextModel) -> ServeResult<Self> {
        text_input(config)?;
        if config.outputs.is_empty() {
            return Err(ServeError::invalid(format!("model '{}': a text model's config declares its outputs", config.name)));
        }
        let entities = entities_of(config, &model)?;
        let layout = model.layout();
        for o in config.outputs.iter().filter(|o| o.name != ENTITIES) {
            if o.data_type != DataType::Fp32 {
                return Err(ServeError::invalid(format!(
                    "output '{}': data_type {} is not served (outputs are TYPE_FP32)",
                    o.name,
                    o.data_type.config_name()
                )));
            }
            if let Some(spec) = layout.outputs.iter().find(|e| e.name == o.name) {
                if spec.rank != o.dims.len() + 1 {
                    return Err(ServeError::invalid(format!(
                        "output '{}': dims {:?} do not match the model's rank {} (batch included)",
                        o.name, o.dims, spec.rank
                    )));
                }
            }
        }
        let names: Vec<&str> = config.outputs.iter().map(|o| o.name.as_str()).filter(|&n| n != ENTITIES).collect();
        let outputs = model.select(&names).map_err(|e| ServeError::invalid(format!("model '{}': {e}", config.name)))?;
        Ok(ConfiguredModel { model: Arc::new(model), outputs: Arc::new(outputs), entities })
    }

    /// The aggregation strategy of the `entities` output, where the config declares one.
    pub fn entities(&self) -> Option<Aggregation> {
        self.entities
    }

    /// The text model (for what the config does not name: embeddings and
    /// labels through [`TextModel::embed`] and [`TextModel::classify`], other selections).
    pub fn model(&self) -> &Arc<TextModel> {
        &self.model
    }

    /// The outputs the config exposes, in config order.
    pub fn outputs(&self) -> &Arc<Selection> {
        &self.outputs
    }

    /// The tokenizer pipeline (routes that tokenize before they queue).
    pub fn pipeline(&self) -> &Arc<trt_nlp::TokenizerPipeline> {
        self.model.pipeline()
    }

    /// The backend's name (`onnxruntime`, `tensorrt`).
    pub fn backend_name(&self) -> &str {
        self.model.backend().name()
    }

    /// Class names (the classification extension's labels).
    pub fn labels(&self) -> &Labels {
        self.model.labels()
    }

    /// Largest batch the backend runs at once.
    pub fn max_batch(&self) -> usize {
        self.model.max_batch()
    }

    /// Longest sequence the backend takes (longer texts are truncated).
    pub fn max_seq(&self) -> usize {
        self.model.max_seq()
    }

    /// Batches that can run at once.
    pub fn instances(&self) -> usize {
        self.model.instances()
    }
}
