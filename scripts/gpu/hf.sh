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
#     scripts/gpu/base_graphs.py
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
case "${1:?fixtures, minilm or base}" in
fixtures)
  unpack .gpu/hf/bins "$W/bin" trt_nlp || exit 1
  { echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
    "$W/bin/trt_nlp" --include-ignored --nocapture --test-threads 1 nlp_hf::cuda_imports; } > "$OUT/hf_fixtures.log" 2>&1
  grep -E "on CUDA|test result|panicked" "$OUT/hf_fixtures.log"
  ;;
minilm)
  [ -x "$W/bin/trt_nlp" ] || { echo "hf.sh minilm: run hf.sh fixtures first (it unpacks trt_nlp)" >&2; exit 1; }
  { echo "# $(date -u +%FT%TZ)"
    MINILM_DIR=$ROOT/.gpu/hf/minilm-f16 "$W/bin/trt_nlp" --include-ignored --nocapture --test-threads 1 nlp_hf::cuda_all_minilm; } > "$OUT/hf_minilm.log" 2>&1
  grep -E "on CUDA|test result|panicked" "$OUT/hf_minilm.log"
  ;;
base)
  unpack .gpu/hf/bins "$W/bin" trt || exit 1
  timeout 540 python3 scripts/gpu/base_graphs.py --trt "$W/bin/trt" --work "$W/base" > "$OUT/hf_base.log" 2>&1
  echo "base_graphs.py exit $?"
  grep -vE "^\{|Warning|warn" "$OUT/hf_base.log" | tail -40
  ;;
*) echo "hf.sh: fixtures, minilm or base" >&2; exit 2 ;;
esac
