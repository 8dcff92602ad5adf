//! sentence-transformers' conventions, read in one place: `modules.json`
//! (which modules run, in which order, from which folder), the Pooling,
//! Dense and Normalize modules' files, `sentence_bert_config.json`
//! (`max_seq_length`, `do_lower_case`), `config_sentence_transformers.json`
//! (prompts, default prompt, similarity function) and a cross-encoder's
//! activation.
//!
//! A SPLADE model (sentence-transformers' SparseEncoder: an `MLMTransformer`
//! then `SpladePooling`) is read too: its Transformer is the masked-LM
//! model, its pooling a [`Module::Splade`].
//!
//! Both layouts that occur in the wild are read: the hub's
//! (`sentence_transformers.models.Pooling`, `pooling_mode_*` flags,
//! `word_embedding_dimension`) and sentence-transformers 5's
//! (`sentence_transformers.base.modules.*` type names, `"pooling_mode":
//! "mean"`, `embedding_dimension`). Module types are matched by their last
//! path segment, so both spellings of each module are one case here.

use std::path::{Component, Path, PathBuf};

use crate::json::Fields;
use crate::{Error, Result};

/// One of sentence-transformers' pooling modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PoolingMode {
    /// The first token's state.
    Cls,
    /// Element-wise max over the unmasked tokens.
    Max,
    /// Mean over the unmasked tokens.
    Mean,
    /// Sum over the unmasked tokens divided by the square root of their count.
    MeanSqrtLen,
    /// Mean weighted by position (1, 2, ..., S).
    WeightedMean,
    /// The last unmasked token's state.
    LastToken,
}

impl PoolingMode {
    /// Every mode in the order sentence-transformers concatenates them,
    /// with its `pooling_mode` name and its hub flag.
    pub const ALL: [(PoolingMode, &'static str, &'static str); 6] = [
        (PoolingMode::Cls, "cls", "pooling_mode_cls_token"),
        (PoolingMode::Max, "max", "pooling_mode_max_tokens"),
        (PoolingMode::Mean, "mean", "pooling_mode_mean_tokens"),
        (PoolingMode::MeanSqrtLen, "mean_sqrt_len_tokens", "pooling_mode_mean_sqrt_len_tokens"),
        (PoolingMode::WeightedMean, "weightedmean", "pooling_mode_weightedmean_tokens"),
        (PoolingMode::LastToken, "lasttoken", "pooling_mode_lasttoken"),
    ];

    /// The name sentence-transformers gives the mode.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(m, _, _)| *m == self).map(|(_, n, _)| *n).unwrap_or("?")
    }
}

/// An activation of a Dense module or a cross-encoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Act {
    /// `Identity`.
    Identity,
    /// `Tanh`.
    Tanh,
    /// `Sigmoid`.
    Sigmoid,
    /// `ReLU`.
    Relu,
    /// `GELU` (exact).
    Gelu,
    /// `SiLU`.
    Silu,
}

impl Act {
    const NAMES: [(&'static str, Act); 6] = [
        ("Identity", Act::Identity),
        ("Tanh", Act::Tanh),
        ("Sigmoid", Act::Sigmoid),
        ("ReLU", Act::Relu),
        ("GELU", Act::Gelu),
        ("SiLU", Act::Silu),
    ];

    /// The activation a dotted PyTorch class name (`torch.nn.modules.activation.Tanh`) names.
    fn from_class(class: &str, f: &Fields, field: &str) -> Result<Act> {
        let last = class.rsplit('.').next().unwrap_or(class);
        Self::NAMES.iter().find(|(n, _)| *n == last).map(|(_, a)| *a).ok_or_else(|| Error::Unsupported {
            path: f.path().to_owned(),
            what: format!("{field} '{class}'"),
            supported: Self::NAMES.iter().map(|(n, _)| format!("torch.nn.{n}")).collect(),
        })
    }
}

/// A Dense module: `act(x Wᵀ + b)`.
#[derive(Debug, Clone)]
pub struct Dense {
    /// The module's folder (its weights are `model.safetensors` there).
    pub dir: PathBuf,
    /// Input size.
    pub in_features: usize,
    /// Output size.
    pub out_features: usize,
    /// Whether it has a bias.
    pub bias: bool,
    /// Its activation.
    pub activation: Act,
}

/// A module after the Transformer, in the order the model runs them.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Module {
    /// Pooling, with its modes in concatenation order.
    Pooling {
        /// The modes, in concatenation order.
        modes: Vec<PoolingMode>,
        /// Whether prompt tokens take part in the pooling.
        include_prompt: bool,
    },
    /// A Dense layer.
    Dense(Dense),
    /// L2 normalisation.
    Normalize,
    /// SPLADE pooling of masked-LM logits into a vocabulary-sized vector.
    Splade(Splade),
}

