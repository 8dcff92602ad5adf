//! `trt demo`: the embedded default model (all-MiniLM-L6-v2 with a 2-label
//! head, made by scripts/setup) end to end.
//!
//! 1. builds its FP32 and FP16 engines (profile 1x16 .. 8x128 .. 32x128)
//!    through [`trt::EngineCache`] in the setup folder's `cache/`, so a second
//!    run loads them instead of building;
//! 2. inspects them: the network's I/O, and the engine itself where TensorRT
//!    can deserialize it here;
//! 3. classifies and embeds the reference texts on each variant, on TensorRT
//!    where the engine deserialized on this GPU, else on ONNX Runtime (saying
//!    why), printing labels, scores and the cosine-similarity matrix, and
//!    checks them against the Python onnxruntime outputs setup wrote
//!    (`reference.json`): exit 1 if they differ beyond the variant's tolerance.
//!
//! On a machine without a GPU TensorRT can run on, step 2's engine part says
//! exactly why it cannot run (the typed error); step 3 runs on ONNX Runtime.

use std::path::{Path, PathBuf};
use std::time::Instant;

use std::sync::Arc;

use trt::{Builder, CacheOutcome, EngineCache, ProfileSpec, ShapeRange};
use trt_nlp::backend::onnxruntime::{OrtBackend, OrtBackendOptions};
use trt_nlp::backend::tensorrt::TensorRtBackend;
use trt_nlp::backend::Backend;
use trt_nlp::{Classifier, Embedder, HelperOptions, ModelFolder};

use crate::cmd::inspect::{self, OnnxInfo};
use crate::error::{CliError, Result};
use crate::gpu;
use crate::locate;
use crate::output::{self, emit};
use crate::progress::ProgressMode;

/// Arguments of `trt demo` (all optional).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Folder of the model [default: models/minilm in the setup folder].
    #[arg(long, value_name = "DIR")]
    pub model_dir: Option<PathBuf>,

    /// Engine cache folder [default: cache in the setup folder].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,

    /// How to show build progress.
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
}

/// The demo's profile for every dynamic input.
fn profile(dynamic: &[&str]) -> ProfileSpec {
    ProfileSpec::new().with_all(dynamic, ShapeRange::new(&[1, 16], &[8, 128], &[32, 128]))
}

/// `trt demo`.
pub fn run(args: Args) -> Result<()> {
    let (model_dir, cache_dir) = match (&args.model_dir, &args.cache_dir) {
        (Some(m), Some(c)) => (m.clone(), c.clone()),
        (m, c) => {
            let deps = locate::deps_with("models/minilm/model.onnx")?;
            (m.clone().unwrap_or_else(|| deps.join("models/minilm")), c.clone().unwrap_or_else(|| deps.join("cache")))
        }
    };
    let builder = Builder::new()?;
    let library = builder.library();
    emit(&format!(
        "TensorRT  {} ({})\nmodel     {}\ncache     {}\n",
        library.version(),
        library.path().display(),
        model_dir.display(),
        cache_dir.display()
    ));

    // 1 + 2: build (or load from the cache) and inspect.
    let cache = EngineCache::new(&cache_dir);
    let mut plans = Vec::new();
    for (label, file) in [("fp32", "model.onnx"), ("fp16", "model_fp16.onnx")] {
        let onnx = model_dir.join(file);
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

    // 3: classify and embed on TensorRT where an engine runs here, else ONNX Runtime.
    let folder = ModelFolder::open(model_dir.join("model.onnx"))?;
    let reference = Reference::load(&model_dir.join("reference.json"))?;
    let device = gpu.as_ref().ok().map(|(d, _)| d);
    for (label, onnx, _) in &plans {
        let engine = engines.iter().find(|(l, _, _)| l == &label).map(|(_, _, e)| e);
        let backend: Arc<dyn Backend> = match (engine, device) {
            (Some(engine), Some(device)) => Arc::new(TensorRtBackend::new(engine, device, 1)?),
            _ => Arc::new(OrtBackend::new(onnx, &OrtBackendOptions::default())?),
        };
        let why = if backend.name() == "tensorrt" { String::new() } else { " (TensorRT cannot run the engine here, see above)".into() };
        emit(&format!("\n{label} on {}{why}:\n", backend.name()));
        run_variant(label, backend, &folder, &reference)?;
    }
    Ok(())
}

/// The Python onnxruntime outputs setup wrote for the reference texts.
struct Reference {
    texts: Vec<String>,
    logits: Vec<(String, Vec<Vec<f32>>)>,
    embeddings: Vec<(String, Vec<Vec<f32>>)>,
}

impl Reference {
    fn load(path: &Path) -> Result<Self> {
        let bad = |what: &str| CliError::new(format!("{}: {what}; run scripts/setup", path.display()));
        let text = std::fs::read(path).map_err(|e| CliError::new(format!("cannot read {}: {e}; run scripts/setup", path.display())))?;
        let v: serde_json::Value = serde_json::from_slice(&text).map_err(|e| bad(&e.to_string()))?;
        let texts = v["texts"].as_array().ok_or_else(|| bad("no texts"))?.iter().filter_map(|t| t.as_str().map(str::to_owned)).collect();
        let rows = |variant: &str, what: &str| -> Result<Vec<Vec<f32>>> {
            let m = v["outputs"][variant][what].as_array().ok_or_else(|| bad(&format!("no {variant} {what}")))?;
            Ok(m.iter()
                .map(|r| r.as_array().map(|r| r.iter().filter_map(|x| x.as_f64()).map(|x| x as f32).collect()).unwrap_or_default())
                .collect())
        };
        let (mut logits, mut embeddings) = (Vec::new(), Vec::new());
        for variant in ["fp32", "fp16"] {
            logits.push((variant.to_owned(), rows(variant, "logits")?));
            embeddings.push((variant.to_owned(), rows(variant, "embeddings")?));
        }
        Ok(Reference { texts, logits, embeddings })
    }

    fn of<'a>(set: &'a [(String, Vec<Vec<f32>>)], variant: &str) -> &'a [Vec<f32>] {
        set.iter().find(|(v, _)| v == variant).map(|(_, r)| r.as_slice()).unwrap_or(&[])
    }
}

