//! `trt serve` over TLS (HTTP and gRPC) and with mTLS, with a CA, a server
//! certificate (SAN 127.0.0.1) and a client certificate made here with the
//! openssl command; plus CORS. tests/python/serve_tls.py drives it (Python
//! ssl for HTTPS, tritonclient.grpc with ssl=True for gRPC). The servers run
//! on 127.0.0.1 with ephemeral ports over the default model. Bounded: ready
//! within 120 s, each client within 120 s, exit within 30 s of SIGTERM.

mod common;
#[path = "common/serve.rs"]
#[allow(dead_code)]
mod serve;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serve::{add_model, text_config, wait_bounded, Server};

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").args(args).current_dir(dir).output().expect("the openssl command runs");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// ca.pem/key, server.pem/key (SAN 127.0.0.1, localhost), client.pem/key, in `dir`.
fn make_certificates(dir: &Path) {
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    let mut ca = vec!["req", "-x509", "-days", "2", "-subj", "/CN=trt-serve test CA", "-keyout", "ca.key", "-out", "ca.pem"];
    ca.extend_from_slice(&ec);
    openssl(dir, &ca);
    std::fs::write(dir.join("server.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n").unwrap();
    std::fs::write(dir.join("client.ext"), "extendedKeyUsage=clientAuth\n").unwrap();
    for who in ["server", "client"] {
        let (key, csr, pem, ext, subj) =
            (format!("{who}.key"), format!("{who}.csr"), format!("{who}.pem"), format!("{who}.ext"), format!("/CN={who}"));
        let mut req = vec!["req", "-subj", subj.as_str(), "-keyout", key.as_str(), "-out", csr.as_str()];
        req.extend_from_slice(&ec);
        openssl(dir, &req);
        let sign = [
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            &pem,
            "-extfile",
            &ext,
        ];
        openssl(dir, &sign);
    }
}

fn run_client(python: &Path, server: &Server, certs: &Path, mtls: bool) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/python/serve_tls.py");
    let mut cmd = Command::new(python);
    cmd.arg(script).args(["--http", &server.http, "--grpc", &server.grpc, "--certs"]).arg(certs);
    if mtls {
        cmd.arg("--mtls");
    }
    let mut client = cmd.stdout(Stdio::inherit()).stderr(Stdio::inherit()).spawn().expect("python runs");
    let status = wait_bounded(&mut client, Duration::from_secs(120)).unwrap_or_else(|| {
        let _ = client.kill();
        panic!("the TLS checks did not finish within 120 s")
    });
    assert!(status.success(), "tests/python/serve_tls.py (mtls: {mtls}) failed ({status}); its output above names the check");
}

#[test]
fn tls_mtls_and_cors() {
    let deps = common::deps();
    let python = deps.join("venv/bin/python");
    let minilm = serve::minilm(&deps);
    let repo = tempfile::tempdir().unwrap();
    add_model(repo.path(), "m", &text_config("onnxruntime_onnx", 4, &[("logits", "2")], ""), &minilm, ("model.onnx", None));
    let certs = tempfile::tempdir().unwrap();
    make_certificates(certs.path());
    let file = |f: &str| certs.path().join(f).to_str().unwrap().to_string();
    let (cert, key, ca) = (file("server.pem"), file("server.key"), file("ca.pem"));
    let binary = Path::new(env!("CARGO_BIN_EXE_trt"));

    let tls = ["--threads", "1", "--tls-cert", &cert, "--tls-key", &key, "--cors-allow-origin", "https://app.example"];
    let server = Server::start(binary, repo.path(), &tls, Duration::from_secs(120));
    run_client(&python, &server, certs.path(), false);
    assert!(server.terminate(Duration::from_secs(30)).success());

    // --tls-metrics: /metrics over TLS (curl checks the certificate against the CA); plain HTTP is not answered.
    let tls_metrics = ["--threads", "1", "--tls-cert", &cert, "--tls-key", &key, "--tls-metrics"];
    let server = Server::start(binary, repo.path(), &tls_metrics, Duration::from_secs(120));
    let curl = |scheme: &str| {
        Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20", "--cacert", &ca])
            .arg(format!("{scheme}://{}/metrics", server.metrics))
            .output()
            .expect("curl runs")
    };
    let out = curl("https");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200", "metrics over TLS: {}", String::from_utf8_lossy(&out.stderr));
    let out = curl("http");
    assert_ne!(String::from_utf8_lossy(&out.stdout), "200", "plain HTTP on a TLS metrics port");
    assert!(server.terminate(Duration::from_secs(30)).success());

    let mtls = ["--threads", "1", "--tls-cert", &cert, "--tls-key", &key, "--tls-client-ca", &ca];
    let server = Server::start(binary, repo.path(), &mtls, Duration::from_secs(120));
    run_client(&python, &server, certs.path(), true);
    assert!(server.terminate(Duration::from_secs(30)).success());

    // A key that does not match the certificate is refused at start, naming the files.
    let out = Command::new(binary)
        .args(["serve", "--model-repository"])
        .arg(repo.path())
        .args(["--http-port", "0", "--grpc-port", "0", "--metrics-port", "0", "--tls-cert", &cert, "--tls-key", &file("client.key")])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("certificate and key"), "{err}");
}
