//! Sentence embeddings from a HuggingFace folder, and how alike the texts are.
//!
//! | step | call |
//! |---|---|
//! | open the folder (imported on first use: the graph written from its weights, cached by content) | `TextModel::open(path)?` |
//! | one L2-normalised vector per text, as sentence-transformers' `encode` | `model.embed(&texts)?` |
//! | how alike two texts are | the cosine of their rows |
//!
//! `cargo run -p trt-nlp --example embed [MODEL]`: `MODEL` is a HuggingFace
//! folder, `org/name` in the local HuggingFace cache, or a model folder of
//! this project; default `$TRT_DEPS_DIR/minilm` (else `.deps/minilm`), the
//! all-MiniLM-L6-v2 folder that `scripts/setup` fetches. Runs on TensorRT
//! where it can execute here, else ONNX Runtime (CUDA where there is a GPU,
//! else the CPU).

use std::path::PathBuf;

use ndarray::{Array2, ArrayView1};
use trt_nlp::TextModel;

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> trt_nlp::Result<()> {
    let path = std::env::args_os().nth(1).map(PathBuf::from).unwrap_or_else(default_model);
    let model = TextModel::open(&path)?;
    let texts = [
        "A man is eating food.",
        "A man is eating a piece of bread.",
        "The girl is carrying a baby.",
        "A cheetah is running behind its prey.",
    ];
    let embeddings = model.embed(&texts)?;
    println!("{}: {} texts -> {:?} embeddings on {}", path.display(), texts.len(), embeddings.dim(), model.backend().name());
    print_matrix(&texts, &cosines(&embeddings));
    Ok(())
}

/// The folder `scripts/setup` fills: `$TRT_DEPS_DIR` (set by the workspace's
/// `.cargo/config.toml` for `cargo run`), else `.deps` under the current folder.
fn default_model() -> PathBuf {
    std::env::var_os("TRT_DEPS_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(".deps")).join("minilm")
}

/// Cosine similarity of every pair of rows (computed in full, so it holds
/// for a model that does not normalise its embeddings too).
fn cosines(rows: &Array2<f32>) -> Array2<f32> {
    let cos = |a: ArrayView1<f32>, b: ArrayView1<f32>| a.dot(&b) / (a.dot(&a).sqrt() * b.dot(&b).sqrt()).max(f32::EPSILON);
    Array2::from_shape_fn((rows.nrows(), rows.nrows()), |(i, j)| cos(rows.row(i), rows.row(j)))
}

fn print_matrix(texts: &[&str], m: &Array2<f32>) {
    println!("cosine similarity:");
    for (i, text) in texts.iter().enumerate() {
        let row: Vec<String> = m.row(i).iter().map(|c| format!("{c:6.3}")).collect();
        println!("  [{}]  {text}", row.join(" "));
    }
}
