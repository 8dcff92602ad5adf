#!/usr/bin/env bash
# ONNX Runtime on CUDA on the GPU test host, in calls made back to back
# (the host's /tmp lasts only while it stays warm): `ort-cuda.sh 0|1|2|3|4|5`,
# each call carrying `.gpu/c<N>` (64 MiB a call with the working tree;
# `scripts/gpu/make-carry.sh` makes the data, `scripts/gpu/pack.sh` the
# binaries).
#
#   0 (.gpu/c0: ort-a): keeps the first part of ONNX Runtime in /tmp.
#   1 (.gpu/c1: minilm-f16): records the GPU, builds the default model
#     (FP32 and FP16, from the FP16-stored weights: the FP32 file does not fit
#     a call) and keeps the weights for PyTorch.
#   2 (.gpu/c2: ort-b, bins with the CUDA tests): reassembles ONNX Runtime
#     (SHA-256 checked) and runs the CUDA tests (tests/cuda.rs, onnx_cuda.rs,
#     nlp_cuda.rs, serve_gpu.rs: modules of the crates' test binaries); SANITIZE=1: then compute-sanitizer over the staging tests.
#   3 (.gpu/c3: bins with the model benches, rtx.part00): the model-only bench
#     twice (Rust vs Python onnxruntime-gpu) and the end-to-end embedding bench
#     (vs Python onnxruntime-gpu and PyTorch FP16 eager). With an
#     ort_cuda_old.xz beside ort_cuda.xz (another build), each pass runs both
#     builds one after the other.
#   4 (.gpu/c4: bins with trt and serve_load, peer-wheels, rtx.part01, the
#     probe model external_weights.onnx/.bin): scripts/gpu-conformance
#     --check-only with the TensorRT-RTX libraries of .deps/lib (a tar.xz in
#     two parts, SHA-256 RTX_SHA256): whether engines execute on this GPU; then
#     trt serve on the GPU under serve_load in several layouts, the FastAPI +
#     PyTorch peer under the same load, and compute-sanitizer over the
#     backend's CUDA tests (SKIP_SANITIZER=1: not).
#   5 (.gpu/c4/bins: trt and serve_load; after 1 and 2, SKIP_TESTS=1 allowed
#     there): where a loaded server's time goes, per layout (SERVE_LAYOUTS):
#     per-thread CPU, GPU utilisation, the server's metrics, perf if present.
#
# ort-a + ort-b is a tar.xz of the PyPI onnxruntime-gpu 1.31.1 wheel's
# `onnxruntime` package without the TensorRT provider library; its CUDA
# provider library has the cubins of GPUs other than sm_90 zeroed (the H200
# loads only the sm_90 ones) so that it compresses to two transfers; its
# SHA-256 travels in .gpu/c2/ort.sha256 (make-carry.sh writes both).
# Logs under $OUT. The script runs from scripts/gpu/ or from a copy in .gpu/.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case "$HERE" in */.gpu) ROOT=$(dirname "$HERE") ;; *) ROOT=$(cd "$HERE/../.." && pwd) ;; esac
cd "$ROOT"
: "${OUT:?set OUT to the folder the logs go to}"
source "$ROOT/scripts/gpu/lib.sh"
RTX_SHA256=92c2b413c631fca28c73cb521e2742a4b5276cdc7e94e3a5b0de02746a4a3eb9
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
export BENCH_PYTHON=python3

# compute-sanitizer memcheck (leaks too) over the backend's CUDA tests and
# the staging buffers' test, bounded, into $OUT/sanitizer.log.
sanitize() {
  {
    timeout 150 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 "$W/bin/trt_nlp" \
      --include-ignored --test-threads 1 nlp_cuda::cuda_fp32_matches_the_cpu nlp_cuda::cuda_graphs_replay \
      nlp_cuda::a_batch_past_the_memory_limit nlp_cuda::row_buckets nlp_cuda::the_fused_fp16
    echo "compute-sanitizer trt_nlp (nlp_cuda) exit $?"
    [ -x "$W/bin/trt_cuda" ] && timeout 60 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 "$W/bin/trt_cuda" \
      --include-ignored --test-threads 1 cuda::staged_buffers
    echo "compute-sanitizer trt_cuda exit $?"
  } > "$OUT/sanitizer.log" 2>&1
  grep -E "ERROR SUMMARY|LEAK SUMMARY|test result|exit" "$OUT/sanitizer.log"
}

