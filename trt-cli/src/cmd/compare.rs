//! `trt compare A B`: run two models on identical inputs and say how far B's
//! outputs are from A's; `--atol/--rtol/--min-cosine` turn it into a gate
//! (exit 1 naming the output), `--layers` finds the first intermediate
//! tensor, in the reference's topological order, where they diverge.
//! `--json` writes the same report as one JSON document
//! ([`compare_report`](super::compare_report)).
//!
//! | A, B | reference | checked | `--layers` reads |
//! |---|---|---|---|
//! | two ONNX models | A on ONNX Runtime (CPU) | B on ONNX Runtime (CPU) | both graphs with their common float tensors as outputs |
//! | a plan and an ONNX model, either order | the ONNX model on ONNX Runtime (CPU) | the plan on TensorRT (GPU 0) | the ONNX graph as above; an engine rebuilt from the ONNX model with those tensors marked as outputs ([`compare_plan`](super::compare_plan)) |
//!
//! `trt compare MODEL --reference FILE` checks a model against vectors saved
//! from sentence-transformers instead ([`compare_reference`](super::compare_reference)).
//!
//! Where one side is a plan the ONNX model is the reference whatever the
//! order: ONNX Runtime is the workspace's reference executor. A plan needs
//! a GPU TensorRT can execute engines on; without one the command stops at
//! once with the reason. `--layers` rebuilds with the plan's optimization
//! profiles and the flags given here (`--fp16`, `--opt-level`, `--workspace`,
//! and `--built-from` where the plan was built from another ONNX file than
//! the reference, e.g. a quantized one: a plan does not record them).

use std::path::{Path, PathBuf};

use trt_nlp::ElementType;
use trt_nlp::{EncodedBatch, InputRole, InputSpec, Padding, TokenizerPipeline, Truncation};
use trt_onnx::compare::{self, Accumulator};
use trt_onnx::dataset::{self, Batch, Outputs};
use trt_onnx::graph::Model;
use trt_onnx::runtime::{Session, SessionOptions};

use super::compare_layers;
use super::compare_report::{Figures, Gate, Layers, Report, SideInfo};
use crate::error::{CliError, Context, Result};
use crate::output::emit;

