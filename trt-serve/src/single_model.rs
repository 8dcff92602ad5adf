//! Single-model mode: one model folder served directly (`--model-dir
//! /mnt/models --model-name NAME`), the layout KServe's storage initializer
//! writes for a model in Triton's format (`config.pbtxt`, version folders,
//! tokenizer files). The repository code expects `ROOT/<name>/`, so the
//! folder is presented as a private repository whose one model folder links
//! to each of its entries; the view is removed when the server exits.

use std::path::{Path, PathBuf};

use crate::error::{ServeError, ServeResult};
use crate::repository::check_model_name;

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