/// `SpladePooling`: `pool over unmasked positions of act(logits)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Splade {
    /// `pooling_strategy` `max` (else `sum`).
    pub max: bool,
    /// `activation_function` `log1p_relu` (`log1p(log1p(relu(x)))`); else `relu` (`log1p(relu(x))`).
    pub log1p_twice: bool,
}

/// What a folder's sentence-transformers files say (all empty for a plain
/// transformers folder).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SentenceConfig {
    /// Whether `modules.json` is there (a sentence-transformers embedding model).
    pub is_sentence_transformer: bool,
    /// The Transformer module's folder (`""` in most models; `0_Transformer` in old ones).
    pub transformer_path: PathBuf,
    /// The modules after the Transformer.
    pub modules: Vec<Module>,
    /// `sentence_bert_config.json`'s `max_seq_length`.
    pub max_seq_length: Option<usize>,
    /// `sentence_bert_config.json`'s `do_lower_case`.
    pub do_lower_case: bool,
    /// Named prompts, prepended to the text.
    pub prompts: Vec<(String, String)>,
    /// The prompt used when none is named.
    pub default_prompt_name: Option<String>,
    /// `cosine`, `dot`, `euclidean` or `manhattan`.
    pub similarity_fn_name: Option<String>,
    /// A cross-encoder's activation, where its files name one.
    pub cross_encoder_activation: Option<Act>,
    /// `sentence_bert_config.json`'s `transformer_task` (`fill-mask` for SPLADE).
    pub transformer_task: Option<String>,
}

/// The module types understood, by last segment.
const MODULE_TYPES: [&str; 6] = ["Transformer", "MLMTransformer", "Pooling", "Dense", "Normalize", "SpladePooling"];

impl SentenceConfig {
    /// Reads the sentence-transformers files of `dir`.
    pub fn read(dir: &Path) -> Result<SentenceConfig> {
        let mut c = SentenceConfig::default();
        let modules = dir.join("modules.json");
        if modules.is_file() {
            c.is_sentence_transformer = true;
            let list: Vec<serde_json::Value> = crate::json::read(&modules)?;
            if list.len() > 64 {
                return Err(Error::config(&modules, "(file)", format!("{} modules; at most 64", list.len())));
            }
            let mut seen_transformer = false;
            for (i, m) in list.iter().enumerate() {
                let text = serde_json::to_string(m).unwrap_or_default();
                let f = Fields::parse(&modules, &text).map_err(|_| Error::config(&modules, format!("[{i}]"), "expected an object"))?;
                let kind = f.opt_str("type")?.ok_or_else(|| f.error(&format!("[{i}].type"), "missing"))?;
                let last = kind.rsplit('.').next().unwrap_or(kind);
                let sub = module_dir(dir, f.opt_str("path")?.unwrap_or(""), &modules, i)?;
                match last {
                    "Transformer" | "MLMTransformer" if !seen_transformer && i == 0 => {
                        seen_transformer = true;
                        c.transformer_path = sub.strip_prefix(dir).map(Path::to_owned).unwrap_or_default();
                    }
                    "Pooling" => c.modules.push(read_pooling(&sub.join("config.json"))?),
                    "Dense" => c.modules.push(Module::Dense(read_dense(&sub)?)),
                    "Normalize" => c.modules.push(Module::Normalize),
                    "SpladePooling" => c.modules.push(Module::Splade(read_splade(&sub.join("config.json"))?)),
                    _ => {
                        return Err(Error::Unsupported {
                            path: modules,
                            what: format!("module {i} of type '{kind}'"),
                            supported: MODULE_TYPES.iter().map(|t| format!("{t} (first: Transformer)")).collect(),
                        })
                    }
                }
            }
            if !seen_transformer {
                return Err(Error::config(&modules, "[0].type", "the first module must be a Transformer"));
            }
        }
        let sbert = dir.join(&c.transformer_path).join("sentence_bert_config.json");
        let sbert = if sbert.is_file() { sbert } else { dir.join("sentence_bert_config.json") };
        if sbert.is_file() {
            let f = Fields::read(&sbert)?;
            c.max_seq_length = f.opt_usize("max_seq_length")?;
            c.do_lower_case = f.opt_bool("do_lower_case")?.unwrap_or(false);
            c.transformer_task = f.opt_str("transformer_task")?.map(str::to_string);
        }
        let st = dir.join("config_sentence_transformers.json");
        if st.is_file() {
            let f = Fields::read(&st)?;
            c.prompts = f.opt_string_map("prompts")?.unwrap_or_default();
            c.default_prompt_name = f.opt_str("default_prompt_name")?.map(str::to_string);
            c.similarity_fn_name = f.opt_str("similarity_fn_name")?.map(str::to_string);
            if let Some(name) = &c.default_prompt_name {
                if !c.prompts.iter().any(|(n, _)| n == name) {
                    return Err(f.error("default_prompt_name", format!("'{name}' is not one of the prompts")));
                }
            }
            if let Some(a) = f.opt_str("activation_fn")? {
                c.cross_encoder_activation = Some(Act::from_class(a, &f, "activation_fn")?);
            }
        }
        // Cross-encoders keep their activation in config.json: sentence-transformers 4+
        // under `sentence_transformers.activation_fn`, earlier ones as a top-level field.
        let config = dir.join("config.json");
        if c.cross_encoder_activation.is_none() && config.is_file() {
            let f = Fields::read(&config)?;
            let nested = f.object("sentence_transformers")?;
            let (class, field) = match nested.as_ref().map(|n| n.opt_str("activation_fn")).transpose()?.flatten() {
                Some(a) => (Some(a.to_string()), "sentence_transformers.activation_fn"),
                None => (f.opt_str("sbert_ce_default_activation_function")?.map(str::to_string), "sbert_ce_default_activation_function"),
            };
            if let Some(class) = class {
                c.cross_encoder_activation = Some(Act::from_class(&class, &f, field)?);
            }
        }
        Ok(c)
    }

