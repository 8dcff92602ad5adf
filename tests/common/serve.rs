//! A model repository in Triton's layout around the default model, and a
//! `trt serve` process on 127.0.0.1 with ephemeral ports, for the serving
//! tests and the load benchmark. The process is killed when the guard drops.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The setup venv's Python, after checking that it can import `modules`
/// (`what` names them in the failure, with the command that installs them).
// Used by the client tests; the load benchmark includes this file too.
#[allow(dead_code)]
pub fn venv_python(deps: &Path, modules: &str, what: &str) -> PathBuf {
    let python = deps.join("venv/bin/python");
    let probe = Command::new(&python).args(["-c", &format!("import {modules}")]).status();
    assert!(matches!(probe, Ok(s) if s.success()), "{} cannot import {what}: run scripts/setup", python.display());
    python
}

/// A text model's config.pbtxt: `outputs` are `(name, dims)`, `extra` is appended.
pub fn text_config(platform: &str, max_batch: usize, outputs: &[(&str, &str)], extra: &str) -> String {
    let outs: Vec<String> = outputs.iter().map(|(n, d)| format!("  {{ name: \"{n}\" data_type: TYPE_FP32 dims: [ {d} ] }}")).collect();
    format!(
        "platform: \"{platform}\"\nmax_batch_size: {max_batch}\ninput [ {{ name: \"text\" data_type: TYPE_STRING dims: [ 1 ] }} ]\noutput [\n{}\n]\n{extra}\n",
        outs.join(",\n")
    )
}

/// Lays out `ROOT/<name>/config.pbtxt`, its tokenizer files, and version 1
/// holding `model_file` (a symlink to the default model's, or the bytes given).
pub fn add_model(root: &Path, name: &str, config: &str, minilm: &Path, model_file: (&str, Option<&[u8]>)) {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("1")).unwrap();
    std::fs::write(dir.join("config.pbtxt"), config).unwrap();
    for f in ["tokenizer.json", "config.json"] {
        std::fs::copy(minilm.join(f), dir.join(f)).unwrap();
    }
    // A folder `trt import` wrote says what its graph computes (pooling inside).
    if minilm.join("trt_model.json").is_file() {
        std::fs::copy(minilm.join("trt_model.json"), dir.join("trt_model.json")).unwrap();
    }
    let target = dir.join("1").join(model_file.0);
    match model_file.1 {
        Some(bytes) => std::fs::write(target, bytes).unwrap(),
        None => std::os::unix::fs::symlink(minilm.join("model.onnx").canonicalize().unwrap(), target).unwrap(),
    }
}

/// A running `trt serve` and the addresses it printed.
pub struct Server {
    child: Option<Child>,
    /// `host:port` of the HTTP, gRPC and metrics listeners.
    pub http: String,
    pub grpc: String,
    pub metrics: String,
}

impl Server {
    /// Starts `trt` (`binary`) serving `repo` with `extra` flags; waits (at
    /// most `ready_within`) for the line that says every model is loaded.
    pub fn start(binary: &Path, repo: &Path, extra: &[&str], ready_within: Duration) -> Server {
        Self::spawn(binary, repo, extra, ready_within, Stdio::inherit())
    }

    /// [`Server::start`] with the server's log (stderr) written to `log`.
    #[allow(dead_code)]
    pub fn start_logging_to(binary: &Path, repo: &Path, extra: &[&str], ready_within: Duration, log: &Path) -> Server {
        Self::spawn(binary, repo, extra, ready_within, std::fs::File::create(log).unwrap().into())
    }

    /// `trt` with `args` (which name the model source) on 127.0.0.1 with ephemeral ports.
    #[allow(dead_code)]
    pub fn start_with_args(binary: &Path, args: &[&str], ready_within: Duration) -> Server {
        let mut cmd = Command::new(binary);
        cmd.args(args);
        Self::spawn_command(cmd, ready_within, Stdio::inherit())
    }

