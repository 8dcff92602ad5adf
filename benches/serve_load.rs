//! A bounded loopback load on `trt serve`: single-text embedding requests
//! (KServe v2 JSON over HTTP/1.1 keep-alive) at several concurrencies, against
//! the same model with dynamic batching and without, in one run:
//! `cargo bench -p trt-cli --bench serve_load`.
//!
//! Prints, per model and concurrency, requests/s, p50 and p99 latency and the
//! failures, then `ratio_batched_vs_direct_c{C}: X.XX` (throughput, same run,
//! same server). Each level is bounded by a request count and a time limit.
//!
//! Settings (environment): `SERVE_BENCH_TRT` (the `trt` binary; default the
//! one cargo built), `SERVE_BENCH_MODEL_DIR` (default `.deps/models/minilm`),
//! `SERVE_BENCH_CONCURRENCY` (1,8,32,128), `SERVE_BENCH_REQUESTS` (2000 per
//! level), `SERVE_BENCH_SECONDS` (15 per level), `SERVE_BENCH_THREADS` (ONNX
//! Runtime intra-op threads per session; 0: one per core),
//! `SERVE_BENCH_INSTANCES` (sessions per model, 1), `SERVE_BENCH_MAX_BATCH` (32),
//! `SERVE_BENCH_DELAY_US` (dynamic batching's max_queue_delay, 1000),
//! `SERVE_BENCH_MODELS` (`batched` or `direct`: measure one model only),
//! `SERVE_BENCH_CLIENT_THREADS` (the client's threads, every connection a
//! task on them; default a quarter of the cores; 0: a blocking thread per
//! connection). Each level's line ends with the client's own CPU use.
//! `SERVE_BENCH_WORDS=MIN-MAX` sets the texts' length in words (default 5-60);
//! a model folder `trt import` wrote (`trt_model.json`) is served with its
//! embedding's length.
//! `SERVE_BENCH_REQUEST_THREADS=N` starts trt serve with `--request-threads N`;
//! `SERVE_BENCH_ROW_BUCKETS=1` sets the models' `cuda_row_buckets` parameter,
//! `SERVE_BENCH_HOST_WAIT=spin|block` their `cuda_host_wait` (unset: the default).
//!
//! On a GPU: `SERVE_BENCH_KIND=KIND_GPU` puts both models' instances on
//! GPU `SERVE_BENCH_GPU` (0) (`instance_group { kind gpus }`), and
//! `SERVE_BENCH_GRAPHS=N` runs batches of up to N rows as CUDA graphs
//! (`optimization { cuda { graphs graph_spec } }`). `SERVE_BENCH_BATCH_TEXTS=K`
//! adds a pass of K-text requests with binary output (embeddings/s).
//! `SERVE_BENCH_WARMUP_SECS=S` loads each level unmeasured for S seconds
//! first (shapes that level forms, e.g. CUDA graphs, are made before it counts).
//!
//! Peer: with `SERVE_BENCH_PEER="COMMAND ARGS"`, after trt serve has stopped,
//! that server is started with `--port P` appended (it must answer
//! `GET /v2/health/ready` and the same KServe v2 JSON bodies, as
//! benches/serve_peer_torch.py does) and measured the same way:
//! `ratio_trt_serve_vs_peer_c{C}` and the p99s side by side.
//!
//! Baseline: with `SERVE_BENCH_TEI=/path/to/text-embeddings-router`, after
//! trt serve has stopped, HuggingFace text-embeddings-inference serves the
//! same model folder (ONNX Runtime backend, mean pooling; `ORT_DYLIB_PATH` or
//! the setup folder's library) and the same bodies' texts go to its `/embed`
//! at the same concurrencies through the same client. Printed: the cosine of
//! both servers' embeddings of the first texts (same model?), TEI's flags,
//! its levels, `ratio_trt_serve_vs_tei_c{C}` (best of batched and direct over
//! TEI, throughput) and the three p99s side by side.
//!
//! TEI's route: `SERVE_BENCH_ROUTE=tei` measures TEI's `/embed` route as trt
//! serve answers it (`/models/{name}/embed`, one model: `SERVE_BENCH_ROUTE_MODEL`
//! batched (default) or direct) against TEI's own `/embed` (`SERVE_BENCH_TEI`;
//! unset: trt serve alone), the same bodies to both: single texts and
//! `{"inputs": [K texts]}` (K = `SERVE_BENCH_ROUTE_BATCH`, 32;
//! `SERVE_BENCH_BATCH_REQUESTS` per level, default `SERVE_BENCH_REQUESTS`).
//! The servers take turns, one at a time, in the order
//! `SERVE_BENCH_ROUTE_ORDER` (`trt,tei,tei,trt`; support/tei_route.rs says
//! why). Printed per concurrency: `ratio_trt_serve_tei_route_vs_tei_c{C}` and
//! `..._x{K}_c{C}` (summed rounds, then each round) and both servers' p99s.

