//! Texts to embeddings in process, from a HuggingFace sentence-transformers
//! folder: trt-nlp (`TextModel` over the graph trt-hf imports from the
//! folder's safetensors) against sentence-transformers `encode` on the same
//! folder, texts, batch size and device, measured in one run
//! (benches/hf_embed_python.py is the Python side). What a user compares.
//!
//! `cargo bench -p trt-nlp --bench hf_embed`. On CUDA (the default: FP16 on
//! both sides, sentence-transformers with `dtype=float16`) it needs a GPU and
//! the onnxruntime-gpu library (`ORT_DYLIB_PATH`); without them it prints why
//! and exits 0. `HF_EMBED_DEVICE=cpu` runs both sides on the CPU in FP32
//! (a smoke run of the harness anywhere).
//!
//! Env: `HF_EMBED_FOLDER` (a sentence-transformers folder; default the
//! mpnet-mean fixture of tests/data/hf), `HF_EMBED_FORM` (plain, fused
//! [default], packed: the import's form; ModernBERT and the decoders are written fused for packed),
//! `HF_EMBED_TEXTS` (4096 on CUDA, 256 on the CPU), `HF_EMBED_BATCH` (32:
//! sentence-transformers' default), `HF_EMBED_WORDS` (`MIN-MAX` words a text,
//! 5-60), `HF_EMBED_REPEATS` (3: after one warm-up pass each side keeps its
//! best), `BENCH_PYTHON` (python3, with torch and sentence-transformers).
//! Printed: texts/s and tokens/s per side, `ratio_trt_nlp_vs_sentence_transformers`
//! (above 1: trt-nlp is faster), and the worst cosine between the two sides'
//! embeddings (both in the same precision), which must be within the parity
//! bounds (0.999 FP16, 0.9999 FP32).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use ndarray::Array2;
use trt_nlp::backend::onnxruntime::{OrtBackendOptions, Provider};
use trt_nlp::backend::{BackendChoice, BackendOptions};
use trt_nlp::{Form, HelperOptions, Precision, TextModel};

#[path = "support/npy.rs"]
mod npy;

#[path = "support/not_here.rs"]
mod not_here;

