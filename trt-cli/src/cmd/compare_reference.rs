//! `trt compare MODEL --reference FILE`: a model against the vectors a user
//! saved from sentence-transformers (or any library), text by text. MODEL
//! is anything `trt embed` takes (a HuggingFace folder is imported first,
//! in FP16 with `--fp16`); FILE is JSON lines, one `{"text": ..., "embedding":
//! [...]}` per text, or a `.npy` array `[texts, dim]` with `--texts` giving
//! the texts, one per line, in the same order. Every row is compared by
//! cosine and largest absolute difference; past `--min-cosine` (default
//! 0.9999) or `--atol`, the command exits 1 naming the worst text.

use std::path::Path;

use ndarray::{Array2, Axis};
use serde_json::json;
use trt_nlp::backend::{BackendChoice, BackendOptions};
use trt_nlp::{HelperOptions, ModelFolder, TextModel};

use crate::error::{naming, CliError, Result};
use crate::output::emit;

/// The reference vectors and the texts they belong to.
struct Reference {
    texts: Vec<String>,
    vectors: Array2<f32>,
}

/// Reads `file` (JSON lines, or `.npy` with `texts`).
fn read_reference(file: &Path, texts: Option<&Path>) -> Result<Reference> {
    if file.extension().is_some_and(|e| e == "npy") {
        let texts = texts
            .ok_or_else(|| CliError::new(format!("{}: a .npy reference needs --texts FILE (its texts, one per line)", file.display())))?;
        let vectors: Array2<f32> = match ndarray_npy::read_npy::<_, Array2<f32>>(file) {
            Ok(v) => v,
            Err(_) => ndarray_npy::read_npy::<_, Array2<f64>>(file).map_err(|e| naming(file, e))?.mapv(|x| x as f32),
        };
        let text = std::fs::read_to_string(texts).map_err(|e| naming(texts, e))?;
        let texts: Vec<String> = text.lines().map(str::to_string).collect();
        if texts.len() != vectors.nrows() {
            return Err(CliError::new(format!(
                "{} has {} rows but {} has {} lines",
                file.display(),
                vectors.nrows(),
                texts.len(),
                texts.len()
            )));
        }
        return Ok(Reference { texts, vectors });
    }
    let text = std::fs::read_to_string(file).map_err(|e| naming(file, e))?;
    let (mut texts, mut rows, mut dim) = (Vec::new(), Vec::new(), None);
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let bad = |what: &str| CliError::new(format!("{} line {}: {what}", file.display(), n + 1));
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| bad(&e.to_string()))?;
        let t = v["text"].as_str().ok_or_else(|| bad("no \"text\" string"))?;
        let e: Vec<f32> = v["embedding"]
            .as_array()
            .ok_or_else(|| bad("no \"embedding\" list"))?
            .iter()
            .map(|x| x.as_f64().map(|x| x as f32).ok_or_else(|| bad("\"embedding\" holds a value that is not a number")))
            .collect::<Result<_>>()?;
        if *dim.get_or_insert(e.len()) != e.len() {
            return Err(bad(&format!("{} values where the first line has {}", e.len(), dim.unwrap_or(0))));
        }
        texts.push(t.to_string());
        rows.extend(e);
    }
    let dim = dim.ok_or_else(|| CliError::new(format!("{}: no reference lines", file.display())))?;
    let vectors = Array2::from_shape_vec((texts.len(), dim), rows).map_err(|e| naming(file, e))?;
    Ok(Reference { texts, vectors })
}

/// What `trt compare --reference` was asked.
pub struct ReferenceArgs<'a> {
    /// The model.
    pub model: &'a Path,
    /// The reference file.
    pub reference: &'a Path,
    /// Texts of a `.npy` reference.
    pub texts: Option<&'a Path>,
    /// The backend.
    pub backend: BackendChoice,
    /// Import a HuggingFace folder in FP16.
    pub fp16: bool,
    /// The prompt (None: the model's default).
    pub prompt_name: Option<&'a str>,
    /// Smallest acceptable cosine.
    pub min_cosine: f64,
    /// Largest acceptable absolute difference.
    pub atol: Option<f64>,
    /// One JSON document instead of text.
    pub json: bool,
}

/// `trt compare MODEL --reference FILE`.
pub fn run(a: ReferenceArgs<'_>) -> Result<()> {
    let r = read_reference(a.reference, a.texts)?;
    let precision = if a.fp16 { trt_nlp::Precision::Fp16 } else { trt_nlp::Precision::Fp32 };
    let folder = ModelFolder::open_imported(a.model, None, &trt_hf::ImportOptions::default().with_precision(precision))?;
    let model = TextModel::from_folder(&folder, a.backend, &BackendOptions::default(), &HelperOptions::default())?;
    let got = model.embed_with_prompt(&r.texts, a.prompt_name)?;
    if got.dim() != r.vectors.dim() {
        return Err(CliError::new(format!(
            "the model gives [{}, {}] embeddings; {} holds [{}, {}]",
            got.nrows(),
            got.ncols(),
            a.reference.display(),
            r.vectors.nrows(),
            r.vectors.ncols()
        )));
    }
    let (mut worst, mut worst_at, mut max_diff) = (1.0f64, 0usize, 0.0f64);
    for (i, (g, w)) in got.axis_iter(Axis(0)).zip(r.vectors.axis_iter(Axis(0))).enumerate() {
        let dot: f64 = g.iter().zip(w).map(|(&x, &y)| f64::from(x) * f64::from(y)).sum();
        let norm = |v: &ndarray::ArrayView1<f32>| v.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
        let cos = dot / (norm(&g) * norm(&w)).max(1e-12);
        if cos < worst {
            (worst, worst_at) = (cos, i);
        }
        max_diff = g.iter().zip(w).map(|(&x, &y)| f64::from((x - y).abs())).fold(max_diff, f64::max);
    }
    let backend = model.backend().name();
    let passed = worst >= a.min_cosine && a.atol.is_none_or(|t| max_diff <= t);
    if a.json {
        emit(&format!(
            "{}\n",
            json!({"texts": r.texts.len(), "backend": backend, "precision": format!("{precision:?}").to_lowercase(), "worst_cosine": worst,
                   "worst_text": worst_at, "max_abs_diff": max_diff, "passed": passed})
        ));
    } else {
        emit(&format!(
            "{} texts on {backend} ({precision:?}): worst cosine {worst:.7} (text #{worst_at}), max abs diff {max_diff:.3e}\n",
            r.texts.len()
        ));
    }
    if !passed {
        let bound = match a.atol {
            Some(t) if max_diff > t => format!("max abs diff {max_diff:.3e} is above --atol {t}"),
            _ => format!("cosine {worst:.7} of text #{worst_at} ({:?}) is below --min-cosine {}", short(&r.texts[worst_at]), a.min_cosine),
        };
        return Err(CliError::new(format!("{}: {bound}", a.reference.display())));
    }
    Ok(())
}

fn short(t: &str) -> String {
    let s: String = t.chars().take(40).collect();
    if s.len() < t.len() {
        format!("{s}...")
    } else {
        s
    }
}
