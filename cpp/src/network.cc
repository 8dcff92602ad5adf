// Network definition: inputs, outputs, layers, tensors.
//
// Layer parameters are applied in the same call that adds the layer, so the
// Rust side never holds a half-configured layer. Every function returns the
// layer (or null when TensorRT refused it; the reason is in the captured log).
#include "trt_shim.h"

#include <string>
#include <vector>

#include "trt-sys/src/bridge.rs.h"
#include "util.h"

namespace trt_shim {

ITensor *network_add_input(INetworkDefinition &network, rust::Str name, DataType type,
                           rust::Slice<const int64_t> dims) {
  if (dims.size() > static_cast<size_t>(Dims::MAX_DIMS)) {
    return nullptr;
  }
  return network.addInput(str(name).c_str(), type, to_dims(dims));
}

void network_mark_output(INetworkDefinition &network, ITensor &tensor) { network.markOutput(tensor); }
int32_t network_nb_inputs(const INetworkDefinition &network) { return network.getNbInputs(); }
int32_t network_nb_outputs(const INetworkDefinition &network) { return network.getNbOutputs(); }
int32_t network_nb_layers(const INetworkDefinition &network) { return network.getNbLayers(); }
ITensor *network_input(const INetworkDefinition &network, int32_t index) { return network.getInput(index); }
ITensor *network_output(const INetworkDefinition &network, int32_t index) { return network.getOutput(index); }
ILayer *network_layer(const INetworkDefinition &network, int32_t index) { return network.getLayer(index); }

bool network_is_strongly_typed(const INetworkDefinition &network) {
#if TRT_SHIM_WEAKLY_TYPED
  return network.getFlag(NetworkDefinitionCreationFlag::kSTRONGLY_TYPED);
#else
  (void)network;
  return true;
#endif
}

// TensorRT does not copy constant weights: `bytes` must outlive the build. The
// Rust Network keeps every constant's storage alive for its own lifetime.
ILayer *network_add_constant(INetworkDefinition &network, rust::Slice<const int64_t> dims, DataType type,
                             rust::Slice<const uint8_t> bytes, int64_t count) {
  if (dims.size() > static_cast<size_t>(Dims::MAX_DIMS)) {
    return nullptr;
  }
  Weights w{type, bytes.data(), count};
  return network.addConstant(to_dims(dims), w);
}

ILayer *network_add_activation(INetworkDefinition &network, ITensor &input, ActivationType kind, float alpha,
                               float beta) {
  IActivationLayer *layer = network.addActivation(input, kind);
  if (layer) {
    layer->setAlpha(alpha);
    layer->setBeta(beta);
  }
  return layer;
}

ILayer *network_add_elementwise(INetworkDefinition &network, ITensor &a, ITensor &b, ElementWiseOperation op) {
  return network.addElementWise(a, b, op);
}

ILayer *network_add_unary(INetworkDefinition &network, ITensor &input, UnaryOperation op) {
  return network.addUnary(input, op);
}

ILayer *network_add_matmul(INetworkDefinition &network, ITensor &a, MatrixOperation op_a, ITensor &b,
                           MatrixOperation op_b) {
  return network.addMatrixMultiply(a, op_a, b, op_b);
}

ILayer *network_add_softmax(INetworkDefinition &network, ITensor &input, uint32_t axes) {
  ISoftMaxLayer *layer = network.addSoftMax(input);
  if (layer) {
    layer->setAxes(axes);
  }
  return layer;
}

ILayer *network_add_reduce(INetworkDefinition &network, ITensor &input, ReduceOperation op, uint32_t axes,
                           bool keep_dims) {
  return network.addReduce(input, op, axes, keep_dims);
}

static bool to_permutation(rust::Slice<const int32_t> order, Permutation &out) {
  if (order.size() > static_cast<size_t>(Dims::MAX_DIMS)) {
    return false;
  }
  for (int32_t i = 0; i < Dims::MAX_DIMS; ++i) {
    out.order[i] = i;
  }
  for (size_t i = 0; i < order.size(); ++i) {
    out.order[i] = order[i];
  }
  return true;
}

ILayer *network_add_shuffle(INetworkDefinition &network, ITensor &input, rust::Slice<const int32_t> first,
                            bool has_reshape, rust::Slice<const int64_t> reshape, rust::Slice<const int32_t> second,
                            bool zero_is_placeholder) {
  Permutation p1{}, p2{};
  if (!to_permutation(first, p1) || !to_permutation(second, p2) ||
      reshape.size() > static_cast<size_t>(Dims::MAX_DIMS)) {
    return nullptr;
  }
  IShuffleLayer *layer = network.addShuffle(input);
  if (layer) {
    layer->setFirstTranspose(p1);
    if (has_reshape) {
      layer->setReshapeDimensions(to_dims(reshape));
    }
    layer->setSecondTranspose(p2);
    layer->setZeroIsPlaceholder(zero_is_placeholder);
  }
  return layer;
}

ILayer *network_add_shuffle_dynamic(INetworkDefinition &network, ITensor &input, ITensor &shape) {
  IShuffleLayer *layer = network.addShuffle(input);
  if (layer) {
    layer->setInput(1, shape);
  }
  return layer;
}

ILayer *network_add_gather(INetworkDefinition &network, ITensor &data, ITensor &indices, int32_t axis) {
  return network.addGather(data, indices, axis);
}

ILayer *network_add_concat(INetworkDefinition &network, rust::Slice<const size_t> inputs, int32_t axis) {
  std::vector<ITensor *> tensors;
  tensors.reserve(inputs.size());
  for (size_t address : inputs) {
    tensors.push_back(reinterpret_cast<ITensor *>(address));
  }
  IConcatenationLayer *layer = network.addConcatenation(tensors.data(), static_cast<int32_t>(tensors.size()));
  if (layer) {
    layer->setAxis(axis);
  }
  return layer;
}

ILayer *network_add_slice(INetworkDefinition &network, ITensor &input, rust::Slice<const int64_t> start,
                          rust::Slice<const int64_t> size, rust::Slice<const int64_t> stride) {
  const size_t max = static_cast<size_t>(Dims::MAX_DIMS);
  if (start.size() > max || size.size() > max || stride.size() > max) {
    return nullptr;
  }
  return network.addSlice(input, to_dims(start), to_dims(size), to_dims(stride));
}

ILayer *network_add_slice_dynamic(INetworkDefinition &network, ITensor &input, ITensor &start, ITensor &size,
                                  ITensor &stride) {
  Dims zero{};
  zero.nbDims = 0;
  ISliceLayer *layer = network.addSlice(input, zero, zero, zero);
  if (layer) {
    layer->setInput(1, start);
    layer->setInput(2, size);
    layer->setInput(3, stride);
  }
  return layer;
}

ILayer *network_add_cast(INetworkDefinition &network, ITensor &input, DataType to) {
  return network.addCast(input, to);
}

ILayer *network_add_normalization(INetworkDefinition &network, ITensor &input, ITensor &scale, ITensor &bias,
                                  uint32_t axes, float epsilon) {
#if TRT_SHIM_RTX || NV_TENSORRT_MAJOR >= 11 || (NV_TENSORRT_MAJOR == 10 && NV_TENSORRT_MINOR >= 15)
  INormalizationLayer *layer = network.addNormalizationV2(input, scale, bias, axes);
#else
  INormalizationLayer *layer = network.addNormalization(input, scale, bias, axes);
#endif
  if (layer) {
    layer->setEpsilon(epsilon);
  }
  return layer;
}

ILayer *network_add_select(INetworkDefinition &network, ITensor &cond, ITensor &a, ITensor &b) {
  return network.addSelect(cond, a, b);
}

ILayer *network_add_identity(INetworkDefinition &network, ITensor &input) { return network.addIdentity(input); }

ILayer *network_add_shape(INetworkDefinition &network, ITensor &input) { return network.addShape(input); }

// A 1-D fill: element i is start + i * delta (delta 0 gives a constant fill).
ILayer *network_add_fill(INetworkDefinition &network, int64_t length, double start, double delta, DataType type) {
  Dims dims{};
  dims.nbDims = 1;
  dims.d[0] = length;
  IFillLayer *layer = network.addFill(dims, FillOperation::kLINSPACE, type);
  if (layer) {
    layer->setAlpha(start);
    layer->setBeta(delta);
  }
  return layer;
}

ILayer *network_add_quantize(INetworkDefinition &network, ITensor &input, ITensor &scale, DataType to) {
  return network.addQuantize(input, scale, to);
}

ILayer *network_add_dequantize(INetworkDefinition &network, ITensor &input, ITensor &scale, DataType to) {
  return network.addDequantize(input, scale, to);
}

rust::String layer_name(const ILayer &layer) { return string_or_empty(layer.getName()); }
void layer_set_name(ILayer &layer, rust::Str name) { layer.setName(str(name).c_str()); }
LayerType layer_type(const ILayer &layer) { return layer.getType(); }
int32_t layer_nb_outputs(const ILayer &layer) { return layer.getNbOutputs(); }
int32_t layer_nb_inputs(const ILayer &layer) { return layer.getNbInputs(); }
ITensor *layer_output(const ILayer &layer, int32_t index) { return layer.getOutput(index); }
ITensor *layer_input(const ILayer &layer, int32_t index) { return layer.getInput(index); }

rust::String tensor_name(const ITensor &tensor) { return string_or_empty(tensor.getName()); }
void tensor_set_name(ITensor &tensor, rust::Str name) { tensor.setName(str(name).c_str()); }
DataType tensor_type(const ITensor &tensor) { return tensor.getType(); }
rust::Vec<int64_t> tensor_dims(const ITensor &tensor) { return from_dims(tensor.getDimensions()); }
bool tensor_is_shape(const ITensor &tensor) { return tensor.isShapeTensor(); }
bool tensor_is_input(const ITensor &tensor) { return tensor.isNetworkInput(); }
bool tensor_is_output(const ITensor &tensor) { return tensor.isNetworkOutput(); }

} // namespace trt_shim