case "${1:?step 0, 1, 2, 3, 4 or 5}" in
0)
  cp .gpu/c0/ort-a "$W/ort-a" && ls -la "$W/ort-a"
  ;;
1)
  rm -rf "$W/weights" && cp -r .gpu/c1/minilm-f16 "$W/weights"
  { date -u +%FT%TZ; nproc; free -g; nvidia-smi; python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
    for t in perf nsys gdb py-spy curl; do echo "$t: $(command -v $t || echo 'not found')"; done; ls /usr/local/cuda/bin; } > "$OUT/host.txt" 2>&1
  default_model "$DEPS/models/minilm" "$W/weights" || exit 1
  ls -la "$DEPS/models/minilm" | tee "$OUT/model.txt"
  ;;
2)
  [ -f "$W/ort-a" ] || { echo "ort-cuda.sh 2: $W/ort-a is missing (call 0 first, on the same warm machine)" >&2; exit 1; }
  # SKIP_TESTS=1: only reassemble ONNX Runtime (the tests then run in no call).
  cat "$W/ort-a" .gpu/c2/ort-b > "$W/ort.tar.xz"
  (cd "$W" && sha256sum -c "$ROOT/.gpu/c2/ort.sha256") || exit 1
  mkdir -p "$SITE"
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$W/ort.tar.xz" "$SITE" || exit 1
  python3 -c 'import onnxruntime as o; print(o.__version__, o.__file__, o.get_available_providers())' | tee "$OUT/python_ort.txt"
  [ "${SKIP_TESTS:-0}" = 1 ] && { echo "tests skipped (SKIP_TESTS=1)"; exit 0; }
  unpack .gpu/c2/bins "$W/bin" trt_cuda trt_onnx trt_nlp trt_serve || exit 1
  {
    echo "# $(date -u +%FT%TZ) ORT_DYLIB_PATH=$ORT_DYLIB_PATH"
    "$W/bin/trt_cuda" --include-ignored --nocapture --test-threads 1 cuda::
    "$W/bin/trt_onnx" --include-ignored --nocapture --test-threads 1 onnx_cuda::
    "$W/bin/trt_nlp" --include-ignored --nocapture --test-threads 1 nlp_cuda::
    "$W/bin/trt_serve" --include-ignored --nocapture --test-threads 1 serve_gpu::
  } > "$OUT/tests.log" 2>&1
  grep -E "^test |test result|max abs diff|a 256 x 512|CUDA graphs vs|panicked" "$OUT/tests.log"
  if [ "${SANITIZE:-0}" = 1 ]; then sanitize; fi
  ;;
