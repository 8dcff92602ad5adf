//! `trt bench MODEL`: latency percentiles and throughput of one model on one
//! backend and device, as text or one JSON document, optionally gated
//! against a baseline.
//!
//! | MODEL | `--backend` | path | module |
//! |---|---|---|---|
//! | a plan (or a folder holding `model.plan`) | `auto`, `tensorrt` | TensorRT on `cuda:N`, CUDA events around the copies and the engine | `bench_plan` (the `tensorrt` feature) |
//! | an ONNX file or a model folder | `auto`, `onnxruntime` | trt-nlp's ONNX Runtime backend on `cpu` or `cuda:N` | `bench_ort` |
//!
//! Both paths time their iterations with the same loop and percentiles
//! ([`bench_report`](super::bench_report)) and write the same [`Report`].
//! `--compare BASELINE.json` reads a report written by `--json` and fails
//! with exit code 3 ([`REGRESSION_EXIT_CODE`](super::bench_report::REGRESSION_EXIT_CODE)) when this run's p50 latency
//! rose, or its throughput fell, by more than `--max-regression` percent;
//! errors exit 1 and usage errors (a bad `--device`, say) exit 2.

use std::path::PathBuf;

use trt_nlp::backend::{is_plan, BackendChoice};
use trt_nlp::ModelFolder;
use trt_onnx::runtime::Provider;

pub use super::bench_args::Args;
use super::bench_args::Measured;
use super::bench_report::{compare, Report};
use crate::error::{CliError, Result};
use crate::output::emit;

/// The model file MODEL names: itself, or the folder's model file
/// ([`ModelFolder`]'s order, plan first; `model.onnx` for `--backend onnxruntime`).
fn model_file(args: &Args) -> Result<PathBuf> {
    if !args.model.is_dir() {
        return Ok(args.model.clone());
    }
    let onnx = args.model.join("model.onnx");
    if args.backend == BackendChoice::OnnxRuntime && onnx.is_file() {
        return Ok(onnx);
    }
    Ok(ModelFolder::open(&args.model)?.model)
}

/// `trt bench`.
pub fn run(args: Args) -> Result<()> {
    let baseline = args.compare.as_deref().map(Report::read).transpose()?;
    let model = model_file(&args)?;
    let plan = match args.backend {
        BackendChoice::Auto => is_plan(&model),
        #[cfg(feature = "tensorrt")]
        BackendChoice::TensorRt => true,
        // ONNX Runtime (the enum is non-exhaustive).
        _ => false,
    };
    let measured = match (plan, is_plan(&model)) {
        (true, true) => plan_path(&args, &model)?,
        (false, false) => super::bench_ort::run(&args, &model, args.device.unwrap_or(Provider::Cpu))?,
        (true, false) => {
            return Err(CliError::new(format!(
                "{}: trt bench runs TensorRT plans on TensorRT (build one with trt build) and ONNX models on --backend onnxruntime",
                model.display()
            )))
        }
        (false, true) => return Err(CliError::new(format!("{} is a TensorRT plan; ONNX Runtime runs ONNX files", model.display()))),
    };
    let report = &measured.report;
    if args.json {
        emit(&report.to_json());
    } else {
        emit(&format!("{}{}{}{}", report.heading(), measured.stage_lines, report.throughput_line(), measured.trailer));
    }
    if let (Some(baseline), Some(path)) = (baseline, args.compare.as_deref()) {
        let verdict = compare(report, &baseline, path, args.max_regression)?;
        eprintln!("{verdict}");
    }
    Ok(())
}

#[cfg(feature = "tensorrt")]
fn plan_path(args: &Args, model: &std::path::Path) -> Result<Measured> {
    let device = match args.device.unwrap_or(Provider::Cuda { device: 0 }) {
        Provider::Cuda { device } => device,
        other => {
            return Err(CliError::new(format!("--device {other}: a TensorRT plan runs on a GPU (cuda:N); ONNX Runtime runs on the CPU")))
        }
    };
    super::bench_plan::run(args, model, device)
}

#[cfg(not(feature = "tensorrt"))]
fn plan_path(_: &Args, model: &std::path::Path) -> Result<Measured> {
    Err(CliError::new(format!(
        "{} is a TensorRT plan; this build has no TensorRT (the tensorrt feature): bench an ONNX model on ONNX Runtime",
        model.display()
    )))
}
