//! `config.json`: which architecture family a folder holds and its
//! dimensions, read once into one shape ([`ArchConfig`]) whatever the
//! family calls its fields (`hidden_size` or DistilBERT's `dim`). The
//! dispatch on `model_type` happens here and nowhere else.
//!
//! | families | fields read |
//! |---|---|
//! | BERT, ELECTRA, RoBERTa, XLM-R, CamemBERT, DistilBERT, MPNet | `hidden_size` (`dim`), heads, layers, positions, token types, `layer_norm_eps`, `hidden_act` |
//! | ModernBERT, NomicBERT, GTE, Qwen3, Qwen2, Mistral | the same dimensions, plus grouped-query heads, `head_dim`, rotary thetas and which layers attend within a window ([`Rotary`]); both the `rope_parameters` / `layer_types` form transformers 5 writes and the older top-level fields hub configs hold |

use std::path::Path;

use crate::json::Fields;
use crate::{Error, Result};

/// The architecture families the importer writes graphs for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Family {
    /// BERT and ELECTRA (absolute positions, token types; ELECTRA may project its embeddings).
    Bert,
    /// RoBERTa, XLM-RoBERTa, CamemBERT (positions counted from `padding_idx + 1`).
    Roberta,
    /// DistilBERT (no token types, its own weight names).
    DistilBert,
    /// MPNet (RoBERTa-style positions plus a relative-position bias in every layer).
    MpNet,
    /// ModernBERT (pre-LayerNorm, rotary positions, alternating global and sliding-window attention, gated GELU).
    ModernBert,
    /// Qwen3 (a decoder: pre-RMSNorm, rotary positions, causal grouped-query attention, gated SiLU).
    Qwen3,
    /// Qwen2 (Qwen3's decoder with q/k/v biases and no q/k norm; sliding-window layers).
    Qwen2,
    /// Mistral (Qwen3's decoder without q/k norm; every layer within a sliding window when set).
    Mistral,
    /// NomicBERT (post-LayerNorm, rotary positions, gated SiLU, no biases).
    NomicBert,
    /// GTE (NomicBERT's layout with biases and gated GELU).
    Gte,
}

impl Family {
    /// Whether the family is one of the rotary ones (ModernBERT, NomicBERT, GTE, the decoders), whose config
    /// the rotary config reader (`rotary_config.rs`) reads.
    pub fn is_rotary(self) -> bool {
        !matches!(self, Family::Bert | Family::Roberta | Family::DistilBert | Family::MpNet)
    }
}

/// `model_type` values and their family.
pub const MODEL_TYPES: [(&str, Family); 14] = [
    ("bert", Family::Bert),
    ("electra", Family::Bert),
    ("roberta", Family::Roberta),
    ("xlm-roberta", Family::Roberta),
    ("camembert", Family::Roberta),
    ("distilbert", Family::DistilBert),
    ("mpnet", Family::MpNet),
    ("modernbert", Family::ModernBert),
    ("qwen3", Family::Qwen3),
    ("qwen2", Family::Qwen2),
    ("mistral", Family::Mistral),
    ("nomic_bert", Family::NomicBert),
    ("gte", Family::Gte),
    // Alibaba-NLP's remote-code GTE (gte-base-en-v1.5, gte-multilingual-base): the same layout.
    ("new", Family::Gte),
];

/// The feed-forward activation (`hidden_act`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Activation {
    /// Exact GELU, `x * Φ(x)` (`gelu`).
    Gelu,
    /// GELU's tanh approximation (`gelu_new`, `gelu_pytorch_tanh`, `gelu_fast`).
    GeluTanh,
    /// `relu`.
    Relu,
    /// `silu` / `swish`.
    Silu,
    /// `tanh`.
    Tanh,
}

impl Activation {
    const NAMES: [(&'static str, Activation); 8] = [
        ("gelu", Activation::Gelu),
        ("gelu_new", Activation::GeluTanh),
        ("gelu_pytorch_tanh", Activation::GeluTanh),
        ("gelu_fast", Activation::GeluTanh),
        ("relu", Activation::Relu),
        ("silu", Activation::Silu),
        ("swish", Activation::Silu),
        ("tanh", Activation::Tanh),
    ];

    /// The activation a config names, or an error listing those supported.
    pub fn named(name: &str, path: &Path, field: &str) -> Result<Activation> {
        Self::NAMES.iter().find(|(n, _)| *n == name).map(|(_, a)| *a).ok_or_else(|| Error::Unsupported {
            path: path.to_owned(),
            what: format!("{field} '{name}'"),
            supported: Self::NAMES.iter().map(|(n, _)| n.to_string()).collect(),
        })
    }
}

/// What the model computes on top of the encoder.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Task {
    /// The encoder's hidden states (`*Model`, `*ForMaskedLM`, ...): embeddings.
    Encoder,
    /// `*ForSequenceClassification`: classifiers and cross-encoders.
    SequenceClassification,
    /// `*ForTokenClassification`: a label per token (named entities).
    TokenClassification,
    /// `*ForCausalLM`: a decoder with its LM head (used as a yes/no reranker).
    CausalLm,
}

