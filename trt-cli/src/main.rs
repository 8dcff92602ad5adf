//! `trt`: build, inspect and benchmark TensorRT engines, and tokenize text for
//! them, from the command line.
//!
//! | command | what | needs a GPU |
//! |---|---|---|
//! | `trt build MODEL.onnx -o PLAN` | ONNX to a plan, with shape ranges, workspace, timing cache, targets | no (TensorRT-RTX) |
//! | `trt inspect FILE [--json]` | I/O tensors and layers of an ONNX model or a plan | plans only |
//! | `trt bench MODEL [--backend B --device cpu\|cuda:N]` | latency percentiles, throughput (plans: transfer split); `--json`, `--compare BASELINE.json` (exit 3 on a regression) | plans: yes; ONNX on the CPU: no |
//! | `trt tokenize --tokenizer tokenizer.json` | token ids as JSON lines | no |
//! | `trt classify` / `trt embed` | text to labels / embeddings, on TensorRT or ONNX Runtime | no (ONNX Runtime) |
//! | `trt demo` | the embedded default model end to end | no (runs on ONNX Runtime where TensorRT cannot) |
//! | `trt import HF_DIR -o OUT [--fp16]` | a HuggingFace folder (safetensors, sentence-transformers files) as a servable ONNX folder, in Rust | no |
//! | `trt convert --fp16 IN.onnx -o OUT.onnx` | FP16 weights and compute, FP32 islands | no |
//! | `trt quantize IN.onnx --calibration TEXTS -o OUT.onnx` | INT8 Q/DQ, accuracy targets | no (ONNX Runtime) |
//! | `trt compare A.onnx B.onnx` / `trt compare PLAN MODEL.onnx` | output (and `--layers`) differences as a table or `--json`, a CI gate | ONNX models: no (ONNX Runtime); plans: yes |
//! | `trt serve --model-repository DIR` | KServe v2 / Triton-protocol server (HTTP, gRPC, metrics) | no (ONNX Runtime); plans: yes |
//!
//! Features: `onnxruntime` (default; always built in) and `tensorrt` (off:
//! `cargo install trt-cli --features tensorrt`, which needs TensorRT headers,
//! through trt-sys). The default build needs no TensorRT headers: `bench`
//! takes ONNX models only, the rest runs on ONNX Runtime alone, and `build`,
//! `inspect`, `refit` and `demo` answer with an error that names the feature
//! they need. `otel` (off) adds `--otlp-endpoint`.
//!
//! Errors are one line, `error: ...`, naming the file or tensor and the cause;
//! exit code 1, or 2 for usage errors (clap's), or 3 for `trt bench
//! --compare` past its `--max-regression`.
//!
//! The binary is called `trt` like the library crate it uses; Cargo keeps the
//! two apart because this package is `trt-cli`.

mod cmd;
mod error;
#[cfg(feature = "tensorrt")]
mod gpu;
mod locate;
mod logging;
mod output;
#[cfg(feature = "tensorrt")]
mod progress;
#[cfg(feature = "tensorrt")]
mod shapes;

use std::process::ExitCode;

use clap::{ArgAction, Parser, Subcommand};

/// TensorRT from the command line: build, inspect and benchmark engines, tokenize text.
#[derive(Debug, Parser)]
#[command(name = "trt", version, propagate_version = true)]
struct Cli {
    /// More log on stderr: -v warnings, -vv information, -vvv everything, TensorRT's
    /// included (`trt serve` logs information by default; RUST_LOG, when set, filters instead).
    #[arg(short, long, action = ArgAction::Count, global = true)]
    verbose: u8,

    /// Log lines as text or as JSON objects (one per line).
    #[arg(long, value_enum, default_value_t = logging::LogFormat::Text, global = true)]
    log_format: logging::LogFormat,

