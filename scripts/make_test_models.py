"""Small ONNX models for the error-path and external-weights tests (run by scripts/setup).

- unsupported_op.onnx: a valid graph whose one node is an operator TensorRT does not know.
- external_weights.onnx (+ external_weights.bin): MatMul with its weight stored as external data.
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def unsupported(out):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    node = helper.make_node("FrobnicateTensor", ["x"], ["y"], name="frobnicate_0", domain="com.example")
    graph = helper.make_graph([node], "unsupported", [x], [y])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)], ir_version=8
    )
    onnx.save(model, os.path.join(out, "unsupported_op.onnx"))


def external(out):
    rng = np.random.default_rng(7)
    w = rng.standard_normal((64, 32)).astype(np.float32)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 32])
    init = numpy_helper.from_array(w, "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul_0")], "ext", [x], [y], [init])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, os.path.join(out, "external_weights.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=True, location="external_weights.bin", size_threshold=0)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    unsupported(a.out)
    external(a.out)
    print(f"test models -> {a.out}")
