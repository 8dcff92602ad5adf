//! `trt build MODEL.onnx -o PLAN`: parse, configure, build with a progress
//! bar, save, and print a summary (build time, plan size, I/O table).
//!
//! Precision: TensorRT 11.x and TensorRT-RTX are strongly typed (precision
//! comes from the tensor types). There `--fp16` converts the model to FP16 in
//! memory first (trt_onnx::fp16, as `trt convert --fp16` does), so the flag
//! means the same on every version; `--bf16/--int8` are refused with the way
//! to get that precision (a BF16 model; `trt quantize` for Q/DQ INT8). On
//! TensorRT 10.x (cfg `trt_weakly_typed`) the flags set the builder flags,
//! for networks that are not strongly typed.

use std::path::{Path, PathBuf};
use std::time::Instant;

use trt::{Builder, BuilderConfig, Network, OnnxParser, ProfileSpec};

use crate::cmd::inspect;
use crate::error::{naming, CliError, Context, Result};
use crate::output::{self, emit};
use crate::progress::ProgressMode;
use crate::shapes::{self, ShapeFlags, ShapeList};

const SHAPES_HELP: &str = "Shapes are NAME:AxB[,NAME:AxB...] as in trtexec, e.g. input_ids:1x16,attention_mask:1x16; \
a flag may be repeated. For each input: one of min/opt/max alone gives a fixed shape; without --opt-shapes, \
opt = max (TensorRT tunes for the largest shape); without --max-shapes, max = opt; without --min-shapes, \
min = 1 in every dynamic dimension. A flag given for some inputs but not others fills the others' shape with a warning. \
Several optimization profiles: --profile 'input_ids:1x1,8x128,32x128;attention_mask:1x1,8x128,32x128', repeated, \
one full min/opt/max set per flag (profile 0 first); not together with --min/--opt/--max-shapes.";

/// Arguments of `trt build`.
#[derive(Debug, clap::Args)]
#[command(after_help = SHAPES_HELP)]
pub struct Args {
    /// The ONNX model (external weight files are found next to it).
    pub model: PathBuf,

    /// Where to write the plan [default: MODEL with the extension .plan].
    #[arg(short, long, value_name = "PLAN")]
    pub output: Option<PathBuf>,

    /// One optimization profile, every input's MIN,OPT,MAX (repeat for several profiles).
    #[arg(long, value_name = "NAME:MIN,OPT,MAX;...", value_parser = shapes::parse_profile,
          conflicts_with_all = ["min_shapes", "opt_shapes", "max_shapes"])]
    pub profile: Vec<ProfileSpec>,

    /// Smallest shapes of the dynamic inputs.
    #[arg(long, value_name = "SHAPES", value_parser = shapes::parse_list)]
    pub min_shapes: Vec<ShapeList>,

    /// Shapes TensorRT optimizes for [default: the max shapes].
    #[arg(long, value_name = "SHAPES", value_parser = shapes::parse_list)]
    pub opt_shapes: Vec<ShapeList>,

    /// Largest shapes of the dynamic inputs.
    #[arg(long, value_name = "SHAPES", value_parser = shapes::parse_list)]
    pub max_shapes: Vec<ShapeList>,

    /// FP16: builder flag on TensorRT 10.x; elsewhere the model is converted to FP16 in memory.
    #[arg(long, group = "precision")]
    pub fp16: bool,

    /// Allow BF16 kernels (TensorRT 10.x only; elsewhere, build a BF16 ONNX model).
    #[arg(long, group = "precision")]
    pub bf16: bool,

    /// Allow INT8 kernels (TensorRT 10.x only; elsewhere, use Q/DQ nodes in the model).
    #[arg(long, group = "precision")]
    pub int8: bool,

    /// Scratch memory limit for tactics, in MiB.
    #[arg(long, value_name = "MiB")]
    pub workspace: Option<usize>,

    /// Timing cache file: read if it exists, written after the build.
    #[arg(long, value_name = "FILE")]
    pub timing_cache: Option<PathBuf>,

    /// Builder optimization level, 0 (fast build) to 5 (most tactics).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(0..=5))]
    pub opt_level: Option<i32>,

    /// TensorRT-RTX: GPUs to build for, ahead of time (e.g. sm80,sm86,sm89,sm120).
    #[arg(long, value_name = "SM,...", value_delimiter = ',', value_parser = parse_target)]
    pub target: Vec<u32>,

    /// Keep detailed layer information in the plan (layer types, tensor formats
    /// and tactics for `trt inspect --layers` and `trt bench --profile-layers`).
    #[arg(long)]
    pub detailed_layers: bool,

    /// Build for weight streaming (`trt bench --weight-budget` then limits the
    /// device memory its weights use); not together with refit.
    #[arg(long, conflicts_with = "refit")]
    pub weight_streaming: bool,

    /// Build a refittable plan (`trt refit PLAN --weights ...` sets new weights later).
    #[arg(long)]
    pub refit: bool,

    /// How to show build progress.
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
}

