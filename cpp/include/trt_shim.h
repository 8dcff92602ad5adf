// The C++ half of trt-sys: thin free functions over the TensorRT C++ API.
//
// Rules (see trt-sys/src/lib.rs):
// - Every function is declared fallible on the Rust side, so cxx wraps it in a
//   try/catch: no C++ exception crosses into Rust.
// - TensorRT objects are created through factory pointers that the Rust side
//   resolved with dlopen; the shim never links against libnvinfer.
// - The header version decides what exists: features missing from the found
//   headers are compiled as "unsupported" (false / -1) instead of #ifdef-ing the
//   bridge, so one Rust bridge serves TensorRT 10.x, 11.x and TensorRT-RTX 1.x.
#pragma once

#include <cstdint>
#include <memory>

#include "NvInfer.h"
#include "NvOnnxParser.h"
#include "rust/cxx.h"

#if defined(TRT_MAJOR_RTX)
#define TRT_SHIM_RTX 1
#else
#define TRT_SHIM_RTX 0
#endif
// TensorRT 10.x is the last weakly typed line (FP16/INT8 builder flags, calibrators).
#define TRT_SHIM_WEAKLY_TYPED (!TRT_SHIM_RTX && NV_TENSORRT_MAJOR < 11)

namespace trt_shim {

using namespace nvinfer1;
using nvonnxparser::IParser;

struct OnnxParserError;
struct TensorDesc;
struct TensorFormatDesc;
struct InferredShapes;
enum class ShimBuilderFlag : uint8_t;
struct ProgressSink;
struct OutputSink;
struct CalibratorSink;
struct ProfilerSink;

// An INT8 entropy calibrator forwarding to a Rust `CalibratorSink`. Only
// TensorRT 10.x has implicit INT8 calibration; on 11.x and TensorRT-RTX the
// object exists but `config_set_int8_calibrator` reports it unsupported.
class Calibrator final {
public:
  explicit Calibrator(rust::Box<CalibratorSink> sink);
  ~Calibrator();
  struct Impl;
  std::unique_ptr<Impl> impl;
};

// Forwards TensorRT's build progress to a Rust `ProgressSink` (boxed trait object).
class ProgressMonitor final : public IProgressMonitor {
public:
  explicit ProgressMonitor(rust::Box<ProgressSink> sink);
  ~ProgressMonitor() override;
  void phaseStart(char const *phase, char const *parent, int32_t steps) noexcept override;
  bool stepComplete(char const *phase, int32_t step) noexcept override;
  void phaseFinish(char const *phase) noexcept override;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

// Forwards output (re)allocation for data-dependent shapes to a Rust `OutputSink`.
class OutputAllocator final : public IOutputAllocator {
public:
  explicit OutputAllocator(rust::Box<OutputSink> sink);
  ~OutputAllocator() override;
  void *reallocateOutputAsync(char const *name, void *current, uint64_t size, uint64_t alignment,
                              cudaStream_t stream) noexcept override;
  void notifyShape(char const *name, Dims const &dims) noexcept override;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

// Forwards per-layer times of an execution context (`IProfiler`) to a Rust `ProfilerSink`.
class Profiler final : public IProfiler {
public:
  explicit Profiler(rust::Box<ProfilerSink> sink);
  ~Profiler() override;
  void reportLayerTime(char const *layerName, float ms) noexcept override;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

// ---- versions, logging, error capture (logging.cc)
int32_t header_version();
bool header_is_rtx();
rust::String header_version_string();
void set_log_threshold(int32_t severity);
ILogger &shim_logger();
IErrorRecorder &shim_error_recorder();

// ---- factories (factories.cc): `factory` is the address of the exported
// `create*_INTERNAL` function. Raw pointers come back because a factory can
// return an invalid non-null pointer after logging an error (lean runtime
// without CUDA): the Rust side decides whether to own it.
IBuilder *create_builder(size_t factory);
IRuntime *create_runtime(size_t factory);
IParser *create_onnx_parser(size_t factory, INetworkDefinition &network);
std::unique_ptr<IRefitter> create_refitter(size_t factory, ICudaEngine &engine);

// ---- builder and config (builder.cc)
std::unique_ptr<INetworkDefinition> builder_create_network(IBuilder &builder, bool strongly_typed);
std::unique_ptr<IBuilderConfig> builder_create_config(IBuilder &builder);
IOptimizationProfile *builder_create_profile(IBuilder &builder);
std::unique_ptr<IHostMemory> builder_build_serialized(IBuilder &builder, INetworkDefinition &network,
                                                      IBuilderConfig &config);
rust::Slice<const uint8_t> host_memory_bytes(const IHostMemory &memory);

bool config_set_flag(IBuilderConfig &config, ShimBuilderFlag flag, bool on);
bool config_get_flag(const IBuilderConfig &config, ShimBuilderFlag flag);
void config_set_memory_pool_limit(IBuilderConfig &config, MemoryPoolType pool, size_t bytes);
size_t config_get_memory_pool_limit(const IBuilderConfig &config, MemoryPoolType pool);
void config_set_optimization_level(IBuilderConfig &config, int32_t level);
void config_set_hardware_compatibility(IBuilderConfig &config, HardwareCompatibilityLevel level);
void config_set_profiling_verbosity(IBuilderConfig &config, ProfilingVerbosity verbosity);
int32_t config_add_profile(IBuilderConfig &config, const IOptimizationProfile &profile);
int32_t config_nb_profiles(const IBuilderConfig &config);
bool config_set_compute_capabilities(IBuilderConfig &config, rust::Slice<const int32_t> targets);
std::unique_ptr<Calibrator> new_calibrator(rust::Box<CalibratorSink> sink);
bool config_set_int8_calibrator(IBuilderConfig &config, Calibrator &calibrator);
std::unique_ptr<ProgressMonitor> new_progress_monitor(rust::Box<ProgressSink> sink);
void config_set_progress_monitor(IBuilderConfig &config, ProgressMonitor &monitor);
void config_clear_progress_monitor(IBuilderConfig &config);
std::unique_ptr<ITimingCache> config_create_timing_cache(const IBuilderConfig &config,
                                                         rust::Slice<const uint8_t> blob);
bool config_set_timing_cache(IBuilderConfig &config, const ITimingCache &cache, bool ignore_mismatch);
std::unique_ptr<IHostMemory> timing_cache_serialize(const ITimingCache &cache);
bool timing_cache_combine(ITimingCache &cache, const ITimingCache &other, bool ignore_mismatch);

bool profile_set_dims(IOptimizationProfile &profile, rust::Str input, OptProfileSelector which,
                      rust::Slice<const int64_t> dims);
rust::Vec<int64_t> profile_get_dims(const IOptimizationProfile &profile, rust::Str input,
                                    OptProfileSelector which);
bool profile_is_valid(const IOptimizationProfile &profile);

// ---- network (network.cc)
ITensor *network_add_input(INetworkDefinition &network, rust::Str name, DataType type,
                           rust::Slice<const int64_t> dims);
void network_mark_output(INetworkDefinition &network, ITensor &tensor);
int32_t network_nb_inputs(const INetworkDefinition &network);
int32_t network_nb_outputs(const INetworkDefinition &network);
int32_t network_nb_layers(const INetworkDefinition &network);
ITensor *network_input(const INetworkDefinition &network, int32_t index);
ITensor *network_output(const INetworkDefinition &network, int32_t index);
ILayer *network_layer(const INetworkDefinition &network, int32_t index);
bool network_is_strongly_typed(const INetworkDefinition &network);

ILayer *network_add_constant(INetworkDefinition &network, rust::Slice<const int64_t> dims, DataType type,
                             rust::Slice<const uint8_t> bytes, int64_t count);
ILayer *network_add_activation(INetworkDefinition &network, ITensor &input, ActivationType kind, float alpha,
                               float beta);
ILayer *network_add_elementwise(INetworkDefinition &network, ITensor &a, ITensor &b, ElementWiseOperation op);
ILayer *network_add_unary(INetworkDefinition &network, ITensor &input, UnaryOperation op);
ILayer *network_add_matmul(INetworkDefinition &network, ITensor &a, MatrixOperation op_a, ITensor &b,
                           MatrixOperation op_b);
ILayer *network_add_softmax(INetworkDefinition &network, ITensor &input, uint32_t axes);
ILayer *network_add_reduce(INetworkDefinition &network, ITensor &input, ReduceOperation op, uint32_t axes,
                           bool keep_dims);
ILayer *network_add_shuffle(INetworkDefinition &network, ITensor &input, rust::Slice<const int32_t> first,
                            bool has_reshape, rust::Slice<const int64_t> reshape, rust::Slice<const int32_t> second,
                            bool zero_is_placeholder);
ILayer *network_add_shuffle_dynamic(INetworkDefinition &network, ITensor &input, ITensor &shape);
ILayer *network_add_gather(INetworkDefinition &network, ITensor &data, ITensor &indices, int32_t axis);
ILayer *network_add_concat(INetworkDefinition &network, rust::Slice<const size_t> inputs, int32_t axis);
ILayer *network_add_slice(INetworkDefinition &network, ITensor &input, rust::Slice<const int64_t> start,
                          rust::Slice<const int64_t> size, rust::Slice<const int64_t> stride);
ILayer *network_add_slice_dynamic(INetworkDefinition &network, ITensor &input, ITensor &start, ITensor &size,
                                  ITensor &stride);
ILayer *network_add_cast(INetworkDefinition &network, ITensor &input, DataType to);
ILayer *network_add_normalization(INetworkDefinition &network, ITensor &input, ITensor &scale, ITensor &bias,
                                  uint32_t axes, float epsilon);
ILayer *network_add_select(INetworkDefinition &network, ITensor &cond, ITensor &a, ITensor &b);
ILayer *network_add_identity(INetworkDefinition &network, ITensor &input);
ILayer *network_add_shape(INetworkDefinition &network, ITensor &input);
ILayer *network_add_fill(INetworkDefinition &network, int64_t length, double start, double delta, DataType type);
ILayer *network_add_quantize(INetworkDefinition &network, ITensor &input, ITensor &scale, DataType to);
ILayer *network_add_dequantize(INetworkDefinition &network, ITensor &input, ITensor &scale, DataType to);

rust::String layer_name(const ILayer &layer);
void layer_set_name(ILayer &layer, rust::Str name);
LayerType layer_type(const ILayer &layer);
int32_t layer_nb_outputs(const ILayer &layer);
int32_t layer_nb_inputs(const ILayer &layer);
ITensor *layer_output(const ILayer &layer, int32_t index);
ITensor *layer_input(const ILayer &layer, int32_t index);

rust::String tensor_name(const ITensor &tensor);
void tensor_set_name(ITensor &tensor, rust::Str name);
DataType tensor_type(const ITensor &tensor);
rust::Vec<int64_t> tensor_dims(const ITensor &tensor);
bool tensor_is_shape(const ITensor &tensor);
bool tensor_is_input(const ITensor &tensor);
bool tensor_is_output(const ITensor &tensor);

// ---- ONNX parser (onnx.cc)
bool parser_parse(IParser &parser, rust::Slice<const uint8_t> model, rust::Str path);
bool parser_parse_file(IParser &parser, rust::Str path);
rust::Vec<OnnxParserError> parser_errors(const IParser &parser);
bool parser_supports_operator(const IParser &parser, rust::Str op);

// ---- runtime, engine, context (runtime.cc)
std::unique_ptr<ICudaEngine> runtime_deserialize(IRuntime &runtime, rust::Slice<const uint8_t> plan);
void runtime_set_error_recorder(IRuntime &runtime);
int32_t engine_nb_io(const ICudaEngine &engine);
int32_t engine_nb_layers(const ICudaEngine &engine);
int32_t engine_nb_profiles(const ICudaEngine &engine);
int64_t engine_device_memory_size(const ICudaEngine &engine);
rust::String engine_name(const ICudaEngine &engine);
TensorDesc engine_tensor(const ICudaEngine &engine, int32_t index);
rust::Vec<int64_t> engine_profile_dims(const ICudaEngine &engine, rust::Str name, int32_t profile,
                                       OptProfileSelector which);
std::unique_ptr<IHostMemory> engine_serialize(const ICudaEngine &engine);
rust::String engine_layer_info(const ICudaEngine &engine, bool json);
TensorFormatDesc engine_tensor_format(const ICudaEngine &engine, rust::Str name, int32_t profile);
// `specialization` (DynamicShapesKernelSpecializationStrategy) and `rtx_graphs`
// (CudaGraphStrategy) are TensorRT-RTX options; -1 keeps the default.
std::unique_ptr<IExecutionContext> engine_create_context(ICudaEngine &engine,
                                                         ExecutionContextAllocationStrategy strategy,
                                                         int32_t specialization, int32_t rtx_graphs);

bool context_set_profile(IExecutionContext &context, int32_t profile, size_t stream);
int32_t context_profile(const IExecutionContext &context);
bool context_set_input_shape(IExecutionContext &context, rust::Str name, rust::Slice<const int64_t> dims);
rust::Vec<int64_t> context_tensor_shape(const IExecutionContext &context, rust::Str name);
InferredShapes context_infer_shapes(IExecutionContext &context);
// 1 capturable, 0 not, -1 no isStreamCapturable in these headers (only TensorRT-RTX has it).
int32_t context_is_stream_capturable(const IExecutionContext &context, size_t stream);
bool context_set_tensor_address(IExecutionContext &context, rust::Str name, size_t address);
bool context_enqueue(IExecutionContext &context, size_t stream);
void context_set_device_memory(IExecutionContext &context, size_t address, int64_t size);
std::unique_ptr<OutputAllocator> new_output_allocator(rust::Box<OutputSink> sink);
bool context_set_output_allocator(IExecutionContext &context, rust::Str name, OutputAllocator &allocator);
// Calls reallocateOutputAsync through IOutputAllocator, as TensorRT does (lets tests check the forwarding).
size_t output_allocator_reallocate(OutputAllocator &allocator, rust::Str name, size_t current, uint64_t size,
                                   uint64_t alignment, size_t stream);

// ---- refit (runtime.cc)
bool refitter_set_named_weights(IRefitter &refitter, rust::Str name, DataType type, rust::Slice<const uint8_t> bytes,
                                int64_t count);
rust::Vec<rust::String> refitter_missing_weights(IRefitter &refitter);
rust::Vec<rust::String> refitter_all_weights(IRefitter &refitter);
bool refitter_refit(IRefitter &refitter, size_t stream);

// ---- weight streaming (runtime.cc)
bool engine_set_weight_streaming_budget(ICudaEngine &engine, int64_t bytes);
int64_t engine_weight_streaming_budget(const ICudaEngine &engine);
int64_t engine_streamable_weights_size(const ICudaEngine &engine);
int64_t engine_weight_streaming_automatic_budget(const ICudaEngine &engine);
int64_t engine_weight_streaming_scratch_memory_size(const ICudaEngine &engine);

// ---- per-layer profiling (runtime.cc)
std::unique_ptr<Profiler> new_profiler(rust::Box<ProfilerSink> sink);
void profiler_report(Profiler &profiler, rust::Str layer, float ms);
void context_set_profiler(IExecutionContext &context, Profiler &profiler);
void context_clear_profiler(IExecutionContext &context);
void context_set_enqueue_emits_profile(IExecutionContext &context, bool on);
bool context_report_to_profiler(const IExecutionContext &context);

} // namespace trt_shim
