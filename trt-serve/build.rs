//! Compiles proto/inference.proto with protox (a protobuf compiler in Rust),
//! so building needs no `protoc` on the machine.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/inference.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["proto"])?;
    tonic_prost_build::configure().build_client(false).compile_fds(descriptors)?;
    Ok(())
}
