#!/usr/bin/env bash
# ONNX Runtime on CUDA on the GPU test host, in three calls made back to back
# (the host's /tmp lasts only while it stays warm): `ort-cuda.sh 1|2|3`.
#
# What travels (64 MiB a call), packed here beforehand:
#   call 1: .gpu/minilm-f16 (scripts/gpu/pack_weights_f16.py) and .gpu/ort-a;
#   call 2: .gpu/ort-b and .gpu/bins with the onnx_cuda and nlp_cuda test
#           binaries and the ort_cuda bench (xz'd, stripped, release);
#   call 3: .gpu/bins with trt and serve_load.
# ort-a + ort-b is a tar.xz of the PyPI onnxruntime-gpu 1.31.1 wheel's
# `onnxruntime` package without the TensorRT provider library; its CUDA
# provider library has the cubins of GPUs other than sm_90 zeroed (the H200
# loads only the sm_90 ones) so that it compresses to two transfers. SHA-256
# of the whole: ORT_SHA256 below.
#
# 1: builds the default model (FP32 and FP16, from the FP16-stored weights) and
#    records the GPU; 2: reassembles ONNX Runtime, checks it, runs the GPU
#    tests, the model-only bench (Rust vs Python onnxruntime-gpu) and the
#    CUDA tests under compute-sanitizer; 3: serve_load on the GPU. Logs under $OUT.
# The script runs from scripts/gpu/ or from a copy in .gpu/.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case "$HERE" in */.gpu) ROOT=$(dirname "$HERE") ;; *) ROOT=$(cd "$HERE/../.." && pwd) ;; esac
cd "$ROOT"
: "${OUT:?set OUT to the folder the logs go to}"
source "$ROOT/scripts/gpu/lib.sh"
ORT_SHA256=239e9e6ff745be51883653641e997b1f90f4ed2cf5690073c001a654a22a9c0d
W=/tmp/trt-ort-cuda
DEPS=$W/deps
SITE=$W/site
mkdir -p "$W" "$OUT"
export TRT_DEPS_DIR=$DEPS
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$SITE/onnxruntime/capi${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ORT_DYLIB_PATH=$SITE/onnxruntime/capi/libonnxruntime.so.1.31.1
export PYTHONPATH=$SITE
export PYTHONUNBUFFERED=1
export RUST_LOG=${RUST_LOG:-info}
PYBENCH=$ROOT/benches/ort_cuda_python.py
[ -f "$PYBENCH" ] || PYBENCH=$ROOT/.gpu/ort_cuda_python.py

case "${1:?step 1, 2 or 3}" in
1)
  cp .gpu/ort-a "$W/ort-a"
  { date -u +%FT%TZ; nproc; nvidia-smi; } > "$OUT/host.txt" 2>&1
  default_model "$DEPS/models/minilm" || exit 1
  ls -la "$DEPS/models/minilm" | tee "$OUT/model.txt"
  ;;
2)
  [ -f "$W/ort-a" ] || { echo "ort-cuda.sh 2: $W/ort-a is missing (call 1 first, on the same warm machine)" >&2; exit 1; }
  cat "$W/ort-a" .gpu/ort-b > "$W/ort.tar.xz"
  echo "$ORT_SHA256  $W/ort.tar.xz" | sha256sum -c || exit 1
  mkdir -p "$SITE"
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$W/ort.tar.xz" "$SITE" || exit 1
  python3 -c 'import onnxruntime as o; print(o.__version__, o.__file__, o.get_available_providers())' | tee "$OUT/python_ort.txt"
  bins=(onnx_cuda nlp_cuda ort_cuda)
  unpack .gpu/bins "$W/bin" "${bins[@]}" || exit 1
  {
    echo "# $(date -u +%FT%TZ) ORT_DYLIB_PATH=$ORT_DYLIB_PATH"
    "$W/bin/onnx_cuda" --include-ignored --nocapture --test-threads 1
    "$W/bin/nlp_cuda" --include-ignored --nocapture --test-threads 1
  } > "$OUT/tests.log" 2>&1
  grep -E "^test |test result|max abs diff|rebinds|CUDA graphs vs|panicked" "$OUT/tests.log"
  ORT_CUDA_BENCH_SCRIPT=$PYBENCH BENCH_PYTHON=python3 timeout 300 "$W/bin/ort_cuda" > "$OUT/ort_cuda.log" 2>"$OUT/ort_cuda.stderr"
  tail -n 32 "$OUT/ort_cuda.log"
  # compute-sanitizer memcheck (leaks too) over the backend's CUDA tests, bounded.
  SAN=/usr/local/cuda/bin/compute-sanitizer
  timeout 200 "$SAN" --tool memcheck --leak-check full --error-exitcode 9 "$W/bin/nlp_cuda" --include-ignored --test-threads 1 \
    cuda_fp32_matches_the_cpu bound_buffers > "$OUT/sanitizer.log" 2>&1
  echo "compute-sanitizer exit $?"
  grep -E "ERROR SUMMARY|LEAK SUMMARY|test result" "$OUT/sanitizer.log" | tail -n 5
  ;;
3)
  unpack .gpu/bins "$W/bin" trt serve_load || exit 1
  # serve_load on the GPU: FP16 model folder, single-text requests.
  M16=$W/minilm16
  mkdir -p "$M16"
  ln -sf "$DEPS/models/minilm/model_fp16.onnx" "$M16/model.onnx"
  for f in tokenizer.json config.json; do ln -sf "$DEPS/models/minilm/$f" "$M16/$f"; done
  export SERVE_BENCH_TRT=$W/bin/trt SERVE_BENCH_MODEL_DIR=$M16
  export SERVE_BENCH_CONCURRENCY=${SERVE_BENCH_CONCURRENCY:-1,512} SERVE_BENCH_REQUESTS=${SERVE_BENCH_REQUESTS:-400000}
  export SERVE_BENCH_SECONDS=${SERVE_BENCH_SECONDS:-6} SERVE_BENCH_THREADS=1
  for layout in "1 32" "4 128"; do
    set -- $layout
    log="$OUT/serve_load_gpu_sessions$1_batch$2.log"
    SERVE_BENCH_INSTANCES=$1 SERVE_BENCH_MAX_BATCH=$2 timeout 200 "$W/bin/serve_load" > "$log" 2> "$log.stderr" || echo "serve_load exit $? ($log.stderr)"
    echo "== sessions $1, max_batch $2"
    grep -E "requests/s|ratio_" "$log" || tail -n 5 "$log.stderr"
  done
  nvidia-smi --query-gpu=memory.used,memory.total --format=csv >> "$OUT/host.txt" 2>&1
  ;;
esac
