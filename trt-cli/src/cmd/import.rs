//! `trt import DIR -o OUT`: a HuggingFace model folder (config.json,
//! model.safetensors, tokenizer.json, sentence-transformers files), or
//! `org/name` from the local HuggingFace cache, written as a servable folder
//! (model.onnx, tokenizer.json, config.json, trt_model.json) by trt-hf, in
//! Rust. `trt embed`, `classify` and `serve` do the same on first use into
//! a cache; this command writes the folder where you say.

use std::path::PathBuf;

use trt_hf::{ImportOptions, Precision};

use crate::error::{CliError, Result};

/// Arguments of `trt import`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The HuggingFace model folder, or org/name[@revision] in the local HuggingFace cache.
    pub model: String,

    /// Where to write the servable folder.
    #[arg(short, long, value_name = "DIR")]
    pub output: PathBuf,

    /// Write the graph in FP16 (LayerNorm, Softmax, reductions and pooling stay FP32).
    #[arg(long)]
    pub fp16: bool,

    /// Write the encoder in ONNX Runtime's fused operators (Attention, SkipLayerNormalization,
    /// BiasGelu; RotaryEmbedding, MultiHeadAttention and GroupQueryAttention for the rotary
    /// families): faster on its CUDA provider; ONNX Runtime only (TensorRT parses the plain form).
    #[arg(long)]
    pub fused: bool,

    /// --fused with the encoder layers on the batch's real tokens only (RemovePadding,
    /// PackedAttention, RestorePadding): a batch costs its tokens, not rows x its longest
    /// text. ONNX Runtime's CUDA provider only; ModernBERT and the decoders get --fused.
    #[arg(long, conflicts_with = "fused")]
    pub packed: bool,
}

/// The graph form `--fused` / `--packed` ask for (plain without either).
pub fn form(fused: bool, packed: bool) -> trt_hf::Form {
    match (fused, packed) {
        (_, true) => trt_hf::Form::Packed,
        (true, false) => trt_hf::Form::Fused,
        (false, false) => trt_hf::Form::Plain,
    }
}

/// `trt import`.
pub fn run(args: Args) -> Result<()> {
    let src = trt_nlp::resolve_model(&args.model)?;
    let form = form(args.fused, args.packed);
    let options = ImportOptions::default().with_precision(if args.fp16 { Precision::Fp16 } else { Precision::Fp32 }).with_form(form);
    let d = trt_hf::import(&src, &args.output, &options).map_err(|e| CliError::new(e.to_string()))?;
    let what = match d.embedding_dim {
        Some(dim) => {
            format!("embedding of {dim} values ({} pooling{})", d.pooling.join("+"), if d.normalize { ", normalised" } else { "" })
        }
        None => format!("{} labels ({:?} scores)", d.labels.len(), d.activation).to_lowercase(),
    };
    eprintln!(
        "imported {} ({}): {what}; texts cut at {} tokens; {:?} {:?} -> {}",
        src.display(),
        d.architecture.as_deref().unwrap_or(&d.model_type),
        d.max_seq_length,
        d.precision,
        d.form,
        args.output.display()
    );
    Ok(())
}
