//! A checkpoint's tensors: `model.safetensors`, or the shards that
//! `model.safetensors.index.json` lists, read once into memory and handed out
//! as FP32 (F32, F16 and BF16 are read; the graph is written in FP32 and
//! converted to FP16 afterwards by the project's FP16 rules).
//!
//! The header is parsed and checked by HF's own `safetensors` crate (header
//! length, JSON, offsets contiguous and inside the file, sizes matching the
//! shapes); this module adds what a graph writer needs: the tensor the
//! architecture asks for, under the name prefixes checkpoints use
//! (`bert.`, `roberta.`, ... on task models; none on base models), with the
//! shape the config implies.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use safetensors::tensor::{Dtype, SafeTensors};

use crate::{Error, Result};

/// One tensor's place in a shard.
#[derive(Debug, Clone)]
struct Entry {
    shard: usize,
    dtype: Dtype,
    shape: Vec<usize>,
    /// Byte range in the shard's buffer.
    range: std::ops::Range<usize>,
}

/// The tensors of a checkpoint.
#[derive(Debug)]
pub struct Weights {
    /// What errors name: the file, or the index of a sharded checkpoint.
    path: PathBuf,
    shards: Vec<Vec<u8>>,
    entries: HashMap<String, Entry>,
    /// Prefixes tried before a bare name (`"bert."`), in order.
    prefixes: Vec<String>,
    family: &'static str,
}

/// A tensor read as FP32, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// Its name in the checkpoint.
    pub name: String,
    /// Dimensions.
    pub shape: Vec<usize>,
    /// Values.
    pub data: Vec<f32>,
}

#[derive(serde::Deserialize)]
struct ShardIndex {
    weight_map: HashMap<String, String>,
}

/// The weight files looked for, in order.
pub const WEIGHT_FILES: [&str; 2] = ["model.safetensors", "model.safetensors.index.json"];

impl Weights {
    /// Reads the checkpoint of `dir`: `model.safetensors`, else the shards
    /// of `model.safetensors.index.json` (each file read once, only from
    /// `dir`). A `pytorch_model.bin` alone is refused with a message saying
    /// why: it is a Python pickle, which this crate does not execute.
    pub fn open(dir: &Path) -> Result<Weights> {
        let single = dir.join(WEIGHT_FILES[0]);
        if single.is_file() {
            let bytes = std::fs::read(&single).map_err(Error::io(&single))?;
            return Self::from_shards(single, vec![(PathBuf::from(WEIGHT_FILES[0]), bytes)]);
        }
        let index = dir.join(WEIGHT_FILES[1]);
        if index.is_file() {
            let map: ShardIndex = crate::json::read(&index)?;
            let mut files: Vec<&String> = map.weight_map.values().collect();
            files.sort();
            files.dedup();
            let mut shards = Vec::with_capacity(files.len());
            for f in files {
                let name = Path::new(f);
                // Shards are plain file names beside the index, never paths out of the folder.
                if name.components().count() != 1 || name.file_name().is_none() {
                    return Err(Error::config(&index, "weight_map", format!("shard '{f}' is not a file name in the folder")));
                }
                let path = dir.join(name);
                let bytes = std::fs::read(&path).map_err(Error::io(&path))?;
                shards.push((name.to_owned(), bytes));
            }
            return Self::from_shards(index, shards);
        }
        let why = if dir.join("pytorch_model.bin").is_file() {
            "the folder has only pytorch_model.bin, a Python pickle this importer does not run; convert it to model.safetensors"
        } else {
            "the model's weights"
        };
        Err(Error::Missing { path: single, why: why.into() })
    }

