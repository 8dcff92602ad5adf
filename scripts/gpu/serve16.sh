#!/usr/bin/env bash
# trt serve's load benchmark (scripts/gpu/serve.sh) and the embed bench again,
# on the GPU host's 16 cores, in one call that fits 64 MiB: the FP32 model is
# rebuilt there from .gpu/minilm-f16 (scripts/gpu/pack_weights_f16.py) and both
# benches use the host's own ONNX Runtime (its Python's onnxruntime 1.30, which
# this build accepts), so no library travels.
#
# Pack here: .gpu/serve16/{trt,serve_load,embed_cpu}.xz (stripped release
# binaries: cargo build --release -p trt-cli --bin trt; cargo bench -p trt-cli
# --bench serve_load --no-run; cargo bench -p trt-nlp --bench embed_cpu --no-run).
# Carry .gpu/serve16 and .gpu/minilm-f16; run: bash scripts/gpu/serve16.sh
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
: "${OUT:?set OUT to the folder the logs go to}"
WORK=/tmp/trt-serve16
source "$ROOT/scripts/gpu/lib.sh"
mkdir -p .gpu/minilm "$OUT"
bins=(trt serve_load)
[ "${SERVE16_EMBED:-1}" = 0 ] || bins+=(embed_cpu)
unpack .gpu/serve16 "$WORK" "${bins[@]}"
ln -sf "$WORK/trt" .gpu/trt
ln -sf "$WORK/serve_load" .gpu/serve_load
default_model "$WORK/deps/models/minilm" .gpu/minilm-f16
for f in model.onnx tokenizer.json config.json; do ln -sf "$WORK/deps/models/minilm/$f" .gpu/minilm/$f; done
ORT_LIB=$(host_ort_lib)
# serve.sh checks for the 1.31 library and exports ORT_DYLIB_PATH to it; point it at the host's.
ln -sf "$ORT_LIB" .gpu/libonnxruntime.so.1.31.1
echo "# $(date -u +%FT%TZ) $(nproc) cores; ONNX Runtime library: $ORT_LIB (linked as .gpu/libonnxruntime.so.1.31.1 for serve.sh)" > "$OUT/serve16.txt"
SERVE_BENCH_SECONDS=${SERVE_BENCH_SECONDS:-12} bash scripts/gpu/serve.sh
# SERVE16_EMBED=0: the serve benchmark only.
[ "${SERVE16_EMBED:-1}" = 0 ] && exit 0
embed16 "$WORK/embed_cpu" "$WORK/deps" "$ORT_LIB"
