#!/usr/bin/env bash
# HuggingFace folders imported by trt-hf, run on ONNX Runtime CUDA on the GPU
# test host, in calls made back to back after ONNX Runtime is there
# (`ort-cuda.sh 0`, then `SKIP_TESTS=1 ort-cuda.sh 2`, on the same warm
# machine); `scripts/gpu/pack.sh` with ONLY=hf makes what they carry:
#
#   fixtures (.gpu/hf/bins: trt_nlp, trt-nlp's test binary; may run in the same call as ort-cuda.sh 2):
#     every fixture of tests/data/hf (in the working tree) imported in FP32 and
#     FP16 and run on CUDA against the libraries' references
#     (tests/nlp_hf.rs cuda_imports_match_the_libraries_in_fp32_and_fp16)
#   minilm (.gpu/hf/minilm-f16): all-MiniLM-L6-v2's folder with its weights
#     stored as FP16 (the FP16 graph's matrices are the same), imported in
#     FP32 and FP16 and checked against sentence-transformers on texts past
#     256 tokens (cuda_all_minilm_l6_v2_fp16_matches_sentence_transformers)
#   base (.gpu/hf/bins: trt): base-sized MPNet and BERT (random weights made by
#     transformers here) as a torch export, after ONNX Runtime's optimizer, and
#     imported by trt-hf (plain and fused), all FP16, timed side by side by
#     scripts/gpu/base_graphs.py (plain, fused and packed; ragged rows too), then CUDA
#     graphs asked for on the torch export (which ONNX Runtime cannot capture);
#     the kernels each graph runs, recorded by torch.profiler (CUPTI), and the
#     attention kernel ONNX Runtime picks
#   embed (.gpu/hf/bins: hf_embed; after base): texts to embeddings in process, trt-nlp
#     against sentence-transformers FP16 on the MPNet-base folder (benches/hf_embed.rs)
#   serve (.gpu/hf/bins: serve_load; after base): trt serve on the base-sized imports
#     under load (benches/serve_load.rs)
#   sessions (.gpu/hf/bins: trt, serve_load): the packed MPNet-base import at 512
#     clients of 22-token texts with 2, 3 and 4 sessions on the GPU (SESSIONS)
#   minilm-serve (.gpu/hf/bins: trt, serve_load; after ort-cuda.sh 1): the default
#     model served as its first serving figures were measured (1 and 512 clients)
#   qwen3 (.gpu/hf/bins: trt): Qwen3-Embedding-0.6B-shaped, sentence-transformers FP16
#     beside the imported FP16 graphs, plain and fused (scripts/gpu/qwen3_06b.py)
#   rotary (.gpu/hf/bins: trt): ModernBERT-base and Qwen3-0.6B-shaped imports, plain and
#     fused, model only, beside the transformers model in FP16 (scripts/gpu/rotary_graphs.py)
#   rotary-serve (.gpu/hf/bins: trt, serve_load): those folders through trt serve
#     --model-id --fp16 --fused with no config (what it chose, one answer), then the plain
#     and fused imports under load (1 and 512 clients of 22-token texts)
#
# Logs under $OUT.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$ROOT"
: "${OUT:?set OUT to the folder the logs go to}"
source "$ROOT/scripts/gpu/lib.sh"
W=/tmp/trt-ort-cuda
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$W/site/onnxruntime/capi${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ORT_DYLIB_PATH=$W/site/onnxruntime/capi/libonnxruntime.so.1.31.1
export TRT_IMPORT_CACHE=$W/imports
# The test binary was built elsewhere: the fixtures are this working tree's.
export HF_FIXTURES=$ROOT/tests/data/hf
export PYTHONPATH=$W/site PYTHONUNBUFFERED=1
[ -f "$ORT_DYLIB_PATH" ] || { echo "hf.sh: ONNX Runtime is not in $W (ort-cuda.sh 0 and 2 first, on the same warm machine)" >&2; exit 1; }
mkdir -p "$OUT"

# model_id_check FOLDER NAME TAG: `trt serve --model-id FOLDER --fp16 --fused` with no
# config, what it chose and one answer (scripts/gpu/model_id_check.py); logs
# $OUT/hf_model_id$TAG.log and $OUT/hf_model_id_check$TAG.log.
model_id_check() {
  "$W/bin/trt" serve --model-id "$1" --fp16 --fused --model-name "$2" \
    --http-port 18080 --grpc-port 0 --metrics-port 0 > "$OUT/hf_model_id$3.log" 2>&1 &
  local pid=$!
  python3 scripts/gpu/model_id_check.py http://127.0.0.1:18080 "$2" > "$OUT/hf_model_id_check$3.log" 2>&1
  echo "$2 --model-id --fused check: exit $?"; cat "$OUT/hf_model_id_check$3.log"
  kill $pid; wait $pid 2>/dev/null
  grep -iE "warn|error" "$OUT/hf_model_id$3.log" | cut -c1-400 | head -5
}

case "${1:?fixtures, minilm, base, embed, serve, sessions, minilm-serve, qwen3, rotary or rotary-serve}" in
fixtures)
  unpack .gpu/hf/bins "$W/bin" trt_nlp || exit 1
  # One process per fixture (HF_CUDA_ONLY), so one that brings its process down is
  # seen by name and stops no other; each one's whole output in $OUT/fixtures/.
  # FIXTURES="a b": those alone. THROW_TRACE=x.so: preloaded (scripts/gpu/throw_trace.cc:
  # where ONNX Runtime throws from, should it).
  mkdir -p "$OUT/fixtures"
  { echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
    for d in ${FIXTURES:-$(cd tests/data/hf && ls -d */)}; do
      name=$(basename "$d"); [ "$name" = references ] && continue
      HF_CUDA_ONLY=$name LD_PRELOAD=${THROW_TRACE:-} timeout 120 "$W/bin/trt_nlp" --include-ignored --nocapture --test-threads 1 \
        nlp_hf::cuda_imports > "$OUT/fixtures/$name.log" 2>&1
      rc=$?
      grep -E "on CUDA|panicked|terminate|CUDA failure|throw-trace\]" "$OUT/fixtures/$name.log" \
        | sed -E 's/.*(CUDA failure [^;]*).*(expr=[^;]*).*/\1 \2/' | cut -c1-300
      echo "$name: exit $rc"
    done; } > "$OUT/hf_fixtures.log" 2>&1
  grep -E "on CUDA|exit [^0]|panicked|terminate|throw-trace" "$OUT/hf_fixtures.log"
  ;;
