// Versions, the process-wide logger and error recorder.
//
// TensorRT keeps one logger per process (a second, different logger passed to a
// factory is ignored with a warning), so the shim owns a single logger that
// forwards every message to Rust, where it is routed to the `log` crate and
// captured per call on the calling thread. The error recorder likewise forwards
// each error with its ErrorCode. Both live for the whole process: TensorRT may
// log from any object until the library is unloaded, and it never is.
#include "trt_shim.h"

#include <atomic>
#include <string>

#include "trt-sys/src/bridge.rs.h"

namespace trt_shim {
namespace {

std::atomic<int32_t> g_threshold{static_cast<int32_t>(ILogger::Severity::kINFO)};

class ShimLogger final : public ILogger {
public:
  void log(Severity severity, char const *msg) noexcept override {
    auto level = static_cast<int32_t>(severity);
    // Errors always pass: the Rust side attaches them to the failing call.
    if (level > static_cast<int32_t>(Severity::kERROR) && level > g_threshold.load(std::memory_order_relaxed)) {
      return;
    }
    try {
      forward_log(level, rust::Str(msg ? msg : ""));
    } catch (...) {
      // rust::Str rejects invalid UTF-8 by throwing; a log line is not worth a crash.
    }
  }
};

class ShimErrorRecorder final : public IErrorRecorder {
public:
  int32_t getNbErrors() const noexcept override { return 0; }
  ErrorCode getErrorCode(int32_t) const noexcept override { return ErrorCode::kSUCCESS; }
  ErrorDesc getErrorDesc(int32_t) const noexcept override { return ""; }
  bool hasOverflowed() const noexcept override { return false; }
  void clear() noexcept override {}
  bool reportError(ErrorCode code, ErrorDesc desc) noexcept override {
    try {
      forward_error(static_cast<int32_t>(code), rust::Str(desc ? desc : ""));
    } catch (...) {
    }
    return false; // let TensorRT decide how to unwind the failing call
  }
  // Static lifetime: reference counting is irrelevant but must be consistent.
  RefCount incRefCount() noexcept override { return ++refs; }
  RefCount decRefCount() noexcept override { return --refs; }

private:
  std::atomic<RefCount> refs{0};
};

} // namespace

ILogger &shim_logger() {
  static ShimLogger *logger = new ShimLogger(); // never destroyed, see above
  return *logger;
}

IErrorRecorder &shim_error_recorder() {
  static ShimErrorRecorder *recorder = new ShimErrorRecorder();
  return *recorder;
}

void set_log_threshold(int32_t severity) { g_threshold.store(severity, std::memory_order_relaxed); }

int32_t header_version() { return NV_TENSORRT_VERSION; }

bool header_is_rtx() { return TRT_SHIM_RTX; }

rust::String header_version_string() {
  std::string s = std::to_string(NV_TENSORRT_MAJOR) + "." + std::to_string(NV_TENSORRT_MINOR) + "." +
                  std::to_string(NV_TENSORRT_PATCH);
  return rust::String(s);
}

} // namespace trt_shim