/// Arguments of `trt compare`.
#[derive(Debug, clap::Args)]
// --fp16 means something with --layers (how a plan was built) or --reference (the import's precision).
#[command(group(clap::ArgGroup::new("fp16_use").args(["layers", "reference"]).multiple(true)))]
pub struct Args {
    /// The reference model (ONNX), or a TensorRT plan to check against the other model.
    pub a: PathBuf,
    /// The model checked against it (ONNX), or a TensorRT plan.
    #[arg(required_unless_present = "reference", conflicts_with = "reference")]
    pub b: Option<PathBuf>,
    /// Check A (anything `trt embed` takes: a HuggingFace folder, a model folder, ONNX) against
    /// reference embeddings saved from sentence-transformers: JSON lines
    /// {"text": ..., "embedding": [...]}, or a .npy [texts, dim] with --texts.
    #[arg(long, value_name = "FILE")]
    pub reference: Option<PathBuf>,
    /// With --reference: which executor runs the model.
    #[arg(long, value_enum, default_value_t = trt_nlp::backend::BackendChoice::Auto, requires = "reference")]
    pub backend: trt_nlp::backend::BackendChoice,
    /// With --reference: the model's prompt before each text [default: its default prompt].
    #[arg(long, value_name = "NAME", requires = "reference")]
    pub prompt_name: Option<String>,
    /// Texts, one per line, run through the tokenizer.
    #[arg(long, value_name = "FILE", conflicts_with = "random")]
    pub texts: Option<PathBuf>,
    /// The tokenizer [default: tokenizer.json beside the reference ONNX model].
    #[arg(long, value_name = "tokenizer.json")]
    pub tokenizer: Option<PathBuf>,
    /// Instead of texts: N rows of random token ids (ids 1000..2000, length 16).
    #[arg(long, value_name = "N")]
    pub random: Option<usize>,
    /// Rows per batch.
    #[arg(long, default_value_t = 8)]
    pub batch: usize,
    /// Longest token sequence (longer texts are truncated).
    #[arg(long, default_value_t = 128)]
    pub max_len: usize,
    /// Fail when an output's max |a - b| is above this.
    #[arg(long)]
    pub atol: Option<f64>,
    /// Fail when an output's max relative error is above this.
    #[arg(long)]
    pub rtol: Option<f64>,
    /// Fail when an output's smallest row cosine is below this [--reference: default 0.9999].
    #[arg(long)]
    pub min_cosine: Option<f64>,
    /// Also compare every intermediate tensor both models have and name the first that diverges.
    #[arg(long)]
    pub layers: bool,
    /// The report as one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
    /// ONNX Runtime threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// --layers with a plan: it was built with `trt build --fp16` (the rebuild converts the same way);
    /// --reference: a HuggingFace folder is imported in FP16.
    #[arg(long, requires = "fp16_use", help_heading = "Rebuilding a plan for --layers")]
    pub fp16: bool,
    /// --layers with a plan: the builder optimization level it was built with.
    #[arg(long, value_name = "N", requires = "layers", value_parser = clap::value_parser!(i32).range(0..=5),
          help_heading = "Rebuilding a plan for --layers")]
    pub opt_level: Option<i32>,
    /// --layers with a plan: the workspace it was built with, in MiB.
    #[arg(long, value_name = "MiB", requires = "layers", help_heading = "Rebuilding a plan for --layers")]
    pub workspace: Option<usize>,
    /// --layers with a plan: the ONNX file it was built from, when that is not the reference
    /// (e.g. the Q/DQ model of `trt quantize`) [default: the reference].
    #[arg(long, value_name = "FILE.onnx", requires = "layers", help_heading = "Rebuilding a plan for --layers")]
    pub built_from: Option<PathBuf>,
}

impl Args {
    fn gate(&self) -> Gate {
        Gate { atol: self.atol, rtol: self.rtol, min_cosine: self.min_cosine }
    }

    fn rebuild_flags(&self) -> bool {
        self.fp16 || self.opt_level.is_some() || self.workspace.is_some() || self.built_from.is_some()
    }
}

/// Tokenizes `texts` into batches of `batch` rows for a model with `inputs`
/// (named input_ids / attention_mask / token_type_ids; the rest is an error).
pub fn token_batches(tokenizer: &Path, inputs: &[String], texts: &[String], batch: usize, max_len: usize) -> Result<Vec<Batch>> {
    let pipeline = TokenizerPipeline::builder(max_len).truncation(Truncation::Truncate).padding(Padding::Longest).from_file(tokenizer)?;
    let roles: Vec<(String, InputRole)> = inputs
        .iter()
        .map(|n| {
            InputRole::from_name(n).map(|r| (n.clone(), r)).ok_or_else(|| {
                CliError::new(format!("the model's input '{n}' is not one a tokenizer fills (input_ids, attention_mask, token_type_ids)"))
            })
        })
        .collect::<Result<_>>()?;
    if !roles.iter().any(|(_, r)| *r == InputRole::InputIds) {
        return Err(CliError::new("the model has no input_ids input, so the tokenizer does not match it"));
    }
    let mut out = Vec::new();
    for chunk in texts.chunks(batch.max(1)) {
        let mut buffers: Vec<Vec<i64>> = vec![vec![0; chunk.len() * max_len]; roles.len()];
        let mut encoded = EncodedBatch::new();
        for ((name, role), buf) in roles.iter().zip(buffers.iter_mut()) {
            encoded = encoded.with(InputSpec::new(name.clone(), *role, ElementType::I64)?, buf.as_mut_slice())?;
        }
        let layout = pipeline.encode_into(chunk, &mut encoded)?;
        drop(encoded);
        let [rows, seq] = layout.shape();
        let mut b = Batch { inputs: Vec::new(), mask: None };
        for ((name, role), buf) in roles.iter().zip(buffers) {
            let a = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[rows, seq]), buf[..rows * seq].to_vec())
                .map_err(|e| CliError::new(e.to_string()))?;
            if *role == InputRole::AttentionMask {
                b.mask = Some(a.clone());
            }
            b.inputs.push((name.clone(), a));
        }
        out.push(b);
    }
    Ok(out)
}

