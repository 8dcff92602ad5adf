//! From a HuggingFace folder to a servable folder: the ONNX graph written
//! from the weights, the tokenizer, the labels, and `trt_model.json`, the
//! [`Descriptor`] that says what the graph computes and how texts go in
//! (what `trt_nlp::ModelFolder` and the server read).
//!
//! | file written | what |
//! |---|---|
//! | `model.onnx` | the graph, FP32 or FP16 ([`Precision`]); inputs INT32 `[batch, sequence]`; outputs FLOAT: `embedding` and `last_hidden_state` (and `sparse` for BGE-M3), `logits` (`[batch, labels]`, or `[batch, sequence, labels]` for token classifiers), or `sparse` (SPLADE) |
//! | `tokenizer.json` | the folder's, with a Lowercase normalizer first where `do_lower_case` asks for it |
//! | `config.json` | the folder's (labels) |
//! | `trt_model.json` | the [`Descriptor`] |
//!
//! [`import_cached`] keeps imports in a cache keyed by the SHA-256 of
//! everything the import reads, as the engine cache keys plans by their
//! model, so a changed file is imported again and an unchanged folder never.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use trt_onnx::fp16::{self, Fp16Options};
use trt_onnx::graph::WeightStorage;

use crate::arch::Task;
use crate::folder::{HfFolder, ModelTask, ScoreActivation};
use crate::graph::{Dim, Graph};
use crate::rerank::RerankFormat;
use crate::st::Module;
use crate::weights::Weights;
use crate::{family, sentence, Error, Result};

/// The descriptor's file name.
pub const DESCRIPTOR: &str = "trt_model.json";
/// Its format; bumped when the graph or the descriptor changes meaning, so
/// cached imports of an older importer are redone. 2: token classifiers
/// (once imported as embedding models), sparse encoders and rerankers.
pub const FORMAT: u32 = 2;
/// The revision of the graphs written, in the cache key beside [`FORMAT`]:
/// bumped when a graph changes form but not meaning (a faster layout), so a
/// cached import is written again while an import a caller keeps still opens.
/// 2: MPNet's packed form pads its sequence for the memory-efficient attention.
/// 3: the rotary families' fused form, and NomicBERT's and GTE's packed form.
const GRAPHS: u32 = 3;

/// The output holding the sentence embedding (FLOAT `[batch, dim]`).
pub const EMBEDDING_OUTPUT: &str = "embedding";
/// The output holding every token's state (FLOAT `[batch, sequence, hidden]`).
pub const TOKENS_OUTPUT: &str = "last_hidden_state";
/// A sparse encoder's output (FLOAT `[batch, vocab]`, mostly zeros).
pub const SPARSE_OUTPUT: &str = "sparse";
/// A classifier's output (FLOAT `[batch, labels]`; a token classifier's `[batch, sequence, labels]`).
pub const LOGITS_OUTPUT: &str = "logits";
/// What a served token classifier's config adds beside its logits: each
/// text's entities as one JSON string (TYPE_STRING `[batch, 1]`), computed
/// by the server from the logits, not by the graph.
pub const ENTITIES_OUTPUT: &str = "entities";

/// The precision of the written graph.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Precision {
    /// FP32 everywhere.
    #[default]
    Fp32,
    /// FP16 weights and compute; LayerNorm, Softmax, reductions and the
    /// sentence modules in FP32 (the project's FP16 rules).
    Fp16,
}

/// Which operators the graph is written in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Form {
    /// Standard ONNX operators (opset 17): ONNX Runtime runs it and
    /// TensorRT's parser takes it. The portable form.
    #[default]
    Plain,
    /// ONNX Runtime's fused operators (`com.microsoft` Attention,
    /// SkipLayerNormalization, BiasGelu; for the rotary families
    /// RotaryEmbedding, MultiHeadAttention or GroupQueryAttention, and
    /// SkipSimplifiedLayerNormalization) in every encoder layer: fewer, larger
    /// kernels for its CUDA provider; ONNX Runtime only, right-padded batches
    /// only (the tokenizer pipeline pads right).
    Fused,
    /// [`Form::Fused`] with the encoder layers on the batch's real tokens
    /// only (`RemovePadding`, `PackedAttention` or, for NomicBERT and GTE,
    /// `PackedMultiHeadAttention`, `RestorePadding`): a batch costs its
    /// tokens, not rows x its longest text. ONNX Runtime's CUDA provider
    /// only (its CPU provider has none of these operators). ModernBERT and
    /// the decoders are written in [`Form::Fused`] instead.
    Packed,
}