5)
  # Where a loaded server's time goes: serve_load at its concurrencies (512
  # by default) per layout, and meanwhile, on the running server, the CPU of
  # each thread (scripts/gpu/threads.py), the GPU's utilisation every 200 ms,
  # the server's own /metrics (NVML's nv_gpu_* lines among them) and, where
  # the host has perf, a call-graph profile of the server (trt is packed with
  # its symbol table for that).
  [ -f "$ORT_DYLIB_PATH" ] || { echo "ort-cuda.sh 5: call 2 first, on the same warm machine" >&2; exit 1; }
  unpack .gpu/c4/bins "$W/bin" trt serve_load || exit 1
  # Another load generator build to set beside it (a layout's BIN=serve_load_old).
  [ -f .gpu/c4/bins/serve_load_old.xz ] && unpack .gpu/c4/bins "$W/bin" serve_load_old
  serve_models "$W" "$DEPS/models/minilm"
  M16=$W/minilm16 M16F=$W/minilm16f
  export SERVE_BENCH_TRT=$W/bin/trt SERVE_BENCH_MODEL_DIR=$M16 SERVE_BENCH_KIND=KIND_GPU
  export SERVE_BENCH_CONCURRENCY=${SERVE_BENCH_CONCURRENCY:-512} SERVE_BENCH_REQUESTS=${SERVE_BENCH_REQUESTS:-2000000}
  # The direct model's levels only take time here (one run at a time per session).
  export SERVE_BENCH_MODELS=${SERVE_BENCH_MODELS:-batched}
  export SERVE_BENCH_SECONDS=${SERVE_BENCH_SECONDS:-10} SERVE_BENCH_THREADS=1 SERVE_BENCH_WARMUP_SECS=${SERVE_BENCH_WARMUP_SECS:-2}
  # trt bench on CUDA: JSON reports, and --compare of one against another
  # (exit 3 past --max-regression: graphs off judged against graphs on fails).
  {
    for args in "--batch 1" "--batch 1 --graphs" "--batch 32" "--batch 32 --graphs"; do
      name=$(echo "$args" | tr -d ' -')
      "$W/bin/trt" bench "$M16/model.onnx" --backend onnxruntime --device cuda:0 $args --seq 128 --json > "$OUT/bench_$name.json"
      echo "trt bench $args: exit $?; $(head -c 400 "$OUT/bench_$name.json" | tr '\n' ' ')"
    done
    "$W/bin/trt" bench "$M16/model.onnx" --backend onnxruntime --device cuda:0 --batch 1 --seq 128 --compare "$OUT/bench_batch1graphs.json" --max-regression 10
    echo "trt bench --batch 1 (no graphs) --compare the graphs run --max-regression 10: exit $?"
    "$W/bin/trt" bench "$M16/model.onnx" --backend onnxruntime --device cuda:0 --batch 1 --seq 128 --graphs --compare "$OUT/bench_batch1.json" --max-regression 10
    echo "trt bench --batch 1 --graphs --compare the no-graphs run --max-regression 10: exit $?"
    # The fused model at the same shapes, each judged against the plain one (exit 3: slower by over 10%).
    for args in "--batch 1" "--batch 1 --graphs" "--batch 32" "--batch 128" "--batch 128 --graphs"; do
      name=$(echo "$args" | tr -d ' -')
      [ -f "$OUT/bench_$name.json" ] || "$W/bin/trt" bench "$M16/model.onnx" --backend onnxruntime --device cuda:0 $args --seq 128 --json > "$OUT/bench_$name.json"
      "$W/bin/trt" bench "$M16F/model.onnx" --backend onnxruntime --device cuda:0 $args --seq 128 --compare "$OUT/bench_$name.json" --max-regression 10
      echo "trt bench fused $args vs plain: exit $?"
    done
  } > "$OUT/bench_cuda.log" 2>&1
  grep -E "exit|compare" "$OUT/bench_cuda.log"
  IFS=';' read -r -a layouts <<< "${SERVE_LAYOUTS:-4 128 16}"
  for layout in "${layouts[@]}"; do
    set -- $layout
    tag="sessions$1_batch$2_graphs$3"
    log="$OUT/profile_$tag.log"
    extra=${4:-SERVE_BENCH_NOTE=}
    extra=${extra//\~/ }
    # BIN=NAME: this layout's load comes from $W/bin/NAME.
    bin=serve_load
    case $extra in BIN=*) bin=${extra#BIN=}; extra=SERVE_BENCH_NOTE= ;; esac
    # Layouts that differ only in the setting keep their logs apart.
    [ -n "${4:-}" ] && tag="${tag}_$(settings_tag "$4")"
    log="$OUT/profile_$tag.log"
    # Several settings: NAME=V,NAME=V.
    IFS=',' read -r -a extras <<< "$extra"
    env SERVE_BENCH_INSTANCES=$1 SERVE_BENCH_MAX_BATCH=$2 SERVE_BENCH_GRAPHS=$3 "${extras[@]}" \
      timeout 170 "$W/bin/$bin" > "$log" 2> "$log.stderr" &
    load=$!
    pid=""
    for _ in $(seq 1 100); do pid=$(pgrep -f "$W/bin/trt serve" | head -n 1); [ -n "$pid" ] && break; sleep 0.2; done
    [ -n "$pid" ] || { echo "no trt serve process"; wait $load; continue; }
    # Sampled during the batched model's last level: after the direct model's
    # levels (when measured) and the batched model's levels before it.
    levels=$(echo "$SERVE_BENCH_CONCURRENCY" | tr ',' '\n' | grep -c .)
    case $SERVE_BENCH_MODELS in batched) before=0 ;; *) before=$levels ;; esac
    while [ "$(grep -c "^direct .*c=" "$log" 2>/dev/null)" -lt "$before" ]; do kill -0 $load 2>/dev/null || break; sleep 0.2; done
    while [ "$(grep -c "^batched .*c=" "$log" 2>/dev/null)" -lt $((levels - 1)) ]; do kill -0 $load 2>/dev/null || break; sleep 0.2; done
    while ! grep -q "^serve_load: config" "$log" 2>/dev/null; do kill -0 $load 2>/dev/null || break; sleep 0.2; done
    sleep $((SERVE_BENCH_WARMUP_SECS + 2))
    nvidia-smi --query-gpu=timestamp,utilization.gpu,utilization.memory,memory.used --format=csv -lms 200 > "$OUT/profile_${tag}_gpu.csv" 2>&1 &
    smi=$!
    python3 scripts/gpu/threads.py "$pid" 3 > "$OUT/profile_${tag}_threads.txt" 2>&1
    kill $smi 2>/dev/null
    if command -v perf >/dev/null; then
      timeout 20 perf record -F 499 -g -p "$pid" -o "$W/perf.data" -- sleep 3 > /dev/null 2>&1
      perf report -i "$W/perf.data" --stdio --no-children --sort comm,dso,symbol --percent-limit 0.5 2>/dev/null | grep -v "^$" | head -n 400 > "$OUT/profile_${tag}_perf.txt"
    fi
    wait $load || echo "serve_load exit $? ($log.stderr)"
    echo "== $tag"
    grep -E "requests/s|batched_|nv_gpu" "$log"
    head -n 14 "$OUT/profile_${tag}_threads.txt"
    awk -F', ' 'NR>1 {g+=$2; n++} END {if (n) printf "GPU utilisation mean %.0f%% over %d samples\n", g/n, n}' "$OUT/profile_${tag}_gpu.csv"
  done
  ;;
