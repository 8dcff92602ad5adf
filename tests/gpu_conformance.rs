//! `scripts/gpu-conformance` refuses, with its reason, exit status 3 and a
//! report, where TensorRT cannot execute engines: without an NVIDIA driver,
//! and on a GPU whose compute capability the loaded TensorRT does not execute
//! on (an `nvidia-smi` test double reporting the lent H200's 9.0).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/gpu-conformance")
}

fn conformance(out: &Path, nvidia_smi: &Path) -> Output {
    Command::new("bash")
        .arg(script())
        .args(["--check-only", "--out"])
        .arg(out)
        .env("TRT", env!("CARGO_BIN_EXE_trt"))
        .env("NVIDIA_SMI", nvidia_smi)
        .output()
        .expect("run scripts/gpu-conformance")
}

fn report(out: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(out.join("report.json")).expect("report.json written")).expect("report.json is JSON")
}

#[test]
fn refuses_without_an_nvidia_driver_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let o = conformance(dir.path(), &dir.path().join("no-such-nvidia-smi"));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("refused: no NVIDIA driver here"), "{stderr}");
    let doc = report(dir.path());
    assert_eq!(doc["status"], "refused");
    assert!(doc["reason"].as_str().unwrap().contains("not found"), "{doc}");
    assert!(std::fs::read_to_string(dir.path().join("report.md")).unwrap().contains("# GPU conformance: refused"));
}

#[test]
fn refuses_a_gpu_tensorrt_cannot_execute_on() {
    let dir = tempfile::tempdir().unwrap();
    // Test double of nvidia-smi: the lent H200, compute capability 9.0.
    let double = dir.path().join("nvidia-smi-double");
    std::fs::write(&double, "#!/bin/sh\necho 'NVIDIA H200, 9.0'\n").unwrap();
    std::fs::set_permissions(&double, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let o = conformance(dir.path(), &double);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{stderr}");
    let doc = report(dir.path());
    assert_eq!(doc["gpu"], "NVIDIA H200, 9.0");
    let reason = doc["reason"].as_str().unwrap();
    if trt::header_version().flavor == trt::Flavor::TensorRtRtx {
        // Refused on the compute capability, before any build.
        assert!(reason.contains("compute capability 9.0") && reason.contains("8.0, 8.6"), "{reason}");
        assert!(doc["tensorrt"].as_str().unwrap().contains("RTX"), "{doc}");
    } else {
        // Full TensorRT accepts 9.0, so the probe plan decides: no GPU here deserializes it.
        assert!(reason.contains("does not deserialize"), "{reason}");
    }
}
