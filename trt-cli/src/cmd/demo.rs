//! `trt demo`: the embedded default model (all-MiniLM-L6-v2 with a 2-label
//! head, made by scripts/setup) end to end.
//!
//! 1. builds its FP32 and FP16 engines (profile 1x16 .. 8x128 .. 32x128)
//!    through [`trt::EngineCache`] in the setup folder's `cache/`, so a second
//!    run loads them instead of building;
//! 2. inspects them: the network's I/O, and the engine itself where TensorRT
//!    can deserialize it here;
//! 3. where the GPU can run them, classifies and embeds a few sample texts.
//!
//! On a machine without a GPU TensorRT can run on, steps 2 (engine part) and 3
//! say exactly why they cannot run (the typed error) and the demo exits 0:
//! its job there is the build and the inspection.

use std::path::{Path, PathBuf};
use std::time::Instant;

use trt::{Builder, CacheOutcome, EngineCache, ProfileSpec, ShapeRange};

use crate::cmd::inspect::{self, OnnxInfo};
use crate::cmd::nlp::{self, Task};
use crate::error::Result;
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

const SAMPLES: [&str; 3] = [
    "TensorRT makes this encoder fast.",
    "The weather is lovely today.",
    "这是一个测试句子。",
];

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
            (
                m.clone().unwrap_or_else(|| deps.join("models/minilm")),
                c.clone().unwrap_or_else(|| deps.join("cache")),
            )
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
                let (text, _) = inspect::engine_report(
                    Path::new(&format!("{label} engine")),
                    plan.len(),
                    &engine,
                )?;
                emit(&text);
                engines.push((label, onnx, engine));
            }
            Err(e) => emit(&format!(
                "{label} engine: TensorRT cannot deserialize it on this machine: {e}\n"
            )),
        }
    }

    // 3: run, where the GPU allows.
    let texts: Vec<String> = SAMPLES.iter().map(|s| (*s).to_owned()).collect();
    let Ok((device, _)) = &gpu else {
        emit("\nclassify and embed: skipped, no GPU TensorRT can run on (see GPU above)\n");
        return Ok(());
    };
    if engines.is_empty() {
        emit("\nclassify and embed: skipped, TensorRT could not deserialize the engines on this GPU (reasons above)\n");
        return Ok(());
    }
    let tokenizer = model_dir.join("tokenizer.json");
    let labels = trt_nlp::Labels::from_config_file(model_dir.join("config.json"))?;
    for (label, _, engine) in &engines {
        for task in [Task::Classify, Task::Embed] {
            if let Err(e) = nlp::infer(task, device, engine, &tokenizer, Some(&labels), &texts) {
                emit(&format!("{label} {task:?}: {e}\n"));
            }
        }
    }
    Ok(())
}