/// Largest absolute difference between rows (and whether the shapes agree).
fn max_diff(got: &[Vec<f32>], want: &[Vec<f32>]) -> Option<f32> {
    if got.len() != want.len() || got.iter().zip(want).any(|(a, b)| a.len() != b.len()) {
        return None;
    }
    Some(got.iter().zip(want).flat_map(|(a, b)| a.iter().zip(b).map(|(x, y)| (x - y).abs())).fold(0.0, f32::max))
}

/// Classify and embed the reference texts on `backend`, print, check.
fn run_variant(variant: &str, backend: Arc<dyn Backend>, folder: &ModelFolder, reference: &Reference) -> Result<()> {
    let options = HelperOptions::default();
    let classifier = Classifier::new(backend.clone(), &folder.tokenizer, folder.labels.clone(), &options)?;
    let embedder = Embedder::new(backend.clone(), &folder.tokenizer, folder.pooling, folder.normalize, &options)?;
    let texts = &reference.texts;
    let predictions = classifier.predict(texts, 2)?;
    let embeddings = embedder.embed(texts)?;
    let short = |t: &str| {
        let s: String = t.chars().take(48).collect();
        if s.len() < t.len() {
            format!("{s}...")
        } else {
            s
        }
    };
    let mut out = String::new();
    for (i, (t, p)) in texts.iter().zip(&predictions).enumerate() {
        let labels: Vec<String> = p.top.iter().map(|l| format!("{} {:.4}", l.label, l.score)).collect();
        let quoted = format!("\"{}\"", short(t).replace('\n', " "));
        let pad = 53usize.saturating_sub(quoted.chars().count());
        out.push_str(&format!("  #{i} {quoted}{:pad$} {}\n", "", labels.join(", ")));
    }
    out.push_str("  cosine similarity of the embeddings:\n       ");
    for j in 0..texts.len() {
        out.push_str(&format!(" #{j:<4}"));
    }
    out.push('\n');
    for (i, a) in embeddings.rows().into_iter().enumerate() {
        out.push_str(&format!("    #{i:<2}"));
        for b in embeddings.rows() {
            out.push_str(&format!(" {:>5.2}", a.dot(&b)));
        }
        out.push('\n');
    }
    // The check against Python onnxruntime: ONNX Runtime from Rust is the same
    // library (1e-5); a TensorRT engine differs by kernel choice (FP32 1e-3,
    // FP16 1e-2, what tests/execution.rs allows).
    let tolerance = match (backend.name(), variant) {
        ("onnxruntime", _) => 1e-5,
        (_, "fp32") => 1e-3,
        _ => 1e-2,
    };
    let logits: Vec<Vec<f32>> = predictions.iter().map(|p| p.logits.clone()).collect();
    let rows: Vec<Vec<f32>> = embeddings.rows().into_iter().map(|r| r.to_vec()).collect();
    let d_logits = max_diff(&logits, Reference::of(&reference.logits, variant));
    let d_emb = max_diff(&rows, Reference::of(&reference.embeddings, variant));
    match (d_logits, d_emb) {
        (Some(l), Some(e)) if l <= tolerance && e <= tolerance => out.push_str(&format!(
            "  check vs Python onnxruntime ({variant}): logits max diff {l:.2e}, embeddings max diff {e:.2e} (tolerance {tolerance:.0e}): ok\n"
        )),
        (l, e) => {
            emit(&out);
            return Err(CliError::new(format!(
                "{variant} on {}: outputs differ from the Python onnxruntime reference beyond {tolerance:.0e} (logits {l:?}, embeddings {e:?})",
                backend.name()
            )));
        }
    }
    emit(&out);
    Ok(())
}