/// Reads a texts file: one text per line, blank lines skipped.
pub fn read_texts(path: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path).about(path)?;
    Ok(text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect())
}

/// The tokenizer to use: the flag, or tokenizer.json beside the model.
pub fn tokenizer_for(model: &Path, flag: Option<&Path>) -> Result<PathBuf> {
    let path = match flag {
        Some(p) => p.to_path_buf(),
        None => model.parent().unwrap_or(Path::new(".")).join("tokenizer.json"),
    };
    if !path.is_file() {
        return Err(CliError::new(format!("no tokenizer at {}; give --tokenizer", path.display())));
    }
    Ok(path)
}

fn random_batches(inputs: &[String], rows: usize, batch: usize) -> Vec<Batch> {
    // A fixed linear congruential sequence: the same inputs on every run.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) as i64
    };
    let seq = 16;
    (0..rows)
        .step_by(batch.max(1))
        .map(|start| {
            let n = batch.min(rows - start);
            let mut b = Batch { inputs: Vec::new(), mask: None };
            for name in inputs {
                let a = match InputRole::from_name(name) {
                    Some(InputRole::AttentionMask) => ndarray::ArrayD::from_elem(ndarray::IxDyn(&[n, seq]), 1i64),
                    Some(InputRole::TokenTypeIds) => ndarray::ArrayD::zeros(ndarray::IxDyn(&[n, seq])),
                    _ => ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&[n, seq]), |_| 1000 + next() % 1000),
                };
                if InputRole::from_name(name) == Some(InputRole::AttentionMask) {
                    b.mask = Some(a.clone());
                }
                b.inputs.push((name.clone(), a));
            }
            b
        })
        .collect()
}

/// What a command-line path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Onnx,
    Plan,
}

fn kind(path: &Path) -> Result<Kind> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("onnx") => Ok(Kind::Onnx),
        Some("plan" | "engine" | "trt") => Ok(Kind::Plan),
        _ => Err(CliError::new(format!("{}: expected an .onnx model or a TensorRT plan (.plan, .engine, .trt)", path.display()))),
    }
}

/// One figure line (`trt quantize` prints its accuracy with it).
pub fn describe(m: &compare::Metrics) -> String {
    Figures::new("", &[], m, None).line()
}

/// An ONNX model on ONNX Runtime.
struct OnnxSide {
    path: PathBuf,
    model: Model,
    session: Session,
}

impl OnnxSide {
    fn open(path: &Path, options: &SessionOptions) -> Result<OnnxSide> {
        let model = Model::load(path).about(path)?;
        let session = Session::from_bytes(&model.to_bytes().about(path)?, options).about(path)?;
        Ok(OnnxSide { path: path.to_path_buf(), model, session })
    }

    fn info(&self) -> SideInfo {
        SideInfo { path: self.path.display().to_string(), backend: format!("onnxruntime ({})", self.session.provider()) }
    }
}

/// The side checked against the ONNX reference.
enum Checked {
    // Both boxed: each is hundreds of bytes, of different sizes.
    Onnx(Box<OnnxSide>),
    #[cfg(feature = "tensorrt")]
    Plan(Box<super::compare_plan::PlanSide>),
}

