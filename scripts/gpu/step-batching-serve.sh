#!/usr/bin/env bash
# One device call for the batching and serve benchmarks on the GPU test
# host's 16 cores: scripts/gpu/batching.sh (ONNX Runtime 1.31.1 carried, the
# simulated GPU, the scheduler's cost), then trt serve's load benchmark
# (scripts/gpu/serve16.sh with SERVE16_EMBED=0: the host's ONNX Runtime 1.30).
# Carry .gpu/batching, .gpu/serve16 (trt.xz, serve_load.xz) and .gpu/minilm-f16;
# the build steps are at the top of each script.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
: "${OUT:?set OUT to the folder the logs go to}"
# The binaries' commit (written here when packing: git rev-parse --short HEAD > .gpu/COMMIT).
cp .gpu/COMMIT "$OUT/commit.txt" 2>/dev/null || echo "no .gpu/COMMIT" > "$OUT/commit.txt"
status=0
bash scripts/gpu/batching.sh || status=1
SERVE16_EMBED=0 bash scripts/gpu/serve16.sh || status=1
exit $status