/// `sm86`, `sm_86`, `86` or `8.6` to TensorRT-RTX's `86`.
fn parse_target(s: &str) -> std::result::Result<u32, String> {
    let t = s.trim();
    let t = t.strip_prefix("sm_").or_else(|| t.strip_prefix("sm")).unwrap_or(t);
    let parsed = match t.split_once('.') {
        Some((major, minor)) => major.parse::<u32>().ok().zip(minor.parse::<u32>().ok().filter(|&m| m < 10)).map(|(a, b)| a * 10 + b),
        None => t.parse::<u32>().ok(),
    };
    parsed.filter(|&v| v >= 10).ok_or_else(|| format!("'{s}' is not a compute capability (e.g. sm86, 86 or 8.6)"))
}

impl Args {
    fn shapes(&self) -> ShapeFlags {
        ShapeFlags { min: self.min_shapes.clone(), opt: self.opt_shapes.clone(), max: self.max_shapes.clone() }
    }

    fn precision_flag(&self) -> Option<&'static str> {
        [(self.fp16, "--fp16"), (self.bf16, "--bf16"), (self.int8, "--int8")].into_iter().find(|(on, _)| *on).map(|(_, f)| f)
    }
}

/// How to get `flag`'s precision from a strongly typed network.
#[cfg(not(trt_weakly_typed))]
fn strongly_typed_path(flag: &str) -> &'static str {
    match flag {
        "--int8" => "INT8 comes from explicit QuantizeLinear/DequantizeLinear nodes in the ONNX model: make them with `trt quantize MODEL.onnx --calibration TEXTS -o MODEL_int8.onnx` and build that model as it is",
        "--bf16" => "build a BF16 ONNX model instead (BF16 weights and compute) and build it without --bf16",
        _ => "build an FP16 ONNX model instead (FP16 weights and compute, e.g. with onnxconverter-common's convert_float_to_float16, keeping LayerNorm and Softmax in FP32 as the default model's model_fp16.onnx does) and build it without --fp16",
    }
}

/// Refuse precision flags where they do not exist, before any work.
#[cfg(not(trt_weakly_typed))]
fn check_precision_flag(args: &Args) -> Result<()> {
    match args.precision_flag() {
        // Converted in memory before parsing (`parse`).
        None | Some("--fp16") => Ok(()),
        Some(flag) => Err(CliError::new(format!(
            "{flag} is not available with {}: it builds strongly typed networks only, whose precision comes from the \
             tensor types in the model, not from builder flags; {}",
            trt::header_version(),
            strongly_typed_path(flag)
        ))),
    }
}

#[cfg(trt_weakly_typed)]
fn check_precision_flag(_args: &Args) -> Result<()> {
    Ok(())
}

/// TensorRT 10.x: set the precision `flag` (`--fp16`, `--bf16`, `--int8`),
/// for a network that is not strongly typed.
#[cfg(trt_weakly_typed)]
pub fn apply_precision(flag: Option<&str>, config: &mut BuilderConfig<'_>) -> Result<()> {
    use trt::AllowedPrecision as P;
    // The model was parsed weakly typed because a precision flag was given.
    let Some(flag) = flag else {
        return Ok(());
    };
    let p = match flag {
        "--fp16" => P::Fp16,
        "--bf16" => P::Bf16,
        _ => P::Int8,
    };
    config.allow_precision(p)?;
    Ok(())
}

/// Strongly typed versions: nothing to set (`--fp16` converted the model
/// when it was parsed; the other flags are refused up front).
#[cfg(not(trt_weakly_typed))]
pub fn apply_precision(_flag: Option<&str>, _config: &mut BuilderConfig<'_>) -> Result<()> {
    Ok(())
}

#[cfg(trt_rtx)]
fn set_targets(config: &mut BuilderConfig<'_>, targets: &[u32]) -> Result<()> {
    config.set_compute_capabilities(targets)?;
    Ok(())
}

