// Builder, builder config, optimization profiles, timing cache, progress monitor.
#include "trt_shim.h"

#include <mutex>
#include <string>

#include "trt-sys/src/bridge.rs.h"
#include "util.h"

namespace trt_shim {


std::unique_ptr<INetworkDefinition> builder_create_network(IBuilder &builder, bool strongly_typed) {
  NetworkDefinitionCreationFlags flags = 0;
#if TRT_SHIM_WEAKLY_TYPED
  if (strongly_typed) {
    flags |= 1U << static_cast<uint32_t>(NetworkDefinitionCreationFlag::kSTRONGLY_TYPED);
  }
#else
  (void)strongly_typed; // 11.x and TensorRT-RTX networks are always strongly typed
#endif
  std::unique_ptr<INetworkDefinition> network(builder.createNetworkV2(flags));
  if (network) {
    network->setErrorRecorder(&shim_error_recorder());
  }
  return network;
}

std::unique_ptr<IBuilderConfig> builder_create_config(IBuilder &builder) {
  return std::unique_ptr<IBuilderConfig>(builder.createBuilderConfig());
}

IOptimizationProfile *builder_create_profile(IBuilder &builder) { return builder.createOptimizationProfile(); }

std::unique_ptr<IHostMemory> builder_build_serialized(IBuilder &builder, INetworkDefinition &network,
                                                      IBuilderConfig &config) {
  return std::unique_ptr<IHostMemory>(builder.buildSerializedNetwork(network, config));
}

rust::Slice<const uint8_t> host_memory_bytes(const IHostMemory &memory) {
  auto data = static_cast<const uint8_t *>(memory.data());
  if (data == nullptr) {
    return rust::Slice<const uint8_t>();
  }
  return rust::Slice<const uint8_t>(data, memory.size());
}

// Builder flags by name: the numbering differs between versions, and some
// flags exist only in the weakly typed 10.x line.
static bool map_flag(ShimBuilderFlag flag, BuilderFlag &out) {
  switch (flag) {
#if TRT_SHIM_WEAKLY_TYPED
  case ShimBuilderFlag::Fp16: out = BuilderFlag::kFP16; return true;
  case ShimBuilderFlag::Bf16: out = BuilderFlag::kBF16; return true;
  case ShimBuilderFlag::Int8: out = BuilderFlag::kINT8; return true;
  case ShimBuilderFlag::Fp8: out = BuilderFlag::kFP8; return true;
  case ShimBuilderFlag::ObeyPrecisionConstraints: out = BuilderFlag::kOBEY_PRECISION_CONSTRAINTS; return true;
  case ShimBuilderFlag::PreferPrecisionConstraints: out = BuilderFlag::kPREFER_PRECISION_CONSTRAINTS; return true;
#endif
  case ShimBuilderFlag::Tf32: out = BuilderFlag::kTF32; return true;
  case ShimBuilderFlag::Refit: out = BuilderFlag::kREFIT; return true;
  case ShimBuilderFlag::VersionCompatible: out = BuilderFlag::kVERSION_COMPATIBLE; return true;
  case ShimBuilderFlag::ExcludeLeanRuntime: out = BuilderFlag::kEXCLUDE_LEAN_RUNTIME; return true;
  case ShimBuilderFlag::StripPlan: out = BuilderFlag::kSTRIP_PLAN; return true;
  case ShimBuilderFlag::Debug: out = BuilderFlag::kDEBUG; return true;
  case ShimBuilderFlag::DisableTimingCache: out = BuilderFlag::kDISABLE_TIMING_CACHE; return true;
  case ShimBuilderFlag::ErrorOnTimingCacheMiss: out = BuilderFlag::kERROR_ON_TIMING_CACHE_MISS; return true;
  case ShimBuilderFlag::EditableTimingCache: out = BuilderFlag::kEDITABLE_TIMING_CACHE; return true;
  case ShimBuilderFlag::SparseWeights: out = BuilderFlag::kSPARSE_WEIGHTS; return true;
  case ShimBuilderFlag::StrictNans: out = BuilderFlag::kSTRICT_NANS; return true;
  case ShimBuilderFlag::WeightStreaming: out = BuilderFlag::kWEIGHT_STREAMING; return true;
  default: return false;
  }
}

bool config_set_flag(IBuilderConfig &config, ShimBuilderFlag flag, bool on) {
  BuilderFlag f;
  if (!map_flag(flag, f)) {
    return false;
  }
  if (on) {
    config.setFlag(f);
  } else {
    config.clearFlag(f);
  }
  return true;
}

bool config_get_flag(const IBuilderConfig &config, ShimBuilderFlag flag) {
  BuilderFlag f;
  return map_flag(flag, f) && config.getFlag(f);
}

void config_set_memory_pool_limit(IBuilderConfig &config, MemoryPoolType pool, size_t bytes) {
  config.setMemoryPoolLimit(pool, bytes);
}

size_t config_get_memory_pool_limit(const IBuilderConfig &config, MemoryPoolType pool) {
  return config.getMemoryPoolLimit(pool);
}

void config_set_optimization_level(IBuilderConfig &config, int32_t level) {
  config.setBuilderOptimizationLevel(level);
}

void config_set_hardware_compatibility(IBuilderConfig &config, HardwareCompatibilityLevel level) {
  config.setHardwareCompatibilityLevel(level);
}

void config_set_profiling_verbosity(IBuilderConfig &config, ProfilingVerbosity verbosity) {
  config.setProfilingVerbosity(verbosity);
}

int32_t config_add_profile(IBuilderConfig &config, const IOptimizationProfile &profile) {
  return config.addOptimizationProfile(&profile);
}

int32_t config_nb_profiles(const IBuilderConfig &config) { return config.getNbOptimizationProfiles(); }

bool config_set_compute_capabilities(IBuilderConfig &config, rust::Slice<const int32_t> targets) {
#if TRT_SHIM_RTX
  if (!config.setNbComputeCapabilities(static_cast<int32_t>(targets.size()))) {
    return false;
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    if (!config.setComputeCapability(static_cast<ComputeCapability>(targets[i]), static_cast<int32_t>(i))) {
      return false;
    }
  }
  return true;
#else
  (void)config;
  (void)targets;
  return false; // only TensorRT-RTX builds for a list of compute capabilities
#endif
}

struct ProgressMonitor::Impl {
  std::mutex lock; // TensorRT may report progress from several builder threads
  rust::Box<ProgressSink> sink;
  explicit Impl(rust::Box<ProgressSink> s) : sink(std::move(s)) {}
};

ProgressMonitor::ProgressMonitor(rust::Box<ProgressSink> sink) : impl(new Impl(std::move(sink))) {}
ProgressMonitor::~ProgressMonitor() = default;

void ProgressMonitor::phaseStart(char const *phase, char const *parent, int32_t steps) noexcept {
  try {
    std::lock_guard<std::mutex> guard(impl->lock);
    impl->sink->phase_start(rust::Str(phase ? phase : ""), rust::Str(parent ? parent : ""), steps);
  } catch (...) {
  }
}

bool ProgressMonitor::stepComplete(char const *phase, int32_t step) noexcept {
  try {
    std::lock_guard<std::mutex> guard(impl->lock);
    return impl->sink->step_complete(rust::Str(phase ? phase : ""), step);
  } catch (...) {
    return true;
  }
}

void ProgressMonitor::phaseFinish(char const *phase) noexcept {
  try {
    std::lock_guard<std::mutex> guard(impl->lock);
    impl->sink->phase_finish(rust::Str(phase ? phase : ""));
  } catch (...) {
  }
}

#if TRT_SHIM_WEAKLY_TYPED
struct Calibrator::Impl final : public IInt8EntropyCalibrator2 {
  rust::Box<CalibratorSink> sink;
  explicit Impl(rust::Box<CalibratorSink> s) : sink(std::move(s)) {}

