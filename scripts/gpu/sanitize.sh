#!/usr/bin/env bash
# NVIDIA compute-sanitizer over the CUDA tests on the GPU test host:
# memcheck (with leak check), racecheck, synccheck and initcheck over
# each prebuilt test binary in .gpu/sanitize/. The host has no Rust: build here,
# on the development machine, from the repository root:
#   { cargo test --no-run -p trt-cuda --test trt_cuda; cargo test --no-run -p trt-rs --lib; } 2>&1 | grep -o 'target/debug/deps/[a-z_]*-[0-9a-f]*' | sort -u
#   mkdir -p .gpu/sanitize
#   cp target/debug/deps/trt_cuda-<hash> .gpu/sanitize/cuda   # tests/cuda.rs, trt-cuda's one test binary (streams, buffers, graphs)
#   cp target/debug/deps/trt-<hash>  .gpu/sanitize/trt-lib    # trt's unit tests (the context work order)
#   git rev-parse HEAD > .gpu/sanitize/commit.txt
# (or compressed, to fit a call's 64 MiB: xz -T2 -c <binary> > .gpu/sanitize/<name>.xz)
# (unstripped, so the sanitizers' backtraces name our functions). TensorRT-RTX
# refuses the H200 (compute capability 9.0), so no engine executes there: these
# are the tests whose CUDA work does run. Writes $OUT/<binary>-<tool>.log and
# $OUT/sanitize-summary.txt; exits non-zero if any tool reports an error.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
SAN=${COMPUTE_SANITIZER:-}
if [ -z "$SAN" ]; then
  SAN=$(command -v compute-sanitizer || true)
  [ -z "$SAN" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ] && SAN=/usr/local/cuda/bin/compute-sanitizer
fi
[ -n "$SAN" ] || { echo "sanitize.sh: compute-sanitizer not found (set COMPUTE_SANITIZER)" >&2; exit 1; }
source "$ROOT/scripts/gpu/lib.sh"
BINS=()
for b in cuda trt-lib; do
  if [ ! -x ".gpu/sanitize/$b" ] && [ -f ".gpu/sanitize/$b.xz" ]; then
    unxz_to ".gpu/sanitize/$b.xz" ".gpu/sanitize/$b" executable
  fi
  [ -x ".gpu/sanitize/$b" ] && BINS+=("$b") || echo "sanitize.sh: .gpu/sanitize/$b is missing (see the build steps at the top)" >&2
done
[ ${#BINS[@]} -gt 0 ] || exit 1
{ "$SAN" --version; nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader; cat .gpu/sanitize/commit.txt 2>/dev/null; } >"$OUT/sanitize-env.txt" 2>&1
status=0
: >"$OUT/sanitize-summary.txt"
# SAN_TOOLS: which tools (default all four); SAN_TIMEOUT: seconds per binary and tool (900).
for b in "${BINS[@]}"; do
  for tool in ${SAN_TOOLS:-memcheck racecheck synccheck initcheck}; do
    extra=() skip=()
    # The tests provoke CUDA API errors on purpose (a timing query on a
    # no-timing event, a sync inside a capture) and check that each comes back
    # as a typed error; memcheck would count those as errors. Memory errors
    # and leaks are what memcheck is run for here.
    [ "$tool" = memcheck ] && extra=(--leak-check full --report-api-errors "${SAN_API_ERRORS:-no}")
    # Under initcheck only, this test's free-memory check saw 1280 MiB less
    # after 20 rounds of 512 MiB (64 MiB a round: one bit of initcheck's
    # shadow state per byte, it seems), while memcheck's leak check over the
    # same test finds 0 bytes leaked (docs/measurements/h200-2026-12-01/sanitize-1).
    [ "$tool" = initcheck ] && [ "$b" = cuda ] && skip=(--skip no_memory_is_kept_after_drops)
    log="$OUT/$b-$tool.log"
    # Each test binary is bounded by its own tests; timeout is a last resort.
    timeout "${SAN_TIMEOUT:-900}" "$SAN" --tool "$tool" "${extra[@]}" --error-exitcode 99 --print-limit 100 \
      ".gpu/sanitize/$b" --include-ignored --test-threads=1 "${skip[@]}" >"$log" 2>&1
    rc=$?
    [ $rc -ne 0 ] && status=1
    {
      echo "== $b $tool: exit $rc"
      grep -E 'ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY|^test result:' "$log" || echo "(no summary line: see $log)"
    } | tee -a "$OUT/sanitize-summary.txt"
  done
done
exit $status