#[path = "support/http1.rs"]
mod http1;
#[path = "support/load.rs"]
mod load;
#[path = "../tests/common/serve.rs"]
mod serve;
#[path = "support/tei.rs"]
mod tei;
#[path = "support/tei_route.rs"]
mod tei_route;
#[path = "support/texts.rs"]
mod texts;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use load::{embeddings, floats, load, measure, min_cosine, wait_ready};
use serve::{add_model, text_config, Server};

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The server's own account of where the time went: Triton's per-model
/// counters and cumulative durations (histogram buckets left out), the
/// per-instance and GPU lines, then the means per request and per batch
/// they imply for the batched model (all levels together).
fn print_metrics(text: &str) {
    let wanted = |l: &&str| (l.starts_with("nv_") || l.starts_with("trt_serve_")) && !l.contains("_bucket{") && !l.starts_with('#');
    let mut sums = std::collections::HashMap::new();
    for line in text.lines().filter(wanted) {
        println!("{line}");
        if let (Some(name), Some(value)) = (line.split('{').next(), line.rsplit(' ').next()) {
            if line.contains("model=\"batched\"") && !line.contains("_latency_us") {
                *sums.entry(name.to_string()).or_insert(0.0) += value.parse::<f64>().unwrap_or(0.0);
            }
        }
    }
    let get = |n: &str| sums.get(n).copied().unwrap_or(0.0);
    let (requests, execs) = (get("nv_inference_request_success"), get("nv_inference_exec_count"));
    if requests > 0.0 && execs > 0.0 {
        println!("batched_rows_per_exec: {:.1}", get("nv_inference_count") / execs);
        for phase in ["request", "queue", "compute_input", "compute_infer", "compute_output"] {
            println!("batched_mean_{phase}_us_per_request: {:.1}", get(&format!("nv_inference_{phase}_duration_us")) / requests);
        }
        println!("batched_mean_compute_infer_us_per_exec: {:.1}", get("trt_serve_instance_compute_infer_duration_us") / execs);
    }
}

/// The models whose levels are measured: both (default), or the one
/// `SERVE_BENCH_MODELS` names (`batched` or `direct`), e.g. where the other's
/// levels would only take time; a peer or TEI comparison needs both.
fn measured_models(comparing: bool) -> Vec<&'static str> {
    match std::env::var("SERVE_BENCH_MODELS").as_deref() {
        Err(_) | Ok("") | Ok("direct,batched") => vec!["direct", "batched"],
        Ok(_) if comparing => panic!("SERVE_BENCH_MODELS: a peer or TEI comparison measures both models"),
        Ok("batched") => vec!["batched"],
        Ok("direct") => vec!["direct"],
        Ok(other) => panic!("SERVE_BENCH_MODELS: {other:?} is not batched, direct or direct,batched"),
    }
}

/// The ONNX Runtime library TEI loads: `ORT_DYLIB_PATH` when it names a
/// file, else the setup folder's (what scripts/setup installs).
fn ort_library(deps: &Path) -> PathBuf {
    match std::env::var_os("ORT_DYLIB_PATH").map(PathBuf::from) {
        Some(p) if p.is_file() => p,
        _ => deps.join("lib/onnxruntime/libonnxruntime.so.1.31.1"),
    }
}

