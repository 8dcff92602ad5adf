//! `trt classify PLAN --tokenizer tokenizer.json [--labels config.json] [TEXT ...]`
//! and `trt embed PLAN --tokenizer tokenizer.json [TEXT ...]` (texts from the
//! arguments, else stdin lines).
//!
//! Everything that needs no GPU is checked first (tokenizer, labels), then the
//! GPU and the plan ([`open`]); [`infer`] runs trt-nlp's `Classifier` /
//! `Embedder`.

use std::path::{Path, PathBuf};

use trt::cuda::Device;
use trt::Engine;
use serde_json::json;
use trt_nlp::{Classifier, Embedder, HelperOptions, Labels, Pooling};

use crate::cmd::tokenize::for_each_chunk;

use crate::error::Result;
use crate::gpu;

/// Arguments of `trt classify`.
#[derive(Debug, clap::Args)]
pub struct ClassifyArgs {
    /// A plan of a sequence-classification model (logits output).
    pub plan: PathBuf,

    /// The Hugging Face tokenizer file.
    #[arg(long, value_name = "tokenizer.json")]
    pub tokenizer: PathBuf,

    /// The model's config.json, for label names (id2label) [default: LABEL_n].
    #[arg(long, value_name = "config.json")]
    pub labels: Option<PathBuf>,

    /// Texts to classify [default: the lines of stdin].
    pub texts: Vec<String>,
}

/// Arguments of `trt embed`.
#[derive(Debug, clap::Args)]
pub struct EmbedArgs {
    /// A plan of an encoder model (last_hidden_state output).
    pub plan: PathBuf,

    /// The Hugging Face tokenizer file.
    #[arg(long, value_name = "tokenizer.json")]
    pub tokenizer: PathBuf,

    /// Texts to embed [default: the lines of stdin].
    pub texts: Vec<String>,
}

/// What a text-to-answer command does with the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    /// Labels with probabilities.
    Classify,
    /// Sentence embeddings.
    Embed,
}

impl Task {
    fn command(self) -> &'static str {
        match self {
            Task::Classify => "trt classify",
            Task::Embed => "trt embed",
        }
    }
}

/// GPU 0 and the engine of `plan` on it, or why it cannot run here.
pub fn open(task: Task, plan: &Path) -> Result<(Device, Engine)> {
    let bytes = gpu::read_plan(plan)?;
    let (device, gpu) = gpu::require(task.command())?;
    let engine = gpu::load_engine(plan, &bytes, &device, &gpu)?;
    Ok((device, engine))
}

/// Run `texts` (empty: the lines of stdin) through `engine` on `device` and
/// print one JSON line per text: `{"text", "label", "score", "top"}` for
/// classify, `{"text", "embedding"}` (mean-pooled, L2-normalised) for embed.
pub fn infer(
    task: Task,
    device: &Device,
    engine: &Engine,
    tokenizer: &Path,
    labels: Option<&Labels>,
    texts: &[String],
) -> Result<()> {
    let options = HelperOptions::default();
    match task {
        Task::Classify => {
            let labels = labels.cloned().unwrap_or_default();
            let classifier = Classifier::new(engine, device, tokenizer, labels, &options)?;
            for_each_chunk(texts, |chunk| {
                for (text, preds) in chunk.iter().zip(classifier.classify(chunk, 5)?) {
                    let best = preds.first();
                    let top: Vec<_> = preds.iter().map(|p| json!({"label": p.label, "score": p.score})).collect();
                    println!(
                        "{}",
                        json!({"text": text, "label": best.map(|p| p.label.clone()), "score": best.map(|p| p.score), "top": top})
                    );
                }
                Ok(())
            })
        }
        Task::Embed => {
            let embedder = Embedder::new(engine, device, tokenizer, Pooling::Mean, true, &options)?;
            for_each_chunk(texts, |chunk| {
                let rows = embedder.embed(chunk)?;
                for (text, row) in chunk.iter().zip(rows.rows()) {
                    println!("{}", json!({"text": text, "embedding": row.to_vec()}));
                }
                Ok(())
            })
        }
    }
}

fn check_tokenizer(path: &Path) -> Result<()> {
    // Loads the file the way every use will (errors name it).
    trt_nlp::TokenizerPipeline::builder(512).from_file(path)?;
    Ok(())
}

/// `trt classify`.
pub fn classify(args: ClassifyArgs) -> Result<()> {
    check_tokenizer(&args.tokenizer)?;
    let labels = args
        .labels
        .as_deref()
        .map(Labels::from_config_file)
        .transpose()?;
    let (device, engine) = open(Task::Classify, &args.plan)?;
    infer(
        Task::Classify,
        &device,
        &engine,
        &args.tokenizer,
        labels.as_ref(),
        &args.texts,
    )
}

/// `trt embed`.
pub fn embed(args: EmbedArgs) -> Result<()> {
    check_tokenizer(&args.tokenizer)?;
    let (device, engine) = open(Task::Embed, &args.plan)?;
    infer(Task::Embed, &device, &engine, &args.tokenizer, None, &args.texts)
}