/// A folder's `config.json`, in one shape for every family.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ArchConfig {
    /// `model_type` as written.
    pub model_type: String,
    /// Its family.
    pub family: Family,
    /// `architectures[0]`, when given.
    pub architecture: Option<String>,
    /// What the checkpoint computes.
    pub task: Task,
    /// Vocabulary size.
    pub vocab_size: usize,
    /// Hidden size.
    pub hidden: usize,
    /// Size of the embedding table rows (ELECTRA: may differ from `hidden`).
    pub embedding_size: usize,
    /// Encoder layers.
    pub layers: usize,
    /// Attention heads.
    pub heads: usize,
    /// Feed-forward inner size.
    pub intermediate: usize,
    /// Rows of the position table.
    pub max_positions: usize,
    /// Token types (0: the family takes no `token_type_ids`).
    pub type_vocab_size: usize,
    /// LayerNorm epsilon.
    pub layer_norm_eps: f32,
    /// Feed-forward activation.
    pub act: Activation,
    /// The padding id (RoBERTa-style positions start after it).
    pub pad_token_id: usize,
    /// MPNet's relative-position buckets.
    pub relative_buckets: usize,
    /// Class names by index (`id2label`), for classifiers.
    pub labels: Vec<String>,
    /// `problem_type` (`multi_label_classification` changes the activation).
    pub problem_type: Option<String>,
    /// Key/value heads (fewer than `heads` in grouped-query attention).
    pub kv_heads: usize,
    /// Per-head size (`head_dim`, else `hidden / heads`).
    pub head_size: usize,
    /// Rotary positions and attention pattern (ModernBERT and the decoders).
    pub rotary: Option<Rotary>,
}

/// Rotary position embeddings (rotate-half form, positions 0..n-1) and the
/// attention pattern of the families that use them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Rotary {
    /// `theta` of full-attention layers.
    pub theta: f64,
    /// `theta` of sliding-window layers.
    pub local_theta: f64,
    /// Per layer, whether it attends within the window only.
    pub sliding: Vec<bool>,
    /// Sliding layers: query i sees key j iff |i - j| <= window (and j <= i
    /// when causal: a decoder's `sliding_window` less one).
    pub window: usize,
    /// Whether key j is hidden from query i when j > i (decoders).
    pub causal: bool,
}

/// Generous bounds on dimensions read from a file, so that a lying config
/// is refused before it sizes an allocation.
pub(crate) const MAX_DIM: usize = 1 << 20;
pub(crate) const MAX_LAYERS: usize = 1024;
const MAX_LABELS: usize = 1 << 16;

impl ArchConfig {
    /// Reads `config.json` of `dir`.
    pub fn read(dir: &Path) -> Result<ArchConfig> {
        let path = dir.join("config.json");
        if !path.is_file() {
            return Err(Error::Missing { path, why: "the architecture's configuration".into() });
        }
        Self::from_fields(&Fields::read(&path)?)
    }