impl Checked {
    fn info(&self) -> SideInfo {
        match self {
            Checked::Onnx(s) => s.info(),
            #[cfg(feature = "tensorrt")]
            Checked::Plan(p) => p.info(),
        }
    }

    fn inputs(&self) -> Vec<String> {
        match self {
            Checked::Onnx(s) => s.session.inputs().iter().map(|i| i.name.clone()).collect(),
            #[cfg(feature = "tensorrt")]
            Checked::Plan(p) => p.inputs(),
        }
    }

    fn outputs(&self) -> Vec<String> {
        match self {
            Checked::Onnx(s) => s.session.outputs().iter().map(|o| o.name.clone()).collect(),
            #[cfg(feature = "tensorrt")]
            Checked::Plan(p) => p.outputs(),
        }
    }

    fn run(&mut self, batch: &Batch, names: &[&str]) -> Result<Outputs> {
        match self {
            Checked::Onnx(s) => dataset::run(&mut s.session, batch, Some(names)).about(&s.path),
            #[cfg(feature = "tensorrt")]
            Checked::Plan(p) => p.run(batch, names),
        }
    }
}

#[cfg(feature = "tensorrt")]
fn open_plan(path: &Path) -> Result<Checked> {
    Ok(Checked::Plan(Box::new(super::compare_plan::PlanSide::open(path)?)))
}

#[cfg(not(feature = "tensorrt"))]
fn open_plan(path: &Path) -> Result<Checked> {
    Err(CliError::new(format!(
        "{}: this trt was built without TensorRT (the `tensorrt` feature), so it cannot run a plan; compare ONNX models",
        path.display()
    )))
}