/// What an import does.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ImportOptions {
    /// The graph's precision.
    pub precision: Precision,
    /// The graph's operators.
    pub form: Form,
}

impl ImportOptions {
    /// Options with `precision`.
    pub fn with_precision(mut self, precision: Precision) -> Self {
        self.precision = precision;
        self
    }

    /// Options with `form`.
    pub fn with_form(mut self, form: Form) -> Self {
        self.form = form;
        self
    }
}

/// What an imported folder holds and how its model is used: written as
/// `trt_model.json` beside the graph.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Descriptor {
    /// [`FORMAT`].
    pub format: u32,
    /// `model_type`.
    pub model_type: String,
    /// `architectures[0]`.
    pub architecture: Option<String>,
    /// What it answers.
    pub task: ModelTask,
    /// The graph's precision.
    pub precision: Precision,
    /// The graph's operators.
    #[serde(default)]
    pub form: Form,
    /// Token inputs, in order.
    pub inputs: Vec<String>,
    /// Outputs, in order.
    pub outputs: Vec<String>,
    /// The embedding's size (embedding models).
    pub embedding_dim: Option<usize>,
    /// The encoder's hidden size (the last axis of `last_hidden_state`).
    pub hidden_size: usize,
    /// Where texts are cut, special tokens included.
    pub max_seq_length: usize,
    /// The pooling modes inside the graph, by sentence-transformers' names.
    pub pooling: Vec<String>,
    /// Whether the embedding is L2-normalised.
    pub normalize: bool,
    /// Named prompts.
    pub prompts: Vec<(String, String)>,
    /// The prompt applied when none is named.
    pub default_prompt_name: Option<String>,
    /// The similarity function sentence-transformers uses for this model.
    pub similarity_fn_name: Option<String>,
    /// How logits become scores (classifiers).
    pub activation: ScoreActivation,
    /// Class names by index (classifiers).
    pub labels: Vec<String>,
    /// SHA-256 of what the import read.
    pub source_sha256: String,
    /// How pairs become a causal-LM reranker's input (a reranker only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank: Option<RerankFormat>,
    /// The size of the `sparse` output (the vocabulary), where there is one
    /// (SPLADE; BGE-M3 beside its dense embedding).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sparse_dim: Option<usize>,
}

impl Descriptor {
    /// Reads `dir/trt_model.json`, if there.
    pub fn read(dir: &Path) -> Result<Option<Descriptor>> {
        let path = dir.join(DESCRIPTOR);
        if !path.is_file() {
            return Ok(None);
        }
        let d: Descriptor = crate::json::read(&path)?;
        if d.format != FORMAT {
            return Err(Error::config(&path, "format", format!("{} (this build reads {FORMAT}); import the model again", d.format)));
        }
        Ok(Some(d))
    }
}

/// Writes the servable folder for `src` into `out` (created; files there
/// of the same names are replaced) and returns its descriptor.
pub fn import(src: &Path, out: &Path, options: &ImportOptions) -> Result<Descriptor> {
    let folder = HfFolder::open(src)?;
    let digest = source_digest(&folder, options)?;
    write(&folder, out, options, digest)
}

