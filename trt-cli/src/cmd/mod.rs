//! One module per subcommand: its clap arguments and a `run` function.

pub mod bench;
pub mod bench_args;
#[cfg(feature = "tensorrt")]
pub mod bench_layers;
pub mod bench_ort;
#[cfg(feature = "tensorrt")]
pub mod bench_plan;
pub mod bench_report;
#[cfg(feature = "tensorrt")]
pub mod build;
pub mod compare;
pub mod compare_layers;
#[cfg(feature = "tensorrt")]
pub mod compare_plan;
pub mod compare_report;
pub mod convert;
#[cfg(feature = "tensorrt")]
pub mod demo;
#[cfg(feature = "tensorrt")]
pub mod inspect;
pub mod nlp;
pub mod quantize;
#[cfg(feature = "tensorrt")]
pub mod refit;
pub mod serve;
pub mod tokenize;