/// `trt compare`.
pub fn run(args: Args) -> Result<()> {
    if let Some(reference) = &args.reference {
        if args.layers {
            return Err(CliError::new("--layers compares two models; --reference compares one with saved vectors"));
        }
        return super::compare_reference::run(super::compare_reference::ReferenceArgs {
            model: &args.a,
            reference,
            texts: args.texts.as_deref(),
            backend: args.backend,
            fp16: args.fp16,
            prompt_name: args.prompt_name.as_deref(),
            min_cosine: args.min_cosine.unwrap_or(0.9999),
            atol: args.atol,
            json: args.json,
        });
    }
    let b = args.b.clone().ok_or_else(|| CliError::new("give the model to compare with A, or --reference FILE"))?;
    let (reference_path, checked_path, checked_kind) = match (kind(&args.a)?, kind(&b)?) {
        (Kind::Onnx, k) => (&args.a, &b, k),
        (Kind::Plan, Kind::Onnx) => (&b, &args.a, Kind::Plan),
        (Kind::Plan, Kind::Plan) => {
            return Err(CliError::new(format!(
                "{} and {} are both plans: compare a plan against the ONNX model it was built from",
                args.a.display(),
                b.display()
            )))
        }
    };
    if args.rebuild_flags() && checked_kind != Kind::Plan {
        return Err(CliError::new(
            "--fp16, --opt-level, --workspace and --built-from describe how a plan was built; neither side is a plan",
        ));
    }
    let options = SessionOptions { intra_threads: args.threads, ..SessionOptions::default() };
    let mut reference = OnnxSide::open(reference_path, &options)?;
    let mut checked = match checked_kind {
        Kind::Onnx => Checked::Onnx(Box::new(OnnxSide::open(checked_path, &options)?)),
        Kind::Plan => open_plan(checked_path)?,
    };
    let inputs: Vec<String> = reference.session.inputs().iter().map(|i| i.name.clone()).collect();
    let other_inputs = checked.inputs();
    if inputs.iter().any(|n| !other_inputs.contains(n)) || other_inputs.iter().any(|n| !inputs.contains(n)) {
        return Err(CliError::new(format!("the models take different inputs: {inputs:?} and {other_inputs:?}")));
    }
    let batches = match (&args.texts, args.random) {
        (Some(file), _) => {
            let texts = read_texts(file)?;
            if texts.is_empty() {
                return Err(CliError::new(format!("{}: no texts", file.display())));
            }
            let tok = tokenizer_for(reference_path, args.tokenizer.as_deref())?;
            token_batches(&tok, &inputs, &texts, args.batch, args.max_len)?
        }
        (None, Some(n)) if n > 0 => random_batches(&inputs, n, args.batch),
        _ => return Err(CliError::new("give --texts FILE or --random N")),
    };
    let other_outputs = checked.outputs();
    let outputs: Vec<String> = reference.session.outputs().iter().map(|o| o.name.clone()).filter(|n| other_outputs.contains(n)).collect();
    if outputs.is_empty() {
        return Err(CliError::new("the models have no output name in common"));
    }
    let names: Vec<&str> = outputs.iter().map(String::as_str).collect();
    let mut ra = Vec::new();
    let mut rb = Vec::new();
    for b in &batches {
        ra.push(dataset::run(&mut reference.session, b, Some(&names)).about(reference_path)?);
        rb.push(checked.run(b, &names)?);
    }
    let gate = args.gate();
    let mut figures = Vec::new();
    for name in &outputs {
        let mut acc = Accumulator::default();
        let mut shape = Vec::new();
        for ((batch, a), b) in batches.iter().zip(&ra).zip(&rb) {
            let (Some((_, x)), Some((_, y))) = (a.iter().find(|(n, _)| n == name), b.iter().find(|(n, _)| n == name)) else {
                continue;
            };
            shape = x.shape().to_vec();
            acc.add(&compare::compare(name, x, y, batch.mask2()).about(checked_path)?, batch.rows());
        }
        let m = acc.total();
        figures.push(Figures::new(name, &shape, &m, gate.violation(&m)));
    }
    let layers = if args.layers { Some(layers(&args, &gate, &reference, &checked, &batches[0], &options)?) } else { None };
    let report = Report {
        reference: reference.info(),
        checked: checked.info(),
        rows: batches.iter().map(Batch::rows).sum(),
        batches: batches.len(),
        gate: gate.describe(false),
        failure: Report::first_failure(&figures),
        outputs: figures,
        layers,
    };
    emit(&if args.json { report.to_json() } else { report.to_text() });
    match report.failure {
        Some(f) => Err(CliError::new(f)),
        None => Ok(()),
    }
}

/// `--layers` on the first batch.
// Only the plan side reads the rebuild flags in `args`.
#[cfg_attr(not(feature = "tensorrt"), allow(unused_variables))]
fn layers(args: &Args, gate: &Gate, reference: &OnnxSide, checked: &Checked, batch: &Batch, options: &SessionOptions) -> Result<Layers> {
    let reference_names = compare_layers::onnx_float_tensors(&reference.model);
    let (names, values, rebuild) = match checked {
        Checked::Onnx(other) => {
            let names = compare_layers::matched(&reference_names, &compare_layers::onnx_float_tensors(&other.model));
            if names.is_empty() {
                return compare_layers::compare_all(&[], &Vec::new(), &Vec::new(), gate, None);
            }
            let values = compare_layers::onnx_values(&other.model, &names, batch, options).about(&other.path)?;
            (names, values, None)
        }
        #[cfg(feature = "tensorrt")]
        Checked::Plan(plan) => {
            let rebuild = super::compare_plan::Rebuild { fp16: args.fp16, opt_level: args.opt_level, workspace_mib: args.workspace };
            let source = args.built_from.as_deref().unwrap_or(&reference.path);
            let (names, values, how) = plan.layer_values(source, &reference.model, &rebuild, batch)?;
            (names, values, Some(how))
        }
    };
    let reference_values = compare_layers::onnx_values(&reference.model, &names, batch, options).about(&reference.path)?;
    compare_layers::compare_all(&names, &reference_values, &values, gate, rebuild)
}
