//! A HuggingFace model folder as a whole: the architecture (`config.json`),
//! the tokenizer files, the sentence-transformers modules, and the
//! decisions they imply together: what the graph computes, where texts are
//! truncated, which activation turns logits into scores.

use std::path::{Path, PathBuf};

use crate::arch::{ArchConfig, Task};
use crate::json::Fields;
use crate::st::{Act, SentenceConfig};
use crate::{Error, Result};

/// How a classifier's logits become scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ScoreActivation {
    /// Softmax over the labels (single-label classifiers).
    Softmax,
    /// A sigmoid per label (multi-label classifiers, one-logit cross-encoders).
    Sigmoid,
    /// The logits as they are.
    Identity,
}

/// What the imported model answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ModelTask {
    /// A sentence embedding per text.
    Embedding,
    /// Logits per text (or per text pair, for cross-encoders).
    Classification,
    /// Logits per token (`[batch, sequence, labels]`): named entities.
    TokenClassification,
    /// A vocabulary-sized sparse vector per text (SPLADE).
    SparseEmbedding,
}

/// A HuggingFace model folder, read.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HfFolder {
    /// The folder.
    pub dir: PathBuf,
    /// The Transformer module's folder (the folder itself, except in old
    /// sentence-transformers layouts).
    pub transformer_dir: PathBuf,
    /// `config.json`.
    pub arch: ArchConfig,
    /// The sentence-transformers files.
    pub sentence: SentenceConfig,
    /// `tokenizer.json`.
    pub tokenizer: PathBuf,
    /// `tokenizer_config.json`'s `model_max_length`, when it is a real limit.
    pub model_max_length: Option<usize>,
    /// `tokenizer_config.json`'s `padding_side`.
    pub padding_side: Option<String>,
    /// `tokenizer_config.json`'s `pad_token` (a string, or an added token's `content`).
    pub pad_token: Option<String>,
}

/// tokenizers writes `1e30` for "no limit".
const NO_LIMIT: f64 = 1e9;

impl HfFolder {
    /// Reads the folder; the first file that is missing or wrong is the error.
    pub fn open(dir: &Path) -> Result<HfFolder> {
        if !dir.is_dir() {
            return Err(Error::Missing { path: dir.to_owned(), why: "a HuggingFace model folder".into() });
        }
        let sentence = SentenceConfig::read(dir)?;
        let transformer_dir = dir.join(&sentence.transformer_path);
        let arch = ArchConfig::read(&transformer_dir)?;
        let tokenizer = [transformer_dir.join("tokenizer.json"), dir.join("tokenizer.json")].into_iter().find(|p| p.is_file()).ok_or_else(|| {
            Error::Missing {
                path: transformer_dir.join("tokenizer.json"),
                why: "the fast tokenizer (tokenizer.json); a folder with only vocab.txt or a sentencepiece model needs it written by `tokenizers`".into(),
            }
        })?;
        let tc = tokenizer.with_file_name("tokenizer_config.json");
        let (model_max_length, padding_side, pad_token) = if tc.is_file() {
            let f = Fields::read(&tc)?;
            let max = f.opt_f64("model_max_length")?.filter(|m| (1.0..NO_LIMIT).contains(m)).map(|m| m as usize);
            (max, f.opt_str("padding_side")?.map(str::to_string), special_token(&f, "pad_token")?)
        } else {
            (None, None, None)
        };
        if sentence.transformer_task.as_deref() == Some("fill-mask") && sentence.splade().is_none() {
            return Err(Error::Unsupported {
                path: dir.join("modules.json"),
                what: "a masked-LM Transformer (transformer_task fill-mask) without SpladePooling".into(),
                supported: vec!["MLMTransformer followed by SpladePooling (a SPLADE sparse encoder)".into()],
            });
        }
        if let Some((_, false)) = sentence.pooling() {
            if !sentence.prompts.is_empty() {
                return Err(Error::Unsupported {
                    path: dir.join("modules.json"),
                    what: "pooling that leaves the prompt's tokens out (include_prompt: false)".into(),
                    supported: vec!["include_prompt: true".into()],
                });
            }
        }
        Ok(HfFolder { dir: dir.to_owned(), transformer_dir, arch, sentence, tokenizer, model_max_length, padding_side, pad_token })
    }

