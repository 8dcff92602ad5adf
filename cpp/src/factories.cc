// Calling TensorRT's exported factory functions through addresses resolved by
// the Rust side (dlopen/dlsym), with the shim's logger.
#include "trt_shim.h"

#include "trt-sys/src/bridge.rs.h"

namespace trt_shim {

using Factory2 = void *(*)(void *, int32_t);
using Factory3 = void *(*)(void *, void *, int);

IBuilder *create_builder(size_t factory) {
  auto create = reinterpret_cast<Factory2>(factory);
  return static_cast<IBuilder *>(create(&shim_logger(), NV_TENSORRT_VERSION));
}

IRuntime *create_runtime(size_t factory) {
  auto create = reinterpret_cast<Factory2>(factory);
  return static_cast<IRuntime *>(create(&shim_logger(), NV_TENSORRT_VERSION));
}

IParser *create_onnx_parser(size_t factory, INetworkDefinition &network) {
  auto create = reinterpret_cast<Factory3>(factory);
  return static_cast<IParser *>(create(&network, &shim_logger(), NV_ONNX_PARSER_VERSION));
}

std::unique_ptr<IRefitter> create_refitter(size_t factory, ICudaEngine &engine) {
  auto create = reinterpret_cast<Factory3>(factory);
  return std::unique_ptr<IRefitter>(static_cast<IRefitter *>(create(&engine, &shim_logger(), NV_TENSORRT_VERSION)));
}

} // namespace trt_shim