#[path = "support/texts.rs"]
mod texts;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let cuda = std::env::var("HF_EMBED_DEVICE").as_deref() != Ok("cpu");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let folder = std::env::var_os("HF_EMBED_FOLDER").map(PathBuf::from).unwrap_or_else(|| root.join("tests/data/hf/mpnet-mean"));
    let form = match std::env::var("HF_EMBED_FORM").as_deref() {
        Ok("plain") => Form::Plain,
        Ok("packed") => Form::Packed,
        _ => Form::Fused,
    };
    let precision = if cuda { Precision::Fp16 } else { Precision::Fp32 };
    let n = env_usize("HF_EMBED_TEXTS", if cuda { 4096 } else { 256 });
    let batch = env_usize("HF_EMBED_BATCH", 32).max(1);
    let repeats = env_usize("HF_EMBED_REPEATS", 3).max(1);
    let (min_words, max_words) = std::env::var("HF_EMBED_WORDS")
        .ok()
        .and_then(|v| v.split_once('-').and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?))))
        .unwrap_or((5, 60));
    let python = std::env::var_os("BENCH_PYTHON").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("python3"));

    let imported = tempfile::tempdir().expect("temp dir");
    let options = trt_hf::ImportOptions::default().with_precision(precision).with_form(form);
    trt_hf::import(&folder, imported.path(), &options).unwrap_or_else(|e| panic!("importing {}: {e}", folder.display()));
    let provider = if cuda { Provider::Cuda { device: 0 } } else { Provider::Cpu };
    let backend = BackendOptions::default().with_max_batch(batch).with_onnxruntime(OrtBackendOptions::default().with_provider(provider));
    let model = match TextModel::open_with(imported.path(), BackendChoice::OnnxRuntime, &backend, &HelperOptions::default()) {
        Ok(m) => m,
        Err(e) if not_here::cuda_not_here(&e) => return println!("hf_embed: not run: ONNX Runtime cannot run on CUDA here ({e})"),
        Err(e) => panic!("opening the import of {}: {e}", folder.display()),
    };
    let texts = texts::generate_texts_of(model.pipeline().tokenizer(), n, min_words, max_words);
    let tokens: usize = model.pipeline().tokenize(&texts).expect("texts tokenize").iter().map(|r| r.len()).sum();
    let file = texts::write_temp(&texts);
    println!(
        "hf_embed: {} ({:?} {:?}) on {}, {n} texts of {min_words}-{max_words} words ({:.1} tokens a text), batch {batch}, max_seq {}",
        folder.display(),
        form,
        precision,
        if cuda { "CUDA" } else { "the CPU" },
        tokens as f64 / n as f64,
        model.max_seq()
    );

    // Python first, in its own process, so the two sides never hold the GPU at once.
    let saved = tempfile::NamedTempFile::new().expect("temp file");
    let st_seconds = python_side(&python, &folder, file.path(), saved.path(), batch, repeats, cuda);

    let embed_all = || -> Array2<f32> {
        let parts: Vec<Array2<f32>> = texts.chunks(batch).map(|c| model.embed(c).expect("embed")).collect();
        let views: Vec<_> = parts.iter().map(|p| p.view()).collect();
        ndarray::concatenate(ndarray::Axis(0), &views).expect("one dimension")
    };
    let rust = embed_all();
    let mut best = f64::INFINITY;
    for _ in 0..repeats {
        let t = Instant::now();
        std::hint::black_box(embed_all());
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!("trt-nlp: {:9.1} texts/s, {:10.0} tokens/s (best of {repeats})", n as f64 / best, tokens as f64 / best);
    let Some(st) = st_seconds else { return };
    println!("sentence-transformers: {:9.1} texts/s, {:10.0} tokens/s (best of {repeats})", n as f64 / st, tokens as f64 / st);
    let cos = min_cosine(&rust, &npy::read_f32(saved.path(), n));
    println!("worst cosine, trt-nlp vs sentence-transformers: {cos:.6}");
    let bound = if cuda { 0.999 } else { 0.9999 };
    assert!(cos >= bound, "the two sides computed different embeddings (worst cosine {cos}, bound {bound})");
    println!("ratio_trt_nlp_vs_sentence_transformers: {:.2}", st / best);
}

/// sentence-transformers' best time over the texts, or `None` (said) where it could not run.
fn python_side(python: &Path, folder: &Path, texts: &Path, save: &Path, batch: usize, repeats: usize, cuda: bool) -> Option<f64> {
    // The repository's benches/ where this was built, else the working directory's (a binary carried elsewhere).
    let script =
        [PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../benches/hf_embed_python.py"), PathBuf::from("benches/hf_embed_python.py")]
            .into_iter()
            .find(|p| p.exists())
            .expect("benches/hf_embed_python.py: run from the repository root");
    let out = Command::new(python)
        .arg(script)
        .args(["--folder", &folder.display().to_string(), "--texts", &texts.display().to_string()])
        .args(["--save", &save.display().to_string(), "--batch", &batch.to_string(), "--repeats", &repeats.to_string()])
        .args(["--device", if cuda { "cuda" } else { "cpu" }])
        .output()
        .expect("python runs");
    if !out.status.success() {
        println!("sentence-transformers side failed (no ratio): {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())?;
    println!(
        "sentence-transformers {} (torch {})",
        line["st_version"].as_str().unwrap_or("?"),
        line["torch_version"].as_str().unwrap_or("?")
    );
    line["seconds"].as_f64()
}

fn min_cosine(rust: &Array2<f32>, want: &[f32]) -> f32 {
    let dim = rust.ncols();
    (0..rust.nrows())
        .map(|i| {
            let (a, b) = (rust.row(i), &want[i * dim..(i + 1) * dim]);
            let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
            let norms = a.iter().map(|x| x * x).sum::<f32>().sqrt() * b.iter().map(|y| y * y).sum::<f32>().sqrt();
            dot / norms.max(1e-12)
        })
        .fold(1f32, f32::min)
}
