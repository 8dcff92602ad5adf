//! `trt classify PLAN --tokenizer tokenizer.json [--labels config.json] [TEXT ...]`
//! and `trt embed PLAN --tokenizer tokenizer.json [TEXT ...]` (texts from the
//! arguments, else stdin lines).
//!
//! Everything that needs no GPU is checked first (tokenizer, labels), then the
//! GPU and the plan ([`open`]). Running the engine is trt-nlp's job
//! (`trt_nlp::Classifier` / `trt_nlp::Embedder`, not written yet): [`infer`]
//! is the one place to call them once they exist.

use std::path::{Path, PathBuf};

use trt::cuda::Device;
use trt::Engine;
use trt_nlp::Labels;

use crate::error::{CliError, Result};
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
    let engine = gpu::load_engine(plan, &bytes, &gpu)?;
    Ok((device, engine))
}

/// Run `texts` (empty: the lines of stdin) through `engine` and print one
/// JSON line per text: `{"text", "label", "score"}` for classify,
/// `{"text", "embedding"}` for embed.
///
/// The one place that changes once trt-nlp has its helpers: make the
/// `Classifier`/`Embedder` once from the engine and the tokenizer, then
/// [`for_each_chunk`](crate::cmd::tokenize::for_each_chunk)`(texts, |chunk| ...)`
/// runs each chunk and prints its lines.
pub fn infer(
    task: Task,
    _engine: &Engine,
    _tokenizer: &Path,
    _labels: Option<&Labels>,
    _texts: &[String],
) -> Result<()> {
    let helper = match task {
        Task::Classify => "trt_nlp::Classifier",
        Task::Embed => "trt_nlp::Embedder",
    };
    Err(CliError::new(format!(
        "{} needs {helper}, which this build of trt-nlp does not have yet (the engine loaded; nothing was run)",
        task.command()
    )))
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
    let (_device, engine) = open(Task::Classify, &args.plan)?;
    infer(
        Task::Classify,
        &engine,
        &args.tokenizer,
        labels.as_ref(),
        &args.texts,
    )
}

/// `trt embed`.
pub fn embed(args: EmbedArgs) -> Result<()> {
    check_tokenizer(&args.tokenizer)?;
    let (_device, engine) = open(Task::Embed, &args.plan)?;
    infer(Task::Embed, &engine, &args.tokenizer, None, &args.texts)
}
