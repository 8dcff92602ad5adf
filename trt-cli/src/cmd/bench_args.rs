//! What `trt bench`'s two paths share: its arguments, how value-filled
//! inputs are filled, and what a path's run returns.

use std::path::PathBuf;

use trt_nlp::backend::BackendChoice;
use trt_nlp::InputRole;
use trt_onnx::runtime::Provider;

use super::bench_report::Report;

/// Arguments of `trt bench`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Exit codes: 0 success (and within --max-regression of the baseline), 1 error, 2 usage error, 3 regression \
                        past --max-regression against --compare's baseline.")]
pub struct Args {
    /// A TensorRT plan, an ONNX file or a model folder.
    pub model: PathBuf,

    /// Which executor runs the model: `auto` benches a plan on TensorRT and an ONNX model on ONNX Runtime.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,

    /// Where it runs: `cpu` (ONNX Runtime only) or `cuda:N` [default: cuda:0 for plans, cpu for ONNX].
    #[arg(long, value_name = "cpu|cuda:N", value_parser = parse_device)]
    pub device: Option<Provider>,

    /// Batch size: the first dynamic dimension of each input [default: a plan's profile-0 opt; 1 on ONNX Runtime].
    #[arg(long, value_parser = clap::value_parser!(i64).range(1..))]
    pub batch: Option<i64>,

    /// Sequence length: the other dynamic dimensions [default: a plan's profile-0 opt; 128 on ONNX Runtime].
    #[arg(long, value_parser = clap::value_parser!(i64).range(1..))]
    pub seq: Option<i64>,

    /// Timed iterations.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..))]
    pub iterations: u32,

    /// Untimed iterations first.
    #[arg(long, default_value_t = 20)]
    pub warmup: u32,

    /// Replay CUDA graphs (TensorRT: the engine; ONNX Runtime on CUDA: one graph per shape bucket).
    #[arg(long)]
    pub graphs: bool,

    /// Leave host-device copies out of the loop (TensorRT plans; inputs are uploaded once).
    #[arg(long)]
    pub no_transfers: bool,

    /// Print one JSON document (the report `--compare` reads).
    #[arg(long)]
    pub json: bool,

    /// A report written by `--json` to compare this run with (exit 3 on a regression).
    #[arg(long, value_name = "BASELINE.json")]
    pub compare: Option<PathBuf>,

    /// How much slower (p50 latency) or lower (throughput), in percent, still passes `--compare`.
    #[arg(long, value_name = "PCT", default_value_t = 10.0, requires = "compare", value_parser = parse_percent)]
    pub max_regression: f64,

    /// Per-layer profiling and weight streaming (cmd::bench_layers).
    #[cfg(feature = "tensorrt")]
    #[command(flatten)]
    pub tooling: super::bench_layers::Flags,
}

/// `--device`: `cpu`, `cuda` (device 0) or `cuda:N`.
fn parse_device(s: &str) -> std::result::Result<Provider, String> {
    match s.parse::<Provider>() {
        Ok(Provider::Auto) | Err(_) => Err(format!("'{s}' is not a device (cpu, cuda or cuda:N, N a device index)")),
        Ok(p) => Ok(p),
    }
}

fn parse_percent(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a percentage (a number >= 0)")),
    }
}

/// What a value-filled input holds: token ids (101..1000) for integer
/// inputs, 1 for `attention_mask`, 0 for `token_type_ids` (names as
/// trt-nlp's [`InputRole`] knows them).
#[derive(Debug, Clone, Copy)]
pub enum Fill {
    TokenIds,
    // Only the TensorRT path fills masks and zeros itself; ONNX Runtime's
    // pipeline writes them from the token rows.
    #[cfg_attr(not(feature = "tensorrt"), allow(dead_code))]
    Ones,
    #[cfg_attr(not(feature = "tensorrt"), allow(dead_code))]
    Zeros,
}

impl Fill {
    #[cfg_attr(not(feature = "tensorrt"), allow(dead_code))]
    pub fn for_input(name: &str) -> Fill {
        match InputRole::from_name(name) {
            Some(InputRole::AttentionMask) => Fill::Ones,
            Some(InputRole::TokenTypeIds) => Fill::Zeros,
            _ => Fill::TokenIds,
        }
    }

    pub fn value(self, i: usize) -> i64 {
        match self {
            Fill::TokenIds => 101 + ((i * 7919) % 899) as i64,
            Fill::Ones => 1,
            Fill::Zeros => 0,
        }
    }
}

/// One backend's run: the report, and the text lines only it has.
#[derive(Debug)]
pub struct Measured {
    pub report: Report,
    /// Lines after the latency line (TensorRT: the engine / copy split).
    pub stage_lines: String,
    /// Lines after the throughput line (TensorRT: the per-layer table).
    pub trailer: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_follow_the_input_names() {
        assert!(matches!(Fill::for_input("attention_mask"), Fill::Ones));
        assert!(matches!(Fill::for_input("token_type_ids"), Fill::Zeros));
        assert!(matches!(Fill::for_input("whatever"), Fill::TokenIds));
        assert!((0..5000).map(|i| Fill::TokenIds.value(i)).all(|v| (101..1000).contains(&v)));
    }

    #[test]
    fn devices_parse_to_an_index_or_the_cpu() {
        assert_eq!(parse_device("cpu"), Ok(Provider::Cpu));
        assert_eq!(parse_device("cuda"), Ok(Provider::Cuda { device: 0 }));
        assert_eq!(parse_device("cuda:3"), Ok(Provider::Cuda { device: 3 }));
        for bad in ["gpu", "cuda:", "cuda:x", "cuda:-1", "auto", ""] {
            let e = parse_device(bad).unwrap_err();
            assert!(e.contains(&format!("'{bad}'")), "{e}");
        }
        assert!(parse_percent("-1").is_err() && parse_percent("nan").is_err());
        assert_eq!(parse_percent("12.5"), Ok(12.5));
    }
}
