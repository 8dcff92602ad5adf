//! `trt compare A.onnx B.onnx`: run two models on identical inputs and say
//! how far B's outputs are from A's; `--atol/--rtol/--min-cosine` turn it
//! into a gate (exit 1 naming the output), `--layers` finds the first
//! intermediate tensor, in A's topological order, where they diverge.
//!
//! Both sides run on ONNX Runtime (CPU). A TensorRT side (a plan, or an ONNX
//! file built to one) is not part of this command yet: no machine here can
//! execute an engine, so it is refused with that reason rather than
//! pretended.

use std::path::{Path, PathBuf};

use trt_nlp::ElementType;
use trt_nlp::{EncodedBatch, InputRole, InputSpec, Padding, TokenizerPipeline, Truncation};
use trt_onnx::compare::{self, Accumulator, Metrics};
use trt_onnx::dataset::{self, Batch};
use trt_onnx::graph::{edit, types, Model};
use trt_onnx::runtime::{Session, SessionOptions};

use crate::error::{CliError, Context, Result};

/// Arguments of `trt compare`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The reference model (ONNX).
    pub a: PathBuf,
    /// The model checked against it (ONNX).
    pub b: PathBuf,
    /// Texts, one per line, run through the tokenizer.
    #[arg(long, value_name = "FILE", conflicts_with = "random")]
    pub texts: Option<PathBuf>,
    /// The tokenizer [default: tokenizer.json beside A].
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
    /// Fail when an output's smallest row cosine is below this.
    #[arg(long)]
    pub min_cosine: Option<f64>,
    /// Also compare every intermediate tensor both models have and name the first that diverges.
    #[arg(long)]
    pub layers: bool,
    /// ONNX Runtime threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
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

fn check_onnx(path: &Path) -> Result<()> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("onnx") => Ok(()),
        Some("plan" | "engine" | "trt") => Err(CliError::new(format!(
            "{}: comparing against a TensorRT plan is not supported yet (no machine here can execute an engine to test it); compare ONNX models on ONNX Runtime",
            path.display()
        ))),
        _ => Err(CliError::new(format!("{}: expected an .onnx file", path.display()))),
    }
}

/// Which tolerance an output's figures break, if any.
fn violation(m: &Metrics, args: &Args) -> Option<String> {
    if let Some(t) = args.atol.filter(|t| m.max_abs > *t) {
        return Some(format!("max abs error {:.3e} > --atol {t:e}", m.max_abs));
    }
    if let Some(t) = args.rtol.filter(|t| m.max_rel > *t) {
        return Some(format!("max relative error {:.3e} > --rtol {t:e}", m.max_rel));
    }
    if let Some(t) = args.min_cosine.filter(|t| m.cosine_min < *t) {
        return Some(format!("min cosine {:.6} < --min-cosine {t}", m.cosine_min));
    }
    None
}

/// One line of figures.
pub fn describe(m: &Metrics) -> String {
    let mut s = format!("max_abs {:.3e}  max_rel {:.3e}  cosine min {:.6} mean {:.6}", m.max_abs, m.max_rel, m.cosine_min, m.cosine_mean);
    if let Some(a) = m.argmax_agreement {
        s.push_str(&format!("  argmax agreement {:.4}", a));
    }
    if let Some((lo, mean)) = m.embedding_cosine {
        s.push_str(&format!("  embedding cosine min {lo:.6} mean {mean:.6}"));
    }
    s
}

fn run_all(session: &mut Session, batches: &[Batch], outputs: &[&str]) -> Result<Vec<dataset::Outputs>> {
    batches.iter().map(|b| dataset::run(session, b, Some(outputs)).map_err(|e| CliError::new(e.to_string()))).collect()
}

