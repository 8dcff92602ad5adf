//! Embeds texts with an ONNX model folder through trt-nlp's public API alone
//! (ONNX Runtime backend): what a downstream crate writes. Only built in CI
//! (scripts/check-package); it proves the features and the public paths, not results.

use trt_nlp::backend::onnxruntime::Provider;
use trt_nlp::backend::{BackendChoice, BackendOptions};
use trt_nlp::{Embedder, HelperOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let folder = std::env::args().nth(1).ok_or("usage: trt-downstream MODEL_FOLDER TEXT...")?;
    let texts: Vec<String> = std::env::args().skip(2).collect();
    let mut backend = BackendOptions::default().with_max_batch(8);
    backend.onnxruntime.provider = Provider::Cpu;
    let embedder = Embedder::open(folder, BackendChoice::OnnxRuntime, &backend, &HelperOptions::default())?;
    let rows = embedder.embed(&texts)?;
    for (text, row) in texts.iter().zip(rows.rows()) {
        println!("{text}: {} dims", row.len());
    }
    Ok(())
}