rotary)
  unpack .gpu/hf/bins "$W/bin" trt || exit 1
  timeout 420 python3 scripts/gpu/rotary_graphs.py --trt "$W/bin/trt" --work "$W/rotary" ${ROTARY_FAMILIES:+--families "$ROTARY_FAMILIES"} > "$OUT/hf_rotary.log" 2>&1
  echo "rotary_graphs.py exit $?"
  grep -vE "^\{|Warning|warn" "$OUT/hf_rotary.log" | tail -40
  ;;
rotary-serve)
  unpack .gpu/hf/bins "$W/bin" trt serve_load || exit 1
  timeout 200 python3 scripts/gpu/rotary_graphs.py --trt "$W/bin/trt" --work "$W/rotary-serve" --folders-only \
    --tokenizer "$ROOT/.gpu/hf/minilm-f16/tokenizer.json" > "$OUT/hf_rotary_folders.log" 2>&1 || { tail -5 "$OUT/hf_rotary_folders.log"; exit 1; }
  for fam in modernbert-base qwen3-0.6b; do
    # --model-id with no config, fused: what trt serve chose on this GPU (CUDA graphs
    # asked by default), whether it loads, and one answer.
    model_id_check "$W/rotary-serve/$fam/hf" m "_$fam"
    for form in trt-hf trt-hf-fused; do
      log="$OUT/hf_serve_${fam}_${form}_c1_512_w18.log"
      SERVE_BENCH_TRT=$W/bin/trt SERVE_BENCH_KIND=KIND_GPU SERVE_BENCH_INSTANCES=2 SERVE_BENCH_MAX_BATCH=128 SERVE_BENCH_GRAPHS=16 \
        SERVE_BENCH_ROW_BUCKETS=1 SERVE_BENCH_MODELS=batched SERVE_BENCH_SECONDS=${SERVE_SECONDS:-5} SERVE_BENCH_WARMUP_SECS=2 \
        SERVE_BENCH_REQUESTS=200000 SERVE_BENCH_MODEL_DIR=$W/rotary-serve/$fam/$form SERVE_BENCH_CONCURRENCY=1,512 \
        SERVE_BENCH_WORDS=18-18 timeout 150 "$W/bin/serve_load" > "$log" 2>&1
      echo "$fam $form clients 1,512 words 18: exit $?"
      grep -E "^batched .*c=|failures|panicked|graph" "$log" | cut -c1-300 | head -6
    done
  done
  ;;