#[cfg(not(trt_rtx))]
fn set_targets(_config: &mut BuilderConfig<'_>, _targets: &[u32]) -> Result<()> {
    Err(CliError::new(format!(
        "--target needs TensorRT-RTX (ahead-of-time builds for chosen GPUs); this trt uses {}",
        trt::header_version()
    )))
}

/// A `MissingProfile` from the library, as the CLI explains it; other errors
/// name the model.
pub fn explain(model: &Path, network: &Network<'_>, e: trt::Error) -> CliError {
    match e {
        trt::Error::MissingProfile { inputs } => {
            CliError::new(shapes::missing_shapes_message(&model.display().to_string(), &inputs, &network.inputs()))
        }
        other => naming(model, other),
    }
}

/// Parses `model` (weakly typed when a precision flag asks TensorRT 10.x to
/// pick per layer); on strongly typed versions `fp16` first converts it to
/// FP16 in memory (external weights are read and inlined by the converter).
pub fn parse<'b>(builder: &'b Builder, model: &Path, fp16: bool, weakly_typed: bool) -> Result<trt::ParsedNetwork<'b>> {
    if cfg!(trt_weakly_typed) || !fp16 {
        return Ok(OnnxParser::parse_file_with(builder, model, !weakly_typed)?);
    }
    let onnx = trt_onnx::graph::Model::load(model).about(model)?;
    let (converted, report) = trt_onnx::fp16::convert(&onnx, &trt_onnx::fp16::Fp16Options::default()).about(model)?;
    eprintln!("--fp16: {}", crate::cmd::convert::summary(&report));
    let bytes = converted.to_bytes().about(model)?;
    Ok(OnnxParser::parse_bytes(builder, &bytes, Some(model))?)
}

/// `--workspace MiB` in bytes.
pub fn workspace_bytes(mib: usize) -> Result<usize> {
    mib.checked_mul(1 << 20).ok_or_else(|| CliError::new(format!("--workspace {mib} MiB is more than this machine can address")))
}

/// `trt build`.
pub fn run(args: Args) -> Result<()> {
    check_precision_flag(&args)?;
    let output = args.output.clone().unwrap_or_else(|| args.model.with_extension("plan"));
    if output == args.model {
        return Err(CliError::new(format!("the plan would overwrite the model {}; give -o PLAN", args.model.display())));
    }
    let builder = Builder::new()?;
    // A precision flag asks TensorRT 10.x to pick per layer, which needs a weakly
    // typed network; elsewhere networks are always strongly typed.
    let weakly_typed = args.fp16 || args.bf16 || args.int8;
    let network = parse(&builder, &args.model, args.fp16, weakly_typed)?;
    let mut config = builder.config()?;
    apply_precision(args.precision_flag(), &mut config)?;
    if let Some(mib) = args.workspace {
        config.set_workspace(workspace_bytes(mib)?)?;
    }
    if let Some(level) = args.opt_level {
        config.set_optimization_level(level)?;
    }
    if !args.target.is_empty() {
        set_targets(&mut config, &args.target)?;
    }
    if args.detailed_layers {
        config.set_detailed_profiling(true)?;
    }
    if args.weight_streaming {
        config.set_weight_streaming(true)?;
    }
    if args.refit {
        config.set_refittable(true)?;
    }
    let inputs = network.inputs();
    // Warnings about filled-in shapes come after validation: an unknown name is an error, not a warning.
    let (specs, warnings) = match args.shapes().profile(&inputs)? {
        Some((spec, warnings)) => (vec![spec], warnings),
        None => (args.profile.clone(), Vec::new()),
    };
    for (i, spec) in specs.into_iter().enumerate() {
        spec.validate(&inputs).map_err(|e| match e {
            trt::Error::InvalidProfile { tensor, reason } if args.profile.len() > 1 => {
                explain(&args.model, &network, trt::Error::InvalidProfile { tensor, reason: format!("--profile {i}: {reason}") })
            }
            other => explain(&args.model, &network, other),
        })?;
        config.add_profile(spec).about(&args.model)?;
    }
    for w in warnings {
        eprintln!("warning: {w}");
    }
    let profiles_in_config = config.num_profiles_in_tensorrt()?;
    let cache_read = match &args.timing_cache {
        Some(path) => Some(load_timing_cache(&mut config, path)?),
        None => None,
    };
    if let Some(callbacks) = args.progress.callbacks("") {
        config.set_progress(callbacks)?;
    }

    let started = Instant::now();
    let plan = builder.build(&network, &config).map_err(|e| explain(&args.model, &network, e))?;
    let seconds = started.elapsed().as_secs_f64();
    plan.save(&output)?;
    let cache_written = match (&args.timing_cache, config.timing_cache()) {
        (Some(path), Some(cache)) => {
            cache.save(path)?;
            Some(std::fs::metadata(path).map(|m| m.len() as usize).unwrap_or(0))
        }
        _ => None,
    };

    let mut s = format!("built {} -> {} in {seconds:.2} s\n", args.model.display(), output.display());
    s.push_str(&format!("  TensorRT      {}\n", builder.library().version()));
    s.push_str(&format!("  plan          {} ({} bytes)\n", output::bytes(plan.len()), plan.len()));
    s.push_str(&format!("  precision     {}\n", precision_note(&args, &network)));
    if !args.target.is_empty() {
        let t: Vec<String> = args.target.iter().map(|t| format!("sm{t}")).collect();
        s.push_str(&format!("  targets       {}\n", t.join(", ")));
    }
    if let Some(mib) = args.workspace {
        s.push_str(&format!("  workspace     {mib} MiB\n"));
    }
    if let Some(level) = args.opt_level {
        s.push_str(&format!("  opt level     {level}\n"));
    }
    if args.detailed_layers {
        s.push_str("  layer info    detailed (engine inspector)\n");
    }
    if args.weight_streaming {
        s.push_str("  weights       streamable (set a budget with trt bench --weight-budget)\n");
    }
    if args.refit {
        s.push_str("  weights       refittable (trt refit PLAN --weights ...)\n");
    }
    if let (Some(path), Some(read), Some(written)) = (&args.timing_cache, cache_read, cache_written) {
        let read = if read == 0 { "new".to_owned() } else { format!("read {}", output::bytes(read)) };
        s.push_str(&format!("  timing cache  {} ({read}, wrote {})\n", path.display(), output::bytes(written)));
    }
    let profiles = config.profiles();
    s.push_str(&format!("  profiles      {profiles_in_config} (reported by the builder config)\n"));
    if profiles.len() > 1 {
        s.push_str(&profiles_table(&network, profiles).render("  "));
        s.push_str(&inspect::network_table(&network, None).render("  "));
    } else {
        s.push_str(&inspect::network_table(&network, profiles.first()).render("  "));
    }
    s.push_str(&format!("  layers        {} (network, before optimization)\n", network.layers().len()));
    emit(&s);
    Ok(())
}