    /// Export spans (one per server request) over OTLP/HTTP to this URL, e.g.
    /// http://collector:4318/v1/traces.
    #[cfg(feature = "otel")]
    #[arg(long, value_name = "URL", global = true)]
    otlp_endpoint: Option<String>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Build a TensorRT plan from an ONNX model.
    #[cfg(feature = "tensorrt")]
    Build(cmd::build::Args),
    /// Build a TensorRT plan from an ONNX model (needs the `tensorrt` feature, not in this build).
    #[cfg(not(feature = "tensorrt"))]
    Build(cmd::without_tensorrt::Args),
    /// Show the inputs, outputs and layers of an ONNX model or a plan.
    #[cfg(feature = "tensorrt")]
    Inspect(cmd::inspect::Args),
    /// Show the inputs, outputs and layers of an ONNX model or a plan (needs the `tensorrt` feature, not in this build).
    #[cfg(not(feature = "tensorrt"))]
    Inspect(cmd::without_tensorrt::Args),
    /// Measure a model's latency and throughput (a plan on TensorRT, ONNX on ONNX Runtime).
    Bench(cmd::bench::Args),
    /// New weights for a refittable plan, from an ONNX model or a safetensors file.
    #[cfg(feature = "tensorrt")]
    Refit(cmd::refit::Args),
    /// New weights for a refittable plan (needs the `tensorrt` feature, not in this build).
    #[cfg(not(feature = "tensorrt"))]
    Refit(cmd::without_tensorrt::Args),
    /// Tokenize texts into input_ids and attention_mask (one JSON line per text).
    Tokenize(cmd::tokenize::Args),
    /// Classify texts with a sequence-classification model (plan, ONNX or model folder).
    Classify(cmd::nlp::ClassifyArgs),
    /// Embed texts with an encoder model (plan, ONNX or model folder): sentence embeddings.
    Embed(cmd::nlp::EmbedArgs),
    /// Named entities of texts with a token-classification model (entities as transformers' pipeline finds them).
    Ner(cmd::nlp::NerArgs),
    /// Build, inspect and (where the GPU allows) run the embedded default model.
    #[cfg(feature = "tensorrt")]
    Demo(cmd::demo::Args),
    /// Build, inspect and run the embedded default model (needs the `tensorrt` feature, not in this build).
    #[cfg(not(feature = "tensorrt"))]
    Demo(cmd::without_tensorrt::Args),
    /// Write a HuggingFace model folder (safetensors weights) as a servable ONNX folder.
    Import(cmd::import::Args),
    /// Convert an ONNX model's precision (FP32 to FP16).
    Convert(cmd::convert::Args),
    /// INT8 post-training quantization (Q/DQ) from calibration texts.
    Quantize(cmd::quantize::Args),
    /// Run two models (ONNX, or a plan against its ONNX) on the same inputs and compare their outputs.
    Compare(cmd::compare::Args),
    /// Serve a Triton-layout model repository over KServe v2 HTTP and gRPC.
    // Boxed: its many flags make it much larger than the other commands' arguments.
    Serve(Box<cmd::serve::Args>),
}

/// How much of TensorRT's log TensorRT produces (it reaches the log through
/// the `trt` target; [`logging`] decides what is shown).
#[cfg(feature = "tensorrt")]
fn set_tensorrt_threshold(verbose: u8) {
    use trt::logger::Severity as S;
    // Errors still reach the typed errors (captured per call); the threshold only
    // decides what is logged.
    let threshold = match verbose {
        0 => S::Error,
        1 => S::Warning,
        2 => S::Info,
        _ => S::Verbose,
    };
    trt::logger::set_log_threshold(threshold);
}

fn main() -> ExitCode {
    // Before any thread starts (the OTLP exporter's, the server's).
    locate::export_setup_dir();
    let cli = Cli::parse();
    let serve = matches!(cli.command, Command::Serve(_));
    #[cfg(feature = "otel")]
    let otlp = cli.otlp_endpoint.as_deref();
    #[cfg(not(feature = "otel"))]
    let otlp = None;
    let _log = match logging::init(cli.log_format, logging::default_level(serve, cli.verbose), otlp) {
        Ok(guard) => guard,
        Err(e) => {
            eprintln!("error: {}", e.one_line());
            return ExitCode::from(e.code());
        }
    };
    #[cfg(feature = "tensorrt")]
    set_tensorrt_threshold(cli.verbose);
    let result = match cli.command {
        #[cfg(feature = "tensorrt")]
        Command::Build(a) => cmd::build::run(a),
        #[cfg(feature = "tensorrt")]
        Command::Inspect(a) => cmd::inspect::run(a),
        #[cfg(not(feature = "tensorrt"))]
        Command::Build(_) => cmd::without_tensorrt::run("build"),
        #[cfg(not(feature = "tensorrt"))]
        Command::Inspect(_) => cmd::without_tensorrt::run("inspect"),
        Command::Bench(a) => cmd::bench::run(a),
        #[cfg(feature = "tensorrt")]
        Command::Refit(a) => cmd::refit::run(a),
        #[cfg(not(feature = "tensorrt"))]
        Command::Refit(_) => cmd::without_tensorrt::run("refit"),
        Command::Tokenize(a) => cmd::tokenize::run(a),
        Command::Classify(a) => cmd::nlp::classify(a),
        Command::Embed(a) => cmd::nlp::embed(a),
        Command::Ner(a) => cmd::nlp::ner(a),
        #[cfg(feature = "tensorrt")]
        Command::Demo(a) => cmd::demo::run(a),
        #[cfg(not(feature = "tensorrt"))]
        Command::Demo(_) => cmd::without_tensorrt::run("demo"),
        Command::Import(a) => cmd::import::run(a),
        Command::Convert(a) => cmd::convert::run(a),
        Command::Quantize(a) => cmd::quantize::run(a),
        Command::Compare(a) => cmd::compare::run(a),
        Command::Serve(a) => cmd::serve::run(*a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", e.one_line());
            ExitCode::from(e.code())
        }
    }
}