    /// What the model answers: a `*ForSequenceClassification` checkpoint
    /// classifies (a classifier, or a cross-encoder, whose sentence-transformers
    /// 5+ folder has a `modules.json` with a Transformer alone), a
    /// `*ForTokenClassification` one labels tokens, a `*ForCausalLM` one is a
    /// yes/no reranker (two logits), a SPLADE sparse encoder
    /// gives sparse vectors; anything with a Pooling
    /// module, and bare encoders, embed.
    pub fn task(&self) -> ModelTask {
        if self.sentence.splade().is_some() {
            return ModelTask::SparseEmbedding;
        }
        match self.arch.task {
            Task::SequenceClassification if self.sentence.pooling().is_none() => ModelTask::Classification,
            Task::TokenClassification if self.sentence.pooling().is_none() => ModelTask::TokenClassification,
            // A causal LM scores pairs through two of its logits: a two-label classifier.
            Task::CausalLm if self.sentence.pooling().is_none() => ModelTask::Classification,
            _ => ModelTask::Embedding,
        }
    }

    /// Where texts are cut, in tokens (special tokens included), as
    /// sentence-transformers cuts them: `sentence_bert_config.json`'s
    /// `max_seq_length`, else the tokenizer's `model_max_length`, never past
    /// what the position table holds.
    pub fn max_seq_length(&self) -> usize {
        let limit = self.arch.position_limit();
        self.sentence.max_seq_length.or(self.model_max_length).unwrap_or(limit).clamp(1, limit.max(1))
    }

    /// How a classifier's logits become scores: a cross-encoder's own
    /// activation where its files name one; else sigmoid for multi-label
    /// classifiers and single-logit models (as transformers' pipelines and
    /// sentence-transformers' CrossEncoder do), softmax otherwise.
    pub fn activation(&self) -> ScoreActivation {
        match self.sentence.cross_encoder_activation {
            Some(Act::Sigmoid) => ScoreActivation::Sigmoid,
            Some(Act::Identity) => ScoreActivation::Identity,
            _ if self.arch.problem_type.as_deref() == Some("multi_label_classification") || self.arch.labels.len() == 1 => {
                ScoreActivation::Sigmoid
            }
            _ => ScoreActivation::Softmax,
        }
    }
}

/// Whether `dir` looks like a HuggingFace model folder to import: a
/// `config.json` beside weights (safetensors, or a `pytorch_model.bin`,
/// which the import then refuses saying why), or a sentence-transformers
/// `modules.json`; and no model file of this project's own.
pub fn is_hf_folder(dir: &Path) -> bool {
    let own = ["model.onnx", "model.plan", "model.engine", "config.pbtxt"].iter().any(|f| dir.join(f).is_file());
    let weights = crate::weights::WEIGHT_FILES.iter().chain(&["pytorch_model.bin"]).any(|f| dir.join(f).is_file());
    !own && (dir.join("modules.json").is_file() || (dir.join("config.json").is_file() && weights))
}

/// A special token of `tokenizer_config.json` (`pad_token`, `cls_token`, ...):
/// a string, or an added-token object's `content`.
pub(crate) fn special_token(f: &Fields, name: &str) -> Result<Option<String>> {
    Ok(match f.value(name) {
        Some(serde_json::Value::Object(_)) => f.object(name)?.and_then(|o| o.opt_str("content").ok().flatten().map(str::to_string)),
        _ => f.opt_str(name)?.map(str::to_string),
    })
}

/// The id of `token` in a `tokenizer.json`: an added token's, else the model vocabulary's.
pub(crate) fn token_id(t: &serde_json::Value, token: &str) -> Option<u64> {
    let added = t.get("added_tokens").and_then(|a| a.as_array()).and_then(|a| {
        a.iter().find(|e| e.get("content").and_then(|c| c.as_str()) == Some(token)).and_then(|e| e.get("id")).and_then(|i| i.as_u64())
    });
    added.or_else(|| t.get("model").and_then(|m| m.get("vocab")).and_then(|v| v.get(token)).and_then(|i| i.as_u64()))
}