3)
  [ -f "$ORT_DYLIB_PATH" ] || { echo "ort-cuda.sh 3: call 2 first, on the same warm machine" >&2; exit 1; }
  unpack .gpu/c3/bins "$W/bin" ort_cuda embed_cuda || exit 1
  [ -f .gpu/c3/rtx.part00 ] && cp .gpu/c3/rtx.part00 "$W/rtx.part00"
  builds=ort_cuda
  [ -f .gpu/c3/bins/ort_cuda_old.xz ] && unpack .gpu/c3/bins "$W/bin" ort_cuda_old && builds="ort_cuda ort_cuda_old"
  # Model only, twice: the spread between two runs of the same shapes shows
  # (SKIP_MODEL_BENCH=1: only the end-to-end bench).
  for run in $(seq 1 "${MODEL_BENCH_PASSES:-2}"); do
    [ "${SKIP_MODEL_BENCH:-0}" = 1 ] && break
    for b in $builds; do
      ORT_CUDA_BENCH_SCRIPT=benches/ort_cuda_python.py ORT_CUDA_BENCH_RUNS=${ORT_CUDA_BENCH_RUNS:-200} timeout 200 "$W/bin/$b" > "$OUT/${b}_run$run.log" 2> "$OUT/${b}_run$run.stderr"
      echo "== $b run $run (exit $?)"
      grep -E "^ratio|^cuda_graphs" "$OUT/${b}_run$run.log" | tr '\n' ' '; echo
    done
  done
  [ "${SKIP_EMBED_BENCH:-0}" = 1 ] && exit 0
  EMBED_CUDA_WEIGHTS=$W/weights timeout 300 "$W/bin/embed_cuda" > "$OUT/embed_cuda.log" 2> "$OUT/embed_cuda.stderr"
  echo "== embed_cuda (exit $?)"
  grep -vE "^\s*$" "$OUT/embed_cuda.log" | tail -n 24
  ;;