  int32_t getBatchSize() const noexcept override {
    try {
      return sink->batch_size();
    } catch (...) {
      return 0;
    }
  }
  bool getBatch(void *bindings[], char const *names[], int32_t nb) noexcept override {
    try {
      if (!sink->next_batch()) {
        return false; // calibration data exhausted
      }
      for (int32_t i = 0; i < nb; ++i) {
        size_t address = sink->input_address(rust::Str(names[i] ? names[i] : ""));
        if (address == 0) {
          return false;
        }
        bindings[i] = reinterpret_cast<void *>(address);
      }
      return true;
    } catch (...) {
      return false;
    }
  }
  void const *readCalibrationCache(std::size_t &length) noexcept override {
    try {
      rust::Slice<const uint8_t> cache = sink->cache();
      length = cache.size();
      return cache.empty() ? nullptr : cache.data();
    } catch (...) {
      length = 0;
      return nullptr;
    }
  }
  void writeCalibrationCache(void const *ptr, std::size_t length) noexcept override {
    try {
      sink->write_cache(rust::Slice<const uint8_t>(static_cast<const uint8_t *>(ptr), length));
    } catch (...) {
    }
  }
};

bool config_set_int8_calibrator(IBuilderConfig &config, Calibrator &calibrator) {
  config.setInt8Calibrator(calibrator.impl.get());
  return true;
}
#else
struct Calibrator::Impl {
  rust::Box<CalibratorSink> sink;
  explicit Impl(rust::Box<CalibratorSink> s) : sink(std::move(s)) {}
};

bool config_set_int8_calibrator(IBuilderConfig &, Calibrator &) { return false; }
#endif

Calibrator::Calibrator(rust::Box<CalibratorSink> sink) : impl(new Impl(std::move(sink))) {}
Calibrator::~Calibrator() = default;

std::unique_ptr<Calibrator> new_calibrator(rust::Box<CalibratorSink> sink) {
  return std::make_unique<Calibrator>(std::move(sink));
}

std::unique_ptr<ProgressMonitor> new_progress_monitor(rust::Box<ProgressSink> sink) {
  return std::make_unique<ProgressMonitor>(std::move(sink));
}

void config_set_progress_monitor(IBuilderConfig &config, ProgressMonitor &monitor) {
  config.setProgressMonitor(&monitor);
}

void config_clear_progress_monitor(IBuilderConfig &config) { config.setProgressMonitor(nullptr); }

std::unique_ptr<ITimingCache> config_create_timing_cache(const IBuilderConfig &config,
                                                         rust::Slice<const uint8_t> blob) {
  return std::unique_ptr<ITimingCache>(config.createTimingCache(blob.data(), blob.size()));
}

bool config_set_timing_cache(IBuilderConfig &config, const ITimingCache &cache, bool ignore_mismatch) {
  return config.setTimingCache(cache, ignore_mismatch);
}

std::unique_ptr<IHostMemory> timing_cache_serialize(const ITimingCache &cache) {
  return std::unique_ptr<IHostMemory>(cache.serialize());
}

bool timing_cache_combine(ITimingCache &cache, const ITimingCache &other, bool ignore_mismatch) {
  return cache.combine(other, ignore_mismatch);
}

bool profile_set_dims(IOptimizationProfile &profile, rust::Str input, OptProfileSelector which,
                      rust::Slice<const int64_t> dims) {
  if (dims.size() > static_cast<size_t>(Dims::MAX_DIMS)) {
    return false;
  }
  return profile.setDimensions(str(input).c_str(), which, to_dims(dims));
}

rust::Vec<int64_t> profile_get_dims(const IOptimizationProfile &profile, rust::Str input, OptProfileSelector which) {
  Dims d = profile.getDimensions(str(input).c_str(), which);
  if (d.nbDims < 0) {
    return rust::Vec<int64_t>();
  }
  return from_dims(d);
}

bool profile_is_valid(const IOptimizationProfile &profile) { return profile.isValid(); }

} // namespace trt_shim
