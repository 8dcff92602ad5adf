//! BGE-M3's sparse head: beside its dense embedding (CLS, as its
//! sentence-transformers files say), a `sparse_linear` Linear(hidden, 1)
//! whose `relu` is each token's weight; a text's sparse vector holds, per
//! token id, the largest weight of its tokens, with the ids of the cls, eos,
//! pad and unk tokens dropped (FlagEmbedding's `BGEM3FlagModel`).
//!
//! | file | read |
//! |---|---|
//! | `sparse_linear.safetensors` | `weight` `[1, hidden]`, `bias` `[1]` |
//! | `sparse_linear.pt` (what the hub ships) | refused by name: a torch pickle, which this crate does not execute or parse |
//! | `tokenizer_config.json` | `cls_token`, `eos_token`, `pad_token`, `unk_token`: the ids dropped |
//!
//! The graph computes the vocabulary-sized vector itself (output `sparse`,
//! as SPLADE's), so `TextModel::sparse_embed` reads it unchanged: one-hot
//! columns of the token ids scaled by the weights, the max over the text.

use std::path::{Path, PathBuf};

use crate::graph::{attr_int, Graph};
use crate::json::Fields;
use crate::sentence::attr_ints_axes;
use crate::weights::{Tensor, Weights};
use crate::{Error, Result};

/// The head's file.
pub const SPARSE_LINEAR: &str = "sparse_linear.safetensors";
/// The pickle the hub's BGE-M3 folder ships instead.
pub const SPARSE_LINEAR_PT: &str = "sparse_linear.pt";

/// The head, read.
#[derive(Debug, Clone)]
pub struct SparseHead {
    weight: Tensor,
    bias: Tensor,
    /// Token ids never in a vector.
    dropped: Vec<i32>,
}

/// The folder's sparse head, if it has one: `sparse_linear.safetensors` in
/// `dir` or the Transformer's folder; a `sparse_linear.pt` alone is an error.
pub fn read(dir: &Path, transformer_dir: &Path, tokenizer: &Path, hidden: usize) -> Result<Option<SparseHead>> {
    let Some(path) = [dir, transformer_dir].iter().map(|d| d.join(SPARSE_LINEAR)).find(|p| p.is_file()) else {
        if let Some(pt) = [dir, transformer_dir].iter().map(|d| d.join(SPARSE_LINEAR_PT)).find(|p| p.is_file()) {
            return Err(Error::Unsupported {
                path: pt,
                what: "BGE-M3's sparse head as a torch pickle".into(),
                supported: vec![format!(
                    "{SPARSE_LINEAR} beside it (python -c \"import torch, safetensors.torch as s; \
                     s.save_file(torch.load('{SPARSE_LINEAR_PT}'), '{SPARSE_LINEAR}')\")"
                )],
            });
        }
        return Ok(None);
    };
    let bytes = std::fs::read(&path).map_err(Error::io(&path))?;
    let w = Weights::from_shards(path.clone(), vec![(PathBuf::new(), bytes)])?;
    let (weight, bias) = (w.get_exact("weight", &[1, hidden])?, w.get_exact("bias", &[1])?);
    Ok(Some(SparseHead { weight, bias, dropped: dropped_ids(tokenizer)? }))
}

/// The ids of `tokenizer_config.json`'s cls, eos, pad and unk tokens.
fn dropped_ids(tokenizer: &Path) -> Result<Vec<i32>> {
    let config = tokenizer.with_file_name("tokenizer_config.json");
    if !config.is_file() {
        return Err(Error::Missing { path: config, why: "the special tokens BGE-M3's sparse vectors leave out".into() });
    }
    let f = Fields::read(&config)?;
    let t: serde_json::Value = crate::json::read(tokenizer)?;
    let mut ids = Vec::new();
    for name in ["cls_token", "eos_token", "pad_token", "unk_token"] {
        if let Some(token) = crate::folder::special_token(&f, name)? {
            let id =
                crate::folder::token_id(&t, &token).ok_or_else(|| f.error(name, format!("'{token}' is not in {}", tokenizer.display())))?;
            ids.push(i32::try_from(id).map_err(|_| f.error(name, format!("id {id} is past the INT32 inputs")))?);
        }
    }
    Ok(ids)
}

/// `[B, vocab]`: per text, the largest `relu(w · h + b)` of each token id
/// (0 for ids not in the text and for the dropped ones), all of it FP32.
pub fn graph(g: &mut Graph, hidden: &str, head: &SparseHead, vocab: usize) -> String {
    let weight = g.weight_t(&head.weight);
    let bias = g.weight(&head.bias);
    g.in_fp32(|g| {
        let y = g.op("MatMul", "m3_sparse/MatMul", &[hidden, &weight], vec![]);
        let y = g.op("Add", "m3_sparse/Add", &[&y, &bias], vec![]);
        let y = g.op("Relu", "m3_sparse/Relu", &[&y], vec![]);
        let mask = g.op("Cast", "m3_sparse/mask/Cast", &["attention_mask"], vec![attr_int("to", 1)]);
        let axis2 = g.ints("m3_sparse/axis2", &[1], &[2]);
        let mask = g.op("Unsqueeze", "m3_sparse/mask/Unsqueeze", &[&mask, &axis2], vec![]);
        let y = g.op("Mul", "m3_sparse/Mask", &[&y, &mask], vec![]);
        let ids = g.op("Unsqueeze", "m3_sparse/ids/Unsqueeze", &["input_ids", &axis2], vec![]);
        let all: Vec<i32> = (0..vocab as i32).collect();
        let all = g.ints32("m3_sparse/vocab", &[vocab], &all);
        let hot = g.op("Equal", "m3_sparse/OneHot", &[&ids, &all], vec![]);
        let hot = g.op("Cast", "m3_sparse/OneHot/Cast", &[&hot], vec![attr_int("to", 1)]);
        let y = g.op("Mul", "m3_sparse/Scatter", &[&hot, &y], vec![]);
        let y = g.op("ReduceMax", "m3_sparse/ReduceMax", &[&y], vec![attr_ints_axes(&[1]), attr_int("keepdims", 0)]);
        let keep: Vec<f32> = (0..vocab as i32).map(|i| if head.dropped.contains(&i) { 0.0 } else { 1.0 }).collect();
        let keep = g.floats("m3_sparse/keep", &[vocab], &keep);
        g.op("Mul", "m3_sparse/Drop", &[&y, &keep], vec![])
    })
}