/// `trt compare`.
pub fn run(args: Args) -> Result<()> {
    check_onnx(&args.a)?;
    check_onnx(&args.b)?;
    let options = SessionOptions { intra_threads: args.threads, ..SessionOptions::default() };
    let model_a = Model::load(&args.a).about(&args.a)?;
    let model_b = Model::load(&args.b).about(&args.b)?;
    let mut sa = Session::from_bytes(&model_a.to_bytes().about(&args.a)?, &options).about(&args.a)?;
    let mut sb = Session::from_bytes(&model_b.to_bytes().about(&args.b)?, &options).about(&args.b)?;
    let inputs: Vec<String> = sa.inputs().iter().map(|i| i.name.clone()).collect();
    let b_inputs: Vec<String> = sb.inputs().iter().map(|i| i.name.clone()).collect();
    if inputs.iter().any(|n| !b_inputs.contains(n)) || b_inputs.iter().any(|n| !inputs.contains(n)) {
        return Err(CliError::new(format!("the models take different inputs: {inputs:?} and {b_inputs:?}")));
    }
    let batches = match (&args.texts, args.random) {
        (Some(file), _) => {
            let texts = read_texts(file)?;
            if texts.is_empty() {
                return Err(CliError::new(format!("{}: no texts", file.display())));
            }
            let tok = tokenizer_for(&args.a, args.tokenizer.as_deref())?;
            token_batches(&tok, &inputs, &texts, args.batch, args.max_len)?
        }
        (None, Some(n)) if n > 0 => random_batches(&inputs, n, args.batch),
        _ => return Err(CliError::new("give --texts FILE or --random N")),
    };
    let outputs: Vec<String> = sa.outputs().iter().map(|o| o.name.clone()).filter(|n| sb.outputs().iter().any(|o| &o.name == n)).collect();
    if outputs.is_empty() {
        return Err(CliError::new("the models have no output name in common"));
    }
    let names: Vec<&str> = outputs.iter().map(String::as_str).collect();
    let ra = run_all(&mut sa, &batches, &names)?;
    let rb = run_all(&mut sb, &batches, &names)?;
    let rows: usize = batches.iter().map(Batch::rows).sum();
    println!("{} vs {}: {} rows in {} batches", args.a.display(), args.b.display(), rows, batches.len());
    let mut failure = None;
    for name in &outputs {
        let mut acc = Accumulator::default();
        for ((batch, a), b) in batches.iter().zip(&ra).zip(&rb) {
            let (Some((_, x)), Some((_, y))) = (a.iter().find(|(n, _)| n == name), b.iter().find(|(n, _)| n == name)) else {
                continue;
            };
            acc.add(&compare::compare(name, x, y, batch.mask2()).about(&args.b)?, batch.rows());
        }
        let m = acc.total();
        println!("  {name}: {}", describe(&m));
        if failure.is_none() {
            failure = violation(&m, &args).map(|v| format!("output '{name}': {v}"));
        }
    }
    if args.layers {
        first_divergence(&args, &model_a, &model_b, &batches[0], &options)?;
    }
    match failure {
        Some(f) => Err(CliError::new(f)),
        None => Ok(()),
    }
}

/// `--layers`: every tensor both graphs produce, exposed on both sides, one batch.
fn first_divergence(args: &Args, a: &Model, b: &Model, batch: &Batch, options: &SessionOptions) -> Result<()> {
    let ta = types::infer(a.graph());
    let tb = types::infer(b.graph());
    let in_b: std::collections::HashSet<String> = edit::intermediate_tensors(b.graph()).into_iter().collect();
    let float = |t: Option<&i32>| t.is_some_and(|c| trt_onnx::graph::tensor::is_float(*c));
    let common: Vec<String> =
        edit::intermediate_tensors(a.graph()).into_iter().filter(|n| in_b.contains(n) && float(ta.get(n)) && float(tb.get(n))).collect();
    if common.is_empty() {
        println!("layers: the models share no intermediate float tensor names");
        return Ok(());
    }
    let expose = |m: &Model, t: &types::ElemTypes| -> Result<Session> {
        let mut m = m.clone();
        edit::expose(m.graph_mut().map_err(|e| CliError::new(e.to_string()))?, &common, t).map_err(|e| CliError::new(e.to_string()))?;
        Session::from_bytes(&m.to_bytes().map_err(|e| CliError::new(e.to_string()))?, options).map_err(|e| CliError::new(e.to_string()))
    };
    let names: Vec<&str> = common.iter().map(String::as_str).collect();
    let xa = dataset::run(&mut expose(a, &ta)?, batch, Some(&names)).about(&args.a)?;
    let xb = dataset::run(&mut expose(b, &tb)?, batch, Some(&names)).about(&args.b)?;
    // Without tolerances, a tensor diverges when its row cosine falls under 0.999.
    let default_gate = args.atol.is_none() && args.rtol.is_none() && args.min_cosine.is_none();
    for ((name, x), (_, y)) in xa.iter().zip(&xb) {
        if x.shape() != y.shape() {
            continue;
        }
        let m = compare::compare(name, x, y, None).map_err(|e| CliError::new(e.to_string()))?;
        let bad = if default_gate {
            (m.cosine_min < 0.999).then(|| format!("min cosine {:.6} < 0.999", m.cosine_min))
        } else {
            violation(&m, args)
        };
        if let Some(why) = bad {
            println!("layers: {} tensors compared; first divergence at '{name}': {why} ({})", common.len(), describe(&m));
            return Ok(());
        }
    }
    println!("layers: {} tensors compared; none diverges beyond tolerance", common.len());
    Ok(())
}