/// [`import`] into `cache/<key>/` unless that import exists already; returns
/// the folder. The key is the SHA-256 of every file the import reads, the
/// options and [`FORMAT`]. An import is written to a temporary folder and
/// renamed into place, so a folder in the cache is always whole.
pub fn import_cached(src: &Path, cache: &Path, options: &ImportOptions) -> Result<PathBuf> {
    let folder = HfFolder::open(src)?;
    let digest = source_digest(&folder, options)?;
    let dir = cache.join(&digest[..32]);
    if let Ok(Some(d)) = Descriptor::read(&dir) {
        if d.source_sha256 == digest && dir.join("model.onnx").is_file() {
            return Ok(dir);
        }
    }
    std::fs::create_dir_all(cache).map_err(Error::io(cache))?;
    let tmp = cache.join(format!(".{}-{}", &digest[..32], std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let written = write(&folder, &tmp, options, digest.clone());
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = std::fs::rename(&tmp, &dir) {
        let _ = std::fs::remove_dir_all(&tmp);
        // Another process may have put the same import there first.
        if !dir.join(DESCRIPTOR).is_file() {
            return Err(Error::Io { path: dir, source: e });
        }
    }
    tracing::info!("{}: imported into {}", src.display(), dir.display());
    Ok(dir)
}

/// The default import cache: `$TRT_IMPORT_CACHE`, else
/// `$XDG_CACHE_HOME/trt-rs/imports`, else `~/.cache/trt-rs/imports`, else
/// the system's temporary folder.
pub fn default_cache() -> PathBuf {
    if let Some(d) = std::env::var_os("TRT_IMPORT_CACHE").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|d| !d.is_empty()).map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("trt-rs").join("imports")
}

/// The files an import reads, in a fixed order.
fn source_files(folder: &HfFolder) -> Vec<PathBuf> {
    let t = &folder.transformer_dir;
    let mut files = vec![t.join("config.json"), folder.tokenizer.clone(), folder.tokenizer.with_file_name("tokenizer_config.json")];
    for f in crate::weights::WEIGHT_FILES {
        files.push(t.join(f));
    }
    if let Ok(index) = crate::json::read::<serde_json::Value>(&t.join(crate::weights::WEIGHT_FILES[1])) {
        if let Some(map) = index.get("weight_map").and_then(|m| m.as_object()) {
            let mut shards: Vec<&str> = map.values().filter_map(|v| v.as_str()).collect();
            shards.sort_unstable();
            shards.dedup();
            files.extend(shards.into_iter().filter(|s| Path::new(s).components().count() == 1).map(|s| t.join(s)));
        }
    }
    for f in ["modules.json", "sentence_bert_config.json", "config_sentence_transformers.json", "config.json", crate::m3::SPARSE_LINEAR] {
        files.push(folder.dir.join(f));
    }
    for m in &folder.sentence.modules {
        if let Module::Dense(d) = m {
            files.push(d.dir.join("config.json"));
            files.push(d.dir.join("model.safetensors"));
        }
    }
    if let Ok(entries) = std::fs::read_dir(&folder.dir) {
        let mut pooling: Vec<PathBuf> = entries.flatten().map(|e| e.path().join("config.json")).filter(|p| p.is_file()).collect();
        pooling.sort();
        files.extend(pooling);
    }
    files
}

fn source_digest(folder: &HfFolder, options: &ImportOptions) -> Result<String> {
    let mut h = Sha256::new();
    h.update(format!("trt-hf format {FORMAT} graphs {GRAPHS} precision {:?} form {:?}\n", options.precision, options.form));
    for f in source_files(folder) {
        if !f.is_file() {
            continue;
        }
        let bytes = std::fs::read(&f).map_err(Error::io(&f))?;
        h.update(f.strip_prefix(&folder.dir).unwrap_or(&f).to_string_lossy().as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

fn write(folder: &HfFolder, out: &Path, options: &ImportOptions, digest: String) -> Result<Descriptor> {
    let (model, descriptor) = build(folder, options, digest)?;
    std::fs::create_dir_all(out).map_err(Error::io(out))?;
    model.save(out.join("model.onnx"), &WeightStorage::Auto)?;
    write_tokenizer(folder, &out.join("tokenizer.json"))?;
    let config = folder.transformer_dir.join("config.json");
    std::fs::copy(&config, out.join("config.json")).map_err(Error::io(&config))?;
    let path = out.join(DESCRIPTOR);
    let text = serde_json::to_string_pretty(&descriptor).map_err(|e| Error::config(&path, "(file)", e.to_string()))?;
    std::fs::write(&path, text + "\n").map_err(Error::io(&path))?;
    Ok(descriptor)
}

/// The graph and its descriptor.
pub fn build(folder: &HfFolder, options: &ImportOptions, digest: String) -> Result<(trt_onnx::graph::Model, Descriptor)> {
    let arch = &folder.arch;
    let weights = Weights::open(&folder.transformer_dir)?.for_family(family::name(arch), family::prefixes(arch));
    let form = match (options.form, family::fused_form_refused(arch)) {
        (Form::Fused | Form::Packed, Some(why)) => {
            tracing::warn!("{}: no fused form for {}: {why}; writing the plain graph", folder.dir.display(), arch.model_type);
            Form::Plain
        }
        (Form::Packed, None) => match family::packed_form_refused(arch) {
            Some(why) => {
                tracing::warn!("{}: no packed form for {}: {why}; writing the fused graph", folder.dir.display(), arch.model_type);
                Form::Fused
            }
            None => Form::Packed,
        },
        (form, _) => form,
    };
    let mut g = match form {
        Form::Plain => Graph::default(),
        Form::Fused => Graph::fused(),
        Form::Packed => Graph::packed(),
    };
    let hidden = family::encoder(&mut g, &weights, arch)?;
    let task = folder.task();
    let (mut outputs, mut embedding_dim, mut pooling) = (Vec::new(), None, Vec::new());
    let (mut labels, mut rerank, mut sparse_dim) = (Vec::new(), None, None);
    if matches!(arch.task, Task::SequenceClassification | Task::TokenClassification) {
        labels = arch.labels.clone();
    }
    let batch_seq_hidden = [Dim::Named("batch"), Dim::Named("sequence"), Dim::Fixed(arch.hidden)];
    match task {
        ModelTask::Classification if arch.task == Task::CausalLm => {
            let format = match arch.family {
                crate::Family::Qwen3 => RerankFormat::qwen3(folder.max_seq_length()),
                _ => return Err(family::unsupported_head(&weights, arch, "a causal LM as a reranker")),
            };
            let logits = crate::rerank::head(&mut g, &weights, arch, &hidden, &folder.tokenizer, &format)?;
            g.output(&logits, LOGITS_OUTPUT, &[Dim::Named("batch"), Dim::Fixed(2)]);
            outputs.push(LOGITS_OUTPUT.to_string());
            labels = vec![format.yes_token.clone(), format.no_token.clone()];
            rerank = Some(format);
        }
        ModelTask::Classification => {
            let logits = family::classifier(&mut g, &weights, arch, &hidden)?;
            g.output(&logits, LOGITS_OUTPUT, &[Dim::Named("batch"), Dim::Fixed(arch.labels.len())]);
            outputs.push(LOGITS_OUTPUT.to_string());
        }
        ModelTask::TokenClassification => {
            let logits = family::token_classifier(&mut g, &weights, arch, &hidden)?;
            g.output(&logits, LOGITS_OUTPUT, &[Dim::Named("batch"), Dim::Named("sequence"), Dim::Fixed(arch.labels.len())]);
            outputs.push(LOGITS_OUTPUT.to_string());
        }
        ModelTask::SparseEmbedding => {
            let logits = family::mlm_head(&mut g, &weights, arch, &hidden)?;
            let splade = folder.sentence.splade().unwrap_or(crate::st::Splade { max: true, log1p_twice: false });
            let sparse = sentence::splade(&mut g, &logits, splade);
            g.output(&sparse, SPARSE_OUTPUT, &[Dim::Named("batch"), Dim::Fixed(arch.vocab_size)]);
            outputs.push(SPARSE_OUTPUT.to_string());
            embedding_dim = Some(arch.vocab_size);
            sparse_dim = embedding_dim;
            pooling = vec![format!("splade_{}", if splade.max { "max" } else { "sum" })];
        }
        ModelTask::Embedding => {
            let config = folder.dir.join("modules.json");
            let (e, dim) = sentence::apply(&mut g, &hidden, arch.hidden, &folder.sentence.modules, arch.max_positions, &config)?;
            g.output(&e, EMBEDDING_OUTPUT, &[Dim::Named("batch"), Dim::Fixed(dim)]);
            g.output(&hidden, TOKENS_OUTPUT, &batch_seq_hidden);
            outputs.extend([EMBEDDING_OUTPUT.to_string(), TOKENS_OUTPUT.to_string()]);
            embedding_dim = Some(dim);
            // BGE-M3: the sparse vector beside the dense one, from the same encoder pass.
            if let Some(head) = crate::m3::read(&folder.dir, &folder.transformer_dir, &folder.tokenizer, arch.hidden)? {
                let sparse = crate::m3::graph(&mut g, &hidden, &head, arch.vocab_size);
                g.output(&sparse, SPARSE_OUTPUT, &[Dim::Named("batch"), Dim::Fixed(arch.vocab_size)]);
                outputs.push(SPARSE_OUTPUT.to_string());
                sparse_dim = Some(arch.vocab_size);
            }
            let modes = folder.sentence.pooling().map(|(m, _)| m.to_vec()).unwrap_or_else(|| vec![crate::st::PoolingMode::Mean]);
            pooling = modes.iter().map(|m| m.name().to_string()).collect();
        }
    }
    let fp32_nodes = g.fp32_nodes().to_vec();
    let source = folder.dir.display().to_string();
    let props = [("source", source.clone()), ("model_type", arch.model_type.clone()), ("source_sha256", digest.clone())];
    let doc =
        format!("{} ({}) written by trt-hf from {source}", arch.architecture.as_deref().unwrap_or(&arch.model_type), family::name(arch));
    let mut model = g.finish(&format!("{}_{:?}", arch.model_type, task).to_lowercase(), &doc, &props);
    if options.precision == Precision::Fp16 {
        let mut o = Fp16Options::default();
        o.fp32_nodes = fp32_nodes;
        model = fp16::convert(&model, &o)?.0;
    }
    let descriptor = Descriptor {
        format: FORMAT,
        model_type: arch.model_type.clone(),
        architecture: arch.architecture.clone(),
        task,
        precision: options.precision,
        form,
        inputs: family::inputs(arch).into_iter().map(str::to_string).collect(),
        outputs,
        embedding_dim,
        hidden_size: arch.hidden,
        max_seq_length: folder.max_seq_length(),
        normalize: folder.sentence.modules.iter().any(|m| matches!(m, Module::Normalize)),
        pooling,
        prompts: folder.sentence.prompts.clone(),
        default_prompt_name: folder.sentence.default_prompt_name.clone(),
        similarity_fn_name: folder.sentence.similarity_fn_name.clone(),
        // A reranker's score is P(yes): the softmax over its two logits.
        activation: if rerank.is_some() { ScoreActivation::Softmax } else { folder.activation() },
        labels,
        source_sha256: digest,
        rerank,
        sparse_dim,
    };
    Ok((model, descriptor))
}

/// Copies `tokenizer.json`, putting a Lowercase normalizer first when
/// `do_lower_case` is set and the tokenizer does not lower-case already
/// (sentence-transformers lower-cases the text before tokenizing), and
/// recording `tokenizer_config.json`'s pad token as the file's padding where
/// the file names none (Qwen's `<|endoftext|>`: a runtime that pads finds
/// the id there, not by guessing `[PAD]`).
fn write_tokenizer(folder: &HfFolder, to: &Path) -> Result<()> {
    let from = &folder.tokenizer;
    let mut t: serde_json::Value = crate::json::read(from)?;
    let mut changed = false;
    if folder.sentence.do_lower_case {
        let normalizer = t.get("normalizer").cloned().unwrap_or(serde_json::Value::Null);
        let lowers = normalizer.get("type").and_then(|v| v.as_str()) == Some("BertNormalizer")
            && normalizer.get("lowercase").and_then(|v| v.as_bool()) == Some(true);
        if !lowers {
            let lower = serde_json::json!({"type": "Lowercase"});
            let new =
                if normalizer.is_null() { lower } else { serde_json::json!({"type": "Sequence", "normalizers": [lower, normalizer]}) };
            t["normalizer"] = new;
            changed = true;
        }
    }
    if t.get("padding").is_none_or(serde_json::Value::is_null) {
        if let Some((token, id)) = folder.pad_token.as_deref().and_then(|p| crate::folder::token_id(&t, p).map(|id| (p, id))) {
            t["padding"] = serde_json::json!({
                "strategy": "BatchLongest", "direction": "Right", "pad_to_multiple_of": null,
                "pad_id": id, "pad_type_id": 0, "pad_token": token,
            });
            changed = true;
        }
    }
    if !changed {
        std::fs::copy(from, to).map_err(Error::io(from))?;
        return Ok(());
    }
    let text = serde_json::to_string(&t).map_err(|e| Error::config(from, "(file)", e.to_string()))?;
    std::fs::write(to, text).map_err(Error::io(to))
}

impl Descriptor {
    /// A Triton `config.pbtxt` for serving the imported model as a text
    /// model: one `text` string input, the descriptor's outputs (and a
    /// token classifier's [`ENTITIES_OUTPUT`]), dynamic batching up to
    /// `max_batch` texts.
    pub fn text_model_config(&self, max_batch: usize) -> String {
        let dims = |name: &str| match name {
            EMBEDDING_OUTPUT => self.embedding_dim.unwrap_or(self.hidden_size).to_string(),
            SPARSE_OUTPUT => self.sparse_dim.or(self.embedding_dim).unwrap_or(self.hidden_size).to_string(),
            TOKENS_OUTPUT => format!("-1, {}", self.hidden_size),
            LOGITS_OUTPUT if self.task == ModelTask::TokenClassification => format!("-1, {}", self.labels.len().max(1)),
            _ => self.labels.len().max(1).to_string(),
        };
        let mut outputs: Vec<String> =
            self.outputs.iter().map(|o| format!("  {{ name: \"{o}\" data_type: TYPE_FP32 dims: [ {} ] }}", dims(o))).collect();
        if self.task == ModelTask::TokenClassification {
            // The server's entities per text (JSON, as transformers' pipeline writes them), computed from the logits.
            outputs.push(format!("  {{ name: \"{ENTITIES_OUTPUT}\" data_type: TYPE_STRING dims: [ 1 ] }}"));
        }
        format!(
            "platform: \"onnxruntime_onnx\"\nmax_batch_size: {max_batch}\ninput [ {{ name: \"text\" data_type: TYPE_STRING dims: [ 1 ] }} ]\noutput [\n{}\n]\ndynamic_batching {{ max_queue_delay_microseconds: 1000 }}\n",
            outputs.join(",\n")
        )
    }
}
