// The ONNX parser: parse from bytes or file, and every recorded error.
#include "trt_shim.h"

#include "trt-sys/src/bridge.rs.h"
#include "util.h"

namespace trt_shim {

static char const *code_name(nvonnxparser::ErrorCode code) {
  using C = nvonnxparser::ErrorCode;
  switch (code) {
  case C::kSUCCESS: return "SUCCESS";
  case C::kINTERNAL_ERROR: return "INTERNAL_ERROR";
  case C::kMEM_ALLOC_FAILED: return "MEM_ALLOC_FAILED";
  case C::kMODEL_DESERIALIZE_FAILED: return "MODEL_DESERIALIZE_FAILED";
  case C::kINVALID_VALUE: return "INVALID_VALUE";
  case C::kINVALID_GRAPH: return "INVALID_GRAPH";
  case C::kINVALID_NODE: return "INVALID_NODE";
  case C::kUNSUPPORTED_GRAPH: return "UNSUPPORTED_GRAPH";
  case C::kUNSUPPORTED_NODE: return "UNSUPPORTED_NODE";
  case C::kUNSUPPORTED_NODE_ATTR: return "UNSUPPORTED_NODE_ATTR";
  case C::kUNSUPPORTED_NODE_INPUT: return "UNSUPPORTED_NODE_INPUT";
  case C::kUNSUPPORTED_NODE_DATATYPE: return "UNSUPPORTED_NODE_DATATYPE";
  case C::kUNSUPPORTED_NODE_DYNAMIC: return "UNSUPPORTED_NODE_DYNAMIC";
  case C::kUNSUPPORTED_NODE_SHAPE: return "UNSUPPORTED_NODE_SHAPE";
  case C::kREFIT_FAILED: return "REFIT_FAILED";
  }
  return "UNKNOWN";
}

// `path` (may be empty) is where external weight files are looked up.
bool parser_parse(IParser &parser, rust::Slice<const uint8_t> model, rust::Str path) {
  std::string p = str(path);
  return parser.parse(model.data(), model.size(), p.empty() ? nullptr : p.c_str());
}

bool parser_parse_file(IParser &parser, rust::Str path) {
  // verbosity: ILogger::Severity::kWARNING; messages go through the shim logger
  return parser.parseFromFile(str(path).c_str(), static_cast<int>(ILogger::Severity::kWARNING));
}

rust::Vec<OnnxParserError> parser_errors(const IParser &parser) {
  rust::Vec<OnnxParserError> errors;
  for (int i = 0; i < parser.getNbErrors(); ++i) {
    nvonnxparser::IParserError const *e = parser.getError(i);
    if (e == nullptr) {
      continue;
    }
    OnnxParserError out{};
    out.code = static_cast<int32_t>(e->code());
    out.code_name = string_or_empty(code_name(e->code()));
    out.description = string_or_empty(e->desc());
    out.file = string_or_empty(e->file());
    out.line = e->line();
    out.function = string_or_empty(e->func());
    out.node = e->node();
    out.node_name = string_or_empty(e->nodeName());
    out.node_operator = string_or_empty(e->nodeOperator());
    errors.push_back(std::move(out));
  }
  return errors;
}

bool parser_supports_operator(const IParser &parser, rust::Str op) {
  return parser.supportsOperator(str(op).c_str());
}

} // namespace trt_shim
