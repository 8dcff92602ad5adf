#!/usr/bin/env bash
# The CPU benchmarks on the GPU test host's 16 cores, in one call: the
# batching benchmarks (scripts/gpu/batching.sh, which also rebuilds the FP32
# default model from .gpu/minilm-f16) and the whole CPU path against Python
# (benches/embed_cpu.rs). The embed bench runs both sides on the host's own
# ONNX Runtime build (its Python's onnxruntime 1.30: Rust loads that wheel's
# library), so the ratio compares the code around the same library.
#
# Build and pack here: scripts/gpu/batching.sh's steps, plus
#   xz -T2 -c "$(ls -t target/release/deps/embed_cpu-* | grep -v '\.d$' | head -1)" > .gpu/batching/embed_cpu.xz
# Carry .gpu/batching and .gpu/minilm-f16; run: bash scripts/gpu/bench_cpu16.sh
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
: "${OUT:?set OUT to the folder the logs go to}"
WORK=${BATCHING_WORK:-/tmp/trt-batching}
bash scripts/gpu/batching.sh
python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' .gpu/batching/embed_cpu.xz "$WORK/embed_cpu"
chmod +x "$WORK/embed_cpu"
ORT_LIB=$(python3 -c 'import glob, os, onnxruntime; print(sorted(glob.glob(os.path.join(os.path.dirname(onnxruntime.__file__), "capi", "libonnxruntime.so.1.*")))[-1])')
{
  echo "# $(date -u +%FT%TZ) $(nproc) cores; ORT_DYLIB_PATH=$ORT_LIB; BENCH_PYTHON=$(command -v python3)"
  TRT_DEPS_DIR="$WORK/deps" ORT_DYLIB_PATH="$ORT_LIB" BENCH_PYTHON=$(command -v python3) "$WORK/embed_cpu"
  echo "# the same with 2 threads"
  TRT_DEPS_DIR="$WORK/deps" ORT_DYLIB_PATH="$ORT_LIB" BENCH_PYTHON=$(command -v python3) EMBED_BENCH_THREADS=2 EMBED_BENCH_TEXTS=400 "$WORK/embed_cpu"
} > "$OUT/embed_cpu.log" 2>&1
tail -n 4 "$OUT/embed_cpu.log"
