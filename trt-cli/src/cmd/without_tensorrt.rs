//! The TensorRT commands (build, inspect, refit, demo) in a `trt` built without
//! the `tensorrt` feature: still listed by `--help` and accepted with any
//! arguments, so that the user learns which feature the command needs instead
//! of clap's "unrecognized subcommand".

use crate::error::{CliError, Result};

/// Whatever follows the command; not parsed, since the command does not run.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    _rest: Vec<String>,
}

/// The error `trt COMMAND` answers in this build: the feature and crate it needs and
/// how to get them.
pub fn run(command: &str) -> Result<()> {
    Err(CliError::new(format!(
        "`trt {command}` needs TensorRT, and this `trt` was built without trt-cli's `tensorrt` feature \
         (the default builds ONNX Runtime only, so no TensorRT headers are needed): \
         build it with `--features tensorrt` (`cargo install trt-cli --features tensorrt`, or \
         `cargo run --release -p trt-cli --features tensorrt -- {command}` in the repository), \
         which compiles trt-sys against the TensorRT headers that scripts/setup installs"
    )))
}
