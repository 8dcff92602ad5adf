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
source "$ROOT/scripts/gpu/lib.sh"
unpack .gpu/batching "$WORK" embed_cpu
embed16 "$WORK/embed_cpu" "$WORK/deps" "$(host_ort_lib)"
