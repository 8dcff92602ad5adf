# trt serve (ONNX Runtime backend) as a container, for KServe or `docker run`.
# CPU (the default target, the last stage):
#   docker build -t trt-serve:latest .
#   docker run --rm -p 8080:8080 -v "$PWD/model:/mnt/models:ro" trt-serve:latest --host=0.0.0.0 \
#     --http-port=8080 --model-dir=/mnt/models --model-name=minilm
# NVIDIA GPU (ONNX Runtime's CUDA execution provider; the host needs the NVIDIA driver
# and container toolkit):
#   docker build --target gpu -t trt-serve:gpu .
#   docker run --rm --gpus all -p 8080:8080 -v "$PWD/model:/mnt/models:ro" trt-serve:gpu ...
# The build is trt-cli's default features, ONNX Runtime only, which need no TensorRT headers;
# ONNX Runtime's C library comes from the PyPI onnxruntime wheel (CPU) or the
# onnxruntime-gpu wheel (a CUDA 13.0 build: its CUDA provider needs cuBLAS, cuBLASLt,
# cuRAND and cudart 13, and cuDNN 9, which the CUDA image below has), pinned below as in
# scripts/setup. Both images hold the same `trt` binary. Nothing is downloaded when a
# container starts. scripts/check-deploy checks these steps without a container runtime.

ARG ORT_VERSION=1.31.1
# Ubuntu 24.04 (glibc 2.39); `trt --version` runs in the gpu stage, so a binary that
# needed a newer glibc than the builder's trixie and this image share fails the build.
ARG CUDA_IMAGE=nvidia/cuda:13.0.1-cudnn-runtime-ubuntu24.04

FROM rust:1.95-slim-trixie AS builder
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p trt-cli

FROM python:3.13-slim-trixie AS onnxruntime
ARG ORT_VERSION
WORKDIR /ort
COPY deploy/docker/onnxruntime_lib.py ./
RUN python -m pip download --quiet --no-deps --only-binary=:all: --dest wheels onnxruntime==${ORT_VERSION}
RUN python onnxruntime_lib.py wheels lib ${ORT_VERSION} onnxruntime

FROM python:3.13-slim-trixie AS onnxruntime-gpu
ARG ORT_VERSION
WORKDIR /ort
COPY deploy/docker/onnxruntime_lib.py ./
RUN python -m pip download --quiet --no-deps --only-binary=:all: --dest wheels onnxruntime-gpu==${ORT_VERSION}
RUN python onnxruntime_lib.py wheels lib ${ORT_VERSION} onnxruntime-gpu cuda

FROM ${CUDA_IMAGE} AS gpu
ARG ORT_VERSION
RUN useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin trt
COPY --from=builder /src/target/release/trt /usr/local/bin/trt
# libonnxruntime.so and, beside it (where ONNX Runtime looks for them), its CUDA provider
# and the providers' shared library.
COPY --from=onnxruntime-gpu /ort/lib/ /opt/onnxruntime/
ENV ORT_DYLIB_PATH=/opt/onnxruntime/libonnxruntime.so.${ORT_VERSION}
# The binary runs on this image's glibc, and every library the CUDA provider links is in
# the image but the driver's libcuda.so.1, which the container toolkit mounts at run time.
RUN trt --version && ! ldd /opt/onnxruntime/libonnxruntime_providers_cuda.so | grep -v 'libcuda\.so\.1' | grep 'not found'
USER 10001:10001
# REST (KServe's default port), gRPC, metrics.
EXPOSE 8080 8001 8002
ENTRYPOINT ["trt", "serve"]
CMD ["--host=0.0.0.0", "--http-port=8080", "--model-dir=/mnt/models", "--model-name=model"]

FROM debian:trixie-slim AS cpu
ARG ORT_VERSION
# libstdc++ is in the base image (apt needs it); ONNX Runtime needs nothing else.
RUN useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin trt
COPY --from=builder /src/target/release/trt /usr/local/bin/trt
COPY --from=onnxruntime /ort/lib/ /opt/onnxruntime/
ENV ORT_DYLIB_PATH=/opt/onnxruntime/libonnxruntime.so.${ORT_VERSION}
USER 10001:10001
# REST (KServe's default port), gRPC, metrics.
EXPOSE 8080 8001 8002
# No HEALTHCHECK: Kubernetes probes /v2/health/ready and /v2/health/live (deploy/kserve).
# A ServingRuntime's `args` replace CMD and keep the ENTRYPOINT.
ENTRYPOINT ["trt", "serve"]
CMD ["--host=0.0.0.0", "--http-port=8080", "--model-dir=/mnt/models", "--model-name=model"]
