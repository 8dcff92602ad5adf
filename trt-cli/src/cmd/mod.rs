//! One module per subcommand: its clap arguments and a `run` function.

pub mod bench;
pub mod bench_layers;
pub mod build;
pub mod compare;
pub mod convert;
pub mod demo;
pub mod inspect;
pub mod nlp;
pub mod quantize;
pub mod refit;
pub mod serve;
pub mod tokenize;