minilm)
  [ -x "$W/bin/trt_nlp" ] || { echo "hf.sh minilm: run hf.sh fixtures first (it unpacks trt_nlp)" >&2; exit 1; }
  { echo "# $(date -u +%FT%TZ)"
    MINILM_DIR=$ROOT/.gpu/hf/minilm-f16 "$W/bin/trt_nlp" --include-ignored --nocapture --test-threads 1 nlp_hf::cuda_all_minilm; } > "$OUT/hf_minilm.log" 2>&1
  grep -E "on CUDA|test result|panicked" "$OUT/hf_minilm.log"
  ;;
base)
  unpack .gpu/hf/bins "$W/bin" trt ort_cuda || exit 1
  timeout 480 python3 scripts/gpu/base_graphs.py --trt "$W/bin/trt" --work "$W/base" --tokenizer "$ROOT/.gpu/hf/minilm-f16/tokenizer.json" --families "${BASE_FAMILIES:-mpnet-base,bert-base}" > "$OUT/hf_base.log" 2>&1
  echo "base_graphs.py exit $?"
  grep -vE "^\{|Warning|warn| kernel  " "$OUT/hf_base.log" | tail -60
  # BASE_GRAPHS_ONLY=1: the graphs and kernel profiles alone (not the Rust bench or
  # the CUDA-graph fallback, measured before).
  [ "${BASE_GRAPHS_ONLY:-0}" = 1 ] && exit 0
  # The same four MPNet-base graphs through trt-nlp's backend in Rust against Python
  # onnxruntime-gpu, turn about (benches/ort_cuda.rs): ratio_rust_<graph>_vs_python_<graph>.
  mkdir -p "$W/deps/models/minilm" && cp .gpu/hf/minilm-f16/tokenizer.json "$W/deps/models/minilm/"
  b=$W/base/mpnet-base
  TRT_DEPS_DIR=$W/deps ORT_CUDA_BENCH_MODELS=$b/export_fp16.onnx,$b/optimized_fp16.onnx,$b/trt-hf-fused/model.onnx,$b/trt-hf-packed/model.onnx \
    ORT_CUDA_BENCH_BATCHES=1,32,128 ORT_CUDA_BENCH_SEQ=134 ORT_CUDA_BENCH_RUNS=60 ORT_CUDA_BENCH_ROUNDS=2 ORT_CUDA_BENCH_GRAPHS=0 \
    ORT_CUDA_BENCH_FLOP_PER_TOKEN=170e6 ORT_CUDA_BENCH_PEAK=790e12 ORT_CUDA_BENCH_SCRIPT=benches/ort_cuda_python.py BENCH_PYTHON=python3 \
    timeout 200 "$W/bin/ort_cuda" > "$OUT/hf_base_ort_cuda.log" 2>&1
  echo "ort_cuda (Rust vs Python) exit $?"
  grep -E "^ratio_rust_|^peak_share" "$OUT/hf_base_ort_cuda.log" | grep -E "_b128|_b1:" | head -24
  # CUDA graphs asked for on a model ONNX Runtime cannot capture whole (the torch
  # export: its shape arithmetic is placed on the CPU) load with row buckets and a warning.
  e=$W/base/mpnet-base/export-folder
  mkdir -p "$e" && cp "$W/base/mpnet-base/export_fp16.onnx" "$e/model.onnx" && cp "$W/base/mpnet-base/hf/"{tokenizer.json,config.json} "$e/"
  timeout 120 "$W/bin/trt" bench "$e" --backend onnxruntime --device cuda:0 --batch 32 --seq 128 --graphs > "$OUT/hf_graphs_fallback.log" 2>&1
  echo "trt bench --graphs on the torch export: exit $?"
  grep -iE "graph|p50|throughput|error" "$OUT/hf_graphs_fallback.log" | head -8
  ;;
