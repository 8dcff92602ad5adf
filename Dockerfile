# trt serve (ONNX Runtime backend, CPU) as a container, for KServe or `docker run`.
#   docker build -t trt-serve:latest .
#   docker run --rm -p 8080:8080 -v "$PWD/model:/mnt/models:ro" trt-serve:latest --host=0.0.0.0 \
#     --http-port=8080 --model-dir=/mnt/models --model-name=minilm
# The build is the ONNX-Runtime-only configuration, which needs no TensorRT headers;
# ONNX Runtime's C library comes from the PyPI onnxruntime wheel, pinned below as in
# scripts/setup. Nothing is downloaded when the container starts.
# scripts/check-deploy checks these steps without a container runtime.

ARG ORT_VERSION=1.31.1

FROM rust:1.95-slim-trixie AS builder
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p trt-cli --no-default-features --features onnxruntime

FROM python:3.13-slim-trixie AS onnxruntime
ARG ORT_VERSION
WORKDIR /ort
COPY deploy/docker/onnxruntime_lib.py ./
RUN python -m pip download --quiet --no-deps --only-binary=:all: --dest wheels onnxruntime==${ORT_VERSION}
RUN python onnxruntime_lib.py wheels lib ${ORT_VERSION}

FROM debian:trixie-slim
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
