#!/usr/bin/env bash
# Packs what scripts/gpu/ort-cuda.sh carries to the GPU host, here: the
# release test and bench binaries (stripped, xz'd) into .gpu/c{2,3,4}/bins,
# after building them. The rest of .gpu/c1..c4 (ort-a, minilm-f16, ort-b,
# rtx.part00/01, peer-wheels, the probe model) is made once (see ort-cuda.sh's header).
set -euo pipefail
cd "$(dirname "$0")/../.."
# ONLY=serve: just trt and serve_load (.gpu/c4/bins), for the serving steps
# (ort-cuda.sh 2 with SKIP_TESTS=1, then 5 or 4 with SKIP_SANITIZER=1).
TARGET=${CARGO_TARGET_DIR:-target}
newest() { ls -t "$TARGET"/release/deps/"$1"-* | grep -vE '\.(d|rlib|rmeta)$' | head -n 1; }
# The test binaries are the crates' (tests/suites/): trt_nlp holds tests/nlp_cuda.rs
# and tests/nlp_hf.rs, and the scripts on the host pick a file's tests by its module
# (`trt_nlp nlp_cuda::`).
# ONLY=hf: trt-nlp's tests, for the HuggingFace import's CUDA test (.gpu/hf/bins), and
# all-MiniLM-L6-v2's folder with FP16-stored weights (.gpu/hf/minilm-f16), trt and the
# serve_load, ort_cuda and hf_embed benches, for scripts/gpu/hf.sh. The TensorRT commands are not
# needed on the host (TensorRT-RTX refuses its GPU), so trt is built with its default
# features, ONNX Runtime only.
if [ "${ONLY:-}" = hf ]; then
  cargo build --release -p trt-nlp --test trt_nlp -p trt-cli --bin trt
  cargo bench --no-run -p trt-cli --bench serve_load
  cargo bench --no-run -p trt-nlp --bench ort_cuda --bench hf_embed
  mkdir -p .gpu/hf/bins
  strip -o .gpu/hf/bins/trt_nlp "$(newest trt_nlp)" && xz -T2 -6 -f .gpu/hf/bins/trt_nlp
  strip -o .gpu/hf/bins/trt "$TARGET/release/trt" && xz -T2 -6 -f .gpu/hf/bins/trt
  strip -o .gpu/hf/bins/serve_load "$(newest serve_load)" && xz -T2 -6 -f .gpu/hf/bins/serve_load
  strip -o .gpu/hf/bins/ort_cuda "$(newest ort_cuda)" && xz -T2 -6 -f .gpu/hf/bins/ort_cuda
  strip -o .gpu/hf/bins/hf_embed "$(newest hf_embed)" && xz -T2 -6 -f .gpu/hf/bins/hf_embed
  [ -d .gpu/hf/minilm-f16 ] || .deps/venv/bin/python scripts/gpu/pack_weights_f16.py --weights .deps/minilm --out .gpu/hf/minilm-f16
  du -sh .gpu/hf/*
  exit 0
fi
if [ "${ONLY:-}" = serve ]; then
  cargo build --release -p trt-cli --bin trt --bench serve_load
else
  cargo build --release -p trt-cli --bin trt --bench serve_load \
    -p trt-nlp --test trt_nlp --bench ort_cuda --bench embed_cuda -p trt-onnx --test trt_onnx -p trt-serve --test trt_serve \
    -p trt-cuda --test trt_cuda
fi
# pack DEST NAME SRC [--strip-debug]: the last keeps the symbol table (for
# perf on the host: trt's own frames by name).
pack() {
  local dest=$1 name=$2 src=$3
  mkdir -p "$dest"
  strip ${4:-} -o "$dest/$name" "$src"
  xz -T2 -6 -f "$dest/$name"
}
if [ "${ONLY:-}" != serve ]; then
  for t in trt_cuda trt_onnx trt_nlp trt_serve; do pack .gpu/c2/bins "$t" "$(newest "$t")"; done
  for t in ort_cuda embed_cuda; do pack .gpu/c3/bins "$t" "$(newest "$t")"; done
fi
pack .gpu/c4/bins trt "$TARGET/release/trt" --strip-debug
pack .gpu/c4/bins serve_load "$(newest serve_load)"
du -sh .gpu/c*