    /// The config in `f` (the contents of a `config.json`).
    pub fn from_fields(f: &Fields) -> Result<ArchConfig> {
        let path = f.path();
        let model_type = f.opt_str("model_type")?.ok_or_else(|| f.error("model_type", "missing"))?.to_string();
        let family = MODEL_TYPES.iter().find(|(t, _)| *t == model_type).map(|(_, fam)| *fam).ok_or_else(|| Error::Unsupported {
            path: path.to_owned(),
            what: format!("model_type '{model_type}'"),
            supported: MODEL_TYPES.iter().map(|(t, _)| t.to_string()).collect(),
        })?;
        let architecture = f.opt_strings("architectures")?.and_then(|a| a.into_iter().next());
        let task = match architecture.as_deref() {
            Some(a) if a.ends_with("ForSequenceClassification") => Task::SequenceClassification,
            Some(a) if a.ends_with("ForTokenClassification") => Task::TokenClassification,
            Some(a) if a.ends_with("ForCausalLM") => Task::CausalLm,
            _ => Task::Encoder,
        };
        if family.is_rotary() {
            let (labels, problem_type) = labels(f)?;
            return crate::rotary_config::read(f, family, model_type, architecture, task, labels, problem_type);
        }
        let distil = family == Family::DistilBert;
        let name = |bert: &'static str, distil_name: &'static str| if distil { distil_name } else { bert };
        let hidden = f.count(name("hidden_size", "dim"), MAX_DIM)?;
        let heads = f.count(name("num_attention_heads", "n_heads"), MAX_DIM)?;
        if hidden % heads != 0 {
            return Err(f.error(name("num_attention_heads", "n_heads"), format!("{heads} heads do not divide the hidden size {hidden}")));
        }
        let act_field = name("hidden_act", "activation");
        let act = match f.opt_str(act_field)? {
            Some(a) => Activation::named(a, path, act_field)?,
            None => Activation::Gelu,
        };
        let embedding_size = match f.opt_usize("embedding_size")? {
            Some(e) if model_type == "electra" => e.clamp(1, MAX_DIM),
            _ => hidden,
        };
        let type_vocab_size = match family {
            Family::Bert => f.opt_usize("type_vocab_size")?.unwrap_or(2).min(MAX_DIM),
            Family::Roberta => f.opt_usize("type_vocab_size")?.unwrap_or(1).min(MAX_DIM),
            _ => 0,
        };
        if let Some(p) = f.opt_str("position_embedding_type")? {
            if p != "absolute" {
                return Err(Error::Unsupported {
                    path: path.to_owned(),
                    what: format!("position_embedding_type '{p}'"),
                    supported: vec!["absolute".into()],
                });
            }
        }
        let default_pad = if matches!(family, Family::Roberta | Family::MpNet) { 1 } else { 0 };
        let pad_token_id = f.opt_usize("pad_token_id")?.unwrap_or(default_pad);
        let (labels, problem_type) = labels(f)?;
        let eps = if distil { 1e-12 } else { f.opt_f64("layer_norm_eps")?.unwrap_or(1e-12) };
        Ok(ArchConfig {
            family,
            architecture,
            task,
            vocab_size: f.count("vocab_size", 1 << 24)?,
            hidden,
            embedding_size,
            layers: f.count(name("num_hidden_layers", "n_layers"), MAX_LAYERS)?,
            heads,
            intermediate: f.count(name("intermediate_size", "hidden_dim"), MAX_DIM)?,
            max_positions: f.count("max_position_embeddings", MAX_DIM)?,
            type_vocab_size,
            layer_norm_eps: eps as f32,
            act,
            pad_token_id,
            relative_buckets: if family == Family::MpNet {
                f.opt_usize("relative_attention_num_buckets")?.unwrap_or(32).clamp(2, 4096)
            } else {
                0
            },
            labels,
            problem_type,
            model_type,
            kv_heads: heads,
            head_size: hidden / heads,
            rotary: None,
        })
    }

    /// Per-head size.
    pub fn head_dim(&self) -> usize {
        self.head_size
    }

    /// The longest sequence the position table allows: RoBERTa-style
    /// positions start at `pad_token_id + 1`, so that many rows are unusable.
    pub fn position_limit(&self) -> usize {
        match self.family {
            Family::Roberta | Family::MpNet => self.max_positions.saturating_sub(self.pad_token_id + 1),
            _ => self.max_positions,
        }
    }
}

/// `id2label` (else `num_labels`, else 2 labels `LABEL_i`) and `problem_type`.
pub(crate) fn labels(f: &Fields) -> Result<(Vec<String>, Option<String>)> {
    let problem_type = f.opt_str("problem_type")?.map(str::to_string);
    let by_id = f.opt_string_map("id2label")?;
    let labels = match by_id {
        Some(pairs) if !pairs.is_empty() => {
            let n = pairs.len();
            if n > MAX_LABELS {
                return Err(f.error("id2label", format!("{n} labels; at most {MAX_LABELS}")));
            }
            let mut labels = vec![None; n];
            for (k, v) in pairs {
                let i: usize = k.parse().map_err(|_| f.error("id2label", format!("key '{k}' is not a class index")))?;
                let slot = labels.get_mut(i).ok_or_else(|| f.error("id2label", format!("index {i} with only {n} labels")))?;
                *slot = Some(v);
            }
            labels.into_iter().map(|l| l.unwrap_or_default()).collect()
        }
        _ => {
            let n = f.opt_usize("num_labels")?.unwrap_or(2).clamp(1, MAX_LABELS);
            (0..n).map(|i| format!("LABEL_{i}")).collect()
        }
    };
    Ok((labels, problem_type))
}