fn main() {
    let deps = std::env::var_os("TRT_DEPS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.deps")));
    let model_dir = std::env::var_os("SERVE_BENCH_MODEL_DIR").map(PathBuf::from).unwrap_or_else(|| serve::minilm(&deps));
    let trt = std::env::var_os("SERVE_BENCH_TRT").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_trt")));
    let tei_binary = std::env::var_os("SERVE_BENCH_TEI").filter(|v| !v.is_empty()).map(PathBuf::from);
    let levels: Vec<usize> = std::env::var("SERVE_BENCH_CONCURRENCY")
        .unwrap_or_else(|_| "1,8,32,128".into())
        .split(',')
        .filter_map(|c| c.trim().parse().ok())
        .collect();
    let requests = env_num("SERVE_BENCH_REQUESTS", 2000);
    let limit = Duration::from_secs(env_num("SERVE_BENCH_SECONDS", 15) as u64);
    let (instances, max_batch, delay) =
        (env_num("SERVE_BENCH_INSTANCES", 1), env_num("SERVE_BENCH_MAX_BATCH", 32), env_num("SERVE_BENCH_DELAY_US", 1000));
    let threads = env_num("SERVE_BENCH_THREADS", 0).to_string();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());

    let repo = tempfile::tempdir().expect("temp dir");
    let group = match std::env::var("SERVE_BENCH_KIND").ok().filter(|k| !k.is_empty()) {
        Some(kind) => format!("instance_group [ {{ kind: {kind} count: {instances} gpus: [ {} ] }} ]", env_num("SERVE_BENCH_GPU", 0)),
        None => format!("instance_group [ {{ count: {instances} }} ]"),
    };
    let group = match env_num("SERVE_BENCH_GRAPHS", 0) {
        0 => group,
        n => format!("{group}\noptimization {{ cuda {{ graphs: true graph_spec [ {{ batch_size: {n} }} ] }} }}"),
    };
    // Batches above the graph limit padded to their row bucket (few shapes).
    let group = match std::env::var("SERVE_BENCH_ROW_BUCKETS").is_ok_and(|v| v == "1") {
        true => format!("{group}\nparameters {{ key: \"cuda_row_buckets\" value {{ string_value: \"true\" }} }}"),
        false => group,
    };
    // How the GPU workers wait for their batches (trt serve's default where unset).
    let group = match std::env::var("SERVE_BENCH_HOST_WAIT").ok().filter(|v| !v.is_empty()) {
        Some(wait) => format!("{group}\nparameters {{ key: \"cuda_host_wait\" value {{ string_value: \"{wait}\" }} }}"),
        None => group,
    };
    let batch_texts = env_num("SERVE_BENCH_BATCH_TEXTS", 0);
    let warm_each = Duration::from_secs(env_num("SERVE_BENCH_WARMUP_SECS", 0) as u64);
    let peer = std::env::var("SERVE_BENCH_PEER").ok().filter(|v| !v.trim().is_empty());
    // The embedding's length: what `trt import` recorded, else the default model's.
    let dim = std::fs::read(model_dir.join("trt_model.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|d| d["embedding_dim"].as_u64())
        .unwrap_or(384)
        .to_string();
    let outputs = [("embedding", dim.as_str())];
    let batched = text_config(
        "onnxruntime_onnx",
        max_batch,
        &outputs,
        &format!("{group}\ndynamic_batching {{ max_queue_delay_microseconds: {delay} default_queue_policy {{ max_queue_size: 4096 }} }}"),
    );
    let direct = text_config("onnxruntime_onnx", max_batch, &outputs, &group);
    let request_threads = std::env::var("SERVE_BENCH_REQUEST_THREADS").ok().filter(|v| !v.is_empty());
    let mut trt_flags = vec!["--threads", &threads, "--max-queue", "4096"];
    if let Some(n) = &request_threads {
        trt_flags.extend(["--request-threads", n]);
    }
    let tokenizer = tokenizers::Tokenizer::from_file(model_dir.join("tokenizer.json")).expect("tokenizer.json");
    let texts = match std::env::var("SERVE_BENCH_WORDS").ok().and_then(|w| w.split_once('-').map(|(a, b)| (a.parse(), b.parse()))) {
        Some((Ok(min), Ok(max))) if min >= 1 && max >= min => texts::generate_texts_of(&tokenizer, 512, min, max),
        Some(_) => panic!("SERVE_BENCH_WORDS: MIN-MAX words per text, 1 <= MIN <= MAX"),
        None => texts::generate_texts(&tokenizer, 512),
    };

    if std::env::var("SERVE_BENCH_ROUTE").is_ok_and(|r| r == "tei") {
        let model = std::env::var("SERVE_BENCH_ROUTE_MODEL").unwrap_or_else(|_| "batched".into());
        let config = match model.as_str() {
            "batched" => &batched,
            "direct" => &direct,
            other => panic!("SERVE_BENCH_ROUTE_MODEL: {other:?} is neither batched nor direct"),
        };
        add_model(repo.path(), &model, config, &model_dir, ("model.onnx", None));
        let tei_work = tempfile::tempdir().expect("temp dir");
        println!(
            "serve_load: route tei; trt serve model {model}: ONNX Runtime, {instances} session(s), intra threads {threads} (0: per core), max_batch {max_batch}{}; {cores} cores",
            if model == "batched" { format!(", delay {delay} us") } else { String::new() }
        );
        println!("serve_load: config: {}", group.replace('\n', " "));
        println!("serve_load: {}", load::describe_client());
        let tei = tei_binary.map(|binary| tei_route::TeiPeer {
            binary,
            settings: tei::TeiSettings::from_env(cores, levels.iter().copied().max().unwrap_or(1)),
            library: ort_library(&deps),
        });
        tei_route::run(&tei_route::RouteBench {
            trt: &trt,
            repo: repo.path(),
            trt_flags: trt_flags.iter().map(|f| f.to_string()).collect(),
            model: &model,
            model_dir: &model_dir,
            tei_work: tei_work.path(),
            tei,
            texts: &texts,
            levels: &levels,
            requests,
            batch_requests: env_num("SERVE_BENCH_BATCH_REQUESTS", requests),
            limit,
            warm_each,
        });
        return;
    }

    add_model(repo.path(), "batched", &batched, &model_dir, ("model.onnx", None));
    add_model(repo.path(), "direct", &direct, &model_dir, ("model.onnx", None));
    let server = Server::start(&trt, repo.path(), &trt_flags, Duration::from_secs(300));

    let to_bodies =
        |f: &dyn Fn(&str) -> serde_json::Value| Arc::new(texts.iter().map(|t| serde_json::to_vec(&f(t)).unwrap()).collect::<Vec<_>>());
    let bodies = to_bodies(&|t| {
        serde_json::json!({
            "inputs": [{ "name": "text", "shape": [1, 1], "datatype": "BYTES", "data": [t] }],
            "outputs": [{ "name": "embedding" }],
        })
    });
    println!(
        "serve_load: single-text embedding requests, HTTP/1.1 JSON on loopback; ONNX Runtime, {instances} session(s), intra threads {threads} (0: per core), max_batch {max_batch}, delay {delay} us; {cores} cores"
    );
    println!("serve_load: config: {}", group.replace('\n', " "));
    println!("serve_load: {}; trt serve {}", load::describe_client(), trt_flags.join(" "));
    let mut results = std::collections::BTreeMap::new();
    for model in measured_models(peer.is_some() || tei_binary.is_some()) {
        let path = format!("/v2/models/{model}/infer");
        // Warm-up outside the measurement.
        load(&server.http, &path, &bodies, 4, 64, Duration::from_secs(30));
        for &c in &levels {
            if !warm_each.is_zero() {
                load(&server.http, &path, &bodies, c, requests, warm_each);
            }
            results.insert((model, c), measure(model, &server.http, &path, &bodies, c, requests, limit));
        }
    }
    for &c in &levels {
        if let (Some(d), Some(b)) = (results.get(&("direct", c)), results.get(&("batched", c))) {
            println!("ratio_batched_vs_direct_c{c}: {:.2}", b.rps / d.rps.max(1e-9));
        }
    }
    if batch_texts > 0 {
        // K texts per request, the embeddings back as raw little-endian f32.
        let many = Arc::new(
            texts
                .chunks(batch_texts)
                .filter(|c| c.len() == batch_texts)
                .map(|chunk| {
                    serde_json::to_vec(&serde_json::json!({
                        "inputs": [{ "name": "text", "shape": [chunk.len(), 1], "datatype": "BYTES", "data": chunk }],
                        "outputs": [{ "name": "embedding", "parameters": { "binary_data": true } }],
                    }))
                    .unwrap()
                })
                .collect::<Vec<_>>(),
        );
        let path = "/v2/models/batched/infer";
        load(&server.http, path, &many, 4, 16, Duration::from_secs(30));
        for &c in &levels {
            let m = measure(&format!("batched x{batch_texts}"), &server.http, path, &many, c, requests / batch_texts, limit);
            println!("embeddings_per_s_{batch_texts}_texts_binary_c{c}: {:.0}", m.rps * batch_texts as f64);
        }
    }
    let metrics = server.metrics.clone();
    if let Ok(mut s) = TcpStream::connect(&metrics) {
        let _ = write!(s, "GET /metrics HTTP/1.0\r\nHost: {metrics}\r\n\r\n");
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        print_metrics(&text);
    }
    const CHECKED: usize = 8;
    let kserve_embedding = |v: &serde_json::Value| floats(&v["outputs"][0]["data"]);
    let ours = (tei_binary.is_some() || peer.is_some())
        .then(|| embeddings(&server.http, "/v2/models/direct/infer", &bodies[..CHECKED], kserve_embedding));
    // trt serve stops before a peer starts: the two never share the machine.
    let status = server.terminate(Duration::from_secs(60));
    assert!(status.success(), "trt serve exited with {status}");

    if let (Some(peer), Some(ours)) = (&peer, &ours) {
        let mut words = peer.split_whitespace();
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let addr = format!("127.0.0.1:{port}");
        let mut child = std::process::Command::new(words.next().expect("SERVE_BENCH_PEER names a command"))
            .args(words)
            .args(["--port", &port.to_string()])
            .spawn()
            .expect("start the peer");
        let ready = wait_ready(&addr, Duration::from_secs(300));
        if ready {
            println!("peer: {peer} on {addr}");
            let theirs = embeddings(&addr, "/v2/models/batched/infer", &bodies[..CHECKED], kserve_embedding);
            let min_cos = min_cosine(ours, &theirs);
            println!("peer_embedding_check: min cosine {min_cos:.6} over {CHECKED} texts");
            let path = "/v2/models/batched/infer";
            load(&addr, path, &bodies, 4, 64, Duration::from_secs(30));
            for &c in &levels {
                results.insert(("peer", c), measure("peer", &addr, path, &bodies, c, requests, limit));
            }
        } else {
            println!("peer: {peer} did not answer /v2/health/ready within 300 s");
        }
        let _ = child.kill();
        let _ = child.wait();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        for &c in levels.iter().filter(|&&c| results.contains_key(&("peer", c))) {
            let (d, b, p) = (&results[&("direct", c)], &results[&("batched", c)], &results[&("peer", c)]);
            let best = if b.rps >= d.rps { b } else { d };
            println!("ratio_trt_serve_vs_peer_c{c}: {:.2}", best.rps / p.rps.max(1e-9));
            println!(
                "p50_p99_c{c}: batched {:.2}/{:.2} ms  direct {:.2}/{:.2} ms  peer {:.2}/{:.2} ms",
                ms(b.p50),
                ms(b.p99),
                ms(d.p50),
                ms(d.p99),
                ms(p.p50),
                ms(p.p99)
            );
        }
    }

    let (Some(tei_binary), Some(ours)) = (tei_binary, ours) else { return };
    let settings = tei::TeiSettings::from_env(cores, levels.iter().copied().max().unwrap_or(1));
    let library = ort_library(&deps);
    let tei = tei::Tei::start(&tei_binary, &model_dir, repo.path(), &library, &settings, Duration::from_secs(300));
    println!("tei: {} {}; ORT_DYLIB_PATH={}", tei_binary.display(), settings.describe(), library.display());
    let tei_bodies = to_bodies(&|t| serde_json::json!({ "inputs": t }));
    let theirs = embeddings(&tei.http, "/embed", &tei_bodies[..CHECKED], |v| floats(&v[0]));
    let min_cos = min_cosine(&ours, &theirs);
    println!("tei_embedding_check: min cosine {min_cos:.6} over {CHECKED} texts (trt serve's `embedding` vs TEI's /embed)");
    load(&tei.http, "/embed", &tei_bodies, 4, 64, Duration::from_secs(30));
    for &c in &levels {
        results.insert(("tei", c), measure("tei", &tei.http, "/embed", &tei_bodies, c, requests, limit));
    }
    drop(tei);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for &c in &levels {
        let (d, b, t) = (&results[&("direct", c)], &results[&("batched", c)], &results[&("tei", c)]);
        let (best, name) = if b.rps >= d.rps { (b, "batched") } else { (d, "direct") };
        println!(
            "ratio_trt_serve_vs_tei_c{c}: {:.2} ({name}; batched {:.2}, direct {:.2})",
            best.rps / t.rps.max(1e-9),
            b.rps / t.rps.max(1e-9),
            d.rps / t.rps.max(1e-9)
        );
        println!("p99_c{c}: batched {:.2} ms  direct {:.2} ms  tei {:.2} ms", ms(b.p99), ms(d.p99), ms(t.p99));
    }
}
