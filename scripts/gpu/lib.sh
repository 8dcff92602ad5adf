# Shared by the GPU-host scripts (sourced, not run). The host has Python but
# maybe no xz, and its own onnxruntime wheel.

# unxz_to SRC.xz DEST [executable]: xz where it exists, else Python's lzma.
unxz_to() {
  if command -v xz >/dev/null; then
    xz -dc "$1" > "$2"
  else
    python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"
  fi
  [ "${3:-}" = executable ] && chmod +x "$2"
  return 0
}

# host_ort_lib: the newest libonnxruntime of the host Python's onnxruntime wheel.
host_ort_lib() {
  python3 -c 'import glob, os, onnxruntime; print(sorted(glob.glob(os.path.join(os.path.dirname(onnxruntime.__file__), "capi", "libonnxruntime.so.1.*")))[-1])'
}

# embed16 BINARY DEPS_DIR ORT_LIB: benches/embed_cpu.rs at all threads and at 2,
# against the host's Python, into $OUT/embed_cpu.log.
embed16() {
  local bin=$1 deps=$2 lib=$3
  {
    echo "# $(date -u +%FT%TZ) $(nproc) cores; ORT_DYLIB_PATH=$lib; BENCH_PYTHON=$(command -v python3)"
    TRT_DEPS_DIR="$deps" ORT_DYLIB_PATH="$lib" BENCH_PYTHON=$(command -v python3) "$bin"
    echo "# the same with 2 threads"
    TRT_DEPS_DIR="$deps" ORT_DYLIB_PATH="$lib" BENCH_PYTHON=$(command -v python3) EMBED_BENCH_THREADS=2 EMBED_BENCH_TEXTS=400 "$bin"
  } > "$OUT/embed_cpu.log" 2>&1
  tail -n 4 "$OUT/embed_cpu.log"
}
