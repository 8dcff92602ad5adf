//! `trt classify MODEL [TEXT ...]`, `trt embed MODEL [TEXT ...]` and `trt
//! ner MODEL [TEXT ...]`: texts from the arguments, else one per line of
//! stdin.
//!
//! MODEL is a plan, an ONNX file, a model folder, a HuggingFace folder
//! (imported on first use: the graph written from its safetensors weights,
//! cached by content) or `org/name` in the local HuggingFace cache; the
//! tokenizer, labels, pooling, prompts and score activation default to the
//! files beside it ([`trt_nlp::ModelFolder`]).
//! `--backend auto` runs TensorRT where it can execute here and ONNX Runtime
//! otherwise, and says which on stderr. Everything that needs no model is
//! checked first (tokenizer, labels), so a typo fails fast.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use trt_nlp::backend::{Backend, BackendChoice, BackendOptions};
use trt_nlp::ner::Aggregation;
use trt_nlp::{Classification, Classifier, Head, HelperOptions, Labels, ModelFolder, TextModel};

use crate::cmd::tokenize::for_each_chunk;
use crate::error::{CliError, Result};
use crate::output::emit;

/// What classify and embed share: the model, where its files are, the backend.
#[derive(Debug, clap::Args)]
pub struct ModelArgs {
    /// A plan, an ONNX file, a model folder (model.plan / model.onnx, tokenizer.json, config.json),
    /// a HuggingFace folder (config.json, model.safetensors, tokenizer.json; imported on first use)
    /// or org/name in the local HuggingFace cache.
    pub model: PathBuf,

    /// A HuggingFace folder is imported in FP16 (for GPUs) instead of FP32.
    #[arg(long)]
    pub fp16: bool,

    /// The Hugging Face tokenizer [default: tokenizer.json beside the model].
    #[arg(long, value_name = "tokenizer.json")]
    pub tokenizer: Option<PathBuf>,

    /// Which executor runs the model.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,

    /// Batches that run at once (TensorRT contexts / ONNX Runtime sessions).
    #[arg(long, default_value_t = 1)]
    pub instances: usize,

    /// Print one JSON object per text.
    #[arg(long)]
    pub json: bool,

    /// Texts [default: the lines of stdin].
    pub texts: Vec<String>,
}

/// Arguments of `trt classify`.
#[derive(Debug, clap::Args)]
pub struct ClassifyArgs {
    #[command(flatten)]
    pub model: ModelArgs,

    /// The model's config.json, for label names (id2label) [default: config.json beside the model, else LABEL_n].
    #[arg(long, value_name = "config.json")]
    pub labels: Option<PathBuf>,

    /// How many labels to print per text.
    #[arg(long, short = 'k', default_value_t = 2)]
    pub top: usize,
}

/// Arguments of `trt embed`.
#[derive(Debug, clap::Args)]
pub struct EmbedArgs {
    #[command(flatten)]
    pub model: ModelArgs,

    /// The model's prompt to put before each text (its config_sentence_transformers.json
    /// `prompts`) [default: the model's default prompt, if it has one; "" for none].
    #[arg(long, value_name = "NAME")]
    pub prompt_name: Option<String>,
}

/// The aggregation strategies of `trt ner` (transformers' names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AggregationArg {
    /// One entity per token not labelled O.
    None,
    /// Tokens grouped by tag.
    Simple,
    /// Words labelled by their first token.
    First,
    /// Words labelled by their most confident token.
    Max,
    /// Words labelled by the mean of their tokens' scores.
    Average,
}

impl From<AggregationArg> for Aggregation {
    fn from(a: AggregationArg) -> Self {
        match a {
            AggregationArg::None => Aggregation::None,
            AggregationArg::Simple => Aggregation::Simple,
            AggregationArg::First => Aggregation::First,
            AggregationArg::Max => Aggregation::Max,
            AggregationArg::Average => Aggregation::Average,
        }
    }
}

/// Arguments of `trt ner`.
#[derive(Debug, clap::Args)]
pub struct NerArgs {
    #[command(flatten)]
    pub model: ModelArgs,

    /// How tokens' labels become entities (transformers' aggregation_strategy).
    #[arg(long, value_enum, default_value_t = AggregationArg::Simple)]
    pub aggregation: AggregationArg,
}

/// The model folder for `args`, with `--tokenizer` / `--labels` overriding
/// the files beside the model. Checked before any model is loaded.
fn folder(args: &ModelArgs, labels: Option<&Path>) -> Result<ModelFolder> {
    let precision = if args.fp16 { trt_nlp::Precision::Fp16 } else { trt_nlp::Precision::Fp32 };
    let options = trt_hf::ImportOptions::default().with_precision(precision);
    let mut folder = ModelFolder::open_imported(&args.model, args.tokenizer.clone(), &options)?;
    // Loads the file the way every use will (errors name it).
    trt_nlp::TokenizerPipeline::builder(512).from_file(&folder.tokenizer)?;
    if let Some(l) = labels {
        folder.labels = Labels::from_config_file(l)?;
    }
    Ok(folder)
}

