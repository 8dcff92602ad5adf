#!/usr/bin/env bash
# trt serve's loopback load benchmark (benches/serve_load.rs) on the GPU test
# host's 16 cores: single-text embedding requests at concurrency 1/8/32/128,
# dynamic batching against none, ONNX Runtime on the CPU. Runs prebuilt
# binaries from .gpu/ (the host has no Rust) and writes logs to $OUT.
#
# Build on the development machine, from the repository root:
#   cargo build --release -p trt-cli --bin trt
#   cargo bench -p trt-cli --bench serve_load --no-run 2>&1 | grep -o 'target/release/deps/serve_load-[0-9a-f]*'
#   mkdir -p .gpu/minilm
#   cp target/release/trt .gpu/trt
#   cp target/release/deps/serve_load-<hash> .gpu/serve_load
#   cp .deps/models/minilm/{model.onnx,tokenizer.json,config.json} .gpu/minilm/
#   cp .deps/lib/onnxruntime/libonnxruntime.so.1.31.1 .gpu/
# The host's Python has onnxruntime 1.30, whose library lacks API 31: the 1.31
# library travels in .gpu/ and ORT_DYLIB_PATH points at it.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
for f in .gpu/trt .gpu/serve_load .gpu/libonnxruntime.so.1.31.1 .gpu/minilm/model.onnx .gpu/minilm/tokenizer.json; do
  [ -e "$f" ] || { echo "serve.sh: $f is missing (see the build steps at the top of this script)" >&2; exit 1; }
done
export ORT_DYLIB_PATH=$ROOT/.gpu/libonnxruntime.so.1.31.1
export SERVE_BENCH_TRT=$ROOT/.gpu/trt
export SERVE_BENCH_MODEL_DIR=$ROOT/.gpu/minilm
export SERVE_BENCH_CONCURRENCY=${SERVE_BENCH_CONCURRENCY:-1,8,32,128}
export SERVE_BENCH_REQUESTS=${SERVE_BENCH_REQUESTS:-4000}
export SERVE_BENCH_SECONDS=${SERVE_BENCH_SECONDS:-20}
nproc >"$OUT/serve_cores.txt"
# Two layouts of the 16 cores: one session using them all, and 4 sessions of 4
# threads (batches run side by side). Each run is bounded by the bench itself;
# timeout is a last resort.
for layout in "1 0" "4 4"; do
  set -- $layout
  log="$OUT/serve_load_sessions$1_threads$2.log"
  echo "== sessions $1, intra threads $2 (0: per core) -> $log"
  SERVE_BENCH_INSTANCES=$1 SERVE_BENCH_THREADS=$2 timeout 900 .gpu/serve_load >"$log" 2>"$log.stderr" || echo "exit $? (see $log.stderr)"
  grep -E "requests/s|ratio_" "$log" || true
done
