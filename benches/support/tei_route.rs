//! `SERVE_BENCH_ROUTE=tei` of the load bench: text-embeddings-inference's
//! `/embed` route as trt serve answers it (`/models/{name}/embed`) against
//! TEI's own `/embed`, with the same request bodies, byte for byte: single
//! texts (`{"inputs": "..."}`) and batches of K texts (`{"inputs": [...]}`,
//! K = `SERVE_BENCH_ROUTE_BATCH`, 32), through the same client, at the same
//! concurrencies.
//!
//! Interleaved: the two servers never run at the same moment, and each runs
//! in several slots, a fresh process per slot, in the order
//! `SERVE_BENCH_ROUTE_ORDER` (default `trt,tei,tei,trt`). That order puts
//! both servers' slots at the same mean time, so a drift of the machine that
//! grows or shrinks steadily over the run (heat, a neighbour's load) favours
//! neither; each round (a server's k-th slot against the other's k-th) is
//! printed, then the ratio of the rounds' summed throughputs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::load::{embeddings, floats, load, measure, min_cosine, Measured};
use crate::serve::Server;
use crate::tei::{Tei, TeiSettings};

/// TEI's router binary, its flags and the ONNX Runtime library it loads.
pub struct TeiPeer {
    pub binary: PathBuf,
    pub settings: TeiSettings,
    pub library: PathBuf,
}

/// Everything one route-mode run needs.
pub struct RouteBench<'a> {
    pub trt: &'a Path,
    /// The model repository trt serve loads (it holds `model`).
    pub repo: &'a Path,
    /// trt serve's flags besides the repository and the ports.
    pub trt_flags: Vec<String>,
    /// The model whose TEI route is measured.
    pub model: &'a str,
    /// The model folder TEI serves (the one `model` was made from).
    pub model_dir: &'a Path,
    /// A folder for TEI's copy of the model and its logs (not the repository).
    pub tei_work: &'a Path,
    pub tei: Option<TeiPeer>,
    pub texts: &'a [String],
    pub levels: &'a [usize],
    pub requests: usize,
    pub batch_requests: usize,
    pub limit: Duration,
    pub warm_each: Duration,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Side {
    Trt,
    Tei,
}

impl Side {
    fn label(self) -> &'static str {
        match self {
            Side::Trt => "trt",
            Side::Tei => "tei",
        }
    }
}

/// The slots' servers from `SERVE_BENCH_ROUTE_ORDER` (`trt`/`tei`, comma separated).
fn order() -> Vec<Side> {
    let text = std::env::var("SERVE_BENCH_ROUTE_ORDER").unwrap_or_else(|_| "trt,tei,tei,trt".into());
    text.split(',')
        .map(|s| match s.trim() {
            "trt" => Side::Trt,
            "tei" => Side::Tei,
            other => panic!("SERVE_BENCH_ROUTE_ORDER: {other:?} is neither trt nor tei"),
        })
        .collect()
}

/// A server of either kind, stopped when dropped (trt serve by SIGTERM, checked).
enum Running {
    Trt(Server),
    Tei(Tei),
}

impl Running {
    fn http(&self) -> &str {
        match self {
            Running::Trt(s) => &s.http,
            Running::Tei(t) => &t.http,
        }
    }

    fn stop(self) {
        match self {
            Running::Trt(s) => {
                let status = s.terminate(Duration::from_secs(60));
                assert!(status.success(), "trt serve exited with {status}");
            }
            Running::Tei(t) => drop(t),
        }
    }
}

/// Measurements by (pass: 1 or K texts, concurrency, server, round).
type Results = BTreeMap<(usize, usize, Side, usize), Measured>;

const CHECKED: usize = 8;