    /// `cmd` (`trt serve` with the model source and any environment) on 127.0.0.1 with
    /// ephemeral ports, its stderr written to `log`.
    #[allow(dead_code)]
    pub fn start_command_logging_to(cmd: Command, ready_within: Duration, log: &Path) -> Server {
        Self::spawn_command(cmd, ready_within, std::fs::File::create(log).unwrap().into())
    }

    fn spawn(binary: &Path, repo: &Path, extra: &[&str], ready_within: Duration, stderr: Stdio) -> Server {
        let mut cmd = Command::new(binary);
        cmd.args(["serve", "--model-repository"]).arg(repo).args(extra);
        Self::spawn_command(cmd, ready_within, stderr)
    }

    fn spawn_command(mut cmd: Command, ready_within: Duration, stderr: Stdio) -> Server {
        let mut child = cmd
            .args(["--host", "127.0.0.1", "--http-port", "0", "--grpc-port", "0", "--metrics-port", "0"])
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("trt serve starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(line)) = lines.next() {
                let _ = tx.send(line);
            }
            for _ in lines {} // keep the pipe drained
        });
        let mut server = Server { child: Some(child), http: String::new(), grpc: String::new(), metrics: String::new() };
        let line = rx.recv_timeout(ready_within).unwrap_or_else(|_| panic!("trt serve printed no ready line within {ready_within:?}"));
        let field = |key: &str| {
            line.split_whitespace().find_map(|w| w.strip_prefix(key)).unwrap_or_else(|| panic!("no {key} in {line:?}")).to_string()
        };
        server.http = field("http=");
        server.grpc = field("grpc=");
        server.metrics = field("metrics=");
        server
    }

    /// The server's process id (for descriptor counts; not every user of this file needs it).
    #[allow(dead_code)]
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// SIGTERM, then the exit status (killed after `within`).
    pub fn terminate(mut self, within: Duration) -> ExitStatus {
        let mut child = self.child.take().unwrap();
        let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        wait_bounded(&mut child, within).unwrap_or_else(|| {
            let _ = child.kill();
            panic!("trt serve did not exit within {within:?} of SIGTERM")
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Runs a client script (`cmd`: the venv's Python, the script and its
/// arguments) with its output shown, and fails the test when it fails or is
/// still running after `within` (then it is killed); `script` names it.
#[allow(dead_code)]
pub fn run_client(mut cmd: Command, script: &str, within: Duration) {
    let mut client = cmd.stdout(Stdio::inherit()).stderr(Stdio::inherit()).spawn().expect("python runs");
    let status = wait_bounded(&mut client, within).unwrap_or_else(|| {
        let _ = client.kill();
        panic!("{script} did not finish within {within:?}")
    });
    assert!(status.success(), "{script} failed ({status}); its output above names the check");
}

/// One HTTP/1.1 request on its own connection (60 s read bound), with extra
/// `headers` (`Name: value\r\n` lines): the status code, the response's head
/// and its body.
#[allow(dead_code)]
pub fn http_request(addr: &str, method: &str, path: &str, headers: &str, body: &str) -> (u16, String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let code = out.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    (code, head.to_string(), body.to_string())
}

/// Waits for `child` at most `within`.
pub fn wait_bounded(child: &mut Child, within: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// The default model folder (`.deps/models/minilm`).
pub fn minilm(deps: &Path) -> PathBuf {
    let p = deps.join("models").join("minilm");
    assert!(p.join("model.onnx").is_file(), "{} is missing: run scripts/setup first", p.display());
    p
}

/// The number of descriptors process `pid` holds (`/proc/<pid>/fd`).
#[allow(dead_code)]
pub fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

/// Polls until `pid`'s descriptor count is at most `level` (or 10 s pass); the last count.
#[allow(dead_code)]
pub fn settle_fds(pid: u32, level: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let n = fd_count(pid);
        if n <= level || Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether the peer has closed `s` (EOF or reset), without blocking (`s` is non-blocking);
/// bytes that arrive are read and dropped.
#[allow(dead_code)]
pub fn closed(s: &mut std::net::TcpStream) -> bool {
    use std::io::{ErrorKind, Read};
    let mut b = [0u8; 256];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) if e.kind() == ErrorKind::WouldBlock => false,
        Err(_) => true,
    }
}