embed)
  # Texts to embeddings in process (hf.sh base first, same warm machine): trt-nlp on the
  # FP16 import of MPNet-base against sentence-transformers FP16 on the same folder, texts
  # (10-110 words) and batch (benches/hf_embed.rs), fused and packed; the random-weight
  # folder wrapped as all-mpnet-base-v2 is (mean pooling, Normalize, 384 tokens).
  unpack .gpu/hf/bins "$W/bin" hf_embed || exit 1
  st=$W/base/mpnet-base/st
  python3 -c 'import sys; from sentence_transformers import SentenceTransformer, models as m; t = m.Transformer(sys.argv[1], max_seq_length=384); SentenceTransformer(modules=[t, m.Pooling(t.get_word_embedding_dimension(), "mean"), m.Normalize()]).save(sys.argv[2])' \
    "$W/base/mpnet-base/hf" "$st" > "$OUT/hf_embed_folder.log" 2>&1 || { tail -5 "$OUT/hf_embed_folder.log"; exit 1; }
  for form in fused packed; do
    HF_EMBED_FOLDER=$st HF_EMBED_FORM=$form HF_EMBED_WORDS=10-110 BENCH_PYTHON=python3 timeout 240 "$W/bin/hf_embed" > "$OUT/hf_embed_$form.log" 2>&1
    echo "hf_embed $form: exit $?"
    grep -E "^hf_embed|texts/s|cosine|^ratio_" "$OUT/hf_embed_$form.log"
  done
  ;;
serve)
  # trt serve on the base-sized imports (hf.sh base first, same warm machine): KServe v2
  # single-text requests at 1 and 512 clients (texts of 18 words, about 22 tokens) and
  # at 256 clients (120 words, about 134 tokens), two sessions on the GPU, batches up to
  # 128, CUDA graphs up to 16 rows (not packed) and row buckets above.
  unpack .gpu/hf/bins "$W/bin" serve_load || exit 1
  # --model-id with no config: what trt serve chose on this GPU, and one answer.
  model_id_check "$W/base/mpnet-base/hf" mpnet ""
  export SERVE_BENCH_TRT=$W/bin/trt SERVE_BENCH_KIND=KIND_GPU SERVE_BENCH_INSTANCES=2 SERVE_BENCH_MAX_BATCH=128 \
    SERVE_BENCH_GRAPHS=16 SERVE_BENCH_ROW_BUCKETS=1 SERVE_BENCH_MODELS=batched SERVE_BENCH_SECONDS=${SERVE_SECONDS:-6} \
    SERVE_BENCH_WARMUP_SECS=2 SERVE_BENCH_REQUESTS=200000
  for form in ${SERVE_FORMS:-trt-hf-fused trt-hf-packed}; do
    # A packed batch's shapes follow its tokens, which a CUDA graph cannot replay.
    graphs=16; [ "$form" = trt-hf-packed ] && graphs=0
    for load in "1,512 18-18" "256 120-120"; do
      set -- $load
      log="$OUT/hf_serve_mpnet_${form}_c${1//,/_}_w${2%-*}.log"
      SERVE_BENCH_GRAPHS=$graphs SERVE_BENCH_MODEL_DIR=$W/base/mpnet-base/$form SERVE_BENCH_CONCURRENCY=$1 SERVE_BENCH_WORDS=$2 \
        timeout 150 "$W/bin/serve_load" > "$log" 2>&1
      echo "mpnet-base $form clients $1 words $2: exit $?"
      grep -E "^batched .*c=|failures|panicked" "$log" | head -4
    done
  done
  # WIDE_BATCH=N: the packed import again at 512 clients of 22-token texts with batches
  # up to N (a packed batch costs its tokens, so wider batches fill the GPU's products).
  if [ -n "${WIDE_BATCH:-}" ]; then
    log="$OUT/hf_serve_mpnet_trt-hf-packed_c512_w18_batch$WIDE_BATCH.log"
    SERVE_BENCH_MAX_BATCH=$WIDE_BATCH SERVE_BENCH_GRAPHS=0 SERVE_BENCH_MODEL_DIR=$W/base/mpnet-base/trt-hf-packed SERVE_BENCH_CONCURRENCY=512 \
      SERVE_BENCH_WORDS=18-18 timeout 150 "$W/bin/serve_load" > "$log" 2>&1
    echo "mpnet-base trt-hf-packed clients 512 words 18, batches up to $WIDE_BATCH: exit $?"
    grep -E "^batched .*c=|failures|panicked" "$log" | head -4
  fi
  ;;
