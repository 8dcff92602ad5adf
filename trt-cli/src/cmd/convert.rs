//! `trt convert --fp16 IN.onnx -o OUT.onnx`: FP16 weights and compute, with
//! FP32 islands where FP16 is unsafe (trt_onnx::fp16 says which and why).

use std::path::PathBuf;

use trt_onnx::fp16::{self, Fp16Options, Fp16Report};
use trt_onnx::graph::{Model, WeightStorage};

use crate::error::{CliError, Context, Result};

/// Arguments of `trt convert`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The FP32 ONNX model (external weight files are read from beside it).
    pub model: PathBuf,

    /// Where to write the converted model.
    #[arg(short, long, value_name = "OUT.onnx")]
    pub output: PathBuf,

    /// Convert to FP16 (the only conversion so far; required so the command says what it does).
    #[arg(long, required = true)]
    pub fp16: bool,

    /// Also keep this operator type in FP32 (repeatable), on top of the default list.
    #[arg(long, value_name = "OP")]
    pub fp32_op: Vec<String>,

    /// Keep this node (by name) in FP32 (repeatable).
    #[arg(long, value_name = "NODE")]
    pub fp32_node: Vec<String>,

    /// Make FP32 graph inputs and outputs FP16 too (default: keep their types, Casts inside).
    #[arg(long)]
    pub fp16_io: bool,

    /// Write the weights to OUT.onnx.data beside the model.
    #[arg(long)]
    pub external_data: bool,
}

/// The options `--fp32-op`, `--fp32-node` and `--fp16-io` ask for.
pub fn options(fp32_ops: &[String], fp32_nodes: &[String], fp16_io: bool) -> Fp16Options {
    let mut o = Fp16Options::default();
    o.fp32_ops.extend(fp32_ops.iter().cloned());
    o.fp32_nodes.extend(fp32_nodes.iter().cloned());
    o.keep_io_types = !fp16_io;
    o
}

/// One line saying what the conversion did.
pub fn summary(r: &Fp16Report) -> String {
    let fp32: Vec<String> = r.fp32_nodes.iter().map(|(op, n)| format!("{op} {n}")).collect();
    let fp32 = if fp32.is_empty() { "none".to_string() } else { fp32.join(", ") };
    format!(
        "{} nodes in FP16, FP32 kept for: {fp32}; {} casts inserted, {} initializers stored as FP16",
        r.fp16_nodes, r.casts, r.fp16_initializers
    )
}

/// `trt convert`.
pub fn run(args: Args) -> Result<()> {
    if args.output == args.model {
        return Err(CliError::new(format!("the output would overwrite the model {}; give another -o", args.model.display())));
    }
    let model = Model::load(&args.model).about(&args.model)?;
    let (converted, report) = fp16::convert(&model, &options(&args.fp32_op, &args.fp32_node, args.fp16_io)).about(&args.model)?;
    let storage = if args.external_data {
        let name = args.output.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        WeightStorage::External(PathBuf::from(format!("{name}.data")))
    } else {
        WeightStorage::Auto
    };
    converted.save(&args.output, &storage).about(&args.output)?;
    println!("{}: {}", args.output.display(), summary(&report));
    Ok(())
}
