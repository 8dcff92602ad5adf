#!/usr/bin/env bash
# The batching benchmarks on the GPU test host's 16 cores: ONNX Runtime CPU
# on the default model's shape (benches/batching_ort.rs) and the GPU-like
# simulated backend plus the scheduler's own cost (benches/batching_sim.rs).
# The host has no Rust: this runs prebuilt binaries from .gpu/batching/ and
# writes its logs to $OUT. Nothing here needs the GPU itself.
#
# Build and pack on the development machine (from the repository root):
#   cargo bench -p trt-nlp --bench batching_ort --bench batching_sim --no-run
#   mkdir -p .gpu/batching
#   for b in batching_ort batching_sim; do
#     xz -T2 -c "$(ls -t target/release/deps/$b-* | grep -v '\.d$' | head -1)" > .gpu/batching/$b.xz
#   done
#   # ONNX Runtime 1.31.1 (the host's Python has 1.30 only; the binaries ask for API 31):
#   xz -T2 -c .deps/lib/onnxruntime/libonnxruntime.so.1.31.1 > .gpu/batching/libonnxruntime.so.1.31.1.xz
#   # The model: all-MiniLM-L6-v2's weights stored as FP16 (45 MB; the FP32 ONNX file,
#   # 91 MB, does not fit one call's 64 MiB), rebuilt into the FP32 graph here:
#   .deps/venv/bin/python scripts/gpu/pack_weights_f16.py --weights .deps/minilm --out .gpu/minilm-f16
# Carry `.gpu/batching` and `.gpu/minilm-f16` (about 60 MB together) and run
#   bash scripts/gpu/batching.sh
# Logs: $OUT/batching_ort.log, $OUT/batching_sim.log, $OUT/make_model.log.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
: "${OUT:?set OUT to the folder the logs go to}"
PACK=.gpu/batching
WORK=${BATCHING_WORK:-/tmp/trt-batching}
mkdir -p "$WORK/deps/minilm" "$OUT"

source "$ROOT/scripts/gpu/lib.sh"
unpack "$PACK" "$WORK" batching_ort batching_sim
unxz_to "$PACK/libonnxruntime.so.1.31.1.xz" "$WORK/libonnxruntime.so.1.31.1"
export ORT_DYLIB_PATH="$WORK/libonnxruntime.so.1.31.1"

# Both sides of every comparison run this one file.
default_model "$WORK/deps/models/minilm" .gpu/minilm-f16
cp "$WORK/deps/models/minilm/tokenizer.json" "$WORK/deps/minilm/tokenizer.json"
export TRT_DEPS_DIR="$WORK/deps"

{
  echo "# $(date -u +%FT%TZ) $(nproc) cores; $(uname -r)"
  echo "# BATCHING_BENCH_SECONDS=${BATCHING_BENCH_SECONDS:-3} $WORK/batching_ort"
  "$WORK/batching_ort"
} > "$OUT/batching_ort.log" 2>&1
{
  echo "# $(date -u +%FT%TZ) $(nproc) cores"
  echo "# $WORK/batching_sim"
  "$WORK/batching_sim"
} > "$OUT/batching_sim.log" 2>&1
tail -n 3 "$OUT/batching_ort.log" "$OUT/batching_sim.log"