sessions)
  # The packed MPNet-base import at 512 clients of 22-token texts with SESSIONS sessions on
  # the GPU (default "2 3 4"), batches up to 128; makes the folder when base has not run.
  unpack .gpu/hf/bins "$W/bin" trt serve_load || exit 1
  [ -f "$W/base/mpnet-base/trt-hf-packed/model.onnx" ] || timeout 200 python3 scripts/gpu/base_graphs.py --trt "$W/bin/trt" --work "$W/base" \
    --tokenizer "$ROOT/.gpu/hf/minilm-f16/tokenizer.json" --families mpnet-base --folders-only > "$OUT/hf_sessions_folder.log" 2>&1 \
    || { tail -5 "$OUT/hf_sessions_folder.log"; exit 1; }
  for n in ${SESSIONS:-2 3 4}; do
    log="$OUT/hf_serve_mpnet_trt-hf-packed_c512_w18_sessions$n.log"
    SERVE_BENCH_TRT=$W/bin/trt SERVE_BENCH_KIND=KIND_GPU SERVE_BENCH_INSTANCES=$n SERVE_BENCH_MAX_BATCH=128 SERVE_BENCH_GRAPHS=0 \
      SERVE_BENCH_ROW_BUCKETS=1 SERVE_BENCH_MODELS=batched SERVE_BENCH_SECONDS=${SERVE_SECONDS:-6} SERVE_BENCH_WARMUP_SECS=2 \
      SERVE_BENCH_REQUESTS=400000 SERVE_BENCH_MODEL_DIR=$W/base/mpnet-base/trt-hf-packed SERVE_BENCH_CONCURRENCY=512 \
      SERVE_BENCH_WORDS=18-18 timeout 150 "$W/bin/serve_load" > "$log" 2>&1
    echo "mpnet-base trt-hf-packed clients 512 words 18, $n sessions: exit $?"
    grep -E "^batched .*c=|failures|panicked|rows_per_exec" "$log" | head -4
  done
  ;;
minilm-serve)
  # The default model as its serving figures were first measured (ort-cuda.sh 1 first, on
  # the same warm machine: it builds the model from .gpu/c1): the fused FP16 graph, two
  # sessions, batches up to 128, CUDA graphs up to 128 rows, one client and 512.
  unpack .gpu/hf/bins "$W/bin" trt serve_load || exit 1
  [ -f "$W/deps/models/minilm/model_fp16_fused.onnx" ] || { echo "hf.sh minilm-serve: ort-cuda.sh 1 first" >&2; exit 1; }
  serve_models "$W" "$W/deps/models/minilm"
  log="$OUT/minilm_serve_fused_c1_512.log"
  SERVE_BENCH_TRT=$W/bin/trt SERVE_BENCH_MODEL_DIR=$W/minilm16f SERVE_BENCH_KIND=KIND_GPU SERVE_BENCH_INSTANCES=2 \
    SERVE_BENCH_MAX_BATCH=128 SERVE_BENCH_GRAPHS=128 SERVE_BENCH_CONCURRENCY=1,512 SERVE_BENCH_SECONDS=6 SERVE_BENCH_THREADS=1 \
    SERVE_BENCH_WARMUP_SECS=2 SERVE_BENCH_REQUESTS=2000000 SERVE_BENCH_MODELS=batched timeout 150 "$W/bin/serve_load" > "$log" 2>&1
  echo "minilm fused, 2 sessions, graphs up to 128: exit $?"
  grep -E "^batched .*c=|requests/s|failures|panicked" "$log" | head -6
  ;;
qwen3)
  # Qwen3-Embedding-0.6B-shaped (random weights made here): sentence-transformers FP16 beside
  # the trt import --fp16 graph on onnxruntime-gpu, same texts (scripts/gpu/qwen3_06b.py).
  unpack .gpu/hf/bins "$W/bin" trt || exit 1
  timeout 500 python3 scripts/gpu/qwen3_06b.py --trt "$W/bin/trt" --fixture tests/data/hf/qwen3-embed --work "$W/qwen3" > "$OUT/hf_qwen3_06b.log" 2>&1
  echo "qwen3_06b.py exit $?"
  grep -vE "Warning|warn|it/s" "$OUT/hf_qwen3_06b.log" | tail -12
  ;;
*) echo "hf.sh: fixtures, minilm, base, embed, serve, sessions, minilm-serve, qwen3, rotary or rotary-serve" >&2; exit 2 ;;
esac
