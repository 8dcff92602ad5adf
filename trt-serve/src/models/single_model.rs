//! Single-model mode: one model folder served directly (`--model-dir
//! /mnt/models --model-name NAME`), the layout KServe's storage initializer
//! writes for a model in Triton's format (`config.pbtxt`, version folders,
//! tokenizer files). The repository code expects `ROOT/<name>/`, so the
//! folder is presented as a private repository whose one model folder links
//! to each of its entries; the view is removed when the server exits.
//!
//! `--model-id` serves a HuggingFace model folder (or `org/name` from the
//! local HuggingFace cache) the same way, as TEI's `--model-id` does: the
//! folder is imported (trt-hf writes the graph from its weights, into the
//! import cache), and the view holds a `config.pbtxt` derived from what the
//! import says (a text input; the embedding and token states, or the
//! logits), the tokenizer, the labels, `trt_model.json` and version 1.

use std::path::{Path, PathBuf};

use crate::error::{ServeError, ServeResult};
use crate::models::repository::check_model_name;

/// A one-model repository view, removed on drop.
#[derive(Debug)]
pub struct SingleModel {
    root: PathBuf,
}

impl SingleModel {
    /// The view of `model_dir` as model `name`.
    pub fn new(model_dir: &Path, name: &str) -> ServeResult<Self> {
        check_model_name(name)?;
        let dir = model_dir.canonicalize().map_err(|e| ServeError::NotFound(format!("--model-dir {}: {e}", model_dir.display())))?;
        if !dir.join("config.pbtxt").is_file() {
            return Err(ServeError::invalid(format!(
                "--model-dir {}: no config.pbtxt (the folder must hold one model in Triton's layout: config.pbtxt and version folders)",
                dir.display()
            )));
        }
        let root = std::env::temp_dir().join(format!("trt-serve-{}-{name}", std::process::id()));
        let shown = root.display().to_string();
        let io = |e: std::io::Error| ServeError::Unavailable(format!("cannot lay out the model view in {shown}: {e}"));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join(name)).map_err(io)?;
        let view = SingleModel { root };
        for entry in std::fs::read_dir(&dir).map_err(io)? {
            let entry = entry.map_err(io)?;
            std::os::unix::fs::symlink(entry.path(), view.root.join(name).join(entry.file_name())).map_err(io)?;
        }
        Ok(view)
    }

    /// The view of the HuggingFace model `id` (a folder, or `org/name` in
    /// the local HuggingFace cache) as model `name`, imported with `options`
    /// into `cache`, served with at most `max_batch` texts a batch.
    pub fn from_hf(id: &str, name: &str, cache: &Path, options: &trt_hf::ImportOptions, max_batch: usize) -> ServeResult<Self> {
        check_model_name(name)?;
        let src = trt_nlp::resolve_model(id).map_err(|e| ServeError::NotFound(format!("--model-id {id}: {e}")))?;
        let root = std::env::temp_dir().join(format!("trt-serve-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let view = SingleModel { root };
        hf_view(&src, &view.root.join(name), cache, options, max_batch).map_err(|e| match e {
            ServeError::InvalidArgument(m) => ServeError::invalid(format!("--model-id {id}: {m}")),
            e => e,
        })?;
        Ok(view)
    }

    /// The repository folder to serve.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

impl Drop for SingleModel {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Lays out `view` as a Triton model folder for the HuggingFace folder
/// `src`: the import (cached in `cache`), a `config.pbtxt` derived from its
/// descriptor (a text input; the embedding and token states, or the logits;
/// at most `max_batch` texts a batch; on a GPU, [`gpu_serving`]), the
/// tokenizer, labels and descriptor, and version 1 linking to the graph.
/// `view` is replaced.
pub(crate) fn hf_view(src: &Path, view: &Path, cache: &Path, options: &trt_hf::ImportOptions, max_batch: usize) -> ServeResult<()> {
    let imported = trt_hf::import_cached(src, cache, options).map_err(|e| ServeError::invalid(e.to_string()))?;
    let descriptor = trt_hf::Descriptor::read(&imported)
        .map_err(|e| ServeError::invalid(e.to_string()))?
        .ok_or_else(|| ServeError::invalid(format!("the import of {} wrote no {}", src.display(), trt_hf::DESCRIPTOR)))?;
    let shown = view.display().to_string();
    let io = |e: std::io::Error| ServeError::Unavailable(format!("cannot lay out the model view in {shown}: {e}"));
    let _ = std::fs::remove_dir_all(view);
    std::fs::create_dir_all(view.join("1")).map_err(io)?;
    let mut config = descriptor.text_model_config(max_batch.max(1));
    config.push_str(&gpu_serving(descriptor.form));
    std::fs::write(view.join("config.pbtxt"), config).map_err(io)?;
    for f in ["tokenizer.json", "config.json", trt_hf::DESCRIPTOR] {
        std::os::unix::fs::symlink(imported.join(f), view.join(f)).map_err(io)?;
    }
    std::os::unix::fs::symlink(imported.join("model.onnx"), view.join("1").join("model.onnx")).map_err(io)?;
    Ok(())
}

/// What a HuggingFace model is served with where ONNX Runtime can run on a
/// GPU here (nothing otherwise: the CPU, as before): two sessions on each
/// visible GPU (one batch is copied in or out while the other computes),
/// CUDA graphs over the whole batch range (a batch replays its bucket's
/// graph instead of launching each kernel), and row buckets, which bound the
/// shapes the sessions see and replace the graphs where ONNX Runtime cannot
/// capture the model. The fastest layouts measured on an H200 had two to
/// four sessions and graphs (docs/gpu.md). A packed graph
/// ([`trt_hf::Form::Packed`]) gets no CUDA graphs: its shapes inside
/// follow each batch's tokens, which a captured graph cannot replay.
fn gpu_serving(form: trt_hf::Form) -> String {
    #[cfg(feature = "onnxruntime")]
    if trt_nlp::backend::onnxruntime::cuda_usable() {
        let mut config = String::from("instance_group [ { kind: KIND_GPU count: 2 } ]\n");
        if form != trt_hf::Form::Packed {
            config.push_str("optimization { cuda { graphs: true } }\n");
        }
        config.push_str("parameters { key: \"cuda_row_buckets\" value { string_value: \"true\" } }\n");
        return config;
    }
    let _ = form;
    String::new()
}
