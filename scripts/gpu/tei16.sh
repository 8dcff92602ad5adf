#!/usr/bin/env bash
# TEI's /embed route on trt serve against HuggingFace text-embeddings-inference
# (TEI) 1.9.3's own /embed, on the GPU test host's 16 cores (CPU ONNX Runtime
# on both sides): benches/serve_load.rs with SERVE_BENCH_ROUTE=tei. The same
# bodies go to both servers ({"inputs": text}, then {"inputs": [32 texts]}),
# through the same client; the two servers take turns, one at a time, in the
# order trt, TEI, TEI, trt (a fresh process per slot, both at the same mean
# time in the run), and each run prints ratio_trt_serve_tei_route_vs_tei_c{C}
# (and _x32_c{C}) per round and summed, with both servers' p99s.
# trt serve gets its best CPU layout per concurrency (docs/measurements/
# tei-2026-12-01): 1 session x 16 threads, no batching queue, at 1 client;
# 4 sessions x 4 threads with dynamic batching at 8, 32 and 128 clients.
# TEI is the same in both runs (one ONNX Runtime session, a thread per core).
# Both servers use the host's ONNX Runtime (its Python's onnxruntime); the
# FP32 model is rebuilt there from .gpu/minilm-f16, as serve16.sh does.
# 4 slots x (1 + 3 levels) x 2 passes x 8 s, plus starts: about 6 minutes.
#
# What it unpacks (xz'd stripped binaries), each from the first folder that has it:
#   text-embeddings-router.xz   .gpu/tei (how TEI is built: docs/measurements/tei-2026-12-01/README.md;
#                               strip -o /tmp/ter BIN && xz -9e -T1 -c /tmp/ter > .gpu/tei/text-embeddings-router.xz)
#   trt.xz, serve_load.xz       .gpu/tei, else .gpu/c4/bins (what scripts/gpu/pack.sh writes)
#   the FP16-stored weights     .gpu/minilm-f16, else .gpu/c1/minilm-f16
# Carry .gpu/tei, .gpu/c4/bins and .gpu/c1/minilm-f16 (about 60 MB; or the
# .gpu/tei + .gpu/minilm-f16 layout); run: bash scripts/gpu/tei16.sh
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
: "${OUT:?set OUT to the folder the logs go to}"
WORK=/tmp/trt-tei16
source "$ROOT/scripts/gpu/lib.sh"
mkdir -p "$OUT"
# first_of PATH...: the first that exists (else the first, so the error names it).
first_of() {
  local p
  for p in "$@"; do [ -e "$p" ] && { echo "$p"; return; }; done
  echo "$1"
}
unpack .gpu/tei "$WORK" text-embeddings-router || exit 1
for b in trt serve_load; do
  unpack "$(dirname "$(first_of .gpu/tei/$b.xz .gpu/c4/bins/$b.xz)")" "$WORK" $b || exit 1
done
default_model "$WORK/deps/models/minilm" "$(first_of .gpu/minilm-f16 .gpu/c1/minilm-f16)" || exit 1
ORT_LIB=$(host_ort_lib)
{
  echo "# $(date -u +%FT%TZ) $(nproc) cores; trt and serve_load of $(cat "$(first_of .gpu/tei/COMMIT .gpu/c4/bins/COMMIT)" 2>/dev/null || echo '?'); ORT_DYLIB_PATH=$ORT_LIB"
  echo "# TEI: $("$WORK/text-embeddings-router" --version 2>&1)"
  ldd "$WORK/text-embeddings-router" | grep -E "not found|ssl" || true
} > "$OUT/tei16.txt"
cat "$OUT/tei16.txt"
export ORT_DYLIB_PATH=$ORT_LIB TRT_DEPS_DIR=$WORK/deps
export SERVE_BENCH_TRT=$WORK/trt SERVE_BENCH_TEI=$WORK/text-embeddings-router
export SERVE_BENCH_MODEL_DIR=$WORK/deps/models/minilm
export SERVE_BENCH_ROUTE=tei SERVE_BENCH_ROUTE_BATCH=32 SERVE_BENCH_ROUTE_ORDER=trt,tei,tei,trt
export SERVE_BENCH_REQUESTS=${SERVE_BENCH_REQUESTS:-8000}
export SERVE_BENCH_SECONDS=${SERVE_BENCH_SECONDS:-8}
status=0
# sessions, intra threads (0: per core), trt serve's model, concurrencies, time limit (s)
for run in "1 0 direct 1 170" "4 4 batched 8,32,128 330"; do
  set -- $run
  log="$OUT/tei_route_sessions$1_threads$2_$3.log"
  echo "== trt serve ($3): sessions $1, intra threads $2; clients $4; with TEI, interleaved -> $log"
  SERVE_BENCH_INSTANCES=$1 SERVE_BENCH_THREADS=$2 SERVE_BENCH_ROUTE_MODEL=$3 SERVE_BENCH_CONCURRENCY=$4 \
    timeout "$5" "$WORK/serve_load" >"$log" 2>"$log.stderr" || { echo "exit $? (see $log.stderr)"; status=1; }
  grep -E "^(tei|trt#|serve_load)|ratio_|p99_|embeddings_per_s" "$log" || true
done
exit $status