    /// The Pooling module's settings, if there is one.
    pub fn pooling(&self) -> Option<(&[PoolingMode], bool)> {
        self.modules.iter().find_map(|m| match m {
            Module::Pooling { modes, include_prompt } => Some((modes.as_slice(), *include_prompt)),
            _ => None,
        })
    }

    /// The SPLADE pooling, if the model is a sparse encoder.
    pub fn splade(&self) -> Option<Splade> {
        self.modules.iter().find_map(|m| match m {
            Module::Splade(s) => Some(*s),
            _ => None,
        })
    }
}

/// A module's folder: a relative path inside `dir` (never `..` or absolute).
fn module_dir(dir: &Path, path: &str, modules: &Path, i: usize) -> Result<PathBuf> {
    let p = Path::new(path);
    if p.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Err(Error::config(modules, format!("[{i}].path"), format!("'{path}' is not a folder inside the model folder")));
    }
    Ok(dir.join(p))
}

/// A Pooling module's `config.json`, in either layout.
pub fn read_pooling(path: &Path) -> Result<Module> {
    let f = Fields::read(path)?;
    let mut modes = Vec::new();
    let named = match f.value("pooling_mode") {
        None => None,
        Some(serde_json::Value::String(s)) => Some(vec![s.clone()]),
        Some(_) => Some(f.opt_strings("pooling_mode")?.unwrap_or_default()),
    };
    if let Some(names) = named {
        for name in names {
            let mode = PoolingMode::ALL.iter().find(|(_, n, _)| *n == name).map(|(m, _, _)| *m).ok_or_else(|| Error::Unsupported {
                path: path.to_owned(),
                what: format!("pooling_mode '{name}'"),
                supported: PoolingMode::ALL.iter().map(|(_, n, _)| n.to_string()).collect(),
            })?;
            if !modes.contains(&mode) {
                modes.push(mode);
            }
        }
        // A list is concatenated in its own order (sentence-transformers 5+);
        // the flags below in the fixed order of PoolingMode::ALL.
    } else {
        for (mode, _, flag) in PoolingMode::ALL {
            if f.opt_bool(flag)?.unwrap_or(false) {
                modes.push(mode);
            }
        }
    }
    if modes.is_empty() {
        return Err(f.error("pooling_mode", "no pooling mode is set"));
    }
    Ok(Module::Pooling { modes, include_prompt: f.opt_bool("include_prompt")?.unwrap_or(true) })
}

/// A SpladePooling module's `config.json`.
fn read_splade(path: &Path) -> Result<Splade> {
    let f = Fields::read(path)?;
    Ok(Splade {
        max: one_of(&f, "pooling_strategy", &["max", "sum"])? == 0,
        log1p_twice: one_of(&f, "activation_function", &["relu", "log1p_relu"])? == 1,
    })
}

/// Which of `options` string field `field` holds (the first when absent).
fn one_of(f: &Fields, field: &str, options: &[&str]) -> Result<usize> {
    let value = f.opt_str(field)?.unwrap_or(options[0]);
    options.iter().position(|o| *o == value).ok_or_else(|| Error::Unsupported {
        path: f.path().to_owned(),
        what: format!("{field} '{value}'"),
        supported: options.iter().map(|o| o.to_string()).collect(),
    })
}

/// A Dense module's `config.json`.
fn read_dense(dir: &Path) -> Result<Dense> {
    let f = Fields::read(&dir.join("config.json"))?;
    let activation = match f.opt_str("activation_function")? {
        Some(a) => Act::from_class(a, &f, "activation_function")?,
        None => Act::Tanh,
    };
    Ok(Dense {
        dir: dir.to_owned(),
        in_features: f.count("in_features", 1 << 20)?,
        out_features: f.count("out_features", 1 << 20)?,
        bias: f.opt_bool("bias")?.unwrap_or(true),
        activation,
    })
}
