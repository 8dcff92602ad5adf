// Runtime, engine, engine inspector, execution context, output allocator.
#include "trt_shim.h"

#include <mutex>
#include <string>
#include <vector>

#include "trt-sys/src/bridge.rs.h"
#include "util.h"

namespace trt_shim {

std::unique_ptr<ICudaEngine> runtime_deserialize(IRuntime &runtime, rust::Slice<const uint8_t> plan) {
  return std::unique_ptr<ICudaEngine>(runtime.deserializeCudaEngine(plan.data(), plan.size()));
}

void runtime_set_error_recorder(IRuntime &runtime) { runtime.setErrorRecorder(&shim_error_recorder()); }

int32_t engine_nb_io(const ICudaEngine &engine) { return engine.getNbIOTensors(); }
int32_t engine_nb_layers(const ICudaEngine &engine) { return engine.getNbLayers(); }
int32_t engine_nb_profiles(const ICudaEngine &engine) { return engine.getNbOptimizationProfiles(); }
int64_t engine_device_memory_size(const ICudaEngine &engine) { return engine.getDeviceMemorySizeV2(); }
rust::String engine_name(const ICudaEngine &engine) { return string_or_empty(engine.getName()); }

TensorDesc engine_tensor(const ICudaEngine &engine, int32_t index) {
  TensorDesc out{};
  char const *name = engine.getIOTensorName(index);
  if (name == nullptr) {
    out.mode = TensorIOMode::kNONE;
    return out;
  }
  out.name = string_or_empty(name);
  out.mode = engine.getTensorIOMode(name);
  out.dtype = engine.getTensorDataType(name);
  out.shape = from_dims(engine.getTensorShape(name));
  out.format = engine.getTensorFormat(name);
  out.format_desc = string_or_empty(engine.getTensorFormatDesc(name));
  out.vectorized_dim = engine.getTensorVectorizedDim(name);
  out.components_per_element = engine.getTensorComponentsPerElement(name);
  out.is_shape_binding = engine.isShapeInferenceIO(name);
  out.location = engine.getTensorLocation(name);
  return out;
}

rust::Vec<int64_t> engine_profile_dims(const ICudaEngine &engine, rust::Str name, int32_t profile,
                                       OptProfileSelector which) {
  return from_dims(engine.getProfileShape(str(name).c_str(), profile, which));
}

std::unique_ptr<IHostMemory> engine_serialize(const ICudaEngine &engine) {
  return std::unique_ptr<IHostMemory>(engine.serialize());
}

rust::String engine_layer_info(const ICudaEngine &engine, bool json) {
  std::unique_ptr<IEngineInspector> inspector(engine.createEngineInspector());
  if (!inspector) {
    return rust::String();
  }
  auto format = json ? LayerInformationFormat::kJSON : LayerInformationFormat::kONELINE;
  return string_or_empty(inspector->getEngineInformation(format));
}

TensorFormatDesc engine_tensor_format(const ICudaEngine &engine, rust::Str name, int32_t profile) {
  std::string n = str(name);
  TensorFormatDesc out{};
  // The profile-index overloads: formats may differ between profiles.
  out.format = engine.getTensorFormat(n.c_str(), profile);
  out.format_desc = string_or_empty(engine.getTensorFormatDesc(n.c_str(), profile));
  out.vectorized_dim = engine.getTensorVectorizedDim(n.c_str(), profile);
  out.components_per_element = engine.getTensorComponentsPerElement(n.c_str(), profile);
  return out;
}

std::unique_ptr<IExecutionContext> engine_create_context(ICudaEngine &engine,
                                                         ExecutionContextAllocationStrategy strategy,
                                                         int32_t specialization, int32_t rtx_graphs) {
  std::unique_ptr<IRuntimeConfig> config(engine.createRuntimeConfig());
  if (!config) {
    return nullptr;
  }
  config->setExecutionContextAllocationStrategy(strategy);
#if TRT_SHIM_RTX
  if (specialization >= 0) {
    config->setDynamicShapesKernelSpecializationStrategy(
        static_cast<DynamicShapesKernelSpecializationStrategy>(specialization));
  }
  if (rtx_graphs >= 0 && !config->setCudaGraphStrategy(static_cast<CudaGraphStrategy>(rtx_graphs))) {
    return nullptr;
  }
#else
  // Only TensorRT-RTX has a JIT; the Rust side never asks for these elsewhere.
  if (specialization >= 0 || rtx_graphs >= 0) {
    return nullptr;
  }
#endif
  return std::unique_ptr<IExecutionContext>(engine.createExecutionContext(config.get()));
}

bool context_set_profile(IExecutionContext &context, int32_t profile, size_t stream) {
  return context.setOptimizationProfileAsync(profile, reinterpret_cast<cudaStream_t>(stream));
}

int32_t context_profile(const IExecutionContext &context) { return context.getOptimizationProfile(); }

bool context_set_input_shape(IExecutionContext &context, rust::Str name, rust::Slice<const int64_t> dims) {
  if (dims.size() > static_cast<size_t>(Dims::MAX_DIMS)) {
    return false;
  }
  return context.setInputShape(str(name).c_str(), to_dims(dims));
}

rust::Vec<int64_t> context_tensor_shape(const IExecutionContext &context, rust::Str name) {
  return from_dims(context.getTensorShape(str(name).c_str()));
}

InferredShapes context_infer_shapes(IExecutionContext &context) {
  // The documented check for the name-based API (allInputDimensionsSpecified is not).
  InferredShapes out{};
  int32_t n = context.inferShapes(0, nullptr);
  out.status = n;
  if (n > 0) {
    std::vector<char const *> names(static_cast<size_t>(n), nullptr);
    int32_t again = context.inferShapes(n, names.data());
    out.status = again;
    for (int32_t i = 0; i < again && i < n; ++i) {
      out.missing.push_back(string_or_empty(names[static_cast<size_t>(i)]));
    }
  }
  return out;
}

int32_t context_is_stream_capturable(const IExecutionContext &context, size_t stream) {
#if TRT_SHIM_RTX
  return context.isStreamCapturable(reinterpret_cast<cudaStream_t>(stream)) ? 1 : 0;
#else
  // TensorRT 11.x has no such query; 10.x declares it only under
  // ENABLE_FEATURE_DISABLE_RUNTIME_ALLOCATION, a build variant whose vtable
  // differs, so the standard library must not be called through it.
  (void)context;
  (void)stream;
  return -1;
#endif
}

bool context_set_tensor_address(IExecutionContext &context, rust::Str name, size_t address) {
  return context.setTensorAddress(str(name).c_str(), reinterpret_cast<void *>(address));
}

bool context_enqueue(IExecutionContext &context, size_t stream) {
  return context.enqueueV3(reinterpret_cast<cudaStream_t>(stream));
}

void context_set_device_memory(IExecutionContext &context, size_t address, int64_t size) {
  context.setDeviceMemoryV2(reinterpret_cast<void *>(address), size);
}

struct OutputAllocator::Impl {
  std::mutex lock;
  rust::Box<OutputSink> sink;
  explicit Impl(rust::Box<OutputSink> s) : sink(std::move(s)) {}
};

OutputAllocator::OutputAllocator(rust::Box<OutputSink> sink) : impl(new Impl(std::move(sink))) {}
OutputAllocator::~OutputAllocator() = default;

void *OutputAllocator::reallocateOutputAsync(char const *name, void *current, uint64_t size, uint64_t alignment,
                                             cudaStream_t stream) noexcept {
  try {
    std::lock_guard<std::mutex> guard(impl->lock);
    // The current allocation and the stream go to Rust, so memory can be freed in stream order.
    return reinterpret_cast<void *>(impl->sink->reallocate(rust::Str(name ? name : ""),
                                                           reinterpret_cast<size_t>(current), size, alignment,
                                                           reinterpret_cast<size_t>(stream)));
  } catch (...) {
    return nullptr;
  }
}

void OutputAllocator::notifyShape(char const *name, Dims const &dims) noexcept {
  try {
    std::lock_guard<std::mutex> guard(impl->lock);
    rust::Vec<int64_t> d = from_dims(dims);
    impl->sink->notify_shape(rust::Str(name ? name : ""), rust::Slice<const int64_t>(d.data(), d.size()));
  } catch (...) {
  }
}

std::unique_ptr<OutputAllocator> new_output_allocator(rust::Box<OutputSink> sink) {
  return std::make_unique<OutputAllocator>(std::move(sink));
}

size_t output_allocator_reallocate(OutputAllocator &allocator, rust::Str name, size_t current, uint64_t size,
                                   uint64_t alignment, size_t stream) {
  // Through the base class, exactly as TensorRT calls it.
  IOutputAllocator &base = allocator;
  std::string n = str(name);
  return reinterpret_cast<size_t>(base.reallocateOutputAsync(n.c_str(), reinterpret_cast<void *>(current), size,
                                                             alignment, reinterpret_cast<cudaStream_t>(stream)));
}

bool context_set_output_allocator(IExecutionContext &context, rust::Str name, OutputAllocator &allocator) {
  return context.setOutputAllocator(str(name).c_str(), &allocator);
}

bool refitter_set_named_weights(IRefitter &refitter, rust::Str name, DataType type, rust::Slice<const uint8_t> bytes,
                                int64_t count) {
  // TensorRT keeps the pointer until the refit: the Rust side holds the bytes that long.
  Weights w{type, bytes.data(), count};
  return refitter.setNamedWeights(str(name).c_str(), w);
}

namespace {
template <typename F> rust::Vec<rust::String> weight_names(F list) {
  int32_t n = list(0, nullptr);
  std::vector<char const *> names(n > 0 ? static_cast<size_t>(n) : 0);
  if (n > 0) {
    list(n, names.data());
  }
  rust::Vec<rust::String> out;
  for (char const *name : names) {
    out.push_back(string_or_empty(name));
  }
  return out;
}
} // namespace

rust::Vec<rust::String> refitter_missing_weights(IRefitter &refitter) {
  return weight_names([&](int32_t n, char const **names) { return refitter.getMissingWeights(n, names); });
}

rust::Vec<rust::String> refitter_all_weights(IRefitter &refitter) {
  return weight_names([&](int32_t n, char const **names) { return refitter.getAllWeights(n, names); });
}

bool refitter_refit(IRefitter &refitter, size_t stream) {
  return refitter.refitCudaEngineAsync(reinterpret_cast<cudaStream_t>(stream));
}

bool engine_set_weight_streaming_budget(ICudaEngine &engine, int64_t bytes) {
  return engine.setWeightStreamingBudgetV2(bytes);
}
int64_t engine_weight_streaming_budget(const ICudaEngine &engine) { return engine.getWeightStreamingBudgetV2(); }
int64_t engine_streamable_weights_size(const ICudaEngine &engine) { return engine.getStreamableWeightsSize(); }
int64_t engine_weight_streaming_automatic_budget(const ICudaEngine &engine) {
  return engine.getWeightStreamingAutomaticBudget();
}
int64_t engine_weight_streaming_scratch_memory_size(const ICudaEngine &engine) {
  return engine.getWeightStreamingScratchMemorySize();
}

struct Profiler::Impl {
  std::mutex lock; // reports of one context arrive on one thread, but reportToProfiler may race an enqueue
  rust::Box<ProfilerSink> sink;
  explicit Impl(rust::Box<ProfilerSink> s) : sink(std::move(s)) {}
};

Profiler::Profiler(rust::Box<ProfilerSink> sink) : impl(new Impl(std::move(sink))) {}
Profiler::~Profiler() = default;

void Profiler::reportLayerTime(char const *layerName, float ms) noexcept {
  try {
    std::lock_guard<std::mutex> guard(impl->lock);
    impl->sink->report_layer_time(rust::Str(layerName ? layerName : ""), ms);
  } catch (...) {
  }
}

std::unique_ptr<Profiler> new_profiler(rust::Box<ProfilerSink> sink) { return std::make_unique<Profiler>(std::move(sink)); }

void profiler_report(Profiler &profiler, rust::Str layer, float ms) {
  // Through the base class, exactly as TensorRT calls it.
  IProfiler &base = profiler;
  std::string n = str(layer);
  base.reportLayerTime(n.c_str(), ms);
}

void context_set_profiler(IExecutionContext &context, Profiler &profiler) { context.setProfiler(&profiler); }

void context_clear_profiler(IExecutionContext &context) { context.setProfiler(nullptr); }

void context_set_enqueue_emits_profile(IExecutionContext &context, bool on) { context.setEnqueueEmitsProfile(on); }

bool context_report_to_profiler(const IExecutionContext &context) { return context.reportToProfiler(); }

} // namespace trt_shim