4)
  [ -f "$ORT_DYLIB_PATH" ] || { echo "ort-cuda.sh 4: call 2 first, on the same warm machine" >&2; exit 1; }
  unpack .gpu/c4/bins "$W/bin" trt serve_load || exit 1
  # Another server build to set beside it (a layout's SERVE_BENCH_TRT=/tmp/trt-ort-cuda/bin/trt_old).
  [ -f .gpu/c4/bins/trt_old.xz ] && unpack .gpu/c4/bins "$W/bin" trt_old
  if [ -f "$W/rtx.part00" ]; then
    cat "$W/rtx.part00" .gpu/c4/rtx.part01 > "$W/rtx.tar.xz" || exit 1
    echo "$RTX_SHA256  $W/rtx.tar.xz" | sha256sum -c || exit 1
    mkdir -p "$W/rtx" && python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$W/rtx.tar.xz" "$W/rtx" || exit 1
    TRT=$W/bin/trt TENSORRT_LIB_DIR=$W/rtx/tensorrt_rtx_libs PROBE_MODEL=.gpu/c4/external_weights.onnx \
      scripts/gpu-conformance --check-only --out "$OUT/conformance"
    echo "gpu-conformance exit $?"
    cat "$OUT/conformance/report.md" 2>/dev/null | head -n 20
  else
    echo "gpu-conformance: not run (call 3 carries the first part of the TensorRT-RTX libraries)"
  fi
  PEER_SITE=$W/peer-site
  python3 -c 'import glob, sys, zipfile; [zipfile.ZipFile(w).extractall(sys.argv[1]) for w in glob.glob(".gpu/c4/peer-wheels/*.whl")]' "$PEER_SITE"
  serve_models "$W" "$DEPS/models/minilm"
  M16=$W/minilm16
  export SERVE_BENCH_TRT=$W/bin/trt SERVE_BENCH_MODEL_DIR=$M16 SERVE_BENCH_KIND=KIND_GPU
  export SERVE_BENCH_CONCURRENCY=${SERVE_BENCH_CONCURRENCY:-1,32,256,512} SERVE_BENCH_REQUESTS=${SERVE_BENCH_REQUESTS:-2000000}
  export SERVE_BENCH_SECONDS=${SERVE_BENCH_SECONDS:-6} SERVE_BENCH_THREADS=1 SERVE_BENCH_WARMUP_SECS=${SERVE_BENCH_WARMUP_SECS:-2}
  # sessions, max_batch, largest CUDA-graph batch (0: none), one more setting
  # (~ for a space); SERVE_LAYOUTS="A;B;..." replaces the list.
  layouts=(
    "2 128 128 SERVE_BENCH_BATCH_TEXTS=32"
    "4 128 128 SERVE_BENCH_DELAY_US=1000"
    "4 128 0 SERVE_BENCH_PEER=python3~benches/serve_peer_torch.py~--weights~${W}/weights~--tokenizer~${M16}/tokenizer.json"
  )
  [ -n "${SERVE_LAYOUTS:-}" ] && IFS=';' read -r -a layouts <<< "$SERVE_LAYOUTS"
  for layout in "${layouts[@]}"; do
    set -- $layout
    tag="sessions$1_batch$2_graphs$3"
    [ -n "${4:-}" ] && tag="${tag}_$(settings_tag "$4")"
    log="$OUT/serve_load_gpu_$tag.log"
    extra=${4//\~/ }
    # Several settings: NAME=V,NAME=V.
    IFS=',' read -r -a extras <<< "$extra"
    env SERVE_BENCH_INSTANCES=$1 SERVE_BENCH_MAX_BATCH=$2 SERVE_BENCH_GRAPHS=$3 PYTHONPATH=$SITE:$PEER_SITE "${extras[@]}" \
      timeout 170 "$W/bin/serve_load" > "$log" 2> "$log.stderr" || echo "serve_load exit $? ($log.stderr)"
    echo "== $tag"
    grep -E "requests/s|ratio_|embeddings_per_s|p50_p99|peer" "$log" || tail -n 5 "$log.stderr"
  done
  nvidia-smi --query-gpu=memory.used,memory.total --format=csv >> "$OUT/host.txt" 2>&1
  # SKIP_SANITIZER=1: the serving figures only.
  if [ -x "$W/bin/trt_nlp" ] && [ "${SKIP_SANITIZER:-0}" != 1 ]; then sanitize; fi
  ;;
esac
