#!/usr/bin/env bash
# Makes, here, the data scripts/gpu/ort-cuda.sh carries to the GPU host that
# is not a build output (scripts/gpu/pack.sh packs the binaries):
#
#   .gpu/c0/ort-a, .gpu/c2/ort-b, .gpu/c2/ort.sha256
#       the PyPI onnxruntime-gpu 1.31.1 wheel's `onnxruntime` package as one
#       tar.xz in two parts (SHA-256 of the whole beside them): without the
#       TensorRT provider library (no TensorRT on the host), and with the
#       CUDA provider's device code for GPUs other than sm_90 zeroed
#       (scripts/gpu/prune_fatbin.py; the H200 loads only sm_90 cubins), so
#       that 255 MB fit two calls (ort-a alone in call 0, ort-b beside the
#       test binaries in call 2).
#   .gpu/c1/minilm-f16
#       the default model's weights stored as FP16 (pack_weights_f16.py), from
#       which the host rebuilds the FP32 and FP16 models.
#
# Needs scripts/setup first (its venv and .deps/minilm) and the network for
# the wheel (kept in .whl/). Optional parts of call 3/4 (the TensorRT-RTX
# libraries, the FastAPI peer's wheels, the probe model) are not made here;
# ort-cuda.sh skips what is absent and says so.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=.deps/venv/bin/python
WHEEL=.whl/onnxruntime_gpu-1.31.1-cp312-cp312-manylinux_2_28_x86_64.whl
[ -f "$WHEEL" ] || .deps/venv/bin/pip download onnxruntime-gpu==1.31.1 --no-deps --python-version 3.12 \
  --only-binary=:all: --platform manylinux_2_28_x86_64 -d .whl
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$PY" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$WHEEL" "$work"
rm -f "$work/onnxruntime/capi/libonnxruntime_providers_tensorrt.so"
"$PY" scripts/gpu/prune_fatbin.py "$work/onnxruntime/capi/libonnxruntime_providers_cuda.so" --keep 90
mkdir -p .gpu/c0 .gpu/c1 .gpu/c2
tar -C "$work" --sort=name --mtime=2026-01-01 --owner=0 --group=0 --numeric-owner -cf - onnxruntime | xz -T2 -6 > "$work/ort.tar.xz"
(cd "$work" && sha256sum ort.tar.xz) > .gpu/c2/ort.sha256
head -c 40M "$work/ort.tar.xz" > .gpu/c0/ort-a
tail -c +$((40 * 1024 * 1024 + 1)) "$work/ort.tar.xz" > .gpu/c2/ort-b
[ -d .gpu/c1/minilm-f16 ] || "$PY" scripts/gpu/pack_weights_f16.py --weights .deps/minilm --out .gpu/c1/minilm-f16
du -sh .gpu/c0/ort-a .gpu/c2/ort-b .gpu/c1/minilm-f16
cat .gpu/c2/ort.sha256
