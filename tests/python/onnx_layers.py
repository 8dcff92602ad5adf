"""Python onnxruntime's values for intermediate tensors of an ONNX model, the
reference for the ONNX side of `trt compare --layers`.

Started by tests/compare_layers.rs with a folder holding `names.json` (the
tensor names, in order) and `inputs.json` (`{name: {"shape": [...],
"data": [...]}}`). The script adds the names as graph outputs (element types
from ONNX shape inference, no shape, as the Rust side declares them), runs
the model on the CPU with one thread, and writes every value as little-endian
float32 to `values.bin` with `index.json` (`[{"name", "shape", "offset"}]`,
offsets in elements).
"""

import argparse
import json
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

NUMPY = {"tensor(int32)": np.int32, "tensor(int64)": np.int64}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("dir")
    args = ap.parse_args()
    names = json.load(open(os.path.join(args.dir, "names.json")))
    feeds_json = json.load(open(os.path.join(args.dir, "inputs.json")))

    model = onnx.load(args.model)
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v.type.tensor_type.elem_type for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    existing = {o.name for o in model.graph.output}
    for n in names:
        if n not in existing:
            model.graph.output.append(helper.make_tensor_value_info(n, types[n], None))

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    feeds = {}
    for i in session.get_inputs():
        t = feeds_json[i.name]
        feeds[i.name] = np.asarray(t["data"], dtype=NUMPY[i.type]).reshape(t["shape"])
    values = session.run(names, feeds)

    index, offset = [], 0
    with open(os.path.join(args.dir, "values.bin"), "wb") as f:
        for n, v in zip(names, values):
            a = np.ascontiguousarray(v, dtype="<f4")
            f.write(a.tobytes())
            index.append({"name": n, "shape": list(a.shape), "offset": offset})
            offset += a.size
    json.dump(index, open(os.path.join(args.dir, "index.json"), "w"))
    print(f"onnxruntime {ort.__version__}: {len(names)} tensors, {offset} values")


if __name__ == "__main__":
    main()