/// One row per profile and input: min / opt / max.
fn profiles_table(network: &Network<'_>, profiles: &[ProfileSpec]) -> output::Table {
    let mut table = output::Table::new(&["profile", "input", "min", "opt", "max"]);
    for (i, p) in profiles.iter().enumerate() {
        for input in network.inputs() {
            if let Some(r) = p.ranges.get(&input.name) {
                table.row(vec![i.to_string(), input.name.clone(), output::dims(&r.min), output::dims(&r.opt), output::dims(&r.max)]);
            }
        }
    }
    table
}

/// Set a timing cache from `path` (empty if the file does not exist); returns the bytes read.
fn load_timing_cache(config: &mut BuilderConfig<'_>, path: &Path) -> Result<usize> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(CliError::new(format!("cannot read the timing cache {}: {e}", path.display()))),
    };
    let cache = config.create_timing_cache(&bytes).context(|| format!("{} is not a timing cache TensorRT can use", path.display()))?;
    config
        .set_timing_cache(cache, false)
        .context(|| format!("timing cache {} (made by another TensorRT version or GPU?)", path.display()))?;
    Ok(bytes.len())
}

fn precision_note(args: &Args, network: &Network<'_>) -> String {
    match args.precision_flag() {
        Some("--fp16") if network.is_strongly_typed() => {
            "FP16, converted in memory (strongly typed; LayerNorm/Softmax/reductions FP32)".to_owned()
        }
        Some(flag) => format!("{flag} allowed (weakly typed)"),
        None if network.is_strongly_typed() => "from the model's tensor types (strongly typed)".to_owned(),
        None => "FP32 (weakly typed, no precision flag)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_target;

    #[test]
    fn targets() {
        assert_eq!(parse_target("sm86"), Ok(86));
        assert_eq!(parse_target("sm_120"), Ok(120));
        assert_eq!(parse_target("8.9"), Ok(89));
        assert_eq!(parse_target("80"), Ok(80));
        assert!(parse_target("smx").is_err());
        assert!(parse_target("8").is_err());
    }
}