/// The backend for the folder's model, announced on stderr.
pub fn backend(folder: &ModelFolder, choice: BackendChoice, instances: usize) -> Result<Arc<dyn Backend>> {
    let options = BackendOptions::default().with_engine_cache(crate::locate::engine_cache()).with_instances(instances.max(1));
    let backend = folder.backend(choice, &options).map_err(|e| CliError::new(format!("{}: {e}", folder.model.display())))?;
    eprintln!("backend: {} ({})", backend.name(), folder.model.display());
    Ok(backend)
}

/// The folder's model over `backend`: its tokenizer and head (labels,
/// pooling, prompts, score activation).
fn text_model(folder: &ModelFolder, backend: Arc<dyn Backend>) -> Result<TextModel> {
    let pipeline = HelperOptions::default().pipeline(&folder.tokenizer, &*backend)?;
    Ok(TextModel::new(backend, pipeline, Head::of(folder)))
}

/// One text's classification as the JSON line `--json` prints.
pub fn classification_json(text: &str, c: &Classification) -> serde_json::Value {
    let labels: Vec<_> = c.top.iter().map(|p| json!({"label": p.label, "score": p.score})).collect();
    json!({"text": text, "logits": c.logits, "labels": labels})
}

/// `trt classify`.
pub fn classify(args: ClassifyArgs) -> Result<()> {
    let folder = folder(&args.model, args.labels.as_deref())?;
    let backend = backend(&folder, args.model.backend, args.model.instances)?;
    let classifier = Classifier::from_model(text_model(&folder, backend)?)?;
    let k = args.top.max(1);
    for_each_chunk(&args.model.texts, |chunk| {
        let mut out = String::new();
        for (text, c) in chunk.iter().zip(classifier.predict(chunk, k)?) {
            if args.model.json {
                out.push_str(&classification_json(text, &c).to_string());
            } else {
                let labels: Vec<String> = c.top.iter().map(|p| format!("{} {:.4}", p.label, p.score)).collect();
                out.push_str(&format!("{}\t{}", labels.join(", "), text));
            }
            out.push('\n');
        }
        emit(&out);
        Ok(())
    })
}

/// `trt embed`.
pub fn embed(args: EmbedArgs) -> Result<()> {
    let folder = folder(&args.model, None)?;
    let backend = backend(&folder, args.model.backend, args.model.instances)?;
    let model = text_model(&folder, backend)?;
    model.head().prompts.text(args.prompt_name.as_deref())?;
    for_each_chunk(&args.model.texts, |chunk| {
        let rows = model.embed_with_prompt(chunk, args.prompt_name.as_deref())?;
        let mut out = String::new();
        for (text, row) in chunk.iter().zip(rows.rows()) {
            if args.model.json {
                out.push_str(&json!({"text": text, "embedding": row.to_vec()}).to_string());
            } else {
                let head: Vec<String> = row.iter().take(4).map(|v| format!("{v:.4}")).collect();
                out.push_str(&format!("[{}, ... {} values]\t{}", head.join(", "), row.len(), text));
            }
            out.push('\n');
        }
        emit(&out);
        Ok(())
    })
}

/// `trt ner`: each text's entities, as transformers' token-classification
/// pipeline finds them (`--json`: one line per text, `{"text", "entities"}`
/// with the pipeline's entity objects).
pub fn ner(args: NerArgs) -> Result<()> {
    let folder = folder(&args.model, None)?;
    let backend = backend(&folder, args.model.backend, args.model.instances)?;
    let model = text_model(&folder, backend)?;
    let strategy = Aggregation::from(args.aggregation);
    for_each_chunk(&args.model.texts, |chunk| {
        let mut out = String::new();
        for (text, entities) in chunk.iter().zip(model.token_classify(chunk, strategy)?) {
            if args.model.json {
                out.push_str(&json!({"text": text, "entities": entities.iter().map(|e| e.to_json()).collect::<Vec<_>>()}).to_string());
            } else {
                let shown: Vec<String> =
                    entities.iter().map(|e| format!("{} {:?} [{}, {}) {:.4}", e.label, e.word, e.start, e.end, e.score)).collect();
                out.push_str(&format!("{}\t{}", shown.join(", "), text));
            }
            out.push('\n');
        }
        emit(&out);
        Ok(())
    })
}