pub fn run(b: &RouteBench) {
    let k = std::env::var("SERVE_BENCH_ROUTE_BATCH").ok().and_then(|v| v.parse().ok()).unwrap_or(32usize).max(1);
    let body = |inputs: serde_json::Value| serde_json::to_vec(&serde_json::json!({ "inputs": inputs })).unwrap();
    let singles = Arc::new(b.texts.iter().map(|t| body(t.as_str().into())).collect::<Vec<_>>());
    let batches = Arc::new(b.texts.chunks(k).filter(|c| c.len() == k).map(|c| body(c.into())).collect::<Vec<_>>());
    let mut slots = order();
    if b.tei.is_none() {
        println!("tei_route: SERVE_BENCH_TEI not set: trt serve's TEI route alone, no ratios");
        slots.retain(|s| *s == Side::Trt);
    }
    let trt_path = format!("/models/{}/embed", b.model);
    println!(
        "tei_route: POST {trt_path} on trt serve vs POST /embed on TEI; bodies {{\"inputs\": text}} and {{\"inputs\": [{k} texts]}}; order {}",
        slots.iter().map(|s| s.label()).collect::<Vec<_>>().join(",")
    );
    if let Some(t) = &b.tei {
        println!("tei: {} {}; ORT_DYLIB_PATH={}", t.binary.display(), t.settings.describe(), t.library.display());
    }
    let mut results = Results::new();
    let mut checked: BTreeMap<Side, Vec<Vec<f64>>> = BTreeMap::new();
    let mut rounds: BTreeMap<Side, usize> = BTreeMap::new();
    for side in slots {
        let round = {
            let r = rounds.entry(side).or_insert(0);
            *r += 1;
            *r
        };
        let (server, path) = match (side, &b.tei) {
            (Side::Trt, _) => {
                let flags: Vec<&str> = b.trt_flags.iter().map(String::as_str).collect();
                (Running::Trt(Server::start(b.trt, b.repo, &flags, Duration::from_secs(300))), trt_path.as_str())
            }
            (Side::Tei, Some(t)) => {
                (Running::Tei(Tei::start(&t.binary, b.model_dir, b.tei_work, &t.library, &t.settings, Duration::from_secs(300))), "/embed")
            }
            (Side::Tei, None) => unreachable!("TEI slots are dropped when TEI is not set"),
        };
        let addr = server.http().to_string();
        if round == 1 {
            checked.insert(side, embeddings(&addr, path, &singles[..CHECKED], |v| floats(&v[0])));
            if let (Some(a), Some(t), 2) = (checked.get(&Side::Trt), checked.get(&Side::Tei), checked.len()) {
                let min = min_cosine(a, t);
                println!("tei_route_embedding_check: min cosine {min:.6} over {CHECKED} texts (trt serve's {trt_path} vs TEI's /embed)");
            }
        }
        // Warm-up outside the measurement: both request shapes.
        load(&addr, path, &singles, 4, 64, Duration::from_secs(30));
        load(&addr, path, &batches, 4, 16, Duration::from_secs(30));
        for (texts, bodies, requests) in [(1, &singles, b.requests), (k, &batches, b.batch_requests)] {
            for &c in b.levels {
                if !b.warm_each.is_zero() {
                    load(&addr, path, bodies, c, requests, b.warm_each);
                }
                let label = if texts == 1 { format!("{}#{round}", side.label()) } else { format!("{}#{round} x{texts}", side.label()) };
                results.insert((texts, c, side, round), measure(&label, &addr, path, bodies, c, requests, b.limit));
            }
        }
        // Stopped before the next slot's server starts: they never share the machine.
        server.stop();
    }
    summarize(&results, b.levels, k);
}

fn summarize(results: &Results, levels: &[usize], k: usize) {
    let ms = |d: Duration| format!("{:.2}", d.as_secs_f64() * 1e3);
    let failed: usize = results.values().map(|m| m.failed).sum();
    println!("tei_route_failed_requests: {failed}");
    for texts in [1, k] {
        let suffix = if texts == 1 { String::new() } else { format!("_x{texts}") };
        for &c in levels {
            let of = |side| results.iter().filter(move |((t, cc, s, _), _)| *t == texts && *cc == c && *s == side).map(|(_, m)| m);
            let (trt, tei): (Vec<&Measured>, Vec<&Measured>) = (of(Side::Trt).collect(), of(Side::Tei).collect());
            let p99s = |v: &[&Measured]| v.iter().map(|m| ms(m.p99)).collect::<Vec<_>>().join(" / ");
            let rps = |v: &[&Measured]| v.iter().map(|m| format!("{:.1}", m.rps)).collect::<Vec<_>>().join(" / ");
            if texts > 1 {
                let per_s = |v: &[&Measured]| v.iter().map(|m| format!("{:.0}", m.rps * texts as f64)).collect::<Vec<_>>().join(" / ");
                let tei_part = if tei.is_empty() { String::new() } else { format!("  tei {}", per_s(&tei)) };
                println!("embeddings_per_s{suffix}_c{c}: trt serve {}{tei_part}", per_s(&trt));
            }
            if tei.is_empty() {
                println!("tei_route{suffix}_c{c}: trt serve requests/s {}  p99 {} ms", rps(&trt), p99s(&trt));
                continue;
            }
            let rounds: Vec<String> = trt.iter().zip(&tei).map(|(a, t)| format!("{:.2}", a.rps / t.rps.max(1e-9))).collect();
            let n = trt.len().min(tei.len());
            let sum = |v: &[&Measured]| v[..n].iter().map(|m| m.rps).sum::<f64>();
            println!(
                "ratio_trt_serve_tei_route_vs_tei{suffix}_c{c}: {:.2} (rounds {}; requests/s trt serve {}, tei {})",
                sum(&trt) / sum(&tei).max(1e-9),
                rounds.join(" / "),
                rps(&trt),
                rps(&tei)
            );
            println!("p99{suffix}_c{c}: trt serve {} ms  tei {} ms", p99s(&trt), p99s(&tei));
        }
    }
}
