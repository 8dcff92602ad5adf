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

# unpack PACK WORK NAME...: each PACK/NAME.xz as the executable WORK/NAME; a
# missing one is an error that names it.
unpack() {
  local pack=$1 work=$2 b
  shift 2
  mkdir -p "$work"
  for b in "$@"; do
    [ -f "$pack/$b.xz" ] || { echo "${0##*/}: $pack/$b.xz is missing (see the packing steps at the top)" >&2; return 1; }
    unxz_to "$pack/$b.xz" "$work/$b" executable
  done
}

# default_model DIR WEIGHTS: the FP32 default model (model.onnx, model_fp16.onnx,
# model_fp16_fused.onnx, tokenizer.json, config.json) built in DIR from the FP16-stored weights in
# WEIGHTS (scripts/gpu/pack_weights_f16.py; the FP32 file does not fit a call's
# 64 MiB), unless DIR has it from an earlier call on a warm machine; log in
# $OUT/make_model.log.
default_model() {
  [ -f "$1/model.onnx" ] && return 0
  python3 scripts/make_default_model.py --weights "$2" --out "$1" > "$OUT/make_model.log" 2>&1 \
    || { tail "$OUT/make_model.log" >&2; return 1; }
}

# serve_models W MODELS: the folders trt serve loads, as symlinks into the
# default model's folder MODELS: W/minilm16 (model_fp16.onnx) and W/minilm16f
# (model_fp16_fused.onnx, ONNX Runtime's fused operators; a layout's
# SERVE_BENCH_MODEL_DIR=/tmp/trt-ort-cuda/minilm16f serves it).
serve_models() {
  local w=$1 models=$2 dir f
  for dir in minilm16:model_fp16.onnx minilm16f:model_fp16_fused.onnx; do
    mkdir -p "$w/${dir%%:*}"
    ln -sf "$models/${dir#*:}" "$w/${dir%%:*}/model.onnx"
    for f in tokenizer.json config.json; do ln -sf "$models/$f" "$w/${dir%%:*}/$f"; done
  done
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

# settings_tag "A=V,B=/x/y": a layout's settings as a file-name part
# ("A-V_B-y"): paths cut to their last part, SERVE_BENCH_ dropped.
settings_tag() {
  echo "$1" | sed 's#[^,=~]*/##g; s/SERVE_BENCH_//g' | tr -c 'A-Za-z0-9=_\n' '_' | tr '=' '-' | cut -c1-60
}
