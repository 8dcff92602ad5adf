//! `trt quantize IN.onnx --calibration TEXTS -o OUT.onnx`: INT8 Q/DQ from
//! calibration texts, the float rest in FP16, optional accuracy targets met
//! by leaving the most sensitive layers in float (trt_onnx::quantize).
//!
//! The texts file is split: every `--holdout-every`-th text (default 4th) is
//! held back to measure the result and never used to calibrate.

use std::path::PathBuf;

use trt_onnx::graph::{Model, WeightStorage};
use trt_onnx::quantize::calibrate::Calibrator;
use trt_onnx::quantize::{self, cache, FloatPrecision, QuantizeOptions};
use trt_onnx::runtime::{Session, SessionOptions};

use crate::cmd::compare::{describe, read_texts, token_batches, tokenizer_for};
use crate::error::{CliError, Context, Result};

/// Fewest texts accepted for calibration (after the held-out share is taken).
pub const MIN_TEXTS: usize = 8;

/// Arguments of `trt quantize`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The FP32 ONNX model.
    pub model: PathBuf,
    /// Calibration texts, one per line.
    #[arg(long, value_name = "TEXTS")]
    pub calibration: PathBuf,
    /// Where to write the quantized model.
    #[arg(short, long, value_name = "OUT.onnx")]
    pub output: PathBuf,
    /// The tokenizer [default: tokenizer.json beside the model].
    #[arg(long, value_name = "tokenizer.json")]
    pub tokenizer: Option<PathBuf>,
    /// minmax, entropy or percentile[:P] (default P 99.99).
    #[arg(long, default_value = "minmax")]
    pub calibrator: Calibrator,
    /// SmoothQuant strength alpha in [0, 1]; 0 turns smoothing off (0.85: measured best on the default model).
    #[arg(long, default_value_t = 0.85)]
    pub smooth: f32,
    /// Keep layers (node names, `*` wildcards) in float; repeatable.
    #[arg(long, value_name = "PATTERN")]
    pub exclude: Vec<String>,
    /// Smallest pooled-embedding (or row) cosine against FP32 on the held-out texts.
    #[arg(long)]
    pub target_cosine: Option<f64>,
    /// Smallest argmax agreement with FP32 on the held-out texts.
    #[arg(long)]
    pub target_agreement: Option<f64>,
    /// Hold back every N-th text for measuring (0: none).
    #[arg(long, default_value_t = 4)]
    pub holdout_every: usize,
    /// Keep the float part FP32 instead of FP16.
    #[arg(long)]
    pub fp32: bool,
    /// Also write the activation scales of the original model's MatMul inputs as a
    /// TensorRT calibration cache (for TensorRT 10's implicit INT8 path on the FP32 model).
    #[arg(long, value_name = "FILE")]
    pub calibration_cache: Option<PathBuf>,
    /// Rows per calibration batch.
    #[arg(long, default_value_t = 8)]
    pub batch: usize,
    /// Longest token sequence.
    #[arg(long, default_value_t = 128)]
    pub max_len: usize,
    /// ONNX Runtime threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

/// `trt quantize`.
pub fn run(args: Args) -> Result<()> {
    if args.output == args.model {
        return Err(CliError::new(format!("the output would overwrite the model {}; give another -o", args.model.display())));
    }
    let texts = read_texts(&args.calibration)?;
    let (mut calib, mut held) = (Vec::new(), Vec::new());
    for (i, t) in texts.into_iter().enumerate() {
        if args.holdout_every > 0 && i % args.holdout_every == args.holdout_every - 1 {
            held.push(t);
        } else {
            calib.push(t);
        }
    }
    if calib.len() < MIN_TEXTS {
        return Err(CliError::new(format!(
            "{}: {} calibration texts (after holding back {}); at least {MIN_TEXTS} are needed, a few hundred is better",
            args.calibration.display(),
            calib.len(),
            held.len()
        )));
    }
    let model = Model::load(&args.model).about(&args.model)?;
    let session = SessionOptions { intra_threads: args.threads, ..SessionOptions::default() };
    let inputs: Vec<String> = Session::from_bytes(&model.to_bytes().about(&args.model)?, &session)
        .about(&args.model)?
        .inputs()
        .iter()
        .map(|i| i.name.clone())
        .collect();
    let tokenizer = tokenizer_for(&args.model, args.tokenizer.as_deref())?;
    let calib = token_batches(&tokenizer, &inputs, &calib, args.batch, args.max_len)?;
    let held = token_batches(&tokenizer, &inputs, &held, args.batch, args.max_len)?;
    let mut options = QuantizeOptions::default();
    options.calibrator = args.calibrator;
    options.smooth_alpha = (args.smooth > 0.0).then_some(args.smooth);
    options.exclude = args.exclude.clone();
    options.target_cosine = args.target_cosine;
    options.target_agreement = args.target_agreement;
    options.float = if args.fp32 { FloatPrecision::Fp32 } else { FloatPrecision::Fp16 };
    options.session = session;
    let (out, report) = quantize::quantize(&model, &calib, &held, &options).about(&args.model)?;
    out.save(&args.output, &WeightStorage::Auto).about(&args.output)?;
    let int8 = report.layers.iter().filter(|(_, q)| *q).count();
    println!(
        "{}: {int8} of {} weighted MatMuls in INT8 ({:.1}% of their FLOPs), calibrator {:?}, smoothing {}",
        args.output.display(),
        report.layers.len(),
        100.0 * report.int8_flops_share,
        args.calibrator,
        options.smooth_alpha.map(|a| format!("alpha {a}")).unwrap_or_else(|| "off".into())
    );
    for (name, why) in &report.float_reasons {
        println!("  float: {name} ({why})");
    }
    if let Some(e) = &report.evaluation {
        println!(
            "  held-out ({} texts) vs FP32: cosine min {:.5} mean {:.5}",
            held.iter().map(|b| b.rows()).sum::<usize>(),
            e.cosine_min(),
            e.cosine_mean()
        );
        for (name, m) in &e.outputs {
            println!("    {name}: {}", describe(m));
        }
    }
    if let Some(path) = &args.calibration_cache {
        // Scales of the original model's tensors: the implicit path builds that model, unsmoothed.
        let text = cache::calibration_cache(&report.original_amax, cache::DEFAULT_VERSION);
        std::fs::write(path, text).about(path)?;
        println!("  calibration cache: {} ({} tensors of {})", path.display(), report.original_amax.len(), args.model.display());
    }
    Ok(())
}
