//! Compiles the official `proto/onnx.proto` (ONNX 1.23.2, IR 14) into prost
//! types with protox, a protobuf compiler written in Rust: no `protoc` needed.
//! Bytes fields are `bytes::Bytes`, so a decoded model's weights point into
//! the file's buffer instead of being copied.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/onnx.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["proto"])?;
    prost_build::Config::new().bytes(["."]).compile_fds(descriptors)?;
    Ok(())
}