    /// Tensors from files already read: `(name, bytes)` per shard; `path` is
    /// what errors name.
    pub fn from_shards(path: PathBuf, shards: Vec<(PathBuf, Vec<u8>)>) -> Result<Weights> {
        let mut entries = HashMap::new();
        let mut buffers = Vec::with_capacity(shards.len());
        for (i, (name, bytes)) in shards.into_iter().enumerate() {
            let (header, meta) = SafeTensors::read_metadata(&bytes).map_err(|e| Error::Safetensors {
                path: if name.as_os_str().is_empty() { path.clone() } else { path.with_file_name(&name) },
                problem: e.to_string(),
            })?;
            let base = 8 + header;
            for (tensor, info) in meta.tensors() {
                let (start, end) = info.data_offsets;
                let entry = Entry { shard: i, dtype: info.dtype, shape: info.shape.clone(), range: base + start..base + end };
                if entries.insert(tensor.clone(), entry).is_some() {
                    return Err(Error::Tensor { path: path.clone(), tensor, problem: "stored in more than one shard".into() });
                }
            }
            buffers.push(bytes);
        }
        Ok(Weights { path, shards: buffers, entries, prefixes: Vec::new(), family: "" })
    }

    /// The same tensors, looked up for `family` under `prefixes` first
    /// (`["bert."]`): task checkpoints keep the encoder under its family's
    /// name, base checkpoints at the top.
    pub fn for_family(mut self, family: &'static str, prefixes: &[&str]) -> Self {
        self.family = family;
        self.prefixes = prefixes.iter().map(|p| p.to_string()).collect();
        self
    }

    /// The file errors name.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every tensor name, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut n: Vec<&str> = self.entries.keys().map(String::as_str).collect();
        n.sort_unstable();
        n
    }

    /// Whether the encoder tensor `name` is there (under a prefix or bare).
    pub fn has(&self, name: &str) -> bool {
        self.resolve(name).is_some()
    }

    /// Whether the top-level tensor `name` (a head's, never prefixed) is there.
    pub fn has_exact(&self, name: &str) -> bool {
        self.entries.contains_key(name)
    }

    fn resolve(&self, name: &str) -> Option<(&str, &Entry)> {
        self.prefixes
            .iter()
            .map(|p| format!("{p}{name}"))
            .chain(std::iter::once(name.to_string()))
            .find_map(|n| self.entries.get_key_value(&n))
            .map(|(k, e)| (k.as_str(), e))
    }

    /// The encoder tensor `name` (looked up under the family's prefixes,
    /// then bare), checked to have `shape`.
    pub fn get(&self, name: &str, shape: &[usize]) -> Result<Tensor> {
        let (full, entry) = self.resolve(name).ok_or_else(|| self.missing(name))?;
        self.read(full, entry, shape)
    }

    /// The tensor called exactly `name` (heads: `classifier.weight`), checked to have `shape`.
    pub fn get_exact(&self, name: &str, shape: &[usize]) -> Result<Tensor> {
        let entry = self.entries.get(name).ok_or_else(|| self.missing(name))?;
        self.read(name, entry, shape)
    }

    /// The shape of the encoder tensor `name`, if there.
    pub fn shape_of(&self, name: &str) -> Option<&[usize]> {
        self.resolve(name).map(|(_, e)| e.shape.as_slice())
    }

    /// The shape of the tensor called exactly `name`, if there.
    pub fn shape_of_exact(&self, name: &str) -> Option<&[usize]> {
        self.entries.get(name).map(|e| e.shape.as_slice())
    }

    fn missing(&self, name: &str) -> Error {
        Error::MissingTensor { path: self.path.clone(), tensor: name.to_string(), family: self.family }
    }

    fn read(&self, name: &str, entry: &Entry, shape: &[usize]) -> Result<Tensor> {
        let problem = |p: String| Error::Tensor { path: self.path.clone(), tensor: name.to_string(), problem: p };
        if entry.shape != shape {
            return Err(problem(format!("shape {:?}, the config implies {shape:?}", entry.shape)));
        }
        let bytes = self
            .shards
            .get(entry.shard)
            .and_then(|b| b.get(entry.range.clone()))
            .ok_or_else(|| problem("its data lies outside the file".into()))?;
        let data: Vec<f32> = match entry.dtype {
            Dtype::F32 => bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
            Dtype::F16 => bytes.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect(),
            Dtype::BF16 => bytes.chunks_exact(2).map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32()).collect(),
            other => return Err(problem(format!("element type {other:?}; weights must be F32, F16 or BF16"))),
        };
        let count: usize = shape.iter().product();
        if data.len() != count {
            return Err(problem(format!("{} values for shape {shape:?}", data.len())));
        }
        Ok(Tensor { name: name.to_string(), shape: shape.to_vec(), data })
    }
}
