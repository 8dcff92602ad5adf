// Conversions shared by the shim's source files.
#pragma once

#include <string>

#include "trt_shim.h"

namespace trt_shim {

// Callers check the rank first; extra dimensions are never read past MAX_DIMS.
inline Dims to_dims(rust::Slice<const int64_t> d) {
  Dims dims{};
  dims.nbDims = static_cast<int32_t>(d.size() > Dims::MAX_DIMS ? Dims::MAX_DIMS : d.size());
  for (int32_t i = 0; i < dims.nbDims; ++i) {
    dims.d[i] = d[i];
  }
  return dims;
}

// TensorRT reports "no dimensions" as nbDims == -1: that becomes an empty Vec.
inline rust::Vec<int64_t> from_dims(Dims const &dims) {
  rust::Vec<int64_t> v;
  for (int32_t i = 0; i < dims.nbDims && i < Dims::MAX_DIMS; ++i) {
    v.push_back(dims.d[i]);
  }
  return v;
}

// rust::Str is not NUL-terminated; TensorRT wants C strings.
inline std::string str(rust::Str s) { return std::string(s.data(), s.size()); }

inline rust::String string_or_empty(char const *s) { return rust::String::lossy(s ? s : ""); }

} // namespace trt_shim
