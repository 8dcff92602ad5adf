#!/usr/bin/env bash
# trt serve against HuggingFace text-embeddings-inference (TEI) on the GPU
# test host's 16 cores: benches/serve_load.rs with SERVE_BENCH_TEI set, so
# one run measures trt serve (direct and batched), stops it, then TEI's
# router on the same model, the same texts and concurrencies (1/8/32/128),
# and prints ratio_trt_serve_vs_tei_c{C} and the p99s side by side. Two runs:
# trt serve with 1 session x 16 threads and with 4 sessions x 4 threads (TEI
# is the same in both: one ONNX Runtime session, one thread per core).
# Both servers use the host's ONNX Runtime (its Python's onnxruntime 1.30);
# the FP32 model is rebuilt there from .gpu/minilm-f16, as serve16.sh does.
#
# Pack here, into .gpu/tei/ (xz'd stripped binaries; how TEI is built:
# docs/measurements/tei-2026-12-01/README.md):
#   cargo build --release -p trt-cli --bin trt
#   cargo bench -p trt-cli --bench serve_load --no-run   # prints target/release/deps/serve_load-<hash>
#   strip -o /tmp/x BIN && xz -9e -T1 -c /tmp/x > .gpu/tei/NAME.xz    # NAME: trt, serve_load, text-embeddings-router
#   git rev-parse --short HEAD > .gpu/tei/COMMIT
# Carry .gpu/tei and .gpu/minilm-f16; run: bash scripts/gpu/tei16.sh
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
: "${OUT:?set OUT to the folder the logs go to}"
WORK=/tmp/trt-tei16
source "$ROOT/scripts/gpu/lib.sh"
mkdir -p "$OUT"
unpack .gpu/tei "$WORK" trt serve_load text-embeddings-router || exit 1
default_model "$WORK/deps/models/minilm" .gpu/minilm-f16 || exit 1
ORT_LIB=$(host_ort_lib)
{
  echo "# $(date -u +%FT%TZ) $(nproc) cores; binaries of $(cat .gpu/tei/COMMIT 2>/dev/null || echo '?'); ORT_DYLIB_PATH=$ORT_LIB"
  echo "# TEI: $("$WORK/text-embeddings-router" --version 2>&1)"
  ldd "$WORK/text-embeddings-router" | grep -E "not found|ssl" || true
} > "$OUT/tei16.txt"
cat "$OUT/tei16.txt"
export ORT_DYLIB_PATH=$ORT_LIB TRT_DEPS_DIR=$WORK/deps
export SERVE_BENCH_TRT=$WORK/trt SERVE_BENCH_TEI=$WORK/text-embeddings-router
export SERVE_BENCH_MODEL_DIR=$WORK/deps/models/minilm
export SERVE_BENCH_CONCURRENCY=${SERVE_BENCH_CONCURRENCY:-1,8,32,128}
export SERVE_BENCH_REQUESTS=${SERVE_BENCH_REQUESTS:-4000}
# 3 servers x 4 levels x 10 s, twice, plus starts: about 5 minutes of one call.
export SERVE_BENCH_SECONDS=${SERVE_BENCH_SECONDS:-10}
status=0
for layout in "1 0" "4 4"; do
  set -- $layout
  log="$OUT/tei_sessions$1_threads$2.log"
  echo "== trt serve: sessions $1, intra threads $2 (0: per core); then TEI -> $log"
  SERVE_BENCH_INSTANCES=$1 SERVE_BENCH_THREADS=$2 timeout 280 "$WORK/serve_load" >"$log" 2>"$log.stderr" || { echo "exit $? (see $log.stderr)"; status=1; }
  grep -E "^tei|requests/s|ratio_|p99_c" "$log" || true
done
exit $status
